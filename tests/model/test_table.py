"""Property tests of raw tables and their dynamics (multirelease/model/table.py)."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from multirelease.errors import InputError
from multirelease.model.sequence import _public_part
from multirelease.model.table import Change, Table

from strategies import raw_tables, schemas, schemas_and_tables, update_streams


@given(st.data())
def test_update_stream_applies_exactly(data):
    """Each change removes the deleted ids, sets exactly the named cells of the updated ids, adds the
    inserted rows with their values, and leaves every other cell alone; ids stay unique.  The new snapshot's
    leaf counts are its values' (derived from its predecessor's when those were counted before), and its public
    part's (the same arrays, when no QI was updated)."""
    schema, table = data.draw(schemas_and_tables(max_size=15))
    stream = data.draw(update_streams(table, n_releases=3))
    assert len(stream) == 3
    for change in stream:
        before = table.frame
        if data.draw(st.booleans()):
            table.leaf_counts  # the predecessor counted before the change, or never
        new = table.apply(change)
        public = _public_part(new) if data.draw(st.booleans()) else None  # before its codes are derived
        after = new.frame
        for j, name in enumerate(schema.quasi):
            values = after[name].tolist()
            assert new.leaf_counts[j].tolist() == [values.count(leaf) for leaf in schema[name].hierarchy.leaves]
        if public is not None:  # the adversary's copy: the same figures, derived once when no QI was updated
            assert [c.tolist() for c in public.leaf_counts] == [c.tolist() for c in new.leaf_counts]
            assert public.qi_codes.tolist() == new.qi_codes.tolist()
            if not any(set(schema.quasi) & set(cells) for cells in change.update.values()):
                assert public.qi_codes is new.qi_codes
        after = new.frame
        assert after.index.is_unique
        assert list(after.columns) == list(schema.published)
        deleted = set(change.delete)
        inserted = [] if change.insert is None else list(change.insert.index)
        assert not deleted & set(after.index)
        assert set(after.index) == (set(before.index) - deleted) | set(inserted)
        assert len(after) == len(before) - len(deleted) + len(inserted)
        for rid in before.index:
            if rid in deleted:
                continue
            for col in schema.published:
                expected = change.update.get(rid, {}).get(col, before.at[rid, col])
                assert after.at[rid, col] == expected, (rid, col)
        for rid in inserted:
            for col in schema.published:
                assert after.at[rid, col] == change.insert.at[rid, col]
        # the derived views follow the frame
        assert new.qi_codes.shape == (len(after), len(schema.quasi))
        for j, name in enumerate(schema.quasi):
            h = schema[name].hierarchy
            assert [h.leaves[c] for c in new.qi_codes[:, j]] == after[name].tolist()
        assert new.sensitive.tolist() == after[schema.sensitive[0]].tolist()
        table = new


@given(schemas_and_tables(max_size=10))
def test_apply_rejects_bad_changes(args):
    schema, table = args
    first = table.ids[0]
    with pytest.raises(InputError, match="cannot delete unknown record 'nobody'"):
        table.apply(Change(delete=("nobody",)))
    with pytest.raises(InputError, match="cannot update unknown record"):
        table.apply(Change(update={"nobody": {schema.sensitive[0]: schema["disease"].hierarchy.leaves[0]}}))
    with pytest.raises(InputError, match="not in its hierarchy"):
        table.apply(Change(update={first: {schema.quasi[0]: "no-such-value"}}))
    with pytest.raises(InputError, match="unknown attribute"):
        table.apply(Change(update={first: {"no-such-attribute": "x"}}))
    dup = table.frame.iloc[:1].copy()
    with pytest.raises(InputError, match="already exists"):
        table.apply(Change(insert=dup))
    # of several inserted records that exist, the first one inserted is named
    backwards = table.frame.iloc[::-1].copy()
    with pytest.raises(InputError, match=f"inserted record '{table.ids[-1]}' already exists"):
        table.apply(Change(insert=backwards))
    # deleting the same record twice in a row: the second time it is unknown
    once = table.apply(Change(delete=(first,)))
    with pytest.raises(InputError, match="unknown record"):
        once.apply(Change(delete=(first,)))
    # the table itself is never modified
    assert first in table.frame.index


@given(schemas(), st.data())
def test_from_frame_validates(schema, data):
    table = data.draw(raw_tables(schema, 1, 8))
    frame = table.frame.reset_index()
    if schema.identifier is None:
        frame = frame.drop(columns=["id"])
    back = Table.from_frame(schema, frame)
    assert back.frame.equals(table.frame)
    bad = frame.copy()
    bad.loc[0, schema.quasi[0]] = "no-such-value"
    with pytest.raises(InputError, match="not in its hierarchy"):
        Table.from_frame(schema, bad)
    with pytest.raises(InputError, match="has no column"):
        Table.from_frame(schema, frame.drop(columns=[schema.sensitive[0]]))
    with pytest.raises(InputError, match="unknown attribute"):
        Table.from_frame(schema, frame.assign(extra="x"))
    if schema.identifier is not None and len(frame) > 1:
        twice = frame.copy()
        twice.loc[1, schema.identifier] = twice.loc[0, schema.identifier]
        with pytest.raises(InputError, match="appears twice"):
            Table.from_frame(schema, twice)


def test_numbers_are_compared_as_text():
    from multirelease.model.hierarchy import Hierarchy
    from multirelease.model.schema import Attribute, Schema

    schema = Schema((Attribute("age", "quasi", Hierarchy.numeric("age", 30, 40), "interval"),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu", "HIV"]))))
    t = Table.from_frame(schema, pd.DataFrame({"age": [39, 39.0, " 40 "], "disease": ["flu", "HIV", "flu"]}))
    assert t.frame["age"].tolist() == ["39", "39", "40"]
    assert t.qi_codes[:, 0].tolist() == [9, 9, 10]
    assert t.ids.tolist() == ["1", "2", "3"]


@given(st.data())
def test_pickled_table_is_the_table(data):
    """A table pickled (a worker's task or result: each column as its distinct values and codes, the leaf codes
    narrowed) is the same table: frame, index, dtypes and leaf codes - also a snapshot made by ``apply``, which
    is pickled without the predecessor whose codes it reuses."""
    import pickle

    import numpy as np

    schema, table = data.draw(schemas_and_tables(max_size=15))
    tables = [table]
    for change in data.draw(update_streams(table, n_releases=2)):
        tables.append(tables[-1].apply(change))
    for t in tables:
        if data.draw(st.booleans()):
            t.qi_codes  # computed before pickling, or not
        back = pickle.loads(pickle.dumps(t))
        pd.testing.assert_frame_equal(back.frame, t.frame, check_exact=True)
        assert back.frame.index.dtype == t.frame.index.dtype and back.frame.index.name == t.frame.index.name
        assert "_qi_from" not in back.__dict__
        assert back.qi_codes.dtype == np.int32 and np.array_equal(back.qi_codes, t.qi_codes)


@given(st.data())
def test_id_runs_describe_the_numbered_identifiers(data):
    """A table read without an identifier column numbers its records, and knows them as runs of integers
    (``id_runs``); so does every snapshot ``apply`` makes of it without deletions, its insertions numbered too
    (read as rows: :meth:`Change.from_mapping`), after a pickle too - and a snapshot with a deletion, or whose
    index was replaced, does not claim to know them.  Whatever the runs, they are the very index."""
    import pickle

    schema, drawn = data.draw(schemas_and_tables(max_size=8))
    first = data.draw(st.integers(1, 40))
    table = Table.from_frame(schema, drawn.frame.reset_index(drop=True), first_id=first)
    used = set(range(first, first + len(table)))
    deleted = False
    cols = list(schema.published)
    for step in range(3):
        spec: dict = {}
        n_ins = data.draw(st.integers(0, 4))
        start = data.draw(st.sampled_from([max(used) + 1, max(used) + data.draw(st.integers(2, 9)), 1]))
        if n_ins and not used.intersection(range(start, start + n_ins)):
            spec["insert"] = [{a: data.draw(st.sampled_from(list(schema[a].hierarchy.leaves))) for a in cols}
                              for _ in range(n_ins)]
            used.update(range(start, start + n_ins))
        if len(table) > 1 and data.draw(st.booleans()):
            spec["delete"] = [str(table.ids[data.draw(st.integers(0, len(table) - 1))])]
        change = Change.from_mapping(schema, spec, base=None, source=None, key=f"dynamics.{step}", next_id=start)
        deleted |= bool(change.delete)
        table = table.apply(change)
        runs = table.id_runs
        assert (runs is None) == deleted
        if runs is not None:
            assert table.frame.index.tolist() == [str(i) for a, c in runs for i in range(a, a + c)]
            assert pickle.loads(pickle.dumps(table)).id_runs == runs
    table.frame.index = pd.Index([f"x{i}" for i in range(len(table))])
    assert table.id_runs is None


def _text_dtypes() -> list:
    """pandas' text dtypes here: the one a CSV read gives (pyarrow's where pandas keeps its text there), and
    the Python-backed one."""
    out = [pd.StringDtype("python")]
    try:
        out.append(pd.StringDtype("pyarrow"))
    except ImportError:
        pass
    return out


@given(schemas_and_tables(max_size=12), st.data())
def test_text_columns_read_through_their_distinct_cells(args, data):
    """A frame of text columns (a CSV file read) is validated, normalized and encoded through each column's
    distinct cells: the same table - values, dtypes, identifiers, QI leaf codes, its pickle - as the cell by
    cell path gives, and the same refusal, word for word, of the same bad cells; cells that differ only by
    their spaces are one value."""
    import pickle

    import numpy as np

    from multirelease.model.hierarchy import normalize_values

    schema, drawn = args
    frame = drawn.frame.reset_index()
    if schema.identifier is None:
        frame = frame.drop(columns=["id"])
    pad = st.sampled_from(["", " ", "  "])
    for col in schema.published:  # spaces around some cells
        frame[col] = [data.draw(pad) + v + data.draw(pad) for v in frame[col]]
    if len(frame) and data.draw(st.booleans()):  # a cell that is no leaf (or a missing sensitive value)
        col = data.draw(st.sampled_from(list(schema.published)))
        frame.loc[data.draw(st.integers(0, len(frame) - 1)), col] = data.draw(st.sampled_from(["zz-none", "?"]))
    text = frame.astype(data.draw(st.sampled_from(_text_dtypes())))
    first = data.draw(st.integers(1, 30))

    def read(f):
        try:
            return Table.from_frame(schema, f, first_id=first)
        except InputError as exc:
            return str(exc)

    got, cellwise = read(text), read(frame.astype(object))
    if isinstance(cellwise, str):
        assert got == cellwise
        return
    want = text.copy()
    if schema.identifier is not None:
        want = want.drop(columns=[schema.identifier])
    want = want[list(schema.published)]
    want = want.apply(normalize_values) if len(want) else want.astype(object)
    want.index = cellwise.frame.index
    pd.testing.assert_frame_equal(got.frame, want, check_exact=True)
    assert got.frame.index.dtype == cellwise.frame.index.dtype and got.id_runs == cellwise.id_runs
    assert got.frame.index.tolist() == cellwise.frame.index.tolist()
    encoded = Table(schema, got.frame).qi_codes  # the hierarchies' encode, column by column
    assert got.qi_codes.dtype == np.int32 and np.array_equal(got.qi_codes, encoded)
    assert np.array_equal(got.qi_codes, cellwise.qi_codes)
    back = pickle.loads(pickle.dumps(got))
    pd.testing.assert_frame_equal(back.frame, got.frame, check_exact=True)
    assert np.array_equal(back.qi_codes, got.qi_codes) and back.id_runs == got.id_runs


@given(st.data())
def test_table_read_in_parts_is_the_table_read_at_once(data):
    """A table file read in parts - its records' ranges (``line_ranges``), each read alone and numbered on from
    the one before - and put together (``Table.concat``) is the table read at once: frame, index and dtypes,
    QI leaf codes and counts, identifier runs, pickle; with an identifier column, one identifier in two parts
    gives no table (read at once, the file is refused for it)."""
    import pickle
    import tempfile
    from pathlib import Path

    import numpy as np
    from hypothesis import assume

    from multirelease.formats.csv_read import line_ranges
    from multirelease.model.table import read_table

    schema, table = data.draw(schemas_and_tables(min_size=2, max_size=20))
    frame = table.frame.reset_index()
    if schema.identifier is None:
        frame = frame.drop(columns=["id"])
    text = frame.astype(str)
    assume(not any("|" in c or '"' in c or "\n" in c for c in text.to_numpy().ravel()))
    lines = ["|".join(frame.columns)] + ["|".join(r) for r in text.to_numpy().tolist()]
    assume(all(line[:1] not in " \t" for line in lines))
    offset = data.draw(st.integers(0, len(frame) - 1))
    limit = data.draw(st.none() | st.integers(1, len(frame)))
    rows = data.draw(st.integers(1, 6))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        spec = {"file": str(path), "separator": "|", "offset": offset, "limit": limit}
        whole = read_table(schema, spec, base=Path(tmp), source=None, key="data", first_id=3)
        header, ranges = line_ranges(path, offset, limit, rows=rows)
        ends = [r[2] for r in ranges[1:]] + [None if limit is None else offset + limit]
        parts = [read_table(schema, {**spec, "offset": first, "limit": None if end is None else end - first},
                            base=Path(tmp), source=None, key="data", first_id=3 + first - offset,
                            lines=(header, start, stop))
                 for (start, stop, first), end in zip(ranges, ends)]
        if data.draw(st.booleans()):
            for p in parts:
                p.qi_codes, p.leaf_counts  # counted by the workers, or not
        got = Table.concat(parts)
        pd.testing.assert_frame_equal(got.frame, whole.frame, check_exact=True)
        pd.testing.assert_index_equal(got.frame.index, whole.frame.index, exact=True)
        assert np.array_equal(got.qi_codes, whole.qi_codes) and got.qi_codes.dtype == np.int32
        assert [c.tolist() for c in got.leaf_counts] == [c.tolist() for c in whole.leaf_counts]
        assert got.id_runs == whole.id_runs and got.renumbered(10).id_runs == whole.renumbered(10).id_runs
        pd.testing.assert_frame_equal(pickle.loads(pickle.dumps(got)).frame, whole.frame, check_exact=True)
        if schema.identifier is not None and len(parts) > 1:
            clash = parts[-1].frame.index[:1]
            twice = Table(schema, parts[0].frame.set_axis(parts[0].frame.index[:-1].append(clash)))
            assert Table.concat([twice, *parts[1:]]) is None
