"""The update-graph attack reads linking columns (issue 22; Li & Zhou section III with Shmueli & Tassa 004,
section 5.2).

A record version's value is its *linked value* (sensitive value and persistent linking tuple); a record keeps
its tuple across its versions while its sensitive part follows ``P_trans`` (Li & Zhou Definition 7).  The
SUG (Definition 10) is built on linked values, pruned (Definition 11) and weighed (eqs. 1-2); every disclosure
figure is read on the sensitive value.

* Example 5.1 of Shmueli & Tassa (Tables 15-16): both releases 2-diverse; O+ is the only blood type in both of
  Bob's classes, so his two versions are pinned to measles - under a model that keeps values and even under
  the free model (Lemma 1 leaves no edge pruned, the tuple does) - and nothing is pinned without the column.
* A brute force written from the definitions: for every record and prefix, every path of linked values through
  the classes of its versions with the linking tuple constant and each update feasible in ``P_trans^k``
  (Definition 11's fixed point: the nodes on a complete path), weighed by eq. 1; a version's candidate
  sensitive values are those of the paths, the risk of ``(version, s)`` the weight share of the paths through
  ``s``.  The joint attack against every possible world of each component (each group's multiset of linked
  values shared among its consistent members, the paths as above), on random 2-4 release streams with
  insertions, deletions, updates (some outside the model or changing a tuple) and one or two linking columns.
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attacks.update_graph.attack import UpdateGraph
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.linking import SEPARATOR
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.model.release import Release
from multirelease.model.schema import Attribute, Schema
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.transitions import TransitionModel
from strategies import transition_models

EXAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "shmueli_tassa_example_5_1.yaml"
DISEASES = ("measles", "hepatitis", "flu", "angina")


# ---------------------------------------------------------------------- Example 5.1
def _example_sequence(drop_bt: bool = False) -> ReleaseSequence:
    seq = run_scenario(load_scenario(EXAMPLE)).sequence
    if not drop_bt:
        return seq
    out = ReleaseSequence()
    for rel, truth, snap in zip(seq.releases, seq.truths, seq.snapshots):
        out.append(replace(rel, attributes=tuple(a for a in rel.attributes if a != "bt"), other=None), truth, snap)
    return out


@pytest.mark.parametrize("model", [TransitionModel.from_candidates(DISEASES, {}), TransitionModel.free(DISEASES)],
                         ids=["stay", "free"])
def test_example_5_1_blood_type_pins_bob(model):
    view = _example_sequence().view(Adversary(sensitive="transitions"), model)
    assert view.linking.columns == ("bt",)
    res = UpdateGraph(linkage="population", target="Bob").run(view)
    s = res.summary
    assert s["vulnerable_values"] == 2 and s["vulnerable_records"] == 1 and s["inconsistent"] == 0
    assert s["max_risk"] == pytest.approx(1.0)
    assert s["target_candidates_1"] == s["target_candidates_2"] == 1
    w = res.worst["vulnerable_values"]
    assert w["target"] == "Bob" and w["linked_by"] == ["bt"] and res.worst["linked_by"] == ["bt"]
    v1, v2 = w["versions"]
    assert v1["candidates"] == {"measles (bt=O+)": 0.5, "hepatitis (bt=A+)": 0.5}
    assert v1["feasible"] == v2["feasible"] == ["measles (bt=O+)"]
    assert v1["sensitive_risk"] == {"measles": 1.0}
    assert any("linking columns read as persistent" in n and "bt" in n for n in res.notes)
    # the joint attack then pins Alice (release 1) and Janet (release 2) by elimination
    joint = UpdateGraph(linkage="population", joint=True).run(view)
    assert joint.exact and joint.summary["vulnerable_values"] == 4 and joint.summary["joint_extra"] == 2
    assert joint.worst["joint"]["pinned"]["linked_by"] == ["bt"]


def test_example_5_1_without_blood_type_nothing_is_pinned():
    model = TransitionModel.from_candidates(DISEASES, {})
    view = _example_sequence(drop_bt=True).view(Adversary(sensitive="transitions"), model)
    assert not view.linking
    res = UpdateGraph(linkage="population").run(view)
    assert res.summary["vulnerable_values"] == 0 and res.summary["max_risk"] == pytest.approx(0.5)
    assert "linked_by" not in res.worst and not res.notes
    # a changing blood type links nothing either
    changing = _example_sequence().view(Adversary(sensitive="transitions", changing=("bt",)), model)
    res2 = UpdateGraph(linkage="population").run(changing)
    assert res2.summary == res.summary


def test_the_ledger_gate_attacks_a_linking_sequence_whole():
    """``extend`` cannot tell from one release whether a column links the sequence: it hands over to ``run``."""
    model = TransitionModel.from_candidates(DISEASES, {})
    seq = _example_sequence()
    one = ReleaseSequence()
    one.append(seq.releases[0], None, seq.snapshots[0])
    assert UpdateGraph(linkage="population").extend(None, one.view(Adversary(sensitive="transitions"), model),
                                                   1) is NotImplemented


# ---------------------------------------------------------------------- the brute force
def _schema(values, n_cols):
    attrs = [Attribute("x", "quasi", Hierarchy.numeric("x", 0, 9))]
    attrs += [Attribute(f"l{j}", "non-identifier") for j in range(n_cols)]
    attrs.append(Attribute("disease", "sensitive", Hierarchy.from_nested("disease", list(values))))
    return Schema(tuple(attrs))


def _release(schema, rows, n_cols):
    """``rows``: (uid, group, sensitive, tuple) -> a release of one class per group (the QI is suppressed)."""
    import pandas as pd

    n = len(rows)
    other = pd.DataFrame({f"l{j}": [r[3][j] for r in rows] for j in range(n_cols)}) if n_cols else None
    return Release(schema=schema, attributes=("x",) + tuple(f"l{j}" for j in range(n_cols)) + ("disease",),
                   lo=np.zeros((n, 1), np.int32), hi=np.full((n, 1), 9, np.int32),
                   sensitive=np.array([r[2] for r in rows], dtype=object), other=other,
                   group=np.array([r[1] for r in rows]), uid=np.array([r[0] for r in rows], dtype=object))


@st.composite
def streams(draw):
    """A public model, 1-2 linking columns and 2-4 releases of 3-6 records: insertions, deletions (a record may
    come back: its versions skip releases), updates by the model and, rarely, outside it or of a tuple."""
    n_vals = draw(st.integers(2, 4))
    values = ("a", "b", "c", "d")[:n_vals]
    model = draw(transition_models(values))
    n_cols = draw(st.integers(1, 2))
    n_rec = draw(st.integers(3, 6))
    N = draw(st.integers(2, 4))
    rec = [{"s": draw(st.sampled_from(values)), "t": tuple(draw(st.sampled_from("xy")) for _ in range(n_cols))}
           for _ in range(n_rec)]
    releases = []
    for i in range(N):
        if i:
            for r in rec:
                kind = draw(st.sampled_from(["model"] * 6 + ["any", "tuple"]))
                if kind == "model":
                    r["s"] = draw(st.sampled_from(sorted(model.cus(r["s"]))))
                elif kind == "any":
                    r["s"] = draw(st.sampled_from(values))
                else:
                    r["t"] = tuple(draw(st.sampled_from("xy")) for _ in range(n_cols))
        present = draw(st.lists(st.booleans(), min_size=n_rec, max_size=n_rec))
        if not any(present):
            present[0] = True
        rows = [(f"u{k}", draw(st.integers(1, 3)), r["s"], r["t"]) for k, r in enumerate(rec) if present[k]]
        releases.append(rows)
    return values, model, n_cols, releases


def _versions(releases, n, linked=True):
    """Per uid, its versions in the first ``n`` releases: ``(release, {linked value: node weight})`` with the
    node weight its share of the uid's class (Definition 10, frequency weights)."""
    out: dict = {}
    for i, rows in enumerate(releases[:n]):
        for uid, g, s, t in rows:
            mates = [(s2, t2 if linked else ()) for _, g2, s2, t2 in rows if g2 == g]
            c = Counter(mates)
            out.setdefault(uid, []).append((i, {v: k / len(mates) for v, k in c.items()}))
    return out


def _paths(versions, model):
    """Every complete path of one record (eq. 1): ``(path, weight)`` with the tuple constant along it and each
    update ``s -> s'`` across ``k`` releases feasible in ``P_trans^k``."""
    out = []
    for path in itertools.product(*[sorted(c) for _, c in versions]):
        if len({t for _, t in path}) > 1:
            continue
        w = 1.0
        for j, (i, cands) in enumerate(versions):
            w *= cands[path[j]]
            if j + 1 < len(versions):
                k = versions[j + 1][0] - i
                w *= model.step_prob(k)[model.index(path[j][0]), model.index(path[j + 1][0])]
        if w > 0:
            out.append((path, w))
    return out


def _brute(releases, model, linked=True):
    """The per-record figures of the attack from the definitions: per prefix ``vulnerable_values``,
    ``vulnerable_records``, ``max_risk``; after the last release ``inconsistent`` and every uid's candidate
    sensitive values per version."""
    rows, cands = [], {}
    inconsistent = set()
    for n in range(1, len(releases) + 1):
        vul, vul_rec, m = 0, set(), 0.0
        for uid, versions in _versions(releases, n, linked).items():
            paths = _paths(versions, model)
            z = sum(w for _, w in paths)
            for j, (i, _) in enumerate(versions):
                sens = Counter()
                for path, w in paths:
                    sens[path[j][0]] += w / z
                if len(sens) == 1:
                    vul += 1
                    vul_rec.add(uid)
                m = max([m] + list(sens.values()))
                if n == len(releases):
                    cands[uid, i] = set(sens)
            if not paths and n == len(releases):
                inconsistent.add(uid)
        rows.append((vul, len(vul_rec), m))
    return rows, inconsistent, cands


def _joint_brute(releases, model, inconsistent, linked=True):
    """Joint candidate sensitive values of every version (the joint attack's possible worlds): per component
    of the consistent records (linked through shared groups), every assignment in which each group's consistent
    members take a sub-multiset of its linked values and every record's values form a complete path."""
    N = len(releases)
    members = {}
    for i, rows in enumerate(releases):
        for uid, g, s, t in rows:
            members.setdefault((i, g), {"values": [], "uids": []})["values"].append((s, t if linked else ()))
            if uid not in inconsistent:
                members[i, g]["uids"].append(uid)
    uids = sorted({u for m in members.values() for u in m["uids"]})
    parent = {u: u for u in uids}

    def find(u):
        while parent[u] != u:
            u = parent[u]
        return u

    for m in members.values():
        for a, b in zip(m["uids"], m["uids"][1:]):
            parent[find(a)] = find(b)
    out: dict = {}
    for root in sorted({find(u) for u in uids}):
        comp = [u for u in uids if find(u) == root]
        groups = [(key, m) for key, m in sorted(members.items()) if m["uids"] and find(m["uids"][0]) == root]
        options = []
        for _, m in groups:  # injective assignments of the group's rows to its consistent members
            opts = {tuple(m["values"][j] for j in perm)
                    for perm in itertools.permutations(range(len(m["values"])), len(m["uids"]))}
            options.append(sorted(opts))
        for choice in itertools.product(*options):
            world = {}
            for ((i, _), m), vals in zip(groups, choice):
                for u, v in zip(m["uids"], vals):
                    world[u, i] = v
            ok = True
            for u in comp:
                path = [(i, world[u, i]) for i in range(N) if (u, i) in world]
                if len({v[1] for _, v in path}) > 1 or any(
                        not model.steps(j - i)[model.index(a[0]), model.index(b[0])]
                        for (i, a), (j, b) in zip(path, path[1:])):
                    ok = False
                    break
            if ok:
                for key, v in world.items():
                    out.setdefault(key, set()).add(v[0])
    return out


def _view(values, model, n_cols, releases, keep_columns=True):
    schema = _schema(values, n_cols)
    seq = ReleaseSequence()
    for rows in releases:
        rel = _release(schema, rows, n_cols)
        if not keep_columns:
            rel = replace(rel, attributes=("x", "disease"), other=None)
        seq.append(rel, None, None)
    return seq.view(Adversary(sensitive="transitions"), model)


@settings(max_examples=60, deadline=None)
@given(stream=streams())
def test_attack_with_linking_columns_equals_the_brute_force(stream):
    values, model, n_cols, releases = stream
    for keep in (True, False):
        view = _view(values, model, n_cols, releases, keep)
        assert bool(view.linking) == keep
        res = UpdateGraph(linkage="uid", joint=True, time_limit=60).run(view)
        rows, inconsistent, cands = _brute(releases, model, linked=keep)
        assert [(r["vulnerable_values"], r["vulnerable_records"]) for r in res.targets] == [r[:2] for r in rows]
        for r, (_, _, m) in zip(res.targets, rows):
            assert r["max_risk"] == pytest.approx(m, rel=1e-9, abs=1e-12)
        s = res.summary
        assert s["sug_vulnerable_values"] == rows[-1][0]
        assert s["max_risk"] == pytest.approx(max(r[2] for r in rows), rel=1e-9, abs=1e-12)
        assert s["inconsistent"] == len(inconsistent)
        assert s["versions"] == sum(len(r) for r in releases)
        # the joint attack against every world of every component
        assert res.exact
        joint = _joint_brute(releases, model, inconsistent, keep)
        assert s["vulnerable_values"] == sum(len(v) == 1 for v in joint.values())
        w = res.worst.get("vulnerable_values")
        if w is not None:  # the witness: a version whose feasible linked nodes hold one sensitive value
            pinned = [v for v in w["versions"] if len({x.split(" (")[0] for x in v["feasible"]}) == 1]
            assert pinned and (w.get("linked_by") == [f"l{j}" for j in range(n_cols)]) == keep
            assert all(SEPARATOR not in x for v in w["versions"] for x in v["feasible"])
        # the candidate sets of one record, through target
        uid, i = sorted(cands)[0]
        t = UpdateGraph(linkage="uid", target=uid).run(view)
        assert t.summary[f"target_candidates_{i + 1}"] == len(cands[uid, i])
