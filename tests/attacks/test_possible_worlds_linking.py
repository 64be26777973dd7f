"""The possible-worlds attack reads linking columns (issue 22; Shmueli & Tassa 004, section 5.2).

* Example 5.1 (Tables 15-16), the paper's numbers: both releases are 2-invariant, yet blood type O+ is the only
  one found in both of Bob's classes, so Bob is linkable to measles only (``min_linkability`` 1, not 2); the
  same releases without the blood type column give every individual two values.
* A brute force written from Definition 3.1 of 004 - a world gives each individual *one tuple* of published
  non-quasi-identifier values (sensitive value and persistent linking values) for the whole sequence, and each
  release must have a bijection from its individuals to its rows whose region contains the individual's point
  and whose tuple is the individual's - enumerated with itertools over tuples and permutations, compared with
  the attack on random 2-3 release sequences with insertions and deletions and one or two linking columns:
  linkability of every (individual, sensitive value) and the exact breach fraction, read on the sensitive
  value (the worlds of ``(s, t)`` over ``t`` add up).
"""
from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import assume
from hypothesis import strategies as st

from attacks.possible_worlds import PossibleWorlds, _SensitiveView
from multirelease.errors import InputError
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.table import Table
from strategies import generalized_releases, leaf_set, schemas_and_tables
from tally import tally

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "scenarios" / "shmueli_tassa_example_5_1.yaml"


# ---------------------------------------------------------------------- Example 5.1
def test_example_5_1_bob_is_linked_to_measles_by_his_blood_type():
    report = run_scenario(load_scenario(EXAMPLE))
    res = report.results["possible_worlds"]
    assert res.exact
    assert res.summary["min_linkability"] == 1
    # Bob by his blood type; then Alice (release 1) and Janet (release 2) by elimination
    assert res.summary["disclosed"] == 3
    worst = res.worst["min_linkability"]
    assert worst["individual"] == "Bob" and worst["values"] == ["measles"]
    assert worst["linked_by"] == ["bt"] and worst["linked_values"] == ["measles (bt=O+)"]
    assert report.verdict == "fail"
    # David and Helen keep two values each
    by_name = {t["individual"]: sorted(t["linkable"]) for t in res.targets}
    assert by_name["David"] == ["angina", "flu"] and by_name["Helen"] == ["angina", "flu"]


def test_example_5_1_without_the_blood_type_every_individual_has_two_values():
    scenario = load_scenario(EXAMPLE)
    seq = run_scenario(scenario).sequence
    stripped = ReleaseSequence()
    for rel, truth, snap in zip(seq.releases, seq.truths, seq.snapshots):
        attrs = tuple(a for a in rel.attributes if a != "bt")
        from dataclasses import replace
        stripped.append(replace(rel, attributes=attrs, other=None), truth, snap)
    view = stripped.view(scenario.adversary)
    assert not view.linking
    res = PossibleWorlds().run(view)
    assert res.summary["min_linkability"] == 2 and res.summary["disclosed"] == 0


def test_a_changing_column_links_nothing():
    scenario = load_scenario(EXAMPLE)
    seq = run_scenario(scenario).sequence
    view = seq.view(Adversary(sensitive="persistent", changing=("bt",)))
    assert not view.linking and view.linking.ignored == ("bt",)
    assert PossibleWorlds().run(view).summary["min_linkability"] == 2


def test_a_column_in_some_releases_only_is_refused_in_one_line():
    scenario = load_scenario(EXAMPLE)
    seq = run_scenario(scenario).sequence
    from dataclasses import replace
    rels = list(seq.releases) + [seq.releases[1]]
    rels[1] = replace(rels[1], attributes=tuple(a for a in rels[1].attributes if a != "bt"), other=None)
    three = ReleaseSequence()
    for r, s in zip(rels, list(seq.snapshots) + [seq.snapshots[1]]):
        three.append(r, None, s)
    try:
        three.view(scenario.adversary).linking
    except InputError as err:
        line = err.one_line()
        assert "'bt'" in line and "releases 1, 3" in line and "\n" not in line
    else:
        raise AssertionError("a persistent column missing from one release was not refused")


# ---------------------------------------------------------------------- brute force (004, Definition 3.1)
def _covers(release_frame: pd.DataFrame, quasi, schema, table_row) -> np.ndarray:
    """Which rows of a release contain the individual's QI point (from the cells' texts)."""
    ok = np.ones(len(release_frame), dtype=bool)
    for q in quasi:
        cells = release_frame[q].astype(str).tolist()
        ok &= np.array([str(table_row[q]) in leaf_set(schema[q], c) for c in cells])
    return ok


def brute_force_worlds(tables: list[Table], releases, linking: list[str]):
    """Every world of the sequence: individual -> (sensitive value, linking tuple), persistent."""
    schema = tables[0].schema
    sens = schema.sensitive[0]
    frames = [r.to_frame() for r in releases]
    rows_tuples = [[tuple(str(x) for x in row) for row in f[[sens] + linking].itertuples(index=False)]
                   for f in frames]
    people = list(dict.fromkeys(i for t in tables for i in t.ids))
    # candidate tuples of each person: in every release it is in, the tuple of a row that contains it
    cover = []
    for t, f, rel in zip(tables, frames, releases):
        raw = t.frame
        cover.append({pid: _covers(f, rel.quasi, schema, raw.loc[raw.index[k]])
                      for k, pid in enumerate(t.ids)})
    cands = []
    for pid in people:
        allowed = None
        for r, t in enumerate(tables):
            if pid in cover[r]:
                here = {rows_tuples[r][j] for j in np.flatnonzero(cover[r][pid])}
                allowed = here if allowed is None else allowed & here
        cands.append(sorted(allowed or ()))
    worlds = []
    for assignment in itertools.product(*cands):
        world = dict(zip(people, assignment))
        if all(_bijection(world, list(t.ids), rows_tuples[r], cover[r]) for r, t in enumerate(tables)):
            worlds.append(world)
    return people, worlds


def _bijection(world, present, row_tuples, cover) -> bool:
    if Counter(world[p] for p in present) != Counter(row_tuples):
        return False
    for perm in itertools.permutations(range(len(row_tuples))):
        if all(cover[p][j] and row_tuples[j] == world[p] for p, j in zip(present, perm)):
            return True
    return False


@st.composite
def partition_releases(draw, table: Table):
    """A release of ``table`` whose classes are a random partition of its rows into blocks of 1-3 (mostly 2-3),
    each published as the closure of its rows (a local recoding, as m-invariance's groups are)."""
    from strategies_releases import _assemble

    schema = table.schema
    n = len(table)
    order = draw(st.permutations(range(n)))
    sizes = []
    while sum(sizes) < n:
        sizes.append(draw(st.sampled_from([1, 2, 2, 3, 3])))
    cls = np.repeat(np.arange(len(sizes)), sizes)[:n]
    rows = np.asarray(order, dtype=np.int64)
    codes = table.qi_codes[rows]
    lo = np.empty_like(codes)
    hi = np.empty_like(codes)
    for c in np.unique(cls):
        at = cls == c
        lo[at] = codes[at].min(axis=0)
        hi[at] = codes[at].max(axis=0)
    for j, a in enumerate(schema.qi_attributes):
        lo[:, j], hi[:, j] = a.closure(lo[:, j], hi[:, j])
    return _assemble(table, schema.published, rows, lo, hi, {})


@st.composite
def linked_sequences(draw):
    schema, table = draw(schemas_and_tables(min_size=3, max_size=6, identifier=True, max_sensitive=3,
                                            max_quasi=2, subsets=False, max_linking=2))
    assume(any(a.role in ("non-identifier", "insensitive") for a in schema.attributes))
    n_rel = draw(st.integers(2, 3))
    ids = list(table.ids)
    tables, releases = [], []
    for _ in range(n_rel):  # insertions and deletions: each release holds a random non-empty subset
        keep = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)).filter(lambda k: sum(k) >= 2))
        sub = Table(schema, table.frame[np.asarray(keep)])
        rel, _ = draw(st.one_of(partition_releases(sub), generalized_releases(sub)))
        tables.append(sub)
        releases.append(rel)
    return tables, releases


def test_linked_worlds_equal_brute_force():
    """The property below, and a tally: the linking columns must change the answer in some examples (a brute
    force that ignored them would then disagree)."""
    got = tally(linked_sequences(), lambda case: _compare_with_brute_force(*case), 60)
    print(f"\n{got}")
    assert got["mattered"] > 0, got


def test_tuple_pins_equal_the_brute_force():
    """:func:`multirelease.model.linking.tuple_pins` (the check every publisher keeping linking columns makes,
    vectorized) against the test suite's brute force of Example 5.1's attacker, loop by loop, on random 2-3
    release sequences with insertions, deletions and one or two linking columns; Bob of Example 5.1 is pinned
    to measles.  The tally asks for examples where someone is pinned."""
    from bruteforce import tuple_pins as brute_pins
    from multirelease.model.linking import tuple_pins

    def compare(case) -> bool:
        tables, releases = case
        seq = ReleaseSequence()
        for t, r in zip(tables, releases):
            seq.append(r, None, t)
        view = seq.view(Adversary())
        got = [f"{who} in release {r + 1}: {value}"
               for who, r, value in tuple_pins(view.population, view.releases, view.linking)]
        want = brute_pins(tables, releases, tuple(view.linking.columns))
        assert sorted(got) == sorted(want)
        return bool(want)

    got = tally(linked_sequences(), compare, 60)
    print(f"\n{got}")
    assert got["mattered"] > 0, got
    seq = run_scenario(load_scenario(EXAMPLE)).sequence
    view = seq.view(Adversary())
    pins = tuple_pins(view.population, view.releases, view.linking)
    assert ("Bob", 0, "measles") in pins and all(value == "measles" for who, _, value in pins if who == "Bob")


def _compare_with_brute_force(tables, releases) -> bool:
    seq = ReleaseSequence()
    for t, r in zip(tables, releases):
        seq.append(r, None, t)
    view = seq.view(Adversary(sensitive="persistent"))
    linking = list(view.linking.columns)
    assert linking  # every release publishes every column of the schema
    people, worlds = brute_force_worlds(tables, releases, linking)
    assume(worlds)  # the releases are of the tables: the true world is one
    attack = PossibleWorlds()
    a = attack.analysis(view)
    p = _SensitiveView(a, view.linking)
    index = {str(x): i for i, x in enumerate(a.problem.individuals)}
    values = [str(v) for v in p.values]
    for pid in people:
        i = index[str(pid)]
        linked = {w[pid][0] for w in worlds}
        assert {values[v] for v in np.flatnonzero(p.linkable[i])} == linked, pid
        for v, s in enumerate(values):
            want = Fraction(sum(1 for w in worlds if w[pid][0] == s), len(worlds))
            assert p.breach_fraction(i, v) == want, (pid, s)
    res = attack.run(view)
    n_links = [len({w[pid][0] for w in worlds}) for pid in people]
    assert res.summary["min_linkability"] == min(n_links)
    assert res.summary["disclosed"] == sum(1 for n in n_links if n == 1)
    # the same releases read without their linking columns
    blind = PossibleWorlds().run(seq.view(Adversary(sensitive="persistent", changing=tuple(linking))))
    return blind.summary["disclosed"] != res.summary["disclosed"] or \
        blind.summary["max_breach"] != res.summary["max_breach"]
