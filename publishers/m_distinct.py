"""m-Distinct and m-Distinct* (Li & Zhou, sections IV-V): re-publication under insertions, deletions and
internal updates, with counterfeit records.

Definitions (section IV.A): the *candidate update set* ``CUS(a)`` of a value is the set it may update to
(Definition 12, from the public ``transitions``); a QI-group's *update set signature* ``USS(g)`` is the
multiset of the CUS of its values (Definition 13), inherited by its records; a set of values is a *legal update
instance* of a USS when it has as many values, each in some CUS, every CUS covered (Definition 14).  A sequence
is *m-Distinct* (Definition 15) when every release is m-unique (at least ``m`` rows per QI-group, distinct
values) and every record's new candidate set is a legal update instance of its previous USS; then no feasible
sub-SUG loses a node (Lemma 3), so the update-graph attack discloses no value.  *m-Distinct** (section IV.B)
adds that the CUS of the values in a record's first QI-group are pairwise disjoint: with transitive candidate
update sets every feasible sub-SUG then has ``>= m`` parallel paths and the risk is at most ``1/m`` (Lemma 4).

One release (Algorithm 1):

1. **buckets** (Algorithm 2): one bucket per distinct ``USS(t_pre)`` of the records that were published
   before; then, for every two buckets whose signatures are *intersectable* (a one-to-one map of their CUS with
   non-empty intersections), a bucket whose entries are the intersections under the highest-scored plan (the
   largest share of overlapping elements, found as an assignment problem).  A bucket's *entries* are its CUS;
2. **assignment** (Algorithm 3): records in increasing order of ``CNT_buc`` (the number of buckets they fit)
   go to the (bucket, entry) of highest score (eq. 3: ``1/lambda`` when the assignment does not raise the
   bucket's counterfeit need ``delta = max(F_max, |e_1|, ..)``, else ``-lambda``; ``lambda`` the growth of
   the bucket's QI area; ties to the emptier entry).  An old record fits its own bucket and the intersection
   buckets made from it (``USS(t_pre)`` implies them) at an entry containing its value; a new record fits any
   entry containing its value (it is placed only where it fills a gap, ``epsilon = 1``: a new record never
   raises a bucket's counterfeits; otherwise it is left for step 3).  Each bucket is then balanced: every entry
   is filled to ``delta`` rows with counterfeits;
3. **new records** without a suitable bucket are partitioned into m-unique QI-groups like a static table (as
   m-invariance does), with counterfeits when they are not m-eligible; for m-Distinct* the groups' values must
   have pairwise disjoint CUS;
4. **split** (eq. 4): each bucket is split recursively, every entry cut at the same rank of the attribute with
   the least split score, while both halves stay m-eligible (no value on more rows than an entry holds); a
   bucket that cannot be split further is cut into ``delta`` QI-groups of one row per entry and distinct
   values (a proper edge colouring of the bipartite multigraph entries x values, König's theorem).  Counterfeit
   values are chosen when balancing, each in its entry's CUS, by a max-flow that keeps every value at most
   ``delta`` (the paper picks them at random per group, which can leave no legal value: buckets whose entries
   lack distinct representatives, e.g. the intersection ``{a}, {a}``, are dropped, and a row may only take a
   value on an edge of some entry-saturating matching, ``allowed_masks``);
5. **generalization** of each QI-group to the closure of its real rows, and the counterfeit statistics.

Records whose value left every CUS of their USS (an update the public model says is impossible) cannot be
placed legally: they are published as new records and counted (``stats.illegal``).  The state (JSON) holds
every record's USS (as bitmasks over the value dictionary), the pseudonyms of the ``uid`` column, and the
statistics of the last release: counterfeits (total and per group), groups, buckets.

Deviation from the paper, for speed: intersection buckets are built only among the ``intersect_limit``
smallest buckets (all pairs when there are fewer), since all pairs are quadratic in the number of buckets.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from multirelease.errors import InputError
from multirelease.params import Anything, Boolean, Interval
from multirelease.table import Table
from multirelease.transitions import TransitionModel, load_transitions

from .base import PublisherBase, PublishResult
from .m_invariance import GroupSpec, Pseudonyms, balanced_split, new_record_groups, publish_groups

__all__ = ["MDistinct", "MDistinctStar", "edge_colouring"]


def _bits(mask: int) -> list[int]:
    out = []
    v = 0
    while mask:
        if mask & 1:
            out.append(v)
        mask >>= 1
        v += 1
    return out


def _saturating_matching(entries: Sequence[int], skip: int = -1, taken: int = 0) -> bool:
    """Whether every entry (CUS bitmask) but ``skip`` gets its own value (a system of distinct
    representatives), avoiding the values in the bitmask ``taken`` (Kuhn's augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(ei: int, seen: set) -> bool:
        for v in _bits(entries[ei] & ~taken):
            if v in seen:
                continue
            seen.add(v)
            if v not in owner or augment(owner[v], seen):
                owner[v] = ei
                return True
        return False

    return all(augment(ei, set()) for ei in range(len(entries)) if ei != skip)


def allowed_masks(entries: Sequence[int]) -> tuple[int, ...]:
    """Per entry, the values a row of that entry may hold so that the bucket can still be cut into QI-groups of
    one row per entry with distinct values, each in its entry's CUS: the edges ``(entry, value)`` that lie in
    some matching saturating every entry.  A row outside them can never be completed to a legal group, whatever
    the counterfeits (e.g. entries ``{a}, {a, b}``: the first entry always takes ``a``, so a row ``a`` of the
    second is stuck); conversely rows on such edges are always balanceable with enough counterfeits.  All zero
    when the entries have no system of distinct representatives (e.g. the intersection ``{a}, {a}``)."""
    out = []
    for ei, e in enumerate(entries):
        mask = 0
        for v in _bits(e):
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
            for v in _bits(e):
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
        for v in _bits(e):
            used = cap[(1 + k + v, 1 + i)] if c else 0  # flow on entry -> value = reverse residual
            vals.extend([v] * used)
        out.append(vals)
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


class _Bucket:
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


class MDistinct(PublisherBase):
    """m-Distinct re-publication (Li & Zhou, Algorithm 1).

    Parameters
    ----------
    m : int >= 2
    star : bool, default False
        m-Distinct* (section IV.B, V.D): the values of a record's first QI-group have pairwise disjoint
        candidate update sets; needs transitive candidate update sets that partition the domain.
    uid : bool, default True
        Publish the ``uid`` column (stable record pseudonyms; fresh ones for counterfeits).
    transitions : mapping, optional
        The public update model (the scenario's ``transitions`` when not given).
    intersect_limit : int >= 0, default 150
        Intersection buckets are built among at most this many (the smallest) buckets.
    """

    name = "m_distinct"
    params = {"m": Interval(int, 2, None), "star": Boolean(), "uid": Boolean(), "transitions": Anything(),
              "intersect_limit": Interval(int, 0, None)}
    required = ("m",)
    defaults = {"star": False, "uid": True, "intersect_limit": 150}
    guarantee = "m_distinct"
    uses_transitions = True

    def check_config(self, file, key):
        if "transitions" in self.config:
            self.config["transitions"] = load_transitions(self.config["transitions"], None, source=file,
                                                          key=f"{key}.transitions" if key else "transitions")

    def bind_transitions(self, model: TransitionModel | None) -> None:
        """Use the scenario's public update model unless the publisher was given its own."""
        if self.config.get("transitions") is None and model is not None:
            self.config["transitions"] = model

    @property
    def model(self) -> TransitionModel:
        model = self.config.get("transitions")
        if model is None:
            raise InputError(f"{self.name} needs the public update model: give 'transitions'")
        return model

    # ------------------------------------------------------------------ publish
    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = self.published_attributes(snapshot, attributes, need_sensitive=True)
        model = self.model
        m = int(self.config["m"])
        star = bool(self.config["star"])
        state = dict(state or {})
        V = len(model)
        names = np.asarray(model.values, dtype=object)
        vals = model.indices(list(snapshot.sensitive))
        if (vals < 0).any():
            bad = snapshot.sensitive[int(np.flatnonzero(vals < 0)[0])]
            raise InputError(f"sensitive value '{bad}' is not in the transition model")
        adj = model.adjacency
        cus = [sum(1 << int(b) for b in np.flatnonzero(adj[a])) for a in range(V)]
        if star:
            classes = self._classes(cus)
        quasi = [n for n in attributes if schema[n].is_quasi]
        attrs = [schema[n] for n in quasi]
        codes = snapshot.qi_codes[:, [list(schema.quasi).index(n) for n in quasi]].astype(np.int64)
        q = codes.shape[1]
        spans = np.array([max(a.hierarchy.n_leaves, 1) for a in attrs], dtype=np.float64)
        inv_spans = [1.0 / x for x in spans]
        points = codes.tolist()
        uss_state: dict[str, list[int]] = state.get("uss", {})
        ids = [str(i) for i in snapshot.ids]

        # ---- phase 1: buckets (Algorithm 2)
        own: dict[int, tuple] = {}
        base: dict[tuple, _Bucket] = {}
        new_rows: list[int] = []
        illegal = 0
        masks: dict[tuple, tuple] = {}

        def allowed_of(key: tuple) -> tuple:
            if key not in masks:
                masks[key] = allowed_masks(key)
            return masks[key]

        for r, pid in enumerate(ids):
            uss = uss_state.get(pid)
            if uss is None:
                new_rows.append(r)
                continue
            key = tuple(sorted(int(x) for x in uss))
            if not any(e >> int(vals[r]) & 1 for e in allowed_of(key)):
                illegal += 1
                new_rows.append(r)
                continue
            own[r] = key
            if key not in base:
                base[key] = _Bucket(key, q, (key,), allowed_of(key))
        buckets: dict[tuple, _Bucket] = dict(base)
        derived: dict[tuple, list[tuple]] = {k: [k] for k in base}
        keys = sorted(base, key=lambda k: (len(k), k))
        limit = int(self.config["intersect_limit"])
        if len(keys) > limit:
            size: dict[tuple, int] = {}
            for k in own.values():
                size[k] = size.get(k, 0) + 1
            keys = sorted(keys, key=lambda k: (size.get(k, 0), len(k), k))[:limit]
        by_len: dict[int, list[tuple]] = {}
        for k in keys:
            by_len.setdefault(len(k), []).append(k)
        for n_e, group in by_len.items():
            for a_i in range(len(group)):
                for b_i in range(a_i + 1, len(group)):
                    A, B = group[a_i], group[b_i]
                    plan = _intersection_plan(A, B)
                    if plan is None:
                        continue
                    nk = tuple(sorted(plan))
                    if not any(allowed_of(nk)):  # no legal QI-group can be cut from it (e.g. {a}, {a})
                        continue
                    if nk in buckets:
                        for k in (A, B):
                            if nk not in derived[k]:
                                derived[k].append(nk)
                        continue
                    buckets[nk] = _Bucket(nk, q, (A, B), allowed_of(nk))
                    derived[A].append(nk)
                    derived[B].append(nk)

        # ---- phase 2: assignment (Algorithm 3), old records by increasing CNT_buc
        def fits(b: _Bucket, v: int) -> bool:
            return any(a >> v & 1 for a in b.allowed)

        cnt = {r: [k for k in derived[own[r]] if fits(buckets[k], int(vals[r]))] for r in own}
        order = sorted(own, key=lambda r: (len(cnt[r]), r))
        for r in order:
            v = int(vals[r])
            point = points[r]
            best = None  # (score, key, entry)
            for rank, k in enumerate(cnt[r]):
                b = buckets[k]
                d = b.delta()
                lam = b.lam(point, inv_spans)
                fv = b.freq.get(v, 0)
                bucket_best = None
                for ei, a in enumerate(b.allowed):
                    if not (a >> v & 1):
                        continue
                    eps = -1 if (fv == d or len(b.rows[ei]) == d) else 1
                    score = (1.0 / lam) if eps == 1 else -lam
                    if bucket_best is None or score > bucket_best[0] + 1e-12 or (
                            abs(score - bucket_best[0]) <= 1e-12 and len(b.rows[ei]) < len(b.rows[bucket_best[1]])):
                        bucket_best = (score, ei)
                if bucket_best is not None and (best is None or bucket_best[0] > best[0] + 1e-12):
                    best = (bucket_best[0], k, bucket_best[1])
            _, k, ei = best
            buckets[k].add(ei, r, v, point, inv_spans)

        # new records fill gaps only (epsilon = 1), best lambda first
        live = [b for b in buckets.values() if b.n]
        slots: dict[int, list[tuple[_Bucket, int]]] = {}
        for b in live:  # only entries with a gap can take a new record with epsilon = 1
            for ei, a in enumerate(b.allowed):
                if len(b.rows[ei]) < b.d:
                    for v in _bits(a):
                        if b.freq.get(v, 0) < b.d:
                            slots.setdefault(v, []).append((b, ei))
        leftover: list[int] = []
        for r in (rng.permutation(np.asarray(new_rows, dtype=np.int64)) if new_rows else []):
            r = int(r)
            v = int(vals[r])
            best = None
            cand = slots.get(v, [])
            alive = []
            for b, ei in cand:
                d = b.d
                if len(b.rows[ei]) >= d or b.freq.get(v, 0) >= d:
                    continue
                alive.append((b, ei))
                lam = b.lam(points[r], inv_spans)
                if best is None or lam < best[0] - 1e-12:
                    best = (lam, b, ei)
            if len(alive) < len(cand):
                slots[v] = alive
            if best is None:
                leftover.append(r)
            else:
                best[1].add(best[2], r, v, points[r], inv_spans)

        # balancing: counterfeits fill every entry to delta, their values (each in its entry's CUS) chosen by a
        # max-flow so that no value exceeds delta; delta grows only when no such choice exists (every row is on
        # an allowed edge, so one exists once delta >= the bucket's row count)
        groups: list[GroupSpec] = []
        fake_value: dict[int, int] = {}
        next_fake = -1
        used_buckets = [b for b in buckets.values() if b.n]
        for b in used_buckets:
            d = b.delta()
            while True:
                fill = counterfeit_values(b.entries, [d - len(lst) for lst in b.rows], b.freq, d, V)
                if fill is not None:
                    break
                if d > b.n + len(b.entries):
                    raise AssertionError("m_distinct: a bucket cannot be balanced")  # excluded by allowed_masks
                d += 1
            entries = []
            for lst, fv in zip(b.rows, fill):
                lst = list(lst)
                for v in fv:
                    lst.append(next_fake)
                    fake_value[next_fake] = int(v)
                    next_fake -= 1
                entries.append(lst)

            def valid(child, _vals=vals):
                per = len(child[0])
                freq: dict[int, int] = {}
                for e in child:
                    for x in e:
                        v = int(_vals[x]) if x >= 0 else fake_value[x]
                        freq[v] = freq.get(v, 0) + 1
                return max(freq.values(), default=0) <= per

            # ---- phase 4: split (eq. 4), then one row per entry with distinct values
            for leaf in balanced_split(entries, codes, None, spans, valid=valid):
                groups.extend(self._leaf_groups(leaf, vals, fake_value))

        # ---- phase 3: new records without a suitable bucket
        rest = np.sort(np.asarray(leftover, dtype=np.int64))
        if star:
            key = np.asarray([classes[int(v)] for v in vals[rest]], dtype=np.int64)
            members: dict[int, list[int]] = {}
            for v in range(V):
                members.setdefault(classes[v], []).append(v)
            groups.extend(new_record_groups(codes, attrs, rest, vals[rest], V, m, rng, key=key, key_values=members))
        else:
            groups.extend(new_record_groups(codes, attrs, rest, vals[rest], V, m, rng))

        # ---- phase 5: generalization, counterfeit statistics
        pseudo = Pseudonyms(state) if self.config["uid"] else None
        release, truth, cf = publish_groups(snapshot, attributes, groups, names, rng, pseudo)
        gvals: dict[int, list[int]] = {}
        for g, v in zip(release.group, model.indices(list(release.sensitive))):
            gvals.setdefault(int(g), []).append(int(v))
        new_uss = {}
        for g, p in zip(release.group, truth.person):
            if p is not None:
                new_uss[p] = sorted(cus[v] for v in gvals[int(g)])
        n_groups = int(release.n_classes)
        stats = {"counterfeits": int(sum(cf.values())), "groups": n_groups,
                 "counterfeits_per_group": (float(sum(cf.values())) / n_groups) if n_groups else 0.0,
                 "buckets": len(used_buckets), "illegal": illegal, "new_records_grouped": int(len(rest))}
        new_state = {"releases": int(state.get("releases", 0)) + 1, "values": list(model.values), "uss": new_uss,
                     "stats": stats, "counterfeits": {str(k): int(v) for k, v in sorted(cf.items())}}
        if pseudo is not None:
            new_state.update(pseudo.state())
        return PublishResult(release=release, truth=truth, state=new_state, counterfeit_rows=int(sum(cf.values())))

    # ------------------------------------------------------------------ helpers
    def _classes(self, cus: list[int]) -> list[int]:
        """m-Distinct*: the class of each value when the CUS partition the domain (equal or disjoint)."""
        distinct = sorted(set(cus))
        for a in distinct:
            for b in distinct:
                if a != b and a & b:
                    raise InputError(f"{self.name} with star needs candidate update sets that are equal or disjoint "
                                     f"(transitive, e.g. transitions: {{diameter: d, shape: blocks}})")
        index = {c: i for i, c in enumerate(distinct)}
        return [index[c] for c in cus]

    @staticmethod
    def _leaf_groups(leaf: list[list[int]], vals: np.ndarray, fake_value: dict) -> list[GroupSpec]:
        """Cut a bucket that no valid split divides into ``delta`` QI-groups, one row per entry, distinct values:
        the colour classes of a proper ``delta``-edge-colouring of the bipartite multigraph entries x values
        (real rows and counterfeits, whose values were chosen in the entry's CUS when balancing).  Every entry has
        ``delta`` rows and no value more than ``delta`` (the split's validity), so by König's theorem every colour
        class holds exactly one row of every entry."""
        delta = len(leaf[0])
        edges, rows = [], []
        for ei, e in enumerate(leaf):
            for r in e:
                edges.append((ei, int(vals[r]) if r >= 0 else int(fake_value[r])))
                rows.append(r)
        colours = edge_colouring(edges, delta) if edges else []
        groups: list[list[tuple[int, int]]] = [[] for _ in range(delta)]
        for (ei, v), r, c in zip(edges, rows, colours):
            groups[c].append((r if r >= 0 else -1, v))
        return groups


def _intersection_plan(a: tuple, b: tuple) -> list[int] | None:
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


class MDistinctStar(MDistinct):
    """m-Distinct* (section IV.B): :class:`MDistinct` with ``star: true``."""

    name = "m_distinct_star"
    defaults = {"star": True, "uid": True, "intersect_limit": 150}
