"""The possible-worlds engine (solver.worlds.problem / matching / counting), the ``possible_worlds`` attack and the
``global_guarantee`` publisher.

* golden numbers of Wong et al. (001): Figures 2-4, p(o2, chlamydia, 2) = 3/4 and 7/16, q = 1/2;
* Lemma 2 of 001 equals exact counting on random serial sequences with homogeneous groups;
* exact counting and linkability equal brute-force enumeration on tiny instances (persistent and free);
* hypothesis finds a global-guarantee violation by the naive per-release l-diverse Mondrian;
* the global-guarantee publisher never violates (checked by the exact attacker).
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, assume, event, find, given, settings
from hypothesis import strategies as st

from attacks.possible_worlds import PossibleWorlds
from multirelease.errors import InputError
from multirelease.model.hierarchy import Hierarchy
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.model.schema import Attribute, Schema
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.table import Table
from publishers.global_guarantee import GlobalGuarantee
from publishers.mondrian import NaiveRepublication, release_from_partition
from solver.worlds.counting import breach_closed_form, brute_force, multinomial
from solver.worlds.analysis import analyze
from solver.worlds.matching import permanent
from solver.worlds.problem import build_problem
from strategies import generalized_releases, schemas_and_tables

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def _view(tables, releases, mode):
    seq = ReleaseSequence()
    for t, r in zip(tables, releases):
        seq.append(r, None, t)
    return seq.view(Adversary(sensitive=mode))


def _total_worlds(a) -> int:
    return math.prod(b.worlds for b in a.blocks)


# ---------------------------------------------------------------------- golden: Wong et al.
def test_wong_figure_2_global_fails_where_localized_holds():
    run = run_scenario(load_scenario(SCENARIOS / "wong_figure_2.yaml"))
    # the paper's figures reproduced; the global guarantee its attack's l = 2 states is broken (3/4 > 1/2)
    assert run.reproduced == "pass" and run.verdict == "fail"
    view = run.sequence.view(run.scenario.adversary)
    a = PossibleWorlds(values=["chlamydia"]).analysis(view)
    p = a.problem
    o2 = list(p.individuals).index("o2")
    s = p.value_code("chlamydia")
    assert a.breach_fraction(o2, s) == Fraction(3, 4)  # 001, section III and Example 2
    assert a.localized_fraction(0, o2, s) == Fraction(1, 2)  # 001, section III.A
    assert a.localized_fraction(1, o2, s) == Fraction(1, 2)
    # Figure 3: four worlds for G1 and G2 (two per group and release)
    blocks = [b for b in a.blocks if o2 in set(np.concatenate(b.block.members).tolist())]
    assert [b.worlds for b in blocks] == [2, 2]
    res = run.results["possible_worlds"]
    assert res.exact and res.summary["max_breach"] == 0.75 and res.summary["max_localized"] == 0.5
    assert res.worst["max_breach"]["fraction"] == "3/4"
    assert "world" in res.worst["max_breach"]


def test_wong_figure_4_global_holds():
    run = run_scenario(load_scenario(SCENARIOS / "wong_figure_4.yaml"))
    assert run.reproduced == "pass" and run.verdict == "pass"
    a = PossibleWorlds().analysis(run.sequence.view(run.scenario.adversary))
    p = a.problem
    o2 = list(p.individuals).index("o2")
    s = p.value_code("chlamydia")
    assert a.breach_fraction(o2, s) == Fraction(7, 16)  # Example 2
    # 4! x 4! bijections (the paper's count) realize 12 x 12 distinct series of tables
    assert _total_worlds(a) == 12 * 12
    assert permanent(np.ones((4, 4), dtype=int)) ** 2 == 24 * 24
    assert breach_closed_form([4, 4], [1, 1]) == Fraction(7, 16)
    assert breach_closed_form([2, 2], [1, 1]) == Fraction(3, 4)


def _wong_figure_2_files(tmp_path, extra: str = "") -> tuple[Path, list[str]]:
    """Wong et al.'s Figure 2 releases written as files, and a certify spec of their schema and T1 (the same men
    and women in both releases) with the free adversary (``extra``: more spec lines)."""
    run = run_scenario(load_scenario(SCENARIOS / "wong_figure_2.yaml"))
    files = []
    for i, r in enumerate(run.sequence.releases, 1):
        f = tmp_path / f"release_{i}.csv"
        r.to_frame().to_csv(f, index=False)
        files.append(str(f))
    spec = tmp_path / "spec.yaml"
    head = (SCENARIOS / "wong_figure_2.yaml").read_text().split("dynamics:")[0]
    spec.write_text(head + "adversary: {quasi_identifiers: all, sensitive: free}\n" + extra)
    return spec, files


def test_certify_runs_possible_worlds_on_release_files(tmp_path):
    from multirelease.cli import main

    spec, files = _wong_figure_2_files(tmp_path)
    assert main(["certify", str(spec), *files, "--require", "possible_worlds.max_breach <= 1/2"]) == 1
    assert main(["certify", str(spec), *files, "--require", "possible_worlds.max_localized <= 1/2"]) == 0
    assert main(["certify", str(spec), *files, "--attack", "possible_worlds", "--require",
                 "possible_worlds.max_breach == 3/4"]) == 0


# ---------------------------------------------------------------------- Lemma 2 on homogeneous groups
@st.composite
def serial_homogeneous(draw):
    """Releases of homogeneous groups: each individual's QI ``g`` (its group) and value change freely."""
    n_groups = draw(st.integers(1, 4))
    values = ["flu", "HIV", "cancer"][: draw(st.integers(1, 3))]
    schema = Schema((Attribute("id", "identifier"),
                     Attribute("g", "quasi", Hierarchy.from_nested("g", [f"g{i}" for i in range(n_groups)])),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", values))))
    people = [f"p{i}" for i in range(draw(st.integers(1, 8)))]
    tables, releases = [], []
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    for _ in range(draw(st.integers(1, 4))):
        present = [p for p in people if draw(st.booleans()) or len(people) == 1]
        assume(present)
        frame = pd.DataFrame({"g": [f"g{draw(st.integers(0, n_groups - 1))}" for _ in present],
                              "disease": [draw(st.sampled_from(values)) for _ in present]},
                             index=pd.Index(present, name="id"), dtype=object)
        t = Table(schema, frame)
        parts = [np.flatnonzero(frame["g"].to_numpy() == g) for g in sorted(set(frame["g"]))]
        rel, _ = release_from_partition(t, schema.published, parts, rng)
        tables.append(t)
        releases.append(rel)
    return tables, releases


@given(serial_homogeneous())
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_lemma2_equals_exact_counting(case):
    tables, releases = case
    a = analyze(build_problem(_view(tables, releases, "free")))
    assert a.all_exact
    p = a.problem
    for i, o in enumerate(p.individuals):
        for v, s in enumerate(p.values):
            sizes, counts = [], []
            for t in tables:
                if o in t.frame.index:
                    same = t.frame["g"] == t.frame.at[o, "g"]
                    sizes.append(int(same.sum()))
                    counts.append(int((t.frame["disease"][same] == s).sum()))
            assert a.breach_fraction(i, v) == breach_closed_form(sizes, counts)
            assert math.isclose(a.breach[i, v], float(breach_closed_form(sizes, counts)))


# ---------------------------------------------------------------------- exact counting = brute force
@st.composite
def tiny_sequences(draw, mode: str):
    schema, table = draw(schemas_and_tables(min_size=1, max_size=5 if mode == "persistent" else 4,
                                            identifier=True, max_sensitive=3))
    n_rel = draw(st.integers(1, 3 if mode == "persistent" else 2))
    tables, releases = [], []
    for _ in range(n_rel):
        t = table
        if mode == "free":  # transient values: redraw them
            frame = table.frame.copy()
            leaves = schema["disease"].hierarchy.leaves
            frame["disease"] = [draw(st.sampled_from(leaves)) for _ in range(len(frame))]
            t = Table(schema, frame)
        rel, _ = draw(generalized_releases(t))
        tables.append(t)
        releases.append(rel)
    return tables, releases


def _check_against_brute_force(tables, releases, mode):
    problem = build_problem(_view(tables, releases, mode))
    try:
        bf = brute_force(problem)
    except ValueError:
        assume(False)
    a = analyze(problem)
    assert a.all_exact
    assert np.array_equal(a.linkable, bf["linkable"])
    assert _total_worlds(a) == bf["worlds"]
    N, V = problem.n_individuals, problem.n_values
    for i in range(N):
        for v in range(V):
            assert a.breach_fraction(i, v) == Fraction(int(bf["linked"][i, v]), bf["worlds"])
            for j in range(len(releases)):
                if problem.individuals[i] in set(tables[j].ids):
                    assert a.localized_fraction(j, i, v) == Fraction(int(bf["local"][j, i, v]), bf["worlds"])


@given(tiny_sequences("persistent"))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], max_examples=40)
def test_exact_counting_equals_brute_force_persistent(case):
    _check_against_brute_force(*case, "persistent")


@given(tiny_sequences("free"))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], max_examples=40)
def test_exact_counting_equals_brute_force_free(case):
    _check_against_brute_force(*case, "free")


@st.composite
def one_release(draw):
    schema, table = draw(schemas_and_tables(min_size=1, max_size=7, identifier=True, max_sensitive=3))
    rel, _ = draw(generalized_releases(table))
    return [table], [rel]


@given(one_release())
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_linkability_by_matching_equals_brute_force(case):
    tables, releases = case
    problem = build_problem(_view(tables, releases, "persistent"))
    try:
        bf = brute_force(problem, max_assignments=3**7 + 1)
    except ValueError:
        assume(False)
    a = analyze(problem, count=False)
    assert np.array_equal(a.linkable, bf["linkable"])


def test_sampling_beyond_the_budget_is_labelled_an_estimate():
    """A block over the enumeration budget is estimated: exact False, proven bounds, a CI near the truth."""
    schema = Schema((Attribute("id", "identifier"),
                     Attribute("age", "quasi", Hierarchy.numeric("age", 0, 7)),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["a", "b", "c"]))))
    frame = pd.DataFrame({"age": [str(x) for x in range(8)], "disease": list("aabbccab")},
                         index=pd.Index([f"p{i}" for i in range(8)], name="id"), dtype=object)
    t = Table(schema, frame)
    # overlapping regions: each record covers an age window of three around its own
    from multirelease.model.release import Release

    lo = np.array([[max(0, i - 1)] for i in range(8)], dtype=np.int32)
    hi = np.array([[min(7, i + 1)] for i in range(8)], dtype=np.int32)
    rel = Release(schema=schema, attributes=("age", "disease"), lo=lo, hi=hi,
                  sensitive=frame["disease"].to_numpy(dtype=object))
    view = _view([t], [rel], "persistent")
    exact = analyze(build_problem(view))
    assert exact.all_exact
    est = analyze(build_problem(view), max_type_worlds=1, samples=4000)
    assert not est.all_exact
    assert np.array_equal(est.linkable, exact.linkable)
    assert (est.low <= exact.breach + 1e-12).all() and (exact.breach <= est.high + 1e-12).all()
    assert np.nanmax(np.abs(est.breach - exact.breach)) < 0.12
    res = PossibleWorlds(values=["b", "c"], max_type_worlds=1, samples=400).run(view)
    assert not res.exact and "max_breach" in res.bounds and "ci" in res.worst["max_breach"]


def test_persistent_releases_combine():
    """Example 1.1 of Shmueli & Tassa (004): two 2-diverse releases link Alice to measles with certainty."""
    schema = Schema((Attribute("name", "identifier"),
                     Attribute("age", "quasi", Hierarchy.from_nested("age", ["20", "30"])),
                     Attribute("gender", "quasi", Hierarchy.from_nested("gender", ["female", "male"])),
                     Attribute("disease", "sensitive",
                               Hierarchy.from_nested("disease", ["measles", "hepatitis", "flu", "angina"]))))
    frame = pd.DataFrame({"age": ["20", "20", "30", "30"], "gender": ["female", "male", "female", "male"],
                          "disease": ["measles", "hepatitis", "flu", "angina"]},
                         index=pd.Index(["Alice", "Bob", "Carol", "David"], name="name"), dtype=object)
    t = Table(schema, frame)
    rng = np.random.default_rng(0)
    r1, _ = release_from_partition(t, ("age", "disease"), [np.array([0, 1]), np.array([2, 3])], rng)
    r2, _ = release_from_partition(t, ("gender", "disease"), [np.array([0, 2]), np.array([1, 3])], rng)
    res = PossibleWorlds().run(_view([t, t], [r1, r2], "persistent"))
    assert res.summary["min_linkability"] == 1 and res.summary["max_linkage"] == 1.0
    single = PossibleWorlds().run(_view([t], [r1], "persistent"))
    assert single.summary["min_linkability"] == 2 and single.summary["max_linkage"] == 0.5


def test_multinomial():
    assert multinomial(4, [2, 1, 1]) == 12


# ---------------------------------------------------------------------- publishers
@st.composite
def serial_snapshots(draw, max_rows: int = 12, n_releases: int = 2, balanced: bool = False):
    """``n_releases`` snapshots of one population: values redrawn freely (transient), some people leave.
    ``balanced``: four sensitive values dealt round-robin in a random order (each about a quarter)."""
    schema, table = draw(schemas_and_tables(min_size=4, max_size=max_rows, identifier=True, subsets=False,
                                            min_sensitive=4 if balanced else 3, max_sensitive=4))
    leaves = schema["disease"].hierarchy.leaves

    def values(n):
        if balanced:
            order = draw(st.permutations(range(n)))
            return [leaves[i % len(leaves)] for i in order]
        return [draw(st.sampled_from(leaves)) for _ in range(n)]

    if balanced:
        frame = table.frame.copy()
        frame["disease"] = values(len(frame))
        table = Table(schema, frame)
    tables = [table]
    for _ in range(n_releases - 1):
        frame = tables[-1].frame.copy()
        frame["disease"] = values(len(frame))
        keep = [i < 4 or draw(st.booleans()) for i in range(len(frame))]  # at least four people stay
        tables.append(Table(schema, frame[np.array(keep)]))
    return tables


def _publish_all(publisher, tables):
    rng = np.random.default_rng(0)
    state, releases = None, []
    for t in tables:
        res = publisher.publish(t, state=state, rng=rng)
        state = res.state
        releases.append(res.release)
    return releases


def test_hypothesis_finds_a_global_guarantee_violation_by_naive_mondrian():
    def breaks(tables):
        try:
            releases = _publish_all(NaiveRepublication(l=2), tables)
        except InputError:
            return False
        return PossibleWorlds().run(_view(tables, releases, "free")).summary["max_breach"] > 0.5

    found = find(serial_snapshots(), breaks, settings=settings(max_examples=500, database=None, phases=[Phase.generate],
                                                             suppress_health_check=list(HealthCheck)))
    releases = _publish_all(NaiveRepublication(l=2), found)
    assert PossibleWorlds().run(_view(found, [releases[0]], "free")).summary["max_breach"] <= 1.0


@given(st.sampled_from([(2.0, 2), (1.5, 3), (1.25, 3)]).flatmap(
    lambda lr: st.tuples(st.just(lr[0]), serial_snapshots(max_rows=12, n_releases=lr[1], balanced=True))))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], max_examples=25)
def test_global_guarantee_never_violates(case):
    l, tables = case
    try:
        releases = _publish_all(GlobalGuarantee(l=l, horizon=len(tables)), tables)
    except InputError:
        assume(False)
    a = PossibleWorlds().analysis(_view(tables, releases, "free"))
    assert a.all_exact
    bound = 1 / Fraction(l)
    for i in range(a.problem.n_individuals):
        for v in range(a.problem.n_values):
            assert a.breach_fraction(i, v) <= bound


def test_global_guarantee_scenario_state_is_json():
    import json

    schema, table = Schema((Attribute("id", "identifier"),
                            Attribute("age", "quasi", Hierarchy.numeric("age", 0, 9)),
                            Attribute("disease", "sensitive", Hierarchy.from_nested("d", list("abcd"))))), None
    frame = pd.DataFrame({"age": [str(i % 10) for i in range(20)], "disease": list("abcd" * 5)},
                         index=pd.Index([f"p{i}" for i in range(20)], name="id"), dtype=object)
    res = GlobalGuarantee(l=2).publish(Table(schema, frame), rng=np.random.default_rng(0))
    state = json.loads(json.dumps(res.state))
    assert state["releases"] == 1 and all(Fraction(x) < 1 for e in state["survival"].values() for x in e.values())
    res2 = GlobalGuarantee(l=2).publish(Table(schema, frame), state=state, rng=np.random.default_rng(1))
    assert res2.state["releases"] == 2


# ---------------------------------------------------------------------- what the requirements read (issue 24)
@given(tiny_sequences("persistent"))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_linkability_requirements_skip_counting_and_keep_the_brute_force_figures(case):
    """A run whose requirements read only ``disclosed`` / ``min_linkability`` does not count worlds: the two
    figures equal the brute force's (every world enumerated), the counting metrics are absent and the notes say
    why; ``counting: always`` and a run that no requirement names count as before."""
    tables, releases = case
    view = _view(tables, releases, "persistent")
    try:
        bf = brute_force(build_problem(view))
    except ValueError:
        assume(False)
    links = bf["linkable"].sum(axis=1)
    lean = PossibleWorlds().reading({"disclosed", "min_linkability"}).run(view)
    assert lean.summary["min_linkability"] == int(links.min())
    assert lean.summary["disclosed"] == int((links == 1).sum())
    assert lean.is_proven("disclosed") and lean.is_proven("min_linkability")
    assert not {"max_breach", "max_linkage", "max_localized"} & set(lean.reported_metrics())
    assert any("world counting skipped" in n for n in lean.notes)
    for attack in (PossibleWorlds(), PossibleWorlds(counting="always").reading({"disclosed"}),
                   PossibleWorlds().reading({"disclosed", "max_breach"})):
        full = attack.run(view)
        assert full.summary["disclosed"] == lean.summary["disclosed"]
        best = max(Fraction(int(c), bf["worlds"]) for c in bf["linked"].ravel())
        assert full.is_proven("max_breach") and math.isclose(full.summary["max_breach"], float(best))


def test_a_gate_reading_disclosed_only_reports_no_counting_metric(tmp_path, capsys):
    """Through the pipeline (``run`` and ``certify`` alike): a requirement on ``disclosed`` leaves the counting
    metrics out of the JSON report with the note, and ``--require`` on ``max_breach`` brings them back."""
    from multirelease.cli import main

    spec, files = _wong_figure_2_files(tmp_path, "attacks: [possible_worlds]\n")
    docs = []
    for req in ("possible_worlds.disclosed == 0", "possible_worlds.max_breach <= 1"):
        main(["certify", str(spec), *files, "--require", req, "--json", str(tmp_path / "r.json"), "-q"])
        capsys.readouterr()
        docs.append(json.loads((tmp_path / "r.json").read_text())["attacks"]["possible_worlds"])
    lean, full = docs
    assert "max_breach" not in lean["summary"] and "max_breach" not in lean.get("bounds", {})
    assert any("world counting skipped" in n for n in lean["notes"])
    assert full["summary"]["max_breach"] > 0
    assert lean["summary"]["disclosed"] == full["summary"]["disclosed"]


@given(tiny_sequences("persistent"))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_min_scope_linkability_decides_what_min_and_disclosed_read(case):
    """``analyze(linkability="min")`` against the full decision and the brute force: the same least
    linkability and the same individuals linkable to one value; every pair a world realizes is in the brute
    force's linkable set, and the reported upper set contains it."""
    tables, releases = case
    problem = build_problem(_view(tables, releases, "persistent"))
    try:
        bf = brute_force(problem)
    except ValueError:
        assume(False)
    lean = analyze(problem, count=False, linkability="min")
    assert lean.linkability_exact and lean.linkability_scope == "min"
    links = bf["linkable"].sum(axis=1)
    up = lean.linkable.sum(axis=1)
    assert up.min() == links.min()
    assert np.array_equal(up == 1, links == 1)
    assert not (lean.linkable_low & ~bf["linkable"]).any() and not (bf["linkable"] & ~lean.linkable).any()
    event(f"coupled parts decided partly: {bool((lean.linkable != lean.linkable_low).any())}")


@st.composite
def medium_sequences(draw):
    """Persistent values, 20-40 individuals, two or three generalized releases of subsets of them: coupled
    components large enough that the least linkability is settled before every pair is decided."""
    schema, table = draw(schemas_and_tables(min_size=20, max_size=40, identifier=True, max_sensitive=6))
    tables, releases = [], []
    for _ in range(draw(st.integers(2, 3))):  # each release publishes most of the table (departures, arrivals)
        keep = draw(st.lists(st.booleans(), min_size=len(table.frame), max_size=len(table.frame)))
        rows = [i for i, k in enumerate(keep) if k] or [0]
        t = Table(schema, table.frame.iloc[rows])
        tables.append(t)
        releases.append(draw(generalized_releases(t))[0])
    return tables, releases


@given(medium_sequences())
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_min_scope_agrees_with_the_full_decision(case):
    """Past the brute force's reach, the full decision (itself checked against the brute force above) is the
    reference: the same least linkability, the same disclosed individuals, proven pairs inside its linkable
    set and the reported upper set around it."""
    problem = build_problem(_view(*case, "persistent"))
    try:
        full = analyze(problem, count=False)
    except InputError:
        assume(False)
    lean = analyze(problem, count=False, linkability="min")
    assert full.linkability_exact and lean.linkability_exact
    ref, up = full.linkable.sum(axis=1), lean.linkable.sum(axis=1)
    assert up.min() == ref.min() and np.array_equal(up == 1, ref == 1)
    assert not (lean.linkable_low & ~full.linkable).any() and not (full.linkable & ~lean.linkable).any()
    event(f"coupled parts decided partly: {bool((lean.linkable != lean.linkable_low).any())}")

