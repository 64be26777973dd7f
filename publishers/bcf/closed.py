"""Closed forms of FA, CA, BA on two cut-generalized releases (Fung, Wang, Fu, Pei, EDBT 2008, section 4).

Paper: ../shared/papers/002_26e2f2912f1b36d2.txt.  Crack sizes ``|g1| - min(|g1|,|g2|)`` (Theorem 4.2, F),
``|g2| - min(|g1|,|g2|)`` (Theorem 4.3, C), ``max(0, |G1| - (|G2| - |g2|))`` (Theorem 4.4, B) and ``FA, CA,
BA`` (Definitions 3.2, 3.4, 3.6): :func:`closed_form` (fast, by comparability components) and
:func:`closed_form_pairs` (straight from the definitions, small inputs).  The crack sizes are those of
:mod:`attacks.correspondence.closed` (one implementation of the theorems).

Comparability on cuts (Definition 4.1, Lemma 4.1 "3-hop transitivity", Lemma 4.3) is an equivalence: per
attribute take, at every leaf, the *more general* of the two cut nodes above it (the upper envelope of the
two cuts); two classes are comparable iff they lie under the same envelope node for every attribute
(:func:`envelope_keys`).  The theorems need cuts of both releases (section 3, global recoding) and two
releases; the publisher uses the exact engine elsewhere (:mod:`publishers.bcf.exact`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from attacks.correspondence.closed import b_crack, c_crack, f_crack
from multirelease.errors import InputError
from multirelease.model.release import Release, comparable

__all__ = ["closed_form", "closed_form_pairs", "is_cut_release", "is_cut", "envelope_keys", "key_ids"]


def is_cut_release(release: Release) -> bool:
    """Global recoding: for every QI, the published ranges are pairwise disjoint or equal (a cut)."""
    return is_cut(release.lo, release.hi)


def is_cut(lo: np.ndarray, hi: np.ndarray) -> bool:
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


def envelope_keys(lo1, hi1, lo2, hi2, n_leaves: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
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
    k1, k2 = envelope_keys(lo1, hi1, lo2, hi2, [a.domain_size for a in r1.qi_attributes])
    c1, c2 = key_ids(k1, k2)
    size1, size2 = g1.sum(1), g2.sum(1)
    n_comp = int(max(c1.max(initial=-1), c2.max(initial=-1))) + 1
    N1 = np.zeros((n_comp, g1.shape[1]), dtype=np.int64)
    N2 = np.zeros_like(N1)
    np.add.at(N1, c1, g1)
    np.add.at(N2, c2, g2)
    fa_term = np.full(len(g1), np.inf)
    ca_term = np.full(len(g2), np.inf)
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
    return out


def key_ids(*keys: np.ndarray) -> list[np.ndarray]:
    """One component id per row of each key array (equal envelope keys, equal ids), in the arrays' order."""
    allk = np.vstack(keys) if len(keys) else np.zeros((0, 0))
    _, inv = np.unique(allk, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    out, start = [], 0
    for k in keys:
        out.append(inv[start:start + len(k)])
        start += len(k)
    return out
