"""Property tests of raw tables and their dynamics (multirelease/model/table.py)."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from multirelease.errors import InputError
from multirelease.model.table import Change, Table

from strategies import raw_tables, schemas, schemas_and_tables, update_streams


@given(st.data())
def test_update_stream_applies_exactly(data):
    """Each change removes the deleted ids, sets exactly the named cells of the updated ids, adds the
    inserted rows with their values, and leaves every other cell alone; ids stay unique."""
    schema, table = data.draw(schemas_and_tables(max_size=15))
    stream = data.draw(update_streams(table, n_releases=3))
    assert len(stream) == 3
    for change in stream:
        before = table.frame
        new = table.apply(change)
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
