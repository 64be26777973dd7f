"""Property tests of hierarchies and the leaf-code encoding (multirelease/model/hierarchy.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from multirelease.errors import InputError
from multirelease.model.hierarchy import ROOT_LABEL, Hierarchy
from multirelease.model.schema import Schema

from strategies import any_hierarchies, flatten_leaves, hierarchies, hierarchy_specs, numeric_hierarchies, \
    ordered_hierarchies


def _leaf_node(h: Hierarchy) -> list[int]:
    """Node index of each leaf code, found by a depth-first walk of ``children`` (not by ``node_lo``)."""
    out: list[int] = []
    stack = [0]
    while stack:
        j = stack.pop()
        if h.is_leaf_node(j):
            out.append(j)
        stack.extend(reversed(h.children[j]))
    return out


def _subtree_leaves(h: Hierarchy, j: int) -> list[int]:
    leaf_code = {node: c for c, node in enumerate(_leaf_node(h))}
    out, stack = [], [j]
    while stack:
        x = stack.pop()
        if h.is_leaf_node(x):
            out.append(leaf_code[x])
        stack.extend(reversed(h.children[x]))
    return out


@given(hierarchy_specs())
def test_leaves_in_depth_first_order_of_the_spec(spec):
    h = Hierarchy.from_nested("h", spec)
    assert list(h.leaves) == flatten_leaves(spec)
    assert [h.node_labels[j] for j in _leaf_node(h)] == list(h.leaves)


@given(any_hierarchies())
def test_every_node_is_a_contiguous_range_of_its_subtree_leaves(h):
    for j in range(h.n_nodes):
        leaves = _subtree_leaves(h, j)
        assert leaves == list(range(int(h.node_lo[j]), int(h.node_hi[j]) + 1)), h.node_labels[j]


@given(any_hierarchies())
def test_node_range_is_the_union_of_its_children(h):
    for j in range(h.n_nodes):
        kids = h.children[j]
        if not kids:
            assert h.node_lo[j] == h.node_hi[j]
            continue
        assert h.node_lo[kids[0]] == h.node_lo[j]
        assert h.node_hi[kids[-1]] == h.node_hi[j]
        for a, b in zip(kids, kids[1:]):
            assert h.node_hi[a] + 1 == h.node_lo[b]
        for k in kids:
            assert h.node_parent[k] == j
            assert h.node_depth[k] == h.node_depth[j] + 1


@given(any_hierarchies())
def test_label_parse_round_trip(h):
    for j, text in enumerate(h.node_labels):
        lo, hi = h.parse(text)
        assert (lo, hi) == (h.node_lo[j], h.node_hi[j])
        back = h.label(lo, hi)
        # parse is a left inverse always; the label is the node's own unless a deeper node (a chain of
        # one-child nodes) or the root has the same range
        assert h.parse(back) == (lo, hi)
        same_range = [i for i in range(h.n_nodes) if (h.node_lo[i], h.node_hi[i]) == (lo, hi)]
        if lo == hi:
            assert back == h.leaves[lo]  # a one-leaf range is written as the leaf
        elif lo == 0 and hi == h.n_leaves - 1:
            assert back == ROOT_LABEL
        elif len(same_range) == 1:
            assert back == text
        else:
            deepest = max(same_range, key=lambda i: h.node_depth[i])
            assert back == h.node_labels[deepest]
    for c, leaf in enumerate(h.leaves):
        assert h.code(leaf) == c
        if h.n_leaves > 1:
            assert h.label(c, c) == leaf


@given(st.one_of(numeric_hierarchies(min_leaves=2), ordered_hierarchies()), st.data())
def test_interval_round_trip_on_ordered_hierarchies(h, data):
    assert h.ordered
    assert np.all(np.diff(h.leaf_values) > 0)
    lo = data.draw(st.integers(0, h.n_leaves - 1))
    hi = data.draw(st.integers(lo, h.n_leaves - 1))
    assert h.parse(h.label(lo, hi)) == (lo, hi)
    a, b = h.leaf_values[lo], h.leaf_values[hi]
    assert h.parse(f"[{int(a)},{int(b)}]") == (lo, hi)


@given(any_hierarchies(), st.data())
def test_node_closure_is_the_lowest_common_ancestor(h, data):
    leaf_node = _leaf_node(h)
    n = data.draw(st.integers(1, 6))
    los, his = [], []
    for _ in range(n):
        lo = data.draw(st.integers(0, h.n_leaves - 1))
        los.append(lo)
        his.append(data.draw(st.integers(lo, h.n_leaves - 1)))
    clo, chi = h.node_closure(np.array(los), np.array(his))

    def path(j):
        out = []
        while j >= 0:
            out.append(j)
            j = int(h.node_parent[j])
        return out

    for lo, hi, got_lo, got_hi in zip(los, his, clo, chi):
        up_hi = set(path(leaf_node[hi]))
        lca = next(j for j in path(leaf_node[lo]) if j in up_hi)
        assert (got_lo, got_hi) == (h.node_lo[lca], h.node_hi[lca])


def test_numeric_partial_bands_have_unique_labels():
    # 0..12 with bands 5, 10: the last 10-band [10,12] holds one 5-band with the same range and label
    h = Hierarchy.numeric("n", 0, 12, [5, 10])
    assert h.parse("[10,12]") == (10, 12)
    assert h.parse("[0,9]") == (0, 9) and h.parse("[5,9]") == (5, 9)
    assert h.leaves == tuple(str(v) for v in range(13))


# ---------------------------------------------------------------------- ARX files (Adult)
ADULT = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class",
         "occupation"]


@pytest.mark.parametrize("name", ADULT)
def test_arx_files_of_adult(adult_dir, name):
    path = adult_dir / f"adult_hierarchy_{name}.csv"
    h = Hierarchy.from_arx_csv(name, path)
    firsts = [ln.split(";")[0].strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    # every distinct first-column value is a leaf, each once; codes follow the depth-first order
    assert sorted(h.leaves) == sorted(set(firsts)) and len(firsts) == len(set(firsts))
    assert [h.node_labels[j] for j in _leaf_node(h)] == list(h.leaves)
    assert h.node_labels[0] == ROOT_LABEL
    for j in range(h.n_nodes):
        assert _subtree_leaves(h, j) == list(range(int(h.node_lo[j]), int(h.node_hi[j]) + 1))
    for leaf in firsts:
        assert h.parse(leaf) == (h.code(leaf), h.code(leaf))


def test_arx_adult_facts(adult_dir):
    occ = Hierarchy.from_arx_csv("occupation", adult_dir / "adult_hierarchy_occupation.csv")
    assert occ.n_leaves == 14 and not occ.ordered
    age = Hierarchy.from_arx_csv("age", adult_dir / "adult_hierarchy_age.csv")
    assert age.n_leaves == 100 and age.ordered
    assert age.parse("[30,39]") == (age.code("30"), age.code("39"))
    assert age.label(*age.parse("20-29")) == "20-29"
    sex = Hierarchy.from_arx_csv("sex", adult_dir / "adult_hierarchy_sex.csv")
    assert sex.n_leaves == 2


def test_arx_schema_defaults(adult_dir):
    schema = Schema.from_mapping({"attributes": {
        "age": {"role": "quasi", "hierarchy": {"file": "adult_hierarchy_age.csv"}},
        "sex": {"role": "quasi", "hierarchy": {"file": "adult_hierarchy_sex.csv"}},
        "occupation": {"role": "sensitive"}}}, base=adult_dir)
    assert schema["age"].generalization == "interval"
    assert schema["sex"].generalization == "hierarchy"


# ---------------------------------------------------------------------- validation
def test_leaf_given_twice_nested():
    with pytest.raises(InputError, match="twice"):
        Hierarchy.from_nested("c", {"Europe": ["UK", "France"], "Other": ["UK"]})


def test_leaf_given_twice_arx(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("UK;Europe;*\nFrance;Europe;*\nUK;Europe;*\n", encoding="utf-8")
    with pytest.raises(InputError, match="twice") as exc:
        Hierarchy.from_arx_csv("c", p)
    assert str(p) in exc.value.one_line()


def test_label_naming_two_nodes_arx(tmp_path):
    p = tmp_path / "h.csv"
    # 'West' is under Europe on one line and under America on another
    p.write_text("UK;West;Europe;*\nFrance;Europe;Europe2;*\nUS;West;America;*\n", encoding="utf-8")
    with pytest.raises(InputError, match="names two nodes"):
        Hierarchy.from_arx_csv("c", p)


def test_label_naming_two_nodes_nested():
    with pytest.raises(InputError, match="names two nodes"):
        Hierarchy.from_nested("c", {"Europe": {"UK": None, "Europe": ["France"]}})


@given(hierarchies())
def test_value_not_in_hierarchy(h):
    with pytest.raises(InputError, match="not a leaf"):
        h.code("no-such-value")
    with pytest.raises(InputError, match="not a leaf"):
        h.encode(list(h.leaves) + ["no-such-value"])
    with pytest.raises(InputError):
        h.parse("no-such-value")
    assert h.encode(list(h.leaves)).tolist() == list(range(h.n_leaves))


def test_interval_outside_domain():
    h = Hierarchy.numeric("age", 10, 20)
    with pytest.raises(InputError, match="outside"):
        h.parse("[5,15]")
    with pytest.raises(InputError, match="reversed"):
        h.parse("[15,12]")


@given(st.data())
def test_encoding_a_long_column_looks_up_each_distinct_cell(data):
    """A census column (more than 1,000 cells) is encoded through its distinct cells: the same codes as one
    cell at a time, whitespace and the arrow string dtype included, and a cell that is no leaf named."""
    h = data.draw(hierarchies(max_leaves=6))
    cells = data.draw(st.lists(st.sampled_from([*h.leaves, *(f" {x} " for x in h.leaves)]), min_size=1001,
                               max_size=1200))
    want = [h.code(c) for c in cells]
    for dtype in (object, "string[pyarrow]", "string[python]"):
        assert h.encode(pd.Series(cells, dtype=dtype)).tolist() == want
    at = data.draw(st.integers(0, len(cells) - 1))
    bad = cells[:at] + ["no such leaf"] + cells[at:]
    with pytest.raises(InputError, match="value 'no such leaf' is not a leaf"):
        h.encode(pd.Series(bad, dtype="string[pyarrow]"))
