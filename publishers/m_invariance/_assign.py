"""The assignment of m-Distinct (Li & Zhou, Algorithm 3, eq. 3; used by :mod:`publishers.m_invariance.distinct`):
records go to the bucket entry of highest score, one at a time, each choice seeing the buckets as the earlier ones left
them.  A record with many candidate buckets is scored against all of them at once over arrays that mirror the
buckets (:class:`BucketArrays`); the choices, and so the releases, are those of the one-record-one-bucket scan
(same floating-point operations in the same order, the same tie tolerance, the first best kept).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ._distinct_parts import Bucket, bits

__all__ = ["BucketArrays", "assign_old", "assign_new"]

#: scores closer than this are a tie, kept by the earlier candidate (the scan's rule)
TOL = 1e-12


class BucketArrays:
    """The buckets' state for eq. 3, one row per bucket: rows per entry, value frequencies, ``delta``, size,
    QI bounding box and area, and the allowed (value, entry) pairs; :meth:`add` updates the :class:`Bucket`
    and its row."""

    def __init__(self, buckets: Sequence[Bucket], V: int, inv_spans: Sequence[float]):
        nb, q = len(buckets), len(inv_spans)
        kmax = max((len(b.entries) for b in buckets), default=1)
        self.buckets = list(buckets)
        self.inv_spans = inv_spans
        self.w = np.asarray(inv_spans, dtype=np.float64)
        size = np.asarray([len(b.entries) for b in self.buckets], dtype=np.int64).reshape(-1, 1)
        # rows per entry; absent entries never have the fewest
        self.count = np.where(np.arange(kmax) < size, 0, np.iinfo(np.int64).max)
        self.freq = np.zeros((nb, V), dtype=np.int64)
        self.d = np.zeros(nb, dtype=np.int64)
        self.n = np.zeros(nb, dtype=np.int64)
        self.lo = np.zeros((nb, q), dtype=np.int64)
        self.hi = np.zeros((nb, q), dtype=np.int64)
        self.area = np.ones(nb, dtype=np.float64)
        if V <= 62:  # [bucket, value, entry]: whether the entry allows the value
            allowed = np.asarray([b.allowed + (0,) * (kmax - len(b.allowed)) for b in self.buckets],
                                 dtype=np.int64).reshape(nb, kmax)
            self.allowed = (allowed[:, None, :] >> np.arange(V).reshape(1, V, 1)) & 1 == 1
        else:
            self.allowed = np.zeros((nb, V, kmax), dtype=bool)
            for i, b in enumerate(self.buckets):
                for ei, a in enumerate(b.allowed):
                    self.allowed[i, list(bits(a)), ei] = True
        for i, b in enumerate(self.buckets):
            if b.n:
                self.count[i, :len(b.entries)] = [len(x) for x in b.rows]
                for v, f in b.freq.items():
                    self.freq[i, v] = f
                self._sync(i)

    def _sync(self, i: int) -> None:
        b = self.buckets[i]
        self.d[i], self.n[i] = b.d, b.n
        if b.n:
            self.lo[i], self.hi[i], self.area[i] = b.lo, b.hi, b.area

    def add(self, i: int, entry: int, row: int, value: int, point) -> None:
        self.buckets[i].add(entry, row, value, point, self.inv_spans)
        self.count[i, entry] += 1
        self.freq[i, value] += 1
        self._sync(i)

    def lam(self, B: np.ndarray, point) -> np.ndarray:
        """:meth:`Bucket.lam` of ``point`` for the buckets ``B`` (1 for an empty bucket), computed as it does:
        the normalized extents multiplied left to right, divided by the area."""
        x = np.asarray(point, dtype=np.int64)
        t = (np.maximum(self.hi[B], x) - np.minimum(self.lo[B], x) + 1) * self.w
        after = np.ones(len(B)) if t.shape[1] == 0 else t[:, 0].copy()
        for j in range(1, t.shape[1]):
            after *= t[:, j]
        out = after / self.area[B]
        out[self.n[B] == 0] = 1.0
        return out

    def best_entries(self, B: np.ndarray, v: int) -> tuple[np.ndarray, np.ndarray]:
        """Per bucket of ``B``: the first entry of fewest rows among those allowing ``v``, and its row count."""
        counts = np.where(self.allowed[B, v], self.count[B], np.iinfo(np.int64).max)
        ei = counts.argmin(axis=1)
        return ei, counts[np.arange(len(B)), ei]


def _scan_max(score: np.ndarray) -> int:
    """The candidate a left-to-right scan keeps when a later one replaces it only if higher by more than
    :data:`TOL`."""
    i = 0
    while True:
        later = np.flatnonzero(score[i + 1:] > score[i] + TOL)
        if not len(later):
            return i
        i += 1 + int(later[0])


def _scan_min(lam: np.ndarray) -> int:
    """:func:`_scan_max` for the least value."""
    i = 0
    while True:
        later = np.flatnonzero(lam[i + 1:] < lam[i] - TOL)
        if not len(later):
            return i
        i += 1 + int(later[0])


def assign_old(order: Sequence[int], candidates: Mapping[int, Sequence[tuple]], buckets: Mapping[tuple, Bucket],
               vals: np.ndarray, points: list, inv_spans: Sequence[float], V: int) -> BucketArrays:
    """Old records in ``order`` (increasing ``CNT_buc``), each to the (bucket, entry) of highest eq. 3 score
    among its ``candidates`` (bucket keys, in order): per bucket the first entry of fewest rows among those
    allowing its value, scored ``1 / lambda`` when the value and that entry are both below ``delta`` (epsilon =
    1), else ``-lambda``; the first best bucket wins.  A record with one candidate needs no score.  Returns the
    arrays of every bucket after the assignment (for :func:`assign_new`)."""
    keys = list(buckets)
    index = {k: i for i, k in enumerate(keys)}
    arrays = None
    as_array: dict[int, np.ndarray] = {}  # id of a candidate list -> its bucket indices
    for r in order:
        v = int(vals[r])
        cand = candidates[r]
        if len(cand) == 1 and arrays is None:
            b = buckets[cand[0]]
            rows = b.rows
            ei = min((e for e, a in enumerate(b.allowed) if a >> v & 1), key=lambda e: len(rows[e]))
            b.add(ei, r, v, points[r], inv_spans)
            continue
        if arrays is None:  # the records of one candidate come first (the order): arrays from here on
            arrays = BucketArrays([buckets[k] for k in keys], V, inv_spans)
        B = as_array.get(id(cand))
        if B is None:
            B = as_array[id(cand)] = np.asarray([index[k] for k in cand], dtype=np.int64)
        ei, fewest = arrays.best_entries(B, v)
        i = 0
        if len(B) > 1:
            lam = arrays.lam(B, points[r])
            d = arrays.d[B]
            score = np.where((arrays.freq[B, v] < d) & (fewest < d), 1.0 / lam, -lam)
            i = _scan_max(score)
        arrays.add(int(B[i]), int(ei[i]), r, v, points[r])
    if arrays is None:
        arrays = BucketArrays([buckets[k] for k in keys], V, inv_spans)
    return arrays


def assign_new(arrays: BucketArrays, new_rows: np.ndarray, vals: np.ndarray, points: list) -> list[int]:
    """New records (in the order given) fill gaps only (epsilon = 1): each goes to the entry of least lambda
    (the first within :data:`TOL`) among the non-empty buckets' entries that allow its value and where both
    the entry and the value are below ``delta``.  Returns the records left without one."""
    slots: dict[int, list[tuple[int, int]]] = {}
    for i, b in enumerate(arrays.buckets):
        if not b.n:
            continue
        for ei, a in enumerate(b.allowed):  # only entries with a gap can take a new record with epsilon = 1
            if len(b.rows[ei]) < b.d:
                for v in bits(a):
                    if b.freq.get(v, 0) < b.d:
                        slots.setdefault(v, []).append((i, ei))
    open_: dict[int, tuple[np.ndarray, np.ndarray]] = {
        v: (np.asarray([i for i, _ in s], dtype=np.int64), np.asarray([e for _, e in s], dtype=np.int64))
        for v, s in slots.items()}
    leftover: list[int] = []
    for r in new_rows:
        r = int(r)
        v = int(vals[r])
        sb, se = open_.get(v, (None, None))
        if sb is None or not len(sb):
            leftover.append(r)
            continue
        d = arrays.d[sb]
        alive = (arrays.count[sb, se] < d) & (arrays.freq[sb, v] < d)
        if not alive.all():
            sb, se = sb[alive], se[alive]
            open_[v] = (sb, se)
            if not len(sb):
                leftover.append(r)
                continue
        i = _scan_min(arrays.lam(sb, points[r])) if len(sb) > 1 else 0
        arrays.add(int(sb[i]), int(se[i]), r, v, points[r])
    return leftover
