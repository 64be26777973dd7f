"""The component model of the chain engine (:mod:`solver.correspondence.generators`): incidences, atom classes, trivial
bounds, the pool of generators, and the first generator by min-cost flows.

Fung et al., section 7.1, read over atoms (:func:`solver.correspondence.regions.atoms`): a generator is, for every
sensitive value, integers ``z[j, v, a]`` - records of group node ``v`` of ``R_j`` instantiated in atom ``a``
- with node rows ``sum_a z[j, v, a] = |v|`` and loads ``y[a, j] = sum_v z[j, v, a]`` non-decreasing in ``j``.
The (node, atom) incidence graph of one value splits into independent connected *components*; atoms of one
component with the same incidence are merged into *atom classes* (exact: see :mod:`solver.correspondence.generators`).

A :class:`Component` holds the incidences ``(J, V, C)`` (release, node, class; one per variable ``z``),
its trivial bounds (``cap``, ``low``, ``ub``) and its *pool*: proved-feasible generators that raise some
arrival lower bound ``best[c, t - 1]`` (arrivals ``y[c, t] - y[c, t - 1]``).  :class:`Stats` and
:class:`Clock` are the engine's bookkeeping, shared by the bulk pass and CP-SAT.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from ortools.graph.python import min_cost_flow
from ortools.sat.python import cp_model
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .chain_lp import ChainLP
from .flows import NoGenerator
from .regions import Nodes

__all__ = ["Clock", "Component", "Stats", "arrivals", "build_components", "flow_generator"]

_NONE = np.zeros(0, np.int64)


@dataclass
class Stats:
    """What the engine did: CP-SAT solves (and their statuses), objectives closed by a pooled generator
    (``hinted``), left open by the budget (``over_budget``) or by a CP-SAT stop (``not_optimal``, with
    ``clipped`` of them stopped by what was left of the budget), flow bounds and LP solves of the bulk pass."""

    solves: int = 0
    hinted: int = 0
    bounded: int = 0
    not_optimal: int = 0
    clipped: int = 0
    over_budget: int = 0
    flow_bounds: int = 0
    lp_solves: int = 0
    objectives: int = 0
    statuses: Counter = field(default_factory=Counter)


@dataclass
class Clock:
    """Seconds of solver work spent against a budget (``None``: no limit)."""

    budget: float | None = None
    spent: float = 0.0

    def over(self) -> bool:
        return self.budget is not None and self.spent >= self.budget

    def left(self) -> float:
        return float("inf") if self.budget is None else self.budget - self.spent

    def charge(self, since: float) -> float:
        """Add the time since ``since`` (a :func:`time.perf_counter` reading); returns a new reading."""
        now = time.perf_counter()
        self.spent += now - since
        return now


def _runs(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, cuts)`` for :func:`numpy.split`: the indices of ``key`` grouped by value."""
    order = np.argsort(key, kind="stable")
    return order, np.flatnonzero(np.diff(key[order])) + 1


def arrivals(y: np.ndarray) -> np.ndarray:
    """``y[c, t] - y[c, t-1]`` (``y[c, -1] = 0``)."""
    return np.diff(y, axis=1, prepend=0)


@dataclass(eq=False)
class Component:
    """One connected component of the (node, atom) incidence graph of one sensitive value, with atoms of
    identical incidence merged into *atom classes*.

    ``J, V, C``: the incidences ``(release, node, class)`` (arrays, one entry per variable ``z``); ``count``:
    the node's size per incidence; ``members[c]``: the atoms of class ``c``."""

    value: int
    J: np.ndarray
    V: np.ndarray
    C: np.ndarray
    count: np.ndarray
    members: list
    cap: np.ndarray = None  # (classes, n): records of R_j that can sit in the class
    low: np.ndarray = None  # (classes, n): lower bound on y (records forced into the class)
    ub: np.ndarray = None  # (classes, n): proven upper bounds on the arrivals at (c, t) (column t - 1)
    model: cp_model.CpModel | None = None
    lp: ChainLP | None = None
    _by_class: dict | None = None
    pool: list = field(default_factory=list)  # feasible solutions (z per incidence)
    best: np.ndarray = None  # (classes, n): best arrivals over the pool (lower bounds)
    best_sol: np.ndarray = None  # (classes, n): index in the pool of the solution attaining ``best``

    @property
    def n_classes(self) -> int:
        return len(self.members)

    def node_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Per incidence, the index of its node (release, node) among the component's nodes; per node, its
        number of incidences (atom classes)."""
        key = self.J * (int(self.V.max()) + 1 if len(self.V) else 1) + self.V
        _, inv, deg = np.unique(key, return_inverse=True, return_counts=True)
        return inv.reshape(-1), deg

    def incidences(self, c: int, j: int) -> np.ndarray:
        """Indices of the incidences of class ``c`` in ``R_{j+1}``."""
        if self._by_class is None:
            self._by_class = {}
            for part in np.split(*_runs(self.C * len(self.cap[0]) + self.J)):
                self._by_class[(int(self.C[part[0]]), int(self.J[part[0]]))] = part
        return self._by_class.get((c, j), _NONE)

    def loads(self, z: np.ndarray, n: int) -> np.ndarray:
        """``y[c, j]``: individuals of the class present at ``T_j``."""
        return np.bincount(self.C * n + self.J, weights=z, minlength=self.n_classes * n).astype(
            np.int64).reshape(self.n_classes, n)

    def chain_lp(self, n: int) -> ChainLP:
        """The LP relaxation of the component's model (built on first use)."""
        if self.lp is None:
            self.lp = ChainLP(self.J, self.V, self.C, self.count, n)
        return self.lp

    def prepare_bounds(self, n: int) -> None:
        """``cap``, ``low`` and the trivial bound ``ub`` on arrivals at ``(c, t)``: the records any later
        release can hold in the class, minus the individuals forced in before."""
        k = self.n_classes
        self.cap = np.bincount(self.C * n + self.J, weights=self.count, minlength=k * n).astype(
            np.int64).reshape(k, n)
        # records forced into a class: nodes whose only class it is
        inv, deg = self.node_groups()
        only = deg[inv] == 1
        low = np.bincount(self.C[only] * n + self.J[only], weights=self.count[only], minlength=k * n)
        self.low = np.maximum.accumulate(low.astype(np.int64).reshape(k, n), axis=1)
        suffix_cap = np.flip(np.minimum.accumulate(np.flip(self.cap, axis=1), axis=1), axis=1)
        before = np.zeros((k, n), np.int64)
        before[:, 1:] = self.low[:, :-1]
        self.ub = np.maximum(suffix_cap - before, 0)

    def add(self, z: np.ndarray, n: int) -> None:
        """Add a proved-feasible generator to the pool if it raises an arrival lower bound (the pool keeps
        only those: thousands of LP generators on Adult would otherwise hold hundreds of MB)."""
        arr = arrivals(self.loads(z, n))
        z = z.astype(np.int32)  # counts of one node's records: half the memory of int64
        if self.best is None:
            self.pool.append(z)
            self.best = arr
            self.best_sol = np.zeros_like(arr)
            return
        better = arr > self.best
        if not better.any():
            return
        self.pool.append(z)
        self.best = np.where(better, arr, self.best)
        self.best_sol = np.where(better, len(self.pool) - 1, self.best_sol)


def build_components(nodes: Sequence[Nodes], atoms: Sequence) -> tuple[list[Component], dict]:
    """The components of every value and ``comp_of[(value, atom)] = (component, class)``; bounds not yet
    prepared.  Raises :class:`NoGenerator` when some record of an earlier release lies outside every region
    of the last one."""
    n = len(nodes)
    off = np.cumsum([0] + [len(nd) for nd in nodes])
    reg_nodes = []
    for nd in nodes:
        m: dict[int, list[int]] = {}
        for v, r in enumerate(nd.region.tolist()):
            m.setdefault(r, []).append(v)
        reg_nodes.append(m)
    # incidences (release, node, atom): node v of R_j can be instantiated in atom a
    inc_j, inc_v, inc_a = [], [], []
    for a, atom in enumerate(atoms):
        for j in range(n):
            for r in atom.signature[j]:
                vs = reg_nodes[j].get(r, ())
                inc_j.extend([j] * len(vs))
                inc_v.extend(vs)
                inc_a.extend([a] * len(vs))
    inc_j = np.asarray(inc_j, np.int64)
    inc_v = np.asarray(inc_v, np.int64)
    inc_a = np.asarray(inc_a, np.int64)
    gnode = off[inc_j] + inc_v  # global node id
    values = np.concatenate([nd.value for nd in nodes])
    counts = np.concatenate([nd.count for nd in nodes]).astype(np.int64)
    covered = np.zeros(off[-1], bool)
    covered[gnode] = True
    for j in range(n - 1):
        if not covered[off[j]:off[j + 1]].all():
            raise NoGenerator(f"no generator: some records of release {j + 1} lie outside every region of "
                              f"release {n}")
    # components: per value (an incidence joins a node and an atom of the node's value), atoms split by
    # value - the graph over (global node) + (value, atom)
    inc_s = values[gnode]
    va_key, va_id = np.unique(np.stack([inc_s, inc_a], axis=1), axis=0, return_inverse=True)
    va_id = va_id.reshape(-1)
    n_nodes, n_va = int(off[-1]), len(va_key)
    g = coo_matrix((np.ones(len(gnode)), (gnode, n_nodes + va_id)), shape=(n_nodes + n_va,) * 2)
    _, label = connected_components(g, directed=False)
    inc_comp = label[gnode]
    order = np.argsort(inc_comp, kind="stable")
    cuts = np.flatnonzero(np.diff(inc_comp[order])) + 1
    components: list[Component] = []
    comp_of: dict[tuple[int, int], tuple[int, int]] = {}  # (value, atom) -> (component, class)
    for part in np.split(order, cuts) if len(order) else []:
        J, V, A = inc_j[part], inc_v[part], inc_a[part]
        s = int(inc_s[part[0]])
        # atom classes: atoms with the same incidence set
        o = np.lexsort((V, J, A))
        J, V, A = J[o], V[o], A[o]
        sig: dict[int, list] = {}
        for a, j, v in zip(A.tolist(), J.tolist(), V.tolist()):
            sig.setdefault(a, []).append((j, v))
        cls_of_sig: dict[tuple, int] = {}
        members: list[list[int]] = []
        a_cls = {}
        for a, lst in sig.items():
            key = tuple(lst)
            if key not in cls_of_sig:
                cls_of_sig[key] = len(members)
                members.append([])
            members[cls_of_sig[key]].append(a)
            a_cls[a] = cls_of_sig[key]
        Jc, Vc, Cc = [], [], []
        for key, c in cls_of_sig.items():
            for j, v in key:
                Jc.append(j)
                Vc.append(v)
                Cc.append(c)
        Jc, Vc, Cc = (np.asarray(x, np.int64) for x in (Jc, Vc, Cc))
        idx = len(components)
        components.append(Component(value=s, J=Jc, V=Vc, C=Cc, count=counts[off[Jc] + Vc], members=members))
        for a, c in a_cls.items():
            comp_of[(s, a)] = (idx, c)
    return components, comp_of


def flow_generator(comp: Component, n: int) -> np.ndarray | None:
    """A generator from min-cost flows, release by release: the records of ``R_j`` go to atom classes
    inside their regions, every class receiving at least the individuals it held at ``T_{j-1}``;
    ``None`` when a release cannot be completed that way (greedy choices are not revisited)."""
    k = comp.n_classes
    held = np.zeros(k, np.int64)
    z = np.zeros(len(comp.J), np.int64)
    for j in range(n):
        sel = np.flatnonzero(comp.J == j)
        if not len(sel):
            if held.any():
                return None
            continue
        vs, vloc = np.unique(comp.V[sel], return_inverse=True)
        vloc = vloc.reshape(-1)
        k1 = len(vs)
        sink = k1 + k
        cnt = np.zeros(k1, np.int64)
        cnt[vloc] = comp.count[sel]
        total = int(cnt.sum())
        if total < held.sum():
            return None
        tails = np.concatenate([vloc, k1 + np.arange(k)]).astype(np.int32)
        heads = np.concatenate([k1 + comp.C[sel], np.full(k, sink)]).astype(np.int32)
        caps = np.concatenate([comp.count[sel], np.full(k, total)]).astype(np.int64)
        # prefer classes already holding individuals, then classes with room in every later release
        room = comp.cap[:, j:].min(axis=1) - held
        costs = np.concatenate([np.where(held[comp.C[sel]] > 0, 0, 1 + (room[comp.C[sel]] <= 0)),
                                np.zeros(k, np.int64)]).astype(np.int64)
        smcf = min_cost_flow.SimpleMinCostFlow()
        smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
        supplies = np.concatenate([cnt, -held, [-(total - int(held.sum()))]]).astype(np.int64)
        smcf.set_nodes_supplies(np.arange(sink + 1, dtype=np.int32), supplies)
        if smcf.solve() != smcf.OPTIMAL:
            return None
        f = np.asarray(smcf.flows(np.arange(len(sel), dtype=np.int32)), np.int64)
        z[sel] = f
        held = np.bincount(comp.C[sel], weights=f, minlength=k).astype(np.int64)
    return z
