"""Reading a snapshot CSV fast (pyarrow) with exactly the semantics of pandas' reader, and Parquet snapshots.

:func:`multirelease.model.table.read_table` reads a snapshot as text: ``pandas.read_csv(dtype=str,
keep_default_na=False, skipinitialspace=True)``, records ``offset + 1 .. offset + limit`` after the header.
At census scale pandas' default (C) reader is the bottleneck of loading (issue 16, item 3; measured on 1.1
million rows of ``benchmarks/census.py``, 2 cores: 1.5 s against 0.4 s for pyarrow, and a Python callback per
skipped line for an ``offset``).  :func:`read_csv_frame` parses with ``pyarrow.csv`` where the two readers
provably agree, and hands the file to pandas otherwise, so that every table, and every refusal (exit 2, one
line, :mod:`multirelease.errors`), is pandas' own:

* the file holds no NUL byte and no lone ``\r`` (lines end with ``\n`` or ``\r\n``), does not start with a
  line break, and its separator is not a space or a tab;
* the header decodes as UTF-8, has no quote, two fields or more, none of them empty and no two equal (pandas
  renames those: ``Unnamed: 1``, ``a.1``);
* in a file with quotes (a release's ``"[47,48]"``), no value pyarrow returns holds a quote (one pyarrow did
  not take as quoting: after a space, pandas' ``skipinitialspace`` opens a quoted field there) or starts with
  a space (quoted, pandas keeps it; unquoted, pandas drops it);
* pyarrow parses every line into exactly the header's fields, as UTF-8 text, one record per line (a ragged
  line, a blank line - pandas skips those, also among the records an ``offset`` skips -, or bytes that are
  not UTF-8, and pandas reads the file and words the refusal or the table).

Every field is then text, never null (an empty field is ``""``), and loses its leading spaces (pandas'
``skipinitialspace``: spaces only, tabs kept).  The frame has pandas' column types.

``.parquet`` snapshots (:func:`read_parquet_frame`) are read with pyarrow, every column cast to text.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from multirelease.errors import InputError

__all__ = ["read_csv_frame", "read_csv_bytes", "read_parquet_frame", "pandas_csv_frame", "arrow_csv_frame",
           "arrow_csv_bytes", "arrow_csv_range", "line_breaks", "line_ranges"]


def pandas_csv_frame(path: Path | IO[bytes], sep: str, offset: int = 0, limit: int | None = None) -> pd.DataFrame:
    """pandas' reader, the reference semantics (a callable ``skiprows``: ``range(1, offset + 1)`` would be
    materialized, a MemoryError for an offset of 10**15); ``path`` may be an open binary file."""
    return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True,
                       skiprows=(lambda i: 0 < i <= offset) if offset else None, nrows=limit)


def arrow_csv_frame(path: Path, sep: str, offset: int, limit: int | None) -> pd.DataFrame | None:
    """pyarrow's reader where it provably agrees with :func:`pandas_csv_frame` (module docstring), else
    ``None`` (pyarrow not installed included).  Part of a file (``offset``, ``limit``) whose every line is one
    record (:func:`line_ranges`) is parsed alone, with the header: pandas too reads the records it skips or
    stops before as lines only, whatever their fields or bytes (issue 28: the census's insertion, its last
    100,000 records, parsed without the 900,000 before them)."""
    if sep in " \t":  # before reading the file (arrow_csv_bytes declines these too)
        return None
    if offset or limit is not None:
        cut = line_ranges(path, offset, limit)
        if cut is not None:
            header, ((start, end, _),) = cut
            return arrow_csv_range(path, sep, header, start, end)
    return arrow_csv_bytes(path.read_bytes(), sep, offset, limit)


#: the bytes of a file looked at at once by :func:`line_ranges`
_BLOCK = 1 << 24
#: what a line may start with that pandas may take for a blank line, which it skips: nothing, spaces, tabs (and,
#: to be safe, any other byte up to the space: control characters)
_BLANK_START = tuple(bytes([b]) for b in range(33))


def line_breaks(path: Path) -> tuple[bytes, np.ndarray, int] | None:
    """The header line of a CSV file, the positions of all its line breaks and its size, when every line of it is
    one record for pandas and pyarrow alike: no quote (a quoted field may hold a line break), no NUL, no carriage
    return (lines end with ``\n``), no line that is empty or starts with a byte up to the space (pandas skips
    blank lines, and takes one of spaces or tabs for blank, also among the lines an offset skips), a header
    line; ``None`` otherwise.  One pass over the file, a block at a time (numpy finds its line breaks and looks
    at the byte after each: the census of issue 28, 76 MB, in 0.1 s).  :func:`line_ranges` cuts it; one scan
    serves every table read from the file (the census's data and its insertion)."""
    breaks: list[np.ndarray] = []  # the positions of the line breaks, per block
    with open(path, "rb") as f:
        at = 0
        line_starts = True  # a line starts at the next block's first byte (the file's, or after a break)
        while block := f.read(_BLOCK):
            if b'"' in block or b"\x00" in block or b"\r" in block:
                return None
            codes = np.frombuffer(block, dtype=np.uint8)
            found = np.flatnonzero(codes == ord("\n"))
            # every line's first byte: the block's first (when a line starts there), and the one after each break
            heads = codes[found[found + 1 < len(block)] + 1]
            if (heads <= ord(" ")).any() or line_starts and block.startswith(_BLANK_START):
                return None
            breaks.append(found + at)
            at += len(block)
            line_starts = block.endswith(b"\n")
    every = np.concatenate(breaks) if breaks else np.zeros(0, np.int64)
    if not len(every):
        return None
    with open(path, "rb") as f:
        header = f.read(int(every[0]) + 1)
    return header, every, at


def line_ranges(path: Path, offset: int = 0, limit: int | None = None, rows: int | None = None, *,
                breaks: tuple[bytes, np.ndarray, int] | None = None
                ) -> tuple[bytes, list[tuple[int, int, int]]] | None:
    """The header line of a CSV file and where its records ``offset + 1 .. offset + limit`` are, in ranges of
    at most ``rows`` records, as even as can be (default: one range): ``(header, [(start, end, first), ...])``
    - the bytes ``start:end`` of the file hold the records ``first + 1 ..`` in order (``first`` counted from 0
    after the header), the ranges following each other.  Only when every line of the file is one record
    (:func:`line_breaks`, or ``breaks``, its answer for this file); ``None`` otherwise, or when no record is in
    the range."""
    scan = breaks if breaks is not None else line_breaks(path)
    if scan is None:
        return None
    header, every, size = scan
    records = len(every) + int(every[-1] != size - 1) - 1  # the lines after the header's
    stop = records if limit is None else min(records, offset + limit)
    if offset >= stop:
        return None
    count = 1 if rows is None else -(-(stop - offset) // max(1, int(rows)))  # ranges as even as can be
    cuts = [offset + (stop - offset) * i // count for i in range(count + 1)]
    after = [int(every[c]) + 1 if c < len(every) else size for c in cuts]  # the byte after line break c
    return header, [(after[i], after[i + 1], cuts[i]) for i in range(len(cuts) - 1)]


def arrow_csv_range(path: Path, sep: str, header: bytes, start: int, end: int) -> pd.DataFrame | None:
    """:func:`arrow_csv_bytes` of the file's ``header`` line and its bytes ``start:end`` (a range of
    :func:`line_ranges`): the records there, as pandas reads them with the offset and limit that select them."""
    with open(path, "rb") as f:
        f.seek(start)
        body = f.read(end - start)
    return arrow_csv_bytes(header + body, sep)


def arrow_csv_bytes(data: bytes, sep: str, offset: int = 0, limit: int | None = None) -> pd.DataFrame | None:
    """:func:`arrow_csv_frame` of a file's bytes."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    if sep in " \t":
        return None
    crlf = data.count(b"\r\n") if b"\r" in data else 0
    if b"\x00" in data or data.startswith((b"\n", b"\r")) or data.count(b"\r") != crlf:
        return None  # a lone \r ends a line for both readers, but pandas' offset counts such lines its own way
    quotes = data.count(b'"')
    if quotes % 2:  # a quoted field left open (pandas refuses the file); every accepted quote opens or closes
        return None
    end = min((i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0), default=len(data))
    try:
        header = data[:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    names = [n.lstrip(" ") for n in header.removeprefix("\ufeff").split(sep)]
    if len(names) < 2 or "" in names or len(set(names)) != len(names) or '"' in header:
        return None
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=names, skip_rows=1),
            parse_options=pcsv.ParseOptions(delimiter=sep, quote_char='"' if quotes else False,
                                            double_quote=quotes, escape_char=False, newlines_in_values=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types={n: pa.string() for n in names}, null_values=[],
                                                strings_can_be_null=False, check_utf8=True))
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    # a blank line (pandas skips it, and does not count it in the offset; pyarrow skips it too): a line without
    # a record.  The offset is taken after the count (pyarrow's skip_rows_after_names counts blank lines)
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    if table.num_rows != lines - 1:
        return None
    spaced = [pc.any(pc.starts_with(c, " ")).as_py() for c in table.columns]
    if quotes and (any(spaced) or any(holds_byte(c, ord('"')) for c in table.columns)):
        return None  # a quote pyarrow kept, or a leading space that was perhaps quoted (pandas keeps those)
    table = table.slice(offset, limit) if limit is not None else table.slice(offset)
    table = pa.table([pc.utf8_ltrim(c, characters=" ") if sp else c for c, sp in zip(table.columns, spaced)],
                     names=names)
    return _frame(table)


def holds_byte(column, byte: int) -> bool:
    """Whether a cell of a pyarrow text column (``string`` or ``large_string``, chunked or not) holds ``byte``
    (an ASCII character's code): each chunk's bytes of text searched at once, between its first cell's start and
    its last cell's end - what ``pc.any(pc.match_substring(column, chr(byte)))`` answers, 15 times faster (a
    census release's columns: 0.02 s instead of 0.35 s, most of a release file's read after the parse)."""
    import pyarrow as pa

    for chunk in getattr(column, "chunks", [column]):
        if not len(chunk):
            continue
        width = 8 if pa.types.is_large_string(chunk.type) else 4
        _, offsets, text = chunk.buffers()
        if text is None:
            continue
        at = np.frombuffer(offsets, dtype=np.int64 if width == 8 else np.int32, count=len(chunk) + 1,
                           offset=chunk.offset * width)
        if (np.frombuffer(text, dtype=np.uint8)[at[0]:at[-1]] == byte).any():
            return True
    return False


def pyarrow_text_dtype() -> pd.StringDtype | None:
    """pandas' text dtype (what ``dtype=str`` and a list of strings give) when pandas keeps its text in
    pyarrow, else ``None``."""
    text = pd.Series([""], dtype=str).dtype
    return text if isinstance(text, pd.StringDtype) and text.storage == "pyarrow" else None


def _frame(table) -> pd.DataFrame:
    """A pyarrow table of text columns as pandas' text frame (read_csv's ``dtype=str``), without a detour
    through Python strings where pandas keeps its text in pyarrow."""
    import pyarrow as pa

    text = pyarrow_text_dtype()
    if text is not None:
        return table.to_pandas(types_mapper={pa.string(): text}.get)
    return table.to_pandas().astype(pd.Series([""], dtype=str).dtype)


def read_csv_frame(path: Path, sep: str, offset: int = 0, limit: int | None = None, *,
                   lines: tuple[bytes, int, int] | None = None) -> pd.DataFrame:
    """The snapshot's records as text (module docstring): pyarrow where it agrees with pandas, else pandas
    (whose exceptions the caller words).  ``lines``: the file's header line and where these records are
    (``(header, start, end)``, a range of :func:`line_ranges`), parsed alone."""
    frame = arrow_csv_range(path, sep, *lines) if lines is not None else arrow_csv_frame(path, sep, offset, limit)
    return frame if frame is not None else pandas_csv_frame(path, sep, offset, limit)


def read_csv_bytes(data: bytes, sep: str) -> pd.DataFrame:
    """:func:`read_csv_frame` of a file's bytes (a release file:
    :func:`multirelease.formats.release_csv.read_release_bytes`)."""
    frame = arrow_csv_bytes(data, sep)
    return frame if frame is not None else pandas_csv_frame(io.BytesIO(data), sep)


def read_parquet_frame(path: Path, offset: int = 0, limit: int | None = None, *, source: str | None = None
                       ) -> pd.DataFrame:
    """A ``.parquet`` snapshot's records ``offset + 1 .. offset + limit`` with every value as text (numbers
    as pyarrow writes them, nulls as ``""``).  Refused (:class:`InputError`) when pyarrow is missing or the
    file is not Parquet."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install pyarrow", file=str(path)) from None
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read Parquet ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
                         file=str(path)) from None
    table = table.slice(offset, limit) if limit is not None else table.slice(offset)
    names = [str(n) for n in table.column_names]
    if len(set(names)) != len(names):
        raise InputError("the columns' names are not distinct", file=str(path))
    cols = []
    for col in table.columns:
        try:
            text = col.cast(pa.string())
        except (pa.ArrowException, NotImplementedError):
            raise InputError(f"column '{names[len(cols)]}' is not text or numbers", file=str(path)) from None
        cols.append(text.fill_null("") if text.null_count else text)
    return _frame(pa.table(cols, names=names))
