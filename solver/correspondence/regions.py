"""Group aggregation and the geometry of published regions, shared by the exact correspondence engines.

Records that are identical in the adversary's view - same equivalence class, same generalized QI region,
same sensitive value - are interchangeable: :func:`aggregate` turns the rows of a release into such
*nodes* with a count (DESIGN.md, "Group aggregation").  A node's region is a box of leaf-code ranges
``[lo, hi]`` per quasi-identifier, with a leaf bitset for ``subsets`` attributes.

Two regions are *comparable* (Fung et al., Definition 4.1) when they share an instantiation: for cut
generalization "on the same path of every taxonomy", in general a non-empty intersection
(:func:`regions_comparable`).

Targets are points of the QI space, and what the adversary can say about a target depends only on *which*
published regions contain it.  :func:`atoms` enumerates these signatures - the distinct non-empty cells of
the arrangement of all regions of all releases - and :func:`point_signatures` computes the signature of
given points (a population).  Inside one attribute, leaves that belong to exactly the same published
values are merged into *elementary classes*, so that a cell is a product of bitsets over elementary
classes whatever the generalization model (hierarchy nodes, intervals, arbitrary subsets).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from multirelease.model.release import Release

__all__ = ["Nodes", "aggregate", "sensitive_codes", "regions_comparable", "Atom", "atoms", "point_signatures",
           "region_pairs", "signature_ids", "comparable_pairs", "leaf_labels", "unique_rows"]

#: rows x columns of a dense comparability block computed at once
_BLOCK = 4_000_000


def sensitive_codes(releases: Sequence[Release], values: Sequence[np.ndarray] | None = None
                    ) -> tuple[list[np.ndarray], np.ndarray]:
    """The composite sensitive values of every release coded over one common, sorted dictionary.

    ``values``: per release, the values to code instead of ``release.sensitive`` - the *linked values*
    (sensitive value and persistent linking tuple, :meth:`multirelease.model.linking.Linking.values`) when the
    releases publish linking columns.  A generator's buddies must then agree on the whole linked value
    (Fung et al., section 3.1: a record reappears in every later release *with its values*; a persistent
    linking value is one of them), which is what the engines read from the coded value."""
    # each release's values factorized (a census release has 10^6 rows and a few dozen values; a release's own
    # are factorized once, where it was read), the distinct ones as text coded over the sorted dictionary of all
    local = [r.sensitive_codes for r in releases] if values is None else \
        [pd.factorize(np.asarray(v, dtype=object)) for v in values]
    texts = [pd.Series(np.asarray(u, dtype=object), dtype=object).astype(str).to_numpy(dtype=object)
             for _, u in local]
    dictionary = np.unique(np.concatenate(texts)) if texts else np.zeros(0, dtype=object)
    out = [np.searchsorted(dictionary, t).astype(np.int64)[c] if len(c) else np.zeros(0, np.int64)
           for (c, _), t in zip(local, texts)]
    return out, np.asarray(dictionary, dtype=object)


@dataclass(frozen=True, eq=False)
class Nodes:
    """The aggregated groups of one release.

    Attributes
    ----------
    lo, hi : (m, q) int32
        The node's region (identical for all its rows).
    masks : (m, s) uint64
        Leaf bitsets of the ``subsets`` attributes listed in ``mask_columns`` (``s`` may be 0).
    value : (m,) int64
        Sensitive value (code of the common dictionary of :func:`sensitive_codes`).
    cls : (m,) int64
        Equivalence class (:attr:`Release.classes`).
    count : (m,) int64
        Number of rows.
    region : (m,) int64
        Index of the node's region among the release's distinct regions (``region_lo`` ...).
    row_node : (n,) int64
        Node of every row.
    """

    lo: np.ndarray
    hi: np.ndarray
    masks: np.ndarray
    mask_columns: tuple[int, ...]
    value: np.ndarray
    cls: np.ndarray
    count: np.ndarray
    region: np.ndarray
    region_lo: np.ndarray
    region_hi: np.ndarray
    region_masks: np.ndarray
    row_node: np.ndarray
    class_sizes: np.ndarray

    def __len__(self) -> int:
        return int(len(self.count))

    @property
    def n_regions(self) -> int:
        return int(len(self.region_lo))


def _mask_matrix(release: Release) -> tuple[np.ndarray, tuple[int, ...]]:
    cols = tuple(j for j, n in enumerate(release.quasi) if n in release.masks)
    if not cols:
        return np.zeros((len(release), 0), dtype=np.uint64), cols
    return np.column_stack([np.asarray(release.masks[release.quasi[j]], dtype=np.uint64) for j in cols]), cols


def unique_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(matrix, axis=0, return_index=True, return_inverse=True, return_counts=True)`` - the same
    arrays in the same (lexicographic) order - by packing every row into one int64 key, column by column
    (dense codes that keep the order, recompressed before the key could overflow): one 1-D sort instead of
    a sort of rows (ten times faster on a census)."""
    m = np.asarray(matrix)
    n = len(m)
    if n == 0 or m.ndim != 2 or m.shape[1] == 0:
        return np.unique(m, axis=0, return_index=True, return_inverse=True, return_counts=True)
    key = np.zeros(n, np.int64)
    card = 1
    for c in range(m.shape[1]):
        col = m[:, c]
        lo, hi = int(col.min()), int(col.max())
        if 0 <= hi - lo < 1 << 20:
            code, size = (col - lo).astype(np.int64), hi - lo + 1
        else:
            u, code = np.unique(col, return_inverse=True)
            code, size = code.reshape(-1).astype(np.int64), len(u)
        if card * size >= 1 << 62:  # recompress the key so far (order kept)
            u, key = np.unique(key, return_inverse=True)
            key, card = key.reshape(-1).astype(np.int64), len(u)
        key = key * size + code
        card *= size
    _, first, inv, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    return m[first], first, inv.reshape(-1), counts


def aggregate(release: Release, value: np.ndarray) -> Nodes:
    """Aggregate the rows of ``release`` into nodes (class, region, sensitive value) with counts.

    ``O(n log n)``: one ``np.unique`` over the packed keys.
    """
    n, q = release.lo.shape
    masks, mcols = _mask_matrix(release)
    cls = np.asarray(release.classes, dtype=np.int64)
    region_key = np.column_stack([release.lo.astype(np.int64), release.hi.astype(np.int64),
                                  masks.view(np.int64)]) if n else np.zeros((0, 2 * q + len(mcols)), np.int64)
    if n:
        _, reg_first, reg_inv, _ = unique_rows(region_key)
    else:
        reg_first = np.zeros(0, dtype=np.int64)
        reg_inv = np.zeros(0, dtype=np.int64)
    key = np.column_stack([cls, reg_inv, value]) if n else np.zeros((0, 3), np.int64)
    if n:
        uniq, first, inv, cnt = unique_rows(key)
    else:
        uniq, first, inv, cnt = key, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return Nodes(lo=release.lo[first].astype(np.int32), hi=release.hi[first].astype(np.int32),
                 masks=masks[first], mask_columns=mcols, value=uniq[:, 2].astype(np.int64),
                 cls=uniq[:, 0].astype(np.int64), count=cnt.astype(np.int64), region=uniq[:, 1].astype(np.int64),
                 region_lo=release.lo[reg_first].astype(np.int32), region_hi=release.hi[reg_first].astype(np.int32),
                 region_masks=masks[reg_first], row_node=inv.astype(np.int64),
                 class_sizes=np.asarray(release.class_sizes, dtype=np.int64))


#: releases of fewer rows than this in all are aggregated in this process (:func:`aggregate_all`)
_PARALLEL_ROWS = 200_000


def aggregate_all(releases: Sequence[Release], values: Sequence[np.ndarray],
                  meanwhile: Callable[[], Any] | None = None) -> list[Nodes]:
    """:func:`aggregate` of every release (``values[l]`` its rows' sensitive codes), one task of the current
    executor each (issue 28: a census's releases are aggregated side by side); ``meanwhile`` runs in this
    process while they are (:meth:`solver.executor.Executor.map`)."""
    from solver.executor import executor_for_work

    ex = executor_for_work(sum(len(r) for r in releases), _PARALLEL_ROWS)
    return ex.map(_aggregate_task, list(zip(releases, values)), meanwhile=meanwhile)


def _aggregate_task(task: tuple) -> Nodes:
    return aggregate(*task)


def regions_comparable(lo1: np.ndarray, hi1: np.ndarray, m1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                       m2: np.ndarray) -> np.ndarray:
    """``(a, b)`` bool: region ``i`` of the first list intersects region ``k`` of the second (Definition 4.1
    of Fung et al. for cuts; a non-empty intersection in general).  Computed in blocks of rows."""
    a, b = len(lo1), len(lo2)
    out = np.zeros((a, b), dtype=bool)
    if not a or not b:
        return out
    q = max(lo1.shape[1], 1)
    step = max(1, _BLOCK // max(1, b * q))
    for s in range(0, a, step):
        e = min(a, s + step)
        blk = np.all((lo1[s:e, None, :] <= hi2[None, :, :]) & (lo2[None, :, :] <= hi1[s:e, None, :]), axis=-1)
        for j in range(m1.shape[1]):
            blk &= (m1[s:e, None, j] & m2[None, :, j]) != 0
        out[s:e] = blk
    return out


def _median_cuts(values: np.ndarray) -> list[tuple[int, int]]:
    """Per column with two distinct values or more, ``(column, v)``: the cut ``x <= v`` / ``x > v`` at the
    median (moved down when the median is the largest value, so that both sides are non-empty)."""
    meds, tops, bottoms = np.median(values, axis=0), values.max(axis=0), values.min(axis=0)
    out = []
    for j in range(values.shape[1]):
        v = int(meds[j])
        if v >= int(tops[j]):
            v -= 1
        if v >= int(bottoms[j]):
            out.append((j, v))
    return out


def comparable_pairs(lo1: np.ndarray, hi1: np.ndarray, m1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                     m2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(i, k)`` with region ``i`` of the first list intersecting region ``k`` of the second (what
    :func:`regions_comparable` computes as a dense matrix), sorted by ``i`` then ``k``.

    Both lists are split recursively at the median lower end of the first list's regions, on the attribute
    whose split leaves the least dense work (a region goes to every side it reaches), and cells no split
    helps are checked densely: for Mondrian regions about ``O(q (a + b) log a)`` work and no ``a x b``
    matrix."""
    lo1, hi1, lo2, hi2 = (np.asarray(x, dtype=np.int64) for x in (lo1, hi1, lo2, hi2))
    out_i: list[np.ndarray] = []
    out_k: list[np.ndarray] = []
    stack = [(np.arange(len(lo1)), np.arange(len(lo2)), 0)]
    while stack:
        ia, kb, depth = stack.pop()
        if not len(ia) or not len(kb):
            continue
        split = None
        if len(ia) > _LEAF and len(kb) > _LEAF and depth <= 60:
            best = 0.9 * len(ia) * len(kb)  # a split must save a tenth of the dense work
            sub = lo1[ia]
            for j, v in _median_cuts(sub):
                left_a, right_a = ia[sub[:, j] <= v], ia[hi1[ia, j] > v]
                left_b, right_b = kb[lo2[kb, j] <= v], kb[hi2[kb, j] > v]
                work = len(left_a) * len(left_b) + len(right_a) * len(right_b)
                if work < best:
                    best, split = work, ((left_a, left_b), (right_a, right_b))
        if split is None:
            blk = regions_comparable(lo1[ia], hi1[ia], m1[ia], lo2[kb], hi2[kb], m2[kb])
            x, y = np.nonzero(blk)
            out_i.append(ia[x])
            out_k.append(kb[y])
            continue
        for a_, b_ in split:
            stack.append((a_, b_, depth + 1))
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    i, k = np.concatenate(out_i), np.concatenate(out_k)
    key = np.unique(i * max(1, len(lo2)) + k)  # a pair straddling a split is found on both sides
    return key // max(1, len(lo2)), key % max(1, len(lo2))


#: regions of the first list per task of :func:`comparable_pairs_all` (at most), and the work (regions of both
#: lists) below which it stays in this process
_REGIONS_TASK = 20_000
_PARALLEL_REGIONS = 20_000


def _even_cuts(n: int, most: int) -> list[int]:
    """``0 = c_0 < c_1 < ... < c_p = n``: ``n`` items cut into the fewest chunks of at most ``most`` items,
    of sizes differing by one at most (a small last chunk would leave a worker idle); from ``n`` and ``most``
    alone, so the tasks depend on the input only."""
    parts = max(1, -(-n // most))
    return [n * p // parts for p in range(parts + 1)] if n else [0]


def comparable_pairs_all(lo1: np.ndarray, hi1: np.ndarray, m1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                         m2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`comparable_pairs`, the first list cut into chunks of :data:`_REGIONS_TASK` regions, each chunk
    against the whole second list a task of the current executor (issue 28; the chunks depend on the input
    only, and so do the pairs: every pair is found in the chunk of its first region)."""
    from solver.executor import executor_for_work

    cuts = _even_cuts(len(lo1), _REGIONS_TASK)
    if len(cuts) <= 2:
        return comparable_pairs(lo1, hi1, m1, lo2, hi2, m2)
    tasks = [(lo1[a:b], hi1[a:b], m1[a:b], a) for a, b in zip(cuts[:-1], cuts[1:])]
    ex = executor_for_work(len(lo1) + len(lo2), _PARALLEL_REGIONS)
    done = ex.map(_comparable_task, tasks, shared=(lo2, hi2, m2))
    return np.concatenate([i for i, _ in done]), np.concatenate([k for _, k in done])


def _comparable_task(task: tuple, second: tuple) -> tuple[np.ndarray, np.ndarray]:
    lo1, hi1, m1, offset = task
    i, k = comparable_pairs(lo1, hi1, m1, *second)
    return i + offset, k


def _contains(lo: np.ndarray, hi: np.ndarray, masks: np.ndarray, mask_columns: Sequence[int],
              points: np.ndarray) -> np.ndarray:
    """``(n_points, n_regions)`` bool: region contains point."""
    out = np.all((lo[None, :, :] <= points[:, None, :]) & (points[:, None, :] <= hi[None, :, :]), axis=-1)
    for jj, j in enumerate(mask_columns):
        bit = np.left_shift(np.uint64(1), points[:, j].astype(np.uint64))
        out &= (masks[None, :, jj] & bit[:, None]) != 0
    return out


#: below this many regions (or points) a cell of :func:`region_pairs` is checked densely
_LEAF = 48


def region_pairs(nd: Nodes, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(point, region)`` with the region of ``nd`` containing the point, as two index arrays sorted by
    point then region.

    Exact for any regions (overlapping, local recoding, subsets): points and regions are split recursively
    at the median of the points, on the attribute whose split leaves the least dense work - a point goes to
    one side, a region to every side it reaches - and each cell with few regions or points, or that no
    split helps, is checked densely (:func:`_contains`).  Mondrian
    regions are medians' cells too, so a region rarely reaches both sides: about ``O((P + R) log R)`` work
    for ``P`` points and ``R`` regions, where the dense check was ``O(P R)``."""
    points = np.asarray(points, dtype=np.int64)
    lo, hi = nd.region_lo.astype(np.int64), nd.region_hi.astype(np.int64)
    out_p: list[np.ndarray] = []
    out_r: list[np.ndarray] = []
    stack = [(np.arange(len(points)), np.arange(nd.n_regions), 0)]
    while stack:
        pi, ri, depth = stack.pop()
        if not len(pi) or not len(ri):
            continue
        pts = points[pi]
        if len(ri) <= _LEAF or len(pi) <= _LEAF or depth > 60:
            _dense_pairs(nd, pts, pi, ri, out_p, out_r)
            continue
        best, split = 0.9 * len(pi) * len(ri), None  # a split must save a tenth of the dense work
        for j, v in _median_cuts(pts):
            left = pts[:, j] <= v
            r_left, r_right = ri[lo[ri, j] <= v], ri[hi[ri, j] > v]
            n_left = int(left.sum())
            work = n_left * len(r_left) + (len(pi) - n_left) * len(r_right)
            if work < best:
                best, split = work, (left, r_left, r_right)
        if split is None:
            _dense_pairs(nd, pts, pi, ri, out_p, out_r)
            continue
        left, r_left, r_right = split
        stack.append((pi[~left], r_right, depth + 1))
        stack.append((pi[left], r_left, depth + 1))
    if not out_p:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    p, r = np.concatenate(out_p), np.concatenate(out_r)
    order = np.lexsort((r, p))
    return p[order], r[order]


#: points per task of :func:`region_pairs_all`, and the work (points x releases) below which it stays here
_POINTS_TASK = 40_000
_PARALLEL_POINTS = 100_000


def region_pairs_all(nodes: Sequence[Nodes], points: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`region_pairs` of every release's regions, the points cut into chunks of :data:`_POINTS_TASK`:
    one task of the current executor per (release, chunk) (issue 28: the population's points of a census are
    located in parallel; the chunks depend on the input only).  Every release's regions go to each worker once
    (the executor's shared part); a task is its release and its chunk of points."""
    from solver.executor import executor_for_work

    points = np.asarray(points, dtype=np.int64)
    cuts = _even_cuts(len(points), _POINTS_TASK)
    tasks = [(l, points[a:b]) for l in range(len(nodes)) for a, b in zip(cuts[:-1], cuts[1:])]
    ex = executor_for_work(len(points) * len(nodes), _PARALLEL_POINTS)
    done = ex.map(_region_pairs_task, tasks, shared=tuple(_regions_only(nd) for nd in nodes))
    out = []
    per = len(cuts) - 1
    for l in range(len(nodes)):
        mine = done[l * per:(l + 1) * per]
        if not mine:
            out.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        out.append((np.concatenate([p + a for (p, _), a in zip(mine, cuts)]), np.concatenate([r for _, r in mine])))
    return out


def _regions_only(nd: Nodes) -> Nodes:
    """``nd``'s regions without its nodes (what :func:`region_pairs` reads, what a worker is sent)."""
    none = np.zeros(0, np.int64)
    return Nodes(lo=nd.lo[:0], hi=nd.hi[:0], masks=nd.masks[:0], mask_columns=nd.mask_columns, value=none,
                 cls=none, count=none, region=none, region_lo=nd.region_lo, region_hi=nd.region_hi,
                 region_masks=nd.region_masks, row_node=none, class_sizes=none)


def _region_pairs_task(task: tuple, regions: tuple) -> tuple[np.ndarray, np.ndarray]:
    l, points = task
    return region_pairs(regions[l], points)


def _dense_pairs(nd: Nodes, pts: np.ndarray, pi: np.ndarray, ri: np.ndarray, out_p: list, out_r: list) -> None:
    masks = nd.region_masks[ri]
    step = max(1, _BLOCK // max(1, len(ri) * max(1, pts.shape[1])))
    for s in range(0, len(pts), step):
        blk = _contains(nd.region_lo[ri], nd.region_hi[ri], masks, nd.mask_columns, pts[s:s + step])
        a, b = np.nonzero(blk)
        out_p.append(pi[s + a])
        out_r.append(ri[b])


def point_signatures(nodes: Sequence[Nodes], points: np.ndarray) -> list[list[frozenset]]:
    """For every point, per release, the set of region indices containing it (:func:`region_pairs`)."""
    points = np.asarray(points, dtype=np.int64)
    per_release = []
    for nd in nodes:
        p, r = region_pairs(nd, points)
        cuts = np.searchsorted(p, np.arange(len(points) + 1))
        rl = r.tolist()
        per_release.append([frozenset(rl[cuts[i]:cuts[i + 1]]) for i in range(len(points))])
    return [[per_release[j][i] for j in range(len(nodes))] for i in range(len(points))]


def signature_ids(nodes: Sequence[Nodes], points: np.ndarray) -> tuple[np.ndarray, list[frozenset]]:
    """The signatures of many points, coded: ``(ids, sets)`` with ``ids[i, l]`` the index in ``sets`` of the
    set of regions of release ``l`` containing point ``i`` (``sets[0]`` is the empty set).  The common case of
    exactly one region is coded without building a set per point."""
    points = np.asarray(points, dtype=np.int64)
    ids = np.zeros((len(points), len(nodes)), np.int64)
    sets: list[frozenset] = [frozenset()]
    index: dict[frozenset, int] = {frozenset(): 0}
    for l, (nd, (p, r)) in enumerate(zip(nodes, region_pairs_all(nodes, points))):
        cnt = np.bincount(p, minlength=len(points))
        start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        one = np.flatnonzero(cnt == 1)
        if len(one):
            regs = np.unique(r[start[one]])
            code = np.full(nd.n_regions, -1, np.int64)
            for x in regs.tolist():
                key = frozenset((x,))
                if key not in index:
                    index[key] = len(sets)
                    sets.append(key)
                code[x] = index[key]
            ids[one, l] = code[r[start[one]]]
        rl = r.tolist()
        for i in np.flatnonzero(cnt > 1).tolist():
            key = frozenset(rl[start[i]:start[i] + cnt[i]])
            if key not in index:
                index[key] = len(sets)
                sets.append(key)
            ids[i, l] = index[key]
    return ids, sets


# ---------------------------------------------------------------------- atoms
@dataclass(frozen=True)
class Atom:
    """One cell signature of the arrangement of published regions.

    ``signature[j]`` is the frozenset of region indices of release ``j`` that contain the cell; ``leaves[a]``
    the leaf codes of attribute ``a`` the cell spans (the cell is the product of these sets, or a union of
    such products with the same signature: ``leaves`` then describes one of them); ``point`` one raw point
    of the cell (leaf codes).
    """

    signature: tuple[frozenset, ...]
    point: tuple[int, ...]
    leaves: tuple[tuple[int, ...], ...] = field(compare=False)


def _elementary(values: list[tuple[int, int, int]], n_leaves: int, is_mask: bool) -> tuple[np.ndarray, list[int]]:
    """Leaves -> elementary class, and each value's bitset over elementary classes."""
    member = np.zeros((n_leaves, len(values)), dtype=bool)
    leaves = np.arange(n_leaves)
    for k, (lo, hi, m) in enumerate(values):
        inside = (leaves >= lo) & (leaves <= hi)
        if is_mask:
            inside &= np.array([(m >> int(c)) & 1 == 1 for c in leaves], dtype=bool)
        member[:, k] = inside
    packed = np.packbits(member, axis=1) if len(values) else np.zeros((n_leaves, 1), np.uint8)
    _, elem = np.unique(packed, axis=0, return_inverse=True)
    elem = elem.reshape(-1)
    bits = []
    for k in range(len(values)):
        b = 0
        for e in np.unique(elem[member[:, k]]):
            b |= 1 << int(e)
        bits.append(b)
    return elem, bits


def atoms(nodes: Sequence[Nodes], domain_sizes: Sequence[int], *, seed_release: int = -1) -> list[Atom]:
    """Every distinct signature of a point lying in some region of ``seed_release`` (default: the last
    release, which every individual of a continuous-publishing sequence appears in).

    Regions are refined box by box (a box minus a box is at most ``q`` boxes); cells with the same signature
    are merged.  For partitions (cuts, Mondrian) the number of cells is the number of intersecting region
    tuples.
    """
    q = len(domain_sizes)
    n_rel = len(nodes)
    seed_release = seed_release % n_rel
    mask_cols = set(nodes[0].mask_columns) if nodes else set()
    # per attribute: distinct values over all regions of all releases
    proj: list[list[tuple[int, ...]]] = [[] for _ in range(n_rel)]
    elems: list[np.ndarray] = []
    per_attr_bits: list[dict] = []
    for j in range(q):
        vals: dict[tuple[int, int, int], int] = {}
        for nd in nodes:
            mpos = nd.mask_columns.index(j) if j in nd.mask_columns else None
            for r in range(nd.n_regions):
                m = int(nd.region_masks[r, mpos]) if mpos is not None else 0
                vals.setdefault((int(nd.region_lo[r, j]), int(nd.region_hi[r, j]), m), len(vals))
        keys = list(vals)
        elem, bits = _elementary(keys, int(domain_sizes[j]), j in mask_cols)
        elems.append(elem)
        per_attr_bits.append({k: bits[i] for i, k in enumerate(keys)})
    for ri, nd in enumerate(nodes):
        for r in range(nd.n_regions):
            box = []
            for j in range(q):
                mpos = nd.mask_columns.index(j) if j in nd.mask_columns else None
                m = int(nd.region_masks[r, mpos]) if mpos is not None else 0
                box.append(per_attr_bits[j][(int(nd.region_lo[r, j]), int(nd.region_hi[r, j]), m)])
            proj[ri].append(tuple(box))
    found: dict[tuple, tuple] = {}
    seed = nodes[seed_release]
    comps = [regions_comparable(seed.region_lo, seed.region_hi, seed.region_masks, nd.region_lo, nd.region_hi,
                                nd.region_masks) for nd in nodes]
    for r in range(seed.n_regions):
        sig0 = [set() for _ in range(n_rel)]
        sig0[seed_release].add(r)
        pieces = [(proj[seed_release][r], tuple(frozenset(s) for s in sig0))]
        for ri in range(n_rel):
            for o in np.flatnonzero(comps[ri][r]):
                o = int(o)
                if ri == seed_release and o == r:
                    continue
                ob = proj[ri][o]
                new = []
                for box, sig in pieces:
                    inter = tuple(x & y for x, y in zip(box, ob))
                    if not all(inter):
                        new.append((box, sig))
                        continue
                    nsig = sig[:ri] + (sig[ri] | {o},) + sig[ri + 1:]
                    new.append((inter, nsig))
                    for j in range(q):
                        d = box[j] & ~ob[j]
                        if d:
                            new.append((inter[:j] + (d,) + box[j + 1:], sig))
                pieces = new
        for box, sig in pieces:
            if sig not in found:
                found[sig] = box
    out = []
    for sig, box in found.items():
        leaves = []
        for j in range(q):
            bits = box[j]
            leaves.append(tuple(int(c) for c in np.flatnonzero([(bits >> int(e)) & 1 for e in elems[j]])))
        out.append(Atom(signature=sig, point=tuple(lv[0] for lv in leaves), leaves=tuple(leaves)))
    out.sort(key=lambda a: a.point)
    return out


def leaf_labels(release: Release, codes: Sequence[Sequence[int]]) -> dict[str, str]:
    """Labels of a cell given per attribute as a set of leaf codes: a leaf, a hierarchy node, an interval or
    ``{a,b}``."""
    out = {}
    for a, cs in zip(release.qi_attributes, codes):
        cs = sorted(int(c) for c in cs)
        h = a.hierarchy
        if len(cs) == 1:
            out[a.name] = h.leaves[cs[0]]
            continue
        contiguous = cs[-1] - cs[0] + 1 == len(cs)
        label = None
        if contiguous:
            try:
                label = h.label(cs[0], cs[-1], allow_intervals=a.allows_intervals or None)
            except ValueError:
                label = None
        out[a.name] = label if label is not None else "{" + ",".join(h.leaves[c] for c in cs) + "}"
    return out
