"""Raw tables (snapshots) keyed by identifier, and the changes between two snapshots.

A :class:`Table` is the data holder's truth at one point in time: one row per individual, indexed by the
identifier (the row number, from 1, when the schema has no identifier attribute), every value as text.
A :class:`Change` holds what happens before a release: insertions, deletions and internal updates of QI and
sensitive values (Li & Zhou, section II: "internal updates").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from multirelease.formats.csv_read import pyarrow_text_dtype, read_csv_frame, read_parquet_frame
from multirelease.errors import InputError
from .hierarchy import _all_text, _fmt_number, _scalar, normalize_values
from .release import narrow_codes
from .schema import COMPOSITE_SEPARATOR, MISSING_VALUES, Schema

__all__ = ["Table", "Change", "read_table", "file_spec", "FILE_KEYS", "composite_sensitive",
           "first_missing_sensitive", "refuse_missing_sensitive", "refuse_bad_cells", "BadCells", "SHOWN_BAD_CELLS"]


def first_missing_sensitive(schema: Schema, frame: pd.DataFrame,
                            names: Sequence[str] | None = None) -> tuple[str, int, str] | None:
    """The first sensitive cell of ``frame`` that is missing - blank or NaN (``schema.MISSING_VALUES``) - and not
    declared (the attribute's ``allow_missing``, or a leaf of its hierarchy): ``(attribute, row position, cell)``,
    else ``None``.  Counted as a value, a blank would pass for one more distinct sensitive value."""
    for name in (schema.sensitive if names is None else names):
        if name not in frame.columns:
            continue
        bad = _missing_mask(schema[name], frame[name])
        if bad is not None and bad.any():
            pos = int(np.flatnonzero(bad)[0])
            return name, pos, str(frame[name].iloc[pos])
    return None


def _missing_mask(attribute, column: pd.Series) -> np.ndarray | None:
    """Which cells of one sensitive column are missing and not declared (:func:`first_missing_sensitive`);
    ``None`` when none can be (``allow_missing``, an empty column)."""
    if attribute.allow_missing or not len(column):
        return None
    codes = None
    if _all_text(column):  # each distinct cell tested once
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        column = pd.Series(uniques)
    text = column.astype(str).str.strip()
    bad = text.str.casefold().isin(MISSING_VALUES).to_numpy(copy=True)
    if attribute.hierarchy is not None and bad.any():
        bad &= ~text.isin(attribute.hierarchy._leaf_index.keys()).to_numpy()
    return bad if codes is None else bad[codes]


def refuse_missing_sensitive(schema: Schema, frame: pd.DataFrame, names: Sequence[str] | None = None, *,
                             source: str | None = None, key: str | None = None, ids: Any = None) -> None:
    """Raise :class:`InputError` on the first missing sensitive cell (:func:`first_missing_sensitive`), located
    as ``key[row]`` (YAML rows) or ``column <name>, line <n>`` (a CSV file, the header being line 1)."""
    missing = first_missing_sensitive(schema, frame, names)
    if missing is None:
        return
    name, pos, cell = missing
    where = f"{key}[{pos}]" if key else f"column {name}, line {pos + 2}"
    record = f" (record {ids.iloc[pos]})" if ids is not None else ""
    raise InputError(_missing_problem(name, cell) + record, file=source, key=where)


def _is_missing(attribute, cell: str) -> bool:
    """One cell of :func:`first_missing_sensitive`."""
    text = str(cell).strip()
    return (not attribute.allow_missing and text.casefold() in MISSING_VALUES
            and (attribute.hierarchy is None or text not in attribute.hierarchy._leaf_index))


def _missing_problem(name: str, cell: str, hint: bool = True) -> str:
    shown = "blank" if not cell.strip() else f"'{cell}'"
    return f"sensitive value of '{name}' is missing ({shown})" + (f"; {_MISSING_HINT}" if hint else "")


_MISSING_HINT = "declare it with allow_missing: true on the attribute to keep it as a value"
#: how many bad cells of a table one error line shows (all of them are counted)
SHOWN_BAD_CELLS = 5


def _not_in_hierarchy(name: str, hierarchy, cell: str) -> str:
    """A value that is no leaf of its attribute's hierarchy; of a numeric one, whether it is no number or one
    outside the leaves' range."""
    text = f"value '{cell}' of '{name}' is not in its hierarchy"
    values = hierarchy.leaf_values
    if values is None or not len(values):
        return text
    try:
        x = float(cell)
    except ValueError:
        return text + ": not a number"
    low, high = float(np.min(values)), float(np.max(values))
    return text + (f": outside {_fmt_number(low)}..{_fmt_number(high)}" if not low <= x <= high else "")


class BadCells(NamedTuple):
    """One check of :func:`refuse_bad_cells`: the ``column``, its ``bad`` mask over the rows, ``say(position)``
    the problem of one bad cell, and whether the problem is a missing sensitive value (its hint said once)."""

    column: str
    bad: np.ndarray
    say: Callable[[int], str]
    missing: bool = False


def refuse_bad_cells(checks: Sequence[BadCells], ids: Sequence[Any], *, source: str | None, key: str | None,
                     rows_at: tuple[str, int] = ("line", 2)) -> None:
    """Raise one :class:`InputError` counting *every* bad cell of a table and naming the first
    :data:`SHOWN_BAD_CELLS` in row order, each with its place and record (issue 25: every bad record of a
    snapshot at once, not one a run).  A cell is placed as ``key[position]`` (YAML rows), else as ``column
    NAME, WORD N`` with ``rows_at = (WORD, N of the first row)``: ``("line", 2)`` for a CSV file read from its
    first record (the header is line 1), ``("record", 1)`` for a Parquet file.  A single bad cell keeps the
    one-problem form ``PLACE: PROBLEM``.  The masks are the vectorized checks themselves: only a failing
    table is read cell by cell, and only its first few bad cells."""
    counts = [int(np.count_nonzero(c.bad)) for c in checks]
    total = sum(counts)
    if not total:
        return
    first = sorted((int(pos), j) for j, (c, n) in enumerate(zip(checks, counts)) if n
                   for pos in np.flatnonzero(c.bad)[:SHOWN_BAD_CELLS])[:SHOWN_BAD_CELLS]

    def place(pos: int, column: str) -> str:
        if key:
            return f"{key}[{pos}]"
        return f"column {column}, {rows_at[0]} {rows_at[1] + pos}"

    def problem(pos: int, check: BadCells) -> str:
        text = check.say(pos)
        return text if f"'{ids[pos]}'" in text else f"{text} (record {ids[pos]})"

    if total == 1:
        pos, j = first[0]
        hint = f"; {_MISSING_HINT}" if checks[j].missing else ""
        raise InputError(problem(pos, checks[j]) + hint, file=source, key=place(pos, checks[j].column))
    rows = int(np.count_nonzero(np.logical_or.reduce([c.bad for c, n in zip(checks, counts) if n])))
    listed = "; ".join(f"{place(pos, checks[j].column)}: {problem(pos, checks[j])}" for pos, j in first)
    more = f"; ... (the first {len(first)} shown)" if total > len(first) else ""
    in_rows = f" in {rows:,} records" if rows != total else ""
    hint = f"; for a missing sensitive value: {_MISSING_HINT}" if any(checks[j].missing for _, j in first) else ""
    raise InputError(f"{total:,} bad values{in_rows}: {listed}{more}{hint}", file=source, key=key)


def composite_sensitive(frame: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    """The composite sensitive value of each row: one attribute's value, or several joined by `` | ``."""
    if not names:
        return np.full(len(frame), "", dtype=object)
    if len(names) == 1:
        return frame[names[0]].to_numpy(dtype=object)
    out = frame[names[0]].astype(str)
    for name in names[1:]:  # column-wise concatenation (a row-wise join is ~50x slower on Adult)
        out = out + COMPOSITE_SEPARATOR + frame[name].astype(str)
    return out.to_numpy(dtype=object)


@dataclass(frozen=True)
class _CodedFrame:
    """A :class:`Table`'s frame as pickled: its index, and per column its distinct values and each row's code."""

    index: pd.Index
    columns: tuple
    coded: tuple

    def frame(self) -> pd.DataFrame:
        cols = {}
        for name, (codes, uniques) in zip(self.columns, self.coded):
            values = uniques.take(codes)
            cols[name] = pd.Series(values, index=self.index, name=name, dtype=uniques.dtype, copy=False)
        return pd.DataFrame(cols, index=self.index, columns=list(self.columns))


def arrow_text(index: pd.Index) -> Any:
    """The text of ``index`` as one pyarrow ``large_string`` Array when pandas holds it in pyarrow (its ``str``
    dtype), else ``None``."""
    if getattr(index.dtype, "storage", None) != "pyarrow":
        return None
    import pyarrow as pa

    a = pa.array(index.array)  # an Array or a ChunkedArray
    chunks = [c.cast(pa.large_string()) for c in getattr(a, "chunks", [a])]
    return pa.chunked_array(chunks, type=pa.large_string()).combine_chunks()


def _members(ids: pd.Index, among: pd.Index) -> np.ndarray:
    """Which of ``ids`` are in ``among`` (booleans): a pyarrow hash set of ``among`` where both hold text in
    pyarrow (:func:`arrow_text`; pandas' ``str`` ``Index.isin`` took 1 s for 10^6 ids against 0.05 s), else
    ``Index.isin``."""
    left, right = arrow_text(ids), arrow_text(among)
    if left is None or right is None:
        return ids.isin(among)
    import pyarrow.compute as pc

    return np.asarray(pc.is_in(left, value_set=right).to_numpy(zero_copy_only=False), dtype=bool)


def _numbers(first_id: int, n: int) -> list[str]:
    """The identifiers of ``n`` records numbered from ``first_id`` (a table read without an identifier column)."""
    return [str(i) for i in range(first_id, first_id + n)]


def number_index(first_id: int, n: int, name: str) -> pd.Index:
    """``pd.Index(_numbers(first_id, n), name=name)``, the same index, made by pyarrow where pandas keeps its
    text there (its ``str`` dtype): the 900,000 numbers of the census of issue 28 in 0.11 s instead of 0.4 s."""
    text = pyarrow_text_dtype()
    if n and text is not None:
        import pyarrow as pa
        import pyarrow.compute as pc

        numbers = pc.cast(pa.array(np.arange(first_id, first_id + n, dtype=np.int64)), pa.large_string())
        return pd.Index(pd.array(numbers, dtype=text), name=name)
    return pd.Index(_numbers(first_id, n), name=name)


def _coded_column(col: pd.Series) -> tuple[pd.Series, np.ndarray, pd.Index] | None:
    """``normalize_values(col)`` (its text stripped) by one factorization of a text column without a missing
    cell - each distinct cell stripped once -, with that column's codes and distinct values (what
    :func:`pandas.factorize` gives for it: its hierarchy's leaves and a pickled table's columns are found from
    them without a pass over its rows); ``None`` for another column (:func:`normalize_values` then)."""
    if not isinstance(col.dtype, pd.StringDtype) or col.isna().any():
        return None
    rows, distinct = pd.factorize(col, use_na_sentinel=False)
    stripped = normalize_values(pd.Series(distinct, dtype=col.dtype))
    merged, uniques = pd.factorize(stripped, use_na_sentinel=False)  # two cells alike once stripped: one value
    codes = merged[rows]
    out = pd.Series(uniques.take(codes), index=col.index, name=col.name, dtype=stripped.dtype, copy=False)
    return out, narrow_codes(codes), uniques  # held with the table: a byte per cell for a census column


@dataclass(frozen=True, eq=False)
class Table:
    """A raw snapshot: ``frame`` has one row per individual, indexed by identifier (text), one column per
    non-identifier attribute of ``schema``, values as text (validated against the hierarchies)."""

    schema: Schema
    frame: pd.DataFrame

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(cls, schema: Schema, frame: pd.DataFrame, *, source: str | None = None,
                   key: str | None = None, first_id: int = 1, rows_at: tuple[str, int] = ("line", 2)) -> "Table":
        """Validate a raw frame: known columns, every attribute present, then every cell - identifiers
        distinct, sensitive values not missing, every value a leaf of its hierarchy - each bad cell counted
        and the first few named in one error (:func:`refuse_bad_cells`; ``rows_at`` places a row of a file:
        ``("line", 2)`` a CSV read from its first record).  A text column (a file read) is normalized and
        checked through its distinct cells (:func:`_coded_column`), which give its QI leaf codes
        (:attr:`qi_codes`) and its pickled form too; records numbered here are distinct by construction, so
        they are not checked for twice-seen identifiers (issue 28: the census's 900,000 records read in 1.5 s
        instead of 3.1 s)."""
        frame = frame.copy()
        for col in frame.columns:
            if col not in schema:
                raise InputError(f"unknown attribute '{col}'", file=source, key=key or f"column {col}")
        ident = schema.identifier
        numbered = ident is None or ident not in frame.columns  # the records numbered here: distinct
        if not numbered:
            ids = frame[ident].map(_scalar)
            frame = frame.drop(columns=[ident])
        missing = [n for n in schema.published if n not in frame.columns]
        if missing:
            raise InputError(f"attribute '{missing[0]}' has no column", file=source, key=key)
        frame = frame[list(schema.published)]
        # every cell checked column by column (vectorized), every bad one counted, the first few named
        checks: list[BadCells] = []
        if numbered:
            index = number_index(first_id, len(frame), ident or "id")
        else:
            id_values = ids.to_numpy(dtype=object)
            index = pd.Index(id_values, name=ident)
            twice = ids.duplicated().to_numpy()
            if twice.any():
                checks.append(BadCells(ident, twice, lambda pos: f"identifier '{id_values[pos]}' appears twice"))
        absent: dict[str, np.ndarray] = {}
        for name in schema.sensitive:
            bad = _missing_mask(schema[name], frame[name])
            if bad is not None and bad.any():
                absent[name] = bad
                checks.append(BadCells(name, bad, lambda pos, n=name, raw=frame[name]: _missing_problem(
                    n, str(raw.iloc[pos]), hint=False), missing=True))
        frame.index = index
        # each text column normalized through its distinct cells (_coded_column), which then give its leaves
        coded: dict[str, tuple[np.ndarray, pd.Index]] = {}
        if len(frame):
            columns = {}
            for name in frame.columns:
                got = _coded_column(frame[name])
                if got is None:
                    columns[name] = normalize_values(frame[name])
                else:
                    columns[name], *coded[name] = got
            frame = pd.DataFrame(columns, index=frame.index)
        else:
            frame = frame.astype(object)
        leaves = {}
        for name in schema.published:
            h = schema[name].hierarchy
            if h is None:
                continue
            if name in coded:
                codes, uniques = coded[name]
                leaves[name] = h._categories.get_indexer(np.asarray(uniques, dtype=object))[codes]
                bad = leaves[name] < 0
            else:
                bad = ~frame[name].isin(h._leaf_index.keys()).to_numpy()
            if bad.any():
                if name in absent:  # a missing sensitive value is named once, as missing
                    bad &= ~absent[name]
                checks.append(BadCells(name, bad, lambda pos, n=name, h=h, col=frame[name]: _not_in_hierarchy(
                    n, h, str(col.iloc[pos]))))
        if checks:
            order = {n: i for i, n in enumerate(schema.names)}
            checks.sort(key=lambda c: order.get(c.column, -1))
            refuse_bad_cells(checks, index.to_numpy(dtype=object), source=source, key=key, rows_at=rows_at)
        out = cls(schema, frame)
        if len(frame) and schema.quasi and all(n in leaves for n in schema.quasi):  # the QI leaf codes, found above
            out.__dict__["qi_codes"] = np.ascontiguousarray(np.column_stack([leaves[n] for n in schema.quasi]),
                                                            dtype=np.int32)
        if coded:  # held with the frame they describe (a pickled table's columns: __getstate__)
            out.__dict__["_coded"] = (frame, coded)
        if numbered:
            out.__dict__["_numbered_from"] = first_id  # the records numbered here (see renumbered)
            out._hold_id_runs(((first_id, len(frame)),))
        return out

    def renumbered(self, first_id: int) -> "Table":
        """This table with its records numbered from ``first_id`` when :meth:`from_frame` numbered them (no
        identifier column), else itself: a table read ahead of the tables before it (issue 28: a scenario's
        files read side by side) takes the numbers it would have had."""
        start = self.__dict__.get("_numbered_from")
        if start is None or start == first_id:
            return self
        index = number_index(first_id, len(self), self.frame.index.name)
        out = Table(self.schema, self.frame.set_axis(index))
        out.__dict__["_numbered_from"] = first_id
        out._hold_id_runs(((first_id, len(self)),))
        out._keep_figures(self)
        return out

    @classmethod
    def concat(cls, parts: Sequence["Table"]) -> "Table | None":
        """The table of the records of ``parts`` in order, as read at once from the file they are parts of
        (issue 28: a table file read in parts by several tasks, :func:`multirelease.formats.scenario._read_ahead`):
        the same frame, QI leaf codes and counts, and numbers (parts numbered on from each other: the first
        one's, for as many records as they hold); ``None`` when an identifier is in two parts (a file read at
        once is refused for it: read so, it says why) or numbered parts do not follow each other."""
        if len(parts) == 1:
            return parts[0]
        frame = pd.concat([p.frame for p in parts])
        starts = [p.__dict__.get("_numbered_from") for p in parts]
        numbered = all(start is not None for start in starts)
        if numbered and any(starts[i + 1] != starts[i] + len(parts[i]) for i in range(len(parts) - 1)):
            return None
        if not numbered and frame.index.has_duplicates:
            return None
        out = cls(parts[0].schema, frame)
        if all("qi_codes" in p.__dict__ for p in parts):
            out.__dict__["qi_codes"] = np.ascontiguousarray(np.concatenate([p.qi_codes for p in parts]))
        if all("leaf_counts" in p.__dict__ for p in parts):
            out.__dict__["leaf_counts"] = tuple(np.sum(counts, axis=0) for counts in
                                                zip(*(p.leaf_counts for p in parts)))
        if numbered:
            out.__dict__["_numbered_from"] = starts[0]
            out._hold_id_runs(((starts[0], len(frame)),))
        return out

    @classmethod
    def from_rows(cls, schema: Schema, rows: Any, *, source: str | None = None, key: str = "data.rows",
                  first_id: int = 1) -> "Table":
        """From a YAML list of mappings (``[{age: 30, zip: 1234}, ...]``) or of lists in schema order."""
        if not isinstance(rows, list):
            raise InputError("rows must be a list", file=source, key=key)
        if rows and all(isinstance(r, Mapping) for r in rows):
            frame = pd.DataFrame([{str(k): ("" if v is None else v) for k, v in r.items()} for r in rows],
                                 dtype=object)  # YAML null: a blank cell (a missing sensitive value is refused)
            na = frame.isna().to_numpy()
            for i, j in np.argwhere(na):  # an absent key; a NaN given as the value is named by from_frame
                if frame.columns[j] not in {str(k) for k in rows[i]}:
                    raise InputError(f"every row must give every attribute: no '{frame.columns[j]}'",
                                     file=source, key=f"{key}[{i}]")
            if na.any():
                frame = frame.where(~na, "nan")
        elif all(isinstance(r, (list, tuple)) for r in rows):
            names = list(schema.names)
            for i, r in enumerate(rows):
                if len(r) != len(names):
                    raise InputError(f"row has {len(r)} values, the schema has {len(names)} attributes",
                                     file=source, key=f"{key}[{i}]")
            frame = pd.DataFrame(rows, columns=names, dtype=object)
        else:
            raise InputError("rows must be all mappings or all lists", file=source, key=key)
        return cls.from_frame(schema, frame, source=source, key=key, first_id=first_id)

    def __getstate__(self) -> dict:
        """Pickled without the predecessor whose codes it may reuse (:attr:`qi_codes`), every column as its
        distinct values and each row's code (:func:`pandas.factorize`; the census data of 900,000 rows goes
        to a worker or back as 25 MB instead of 150 MB), rebuilt with the same values and dtypes."""
        state = dict(self.__dict__)
        state.pop("_qi_from", None)
        state.pop("_counts_from", None)
        state.pop("_figures_of", None)
        state["_id_runs"] = self.id_runs  # held again with the rebuilt index
        frame = self.frame
        held = state.pop("_coded", None)  # the columns factorized when read (from_frame), if of this frame
        known = held[1] if held is not None and held[0] is frame else {}
        coded = []
        for c in frame.columns:
            codes, uniques = known[c] if c in known else pd.factorize(frame[c], use_na_sentinel=False)
            coded.append((narrow_codes(codes), uniques))
        state["frame"] = _CodedFrame(frame.index, tuple(frame.columns), tuple(coded))
        if "qi_codes" in state:  # int32 leaf codes, sent in the narrowest integer type that holds them
            state["qi_codes"] = narrow_codes(state["qi_codes"])
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state.get("frame"), _CodedFrame):
            state["frame"] = state["frame"].frame()
        if "qi_codes" in state:
            state["qi_codes"] = np.ascontiguousarray(state["qi_codes"], dtype=np.int32)
        runs = state.pop("_id_runs", None)
        self.__dict__.update(state)
        if runs is not None:
            self._hold_id_runs(runs)

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.frame)

    @property
    def ids(self) -> np.ndarray:
        return self.frame.index.to_numpy(dtype=object)

    @cached_property
    def qi_codes(self) -> np.ndarray:
        """``(n, q)`` int32 leaf codes of the quasi-identifiers, in schema order.  A snapshot made by
        :meth:`apply` without updates of a quasi-identifier reuses its predecessor's codes for the records it
        keeps and encodes its insertions only."""
        same = self.__dict__.get("_figures_of")
        if same is not None:
            return same.qi_codes
        derived = self.__dict__.get("_qi_from")
        if derived is not None:
            parent, kept, inserted = derived
            codes = parent.qi_codes
            parts = [codes if len(kept) == len(codes) else codes[kept]]  # kept: every record, or some, in order
            if isinstance(inserted, np.ndarray):
                parts.append(inserted)
            elif inserted is not None:
                parts.append(Table(self.schema, inserted).qi_codes)
            del self.__dict__["_qi_from"]  # the predecessor is not needed any more
            return np.ascontiguousarray(np.concatenate(parts).astype(np.int32, copy=False))
        cols = [self.schema[n].hierarchy.encode(self.frame[n]) for n in self.schema.quasi]
        if not cols:
            return np.zeros((len(self), 0), dtype=np.int32)
        return np.ascontiguousarray(np.column_stack(cols).astype(np.int32))

    def _keep_figures(self, source: "Table") -> None:
        """The QI leaf codes and counts of ``source``, for this table of the same records and QI values: those
        it computed, and those it has yet to derive from its predecessor (:meth:`apply`), taken from it when
        first read (the snapshot's public part, :func:`multirelease.model.sequence._public_part`, encoded a
        census's million records again instead: 0.35 s)."""
        for figures in ("qi_codes", "leaf_counts"):
            if figures in source.__dict__:
                self.__dict__[figures] = source.__dict__[figures]
        if "_qi_from" in source.__dict__ or "_counts_from" in source.__dict__:
            self.__dict__["_figures_of"] = source

    # ------------------------------------------------------------------ identifiers known as numbers
    def _hold_id_runs(self, runs: tuple[tuple[int, int], ...]) -> None:
        self.__dict__["_id_runs"] = (runs, self.frame.index)

    @property
    def id_runs(self) -> tuple[tuple[int, int], ...] | None:
        """The identifiers as runs of consecutive integers - ``((start, count), ...)``: the index is the text
        of ``start, start + 1, ..., start + count - 1`` for each run, in order - when this table numbered its
        records (read without an identifier column, :meth:`from_frame`), or was made by :meth:`apply` from
        such a table without deletions, its insertions numbered too; else ``None``.  Held with the index it
        describes, and ``None`` once ``frame.index`` is another object."""
        held = self.__dict__.get("_id_runs")
        return held[0] if held is not None and held[1] is self.frame.index else None

    @cached_property
    def leaf_counts(self) -> tuple[np.ndarray, ...]:
        """Per quasi-identifier (schema order), the records of each of its leaves (int64, one per leaf):
        ``np.bincount`` of :attr:`qi_codes`.  A snapshot made by :meth:`apply` that keeps every record of its
        predecessor and updates no quasi-identifier adds its insertions' counts to its predecessor's (issue
        28: the counts of a table read by a worker travel with it, and the next snapshot's need not its codes)."""
        same = self.__dict__.get("_figures_of")
        if same is not None:
            return same.leaf_counts
        derived = self.__dict__.pop("_counts_from", None)
        if derived is not None:
            parent, inserted = derived
            if inserted is None:
                return parent.leaf_counts
            codes = inserted if isinstance(inserted, np.ndarray) else Table(self.schema, inserted).qi_codes
            return tuple(c + np.bincount(codes[:, j], minlength=len(c)) for j, c in enumerate(parent.leaf_counts))
        codes = self.qi_codes
        return tuple(np.bincount(codes[:, j], minlength=self.schema[name].hierarchy.n_leaves).astype(np.int64)
                     for j, name in enumerate(self.schema.quasi))

    @cached_property
    def sensitive(self) -> np.ndarray:
        """The composite sensitive value of every row (object array of text)."""
        return composite_sensitive(self.frame, self.schema.sensitive)

    def subset(self, ids: Sequence[str]) -> "Table":
        return Table(self.schema, self.frame.loc[list(ids)])

    # ------------------------------------------------------------------ dynamics
    def apply(self, change: "Change") -> "Table":
        """The next snapshot: deletions, then updates, then insertions (each validated)."""
        frame = self.frame
        kept = np.arange(len(frame))
        if change.delete:
            # membership tested once for the whole list (a per-id ``in frame.index`` costs microseconds each)
            known = pd.Index(list(change.delete), dtype=object).isin(frame.index)
            if not known.all():
                missing = change.delete[int(np.flatnonzero(~known)[0])]
                raise InputError(f"cannot delete unknown record '{missing}'", file=change.source, key=change.key)
            kept = np.flatnonzero(~frame.index.isin(pd.Index(list(change.delete), dtype=object)))
            frame = frame.drop(index=list(change.delete))
        if change.update:
            frame = frame.copy()
            # validate every cell first (same messages, same order as cell by cell), then assign one column at a
            # time: generated update streams touch tens of thousands of cells per release
            columns: dict[str, tuple[list, list]] = {}
            present = pd.Index(list(change.update), dtype=object).isin(frame.index)
            known_attrs: dict[str, Any] = {}  # attribute -> its schema entry, looked up once
            for (rid, values), here in zip(change.update.items(), present):
                if not here:
                    raise InputError(f"cannot update unknown record '{rid}'", file=change.source, key=change.key)
                for attr, value in values.items():
                    a = known_attrs.get(attr)
                    if a is None:
                        if attr not in self.schema or self.schema[attr].role == "identifier":
                            raise InputError(f"unknown attribute '{attr}'", file=change.source, key=change.key)
                        a = known_attrs[attr] = self.schema[attr]
                    h = a.hierarchy
                    v = _scalar(value)
                    if a.is_sensitive and _is_missing(a, v):
                        raise InputError(_missing_problem(attr, v) + f" (update of record {rid})",
                                         file=change.source, key=change.key)
                    if h is not None and v not in h._leaf_index:
                        raise InputError(f"value '{v}' of '{attr}' is not in its hierarchy",
                                         file=change.source, key=change.key)
                    ids, vals = columns.setdefault(attr, ([], []))
                    ids.append(rid)
                    vals.append(v)
            for attr, (ids, vals) in columns.items():
                pos = frame.index.get_indexer(ids)
                col = frame[attr].to_numpy(dtype=object, copy=True)
                col[pos] = vals
                frame[attr] = col
        if change.insert is not None and len(change.insert):
            # a hash table of the inserted ids (the smaller side, usually), every kept id looked up in it
            clash = frame.index[_members(frame.index, change.insert.index)]
            if len(clash):
                dup = change.insert.index[_members(change.insert.index, clash)]
                raise InputError(f"inserted record '{dup[0]}' already exists", file=change.source, key=change.key)
            frame = pd.concat([frame, change.insert[frame.columns]])
        out = Table(self.schema, frame)
        quasi = set(self.schema.quasi)
        if not any(quasi.intersection(values) for values in change.update.values()):
            inserted = None
            if change.insert is not None and len(change.insert):
                inserted = change.insert_codes if change.insert_codes is not None else change.insert[frame.columns]
            out.__dict__["_qi_from"] = (self, kept, inserted)  # qi_codes: the kept rows' codes, then the new ones
            if len(kept) == len(self):  # leaf_counts: the predecessor's, and the new ones'
                out.__dict__["_counts_from"] = (self, inserted)
        runs = self.id_runs
        if runs is not None and not change.delete:  # the same identifiers, then the inserted ones
            if change.insert is None or not len(change.insert):
                out._hold_id_runs(runs)
            elif change.insert_runs is not None and change.insert_runs[1] is change.insert.index:
                out._hold_id_runs(runs + change.insert_runs[0])
        return out


@dataclass(frozen=True, eq=False)
class Change:
    """Insertions, deletions and internal updates applied to a snapshot before one release."""

    insert: pd.DataFrame | None = None
    delete: tuple[str, ...] = ()
    update: dict = field(default_factory=dict)
    source: str | None = None
    key: str | None = None
    #: the inserted records' leaf codes (:attr:`Table.qi_codes`) when the worker that read them computed them
    insert_codes: np.ndarray | None = field(default=None, repr=False)
    #: the inserted records' :attr:`Table.id_runs` with the index they describe (``insert.index``), when known
    insert_runs: tuple | None = field(default=None, repr=False)

    @property
    def is_empty(self) -> bool:
        return (self.insert is None or not len(self.insert)) and not self.delete and not self.update

    @classmethod
    def from_mapping(cls, schema: Schema, spec: Any, *, base: Path, source: str | None, key: str,
                     next_id: int, prefetched: Mapping[str, Any] | None = None) -> "Change":
        """``{insert: rows | {file}, delete: [ids], update: {id: {attr: value}} | [{id, attr: value}]}``
        (an insertion's file may have been read ahead: ``prefetched``, see :func:`read_table`)."""
        if not isinstance(spec, Mapping):
            raise InputError("must be a mapping with insert / delete / update", file=source, key=key)
        unknown = set(spec) - {"insert", "delete", "update"}
        if unknown:
            raise InputError(f"unknown key '{sorted(unknown)[0]}'", file=source, key=key)
        insert = insert_codes = insert_runs = None
        if spec.get("insert") is not None:
            ins = spec["insert"]
            if isinstance(ins, Mapping):
                table = read_table(schema, ins, base=base, source=source, key=f"{key}.insert",
                                   first_id=next_id, prefetched=prefetched)
            else:
                table = Table.from_rows(schema, ins, source=source, key=f"{key}.insert", first_id=next_id)
            insert, insert_codes = table.frame, table.__dict__.get("qi_codes")
            if table.id_runs is not None:
                insert_runs = (table.id_runs, insert.index)
        delete = spec.get("delete") or []
        if not isinstance(delete, list):
            raise InputError("delete must be a list of identifiers", file=source, key=f"{key}.delete")
        update_spec = spec.get("update") or {}
        update: dict[str, dict[str, Any]] = {}
        if isinstance(update_spec, Mapping):
            for rid, vals in update_spec.items():
                if not isinstance(vals, Mapping):
                    raise InputError(f"update of '{rid}' must map attributes to values", file=source,
                                     key=f"{key}.update")
                update[_scalar(rid)] = {str(a): v for a, v in vals.items()}
        elif isinstance(update_spec, list):
            for i, item in enumerate(update_spec):
                if not isinstance(item, Mapping) or "id" not in item:
                    raise InputError("each update needs an 'id'", file=source, key=f"{key}.update[{i}]")
                update[_scalar(item["id"])] = {str(a): v for a, v in item.items() if a != "id"}
        else:
            raise InputError("update must be a mapping or a list", file=source, key=f"{key}.update")
        return cls(insert=insert, delete=tuple(_scalar(d) for d in delete), update=update, source=source, key=key,
                   insert_codes=insert_codes, insert_runs=insert_runs)


#: the keys of a table read from a file (:func:`file_spec`)
FILE_KEYS = ("file", "separator", "offset", "limit")


def file_spec(spec: Mapping, *, base: Path, source: str | None, key: str) -> tuple[Path, str, int, int | None]:
    """The file a table is read from, ``{file: path, separator: ";", offset: 15060, limit: 200}`` (:func:`read_table`):
    its path (relative to ``base``), separator, offset and limit, each checked - bad input is refused
    (:class:`InputError` naming ``key`` and its part).  The read of a table in parts (issue 28) checks its spec
    here too, before it cuts the file."""
    unknown = set(spec) - set(FILE_KEYS)
    if unknown:
        raise InputError(f"unknown key '{sorted(unknown)[0]}'", file=source, key=key)
    if "file" not in spec:
        raise InputError("needs 'file' or 'rows'", file=source, key=key)
    offset = spec.get("offset", 0)
    limit = spec.get("limit")
    for part, value, low in (("offset", offset, 0), ("limit", limit, 1)):
        if value is None and part == "limit":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InputError(f"{part} must be an integer >= {low}, got {value!r}", file=source, key=f"{key}.{part}")
    path = Path(str(spec["file"]))
    if not path.is_absolute():
        path = base / path
    if not path.is_file():
        raise InputError(f"data file '{spec['file']}' not found", file=source, key=f"{key}.file")
    sep = str(spec.get("separator", ","))
    if len(sep) != 1 or sep in '\r\n"':
        raise InputError(f"separator must be one character (not a quote or a line break), got {sep!r}", file=source,
                         key=f"{key}.separator")
    return path, sep, offset, limit


def read_table(schema: Schema, spec: Mapping, *, base: Path, source: str | None, key: str,
               first_id: int = 1, prefetched: Mapping[str, Any] | None = None,
               lines: tuple[bytes, int, int] | None = None) -> Table:
    """A raw table from ``{file: path, separator: ";"}`` (CSV with a header; a ``.parquet`` file is read as
    Parquet, every value as text: :mod:`multirelease.formats.csv_read`) or ``{rows: [...]}``.

    A file can be read in part with ``offset`` (records skipped after the header, default 0) and ``limit``
    (at most that many records, default all): ``{file: adult.csv, separator: ";", offset: 15060, limit: 200}``
    holds records 15,061 to 15,260 of the file.  Without an identifier attribute the records read are
    numbered from ``first_id`` whatever the offset (the data of a scenario from 1, an insertion from the next
    free number).

    ``prefetched`` maps ``key`` to the table an executor's task read ahead from the same ``spec`` (numbered
    from 1, :meth:`Table.renumbered` here); a task that failed left no entry, and the file is read here, in its
    turn, to say why.  ``lines``: where the records of a CSV file's ``offset`` and ``limit`` are
    (:func:`~multirelease.formats.csv_read.line_ranges`: a part of a table read by one of several tasks).
    """
    got = (prefetched or {}).get(key)
    if isinstance(got, Table):
        return got.renumbered(first_id)
    if not isinstance(spec, Mapping):
        raise InputError("must be {file: path} or {rows: [...]}", file=source, key=key)
    if "rows" in spec:
        unknown = set(spec) - {"rows", *FILE_KEYS}
        if unknown:
            raise InputError(f"unknown key '{sorted(unknown)[0]}'", file=source, key=key)
        if "file" in spec:
            raise InputError("give 'file' or 'rows', not both", file=source, key=key)
        for part in ("offset", "limit"):
            if part in spec:
                raise InputError(f"'{part}' applies to 'file' only", file=source, key=f"{key}.{part}")
        return Table.from_rows(schema, spec["rows"], source=source, key=f"{key}.rows", first_id=first_id)
    path, sep, offset, limit = file_spec(spec, base=base, source=source, key=key)
    try:  # pyarrow where it reads as pandas does, else pandas (multirelease.formats.csv_read); .parquet: pyarrow
        frame = read_parquet_frame(path, offset, limit) if path.suffix.lower() == ".parquet" \
            else read_csv_frame(path, sep, offset, limit, lines=lines)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"cannot parse CSV ({str(exc).splitlines()[0]})", file=str(path)) from None
    if not isinstance(frame.index, pd.RangeIndex):  # pandas made the extra leading fields an index
        raise InputError(f"the rows have more fields than the header's {len(frame.columns)}", file=str(path),
                         key="line 2")
    if offset and not len(frame):
        raise InputError(f"offset {offset} is past the last record", file=source, key=f"{key}.offset")
    frame.columns = [c.strip() for c in frame.columns]
    rows_at = ("record", offset + 1) if path.suffix.lower() == ".parquet" else ("line", offset + 2)
    return Table.from_frame(schema, frame, source=str(path), key=None, first_id=first_id, rows_at=rows_at)
