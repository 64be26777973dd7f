"""m-invariance and m-Distinct keep their guarantee on everything they publish, or refuse (issue 13, items 1,
2 and 5).

(a) A brute force written from the definitions, over the published files (the CSV the CLI writes, read back as
    text) and the truth behind them, on random tables of 6-12 rows published 3-5 times with insertions,
    deletions and internal updates, with and without ``uid: true``:

    * m-uniqueness (Xiao & Tao; Li & Zhou Definition 15 (1)): every group has >= m rows, distinct values;
    * counterfeit statistics: ``counterfeits_<i>.csv`` counts exactly the counterfeit rows of each group;
    * m-invariance, per individual: a record in two consecutive releases with the same value (its lifespan
      continues; an update is a deletion and an insertion for Xiao & Tao) has the same signature in both;
    * m-Distinct, per individual: a record in two consecutive releases has a legal update instance of its
      previous USS (Definition 14, checked value by value), and its feasible sub-SUG, enumerated path by path
      (itertools.product over the candidate sets, Definition 11), keeps every node (Lemma 3);
    * with uids, Barbosa et al.'s record-tracking adversary (section 4): for every uid and every two releases
      ``a != b`` it is in ``b``, the intersection ``{w : class_a(w) = class_a(u), class_b(w) = class_b(u)}`` (``u``
      in ``a``) or the difference ``{w in class_b(u) : w not in release a}`` (``u`` not in ``a``) has at least
      ``m`` uids and ``m`` distinct values in each release it is judged on; and the SUG of every uid keeps every
      node (persistent values for m-invariance, the public model for m-Distinct).

    Refusals (one-line :class:`InputError`) are counted per publisher and mode; a mode that refuses every case
    fails.

(b) Counterfeit rows cannot be told from real ones in the published folder of an m-Distinct scenario: over many
    seeds, the obvious guesses (last rows of a group, last rows of the file, largest uids, newest uids, rarest
    values) pick counterfeits no more often than a random pick would.
"""
from __future__ import annotations

import io
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from multirelease.model.dynamics import generate_stream
from multirelease.errors import InputError
from publishers import PUBLISHERS
from strategies import raw_tables, schemas, transition_models

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------- the published files, as text
def _published(release) -> pd.DataFrame:
    """The release as the CLI writes it (``release_<i>.csv``), read back as text."""
    text = release.to_frame().to_csv(index=False)
    return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)


def _counterfeit_file(release) -> dict[int, int]:
    """``counterfeits_<i>.csv`` as the CLI writes it, read back (none written: no counterfeit)."""
    cf = release.counterfeits or {}
    if not cf:
        return {}
    text = pd.DataFrame({"group": list(cf), "counterfeits": list(cf.values())}).to_csv(index=False)
    frame = pd.read_csv(io.StringIO(text), dtype=str)
    return {int(g): int(c) for g, c in zip(frame["group"], frame["counterfeits"])}


# ---------------------------------------------------------------------- the brute force
def _groups(frame: pd.DataFrame, sens: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for g, v in zip(frame["group"], frame[sens]):
        out.setdefault(g, []).append(v)
    return out


def _legal_instance(values, previous, cus) -> bool:
    """Definition 14, literally."""
    return (len(values) == len(previous)
            and all(any(s in cus[w] for w in previous) for s in values)
            and all(any(s in cus[w] for s in values) for w in previous))


def _nodes_kept(layers, cus) -> bool:
    """Every node of every layer lies on a complete path whose steps are all feasible updates (Definition 11's
    fixed point, by enumeration)."""
    on_path = [set() for _ in layers]
    for path in itertools.product(*[sorted(set(x)) for x in layers]):
        if all(b in cus[a] for a, b in zip(path, path[1:])):
            for i, v in enumerate(path):
                on_path[i].add(v)
    return all(on_path[i] == set(layer) for i, layer in enumerate(layers))


def _runs(present: list[bool]) -> list[list[int]]:
    out, cur = [], []
    for i, p in enumerate(present):
        if p:
            cur.append(i)
        elif cur:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def check_by_brute_force(frames, persons, counterfeit_files, m, sens, kind, cus):
    """Assert the guarantee of ``kind`` (``m_invariance`` or ``m_distinct``) on the published files; ``persons[i]``
    is the truth behind the rows of ``frames[i]`` (``None``: counterfeit)."""
    n = len(frames)
    groups = [_groups(f, sens) for f in frames]
    for i, (f, people, cf) in enumerate(zip(frames, persons, counterfeit_files)):
        for g, vals in groups[i].items():
            assert len(vals) >= m and len(set(vals)) == len(vals), f"release {i + 1}: group {g} is not {m}-unique"
        fakes: dict[int, int] = {}
        for g, p in zip(f["group"], people):
            if p is None:
                fakes[int(g)] = fakes.get(int(g), 0) + 1
        assert fakes == cf, f"release {i + 1}: counterfeit statistics {cf} but {fakes} counterfeit rows"
    where = [{p: (g, v) for p, g, v in zip(people, f["group"], f[sens]) if p is not None}
             for f, people in zip(frames, persons)]
    everyone = set().union(*[set(w) for w in where])
    persistent = {v: {v} for fr in frames for v in fr[sens]}
    for p in everyone:
        for run in _runs([p in where[i] for i in range(n)]):
            for a, b in zip(run, run[1:]):
                (ga, va), (gb, vb) = where[a][p], where[b][p]
                if kind == "m_invariance" and va == vb:
                    assert set(groups[a][ga]) == set(groups[b][gb]), f"{p}: signature changed in release {b + 1}"
                if kind == "m_distinct":
                    assert _legal_instance(groups[b][gb], groups[a][ga], cus), f"{p}: not a legal instance"
            if kind == "m_distinct":
                layers = [groups[i][where[i][p][0]] for i in run]
                assert _nodes_kept(layers, cus), f"{p}: the feasible sub-SUG loses a node"
    if "uid" not in frames[0].columns:
        assert all("uid" not in f.columns for f in frames)
        return
    # record tracking (Barbosa et al. section 4): candidate sets of every uid over every two releases
    cls = [dict(zip(f["uid"], f["group"])) for f in frames]
    val = [dict(zip(f["uid"], f[sens])) for f in frames]
    for b in range(n):
        for u in cls[b]:
            for a in range(n):
                if a == b:
                    continue
                if u in cls[a]:
                    cand = [w for w in cls[b] if cls[b][w] == cls[b][u] and cls[a].get(w) == cls[a][u]]
                    judged = [b, a]
                else:
                    cand = [w for w in cls[b] if cls[b][w] == cls[b][u] and w not in cls[a]]
                    judged = [b]
                for i in judged:
                    assert len(cand) >= m and len({val[i][w] for w in cand}) >= m, (
                        f"uid {u}: candidate set {sorted(cand)} of releases {a + 1}, {b + 1}")
    model = persistent if kind == "m_invariance" else cus
    for u in set().union(*[set(c) for c in cls]):
        for run in _runs([u in cls[i] for i in range(n)]):
            layers = [groups[i][cls[i][u]] for i in run]
            assert _nodes_kept(layers, {**persistent, **model}), f"uid {u}: the feasible sub-SUG loses a node"


# ---------------------------------------------------------------------- (a) random tables
def _scenario(data):
    schema = data.draw(schemas(min_sensitive=3, max_sensitive=5, identifier=True, subsets=False, max_quasi=2))
    n_rel = data.draw(st.integers(3, 5))
    initial = data.draw(st.integers(6, 12))
    params = {"initial": initial, "delete": data.draw(st.integers(0, 2)), "insert": data.draw(st.integers(0, 2)),
              "sensitive": data.draw(st.integers(0, 3)), "qi": {}}
    size = initial + (n_rel - 1) * params["insert"]
    table = data.draw(raw_tables(schema, min_size=size, max_size=size))
    model = data.draw(transition_models(schema[schema.sensitive[0]].hierarchy.leaves, stay=True))
    try:
        rng = np.random.default_rng(data.draw(st.integers(0, 99)))
        first, changes = generate_stream(table, n_rel, params, model, rng)
    except InputError:
        assume(False)
    return schema, model, first, changes, n_rel


@pytest.mark.parametrize("uid", [False, True], ids=["no_uid", "uid"])
@pytest.mark.parametrize("publisher", ["m_invariance", "m_distinct"])
def test_published_files_keep_the_guarantee_or_the_publisher_refuses(publisher, uid):
    tally = {"published": 0, "refused": 0}
    reasons: dict[str, int] = {}

    @settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(data=st.data(), m=st.integers(2, 3))
    def prop(data, m):
        schema, model, snap, changes, n_rel = _scenario(data)
        pub = PUBLISHERS[publisher](m=m, uid=uid)
        if hasattr(pub, "bind_transitions"):
            pub.bind_transitions(model)
        frames, persons, cfs = [], [], []
        state = None
        for i in range(1, n_rel + 1):
            if i in changes:
                snap = snap.apply(changes[i])
            try:
                res = pub.publish(snap, state=state, rng=np.random.default_rng(i))
            except InputError as err:
                line = err.one_line()
                assert "\n" not in line and line
                tally["refused"] += 1
                reasons[line.split(" fails for ")[0]] = reasons.get(line.split(" fails for ")[0], 0) + 1
                return
            state = res.state
            frames.append(_published(res.release))
            persons.append(list(res.truth.person))
            cfs.append(_counterfeit_file(res.release))
            assert ("uid" in frames[-1].columns) == uid
        cus = {v: set(model.cus(v)) for v in model.values}
        check_by_brute_force(frames, persons, cfs, m, schema.sensitive[0], publisher, cus)
        tally["published"] += 1

    prop()
    print(f"{publisher} uid={uid}: {tally['published']} published, {tally['refused']} refused; {reasons}")
    assert tally["published"] > 0, f"{publisher} (uid: {uid}) refused every case: {reasons}"


def test_brute_force_catches_a_uid_isolation():
    """The checker is not vacuous: two 2-unique releases whose groups regroup the same uids (the old default's
    pattern) isolate every uid by intersection."""
    f1 = pd.DataFrame({"group": ["1", "1", "2", "2"], "uid": ["a", "b", "c", "d"], "s": ["x", "y", "x", "y"]})
    f2 = pd.DataFrame({"group": ["1", "1", "2", "2"], "uid": ["a", "d", "c", "b"], "s": ["x", "y", "x", "y"]})
    people = [["A", "B", "C", "D"], ["A", "D", "C", "B"]]
    cus = {"x": {"x"}, "y": {"y"}}
    check_by_brute_force([f1, f1], [people[0], people[0]], [{}, {}], 2, "s", "m_invariance", cus)
    with pytest.raises(AssertionError, match="candidate set"):
        check_by_brute_force([f1, f2], people, [{}, {}], 2, "s", "m_invariance", cus)


def _clinic():
    from multirelease.model.hierarchy import Hierarchy
    from multirelease.model.schema import Attribute, Schema
    from multirelease.model.table import Table

    schema = Schema((Attribute("id", "identifier"), Attribute("age", "quasi", Hierarchy.numeric("age", 20, 29)),
                     Attribute("d", "sensitive", Hierarchy.from_nested("d", ["flu", "hiv", "ulcer", "cold"]))))
    rows = [("20", "flu"), ("21", "hiv"), ("22", "ulcer"), ("23", "cold"), ("26", "flu"), ("27", "hiv")]
    frame = pd.DataFrame([(f"p{i}", *r) for i, r in enumerate(rows)], columns=["id", "age", "d"], dtype=object)
    return Table.from_frame(schema, frame)


@pytest.mark.parametrize("publisher", ["m_invariance", "m_distinct"])
def test_a_release_that_fails_its_own_check_is_refused(publisher):
    """The self-check reads the previous release from the private state: when it says p0 sat with other values
    than the state's signatures / USS imply, the new release breaks signature invariance (m-invariance) or
    Definition 14 (m-Distinct) for p0's group, and the publisher refuses with one line naming the requirement and
    the record."""
    from multirelease.model.transitions import TransitionModel

    table = _clinic()
    pub = PUBLISHERS[publisher](m=2)
    if hasattr(pub, "bind_transitions"):
        pub.bind_transitions(TransitionModel.from_candidates(("flu", "hiv", "ulcer", "cold"), {}))
    first = pub.publish(table, rng=np.random.default_rng(0))
    second = pub.publish(table, state=first.state, rng=np.random.default_rng(1))  # untouched: published
    assert second.release.uid is None
    state = dict(first.state)
    rows = dict(state["rows"])
    g = rows["group"][rows["person"].index("p0")]
    members = [k for k, gg in enumerate(rows["group"]) if gg == g]
    actual = {rows["value"][k] for k in members}
    if publisher == "m_invariance":  # p0 (flu) sat with other values than its signature says
        claim = ["flu"] + [v for v in ("cold", "ulcer", "hiv") if v not in actual]
    else:  # p0's previous group held no value whose candidate update set (identity model) holds flu
        claim = ["hiv", "ulcer", "cold"]
    values = list(rows["value"])
    for k, v in zip(members, claim):
        values[k] = v
    rows["value"] = values
    state["rows"] = rows
    with pytest.raises(InputError) as err:
        pub.publish(table, state=state, rng=np.random.default_rng(1))
    line = err.value.one_line()
    assert "\n" not in line and f"{publisher} refuses the release" in line, line
    assert any(f"record '{rows['person'][k]}'" in line for k in members), line  # p0 or a member of its group


# ---------------------------------------------------------------------- (b) counterfeits look like real rows
def _published_folder(tmp: Path, seed: int) -> tuple[list[pd.DataFrame], list[dict], list[list]]:
    """The toy m-Distinct scenario (uid: true) run with another seed and more deletions (more counterfeits):
    the published folder (``release_<i>.csv``, ``counterfeits_<i>.csv`` as ``run --out`` writes them, read back
    as text) and the truth behind each file (person per row, ``None`` for a counterfeit)."""
    from multirelease.pipeline import load_scenario_document, run_scenario
    from multirelease.formats.release_csv import write_counterfeits_csv, write_release_csv

    path = ROOT / "scenarios" / "li_zhou_toy_m_distinct.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["seed"] = seed
    doc["attacks"], doc["expect"] = [], []
    doc["dynamics"]["stream"].update({"initial": 10, "delete": 3, "insert": 1})
    doc["releases"] = doc["releases"] + doc["releases"][:1]
    run = run_scenario(load_scenario_document(doc, base=path.parent, path=path), attack=False)
    frames, cfs, persons = [], [], []
    for i, (release, truth) in enumerate(zip(run.sequence.releases, run.sequence.truths), 1):
        write_release_csv(release, tmp / f"release_{i}.csv")
        frames.append(pd.read_csv(tmp / f"release_{i}.csv", dtype=str, keep_default_na=False))
        cf = {}
        if release.counterfeits:
            write_counterfeits_csv(release.counterfeits, tmp / f"counterfeits_{i}.csv")
            cf = {int(g): int(c) for g, c in pd.read_csv(tmp / f"counterfeits_{i}.csv").itertuples(index=False)}
        cfs.append(cf)
        persons.append(list(truth.person))
    return frames, cfs, persons


def _guesses(frames, cfs, persons, rng):
    """Each heuristic's pick of counterfeit rows, judged against the truth: ``{name: [(hits, rows, counterfeits)]}``,
    one item per group with ``0 < c < size`` counterfeits (the guess picks ``c`` rows of the group) or per file
    (the guess picks as many rows as the file has counterfeits); ties are broken at random."""
    first_seen: dict[str, int] = {}
    out: dict[str, list] = {k: [] for k in ("last in group", "first in group", "largest uid", "newest uid",
                                           "rarest value", "last in file")}
    for i, (f, cf, people) in enumerate(zip(frames, cfs, persons)):
        fake = [p is None for p in people]
        uids = list(f["uid"])
        for u in uids:
            first_seen.setdefault(u, i)
        sens = list(f[f.columns[-1]])
        freq = pd.Series(sens).value_counts()
        noise = rng.random(len(f))
        group = [int(g) for g in f["group"]]
        for g, c in cf.items():
            pos = [k for k in range(len(f)) if group[k] == g]
            if not 0 < c < len(pos):
                continue
            keys = {
                "last in group": lambda k: -k,
                "first in group": lambda k: k,
                "largest uid": lambda k: -int(uids[k], 16),
                "newest uid": lambda k: (-first_seen[uids[k]], noise[k]),
                "rarest value": lambda k: (freq[sens[k]], noise[k]),
            }
            for name, key in keys.items():
                chosen = sorted(pos, key=key)[:c]
                out[name].append((sum(fake[k] for k in chosen), len(pos), c))
        total = sum(cf.values())
        if 0 < total < len(f):
            out["last in file"].append((sum(fake[len(f) - total:]), len(f), total))
    # a file-level "newest uids" pick is judged against what the public per-group counts predict (new cohorts
    # need more counterfeits): tests/publishers/test_counterfeit_indistinguishable.py
    return out


def test_counterfeit_rows_look_like_real_rows(tmp_path):
    """Over 30 seeds of the toy m-Distinct scenario, no obvious guess finds counterfeit rows more often than a
    random pick of as many rows would (hypergeometric mean and variance summed over the picks; a guess fails
    when its hits exceed the chance level by 4 standard deviations)."""
    rng = np.random.default_rng(0)
    tally: dict[str, list[float]] = {}
    for seed in range(30):
        folder = tmp_path / str(seed)
        folder.mkdir()
        frames, cfs, persons = _published_folder(folder, seed)
        assert all("uid" in f.columns for f in frames)
        for name, picks in _guesses(frames, cfs, persons, rng).items():
            t = tally.setdefault(name, [0.0, 0.0, 0.0, 0])  # hits, expected hits, variance, picks
            for hits, size, c in picks:
                t[0] += hits
                t[1] += c * c / size
                t[2] += c * (c / size) * (1 - c / size) * (size - c) / max(size - 1, 1)
                t[3] += 1
    report = {k: f"{t[0]:.0f} hits, {t[1]:.1f} by chance (sd {math.sqrt(t[2]):.1f}) over {t[3]} picks"
              for k, t in tally.items()}
    print(report)
    assert tally["last in group"][3] >= 20, f"too few groups with counterfeits to judge: {report}"
    for name, (hits, expected, var, _) in tally.items():
        assert hits <= expected + 4 * math.sqrt(var) + 1e-9, f"'{name}' finds counterfeits: {report[name]}"
