"""Property tests of releases (multirelease/release.py): CSV round trip, containment, comparability,
closure and equivalence classes, each against a brute force on the published labels."""
from __future__ import annotations

import tempfile
from itertools import combinations
from pathlib import Path

import numpy as np
from hypothesis import given, strategies as st

from multirelease.release import Release, read_release_csv, write_release_csv

from strategies import cut_releases, generalized_releases, leaf_set, local_recodings, mondrian_regions, \
    schemas_and_tables


def _cell_sets(release: Release) -> list[list[frozenset]]:
    """Per row, per published QI: the leaf labels its published text covers (the label oracle)."""
    labels = release.qi_labels()
    return [[leaf_set(release.schema[name], labels[name].iloc[i]) for name in release.quasi]
            for i in range(len(release))]


def _mask_leaves(release: Release, name: str, mask: int) -> frozenset:
    h = release.schema[name].hierarchy
    return frozenset(h.leaves[c] for c in range(h.n_leaves) if int(mask) >> c & 1)


@st.composite
def tables_and_releases(draw, **kw):
    schema, table = draw(schemas_and_tables(**kw))
    release, truth = draw(generalized_releases(table, vertical=draw(st.booleans())))
    return table, release, truth


@given(tables_and_releases())
def test_csv_round_trip(args):
    table, release, truth = args
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "release.csv"
        write_release_csv(release, path)
        back = read_release_csv(path, release.schema)
    assert back.attributes == release.attributes
    np.testing.assert_array_equal(back.lo, release.lo)
    np.testing.assert_array_equal(back.hi, release.hi)
    assert set(back.masks) == set(release.masks)
    for name in release.masks:
        np.testing.assert_array_equal(back.masks[name], release.masks[name])
    assert back.sensitive.tolist() == release.sensitive.tolist()
    np.testing.assert_array_equal(back.classes, release.classes)
    np.testing.assert_array_equal(back.class_sizes, release.class_sizes)


@given(tables_and_releases())
def test_text_cells_cover_the_code_ranges(args):
    """The label of every cell covers exactly the leaves of its code range (or its mask)."""
    table, release, truth = args
    sets = _cell_sets(release)
    for i in range(len(release)):
        for j, name in enumerate(release.quasi):
            h = release.schema[name].hierarchy
            if name in release.masks:
                expected = _mask_leaves(release, name, release.masks[name][i])
            else:
                expected = frozenset(h.leaves[release.lo[i, j]:release.hi[i, j] + 1])
            assert sets[i][j] == expected


@given(tables_and_releases())
def test_contains_points_against_labels(args):
    table, release, truth = args
    quasi = list(table.schema.quasi)
    points = table.qi_codes[:, [quasi.index(n) for n in release.quasi]]
    got = release.contains_points(points)
    sets = _cell_sets(release)
    raw = table.frame
    for i in range(len(release)):
        for p, pid in enumerate(table.ids):
            expected = all(raw.at[pid, name] in sets[i][j] for j, name in enumerate(release.quasi))
            assert got[i, p] == expected
    # every row contains the raw point of the person behind it
    row_of = {pid: k for k, pid in enumerate(table.ids)}
    own = np.array([row_of[pid] for pid in truth.person], dtype=np.int64)
    assert got[np.arange(len(release)), own].all()


@given(st.data())
def test_comparable_rows_symmetric_and_brute_force(data):
    schema, table = data.draw(schemas_and_tables(max_size=12))
    r1, _ = data.draw(generalized_releases(table, vertical=data.draw(st.booleans())))
    r2, _ = data.draw(generalized_releases(table, vertical=data.draw(st.booleans())))
    got = r1.comparable_rows(r2)
    np.testing.assert_array_equal(got, r2.comparable_rows(r1).T)
    s1, s2 = _cell_sets(r1), _cell_sets(r2)
    common = [n for n in r1.quasi if n in r2.quasi]
    for i in range(len(r1)):
        for k in range(len(r2)):
            expected = all(s1[i][r1.quasi.index(n)] & s2[k][r2.quasi.index(n)] for n in common)
            assert got[i, k] == expected


@given(st.data())
def test_closure_contains_every_row_and_is_minimal(data):
    schema, table = data.draw(schemas_and_tables(max_size=12))
    release, _ = data.draw(generalized_releases(table, vertical=data.draw(st.booleans())))
    rows = data.draw(st.lists(st.integers(0, len(release) - 1), min_size=1, max_size=len(release), unique=True))
    lo, hi, masks = release.closure_of(rows)
    sets = _cell_sets(release)
    for j, name in enumerate(release.quasi):
        a = release.schema[name]
        h = a.hierarchy
        union = frozenset().union(*(sets[r][j] for r in rows))
        codes = sorted(h.code(x) for x in union)
        if a.is_subsets:
            assert _mask_leaves(release, name, masks[name]) == union
            assert (lo[j], hi[j]) == (codes[0], codes[-1])
        elif a.generalization == "interval":
            assert (lo[j], hi[j]) == (codes[0], codes[-1])
        else:
            # the smallest hierarchy node whose leaves include the union (brute force over all nodes)
            cands = [x for x in range(h.n_nodes)
                     if all(h.node_lo[x] <= c <= h.node_hi[x] for c in codes)]
            best = min(cands, key=lambda x: h.node_hi[x] - h.node_lo[x])
            assert (lo[j], hi[j]) == (h.node_lo[best], h.node_hi[best])
            assert h.is_node_range(lo[j], hi[j])
        # contains every row's value
        assert all(lo[j] <= release.lo[r, j] and release.hi[r, j] <= hi[j] for r in rows)


@given(tables_and_releases())
def test_classes_group_identical_text_rows(args):
    table, release, truth = args
    assert release.group is None
    labels = release.qi_labels()
    keys = [tuple(labels.iloc[i]) for i in range(len(release))]
    first: dict[tuple, int] = {}
    expected = [first.setdefault(k, len(first)) for k in keys]
    assert release.classes.tolist() == expected
    assert release.n_classes == len(first)
    assert sum(release.class_sizes) == len(release)
    for c, rows in enumerate(release.class_rows()):
        assert all(release.classes[r] == c for r in rows)


@given(st.data())
def test_mondrian_regions_are_a_strict_partition(data):
    """The strategy's own promise, relied on by later tests: classes of distinct boxes never overlap, and
    the published group column (when present) gives the same classes as identical regions."""
    schema, table = data.draw(schemas_and_tables(max_size=20))
    release, truth = data.draw(mondrian_regions(table, with_group=True))
    plain = Release(schema=release.schema, attributes=release.attributes, lo=release.lo, hi=release.hi,
                    sensitive=release.sensitive, masks=release.masks)
    np.testing.assert_array_equal(plain.classes, release.classes)
    reps = [rows[0] for rows in release.class_rows()]
    comp = release.comparable_rows(release, np.array(reps), np.array(reps))
    assert not (comp & ~np.eye(len(reps), dtype=bool)).any()


@given(st.data())
def test_cut_release_is_global(data):
    """In a cut release, a raw value is always published the same way."""
    schema, table = data.draw(schemas_and_tables())
    release, truth = data.draw(cut_releases(table))
    quasi = list(schema.quasi)
    pos = {pid: k for k, pid in enumerate(table.ids)}
    raw = table.qi_codes[[pos[p] for p in truth.person]]
    for j, name in enumerate(release.quasi):
        seen: dict[int, tuple] = {}
        for i in range(len(release)):
            cell = (release.lo[i, j], release.hi[i, j])
            assert seen.setdefault(int(raw[i, quasi.index(name)]), cell) == cell


def test_local_recoding_example():
    """A fixed example: local_recodings shrink to the raw values themselves."""
    from hypothesis import find

    from strategies import schemas

    schema = find(schemas(identifier=False, subsets=False), lambda s: True)
    assert len(schema.quasi) >= 1
    from strategies import raw_tables

    table = find(raw_tables(schema), lambda t: True)
    release, truth = find(local_recodings(table), lambda rt: True)
    assert (release.lo == release.hi).all()
