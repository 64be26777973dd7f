"""Releases: what a recipient sees, as leaf-code ranges, and the release CSV format of the contract.

Over 500 lines because it is one data type with its one file format: the class, its vectorized relations, and
the reading and writing of release files (either notation; the cells of ARX's live in :mod:`multirelease.formats.arx`).

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
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from .hierarchy import _scalar
from .schema import Attribute, Schema
from .table import composite_sensitive, refuse_missing_sensitive

__all__ = [
    "Release", "ReleaseTruth", "contains", "comparable", "generalizes", "writes_group",
    "read_release_csv", "write_release_csv", "read_counterfeits_csv", "write_counterfeits_csv",
    "release_from_frame", "read_release_bytes", "release_csv",
]

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
        key = _qi_key(self.lo, self.hi, self.masks)
        if self.group is not None:
            group = np.asarray(self.group, dtype=np.int64)[:, None]
            key = group if self.anatomy else np.column_stack([group, key])
        return _class_index(key)

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


def _qi_key(lo: np.ndarray, hi: np.ndarray, masks: Mapping[str, np.ndarray]) -> np.ndarray:
    """``(n, w)`` int64: every row's generalized QI values (``lo``, ``hi``, subset masks)."""
    parts = [lo, hi] + [np.asarray(m).view(np.int64)[:, None] for m in masks.values()]
    return np.column_stack(parts).astype(np.int64, copy=False)


def _class_index(key: np.ndarray) -> np.ndarray:
    """Rows with equal ``key`` rows share an index ``0..``, numbered in order of first appearance (one hash
    factorization per column, pairing the codes so far with the column's: linear, unlike a row sort)."""
    codes = np.zeros(len(key), dtype=np.int64)
    for col in key.T:
        c, uniques = pd.factorize(col)
        codes = pd.factorize(codes * len(uniques) + c)[0]
    return codes.astype(np.int64, copy=False)


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


# ---------------------------------------------------------------------- files


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


# ---------------------------------------------------------------------- CSV I/O
def _scalars(col: pd.Series) -> pd.Series:
    """``col.map(_scalar)``, computed once per distinct cell when every cell is text (a release of 10^6 rows
    has a few thousand distinct cells per column; cells of other types - YAML rows - are mapped one by
    one, as ``True`` and ``1`` would be one value to a factorization)."""
    if not len(col) or (col.dtype == object and not all(type(x) is str for x in col)):
        return col.map(_scalar)
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    mapped = np.array([_scalar(u) for u in uniques], dtype=object)
    return pd.Series(mapped[codes], index=col.index, name=col.name, dtype=object)


def _unique_text(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(col.to_numpy(dtype=str), return_inverse=True)`` by a factorization (sorting the distinct
    cells only; a sort of 10^6 strings was most of the parsing time)."""
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    u = np.asarray(uniques, dtype=str)
    order = np.argsort(u, kind="stable")
    rank = np.empty(len(u), np.int64)
    rank[order] = np.arange(len(u))
    return u[order], rank[codes]


def release_from_frame(schema: Schema, frame: pd.DataFrame, *, source: str | None = None,
                       counterfeits: Mapping[int, int] | None = None, anatomy: bool = False,
                       notation: str | None = None) -> Release:
    """Parse a frame in the release CSV layout (text cells) into a :class:`Release`.

    A ``group`` whose rows carry different generalized QI values is bad input (key ``group <id>``, naming two
    such rows by data row and file line, the header being line 1) unless ``anatomy`` declares an
    anatomy-style release, where the class is the group (module docstring); ``anatomy`` needs a ``group``
    column.  QI cells are read in the project's notation (``notation="native"``) or in ARX's, which reads every
    native cell the same (:mod:`multirelease.formats.arx`; ``None`` or ``"arx"``).
    """
    from multirelease.formats import arx

    frame = frame.copy()
    frame.columns = [str(c).strip() for c in frame.columns]
    attrs = []
    for col in frame.columns:
        if col in RESERVED_COLUMNS:
            continue
        if col not in schema:
            raise InputError(f"unknown attribute '{col}'", file=source, key=f"column {col}")
        if schema[col].role == "identifier":
            raise InputError(f"column '{col}' is the identifier; releases never publish it", file=source,
                             key=f"column {col}")
        attrs.append(col)
    if len(set(attrs)) != len(attrs):
        raise InputError("a column appears twice", file=source)
    attributes = schema.restrict(attrs)
    quasi = [n for n in attributes if schema[n].is_quasi]
    n = len(frame)
    lo = np.zeros((n, len(quasi)), dtype=np.int32)
    hi = np.zeros((n, len(quasi)), dtype=np.int32)
    masks: dict[str, np.ndarray] = {}
    for j, name in enumerate(quasi):
        a = schema[name]
        parse = a.parse_cell if notation == "native" else (lambda text, a=a: arx.parse_cell(a, text))
        uniq, inv = _unique_text(_scalars(frame[name]))
        parsed = np.zeros((len(uniq), 3), dtype=object)
        for u, text in enumerate(uniq):
            try:
                parsed[u] = parse(text)
            except InputError as exc:
                row = int(np.flatnonzero(inv == u)[0]) + 2  # header is line 1
                raise InputError(exc.problem, file=source, key=f"column {name}, line {row}") from None
        lo[:, j] = parsed[inv, 0].astype(np.int32)
        hi[:, j] = parsed[inv, 1].astype(np.int32)
        if a.is_subsets:
            masks[name] = np.array([int(x) for x in parsed[inv, 2]], dtype=np.uint64)
    sens = [x for x in attributes if schema[x].is_sensitive]
    for name in sens:
        h = schema[name].hierarchy
        if h is not None:
            bad = ~_scalars(frame[name]).isin(h._leaf_index.keys())
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0]) + 2
                raise InputError(f"value '{frame[name][bad].iloc[0]}' is not in the hierarchy of '{name}'",
                                 file=source, key=f"column {name}, line {row}")
    refuse_missing_sensitive(schema, frame, sens, source=source)  # blank / NaN: declared or refused
    sensitive = composite_sensitive(pd.DataFrame({c: _scalars(frame[c]) for c in sens}, index=frame.index)
                                    if len(frame) else frame, sens)
    others = [x for x in attributes if not schema[x].is_quasi and not schema[x].is_sensitive]
    other = pd.DataFrame({c: _scalars(frame[c]) for c in others}).reset_index(drop=True) if others else None
    group = None
    if "group" in frame.columns:
        try:
            numbers = pd.to_numeric(frame["group"], downcast=None).to_numpy(dtype=np.float64)
        except (ValueError, TypeError):
            numbers = np.array([np.nan])
        if np.isnan(numbers).any() or (numbers != np.round(numbers)).any():
            raise InputError("group ids must be integers", file=source, key="column group")
        group = numbers.astype(np.int64)
    if anatomy and group is None:
        raise InputError("an anatomy release needs a group column", file=source, key="column group")
    if group is not None and not anatomy:
        classes = _class_index(np.column_stack([group, _qi_key(lo, hi, masks)]))
        mixed = _first_mixed_group(group, classes)
        if mixed is not None:
            g, i, j = mixed
            differ = [name for k, name in enumerate(quasi) if lo[i, k] != lo[j, k] or hi[i, k] != hi[j, k]
                      or (name in masks and masks[name][i] != masks[name][j])]
            raise InputError(_mixed_problem(frame, differ, i, j), file=source, key=f"group {g}")
    if counterfeits and group is not None and set(counterfeits) - set(group.tolist()):
        raise InputError(f"counterfeits for group {min(set(counterfeits) - set(group.tolist()))}, which the release "
                         "does not have", file=source, key="column group")
    uid = frame["uid"].map(_scalar).to_numpy(dtype=object) if "uid" in frame.columns else None
    return Release(schema=schema, attributes=attributes, lo=lo, hi=hi, sensitive=sensitive, masks=masks,
                   other=other, group=group, uid=uid, counterfeits=dict(counterfeits) if counterfeits else None,
                   anatomy=anatomy)


def _mixed_problem(frame: pd.DataFrame, differ: Sequence[str], i: int, j: int) -> str:
    """The problem text of a group mixing rows ``i`` and ``j`` (0-based data rows): their cells, as
    written, of the QIs ``differ`` on which they differ."""
    def cells(r: int) -> str:
        return ", ".join(f"{name}={_scalar(frame[name].iloc[r])}" for name in differ)

    return (f"mixes rows the adversary tells apart by their generalized QI values: data row {i + 1} (line "
            f"{i + 2}) has {cells(i)}, data row {j + 1} (line {j + 2}) has {cells(j)} "
            f"(declare an anatomy release if the QIs are published exactly on purpose)")


def read_release_csv(path: str | Path, schema: Schema, *, counterfeits: str | Path | None = None,
                     separator: str | None = None, anatomy: bool = False, notation: str | None = None) -> Release:
    """Read a release file (and optionally its counterfeit statistics) in the contract's CSV format;
    ``anatomy`` declares an anatomy-style release (:func:`release_from_frame`).  ``notation`` ``native`` /
    ``arx`` fixes the notation and its separator (``,`` / ``;``); ``None`` tells the separator from the header
    and reads the cells in ARX's notation, which reads every native cell the same (:mod:`multirelease.formats.arx`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=str(path)) from None
    return read_release_bytes(data, schema, source=str(path), counterfeits=read_counterfeits_csv(counterfeits)
                              if counterfeits is not None else None, separator=separator, anatomy=anatomy,
                              notation=notation)


def read_release_bytes(data: bytes, schema: Schema, *, source: str, counterfeits: Mapping[int, int] | None = None,
                       separator: str | None = None, anatomy: bool = False, notation: str | None = None) -> Release:
    """:func:`read_release_csv` of a file's bytes (``source`` names it in errors)."""
    from multirelease.formats.arx import SEPARATORS, detect_separator
    from multirelease.formats.csv_read import read_csv_bytes

    if separator is None:
        if notation is not None:
            separator = SEPARATORS[notation]
        else:
            header = data.split(b"\n", 1)[0].decode("utf-8", errors="replace")
            separator = detect_separator(header, (*schema.names, *RESERVED_COLUMNS))
    try:  # pyarrow where it reads as pandas does, else pandas (multirelease.formats.csv_read)
        frame = read_csv_bytes(data, separator)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"cannot parse CSV ({str(exc).splitlines()[0]})", file=source) from None
    if not len(frame):
        raise InputError("the release file holds no records", file=source)
    return release_from_frame(schema, frame, source=source, counterfeits=counterfeits, anatomy=anatomy,
                              notation=notation)


def release_csv(release: Release, notation: str = "native") -> str:
    """The text of a release file: the contract's CSV (``group`` column first) or ARX's (``;``, ARX cells)."""
    from multirelease.formats.arx import SEPARATORS

    return release.to_frame(notation=notation).to_csv(index=False, sep=SEPARATORS[notation])


def write_release_csv(release: Release, path: str | Path, notation: str = "native") -> None:
    """Write a release file (:func:`release_csv`)."""
    Path(path).write_text(release_csv(release, notation), encoding="utf-8")


def counterfeits_from_frame(frame: pd.DataFrame, *, source: str | None = None) -> dict[int, int]:
    cols = [str(c).strip() for c in frame.columns]
    if cols != ["group", "counterfeits"]:
        raise InputError("counterfeit statistics need exactly the columns group,counterfeits", file=source)
    try:
        g, c = (pd.to_numeric(frame.iloc[:, j]) for j in (0, 1))
        if g.isna().any() or c.isna().any() or (g != g.round()).any() or (c != c.round()).any():
            raise ValueError("not integers")  # 1.5 would have been cut to 1
        g, c = g.astype(np.int64), c.astype(np.int64)
    except (ValueError, TypeError):
        raise InputError("group and counterfeits must be integers", file=source) from None
    if g.duplicated().any():
        raise InputError(f"group {g[g.duplicated()].iloc[0]} appears twice", file=source, key="column group")
    if (c < 0).any():
        raise InputError("counterfeit counts must be >= 0", file=source, key="column counterfeits")
    return dict(zip(g.tolist(), c.tolist()))


def read_counterfeits_csv(path: str | Path) -> dict[int, int]:
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    return counterfeits_from_frame(pd.read_csv(path, dtype=str, keep_default_na=False), source=str(path))


def write_counterfeits_csv(counterfeits: Mapping[int, int], path: str | Path) -> None:
    pd.DataFrame({"group": list(counterfeits), "counterfeits": list(counterfeits.values())}).to_csv(path, index=False)
