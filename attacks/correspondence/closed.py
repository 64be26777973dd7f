"""Closed forms of the correspondence attacks (Fung, Wang, Fu, Pei, "Anonymity for Continuous Data
Publishing", EDBT 2008), as pure functions of group counts.

They hold under the paper's assumptions - global recoding by a *cut* of every taxonomy in every release, so
that a target matches exactly one class per release and "comparable" is transitive enough for Lemmas 4.1 -
4.3.  Elsewhere (local recoding, Mondrian regions, overlapping classes) they are not proofs; the exact
engines of :mod:`solver` are (``tests/attacks/test_correspondence.py`` checks both agree on cuts).

Two releases (section 4), for a target ``P`` matching ``(qid1, qid2)`` and ``(g1, g2)`` in
``CG(qid1, qid2)`` (the groups of the two classes with one sensitive value):

* :func:`f_crack` - Theorem 4.2: ``|g1| - min(|g1|, |g2|)``;
* :func:`c_crack` - Theorem 4.3: ``|g2| - min(|g1|, |g2|)``;
* :func:`b_crack` - Theorem 4.4: ``0`` if ``|G2| < |g2|``, else ``max(0, |G1| - (|G2| - |g2|))``, ``G1`` the
  records of ``R1`` comparable to ``g2``, ``G2`` the records of ``R2`` comparable to some record of ``G1``;
* :func:`F_pair`, :func:`C_pair`, :func:`B_class` - the sums ``F(qid1, qid2)``, ``C(qid1, qid2)``,
  ``B(qid2)`` of Definitions 3.2, 3.4, 3.6, and :func:`anonymity` the ``|qid| - crack`` they enter FA, CA,
  BA through.

More releases (section 7.1, ``R_i`` publishes ``D_1 .. D_i``): the *optimal micro attacks* take the best
background release for every group (:func:`micro_f`, :func:`micro_c`, :func:`micro_b`), and the two
*compositions* apply a B-attack first (:func:`compose_bf` - Case 1, B then F; :func:`compose_bc` - Case 2,
B then C).  :func:`sequence_crack` combines them for a target with timestamp ``T_t`` and cracking release
``R_j``.  :func:`closed_form_summary` evaluates FA, CA, BA of a sequence of cut-generalized releases.

The "sensitive value" of a group may be composite: with persistent linking columns
(:mod:`multirelease.model.linking`) the attack passes *linked values* (sensitive value and linking tuple), on which
buddies must agree (section 3.1: a record reappears with its values).  The theorems only count the records of
one value in comparable classes, so they hold unchanged on any value domain: no fallback to the exact engine
is needed.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

__all__ = ["f_crack", "c_crack", "b_crack", "F_pair", "C_pair", "B_class", "anonymity", "micro_f", "micro_c",
           "micro_b", "compose_bf", "compose_bc", "sequence_crack", "closed_form_summary", "b_background",
           "closed_form_two"]


def f_crack(g1, g2):
    """Theorem 4.2 (1): crack size of ``g1`` in the F-attack, ``|g1| - min(|g1|, |g2|)`` (vectorized)."""
    g1 = np.asarray(g1)
    return g1 - np.minimum(g1, np.asarray(g2))


def c_crack(g1, g2):
    """Theorem 4.3 (1): crack size of ``g2`` in the C-attack, ``|g2| - min(|g1|, |g2|)`` (vectorized)."""
    g2 = np.asarray(g2)
    return g2 - np.minimum(np.asarray(g1), g2)


def b_crack(g2, G1, G2):
    """Theorem 4.4 (1)-(2): crack size of ``g2`` in the B-attack: ``0`` if ``|G2| < |g2|``, else
    ``max(0, |G1| - (|G2| - |g2|))`` (vectorized)."""
    g2, G1, G2 = (np.asarray(x) for x in (g2, G1, G2))
    return np.where(G2 < g2, 0, np.maximum(0, G1 - (G2 - g2)))


def _aligned(groups1: Mapping, groups2: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the pairs of ``CG(qid1, qid2)`` (Definition 4.1): one pair per sensitive value present in
    either class, an absent group counting 0."""
    keys = sorted(set(groups1) | set(groups2), key=str)
    return (np.array([groups1.get(k, 0) for k in keys], dtype=np.int64),
            np.array([groups2.get(k, 0) for k in keys], dtype=np.int64))


def F_pair(groups1: Mapping, groups2: Mapping) -> int:
    """Theorem 4.2 (2): ``F(qid1, qid2)`` from the group counts ``{value: |g1|}`` and ``{value: |g2|}``."""
    g1, g2 = _aligned(groups1, groups2)
    return int(f_crack(g1, g2).sum())


def C_pair(groups1: Mapping, groups2: Mapping) -> int:
    """Theorem 4.3 (2): ``C(qid1, qid2)``."""
    g1, g2 = _aligned(groups1, groups2)
    return int(c_crack(g1, g2).sum())


def B_class(groups2: Mapping, G1: Mapping, G2: Mapping) -> int:
    """Theorem 4.4 (3): ``B(qid2)`` from ``{value: |g2|}`` and the matching ``|G1|``, ``|G2|`` per value."""
    keys = list(groups2)
    return int(b_crack([groups2[k] for k in keys], [G1.get(k, 0) for k in keys],
                       [G2.get(k, 0) for k in keys]).sum())


def anonymity(size: int, crack: int) -> int:
    """``|qid| - crack``: the term minimized by FA, CA and BA (Definitions 3.2, 3.4, 3.6)."""
    return int(size) - int(crack)


# ---------------------------------------------------------------------- more than two releases (7.1)
def micro_f(g_i, later: Sequence) -> np.ndarray:
    """Optimal micro F-attack on ``g_i``: ``max_j c_ij`` over the later releases' groups ``g_j`` (Theorem 4.2
    per pair), which equals ``|g_i| - min(|g_i|, min_j |g_j|)``."""
    g_i = np.asarray(g_i)
    if not len(later):
        return np.zeros_like(g_i)
    return np.max([f_crack(g_i, g) for g in later], axis=0)


def micro_c(g_i, g_j) -> np.ndarray:
    """Micro C-attack(``g_i``, ``g_j``): cracks ``g_j`` for a target at ``T_i`` (Theorem 4.3 per pair)."""
    return c_crack(g_i, g_j)


def micro_b(b_cracks: Sequence) -> np.ndarray:
    """Optimal micro B-attack on ``g_j``: the largest Theorem 4.4 crack over the earlier releases ``R_i``."""
    if not len(b_cracks):
        return np.asarray(0)
    return np.max(np.asarray(b_cracks), axis=0)


def compose_bf(x_b, g_j, later: Sequence) -> np.ndarray:
    """Case 1 of section 7.1: B-attack(``g_i``, ``g_j``) then F-attack(``g'_j``, ``g_l``), ``l > j``: crack of
    ``g_j`` is ``x_B + x_F`` with ``x_F`` Theorem 4.2 on the reduced ``|g'_j| = |g_j| - x_B`` (best ``l``)."""
    x_b = np.asarray(x_b)
    reduced = np.asarray(g_j) - x_b
    return x_b + micro_f(reduced, later)


def compose_bc(x_b, g_j, g_l) -> np.ndarray:
    """Case 2 of section 7.1: B-attack(``g_i``, ``g_j``) then C-attack(``g'_j``, ``g_l``): crack of ``g_l`` is
    ``|g_l| - min(|g'_j|, |g_l|)``."""
    return c_crack(np.asarray(g_j) - np.asarray(x_b), g_l)


def sequence_crack(t: int, j: int, groups: Sequence, b_cracks: Sequence = ()) -> np.ndarray:
    """Closed-form crack size of the groups of ``R_j`` for a target with timestamp ``T_t`` (1-based,
    ``t <= j``), from section 7.1.

    Parameters
    ----------
    groups : sequence of arrays
        ``groups[i-1]``: counts ``|g_i|`` of the target's groups in ``R_i`` (one entry per sensitive value,
        aligned), for ``i = t .. n`` (entries for ``i < t`` are ignored).
    b_cracks : sequence of arrays
        Theorem 4.4 crack sizes of ``g_t`` against every earlier release ``R_i``, ``i < t`` (empty for
        ``t = 1``).

    ``j == t``: the B part (optimal micro B, 0 for ``t = 1``) composed with the best F-attack against the
    later releases (Case 1; the plain optimal micro F-attack when ``t = 1``).  ``j > t``: the C-attack of
    ``g_j`` with background ``g_t`` reduced by the B part (Case 2; the plain micro C-attack when ``t = 1``).
    """
    n = len(groups)
    g_t = np.asarray(groups[t - 1])
    x_b = micro_b(b_cracks) if t > 1 else np.zeros_like(g_t)
    x_b = np.broadcast_to(x_b, g_t.shape)
    if j == t:
        return compose_bf(x_b, g_t, [np.asarray(groups[l - 1]) for l in range(t + 1, n + 1)])
    return compose_bc(x_b, g_t, np.asarray(groups[j - 1]))


# ---------------------------------------------------------------------- whole releases (cuts)
def b_background(comp: np.ndarray, cnt_i: np.ndarray, cnt_j: np.ndarray) -> np.ndarray:
    """Theorem 4.4 crack of every group of ``R_j`` against background ``R_i`` (cut generalization).

    ``comp``: ``(classes_i, classes_j)`` comparability of class regions; ``cnt_i``, ``cnt_j``: ``(classes,
    values)`` group counts.  Returns ``(classes_j, values)``.
    """
    out = np.zeros_like(cnt_j)
    ci = comp.astype(np.int64)
    G1 = ci.T @ cnt_i  # records of R_i (value s) comparable to each class of R_j
    for s in range(cnt_j.shape[1]):
        has = cnt_i[:, s] > 0
        a = ci[has]  # (classes_i with s, classes_j)
        if not len(a):
            continue
        reach = (a.T @ a) > 0  # class k of R_j and k' share a comparable class of R_i holding s
        G2 = reach.astype(np.int64) @ cnt_j[:, s]
        out[:, s] = b_crack(cnt_j[:, s], G1[:, s], G2)
    return out


def closed_form_summary(class_counts: Sequence[np.ndarray], comparable: Mapping[tuple[int, int], np.ndarray],
                        target_classes: Sequence[tuple[int, tuple]]) -> dict:
    """FA, CA, BA of a cut-generalized sequence from the closed forms.

    Parameters
    ----------
    class_counts : per release, ``(classes, values)`` int array of group counts over one value dictionary.
    comparable : ``{(i, j): (classes_i, classes_j) bool}`` for ``i < j`` (0-based releases).
    target_classes : ``(t, (c_1, .. c_n))`` per target: timestamp (1-based) and the class of every release
        containing the target (``-1`` where none; a target at ``T_t`` lies in a class of every ``R_j``,
        ``j >= t``).

    Returns ``{"FA", "CA", "BA"}`` (``None`` where no target applies) and ``rows`` with the per-target
    anonymity ``(t, j, class, size, crack)``.
    """
    n = len(class_counts)
    b_cache: dict[tuple[int, int], np.ndarray] = {}

    def bk(i: int, t: int) -> np.ndarray:
        if (i, t) not in b_cache:
            b_cache[(i, t)] = b_background(comparable[(i, t)], class_counts[i], class_counts[t])
        return b_cache[(i, t)]

    best = {"F": None, "C": None, "B": None}
    rows = []
    for t, classes in target_classes:
        groups = [class_counts[i][classes[i]] if classes[i] >= 0 else None for i in range(n)]
        bcs = [bk(i, t - 1)[classes[t - 1]] for i in range(t - 1)]
        for j in range(t, n + 1):
            g = [x if x is not None else np.zeros(class_counts[0].shape[1], np.int64) for x in groups]
            crack = int(sequence_crack(t, j, g, bcs).sum())
            size = int(class_counts[j - 1][classes[j - 1]].sum())
            fams = ["C"] if j > t else [f for f, ok in (("F", t < n), ("B", t >= 2)) if ok]
            for f in fams:
                val = size - crack
                if best[f] is None or val < best[f]:
                    best[f] = val
            rows.append((t, j, classes[j - 1], size, crack))
    return {"FA": best["F"], "CA": best["C"], "BA": best["B"], "rows": rows}


def closed_form_two(r1, r2, linking=None) -> dict:
    """The paper's detection (section 4) on two releases, vectorized over comparable class pairs: FA, CA, BA
    from Theorems 4.2 - 4.4 and Definitions 3.2, 3.4, 3.6.  Exact only when both releases are cuts
    (:func:`attacks.correspondence.attack.is_cut`); elsewhere it is what the paper's formulas would claim.
    ``linking``: the sequence's :class:`~multirelease.model.linking.Linking` (groups per linked value) or None."""
    from solver.correspondence.regions import aggregate, regions_comparable, sensitive_codes

    codes, values = sensitive_codes([r1, r2], [linking.values(r) for r in (r1, r2)] if linking else None)
    nv = max(1, len(values))
    counts, regs = [], []
    for r, c in zip((r1, r2), codes):
        cnt = np.zeros((r.n_classes, nv), dtype=np.int64)
        np.add.at(cnt, (r.classes, c), 1)
        counts.append(cnt)
        regs.append(r.class_regions)
    nd1, nd2 = aggregate(r1, codes[0]), aggregate(r2, codes[1])
    m1 = np.zeros((r1.n_classes, nd1.masks.shape[1]), np.uint64)
    m2 = np.zeros((r2.n_classes, nd2.masks.shape[1]), np.uint64)
    m1[nd1.cls] = nd1.masks
    m2[nd2.cls] = nd2.masks
    comp = regions_comparable(regs[0][0], regs[0][1], m1, regs[1][0], regs[1][1], m2)
    i, k = np.nonzero(comp)
    c1, c2 = counts
    F = f_crack(c1[i], c2[k]).sum(axis=1)
    C = c_crack(c1[i], c2[k]).sum(axis=1)
    size1, size2 = c1.sum(axis=1), c2.sum(axis=1)
    FA = int((size1[i] - F).min()) if len(i) else None
    CA = int((size2[k] - C).min()) if len(i) else None
    B = b_background(comp, c1, c2).sum(axis=1)
    BA = int((size2 - B).min()) if len(size2) else None
    return {"FA": FA, "CA": CA, "BA": BA, "pairs": int(len(i))}
