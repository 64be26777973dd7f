"""The intersection and difference attacks read linking columns (issue 22; Barbosa, Pinto, Gomes, CIKM 2012,
section 4, with Shmueli & Tassa's persistent non-identifiers, 004 section 5.2; :mod:`attacks.intersection.attack`).

* a hand example without uids: ``E1`` is 2-diverse and so is the class ``E2`` of the later release a new
  target falls in, yet the blood types show which record of ``E2`` was already in ``E1``: the new one is
  pinned to HIV (the same releases with the column declared changing leave two values);
* a hand example with uids: a counterfeit whose blood type changes between releases is nobody's record and
  leaves the target's candidate set;
* without uids (insertion-only difference attack), a brute force from section 4's definition extended to
  linked values: ``Id(E1)`` lies in ``Id(L)`` *with each record's linked value*, so the old records are an
  injection of ``E1``'s rows into ``L``'s rows of equal linked value (itertools over every such injection);
  the candidate multiset of a new target in ``E2`` holds, of each linked value, the most rows of ``E2`` some
  injection leaves unmatched (``(L - E1) n E2``); no injection: the pair of classes is skipped (a deletion).
  The principle (Definition 1) is judged on the sensitive values they carry.  Random 2-5 release sequences of
  insertions (and, in some, deletions), one or two linking columns;
* with uids, the permutation brute force of tests/attacks/test_intersection_all_releases.py extended: a world maps
  each individual to a uid of its presence and classes that shows *one* linking tuple (its own, persistent)
  over the releases it is published in; random 3-5 release uid streams with insertions, deletions, updates
  of sensitive values and counterfeits whose tuple changes.
"""
from __future__ import annotations

import itertools
from collections import Counter

import pandas as pd
from hypothesis import settings
from hypothesis import strategies as st

from attacks.intersection.attack import Intersection
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.linking import Linking
from multirelease.model.principles import Principle
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.schema import Attribute, Schema
from multirelease.model.sequence import Adversary, ReleaseSequence
from test_intersection_all_releases import _valid, principles, uid_streams
from tally import tally

VALUES = "abcd"
LINK_VALUES = ("O+", "A+", "B-")
LINK_COLUMNS = ("bt", "lab")


def _schema(n_link: int, q_max: int = 5) -> Schema:
    attrs = [Attribute("q", "quasi", Hierarchy.numeric("q", 0, q_max), "interval"),
             Attribute("s", "sensitive", Hierarchy.from_nested("s", list(VALUES) + ["flu", "hiv"]))]
    for name, role in zip(LINK_COLUMNS[:n_link], ("non-identifier", "insensitive")):
        attrs.append(Attribute(name, role, Hierarchy.from_nested(name, list(LINK_VALUES) + ["C", "D"])))
    return Schema(tuple(attrs))


def _release(schema: Schema, rows: list[tuple], uids: list | None = None):
    """``rows``: ``(group, (lo, hi), value, linking tuple)``."""
    link = [a.name for a in schema.attributes if a.role in ("non-identifier", "insensitive")]
    data = {"group": [g + 1 for g, *_ in rows], "q": [f"[{lo},{hi}]" for _, (lo, hi), *_ in rows],
            "s": [v for _, _, v, _ in rows]}
    for j, name in enumerate(link):
        data[name] = [t[j] for *_, t in rows]
    if uids is not None:
        data = {"uid": uids, **data}
    return release_from_frame(schema, pd.DataFrame(data, dtype=object))


def _view(releases, tracking: bool, changing=()):
    seq = ReleaseSequence()
    for r in releases:
        seq.append(r, None, None)
    return seq.view(Adversary(record_tracking=tracking, quasi_identifiers="none", changing=tuple(changing)))


# ---------------------------------------------------------------------- hand examples
def test_a_blood_type_pins_the_new_record_of_a_2_diverse_class():
    """``E1 = {(flu, A), (hiv, B)}``; release 2 splits them over ``E2 = {(flu, A), (hiv, C)}`` and ``E3 =
    {(hiv, B), (flu, D)}``.  On sensitive values ``(L - E1) n E2 = {flu, hiv}``: 2-diverse.  On linked
    values ``L - E1 = {(hiv, C), (flu, D)}`` (flu with blood type A is E1's), so a target inserted in ``E2`` has
    HIV, and one inserted in ``E3`` has flu."""
    schema = _schema(1)
    r1 = _release(schema, [(0, (0, 3), "flu", ("A",)), (0, (0, 3), "hiv", ("B",))])
    r2 = _release(schema, [(0, (0, 1), "flu", ("A",)), (0, (0, 1), "hiv", ("C",)),
                           (1, (2, 3), "hiv", ("B",)), (1, (2, 3), "flu", ("D",))])
    res = Intersection(k=1, l=2).run(_view([r1, r2], tracking=False))
    assert res.summary["violations"] == 2 and res.summary["min_l_distinct"] == 1
    by_group = {tuple(t["groups"]): t for t in res.targets}
    assert by_group[(1, 1)]["sensitive"] == {"hiv": 1}
    assert by_group[(1, 1)]["linked_by"] == ["bt"] and by_group[(1, 1)]["linked"] == {"hiv (bt=C)": 1}
    assert by_group[(1, 2)]["sensitive"] == {"flu": 1}
    assert any("bt" in n for n in res.notes)
    blind = Intersection(k=1, l=2).run(_view([r1, r2], tracking=False, changing=("bt",)))
    assert blind.summary["violations"] == 0 and blind.summary["min_l_distinct"] == 2
    assert "linked_by" not in str(blind.targets)


def test_a_counterfeit_whose_blood_type_changes_leaves_the_candidate_set():
    """With uids, ``t`` and ``x`` share every class; ``x`` shows blood type A in release 1 and B in release 2,
    so it is no individual's record: ``t``'s candidate set is ``{t}`` (its value is disclosed)."""
    schema = _schema(1)
    r1 = _release(schema, [(0, (0, 3), "flu", ("O+",)), (0, (0, 3), "hiv", ("A+",))], ["t", "x"])
    r2 = _release(schema, [(0, (0, 3), "flu", ("O+",)), (0, (0, 3), "hiv", ("B-",))], ["t", "x"])
    res = Intersection(k=1, l=2).run(_view([r1, r2], tracking=True))
    assert res.summary["violations"] == 1 and res.summary["targets"] == 1
    assert res.stats["set_aside"] == 1
    (w,) = res.targets
    assert w["uid"] == "t" and w["candidates"] == ["t"] and w["sensitive"] == {"flu": 1}
    assert w["linked"] == {"flu (bt=O+)": 1} and w["linked_by"] == ["bt"]
    blind = Intersection(k=1, l=2).run(_view([r1, r2], tracking=True, changing=("bt",)))
    assert blind.summary["violations"] == 0 and blind.summary["targets"] == 2


# ---------------------------------------------------------------------- without uids: brute force
@st.composite
def insertion_sequences(draw):
    """2-5 releases of records ``(q point, sensitive value, linking tuple)``: each release keeps the earlier
    records (in a third of the sequences some are deleted) and inserts 0-2 new ones; its classes are a random
    partition into 1-3 classes, each published as the interval closure of its points."""
    n_link = draw(st.integers(1, 2))
    n_rel = draw(st.integers(2, 5))
    deletions = draw(st.integers(0, 2)) == 0

    def record():
        return (draw(st.integers(0, 5)), draw(st.sampled_from(VALUES[:3])),
                tuple(draw(st.sampled_from(LINK_VALUES)) for _ in range(n_link)))

    present = [record() for _ in range(draw(st.integers(1, 4)))]
    out = []
    for i in range(n_rel):
        if i:
            if deletions and len(present) > 1:
                present = [r for r in present if draw(st.integers(0, 3))]
            present = present + [record() for _ in range(draw(st.integers(0, 2)))]
            if not present:
                present = [record()]
        n_cls = draw(st.integers(1, min(3, len(present))))
        cls = [draw(st.integers(0, n_cls - 1)) for _ in present]
        used = sorted(set(cls))
        rows = []
        for c, (q, v, t) in zip(cls, present):
            pts = [p for (p, *_), cc in zip(present, cls) if cc == c]
            rows.append((used.index(c), (min(pts), max(pts)), v, t))
        out.append(rows)
    return n_link, out


def _intervals_meet(a, b) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def brute_force_untracked(seq: list[list[tuple]], p: Principle) -> dict:
    """Section 4's insertion-only difference attack, with linked values, over every pair ``a < b`` and every
    class ``E1`` of ``a`` and ``E2`` of ``b`` overlapping it (module docstring)."""
    positions = []
    skipped = 0
    for a, b in itertools.combinations(range(len(seq)), 2):
        A, B = seq[a], seq[b]
        for e1 in sorted({g for g, *_ in A}):
            reg1 = next(r for g, r, *_ in A if g == e1)
            rows1 = [(v, t) for g, _, v, t in A if g == e1]
            L = sorted({g for g, r, *_ in B if _intervals_meet(r, reg1)})
            if not L:
                continue
            lrows = [j for j, (g, *_) in enumerate(B) if g in L]
            linked = {j: (B[j][2], B[j][3]) for j in lrows}
            # every injection of E1's rows into L's rows of equal linked value
            per_value = []
            for lv, n in Counter(rows1).items():
                per_value.append(list(itertools.permutations([j for j in lrows if linked[j] == lv], n)))
            injections = [set().union(*map(set, combo)) for combo in itertools.product(*per_value)]
            if not injections:
                skipped += 1
                continue
            for e2 in L:
                e2rows = [j for j in lrows if B[j][0] == e2]
                cand: Counter = Counter()
                for lv in {linked[j] for j in e2rows}:
                    cand[lv] = max(sum(1 for j in e2rows if linked[j] == lv and j not in used)
                                   for used in injections)
                cand = +cand
                if not cand:
                    continue
                sens = [lv[0] for lv, n in cand.items() for _ in range(n)]
                positions.append({"releases": [a + 1, b + 1], "groups": [e1 + 1, e2 + 1], "size": len(sens),
                                  "l_distinct": len(set(sens)), "bad": not _valid(sens, p),
                                  "sensitive": dict(Counter(sens)), "linked": cand})
    return {"positions": positions, "skipped": skipped}


def _check_untracked(n_link, seq, p) -> bool:
    schema = _schema(n_link)
    releases = [_release(schema, rows) for rows in seq]
    res = Intersection(principle=p, max_listed=10_000).run(_view(releases, tracking=False))
    truth = brute_force_untracked(seq, p)
    pos = truth["positions"]
    bad = [x for x in pos if x["bad"]]
    assert res.summary["targets"] == len(pos)
    assert res.summary["violations"] == res.summary["difference_violations"] == len(bad)
    assert res.summary["min_candidates"] == min((x["size"] for x in pos), default=0)
    assert res.summary["min_l_distinct"] == min((x["l_distinct"] for x in pos), default=0)
    assert (truth["skipped"] > 0) == any("skipped" in n for n in res.notes)
    linking = Linking(LINK_COLUMNS[:n_link])
    got = {(tuple(t["releases"]), tuple(t["groups"])): t for t in res.targets}
    assert len(got) == len(bad)
    for x in bad:
        t = got[(tuple(x["releases"]), tuple(x["groups"]))]
        assert t["sensitive"] == x["sensitive"] and t["size"] == x["size"] and t["l_distinct"] == x["l_distinct"]
        assert t["linked_by"] == list(LINK_COLUMNS[:n_link])
        want = {linking.label("\x1f".join((lv[0],) + lv[1])): n for lv, n in x["linked"].items()}
        assert t["linked"] == want
    blind = Intersection(principle=p, max_listed=0).run(
        _view(releases, tracking=False, changing=LINK_COLUMNS[:n_link]))
    return blind.summary != res.summary


def test_untracked_attack_agrees_with_brute_force_on_linked_values():
    got = tally(st.tuples(insertion_sequences(), principles), lambda cp: _check_untracked(*cp[0], cp[1]),
                max(10, settings.default.max_examples))
    assert got["mattered"] > 0, got


# ---------------------------------------------------------------------- with uids: brute force
@st.composite
def linked_uid_streams(draw):
    """A uid stream of tests/attacks/test_intersection_all_releases.py with a persistent linking tuple per uid, and
    0-2 counterfeit uids whose tuple changes in one release after their first."""
    n_link = draw(st.integers(1, 2))
    stream = draw(uid_streams(max_uids=6))
    uids = sorted({u for rows in stream for u in rows})
    tup = {u: tuple(draw(st.sampled_from(LINK_VALUES)) for _ in range(n_link)) for u in uids}
    fakes = set(draw(st.lists(st.sampled_from(uids), unique=True, max_size=2)))
    out = []
    for i, rows in enumerate(stream):
        new = {}
        for u, (c, v) in rows.items():
            t = tup[u]
            if u in fakes and any(u in stream[j] for j in range(i)) and draw(st.booleans()):
                t = tuple(draw(st.sampled_from(LINK_VALUES)) for _ in range(n_link))
            new[u] = (c, v, t)
        out.append(new)
    return n_link, out


def _tuples(stream, u) -> set:
    return {rows[u][2] for rows in stream if u in rows}


def _candidates(stream, releases) -> dict[str, set[str]]:
    """For every individual, the uids a world consistent with ``releases`` maps it to: a world maps the
    individuals one-to-one onto uids of their presence and classes in those releases, each uid showing one
    linking tuple over the whole sequence (the individual's own: a uid showing two is the image of nobody).
    The individuals are the owners of the uids showing one tuple."""
    uids = sorted({u for rows in stream for u in rows})
    people = [u for u in uids if len(_tuples(stream, u)) == 1]
    seen = {u: tuple(stream[i].get(u, (None,))[0] for i in releases) for u in uids}
    possible: dict[str, set[str]] = {u: set() for u in people}
    for image in itertools.permutations(uids, len(people)):
        if all(seen[person] == seen[uid] and len(_tuples(stream, uid)) == 1 for person, uid in zip(people, image)):
            for person, uid in zip(people, image):
                possible[person].add(uid)
    return possible


def _breaks(stream, target, releases, cands, p) -> bool:
    return any(not _valid([stream[i][c][1] for c in cands], p) for i in releases if target in stream[i])


def _check_tracked(n_link, stream, p) -> bool:
    schema = _schema(n_link, 3)
    releases = []
    for rows in stream:
        us = list(rows)
        releases.append(_release(schema, [(rows[u][0], (0, 3), rows[u][1], rows[u][2]) for u in us], us))
    res = Intersection(principle=p, max_listed=10_000).run(_view(releases, tracking=True))
    every = range(len(stream))
    cands = _candidates(stream, every)
    people = sorted(cands)
    bad = {t for t in people if _breaks(stream, t, every, cands[t], p)}
    assert {t["uid"] for t in res.targets} == bad
    assert res.summary["violations"] == len(bad)
    assert res.summary["targets"] == len(people)
    assert res.stats["set_aside"] == len({u for rows in stream for u in rows}) - len(people)
    if people:
        assert res.summary["min_candidates"] == min(len(cands[t]) for t in people)
        assert res.summary["min_l_distinct"] == min(len({stream[i][c][1] for c in cands[t]})
                                                    for t in people for i in every if t in stream[i])
    linking = Linking(LINK_COLUMNS[:n_link])
    for w in res.targets:
        rels = [i - 1 for i in w["releases"]]
        sub = _candidates(stream, rels)[w["uid"]]
        assert sorted(sub) == w["candidates"]
        judged = [stream[w["judged"] - 1][c] for c in sub]
        assert w["sensitive"] == dict(Counter(v for _, v, _ in judged)) and not _valid([v for _, v, _ in judged], p)
        assert w["linked"] == dict(Counter(linking.label("\x1f".join((v,) + t)) for _, v, t in judged))
        assert w["linked_by"] == list(LINK_COLUMNS[:n_link])
        for drop in rels:  # inclusion-minimal
            rest = [i for i in rels if i != drop]
            assert not _breaks(stream, w["uid"], rest, _candidates(stream, rest)[w["uid"]], p)
    blind = Intersection(principle=p, max_listed=0).run(
        _view(releases, tracking=True, changing=LINK_COLUMNS[:n_link]))
    return blind.summary != res.summary


def test_tracked_attack_agrees_with_brute_force_with_linking_columns():
    got = tally(st.tuples(linked_uid_streams(), principles), lambda cp: _check_tracked(*cp[0], cp[1]),
                max(10, settings.default.max_examples))
    assert got["mattered"] > 0, got
