"""Exact linkability of the possible-worlds engine (:mod:`solver.counting`), and the type-world model.

Linkability of an individual: the values it takes in at least one possible world (Shmueli & Tassa, 004,
section 3: l-linkability).  One release: the type-group edges in some perfect b-matching
(:func:`solver.matching.matchable_edges`, strongly connected components).  Several releases with persistent
values: those edges give a necessary condition per release; the rest is decided by CP-SAT on the
*type-world* model (``m[t, v]``: members of type ``t`` with value ``v``, one integral transport per
release), each solution found settling every pair it realizes, each remaining pair proved by one more solve
(feasible: linkable, with the solution as witness; INFEASIBLE: not linkable).  A pair left undecided by the
time limit is reported linkable, and the block's linkability is then not exact.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
from ortools.sat.python import cp_model

from multirelease.errors import InputError, SolverError

from .matching import matchable_edges
from .worlds import Block, WorldsProblem

__all__ = ["DEFAULT_TIME_LIMIT", "block_linkability"]

#: CP-SAT seconds per block (linkability and enumeration each)
DEFAULT_TIME_LIMIT = 20.0


class _TypeWorldModel:
    """CP-SAT model of the type-worlds of a block: ``m[t, v]`` and one integer transport per release."""

    def __init__(self, block: Block, candidate: np.ndarray):
        self.block = block
        self.model = model = cp_model.CpModel()
        n_t = block.type_count
        T, V = candidate.shape
        self.m = {}
        for t in range(T):
            for v in np.flatnonzero(candidate[t]):
                self.m[t, int(v)] = model.new_int_var(0, int(n_t[t]), f"m_{t}_{v}")
            terms = [self.m[t, int(v)] for v in np.flatnonzero(candidate[t])]
            model.add(sum(terms) == int(n_t[t]))
        self.flows = []
        for k in range(len(block.releases)):
            edges = block.edges[k]
            gcount, gvalue = block.group_count[k], block.group_value[k]
            f = {}
            into_g = [[] for _ in range(len(gcount))]
            out_tv: dict = {}
            for e, (t, g) in enumerate(edges.tolist()):
                v = int(gvalue[g])
                if not candidate[t, v]:
                    continue
                var = model.new_int_var(0, int(min(n_t[t], gcount[g])), f"f_{k}_{t}_{g}")
                f[e] = var
                into_g[g].append(var)
                out_tv.setdefault((t, v), []).append(var)
            for g in range(len(gcount)):
                model.add(sum(into_g[g]) == int(gcount[g]))
            for (t, v), var in self.m.items():
                if block.present[t, k]:
                    model.add(sum(out_tv.get((t, v), [])) == var)
            self.flows.append(f)
        self.vars = list(self.m.values())
        self.keys = list(self.m.keys())

    def hint(self, sol: dict) -> None:
        """Start the next solves from a known type-world (solution hint)."""
        self.model.clear_hints()
        for key, var in self.m.items():
            self.model.add_hint(var, sol.get(key, 0))

    def solve(self, time_limit: float, extra: Sequence = ()) -> tuple[str, dict | None, cp_model.CpSolver]:
        """``("feasible", m, solver)``, ``("infeasible", None, solver)`` or ``("unknown", None, solver)``."""
        model = self.model
        lits = []
        for constraint in extra:  # enforced for this solve only, through an assumption
            lit = model.new_bool_var(f"assume_{len(self.vars)}_{id(constraint)}")
            model.add(constraint).only_enforce_if(lit)
            lits.append(lit)
        model.clear_assumptions()
        if lits:
            model.add_assumptions(lits)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1  # >= 2 workers may return wrong enumeration counts
        solver.parameters.max_time_in_seconds = max(time_limit, 0.01)
        solver.parameters.random_seed = 0
        status = solver.solve(model)
        model.clear_assumptions()
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            sol = {key: int(solver.value(var)) for key, var in self.m.items()}
            self.hint(sol)
            return "feasible", sol, solver
        if status == cp_model.INFEASIBLE:
            return "infeasible", None, solver
        if status == cp_model.MODEL_INVALID:
            raise SolverError("CP-SAT: invalid type-world model")
        return "unknown", None, solver


def _block_values(problem: WorldsProblem, block: Block) -> np.ndarray:
    V = problem.n_values
    out = np.zeros((block.n_types, V), dtype=bool)
    for k in range(len(block.releases)):
        for t, g in block.edges[k].tolist():
            out[t, block.group_value[k][g]] = True
    return out


def _single_release_linkable(problem: WorldsProblem, block: Block, k: int) -> np.ndarray | None:
    """``(T, V)`` linkable pairs within spanned release ``k`` alone (``None``: no perfect matching)."""
    present = block.present[:, k]
    tc = np.where(present, block.type_count, 0)
    edges = block.edges[k]
    ok = matchable_edges(tc, block.group_count[k], edges)
    out = np.zeros((block.n_types, problem.n_values), dtype=bool)
    if ok is None:
        return None
    e = edges[ok]
    out[e[:, 0], block.group_value[k][e[:, 1]]] = True
    return out


def block_linkability(problem: WorldsProblem, block: Block, *, time_limit: float = DEFAULT_TIME_LIMIT
                      ) -> tuple[np.ndarray, bool, dict]:
    """``(linkable (T, V) bool, exact, witnesses)``: the values each type's members take in some world.

    ``witnesses[(t, v)]`` is a type-world realizing the pair when CP-SAT was used.  ``exact`` is false only
    when CP-SAT stopped on its time limit (the undecided pairs are then reported linkable: an upper bound).
    Raises :class:`InputError` when the block has no world at all (inconsistent releases)."""
    R = len(block.releases)
    if block.n_types == 0:
        raise InputError(_no_world_message(problem, block))
    if block.is_complete():  # one type adjacent to every group: every value of the groups (if any world)
        out = np.zeros((1, problem.n_values), dtype=bool)
        counts = None
        for k in range(R):
            if not block.present[0, k]:
                continue
            c = np.bincount(block.group_value[k], weights=block.group_count[k], minlength=problem.n_values)
            if (counts is not None and not np.array_equal(c, counts)) or c.sum() != block.type_count[0]:
                raise InputError(_no_world_message(problem, block))
            counts = c
        out[0] = counts > 0
        return out, True, {}
    cand = np.ones((block.n_types, problem.n_values), dtype=bool)
    for k in range(R):
        lk = _single_release_linkable(problem, block, k)
        if lk is None:
            raise InputError(_no_world_message(problem, block))
        present = block.present[:, k]
        cand[present] &= lk[present]
    if R == 1:
        return cand, True, {}
    # persistent values over several releases: decide the candidates with CP-SAT
    model = _TypeWorldModel(block, cand)
    deadline = time.perf_counter() + time_limit
    status, m, _ = model.solve(time_limit)
    if status == "infeasible":
        raise InputError(_no_world_message(problem, block))
    if status == "unknown":
        return cand, False, {}
    linkable = np.zeros_like(cand)
    witnesses = {}

    def settle(sol):
        for (t, v), c in sol.items():
            if c > 0 and not linkable[t, v]:
                linkable[t, v] = True
                witnesses[t, v] = sol

    settle(m)
    # rounds that maximize the number of unsettled pairs realized at once; an optimum of 0 proves them all
    # unlinkable
    for _ in range(64):
        open_pairs = [(int(t), int(v)) for t, v in zip(*np.nonzero(cand & ~linkable))]
        left = deadline - time.perf_counter()
        if not open_pairs or left <= 0:
            break
        hit = {}
        for t, v in open_pairs:
            b = model.model.new_bool_var(f"hit_{t}_{v}")
            model.model.add(model.m[t, v] >= 1).only_enforce_if(b)
            hit[t, v] = b
        model.model.maximize(sum(hit.values()))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_time_in_seconds = min(left, max(2.0, time_limit / 8))
        status = solver.solve(model.model)
        model.model.clear_objective()
        for b in hit.values():  # retire the indicators
            model.model.add(b == 0)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        sol = {key: int(solver.value(var)) for key, var in model.m.items()}
        model.hint(sol)
        before = int(linkable.sum())
        settle(sol)
        if status == cp_model.OPTIMAL and int(linkable.sum()) == before:
            for t, v in open_pairs:
                model.model.add(model.m[t, v] == 0)
            cand = cand & linkable
            break
        if int(linkable.sum()) == before:
            break
    exact = True
    for t, v in zip(*np.nonzero(cand)):
        t, v = int(t), int(v)
        if linkable[t, v]:
            continue
        left = deadline - time.perf_counter()
        if left <= 0:
            exact = False
            linkable[t, v] = True  # undecided: reported as linkable (safe side)
            continue
        status, sol, _ = model.solve(left, [model.m[t, v] >= 1])
        if status == "feasible":
            settle(sol)
        elif status == "infeasible":
            model.model.add(model.m[t, v] == 0)
        else:
            exact = False
            linkable[t, v] = True
    return linkable, exact, witnesses


def _no_world_message(problem: WorldsProblem, block: Block) -> str:
    rel = ", ".join(str(problem.releases[r].index) for r in block.releases)
    who = [str(problem.individuals[m[0]]) for m in block.members[:3]]
    if not who:
        return f"no possible world: a record of release(s) {rel} contains no individual's QI values"
    return (f"no possible world: the releases ({rel}) cannot all come from the population "
            f"(individuals {', '.join(who)}...)")
