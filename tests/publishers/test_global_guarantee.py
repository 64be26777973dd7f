"""The global-guarantee publisher (Wong et al., 001) against a brute force written from the paper.

The brute force enumerates possible worlds (Definition 1): for each release, the distinct assignments of
sensitive values to its individuals for which a one-to-one correspondence with the published rows exists
(each individual inside its row's region, the row's value); a world of the series is one such assignment per
table (Definition 1 constrains each table alone, values are free), and ``p(o, s, k)`` is the fraction of
worlds linking ``o`` to ``s`` in at least one table (Definition 2).  It checks:

* the brute force itself on the paper's numbers (Figures 2 and 4: 3/4 and 7/16);
* on random tiny serial tables (6-12 rows, 2-4 releases, insertions, deletions, transient values): every
  published sequence has ``p <= 1/l`` and the publisher's exact survivals equal ``1 - p``; every
  ``impossible`` / ``most_general`` refusal is right about the most general release; a ``budget`` refusal's
  release is published with ``shrink: true`` and keeps the guarantee;
* on six rows, an ``impossible`` refusal against every partition of the records (all 203);
* merging publishes where the one-class release fails; the own check reads the attack's intervals.
"""
from __future__ import annotations

from fractions import Fraction

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from attacks.base import AttackResult
from attacks.possible_worlds import PossibleWorlds
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.schema import Attribute, Schema
from multirelease.model.table import Table
from publishers.global_guarantee import GlobalGuarantee, Refusal
from publishers.mondrian import release_from_partition

from bruteforce import distinct_assignments

VALUES = ("flu", "hiv", "cancer", "none")  # the random tables' values (the hierarchy has "fever" as well)
ZIPS = ("z1", "z2", "z3", "z4")


# ---------------------------------------------------------------------- brute force (001, Definitions 1-2)
def _has_correspondence(assign: np.ndarray, row_value: np.ndarray, inside: np.ndarray) -> bool:
    """A bijection individuals -> rows, each individual inside its row, giving it its assigned value."""
    g = nx.Graph()
    people = [("p", i) for i in range(len(assign))]
    g.add_nodes_from(people)
    g.add_nodes_from(("r", r) for r in range(len(row_value)))
    g.add_edges_from((("p", i), ("r", r)) for i in range(len(assign)) for r in range(len(row_value))
                     if inside[r, i] and row_value[r] == assign[i])
    return len(nx.bipartite.maximum_matching(g, top_nodes=people)) // 2 == len(assign)


def release_worlds(release, snapshot: Table) -> dict[str, dict[str, Fraction]]:
    """``q[o][s]``: the fraction of the release's possible worlds giving ``o`` the value ``s``."""
    cols = [list(snapshot.schema.quasi).index(n) for n in release.quasi]
    points = snapshot.qi_codes[:, cols]
    inside = np.all((release.lo[:, None, :] <= points[None]) & (points[None] <= release.hi[:, None, :]), axis=2)
    ids = [str(x) for x in snapshot.ids]
    g = nx.Graph()
    g.add_nodes_from(("p", i) for i in range(len(ids)))
    g.add_nodes_from(("r", r) for r in range(len(release)))
    g.add_edges_from((("p", i), ("r", r)) for r, i in zip(*np.nonzero(inside)))
    sens = np.asarray(release.sensitive, dtype=object).astype(str)
    q: dict[str, dict[str, Fraction]] = {}
    for comp in nx.connected_components(g):
        people = sorted(i for kind, i in comp if kind == "p")
        rows = sorted(r for kind, r in comp if kind == "r")
        assert len(people) == len(rows), "a release with no world"
        labels, arr = distinct_assignments(list(sens[rows]), len(people))
        sub = inside[np.ix_(rows, people)]
        if not sub.all():
            row_codes = np.searchsorted(labels, sens[rows])
            arr = arr[[_has_correspondence(a, row_codes, sub) for a in arr]]
        for col, i in enumerate(people):
            q[ids[i]] = {str(labels[v]): Fraction(int((arr[:, col] == v).sum()), len(arr)) for v in range(len(labels))}
    return q


def brute_force_breach(snapshots, releases, protected) -> dict[tuple[str, str], Fraction]:
    """``p(o, s, k)`` of Definition 2 for every individual and protected value: the worlds of the series are
    the product of each release's worlds, so the worlds never linking ``o`` to ``s`` number
    ``prod_j (W_j - L_j(o, s))`` of ``prod_j W_j``."""
    miss: dict[tuple[str, str], Fraction] = {}
    for t, r in zip(snapshots, releases):
        for o, qs in release_worlds(r, t).items():
            for s in protected:
                miss[o, s] = miss.get((o, s), Fraction(1)) * (1 - qs.get(s, Fraction(0)))
    return {key: 1 - m for key, m in miss.items()}


# ---------------------------------------------------------------------- tables
def _schema() -> Schema:
    return Schema((Attribute("id", "identifier"),
                   Attribute("age", "quasi", Hierarchy.numeric("age", 0, 9)),
                   Attribute("zip", "quasi", Hierarchy.from_nested("zip", {"*": {"Z1": ["z1", "z2"],
                                                                                 "Z2": ["z3", "z4"]}})),
                   Attribute("disease", "sensitive", Hierarchy.from_nested("disease", [*VALUES, "fever"]))))


SCHEMA = _schema()


def _table(rows: dict[str, tuple]) -> Table:
    frame = pd.DataFrame([list(map(str, v)) for v in rows.values()], columns=["age", "zip", "disease"],
                         index=pd.Index(list(rows), name="id"), dtype=object)
    return Table(SCHEMA, frame)


@st.composite
def tiny_serial_tables(draw, min_rows: int = 6, max_rows: int = 12):
    """2-4 snapshots: each person's value redrawn freely between releases, 0-2 leave, 0-2 arrive."""
    person = st.tuples(st.integers(0, 9), st.sampled_from(ZIPS), st.sampled_from(VALUES))
    n = draw(st.integers(min_rows, max_rows))
    rows = {f"p{i}": draw(person) for i in range(n)}
    next_id = n
    tables = [_table(rows)]
    for _ in range(draw(st.integers(2, 4)) - 1):
        rows = {o: (a, z, draw(st.sampled_from(VALUES)) if draw(st.booleans()) else s) for o, (a, z, s) in rows.items()}
        for o in draw(st.lists(st.sampled_from(sorted(rows)), max_size=2, unique=True))[:len(rows) - min_rows]:
            del rows[o]
        for _ in range(min(draw(st.integers(0, 2)), max_rows - len(rows))):
            rows[f"p{next_id}"] = draw(person)
            next_id += 1
        tables.append(_table(rows))
    return tables


def _most_general(table: Table):
    return release_from_partition(table, SCHEMA.published, [np.arange(len(table))], np.random.default_rng(0))[0]


def _publish(publisher, tables, state=None):
    rng = np.random.default_rng(0)
    releases = []
    for t in tables:
        res = publisher.publish(t, state=state, rng=rng)
        state = res.state
        releases.append(res.release)
    return releases, state


# ---------------------------------------------------------------------- the brute force on the paper's numbers
def _wong(groups):
    schema = Schema((Attribute("id", "identifier"),
                     Attribute("sex", "quasi", Hierarchy.from_nested("sex", {"*": ["M", "F"]})),
                     Attribute("zip", "quasi", Hierarchy.numeric("zip", 65000, 65019)),
                     Attribute("disease", "sensitive",
                               Hierarchy.from_nested("disease", ["flu", "chlamydia", "fever"]))))
    t1 = {"o1": ("M", 65001, "flu"), "o2": ("M", 65002, "chlamydia"), "o3": ("F", 65014, "flu"),
          "o4": ("F", 65015, "fever")}
    t2 = {"o1": ("M", 65001, "chlamydia"), "o2": ("M", 65002, "flu"), "o3": ("F", 65014, "fever"),
          "o5": ("F", 65010, "flu")}
    tables, releases = [], []
    for rows, parts in zip((t1, t2), groups):
        frame = pd.DataFrame([list(map(str, v)) for v in rows.values()], columns=["sex", "zip", "disease"],
                             index=pd.Index(list(rows), name="id"), dtype=object)
        t = Table(schema, frame)
        tables.append(t)
        releases.append(release_from_partition(t, schema.published, [np.array(p) for p in parts],
                                               np.random.default_rng(0))[0])
    return brute_force_breach(tables, releases, ["chlamydia"])


def test_brute_force_gives_wong_figures_2_and_4():
    assert _wong([[[0, 1], [2, 3]], [[0, 1], [2, 3]]])["o2", "chlamydia"] == Fraction(3, 4)  # Figure 2, Example 2
    assert _wong([[[0, 1, 2, 3]], [[0, 1, 2, 3]]])["o2", "chlamydia"] == Fraction(7, 16)  # Figure 4, Example 2


# ---------------------------------------------------------------------- random tiny tables
@given(tiny_serial_tables(), st.sampled_from([1.25, 1.5, 2.0]), st.integers(1, 4), st.booleans())
def test_published_sequences_keep_the_guarantee_and_refusals_are_right(tables, l, horizon, shrink):
    publisher = GlobalGuarantee(l=l, horizon=horizon, shrink=shrink, sensitive="free")  # transient values
    bound = 1 / Fraction(l).limit_denominator(10**6)
    rng = np.random.default_rng(0)
    state, releases = None, []
    for t in tables:
        try:
            res = publisher.publish(t, state=state, rng=rng)
        except Refusal as e:
            event(f"refused: {e.kind}")
            assert e.kind in ("impossible", "most_general", "budget"), str(e)
            protected = sorted(set(t.sensitive.astype(str)) | {s for tb in tables for s in tb.sensitive.astype(str)})
            if e.kind == "budget":
                # it keeps the guarantee now: published with the horizon allowed to shrink
                assert not shrink
                res = GlobalGuarantee(l=l, horizon=horizon, shrink=True,
                                      sensitive="free").publish(t, state=state, rng=rng)
                p = brute_force_breach(tables, releases + [res.release], protected)
                assert max(p.values()) <= bound
                assert res.state["horizon"] == e.witness["fits"] < min(horizon, (state or {}).get("horizon", horizon))
            else:
                # the most general release breaks it, for the individual and value named
                p = brute_force_breach(tables, releases + [_most_general(t)], protected)
                assert max(p.values()) > bound
                if e.kind == "most_general":
                    assert p[e.witness["individual"], e.witness["value"]] == e.witness["p"]
            return
        state = res.state
        releases.append(res.release)
        p = brute_force_breach(tables, releases, sorted({s for tb in tables for s in tb.sensitive.astype(str)}))
        assert max(p.values()) <= bound
        for (o, s), value in p.items():  # the publisher's exact survival is the brute force's 1 - p
            assert Fraction(state["survival"].get(o, {}).get(s, "1")) == 1 - value
    event("published")


# ---------------------------------------------------------------------- impossible, against every release
def _set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        yield [[first]] + part
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]


def test_impossible_refusal_holds_for_every_partition_of_six_records():
    t1 = _table({f"p{i}": (i, "z1", v) for i, v in enumerate(["flu", "flu", "flu", "hiv", "hiv", "none"])})
    releases, state = _publish(GlobalGuarantee(l=2, horizon=1), [t1])
    t2 = _table({f"p{i}": (i, "z1", v) for i, v in enumerate(["flu", "hiv", "none", "none", "cancer", "hiv"])})
    with pytest.raises(Refusal) as info:
        GlobalGuarantee(l=2, horizon=1).publish(t2, state=state, rng=np.random.default_rng(0))
    assert info.value.kind == "impossible" and "'p0'" in str(info.value)  # p0 holds flu; p(p0, flu, 1) = 1/2
    partitions = list(_set_partitions(list(range(6))))
    assert len(partitions) == 203  # Bell(6)
    for parts in partitions:
        r2 = release_from_partition(t2, SCHEMA.published, [np.array(p) for p in parts], np.random.default_rng(0))[0]
        p = brute_force_breach([t1, t2], releases + [r2], ["flu"])
        assert p["p0", "flu"] > Fraction(1, 2)


# ---------------------------------------------------------------------- merging, budgets, own check
def test_merging_publishes_where_the_most_general_release_fails():
    t1 = _table({o: (0, "z1", v) for o, v in zip("abcd", ["flu", "flu", "hiv", "cancer"])})
    # a..d: p(o, flu) = 1/2 spent; e..h new.  One class of eight gives a..d q(flu) = 1/8 > 0.
    t2 = _table({**{o: (0, "z1", v) for o, v in zip("abcd", ["hiv", "cancer", "none", "fever"])},
                 **{o: (9, "z4", v) for o, v in zip("efgh", ["flu", "hiv", "cancer", "none"])}})
    releases, state = _publish(GlobalGuarantee(l=2, horizon=1), [t1, t2])
    p = brute_force_breach([t1, t2], releases, [*VALUES, "fever"])
    assert max(p.values()) == Fraction(1, 2)
    assert releases[1].n_classes == 2
    assert brute_force_breach([t1, t2], releases[:1] + [_most_general(t2)], ["flu"])["a", "flu"] > Fraction(1, 2)


def test_budget_refusal_says_how_much_and_shrink_publishes():
    t = _table({f"p{i}": (i, "z1", v) for i, v in enumerate(["flu"] * 2 + ["hiv"] * 2 + ["none"])})
    with pytest.raises(Refusal) as info:
        GlobalGuarantee(l=2, horizon=2).publish(t, rng=np.random.default_rng(0))
    e = info.value
    assert e.kind == "budget" and e.witness["fits"] == 1
    assert e.witness["q"] == pytest.approx(2 / 5) and e.witness["share"] == pytest.approx(1 - 0.5 ** 0.5)
    res = GlobalGuarantee(l=2, horizon=2, shrink=True).publish(t, rng=np.random.default_rng(0))
    assert res.state["horizon"] == 1
    assert max(brute_force_breach([t], [res.release], list(VALUES)).values()) == Fraction(2, 5)


@pytest.mark.parametrize("bounds, kind", [((0.3, 0.7), "unknown"), ((0.6, 0.9), "check")])
def test_own_check_reads_the_attack_interval(monkeypatch, bounds, kind):
    real = PossibleWorlds.run

    def inexact(self, view, progress=None):
        r = real(self, view, progress)
        return AttackResult(attack=r.attack, summary=r.summary, exact=False, worst=r.worst,
                            bounds={"max_breach": bounds}, proven=("min_linkability",))

    monkeypatch.setattr(PossibleWorlds, "run", inexact)
    t = _table({f"p{i}": (i, "z1", v) for i, v in enumerate(VALUES * 2)})
    with pytest.raises(Refusal) as info:
        GlobalGuarantee(l=2, horizon=1).publish(t, rng=np.random.default_rng(0))
    assert info.value.kind == kind and "max_breach" in str(info.value)
    monkeypatch.setattr(PossibleWorlds, "run", real)
    assert GlobalGuarantee(l=2, horizon=1).publish(t, rng=np.random.default_rng(0)).state["releases"] == 1


def test_protecting_one_value_still_publishes_l_linkable_classes():
    """With ``values: [hiv]`` the caps say nothing about flu; the own check still asks for l-linkability, so
    no pair of flu-only people is published as a class of its own (by the brute force: everyone can hold two
    values or more, and p(o, hiv, 1) <= 1/2)."""
    zips = ["z1", "z1", "z2", "z2", "z3", "z3", "z4", "z4"]
    values = ["flu", "flu", "flu", "none", "flu", "hiv", "flu", "cancer"]
    t = _table({f"p{i}": (0, z, v) for i, (z, v) in enumerate(zip(zips, values))})
    res = GlobalGuarantee(l=2, horizon=1, values=["hiv"]).publish(t, rng=np.random.default_rng(0))
    q = release_worlds(res.release, t)
    assert min(sum(1 for x in qs.values() if x) for qs in q.values()) >= 2
    assert max(qs.get("hiv", 0) for qs in q.values()) <= Fraction(1, 2)
    assert res.release.n_classes == 2  # it still splits where it can: Z1 and Z2


# ---------------------------------------------------------------------- the scenario's adversary (pipeline)
@pytest.mark.parametrize("adversary, params, expected", [
    ({"sensitive": "free"}, {}, "free"),
    ({}, {}, "persistent"),  # the contract's default adversary: persistent values
    ({"sensitive": "persistent"}, {}, "persistent"),
    ({"sensitive": "free"}, {"sensitive": "persistent"}, "persistent"),  # the parameter overrides the spec
    ({"sensitive": "persistent"}, {"sensitive": "free"}, "free"),
])
def test_pipeline_binds_the_scenarios_adversary(tmp_path, adversary, params, expected):
    """The publisher checks against the scenario's ``adversary.sensitive`` (its own ``sensitive:`` parameter, when
    given, wins): with ``free`` it keeps no history for the whole-sequence persistent check (state
    ``history: null``), with ``persistent`` it keeps every release."""
    from pathlib import Path

    import yaml

    from multirelease.pipeline import load_scenario_document, run_scenario

    data = Path(__file__).resolve().parents[1] / "data"
    doc = {"name": "gg", "seed": 3, "schema": yaml.safe_load((data / "tiny.yaml").read_text())["schema"],
           "data": {"file": str(data / "tiny.csv")}, "adversary": adversary, "attacks": [],
           "releases": [{"publisher": "global_guarantee", "l": 1.25, "values": ["hiv"], "shrink": True, **params}] * 2}
    scenario = load_scenario_document(doc, base=tmp_path, path=tmp_path / "gg.yaml")
    assert {s.publisher.config["sensitive"] for s in scenario.steps} == {expected}
    run = run_scenario(scenario, attack=False)
    assert (run.states[-1]["history"] is None) == (expected == "free")
    assert expected == "free" or len(run.states[-1]["history"]) == 2
