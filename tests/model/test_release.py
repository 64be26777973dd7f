"""Property tests of releases (multirelease/model/release.py): CSV round trip, containment, comparability,
closure and equivalence classes, each against a brute force on the published labels."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, strategies as st

from multirelease.errors import InputError
from multirelease.model.release import Release
from multirelease.formats.release_csv import read_release_csv, write_release_csv

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
def test_csv_round_trip_text_cells_and_classes(args):
    """One drawn release, three checks: (1) written with write_release_csv and read back, lo / hi / masks /
    sensitive / classes are identical; (2) the text of every cell covers exactly the leaves of its code
    range (or mask); (3) without a group column, classes are the groups of identical QI text rows,
    numbered in order of first appearance."""
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

    sets = _cell_sets(release)
    for i in range(len(release)):
        for j, name in enumerate(release.quasi):
            h = release.schema[name].hierarchy
            if name in release.masks:
                expected = _mask_leaves(release, name, release.masks[name][i])
            else:
                expected = frozenset(h.leaves[release.lo[i, j]:release.hi[i, j] + 1])
            assert sets[i][j] == expected

    assert release.group is None
    labels = release.qi_labels()
    keys = [tuple(labels.iloc[i]) for i in range(len(release))]
    first: dict[tuple, int] = {}
    expected_classes = [first.setdefault(k, len(first)) for k in keys]
    assert release.classes.tolist() == expected_classes
    assert release.n_classes == len(first)
    for c, rows in enumerate(release.class_rows()):
        assert all(release.classes[r] == c for r in rows)


def check_contains_points(table, release, truth) -> None:
    """``contains_points`` equals the brute force on labels; every row contains its own person's point."""
    quasi = list(table.schema.quasi)
    points = table.qi_codes[:, [quasi.index(n) for n in release.quasi]]
    got = release.contains_points(points)
    assert got.shape == (len(release), len(table))
    sets = _cell_sets(release)
    raw = table.frame[list(release.quasi)].to_numpy(dtype=object)
    q = len(release.quasi)
    for i in range(len(release)):
        for p in range(len(table)):
            assert got[i, p] == all(raw[p, j] in sets[i][j] for j in range(q)), (i, p)
    row_of = {pid: k for k, pid in enumerate(table.ids)}
    own = np.array([row_of[pid] for pid in truth.person], dtype=np.int64)
    assert got[np.arange(len(release)), own].all()


def check_comparable_rows(r1, r2) -> None:
    """``comparable_rows`` is symmetric and equals "the leaf sets intersect on every common QI"."""
    got = r1.comparable_rows(r2)
    np.testing.assert_array_equal(got, r2.comparable_rows(r1).T)
    s1, s2 = _cell_sets(r1), _cell_sets(r2)
    q1, q2 = r1.quasi, r2.quasi
    common = [(q1.index(n), q2.index(n)) for n in q1 if n in q2]
    for i in range(len(r1)):
        for k in range(len(r2)):
            assert got[i, k] == all(s1[i][a] & s2[k][b] for a, b in common), (i, k)


def check_closure(release, rows) -> None:
    """``closure_of(rows)`` contains every row and is the smallest value of each attribute's model that
    does: brute force over all hierarchy nodes (``hierarchy``), the hull (``interval``), the union
    (``subsets``)."""
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
            cands = [x for x in range(h.n_nodes) if all(h.node_lo[x] <= c <= h.node_hi[x] for c in codes)]
            best = min(cands, key=lambda x: h.node_hi[x] - h.node_lo[x])
            assert (lo[j], hi[j]) == (h.node_lo[best], h.node_hi[best])
            assert h.is_node_range(lo[j], hi[j])
        assert all(lo[j] <= release.lo[r, j] and release.hi[r, j] <= hi[j] for r in rows)


@given(st.data())
def test_relations_against_labels(data):
    """Two releases of one table (any of the three kinds, maybe vertical subsets): containment of raw
    points, comparability of rows across the releases, and the closure of a random set of rows, each
    against a brute force on the published text."""
    schema, table = data.draw(schemas_and_tables(max_size=15))
    r1, t1 = data.draw(generalized_releases(table, vertical=data.draw(st.booleans())))
    r2, _ = data.draw(generalized_releases(table, vertical=data.draw(st.booleans())))
    check_contains_points(table, r1, t1)
    check_comparable_rows(r1, r2)
    rows = data.draw(st.lists(st.integers(0, len(r1) - 1), min_size=1, max_size=len(r1), unique=True))
    check_closure(r1, rows)


@given(st.data())
def test_strategy_promises(data):
    """What later tests rely on: mondrian_regions classes of distinct boxes never overlap, and its group
    column gives the same classes as identical regions; a cut release publishes a raw value one way."""
    schema, table = data.draw(schemas_and_tables(max_size=20))
    release, truth = data.draw(mondrian_regions(table, with_group=True))
    plain = Release(schema=release.schema, attributes=release.attributes, lo=release.lo, hi=release.hi,
                    sensitive=release.sensitive, masks=release.masks)
    np.testing.assert_array_equal(plain.classes, release.classes)
    reps = [rows[0] for rows in release.class_rows()]
    comp = release.comparable_rows(release, np.array(reps), np.array(reps))
    assert not (comp & ~np.eye(len(reps), dtype=bool)).any()

    release, truth = data.draw(cut_releases(table))
    quasi = list(schema.quasi)
    pos = {pid: k for k, pid in enumerate(table.ids)}
    raw = table.qi_codes[[pos[p] for p in truth.person]]
    for j, name in enumerate(release.quasi):
        seen: dict[int, tuple] = {}
        for i in range(len(release)):
            cell = (release.lo[i, j], release.hi[i, j])
            assert seen.setdefault(int(raw[i, quasi.index(name)]), cell) == cell


@pytest.mark.slow  # three hypothesis finds with shrinking: 9.5 s; .ci/run runs it
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


# ---------------------------------------------------------------------- classes: what the adversary sees
def _numbered(keys) -> list[int]:
    """Brute force: equal keys share a number, numbered in order of first appearance."""
    first: dict = {}
    return [first.setdefault(k, len(first)) for k in keys]


def _label_rows(release: Release) -> list[tuple]:
    labels = release.qi_labels()
    return [tuple(labels.iloc[i]) for i in range(len(release))]


def _read_back(frame, schema, **kw) -> Release:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "release.csv"
        frame.to_csv(path, index=False)
        return read_release_csv(path, schema, **kw)


@st.composite
def grouped_releases(draw, min_classes: int = 1):
    """A mondrian_regions release with its box numbers as the ``group`` column, of at least ``min_classes``
    classes (the partition redrawn over the same table, a few times, before the example is rejected: drawing
    the schema and table is most of an example's cost)."""
    schema, table = draw(schemas_and_tables(max_size=20))
    release, _ = draw(mondrian_regions(table, with_group=True).filter(lambda rt: rt[0].n_classes >= min_classes))
    return release


@given(grouped_releases(), st.booleans())
def test_group_consistent_with_the_qis_keeps_its_classes(release, with_uid):
    """A ``group`` column that agrees with the generalized QIs: read back from CSV (with or without a
    ``uid`` column of one id per row), the classes are the group ids numbered in order of first appearance
    (what the column said before the check) and also the QI text rows numbered the same way (what the
    adversary sees); a tracking uid never splits a class."""
    frame = release.to_frame()
    if with_uid:
        frame.insert(1, "uid", [f"u{i}" for i in range(len(frame))])
    back = _read_back(frame, release.schema)
    assert (back.uid is not None) == with_uid
    assert back.classes.tolist() == _numbered(release.group.tolist())
    assert back.classes.tolist() == _numbered(_label_rows(release))
    no_group = _read_back(frame.drop(columns=["group"]), release.schema)
    assert no_group.classes.tolist() == back.classes.tolist()


@given(grouped_releases(min_classes=2), st.data())
def test_group_mixing_qi_values_is_bad_input_unless_anatomy(release, data):
    """Two groups of distinct boxes merged under one id: reading the file fails with the key ``group <id>``
    of the first mixed group in file order, naming one of its rows and another of its rows whose QI text
    differs, with exactly the differing QI cells (brute force on the written text); declared anatomy, the
    same file is accepted and its classes are the groups; built directly, the release is refused unless
    anatomy."""
    assume(release.n_classes >= 2)
    a, b = data.draw(st.lists(st.sampled_from(sorted(set(release.group.tolist()))), min_size=2, max_size=2,
                              unique=True))
    group = np.where(release.group == b, a, release.group)
    frame = release.to_frame()
    frame["group"] = group
    text = frame.astype(str)
    qi = list(release.quasi)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mixed.csv"
        frame.to_csv(path, index=False)
        with pytest.raises(InputError) as info:
            read_release_csv(path, release.schema)
        err = info.value
        assert err.file == str(path) and err.key == f"group {a}"
        first = next(i for i in range(len(frame)) if group[i] == a)
        m = re.fullmatch(r"mixes rows .* data row (\d+) \(line (\d+)\) has (.*), data row (\d+) \(line (\d+)\) "
                         r"has (.*) \(declare an anatomy release .*\)", err.problem)
        assert m, err.problem
        i, j = int(m[1]) - 1, int(m[4]) - 1
        assert (int(m[2]), int(m[5])) == (i + 2, j + 2)
        assert i == first and group[j] == a
        differ = [n for n in qi if text[n].iloc[i] != text[n].iloc[j]]
        assert differ
        assert m[3] == ", ".join(f"{n}={text[n].iloc[i]}" for n in differ)
        assert m[6] == ", ".join(f"{n}={text[n].iloc[j]}" for n in differ)
        assert str(path) in err.one_line() and f"group {a}" in err.one_line()

        anatomy = read_release_csv(path, release.schema, anatomy=True)
    assert anatomy.anatomy
    assert anatomy.classes.tolist() == _numbered(group.tolist())
    assert anatomy.n_classes == release.n_classes - 1
    kw = dict(schema=release.schema, attributes=release.attributes, lo=release.lo, hi=release.hi,
              sensitive=release.sensitive, masks=release.masks, other=release.other)
    with pytest.raises(ValueError, match=f"group {a} "):
        Release(**kw, group=group)
    assert Release(**kw, group=group, anatomy=True).classes.tolist() == _numbered(group.tolist())


@given(st.data())
def test_class_index_numbers_equal_rows_in_order_of_first_appearance(data):
    """``_class_index`` (columns packed in mixed radix, wide columns factorized, the codes so far factorized
    before a digit would overflow) against the brute force on row tuples: narrow columns (packed), columns
    over the whole int64 range (factorized), and enough of them to overflow 62 bits."""
    from multirelease.model.release import _class_index

    rows = data.draw(st.integers(0, 40))
    width = data.draw(st.integers(1, 24))
    narrow = st.integers(-3, 3)
    wide = st.integers(-2 ** 63, 2 ** 63 - 1)
    kinds = data.draw(st.lists(st.sampled_from(["narrow", "wide", "pool"]), min_size=width, max_size=width))
    pool = data.draw(st.lists(wide, min_size=1, max_size=3))  # few distinct values far apart
    cols = [data.draw(st.lists({"narrow": narrow, "wide": wide, "pool": st.sampled_from(pool)}[k],
                               min_size=rows, max_size=rows)) for k in kinds]
    key = np.array(cols, dtype=np.int64).T.reshape(rows, width)
    assert _class_index(key).tolist() == _numbered([tuple(r) for r in key.tolist()])


@given(st.data())
def test_uniform_within_a_code_against_the_rows_of_each_code(data):
    """``_uniform_within`` (how a release whose every group holds one QI value skips the packing of its columns
    in ``Release.classes``) against the brute force: every two rows of one code equal in every array - on
    arrays drawn at random and on arrays copied from each code's first row (uniform), one row changed or not."""
    from multirelease.model.release import _class_index, _uniform_within

    rows = data.draw(st.integers(1, 30))
    codes = _class_index(np.array(data.draw(st.lists(st.integers(0, 4), min_size=rows, max_size=rows)))[:, None])
    arrays = [np.array(data.draw(st.lists(st.integers(0, 2), min_size=rows * w, max_size=rows * w)),
                       dtype=np.int64).reshape(rows, w) for w in data.draw(st.lists(st.integers(1, 3), max_size=3))]
    if data.draw(st.booleans()):
        first = {}
        for i, c in enumerate(codes.tolist()):
            first.setdefault(c, i)
        arrays = [a[[first[c] for c in codes.tolist()]] for a in arrays]
        if arrays and data.draw(st.booleans()):
            arrays[-1][data.draw(st.integers(0, rows - 1)), 0] += 1
    alike = all(a[i].tolist() == a[j].tolist() for a in arrays for i in range(rows) for j in range(rows)
                if codes[i] == codes[j])
    assert _uniform_within(codes, arrays) == alike


def test_class_index_does_not_wrap_around():
    """65 binary columns: packed without care, the row ``1, 0, ..., 0`` would be 2^64, equal to the row of
    zeros modulo 2^64; the codes are factorized before a digit would overflow, so the two stay apart."""
    from multirelease.model.release import _class_index

    key = np.zeros((4, 65), dtype=np.int64)
    key[0, 0] = 1
    key[2, 64] = 1
    key[3] = 1  # every column takes both values: a binary digit each
    assert _class_index(key).tolist() == [0, 1, 2, 3]


def _same_release(a: Release, b: Release) -> None:
    assert (a.attributes, a.anatomy, a.counterfeits) == (b.attributes, b.anatomy, b.counterfeits)
    for name in ("lo", "hi", "sensitive", "group", "uid", "classes"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y), name
    assert set(a.masks) == set(b.masks)
    for name in a.masks:
        assert a.masks[name].dtype == b.masks[name].dtype and np.array_equal(a.masks[name], b.masks[name])
    assert (a.other is None) == (b.other is None)
    if a.other is not None:
        pd.testing.assert_frame_equal(a.other, b.other)
    if "sensitive_codes" in a.__dict__:  # computed before pickling: travels, the same codes and values
        assert "sensitive_codes" in b.__dict__
        (ca, va), (cb, vb) = a.sensitive_codes, b.sensitive_codes
        assert ca.dtype == cb.dtype and np.array_equal(ca, cb) and va.tolist() == vb.tolist()


@given(tables_and_releases(), grouped_releases(min_classes=2), st.booleans())
def test_pickled_release_is_the_release(args, grouped, merge):
    """A release pickled (a worker's task or result: one row per class, expanded on unpickling) is the same
    release, field by field and dtype by dtype: generalized and vertical releases, releases with a ``group``
    column and anatomy releases (two groups merged, pickled row by row)."""
    import pickle

    _, release, _ = args
    _same_release(release, pickle.loads(pickle.dumps(release)))
    if merge:
        grouped.sensitive_codes  # factorized where it was read (certify's workers)
    _same_release(grouped, pickle.loads(pickle.dumps(grouped)))
    if merge:
        a, b = sorted(set(grouped.group.tolist()))[:2]
        anatomy = Release(schema=grouped.schema, attributes=grouped.attributes, lo=grouped.lo, hi=grouped.hi,
                          sensitive=grouped.sensitive, masks=grouped.masks, other=grouped.other,
                          group=np.where(grouped.group == b, a, grouped.group), anatomy=True)
        _same_release(anatomy, pickle.loads(pickle.dumps(anatomy)))
