"""l-diverse sequential releases by possible worlds (Shmueli & Tassa, "Privacy by Diversity in Sequential
Releases of Databases", ../shared/papers/004_db68606f48036092.txt, sections 4-5 and appendix 8.2).

The data holder publishes vertical projections ``V_1, V_2, ...`` of one table ``T`` (each release carries the
attributes ``I_R`` of the scenario's ``attributes:``).  The adversary knows every individual's
quasi-identifiers (the background release ``V_0``).  The method:

**Algorithm 1 (preprocessing, once).**  ``T`` is cut into buckets of diversity at least ``l``
(Definition 2.3: ``|B| / (count of the most frequent sensitive value) >= l``) by Mondrian
(:func:`publishers.mondrian.mondrian_partition` with ``Principle(l=l, alpha=1/l)``: ``alpha = 1/l`` *is*
Definition 2.3; distinct l-diversity alone would not let step 4 order a bucket such as ``a,a,a,b,c`` for
``l = 3``).  In every bucket the sensitive values are put in a cycle where every ``l`` consecutive values
differ (:func:`cyclic_value_order`, Lemma 8.1), the tuples are ordered greedily along that cycle (eq. 7,
:func:`greedy_tuple_order`), and ``l - 1`` permutations ``sigma_1..sigma_{l-1}`` are drawn that satisfy the
range-limitation condition (``sigma_i(h) in {h+1, ..., h+l-1} mod |B|``) and the diversity condition (the
``sigma_i(h)`` and ``h`` pairwise distinct) (:func:`range_limited_permutations`).  Fake world ``T_i`` gives
individual ``h`` its own quasi-identifiers and the non-identifier and sensitive values of ``sigma_i(h)``
(eq. 5).  The worlds are kept as permutations of identifiers in the publisher state, so a later release
takes every attribute's current value through the permutation: an attribute revealed for the first time
later gets its value by eq. (8), for free.

**Algorithm 2 (every release).**  The worlds are visited in a random order (``psi``); the release starts as
the first world's projection on ``I_R`` and, world after world, is generalized to be consistent with it:
a minimum-cost perfect matching between the current records and the world's tuples that agree on the
published non-quasi-identifier attributes (condition 9; the graph is a disjoint union of complete bipartite
components, one per value of those attributes), the cost of an edge being the LM loss (eq. 1) added by
generalizing the record to the closure (Definition 2.2) of itself and the tuple.  A component larger than
``p`` is split as in section 4.4: its records are clustered into groups of at most ``p`` (median splits on
the regions' centres), and each group in turn takes the world tuples nearest to the group's closure
(eq. 10); each sub-component is solved exactly by ``scipy.optimize.linear_sum_assignment``.  The result
is consistent with all ``l`` worlds (Theorem 4.3) and its cost does not depend on the index of the release
or the releases before it (Theorem 4.4): the state holds only the worlds.

**Insertions (section 5.2).**  Individuals that were not in the table at preprocessing time get their own
``l`` worlds from Algorithm 1 run on them alone (the group must have diversity ``>= l``, as the paper
assumes), appended to the old worlds (true with true).  Removals and value updates are section 5.3's open
problem: they are refused with an :class:`~multirelease.errors.InputError`.

``non_sequential_diversity`` is the baseline of section 4.5: the same preprocessing, then one
non-homogeneous anonymization ``V`` of the whole table (Algorithm 2 with every attribute), and every release
is a projection of ``V`` (its rows shuffled).

Costs: Algorithm 1 is one Mondrian run plus ``O(N l^2 q)`` for the greedy ordering and ``l - 1`` sparse
matchings of ``N (l-1)`` edges; Algorithm 2 is ``O((l-1) (N p q + N p^2))`` plus the partition of eq. (12).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from multirelease.errors import InputError
from multirelease.params import Interval, ListOf, Text
from multirelease.principles import Principle
from multirelease.release import Release, ReleaseTruth
from multirelease.schema import Attribute, Schema
from multirelease.table import Table, composite_sensitive

from .base import PublisherBase, PublishResult
from .mondrian import mondrian_partition
from .sequential_check import check_release

__all__ = [
    "SequentialDiversity", "NonSequentialDiversity", "PossibleWorlds",
    "cyclic_value_order", "greedy_tuple_order", "range_limited_permutations", "algorithm1", "algorithm2",
    "world_tables", "diversity",
]


# ---------------------------------------------------------------------- geometry of regions
def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(np.asarray(x, dtype=np.uint64)).astype(np.int64)


@dataclass(frozen=True, eq=False)
class _Regions:
    """Generalized quasi-identifier tuples: leaf-code ranges ``lo, hi`` (``(..., q)``) and the leaf bitsets of
    the ``subsets`` attributes (``masks``, ``(..., s)`` uint64)."""

    lo: np.ndarray
    hi: np.ndarray
    masks: np.ndarray

    def __getitem__(self, idx) -> "_Regions":
        return _Regions(self.lo[idx], self.hi[idx], self.masks[idx])


class _Geometry:
    """Closures (Definition 2.2) and LM losses (eq. 1) of regions over a fixed list of quasi-identifiers."""

    def __init__(self, attributes: Sequence[Attribute]):
        self.attributes = tuple(attributes)
        self.q = len(self.attributes)
        self.subsets = [j for j, a in enumerate(self.attributes) if a.is_subsets]
        self.taxonomy = [j for j, a in enumerate(self.attributes) if a.generalization == "hierarchy"]
        self.denom = np.array([max(a.hierarchy.n_leaves - 1, 1) for a in self.attributes], dtype=np.float64)
        # closure of every leaf-code range [a, b] of a taxonomy, as a table lookup (n_leaves^2 entries)
        self._tables = {}
        for j in self.taxonomy:
            h = self.attributes[j].hierarchy
            a, b = np.meshgrid(np.arange(h.n_leaves), np.arange(h.n_leaves), indexing="ij")
            lo, hi = h.node_closure(np.minimum(a, b).ravel(), np.maximum(a, b).ravel())
            self._tables[j] = (lo.reshape(a.shape), hi.reshape(a.shape),
                               ((hi - lo) / self.denom[j]).astype(np.float64), h.n_leaves)

    def points(self, codes: np.ndarray) -> _Regions:
        codes = np.asarray(codes, dtype=np.int32)
        if self.subsets:
            masks = np.left_shift(np.uint64(1), codes[..., self.subsets].astype(np.uint64))
        else:
            masks = np.zeros(codes.shape[:-1] + (0,), dtype=np.uint64)
        return _Regions(codes, codes, masks)

    def join(self, a: _Regions, b: _Regions) -> _Regions:
        """The closure of two (broadcast) regions: ranges widened to their hull, then to the lowest node for
        ``hierarchy`` attributes; bitsets united for ``subsets`` attributes."""
        lo = np.minimum(a.lo, b.lo)
        hi = np.maximum(a.hi, b.hi)
        for j in self.taxonomy:
            tlo, thi = self._tables[j][:2]
            a_, b_ = lo[..., j], hi[..., j]
            lo[..., j], hi[..., j] = tlo[a_, b_], thi[a_, b_]
        return _Regions(lo, hi, a.masks | b.masks)

    def loss(self, r: _Regions) -> np.ndarray:
        """``IL(v)`` of eq. (1) for every region (the last axis is the attributes')."""
        if self.q == 0:
            return np.zeros(r.lo.shape[:-1])
        sizes = (r.hi.astype(np.int64) - r.lo.astype(np.int64) + 1).astype(np.float64)
        for k, j in enumerate(self.subsets):
            sizes[..., j] = _popcount(r.masks[..., k])
        return ((sizes - 1.0) / self.denom).sum(axis=-1)

    @property
    def range_loss(self) -> np.ndarray | None:
        """``(q, L, L)`` table: the LM penalty of the closure of the leaf-code range ``[lo, hi]`` of every
        attribute (``L`` the largest domain), or ``None`` when an attribute generalizes to ``subsets``."""
        if self.subsets:
            return None
        table = self.__dict__.get("_range_loss")
        if table is None:
            size = int(max((a.hierarchy.n_leaves for a in self.attributes), default=1))
            lo, hi = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
            table = np.zeros((self.q, size, size), dtype=np.float64)
            for j in range(self.q):
                if j in self._tables:
                    n = self._tables[j][3]
                    table[j, :n, :n] = self._tables[j][2].reshape(n, n)
                else:
                    table[j] = np.abs(hi - lo) / self.denom[j]
            self.__dict__["_range_loss"] = table
        return table

    def join_loss(self, a: _Regions, b: _Regions) -> np.ndarray:
        """``IL(closure{a, b})`` for broadcast regions, without building the closures (the hot loop of
        eqs. 7 and 10 and of the matching costs)."""
        table = self.range_loss
        if table is not None and self.q:
            size = table.shape[1]
            lo = np.minimum(a.lo, b.lo).astype(np.intp)
            hi = np.maximum(a.hi, b.hi).astype(np.intp)
            flat = (np.arange(self.q) * size * size) + lo * size + hi
            return table.reshape(-1).take(flat).sum(axis=-1)
        shape = np.broadcast_shapes(a.lo.shape, b.lo.shape)[:-1]
        total = np.zeros(shape, dtype=np.float64)
        sub = {j: k for k, j in enumerate(self.subsets)}
        for j in range(self.q):
            if j in sub:
                k = sub[j]
                total += (_popcount(a.masks[..., k] | b.masks[..., k]) - 1) / self.denom[j]
                continue
            lo = np.minimum(a.lo[..., j], b.lo[..., j])
            hi = np.maximum(a.hi[..., j], b.hi[..., j])
            if j in self._tables:
                _, _, table, n = self._tables[j]
                total += table.take(lo.astype(np.intp) * n + hi)
            else:
                total += (hi - lo) / self.denom[j]
        return total

    def closure_of(self, r: _Regions) -> _Regions:
        """The closure of a set of regions (axis 0)."""
        lo = r.lo.min(axis=0, keepdims=True)
        hi = r.hi.max(axis=0, keepdims=True)
        masks = np.bitwise_or.reduce(r.masks, axis=0, keepdims=True) if r.masks.shape[-1] else r.masks[:1]
        return self.join(_Regions(lo, hi, masks), _Regions(lo, hi, masks))


# ---------------------------------------------------------------------- Algorithm 1
def diversity(values: np.ndarray) -> float:
    """``div(B)`` of Definition 2.3: the size of ``B`` over the count of its most frequent sensitive value."""
    values = np.asarray(values)
    if not len(values):
        return float("inf")
    _, counts = np.unique(values, return_counts=True)
    return len(values) / counts.max()


def cyclic_value_order(values: np.ndarray, l: int) -> np.ndarray:
    """Step 4 of Algorithm 1: an order of ``values`` in which every ``l`` cyclically consecutive ones differ.

    The constructive proof of Lemma 8.1 (appendix 8.2): with ``n = q l + r``, the values sorted from the most
    to the least frequent fill an array of ``q`` rows by columns, ``A(i, j) = z_{i + q j}`` (the paper prints
    ``z_{i + r j}``, a typo: filling by columns of height ``q`` is what the proof uses), and are read by rows.

    Parameters
    ----------
    values : ndarray (n,)
        Sensitive values (any hashable codes) of a bucket with ``div >= l``.

    Returns
    -------
    ndarray of int (n,)
        Positions into ``values``: ``values[order]`` is the cyclic sequence.

    Examples
    --------
    >>> v = np.array([0, 0, 1, 1, 2])
    >>> v[cyclic_value_order(v, 2)].tolist()
    [0, 1, 2, 0, 1]
    """
    values = np.asarray(values)
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if diversity(values) < l - 1e-12:
        raise ValueError(f"a bucket of diversity {diversity(values):.3g} cannot be ordered for l = {l}")
    uniq, inv, counts = np.unique(values, return_inverse=True, return_counts=True)
    # most frequent first; ties by value, so the order is deterministic
    rank = np.lexsort((np.arange(len(uniq)), -counts))
    pos_of = np.empty(len(uniq), dtype=np.int64)
    pos_of[rank] = np.arange(len(uniq))
    z = np.argsort(pos_of[inv.reshape(-1)], kind="stable")  # positions sorted as in eq. (13)
    q = n // l
    cols = -(-n // q)
    grid = np.full(q * cols, -1, dtype=np.int64)
    grid[:n] = z  # column-major: grid[j * q + i] = z[i + q j]
    table = grid.reshape(cols, q).T  # (q rows, cols)
    flat = table.reshape(-1)
    return flat[flat >= 0]


def greedy_tuple_order(points: np.ndarray, values: np.ndarray, cycle: np.ndarray, geometry: "_Geometry", l: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Step 5 of Algorithm 1: tuples placed along the cycle of values, greedily by eq. (7).

    Position ``h`` takes, among the tuples not placed yet whose sensitive value is ``z_h`` (the value the
    cycle asks for), the one minimizing ``sum_{j=1}^{min(h, l-1)} IL(closure{t_h, t_{h-1}, ..., t_{h-j}})``;
    ties are broken uniformly at random.

    Parameters
    ----------
    points : ndarray (n, q)
        Quasi-identifier leaf codes of the bucket's tuples (the attributes of ``geometry``).
    values : ndarray (n,)
        Their sensitive values.
    cycle : ndarray (n,)
        The positions given by :func:`cyclic_value_order`; only ``values[cycle]`` is used.

    Returns
    -------
    ndarray of int (n,)
        Tuple positions ``t_0, ..., t_{n-1}`` with ``values[t_h] == values[cycle][h]``.
    """
    n = len(values)
    values = np.asarray(values)
    z = values[cycle]
    order = np.empty(n, dtype=np.int64)
    table = geometry.range_loss
    # per sensitive value, its tuples not placed yet: the first count[v] entries of pool[v] (swap-remove)
    pool: dict[Any, np.ndarray] = {}
    for v in np.unique(values):
        pool[v] = np.flatnonzero(values == v)
    count = {v: len(a) for v, a in pool.items()}
    if table is not None:
        size = table.shape[1]
        attr = np.arange(geometry.q)
        leaf = np.arange(size)
        flat_table = table.reshape(-1)
        base = (attr * size * size)[None, :, None]
        pool_codes = {v: points[a] for v, a in pool.items()}
    else:
        regions = geometry.points(points)
    for h in range(n):
        v = z[h]
        m = count[v]
        if m == 1 or h == 0 or geometry.q == 0:
            k = 0 if m == 1 else int(rng.integers(m))
        else:
            depth = min(h, l - 1)
            prev = order[h - depth:h][::-1]  # t_{h-1}, t_{h-2}, ...
            if table is not None:
                # eq. (7) is a sum over attributes of a function of the candidate's leaf code: tabulate it for
                # every code (q x L), then read it for the candidates
                lo = np.minimum.accumulate(points[prev], axis=0)[:, :, None]
                hi = np.maximum.accumulate(points[prev], axis=0)[:, :, None]
                f = flat_table.take(base + np.minimum(lo, leaf) * size + np.maximum(hi, leaf)).sum(axis=0)
                cost = f[attr, pool_codes[v][:m]].sum(axis=1)
            else:
                pr = regions[prev]
                lo = np.minimum.accumulate(pr.lo, axis=0)
                hi = np.maximum.accumulate(pr.hi, axis=0)
                masks = np.bitwise_or.accumulate(pr.masks, axis=0) if pr.masks.shape[-1] else pr.masks
                cand = regions[pool[v][:m]]
                cost = geometry.join_loss(_Regions(lo[None], hi[None], masks[None]),
                                          _Regions(cand.lo[:, None], cand.hi[:, None], cand.masks[:, None]))
                cost = cost.sum(axis=1)
            best = np.flatnonzero(cost <= cost.min() + 1e-12)
            k = int(best[0] if len(best) == 1 else best[rng.integers(len(best))])
        a = pool[v]
        order[h] = a[k]
        a[k], a[m - 1] = a[m - 1], a[k]
        if table is not None:
            c = pool_codes[v]
            c[[k, m - 1]] = c[[m - 1, k]]
        count[v] = m - 1
    return order


def range_limited_permutations(bucket_sizes: Sequence[int], l: int, rng: np.random.Generator) -> np.ndarray:
    """Step 6 of Algorithm 1 for every bucket at once: ``l - 1`` random permutations with the range-limitation
    and diversity conditions.

    Positions are global: bucket ``b`` holds positions ``start_b .. start_b + n_b - 1`` in cycle order.  For
    every position ``h`` the images ``sigma_1(h), ..., sigma_{l-1}(h)`` must be ``l - 1`` distinct positions
    among ``h+1, ..., h+l-1`` (mod ``n_b``), i.e. exactly those.  Each ``sigma_i`` is a perfect matching of the
    bipartite graph "``h`` -> an offset not used yet at ``h``"; after ``i`` matchings that graph is
    ``(l-1-i)``-regular, so a perfect matching always exists (Koenig) and no backtracking is needed (Wong et
    al.'s random walk, which the paper cites, needs it).  Each matching is the minimum-weight perfect
    matching under i.i.d. random weights (``scipy.sparse.csgraph.min_weight_full_bipartite_matching``,
    ``O(N l)`` edges): random, though not uniform over all valid families.

    Returns
    -------
    ndarray of int (l-1, N)
        ``sigma[i, h]``, global positions.
    """
    sizes = np.asarray(bucket_sizes, dtype=np.int64)
    n = int(sizes.sum())
    if l < 2 or n == 0:
        return np.zeros((max(l - 1, 0), n), dtype=np.int64)
    if (sizes < l).any():
        raise ValueError("every bucket needs at least l tuples")
    start = np.repeat(np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    size = np.repeat(sizes, sizes)
    h = np.arange(n)
    local = h - start
    offsets = np.arange(1, l)
    target = start[:, None] + (local[:, None] + offsets[None, :]) % size[:, None]  # (N, l-1)
    free = np.ones((n, l - 1), dtype=bool)
    out = np.empty((l - 1, n), dtype=np.int64)
    for i in range(l - 1):
        rows, cols = np.nonzero(free)
        weights = 1.0 + rng.random(len(rows))
        graph = csr_matrix((weights, (rows, target[rows, cols])), shape=(n, n))
        row, col = min_weight_full_bipartite_matching(graph)
        match = np.empty(n, dtype=np.int64)
        match[row] = col
        out[i] = match
        # retire the offset used at each position
        used = (target == match[:, None]) & free
        free &= ~used
    return out


def algorithm1(codes: np.ndarray, sensitive: np.ndarray, attributes: Sequence[Attribute], l: int,
               rng: np.random.Generator) -> tuple[np.ndarray, list[np.ndarray]]:
    """Algorithm 1 (steps 1-8): ``l - 1`` fake worlds of the rows ``0..N-1``.

    Parameters
    ----------
    codes : ndarray (N, q)
        Quasi-identifier leaf codes of the attributes known at preprocessing time.
    sensitive : ndarray (N,) of int
        Sensitive value codes.
    attributes : the attributes of ``codes``' columns.
    l : int >= 2

    Returns
    -------
    worlds : ndarray of int (l-1, N)
        ``worlds[i, n]`` is the row whose non-identifier and sensitive values row ``n`` carries in fake world
        ``i + 1`` (eq. 5).
    buckets : list of ndarray
        The rows of every bucket in cycle order (``t_0^B, ..., t_{|B|-1}^B``).

    Raises
    ------
    InputError
        When the table's diversity (Definition 2.3) is below ``l``.
    """
    sensitive = np.asarray(sensitive, dtype=np.int64)
    n = len(sensitive)
    if n == 0:
        return np.zeros((l - 1, 0), dtype=np.int64), []
    div = diversity(sensitive)
    if div < l - 1e-12:
        raise InputError(f"the table's diversity (Definition 2.3) is {div:.4g} < l = {l}: no l-diverse worlds")
    principle = Principle(l=float(l), alpha=1.0 / l)
    parts = mondrian_partition(codes, sensitive, attributes, principle)
    geometry = _Geometry(attributes)
    buckets = []
    for part in parts:
        cycle = cyclic_value_order(sensitive[part], l)
        order = greedy_tuple_order(codes[part], sensitive[part], cycle, geometry, l, rng)
        buckets.append(part[order])
    flat = np.concatenate(buckets)
    sigma = range_limited_permutations([len(b) for b in buckets], l, rng)
    worlds = np.empty((l - 1, n), dtype=np.int64)
    worlds[:, flat] = flat[sigma]
    return worlds, buckets


# ---------------------------------------------------------------------- Algorithm 2
def _groups_by_centre(regions: _Regions, geometry: _Geometry, p: int) -> list[np.ndarray]:
    """Section 4.4's clustering of a component's records into groups of at most ``p``: median splits of the
    regions' centres along the widest (normalized) dimension."""
    m = len(regions.lo)
    if m <= p or geometry.q == 0:
        return [np.arange(i, min(i + p, m)) for i in range(0, m, p)] if m > p else [np.arange(m)]
    centre = (regions.lo.astype(np.float64) + regions.hi.astype(np.float64)) / (2.0 * geometry.denom)
    out = []
    stack = [np.arange(m)]
    while stack:
        idx = stack.pop()
        if len(idx) <= p:
            out.append(idx)
            continue
        sub = centre[idx]
        j = int(np.argmax(sub.max(axis=0) - sub.min(axis=0)))
        order = idx[np.argsort(sub[:, j], kind="stable")]
        half = len(order) // 2
        stack.append(order[half:])
        stack.append(order[:half])
    return out


def _match_component(records: _Regions, points: _Regions, geometry: _Geometry, p: int) -> np.ndarray:
    """A minimum-cost perfect matching (sub-components of at most ``p``) between a component's records and
    world tuples; returns, for every record, the index of its tuple."""
    m = len(records.lo)
    match = np.empty(m, dtype=np.int64)
    if m <= p:
        parts = [(np.arange(m), np.arange(m))]
    else:
        groups = _groups_by_centre(records, geometry, p)
        groups.sort(key=len, reverse=True)
        remaining = np.arange(m)
        parts = []
        for g in groups[:-1]:
            u = geometry.closure_of(records[g])
            cand = points[remaining]
            d = geometry.join_loss(u, cand)  # eq. (10) up to the constant IL(u_j)
            take = np.argpartition(d, len(g) - 1)[:len(g)] if len(g) < len(remaining) else np.arange(len(remaining))
            parts.append((g, remaining[take]))
            keep = np.ones(len(remaining), dtype=bool)
            keep[take] = False
            remaining = remaining[keep]
        parts.append((groups[-1], remaining))
    for rec, tup in parts:
        r = records[rec]
        t = points[tup]
        # dist(v, w) = IL(closure{v, w}) - IL(v); IL(v) is constant per row and does not change the matching
        cost = geometry.join_loss(_Regions(r.lo[:, None], r.hi[:, None], r.masks[:, None]),
                                  _Regions(t.lo[None], t.hi[None], t.masks[None]))
        row, col = linear_sum_assignment(cost)
        match[rec[row]] = tup[col]
    return match


def algorithm2(codes: np.ndarray, keys: np.ndarray, worlds: np.ndarray, geometry: _Geometry, p: int,
               rng: np.random.Generator, *, with_witness: bool = False) -> tuple:
    """Algorithm 2: a generalization of the true table's projection consistent with every world.

    Parameters
    ----------
    codes : ndarray (N, q)
        Quasi-identifier leaf codes (the release's QIs, the attributes of ``geometry``) of rows ``0..N-1``.
    keys : ndarray (N,) of int
        The published non-quasi-identifier values of each row (condition 9), coded.
    worlds : ndarray (l, N)
        ``worlds[i, n]``: the row whose non-QI values row ``n`` carries in world ``i``; one of them is the
        identity (the true world).
    p : int
        The largest sub-component solved by one assignment (section 4.4).

    Returns
    -------
    regions : _Regions (N,)
        The published generalized QI tuples.
    person : ndarray (N,)
        The true row behind every record (its match in the true world).
    witness : ndarray (l, N), only ``with_witness``
        ``witness[i, r]``: the tuple of world ``i`` that record ``r`` generalizes (Definition 3.1's bijection,
        checked by :mod:`publishers.sequential_check`).
    """
    n = len(keys)
    ident = np.arange(n)
    psi = rng.permutation(len(worlds))
    first = worlds[psi[0]]
    pts = geometry.points(codes)
    regions = pts
    rec_key = keys[first]
    person = ident.copy() if np.array_equal(first, ident) else None
    witness = np.empty((len(worlds), n), dtype=np.int64)
    witness[psi[0]] = ident
    for w in psi[1:]:
        world = worlds[w]
        w_key = keys[world]
        match = np.empty(n, dtype=np.int64)
        rec_order = np.argsort(rec_key, kind="stable")
        tup_order = np.argsort(w_key, kind="stable")
        bounds = np.flatnonzero(np.diff(rec_key[rec_order])) + 1
        for rec, tup in zip(np.split(rec_order, bounds), np.split(tup_order, bounds)):
            match[rec] = tup[_match_component(regions[rec], pts[tup], geometry, p)]
        regions = geometry.join(regions, pts[match])
        witness[w] = match
        if np.array_equal(world, ident):
            person = match
    assert person is not None, "the true world must be one of the worlds"
    return (regions, person, witness) if with_witness else (regions, person)


# ---------------------------------------------------------------------- the worlds as data
@dataclass(frozen=True)
class PossibleWorlds:
    """The ``l - 1`` fake worlds of the publisher state: ``ids`` in state order and ``worlds[i][n]``, the index
    (into ``ids``) of the individual whose non-identifier and sensitive values ``ids[n]`` carries in fake
    world ``i + 1``.  The true world is the identity and is not stored."""

    ids: tuple
    worlds: tuple  # of tuples of int

    @classmethod
    def from_state(cls, state: Mapping) -> "PossibleWorlds":
        return cls(ids=tuple(state["ids"]), worlds=tuple(tuple(w) for w in state["worlds"]))

    def arrays(self, order: np.ndarray) -> np.ndarray:
        """``(l, N)`` worlds over snapshot rows: ``order[n]`` is the state index of snapshot row ``n``; the
        last world is the identity (true world)."""
        w = np.asarray(self.worlds, dtype=np.int64).reshape(len(self.worlds), len(self.ids))
        inv = np.empty(len(order), dtype=np.int64)
        inv[order] = np.arange(len(order))
        mapped = inv[w[:, order]] if len(w) else w
        return np.vstack([mapped, np.arange(len(order))[None, :]])


def world_tables(snapshot: Table, state: Mapping) -> list[Table]:
    """The ``l`` possible worlds of a publisher state as raw tables (eqs. 5 and 8), fake ones first and the
    true table last: world ``i`` keeps everyone's identifier and quasi-identifiers and takes the other
    attributes (non-identifiers, sensitive) of the individual its permutation names, with their current
    values."""
    pw = PossibleWorlds.from_state(state)
    order = _state_order(snapshot, pw.ids)
    schema = snapshot.schema
    suffix = [n for n in schema.published if not schema[n].is_quasi]
    out = []
    for w in pw.arrays(order):
        frame = snapshot.frame.copy()
        for name in suffix:
            frame[name] = snapshot.frame[name].to_numpy()[w]
        out.append(Table(schema, frame))
    return out


def _state_order(snapshot: Table, ids: Sequence) -> np.ndarray:
    """The state index of every snapshot row (the snapshot must hold exactly the state's individuals)."""
    idx = pd.Index(list(ids), dtype=object).get_indexer(pd.Index(snapshot.ids, dtype=object))
    if (idx < 0).any() or len(snapshot) != len(ids):
        raise InputError("the snapshot does not hold the individuals of the publisher state")
    return idx


def _digest(frame: pd.DataFrame) -> str:
    h = pd.util.hash_pandas_object(frame.sort_index(), index=True).to_numpy()
    return hashlib.sha256(h.tobytes()).hexdigest()


def _codes(values) -> np.ndarray:
    codes, _ = pd.factorize(pd.Series(np.asarray(values, dtype=object), dtype=object), sort=True)
    return codes.astype(np.int64)


def _keys(frame: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    """One int per row for the combination of the given columns' values (condition 9)."""
    key = np.zeros(len(frame), dtype=np.int64)
    for name in names:
        c = _codes(frame[name].to_numpy(dtype=object))
        key = key * (int(c.max()) + 1 if len(c) else 1) + c
        key = _codes(key)  # keep it small
    return key


# ---------------------------------------------------------------------- publishers
class _WorldsPublisher(PublisherBase):
    """Shared parts: parameters, Algorithm 1 on first use and on insertions, the release builder."""

    params = {"l": Interval(int, 2, None), "p": Interval(int, 2, None), "known": ListOf(Text())}
    required = ("l",)
    defaults = {"p": 100}
    guarantee = "possible_worlds"

    def check_config(self, file, key):
        known = self.config.get("known")
        if known is not None and not known:
            raise InputError(f"The 'known' parameter of {self.name} must be a non-empty list", file=file, key=key)

    # -------------------------------------------------------------- preprocessing
    def _known_quasi(self, schema: Schema) -> list[str]:
        known = self.config.get("known")
        if known is None:
            return list(schema.quasi)
        try:
            names = schema.restrict(known)
        except InputError as exc:
            raise exc.located(key="known") from None
        return [n for n in names if schema[n].is_quasi]

    def _worlds(self, snapshot: Table, state: Mapping | None, rng: np.random.Generator) -> tuple[dict, np.ndarray]:
        """The state's worlds, extended to newly inserted individuals (section 5.2); the ``(l, N)`` worlds
        over snapshot rows."""
        schema = snapshot.schema
        if not schema.sensitive:
            raise InputError(f"{self.name} needs a sensitive attribute")
        l = int(self.config["l"])
        state = dict(state or {})
        ids = list(state.get("ids", []))
        worlds = [list(w) for w in state.get("worlds", [[] for _ in range(l - 1)])]
        if state and int(state.get("l", l)) != l:
            raise InputError(f"{self.name}: the state was built for l = {state.get('l')}, not l = {l}")
        snap_ids = pd.Index(snapshot.ids, dtype=object)
        old = pd.Index(ids, dtype=object)
        gone = old.difference(snap_ids)
        if len(gone):
            raise InputError(f"{self.name}: record '{gone[0]}' was removed; tuple removals are not supported "
                             "(Shmueli & Tassa, section 5.3)")
        if ids and state.get("digest") != _digest(snapshot.frame.loc[ids]):
            raise InputError(f"{self.name}: values of existing records changed; updates are not supported "
                             "(Shmueli & Tassa, section 5.3)")
        new = snap_ids.difference(old, sort=False) if len(old) else snap_ids
        if len(new):
            sub = snapshot.subset(list(new))
            quasi = self._known_quasi(schema)
            cols = [list(schema.quasi).index(n) for n in quasi]
            sens = _codes(sub.sensitive)
            try:
                fake, _ = algorithm1(sub.qi_codes[:, cols], sens, [schema[n] for n in quasi], l, rng)
            except InputError as exc:
                what = "the inserted records" if ids else "the table"
                raise InputError(f"{self.name}: {what}: {exc.problem}") from None
            base = len(ids)
            for i in range(l - 1):
                worlds[i].extend((fake[i] + base).tolist())
            ids.extend(new.tolist())
            state["digest"] = _digest(snapshot.frame.loc[ids])
            state["batches"] = list(state.get("batches", [])) + [len(new)]
        state.update({"l": l, "ids": ids, "worlds": worlds})
        order = _state_order(snapshot, ids)
        return state, PossibleWorlds.from_state(state).arrays(order)

    # -------------------------------------------------------------- output
    @staticmethod
    def _release(snapshot: Table, attributes: Sequence[str], regions: _Regions, person: np.ndarray,
                 rng: np.random.Generator, witness: np.ndarray | None = None) -> tuple:
        """``(release, truth)``; with ``witness`` (``(l, N)`` over records) also the witness over the
        release's rows."""
        schema = snapshot.schema
        quasi = [n for n in attributes if schema[n].is_quasi]
        rows = rng.permutation(len(person))
        src = person[rows]
        lo = np.ascontiguousarray(regions.lo[rows], dtype=np.int32).reshape(len(rows), len(quasi))
        hi = np.ascontiguousarray(regions.hi[rows], dtype=np.int32).reshape(len(rows), len(quasi))
        subsets = [n for n in quasi if schema[n].is_subsets]
        masks = {n: np.ascontiguousarray(regions.masks[rows, k]) for k, n in enumerate(subsets)}
        frame = snapshot.frame.iloc[src]
        sens = [n for n in attributes if schema[n].is_sensitive]
        sensitive = composite_sensitive(frame, sens)
        others = [n for n in attributes if not schema[n].is_quasi and not schema[n].is_sensitive]
        other = frame[others].reset_index(drop=True) if others else None
        release = Release(schema=schema, attributes=tuple(attributes), lo=lo, hi=hi, sensitive=sensitive,
                          masks=masks, other=other, group=None)
        if witness is not None:
            return release, ReleaseTruth.of_people(snapshot.ids[src]), witness[:, rows]
        return release, ReleaseTruth.of_people(snapshot.ids[src])

    def _checked(self, release: Release, truth: ReleaseTruth, snapshot: Table, worlds: np.ndarray,
                 witness: np.ndarray | None, state: dict) -> PublishResult:
        """The release after its own check (:mod:`publishers.sequential_check`: consistent with every world,
        l-linkable by the possible-worlds attack), else a one-line refusal."""
        k = int(state.get("releases", 0)) + 1
        check_release(self.name, release, truth, snapshot, worlds, witness, int(self.config["l"]), k)
        state["releases"] = k
        return PublishResult(release=release, truth=truth, state=state)

    @staticmethod
    def _geometry_and_codes(snapshot: Table, quasi: Sequence[str]) -> tuple[_Geometry, np.ndarray]:
        schema = snapshot.schema
        cols = [list(schema.quasi).index(n) for n in quasi]
        return _Geometry([schema[n] for n in quasi]), snapshot.qi_codes[:, cols]


class SequentialDiversity(_WorldsPublisher):
    """The sequential algorithm of Shmueli & Tassa (Algorithms 1 and 2): every release consistent with the
    same ``l`` possible worlds, so the sequence respects l-diversity in the sense of Theorem 4.1.

    Parameters
    ----------
    l : int >= 2
        The number of possible worlds (the table's diversity, Definition 2.3, must be at least ``l``).
    p : int >= 2, default 100
        Largest sub-component of the matching (section 4.4).
    known : list of attribute names, optional
        The attributes known at preprocessing time (default: every attribute of the schema); Algorithm 1
        buckets and orders on their quasi-identifiers only.  Other attributes may be released later (eq. 8).

    Notes
    -----
    The state (JSON) holds ``l``, ``ids``, ``worlds`` (``l - 1`` permutations of indices into ``ids``),
    ``digest`` (a hash of the records' values, to refuse updates), ``batches`` (sizes of the initial table
    and of each insertion) and ``releases``.  Releases carry no ``group`` column: the anonymization is
    non-homogeneous (section 4.5).
    """

    name = "sequential_diversity"

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = schema.restrict(attributes if attributes is not None else schema.published)
        state, worlds = self._worlds(snapshot, state, rng)
        quasi = [n for n in attributes if schema[n].is_quasi]
        suffix = [n for n in attributes if not schema[n].is_quasi]
        geometry, codes = self._geometry_and_codes(snapshot, quasi)
        regions, person, witness = algorithm2(codes, _keys(snapshot.frame, suffix), worlds, geometry,
                                              int(self.config["p"]), rng, with_witness=True)
        release, truth, witness = self._release(snapshot, attributes, regions, person, rng, witness)
        return self._checked(release, truth, snapshot, worlds, witness, state)


class NonSequentialDiversity(_WorldsPublisher):
    """The non-sequential baseline of section 4.5: one non-homogeneous l-diverse anonymization ``V`` of the
    whole table (Algorithm 1, then Algorithm 2 with every attribute), computed at the first release and kept
    in the state; every release is the projection of ``V`` on its attributes, rows shuffled.

    Parameters are those of ``sequential_diversity``; ``V`` covers the attributes of ``known`` (default
    every attribute), and a release of any other attribute is refused.  Individuals inserted later get their
    own worlds and their own ``V`` rows (section 5.2), computed when they first appear.
    """

    name = "non_sequential_diversity"

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = schema.restrict(attributes if attributes is not None else schema.published)
        known = schema.restrict(self.config["known"]) if self.config.get("known") else schema.published
        outside = [n for n in attributes if n not in known]
        if outside:
            raise InputError(f"{self.name}: attribute '{outside[0]}' is not among the attributes known upfront "
                             f"(parameter 'known'); the non-sequential anonymization cannot release it")
        before = len((state or {}).get("ids", []))
        state, worlds = self._worlds(snapshot, state, rng)
        quasi = [n for n in known if schema[n].is_quasi]
        ids = state["ids"]
        v = dict(state.get("V", {"person": [], "lo": [], "hi": [], "masks": []}))
        if len(ids) > before:  # anonymize the individuals not covered by V yet, on every attribute
            order = _state_order(snapshot, ids)
            rows = order.argsort()[before:]  # snapshot rows of the new individuals (state order)
            new_worlds = worlds[:, rows]
            remap = np.full(len(snapshot), -1, dtype=np.int64)
            remap[rows] = np.arange(len(rows))
            new_worlds = remap[new_worlds]
            suffix = [n for n in known if not schema[n].is_quasi]
            geometry, codes = self._geometry_and_codes(snapshot, quasi)
            regions, person, witness = algorithm2(codes[rows], _keys(snapshot.frame.iloc[rows], suffix),
                                                  new_worlds, geometry, int(self.config["p"]), rng,
                                                  with_witness=True)
            v = {"person": v["person"] + [ids[order[rows[i]]] for i in person],
                 "lo": v["lo"] + regions.lo.tolist(), "hi": v["hi"] + regions.hi.tolist(),
                 "masks": v["masks"] + [[int(x) for x in m] for m in regions.masks],
                 "witness": [a + [ids[order[rows[i]]] for i in w]
                             for a, w in zip(v.get("witness") or [[] for _ in witness], witness.tolist())]}
            state["V"] = v
        pos = pd.Index(snapshot.ids, dtype=object).get_indexer(pd.Index(v["person"], dtype=object))
        q_all = len(quasi)
        cols = [quasi.index(n) for n in attributes if schema[n].is_quasi]
        subsets_all = [n for n in quasi if schema[n].is_subsets]
        subsets = [subsets_all.index(n) for n in attributes if schema[n].is_quasi and schema[n].is_subsets]
        lo = np.asarray(v["lo"], dtype=np.int32).reshape(len(pos), q_all)[:, cols]
        hi = np.asarray(v["hi"], dtype=np.int32).reshape(len(pos), q_all)[:, cols]
        masks = np.asarray(v["masks"], dtype=np.uint64).reshape(len(pos), len(subsets_all))[:, subsets]
        witness = None  # a state written before the witness was kept: the check matches from scratch
        if v.get("witness"):
            witness = pd.Index(snapshot.ids, dtype=object).get_indexer(
                pd.Index(np.concatenate(v["witness"]), dtype=object)).reshape(len(worlds), -1)
        out = self._release(snapshot, attributes, _Regions(lo, hi, masks), pos, rng, witness)
        release, truth, witness = out if witness is not None else (*out, None)
        return self._checked(release, truth, snapshot, worlds, witness, state)
