"""Snapshots read with pyarrow (issue 16, item 3): the same tables, and the same refusals, as pandas' reader.

:func:`multirelease.formats.csv_read.arrow_csv_frame` either declines (``None``: pandas reads the file) or returns
exactly the frame :func:`pandas_csv_frame` returns (pandas' ``read_csv(dtype=str, keep_default_na=False,
skipinitialspace=True)`` with ``offset`` / ``limit``); scenarios load the same tables either way, and
``.parquet`` snapshots load as their CSV twins."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from multirelease.formats import csv_read
from multirelease.formats.csv_read import arrow_csv_frame, pandas_csv_frame
from multirelease.errors import InputError
from multirelease.pipeline import load_scenario

pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT.parent / "shared" / "data" / "adult"

# fields: text with spaces (leading ones too), tabs, separators of the other kind, non-ASCII, empty
_FIELD = st.lists(st.sampled_from(list("ab1 \t,;é-?.ü") + ["NA", "null"]), max_size=4).map("".join)


def _write(data: bytes) -> Path:
    f = tempfile.NamedTemporaryFile(suffix=".csv", delete=False)
    f.write(data)
    f.close()
    return Path(f.name)


def _pandas(path: Path, sep: str, offset: int, limit: int | None):
    try:
        return pandas_csv_frame(path, sep, offset, limit)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        return type(exc)


@settings(max_examples=150)  # one small file each; well under a second in all
@given(st.data())
def test_well_formed_files_take_pyarrow_and_read_as_pandas(data):
    """Well-formed files (no quotes; fields with leading spaces, tabs, the other separator, non-ASCII, empty;
    CRLF or LF; a BOM; no final line break) with records past the offset: pyarrow reads them, and to pandas' very
    frame."""
    sep = data.draw(st.sampled_from([";", ","]))
    n_cols = data.draw(st.integers(2, 4))
    names = data.draw(st.lists(st.text(alphabet="abcxyz_-", min_size=1, max_size=4), min_size=n_cols,
                               max_size=n_cols, unique=True))
    cell = _FIELD.map(lambda s: s.replace(sep, ""))
    rows = data.draw(st.lists(st.lists(cell, min_size=n_cols, max_size=n_cols), max_size=8))
    eol = data.draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join([sep.join(names)] + [sep.join(r) for r in rows]) + data.draw(st.sampled_from(["", eol]))
    bom = data.draw(st.booleans())
    path = _write(("\ufeff" if bom else "").encode() + text.encode("utf-8"))
    offset = data.draw(st.integers(0, 3))
    limit = data.draw(st.none() | st.integers(1, 4))
    try:
        got = arrow_csv_frame(path, sep, offset, limit)
        # no record left after the offset: pyarrow may decline (pandas reads the file)
        assert got is not None or offset >= len(rows), text
        if got is not None:
            pd.testing.assert_frame_equal(got, pandas_csv_frame(path, sep, offset, limit))
    finally:
        path.unlink()


@settings(max_examples=200)  # one tiny file each
@given(st.lists(st.sampled_from(["a", "b", " ", "  x", "\t", ";", ",", '"', "\n", "\r", "\r\n", "é", "\xff",
                                 "\x00", "\ufeff", "1"]), max_size=30),
       st.sampled_from([";", ","]), st.integers(0, 2), st.none() | st.integers(1, 3))
def test_any_text_pyarrow_declines_or_agrees(pieces, sep, offset, limit):
    """Arbitrary bytes (quotes, blank lines, ragged lines, bad UTF-8, NUL, BOMs): pyarrow declines, or gives
    pandas' frame; it never returns a frame where pandas refuses the file."""
    raw = "".join(pieces).encode("utf-8", "surrogateescape").replace("\xff".encode(), b"\xff")
    path = _write(b"h1" + sep.encode() + b"h2\n" + raw)
    try:
        got = arrow_csv_frame(path, sep, offset, limit)
        if got is not None:
            ref = _pandas(path, sep, offset, limit)
            assert isinstance(ref, pd.DataFrame), (raw, ref)
            pd.testing.assert_frame_equal(got, ref)
    finally:
        path.unlink()


def test_declines_what_pandas_reads_differently(tmp_path):
    """The cases where the readers differ are pandas': a quoted field after a space, a blank line between
    records (pandas skips it, also inside an offset), a ragged line, bytes that are not UTF-8, a header with
    duplicate or empty names."""
    cases = {"quoted": b'a;b\n1; "x;y"\n', "blank": b"a;b\n1;2\n\n3;4\n", "ragged": b"a;b\n1;2;3\n4;5\n",
             "latin1": b"a;b\n1;\xe9\n", "duplicate": b"a;a\n1;2\n", "empty_name": b"a;;c\n1;2;3\n"}
    for name, data in cases.items():
        path = tmp_path / f"{name}.csv"
        path.write_bytes(data)
        assert arrow_csv_frame(path, ";", 0, None) is None, name
    # the blank line pandas skips: records 2 and 3 after an offset of 1 are '3' both ways, through the loader
    path = tmp_path / "blank.csv"
    pd.testing.assert_frame_equal(csv_read.read_csv_frame(path, ";", 1, None), pandas_csv_frame(path, ";", 1, None))
    assert csv_read.read_csv_frame(path, ";", 1, None)["a"].tolist() == ["3"]


def _scenario(tmp_path: Path, data: dict, name: str = "s.yaml") -> Path:
    attrs = {a: {"role": "sensitive" if a == "occupation" else "quasi",
                 "hierarchy": {"file": str(ADULT / f"adult_hierarchy_{a}.csv")}}
             for a in ("sex", "age", "race", "marital-status", "education", "native-country", "workclass",
                       "occupation", "salary-class")}
    doc = {"name": "read", "seed": 1, "schema": {"attributes": attrs}, "data": data,
           "dynamics": {2: {"insert": dict(data, offset=data.get("offset", 0) + 300, limit=50)}},
           "releases": [{"publisher": "mondrian", "k": 5}] * 2, "attacks": []}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _tables(path: Path) -> list[pd.DataFrame]:
    sc = load_scenario(path)
    return [sc.data.frame, sc.dynamics[2].insert]


def test_scenario_tables_identical_with_either_reader(tmp_path, monkeypatch):
    """Adult (``;``, values after a space) read by a scenario, data and an insertion (offset, limit): the same
    Tables with pyarrow as with pandas; and the same refusal (file, line) for a ragged file."""
    path = _scenario(tmp_path, {"file": str(ADULT / "adult.csv"), "separator": ";", "offset": 40, "limit": 300})
    assert arrow_csv_frame(ADULT / "adult.csv", ";", 40, 300) is not None  # the fast path is taken
    fast = _tables(path)
    monkeypatch.setattr(csv_read, "arrow_csv_frame", lambda *a: None)
    slow = _tables(path)
    for a, b in zip(fast, slow):
        pd.testing.assert_frame_equal(a, b)
    assert len(fast[0]) == 300 and len(fast[1]) == 50
    monkeypatch.undo()
    bad = tmp_path / "bad.csv"
    lines = (ADULT / "adult.csv").read_text(encoding="utf-8").splitlines()[:400]
    lines[7] += ";extra"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = _scenario(tmp_path, {"file": str(bad), "separator": ";", "limit": 300}, "bad.yaml")
    with pytest.raises(InputError) as fast_err:
        load_scenario(path)
    monkeypatch.setattr(csv_read, "arrow_csv_frame", lambda *a: None)
    with pytest.raises(InputError) as slow_err:
        load_scenario(path)
    assert str(fast_err.value) == str(slow_err.value) and "\n" not in str(fast_err.value)


def test_parquet_snapshot_loads_as_its_csv(tmp_path):
    """A ``.parquet`` data file (and an insertion from it, offset and limit) gives the Tables of the CSV it
    was written from; a file that is not Parquet is refused in one line."""
    frame = pandas_csv_frame(ADULT / "adult.csv", ";", 0, 500)
    frame.to_parquet(tmp_path / "adult.parquet", index=False)
    csv_path = _scenario(tmp_path, {"file": str(ADULT / "adult.csv"), "separator": ";", "offset": 20,
                                    "limit": 200}, "csv.yaml")
    pq_path = _scenario(tmp_path, {"file": "adult.parquet", "offset": 20, "limit": 200}, "pq.yaml")
    for a, b in zip(_tables(csv_path), _tables(pq_path)):
        pd.testing.assert_frame_equal(a, b)
    (tmp_path / "fake.parquet").write_text("a;b\n1;2\n", encoding="utf-8")
    with pytest.raises(InputError, match="cannot read Parquet") as err:
        load_scenario(_scenario(tmp_path, {"file": "fake.parquet"}, "fake.yaml"))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("notation", ["native", "arx"])
def test_release_files_read_alike_with_either_reader(tmp_path, monkeypatch, notation):
    """A published release (native: quoted intervals ``"[47,48]"``; ARX: ``;``) read back by pyarrow - taken on
    these files - and by pandas: the same release, written out again byte for byte."""
    from multirelease.formats.release_csv import read_release_bytes, release_csv

    path = _scenario(tmp_path, {"file": str(ADULT / "adult.csv"), "separator": ";", "limit": 400})
    from multirelease.pipeline import run_scenario

    release = run_scenario(load_scenario(path), attack=False).sequence.releases[0]
    text = release_csv(release, notation).encode("utf-8")
    sep = ";" if notation == "arx" else ","
    assert csv_read.arrow_csv_bytes(text, sep) is not None
    schema = release.schema
    fast = read_release_bytes(text, schema, source="r.csv", separator=sep, notation=notation if notation != "native"
                              else None)
    monkeypatch.setattr(csv_read, "arrow_csv_bytes", lambda *a, **k: None)
    slow = read_release_bytes(text, schema, source="r.csv", separator=sep, notation=notation if notation != "native"
                              else None)
    assert release_csv(fast, notation) == release_csv(slow, notation) == text.decode("utf-8")


@given(st.lists(st.text(alphabet=st.sampled_from('ab" ,é\\n'), max_size=6), max_size=30), st.data())
def test_a_byte_found_in_a_text_column_as_pyarrow_finds_it(cells, data):
    """``holds_byte`` (the quote check of a CSV read by pyarrow) answers as ``pyarrow.compute.match_substring``
    does, on ``string`` and ``large_string`` columns cut into chunks and sliced (a chunk's bytes outside its
    cells never count)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = data.draw(st.sampled_from([pa.string(), pa.large_string()]))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(cells)), max_size=3)))
    chunks = [pa.array(cells[a:b], type=kind) for a, b in zip([0, *cuts], [*cuts, len(cells)])]
    column = pa.chunked_array(chunks, type=kind)
    start = data.draw(st.integers(0, len(cells)))
    for col in (column, column.slice(start), column.slice(start, data.draw(st.integers(0, len(cells)))),
                column.combine_chunks().slice(start)):
        for ch in '"é, ':
            if ord(ch) > 127:
                continue
            assert csv_read.holds_byte(col, ord(ch)) == bool(pc.any(pc.match_substring(col, ch)).as_py())


# a line of a file read in parts: a record, or one that may break the one-record-a-line rule (blank, spaces or a
# tab only, a leading space, a quote, a carriage return), or that pyarrow cannot take (ragged, not UTF-8)
_LINE = st.one_of(st.lists(st.sampled_from(["a", "1", "é", "x y", ""]), min_size=2, max_size=2).map(";".join),
                  st.sampled_from(["", " ", "\t", " 1;2", '"a";b', "a\r;b", "1;2;3", "7", "\xff;1"]))


@settings(max_examples=150)  # one small file each
@given(st.lists(_LINE, min_size=1, max_size=12), st.booleans(), st.integers(0, 4), st.none() | st.integers(1, 6),
       st.integers(1, 4))
def test_file_read_in_ranges_reads_as_pandas(lines, final_break, offset, limit, rows):
    """A file cut into ranges of records (``line_ranges``) read range by range (``read_csv_frame`` with
    ``lines``: pyarrow on the range, else pandas on the file): put together, pandas' frame of the same offset
    and limit (or, when a part's first line has more fields than the header, a frame that ``read_table``
    refuses both ways); files where a line may not be one record for pandas (blank, spaces only, a quote, a carriage
    return) are not cut; and reading a part of a file (``arrow_csv_frame``) agrees with pandas too, whatever the
    lines it skips or stops before hold."""
    raw = ("h1;h2\n" + "\n".join(lines) + ("\n" if final_break else "")).encode("utf-8", "surrogateescape")
    raw = raw.replace("\xff".encode(), b"\xff")
    path = _write(raw)
    try:
        ref = _pandas(path, ";", offset, limit)
        cut = csv_read.line_ranges(path, offset, limit, rows=rows)
        text = raw.split(b"\n")[1:]  # the lines after the header's (the last one empty after a final break)
        if any(not line.strip(b" \t") or line[:1] in b" \t" or b'"' in line or b"\r" in line for line in
               (text[:-1] if raw.endswith(b"\n") else text)):
            assert cut is None, raw  # a line that may be no record (or a blank one pandas skips)
        if cut is not None:
            header, ranges = cut
            assert header == raw[:raw.index(b"\n") + 1] and ranges[0][2] == offset
            # the first range starts at the line of record offset + 1, each next one where the one before ends
            assert ranges[0][0] == len(header) + sum(len(line) + 1 for line in text[:offset])
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            assert all(0 < b[2] - a[2] <= rows for a, b in zip(ranges, ranges[1:]))
            if isinstance(ref, pd.DataFrame):
                ends = [r[2] for r in ranges[1:]] + [None if limit is None else offset + limit]
                parts = [csv_read.read_csv_frame(path, ";", first, None if end is None else end - first,
                                                 lines=(header, start, stop))
                         for (start, stop, first), end in zip(ranges, ends)]
                if all(isinstance(p.index, pd.RangeIndex) for p in parts):
                    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), ref)
                else:  # a part's first line has more fields than the header: read at once, refused as well
                    assert not isinstance(ref.index, pd.RangeIndex), raw
        got = arrow_csv_frame(path, ";", offset, limit)
        if got is not None:
            assert isinstance(ref, pd.DataFrame), (raw, ref)
            pd.testing.assert_frame_equal(got, ref)
    finally:
        path.unlink()


def test_ranges_of_a_file_larger_than_a_block(tmp_path, monkeypatch):
    """Line breaks found across blocks (a block of 7 bytes here): the same ranges as in one block, and a line
    that starts a block blank or with a space is seen."""
    rows = [f"{i};{i % 3}" for i in range(40)]
    path = tmp_path / "f.csv"
    path.write_bytes(("a;b\n" + "\n".join(rows) + "\n").encode())
    whole = csv_read.line_ranges(path, 3, 30, rows=7)
    monkeypatch.setattr(csv_read, "_BLOCK", 7)
    assert csv_read.line_ranges(path, 3, 30, rows=7) == whole and len(whole[1]) == 5
    header, ranges = whole
    parts = [csv_read.read_csv_frame(path, ";", lines=(header, s, e)) for s, e, _ in ranges]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), pandas_csv_frame(path, ";", 3, 30))
    for k in range(1, 60):  # a blank line or a leading space wherever it falls in the blocks
        for bad in ("\n", " "):
            text = ("a;b\n" + "\n".join(rows) + "\n").encode()
            at = text.index(b"\n", k) + 1
            path.write_bytes(text[:at] + bad.encode() + text[at:])
            assert csv_read.line_ranges(path, 0, None) is None, (k, bad)


def test_tables_of_one_file_cut_after_one_scan(tmp_path, monkeypatch):
    """The data and an insertion read from one file in parts (``scenario._table_parts``): the file is looked
    through once for both (issue 28: the census of 10^7 records, 0.8 GB scanned once instead of twice), and each
    table's parts are those it gets with a scan of its own - the specs of parts of at most ``_PART_ROWS``
    records, as even as can be, and the numbers of their first records."""
    import multirelease.formats.scenario as scenario_mod

    monkeypatch.setattr(scenario_mod, "_PART_ROWS", 7)
    (tmp_path / "t.csv").write_text("a;b\n" + "".join(f"{i};{i % 3}\n" for i in range(60)), encoding="utf-8")
    data = {"file": "t.csv", "separator": ";", "limit": 45}
    insert = {"file": "t.csv", "separator": ";", "offset": 45}
    alone = [scenario_mod._table_parts(spec, tmp_path) for spec in (data, insert)]
    calls: list = []
    real = csv_read.line_breaks
    monkeypatch.setattr(csv_read, "line_breaks", lambda path: calls.append(path) or real(path))
    scans: dict = {}
    assert [scenario_mod._table_parts(spec, tmp_path, scans) for spec in (data, insert)] == alone
    assert calls == [tmp_path / "t.csv"]
    assert [len(parts) for parts in alone] == [7, 3]
    assert [(p[0]["offset"], p[0]["limit"], p[1]) for p in alone[1]] == [(45, 5, 1), (50, 5, 6), (55, None, 11)]
    assert [p[0]["limit"] for p in alone[0]] == [6, 6, 7, 6, 7, 6, 7]  # cut at 45 * i // 7
    # a spec read_table refuses is not cut (read_table says why in its turn)
    assert scenario_mod._table_parts({**data, "limit": 0}, tmp_path) is None
    assert scenario_mod._table_parts({**data, "sheet": 1}, tmp_path) is None
