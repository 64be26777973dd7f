"""Intersection and difference attacks on successive releases (Barbosa, Pinto, Gomes, CIKM 2012, section 4;
``003_9c5f9a30c53bd642.txt``).

The adversary of section 4 ("Attacker model") sees every release, knows who is present in each release and
tracks records across releases by a stable ``uid`` (record tracking).  For every target and every pair of
releases she computes a *candidate set* of records guaranteed to contain the target; if a candidate set fails
the protection principle (Definition 1: k-anonymity, distinct l-diversity, or any other
:class:`~multirelease.principles.Principle`), the attack succeeds on that target.

With record tracking (every release has a ``uid`` column), for releases ``a != b`` and a target ``t`` published
in ``b`` in class ``E_b(t)``:

* **intersection attack** (``t`` in both releases): ``C = E_a(t) n E_b(t)``, judged with the sensitive values
  of release ``a`` and of release ``b`` (both are published);
* **difference attack** (``t`` in ``b`` but not in ``a``; the paper's ``E2 - E1`` for an insertion and
  ``E1 - E2`` for a deletion): ``C = E_b(t) - R_a``.  The paper writes ``E_b(t) - E_a(t*)``, with ``E_a(t*)``
  the class of ``a`` that would hold ``t``; an adversary who knows ``t`` is absent from ``a`` may remove every
  uid published in ``a``, so this set is a subset of the paper's and, the principle being monotone
  (Definition 3), every violation of the paper's set is found too.

Presence is what the releases show: a record is in release ``i`` when its uid is published there (a record
the publisher suppressed is not in the release).  Counterfeit rows carry uids like real ones and count as
records (the adversary cannot tell them apart).

Without uids, the *insertion-only* difference attack of section 4 ("If the attacker did not know the unique
identifier..."): for releases ``a < b``, a class ``E1`` of ``a`` and the classes ``L`` of ``b`` whose regions
overlap ``E1``'s, a target inserted between ``a`` and ``b`` whose quasi-identifiers fall in ``E1`` and in
``E2 in L`` has the candidate set ``C = (L - E1) n E2``, computed on multisets of sensitive values (insertions
only, persistent values: ``Id(E1)`` is contained in ``Id(L)``).  Where ``L`` holds fewer copies of a value
than ``E1`` (a deletion happened), the assumption fails and the pair is skipped (listed in ``notes``).  With
the population of both releases (``view.population``), the targets are the individuals inserted between them
whose QI points fall in ``E1`` and ``E2``; otherwise each position ``(E1, E2)`` counts as one target.

Cost with uids: ``O(R^2 n log n)`` numpy work for ``R`` releases of ``n`` tracked records (one sort per
release pair and kind); the 41 releases of 10,000 Adult records take a few seconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.params import Anything, Interval, Options
from multirelease.principles import Principle
from multirelease.release import Release, comparable
from multirelease.sequence import SequenceView

from .base import AttackBase, AttackResult, Progress

__all__ = ["Intersection", "tracked_candidate_sets"]


@dataclass
class _Tracked:
    """The releases in uid space: ``cls[i, u]`` is the class of uid ``u`` in release ``i`` (-1 when absent),
    ``sens[i, u]`` its sensitive value code there."""

    uids: np.ndarray
    cls: np.ndarray
    sens: np.ndarray
    values: np.ndarray
    group_ids: list  # per release: published group id of each class


def _tracked(releases: tuple[Release, ...]) -> _Tracked:
    all_uids = np.concatenate([np.asarray(r.uid, dtype=object) for r in releases])
    codes, uniq = pd.factorize(pd.Series(all_uids, dtype=object).astype(str))
    all_vals = np.concatenate([np.asarray(r.sensitive, dtype=object) for r in releases])
    vcodes, vuniq = pd.factorize(pd.Series(all_vals, dtype=object).astype(str), sort=True)
    n_u = len(uniq)
    cls = np.full((len(releases), n_u), -1, dtype=np.int64)
    sens = np.full((len(releases), n_u), -1, dtype=np.int64)
    off = 0
    group_ids = []
    for i, r in enumerate(releases):
        idx = codes[off:off + len(r)]
        if len(np.unique(idx)) != len(idx):
            dup = pd.Series(np.asarray(r.uid, dtype=object)).astype(str)
            first = dup[dup.duplicated()].iloc[0]
            raise InputError(f"uid '{first}' appears twice in release {i + 1}", key="column uid")
        cls[i, idx] = r.classes
        sens[i, idx] = vcodes[off:off + len(r)]
        off += len(r)
        if r.n_classes:
            _, first = np.unique(r.classes, return_index=True)
            gid = np.asarray(r.group)[first] if r.group is not None else np.arange(1, r.n_classes + 1)
        else:
            gid = np.zeros(0, dtype=np.int64)
        group_ids.append(np.asarray(gid, dtype=np.int64))
    return _Tracked(uids=np.asarray(uniq, dtype=object), cls=cls, sens=sens, values=np.asarray(vuniq, dtype=object),
                    group_ids=group_ids)


def _judge(key: np.ndarray, vals: np.ndarray, n_values: int, principle: Principle
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Judge the candidate sets ``{members with equal key}``.

    Returns ``(group_key, size, distinct, ok)`` per distinct key.  One sort for k-anonymity and distinct
    l-diversity; a dense ``(groups, values)`` count matrix for any other principle.
    """
    if not len(key):
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, np.zeros(0, dtype=bool)
    v = max(n_values, 1)
    s = np.sort(key * v + vals)
    g = s // v
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    np.not_equal(g[1:], g[:-1], out=new_group[1:])
    new_pair = np.empty(len(s), dtype=bool)
    new_pair[0] = True
    np.not_equal(s[1:], s[:-1], out=new_pair[1:])
    gid = np.cumsum(new_group) - 1
    size = np.bincount(gid)
    distinct = np.bincount(gid, weights=new_pair).astype(np.int64)
    gkey = g[new_group]
    if principle.alpha is None and (principle.l <= 1 or principle.l_kind == "distinct"):
        ok = size >= principle.k
        if principle.l > 1:
            ok &= distinct >= principle.l
    else:
        counts = np.zeros((len(gkey), v), dtype=np.int64)
        pair_g = gid[new_pair]
        pair_v = (s % v)[new_pair]
        pair_n = np.diff(np.r_[np.flatnonzero(new_pair), len(s)])
        counts[pair_g, pair_v] = pair_n
        ok = principle.classes_ok(counts)
    return gkey, size, distinct, ok


def tracked_candidate_sets(view: SequenceView, principle: Principle):
    """``(tracked, pairs)``: the releases in uid space and a generator of ``(kind, a, b, key_of_member, members,
    gkey, size, distinct, ok)`` for every release pair (``a`` and ``b`` from 0).

    ``kind`` is ``"intersection"`` (``a < b``; keys ``cls_a * n_b + cls_b``, judged on the values of ``a`` and
    of ``b``: ``ok`` is their conjunction) or ``"difference"`` (``a != b``: members of ``b`` absent from ``a``,
    keyed by their class in ``b``).  ``members`` are uid indices of :func:`_tracked`.
    """
    tr = _tracked(view.releases)
    return tr, _pairs(tr, principle)


def _pairs(tr: _Tracked, principle: Principle):
    n_rel = tr.cls.shape[0]
    nv = len(tr.values)
    present = tr.cls >= 0
    for a in range(n_rel):
        for b in range(n_rel):
            if a == b:
                continue
            if a < b:
                both = np.flatnonzero(present[a] & present[b])
                if len(both):
                    nb = int(tr.cls[b].max()) + 1
                    key = tr.cls[a, both] * nb + tr.cls[b, both]
                    va, vb = tr.sens[a, both], tr.sens[b, both]
                    gk, size, distinct, ok = _judge(key, vb, nv, principle)
                    if not np.array_equal(va, vb):
                        gk2, size2, distinct2, ok2 = _judge(key, va, nv, principle)
                        ok = ok & ok2
                        distinct = np.minimum(distinct, distinct2)
                    yield "intersection", a, b, key, both, gk, size, distinct, ok
            only = np.flatnonzero(present[b] & ~present[a])
            if len(only):
                key = tr.cls[b, only]
                gk, size, distinct, ok = _judge(key, tr.sens[b, only], nv, principle)
                yield "difference", a, b, key, only, gk, size, distinct, ok


class Intersection(AttackBase):
    """The intersection and difference attacks of Barbosa et al., section 4, on every pair of releases.

    Parameters
    ----------
    k : int in [1, inf), default 2 (1 when only ``l`` is given)
    l : number in [1, inf), default 1 (distinct l-diversity unless ``l_kind: entropy``)
    l_kind : "distinct" | "entropy"
    alpha : number in (0, 1], optional
        Together they define the protection principle a candidate set must satisfy
        (:class:`~multirelease.principles.Principle`, Definition 1 of the paper).
    principle : Principle, optional
        Any principle object instead (from Python; overrides ``k``, ``l``, ``l_kind``, ``alpha``).
    max_listed : int, default 100
        At most this many violating targets are listed in ``targets`` (the count is always exact).

    Notes
    -----
    ``summary``: ``violations`` (targets with a candidate set that breaks the principle),
    ``intersection_violations`` and ``difference_violations`` (targets broken by each kind), ``targets``
    (tracked records examined, or target positions without uids), ``pairs`` (release pairs examined),
    ``min_candidates`` (the smallest candidate set over all targets and pairs), ``min_l_distinct`` (its fewest
    distinct sensitive values).  ``targets`` lists each violating target once (its first violation in release
    pair order) with its candidate set as the witness; ``worst["violations"]`` is the most severe one (fewest
    distinct sensitive values, then fewest records).  Exact: the candidate sets are computed, not estimated.
    """

    name = "intersection"
    params = {
        "k": Interval(int, 1, None),
        "l": Interval(float, 1, None),
        "l_kind": Options(("distinct", "entropy")),
        "alpha": Interval(float, 0, 1, closed="right"),
        "principle": Anything(),
        "max_listed": Interval(int, 0, None),
    }
    defaults = {"l_kind": "distinct", "max_listed": 100}
    metrics = ("violations", "intersection_violations", "difference_violations", "targets", "pairs",
               "min_candidates", "min_l_distinct")

    def __init__(self, *, _file: str | None = None, _key: str | None = None, **params: Any):
        super().__init__(_file=_file, _key=_key, **params)
        p = self.config.get("principle")
        if p is not None and not isinstance(p, Principle):
            raise InputError(f"The 'principle' parameter of {self.name} must be a Principle. Got {p!r}.",
                             file=_file, key=f"{_key}.principle" if _key else "principle")

    @property
    def principle(self) -> Principle:
        c = self.config
        if c.get("principle") is not None:
            return c["principle"]
        k = c.get("k", 1 if ("l" in c or "alpha" in c) else 2)
        return Principle(k=int(k), l=float(c.get("l", 1.0)), l_kind=c["l_kind"], alpha=c.get("alpha"))

    def applies(self, view: SequenceView) -> bool:
        """True when there are two releases or more and every release carries uids."""
        return len(view.releases) >= 2 and all(r.uid is not None for r in view.releases)

    def default_requirements(self) -> list[str]:
        return ["intersection.violations == 0"]

    def run(self, view: SequenceView, progress: Progress | None = None) -> AttackResult:
        if not view.releases:
            raise InputError("the intersection attack needs at least one release")
        tracked = all(r.uid is not None for r in view.releases)
        if tracked:
            return self._run_tracked(view, progress)
        if any(r.uid is not None for r in view.releases):
            raise InputError("some releases carry uids and others do not: give uids in every release or none",
                             key="column uid")
        return self._run_untracked(view, progress)

    # ------------------------------------------------------------------ with record tracking
    def _run_tracked(self, view: SequenceView, progress: Progress | None) -> AttackResult:
        principle = self.principle
        tr, pairs = tracked_candidate_sets(view, principle)
        n_u = len(tr.uids)
        n_rel = len(view.releases)
        violated = np.zeros(n_u, dtype=bool)
        by_kind = {"intersection": np.zeros(n_u, dtype=bool), "difference": np.zeros(n_u, dtype=bool)}
        first: dict[int, tuple] = {}  # uid index -> (kind, a, b, key)
        worst = None  # (distinct, size, order, kind, a, b, key, uid index)
        min_size, min_distinct = None, None
        total = n_rel
        for kind, a, b, key, members, gk, size, distinct, ok in pairs:
            if progress is not None and b == n_rel - 1 and kind == "difference":
                progress(a + 1, total, f"release {a + 1}")
            if len(size):
                s0, d0 = int(size.min()), int(distinct.min())
                min_size = s0 if min_size is None else min(min_size, s0)
                min_distinct = d0 if min_distinct is None else min(min_distinct, d0)
            if ok.all():
                continue
            bad_keys = gk[~ok]
            hit = np.isin(key, bad_keys)
            hit_uids = members[hit]
            by_kind[kind][hit_uids] = True
            new = hit_uids[~violated[hit_uids]]
            if len(new):
                new_keys = key[hit][~violated[hit_uids]]
                for u, kk in zip(new.tolist(), new_keys.tolist()):
                    first[u] = (kind, a, b, kk)
                violated[new] = True
            bad = np.flatnonzero(~ok)
            j = bad[np.lexsort((size[bad], distinct[bad]))[0]]
            cand = (int(distinct[j]), int(size[j]))
            if worst is None or cand < worst[0]:
                u = int(members[np.flatnonzero(key == gk[j])[0]])
                worst = (cand, kind, a, b, int(gk[j]), u)
        if progress is not None:
            progress(total, total, "done")
        n_viol = int(violated.sum())
        order = np.flatnonzero(violated)
        targets = []
        cache: dict[tuple, dict] = {}
        for u in order[: self.config["max_listed"]].tolist():
            kind, a, b, kk = first[u]
            targets.append(self._witness(tr, u, kind, a, b, kk, cache))
        summary = {
            "violations": n_viol,
            "intersection_violations": int(by_kind["intersection"].sum()),
            "difference_violations": int(by_kind["difference"].sum()),
            "targets": n_u,
            "pairs": n_rel * (n_rel - 1) // 2,
            "min_candidates": int(min_size or 0),
            "min_l_distinct": int(min_distinct or 0),
        }
        notes = [f"principle: {principle.describe()}", "record tracking by uid; presence from the published uids"]
        if n_viol > len(targets):
            notes.append(f"{n_viol - len(targets)} more violating targets not listed (max_listed)")
        worst_doc: dict[str, Any] = {}
        if worst is not None:
            _, kind, a, b, kk, u = worst
            worst_doc["violations"] = self._witness(tr, u, kind, a, b, kk, cache)
        return AttackResult(attack=self.name, summary=summary, exact=True, worst=worst_doc, targets=tuple(targets),
                            notes=tuple(notes))

    def _witness(self, tr: _Tracked, u: int, kind: str, a: int, b: int, key: int, cache: dict) -> dict:
        """One target's violation: its uid, the attack, the releases (from 1), the classes and the candidate
        set (uids and sensitive-value counts)."""
        ck = (kind, a, b, key)
        if ck not in cache:
            if kind == "intersection":
                members = np.flatnonzero((tr.cls[a] == tr.cls[a, u]) & (tr.cls[b] == tr.cls[b, u]))
                rels = [a, b]
            else:
                members = np.flatnonzero((tr.cls[b] == tr.cls[b, u]) & (tr.cls[a] < 0))
                rels = [b]
            counts: dict[str, int] = {}
            for i in rels:
                vals, cnt = np.unique(tr.sens[i, members], return_counts=True)
                c = {str(tr.values[v]): int(n) for v, n in zip(vals, cnt)}
                counts = c if not counts or len(c) < len(counts) else counts
            cache[ck] = {
                "candidates": sorted(str(x) for x in tr.uids[members]),
                "size": int(len(members)),
                "sensitive": counts,
                "l_distinct": len(counts),
            }
        w = cache[ck]
        doc = {"uid": str(tr.uids[u]), "attack": kind, "releases": [a + 1, b + 1]}
        if kind == "intersection":
            doc["groups"] = [int(tr.group_ids[a][tr.cls[a, u]]), int(tr.group_ids[b][tr.cls[b, u]])]
        else:
            doc["absent_from"] = a + 1
            doc["group"] = int(tr.group_ids[b][tr.cls[b, u]])
        doc.update(w)
        return doc

    # ------------------------------------------------------------------ without uids (insertions only)
    def _run_untracked(self, view: SequenceView, progress: Progress | None) -> AttackResult:
        principle = self.principle
        rels = view.releases
        vals = np.concatenate([np.asarray(r.sensitive, dtype=object) for r in rels]).astype(str)
        vuniq = np.unique(vals)
        vindex = {v: i for i, v in enumerate(vuniq)}
        nv = len(vuniq)

        def class_counts(r: Release) -> np.ndarray:
            codes = np.array([vindex[str(x)] for x in r.sensitive], dtype=np.int64)
            out = np.zeros((r.n_classes, nv), dtype=np.int64)
            np.add.at(out, (r.classes, codes), 1)
            return out

        counts = [class_counts(r) for r in rels]
        regions = [r.class_regions for r in rels]
        targets: list[dict] = []
        notes: list[str] = [f"principle: {principle.describe()}",
                            "no uids: insertion-only difference attack on multisets of sensitive values"]
        violations = 0
        n_targets = 0
        n_pairs = 0
        min_size, min_distinct = None, None
        worst = None
        skipped = 0
        total = len(rels) * (len(rels) - 1) // 2
        for a in range(len(rels)):
            for b in range(a + 1, len(rels)):
                n_pairs += 1
                if progress is not None:
                    progress(n_pairs - 1, total, f"releases {a + 1} and {b + 1}")
                ra, rb = rels[a], rels[b]
                common = [n for n in ra.quasi if n in rb.quasi]
                ia = [ra.quasi.index(n) for n in common]
                ib = [rb.quasi.index(n) for n in common]
                lo_a, hi_a = regions[a]
                lo_b, hi_b = regions[b]
                overlap = comparable(lo_a[:, None, ia], hi_a[:, None, ia], lo_b[None, :, ib], hi_b[None, :, ib])
                pop_targets = self._inserted(view, a, b, common)
                for e1 in range(ra.n_classes):
                    lset = np.flatnonzero(overlap[e1])
                    if not len(lset):
                        continue
                    rest = counts[b][lset].sum(axis=0) - counts[a][e1]
                    if (rest < 0).any():
                        skipped += 1
                        continue
                    for e2 in lset:
                        c = np.minimum(rest, counts[b][e2])
                        size = int(c.sum())
                        if size == 0:
                            continue  # no record of E2 can be new: no target is inserted there
                        distinct = int(np.count_nonzero(c))
                        if pop_targets is not None:
                            pts = pop_targets
                            inside = np.all((lo_a[e1, ia] <= pts) & (pts <= hi_a[e1, ia]), axis=1) & \
                                np.all((lo_b[e2, ib] <= pts) & (pts <= hi_b[e2, ib]), axis=1)
                            weight = int(inside.sum())
                        else:
                            weight = 1
                        if weight == 0:
                            continue
                        n_targets += weight
                        min_size = size if min_size is None else min(min_size, size)
                        min_distinct = distinct if min_distinct is None else min(min_distinct, distinct)
                        if principle.ok(c):
                            continue
                        violations += weight
                        doc = {"attack": "difference (insertions only)", "releases": [a + 1, b + 1],
                               "groups": [self._gid(ra, e1), self._gid(rb, int(e2))], "targets": weight,
                               "size": size, "l_distinct": distinct,
                               "sensitive": {str(vuniq[v]): int(c[v]) for v in np.flatnonzero(c)}}
                        if len(targets) < self.config["max_listed"]:
                            targets.append(doc)
                        if worst is None or (distinct, size) < worst[0]:
                            worst = ((distinct, size), doc)
        if progress is not None:
            progress(total, total, "done")
        if skipped:
            notes.append(f"{skipped} class(es) skipped: the later release lost some of their values "
                         "(a deletion breaks the insertion-only assumption)")
        summary = {"violations": violations, "intersection_violations": 0, "difference_violations": violations,
                   "targets": n_targets, "pairs": n_pairs, "min_candidates": int(min_size or 0),
                   "min_l_distinct": int(min_distinct or 0)}
        worst_doc = {"violations": worst[1]} if worst is not None else {}
        return AttackResult(attack=self.name, summary=summary, exact=True, worst=worst_doc, targets=tuple(targets),
                            notes=tuple(notes))

    @staticmethod
    def _gid(r: Release, cls: int) -> int:
        if r.group is None:
            return cls + 1
        return int(r.group[int(np.flatnonzero(r.classes == cls)[0])])

    @staticmethod
    def _inserted(view: SequenceView, a: int, b: int, common: list[str]) -> np.ndarray | None:
        """QI codes (over ``common``) of the individuals of population ``b`` absent from population ``a``, or
        ``None`` when either population is unknown."""
        pops = view.population
        if len(pops) <= max(a, b) or pops[a] is None or pops[b] is None:
            return None
        pa, pb = pops[a], pops[b]
        new = ~pd.Index(pb.ids).isin(pd.Index(pa.ids))
        allq = list(pb.schema.quasi)
        return pb.qi_codes[new][:, [allq.index(n) for n in common]]
