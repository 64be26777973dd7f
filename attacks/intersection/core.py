"""The record-tracking engine of the intersection and difference attacks (Barbosa, Pinto, Gomes, CIKM 2012,
section 4; ``003_9c5f9a30c53bd642.txt``), over every release at once.  :mod:`attacks.intersection.attack` is the
attack built on it; the adversary's inference it computes is defined there.

* :func:`tracked` puts the releases in uid space (``cls[i, u]``: the class of uid ``u`` in release ``i``,
  ``-1`` when absent);
* :func:`signature_blocks` groups uids by their *signature*, the row ``cls[:, u]`` (presence pattern and class
  in every release): the exact candidate sets;
* :func:`judge_blocks` judges every block on the sensitive values of every release its uids are published in;
* :func:`intersection_only_fails` judges, for many uids at once, the candidate set an adversary who ignores
  absences builds (``n E_i(t)`` over the releases ``t`` is published in);
* :func:`minimal_releases` finds, for one uid, an inclusion-minimal set of releases whose combination already
  breaks the principle (the witness);
* :func:`tracked_candidate_sets` keeps the paper's two-release sets (``E_a(t) n E_b(t)``, ``E_b(t) - R_a``)
  for callers of the former pairwise attack.

Linking columns (:mod:`multirelease.model.linking`).  A uid's row carries a linked value (sensitive value and
persistent linking tuple); an individual's linking tuple is one for the whole sequence, so the uid of an
individual shows one tuple in every release it is published in.  A uid whose tuple changes is nobody's record
(a counterfeit the linking columns give away): :func:`tracked` sets it aside before any candidate set is built
(``Tracked.set_aside``), and the candidate sets are those of section 4 over the remaining uids.  Nothing else
changes with record tracking: the uid already links the releases, a target's own tuple is unknown to the
adversary, and the principle is judged on the sensitive values (``sens``); the linked values (``linked``) label
the witnesses.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.linking import SEPARATOR
from multirelease.model.principles import Principle
from multirelease.model.release import Release
from multirelease.model.sequence import SequenceView

__all__ = ["Tracked", "tracked", "judge", "signature_blocks", "judge_blocks", "intersection_only_fails",
           "minimal_releases", "tracked_candidate_sets"]


@dataclass
class Tracked:
    """The releases in uid space: ``cls[i, u]`` is the class of uid ``u`` in release ``i`` (-1 when absent),
    ``sens[i, u]`` its sensitive value code there (-1 when absent)."""

    uids: np.ndarray
    cls: np.ndarray
    sens: np.ndarray
    values: np.ndarray
    group_ids: list  # per release: published group id of each class
    #: with persistent linking columns: the linking columns, the linked value code of every (release, uid)
    #: (-1 when absent) over ``linked_values``, and the uids set aside (tuple changing between releases)
    linking: tuple = ()
    linked: np.ndarray | None = None
    linked_values: np.ndarray | None = None
    set_aside: tuple = ()
    _index: dict = field(default_factory=dict, repr=False)  # release -> (uids by class, class starts), lazily

    def class_index(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(order, starts)``: the uids of release ``i`` sorted by class (absent first, ascending within a
        class), class ``c`` at ``order[starts[c]:starts[c + 1]]``; one stable sort per release, on first use."""
        if i not in self._index:
            order = np.argsort(self.cls[i], kind="stable")
            self._index[i] = order, np.searchsorted(self.cls[i, order], np.arange(len(self.group_ids[i]) + 1))
        return self._index[i]

    def members(self, i: int, c: int) -> np.ndarray:
        """uid indices of class ``c`` of release ``i`` (ascending)."""
        order, starts = self.class_index(i)
        return order[starts[c]:starts[c + 1]]


def tracked(releases: tuple[Release, ...], linking=None) -> Tracked:
    """The releases in uid space; a uid published twice in one release is bad input.  ``linking``: the
    sequence's :class:`~multirelease.model.linking.Linking`; with columns, the linked values are kept and the uids
    whose linking tuple changes between releases are set aside (module docstring)."""
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
    tr = Tracked(uids=np.asarray(uniq, dtype=object), cls=cls, sens=sens, values=np.asarray(vuniq, dtype=object),
                 group_ids=group_ids)
    if linking:
        tr = _with_linking(tr, releases, codes, linking)
    return tr


def _with_linking(tr: Tracked, releases, codes: np.ndarray, linking) -> Tracked:
    """``tr`` with its linked values, the uids whose linking tuple changes set aside (one individual, one tuple:
    such a uid is nobody's record)."""
    lv = np.concatenate([np.asarray(linking.values(r), dtype=object) for r in releases])
    lcodes, luniq = pd.factorize(pd.Series(lv, dtype=object).astype(str), sort=True)
    tup = pd.factorize(pd.Series([str(v).split(SEPARATOR, 1)[1] for v in luniq], dtype=object))[0]
    n_rel, n_u = tr.cls.shape
    linked = np.full((n_rel, n_u), -1, dtype=np.int64)
    off = 0
    for i, r in enumerate(releases):
        linked[i, codes[off:off + len(r)]] = lcodes[off:off + len(r)]
        off += len(r)
    t = np.where(linked >= 0, tup[np.maximum(linked, 0)], -1)
    hi = t.max(axis=0)
    lo = np.where(t >= 0, t, np.iinfo(np.int64).max).min(axis=0)
    keep = np.flatnonzero(lo == hi)
    return Tracked(uids=tr.uids[keep], cls=tr.cls[:, keep], sens=tr.sens[:, keep], values=tr.values,
                   group_ids=tr.group_ids, linking=tuple(linking.columns), linked=linked[:, keep],
                   linked_values=np.asarray(luniq, dtype=object),
                   set_aside=tuple(str(x) for x in tr.uids[np.flatnonzero(lo != hi)]))


def judge(key: np.ndarray, vals: np.ndarray, n_values: int, principle: Principle
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Judge the candidate sets ``{members with equal key}`` on the values ``vals`` of their members.

    Returns ``(group_key, size, distinct, ok)`` per distinct key, keys ascending.  One sort for k-anonymity
    and distinct l-diversity; a dense ``(groups, values)`` count matrix for any other principle.
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


# ---------------------------------------------------------------------- all releases at once
def signature_blocks(tr: Tracked) -> tuple[np.ndarray, np.ndarray]:
    """``(block, rep)``: ``block[u]`` numbers the distinct signatures ``cls[:, u]`` (0..B-1, in order of first
    uid), ``rep[b]`` is the first uid (by index) of block ``b``.  The signature is refined one release at a
    time: ``R`` hash factorizations of ``n`` integer keys (each below ``n (n + 1)``)."""
    n_rel, n_u = tr.cls.shape
    block = np.zeros(n_u, dtype=np.int64)
    for i in range(n_rel):
        width = len(tr.group_ids[i]) + 1
        block = pd.factorize(block * width + (tr.cls[i] + 1))[0].astype(np.int64)
    _, rep = np.unique(block, return_index=True)
    return block, rep.astype(np.int64)


@dataclass
class BlockVerdicts:
    """Per signature block: ``size``; ``distinct`` (fewest distinct sensitive values over the releases its
    uids are published in); ``ok`` (the principle holds in every one of them)."""

    size: np.ndarray
    distinct: np.ndarray
    ok: np.ndarray


def judge_blocks(tr: Tracked, block: np.ndarray, n_blocks: int, principle: Principle, progress=None
                 ) -> BlockVerdicts:
    """Judge every block on every release: the members of a block are published in exactly the same releases,
    so per release the published uids are grouped by block and judged once (``R`` sorts of ``n`` keys)."""
    n_rel = tr.cls.shape[0]
    size = np.bincount(block, minlength=n_blocks).astype(np.int64)
    distinct = np.full(n_blocks, np.iinfo(np.int64).max, dtype=np.int64)
    ok = np.ones(n_blocks, dtype=bool)
    nv = len(tr.values)
    for i in range(n_rel):
        if progress is not None:
            progress(i, n_rel, f"release {i + 1}")
        present = np.flatnonzero(tr.cls[i] >= 0)
        gk, _, dist, good = judge(block[present], tr.sens[i, present], nv, principle)
        np.minimum.at(distinct, gk, dist)
        ok[gk] &= good
    distinct[distinct == np.iinfo(np.int64).max] = 0  # a uid published nowhere (cannot happen with uids)
    return BlockVerdicts(size=size, distinct=distinct, ok=ok)


def _universe(tr: Tracked, u: int) -> np.ndarray:
    """Every uid sharing a class with ``u`` in some release ``u`` is published in: any candidate set built from
    a set of releases holding at least one of those lies inside it."""
    present = np.flatnonzero(tr.cls[:, u] >= 0)
    return np.unique(np.concatenate([tr.members(i, tr.cls[i, u]) for i in present.tolist()]))


def _fails(tr: Tracked, u: int, cols: np.ndarray, agree: np.ndarray, rels: np.ndarray, principle: Principle
           ) -> tuple[bool, np.ndarray, int]:
    """Does the candidate set of ``u`` built from releases ``rels`` break the principle?  Returns ``(fails,
    members, judged)``: ``judged`` is the release (of ``rels``, ``u`` published) whose values break it with the
    fewest distinct values, else -1.  ``agree[i, j]``: ``cols[j]`` looks like ``u`` in release ``i``."""
    on = rels[tr.cls[rels, u] >= 0]
    if not len(on):
        return False, np.zeros(0, dtype=np.int64), -1
    members = cols[agree[rels].all(axis=0)]
    nv = max(len(tr.values), 1)
    counts = np.zeros((len(on), nv), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(len(on)), len(members)), tr.sens[np.ix_(on, members)].ravel()), 1)
    bad = np.flatnonzero(~principle.classes_ok(counts))
    if not len(bad):
        return False, members, -1
    judged = int(on[bad[np.argmin(np.count_nonzero(counts[bad], axis=1))]])  # the first of the fewest
    return True, members, judged


def intersection_only_fails(tr: Tracked, reps: np.ndarray, principle: Principle) -> np.ndarray:
    """For each uid of ``reps``: does ``n E_i(u)`` over the releases ``u`` is published in (absences not used)
    break the principle?  All at once: each uid is paired with the members of its smallest class (the set
    lies inside it), the pairs that differ from it in a release it is published in are dropped (one pass per
    release), and the rest are judged per release like the blocks."""
    n_rel = tr.cls.shape[0]
    n_b = len(reps)
    out = np.zeros(n_b, dtype=bool)
    if not n_b:
        return out
    sub = tr.cls[:, reps]
    big = np.iinfo(np.int64).max
    csize = np.full((n_rel, n_b), big, dtype=np.int64)
    for i in range(n_rel):
        on = sub[i] >= 0
        sizes = np.bincount(tr.cls[i][tr.cls[i] >= 0], minlength=len(tr.group_ids[i]))
        csize[i, on] = sizes[sub[i, on]]
    anchor = np.argmin(csize, axis=0)
    pb, pv = [], []
    for i in np.unique(anchor).tolist():
        bs = np.flatnonzero(anchor == i)
        order, starts = tr.class_index(i)
        lo, n = starts[sub[i, bs]], csize[i, bs]
        pb.append(np.repeat(bs, n))
        pv.append(order[np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))])
    # int32 gathers (classes and uids fit): half the memory traffic of the filter
    pb, pv = np.concatenate(pb).astype(np.int32), np.concatenate(pv).astype(np.int32)
    cls32, sub32 = tr.cls.astype(np.int32), sub.astype(np.int32)
    for i in np.argsort(-(csize < big).sum(axis=1), kind="stable").tolist():  # busiest releases first
        ci = sub32[i].take(pb)
        keep = (ci < 0) | (cls32[i].take(pv) == ci)
        pb, pv = pb[keep], pv[keep]
    pb = pb.astype(np.int64)
    nv = len(tr.values)
    for i in range(n_rel):
        sel = sub[i, pb] >= 0
        gk, _, _, ok = judge(pb[sel], tr.sens[i, pv[sel]], nv, principle)
        out[gk[~ok]] = True
    return out


def minimal_releases(tr: Tracked, u: int, principle: Principle, among=None) -> tuple[list[int], np.ndarray, int]:
    """An inclusion-minimal set of releases (from 0) whose combined candidate set of ``u`` breaks the principle
    (no release of it can be dropped), with that set and the release judged; ``u`` must be a violation (its
    all-release set breaks it).  ``among``: the releases to start from (default all; those ``u`` is published
    in for an intersection violation).  Greedy deletion from the start set, releases that exclude the fewest
    uids of :func:`_universe` tried first, repeated to a fixpoint (one pass suffices for a monotone principle:
    dropping a release only grows the set and judges fewer releases).  The fewest releases is not searched
    for."""
    n_rel = tr.cls.shape[0]
    cols = _universe(tr, u)
    agree = tr.cls[:, cols] == tr.cls[:, [u]]
    keep = np.zeros(n_rel, dtype=bool)
    keep[np.arange(n_rel) if among is None else np.asarray(among, dtype=np.int64)] = True
    bad, members, judged = _fails(tr, u, cols, agree, np.flatnonzero(keep), principle)
    if not bad:
        raise ValueError(f"uid index {u} is not a violation")
    order = np.lexsort((np.arange(n_rel), (~agree).sum(axis=1)))
    changed = True
    while changed:
        changed = False
        for i in order.tolist():
            if not keep[i]:
                continue
            keep[i] = False
            bad, m, j = _fails(tr, u, cols, agree, np.flatnonzero(keep), principle)
            if bad:
                members, judged, changed = m, j, True
            else:
                keep[i] = True
        if principle.monotone:
            break
    return np.flatnonzero(keep).tolist(), members, judged


# ---------------------------------------------------------------------- the paper's two-release sets
def tracked_candidate_sets(view: SequenceView, principle: Principle):
    """``(tracked, pairs)``: the releases in uid space and a generator of ``(kind, a, b, key_of_member,
    members, gkey, size, distinct, ok)`` for every release pair (``a`` and ``b`` from 0): the two-release sets
    of section 4, kept for callers of the former pairwise attack (each contains the all-release set).

    ``kind`` is ``"intersection"`` (``a < b``; keys ``cls_a * n_b + cls_b``, judged on the values of ``a`` and
    of ``b``: ``ok`` is their conjunction) or ``"difference"`` (``a != b``: members of ``b`` absent from ``a``,
    keyed by their class in ``b``).  ``members`` are uid indices of :func:`tracked`.
    """
    tr = tracked(view.releases, view.linking)
    return tr, _pairs(tr, principle)


def _pairs(tr: Tracked, principle: Principle):
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
                    gk, size, dist_a, ok_a = judge(key, tr.sens[a, both], nv, principle)
                    _, _, dist_b, ok_b = judge(key, tr.sens[b, both], nv, principle)
                    yield ("intersection", a, b, key, both, gk, size, np.minimum(dist_a, dist_b), ok_a & ok_b)
            only_b = np.flatnonzero(present[b] & ~present[a])
            if len(only_b):
                key = tr.cls[b, only_b]
                gk, size, distinct, ok = judge(key, tr.sens[b, only_b], nv, principle)
                yield ("difference", a, b, key, only_b, gk, size, distinct, ok)
