"""Geometry of regions, Algorithm 1 and Algorithm 2 of Shmueli & Tassa (../shared/papers/004_db68606f48036092.txt,
sections 4.2-4.4 and appendix 8.2), split from :mod:`publishers.sequential.diversity` (which describes the
method and re-exports these names).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from multirelease.errors import InputError
from multirelease.model.principles import Principle
from multirelease.model.schema import Attribute

from publishers.mondrian import mondrian_partition

__all__ = ["cyclic_value_order", "greedy_tuple_order", "range_limited_permutations", "algorithm1", "algorithm2",
           "diversity"]


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
        checked by :mod:`publishers.sequential.check`).
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
