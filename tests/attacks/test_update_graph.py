"""The update-graph attack (Li & Zhou, section III): golden Example 3, the DP against path enumeration,
Definition 11's pruning, Lemmas 1 and 2, and the joint possible-worlds attack against the per-record SUG."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from attacks.update_graph.attack import UpdateGraph, enumerate_paths, link_versions, node_weights, sug_dp
from multirelease.errors import InputError
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.transitions import TransitionModel, load_transitions
from strategies import sug_layers, transition_models
from strategies_dynamics import published_sequence

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
VALUES = ("a", "b", "c", "d", "e")


def _dp_one(layers, gaps, model):
    """Risks of one record through :func:`sug_dp` (the versions at releases spaced by ``gaps``)."""
    releases = np.concatenate([[0], np.cumsum(gaps)]).astype(int) if gaps else np.array([0])
    N = int(releases[-1]) + 1
    V = len(model)
    w = [np.zeros((1, V)) for _ in range(N)]
    pres = [np.zeros(1, dtype=bool) for _ in range(N)]
    for layer, r in zip(layers, releases):
        for v, x in layer.items():
            w[r][0, model.index(v)] = x
        pres[r][0] = True
    feas, risk = sug_dp(w, pres, model)
    out = []
    for r in releases:
        out.append(({model.values[v] for v in np.flatnonzero(feas[r][0])},
                    {model.values[v]: risk[r][0, v] for v in np.flatnonzero(feas[r][0])}))
    return out


def _prune(layers, gaps, model):
    """Definition 11 literally: delete first-layer nodes without outgoing edges, last-layer nodes without
    incoming edges, middle nodes without either, until nothing changes."""
    nodes = [set(l) for l in layers]
    reach = [model.steps(g) for g in gaps]
    changed = True
    while changed:
        changed = False
        for i, layer in enumerate(nodes):
            for v in list(layer):
                a = model.index(v)
                out = i + 1 < len(nodes) and any(reach[i][a, model.index(u)] for u in nodes[i + 1])
                inc = i > 0 and any(reach[i - 1][model.index(u), a] for u in nodes[i - 1])
                if (i + 1 < len(nodes) and not out) or (i > 0 and not inc):
                    layer.discard(v)
                    changed = True
    return nodes


# ---------------------------------------------------------------------- golden: Example 3 and Fig. 1
def test_julia_example_3():
    """Fig. 1: Julia's first candidate set {Dyspepsia, Pneumonia}, second {Lung Cancer, Pneumonia}; dyspepsia
    updates to neither, so r_2(t'_1) = 100% and r_2(t'_2) = 50%."""
    model = load_transitions({"candidates": {"Dyspepsia": ["Dyspepsia", "Gastritis"],
                                             "Pneumonia": ["Pneumonia", "Flu", "Lung Cancer"]}},
                             None)
    layers = [{"Dyspepsia": 0.5, "Pneumonia": 0.5}, {"Lung Cancer": 0.5, "Pneumonia": 0.5}]
    (f1, r1), (f2, r2) = _dp_one(layers, [1], model)
    assert f1 == {"Pneumonia"}
    assert r1["Pneumonia"] == pytest.approx(1.0)
    assert f2 == {"Lung Cancer", "Pneumonia"}
    assert r2 == pytest.approx({"Lung Cancer": 0.5, "Pneumonia": 0.5})


def test_intro_scenario_reproduces_the_text():
    run = run_scenario(load_scenario(SCENARIOS / "li_zhou_intro_ldiversity.yaml"))
    # the text's figures reproduced; the 8 disclosed values break the attack's baseline vulnerable_values == 0
    assert run.reproduced == "pass" and run.verdict == "fail"
    res = run.results["update_graph"]
    sug = res.worst["target"]["versions"]
    assert sug[0]["feasible"] == ["Pneumonia"] and sug[0]["risk"] == {"Pneumonia": 1.0}
    assert sorted(sug[1]["feasible"]) == ["Lung Cancer", "Pneumonia"]
    # Ben: flu, then pneumonia (section I.A.1); Ken and Lily in both releases
    seq = run.sequence
    assert res.summary["vulnerable_values"] == 8
    assert res.summary["vulnerable_records"] == 5  # all but Harry


def test_intro_m_distinct_scenario_has_no_disclosure():
    run = run_scenario(load_scenario(SCENARIOS / "li_zhou_intro_m_distinct.yaml"))
    assert run.verdict == "pass"
    res = run.results["update_graph"]
    assert res.exact
    assert res.summary["sug_vulnerable_values"] == 0 and res.summary["vulnerable_values"] == 0


def test_example_4_style_weights():
    """A three-layer graph by hand: the DP weights equal the products of eq. 1."""
    model = TransitionModel.from_candidates("xyz", {"x": ["x", "y"], "y": ["y", "z"], "z": ["z"]})
    layers = [{"x": 0.5, "y": 0.5}, {"y": 0.5, "z": 0.5}, {"z": 1.0}]
    # paths: x->y->z: .5*.5*.5*.5*1*1 = 1/16; y->y->z: .5*.5*.5*.5 = 1/16; y->z->z: .5*.5*.5*1*1 = 1/8
    (f1, r1), (f2, r2), (f3, r3) = _dp_one(layers, [1, 1], model)
    z = 1 / 16 + 1 / 16 + 1 / 8
    assert r1 == pytest.approx({"x": (1 / 16) / z, "y": (1 / 16 + 1 / 8) / z})
    assert r2 == pytest.approx({"y": (1 / 8) / z, "z": (1 / 8) / z})
    assert r3 == pytest.approx({"z": 1.0})


# ---------------------------------------------------------------------- the DP against the definitions
@settings(max_examples=150)
@given(data=st.data())
def test_dp_equals_path_enumeration(data):
    model = data.draw(transition_models(VALUES[:data.draw(st.integers(2, 5))]))
    layers, gaps = data.draw(sug_layers(model))
    dp = _dp_one(layers, gaps, model)
    oracle = enumerate_paths(layers, model, gaps)
    pruned = _prune(layers, gaps, model)
    for (feasible, risk), expect, nodes in zip(dp, oracle, pruned):
        assert feasible == set(expect) == nodes  # Definition 11's fixed point = nodes on a complete path
        for v in feasible:
            assert risk[v] == pytest.approx(expect[v], rel=1e-9, abs=1e-12)
        # Lemma 2: risk 1 iff one candidate node
        if feasible:
            assert (len(feasible) == 1) == any(r == pytest.approx(1.0) for r in risk.values())


@settings(max_examples=80)
@given(data=st.data())
def test_lemma_1_free_updates_leave_earlier_risks_unchanged(data):
    n = data.draw(st.integers(2, 5))
    model = TransitionModel.free(VALUES[:n])
    layers, gaps = data.draw(sug_layers(model, max_layers=4))
    assume(len(layers) >= 2)
    before = _dp_one(layers[:-1], gaps[:-1], model)
    after = _dp_one(layers, gaps, model)
    for (f0, r0), (f1, r1) in zip(before, after[:-1]):
        assert f0 == f1
        for v in f0:
            assert r1[v] == pytest.approx(r0[v])


# ---------------------------------------------------------------------- the attack on published sequences
@settings(max_examples=25)
@given(data=st.data())
def test_joint_attack_never_finds_less_than_the_sug(data):
    publisher = data.draw(st.sampled_from(["naive", "m_distinct", "m_invariance"]))
    seq, model, _ = published_sequence(data, publisher)
    view = seq.view(Adversary(sensitive="transitions"), model)
    sug = UpdateGraph(linkage="population").run(view)
    joint = UpdateGraph(linkage="population", joint=True, time_limit=60).run(view)
    # the per-record figures are proven even when CP-SAT stopped on its time limit; the joint ones are
    # compared over their proven intervals, never as if a stopped search had settled them
    assert sug.exact and joint.is_proven("sug_vulnerable_values")
    sug_vul = sug.summary["vulnerable_values"]
    assert joint.summary["sug_vulnerable_values"] == sug_vul
    low, high = joint.interval("vulnerable_values")
    # the truth is a world, so the exact joint count (inside [low, high]) reaches the SUG's
    assert high >= sug_vul
    if joint.stats["joint_components_without_world"] == 0:
        # a world was found everywhere: every version the SUG pins is proven pinned
        assert low >= sug_vul and joint.interval("joint_extra")[0] >= 0
    if joint.exact:
        assert joint.summary["vulnerable_values"] >= sug_vul and joint.summary["joint_extra"] >= 0


def test_joint_finds_more_than_the_sug():
    """A and B share {flu, HIV} in release 1; B then sits in {HIV, HIV}, so B is HIV (already per record).
    A moves to {cancer, HIV} with C, who was HIV among {HIV, HIV}.  Alone, A keeps two candidates in each
    release (flu -> cancer and HIV -> HIV are both feasible paths); jointly, B holds the group's HIV in
    release 1 and C holds the HIV in release 2, so A is flu, then cancer."""
    from multirelease.model.hierarchy import Hierarchy
    from multirelease.model.release import Release
    from multirelease.model.schema import Attribute, Schema

    model = TransitionModel.from_candidates(("flu", "HIV", "cancer"),
                                            {"flu": ["flu", "cancer"], "HIV": ["HIV"], "cancer": ["cancer"]})
    schema = Schema((Attribute("x", "quasi", Hierarchy.numeric("x", 0, 9)),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu", "HIV", "cancer"]))))

    def rel(groups, uids, values):
        n = len(values)
        return Release(schema=schema, attributes=("x", "disease"), lo=np.zeros((n, 1), np.int32),
                       hi=np.full((n, 1), 9, np.int32), sensitive=np.array(values, dtype=object),
                       group=np.array(groups), uid=np.array(uids, dtype=object))

    r1 = rel([1, 1, 2, 2], ["A", "B", "C", "D"], ["flu", "HIV", "HIV", "HIV"])
    r2 = rel([1, 1, 2, 2], ["A", "C", "B", "D"], ["cancer", "HIV", "HIV", "HIV"])
    seq = ReleaseSequence()
    seq.append(r1, None, None)
    seq.append(r2, None, None)
    view = seq.view(Adversary(sensitive="transitions"), model)
    res = UpdateGraph(linkage="uid", joint=True).run(view)
    assert res.exact
    assert res.summary["vulnerable_values"] >= res.summary["sug_vulnerable_values"]
    assert res.summary["joint_extra"] == 2
    pinned = res.worst["joint"]["pinned"]
    assert pinned["target"] == "A"
    assert [v["world_value"] for v in pinned["versions"]] == ["flu", "cancer"]


@settings(max_examples=25)
@given(data=st.data())
def test_population_linkage_locates_everyone_by_definition_6(data):
    """Population linkage against Definition 6 read row by row: a person's version at release i is in every
    class one of whose rows contains the person's QI point; the node weights (Definition 10) are the average,
    over those classes, of each value's share of the class's rows (``uniform``: 1 / distinct values).  The
    factored links (locations shared by people at one point) must give the same pairs, weights and witnesses."""
    from multirelease.model.release import contains

    publisher = data.draw(st.sampled_from(["naive", "m_distinct", "m_invariance"]))
    seq, model, _ = published_sequence(data, publisher)
    view = seq.view(Adversary(sensitive="transitions"), model)
    links = link_versions(view, model, "population")
    targets = {str(t): k for k, t in enumerate(links.targets)}
    for i, (rel, pop) in enumerate(zip(view.releases, view.population)):
        assert not rel.masks
        cols = [list(pop.schema.quasi).index(n) for n in rel.quasi]
        expect_pairs, expect_w = [], {}
        for kind in ("frequency", "uniform"):
            expect_w[kind] = np.zeros((len(links.targets), len(model)))
        for pid, point in zip(pop.ids, pop.qi_codes[:, cols]):
            rows = np.flatnonzero(contains(rel.lo, rel.hi, point[None, :]))
            classes = sorted(set(rel.classes[rows].tolist()))
            t = targets[str(pid)]
            expect_pairs += [(t, c) for c in classes]
            for c in classes:
                vals = list(rel.sensitive[rel.classes == c])
                for v in set(vals):
                    expect_w["frequency"][t, model.index(v)] += vals.count(v) / len(vals) / len(classes)
                    expect_w["uniform"][t, model.index(v)] += 1 / len(set(vals)) / len(classes)
        got_t, got_c = links.pairs_of(i)
        assert list(zip(got_t.tolist(), got_c.tolist())) == expect_pairs
        assert np.array_equal(links.present(i), np.isin(np.arange(len(links.targets)), got_t))
        for kind in ("frequency", "uniform"):
            assert_allclose(node_weights(links, i, kind), expect_w[kind], rtol=1e-12, atol=1e-15)
        # one target's links alone (the witness's SUG): the same classes and weights
        for t in np.unique(got_t)[:3]:
            sub = links.subset(np.array([t]))
            assert sub.classes_of(i, 0).tolist() == got_c[got_t == t].tolist() == links.classes_of(i, t).tolist()
            assert_allclose(node_weights(sub, i)[0], expect_w["frequency"][t], rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------- transitions and streams at load time
@pytest.mark.parametrize("spec, message", [
    ({"candidates": {"flu": ["cold"]}}, "'cold' is not a sensitive value"),
    ({"probabilities": {"flu": {"flu": 0.5, "HIV": 0.2}}}, "sum to 0.7"),
    ({"diameter": 0}, "The 'diameter' parameter of transitions must be an int in [1, inf). Got 0."),
    ({"candidates": {"flu": ["flu"]}, "free": True}, "exactly one of"),
    ({"candidates": {"flu": ["flu"]}, "unlisted": "error"}, "value 'HIV' has no entry"),
    ({"diameter": 2, "shape": "ring"}, "shape must be window or blocks"),
])
def test_bad_transitions(spec, message):
    from multirelease.model.hierarchy import Hierarchy
    from multirelease.model.schema import Attribute, Schema

    schema = Schema((Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu", "HIV"])),))
    with pytest.raises(InputError) as err:
        load_transitions(spec, schema, source="s.yaml")
    assert message in err.value.one_line()
    assert err.value.one_line().startswith("s.yaml: transitions")


def test_stream_is_deterministic_and_follows_the_model(tmp_path):
    sc1 = load_scenario(SCENARIOS / "li_zhou_toy_m_distinct.yaml")
    sc2 = load_scenario(SCENARIOS / "li_zhou_toy_m_distinct.yaml")
    assert list(sc1.data.ids) == list(sc2.data.ids)
    model = sc1.transitions
    table = sc1.data
    for idx, change in sc1.dynamics.items():
        assert change.delete == sc2.dynamics[idx].delete and change.update == sc2.dynamics[idx].update
        for rid, vals in change.update.items():
            if "disease" in vals:
                old = table.frame.at[rid, "disease"]
                assert vals["disease"] in model.cus(old)
            if "age" in vals:
                assert int(vals["age"]) == int(table.frame.at[rid, "age"]) + 1
        table = table.apply(change)


def test_bad_stream(tmp_path):
    doc = (SCENARIOS / "li_zhou_toy_m_distinct.yaml").read_text().replace("sensitive: 3,", "sensitiv: 3,")
    p = tmp_path / "s.yaml"
    p.write_text(doc)
    with pytest.raises(InputError, match="unknown key 'sensitiv'"):
        load_scenario(p)
