"""m-Distinct, m-Distinct* and m-invariance under internal updates (Li & Zhou, sections IV-V; Xiao & Tao).

Property tests over random tables, transition models and update streams (tests/strategies.py): every
m-Distinct sequence is m-unique and keeps at least m nodes in every candidate node set of every feasible
sub-SUG (Lemma 3); m-Distinct* sequences have risk at most 1/m (Lemma 4); m-invariance counts exactly the
records whose value left their signature (Figure 4).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attacks.update_graph.attack import UpdateGraph, link_versions, node_weights, sug_dp
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.transitions import TransitionModel
from publishers.m_invariance.distinct import edge_colouring
from strategies_dynamics import published_sequence


def _m_unique(release, m):
    for rows in release.class_rows():
        vals = release.sensitive[rows]
        assert len(rows) >= m
        assert len(set(vals)) == len(vals), "a QI-group repeats a value"


def _by_identity(seq):
    """The sequence with every release's ``uid`` set to the (private) person ids, counterfeits to ids of their
    own: the adversary who knows every record's QI-group (the releases publish no uid, issue 13 item 2)."""
    from dataclasses import replace

    out = ReleaseSequence()
    for i, (release, truth, snap) in enumerate(zip(seq.releases, seq.truths, seq.snapshots)):
        assert release.uid is None  # no uid column unless asked
        ids = np.array([f"~c{i}:{k}" if p is None else str(p) for k, p in enumerate(truth.person)], dtype=object)
        out.append(replace(release, uid=ids), truth, snap)
    return out


def _counterfeits_consistent(release, truth):
    flagged = {}
    for g, f in zip(release.group, truth.counterfeit):
        if f:
            flagged[int(g)] = flagged.get(int(g), 0) + 1
    assert flagged == dict(release.counterfeits or {})


@settings(max_examples=40)
@given(data=st.data(), m=st.integers(2, 3), refill=st.booleans(), intersect_limit=st.sampled_from([0, 150]))
def test_m_distinct_lemma_3(data, m, refill, intersect_limit):
    """Lemma 3 with the default balancing and with Algorithm 3's refilling and Algorithm 2's intersection
    buckets (``refill``, ``intersect_limit``: off by default, issue 13)."""
    seq, model, states = published_sequence(data, "m_distinct", m=m, n_releases=3, refill=refill,
                                   intersect_limit=intersect_limit)
    for release, truth, state in zip(seq.releases, seq.truths, states):
        _m_unique(release, m)
        _counterfeits_consistent(release, truth)
        json.dumps(state)  # the state is data
    view = _by_identity(seq).view(Adversary(sensitive="transitions"), model)
    links = link_versions(view, model, "uid")
    N = len(seq)
    w = [node_weights(links, i) for i in range(N)]
    pres = [links.present(i) for i in range(N)]
    for n in range(1, N + 1):
        feas, _ = sug_dp(w[:n], pres[:n], model)
        for i in range(n):
            sizes = feas[i].sum(axis=1)[pres[i]]
            assert (sizes >= m).all(), f"Lemma 3 broken at release {i + 1} after {n}"
    assert UpdateGraph(linkage="uid").run(view).summary["vulnerable_values"] == 0


@settings(max_examples=40)
@given(data=st.data(), m=st.integers(2, 3))
def test_m_distinct_star_lemma_4(data, m):
    """Blocks of equal size: transitive candidate update sets with equal update probabilities (the random
    world of Lemma 4's proof)."""
    seq, model, _ = published_sequence(data, "m_distinct_star", m=m, n_releases=3, model_kind="blocks")
    n_vals = len(model)
    d = model.diameter
    if n_vals % d:  # unequal blocks weigh their paths unequally: Lemma 4 assumes equal weights
        return
    view = _by_identity(seq).view(Adversary(sensitive="transitions"), model)
    res = UpdateGraph(linkage="uid").run(view)
    assert res.summary["vulnerable_values"] == 0
    assert res.summary["max_risk"] <= 1 / m + 1e-9


@settings(max_examples=40)
@given(data=st.data(), m=st.integers(2, 3))
def test_m_invariance_invalid_records(data, m):
    seq, model, states = published_sequence(data, "m_invariance", m=m, n_releases=3)
    for i in range(1, len(seq)):
        prev_rel, prev_truth = seq.releases[i - 1], seq.truths[i - 1]
        sig = {}
        for g in np.unique(prev_rel.group):
            sig[g] = set(prev_rel.sensitive[prev_rel.group == g])
        person_sig = {p: sig[g] for p, g in zip(prev_truth.person, prev_rel.group) if p is not None}
        snap = seq.snapshots[i]
        expected = sum(1 for pid, v in zip(snap.ids, snap.sensitive) if pid in person_sig and v not in person_sig[pid])
        assert states[i]["stats"]["invalid"] == expected
        _m_unique(seq.releases[i], m)
        _counterfeits_consistent(seq.releases[i], seq.truths[i])
        # valid records keep their signature
        rel, truth = seq.releases[i], seq.truths[i]
        now = {g: set(rel.sensitive[rel.group == g]) for g in np.unique(rel.group)}
        for p, g, v in zip(truth.person, rel.group, rel.sensitive):
            if p in person_sig and v in person_sig[p]:
                assert now[g] == person_sig[p]


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), max_size=40))
def test_edge_colouring_is_proper(edges):
    if not edges:
        return
    deg_l = np.bincount([u for u, _ in edges])
    deg_r = np.bincount([v for _, v in edges])
    delta = int(max(deg_l.max(), deg_r.max()))
    col = edge_colouring(edges, delta)
    assert all(0 <= c < delta for c in col)
    seen = set()
    for (u, v), c in zip(edges, col):
        assert ("l", u, c) not in seen and ("r", v, c) not in seen
        seen.add(("l", u, c))
        seen.add(("r", v, c))
