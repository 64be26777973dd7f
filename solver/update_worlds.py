"""Joint possible worlds of releases with internal updates (the ``update_graph: {joint: true}`` attack).

The per-record SUG of Li & Zhou (section III) prunes each record's candidate values alone.  A possible world
constrains all records at once: in every release, each QI-group's published multiset of sensitive values is
shared among its members (published counterfeit counts absorb values: at most ``|g| - c_g`` of the group's
values belong to real members), and the consecutive versions of each record follow the public model
``P_trans`` (``k``-step reachability across releases it skipped).  A version's *joint candidate set* is the set
of values it takes in some world; it is a subset of its feasible sub-SUG's candidate node set, since every
world traces a feasible path through every record's SUG.

CP-SAT model (one per connected component of the ``record - (release, group)`` graph; components are
independent)::

    x[i, t, g, s] in {0, 1}   record t's version at release i is in group g with value s
                              (s restricted to values of g that survive t's feasible sub-SUG)
    y[i, t, s] = sum_g x[i, t, g, s]
    sum_{g, s} x[i, t, g, s] = 1                     every version has one group and one value
    sum_t x[i, t, g, s] <= n_{i,g}(s)                 the group's multiset
    sum_{t, s} x[i, t, g, s] <= |g| - c_g             counterfeits take the rest (population linkage)
    y[j, t, s'] <= sum_{s : s -> s'} y[i, t, s]       consecutive versions i < j follow P_trans^(j-i)
    y[i, t, s]  <= sum_{s' : s -> s'} y[j, t, s']

The joint candidate sets are found as a *backbone*: ask for a world in which at least one still-unknown
literal ``y[i, t, s]`` is true (a constraint enforced by a fresh assumption literal each round, since CP-SAT
cannot drop constraints); every literal true in that world is possible; when no such world exists (status
INFEASIBLE, a proof), every unknown literal is impossible.  Each round settles at least one literal, and the
hints steer the search towards the unknown ones.  A component whose budget runs out leaves its unknown literals
unsettled: the result is then not exact and gives bounds.  A component stopped before its first world
(``without_world``) proves no version of it vulnerable, not even one the SUG pins: the releases might admit no
world at all there (then no value is possible), so the lower bound may fall below the SUG's count.  CP-SAT
runs with a fixed seed and the given number of workers, and branches on every status (``MODEL_INVALID`` is a
:class:`SolverError`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from multirelease.errors import SolverError

__all__ = ["JointResult", "joint_feasible"]


@dataclass(eq=False)
class JointResult:
    """Joint candidate sets: ``found[i]`` (values proved possible) and ``possible[i]`` (not proved impossible),
    ``(T, V)`` per release; ``exact`` when they coincide everywhere."""

    found: list
    possible: list
    present: list
    sug: list
    exact: bool
    status: str
    solves: int = 0
    components: int = 0
    without_world: int = 0  # components left unsettled before their first world was found (time limit)
    seconds: float = 0.0
    world: list = field(default_factory=list)  # per release, (T,) value index in one world (-1: none/absent)
    world_group: list = field(default_factory=list)  # per release, (T,) class index in that world

    @property
    def vulnerable_low(self) -> int:
        """Versions proved to have exactly one possible value: one not proved impossible, and a world found
        for it (a component whose first world was not found may have none at all, and then no value)."""
        return int(sum(((p.sum(axis=1) == 1) & (f.sum(axis=1) == 1) & pr).sum()
                       for p, f, pr in zip(self.possible, self.found, self.present)))

    @property
    def vulnerable_high(self) -> int:
        """Versions that may have one possible value (at most one proved possible)."""
        return int(sum(((f.sum(axis=1) <= 1) & pr).sum() for f, pr in zip(self.found, self.present)))

    def witness(self, links, model) -> dict[str, Any]:
        """The worst case and the world that shows it: a version the joint attack pins to one value although its
        feasible sub-SUG keeps several (else any pinned version), its values in one possible world, and the
        values its group-mates take there."""
        pick = None
        for prefer_extra in (True, False):
            for i, (p, s, pr) in enumerate(zip(self.possible, self.sug, self.present)):
                one = pr & (p.sum(axis=1) == 1)
                if prefer_extra:
                    one &= s.sum(axis=1) > 1
                hit = np.flatnonzero(one)
                if len(hit):
                    pick = (i, int(hit[0]))
                    break
            if pick is not None:
                break
        if pick is None or not self.world:
            return {"pinned": None}
        i, t = pick
        versions = []
        for j in range(len(self.world)):
            if not self.present[j][t]:
                continue
            v = int(self.world[j][t])
            versions.append({"release": j + 1, "group": int(links.groups[j][self.world_group[j][t]]) if v >= 0 else None,
                             "world_value": model.values[v] if v >= 0 else None,
                             "sug_candidates": [model.values[x] for x in np.flatnonzero(self.sug[j][t])],
                             "joint_candidates": [model.values[x] for x in np.flatnonzero(self.possible[j][t])]})
        g = int(self.world_group[i][t])
        mates = np.flatnonzero((self.world_group[i] == g) & self.present[i] & (self.world[i] >= 0))
        group_world = {str(links.targets[m]): model.values[int(self.world[i][m])] for m in mates[:50]}
        return {"pinned": {"target": str(links.targets[t]), "release": i + 1,
                           "value": model.values[int(np.flatnonzero(self.possible[i][t])[0])],
                           "versions": versions,
                           "group": int(links.groups[i][g]),
                           "group_in_world": group_world,
                           "group_counterfeits": int(links.counterfeits[i][g])}}


def _components(links, keep: np.ndarray, pairs: list) -> tuple[int, np.ndarray, list]:
    """Connected components of the bipartite graph record - (release, class); ``pairs`` per release."""
    T = len(links.targets)
    offsets = np.cumsum([0] + [len(c) for c in links.counts])
    rows, cols = [], []
    for i, (t, g) in enumerate(pairs):
        k = keep[t]
        rows.append(t[k])
        cols.append(T + offsets[i] + g[k])
    n = T + int(offsets[-1])
    r = np.concatenate(rows) if rows else np.zeros(0, int)
    c = np.concatenate(cols) if cols else np.zeros(0, int)
    adj = sparse.coo_matrix((np.ones(len(r)), (r, c)), shape=(n, n))
    n_comp, label = connected_components(adj, directed=False)
    return n_comp, label[:T], offsets


def joint_feasible(links, model, sug_feasible: list, *, time_limit: float = 60.0, workers: int = 1,
                   seed: int = 0) -> JointResult:
    """Joint candidate sets of every version (see the module docstring).

    Parameters
    ----------
    links : attacks.update_graph.VersionLinks
    model : TransitionModel
    sug_feasible : list of (T, V) bool
        The feasible sub-SUGs after the last release (:func:`attacks.update_graph.backward_risks`); only their
        values get variables.  Records whose SUG is empty (inconsistent with the model) are left out.
    """
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    N = links.n_releases
    T = len(links.targets)
    V = len(model)
    present = [links.present(i) for i in range(N)]
    consistent = np.ones(T, dtype=bool)
    for i in range(N):
        consistent &= ~(present[i] & (sug_feasible[i].sum(axis=1) == 0))
    found = [np.zeros((T, V), dtype=bool) for _ in range(N)]
    impossible = [~sug_feasible[i].copy() for i in range(N)]
    world = [np.full(T, -1, dtype=np.int64) for _ in range(N)]
    world_group = [np.full(T, -1, dtype=np.int64) for _ in range(N)]
    pairs = [links.pairs_of(i) for i in range(N)]
    n_comp, label, _ = _components(links, consistent, pairs)
    comp_targets = [[] for _ in range(n_comp)]
    for t in np.flatnonzero(consistent):
        comp_targets[label[t]].append(t)
    steps = {}
    solves = 0
    without_world = 0
    status_all = "OPTIMAL"
    exact = True
    order = sorted(range(n_comp), key=lambda c: len(comp_targets[c]))
    for ci in order:
        targets = comp_targets[ci]
        if not targets:
            continue
        remaining = time_limit - (time.perf_counter() - t0)
        if remaining <= 0:
            exact = False
            status_all = "UNKNOWN"
            without_world += 1
            continue
        tset = np.zeros(T, dtype=bool)
        tset[targets] = True
        m = cp_model.CpModel()
        x: dict[tuple, Any] = {}
        y: dict[tuple, Any] = {}
        versions: dict[int, list] = {}
        for i in range(N):
            by_group: dict[tuple, list] = {}
            t_arr, g_arr = pairs[i]
            sel = tset[t_arr]
            counts = links.counts[i]
            per_version: dict[int, list] = {}
            for t, g in zip(t_arr[sel].tolist(), g_arr[sel].tolist()):
                for s in np.flatnonzero((counts[g] > 0) & sug_feasible[i][t]).tolist():
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
                    if len(vs) > counts[g, s]:
                        m.add(sum(vs) <= int(counts[g, s]))
                elif links.mode != "uid":
                    cap = int(counts[g].sum() - links.counterfeits[i][g])
                    if len(vs) > cap:
                        m.add(sum(vs) <= cap)
        for t, rel in versions.items():
            for i, j in zip(rel, rel[1:]):
                k = j - i
                if k not in steps:
                    steps[k] = model.steps(k)
                A = steps[k]
                si = [s for s in range(V) if (i, t, s) in y]
                sj = [s for s in range(V) if (j, t, s) in y]
                for s2 in sj:
                    src = [y[i, t, s] for s in si if A[s, s2]]
                    m.add(y[j, t, s2] <= sum(src)) if src else m.add(y[j, t, s2] == 0)
                for s in si:
                    dst = [y[j, t, s2] for s2 in sj if A[s, s2]]
                    m.add(y[i, t, s] <= sum(dst)) if dst else m.add(y[i, t, s] == 0)
        unknown = dict(y)
        first = True
        round_no = 0
        while unknown:
            remaining = time_limit - (time.perf_counter() - t0)
            if remaining <= 0:
                exact = False
                status_all = "UNKNOWN"
                without_world += int(first)
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
            solver.parameters.num_workers = int(workers)
            solver.parameters.random_seed = int(seed)
            status = solver.solve(m)
            solves += 1
            if status == cp_model.MODEL_INVALID:
                raise SolverError(f"joint update-graph model invalid: {m.validate()}")
            if status == cp_model.INFEASIBLE:
                if first:  # not even one world: the releases contradict the model for this component
                    status_all = "INFEASIBLE" if status_all == "OPTIMAL" else status_all
                for key in list(unknown):  # no world makes any of them true
                    i, t, s = key
                    impossible[i][t, s] = True
                unknown.clear()
                break
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):  # UNKNOWN: out of time before a world
                exact = False
                status_all = "UNKNOWN"
                without_world += int(first)
                break
            if first:
                for (i, t, g, s), var in x.items():
                    if solver.boolean_value(var):
                        world[i][t] = s
                        world_group[i][t] = g
                first = False
            hits = [key for key, var in unknown.items() if solver.boolean_value(var)]
            for key in hits:
                i, t, s = key
                found[i][t, s] = True
                del unknown[key]
            # steer the next world away from this one: hint the unknown literals true
            m.clear_hints()
            for key, var in unknown.items():
                m.add_hint(var, True)
    # records left out as inconsistent keep their SUG (empty) candidate sets
    possible = [~impossible[i] & present[i][:, None] for i in range(N)]
    for i in range(N):
        found[i] &= possible[i]
    if exact:
        for i in range(N):
            exact_here = np.array_equal(found[i][consistent], possible[i][consistent])
            if not exact_here:
                exact = False
                status_all = "UNKNOWN"
    return JointResult(found=found, possible=possible, present=present, sug=[f.copy() for f in sug_feasible],
                       exact=exact, status=status_all, solves=solves, components=n_comp,
                       without_world=without_world,
                       seconds=time.perf_counter() - t0, world=world, world_group=world_group)
