"""The two-release correspondence engine's work on one component, as a task any process can run.

:class:`solver.correspondence.flows.BuddyGraph` splits the buddy graph of ``(R1, R2)`` into connected components
(Fung et al., section 3.1: a generator is an integral flow, and no arc joins two components, so their optima add
up).  Everything an objective needs of a component - its supplies ``a``, capacities ``b`` and arcs - fits
in a :class:`FlowTask`; :func:`solve_tasks` (module level, so that it pickles) returns per task a first
generator (the *base flow*) and the optimum of every objective, solving a chunk of components together
(one solver call per round over the disjoint union of the components with work left - a census has
hundreds of thousands of tiny components, and one call each was most of the time):

* ``arc`` objectives: the maximum over generators of the flow on a set of arcs (F- and C-attacks), packed
  rounds first (one min-cost flow per round maximizes many objectives with disjoint endpoints; an objective
  reaching its upper bound ``min(a(tails), b(heads))`` is proved), the rest one min-cost flow each;
* ``into`` objectives: the minimum over generators of the flow into a set of ``R2`` nodes (B-attack):
  ``supply - max flow avoiding them``.

Solvers: OR-Tools ``SimpleMinCostFlow`` / ``SimpleMaxFlow`` from numpy arrays (int32 nodes, int64
capacities).  A chunk's answer depends on the chunk only, so whichever executor runs it
(:mod:`solver.executor`) the report is the same; an infeasible component is reported back
(``infeasible``), and the caller raises :class:`~solver.correspondence.flows.NoGenerator`.
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


def _distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of a short int array, sorted (``np.unique`` without its overhead)."""
    if len(x) < 2:
        return x
    x = np.sort(x)
    return x[np.concatenate(([True], x[1:] != x[:-1]))]


def _union_mcf(parts: list[tuple[FlowTask, np.ndarray | None]]) -> tuple[list[np.ndarray], list[int]] | None:
    """One min-cost flow over the disjoint union of several components (each ``(task, arc costs)``): the
    union's objective is the sum of the components' and its constraints are theirs, so its optimum is an
    optimum of every component at once.  Returns per component its arc flows and optimal cost (``None``:
    some component is infeasible)."""
    a = np.concatenate([t.a for t, _ in parts])
    b = np.concatenate([t.b for t, _ in parts])
    off_u = np.cumsum([0] + [len(t.a) for t, _ in parts])
    off_v = np.cumsum([0] + [len(t.b) for t, _ in parts])
    off_e = np.cumsum([0] + [len(t.tail) for t, _ in parts])
    tail = np.concatenate([t.tail + off_u[i] for i, (t, _) in enumerate(parts)])
    head = np.concatenate([t.head + off_v[i] for i, (t, _) in enumerate(parts)])
    cost = np.concatenate([c if c is not None else np.zeros(len(t.tail), np.int64) for t, c in parts])
    out = min_cost_flow_of(a, b, tail, head, cost)
    if out is None:
        return None
    flow = out[1]
    flows = [flow[off_e[i]:off_e[i + 1]] for i in range(len(parts))]
    costs = [int(np.dot(flows[i], cost[off_e[i]:off_e[i + 1]])) for i in range(len(parts))]
    return flows, costs


def _union_max_flow(parts: list[tuple[FlowTask, np.ndarray]]) -> list[int]:
    """Per component ``(task, blocked R2 nodes)``: its max flow from ``R1`` to ``R2`` avoiding the blocked
    nodes, all in one max flow over the disjoint union (read back per component on its sink arcs)."""
    src_t, dst_t, cap_t, owner = [], [], [], []
    n_nodes = 2  # 0 source, 1 sink
    for i, (task, blocked) in enumerate(parts):
        k1, k2 = len(task.a), len(task.b)
        u0, v0 = n_nodes, n_nodes + k1
        n_nodes += k1 + k2
        keep_v = np.ones(k2, dtype=bool)
        keep_v[blocked] = False
        arc_keep = keep_v[task.head]
        kv = np.flatnonzero(keep_v)
        src_t += [np.zeros(k1, np.int64), u0 + task.tail[arc_keep], v0 + kv]
        dst_t += [u0 + np.arange(k1), v0 + task.head[arc_keep], np.ones(len(kv), np.int64)]
        cap_t += [task.a, task.a[task.tail[arc_keep]], task.b[keep_v]]
        owner.append(np.full(len(kv), i, np.int64))
    tails, heads, caps = np.concatenate(src_t), np.concatenate(dst_t), np.concatenate(cap_t)
    smf = max_flow.SimpleMaxFlow()
    smf.add_arcs_with_capacity(tails.astype(np.int32), heads.astype(np.int32), caps.astype(np.int64))
    status = smf.solve(0, 1)
    if status != smf.OPTIMAL:
        raise SolverError(f"max flow ended with status {status!r}")
    sink_arcs = np.flatnonzero(heads == 1)
    f = np.asarray(smf.flows(sink_arcs.astype(np.int32)), dtype=np.int64)
    return np.bincount(np.concatenate(owner), weights=f, minlength=len(parts)).astype(np.int64).tolist() \
        if len(owner) else []


def _packed_rounds(task: FlowTask, pending: list) -> list[list]:
    """Rounds of objectives with pairwise disjoint endpoints (greedy, in order)."""
    rounds = []
    while pending:
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
        rounds.append(picked)
        pending = rest
    return rounds


def solve_tasks(tasks: list[FlowTask]) -> list[FlowAnswer]:
    """Solve a chunk of component tasks; answers in the order of the tasks.

    The components of a chunk are solved together, one solver call per *round* over the union of the
    components that still have work (:func:`_union_mcf`, :func:`_union_max_flow`): their base flows in one
    call, then the packed rounds, then the remaining objectives one per component per call.  Every value
    is a component's own optimum (or a proved bound reached), so the figures do not depend on how
    components are grouped; the generators do, so chunks are made from the input alone
    (:func:`solver.executor.chunks`)."""
    answers = [FlowAnswer(t.index, None, [None] * len(t.arc_objectives), [None] * len(t.into_objectives), 0)
               for t in tasks]
    with_supply = [i for i, t in enumerate(tasks) if int(t.a.sum())]
    for i, t in enumerate(tasks):
        if not int(t.a.sum()):
            answers[i].base_flow = np.zeros(len(t.tail), np.int64)
    solves = 0
    if with_supply:
        out = _union_mcf([(tasks[i], None) for i in with_supply])
        solves += 1
        if out is None:  # find the infeasible component(s)
            for i in with_supply:
                one = min_cost_flow_of(tasks[i].a, tasks[i].b, tasks[i].tail, tasks[i].head)
                solves += 1
                if one is None:
                    answers[i].infeasible = True
                    answers[i].solves = solves
                    return answers
                answers[i].base_flow = one[1]
        else:
            for i, f in zip(with_supply, out[0]):
                answers[i].base_flow = f
    # arc objectives: the base generator's proof, then packed rounds, then one at a time
    packed: dict[int, list] = {}
    for i, t in enumerate(tasks):
        base = answers[i].base_flow
        pending = []
        for k, arcs in enumerate(t.arc_objectives):
            tails = _distinct(t.tail[arcs])
            heads = _distinct(t.head[arcs])
            ub = min(int(t.a[tails].sum()), int(t.b[heads].sum()))
            if int(base[arcs].sum()) >= ub:
                answers[i].arc_values[k] = ub
            else:
                pending.append((k, arcs, tails, heads, ub))
        if pending:
            packed[i] = _packed_rounds(t, pending)
    single: dict[int, list] = {}
    for r in range(max((len(x) for x in packed.values()), default=0)):
        parts, who = [], []
        for i, rounds in packed.items():
            if r >= len(rounds):
                continue
            if len(rounds[r]) == 1:
                single.setdefault(i, []).append(rounds[r][0])
                continue
            cost = np.zeros(len(tasks[i].tail), np.int64)
            for item in rounds[r]:
                cost[item[1]] = -1
            parts.append((tasks[i], cost))
            who.append(i)
        if not parts:
            continue
        flows, _ = _union_mcf(parts)
        solves += 1
        for i, f in zip(who, flows):
            for item in packed[i][r]:
                if int(f[item[1]].sum()) >= item[4]:
                    answers[i].arc_values[item[0]] = item[4]
                else:
                    single.setdefault(i, []).append(item)
    for r in range(max((len(x) for x in single.values()), default=0)):
        parts, who = [], []
        for i, items in single.items():
            if r < len(items):
                cost = np.zeros(len(tasks[i].tail), np.int64)
                cost[items[r][1]] = -1
                parts.append((tasks[i], cost))
                who.append((i, items[r][0]))
        _, costs = _union_mcf(parts)
        solves += 1
        for (i, k), c in zip(who, costs):
            answers[i].arc_values[k] = -c
    # into objectives: supply minus the max flow avoiding the nodes, where the base generator uses them
    todo: dict[int, list] = {}
    for i, t in enumerate(tasks):
        supply = int(t.a.sum())
        base = answers[i].base_flow
        mask = np.zeros(len(t.b), bool)
        b_total = int(t.b.sum())
        for k, vs in enumerate(t.into_objectives):
            mask[vs] = True
            used = int(base[mask[t.head]].sum()) if supply else 0
            mask[vs] = False
            # every generator sends at least supply - b(other nodes) into vs: the base flow proves it when
            # it sends no more (0 included)
            if used <= max(0, supply - (b_total - int(t.b[vs].sum()))):
                answers[i].into_values[k] = used
            else:
                todo.setdefault(i, []).append((k, vs))
    for r in range(max((len(x) for x in todo.values()), default=0)):
        parts, who = [], []
        for i, items in todo.items():
            if r < len(items):
                parts.append((tasks[i], items[r][1]))
                who.append((i, items[r][0]))
        flows = _union_max_flow(parts)
        solves += 1
        for (i, k), f in zip(who, flows):
            answers[i].into_values[k] = int(tasks[i].a.sum()) - int(f)
    if answers:
        answers[0].solves = solves
    return answers
