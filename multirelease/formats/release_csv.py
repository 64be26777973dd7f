"""The release CSV of the contract (DESIGN.md, "Release files"): a :class:`~multirelease.model.release.Release`
read from and written to a file, in the project's notation or ARX's, with its counterfeit statistics.

Reading is validation: a cell outside its attribute's hierarchy, a missing sensitive value or a ``group`` whose
rows carry different generalized QI values is bad input (:class:`~multirelease.errors.InputError`, naming the
file, the row and the column); the cells of ARX's notation are parsed by :mod:`multirelease.formats.arx`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.hierarchy import _all_text, _scalar
from multirelease.model.release import RESERVED_COLUMNS, Release, _class_index, _first_mixed_group, _qi_key
from multirelease.model.schema import Schema
from multirelease.model.table import composite_sensitive, refuse_missing_sensitive

__all__ = ["read_release_csv", "write_release_csv", "read_counterfeits_csv", "write_counterfeits_csv",
           "release_from_frame", "read_release_bytes", "release_csv", "counterfeits_from_frame"]


# ---------------------------------------------------------------------- CSV I/O
def _scalars(col: pd.Series) -> pd.Series:
    """``col.map(_scalar)``, computed once per distinct cell when every cell is text (a release of 10^6 rows
    has a few thousand distinct cells per column; cells of other types - YAML rows - are mapped one by
    one, as ``True`` and ``1`` would be one value to a factorization)."""
    if not len(col) or not _all_text(col):
        return col.map(_scalar)
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    mapped = np.array([_scalar(u) for u in uniques], dtype=object)
    return pd.Series(mapped[codes], index=col.index, name=col.name, dtype=object)


def _distinct_cells(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(col.map(_scalar).to_numpy(dtype=str), return_inverse=True)`` by one factorization of the
    column (:func:`_scalar` and the sort applied to the distinct cells only; a sort of 10^6 strings was most of
    the parsing time)."""
    if not len(col) or not _all_text(col):
        codes, uniques = pd.factorize(col.map(_scalar), use_na_sentinel=False)
        mapped = np.asarray(uniques, dtype=str)
    else:
        codes, uniques = pd.factorize(col, use_na_sentinel=False)
        mapped = np.array([_scalar(u) for u in uniques], dtype=str) if len(uniques) else np.zeros(0, str)
    u, inv = np.unique(mapped, return_inverse=True)
    return u, inv.reshape(-1)[codes]


def _group_numbers(col: pd.Series) -> np.ndarray | None:
    """The ``group`` column as integers, each distinct cell converted once; ``None`` when a cell is not an
    integer."""
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    try:
        numbers = pd.to_numeric(pd.Series(uniques), downcast=None).to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        return None
    if np.isnan(numbers).any() or (numbers != np.round(numbers)).any():
        return None
    return numbers.astype(np.int64)[codes]


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
        uniq, inv = _distinct_cells(frame[name])
        parsed = []
        for u, text in enumerate(uniq.tolist()):
            try:
                parsed.append(parse(text))
            except InputError as exc:
                row = int(np.flatnonzero(inv == u)[0]) + 2  # header is line 1
                raise InputError(exc.problem, file=source, key=f"column {name}, line {row}") from None
        lo[:, j] = np.array([p[0] for p in parsed], dtype=np.int32)[inv]
        hi[:, j] = np.array([p[1] for p in parsed], dtype=np.int32)[inv]
        if a.is_subsets:
            masks[name] = np.array([int(p[2]) for p in parsed], dtype=np.uint64)[inv]
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
        group = _group_numbers(frame["group"])
        if group is None:
            raise InputError("group ids must be integers", file=source, key="column group")
    if anatomy and group is None:
        raise InputError("an anatomy release needs a group column", file=source, key="column group")
    uid = frame["uid"].map(_scalar).to_numpy(dtype=object) if "uid" in frame.columns else None
    try:  # the release checks that no group mixes classes (computing its classes once, for both)
        release = Release(schema=schema, attributes=attributes, lo=lo, hi=hi, sensitive=sensitive, masks=masks,
                          other=other, group=group, uid=uid,
                          counterfeits=dict(counterfeits) if counterfeits else None, anatomy=anatomy)
    except ValueError:  # told as bad input, naming two of the group's rows by line
        g, i, j = _first_mixed_group(group, _class_index(np.column_stack([group, _qi_key(lo, hi, masks)])))
        differ = [name for k, name in enumerate(quasi) if lo[i, k] != lo[j, k] or hi[i, k] != hi[j, k]
                  or (name in masks and masks[name][i] != masks[name][j])]
        raise InputError(_mixed_problem(frame, differ, i, j), file=source, key=f"group {g}") from None
    if counterfeits and group is not None and set(counterfeits) - set(group.tolist()):
        raise InputError(f"counterfeits for group {min(set(counterfeits) - set(group.tolist()))}, which the release "
                         "does not have", file=source, key="column group")
    return release


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
            end = data.find(b"\n")
            header = data[:end if end >= 0 else len(data)].decode("utf-8", errors="replace")
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
