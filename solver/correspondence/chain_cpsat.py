"""The CP-SAT fallback of the chain engine (:mod:`solver.correspondence.generators`): one component's model and its
solves.

Variables ``z[i]`` (one per incidence of :class:`~solver.correspondence.chain_component.Component`: records of a node of
``R_j`` instantiated in an atom class), node rows ``sum_c z[j, v, c] = |v|`` and monotone loads
``y[c, j] <= y[c, j + 1]`` (Fung et al., section 7.1: an individual published at ``T_j`` is in every later
release).  An objective ``(t, j, rows, c)`` maximizes the arrivals ``y[c, t] - y[c, t - 1]`` at class
``c`` - or, with ``rows``, ``min(arrivals, sum of z over rows)``, the records of one cracked class there.
Every status is branched on: OPTIMAL and FEASIBLE return a solution (with the objective's value and proved
bound), INFEASIBLE and UNKNOWN none, MODEL_INVALID is a :class:`~multirelease.errors.SolverError`.
"""
from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from multirelease.errors import SolverError

from .chain_component import Component, Stats

__all__ = ["component_model", "solve_component"]


def component_model(comp: Component, n: int) -> cp_model.CpModel:
    """The component's CP-SAT model, built on first use (most components never need one); its variables are
    kept as ``comp._z`` and, per (class, release), ``comp._by_cj``."""
    if comp.model is not None:
        return comp.model
    inv, deg = comp.node_groups()
    model = cp_model.CpModel()
    z = [model.new_int_var(0, int(c), "") for c in comp.count.tolist()]
    for idx in np.split(np.argsort(inv, kind="stable"), np.cumsum(deg)[:-1]):
        model.add(sum(z[i] for i in idx.tolist()) == int(comp.count[idx[0]]))
    by_cj: dict = {}
    for i, (c, j) in enumerate(zip(comp.C.tolist(), comp.J.tolist())):
        by_cj.setdefault((c, j), []).append(z[i])
    for c in range(comp.n_classes):
        for j in range(n - 1):
            nxt = by_cj.get((c, j + 1), [])
            cur = by_cj.get((c, j), [])
            if cur:
                model.add(sum(cur) <= sum(nxt))
    comp.model = model
    comp._by_cj = by_cj
    comp._z = z
    return model


def solve_component(comp: Component, n: int, objective: tuple | None, hint: np.ndarray | None, *,
                    time_limit: float, workers: int, stats: Stats):
    """Solve the component's model, with an objective ``(t, j, rows, c)`` (1-based ``t``: maximize the
    records of the incidence indices ``rows`` - or, with ``rows`` None, all - of class ``c`` that arrive at
    ``T_t``) or none (any generator).  Returns ``(z, status, last)``: ``z`` None unless a solution was found;
    ``last = (value, bound, optimal)`` for an objective with a solution, else None."""
    base_model = component_model(comp, n)
    model = base_model.clone() if objective is not None or hint is not None else base_model
    z = [model.get_int_var_from_proto_index(v.index) for v in comp._z] if model is not base_model else comp._z
    if objective is not None:
        t, j, rows, c = objective
        cur = [model.get_int_var_from_proto_index(v.index) for v in comp._by_cj.get((c, t - 1), [])]
        prev = [model.get_int_var_from_proto_index(v.index) for v in comp._by_cj.get((c, t - 2), [])] \
            if t >= 2 else []
        arrived = sum(cur) - sum(prev)
        if rows is None:
            model.maximize(arrived)
        else:
            w = model.new_int_var(0, int(comp.count[rows].sum()), "w")
            model.add(w <= sum(z[i] for i in rows.tolist()))
            model.add(w <= arrived)
            model.maximize(w)
    if hint is not None:
        for var, h in zip(z, hint.tolist()):
            model.add_hint(var, int(h))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    # a complete feasible hint is taken as the first solution during presolve; CP-SAT's own "hint search"
    # (branching towards the hint before the real search) then only costs time: 4.4 of 5.3 s on a
    # 7,655-variable Adult component, 0.66 s in all without it (same optimum)
    solver.parameters.hint_conflict_limit = 0
    status = solver.solve(model)
    stats.solves += 1
    stats.statuses[solver.status_name(status)] += 1
    if status == cp_model.MODEL_INVALID:
        raise SolverError(f"CP-SAT model invalid: {model.validate()}")
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        sol = np.array([solver.value(v) for v in z], dtype=np.int64)
        last = None
        if objective is not None:
            last = (int(round(solver.objective_value)), int(np.floor(solver.best_objective_bound + 1e-9)),
                    status == cp_model.OPTIMAL)
        return sol, status, last
    return None, status, None
