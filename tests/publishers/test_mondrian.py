"""Property tests of the Mondrian publisher (publishers/mondrian.py) on random tables and on Adult."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, strategies as st

from multirelease.errors import InputError
from multirelease.model.schema import Schema
from multirelease.model.table import Table, read_table
from publishers.mondrian import Mondrian

from strategies import raw_tables, schemas, schemas_and_tables


def check_mondrian_release(table: Table, result, k: int, l: int) -> None:
    """Everything Mondrian promises, checked by brute force from the truth:

    * every person of the table is published exactly once;
    * every class (``group``) has >= k rows and >= l distinct sensitive values;
    * within a class every row carries the same region, and it is the closure of the class's raw points
      (hull for ``interval``, lowest common node for ``hierarchy``, the set of values for ``subsets``);
    * every row's region contains the raw point of the person behind it;
    * regions of different classes are disjoint (strict partitioning).
    """
    release, truth = result.release, result.truth
    schema = table.schema
    assert sorted(truth.person.tolist()) == sorted(table.ids.tolist())
    assert not truth.counterfeit.any()
    pos = {pid: r for r, pid in enumerate(table.ids)}
    src = np.array([pos[p] for p in truth.person], dtype=np.int64)
    quasi = list(schema.quasi)
    cols = [quasi.index(n) for n in release.quasi]
    points = table.qi_codes[src][:, cols]  # raw point behind each published row
    sens = table.sensitive[src]
    if release.sensitive_attributes == schema.sensitive:
        assert release.sensitive.tolist() == sens.tolist()
    else:
        assert set(release.sensitive.tolist()) <= {""}

    members: dict = defaultdict(list)
    for i, g in enumerate(release.group.tolist()):
        members[g].append(i)
    assert release.n_classes == len(members)
    for g, rows in members.items():
        assert len(rows) >= k, f"class {g} has {len(rows)} < k = {k} rows"
        assert len(set(sens[rows].tolist())) >= l, f"class {g} has fewer than l = {l} sensitive values"
        for j, name in enumerate(release.quasi):
            a = schema[name]
            h = a.hierarchy
            cells = {(int(release.lo[r, j]), int(release.hi[r, j])) for r in rows}
            assert len(cells) == 1, f"class {g} has several regions on {name}"
            (clo, chi), = cells
            vals = sorted(set(points[rows, j].tolist()))
            if a.generalization == "hierarchy":
                cands = [x for x in range(h.n_nodes) if h.node_lo[x] <= vals[0] and vals[-1] <= h.node_hi[x]]
                best = min(cands, key=lambda x: h.node_hi[x] - h.node_lo[x])
                assert (clo, chi) == (h.node_lo[best], h.node_hi[best])
            else:
                assert (clo, chi) == (vals[0], vals[-1])
            if a.is_subsets:
                masks = {int(release.masks[name][r]) for r in rows}
                assert masks == {sum(1 << v for v in vals)}

    assert release.contains_points(points)[np.arange(len(release)), np.arange(len(release))].all()
    reps = np.array([rows[0] for rows in members.values()], dtype=np.int64)
    comp = release.comparable_rows(release, reps, reps)
    overlapping = comp & ~np.eye(len(reps), dtype=bool)
    assert not overlapping.any(), "two classes have overlapping regions"


def _satisfiable(table: Table, k: int, l: int) -> bool:
    return len(table) >= k and len(set(table.sensitive.tolist())) >= l


@given(schemas_and_tables(), st.integers(2, 4), st.integers(1, 3))
def test_mondrian_guarantees(args, k, l):
    schema, table = args
    publisher = Mondrian(k=k, l=l)
    if not _satisfiable(table, k, l):
        with pytest.raises(InputError, match="cannot satisfy"):
            publisher.publish(table, rng=np.random.default_rng(0))
        return
    result = publisher.publish(table, rng=np.random.default_rng(0))
    check_mondrian_release(table, result, k, l)
    # deterministic: the same seed gives the same release, byte for byte
    again = publisher.publish(table, rng=np.random.default_rng(0))
    for a, b in ((result.release, again.release),):
        np.testing.assert_array_equal(a.lo, b.lo)
        np.testing.assert_array_equal(a.hi, b.hi)
        np.testing.assert_array_equal(a.group, b.group)
        assert a.sensitive.tolist() == b.sensitive.tolist()
        assert set(a.masks) == set(b.masks)
        for n in a.masks:
            np.testing.assert_array_equal(a.masks[n], b.masks[n])
        assert a.to_frame().equals(b.to_frame())
    assert result.truth.person.tolist() == again.truth.person.tolist()


@given(schemas_and_tables(min_size=15, min_quasi=2, models=("hierarchy", "subsets")), st.integers(2, 3))
def test_mondrian_splits_several_taxonomies(args, k):
    """Tables that Mondrian splits many times on several taxonomy attributes: the node ids of different
    hierarchies coincide (every root is node 0), so split bounds cached per node must not leak from one
    attribute to another (they did: overlapping classes)."""
    schema, table = args
    result = Mondrian(k=k).publish(table, rng=np.random.default_rng(0))
    check_mondrian_release(table, result, k, 1)


@given(st.data())
def test_mondrian_on_a_vertical_subset(data):
    schema, table = data.draw(schemas_and_tables(min_size=4))
    keep = data.draw(st.lists(st.sampled_from(schema.quasi), min_size=1, unique=True))
    k = data.draw(st.integers(2, 4))
    if len(table) < k:
        return
    # without the sensitive attribute, l-diversity cannot be asked for
    with pytest.raises(InputError, match="sensitive"):
        Mondrian(k=k, l=2).publish(table, attributes=keep, rng=np.random.default_rng(0))
    result = Mondrian(k=k).publish(table, attributes=keep, rng=np.random.default_rng(1))
    assert result.release.quasi == tuple(n for n in schema.quasi if n in keep)
    assert result.release.sensitive_attributes == ()
    check_mondrian_release(table, result, k, 1)


@given(schemas(), st.data())
def test_mondrian_refuses_an_unsatisfiable_table(schema, data):
    # too few records for k
    table = data.draw(raw_tables(schema, 1, 3))
    with pytest.raises(InputError, match="cannot satisfy"):
        Mondrian(k=len(table) + 1).publish(table, rng=np.random.default_rng(0))
    # too few distinct sensitive values for l
    distinct = len(set(table.sensitive.tolist()))
    with pytest.raises(InputError, match="cannot satisfy"):
        Mondrian(k=2, l=distinct + 1).publish(table, rng=np.random.default_rng(0))


def test_mondrian_rejects_bad_parameters():
    with pytest.raises(InputError, match="'k' parameter of mondrian"):
        Mondrian(k=1)
    with pytest.raises(InputError, match="'l' parameter of mondrian"):
        Mondrian(k=2, l=0)


# ---------------------------------------------------------------------- Adult
ADULT_QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]


@pytest.fixture(scope="module")
def adult_2000(adult_dir):
    attrs = {name: {"role": "quasi", "hierarchy": {"file": f"adult_hierarchy_{name}.csv"}} for name in ADULT_QI}
    attrs["occupation"] = {"role": "sensitive"}
    schema = Schema.from_mapping({"attributes": attrs}, base=adult_dir)
    table = read_table(schema, {"file": "adult.csv", "separator": ";"}, base=adult_dir,
                       source=str(adult_dir / "adult.csv"), key="data")
    assert len(table) > 30_000
    return table.subset(table.ids[:2000])


@pytest.mark.parametrize("k,l", [(5, 1), (10, 3), (2, 2)])
def test_mondrian_on_adult(adult_2000, k, l):
    table = adult_2000
    assert len(table) == 2000
    assert table.schema["age"].generalization == "interval"
    result = Mondrian(k=k, l=l).publish(table, rng=np.random.default_rng(7))
    check_mondrian_release(table, result, k, l)
    assert result.release.n_classes > 2000 // (4 * k)  # it did split, and a lot
    again = Mondrian(k=k, l=l).publish(table, rng=np.random.default_rng(7))
    assert again.release.to_frame().equals(result.release.to_frame())
