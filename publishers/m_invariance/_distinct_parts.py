"""The bucket machinery of m-Distinct (Li & Zhou, section V; used by :mod:`publishers.m_invariance.distinct`): bitmask
candidate update sets, entry-saturating matchings, counterfeit values by max-flow, König edge colouring, the
buckets of Algorithm 2 and their intersection plans."""
from __future__ import annotations

import functools
import itertools
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["allowed_masks", "allowed_masks_of", "counterfeit_values", "random_counterfeit_values",
           "sampled_counterfeit_values", "spread_deficits", "entry_preferences", "edge_colouring", "Bucket",
           "intersection_plan", "intersection_key", "intersection_keys", "bits", "union_of"]


def _bits_loop(mask: int) -> tuple[int, ...]:
    out = []
    v = 0
    while mask:
        if mask & 1:
            out.append(v)
        mask >>= 1
        v += 1
    return tuple(out)


# the set bits of every mask of up to 16 values, computed once (the bucket loops ask millions of times)
_BITS_TABLE: tuple[tuple[int, ...], ...] = tuple(_bits_loop(m) for m in range(1 << 16))


def union_of(masks: Iterable[int]) -> int:
    """The union (bitwise or) of bitmasks."""
    out = 0
    for x in masks:
        out |= x
    return out


def bits(mask: int) -> tuple[int, ...]:
    """The values (bit positions) set in a CUS bitmask, in increasing order."""
    return _BITS_TABLE[mask] if 0 <= mask < 65536 else _bits_loop(mask)


def _saturating_matching(entries: Sequence[int], skip: int = -1, taken: int = 0) -> bool:
    """Whether every entry (CUS bitmask) but ``skip`` gets its own value (a system of distinct
    representatives), avoiding the values in the bitmask ``taken`` (Kuhn's augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(ei: int, seen: set) -> bool:
        for v in bits(entries[ei] & ~taken):
            if v in seen:
                continue
            seen.add(v)
            if v not in owner or augment(owner[v], seen):
                owner[v] = ei
                return True
        return False

    return all(augment(ei, set()) for ei in range(len(entries)) if ei != skip)


@functools.lru_cache(maxsize=1 << 16)
def allowed_masks(entries: tuple[int, ...]) -> tuple[int, ...]:
    """Per entry, the values a row of that entry may hold so that the bucket can still be cut into QI-groups of
    one row per entry with distinct values, each in its entry's CUS: the edges ``(entry, value)`` that lie in
    some matching saturating every entry.  A row outside them can never be completed to a legal group, whatever
    the counterfeits (e.g. entries ``{a}, {a, b}``: the first entry always takes ``a``, so a row ``a`` of the
    second is stuck); conversely rows on such edges are always balanceable with enough counterfeits.  All zero
    when the entries have no system of distinct representatives (e.g. the intersection ``{a}, {a}``).

    By Hall's theorem, ``(e, v)`` is such an edge iff ``v`` is in ``e``'s CUS and the other entries keep a system
    of distinct representatives without ``v``: no set ``S`` of them has ``|N(S)| < |S|`` (deficient) and none
    with ``|N(S)| = |S|`` (tight) has ``v`` in ``N(S)``.  So one pass over the subsets (``2^k``, their unions by
    the lowest bit) gives every entry's mask: its CUS minus the unions of the tight subsets without it, zero
    when a deficient one is without it.  Larger buckets (``k > 12``) use one matching per edge
    (:func:`_allowed_by_matchings`, the same edges)."""
    k = len(entries)
    if k > 12:
        return _allowed_by_matchings(entries)
    union = [0] * (1 << k)
    special = []  # (subset, its union, deficient) for the tight and deficient subsets
    for S in range(1, 1 << k):
        low = S & -S
        u = union[S ^ low] | entries[low.bit_length() - 1]
        union[S] = u
        c, s = u.bit_count(), S.bit_count()
        if c <= s:
            special.append((S, u, c < s))
    out = []
    for ei, e in enumerate(entries):
        bit = 1 << ei
        forbidden = 0
        for S, u, deficient in special:
            if not S & bit:
                if deficient:
                    forbidden = -1
                    break
                forbidden |= u
        out.append(e & ~forbidden)
    return tuple(out)


#: allowed_masks_of's memo across releases (cleared when it grows past 2^17 signatures)
_ALLOWED: dict[tuple, tuple] = {}


def allowed_masks_of(keys: Iterable[tuple[int, ...]]) -> dict[tuple, tuple]:
    """:func:`allowed_masks` of many signatures, ``{key: masks}``: those of one size at once over arrays (the
    same subsets, tight and deficient, as columns; masks of up to 62 values), the others one by one."""
    keys = set(keys)
    if len(_ALLOWED) > 1 << 17:
        _ALLOWED.clear()
    todo: dict[int, list[tuple]] = {}
    for key in keys:
        if key not in _ALLOWED:
            k = len(key)
            if 0 < k <= 12 and max(key) < 1 << 62:
                todo.setdefault(k, []).append(key)
            else:
                _ALLOWED[key] = allowed_masks(key)
    for k, group in todo.items():
        E = np.asarray(group, dtype=np.int64)  # (N, k)
        union = np.zeros((len(group), 1 << k), dtype=np.int64)
        for S in range(1, 1 << k):
            low = S & -S
            union[:, S] = union[:, S ^ low] | E[:, low.bit_length() - 1]
        size = np.asarray([S.bit_count() for S in range(1 << k)])
        have = np.bitwise_count(union)
        tight, deficient = have == size, have < size
        out = np.zeros_like(E)
        for ei in range(k):
            without = (np.arange(1 << k) >> ei & 1) == 0  # the subsets without entry ei
            forbidden = np.bitwise_or.reduce(np.where(tight & without, union, 0), axis=1)
            out[:, ei] = np.where((deficient & without).any(axis=1), 0, E[:, ei] & ~forbidden)
        for key, row in zip(group, out.tolist()):
            _ALLOWED[key] = tuple(row)
    return {key: _ALLOWED[key] for key in keys}


def _allowed_by_matchings(entries: Sequence[int]) -> tuple[int, ...]:
    """:func:`allowed_masks` by one saturating matching per edge (the definition itself)."""
    out = []
    for ei, e in enumerate(entries):
        mask = 0
        for v in bits(e):
            if _saturating_matching(entries, skip=ei, taken=1 << v):
                mask |= 1 << v
        out.append(mask)
    return tuple(out)


def counterfeit_values(entries: Sequence[int], counts: Sequence[int], freq: Mapping[int, int], delta: int,
                       V: int) -> list[list[int]] | None:
    """Values for the counterfeits of a bucket: ``counts[i]`` rows for entry ``i``, each a value of its CUS, no
    value on more than ``delta`` rows in all (``freq``: the real rows' counts) - a max-flow problem.  Then every
    entry has ``delta`` rows and every value at most ``delta``, so a proper ``delta``-edge-colouring of entries x
    values (König) cuts the bucket into ``delta`` legal QI-groups.  ``None`` when infeasible."""
    need = sum(counts)
    if need == 0:
        return [[] for _ in entries]
    k = len(entries)
    # nodes: 0 source, 1..k entries, k+1..k+V values, k+V+1 sink
    src, sink = 0, k + V + 1
    cap: dict[tuple[int, int], int] = {}
    adj: dict[int, list[int]] = {}

    def edge(a: int, b: int, c: int) -> None:
        if (a, b) not in cap:
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
            cap[(a, b)] = 0
            cap.setdefault((b, a), 0)
        cap[(a, b)] += c

    for i, (e, c) in enumerate(zip(entries, counts)):
        if c:
            edge(src, 1 + i, c)
            for v in bits(e):
                edge(1 + i, 1 + k + v, c)
    for v in range(V):
        c = delta - int(freq.get(v, 0))
        if c > 0:
            edge(1 + k + v, sink, c)
    flow = 0
    while flow < need:  # BFS augmenting paths (Edmonds-Karp), deterministic order
        prev = {src: src}
        queue = [src]
        for a in queue:
            if sink in prev:
                break
            for b in adj.get(a, []):
                if b not in prev and cap[(a, b)] > 0:
                    prev[b] = a
                    queue.append(b)
        if sink not in prev:
            return None
        push, b = need - flow, sink
        while b != src:
            push = min(push, cap[(prev[b], b)])
            b = prev[b]
        b = sink
        while b != src:
            cap[(prev[b], b)] -= push
            cap[(b, prev[b])] += push
            b = prev[b]
        flow += push
    out = []
    for i, (e, c) in enumerate(zip(entries, counts)):
        vals = []
        for v in bits(e):
            used = cap[(1 + k + v, 1 + i)] if c else 0  # flow on entry -> value = reverse residual
            vals.extend([v] * used)
        out.append(vals)
    return out



def random_counterfeit_values(entries: Sequence[int], counts: Sequence[int], freq: Mapping[int, int], delta: int,
                              V: int, rng: np.random.Generator, weights: np.ndarray | None = None
                              ) -> list[list[int]] | None:
    """:func:`counterfeit_values` with the values relabelled in a weighted random order (Efraimidis-Spirakis keys
    ``u ** (1 / w)``, ``weights``: the values' frequencies in the table): the flow's search takes low labels
    first, so without the relabelling counterfeits would favour the first values of the domain, and with it they
    favour frequent values, as real rows do (issue 13: counterfeits indistinguishable by value).  The same
    feasibility: a relabelling changes no capacity."""
    w = np.ones(V) if weights is None else np.maximum(np.asarray(weights, dtype=np.float64), 1e-12)
    order = np.argsort(-(rng.random(V) ** (1.0 / w)), kind="stable")  # order[j]: the value labelled j
    label = np.empty(V, dtype=np.int64)
    label[order] = np.arange(V)
    relabelled = [sum(1 << int(label[b]) for b in bits(e)) for e in entries]
    fill = counterfeit_values(relabelled, counts, {int(label[v]): c for v, c in freq.items()}, delta, V)
    return None if fill is None else [[int(order[x]) for x in f] for f in fill]


def sampled_counterfeit_values(entries: Sequence[int], counts: Sequence[int], freq: Mapping[int, int], delta: int,
                               V: int, rng: np.random.Generator, preference: Sequence[np.ndarray]
                               ) -> list[list[int]] | None:
    """:func:`counterfeit_values` with each counterfeit's value drawn at random from its entry's ``preference``
    (weights over the values, e.g. the values of the real rows in entries of that CUS), conditioned on the
    bucket staying balanceable: the counterfeits are taken one at a time in a random order; each draws among
    its entry's values with room left (below ``delta``), and a value after which the others can no longer be
    placed (a max-flow) is struck and the draw repeated.  Feasible whenever :func:`counterfeit_values` is (the
    value of one of its solutions always passes); ``None`` otherwise.  A fill of the remaining slots is kept, so
    the max-flow runs only when the drawn value is not one the fill already gives that entry."""
    plan = counterfeit_values(entries, counts, freq, delta, V)  # a fill of the slots not drawn yet
    if plan is None:
        return None
    left = [int(c) for c in counts]
    freq = {int(v): int(c) for v, c in freq.items()}
    out: list[list[int]] = [[] for _ in entries]
    slots = np.repeat(np.arange(len(entries)), left)
    for i in rng.permutation(slots):
        i = int(i)
        left[i] -= 1
        w = np.zeros(V)
        for v in bits(entries[i]):
            if freq.get(v, 0) < delta:
                w[v] = max(float(preference[i][v]), 1e-9)
        while True:
            v = int(rng.choice(V, p=w / w.sum()))
            freq[v] = freq.get(v, 0) + 1
            if v in plan[i]:  # the plan's other slots still fit: no max-flow needed
                plan[i].remove(v)
                break
            if not any(left):
                break
            replanned = counterfeit_values(entries, left, freq, delta, V)
            if replanned is not None:
                plan = replanned
                break
            freq[v] -= 1
            w[v] = 0.0
        out[i].append(v)
    return out


def spread_deficits(allowed: Sequence[int], rows: Sequence[Sequence[int]], vals: np.ndarray, delta: int,
                    rng: np.random.Generator) -> list[list[int]]:
    """Re-place a bucket's rows on its entries so that its deficits - the ``k * delta - n`` slots its
    counterfeits will fill - fall on entries drawn uniformly at random, one slot at a time, among those that
    still leave every row a place (a row of value ``v`` may sit at an entry whose ``allowed`` mask has ``v``;
    each placement is a max-flow, :func:`counterfeit_values` with the entries as its values, needed only once
    the deficits leave the placement given).

    Why (issue 13, counterfeits indistinguishable): a counterfeit is taken for one row of its QI-group, so it
    must sit at an entry chosen as blindly as the real rows' are.  Algorithm 3's scan leaves the deficits at
    the entries that no flexible row can reach - entries whose candidate update sets hold the bucket's rarer
    values - and the counterfeits then carry rarer values than their group (measured on Adult: the counterfeit's
    entry ranked 0.43 by frequency, KS p 1e-19).  Returns the new rows per entry (the same rows, values and so
    the same bucket frequencies and QI box)."""
    k = len(allowed)
    n = sum(len(lst) for lst in rows)
    need = k * delta - n
    if need <= 0 or k < 2:
        return [list(lst) for lst in rows]
    by_value: dict[int, list[int]] = {}
    for lst in rows:
        for r in lst:
            by_value.setdefault(int(vals[r]), []).append(r)
    values = sorted(by_value)
    # the flow of counterfeit_values with roles swapped: value classes of rows are its "entries" (their masks
    # the entries that allow them), the bucket's entries its "values" (capacity delta - deficit)
    masks = [sum(1 << i for i, a in enumerate(allowed) if a >> v & 1) for v in values]
    counts = [len(by_value[v]) for v in values]
    deficit = dict.fromkeys(range(k), 0)
    slack = [delta - len(lst) for lst in rows]  # the rows as given place every row while deficit[i] <= slack[i]
    for _ in range(need):
        for i in rng.permutation(k).tolist():
            if deficit[i] >= delta:
                continue
            deficit[i] += 1
            if (all(deficit[j] <= slack[j] for j in range(k))
                    or counterfeit_values(masks, counts, deficit, delta, k) is not None):
                break
            deficit[i] -= 1
        else:  # the rows as given are a placement with this many deficits, so some entry always takes one
            raise AssertionError("spread_deficits: no placement of the rows")
    placed = counterfeit_values(masks, counts, deficit, delta, k)
    out: list[list[int]] = [[] for _ in range(k)]
    for v, at in zip(values, placed):
        for r, e in zip(by_value[v], rng.permutation(np.asarray(at, dtype=np.int64)).tolist()):
            out[e].append(r)
    return out


def entry_preferences(entries: Sequence[int], rows: Sequence[Sequence[int]], vals: np.ndarray, V: int,
                      fallback: Mapping[int, np.ndarray]) -> list[np.ndarray]:
    """The weights :func:`sampled_counterfeit_values` draws an entry's counterfeit values from: the values of the
    real rows at that entry (a counterfeit looks like a real row of its entry: mostly the value the entry's
    records kept, sometimes one they updated to), or ``fallback[cus]`` for an entry without real rows (the real
    rows of all entries with that candidate update set in the release).  Measured on Adult (issue 13): drawing
    from all entries of the CUS instead, or from the table's frequencies, leaves a frequency tell."""
    out = []
    for e, lst in zip(entries, rows):
        if lst:
            out.append(np.bincount(vals[np.asarray(lst, dtype=np.int64)], minlength=V).astype(np.float64))
        else:
            out.append(fallback[e])
    return out


def edge_colouring(edges: Sequence[tuple[int, int]], delta: int) -> list[int]:
    """A proper edge colouring with ``delta`` colours of a bipartite multigraph of maximum degree ``<= delta``
    (König's theorem), by alternating-path recolouring.  ``edges`` are ``(left, right)`` pairs; returns a colour
    per edge.  ``O(E * (V + E))``."""
    at_l: dict[int, dict[int, int]] = {}
    at_r: dict[int, dict[int, int]] = {}
    colour = [-1] * len(edges)
    for e, (u, v) in enumerate(edges):
        cu = at_l.setdefault(u, {})
        cv = at_r.setdefault(v, {})
        a = next(c for c in range(delta) if c not in cu)
        if a in cv:
            b = next(c for c in range(delta) if c not in cv)
            # flip the a/b alternating path that starts at v with colour a
            path = []
            node, side, want = v, "r", a
            while True:
                table = at_r if side == "r" else at_l
                f = table.get(node, {}).get(want)
                if f is None:
                    break
                path.append(f)
                fu, fv = edges[f]
                node, side = (fu, "l") if side == "r" else (fv, "r")
                want = b if want == a else a
            for f in path:
                fu, fv = edges[f]
                del at_l[fu][colour[f]]
                del at_r[fv][colour[f]]
            for f in path:
                fu, fv = edges[f]
                colour[f] = b if colour[f] == a else a
                at_l[fu][colour[f]] = f
                at_r[fv][colour[f]] = f
        colour[e] = a
        cu[a] = e
        cv[a] = e
    return colour


class Bucket:
    """A bucket of Algorithm 2: entries (CUS bitmasks), the records assigned to each, the value frequencies, the
    counterfeit need ``delta`` and the QI bounding box (kept incrementally; plain Python for small ``q``)."""

    __slots__ = ("entries", "allowed", "rows", "freq", "lo", "hi", "n", "origin", "d", "area")

    def __init__(self, entries: tuple[int, ...], q: int, origin: tuple, allowed: tuple[int, ...] | None = None):
        self.entries = entries
        # per entry, the values a row may hold there and still be completed to legal QI-groups (allowed_masks)
        self.allowed = allowed if allowed is not None else allowed_masks(entries)
        self.rows: list[list[int]] = [[] for _ in entries]
        self.freq: dict[int, int] = {}
        self.lo: list[int] = []
        self.hi: list[int] = []
        self.n = 0
        self.origin = origin  # the base signatures this bucket is implied by
        self.d = 0
        self.area = 0.0

    def delta(self) -> int:
        """``delta = max(F_max, |e_1|, ..., |e_k|)`` (section V.B (i))."""
        return self.d

    def lam(self, point, inv_spans) -> float:
        """lambda of eq. 3: the bucket's QI area after / before adding the point (1 for an empty bucket); the
        area is the product of the normalized extents ``(hi - lo + 1) / |dom|``."""
        if self.n == 0:
            return 1.0
        after = 1.0
        for x, lo, hi, w in zip(point, self.lo, self.hi, inv_spans):
            after *= ((hi if x < hi else x) - (lo if x > lo else x) + 1) * w
        return after / self.area

    def add(self, entry: int, row: int, value: int, point, inv_spans) -> None:
        self.rows[entry].append(row)
        f = self.freq.get(value, 0) + 1
        self.freq[value] = f
        self.d = max(self.d, f, len(self.rows[entry]))
        if self.n == 0:
            self.lo = list(point)
            self.hi = list(point)
        else:
            self.lo = [min(a, b) for a, b in zip(self.lo, point)]
            self.hi = [max(a, b) for a, b in zip(self.hi, point)]
        area = 1.0
        for lo, hi, w in zip(self.lo, self.hi, inv_spans):
            area *= (hi - lo + 1) * w
        self.area = area
        self.n += 1


# the one-to-one maps of up to 6 CUS, enumerated once (intersection_key)
_PERMUTATIONS = {n: tuple(itertools.permutations(range(n))) for n in range(1, 7)}


def intersection_key(a: tuple, b: tuple) -> tuple | None:
    """``tuple(sorted(intersection_plan(a, b)))`` (the bucket a plan makes), or ``None`` when ``a`` and ``b``
    are not intersectable.  Up to 6 CUS, every one-to-one map is scored (``|x & y| / |x | y|`` summed over
    non-empty intersections): the best map's intersections are the answer when every map within ``1e-7`` of it
    gives the same multiset (the assignment solver's optimum, exact up to rounding far below ``1e-7``, is one
    of those maps, so it gives that multiset too); otherwise, and for larger signatures, the assignment solver
    decides (:func:`intersection_plan`)."""
    n = len(a)
    perms = _PERMUTATIONS.get(n)
    if perms is None or len(b) != n:
        plan = intersection_plan(a, b)
        return None if plan is None else tuple(sorted(plan))
    share = [[_share(x, y) for y in b] for x in a]
    scored = []
    for p in perms:
        total = 0.0
        for i in range(n):
            s = share[i][p[i]]
            if s < 0.0:
                break
            total += s
        else:
            scored.append((total, p))
    if not scored:
        return None
    top = max(t for t, _ in scored)
    keys = {tuple(sorted(a[i] & b[p[i]] for i in range(n))) for t, p in scored if t >= top - 1e-7}
    if len(keys) == 1:
        return keys.pop()
    plan = intersection_plan(a, b)
    return None if plan is None else tuple(sorted(plan))


def intersection_keys(group: Sequence[tuple]) -> list[tuple | None]:
    """:func:`intersection_key` of every pair ``(group[i], group[j])``, ``i < j``, in that order (signatures of
    one size), over arrays: the shares of all pairs and maps at once, the same rule (the multiset of the best
    map when every map within ``1e-7`` of it agrees, else the assignment solver)."""
    G = len(group)
    if G < 2:
        return []
    n = len(group[0])
    perms = _PERMUTATIONS.get(n)
    if perms is None or max(max(k) for k in group) >= 1 << 62:
        return [intersection_key(group[i], group[j]) for i in range(G) for j in range(i + 1, G)]
    M = np.asarray(group, dtype=np.int64)
    P = np.asarray(perms, dtype=np.int64)  # (maps, n)
    ia, ib = np.triu_indices(G, 1)
    out: list[tuple | None] = []
    step = max(1, 2_000_000 // (len(P) * n * n))
    rows = np.arange(n)
    for s in range(0, len(ia), step):
        a, b = M[ia[s:s + step]], M[ib[s:s + step]]
        inter = a[:, :, None] & b[:, None, :]  # (pairs, n, n)
        union = a[:, :, None] | b[:, None, :]
        share = np.where(inter != 0, np.bitwise_count(inter) / np.maximum(np.bitwise_count(union), 1), -np.inf)
        total = share[:, rows, P].sum(axis=2)  # (pairs, maps): -inf for a map with an empty intersection
        top = total.max(axis=1)
        best = total.argmax(axis=1)
        near = (total >= top[:, None] - 1e-7).sum(axis=1)  # maps within 1e-7 of the best (the best included)
        best_key = np.sort(inter[np.arange(len(a))[:, None], rows, P[best]], axis=1)
        for p, (found, alone, key) in enumerate(zip((top > -np.inf).tolist(), (near == 1).tolist(),
                                                    best_key.tolist())):
            if not found:
                out.append(None)
            elif alone:
                out.append(tuple(key))
            else:  # other maps as good: do they give the same multiset?
                out.append(intersection_key(group[int(ia[s + p])], group[int(ib[s + p])]))
    return out


@functools.lru_cache(maxsize=1 << 16)
def _share(x: int, y: int) -> float:
    """The share ``|x & y| / |x | y|`` of two CUS bitmasks, -1 when they do not intersect."""
    inter = x & y
    return inter.bit_count() / (x | y).bit_count() if inter else -1.0


def intersection_plan(a: tuple, b: tuple) -> list[int] | None:
    """The highest-scored intersection of two signatures of equal size: a one-to-one map of their CUS with
    non-empty intersections maximizing the total share ``|x & y| / |x | y|`` (an assignment problem); ``None``
    when they are not intersectable."""
    n = len(a)
    score = np.full((n, n), -1e6)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            inter = x & y
            if inter:
                score[i, j] = bin(inter).count("1") / bin(x | y).count("1")
    r, c = linear_sum_assignment(-score)
    if (score[r, c] < 0).any():
        return None
    return [a[i] & b[j] for i, j in zip(r, c)]
