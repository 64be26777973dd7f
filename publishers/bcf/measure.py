"""The incremental validity test of the BCF-anonymizer: Procedures 2 and 3 of Fung et al. (section 5.2) and
their extension beyond two releases (section 7.1).

Paper: ../shared/papers/002_26e2f2912f1b36d2.txt.  The search (:class:`publishers.bcf.tds.CutSpecializer`)
specializes ``R_n`` top-down; :class:`BCFConstraint` says whether the classes a step creates keep ``FA, CA,
BA >= k`` against the earlier releases of the chain, looking only at what the step changes.

Incremental FA / BA (section 5.2).  Both releases are cuts, so "comparable" (Definition 4.1) is an
equivalence between classes of ``R1`` and ``R2`` (:func:`publishers.bcf.closed.envelope_keys`).  The
envelope key of a class is the GTree1 look-up of the paper (the root-to-leaf path of GTree1 that the
depth-first search with path pruning reaches), done as one hash probe.  With it:

* Procedure 2 (FA): for every new class ``qid_wi`` and every comparable ``qid1``,
  ``|qid1| - F(qid1, qid_wi) = sum_s min(|g1_s|, |g_wi,s|)`` (Lemma 4.4) must stay ``>= k``; since
  ``F(qid1)`` only grows under specialization (Theorem 5.1), only the new pairs are examined.  CA = FA on
  cuts (Theorem 4.5), so the same test certifies CA.
* Procedure 3 (BA): ``|G1(g_wi)|`` is the number of ``R1`` records of the component with the value,
  ``|G2(g_wi)|`` the number of ``R2`` records; when ``w`` is on or below ``Cut1_j`` (Case 2) the component
  and its totals are unchanged, when it is above (Case 1) the component splits by child value and only the
  new classes on ``Link[w_i]`` form it.  ``B(qid2)`` of the classes not specialized is unchanged.

Beyond two releases (section 7.1, "We extend the anonymization algorithm").  ``R_n`` is built assuming
``R_1..R_{n-1}`` are BCF-anonymous, against every attack that involves ``R_n``:

* F-attack on ``g_t`` (target at ``T_t``) with the optimal micro attack over the background releases
  ``R_{t+1}..R_n`` and the composition "B-attack(g_h, g_t) then F-attack(g'_t, g_n)" (Case 1): the crack
  of ``g_t`` is ``max(x_B, |g_t| - min_j |g_j|)``, so the target keeps ``sum_s min(|g_t,s| - x_B,s,
  min_{t<j<n} |g_j,s|, |g_n,s|)`` records.  The chain ``(qid_t..qid_{n-1})`` a target matches is a cell of
  the meet of the earlier cuts (a cut again, :func:`chain_cells`), so each ``t`` gives one more "left" cut
  family whose cells carry the capacity ``cap_s = min(|g_t,s| - x_B,s, min_{t<j<n} |g_j,s|)``.
* C-attack on ``g_n`` (target at ``T_t``), optimal over backgrounds ``R_t..R_{n-1}`` and composed after a
  B-attack on ``g_t`` (Case 2): ``|qid_n| - C = sum_s min(|g_n,s|, cap_s)`` - the same number, so FA = CA
  holds for the extension too.
* B-attack on ``g_n``: the optimal micro attack over backgrounds ``R_1..R_{n-1}``, ``max_i`` of
  Theorem 4.4 on the pair ``(R_i, R_n)`` (compositions only ever start with a B-attack).

What these formulas assume, and the publisher makes sure of before it trusts them
(:func:`publishers.bcf.state.incremental_chain`): every earlier release is a cut of the same taxonomies,
was made by this anonymizer with the same ``k`` (so it is BCF-anonymous and its ``x_B`` are stored), and the
output is still checked by the exact engine (:mod:`publishers.bcf.exact`): the closed forms are exact for two
releases only, and Theorem 5.1 has a counterexample (tests/publishers/test_tds_bcf.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from attacks.correspondence.closed import b_crack

from .closed import envelope_keys, key_ids
from .tds import CutSpace, Specialization

__all__ = ["BCFConstraint", "CutFamily", "chain_cells"]


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
                                      [next(iter(n2.values())) for n2 in self.n2])
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
        los = np.column_stack([self.space.attributes[jj].hierarchy.node_lo[step.new_nodes[:, jj]]
                               for jj in range(step.new_nodes.shape[1])])
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
            fa, ba, crack = self._measure(los[c], s, n, int(step.sizes[c]), ov_fc, ov_b, n2_vecs,
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
    def _measure(self, lo_row, s, n, size, ov_fc, ov_b, n2_vecs, keys_b=None):
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
        k1, k2 = envelope_keys(cur.lo, cur.hi, fam.lo, fam.hi, n_leaves)
        c1, c2 = key_ids(k1, k2)
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
