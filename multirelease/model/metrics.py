"""Information-loss and utility metrics of one release, vectorized on the leaf-code ranges.

Every metric reads a :class:`~multirelease.model.release.Release` only (and, for EM, the leaf frequencies of the
raw table), never its truth.  A generalized cell is the leaf-code range ``[lo, hi]`` of a published
quasi-identifier; for a ``subsets`` attribute it is the leaf bitset ``release.masks[name]``, whose popcount is
the number of values the cell stands for.

========================= ============================================================ =================
key                       definition                                                   best / worst
========================= ============================================================ =================
``LM``                    Loss Metric, eq. (1) of Shmueli & Tassa, average per entry   0 / 1
``EM``                    Entropy Measure, section 2.2 of Shmueli & Tassa, bits/entry  0 / log2 |A_m|
``discernibility``        C_DM = sum_E |E|^2 (Bayardo & Agrawal; Barbosa et al. s. 3)  |R| / |R|^2
``discernibility_norm..`` C_DM / |R|^2 (Fung et al., section 6.2)                      1/|R| / 1
``AIL``                   average information loss of Byun et al. (Barbosa et al. s.3) 0 / q
``FEM``                   Frequency Entropy Metric, Barbosa et al. section 5, bits     log2 |T| / 0
``VEM``                   Volume Entropy Metric, Barbosa et al. section 5, bits        log2 V(T) / 0
========================= ============================================================ =================

Conventions shared by every metric (the papers leave them open):

* **Unpublished quasi-identifiers.**  By default a QI attribute of the schema that a release does not
  publish (a vertical subset) is left out of the averages, as in Shmueli & Tassa's section 6 ("the
  suppressed entries in that release outside I_r are not included in the average computation").  Pass
  ``unpublished="suppressed"`` to :func:`loss_metric`, :func:`entropy_metric` and
  :func:`average_information_loss` to count them as fully suppressed instead (LM penalty 1, EM the entropy of
  the whole domain, AIL extent 1).  VEM is unaffected either way (a factor ``V(E)/V(T) = 1``).
* **Suppressed records.**  When the original table has more records than the release publishes
  (``original_size`` larger than the number of real published rows), each missing record counts as fully
  suppressed: penalty 1 per quasi-identifier in LM and AIL, full-domain entropy in EM, information 0 in FEM
  and VEM (Barbosa et al., section 5, "they remain in the dataset, but with an information value of 0").
* **Counterfeit rows** (``release.counterfeits``, per published group id) are published entries: they count
  in LM, EM, AIL and the discernibility cost as the rows they are.  FEM and VEM use the counterfeit
  variants FEM' and VEM' of Barbosa et al. (which equal FEM and VEM when there are no counterfeits): a class
  carries the weight of its *real* records ``|E| = rows - counterfeits``, over ``|T| + |F(R)|``.
* **Entries.**  LM, EM and AIL are averages over ``N = rows published + records suppressed`` records
  (``N = |T|`` when there are no counterfeits); LM and EM further average over the quasi-identifiers.
* **Logarithms** are base 2 throughout (EM as in Shmueli & Tassa; FEM and VEM, whose base Barbosa et al.
  leave open, in bits as well).

All functions run in ``O(n q)`` numpy work (plus a sort for the classes); the whole :func:`release_metrics`
of a 30,162-record Adult release takes a few tens of milliseconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from .release import Release
from .table import Table

__all__ = [
    "loss_metric", "entropy_metric", "leaf_frequencies", "discernibility", "discernibility_normalized",
    "average_information_loss", "fem", "vem", "release_metrics", "class_real_sizes", "SnapshotFigures",
]

_UNPUBLISHED = ("suppressed", "ignore")


# ---------------------------------------------------------------------- helpers
def _popcount(x: np.ndarray) -> np.ndarray:
    """Number of set bits of each uint64."""
    x = np.ascontiguousarray(x, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)  # pragma: no cover
    return table[x.view(np.uint8).reshape(-1, 8)].sum(axis=1).reshape(x.shape)  # pragma: no cover


def _cell_sizes(release: Release, lo: np.ndarray | None = None, hi: np.ndarray | None = None,
                masks: dict | None = None) -> np.ndarray:
    """``(n, q)`` number of leaves each published cell stands for: ``hi - lo + 1``, or the popcount of the
    subset mask; of the release's own rows, or of the regions ``(lo, hi, masks)`` over its quasi-identifiers."""
    lo, hi, masks = (release.lo, release.hi, release.masks) if lo is None else (lo, hi, masks or {})
    sizes = (hi.astype(np.int64) - lo.astype(np.int64) + 1)
    for j, name in enumerate(release.quasi):
        mask = masks.get(name)
        if mask is not None:
            sizes[:, j] = _popcount(mask)
    return sizes


def _domain_sizes(release: Release) -> np.ndarray:
    return np.array([a.hierarchy.n_leaves for a in release.qi_attributes], dtype=np.int64)


def _unpublished(release: Release) -> tuple[str, ...]:
    published = set(release.quasi)
    return tuple(n for n in release.schema.quasi if n not in published)


def _check_unpublished(unpublished: str) -> None:
    if unpublished not in _UNPUBLISHED:
        raise ValueError(f"unpublished must be one of {', '.join(_UNPUBLISHED)}; got {unpublished!r}")


def _class_group_ids(release: Release) -> np.ndarray:
    """The published group id of every class (``class index + 1`` when the release has no group column,
    as :meth:`Release.to_frame` writes it)."""
    if release.n_classes == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(release.classes, return_index=True)
    if release.group is None:
        return np.arange(1, release.n_classes + 1, dtype=np.int64)
    return np.asarray(release.group)[first].astype(np.int64)


def class_real_sizes(release: Release) -> tuple[np.ndarray, np.ndarray]:
    """Rows and real (non-counterfeit) records of every class of ``release``.

    Returns
    -------
    rows, real : ndarray of int, shape (n_classes,)
        ``rows`` are :attr:`Release.class_sizes`; ``real = rows - counterfeits`` of the class's published
        group (``release.counterfeits``; groups it does not list have none).

    Raises
    ------
    InputError
        When a group declares more counterfeits than it has rows.
    """
    rows = np.asarray(release.class_sizes, dtype=np.int64)
    if not release.counterfeits:
        return rows, rows.copy()
    gids = _class_group_ids(release)
    fake = np.array([int(release.counterfeits.get(int(g), 0)) for g in gids], dtype=np.int64)
    bad = np.flatnonzero(fake > rows)
    if len(bad):
        i = bad[0]
        raise InputError(f"group {gids[i]} declares {fake[i]} counterfeits but has {rows[i]} rows",
                         key="counterfeits")
    return rows, rows - fake


def _sizes_of_table(release: Release, original_size: int | None) -> tuple[int, int, int]:
    """``(T, F, suppressed)``: original table size, counterfeit rows, records missing from the release."""
    _, real = class_real_sizes(release)
    n_real = int(real.sum())
    n_fake = len(release) - n_real
    t = n_real if original_size is None else int(original_size)
    if t < 0:
        raise ValueError(f"original_size must be >= 0; got {original_size}")
    if t < n_real:
        raise InputError(f"the release publishes {n_real} real records, more than the {t} of its original "
                         "table (undeclared counterfeits?)")
    return t, n_fake, t - n_real


def _class_masks(release: Release, name: str) -> np.ndarray:
    """The union (bitwise or) of the subset masks of every class, for attribute ``name``."""
    order = np.argsort(release.classes, kind="stable")
    sizes = release.class_sizes
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return np.bitwise_or.reduceat(release.masks[name][order], starts)


def _class_cell_sizes(release: Release) -> np.ndarray:
    """``(n_classes, q)`` number of leaves of each class's region (the closure of its rows); the popcount of
    the union of the masks for ``subsets`` attributes."""
    lo, hi = release.class_regions
    sizes = hi.astype(np.int64) - lo.astype(np.int64) + 1
    for j, name in enumerate(release.quasi):
        if name in release.masks and release.n_classes:
            sizes[:, j] = _popcount(_class_masks(release, name))
    return sizes


# ---------------------------------------------------------------------- LM
def loss_metric(release: Release, *, original_size: int | None = None, unpublished: str = "ignore") -> float:
    """The Loss Metric (LM), averaged over all entries (records x quasi-identifiers).

    Eq. (1) of Shmueli & Tassa, "Privacy by Diversity in Sequential Releases of Databases"
    (004_db68606f48036092.txt, section 2.2)::

        IL(v) = sum_m (|v(m)| - 1) / (|A_m| - 1)

    where ``|v(m)|`` is the number of values the generalized cell stands for and ``|A_m|`` the size of the
    attribute's domain.  As in their section 6 ("the displayed information loss is the average over all
    entries"), the result is ``sum_n IL(v_n) / (N * Q)``, in ``[0, 1]``: 0 for the raw table, 1 when every
    entry is suppressed.

    Parameters
    ----------
    release : Release
    original_size : int, optional
        ``|T|``, the records of the original table; records beyond the release's real rows are suppressed
        (penalty 1 per quasi-identifier).  Default: no suppression.  Below the real records published:
        :class:`InputError`.
    unpublished : {"suppressed", "ignore"}
        A schema quasi-identifier the release does not publish counts as fully suppressed (penalty 1,
        the default) or is left out of the average (Shmueli & Tassa, section 6).

    Returns
    -------
    float
        An attribute with a single value (``|A_m| = 1``) has penalty 0.

    Examples
    --------
    Two rows, one QI with domain ``{a, b, c}``: ``a`` (penalty 0) and ``*`` (penalty 1) average to 0.5.

    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from multirelease.model.schema import Schema
    >>> from multirelease.model.release import release_from_frame
    >>> s = Schema.from_mapping({"attributes": {"c": {"role": "quasi", "hierarchy": ["a", "b", "c"]}}},
    ...                         base=Path("."))
    >>> loss_metric(release_from_frame(s, pd.DataFrame({"c": ["a", "*"]})))
    0.5
    """
    _check_unpublished(unpublished)
    _, _, n_supp = _sizes_of_table(release, original_size)
    dom = _domain_sizes(release)
    q_extra = len(_unpublished(release)) if unpublished == "suppressed" else 0
    q_total = release.lo.shape[1] + q_extra
    n_entries = len(release) + n_supp
    if q_total == 0 or n_entries == 0:
        return 0.0
    denom = np.where(dom > 1, dom - 1, 1).astype(np.float64)
    penalty = (_cell_sizes(release) - 1) / denom
    total = float(penalty.sum()) + n_supp * release.lo.shape[1] + len(release) * q_extra + n_supp * q_extra
    return total / (n_entries * q_total)


def row_loss(release: Release, lo: np.ndarray | None = None, hi: np.ndarray | None = None,
             masks: dict | None = None) -> np.ndarray:
    """Each published row's share of :func:`loss_metric`'s numerator (no suppression): the sum over the
    quasi-identifiers of ``(|v(m)| - 1) / (|A_m| - 1)`` (the records that cost the most: what a repair that
    must lower LM withholds first, :mod:`multirelease.ledger.repair`).  Given ``(lo, hi, masks)``: the same
    for a row published as each of those regions over the release's quasi-identifiers (a repair's merged
    classes, :mod:`multirelease.ledger.coarsen`)."""
    n = len(release) if lo is None else len(lo)
    if n == 0 or release.lo.shape[1] == 0:
        return np.zeros(n)
    dom = _domain_sizes(release)
    denom = np.where(dom > 1, dom - 1, 1).astype(np.float64)
    return ((_cell_sizes(release, lo, hi, masks) - 1) / denom).sum(axis=1)


# ---------------------------------------------------------------------- EM
@dataclass(frozen=True)
class SnapshotFigures:
    """What a release's metrics read of its snapshot - its size and :func:`leaf_frequencies` - computed where
    the table is, so that a worker computing the metrics is sent these instead of the table (issue 28)."""

    size: int
    frequencies: dict

    def __len__(self) -> int:
        return self.size

    @classmethod
    def of(cls, snapshot: Table | SnapshotFigures | None) -> SnapshotFigures | None:
        if snapshot is None or isinstance(snapshot, SnapshotFigures):
            return snapshot
        return cls(len(snapshot), leaf_frequencies(snapshot))


def leaf_frequencies(snapshot: Table | SnapshotFigures) -> dict[str, np.ndarray]:
    """Relative frequencies of every leaf of every quasi-identifier in a raw table.

    Returns
    -------
    dict of str -> ndarray of float
        For each QI of ``snapshot.schema`` (schema order), an array of length ``n_leaves`` summing to 1 (all
        zero for an empty table): :attr:`Table.leaf_counts` over the table's size.
    """
    if isinstance(snapshot, SnapshotFigures):
        return snapshot.frequencies
    n = len(snapshot)
    out = {}
    for name, counts in zip(snapshot.schema.quasi, snapshot.leaf_counts):
        counts = counts.astype(np.float64)
        out[name] = counts / n if n else counts
    return out


def _plogp(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)


def _range_entropy(p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Entropy (bits) of the leaf distribution ``p`` renormalized to each code range ``[lo, hi]``.

    With ``S = sum p`` and ``W = sum p log p`` over the range (prefix sums),
    ``H = -sum (p/S) log(p/S) = log S - W / S``.  A range of frequency 0 has entropy 0.
    """
    cs = np.concatenate([[0.0], np.cumsum(p)])
    cw = np.concatenate([[0.0], np.cumsum(_plogp(p))])
    s = cs[hi + 1] - cs[lo]
    w = cw[hi + 1] - cw[lo]
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(s > 0, np.log2(np.where(s > 0, s, 1.0)) - w / np.where(s > 0, s, 1.0), 0.0)
    return np.maximum(h, 0.0)


def _mask_entropy(p: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Entropy (bits) of ``p`` renormalized to each leaf subset (uint64 masks), computed per unique mask."""
    uniq, inv = np.unique(np.asarray(masks, dtype=np.uint64), return_inverse=True)
    bits = ((uniq[:, None] >> np.arange(len(p), dtype=np.uint64)[None, :]) & np.uint64(1)).astype(np.float64)
    s = bits @ p
    w = bits @ _plogp(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(s > 0, np.log2(np.where(s > 0, s, 1.0)) - w / np.where(s > 0, s, 1.0), 0.0)
    return np.maximum(h, 0.0)[inv.reshape(-1)]


def _normalized(frequencies: Mapping[str, np.ndarray] | Sequence[np.ndarray], release: Release,
                name: str) -> np.ndarray:
    if isinstance(frequencies, Mapping):
        if name not in frequencies:
            raise ValueError(f"no leaf frequencies for quasi-identifier '{name}'")
        f = frequencies[name]
    else:
        f = frequencies[list(release.schema.quasi).index(name)]
    f = np.asarray(f, dtype=np.float64)
    n_leaves = release.schema[name].hierarchy.n_leaves
    if f.shape != (n_leaves,):
        raise ValueError(f"leaf frequencies of '{name}' must have {n_leaves} entries; got shape {f.shape}")
    if (f < 0).any():
        raise ValueError(f"leaf frequencies of '{name}' must be >= 0")
    total = f.sum()
    return f / total if total > 0 else f


def entropy_metric(release: Release, frequencies: Mapping[str, np.ndarray] | Sequence[np.ndarray], *,
                   original_size: int | None = None, unpublished: str = "ignore") -> float:
    """The Entropy Measure (EM), in bits, averaged over all entries (records x quasi-identifiers).

    Section 2.2 of Shmueli & Tassa (004_db68606f48036092.txt): an original value generalized to the subset
    ``v(m) = {b_1..b_z}`` leaves the conditional entropy ::

        H(v(m)) = - sum_i q_i log2 q_i,   q_i = p_i / (p_1 + ... + p_z)

    where ``p_i`` is the relative frequency of ``b_i`` in the original table ``T``.  The paper sums
    ``H`` over all entries; like :func:`loss_metric` this returns the average over entries, so it is 0 for
    the raw table and at most ``max_m log2 |A_m|``.

    Parameters
    ----------
    release : Release
    frequencies : mapping of str -> ndarray, or sequence of ndarray in ``schema.quasi`` order
        The leaf frequencies of each quasi-identifier in ``T`` (:func:`leaf_frequencies`); renormalized.
    original_size, unpublished
        As in :func:`loss_metric` (a suppressed entry has the entropy of its whole domain).

    Notes
    -----
    Code ranges use prefix sums of ``p`` and ``p log p`` (``H = log S - W/S``), ``O(n)`` per attribute;
    ``subsets`` cells are computed once per distinct mask.
    """
    _check_unpublished(unpublished)
    _, _, n_supp = _sizes_of_table(release, original_size)
    missing = _unpublished(release) if unpublished == "suppressed" else ()
    q_total = release.lo.shape[1] + len(missing)
    n_entries = len(release) + n_supp
    if q_total == 0 or n_entries == 0:
        return 0.0
    total = 0.0
    for j, name in enumerate(release.quasi):
        p = _normalized(frequencies, release, name)
        full = float(_range_entropy(p, np.array([0]), np.array([len(p) - 1]))[0])
        if name in release.masks:
            h = _mask_entropy(p, release.masks[name])
        else:
            h = _range_entropy(p, release.lo[:, j].astype(np.int64), release.hi[:, j].astype(np.int64))
        total += float(h.sum()) + n_supp * full
    for name in missing:
        p = _normalized(frequencies, release, name)
        full = float(_range_entropy(p, np.array([0]), np.array([len(p) - 1]))[0])
        total += n_entries * full
    return total / (n_entries * q_total)


# ---------------------------------------------------------------------- discernibility
def discernibility(release: Release) -> float:
    """The discernibility cost ``C_DM = sum_E |E|^2`` over the equivalence classes of the release.

    Bayardo & Agrawal, as recalled in section 3 of Barbosa et al. (003_9c5f9a30c53bd642.txt), "ignoring
    suppressed tuples"; a class's size counts every published row (counterfeits included).  Classes are
    :attr:`Release.classes` (the published groups, or identical generalized QI values).
    """
    sizes = np.asarray(release.class_sizes, dtype=np.float64)
    return float((sizes * sizes).sum())


def discernibility_normalized(release: Release) -> float:
    """``C_DM / |R|^2``, in ``[1/|R|, 1]`` (0 for an empty release): the normalized discernibility cost of
    Fung et al., section 6.2 (002_26e2f2912f1b36d2.txt); 0 is best, 1 worst (one class)."""
    n = len(release)
    return discernibility(release) / float(n) ** 2 if n else 0.0


# ---------------------------------------------------------------------- AIL
def average_information_loss(release: Release, original_size: int | None = None, *,
                             unpublished: str = "ignore") -> float:
    """The average information loss (AIL) of Byun et al., as recalled in section 3 of Barbosa et al.

    For a class ``E`` (003_9c5f9a30c53bd642.txt, section 3)::

        IL(E) = |E| * sum_i d(a_E^i) / d(a^i)

    where ``d(a_E^i)`` is the extent of the class's region on attribute ``i`` and ``d(a^i)`` the extent of its
    whole domain.  Here every attribute is measured on **leaf codes**: ``d(a_E^i) = hi - lo`` of the class
    region (the closure of its rows, :attr:`Release.class_regions`; the bounding code range for ``subsets``
    attributes) and ``d(a^i) = n_leaves - 1``, so a numeric attribute whose leaves are consecutive integers
    gets exactly Byun's ``(max - min) / |range|``, and a taxonomy node gets the number of leaves it covers,
    minus one, over the domain's.  An attribute with one value has loss 0.

    The result is ``sum_E IL(E) / N``, the loss per record, in ``[0, Q]`` (``Q`` the number of
    quasi-identifiers: the "number of dimensions" Barbosa et al. name as its upper bound), with ``N`` the
    published rows plus the suppressed records (``|T|``, ``original_size``, when there are no counterfeits).
    Suppressed records and unpublished quasi-identifiers count as fully generalized (loss 1 each; see the
    module docstring), so suppressing records never lowers the loss.
    """
    _check_unpublished(unpublished)
    _, _, n_supp = _sizes_of_table(release, original_size)
    q = release.lo.shape[1]
    q_extra = len(_unpublished(release)) if unpublished == "suppressed" else 0
    n_entries = len(release) + n_supp
    if n_entries == 0:
        return 0.0
    total = 0.0
    if release.n_classes and q:
        lo, hi = release.class_regions
        dom = _domain_sizes(release)
        denom = np.where(dom > 1, dom - 1, 1).astype(np.float64)
        ratio = (hi.astype(np.int64) - lo.astype(np.int64)) / denom
        total += float((release.class_sizes * ratio.sum(axis=1)).sum())
    total += n_supp * q + n_entries * q_extra
    return total / n_entries


# ---------------------------------------------------------------------- FEM, VEM
def fem(release: Release, original_size: int | None = None) -> float:
    """The Frequency Entropy Metric, in bits (Barbosa et al., section 5; 003_9c5f9a30c53bd642.txt).

    With suppression (``|T|`` the original table) and counterfeits (``F(E)`` the counterfeit rows of class
    ``E``, ``|E|`` its real records, ``F(R)`` all counterfeits), FEM' of the paper::

        FEM'(R, T) = sum_E - |E| / (|T| + |F(R)|) * log2((|E| + |F(E)|) / |T|)

    which is FEM(R, T) without counterfeits and FEM(R) = the entropy of the class sizes without suppression
    either.  Theorem 1: ``0 <= FEM <= log2 |T|``, ``log2 |T|`` for the raw table (every record its own class)
    and 0 when every record is in one class; suppressed records carry information 0 (Theorem 2); counterfeits
    lower it, and may make a class's information negative (as the paper notes).

    Parameters
    ----------
    release : Release
    original_size : int, optional
        ``|T|``; default the real records of the release (no suppression).
    """
    t, n_fake, _ = _sizes_of_table(release, original_size)
    if t == 0 or release.n_classes == 0:
        return 0.0
    rows, real = class_real_sizes(release)
    info = -np.log2(rows / t)
    return float((real * info).sum() / (t + n_fake))


def vem(release: Release, original_size: int | None = None) -> float:
    """The Volume Entropy Metric, in bits (Barbosa et al., section 5; 003_9c5f9a30c53bd642.txt).

    ::

        VEM'(R, T) = sum_E - |E| / (|T| + |F(R)|) * log2(V(E) / V(T))

    with ``|E|`` the real records of the class (VEM(R, T) without counterfeits).  ``V(E) = prod_q
    (max q_E - min q_E + 1)`` is measured in leaf codes on the class region (the closure of its rows; the
    popcount of the union of the masks for ``subsets`` attributes), and ``V(T) = prod_q n_leaves`` is the
    volume of the whole QI domain (not the bounding box of the data).  With that choice VEM is ``log2 V(T)``
    for the raw table (single points have volume 1), 0 for a fully generalized one (Theorem 1), additive over
    quasi-identifiers (Theorem 3), and an unpublished quasi-identifier contributes 0 whether or not it is
    counted in ``V(T)``.  Suppressed records carry information 0.

    Parameters
    ----------
    release : Release
    original_size : int, optional
        ``|T|``; default the real records of the release (no suppression).
    """
    t, n_fake, _ = _sizes_of_table(release, original_size)
    if t == 0 or release.n_classes == 0 or release.lo.shape[1] == 0:
        return 0.0
    _, real = class_real_sizes(release)
    dom = _domain_sizes(release).astype(np.float64)
    log_ratio = (np.log2(_class_cell_sizes(release)) - np.log2(dom)).sum(axis=1)
    return float((real * -log_ratio).sum() / (t + n_fake))


# ---------------------------------------------------------------------- all at once
def release_metrics(release: Release, snapshot: Table | SnapshotFigures | None = None,
                    original_size: int | None = None) -> dict[str, float]:
    """Every metric of this module for one release.

    Parameters
    ----------
    release : Release
    snapshot : Table or SnapshotFigures, optional
        The raw table behind the release (or its :class:`SnapshotFigures`): its leaf frequencies for ``EM``
        (omitted without a snapshot).
    original_size : int, optional
        ``|T|`` for the suppression variants (default: no suppression).

    Returns
    -------
    dict
        ``LM``, ``EM`` (with a snapshot), ``discernibility``, ``discernibility_normalized``, ``AIL``,
        ``FEM``, ``VEM`` - plain floats.
    """
    out = {"LM": loss_metric(release, original_size=original_size)}
    if snapshot is not None:
        out["EM"] = entropy_metric(release, leaf_frequencies(snapshot), original_size=original_size)
    out["discernibility"] = discernibility(release)
    out["discernibility_normalized"] = discernibility_normalized(release)
    out["AIL"] = average_information_loss(release, original_size)
    out["FEM"] = fem(release, original_size)
    out["VEM"] = vem(release, original_size)
    return out
