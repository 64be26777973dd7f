"""The intersection and difference adversary over every release at once (Barbosa, Pinto, Gomes, CIKM 2012,
section 4, read for n releases; :mod:`attacks.intersection.attack`).

* hand-written streams where only the combination of three releases isolates a uid (no pair of releases
  does), with the witness releases asserted;
* a brute force written from the attacker model alone (itertools over every one-to-one map from individuals
  to published uids that reproduces what the adversary sees in all releases: presence and class), compared
  with the attack on random uid-tracking streams of 3-5 releases with insertions, deletions (and
  re-insertions) and updates of sensitive values: violators, the intersection / difference split,
  ``min_candidates``, ``min_l_distinct``, and every witness (its releases alone break the principle, no
  smaller subset of them does).
"""
from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from attacks.intersection.attack import Intersection, tracked_candidate_sets
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.principles import Principle
from multirelease.model.release import Release
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.schema import Attribute, Schema
from multirelease.model.sequence import Adversary, ReleaseSequence

VALUES = "abcd"
_SCHEMA = Schema((Attribute("q", "quasi", Hierarchy.numeric("q", 0, 3)),
                  Attribute("s", "sensitive", Hierarchy.from_nested("s", list(VALUES)))))

# a stream: one dict per release, uid -> (class, sensitive value)
Stream = list


def _release(rows: dict) -> Release:
    uids = list(rows)
    frame = pd.DataFrame({"uid": uids, "group": [rows[u][0] + 1 for u in uids], "q": ["[0,3]"] * len(uids),
                          "s": [rows[u][1] for u in uids]}, dtype=object)
    return release_from_frame(_SCHEMA, frame)


def _view(stream: Stream):
    seq = ReleaseSequence()
    for rows in stream:
        seq.append(_release(rows), None, None)
    return seq.view(Adversary(record_tracking=True, quasi_identifiers="none"))


def _run(stream: Stream, principle: Principle):
    return Intersection(principle=principle, max_listed=10_000).run(_view(stream))


# ---------------------------------------------------------------------- the brute force
def _valid(values: list[str], p: Principle) -> bool:
    """Definition 1 (and the alpha bound) on one candidate set's values, from the definitions."""
    n = len(values)
    if n < p.k:
        return False
    counts = Counter(values)
    if p.l > 1:
        if p.l_kind == "distinct" and len(counts) < p.l:
            return False
        if p.l_kind == "entropy":
            h = -sum(c / n * math.log(c / n) for c in counts.values())
            if h < math.log(p.l) - 1e-9:
                return False
    if p.alpha is not None and max(counts.values()) > p.alpha * n + 1e-9:
        return False
    return True


def _candidates(stream: Stream, releases) -> dict[str, set[str]]:
    """For every individual, the uids it is mapped to in some world consistent with ``releases`` (indices into
    ``stream``): a world maps individuals one-to-one onto uids so that, in each of those releases, an
    individual is published exactly when its uid is, and then in the same class.  The individuals are the
    stream's uids (each uid's owner; its presence and class are what the adversary knows of it)."""
    people = sorted({u for rows in stream for u in rows})
    seen = {u: tuple(stream[i].get(u, (None,))[0] for i in releases) for u in people}
    possible: dict[str, set[str]] = {u: set() for u in people}
    for image in itertools.permutations(people):
        if all(seen[person] == seen[uid] for person, uid in zip(people, image)):
            for person, uid in zip(people, image):
                possible[person].add(uid)
    return possible


def _breaks(stream: Stream, target: str, releases, cands: set[str], p: Principle) -> bool:
    """Do the values of ``cands`` break the principle in some release of ``releases`` the target is in?"""
    return any(not _valid([stream[i][c][1] for c in cands], p) for i in releases if target in stream[i])


def _brute_force(stream: Stream, p: Principle) -> dict:
    every = range(len(stream))
    cands = _candidates(stream, every)
    people = sorted(cands)
    bad = {t for t in people if _breaks(stream, t, every, cands[t], p)}
    inter = set()
    for t in bad:
        on = [i for i in every if t in stream[i]]
        # the adversary who only intersects t's classes over the releases t is published in
        meet = {u for u in people if all(u in stream[i] and stream[i][u][0] == stream[i][t][0] for i in on)}
        if _breaks(stream, t, on, meet, p):
            inter.add(t)
    distinct = [len({stream[i][c][1] for c in cands[t]}) for t in people for i in every if t in stream[i]]
    return {"bad": bad, "inter": inter, "min_candidates": min(len(cands[t]) for t in people),
            "min_l_distinct": min(distinct)}


# ---------------------------------------------------------------------- random streams
@st.composite
def uid_streams(draw, min_releases: int = 3, max_releases: int = 5, max_uids: int = 7) -> Stream:
    """3-5 releases of up to 7 uids: each release deletes some present uids, inserts some absent ones (a uid
    may come back, as after a suppression), updates the sensitive value of some, and puts every published uid
    in one of 1-3 classes (at least one uid per release).  Half the streams churn at most one uid each way per
    release, a third none (everybody in every release): long shared histories, where only several releases
    together isolate a uid."""
    n_rel = draw(st.integers(min_releases, max_releases))
    people = [f"u{i}" for i in range(draw(st.integers(2, max_uids)))]
    value = {u: draw(st.sampled_from(VALUES)) for u in people}
    churn = draw(st.sampled_from([0, 1, None]))
    if churn == 0:
        present = set(people)
    else:
        present = set(draw(st.lists(st.sampled_from(people), min_size=len(people) // 2 if churn else 1,
                                    unique=True)))
    n_cls = draw(st.integers(1 if churn is None else 2, 3))
    stream = []
    for i in range(n_rel):
        if i:
            deleted = set(draw(st.lists(st.sampled_from(sorted(present)), unique=True, max_size=churn)))
            absent = [u for u in people if u not in present]
            inserted = (set(draw(st.lists(st.sampled_from(absent), unique=True, max_size=churn))) if absent
                        else set())
            present = (present - deleted) | inserted
            if not present:
                present = {draw(st.sampled_from(people))}
            for u in sorted(present):
                if draw(st.integers(0, 3)) == 0:  # an update of the sensitive value
                    value[u] = draw(st.sampled_from(VALUES))
        stream.append({u: (draw(st.integers(0, n_cls - 1)), value[u]) for u in sorted(present)})
    return stream


principles = st.one_of(
    st.builds(Principle, k=st.integers(1, 3), l=st.sampled_from([1.0, 2.0, 3.0])),
    st.builds(Principle, k=st.integers(1, 2), l=st.sampled_from([1.5, 2.0]), l_kind=st.just("entropy")),
    st.builds(Principle, k=st.integers(1, 2), alpha=st.sampled_from([0.5, 0.7])),
)


def _check_witness(stream: Stream, p: Principle, w: dict) -> None:
    rels = [i - 1 for i in w["releases"]]
    t = w["uid"]
    assert w["present_in"] == [i + 1 for i in rels if t in stream[i]]
    assert w["absent_from"] == [i + 1 for i in rels if t not in stream[i]]
    assert w["attack"] == ("difference" if w["absent_from"] else "intersection")
    cands = _candidates(stream, rels)[t]
    assert sorted(cands) == w["candidates"] and w["size"] == len(cands)
    assert w["judged"] in w["present_in"]
    judged_vals = [stream[w["judged"] - 1][c][1] for c in cands]
    assert w["sensitive"] == dict(Counter(judged_vals)) and not _valid(judged_vals, p)
    for drop in rels:  # inclusion-minimal: no release of the witness can be dropped
        rest = [i for i in rels if i != drop]
        assert not _breaks(stream, t, rest, _candidates(stream, rest)[t], p), (w, drop)


@settings(deadline=None)
@given(uid_streams(), principles)
def test_attack_agrees_with_brute_force_over_all_releases(stream, p):
    res = _run(stream, p)
    truth = _brute_force(stream, p)
    got = {t["uid"] for t in res.targets}
    assert got == truth["bad"]
    assert res.summary["violations"] == len(truth["bad"])
    assert res.summary["intersection_violations"] == len(truth["inter"])
    assert res.summary["difference_violations"] == len(truth["bad"] - truth["inter"])
    assert res.summary["min_candidates"] == truth["min_candidates"]
    assert res.summary["min_l_distinct"] == truth["min_l_distinct"]
    assert res.summary["targets"] == len({u for rows in stream for u in rows})
    assert res.summary["releases"] == len(stream)
    full = _candidates(stream, range(len(stream)))
    for w in res.targets:
        assert w["exact_size"] == len(full[w["uid"]])
        if p.monotone:  # the witness's kind is the summary's split (otherwise a larger set may break it)
            assert w["attack"] == ("intersection" if w["uid"] in truth["inter"] else "difference")
        _check_witness(stream, p, w)
    if truth["bad"]:
        assert res.worst["violations"]["uid"] in truth["bad"]


# ---------------------------------------------------------------------- hand-written: three releases isolate
def _pairwise_violators(stream: Stream, p: Principle) -> set[str]:
    """Targets some two-release set of section 4 (``E_a n E_b``, ``E_b - R_a``) breaks."""
    tr, pairs = tracked_candidate_sets(_view(stream), p)
    out = set()
    for kind, a, b, key, members, gk, size, distinct, ok in pairs:
        out |= {str(tr.uids[u]) for u in members[np.isin(key, gk[~ok])]}
    return out


def test_three_releases_intersect_to_one_uid():
    """``a`` shares each class with a different pair of twins: ``E1(a) n E2(a) = {a, b1, b2}``,
    ``E1(a) n E3(a) = {a, c1, c2}``, ``E2(a) n E3(a) = {a, d1, d2}``, but ``E1 n E2 n E3 = {a}``."""
    stream = [
        {"a": (0, "a"), "b1": (0, "b"), "b2": (0, "c"), "c1": (0, "a"), "c2": (0, "b"), "d1": (1, "a"),
         "d2": (1, "b")},
        {"a": (0, "a"), "b1": (0, "b"), "b2": (0, "c"), "c1": (1, "a"), "c2": (1, "b"), "d1": (0, "a"),
         "d2": (0, "b")},
        {"a": (0, "a"), "b1": (1, "b"), "b2": (1, "c"), "c1": (0, "a"), "c2": (0, "b"), "d1": (0, "a"),
         "d2": (0, "b")},
    ]
    p = Principle(k=2)
    assert _pairwise_violators(stream, p) == set()  # no pair of releases breaks anybody
    res = _run(stream, p)
    assert res.summary["violations"] == 1 and res.summary["intersection_violations"] == 1
    (w,) = res.targets
    assert w["uid"] == "a" and w["releases"] == [1, 2, 3] and w["candidates"] == ["a"]
    assert w["attack"] == "intersection" and w["absent_from"] == [] and w["exact_size"] == 1
    assert res.summary["min_candidates"] == 1
    # two releases of the three are not enough: the same attack on each pair finds nothing
    for pair in itertools.combinations(stream, 2):
        assert _run(list(pair), p).summary["violations"] == 0


def test_absence_from_a_fourth_release_completes_the_isolation():
    """Release 2 puts everybody in one class (it tells nothing); ``E1(a) n E3(a) = {a, b1, b2}`` and the twins
    ``b`` are published in release 4, from which ``a`` is absent: ``E1 n E3 - R4 = {a}``.  No pair breaks
    (``E1 - R4 = {a, c1, c2}``, ``E3 - R4 = {a, d1, d2}``); the witness is releases 1, 3 and 4."""
    everyone = ["a", "b1", "b2", "c1", "c2", "d1", "d2"]
    stream = [
        {"a": (0, "a"), "b1": (0, "b"), "b2": (0, "c"), "c1": (0, "b"), "c2": (0, "c")},
        {u: (0, "a" if u[-1] != "2" else "b") for u in everyone},
        {"a": (0, "a"), "b1": (0, "b"), "b2": (0, "c"), "c1": (1, "a"), "c2": (1, "b"), "d1": (0, "b"),
         "d2": (0, "c")},
        {"b1": (0, "b"), "b2": (0, "c")},
    ]
    p = Principle(k=2)
    assert _pairwise_violators(stream, p) == set()
    res = _run(stream, p)
    assert res.summary["violations"] == 1
    assert res.summary["intersection_violations"] == 0 and res.summary["difference_violations"] == 1
    (w,) = res.targets
    assert w["uid"] == "a" and w["releases"] == [1, 3, 4] and w["candidates"] == ["a"]
    assert w["present_in"] == [1, 3] and w["absent_from"] == [4] and w["attack"] == "difference"
    assert w["sensitive"] == {"a": 1}
