"""Exact crack sizes of two releases as min-cost flows over the group-aggregated buddy graph.

Fung et al. (EDBT 2008), section 3.1: a *generator* of ``(R1, R2)`` assigns every record an instantiation
(a raw record that agrees on the sensitive value and lies in the record's region) so that every record of
``R1`` has a distinct *buddy* in ``R2`` with the same instantiation.  Buddies agree on the sensitive value
and their regions intersect (are *comparable*, Definition 4.1); conversely any injective, R1-saturating
assignment of comparable buddies is the buddy relation of a generator - each pair is instantiated at any
point of the intersection of its two regions, each record of ``R2`` without a buddy anywhere in its region.
So a generator is, up to the choice of instantiations, an integral flow in the *buddy graph*:

* one node per group of identical records (:func:`solver.correspondence.regions.aggregate`): ``u`` in ``R1`` with supply
  ``a_u``, ``v`` in ``R2`` with capacity ``b_v``;
* an arc ``u -> v`` when ``u`` and ``v`` agree on the sensitive value and their regions intersect;
* every unit of supply must reach the sink through some ``v`` (every ``R1`` record has a buddy).

Crack sizes (Definitions 3.1, 3.3, 3.5) are minima over generators, so the number of records of a group
that *can* represent a target ``P`` is a maximum over these flows:

* **F** (``P`` at ``T1``, cracking ``R1``): a record of ``u`` is instantiated at ``P``'s point ``p`` iff its
  buddy's region contains ``p`` too: maximize the flow on the arcs ``u -> v`` with ``u`` in the class and
  both regions containing ``p`` (cost ``-1`` on those arcs).
* **C** (``P`` at ``T1``, cracking ``R2``): a record of ``v`` represents ``P`` iff it has a buddy (timestamp
  ``T1``) and both regions contain ``p``: maximize the flow on the arcs ``u -> v`` with ``v`` in the class.
* **B** (``P`` at ``T2``, cracking ``R2``): a record of ``v`` represents ``P`` iff it has *no* buddy (and its
  region contains ``p``): minimize the inflow into the class's nodes containing ``p``.  The minimum is
  ``N1 - rho(V \\ T)``, ``rho`` the max-flow rank of the (polymatroid of) ``R2`` loads, one max flow.

The crack size of a group is its size minus that maximum.  All sensitive values and all connected components
of the buddy graph are independent (no arc joins two of them), so every objective is solved component by
component and the per-component optima add up; an optimal flow of every component is a generator that
realizes all of an objective's group maxima at once (the witness).

Speed: most F / C objectives reach the trivial upper bound ``min(a(U*), b(T))`` (Lemma 4.2 of the paper
shows they always do under cut generalization).  The components' work is done by
:mod:`solver.correspondence.flow_tasks` (packed rounds - one min-cost flow per round maximizes the total flow on many
objectives with disjoint endpoints; every objective whose flow reaches its upper bound is proved optimal
by that flow - then the rest one by one, each round over a whole chunk of components at once), chunks run
by the executor of :mod:`solver.executor` (local processes, or Dask).  Regions that intersect are found by
recursive splits (:func:`solver.correspondence.regions.comparable_pairs`), never as a dense matrix.  Every number
returned is a proved optimum.

Solvers: OR-Tools ``SimpleMinCostFlow`` and ``SimpleMaxFlow`` built from numpy arrays (int32 nodes, int64
capacities and costs); every status other than OPTIMAL raises :class:`~multirelease.errors.SolverError`,
an infeasible flow (no generator) raises :class:`NoGenerator`.  A generator is written out as the report's
witness by :mod:`solver.correspondence.flow_witness` (``generator_json``, re-exported here).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from multirelease.errors import InputError

from .crack import expand_ranges
from .flow_tasks import FlowTask, min_cost_flow_of, solve_tasks
from .flow_witness import generator_json
from .regions import Nodes, comparable_pairs

#: components' total size (arcs, nodes, objectives) from which local worker processes solve them.  Sending
#: a census's 86,000 components to two workers cost more than it saved (10^6 rows, 2 cores: attack 15-17 s
#: CPU in this process, 21 s CPU and no faster in two workers): processes only for far larger inputs; a
#: Dask executor is used whatever the size
_PARALLEL_WORK = 20_000_000
#: work per chunk of components (one task of the executor), and the most chunks
_CHUNK_WORK = 100_000
_MAX_CHUNKS = 64

#: generator_json: re-exported from solver.correspondence.flow_witness
__all__ = ["BuddyGraph", "NoGenerator", "generator_json"]


class NoGenerator(InputError):
    """The releases admit no generator: some records of the earlier release cannot all have a buddy."""


@dataclass(eq=False)
class _Component:
    index: int
    u: np.ndarray  # global R1 node ids
    v: np.ndarray  # global R2 node ids
    arcs: np.ndarray  # global arc ids
    tail: np.ndarray  # local index into u
    head: np.ndarray  # local index into v
    a: np.ndarray
    b: np.ndarray
    base_flow: np.ndarray | None = None  # a feasible flow on ``arcs`` (a generator)

    @property
    def supply(self) -> int:
        return int(self.a.sum())


class BuddyGraph:
    """The group-aggregated buddy graph of two releases, split into connected components.

    Parameters
    ----------
    n1, n2 : Nodes
        The aggregated groups of ``R1`` and ``R2`` (sensitive values coded over one dictionary).
    pairs : (array, array), optional
        The comparable region pairs of the two releases (:func:`comparable_pairs`), when computed already.

    Raises
    ------
    NoGenerator
        When no generator exists (some records of ``R1`` cannot all get a comparable buddy in ``R2``).
    """

    def __init__(self, n1: Nodes, n2: Nodes, *, lazy: bool = False, executor=None, pairs=None):
        self.n1, self.n2 = n1, n2
        self.tail, self.head = _buddy_arcs(n1, n2, pairs)
        m1, m2 = len(n1), len(n2)
        g = coo_matrix((np.ones(len(self.tail)), (self.tail, m1 + self.head)), shape=(m1 + m2, m1 + m2))
        _, label = connected_components(g, directed=False)
        # scipy numbers the components 0.. in order of their first node: that is their index here
        n_comp = int(label.max()) + 1 if len(label) else 0
        self.comp_of_u = label[:m1].astype(np.int64)
        self.comp_of_v = label[m1:].astype(np.int64)
        self.arc_comp = self.comp_of_u[self.tail] if len(self.tail) else np.zeros(0, np.int64)
        u_order, u_start, self.local_u = _grouped(self.comp_of_u, n_comp)
        v_order, v_start, self.local_v = _grouped(self.comp_of_v, n_comp)
        a_order, a_start, self.local_arc = _grouped(self.arc_comp, n_comp)
        local_tail = self.local_u[self.tail]
        local_head = self.local_v[self.head]
        self.components: list[_Component] = []
        for c in range(n_comp):
            u = u_order[u_start[c]:u_start[c + 1]]
            v = v_order[v_start[c]:v_start[c + 1]]
            arcs = a_order[a_start[c]:a_start[c + 1]]
            self.components.append(_Component(index=c, u=u, v=v, arcs=arcs, tail=local_tail[arcs],
                                              head=local_head[arcs], a=n1.count[u], b=n2.count[v]))
        self.n_solves = 0
        self._cache: dict = {}
        self.executor = executor
        if not lazy:
            self.solve([], [])

    # ------------------------------------------------------------------ solver calls
    def _mcf(self, comp: _Component, arc_cost: np.ndarray | None, sink_cost: np.ndarray | None
             ) -> tuple[int, np.ndarray]:
        """Min-cost flow of one component (:func:`solver.correspondence.flow_tasks.min_cost_flow_of`)."""
        out = min_cost_flow_of(comp.a, comp.b, comp.tail, comp.head, arc_cost, sink_cost)
        self.n_solves += 1
        if out is None:
            raise self._no_generator(comp)
        return out

    def _no_generator(self, comp: _Component) -> NoGenerator:
        return NoGenerator("no generator: the records of release 1 cannot all have a comparable buddy with "
                           f"the same sensitive value in release 2 ({comp.supply} records of "
                           f"{len(comp.u)} groups against {int(comp.b.sum())} possible buddies)")

    def solve(self, arc_objectives: Sequence[tuple[int, np.ndarray]],
              into_objectives: Sequence[tuple[int, np.ndarray]]) -> None:
        """Base flows of the components that have none, and the optima of the objectives not cached yet
        (``(component, local arc ids)`` / ``(component, local R2 node ids)``), one task per component
        (:mod:`solver.correspondence.flow_tasks`) run by the executor (:mod:`solver.executor`; in this process when the
        work is small and no executor was chosen).  Raises :class:`NoGenerator` for an infeasible
        component."""
        from solver.executor import InlineExecutor, LocalExecutor, chunks, current_executor

        work: dict[int, tuple[list, list]] = {}
        for c, arcs in arc_objectives:
            key = ("arc", c, arcs.tobytes())
            if key not in self._cache:
                self._cache[key] = None
                work.setdefault(c, ([], []))[0].append(arcs)
        for c, vs in into_objectives:
            key = ("in", c, vs.tobytes())
            if key not in self._cache:
                self._cache[key] = None
                work.setdefault(c, ([], []))[1].append(vs)
        for comp in self.components:
            if comp.base_flow is None:
                work.setdefault(comp.index, ([], []))
        if not work:
            return
        tasks = [FlowTask(c, self.components[c].a, self.components[c].b, self.components[c].tail,
                          self.components[c].head, arcs, into) for c, (arcs, into) in sorted(work.items())]
        ex = self.executor if self.executor is not None else current_executor()
        sizes = [len(t.tail) + len(t.a) + len(t.b) + 50 * (len(t.arc_objectives) + len(t.into_objectives))
                 for t in tasks]
        if isinstance(ex, LocalExecutor) and sum(sizes) < _PARALLEL_WORK:
            ex = InlineExecutor()
        # the chunks depend on the input only (a chunk's generators do): the same whichever executor
        parts = chunks(sizes, max(1, min(_MAX_CHUNKS, sum(sizes) // _CHUNK_WORK)))
        answers = [a for out in ex.map(solve_tasks, [[tasks[i] for i in part] for part in parts]) for a in out]
        for ans in sorted(answers, key=lambda x: x.index):
            comp = self.components[ans.index]
            if ans.infeasible:
                raise self._no_generator(comp)
            self.n_solves += ans.solves
            if comp.base_flow is None:
                comp.base_flow = ans.base_flow
            arcs, into = work[ans.index]
            for a, v in zip(arcs, ans.arc_values):
                self._cache[("arc", ans.index, a.tobytes())] = int(v)
            for vs, v in zip(into, ans.into_values):
                self._cache[("in", ans.index, vs.tobytes())] = int(v)

    # ------------------------------------------------------------------ objectives
    def split_arcs(self, arcs: np.ndarray) -> dict[int, np.ndarray]:
        """Global arc ids -> {component: sorted local arc ids}."""
        arcs = np.unique(np.asarray(arcs, dtype=np.int64))
        out: dict[int, np.ndarray] = {}
        if not len(arcs):
            return out
        comps = self.arc_comp[arcs]
        for c in np.unique(comps):
            out[int(c)] = np.sort(self.local_arc[arcs[comps == c]])
        return out

    def split_v(self, v_nodes: np.ndarray) -> dict[int, np.ndarray]:
        v_nodes = np.unique(np.asarray(v_nodes, dtype=np.int64))
        out: dict[int, np.ndarray] = {}
        if not len(v_nodes):
            return out
        comps = self.comp_of_v[v_nodes]
        for c in np.unique(comps):
            out[int(c)] = np.sort(self.local_v[v_nodes[comps == c]])
        return out

    def max_arc_flows(self, objectives: Sequence[tuple[int, np.ndarray]]) -> list[int]:
        """The maximum, over generators, of the total flow on each objective's arcs (``(component, local arc
        ids)``; :func:`solver.correspondence.flow_tasks.solve_tasks`, cached)."""
        self.solve(objectives, [])
        return [self._cache[("arc", c, arcs.tobytes())] for c, arcs in objectives]

    def min_inflows(self, objectives: Sequence[tuple[int, np.ndarray]]) -> list[int]:
        """The minimum, over generators, of the number of records of the objective's ``R2`` nodes that have
        a buddy: ``N1 - rho(V \\ T)`` for the component (one max flow each, cached)."""
        self.solve([], objectives)
        return [self._cache[("in", c, vs.tobytes())] for c, vs in objectives]

    # ------------------------------------------------------------------ generators (witnesses)
    def generator(self, *, maximize_arcs: Iterable[int] = (), minimize_into: Iterable[int] = ()) -> np.ndarray:
        """A generator as flows on every arc: optimal for the objective (maximize the flow on the global arcs
        ``maximize_arcs``, or minimize the inflow into the global ``R2`` nodes ``minimize_into``) in the
        components it touches, the base generator elsewhere."""
        flow = np.zeros(len(self.tail), np.int64)
        arcs = self.split_arcs(np.fromiter(maximize_arcs, dtype=np.int64))
        into = self.split_v(np.fromiter(minimize_into, dtype=np.int64))
        for comp in self.components:
            c = comp.index
            if c in arcs or c in into:
                ac = np.zeros(len(comp.arcs), np.int64)
                sc = np.zeros(len(comp.v), np.int64)
                if c in arcs:
                    ac[arcs[c]] = -1
                if c in into:
                    sc[into[c]] = 1
                _, f = self._mcf(comp, ac, sc)
            else:
                f = comp.base_flow
            flow[comp.arcs] = f
        return flow


def _buddy_arcs(n1: Nodes, n2: Nodes, pairs=None) -> tuple[np.ndarray, np.ndarray]:
    """Arcs ``u -> v`` of the buddy graph: same sensitive value, comparable regions; ordered by value, then
    ``u``, then ``v``.  A join of the nodes on the comparable region pairs (:func:`comparable_pairs`, or
    ``pairs`` when given)."""
    import pandas as pd

    r1, r2 = pairs if pairs is not None else comparable_pairs(n1.region_lo, n1.region_hi, n1.region_masks,
                                                              n2.region_lo, n2.region_hi, n2.region_masks)
    if not len(r1) or not len(n1) or not len(n2):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    left = pd.DataFrame({"u": np.arange(len(n1)), "r1": n1.region, "s": n1.value})
    pairs = pd.DataFrame({"r1": r1, "r2": r2})
    right = pd.DataFrame({"v": np.arange(len(n2)), "r2": n2.region, "s": n2.value})
    arcs = left.merge(pairs, on="r1").merge(right, on=["r2", "s"])
    tail, head, val = (arcs[c].to_numpy(np.int64) for c in ("u", "v", "s"))
    order = np.lexsort((head, tail, val))
    return tail[order], head[order]


def answers_of(m: int, req: np.ndarray, value: np.ndarray, best: np.ndarray, answer_type) -> list:
    """``m`` exact answers from :meth:`TwoReleaseEngine.answer_arrays`' arrays (sorted by request, then
    value)."""
    cuts = np.searchsorted(req, np.arange(m + 1))
    vals, bests = value.tolist(), best.tolist()
    out = []
    for i in range(m):
        a, b = int(cuts[i]), int(cuts[i + 1])
        per = dict(zip(vals[a:b], bests[a:b]))
        out.append(answer_type(low=per, high=dict(per), exact=True))
    return out


def _cut_parts(out: list, req: np.ndarray, comp: np.ndarray, local: np.ndarray) -> None:
    """``out[i][1][c]`` = the sorted distinct ``local`` ids of request ``i`` in component ``c`` (components in
    ascending order, as :meth:`BuddyGraph.split_arcs` gives them)."""
    if not len(req):
        return
    order = np.lexsort((local, comp, req))
    req, comp, local = req[order], comp[order], local[order]
    new = np.ones(len(req), bool)
    new[1:] = (req[1:] != req[:-1]) | (comp[1:] != comp[:-1]) | (local[1:] != local[:-1])
    req, comp, local = req[new], comp[new], local[new]
    cut = np.flatnonzero((req[1:] != req[:-1]) | (comp[1:] != comp[:-1])) + 1
    heads = np.concatenate([[0], cut])
    for h, part in zip(heads.tolist(), np.split(local.astype(np.int64), cut)):
        out[int(req[h])][1][int(comp[h])] = part


def _grouped(labels: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items grouped by label: ``(order, start, local)`` - group ``c`` is ``order[start[c]:start[c + 1]]``
    (ascending), and ``local[i]`` is item ``i``'s position in its group."""
    order = np.argsort(labels, kind="stable").astype(np.int64)
    start = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=n))]).astype(np.int64)
    local = np.empty(len(labels), np.int64)
    local[order] = np.arange(len(labels)) - start[labels[order]] if len(labels) else 0
    return order, start, local


class TwoReleaseEngine:
    """Answers :class:`~solver.correspondence.crack.CrackRequest` for two releases with :class:`BuddyGraph` flows.

    ``(t, j) = (1, 1)``: F-attack on a class of ``R1``; ``(1, 2)``: C-attack on a class of ``R2``; ``(2, 2)``:
    B-attack on a class of ``R2``.  Every answer is exact.
    """

    exact_engine = "min-cost flow"

    def __init__(self, n1: Nodes, n2: Nodes, executor=None, pairs=None):
        self.nodes = (n1, n2)
        # solved in :meth:`answer`: base flows and objectives of a component in one task
        self.graph = g = BuddyGraph(n1, n2, lazy=True, executor=executor, pairs=pairs)
        order = np.argsort(n2.cls, kind="stable")
        cuts = np.searchsorted(n2.cls[order], np.arange(int(n2.cls.max(initial=-1)) + 2))
        self._cls2 = (order, cuts)  # class c of R2: its nodes order[cuts[c]:cuts[c + 1]]
        reg_t = n1.region[g.tail]
        reg_h = n2.region[g.head]
        key = reg_t * max(1, n2.n_regions) + reg_h
        order = np.argsort(key, kind="stable")
        uniq, start = np.unique(key[order], return_index=True)
        ends = np.append(start[1:], len(order))
        self._pairs = (uniq, start, ends, order)  # region pair uniq[k]: its arcs order[start[k]:ends[k]]
        self._n2_regions = max(1, n2.n_regions)
        self.comp_value = np.full(len(g.components), -1, dtype=np.int64)
        for comp in g.components:
            if len(comp.u):
                self.comp_value[comp.index] = n1.value[comp.u[0]]
            elif len(comp.v):
                self.comp_value[comp.index] = n2.value[comp.v[0]]

    def good_arcs(self, signature: tuple) -> np.ndarray:
        """Arcs whose two regions both contain the target point (the pair can be instantiated at it)."""
        uniq, start, ends, order = self._pairs
        parts = []
        for r1 in signature[0]:
            for r2 in signature[1]:
                key = int(r1) * self._n2_regions + int(r2)
                k = int(np.searchsorted(uniq, key))
                if k < len(uniq) and uniq[k] == key:
                    parts.append(order[start[k]:ends[k]])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def _objective(self, req) -> tuple[str, dict]:
        n1, n2 = self.nodes
        g = self.graph
        if req.t == 2:
            order, cuts = self._cls2
            vs = order[cuts[req.cls]:cuts[req.cls + 1]] if req.cls < len(cuts) - 1 else np.zeros(0, np.int64)
            vs = vs[np.isin(n2.region[vs], list(req.signature[1]))]
            return "in", g.split_v(vs)
        arcs = self.good_arcs(req.signature)
        if req.j == 1:
            arcs = arcs[n1.cls[g.tail[arcs]] == req.cls]
        else:
            arcs = arcs[n2.cls[g.head[arcs]] == req.cls]
        return "arc", g.split_arcs(arcs)

    def _objectives(self, requests) -> list[tuple[str, dict]]:
        """``[self._objective(r) for r in requests]``, computed for all requests at once (``requests``: a list
        of :class:`~solver.correspondence.crack.CrackRequest` or a :class:`~solver.correspondence.crack.RequestTable`):
        every request's arcs (or ``R2`` nodes) are gathered into one array with the request's index beside
        them, filtered by class (and region), sorted by (request, component, local id) and cut into the
        per-component parts."""
        from .crack import RequestTable

        tab = RequestTable.of(requests)
        n1, n2 = self.nodes
        g = self.graph
        m = len(tab)
        out: list = [None] * m
        nr = self._n2_regions
        arc_req = np.flatnonzero(tab.t != 2)
        in_req = np.flatnonzero(tab.t == 2)
        # arc objectives: the arcs of every (region of R1, region of R2) pair of the signature, of the class
        s1, s2 = tab.start
        e1, own1 = expand_ranges(s1[arc_req], s1[arc_req + 1], arc_req)
        e2, pos = expand_ranges(s2[own1], s2[own1 + 1], np.arange(len(own1)))
        rq_a = own1[pos]
        keys_a = tab.regions[0][e1][pos] * nr + tab.regions[1][e2]
        uniq, start, ends, order = self._pairs
        pos = np.searchsorted(uniq, keys_a)
        found = pos < len(uniq)
        found[found] = uniq[pos[found]] == keys_a[found]
        arcs, req_of = expand_ranges(start[pos[found]], ends[pos[found]], rq_a[found])
        arcs = order[arcs]
        own = np.where(tab.j[req_of] == 1, n1.cls[g.tail[arcs]], n2.cls[g.head[arcs]]) == tab.cls[req_of]
        arcs, req_of = arcs[own], req_of[own]
        for i in arc_req.tolist():
            out[i] = ("arc", {})
        _cut_parts(out, req_of, g.arc_comp[arcs], g.local_arc[arcs])
        # inflow objectives: the class's R2 nodes whose region contains the target
        n_cls2 = len(self._cls2[1]) - 1
        b_req = in_req[tab.cls[in_req] < n_cls2]
        c_of = tab.cls[b_req]
        nodes, req_of = expand_ranges(self._cls2[1][c_of], self._cls2[1][c_of + 1], b_req)
        nodes = self._cls2[0][nodes]
        e, own_b = expand_ranges(s2[b_req], s2[b_req + 1], b_req)
        allowed = own_b * nr + tab.regions[1][e]
        keep = np.isin(req_of * nr + n2.region[nodes], allowed)
        nodes, req_of = nodes[keep], req_of[keep]
        for i in in_req.tolist():
            out[i] = ("in", {})
        _cut_parts(out, req_of, g.comp_of_v[nodes], g.local_v[nodes])
        return out

    def answer(self, requests) -> list:
        """Per request, the :class:`~solver.correspondence.crack.CrackAnswer` (exact)."""
        from .crack import CrackAnswer

        req, value, best = self.answer_arrays(requests)
        return answers_of(len(requests), req, value, best, CrackAnswer)

    def answer_arrays(self, requests, meanwhile=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The answers as three arrays sorted by request then value: ``best[k]`` is the maximum, over
        generators, of the records of value ``value[k]`` in request ``req[k]``'s class that represent its
        target (values whose group no objective reaches are left out: none of their records can);
        ``meanwhile()`` is called first (:meth:`ShardedEngine.answer_arrays` calls it while its workers
        solve)."""
        if meanwhile is not None:
            meanwhile()
        g = self.graph
        objs = self._objectives(requests)
        arc_items = [(c, a) for kind, parts in objs if kind == "arc" for c, a in parts.items()]
        in_items = [(c, v) for kind, parts in objs if kind == "in" for c, v in parts.items()]
        g.solve(arc_items, in_items)  # every component's task at once (one executor pass)
        arc_vals = dict(zip([(c, a.tobytes()) for c, a in arc_items], g.max_arc_flows(arc_items)))
        in_vals = dict(zip([(c, v.tobytes()) for c, v in in_items], g.min_inflows(in_items)))
        req, value, best = [], [], []
        for i, (kind, parts) in enumerate(objs):
            per: dict[int, int] = {}
            for c, loc in parts.items():
                s = int(self.comp_value[c])
                if kind == "arc":
                    val = arc_vals[(c, loc.tobytes())]
                else:
                    val = int(g.components[c].b[loc].sum()) - in_vals[(c, loc.tobytes())]
                per[s] = per.get(s, 0) + int(val)
            for s in sorted(per):
                req.append(i)
                value.append(s)
                best.append(per[s])
        return (np.asarray(req, np.int64), np.asarray(value, np.int64), np.asarray(best, np.int64))

    def base_arcs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The base generator's buddy pairs with a positive count: ``(u, v, count)`` in arc order (value, ``u``,
        ``v``).  Solves the base flows of the components that have none."""
        g = self.graph
        g.solve([], [])
        flow = np.zeros(len(g.tail), np.int64)
        for comp in g.components:
            flow[comp.arcs] = comp.base_flow
        keep = flow > 0
        return g.tail[keep], g.head[keep], flow[keep]

    def witness_flow(self, req) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A generator realizing the request's optimum: ``(arc flows, objective arcs, objective R2 nodes)``."""
        kind, parts = self._objective(req)
        g = self.graph
        g.solve([], [])  # base flows
        if kind == "arc":
            arcs = np.concatenate([g.components[c].arcs[a] for c, a in parts.items()]) if parts else \
                np.zeros(0, np.int64)
            return g.generator(maximize_arcs=arcs), arcs, np.zeros(0, np.int64)
        vs = np.concatenate([g.components[c].v[v] for c, v in parts.items()]) if parts else np.zeros(0, np.int64)
        return g.generator(minimize_into=vs), np.zeros(0, np.int64), vs

    def witness(self, req, releases, values, point) -> dict:
        """The generator realizing ``req``'s optimum, in the report's form (see :func:`generator_json`)."""
        flow, _, _ = self.witness_flow(req)
        g = self.graph
        return generator_json(self.nodes, releases, values, point,
                              [(np.stack([g.tail, g.head], axis=1), flow)], focus=(req.j - 1, req.cls))
