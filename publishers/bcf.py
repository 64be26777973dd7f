"""The BCF-anonymizer: continuous publishing safe from correspondence attacks (Fung, Wang, Fu, Pei, EDBT 2008).

Paper: ../shared/papers/002_26e2f2912f1b36d2.txt.  The data holder published ``R1`` for ``D1`` and now
publishes ``R2`` for ``D1 ∪ D2``; a recipient who knows that every record of ``R1`` reappears in ``R2``
cross-examines the two.  The F-, C- and B-attacks (Definitions 3.1-3.6) exclude records that cannot be the
target's; BCF-anonymity asks ``FA, CA, BA >= k`` (section 3.2).  This module implements

* the closed forms of section 4 for cut generalizations: crack sizes ``|g1| - min(|g1|,|g2|)``
  (Theorem 4.2, F), ``|g2| - min(|g1|,|g2|)`` (Theorem 4.3, C), ``max(0, |G1| - (|G2| - |g2|))``
  (Theorem 4.4, B) and ``FA, CA, BA`` (Definitions 3.2, 3.4, 3.6): :func:`closed_form` (fast, by
  comparability components) and :func:`closed_form_pairs` (straight from the definitions, small inputs).  The
  crack sizes are those of :mod:`attacks.correspondence_closed` (one implementation of the theorems);
* the publisher ``bcf`` (Algorithm 1 with Procedures 2 and 3): top-down specialization of ``R2`` from the
  most general state (:class:`publishers.tds.CutSpecializer`), where a candidate is valid when the classes
  it creates keep ``FA, CA, BA >= k``; the first release of a chain is plain TDS k-anonymity.

Incremental FA / BA (section 5.2).  Both releases are cuts, so "comparable" (Definition 4.1) is an
equivalence between classes of ``R1`` and ``R2``: per attribute, take at every leaf the *more general* of
the two cut nodes above it (the upper envelope of the two cuts); ``qid1`` and ``qid2`` are comparable iff
they lie under the same envelope node for every attribute (Lemma 4.1, "3-hop transitivity", and Lemma 4.3
are this fact).  The envelope key of a class is therefore the GTree1 look-up of the paper (the root-to-leaf
path of GTree1 that the depth-first search with path pruning reaches), done as one hash probe.  With it:

* Procedure 2 (FA): for every new class ``qid_wi`` and every comparable ``qid1``,
  ``|qid1| - F(qid1, qid_wi) = sum_s min(|g1_s|, |g_wi,s|)`` (Lemma 4.4) must stay ``>= k``; since
  ``F(qid1)`` only grows under specialization (Theorem 5.1), only the new pairs are examined.  CA = FA on
  cuts (Theorem 4.5), so the same test certifies CA.
* Procedure 3 (BA): ``|G1(g_wi)|`` is the number of ``R1`` records of the component with the value,
  ``|G2(g_wi)|`` the number of ``R2`` records; when ``w`` is on or below ``Cut1_j`` (Case 2) the component
  and its totals are unchanged, when it is above (Case 1) the component splits by child value and only the
  new classes on ``Link[w_i]`` form it.  ``B(qid2)`` of the classes not specialized is unchanged.
* Anti-monotonicity (Theorem 5.1): an invalid candidate is removed for good; the most general ``R2`` is
  valid iff any is (Corollary 5.1), checked first.

Beyond two releases (section 7.1, "We extend the anonymization algorithm").  ``R_n`` is built assuming
``R_1..R_{n-1}`` are BCF-anonymous, against every attack that involves ``R_n``:

* F-attack on ``g_t`` (target at ``T_t``) with the optimal micro attack over the background releases
  ``R_{t+1}..R_n`` and the composition "B-attack(g_h, g_t) then F-attack(g'_t, g_n)" (Case 1): the crack
  of ``g_t`` is ``max(x_B, |g_t| - min_j |g_j|)``, so the target keeps ``sum_s min(|g_t,s| - x_B,s,
  min_{t<j<n} |g_j,s|, |g_n,s|)`` records.  The chain ``(qid_t..qid_{n-1})`` a target matches is a cell of
  the meet of the earlier cuts (a cut again), so each ``t`` gives one more "left" cut family whose cells
  carry the capacity ``cap_s = min(|g_t,s| - x_B,s, min_{t<j<n} |g_j,s|)``.
* C-attack on ``g_n`` (target at ``T_t``), optimal over backgrounds ``R_t..R_{n-1}`` and composed after a
  B-attack on ``g_t`` (Case 2): ``|qid_n| - C = sum_s min(|g_n,s|, cap_s)`` - the same number, so FA = CA
  holds for the extension too.
* B-attack on ``g_n``: the optimal micro attack over backgrounds ``R_1..R_{n-1}``, ``max_i`` of
  Theorem 4.4 on the pair ``(R_i, R_n)`` (compositions only ever start with a B-attack).
  ``x_B`` of every group of ``R_n`` is stored in the state for the releases after it.
The requirement stays anti-monotone, and the most general ``R_n`` passes whenever the chain did, by
induction (the cells' capacities are the sums the previous step already checked).

State (JSON): the chain's earlier releases as classes (one label per QI) and groups
``[class, sensitive value, count, x_B]``, and the ids with a CRC of every record of the last snapshot, to
check that ``D1 ⊆ D1 ∪ D2`` with unchanged values (the publishing model of section 1.1: events are never
deleted) - a violation is an :class:`InputError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from attacks.correspondence_closed import b_crack, c_crack, f_crack
from multirelease.errors import InputError
from multirelease.params import Interval
from multirelease.release import Release, comparable
from multirelease.table import Table

from .base import PublisherBase, PublishResult
from .tds import (CutSpace, CutSpecializer, KAnonymity, Specialization, cut_release, published_quasi,
                  sensitive_codes)

__all__ = ["BCFAnonymizer", "BCFConstraint", "CutFamily", "closed_form", "closed_form_pairs", "is_cut_release",
           "STATE_FORMAT"]

STATE_FORMAT = "bcf/1"


# ---------------------------------------------------------------------- closed forms on two releases
def is_cut_release(release: Release) -> bool:
    """Global recoding: for every QI, the published ranges are pairwise disjoint or equal (a cut)."""
    return _is_cut(release.lo, release.hi)


def _is_cut(lo: np.ndarray, hi: np.ndarray) -> bool:
    for j in range(lo.shape[1]):
        pairs = np.unique(np.column_stack([lo[:, j], hi[:, j]]), axis=0)
        if len(pairs) > 1 and np.any(pairs[1:, 0] <= pairs[:-1, 1]):
            return False
    return True


def _class_groups(release: Release, values: pd.Index) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, counts)``: each class's region and its ``(n_classes, S)`` sensitive-value counts."""
    lo, hi = release.class_regions
    s = values.get_indexer(pd.Series(release.sensitive, dtype=object))
    counts = np.zeros((release.n_classes, len(values)), dtype=np.int64)
    np.add.at(counts, (release.classes, s), 1)
    return lo.astype(np.int64), hi.astype(np.int64), counts


def _values(*releases: Release) -> pd.Index:
    vals = pd.Index(pd.unique(pd.Series(np.concatenate([r.sensitive for r in releases]), dtype=object)))
    return vals.sort_values()


def closed_form_pairs(r1: Release, r2: Release) -> dict[str, float]:
    """FA, CA, BA of two releases straight from Theorems 4.2-4.4 and Definitions 3.2-3.6 (small inputs).

    Comparability (Definition 4.1) is tested pair by pair on the regions; ``G2`` is built from its
    definition ("the records in ``R2`` comparable to some record in ``G1``").  Exact for cut
    generalizations (the theorems' assumption); ``O(|Q1| |Q2|^2 S)``.
    """
    values = _values(r1, r2)
    lo1, hi1, g1 = _class_groups(r1, values)
    lo2, hi2, g2 = _class_groups(r2, values)
    comp = comparable(lo1[:, None, :], hi1[:, None, :], lo2[None, :, :], hi2[None, :, :])  # (Q1, Q2)
    size1, size2 = g1.sum(1), g2.sum(1)
    fa = ca = ba = np.inf
    for a in range(len(g1)):
        bs = np.flatnonzero(comp[a])
        if len(bs):
            f = f_crack(g1[a][None, :], g2[bs]).sum(1)  # Theorem 4.2 (2)
            fa = min(fa, size1[a] - f.max())
    for b in range(len(g2)):
        as_ = np.flatnonzero(comp[:, b])
        if len(as_):
            c = c_crack(g1[as_], g2[b][None, :]).sum(1)  # Theorem 4.3 (2)
            ca = min(ca, size2[b] - c.max())
        crack = 0
        for s in np.flatnonzero(g2[b]):
            has = as_[g1[as_, s] > 0]
            G1 = int(g1[has, s].sum())
            if G1 == 0:
                continue
            reach = comp[has].any(axis=0)  # classes of R2 comparable to some record of G1
            G2 = int(g2[reach, s].sum())
            crack += int(b_crack(g2[b, s], G1, G2))  # Theorem 4.4 (1)-(2)
        ba = min(ba, size2[b] - crack)
    return {"FA": float(fa), "CA": float(ca), "BA": float(ba)}


def _envelope_keys(lo1, hi1, lo2, hi2, n_leaves: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Envelope keys (one int per class and attribute) of the classes of two cut generalizations: at every
    leaf the more general of the two cut nodes above it; comparable classes have equal keys (Lemma 4.1)."""
    q = lo1.shape[1]
    k1 = np.zeros(lo1.shape, dtype=np.int64)
    k2 = np.zeros(lo2.shape, dtype=np.int64)
    for j in range(q):
        L = int(n_leaves[j])
        hlo = np.full(L + 1, -1, dtype=np.int64)
        hhi = np.full(L + 1, -1, dtype=np.int64)
        for lo, hi in ((lo1[:, j], hi1[:, j]), (lo2[:, j], hi2[:, j])):
            pairs = np.unique(np.column_stack([lo, hi]), axis=0)
            for a, b in pairs:
                cur_lo, cur_hi = hlo[a], hhi[a]
                if cur_lo < 0 or (b - a) > (cur_hi - cur_lo):
                    hlo[a:b + 1] = a
                    hhi[a:b + 1] = b
        code = hlo * (L + 1) + hhi
        k1[:, j] = code[lo1[:, j]]
        k2[:, j] = code[lo2[:, j]]
    return k1, k2


def closed_form(r1: Release, r2: Release, *, details: bool = False) -> dict[str, Any]:
    """FA, CA, BA of two cut releases (Theorems 4.2-4.5), grouped by comparability components.

    Every pair of classes with the same envelope key is comparable and no other pair is; within a component
    ``|qid1| - F(qid1, qid2) = |qid2| - C(qid1, qid2) = sum_s min(|g1_s|, |g2_s|)`` (Lemma 4.4) and
    ``|G1(g2)|``, ``|G2(g2)|`` are the component's totals of the value (Lemma 4.3).  ``CA`` is the minimum
    over classes of ``R2`` comparable to some class of ``R1`` (a class of new records only has no C-attack
    target).  Cost: the number of comparable class pairs times their common values.

    Raises
    ------
    InputError
        When a release is not a cut generalization (the theorems do not apply).
    """
    for i, r in enumerate((r1, r2), 1):
        if not is_cut_release(r):
            raise InputError(f"release {i} is not a cut generalization: the closed forms of Fung et al. need cuts")
    if r1.quasi != r2.quasi:
        raise InputError("the two releases publish different quasi-identifiers")
    values = _values(r1, r2)
    lo1, hi1, g1 = _class_groups(r1, values)
    lo2, hi2, g2 = _class_groups(r2, values)
    k1, k2 = _envelope_keys(lo1, hi1, lo2, hi2, [a.domain_size for a in r1.qi_attributes])
    comp1 = _key_ids(k1, k2)
    c1, c2 = comp1
    size1, size2 = g1.sum(1), g2.sum(1)
    n_comp = int(max(c1.max(initial=-1), c2.max(initial=-1))) + 1
    N1 = np.zeros((n_comp, g1.shape[1]), dtype=np.int64)
    N2 = np.zeros_like(N1)
    np.add.at(N1, c1, g1)
    np.add.at(N2, c2, g2)
    fa_term = np.full(len(g1), np.inf)
    ca_term = np.full(len(g2), np.inf)
    worst = None
    for comp in range(n_comp):
        a = np.flatnonzero(c1 == comp)
        b = np.flatnonzero(c2 == comp)
        if not len(a) or not len(b):
            continue
        keep = np.minimum(g1[a][:, None, :], g2[b][None, :, :]).sum(-1)  # (|a|, |b|)
        fa_term[a] = np.minimum(fa_term[a], keep.min(1))
        ca_term[b] = np.minimum(ca_term[b], keep.min(0))
    crack = b_crack(g2, N1[c2], N2[c2])  # Theorem 4.4 with G1, G2 the component's totals (Lemma 4.3)
    ba_term = (size2 - crack.sum(1)).astype(np.float64)
    out: dict[str, Any] = {"FA": float(fa_term.min(initial=np.inf)), "CA": float(ca_term.min(initial=np.inf)),
                           "BA": float(ba_term.min(initial=np.inf))}
    if details:
        out.update(fa_term=fa_term, ca_term=ca_term, ba_term=ba_term, crack=crack, values=values)
        del worst
    return out


def _key_ids(*keys: np.ndarray) -> list[np.ndarray]:
    allk = np.vstack(keys) if len(keys) else np.zeros((0, 0))
    _, inv = np.unique(allk, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    out, start = [], 0
    for k in keys:
        out.append(inv[start:start + len(k)])
        start += len(k)
    return out


# ---------------------------------------------------------------------- the incremental constraint
@dataclass(eq=False)
class CutFamily:
    """A fixed cut-generalized family on the left of the correspondence: the classes of an earlier release
    (``weights`` = group counts, for the B-attack) or the chain cells of section 7.1 (``weights`` = the
    capacities ``cap_s``, for the F- and C-attacks).  ``lo``/``hi`` are leaf ranges ``(m, q)``."""

    lo: np.ndarray
    hi: np.ndarray
    weights: np.ndarray  # (m, S)
    label: str = ""


class _FamilyIndex:
    """The GTree1 of one left family against the ``R_n`` under construction: envelope keys per member and
    a hash from key to members (with the component totals of the weights)."""

    def __init__(self, fam: CutFamily, n_leaves: Sequence[int], roots: Sequence[tuple[int, int]]):
        self.fam = fam
        self.q = fam.lo.shape[1]
        self.L = [int(x) for x in n_leaves]
        # the family's own cut, per leaf (-1 where no member covers the leaf)
        self.flo, self.fhi = [], []
        for j in range(self.q):
            flo = np.full(self.L[j], -1, dtype=np.int64)
            fhi = np.full(self.L[j], -1, dtype=np.int64)
            for a, b in np.unique(np.column_stack([fam.lo[:, j], fam.hi[:, j]]), axis=0):
                flo[a:b + 1] = a
                fhi[a:b + 1] = b
            self.flo.append(flo)
            self.fhi.append(fhi)
        # envelope code per leaf: R_n starts at the roots, which cover everything
        self.H = [np.full(self.L[j], roots[j][0] * (self.L[j] + 1) + roots[j][1], dtype=np.int64)
                  for j in range(self.q)]
        self.keys = np.column_stack([self.H[j][fam.lo[:, j]] for j in range(self.q)]) if len(fam.lo) else \
            np.zeros((0, self.q), dtype=np.int64)
        self.index: dict[tuple, np.ndarray] = {}
        self._rebuild(np.arange(len(fam.lo)))
        self.totals: dict[tuple, np.ndarray] = {}

    def _rebuild(self, members: np.ndarray) -> None:
        if not len(members):
            return
        sub = self.keys[members]
        uniq, inv = np.unique(sub, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        order = np.argsort(inv, kind="stable")
        parts = np.split(members[order], np.cumsum(np.bincount(inv, minlength=len(uniq)))[:-1])
        for key, part in zip(map(tuple, uniq.tolist()), parts):
            old = self.index.get(key)
            self.index[key] = part if old is None else np.union1d(old, part)

    # -------------------------------------------------------------- a tentative step on attribute j
    def tentative(self, j: int, a: int, b: int, children: Sequence[tuple[int, int]]) -> "_Overlay":
        """The envelope after replacing ``R_n``'s node ``[a, b]`` of attribute ``j`` by ``children``."""
        L1 = self.L[j] + 1
        wcode = a * L1 + b
        flo, fhi = self.flo[j][a:b + 1], self.fhi[j][a:b + 1]
        above = (flo >= 0) & (flo <= a) & (fhi >= b)  # Case 2: w on or below the cut of the family
        newH = self.H[j].copy()
        if not above.all():  # Case 1: every leaf of w under the cut node of its child
            seg = np.empty(b - a + 1, dtype=np.int64)
            for clo, chi in children:
                seg[clo - a:chi - a + 1] = clo * L1 + chi
            newH[a:b + 1] = seg
        moved = np.zeros(0, dtype=np.int64)
        if not above.all():
            moved = np.flatnonzero((self.keys[:, j] == wcode))
        new_keys = self.keys[moved].copy()
        if len(moved):
            new_keys[:, j] = newH[self.fam.lo[moved, j]]
        return _Overlay(self, j, newH, moved, new_keys, wcode)


class _Overlay:
    """A family index as it would be after a tentative specialization (lookups only)."""

    def __init__(self, base: _FamilyIndex, j: int, newH: np.ndarray, moved: np.ndarray, new_keys: np.ndarray,
                 wcode: int):
        self.base, self.j, self.newH, self.moved, self.new_keys, self.wcode = base, j, newH, moved, new_keys, wcode
        self.changed = len(moved) > 0 or not np.array_equal(newH, base.H[j])
        self.over: dict[tuple, np.ndarray] = {}
        if len(moved):
            uniq, inv = np.unique(new_keys, axis=0, return_inverse=True)
            inv = inv.reshape(-1)
            for u, key in enumerate(map(tuple, uniq.tolist())):
                self.over[key] = moved[inv == u]

    def key_of(self, lo_row: np.ndarray) -> tuple:
        """The envelope key of a class of ``R_n`` whose nodes start at leaves ``lo_row``."""
        H = self.base.H
        return tuple(int(self.newH[x]) if jj == self.j else int(H[jj][x]) for jj, x in enumerate(lo_row))

    def members(self, key: tuple) -> np.ndarray:
        got = self.over.get(key)
        if got is not None:
            return got
        if key[self.j] == self.wcode and len(self.moved):
            return np.zeros(0, dtype=np.int64)  # the old component was split
        return self.base.index.get(key, np.zeros(0, dtype=np.int64))

    def total(self, key: tuple) -> np.ndarray:
        """Component totals of the family's weights (``N1`` of Procedure 3)."""
        base = self.base
        if key in self.over or (key[self.j] == self.wcode and len(self.moved)):
            mem = self.members(key)
            return base.fam.weights[mem].sum(0) if len(mem) else np.zeros(base.fam.weights.shape[1], np.int64)
        tot = base.totals.get(key)
        if tot is None:
            mem = base.index.get(key, np.zeros(0, dtype=np.int64))
            tot = base.fam.weights[mem].sum(0) if len(mem) else np.zeros(base.fam.weights.shape[1], np.int64)
            base.totals[key] = tot
        return tot

    def commit(self) -> None:
        base = self.base
        j = self.j
        base.H[j] = self.newH
        if len(self.moved):
            old_keys = {tuple(r) for r in base.keys[self.moved].tolist()}
            for key in old_keys:
                base.index.pop(key, None)
                base.totals.pop(key, None)
            base.keys[self.moved] = self.new_keys
            for key, mem in self.over.items():
                base.index[key] = mem
                base.totals.pop(key, None)


class BCFConstraint:
    """Validity of a specialization of ``R_n``: every new class keeps FA, CA >= k against every comparable
    cell of the F/C families, and BA >= k against every B family (see the module docstring).

    Attributes after :meth:`CutSpecializer.run`: ``fa_term``/``ba_term`` per class of ``R_n`` (``inf`` when
    no cell is comparable) and ``crack[c]``, the B crack ``x_B`` of each of its groups ``(s, x_B)``.
    """

    def __init__(self, k: int, space: CutSpace, fc_families: Sequence[CutFamily], b_families: Sequence[CutFamily],
                 total_counts: np.ndarray):
        self.k = k
        self.space = space
        n_leaves = [a.hierarchy.n_leaves for a in space.attributes]
        roots = [space.node_range(j, space.root(j)) for j in range(len(space.attributes))]
        self.fc = [_FamilyIndex(f, n_leaves, roots) for f in fc_families]
        self.b = [_FamilyIndex(f, n_leaves, roots) for f in b_families]
        self.S = len(total_counts)
        root_key = tuple(int(r[0] * (n_leaves[j] + 1) + r[1]) for j, r in enumerate(roots))
        #: N2 of Procedure 3: totals of R_n per component key, per B family
        self.n2 = [{root_key: np.asarray(total_counts, dtype=np.int64)} for _ in self.b]
        self.fa_term: list[float] = []
        self.ba_term: list[float] = []
        self.crack: list[tuple[np.ndarray, np.ndarray]] = []
        self.alive: list[bool] = []
        self.pairs_examined = 0
        self._pending = None

    # -------------------------------------------------------------- Algorithm 1 hooks
    def check_top(self, sizes, group_s, group_n) -> bool:
        overlays_fc = [_Overlay(f, 0, f.H[0], np.zeros(0, np.int64), np.zeros((0, f.q), np.int64), -1)
                       for f in self.fc]
        overlays_b = [_Overlay(f, 0, f.H[0], np.zeros(0, np.int64), np.zeros((0, f.q), np.int64), -1)
                      for f in self.b]
        lo_row = np.array([self.space.node_range(j, self.space.root(j))[0] for j in range(len(self.space.attributes))])
        fa, ba, crack = self._measure(lo_row, group_s, group_n, int(sizes[0]), overlays_fc, overlays_b,
                                      None, [next(iter(n2.values())) for n2 in self.n2])
        self.fa_term.append(fa)
        self.ba_term.append(ba)
        self.crack.append((group_s, crack))
        self.alive.append(True)
        return fa >= self.k and ba >= self.k

    def check(self, step: Specialization) -> bool:
        h = self.space.attributes[step.j].hierarchy
        a, b = self.space.node_range(step.j, step.w)
        kids = [(int(h.node_lo[c]), int(h.node_hi[c])) for c in step.children]
        ov_fc = [f.tentative(step.j, a, b, kids) for f in self.fc]
        ov_b = [f.tentative(step.j, a, b, kids) for f in self.b]
        lo_rows = h.node_lo[step.new_nodes[:, step.j]]
        los = np.column_stack([self.space.attributes[jj].hierarchy.node_lo[step.new_nodes[:, jj]]
                               for jj in range(step.new_nodes.shape[1])])
        del lo_rows
        # N2 of the new components (Case 1): the new classes of each new key, per B family
        keys_b = [[ov.key_of(los[c]) for c in range(len(step.sizes))] for ov in ov_b]
        n2_new: list[dict] = []
        for i, ov in enumerate(ov_b):
            acc: dict[tuple, np.ndarray] = {}
            for c, key in enumerate(keys_b[i]):
                if key in self.n2[i] and not self._moved_key(ov, key):
                    continue
                vec = acc.setdefault(key, np.zeros(self.S, dtype=np.int64))
                s, n = step.groups(c)
                vec[s] += n
            n2_new.append(acc)
        fa_t, ba_t, cr = [], [], []
        ok = True
        for c in range(len(step.sizes)):
            s, n = step.groups(c)
            n2_vecs = [n2_new[i].get(keys_b[i][c], self.n2[i].get(keys_b[i][c])) for i in range(len(ov_b))]
            fa, ba, crack = self._measure(los[c], s, n, int(step.sizes[c]), ov_fc, ov_b, None, n2_vecs,
                                          keys_b=[kb[c] for kb in keys_b])
            fa_t.append(fa)
            ba_t.append(ba)
            cr.append((s, crack))
            if fa < self.k or ba < self.k:
                ok = False
                break
        self._pending = (step, ov_fc, ov_b, keys_b, n2_new, fa_t, ba_t, cr) if ok else None
        return ok

    @staticmethod
    def _moved_key(ov: _Overlay, key: tuple) -> bool:
        return key in ov.over

    def commit(self, step: Specialization) -> None:
        pending = self._pending
        assert pending is not None and pending[0] is step
        _, ov_fc, ov_b, keys_b, n2_new, fa_t, ba_t, cr = pending
        for ov in ov_fc + ov_b:
            ov.commit()
        for i in range(len(ov_b)):
            # the parents' components (Case 1) disappear; the new ones get their totals
            for key, vec in n2_new[i].items():
                self.n2[i][key] = vec
        for p in np.unique(step.parent):
            self.alive[int(p)] = False
        self.fa_term.extend(fa_t)
        self.ba_term.extend(ba_t)
        self.crack.extend(cr)
        self.alive.extend([True] * len(fa_t))
        self._pending = None

    # -------------------------------------------------------------- the measures of one new class
    def _measure(self, lo_row, s, n, size, ov_fc, ov_b, _unused, n2_vecs, keys_b=None):
        """FA/CA term, BA term and per-background B cracks ``(m, |s|)`` of one class of ``R_n``."""
        per_i = np.zeros((len(ov_b), len(s)), dtype=np.int64)
        for i, ov in enumerate(ov_b):
            key = keys_b[i] if keys_b is not None else ov.key_of(lo_row)
            n1 = ov.total(key)[s]
            n2 = (n2_vecs[i] if n2_vecs[i] is not None else np.zeros(self.S, dtype=np.int64))[s]
            per_i[i] = b_crack(n, n1, n2)  # Theorem 4.4 (n2 holds the class's own groups: |G2| >= |g2|)
        crack = per_i.max(0) if len(ov_b) else np.zeros(len(s), dtype=np.int64)
        ba = float(size - crack.sum())
        fa = np.inf
        prefix = np.zeros(len(s), dtype=np.int64)
        for t, ov in enumerate(ov_fc):
            # a target at T_{t+1}: records of R_n forced to be older (B-cracked by R_1..R_t) cannot be its
            if t > 0:
                prefix = np.maximum(prefix, per_i[t - 1])
            mem = ov.members(ov.key_of(lo_row))
            if len(mem):
                self.pairs_examined += len(mem)
                W = ov.base.fam.weights
                keep = np.minimum(W[mem[:, None], s[None, :]], (n - prefix)[None, :]).sum(1)  # Lemma 4.4
                fa = min(fa, float(keep.min()))
        return fa, ba, per_i

    def summary(self) -> dict[str, float]:
        alive = np.asarray(self.alive)
        fa = np.asarray(self.fa_term)[alive]
        ba = np.asarray(self.ba_term)[alive]
        v_fa = float(fa.min()) if len(fa) else float("inf")
        return {"FA": v_fa, "CA": v_fa, "BA": float(ba.min()) if len(ba) else float("inf")}


# ---------------------------------------------------------------------- chain cells (section 7.1)
def chain_cells(families: Sequence[CutFamily], caps: CutFamily, n_leaves: Sequence[int]) -> CutFamily:
    """The cells of the meet of ``caps`` (release ``R_t`` with capacities) and ``families`` (releases
    ``R_{t+1}..R_{n-1}`` with counts): every jointly comparable chain of classes, with region the
    intersection and capacity the minimum (section 7.1, optimal micro attacks)."""
    cur = caps
    for fam in families:
        k1, k2 = _envelope_keys(cur.lo, cur.hi, fam.lo, fam.hi, n_leaves)
        c1, c2 = _key_ids(k1, k2)
        los, his, ws = [], [], []
        order2 = np.argsort(c2, kind="stable")
        starts = np.searchsorted(c2[order2], np.arange(int(max(c1.max(initial=-1), c2.max(initial=-1))) + 2))
        for comp in np.unique(c1):
            a = np.flatnonzero(c1 == comp)
            b = order2[starts[comp]:starts[comp + 1]]
            if not len(b):
                continue
            ai = np.repeat(a, len(b))
            bi = np.tile(b, len(a))
            los.append(np.maximum(cur.lo[ai], fam.lo[bi]))
            his.append(np.minimum(cur.hi[ai], fam.hi[bi]))
            ws.append(np.minimum(cur.weights[ai], fam.weights[bi]))
        q = cur.lo.shape[1]
        S = cur.weights.shape[1]
        cur = CutFamily(lo=np.vstack(los) if los else np.zeros((0, q), np.int64),
                        hi=np.vstack(his) if his else np.zeros((0, q), np.int64),
                        weights=np.vstack(ws) if ws else np.zeros((0, S), np.int64), label=caps.label)
    return cur


# ---------------------------------------------------------------------- the publisher
class BCFAnonymizer(PublisherBase):
    """BCF-anonymized releases of a growing table (Algorithm 1 of Fung et al., and its section 7.1 extension).

    Parameters
    ----------
    k : int >= 2
        The BCF-anonymity threshold: FA, CA, BA >= k against every earlier release of the chain (and plain
        k-anonymity for the first release, published by top-down specialization).

    The state carries the chain (see the module docstring); ``state["certificate"]`` holds the closed-form
    FA, CA, BA of the new release against the chain (``inf`` for the first release).
    """

    name = "bcf"
    params = {"k": Interval(int, 2, None)}
    required = ("k",)
    guarantee = "bcf"

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        attributes, quasi, cols = published_quasi(snapshot, attributes)
        schema = snapshot.schema
        space = CutSpace.of([schema[x] for x in quasi])
        k = self.config["k"]
        sens_names = [x for x in attributes if schema[x].is_sensitive]
        chain = list((state or {}).get("chain", [])) if state else []
        if state and state.get("format") not in (None, STATE_FORMAT):
            raise InputError(f"{self.name}: unknown state format {state.get('format')!r}")
        if chain:
            if list(state.get("quasi", [])) != quasi or list(state.get("sensitive", [])) != sens_names:
                raise InputError(f"{self.name}: every release of a chain must publish the same quasi-identifiers "
                                 f"and sensitive attributes (earlier: {state.get('quasi')} / {state.get('sensitive')})")
            _check_growth(snapshot, quasi, sens_names, state.get("records") or {}, self.name)
        if len(snapshot) < k:
            raise InputError(f"{self.name}: the table has {len(snapshot)} records, fewer than k = {k}")
        if chain:
            fresh = len(snapshot) - len((state.get("records") or {}).get("ids", []))
            if fresh < k:
                raise InputError(f"{self.name}: only {fresh} new records since the previous release, fewer than "
                                 f"k = {k}; the B-attack cracks every earlier record even in the most general "
                                 f"release (Theorem 4.4), so BA >= k needs at least k new records")
        # sensitive values: this snapshot's and the chain's, one code space
        _, values_now = sensitive_codes(snapshot, attributes)
        earlier_values = {g[1] for rel in chain for g in rel["groups"]}
        values = pd.Index(sorted(set(values_now.tolist()) | earlier_values), dtype=object)
        from multirelease.table import composite_sensitive

        sens = values.get_indexer(pd.Series(composite_sensitive(snapshot.frame, sens_names), dtype=object))
        S = len(values)
        codes = snapshot.qi_codes[:, cols]
        if not chain:
            constraint: Any = KAnonymity(k)
        else:
            families = [_family_of(rel, space, values) for rel in chain]
            n_leaves = [a.hierarchy.n_leaves for a in space.attributes]
            fc = []
            for t in range(len(chain)):
                # cells of R_t..R_{n-1}; every group loses the records forced older than T_t (B-attacks by
                # R_1..R_{t-1}): cap_s = min_j (|g_j,s| - max_{i<t} x_B(g_j,s; R_i))
                reduced = [CutFamily(f.lo, f.hi, np.maximum(0, f.weights - _b_prefix(chain[j], f, values, t)),
                                     label=f"R{j + 1}") for j, f in enumerate(families) if j >= t]
                fc.append(chain_cells(reduced[1:], reduced[0], n_leaves))
            constraint = BCFConstraint(k, space, fc, families, np.bincount(sens, minlength=S))
        spec = CutSpecializer(codes, space, sens, S, constraint)
        try:
            node = spec.run()
        except InputError as exc:
            raise InputError(f"{self.name} with k = {k}: {exc.problem} (Corollary 5.1)") from None
        release, truth = cut_release(snapshot, attributes, space, node, rng)
        # the new link of the chain
        cls_of_record = spec.cls
        if isinstance(constraint, BCFConstraint):
            cert = constraint.summary()
            crack_of = constraint.crack
        else:
            cert = {"FA": float("inf"), "CA": float("inf"), "BA": float(spec.class_size[np.unique(spec.cls)].min())}
            crack_of = None
        entry = _chain_entry(space, spec, cls_of_record, sens, values, crack_of)
        new_state = {
            "format": STATE_FORMAT,
            "quasi": quasi,
            "sensitive": sens_names,
            "chain": chain + [entry],
            "records": _record_digests(snapshot, quasi, sens_names),
            "certificate": {m: (None if not np.isfinite(v) else v) for m, v in cert.items()},
            "stats": {"iterations": spec.iterations, "specializations": spec.specializations,
                      "pairs_examined": getattr(constraint, "pairs_examined", 0)},
        }
        return PublishResult(release=release, truth=truth, state=new_state)


# ---------------------------------------------------------------------- state helpers
def _chain_entry(space: CutSpace, spec: CutSpecializer, cls: np.ndarray, sens: np.ndarray, values: pd.Index,
                 crack_of) -> dict:
    """One release of the chain as JSON: class labels and groups ``[class, value, count, x_B]``."""
    live, inv = np.unique(cls, return_inverse=True)
    inv = inv.reshape(-1)
    classes = []
    for c in live:
        labels = []
        for j, a in enumerate(space.attributes):
            node = int(spec.class_nodes[c, j])
            lo, hi = space.node_range(j, node)
            labels.append(a.hierarchy.label(lo, hi, allow_intervals=False))
        classes.append(labels)
    S = len(values)
    key = inv * S + sens
    uniq, counts = np.unique(key, return_counts=True)
    groups = []
    for u, n in zip(uniq.tolist(), counts.tolist()):
        ci, s = divmod(u, S)
        per_i: list[int] = []
        if crack_of is not None:
            gs, gc = crack_of[int(live[ci])]
            hit = np.flatnonzero(gs == s)
            per_i = [int(x) for x in gc[:, hit[0]]] if len(hit) else [0] * gc.shape[0]
        groups.append([ci, str(values[s]), int(n), max(per_i, default=0), per_i])
    return {"classes": classes, "groups": groups}


def _family_of(entry: Mapping, space: CutSpace, values: pd.Index) -> CutFamily:
    """The classes of a stored release as a :class:`CutFamily` (weights = group counts)."""
    q = len(space.attributes)
    m = len(entry["classes"])
    lo = np.zeros((m, q), dtype=np.int64)
    hi = np.zeros((m, q), dtype=np.int64)
    for c, labels in enumerate(entry["classes"]):
        if len(labels) != q:
            raise InputError("bcf state: a stored class has the wrong number of labels")
        for j, (a, lab) in enumerate(zip(space.attributes, labels)):
            lo[c, j], hi[c, j] = a.hierarchy.parse(str(lab), allow_intervals=False)
    W = np.zeros((m, len(values)), dtype=np.int64)
    for c, v, n, *_ in entry["groups"]:
        W[int(c), values.get_loc(v)] += int(n)
    if not _is_cut(lo, hi):
        raise InputError("bcf state: a stored release is not a cut generalization")
    return CutFamily(lo, hi, W)


def _b_prefix(entry: Mapping, fam: CutFamily, values: pd.Index, t: int) -> np.ndarray:
    """Per class and value, ``max_{i<t} x_B(g; R_i)``: the records of each group that the B-attacks by the
    releases before ``R_{t+1}`` (0-based ``t``) force to be older than ``T_{t+1}``."""
    out = np.zeros_like(fam.weights)
    for g in entry["groups"]:
        c, v, per_i = g[0], g[1], (g[4] if len(g) > 4 else [g[3]])
        x = max(per_i[:t], default=0)
        if x:
            out[int(c), values.get_loc(v)] = max(out[int(c), values.get_loc(v)], int(x))
    return out


def _record_hashes(snapshot: Table, quasi: Sequence[str], sens: Sequence[str], ids=None) -> np.ndarray:
    """A 32-bit hash of every record's published QI and sensitive values (pandas' fixed-key row hash)."""
    frame = snapshot.frame if ids is None else snapshot.frame.loc[ids]
    cols = list(quasi) + list(sens)
    if not cols:
        return np.zeros(len(frame), dtype=np.int64)
    h = pd.util.hash_pandas_object(frame[cols].astype(str), index=False).to_numpy()
    return (h & np.uint64(0xFFFFFFFF)).astype(np.int64)


def _record_digests(snapshot: Table, quasi: Sequence[str], sens: Sequence[str]) -> dict:
    return {"ids": [str(i) for i in snapshot.ids], "crc": _record_hashes(snapshot, quasi, sens).tolist()}


def _check_growth(snapshot: Table, quasi, sens, records: Mapping, name: str) -> None:
    """``D1 ⊆ D1 ∪ D2``: every record of the previous snapshot is still there with the same values."""
    ids = list(records.get("ids", []))
    crc = list(records.get("crc", []))
    if len(ids) != len(crc):
        raise InputError(f"{name}: malformed state (ids and crc differ in length)")
    if not ids:
        return
    index = snapshot.frame.index
    present = pd.Index(ids).isin(index)
    if not present.all():
        gone = ids[int(np.flatnonzero(~present)[0])]
        raise InputError(f"{name}: record '{gone}' of the previous release left the table; continuous publishing "
                         f"(Fung et al.) needs every earlier record in every later release")
    now = _record_hashes(snapshot, quasi, sens, ids)
    bad = np.flatnonzero(np.asarray(now, dtype=np.int64) != np.asarray(crc, dtype=np.int64))
    if len(bad):
        raise InputError(f"{name}: record '{ids[int(bad[0])]}' changed its values since the previous release; "
                         f"continuous publishing (Fung et al.) never updates a published record")
