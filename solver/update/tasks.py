"""The joint update-graph attack's components, as tasks any process can run (:mod:`solver.executor`).

:func:`solver.update.worlds.joint_feasible` decides the joint candidate sets of every record version with one
CP-SAT model per connected component of the ``record - (release, group)`` graph (Li & Zhou, section III:
records interact only through the groups they share, so no constraint joins two components and their
worlds combine freely).  A :class:`UpdateChunk` holds what the models of a few components read - per
release the ``(record, group)`` pairs of their records, the groups' published value counts and counterfeits,
the records' feasible sub-SUG rows (Definition 11) - and the ``P_trans^k`` reachability of the gaps they
span; :func:`solve_update_chunk` (module level, so that it pickles) builds and solves the models component
by component, smallest first, within the call's ``time_limit`` (one wall-clock deadline shared by the
chunks of a call, whichever process runs them), exactly as the single-process loop does, and returns plain
data.  The models are built in the same order from the same data whichever process runs
them, and CP-SAT runs with a fixed seed, so the report is the same whichever executor ran the chunks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from multirelease.errors import SolverError

__all__ = ["UpdateChunk", "ComponentAnswer", "solve_update_chunk"]


@dataclass(eq=False)
class UpdateChunk:
    """Components to solve in order: ``components[c]`` is, per release ``i``, the ``(t, g)`` pairs of the
    component's records (global record and group indices, in the order of the links).  ``counts[i][g]`` the
    group's published counts per value, ``counterfeits[i][g]`` its counterfeit count, ``sug[i][t]`` the
    record version's feasible sub-SUG row; ``steps[k]`` the ``k``-step reachability of the model."""

    components: list
    counts: list
    counterfeits: list
    sug: list
    steps: dict
    n_values: int
    mode: str
    time_limit: float
    workers: int = 1
    seed: int = 0
    deadline: float | None = None  # wall clock (time.time()) shared by the chunks of one call, else None


@dataclass(eq=False)
class ComponentAnswer:
    """What a component's backbone search settled: literals ``(i, t, s)`` found possible and proved
    impossible, the first world (``(i, t) -> (g, s)``), the solver calls, and how it ended."""

    found: list = field(default_factory=list)
    impossible: list = field(default_factory=list)
    world: dict = field(default_factory=dict)
    solves: int = 0
    status: str = "OPTIMAL"  # OPTIMAL (settled), INFEASIBLE (no world), UNKNOWN (stopped)
    without_world: bool = False
    skipped: bool = False  # the chunk's budget was spent before this component started


def _model(chunk: UpdateChunk, pairs: list, cp_model) -> tuple[Any, dict, dict]:
    """The CP-SAT model of one component (:mod:`solver.update.worlds`, module docstring)."""
    V = chunk.n_values
    m = cp_model.CpModel()
    x: dict[tuple, Any] = {}
    y: dict[tuple, Any] = {}
    versions: dict[int, list] = {}
    for i, (t_arr, g_arr) in enumerate(pairs):
        by_group: dict[tuple, list] = {}
        counts = chunk.counts[i]
        sug = chunk.sug[i]
        per_version: dict[int, list] = {}
        for t, g in zip(t_arr.tolist(), g_arr.tolist()):
            for s in np.flatnonzero((counts[g] > 0) & sug[t]).tolist():
                var = m.new_bool_var(f"x_{i}_{t}_{g}_{s}")
                x[i, t, g, s] = var
                per_version.setdefault(t, []).append((g, s, var))
                by_group.setdefault((g, s), []).append(var)
                by_group.setdefault((g, -1), []).append(var)
        for t, items in per_version.items():
            m.add_exactly_one([v for _, _, v in items])
            versions.setdefault(t, []).append(i)
            vals: dict[int, list] = {}
            for g, s, v in items:
                vals.setdefault(s, []).append(v)
            for s, vs in vals.items():
                if len(vs) == 1:
                    y[i, t, s] = vs[0]
                else:
                    yv = m.new_bool_var(f"y_{i}_{t}_{s}")
                    m.add(yv == sum(vs))
                    y[i, t, s] = yv
        for (g, s), vs in by_group.items():
            if s >= 0:
                if len(vs) > counts[g][s]:
                    m.add(sum(vs) <= int(counts[g][s]))
            elif chunk.mode != "uid":
                cap = int(counts[g].sum() - chunk.counterfeits[i][g])
                if len(vs) > cap:
                    m.add(sum(vs) <= cap)
    for t, rel in versions.items():
        for i, j in zip(rel, rel[1:]):
            A = chunk.steps[j - i]
            si = [s for s in range(V) if (i, t, s) in y]
            sj = [s for s in range(V) if (j, t, s) in y]
            for s2 in sj:
                src = [y[i, t, s] for s in si if A[s, s2]]
                m.add(y[j, t, s2] <= sum(src)) if src else m.add(y[j, t, s2] == 0)
            for s in si:
                dst = [y[j, t, s2] for s2 in sj if A[s, s2]]
                m.add(y[i, t, s] <= sum(dst)) if dst else m.add(y[i, t, s] == 0)
    return m, x, y


def _backbone(chunk: UpdateChunk, pairs: list, deadline: float, cp_model) -> ComponentAnswer:
    """One component's joint candidate sets as a backbone (:mod:`solver.update.worlds`): rounds of "a world
    in which at least one unknown literal holds" until none is left, INFEASIBLE, or the deadline."""
    ans = ComponentAnswer()
    m, x, y = _model(chunk, pairs, cp_model)
    unknown = dict(y)
    first = True
    round_no = 0
    while unknown:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            ans.status, ans.without_world = "UNKNOWN", first
            break
        # a world in which at least one still-unknown literal holds, under an assumption that the next
        # round drops (CP-SAT cannot remove constraints): INFEASIBLE is the proof that none can hold
        act = m.new_bool_var(f"round_{round_no}")
        round_no += 1
        m.add(sum(unknown.values()) >= 1).only_enforce_if(act)
        m.clear_assumptions()
        m.add_assumptions([act])
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = float(remaining)
        solver.parameters.num_workers = int(chunk.workers)
        solver.parameters.random_seed = int(chunk.seed)
        status = solver.solve(m)
        ans.solves += 1
        if status == cp_model.MODEL_INVALID:
            raise SolverError(f"joint update-graph model invalid: {m.validate()}")
        if status == cp_model.INFEASIBLE:
            if first:  # not even one world: the releases contradict the model for this component
                ans.status = "INFEASIBLE"
            ans.impossible.extend(unknown)  # no world makes any of them true
            unknown.clear()
            break
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):  # UNKNOWN: out of time before a world
            ans.status, ans.without_world = "UNKNOWN", first
            break
        if first:
            for (i, t, g, s), var in x.items():
                if solver.boolean_value(var):
                    ans.world[i, t] = (g, s)
            first = False
        hits = [key for key, var in unknown.items() if solver.boolean_value(var)]
        for key in hits:
            ans.found.append(key)
            del unknown[key]
        # steer the next world away from this one: hint the unknown literals true
        m.clear_hints()
        for key, var in unknown.items():
            m.add_hint(var, True)
    return ans


def solve_update_chunk(chunk: UpdateChunk) -> list[ComponentAnswer]:
    """Every component of the chunk in order, within ``time_limit`` from the chunk's start, or up to the
    shared wall-clock ``deadline`` of the call when it has several chunks (a component reached after the
    budget is spent is ``skipped``, its literals left unknown)."""
    from ortools.sat.python import cp_model

    left = chunk.time_limit if chunk.deadline is None else chunk.deadline - time.time()
    deadline = time.perf_counter() + left
    out = []
    for pairs in chunk.components:
        if deadline - time.perf_counter() <= 0:
            out.append(ComponentAnswer(status="UNKNOWN", without_world=True, skipped=True))
            continue
        out.append(_backbone(chunk, pairs, deadline, cp_model))
    return out
