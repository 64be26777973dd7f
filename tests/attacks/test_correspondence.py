"""Correspondence attacks (Fung, Wang, Fu, Pei, EDBT 2008): golden numbers of Example 1.1, closed forms
against the exact engines, the exact engines against brute force over all generators, witnesses, and the
theorems - with the counterexamples where they do not hold beyond their assumptions.

One module over 500 lines: every property here is checked against the one brute force and witness checker
at its top, and the aggregated population targets against the per-point ones."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attacks import ATTACKS
from attacks.correspondence.attack import Correspondence, is_cut
from attacks.correspondence.closed import (B_class, C_pair, F_pair, b_crack, c_crack, compose_bc, compose_bf,
                                           f_crack, micro_f, sequence_crack)
from multirelease.errors import InputError
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.release import Release
from multirelease.formats.release_csv import release_from_frame
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.model.schema import Attribute, Schema
from multirelease.model.sequence import Adversary, SequenceView
from strategies import cut_releases, local_recodings, mondrian_regions, raw_tables, schemas

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "fung_example_1_1.yaml"


def fast(n: int) -> settings:
    """``n`` examples in the default (``dev``) profile, scaled with the active profile (``ci`` 30 / ``dev`` 60 /
    ``thorough`` 300 examples), no deadline: the suite stays under a minute by default."""
    scale = settings.default.max_examples / 60
    return settings(settings.default, max_examples=max(5, int(n * scale)), deadline=None,
                    suppress_health_check=list(HealthCheck))


# ---------------------------------------------------------------------- helpers
def view_of(releases, population=()) -> SequenceView:
    return SequenceView(tuple(releases), Adversary(correspondence=True, quasi_identifiers="none"),
                        tuple(population))


def attack(releases, **params):
    return Correspondence(**params).run(view_of(releases))


def rows_of(result):
    """``(qid, t) -> (F, C, B)`` anonymity of every target row."""
    out = {}
    for r in result.targets:
        key = (tuple(sorted(r["qid"].items())), r["timestamp"], r.get("target"))
        out[key] = tuple(r[f]["anonymity"] if f in r else None for f in "FCB")
    return out


@st.composite
def sequences(draw, kind, n_releases=2, max_new=3, max_leaves=5, max_quasi=2, subsets=False):
    """Releases ``R_i`` of ``D_1 u .. u D_i`` (continuous publishing), each generalized by ``kind``."""
    schema = draw(schemas(max_quasi=max_quasi, max_leaves=max_leaves, max_sensitive=2, subsets=subsets))
    sizes = [draw(st.integers(1, max_new)) for _ in range(n_releases)]
    table = draw(raw_tables(schema, min_size=sum(sizes), max_size=sum(sizes)))
    rels = []
    for i in range(n_releases):
        rels.append(draw(kind(table.subset(table.ids[:sum(sizes[:i + 1])])))[0])
    return rels


def _release(schema: Schema, rows: list[dict]) -> Release:
    return release_from_frame(schema, pd.DataFrame(rows, dtype=object))


# ---------------------------------------------------------------------- brute force over all generators
def _leafsets(release: Release) -> list[list[frozenset]]:
    out = []
    for i in range(len(release)):
        cells = []
        for j, name in enumerate(release.quasi):
            leaves = set(range(int(release.lo[i, j]), int(release.hi[i, j]) + 1))
            if name in release.masks:
                m = int(release.masks[name][i])
                leaves = {c for c in leaves if (m >> c) & 1}
            cells.append(frozenset(leaves))
        out.append(cells)
    return out


def brute_force(releases, values=None) -> dict:
    """Definitions 3.1, 3.3, 3.5 (and their chain reading for n releases) by enumerating every generator:
    every injective buddy map ``R_j -> R_{j+1}`` with equal sensitive values, kept when every chain of buddies
    has a common instantiation; targets are all points of the QI space with every timestamp they can have.
    Returns ``{(point, t): {family: min anonymity}}`` and FA, CA, BA.  ``values``: per release, the value of
    every record buddies must agree on, instead of its sensitive value (with persistent linking columns, the
    sensitive value and the linking tuple: tests/attacks/test_correspondence_linking.py)."""
    n = len(releases)
    cells = [_leafsets(r) for r in releases]
    sens = [list(r.sensitive) for r in releases] if values is None else [list(v) for v in values]
    classes = [r.classes for r in releases]
    q = len(releases[0].quasi)
    domains = [range(a.domain_size) for a in releases[0].qi_attributes]
    maps_per_step = []
    for j in range(n - 1):
        a, b = len(releases[j]), len(releases[j + 1])
        maps = []
        for perm in itertools.permutations(range(b), a):
            if all(sens[j][i] == sens[j + 1][k] for i, k in enumerate(perm)):
                maps.append(perm)
        maps_per_step.append(maps)
    generators = []  # per generator: per release, per record: (timestamp, common cells of its chain)
    for combo in itertools.product(*maps_per_step):
        # chains: start at every record not hit by the previous map
        info = [[None] * len(r) for r in releases]
        ok = True
        for j in range(n):
            hit = set(combo[j - 1]) if j else set()
            for i in range(len(releases[j])):
                if i in hit:
                    continue
                chain = [(j, i)]
                while chain[-1][0] < n - 1:
                    jj, ii = chain[-1]
                    chain.append((jj + 1, combo[jj][ii]))
                common = [frozenset.intersection(*[cells[jj][ii][x] for jj, ii in chain]) for x in range(q)]
                if not all(common):
                    ok = False
                    break
                for jj, ii in chain:
                    info[jj][ii] = (j + 1, common)
            if not ok:
                break
        if ok:
            generators.append(info)
    assert generators, "the true data is a generator"
    out = {}
    best = {"F": None, "C": None, "B": None}
    for p in itertools.product(*domains):
        for t in range(1, n + 1):
            if any(not any(all(p[x] in cells[l][i][x] for x in range(q)) for i in range(len(releases[l])))
                   for l in range(t - 1, n)):
                continue
            fams = {}
            for j in range(t, n + 1):
                rel = releases[j - 1]
                for c in range(rel.n_classes):
                    rows = np.flatnonzero(classes[j - 1] == c)
                    if not any(all(p[x] in cells[j - 1][i][x] for x in range(q)) for i in rows):
                        continue
                    cand = 0
                    for v in sorted({sens[j - 1][i] for i in rows}):
                        grp = [i for i in rows if sens[j - 1][i] == v]
                        cand += max(sum(1 for i in grp if gen[j - 1][i][0] == t and
                                        all(p[x] in gen[j - 1][i][1][x] for x in range(q)))
                                    for gen in generators)
                    for fam in (("C",) if j > t else tuple(f for f, ok in (("F", t < n), ("B", t >= 2)) if ok)):
                        fams[fam] = min(fams.get(fam, cand), cand)
            out[(p, t)] = fams
            for fam, v in fams.items():
                best[fam] = v if best[fam] is None else min(best[fam], v)
    return {"targets": out, "FA": best["F"], "CA": best["C"], "BA": best["B"]}


def check_against_brute_force(releases):
    truth = brute_force(releases)
    check_brute_force_truth(releases, truth, lambda **kw: attack(releases, **kw))


def brute_force_targets(releases, truth) -> list[dict]:
    """The brute force's targets as the attack's ``targets`` parameter (QI leaves and timestamp)."""
    attrs = releases[0].qi_attributes
    return [{"qid": {a.name: a.hierarchy.leaves[c] for a, c in zip(attrs, p)}, "timestamp": t}
            for (p, t) in truth["targets"]]


def check_brute_force_truth(releases, truth, run):
    """``run(targets=...)`` (the attack on ``releases``, given the brute force's targets when it has any)
    gives the brute force's FA, CA, BA and every target's anonymity per family; returns the result."""
    quasi = releases[0].quasi
    given = brute_force_targets(releases, truth)
    res = run(targets=given) if given else run()
    assert res.exact
    for metric in ("FA", "CA", "BA"):
        assert res.summary.get(metric) == truth[metric], (metric, res.summary, truth)
    got = {r["target"]: r for r in res.targets if "target" in r}
    for i, ((p, t), fams) in enumerate(truth["targets"].items(), 1):
        for fam in "FCB":
            have = got[i][fam]["anonymity"] if fam in got[i] else None
            assert have == fams.get(fam), (p, t, fam, have, fams, quasi)
    return res


# ---------------------------------------------------------------------- witness checker
def check_witness(releases, res):
    """Every worst case comes with a valid generator whose count of representing records equals the
    reported candidates (class size minus crack)."""
    n = len(releases)
    for fam, w in res.worst.items():
        g = w["generator"]
        assert "partial" not in g  # small inputs: the whole generator is listed
        nodes = {int(k): {x["id"]: x for x in v} for k, v in g["nodes"].items()}
        used = {j: np.zeros(len(v), np.int64) for j, v in nodes.items()}
        target = w["point"]  # the raw point of the target's cell the chains are instantiated at
        represent = 0
        for b in g["buddies"]:
            chain = {1: b["r1"], 2: b["r2"]} if "r1" in b else {int(k): v for k, v in b["chain"].items()}
            start = min(chain) if "timestamp" not in b else b["timestamp"]
            assert sorted(chain) == list(range(start, n + 1))
            vals = {nodes[j][i]["sensitive"] for j, i in chain.items()}
            assert len(vals) == 1, "buddies agree on the sensitive value"
            for j, i in chain.items():
                used[j][i] += b["count"]
                node = nodes[j][i]
                rel = releases[j - 1]
                for a in rel.qi_attributes:
                    lo, hi, m = a.parse_cell(node["qi"][a.name])
                    c = a.hierarchy.code(b["at"][a.name])
                    assert lo <= c <= hi and (not a.is_subsets or (m >> c) & 1), "instantiation inside region"
            j = w["release"]
            if j in chain and nodes[j][chain[j]]["class"] == w["class"] and start == w["timestamp"] \
                    and b["at"] == target:
                represent += b["count"]
        for s in g["start"]:
            assert s["release"] == n
            used[n][s["node"]] += s["count"]
            if w["release"] == n and w["timestamp"] == n and nodes[n][s["node"]]["class"] == w["class"] \
                    and s["at"] == target:
                represent += s["count"]
        for j, arr in used.items():
            assert sorted(nodes[j]) == list(range(len(nodes[j])))
            assert (arr == np.array([nodes[j][i]["count"] for i in range(len(arr))])).all(), \
                "every record used exactly once"
        assert represent == w["anonymity"], (fam, represent, w["anonymity"])


# ---------------------------------------------------------------------- golden: Example 1.1
def test_example_1_1_scenario_passes():
    """The paper's crack sizes are reproduced (a research scenario); its attack's k = 5 is broken (FA = 4)."""
    run = run_scenario(load_scenario(SCENARIO))
    assert run.reproduced == "pass", [(e.text, v) for e, v, h, *_ in run.judged if not h]
    assert run.verdict == "fail" and run.exit_code == 0
    res = run.results["correspondence"]
    assert res.exact
    assert (res.summary["FA"], res.summary["CA"], res.summary["BA"]) == (4, 4, 4)
    check_witness(run.sequence.releases, res)


def test_example_1_1_closed_forms():
    # Example 4.1: g1 = 3 Flu vs g2 = 2, g'1 = 2 HIV vs g'2 = 3
    assert f_crack(3, 2) == 1 and f_crack(2, 3) == 0
    assert F_pair({"Flu": 3, "HIV": 2}, {"Flu": 2, "HIV": 3}) == 1
    # Example 4.2
    assert c_crack(3, 2) == 0 and c_crack(2, 3) == 1
    assert C_pair({"Flu": 3, "HIV": 2}, {"Flu": 2, "HIV": 3}) == 1
    # Example 4.3: |G1| - (|G2| - |g2|) = 3 - (5 - 3) = 1 and 2 - (5 - 2) < 0
    assert b_crack(3, 3, 5) == 1 and b_crack(2, 2, 5) == 0
    assert B_class({"Flu": 3, "HIV": 2}, {"Flu": 3, "HIV": 2}, {"Flu": 5, "HIV": 5}) == 1
    # Theorem 4.4 (1): |G2| < |g2| -> 0
    assert b_crack(4, 0, 3) == 0


def test_example_1_1_closed_form_method_agrees():
    sc = load_scenario(SCENARIO)
    rels = [s.given for s in sc.steps]
    assert all(is_cut(r) for r in rels)
    exact = attack(rels, witness=False)
    closed = attack(rels, method="closed_form")
    assert closed.exact and rows_of(closed) == rows_of(exact)


def test_section_7_1_closed_forms():
    # micro F over two background releases: |g1| - min(|g1|, |g2|, |g3|)
    assert micro_f(5, [4, 2]) == 3
    # Case 1: x_B then F on the reduced group; Case 2: x_B then C on g_l
    assert compose_bf(1, 4, [2]) == 1 + (3 - 2)
    assert compose_bc(2, 4, 3) == 3 - min(2, 3)
    assert sequence_crack(1, 1, [np.array([3]), np.array([2]), np.array([1])]).tolist() == [2]
    assert sequence_crack(2, 3, [np.array([0]), np.array([4]), np.array([3])], [np.array([2])]).tolist() == [1]


def test_registry_and_applies():
    assert ATTACKS["correspondence"] is Correspondence
    sc = load_scenario(SCENARIO)
    rels = tuple(s.given for s in sc.steps)
    assert Correspondence().applies(view_of(rels))
    no_knowledge = SequenceView(rels, Adversary(correspondence=False))
    assert not Correspondence().applies(no_knowledge)
    with pytest.raises(InputError):
        Correspondence().run(no_knowledge)
    assert not Correspondence().applies(view_of(rels[:1]))
    assert "F_3_HIV" in Correspondence.metrics and "FA" in Correspondence.metrics
    assert "G_1" not in Correspondence.metrics
    assert Correspondence(k=5).default_requirements() == ["correspondence.FA >= 5", "correspondence.CA >= 5",
                                                          "correspondence.BA >= 5"]


def test_bad_targets_parameter():
    with pytest.raises(InputError, match="targets"):
        Correspondence(targets=[{"qid": "France"}])
    sc = load_scenario(SCENARIO)
    rels = [s.given for s in sc.steps]
    with pytest.raises(InputError, match="Job"):
        attack(rels, targets=[{"qid": {"Birthplace": "France"}, "timestamp": 1}])
    with pytest.raises(InputError, match="not a leaf"):
        attack(rels, targets=[{"qid": {"Birthplace": "Mars", "Job": "Lawyer"}, "timestamp": 1}])


def test_population_targets():
    """With snapshots, targets are the individuals' QI tuples with their first-release timestamps."""
    sc = load_scenario(SCENARIO)
    rels = [s.given for s in sc.steps]
    schema = rels[0].schema
    from multirelease.model.table import Table

    d1 = [("a1", "UK", "Lawyer"), ("a2", "UK", "Lawyer"), ("a3", "UK", "Lawyer"), ("a4", "France", "Lawyer"),
          ("a5", "France", "Lawyer")]
    d2 = [("b6", "France", "Lawyer"), ("b7", "France", "Doctor"), ("b8", "France", "Doctor"),
          ("b9", "UK", "Doctor"), ("b10", "UK", "Lawyer")]

    def table(rows):
        frame = pd.DataFrame([{"Birthplace": b, "Job": j, "Disease": "Flu"} for _, b, j in rows], dtype=object)
        t = Table.from_frame(schema, frame)
        t.frame.index = pd.Index([r[0] for r in rows], name="id")
        return t

    pop = (table(d1), table(d1 + d2))
    res = Correspondence(witness=False).run(view_of(rels, pop))
    got = {(r["qid"]["Birthplace"], r["qid"]["Job"], r["timestamp"]): r for r in res.targets}
    assert set(got) == {("UK", "Lawyer", 1), ("France", "Lawyer", 1), ("France", "Lawyer", 2),
                        ("France", "Doctor", 2), ("UK", "Doctor", 2), ("UK", "Lawyer", 2)}
    assert got[("France", "Lawyer", 1)]["F"]["crack"] == 1  # Alice of Scenario I
    assert got[("UK", "Lawyer", 2)]["B"]["crack"] == 1  # Alice of Scenario III
    assert res.summary["FA"] == 4 and res.summary["BA"] == 4


def _growing(data, max_n: int, max_new: int):
    """2..``max_n`` releases (cuts, local recodings or Mondrian regions) of a growing table, each adding
    1..``max_new`` records, and their snapshots."""
    n = data.draw(st.integers(2, max_n))
    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    schema = data.draw(schemas(max_quasi=3, max_leaves=4, max_sensitive=2, subsets=False))
    sizes = [data.draw(st.integers(1, max_new)) for _ in range(n)]
    table = data.draw(raw_tables(schema, min_size=sum(sizes), max_size=sum(sizes)))
    snaps = [table.subset(table.ids[:sum(sizes[:i + 1])]) for i in range(n)]
    return [data.draw(kind(s))[0] for s in snaps], snaps


class _PerPoint(Correspondence):
    """The reference: one target row per distinct (QI point, timestamp) of the population."""

    _aggregate = False


@fast(30)
@given(st.data())
def test_aggregated_targets_equal_per_point_targets(data):
    """Population targets aggregated by signature and timestamp (one row per distinct region tuple, weighted
    by its points) give the figures of one row per point: every summary metric (``targets``, ``cracked``,
    ``violations`` weighted), the worst cases with their generators, and every point's row equals the row of
    its aggregate."""
    rels, snaps = _growing(data, 3, 8)
    k = data.draw(st.integers(1, 4))
    agg = Correspondence(k=k).run(view_of(rels, snaps))
    ref = _PerPoint(k=k).run(view_of(rels, snaps))
    assert agg.exact == ref.exact
    assert agg.summary == ref.summary
    assert agg.worst == ref.worst
    per_point = {(tuple(sorted(r["qid"].items())), r["timestamp"]): r for r in ref.targets}
    assert sum(r["points"] for r in agg.targets) == len(ref.targets) == ref.summary["targets"]
    assert sum(r["individuals"] for r in agg.targets) == sum(r["individuals"] for r in ref.targets)
    rows = {(tuple(sorted(r["qid"].items())), r["timestamp"]): r for r in agg.targets}
    for key, row in rows.items():
        mine = dict(per_point[key])
        assert {f: row.get(f) for f in "FCB"} == {f: mine.get(f) for f in "FCB"}, key
    cells = {tuple(str(r.get(f)) for f in "FCB") for r in agg.targets}
    assert all(tuple(str(r.get(f)) for f in "FCB") in cells for r in ref.targets)


def _requests_by_loop(targets, nodes, n):
    """The reference of ``requests_of``, read off section 4 of Fung et al. target by target: for every ``j >= t``
    each class of ``R_j`` holding a region of the target's signature, requests numbered as first asked."""
    from solver.correspondence.crack import CrackRequest

    index, where = {}, []
    for tg in targets:
        mine = []
        for j in range(tg.t, n + 1):
            nd = nodes[j - 1]
            classes = {c for r, c in zip(nd.region.tolist(), nd.cls.tolist()) if r in tg.signature[j - 1]}
            for c in sorted(classes):
                req = CrackRequest(t=tg.t, j=j, cls=c, signature=tg.signature)
                mine.append((j, index.setdefault(req, len(index))))
        where.append(mine)
    return list(index), where


@fast(30)
@given(st.data())
def test_requests_of_arrays_equal_the_loop_over_targets(data):
    """The crack questions computed over arrays (population targets as a table, given targets after them, as
    the attack asks them) are those of the loop over targets: the same requests in the same order, and per
    target the same ``(release, request)`` list."""
    from attacks.correspondence.targets import base_targets, given_targets, requests_of
    from solver.correspondence.regions import aggregate, sensitive_codes

    rels, snaps = _growing(data, 4, 6)
    n = len(rels)
    codes, _ = sensitive_codes(rels)
    nodes = [aggregate(r, c) for r, c in zip(rels, codes)]
    view = view_of(rels, snaps if data.draw(st.booleans()) else ())
    qi = rels[0].qi_attributes
    given_spec = [({a.name: a.hierarchy.leaves[data.draw(st.integers(0, len(a.hierarchy.leaves) - 1))]
                    for a in qi}, data.draw(st.integers(1, n))) for _ in range(data.draw(st.integers(0, 3)))]
    targets = base_targets(view, nodes, [], aggregate=data.draw(st.booleans())) + given_targets(view, nodes,
                                                                                                 given_spec)
    table_, entries = requests_of(targets, nodes, n)
    want, where = _requests_by_loop(list(targets), nodes, n)
    assert list(table_) == want
    assert [entries.of(i) for i in range(len(targets))] == where


def test_report_rows_are_the_worst_targets():
    """Beyond ``rows`` target rows, a report keeps the worst of each family (and the summary is unchanged)."""
    sc = load_scenario(SCENARIO)
    rels = [s.given for s in sc.steps]
    full = attack(rels, witness=False)
    few = attack(rels, witness=False, rows=3)
    assert few.summary == full.summary and len(full.targets) > 3
    assert few.targets == full.targets  # the result keeps every row (--targets-file), the report the worst
    shown = few.to_json()["targets"]
    assert full.to_json()["targets"] == list(full.targets)
    for fam in "FCB":
        best = min(r[fam]["anonymity"] for r in full.targets if fam in r)
        assert any(r.get(fam, {}).get("anonymity") == best for r in shown)
    assert 0 < len(shown) <= 3 and all(r in full.targets for r in shown)



def test_target_rows_are_built_when_read_alike_every_time():
    """A result's rows are built when read (``TargetRows``, issue 28): row ``i`` is the same dict every time,
    negative indices and slices are a tuple's, a pickled result has the same rows, and a sequence of rows
    equals the tuple of them (and not one that differs in a single cell)."""
    import pickle

    from attacks.correspondence.assemble import TargetRows

    sc = load_scenario(SCENARIO)
    rels = [s.given for s in sc.steps]
    res = attack(rels, witness=False)
    rows = res.targets
    assert isinstance(rows, TargetRows) and len(rows) >= 4
    frozen = tuple(rows)
    assert rows == frozen and list(rows) == [rows[i] for i in range(len(rows))]
    assert rows[-1] == frozen[-1] and rows[1:3] == list(frozen[1:3]) and rows[::-1] == list(frozen[::-1])
    with pytest.raises(IndexError):
        rows[len(rows)]
    assert pickle.loads(pickle.dumps(res)).targets == frozen
    changed = list(frozen)
    changed[-1] = {**changed[-1], "timestamp": changed[-1]["timestamp"] + 1}
    assert rows != tuple(changed) and rows != frozen[:-1]
    assert res.to_json()["targets"] == list(frozen)

    class Counted(TargetRows):  # a report of the worst rows builds those rows only
        built = 0

        def __getitem__(self, i):
            Counted.built += 1
            return super().__getitem__(i)

    few = attack(rels, witness=False, rows=3)
    few.targets.__class__ = Counted
    shown = few.to_json()["targets"]
    assert 0 < len(shown) <= 3 < len(rows) and Counted.built == len(shown)

@fast(25)
@given(st.data())
def test_target_labels_one_by_one_equal_all_at_once(data):
    """``TargetRows`` labels the rows read one by one, then every row at once (``_LABELS_ONE_BY_ONE``): with
    population targets (leaf points) or without (the releases' generalized cells), whatever the threshold,
    each row's ``qid`` is the one :func:`qid_labels` gives all rows at once."""
    import attacks.correspondence.assemble as assemble

    rels, snaps = _growing(data, 3, 6)
    res = Correspondence(witness=False).run(view_of(rels, snaps if data.draw(st.booleans()) else ()))
    rows = res.targets
    everyone = assemble.qid_labels(rels[0], rows._targets)
    order = data.draw(st.permutations(range(len(rows))))
    saved = assemble._LABELS_ONE_BY_ONE
    try:
        for threshold in (0, data.draw(st.integers(1, 3)), 10 ** 9):
            assemble._LABELS_ONE_BY_ONE = threshold
            fresh = assemble.TargetRows(rels[0], rows._targets, rows._arrays, rows._cells, rows._fig,
                                        list(rows._cells))
            assert [fresh[i]["qid"] for i in order] == [everyone[i] for i in order]
    finally:
        assemble._LABELS_ONE_BY_ONE = saved


# ---------------------------------------------------------------------- exact engine vs brute force
@fast(25)
@given(st.data())
def test_two_releases_exact_equals_brute_force(data):
    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    rels = data.draw(sequences(kind, 2, max_new=3, max_leaves=4))
    check_against_brute_force(rels)


@fast(10)
@given(st.data())
def test_three_releases_exact_equals_brute_force(data):
    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    schema = data.draw(schemas(max_quasi=2, max_leaves=3, max_sensitive=2, subsets=False))
    sizes = [data.draw(st.integers(1, 2)), 1, data.draw(st.integers(1, 2))]
    table = data.draw(raw_tables(schema, min_size=sum(sizes), max_size=sum(sizes)))
    rels = [data.draw(kind(table.subset(table.ids[:sum(sizes[:i + 1])])))[0] for i in range(3)]
    check_against_brute_force(rels)


@fast(25)
@given(st.data())
def test_batched_objectives_equal_the_per_request_ones(data):
    """The two-release engine gathers every request's objective at once (``_objectives``, issue 28, from the
    requests as arrays): the same parts, component by component, as the per-request ``_objective`` the
    witnesses use."""
    from unittest import mock

    from solver.correspondence.flows import TwoReleaseEngine

    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    rels = data.draw(sequences(kind, 2, max_new=5, max_leaves=5))
    real = TwoReleaseEngine._objectives
    seen = []

    def checked(self, requests):
        got = real(self, requests)
        want = [self._objective(requests.request(i)) for i in range(len(requests))]
        assert [(kind, list(parts)) for kind, parts in got] == [(kind, list(parts)) for kind, parts in want]
        for (_, g), (_, w) in zip(got, want):
            assert all(np.array_equal(g[c], w[c]) and g[c].dtype == w[c].dtype for c in w)
        seen.append(len(requests))
        return got

    with mock.patch.object(TwoReleaseEngine, "_objectives", checked):
        attack(rels, witness=False)
    assert seen and seen[0] > 0


@fast(25)
@given(st.data())
def test_shards_of_region_groups_answer_as_the_whole_graph(data):
    """The engine split into shards of region groups (issue 28: each shard a task, one group per shard here, a
    sensitive value's graph spread over several of them) answers every request as the engine over the whole
    buddy graph, and its witness realizes the request's optimum: on the objective's arcs (F, C) or into the
    class's R2 nodes (B) of the generator shown, the optimum the answer states."""
    from unittest import mock

    import solver.correspondence.flow_shards as flow_shards
    from attacks.correspondence.targets import base_targets, requests_of
    from solver.correspondence.flows import TwoReleaseEngine
    from solver.correspondence.regions import aggregate, sensitive_codes

    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    rels = data.draw(sequences(kind, 2, max_new=5, max_leaves=5))
    codes, _ = sensitive_codes(rels)
    nodes = [aggregate(r, c) for r, c in zip(rels, codes)]
    requests, _ = requests_of(base_targets(view_of(rels), nodes, []), nodes, 2)
    want = TwoReleaseEngine(nodes[0], nodes[1]).answer(requests)
    with mock.patch.object(flow_shards, "_SHARD_WORK", 1):
        eng = flow_shards.ShardedEngine(nodes[0], nodes[1])
        got = eng.answer(requests)
        g1, g2 = eng.region_groups()
        assert len(eng._plan()[0]) == len(set(g1[nodes[0].region].tolist()) | set(g2[nodes[1].region].tolist()))
    assert [(a.low, a.high) for a in got] == [(a.low, a.high) for a in want]
    n1, n2 = nodes
    witnesses = [eng.witness_flows([req])[0] for req in requests]
    eng._base_sorted = eng._sorted_base()[:3] + (None,)  # as when the merge keys would overflow: sorted again
    for req, merged in zip(requests, witnesses):
        again = eng.witness_flows([req])[0]
        assert all(np.array_equal(a, b) for a, b in zip(merged, again))
        u, v, count = merged
        assert np.array_equal(np.lexsort((v, u, n1.value[u])), np.arange(len(u)))  # in arc order
    for req, ans, (u, v, count) in zip(requests, got, witnesses):
        assert np.array_equal(np.bincount(u, weights=count, minlength=len(n1)), n1.count)  # a generator
        assert np.all(np.bincount(v, weights=count, minlength=len(n2)) <= n2.count)
        in2 = (n2.cls[v] == req.cls) & np.isin(n2.region[v], list(req.signature[1]))
        if req.t == 2:  # B: fewest records of the class's nodes with a buddy
            per = {}
            for s in set(n2.value[n2.cls == req.cls].tolist()):
                nodes_s = (n2.cls == req.cls) & np.isin(n2.region, list(req.signature[1])) & (n2.value == s)
                into = int(count[in2 & (n2.value[v] == s)].sum())
                if nodes_s.any():
                    per[s] = int(n2.count[nodes_s].sum()) - into
        else:  # F / C: most records on the arcs instantiated at the target
            on = np.isin(n1.region[u], list(req.signature[0])) & np.isin(n2.region[v], list(req.signature[1]))
            on &= (n1.cls[u] == req.cls) if req.j == 1 else (n2.cls[v] == req.cls)
            per = {}
            for s in set(n1.value[u[on]].tolist()):
                per[s] = int(count[on & (n1.value[u] == s)].sum())
        assert {s: x for s, x in per.items() if x} == {s: x for s, x in ans.high.items() if x}


# ---------------------------------------------------------------------- closed forms vs exact (cuts)
@fast(40)
@given(sequences(cut_releases, 2, max_new=6, max_leaves=8, max_quasi=3, subsets=True))
def test_closed_forms_equal_exact_on_cut_pairs(rels):
    """Theorems 4.2 - 4.4 are exact under cut generalization; so is FA = CA (Theorem 4.5)."""
    exact = attack(rels)
    closed = attack(rels, method="closed_form")
    assert exact.exact and closed.exact
    assert rows_of(exact) == rows_of(closed)
    for m in ("FA", "CA", "BA"):
        assert exact.summary.get(m) == closed.summary.get(m)
    if "FA" in exact.summary:
        assert exact.summary["FA"] == exact.summary["CA"]  # Theorem 4.5
    check_witness(rels, exact)


@fast(20)
@given(sequences(cut_releases, 3, max_new=3, max_leaves=5))
def test_closed_forms_bound_exact_on_cut_triples(rels):
    """Section 7.1's micro attacks and compositions are sound inferences: the exact crack is never smaller
    (anonymity never larger).  They are *not* complete: see the counterexample below."""
    exact = attack(rels)
    closed = attack(rels, method="closed_form")
    assert exact.exact and not closed.exact
    re_, rc = rows_of(exact), rows_of(closed)
    assert re_.keys() == rc.keys()
    for key in re_:
        for a, b in zip(re_[key], rc[key]):
            assert (a is None) == (b is None) and (a is None or a <= b), (key, re_[key], rc[key])
    check_witness(rels, exact)


def _flu_schema():
    return Schema((Attribute("age", "quasi", Hierarchy.from_nested("age", ["0", "1"])),
                   Attribute("zip", "quasi", Hierarchy.from_nested("zip", ["0", "1"])),
                   Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu", "HIV"]))))


def test_counterexample_section_7_1_compositions_are_not_complete():
    """Three cut releases where the exact engine cracks more than every micro attack and composition of
    section 7.1.  R1: 3 x [0, 0]; R2: 4 x [0, *]; R3: 3 x [0, 0] + 2 x [0, 1], all flu.  The three T1
    individuals sit at zip 0 and fill all three zip-0 records of R3, so an individual arriving at T2 is at
    zip 1: a target [0, 0] at T2 matches 4 records of R2 and none can be its record (crack 4, anonymity 0).
    Pairwise reasoning finds B-attack(R1, R2) = 3 - (4 - 4) = 3, then F-attack(g'2 = 1, g3 = 3) = 0: crack 3."""
    s = _flu_schema()
    r1 = _release(s, [{"age": "0", "zip": "0", "disease": "flu"}] * 3)
    r2 = _release(s, [{"age": "0", "zip": "*", "disease": "flu"}] * 4)
    r3 = _release(s, [{"age": "0", "zip": "0", "disease": "flu"}] * 3
                  + [{"age": "0", "zip": "1", "disease": "flu"}] * 2)
    target = [{"qid": {"age": "0", "zip": "0"}, "timestamp": 2}]
    exact = attack([r1, r2, r3], targets=target)
    closed = attack([r1, r2, r3], targets=target, method="closed_form")
    assert exact.exact and exact.summary["B_1"] == 4 and exact.summary["F_1"] == 4
    assert closed.summary["B_1"] == 3
    assert closed.summary["F_1"] == 3
    assert exact.summary["FA"] == 0 and closed.summary["FA"] == 1  # over all targets
    check_against_brute_force([r1, r2, r3])


def test_counterexample_theorem_4_5_fails_under_local_recoding():
    """FA = CA (Theorem 4.5) needs every target to match one class per release.  Local recoding: R1 =
    [v0, flu]; R2 = [v0, flu], [*, HIV].  A target at T1 is at v0 and matches both classes of R2; the class
    [*] holds only HIV, which no R1 record has, so the C-attack cracks it completely (anonymity 0) while
    the F-attack leaves R1's record (FA = 1)."""
    s = Schema((Attribute("age", "quasi", Hierarchy.from_nested("age", ["v0", "v1"])),
                Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu", "HIV"]))))
    r1 = _release(s, [{"age": "v0", "disease": "flu"}])
    r2 = _release(s, [{"age": "v0", "disease": "flu"}, {"age": "*", "disease": "HIV"}])
    res = attack([r1, r2])
    assert res.exact and res.summary["FA"] == 1 and res.summary["CA"] == 0
    check_against_brute_force([r1, r2])


@fast(25)
@given(sequences(mondrian_regions, 2, max_new=4, max_leaves=5))
def test_fa_equals_ca_with_disjoint_classes(rels):
    """Theorem 4.5 survives Mondrian regions (classes of a release disjoint): every target matches one class
    per release and both attacks maximize the flow on the same arcs (Lemma 4.4 per class pair)."""
    res = attack(rels, witness=False)
    assert res.summary.get("FA") == res.summary.get("CA")


# ---------------------------------------------------------------------- Theorem 5.1
def _specialize(release: Release, truth, table, rng_pick: int) -> Release | None:
    """Specialize one non-leaf cut value of one attribute of ``release`` to its children (global)."""
    for j, a in enumerate(release.qi_attributes):
        h = a.hierarchy
        ranges = sorted({(int(x), int(y)) for x, y in zip(release.lo[:, j], release.hi[:, j]) if x != y})
        if not ranges:
            continue
        lo_, hi_ = ranges[rng_pick % len(ranges)]
        node = h._range_index.get((lo_, hi_), 0 if (lo_, hi_) == (0, h.n_leaves - 1) else None)
        if node is None or not h.children[node]:
            continue
        col = list(table.schema.quasi).index(a.name)
        ids = list(table.ids)
        codes = np.array([table.qi_codes[ids.index(p), col] for p in truth.person])
        lo, hi = release.lo.copy(), release.hi.copy()
        masks = {k: v.copy() for k, v in release.masks.items()}
        for child in h.children[node]:
            sel = (release.lo[:, j] == lo_) & (release.hi[:, j] == hi_) & (codes >= h.node_lo[child]) & \
                (codes <= h.node_hi[child])
            lo[sel, j], hi[sel, j] = h.node_lo[child], h.node_hi[child]
            if a.name in masks:
                masks[a.name][sel] = np.uint64(((1 << int(h.node_hi[child] - h.node_lo[child] + 1)) - 1)
                                               << int(h.node_lo[child]))
        from dataclasses import replace

        return replace(release, lo=lo, hi=hi, masks=masks)
    return None


@fast(30)
@given(st.data())
def test_theorem_5_1_pointwise_specializing_r2_never_increases_anonymity(data):
    """Theorem 5.1 target by target: for every target that exists before and after a specialization of a
    cut R2, the F-, C- and B-anonymity after cracking never increases.  (The global FA / CA / BA can
    increase when targets disappear - see the counterexample below.)"""
    schema = data.draw(schemas(max_quasi=2, max_leaves=5, max_sensitive=2, subsets=False))
    n1 = data.draw(st.integers(1, 4))
    n2 = data.draw(st.integers(1, 4))
    table = data.draw(raw_tables(schema, min_size=n1 + n2, max_size=n1 + n2))
    r1 = data.draw(cut_releases(table.subset(table.ids[:n1])))[0]
    r2, truth = data.draw(cut_releases(table))
    spec = _specialize(r2, truth, table, data.draw(st.integers(0, 10)))
    if spec is None:
        return
    attrs = r1.qi_attributes
    targets = [{"qid": {a.name: a.hierarchy.leaves[c] for a, c in zip(attrs, p)}, "timestamp": t}
               for p in itertools.product(*[range(a.domain_size) for a in attrs]) for t in (1, 2)]
    before = {r["target"]: r for r in attack([r1, r2], witness=False, targets=targets).targets if "target" in r}
    after = {r["target"]: r for r in attack([r1, spec], witness=False, targets=targets).targets if "target" in r}
    for i, row in after.items():
        for fam in "FCB":
            if fam in row and fam in before[i]:
                assert row[fam]["anonymity"] <= before[i][fam]["anonymity"], (i, fam, before[i], row)


def test_counterexample_theorem_5_1_global_fa_can_increase():
    """Theorem 5.1 (FA, CA, BA non-increasing under specialization of R2) fails as stated when a
    specialization leaves no non-empty child of a class comparable to some qid1: the proof replaces
    F(qid1, qid2) by the F(qid1, qid2^i) of comparable children, but there may be none.  R1 = [0, *] flu;
    R2 = 2 x [*, 0] flu, [*, 1] HIV.  The target [0, 1] at T1 matches ([0, *], [*, 1]), whose groups share no
    value: F = 1, anonymity 0 (FA = CA = 0).  Specializing age in R2 (* -> 0, 1) gives [0, 0] x 2, [1, 1]:
    no class of R2 is comparable to [0, *] at zip 1 any more, the target is gone and FA = CA = 1."""
    s = _flu_schema()
    r1 = _release(s, [{"age": "0", "zip": "*", "disease": "flu"}])
    r2 = _release(s, [{"age": "*", "zip": "0", "disease": "flu"}] * 2 + [{"age": "*", "zip": "1", "disease": "HIV"}])
    r2s = _release(s, [{"age": "0", "zip": "0", "disease": "flu"}] * 2 + [{"age": "1", "zip": "1", "disease": "HIV"}])
    before, after = attack([r1, r2]), attack([r1, r2s])
    assert (before.summary["FA"], before.summary["CA"]) == (0, 0)
    assert (after.summary["FA"], after.summary["CA"]) == (1, 1)
    assert attack([r1, r2], method="closed_form").summary["FA"] == 0  # the closed forms say the same
    check_against_brute_force([r1, r2])


def test_no_generator_is_bad_input():
    s = _flu_schema()
    r1 = _release(s, [{"age": "0", "zip": "0", "disease": "HIV"}])
    r2 = _release(s, [{"age": "0", "zip": "0", "disease": "flu"}])
    with pytest.raises(InputError, match="no generator"):
        attack([r1, r2])


@fast(10)
@given(st.data())
def test_four_releases_exact_equals_brute_force_with_witness(data):
    """The chain engine over atom classes (atoms of identical incidence merged, objectives collapsed to
    arrivals where the class holds every record at the atom) against brute force, and its witnesses."""
    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    schema = data.draw(schemas(max_quasi=2, max_leaves=3, max_sensitive=2, subsets=False))
    n = data.draw(st.integers(3, 4))
    sizes = [data.draw(st.integers(1, 2))] + [1] * (n - 1)
    table = data.draw(raw_tables(schema, min_size=sum(sizes), max_size=sum(sizes)))
    rels = [data.draw(kind(table.subset(table.ids[:sum(sizes[:i + 1])])))[0] for i in range(n)]
    check_against_brute_force(rels)
    check_witness(rels, attack(rels))


@fast(15)
@given(st.data())
def test_budget_keeps_proven_bounds(data):
    """With the CP-SAT budget spent at once, every row and every summary metric keep intervals that hold the
    exact values (low: a generator found, high: the trivial bound), and the result is exact exactly when the
    engine stopped no crack question (see :func:`check_budget_bounds`)."""
    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    check_budget_bounds(data.draw(sequences(kind, 3, max_new=4, max_leaves=4)))


#: local-recoding chains (continuous publishing, Fung et al. section 3; ``*`` the whole domain) on which
#: earlier statements of the property above failed: at 745d8b8 a row's anonymity lower bound 1 above its exact
#: anonymity 0 (an engine bug, fixed in 3814db3); at 745d8b8 and at fcc9680 (interval model) a result with
#: every row closed and every summary metric proven, labelled not exact because a crack question that no row
#: needed stayed over budget - the attack's contract, not a bug (the property used to demand exact == nothing
#: open)
BUDGET_FALSIFIERS = {
    "lower_bound_above_exact": ("hierarchy", [
        [("0", "flu")], [("0", "flu"), ("*", "HIV"), ("0", "flu")],
        [("*", "flu"), ("0", "HIV"), ("*", "flu"), ("1", "flu")]]),
    "unneeded_question_over_budget": ("hierarchy", [
        [("0", "flu")], [("0", "flu"), ("0", "flu")], [("0", "flu"), ("*", "flu"), ("*", "flu"), ("1", "flu")]]),
    "unneeded_question_over_budget_intervals": ("interval", [
        [("0", "flu"), ("*", "flu"), ("*", "flu"), ("*", "flu")],
        [("0", "flu"), ("1", "flu"), ("0", "flu"), ("0", "flu"), ("0", "HIV")],
        [("0", "flu"), ("1", "flu"), ("0", "flu"), ("0", "flu"), ("0", "HIV"), ("0", "flu")]]),
}


@pytest.mark.parametrize("name", list(BUDGET_FALSIFIERS))
def test_budget_keeps_proven_bounds_on_former_falsifiers(name):
    model, chain = BUDGET_FALSIFIERS[name]
    schema = Schema((Attribute("age", "quasi", Hierarchy.from_nested("age", ["0", "1"]), model),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu", "HIV"]))))
    check_budget_bounds([_release(schema, [{"age": a, "disease": d} for a, d in rows]) for rows in chain])


def check_budget_bounds(rels):
    """``rels`` attacked exactly and with the budget spent at once (``budget=1e-9``).

    Sound: every summary metric's interval (a point when proven) and every row's anonymity interval holds the
    exact value; FA, CA, BA report the high end (the proven minimum's upper bound); an open interval makes
    the result inexact.  And the flag says what the engine did (the attack's contract, ``time_limit`` and
    ``budget`` in :class:`attacks.correspondence.attack.Correspondence`: a crack question left unsolved makes the
    result inexact, and the metrics proven all the same are listed in ``proven``, attacks/base.py): exact
    exactly when no question was stopped."""
    exact = attack(rels, witness=False)
    bounded = attack(rels, witness=False, budget=1e-9)
    assert exact.exact
    for m, value in exact.summary.items():
        lo, hi = bounded.interval(m)
        assert lo <= value <= hi, (m, value, lo, hi)
        if m in ("FA", "CA", "BA"):
            assert hi == bounded.summary[m]
    truth = {(tuple(sorted(r["qid"].items())), r["timestamp"]): r for r in exact.targets}
    open_rows = 0
    for r in bounded.targets:
        want = truth[(tuple(sorted(r["qid"].items())), r["timestamp"])]
        for fam in "FCB":
            if fam in r:
                lo, hi = r[fam].get("anonymity_bounds", (r[fam]["anonymity"],) * 2)
                assert lo <= want[fam]["anonymity"] <= hi
                # the crack too: with the minimum settled, the class attaining it may still be unknown
                c_lo, c_hi = r[fam].get("crack_bounds", (r[fam]["crack"],) * 2)
                assert c_lo <= want[fam]["crack"] <= c_hi
                open_rows += (lo, c_lo) != (hi, c_hi)
    if open_rows or bounded.bounds:
        assert not bounded.exact
    stopped = bounded.stats["over_budget"] + bounded.stats["not_optimal"]
    assert bounded.exact == (stopped == 0)


def test_certify_release_files_follows_the_specs_dynamics(tmp_path, capsys):
    """``certify`` of the files a scenario's ``run --out`` wrote, with the scenario itself as the spec, sees
    the population of each release (data + dynamics): the same FA, CA, BA as the run, B-attack targets
    included (they exist only among the records inserted for release 2)."""
    import json

    import yaml

    from multirelease.cli import main

    tiny = ROOT / "tests" / "data" / "tiny.csv"
    rows = pd.read_csv(tiny, dtype=str)
    doc = yaml.safe_load((ROOT / "tests" / "data" / "tiny.yaml").read_text())
    doc["data"] = {"file": str(tiny), "limit": 10}
    doc["dynamics"] = {2: {"insert": {"file": str(tiny), "offset": 10}}}
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "mondrian", "k": 2}]
    doc["adversary"] = {"correspondence": True, "quasi_identifiers": "all"}
    doc["attacks"] = [{"correspondence": {"witness": False}}]
    doc["expect"] = []
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc))
    code_run = main(["run", str(spec), "--out", str(tmp_path / "out"), "--json", str(tmp_path / "run.json"), "-q"])
    ran = json.loads((tmp_path / "run.json").read_text())
    run = ran["attacks"]["correspondence"]["summary"]
    assert "BA" in run and len(rows) > 10
    code = main(["certify", str(spec), str(tmp_path / "out" / "release_1.csv"), str(tmp_path / "out" / "release_2.csv"),
                 "--require", "correspondence.BA >= 0", "--json", str(tmp_path / "cert.json")])
    capsys.readouterr()
    cert = json.loads((tmp_path / "cert.json").read_text())
    # the same baselines (the releases claim k = 2 crack sizes: the spec names their publisher) and verdict
    assert (code, cert["verdict"]) == (code_run, ran["verdict"])
    assert [x for x in cert["expectations"] if x.get("source") == "baseline"] == \
        [x for x in ran["expectations"] if x.get("source") == "baseline"]
    assert cert["attacks"]["correspondence"]["summary"] == run


_NUMERAL_LOOKALIKES = ["1", "2", "10", "-3", "01", "+1", " 1", "-0", "0", "9223372036854775807",
                       "9223372036854775808", "1e3"]


@given(st.lists(st.lists(st.sampled_from(["1", "2", "10", "a", "é", ""]) | st.sampled_from(_NUMERAL_LOOKALIKES),
                         max_size=6), min_size=1, max_size=4), st.booleans())
def test_population_ids_numbered_in_order_of_first_appearance(snapshots, arrow):
    """``_id_codes``: the identifiers of the population's snapshots, one after the other, numbered in order of
    first appearance - through pyarrow (``str`` indexes; as integers when every identifier is an integer
    written the one way pyarrow writes it, so ``01``, ``+1``, `` 1`` and ``-0`` stay apart from ``1`` and
    ``0``) and through pandas (object indexes) alike, against the brute force on the lists."""
    from attacks.correspondence.targets import _id_codes

    dtype = pd.StringDtype("pyarrow") if arrow else object
    indexes = [pd.Index(ids, dtype=dtype) for ids in snapshots]
    first: dict = {}
    expected = [first.setdefault(x, len(first)) for ids in snapshots for x in ids]
    assert _id_codes(indexes).tolist() == expected


@given(st.lists(st.lists(st.sampled_from(["1", "2", "3", "7", "10", "a", "01"]) | st.integers(1, 60).map(str),
                         max_size=6), min_size=1, max_size=4), st.booleans(), st.booleans())
def test_first_seen_identifiers_against_the_brute_force(snapshots, arrow, numbered):
    """``first_seen``: per record of the snapshots, one after the other, whether its identifier is new - from
    the integers the tool numbered (``id_runs``), the integers the text reads as (a table of the span marking
    those seen: an identifier twice in one snapshot, sparse ones or text fall back to ``_id_codes``), or the
    text - against the brute force on the lists."""
    from attacks.correspondence.targets import first_seen
    from multirelease.model.table import Table

    schema = Schema((Attribute("city", "quasi", Hierarchy.from_nested("city", ["x"])),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu"]))))
    dtype = pd.StringDtype("pyarrow") if arrow else object
    tables = []
    for ids in snapshots:
        frame = pd.DataFrame({"city": ["x"] * len(ids), "disease": ["flu"] * len(ids)}, dtype=object)
        if numbered and ids and all(i.isdigit() and i[0] != "0" for i in ids) and len(set(ids)) == len(ids) \
                and [int(i) for i in ids] == list(range(int(ids[0]), int(ids[0]) + len(ids))):
            table = Table.from_frame(schema, frame, first_id=int(ids[0]))  # numbered: runs known
            assert table.id_runs == ((int(ids[0]), len(ids)),)
        else:
            table = Table(schema, frame.set_axis(pd.Index(ids, dtype=dtype)))
        tables.append(table)
    seen: set = set()
    expected = []
    for ids in snapshots:
        for x in ids:
            expected.append(x not in seen)
            seen.add(x)
    assert first_seen(tables).tolist() == expected


_POINT_SCHEMA = Schema((Attribute("city", "quasi", Hierarchy.from_nested("city", ["x", "y", "z"])),
                        Attribute("job", "quasi", Hierarchy.from_nested("job", {"any": ["j0", "j1", "j2", "j3"]})),
                        Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["flu"]))))


@given(st.lists(st.lists(st.tuples(st.integers(1, 12).map(str), st.sampled_from("xyz"),
                                   st.sampled_from(["j0", "j1", "j2", "j3"])), max_size=8,
                         unique_by=lambda r: r[0]), min_size=1, max_size=4),
       st.sampled_from([("city", "job"), ("job",), ("city",)]), st.booleans())
@fast(60)
def test_population_points_against_the_brute_force(snapshots, quasi, rows_sorted):
    """``population_points``: every individual once, at the first snapshot holding it, with the QI values it
    has there - the distinct (leaf codes of the QIs the release publishes, timestamp) keys sorted, their counts, the
    distinct points and each key's point - by packed integers, and by the sort of rows (``_PACK_LIMIT`` 0),
    against counting the snapshots' rows one by one."""
    import attacks.correspondence.targets as targets
    from multirelease.model.table import Table

    tables = []
    for rows in snapshots:
        frame = pd.DataFrame({"city": [r[1] for r in rows], "job": [r[2] for r in rows],
                              "disease": ["flu"] * len(rows)}, dtype=object)
        tables.append(Table(_POINT_SCHEMA, frame.set_axis(pd.Index([r[0] for r in rows], name="id"))))
    release = release_from_frame(_POINT_SCHEMA, pd.DataFrame({**{a: ["*"] for a in quasi}, "disease": ["flu"]}))
    assert release.quasi == quasi
    view = SequenceView((release,), Adversary(correspondence=True), tuple(tables))
    code = {a: {v: i for i, v in enumerate(_POINT_SCHEMA[a].hierarchy.leaves)} for a in quasi}
    seen: set = set()
    counted: dict = {}
    for t, rows in enumerate(snapshots, 1):
        for ident, city, job in rows:
            if ident not in seen:
                seen.add(ident)
                key = tuple(code[a][{"city": city, "job": job}[a]] for a in quasi) + (t,)
                counted[key] = counted.get(key, 0) + 1
    keys = sorted(counted)
    points = sorted({k[:-1] for k in keys})
    expected = (keys, [counted[k] for k in keys], points, [points.index(k[:-1]) for k in keys])
    limit = 0 if rows_sorted else targets._PACK_LIMIT
    old, targets._PACK_LIMIT = targets._PACK_LIMIT, limit
    try:
        got = targets.population_points(view)
    finally:
        targets._PACK_LIMIT = old
    assert [a.dtype for a in got] == [np.dtype(np.int64)] * 4
    assert got[0].shape == (len(keys), len(quasi) + 1) and got[2].shape == (len(points), len(quasi))
    assert ([tuple(k) for k in got[0].tolist()], got[1].tolist(), [tuple(p) for p in got[2].tolist()],
            got[3].tolist()) == expected
