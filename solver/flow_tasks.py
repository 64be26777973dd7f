"""The two-release correspondence engine's work on one component, as a task any process can run.

:class:`solver.flows.BuddyGraph` splits the buddy graph of ``(R1, R2)`` into connected components (Fung et
al., section 3.1: a generator is an integral flow, and no arc joins two components, so their optima add
up).  Everything an objective needs of a component - its supplies ``a``, capacities ``b`` and arcs - fits
in a :class:`FlowTask`; :func:`solve_tasks` (module level, so that it pickles) returns per task a first
generator (the *base flow*) and the optimum of every objective:

* ``arc`` objectives: the maximum over generators of the flow on a set of arcs (F- and C-attacks), packed
  rounds first (one min-cost flow per round maximizes many objectives with disjoint endpoints; an objective
  reaching its upper bound ``min(a(tails), b(heads))`` is proved), the rest one min-cost flow each;
* ``into`` objectives: the minimum over generators of the flow into a set of ``R2`` nodes (B-attack):
  ``supply - max flow avoiding them``.

Solvers: OR-Tools ``SimpleMinCostFlow`` / ``SimpleMaxFlow`` from numpy arrays (int32 nodes, int64
capacities).  A task's answer depends on the task only, so whichever executor runs it
(:mod:`solver.executor`) the figures are the same; an infeasible component is reported back
(``infeasible``), and the caller raises :class:`~solver.flows.NoGenerator`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ortools.graph.python import max_flow, min_cost_flow

from multirelease.errors import SolverError

__all__ = ["FlowTask", "FlowAnswer", "solve_tasks", "min_cost_flow_of"]


@dataclass(eq=False)
class FlowTask:
    """One component: ``a`` (supplies of its ``R1`` nodes), ``b`` (capacities of its ``R2`` nodes), arcs
    ``tail -> head`` (local indices), and its objectives (local arc ids / local ``R2`` node ids)."""

    index: int
    a: np.ndarray
    b: np.ndarray
    tail: np.ndarray
    head: np.ndarray
    arc_objectives: list = field(default_factory=list)
    into_objectives: list = field(default_factory=list)


@dataclass(eq=False)
class FlowAnswer:
    index: int
    base_flow: np.ndarray | None
    arc_values: list
    into_values: list
    solves: int
    infeasible: bool = False


def min_cost_flow_of(a: np.ndarray, b: np.ndarray, tail: np.ndarray, head: np.ndarray,
                     arc_cost: np.ndarray | None = None, sink_cost: np.ndarray | None = None
                     ) -> tuple[int, np.ndarray] | None:
    """Min-cost flow of one component: every ``R1`` unit through one arc to the sink.  Returns the optimal
    cost and the flow on the arcs, ``None`` when infeasible (no generator)."""
    k1, k2 = len(a), len(b)
    n_arcs = len(tail)
    sink = k1 + k2
    supply = int(a.sum())
    tails = np.concatenate([tail, k1 + np.arange(k2)]).astype(np.int32)
    heads = np.concatenate([k1 + head, np.full(k2, sink)]).astype(np.int32)
    caps = np.concatenate([a[tail], b]).astype(np.int64)
    costs = np.zeros(n_arcs + k2, dtype=np.int64)
    if arc_cost is not None:
        costs[:n_arcs] = arc_cost
    if sink_cost is not None:
        costs[n_arcs:] = sink_cost
    smcf = min_cost_flow.SimpleMinCostFlow()
    smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
    supplies = np.concatenate([a, np.zeros(k2, np.int64), [-supply]]).astype(np.int64)
    smcf.set_nodes_supplies(np.arange(sink + 1, dtype=np.int32), supplies)
    status = smcf.solve()
    if status == smcf.INFEASIBLE:
        return None
    if status != smcf.OPTIMAL:
        raise SolverError(f"min-cost flow ended with status {status!r}")
    flows = smcf.flows(np.arange(n_arcs + k2, dtype=np.int32))
    return int(smcf.optimal_cost()), np.asarray(flows[:n_arcs], dtype=np.int64)


def _max_flow_avoiding(task: FlowTask, blocked_v: np.ndarray) -> int:
    """Max flow from ``R1`` to ``R2`` without the ``R2`` nodes ``blocked_v``."""
    k1, k2 = len(task.a), len(task.b)
    src, sink = k1 + k2, k1 + k2 + 1
    keep_v = np.ones(k2, dtype=bool)
    keep_v[blocked_v] = False
    arc_keep = keep_v[task.head]
    tails = np.concatenate([np.full(k1, src), task.tail[arc_keep], k1 + np.flatnonzero(keep_v)])
    heads = np.concatenate([np.arange(k1), k1 + task.head[arc_keep], np.full(int(keep_v.sum()), sink)])
    caps = np.concatenate([task.a, task.a[task.tail[arc_keep]], task.b[keep_v]])
    smf = max_flow.SimpleMaxFlow()
    smf.add_arcs_with_capacity(tails.astype(np.int32), heads.astype(np.int32), caps.astype(np.int64))
    status = smf.solve(src, sink)
    if status != smf.OPTIMAL:
        raise SolverError(f"max flow ended with status {status!r}")
    return int(smf.optimal_flow())


def _solve(task: FlowTask) -> FlowAnswer:
    solves = 0
    supply = int(task.a.sum())
    if supply:
        out = min_cost_flow_of(task.a, task.b, task.tail, task.head)
        solves += 1
        if out is None:
            return FlowAnswer(task.index, None, [], [], solves, infeasible=True)
        base = out[1]
    else:
        base = np.zeros(len(task.tail), np.int64)
    arc_values: list = [None] * len(task.arc_objectives)
    pending = []
    for i, arcs in enumerate(task.arc_objectives):
        tails = np.unique(task.tail[arcs])
        heads = np.unique(task.head[arcs])
        ub = min(int(task.a[tails].sum()), int(task.b[heads].sum()))
        if int(base[arcs].sum()) >= ub:  # the base generator already proves it
            arc_values[i] = ub
        else:
            pending.append((i, arcs, tails, heads, ub))
    single = []
    while pending:  # packed rounds: objectives with disjoint endpoints share one min-cost flow
        used_u: set = set()
        used_v: set = set()
        picked, rest = [], []
        for item in pending:
            tl, hl = item[2].tolist(), item[3].tolist()
            if used_u.isdisjoint(tl) and used_v.isdisjoint(hl):
                picked.append(item)
                used_u.update(tl)
                used_v.update(hl)
            else:
                rest.append(item)
        pending = rest
        if len(picked) == 1:
            single.append(picked[0])
            continue
        cost = np.zeros(len(task.tail), np.int64)
        for item in picked:
            cost[item[1]] = -1
        _, flow = min_cost_flow_of(task.a, task.b, task.tail, task.head, cost)
        solves += 1
        for item in picked:
            if int(flow[item[1]].sum()) >= item[4]:
                arc_values[item[0]] = item[4]
            else:
                single.append(item)
    for i, arcs, _, _, _ in single:
        cost = np.zeros(len(task.tail), np.int64)
        cost[arcs] = -1
        value, _ = min_cost_flow_of(task.a, task.b, task.tail, task.head, cost)
        solves += 1
        arc_values[i] = -value
    into_values = []
    for vs in task.into_objectives:
        if not supply or int(base[np.isin(task.head, vs)].sum()) == 0:
            into_values.append(0)
        else:
            into_values.append(supply - _max_flow_avoiding(task, vs))
            solves += 1
    return FlowAnswer(task.index, base, arc_values, into_values, solves)


def solve_tasks(tasks: list[FlowTask]) -> list[FlowAnswer]:
    """Solve a chunk of component tasks (in order)."""
    return [_solve(t) for t in tasks]
