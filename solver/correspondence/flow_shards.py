"""The two-release engine split into shards of its buddy graph: every shard a task any worker runs.

Fung et al. (EDBT 2008), section 3.1: buddies agree on the sensitive value and their regions are comparable,
so no arc of the buddy graph joins two values, nor two *region groups* (the connected components of the graph
whose arcs are the comparable region pairs of ``R1`` and ``R2``), and every crack question's answer is a sum
over values (one group each) of sums over the graph's components - the graph of one region group is a problem
of its own.  :class:`ShardedEngine` answers the questions of :class:`~solver.correspondence.flows.TwoReleaseEngine`
that way:

1. the main process aggregates nothing new: it finds the region groups (one sparse connected-components call
   over the region pairs), packs them by their nodes into *shards* (:func:`solver.executor.plan_chunks`: the
   shards depend on the input only, never on the executor or its workers) and sends each shard its nodes and
   the numbers of the requests whose signature holds one of its regions (no other request reaches it);
2. each shard is a task (:func:`solve_shard`): its buddy graph, components, its requests' objectives, the
   flows, and per (request, value) the optimum over its components - plus the shard's base generator (its
   buddy pairs with a positive count) and every node's component;
3. the main process merges the arrays, adding up the parts of a (request, value) that several shards answered
   (a value's graph is spread over region groups: on the census of issue 28, 18,664 groups, the largest 0.6% of
   the nodes, where a sensitive value held up to a tenth of them and its shard a tenth of the work).  A witness
   (a generator realizing one request's optimum) re-solves only the components its objective touches
   (:func:`witness_part`, one small task each); every other component keeps the base generator of step 2.

What every shard reads (the requests as a :class:`~solver.correspondence.crack.RequestTable`, the comparable
region pairs, the region tables) is the executor's ``shared`` argument: sent to each worker once.  Every figure
is an optimum, so it does not depend on the shards; a generator does (a shard solves its components in chunks,
:mod:`solver.correspondence.flow_tasks`), and the shards depend on the input alone, so the report is the same
byte for byte whichever executor runs them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from solver.executor import cycles_uncollected

from .crack import CrackAnswer, RequestTable
from .flows import TwoReleaseEngine, answers_of, generator_json
from .regions import Nodes, comparable_pairs_all

__all__ = ["ShardedEngine", "solve_shard", "witness_part"]

#: nodes (both releases) per shard, and the most shards: from the input only (on the census of issue 28, 64
#: shards of 6,400 nodes: the longest 0.7 s of 16.8 s; shards of sensitive values were 14, the longest 2.4 s)
_SHARD_WORK = 5_000
_MAX_SHARDS = 64
#: below this many nodes in all, local worker processes are not worth starting (this process solves the shards)
_PARALLEL_WORK = 100_000

#: the node arrays a task is sent (region tables, masks and bounds stay in the shared part)
_NODE_ARRAYS = ("value", "cls", "count", "region")


@dataclass(eq=False)
class Shared:
    """What every shard task reads: the requests, the comparable region pairs, and per release the node
    fields common to all nodes (region tables, class sizes) - sent to each worker once."""

    requests: RequestTable
    pairs: tuple
    frames: tuple  # per release: a Nodes with no node (region tables, class sizes, mask columns)


@dataclass(eq=False)
class ShardTask:
    """One shard: the global ids of its nodes in ``R1`` and ``R2`` and their arrays (``_NODE_ARRAYS``), and the
    requests whose signature holds one of its regions (``None``: every request) - no other can reach it."""

    index: int
    ids: tuple
    arrays: tuple
    requests: np.ndarray | None = None


@dataclass(eq=False)
class ShardAnswer:
    index: int
    req: np.ndarray
    value: np.ndarray
    best: np.ndarray
    base: tuple  # (u, v, count) global ids, the base generator's positive buddy pairs
    comp: tuple  # per release: the component (within the shard) of each of the shard's nodes
    solves: int


def _frame(nd: Nodes) -> Nodes:
    """``nd`` without its nodes: what all shards share."""
    empty = np.zeros(0, np.int64)
    return replace(nd, lo=nd.lo[:0], hi=nd.hi[:0], masks=nd.masks[:0], value=empty, cls=empty, count=empty,
                   region=empty, row_node=empty)


def _sub(frame: Nodes, arrays: tuple) -> Nodes:
    """A frame with nodes: their sensitive value, class, count and region (no bounds: a shard reads regions)."""
    m = len(arrays[0])
    q = frame.lo.shape[1]
    return replace(frame, lo=np.zeros((m, q), np.int32), hi=np.zeros((m, q), np.int32),
                   masks=np.zeros((m, frame.masks.shape[1]), np.uint64),
                   **dict(zip(_NODE_ARRAYS, arrays)))


def _subset(nd: Nodes, ids: np.ndarray) -> tuple:
    return tuple(np.ascontiguousarray(getattr(nd, name)[ids]) for name in _NODE_ARRAYS)


def _engine(task: ShardTask, shared: Shared) -> TwoReleaseEngine:
    from solver.executor import InlineExecutor

    n1, n2 = (_sub(f, a) for f, a in zip(shared.frames, task.arrays))
    # a shard is one task: its components are solved here, never handed to another executor
    return TwoReleaseEngine(n1, n2, executor=InlineExecutor(), pairs=shared.pairs)


def solve_shard(task: ShardTask, shared: Shared) -> ShardAnswer:
    """The answers of every request on one shard of values, its base generator and its components (the cyclic
    garbage collector paused: the components and objectives are tens of thousands of objects in no cycle)."""
    with cycles_uncollected():
        eng = _engine(task, shared)
        if task.requests is None:
            req, value, best = eng.answer_arrays(shared.requests)
        else:  # the shard's requests only, numbered as in the whole table
            req, value, best = eng.answer_arrays(shared.requests.take(task.requests))
            req = task.requests[req]
        u, v, count = eng.base_arcs()
    g = eng.graph
    ids1, ids2 = task.ids
    return ShardAnswer(task.index, req, value, best, (ids1[u], ids2[v], count),
                       (g.comp_of_u.astype(np.int32), g.comp_of_v.astype(np.int32)), g.n_solves)


def witness_part(task: tuple, shared: Shared) -> tuple:
    """A generator realizing one request's optimum on the components its objective touches: ``task`` is
    ``(ShardTask of those components' nodes, request index)``.  Returns the global ``(u, v, count)`` of
    their arcs and the ``R1`` / ``R2`` nodes of the components re-solved."""
    shard, i = task
    with cycles_uncollected():
        eng = _engine(shard, shared)
        kind, parts = eng._objective(shared.requests.request(i))
    g = eng.graph
    ids1, ids2 = shard.ids
    tails, heads, flows, solved_u, solved_v = [], [], [], [], []
    for c, loc in parts.items():  # ascending components, as TwoReleaseEngine.witness_flow solves them
        comp = g.components[c]
        arc_cost = np.zeros(len(comp.arcs), np.int64)
        sink_cost = np.zeros(len(comp.v), np.int64)
        if kind == "arc":
            arc_cost[loc] = -1
        else:
            sink_cost[loc] = 1
        _, f = g._mcf(comp, arc_cost, sink_cost)
        tails.append(ids1[g.tail[comp.arcs]])
        heads.append(ids2[g.head[comp.arcs]])
        flows.append(f)
        solved_u.append(ids1[comp.u])
        solved_v.append(ids2[comp.v])

    def cat(parts):
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    return cat(tails), cat(heads), cat(flows), cat(solved_u), cat(solved_v)


class ShardedEngine:
    """:class:`~solver.correspondence.flows.TwoReleaseEngine`'s answers and witnesses, computed shard by shard
    of region groups by the current executor (:mod:`solver.executor`).  Every answer is exact."""

    exact_engine = "min-cost flow"

    def __init__(self, n1: Nodes, n2: Nodes, executor=None):
        self.nodes = (n1, n2)
        self.executor = executor
        self.pairs = comparable_pairs_all(n1.region_lo, n1.region_hi, n1.region_masks, n2.region_lo,
                                          n2.region_hi, n2.region_masks)
        self._shared: Shared | None = None
        self._base = None
        self._base_sorted = None
        self._comp = None
        self.n_solves = 0

    def region_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Per region of ``R1`` and of ``R2``, its *region group*: the connected component of the graph whose
        arcs are the comparable region pairs.  A buddy pair's regions are comparable, so no arc of the buddy
        graph joins two groups (nor two values): every group of every value is a problem of its own."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        n1, n2 = self.nodes
        k1, k2 = max(1, n1.n_regions), max(1, n2.n_regions)
        r1, r2 = self.pairs
        graph = coo_matrix((np.ones(len(r1), np.int8), (np.asarray(r1), np.asarray(r2) + k1)),
                           shape=(k1 + k2, k1 + k2))
        _, label = connected_components(graph, directed=False)
        return label[:k1], label[k1:]

    def _plan(self):
        """The shard tasks - region groups (:meth:`region_groups`) packed by their nodes (both releases) into
        chunks of about :data:`_SHARD_WORK` nodes (:func:`solver.executor.plan_chunks`; the whole graph of a
        sensitive value is spread over them, so that no shard is a tenth of the work when a value is) - and who
        solves them."""
        from solver.executor import plan_chunks

        n1, n2 = self.nodes
        g1, g2 = self.region_groups()
        node_group = (g1[n1.region], g2[n2.region])
        n_groups = int(max(g1.max(initial=-1), g2.max(initial=-1))) + 1
        sizes = sum(np.bincount(g, minlength=n_groups) for g in node_group).tolist()
        shards, ex = plan_chunks(sizes, chunk_work=_SHARD_WORK, max_chunks=_MAX_SHARDS,
                                 parallel_work=_PARALLEL_WORK, executor=self.executor)
        shard_of = np.full(n_groups, -1, np.int64)
        for k, groups in enumerate(shards):
            shard_of[groups] = k
        wanted = self._shard_requests(shard_of[g2], len(shards)) if len(shards) > 1 else [None]
        # each release's nodes grouped by shard at once (ascending ids within a shard: a stable sort)
        groups = []
        for g in node_group:
            shard = shard_of[g]
            order = np.argsort(shard, kind="stable")
            groups.append((order, np.searchsorted(shard[order], np.arange(len(shards) + 1))))
        tasks = []
        for k in range(len(shards)):
            ids = tuple(order[cuts[k]:cuts[k + 1]] for order, cuts in groups)
            tasks.append(ShardTask(k, ids, tuple(_subset(nd, i) for nd, i in zip(self.nodes, ids)), wanted[k]))
        return tasks, ex

    def _shard_requests(self, shard_of_r2: np.ndarray, n_shards: int) -> list[np.ndarray]:
        """Per shard, the requests (ascending) whose signature in ``R2`` holds one of its regions: the only ones
        that can reach it (an arc objective's arcs join comparable regions of its signature, one group each;
        an inflow objective's nodes lie in its regions of ``R2``)."""
        from .crack import expand_ranges

        tab = self._shared.requests
        if not len(tab):
            return [np.zeros(0, np.int64) for _ in range(n_shards)]
        m, s2 = len(tab), tab.start[1]
        pos, owner = expand_ranges(s2[:-1], s2[1:], np.arange(m, dtype=np.int64))
        keys = np.unique(shard_of_r2[tab.regions[1][pos]] * m + owner)  # (shard, request): by shard, then request
        cuts = np.searchsorted(keys, np.arange(n_shards + 1, dtype=np.int64) * m)
        return [keys[cuts[k]:cuts[k + 1]] - k * m for k in range(n_shards)]

    def answer(self, requests) -> list:
        """Per request, the :class:`~solver.correspondence.crack.CrackAnswer` (exact)."""
        req, value, best = self.answer_arrays(requests)
        return answers_of(len(requests), req, value, best, CrackAnswer)

    def answer_arrays(self, requests, meanwhile=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The answers as :meth:`TwoReleaseEngine.answer_arrays` gives them (sorted by request, then value);
        ``meanwhile()`` runs in this process while the workers solve the shards."""
        n1, n2 = self.nodes
        table = RequestTable.of(requests)
        self._shared = Shared(table, self.pairs, (_frame(n1), _frame(n2)))
        tasks, ex = self._plan()
        # the largest shards first, so that the workers finish together; merged in shard order
        order = sorted(range(len(tasks)), key=lambda k: -(len(tasks[k].ids[0]) + len(tasks[k].ids[1])))
        done = ex.map(solve_shard, [tasks[k] for k in order], shared=self._shared, meanwhile=meanwhile)
        results = sorted(done, key=lambda a: a.index)
        self.n_solves += sum(a.solves for a in results)
        req = np.concatenate([a.req for a in results])
        value = np.concatenate([a.value for a in results])
        best = np.concatenate([a.best for a in results])
        by = np.lexsort((value, req))
        req, value, best = req[by], value[by], best[by]
        # a (request, value) answered by several shards (a value's graph spread over them): the sum of their
        # parts, as one engine sums its components' optima
        first = np.ones(len(req), bool)
        first[1:] = (req[1:] != req[:-1]) | (value[1:] != value[:-1])
        at = np.flatnonzero(first)
        if len(at) < len(req):
            req, value, best = req[at], value[at], np.add.reduceat(best, at)
        # the base generator and every node's component (numbered across shards)
        self._base = tuple(np.concatenate([a.base[x] for a in results]) for x in range(3))
        self._base_sorted = None
        comp = [np.zeros(len(n1), np.int64), np.zeros(len(n2), np.int64)]
        offset = 0
        for t, a in zip(tasks, results):
            for l in range(2):
                comp[l][t.ids[l]] = a.comp[l].astype(np.int64) + offset
            offset += int(max(a.comp[0].max(initial=-1), a.comp[1].max(initial=-1))) + 1
        self._comp = comp
        return req, value, best

    def _request_index(self, req) -> int:
        tab = self._shared.requests
        for i in np.flatnonzero((tab.t == req.t) & (tab.j == req.j) & (tab.cls == req.cls)).tolist():
            if tab.request(i) == req:
                return i
        raise KeyError(req)

    def witness_flows(self, reqs) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per request (answered before), a generator realizing its optimum as buddy pairs with a positive
        count ``(u, v, count)``, in arc order (value, ``u``, ``v``): the components its objective touches
        re-solved (one task per request), the base generator elsewhere."""
        from solver.executor import InlineExecutor, LocalExecutor, current_executor

        n1, n2 = self.nodes
        tasks = []
        for req in reqs:
            i = self._request_index(req)
            nd = self.nodes[req.j - 1]
            in_class = np.flatnonzero((nd.cls == req.cls) & np.isin(nd.region, list(req.signature[req.j - 1])))
            touched = np.unique(self._comp[req.j - 1][in_class])
            ids = tuple(np.flatnonzero(np.isin(self._comp[l], touched)) for l in range(2))
            tasks.append((ShardTask(-1, ids, tuple(_subset(nd_, i_) for nd_, i_ in zip(self.nodes, ids))), i))
        ex = self.executor if self.executor is not None else current_executor()
        if isinstance(ex, LocalExecutor) and sum(len(t.ids[0]) + len(t.ids[1]) for t, _ in tasks) < _PARALLEL_WORK:
            ex = InlineExecutor()
        out = []
        bu, bv, bc, bkey = self._sorted_base()
        for tail, head, flow, solved_u, _ in ex.map(witness_part, tasks, shared=self._shared):
            drop = np.zeros(len(n1), bool)
            drop[solved_u] = True
            keep = ~drop[bu]
            pos = flow > 0
            tu, tv, tc = tail[pos], head[pos], flow[pos]
            new = np.lexsort((tv, tu, n1.value[tu]))
            tu, tv, tc = tu[new], tv[new], tc[new]
            if bkey is None:  # keys would overflow: the whole generator sorted again
                u, v, c = (np.concatenate([b[keep], t]) for b, t in ((bu, tu), (bv, tv), (bc, tc)))
                order = np.lexsort((v, u, n1.value[u]))
                out.append((u[order], v[order], c[order]))
                continue
            # the re-solved arcs merged into the kept ones (both sorted; after equal keys, as a stable sort of
            # the kept arcs then the new ones would place them)
            at = np.searchsorted(bkey[keep], self._arc_keys(tu, tv), side="right")
            out.append(tuple(np.insert(b[keep], at, t) for b, t in ((bu, tu), (bv, tv), (bc, tc))))
        return out

    def _arc_keys(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """One int64 per arc ordering arcs as ``(value of u, u, v)`` does (:meth:`_sorted_base` checked it fits)."""
        n1, n2 = self.nodes
        return (n1.value[u].astype(np.int64) * len(n1) + u) * max(1, len(n2)) + v

    def _sorted_base(self) -> tuple:
        """The base generator's arcs sorted by (value of ``u``, ``u``, ``v``) - the witnesses' arc order - with
        their keys (``None`` when a key would not fit in 62 bits), computed once for all witnesses."""
        if self._base_sorted is None:
            n1, n2 = self.nodes
            bu, bv, bc = self._base
            order = np.lexsort((bv, bu, n1.value[bu]))
            bu, bv, bc = bu[order], bv[order], bc[order]
            top = (int(n1.value.max(initial=0)) + 1) * max(1, len(n1)) * max(1, len(n2))
            self._base_sorted = (bu, bv, bc, self._arc_keys(bu, bv) if top < 2 ** 62 else None)
        return self._base_sorted

    def witness(self, req, releases, values, point) -> dict:
        """The generator realizing ``req``'s optimum, in the report's form (see :func:`generator_json`)."""
        return self.witnesses([(req, point)], releases, values)[0]

    def witnesses(self, wanted, releases, values) -> list[dict]:
        """:meth:`witness` of every ``(req, point)`` of ``wanted``, their components re-solved side by side in
        one map of the executor (the report's F-, C- and B-witnesses: one round trip to the workers, not
        three)."""
        flows = self.witness_flows([req for req, _ in wanted])
        return [generator_json(self.nodes, releases, values, point, [(np.stack([u, v], axis=1), c)],
                               focus=(req.j - 1, req.cls)) for (req, point), (u, v, c) in zip(wanted, flows)]
