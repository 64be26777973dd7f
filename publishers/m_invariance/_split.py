"""Step 4 of m-invariance (:mod:`publishers.m_invariance.invariance`), also used by m-Distinct: the recursive split of a
balanced bucket (Li & Zhou, eq. 4: every entry cut at the same rank of the attribute with the least split score),
one bucket at a time (:func:`balanced_split`, with an optional validity test of the children) or every bucket of
a release at once (:func:`balanced_split_many`: the same leaves, computed with NumPy for every node of a depth).
"""
from __future__ import annotations

import numpy as np

__all__ = ["balanced_split", "balanced_split_many"]


def _extent(codes: np.ndarray) -> np.ndarray:
    if not len(codes):
        return np.zeros(codes.shape[1])
    return (codes.max(axis=0) - codes.min(axis=0)).astype(np.float64)


def balanced_split(entries: list[list[int]], codes: np.ndarray, values_of, spans: np.ndarray,
                   valid=None) -> list[list[list[int]]]:
    """Split a balanced bucket recursively: ``entries`` are lists of equal length ``delta`` (row indices, or
    negative placeholders for counterfeits, which have no QI and go last); each step cuts every entry at the same
    rank ``delta // 2`` of the attribute with the least split score (Li & Zhou, eq. 4:
    ``sum_i |B_i| * sum_j l_ij / I_j``), among the cuts for which ``valid(child)`` holds for both children.
    Returns leaf buckets (lists of entries) that no valid cut splits further (``delta == 1`` at best)."""
    out = []
    stack = [entries]
    q = codes.shape[1] if codes.ndim == 2 else 0
    while stack:
        b = stack.pop()
        delta = len(b[0]) if b else 0
        if delta <= 1 or q == 0:
            out.append(b)
            continue
        real = np.array([r for e in b for r in e if r >= 0], dtype=np.int64)
        parent = np.maximum(_extent(codes[real]), 1.0) if len(real) else np.ones(q)
        h = delta // 2
        best = None
        for j in range(q):
            left, right = [], []
            for e in b:
                reals = [r for r in e if r >= 0]
                fakes = [r for r in e if r < 0]
                reals.sort(key=lambda r: (codes[r, j], r))
                seq = reals + fakes
                left.append(seq[:h])
                right.append(seq[h:])
            if valid is not None and not (valid(left) and valid(right)):
                continue
            score = 0.0
            for child in (left, right):
                cr = np.array([r for e in child for r in e if r >= 0], dtype=np.int64)
                if len(cr):
                    score += len(cr) * float((_extent(codes[cr]) / parent).sum())
            if best is None or score < best[0] - 1e-12:
                best = (score, left, right)
        if best is None:
            out.append(b)
            continue
        stack.append(best[2])
        stack.append(best[1])
    return out


def balanced_split_many(buckets: list[list[list[int]]], codes: np.ndarray) -> list[list[list[list[int]]]]:
    """:func:`balanced_split` (no ``valid`` test) of many balanced buckets at once: the leaves of each bucket,
    in the order ``balanced_split`` returns them - the same cuts, scores and ties, computed for every node of a
    depth of every bucket together with NumPy (one sort per attribute and depth instead of Python lists per node).

    Each node's entries are sorted on attribute ``j`` by ``(code, row)`` (a row's rank in the table's order on
    ``j``), counterfeit placeholders last in their order; both children's real rows give the split score of
    eq. 4 with the parent's extents, summed as ``balanced_split`` sums them; the first attribute whose score is
    below the best so far by more than ``1e-12`` wins.  Buckets this does not cover (entries of unequal
    lengths, no quasi-identifier) go through :func:`balanced_split`."""
    out: list = [None] * len(buckets)
    q = codes.shape[1] if codes.ndim == 2 else 0
    n_rows = len(codes)
    todo = []
    for bi, entries in enumerate(buckets):
        lengths = {len(e) for e in entries}
        if q == 0 or len(lengths) != 1 or next(iter(lengths)) <= 1:
            out[bi] = balanced_split(entries, codes, None, np.ones(q))
        else:
            todo.append(bi)
    if not todo:
        return out
    rank = np.empty((q, n_rows), dtype=np.int64)
    for j in range(q):
        rank[j, np.lexsort((np.arange(n_rows), codes[:, j]))] = np.arange(n_rows)
    # the elements of the live nodes, grouped by node, entry (segment) and slot
    arrays = [np.asarray(buckets[bi], dtype=np.int64) for bi in todo]
    val = np.concatenate([a.ravel() for a in arrays])
    n_entries = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    n_delta = np.array([a.shape[1] for a in arrays], dtype=np.int64)
    n_bucket = np.asarray(todo, dtype=np.int64)
    n_code = np.zeros(len(todo), dtype=np.int64)
    n_depth = np.zeros(len(todo), dtype=np.int64)
    sizes = n_entries * n_delta
    node = np.repeat(np.arange(len(todo)), sizes)
    seg = np.repeat(np.arange(int(n_entries.sum())), np.repeat(n_delta, n_entries))
    pos = np.concatenate([np.tile(np.arange(d), e) for e, d in zip(n_entries.tolist(), n_delta.tolist())])
    leaves = []  # (bucket, code, depth, entries)
    while len(node):
        n_nodes = len(n_delta)
        h = n_delta // 2
        real = val >= 0
        safe = np.where(real, val, 0)
        parent, n_real = _group_extent(node[real], codes[safe[real]], n_nodes)
        parent = np.maximum(parent, 1.0)
        parent[n_real == 0] = 1.0  # a node without real rows: ones, as balanced_split takes
        side = (pos >= h[node]).astype(np.int64)
        child = node * 2 + side
        scores, picks = [], []
        for j in range(q):
            key = np.where(real, rank[j, safe], n_rows + pos)
            order = np.lexsort((key, seg))
            v = val[order]
            r = v >= 0
            ext, count = _group_extent(child[r], codes[v[r]], 2 * n_nodes)
            part = np.where(count > 0, count * (ext / np.repeat(parent, 2, axis=0)).sum(axis=1), 0.0)
            scores.append((0.0 + part[0::2]) + part[1::2])
            picks.append(v)
        best = np.zeros(n_nodes, dtype=np.int64)
        best_score = scores[0].copy()
        for j in range(1, q):
            better = scores[j] < best_score - 1e-12
            best[better] = j
            best_score[better] = scores[j][better]
        val = np.stack(picks)[best[node], np.arange(len(node))]
        # the children: left (the first h slots of every entry) then right, entries in order
        order = np.argsort(child, kind="stable")
        val, pos, seg, side, child = val[order], pos[order], seg[order], side[order], child[order]
        pos = pos - np.where(side == 1, h[child // 2], 0)
        # segments numbered along the elements again (a child's entries, children in order)
        seg = np.cumsum(np.r_[True, (child[1:] != child[:-1]) | (seg[1:] != seg[:-1])]) - 1
        c_delta = np.stack([h, n_delta - h], axis=1).ravel()
        c_entries = np.repeat(n_entries, 2)
        c_bucket, c_depth = np.repeat(n_bucket, 2), np.repeat(n_depth + 1, 2)
        c_code = np.repeat(n_code, 2) * 2 + np.tile([0, 1], n_nodes)
        done = c_delta[child] <= 1
        if done.any():
            d_child, d_val = child[done], val[done]
            bounds = np.flatnonzero(np.r_[True, d_child[1:] != d_child[:-1]])
            for c, chunk in zip(d_child[bounds].tolist(), np.split(d_val, bounds[1:])):
                width = int(c_delta[c])
                leaves.append((int(c_bucket[c]), int(c_code[c]), int(c_depth[c]), chunk.reshape(-1, width).tolist()))
        keep = ~done
        live = np.flatnonzero(c_delta > 1)
        renum = np.full(len(c_delta), -1, dtype=np.int64)
        renum[live] = np.arange(len(live))
        val, pos, node, seg = val[keep], pos[keep], renum[child[keep]], seg[keep]
        n_delta, n_entries, n_bucket = c_delta[live], c_entries[live], c_bucket[live]
        n_code, n_depth = c_code[live], c_depth[live]
    deepest = max((d for _, _, d, _ in leaves), default=0)
    leaves.sort(key=lambda x: (x[0], x[1] << (deepest - x[2])))
    for bi in todo:
        out[bi] = []
    for bi, _, _, entries in leaves:
        out[bi].append(entries)
    return out


def _group_extent(group: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group (``0 .. n_groups - 1``): the extent ``max - min`` of ``values`` (rows) as floats (0 for an
    empty group) and the number of rows."""
    q = values.shape[1]
    lo = np.full((n_groups, q), np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full((n_groups, q), np.iinfo(np.int64).min, dtype=np.int64)
    count = np.bincount(group, minlength=n_groups)
    if len(group):
        order = np.argsort(group, kind="stable")
        g = group[order]
        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        v = values[order].astype(np.int64)
        lo[g[starts]] = np.minimum.reduceat(v, starts, axis=0)
        hi[g[starts]] = np.maximum.reduceat(v, starts, axis=0)
    ext = np.where(count[:, None] > 0, hi - lo, 0).astype(np.float64)
    return ext, count
