"""Releases: what a recipient sees, as leaf-code ranges.

The class and its vectorized relations; release files are read and written by
:mod:`multirelease.formats.release_csv` (the cells of ARX's notation: :mod:`multirelease.formats.arx`).

A :class:`Release` holds one published table: for each row and each published quasi-identifier a leaf-code
range ``[lo, hi]`` (plus a bitset for ``subsets`` attributes), the composite sensitive value, the other
published columns, and optionally the ``group`` (QI-group id) and ``uid`` (record-tracking id) columns and
the counterfeit statistics of m-invariance / m-Distinct.  It never holds who is behind a row: that is
:class:`ReleaseTruth`, kept apart so that attacks cannot read it.

The module's vectorized primitives work on ``(n, q)`` int arrays:

* :func:`contains` - does a generalized record contain a raw point (Definition 2.1 of Shmueli & Tassa)?
* :func:`comparable` - do two generalized records share an instantiation (Definition 4.1 of Fung et al.:
  "on the same path in the taxonomy", which for intervals and sets is a non-empty intersection)?
* :func:`generalizes` - is one generalized record a generalization of another?
* :meth:`Release.closure_of` - the closure of a set of rows (Definition 2.2 of Shmueli & Tassa).

Classes are what the adversary sees.  A QI-group is "the published records that have the same generalized QI
attribute value" (Li & Zhou, section I), so a published ``group`` column can only name classes the QI values
already draw: a ``group`` whose rows carry different generalized QI values would be trusted as one class
though the adversary tells its rows apart, and is refused (bad input from a file, a bug from a publisher).
The one exception is an *anatomy* release (Xiao & Tao, "Anatomy", VLDB 2006, cited by Li & Zhou as [3]):
its QIs are published exactly and only the group id links them to the sensitive values, so there the class
is the group; it must be declared (``anatomy=True``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .schema import Attribute, Schema

__all__ = ["Release", "ReleaseTruth", "contains", "comparable", "generalizes", "writes_group", "RESERVED_COLUMNS"]

#: the columns of a release file that are not attributes
RESERVED_COLUMNS = ("group", "uid")


# ---------------------------------------------------------------------- vectorized primitives
def contains(lo: np.ndarray, hi: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``True`` where the generalized record ``[lo, hi]`` contains the raw point (broadcasting over rows)."""
    return np.all((lo <= points) & (points <= hi), axis=-1)


def comparable(lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray) -> np.ndarray:
    """``True`` where two generalized records share at least one instantiation (broadcasting).

    For cut / hierarchy generalization this is Definition 4.1 of Fung et al. (every attribute's values are
    on one path of its taxonomy, since taxonomy nodes are laminar ranges); for intervals it is the
    non-empty intersection of the regions.  ``subsets`` attributes must also be checked on their masks
    (:meth:`Release.comparable_rows`).
    """
    return np.all((lo1 <= hi2) & (lo2 <= hi1), axis=-1)


def generalizes(lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray) -> np.ndarray:
    """``True`` where record 1 is a generalization of (contains) record 2."""
    return np.all((lo1 <= lo2) & (hi2 <= hi1), axis=-1)


# ---------------------------------------------------------------------- the release
@dataclass(frozen=True, eq=False)
class Release:
    """One published table as the adversary sees it.

    Attributes
    ----------
    schema : Schema
    attributes : tuple of str
        The published attributes, in schema order (a vertical subset of ``schema.published``).
    lo, hi : ndarray of shape (n, q)
        Leaf-code ranges of the published quasi-identifiers :attr:`quasi`.
    masks : dict of str -> ndarray of uint64
        Leaf bitsets of the published ``subsets`` attributes.
    sensitive : ndarray of object, shape (n,)
        The composite sensitive value ("" when no sensitive attribute is published).
    other : DataFrame
        The published non-QI, non-sensitive columns, as text.
    group : ndarray of int or None
        Published QI-group ids; ``None`` means "identical QI values form a class".  Unless :attr:`anatomy`,
        the rows of one group must carry identical generalized QI values (checked at construction: a
        publisher that breaks it has a bug, :func:`release_from_frame` reports it as bad input).
    uid : ndarray of object or None
        Record-tracking ids (Barbosa et al.): they link rows across releases and never change classes.
    counterfeits : dict of int -> int or None
        Counterfeit statistics per group (m-invariance / m-Distinct).
    anatomy : bool
        An anatomy-style release: QI values inside a group may differ and the class is the group.
    """

    schema: Schema
    attributes: tuple[str, ...]
    lo: np.ndarray
    hi: np.ndarray
    sensitive: np.ndarray
    masks: dict = field(default_factory=dict)
    other: pd.DataFrame | None = None
    group: np.ndarray | None = None
    uid: np.ndarray | None = None
    counterfeits: dict | None = None
    anatomy: bool = False

    def __post_init__(self) -> None:
        if self.anatomy and self.group is None:
            raise ValueError("an anatomy release needs a group column")
        if self.group is not None and not self.anatomy:
            mixed = _first_mixed_group(np.asarray(self.group, dtype=np.int64), self.classes)
            if mixed is not None:
                g, i, j = mixed
                raise ValueError(f"group {g} holds rows {i} and {j} (0-based) with different generalized QI "
                                 f"values: a publisher bug (classes are what the adversary sees)")

    def __len__(self) -> int:
        return int(self.lo.shape[0])

    # ------------------------------------------------------------------ pickling (executor tasks, issue 28)
    def __getstate__(self) -> dict:
        """Pickled by class where that is exact: every class of a release that is not :attr:`anatomy` holds
        one generalized QI value and one group id, so ``lo``, ``hi``, the masks and ``group`` travel as one row
        per class with every row's class (``int32``) - a release of 10^6 rows goes to a worker or back as
        10 MB instead of 73 MB, and unpickles by one gather per array."""
        state = dict(self.__dict__)
        if not len(self):
            return state
        # the sensitive values as each row's code among the distinct ones: a census release's million strings
        # cost more to pickle and unpickle than the rest of it
        # (:attr:`sensitive_codes` when computed and without a missing value: not factorized again, sent once)
        cached = state.pop("sensitive_codes", None)
        factorized = cached is not None and bool((cached[0] >= 0).all())
        if factorized:
            codes, uniques = cached
        else:
            codes, uniques = pd.factorize(np.asarray(self.sensitive, dtype=object), use_na_sentinel=False)
            if cached is not None:
                state["sensitive_codes"] = cached
        state["sensitive"] = _Coded(narrow_codes(codes), np.asarray(uniques, dtype=object),
                                    np.asarray(self.sensitive).dtype, factorized)
        if self.anatomy:
            return state
        classes = self.classes
        rows = np.flatnonzero(first_appearances(classes))  # one row per class, classes in order
        state["classes"] = classes.astype(np.int32 if self.n_classes < 2 ** 31 else np.int64)
        state["lo"], state["hi"] = _ByClass(self.lo[rows]), _ByClass(self.hi[rows])
        state["masks"] = {k: _ByClass(np.asarray(m)[rows]) for k, m in self.masks.items()}
        if self.group is not None:
            state["group"] = _ByClass(np.asarray(self.group)[rows])
        return state

    def __setstate__(self, state: dict) -> None:
        coded = state.get("sensitive")
        if isinstance(coded, _Coded):
            state["sensitive"] = coded.values()
            if coded.factorized:
                state["sensitive_codes"] = (coded.codes.astype(np.int64), coded.uniques)
        classes = state.get("classes")
        if classes is not None:
            state["classes"] = classes = classes.astype(np.int64, copy=False)
        for key in ("lo", "hi", "group"):
            if isinstance(state.get(key), _ByClass):
                state[key] = state[key].rows(classes)
        if any(isinstance(m, _ByClass) for m in state.get("masks", {}).values()):
            state["masks"] = {k: m.rows(classes) if isinstance(m, _ByClass) else m for k, m in state["masks"].items()}
        self.__dict__.update(state)

    @property
    def quasi(self) -> tuple[str, ...]:
        """The published quasi-identifiers (the columns of :attr:`lo` / :attr:`hi`)."""
        return tuple(n for n in self.attributes if self.schema[n].is_quasi)

    @property
    def sensitive_attributes(self) -> tuple[str, ...]:
        return tuple(n for n in self.attributes if self.schema[n].is_sensitive)

    @property
    def qi_attributes(self) -> tuple[Attribute, ...]:
        return tuple(self.schema[n] for n in self.quasi)

    # ------------------------------------------------------------------ equivalence classes
    @cached_property
    def classes(self) -> np.ndarray:
        """Class index ``0..n_classes-1`` of every row: the rows the adversary cannot tell apart, i.e. equal on
        the published ``group`` (when present) and on every generalized QI value (Li & Zhou's QI-group); in
        an :attr:`anatomy` release, the group alone.  ``uid`` never splits a class.  Classes are numbered in
        order of first appearance."""
        if self.group is not None:
            group = np.asarray(self.group, dtype=np.int64)
            by_group = _class_index(group[:, None])
            # a published group holds one generalized QI value (Li & Zhou's QI-group): then its rows are one
            # class, numbered as the groups first appear - one check instead of packing every column
            if self.anatomy or _uniform_within(by_group, [self.lo, self.hi, *self.masks.values()]):
                return by_group
            return _class_index(np.column_stack([group[:, None], _qi_key(self.lo, self.hi, self.masks)]))
        return _class_index(_qi_key(self.lo, self.hi, self.masks))

    @cached_property
    def n_classes(self) -> int:
        return int(self.classes.max()) + 1 if len(self) else 0

    @cached_property
    def class_sizes(self) -> np.ndarray:
        """Rows per class (counterfeit rows included, as the adversary sees them)."""
        return np.bincount(self.classes, minlength=self.n_classes)

    def class_rows(self) -> list[np.ndarray]:
        """Row indices of every class."""
        order = np.argsort(self.classes, kind="stable")
        return np.split(order, np.cumsum(self.class_sizes)[:-1])

    @cached_property
    def sensitive_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, values)``: the sensitive values factorized within this release."""
        codes, values = pd.factorize(pd.Series(self.sensitive, dtype=object), sort=True)
        return codes.astype(np.int64), np.asarray(values, dtype=object)

    @cached_property
    def class_regions(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` of each class: the closure of its rows (their common region when the class is a
        published group of identical records)."""
        n = self.n_classes
        q = self.lo.shape[1]
        sizes = np.asarray(self.class_sizes)
        if n and q and len(sizes) == n and sizes.min() > 0:  # rows sorted by class, each class reduced at once
            order = np.argsort(self.classes, kind="stable")
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            lo = np.minimum.reduceat(self.lo[order].astype(np.int64), starts, axis=0)
            hi = np.maximum.reduceat(self.hi[order].astype(np.int64), starts, axis=0)
            return self._closed(lo, hi)
        lo = np.full((n, q), np.iinfo(np.int32).max, dtype=np.int64)
        hi = np.full((n, q), -1, dtype=np.int64)
        np.minimum.at(lo, self.classes, self.lo)
        np.maximum.at(hi, self.classes, self.hi)
        return self._closed(lo, hi)

    def _closed(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = lo.astype(np.int32, copy=True)
        hi = hi.astype(np.int32, copy=True)
        for j, a in enumerate(self.qi_attributes):
            if len(lo):
                lo[:, j], hi[:, j] = a.closure(lo[:, j], hi[:, j])
        return lo, hi

    def closure_of(self, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray, dict]:
        """The closure of a set of rows (Definition 2.2 of Shmueli & Tassa): per attribute, the smallest
        generalized value of its model that contains every row's value.  Returns ``(lo, hi, masks)``."""
        rows = np.asarray(rows, dtype=np.int64)
        lo, hi = self._closed(self.lo[rows].min(axis=0, keepdims=True), self.hi[rows].max(axis=0, keepdims=True))
        masks = {n: np.bitwise_or.reduce(m[rows]) for n, m in self.masks.items()}
        return lo[0], hi[0], masks

    # ------------------------------------------------------------------ relations
    def contains_points(self, points: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``(n_rows, n_points)`` bool: row ``i`` contains raw point ``j``.  ``points`` are QI leaf codes
        over :attr:`quasi` (a raw table's :attr:`Table.qi_codes` restricted to these columns)."""
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        out = contains(self.lo[rows, None, :], self.hi[rows, None, :], points[None, :, :])
        for j, name in enumerate(self.quasi):
            if name in self.masks:
                bit = np.left_shift(np.uint64(1), points[:, j].astype(np.uint64))
                out &= (self.masks[name][rows, None] & bit[None, :]) != 0
        return out

    def comparable_rows(self, other: "Release", rows: np.ndarray | None = None,
                        other_rows: np.ndarray | None = None) -> np.ndarray:
        """``(n, m)`` bool: rows of this release comparable to rows of ``other`` on their common QIs."""
        rows = np.arange(len(self)) if rows is None else np.asarray(rows)
        other_rows = np.arange(len(other)) if other_rows is None else np.asarray(other_rows)
        common = [n for n in self.quasi if n in other.quasi]
        a = [self.quasi.index(n) for n in common]
        b = [other.quasi.index(n) for n in common]
        out = comparable(self.lo[rows][:, None, a], self.hi[rows][:, None, a],
                         other.lo[other_rows][None, :, b], other.hi[other_rows][None, :, b])
        for n in common:
            if n in self.masks and n in other.masks:
                out &= (self.masks[n][rows, None] & other.masks[n][None, other_rows]) != 0
        return out

    def qi_labels(self, notation: str = "native") -> pd.DataFrame:
        """The published QI columns as text (one label per cell), in the project's notation or ARX's
        (:mod:`multirelease.formats.arx`)."""
        from multirelease.formats import arx

        cols = {}
        for j, a in enumerate(self.qi_attributes):
            fmt = a.format_cell if notation == "native" else (lambda lo, hi, m, a=a: arx.format_cell(a, lo, hi, m))
            mask = self.masks.get(a.name)
            lo_j, hi_j = self.lo[:, j].astype(np.int64), self.hi[:, j].astype(np.int64)
            if mask is None and len(lo_j) and lo_j.min() >= 0 and hi_j.min() >= 0:
                # one int64 key per row and a 1-D unique (np.unique over rows sorts a structured view: seconds
                # at 10^6 rows); the same labels row by row
                width = int(hi_j.max()) + 1
                ukey, inv = np.unique(lo_j * width + hi_j, return_inverse=True)
                key = uniq = np.column_stack([ukey // width, ukey % width])
            else:
                key = np.column_stack([lo_j, hi_j] + ([mask.view(np.int64)] if mask is not None else []))
                uniq, inv = np.unique(key, axis=0, return_inverse=True) if len(key) else (key, np.zeros(0, int))
            labels = np.array([fmt(int(u[0]), int(u[1]), int(u[2]) & 0xFFFFFFFFFFFFFFFF if mask is not None else 0)
                               for u in uniq], dtype=object)
            cols[a.name] = labels[inv.reshape(-1)] if len(key) else np.zeros(0, dtype=object)
        return pd.DataFrame(cols)

    def to_frame(self, *, with_group: bool = True, notation: str = "native") -> pd.DataFrame:
        """The release in the contract's CSV layout: ``group`` (the class id, from 1), ``uid`` if tracked,
        then the published attributes in schema order.  ``notation="arx"``: QI cells in ARX's notation, and
        ``group`` only where the QI values do not already draw the groups (:func:`writes_group`)."""
        out = {}
        if notation == "arx":
            with_group = with_group and writes_group(self)
        if with_group:
            out["group"] = (self.group if self.group is not None else self.classes + 1)
        if self.uid is not None:
            out["uid"] = self.uid
        qi = self.qi_labels(notation)
        sens_cols = self._sensitive_frame()
        for name in self.attributes:
            if name in qi:
                out[name] = qi[name].to_numpy()
            elif name in sens_cols:
                out[name] = sens_cols[name]
            else:
                out[name] = self.other[name].to_numpy()
        return pd.DataFrame(out)

    def _sensitive_frame(self) -> dict:
        names = self.sensitive_attributes
        if not names:
            return {}
        if len(names) == 1:
            return {names[0]: self.sensitive}
        from .schema import COMPOSITE_SEPARATOR

        split = [str(v).split(COMPOSITE_SEPARATOR) for v in self.sensitive]
        return {n: np.array([s[i] for s in split], dtype=object) for i, n in enumerate(names)}

    def with_group(self, group: np.ndarray) -> "Release":
        return replace(self, group=np.asarray(group))


@dataclass(frozen=True, eq=False)
class ReleaseTruth:
    """The hidden side of a release, for evaluation only: who is behind each published row.

    ``person[i]`` is the identifier of row ``i`` (``None`` for a counterfeit), ``counterfeit[i]`` flags
    counterfeit rows.  Attacks never receive this object.
    """

    person: np.ndarray
    counterfeit: np.ndarray

    @classmethod
    def of_people(cls, ids: Sequence[str]) -> "ReleaseTruth":
        ids = np.asarray(list(ids), dtype=object)
        return cls(person=ids, counterfeit=np.zeros(len(ids), dtype=bool))


@dataclass(frozen=True)
class _ByClass:
    """One row of an array per class (a pickled :class:`Release`); :meth:`rows` expands it to every row."""

    per_class: np.ndarray

    def rows(self, classes: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self.per_class[classes])


@dataclass(frozen=True)
class _Coded:
    """An object array as each element's code among its distinct values (a pickled :class:`Release`);
    ``factorized``: they are the release's :attr:`Release.sensitive_codes`."""

    codes: np.ndarray
    uniques: np.ndarray
    dtype: np.dtype
    factorized: bool = False

    def values(self) -> np.ndarray:
        return self.uniques[self.codes].astype(self.dtype, copy=False)


def narrow_codes(codes: np.ndarray) -> np.ndarray:
    """Non-negative integer codes in the narrowest unsigned type that holds them (for pickling)."""
    top = int(codes.max()) if codes.size else 0
    if codes.size and int(codes.min()) < 0:
        return codes
    for kind in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(kind).max:
            return codes.astype(kind)
    return codes


def _qi_key(lo: np.ndarray, hi: np.ndarray, masks: Mapping[str, np.ndarray]) -> np.ndarray:
    """``(n, w)`` int64: every row's generalized QI values (``lo``, ``hi``, subset masks)."""
    parts = [lo, hi] + [np.asarray(m).view(np.int64)[:, None] for m in masks.values()]
    return np.column_stack(parts).astype(np.int64, copy=False)


def first_appearances(codes: np.ndarray) -> np.ndarray:
    """Where each code first appears (booleans), for codes numbered ``0..`` in order of first appearance
    (:func:`_class_index`, :func:`pandas.factorize`): a row is a first appearance when its code exceeds every
    code before it."""
    codes = np.asarray(codes)
    first = np.ones(len(codes), dtype=bool)
    first[1:] = codes[1:] > np.maximum.accumulate(codes)[:-1]
    return first


def _uniform_within(codes: np.ndarray, arrays: Sequence[np.ndarray]) -> bool:
    """Whether every row of each array equals the first row of its code (``codes`` numbered ``0..`` in order of
    first appearance): the rows of a code are then alike in all ``arrays``."""
    firsts = np.flatnonzero(first_appearances(codes))[codes]
    return all(np.array_equal(a, np.asarray(a)[firsts]) for a in arrays)


def _class_index(key: np.ndarray) -> np.ndarray:
    """Rows with equal ``key`` rows share an index ``0..``, numbered in order of first appearance: the columns
    packed into one int64 per row in mixed radix (each column's range its digit; a column too wide is
    factorized first, and the codes so far factorized when the next digit would overflow), then one hash
    factorization of the packed codes - linear, unlike a row sort."""
    key = np.asarray(key)
    codes = np.zeros(len(key), dtype=np.int64)
    if not len(key):
        return codes
    card = 1  # codes < card
    for col in key.T:
        col = np.asarray(col, dtype=np.int64)
        low, width = int(col.min()), int(col.max()) - int(col.min()) + 1
        if width > len(key):  # a wide column: its distinct values (at most one per row) numbered
            col, uniques = pd.factorize(col)
            low, width = 0, len(uniques)
        if card * width >= 2 ** 62:
            codes, uniques = pd.factorize(codes)
            card = len(uniques)
        codes = codes * width + (col - low)
        card *= width
    return pd.factorize(codes)[0].astype(np.int64, copy=False)


def writes_group(release: "Release") -> bool:
    """Whether an ARX-notation file needs the ``group`` column: ARX writes none, so it is left out when the
    classes the QI values draw already are the groups, numbered from 1 in order of first appearance (as the
    reader numbers them), and no counterfeit statistics refer to the group ids."""
    if release.group is None:
        return False
    if release.anatomy or release.counterfeits:
        return True
    qi_classes = _class_index(_qi_key(release.lo, release.hi, release.masks))
    return not np.array_equal(np.asarray(release.group, dtype=np.int64), qi_classes + 1)


# ---------------------------------------------------------------------- groups and classes


def _first_mixed_group(group: np.ndarray, classes: np.ndarray) -> tuple[int, int, int] | None:
    """The first group (in row order) that holds rows of two ``classes``, as ``(group id, row i, row j)``
    with ``i`` its first row and ``j`` its first row of another class (0-based); ``None`` when none does.
    ``classes`` must refine ``group`` (be computed with the group in the key)."""
    n_classes = int(classes.max()) + 1 if len(classes) else 0
    if n_classes == len(pd.unique(group)):
        return None
    _, first = np.unique(classes, return_index=True)
    per_group = pd.Series(group[first]).value_counts()
    i = int(np.flatnonzero(np.isin(group, per_group.index[per_group.to_numpy() > 1]))[0])
    same = np.flatnonzero(group == group[i])
    j = int(same[classes[same] != classes[i]][0])
    return int(group[i]), i, j
