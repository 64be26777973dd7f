"""A counterfeit row of m-Distinct cannot be told from a real one in the published folder (issue 13, item 2 and
its third Done-when line).

What the adversary may know about counterfeits is what the counterfeit statistics publish: how many rows of
each QI-group are counterfeit.  So the null hypothesis is, per group with ``0 < c < n`` counterfeits among its
``n`` rows: *the counterfeit rows are a uniformly random ``c``-subset of the group's rows, whatever the
published columns say*.  For every such group one counterfeit is taken at random and its randomized rank
within the group is computed under each pattern below (``u = (L + V E) / n``: ``L`` rows with a smaller key,
``E`` rows with an equal one, ``V`` uniform); under the null ``u`` is exactly uniform on ``(0, 1)`` and
independent across groups, so a Kolmogorov-Smirnov test against the uniform law must not reject at
``p < 0.001``.  The patterns (the obvious ones, and every column the folder has):

* row order (position in ``release_<i>.csv``), and the group's position in ``counterfeits_<i>.csv`` order
  against the group id order (a file-level pattern: the statistics file lists groups in creation order unless
  sorted);
* uid order (as a number), uid age (the first release it appears in), uid lifetime (releases it appears in),
  and whether the uid's value changed since its previous release (uids only);
* value frequency (in the release, and over the folder) and the value's position in the domain (a search
  order that prefers low values);
* other published columns: how many rows of the group share the row's values of the non-QI, non-sensitive
  columns (a counterfeit copying a member's columns always has a twin).

Data: random small streams (6-24 people, 3-5 releases, insertions, deletions, updates inside the public
model; m-Distinct with and without ``uid``, a published insensitive column) over fixed seeds, and the published
folder of scenarios/adult_updates_m_distinct.yaml, scaled down (a quarter of the stream, four releases: the
full run takes minutes; its full-scale figures are in the issue 13 note).  The detector is not vacuous: the
same statistics on the same folders with the counterfeits moved to the end of their group reject at once.

Found and fixed here: counterfeit values favoured the first values of the domain (the max-flow's and
``eligible_counterfeits``' search order; now a weighted random order: small streams p 1e-8 -> 0.07), a
counterfeit copied a member's other columns (a twin in every group, p 1e-8; now a person of the region outside
the group: p 0.27), the statistics file listed groups in creation order (now by id), and counterfeit values were
rarer than their group's real values (full Adult stream, ten releases, 614 groups: frequency p 4e-44, domain
position p 1e-50).  That last one had three causes, each measured and removed in
:mod:`publishers.m_invariance.distinct`: new records refilled the gaps of frequent values and not of rare ones
(Algorithm 3, ``epsilon = 1``; now off unless ``refill: true``), Algorithm 3's scan left a bucket's deficits at the
entries no flexible row reaches (those of the bucket's rarer values; now ``spread_deficits`` draws them uniformly
among the feasible entries), and the counterfeit's value was drawn from the table's frequencies instead of like its
entry's real rows (now ``entry_preferences``); intersection buckets, whose counterfeits stayed rarer (rank
0.41-0.45), are off unless ``intersect_limit`` is set.  On the full stream (the scenario's seed and three others,
three KS draws each) the frequency patterns now give p 0.05-0.95, for about 23 times the counterfeits (856 -> 20,097
of 154,097 rows).

Left, and weak: on the full stream the value's *position in the domain* still gives p 1e-4 to 0.55 (7 of 12 below
0.05): in groups of four the counterfeit is the group's lowest or highest value 6% less often than it should
be (2,168 and 2,170 against 2,304 expected, 10,896 groups).  Not closed, and its cause not established: a
counterfeit takes its entry's most common value 64% of the time where the entry's real rows do 89% (that value is
already on ``delta`` rows of the bucket in 24% of the draws, and m-eligibility forbids one more), but raising
``delta`` until every draw is honoured made the pattern stronger (p 1e-4, 1.5-1.8x the counterfeits), and so
did interleaving the counterfeits with the real rows in the split instead of putting them last.  The quarter
stream this test runs gives p 0.02.

:func:`test_the_detector_sees_the_value_tell_of_refilling` keeps the detector honest: with ``refill: true`` and
intersection buckets the old tell is back and found.

A file-level "newest uids" pick (the rows whose uids appeared last) does find counterfeits more often than a
blind pick of as many rows; the excess is exactly what the public per-group counts predict (new cohorts -
legal groups of records that lost their slot, groups of new records filled up to ``m`` - need more
counterfeits), which :func:`test_newest_uids_say_no_more_than_the_counterfeit_statistics` checks.
"""
from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from multirelease.model.dynamics import generate_stream
from multirelease.errors import InputError
from multirelease.model.hierarchy import Hierarchy
from multirelease.formats.release_csv import release_csv
from multirelease.model.schema import Attribute, Schema
from multirelease.model.table import Table
from multirelease.model.transitions import TransitionModel
from publishers import PUBLISHERS

ROOT = Path(__file__).resolve().parents[2]
#: the KS test's rejection level (a pattern fails when its p-value is below it)
ALPHA = 1e-3
VALUES = ("flu", "cold", "asthma", "ulcer", "gastritis", "hiv")


# ---------------------------------------------------------------------- the folders
def _folder_files(releases) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """The release files and counterfeit statistics files as ``run --out`` writes them, read back as text."""
    frames, cfs = [], []
    for r in releases:
        frames.append(pd.read_csv(io.StringIO(release_csv(r)), dtype=str, keep_default_na=False))
        cf = r.counterfeits or {}
        text = pd.DataFrame({"group": list(cf), "counterfeits": list(cf.values())}).to_csv(index=False)
        cfs.append(pd.read_csv(io.StringIO(text), dtype=str))
    return frames, cfs


def _schema() -> Schema:
    return Schema((Attribute("id", "identifier"),
                   Attribute("age", "quasi", Hierarchy.numeric("age", 20, 59)),
                   Attribute("zip", "quasi", Hierarchy.from_nested("zip", {"*": {"Z1": ["z1", "z2"],
                                                                                 "Z2": ["z3", "z4"]}})),
                   Attribute("race", "insensitive", Hierarchy.from_nested("race", ["a", "b", "c"])),
                   Attribute("disease", "sensitive", Hierarchy.from_nested("disease", list(VALUES)))))


def random_stream_folder(seed: int, uid: bool):
    """One random small stream published by m-Distinct: ``(frames, counterfeit files, truths, value order)``
    or ``None`` when the publisher refused."""
    rng = np.random.default_rng(seed)
    schema = _schema()
    n = int(rng.integers(14, 25))
    frame = pd.DataFrame({"age": rng.integers(20, 60, n).astype(str), "zip": rng.choice(["z1", "z2", "z3", "z4"], n),
                          "race": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
                          "disease": rng.choice(VALUES, n)},
                         index=pd.Index([f"p{i}" for i in range(n)], name="id"), dtype=object)
    model = TransitionModel.with_diameter(list(VALUES), int(rng.integers(2, 5)), str(rng.choice(["window", "blocks"])))
    n_rel = int(rng.integers(3, 6))
    params = {"initial": int(rng.integers(6, 13)), "delete": int(rng.integers(0, 3)), "insert": 0,
              "sensitive": int(rng.integers(0, 4)), "qi": {}}
    params["insert"] = min(3, (n - params["initial"]) // (n_rel - 1))
    first, changes = generate_stream(Table(schema, frame), n_rel, params, model, rng)
    pub = PUBLISHERS["m_distinct"](m=int(rng.integers(2, 4)), uid=uid, linking="keep")  # race: a twin column
    pub.bind_transitions(model)
    snap, state, releases, truths = first, None, [], []
    try:
        for i in range(1, n_rel + 1):
            snap = snap.apply(changes[i]) if i in changes else snap
            res = pub.publish(snap, attributes=["age", "zip", "race", "disease"], state=state,
                              rng=np.random.default_rng([seed, i]))
            state = res.state
            releases.append(res.release)
            truths.append([p is None for p in res.truth.person])
    except InputError:
        return None
    frames, cfs = _folder_files(releases)
    return frames, cfs, truths, list(VALUES)


@pytest.fixture(scope="module")
def small_streams():
    """The folders of 120 seeds (60 without uids, 60 with), refusals left out."""
    out = []
    for seed in range(120):
        folder = random_stream_folder(seed, uid=seed % 2 == 1)
        if folder is not None:
            out.append(folder)
    return out


def adult_quarter_folder(**publisher):
    """scenarios/adult_updates_m_distinct.yaml with a quarter of its stream and four releases, run as ``run
    --out`` would (no attacks), its releases given the extra ``publisher`` parameters."""
    from multirelease.pipeline import load_scenario_document, run_scenario

    path = ROOT / "scenarios" / "adult_updates_m_distinct.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    stream = doc["dynamics"]["stream"]
    for key in ("initial", "delete", "insert", "sensitive"):
        stream[key] = stream[key] // 4
    doc["releases"] = [dict(r, **publisher) for r in doc["releases"][:4]]
    doc["attacks"], doc["expect"] = [], []
    run = run_scenario(load_scenario_document(doc, base=path.parent, path=path), attack=False)
    frames, cfs = _folder_files(run.sequence.releases)
    truths = [list(t.counterfeit) for t in run.sequence.truths]
    leaves = list(load_scenario_document(doc, base=path.parent, path=path).schema["occupation"].hierarchy.leaves)
    return frames, cfs, truths, leaves


@pytest.fixture(scope="module")
def adult_folder():
    """The quarter Adult stream published with m-Distinct's defaults."""
    return adult_quarter_folder()


# ---------------------------------------------------------------------- the patterns
def _keys(frames, cfs, values) -> list[dict[str, np.ndarray]]:
    """Per release, each pattern's key for every row (a larger key: further along the pattern)."""
    sens = [c for c in frames[0].columns if c in {"disease", "occupation"}][0]
    others = [c for c in frames[0].columns if c in {"race"}]
    has_uid = "uid" in frames[0].columns
    first, count, last_value = {}, {}, [{} for _ in frames]
    if has_uid:
        for i, f in enumerate(frames):
            for u, v in zip(f["uid"], f[sens]):
                first.setdefault(u, i)
                count[u] = count.get(u, 0) + 1
                last_value[i][u] = v
    folder_freq = pd.concat([f[sens] for f in frames]).value_counts()
    order = {v: j for j, v in enumerate(values)}
    out = []
    for i, (f, cf) in enumerate(zip(frames, cfs)):
        keys = {"row order": np.arange(len(f)),
                "value frequency (release)": f[sens].map(f[sens].value_counts()).to_numpy(),
                "value frequency (folder)": f[sens].map(folder_freq).to_numpy(),
                "value position in the domain": f[sens].map(order).to_numpy()}
        if others:
            tup = f[["group", *others]].astype(str).agg("|".join, axis=1)
            keys["twins in other columns"] = tup.map(tup.value_counts()).to_numpy()
        if has_uid:
            uids = list(f["uid"])
            keys["uid order"] = np.array([int(u, 16) for u in uids], dtype=float)
            keys["uid age"] = np.array([-first[u] for u in uids])
            keys["uid lifetime"] = np.array([count[u] for u in uids])
            keys["uid value changed"] = np.array([0 if i == 0 or u not in last_value[i - 1] else
                                                  int(last_value[i - 1][u] != v) for u, v in zip(uids, f[sens])])
        out.append(keys)
    return out


def within_group_ranks(folders, rng: np.random.Generator, tamper: bool = False) -> dict[str, list[float]]:
    """``{pattern: [u]}``: one randomized rank per group with ``0 < c < n`` counterfeits (module docstring).
    ``tamper`` moves the counterfeits to the end of their group's rows first (the detector's own check)."""
    out: dict[str, list[float]] = {}
    for frames, cfs, truths, values in folders:
        if tamper:
            frames, truths = _counterfeits_last(frames, truths)
        for f, cf, fake, keys in zip(frames, cfs, truths, _keys(frames, cfs, values)):
            counts = {int(g): int(c) for g, c in zip(cf["group"], cf["counterfeits"])}
            group = f["group"].astype(int).to_numpy()
            fake = np.asarray(fake, dtype=bool)
            for g, c in counts.items():
                rows = np.flatnonzero(group == g)
                assert int(fake[rows].sum()) == c  # the statistics count exactly the counterfeit rows
                if not 0 < c < len(rows):
                    continue
                pick = int(rng.choice(rows[fake[rows]]))
                v = rng.random()
                for name, key in keys.items():
                    k = key[rows]
                    below, equal = int((k < key[pick]).sum()), int((k == key[pick]).sum())
                    out.setdefault(name, []).append((below + v * equal) / len(rows))
            # the statistics file's order against the group ids (a group-level pattern)
            ids = [int(g) for g in cf["group"]]
            if len(ids) >= 2:
                ranks = stats.rankdata(ids) / len(ids)
                out.setdefault("counterfeit file order", []).append(
                    float(stats.kendalltau(np.arange(len(ids)), ranks).statistic) / 2 + 0.5 if len(ids) > 2
                    else float(rng.random()))
    return out


def _counterfeits_last(frames, truths):
    """The same folders with every group's counterfeit rows moved after its real rows (rows of a group kept
    at the group's positions)."""
    out_f, out_t = [], []
    for f, fake in zip(frames, truths):
        fake = np.asarray(fake, dtype=bool)
        order = np.lexsort((fake, f["group"].astype(int).to_numpy()))
        out_f.append(f.iloc[order].reset_index(drop=True))
        out_t.append(list(fake[order]))
    return out_f, out_t


def _ks(ranks: dict[str, list[float]], skip: tuple = ()) -> dict[str, tuple[int, float]]:
    return {name: (len(u), float(stats.kstest(u, "uniform").pvalue)) for name, u in ranks.items()
            if name not in skip and len(u) >= 20}


# ---------------------------------------------------------------------- the tests
#: the patterns of a counterfeit's value
VALUE_PATTERNS = ("value frequency (release)", "value frequency (folder)", "value position in the domain")


def test_small_streams_counterfeits_look_like_real_rows(small_streams):
    ranks = within_group_ranks(small_streams, np.random.default_rng(0))
    # the file order of the counterfeit statistics is judged by its own test below (it is not a row rank)
    report = _ks(ranks, skip=("counterfeit file order",))
    print(report)
    assert {"row order", "uid order", "uid age", "twins in other columns", *VALUE_PATTERNS} <= set(report), report
    failed = {name: r for name, r in report.items() if r[1] < ALPHA}
    assert not failed, f"patterns that separate counterfeits (groups, KS p-value): {failed}"


def test_adult_m_distinct_folder_counterfeits_look_like_real_rows(adult_folder):
    ranks = within_group_ranks([adult_folder], np.random.default_rng(1))
    report = _ks(ranks, skip=("counterfeit file order",))
    print(report)
    assert {"row order", *VALUE_PATTERNS} <= set(report) and report["row order"][0] >= 500, report
    failed = {name: r for name, r in report.items() if r[1] < ALPHA}
    assert not failed, f"patterns that separate counterfeits (groups, KS p-value): {failed}"


def test_the_detector_sees_the_value_tell_of_refilling():
    """The value patterns are not vacuous: the same quarter stream published with ``refill: true`` and
    intersection buckets (Algorithm 3's refilling and Algorithm 2's intersections, as the paper has them) gives
    counterfeits rarer than their groups' real rows, and the frequency patterns reject (measured: p about
    1e-13 with the counterfeits' mean rank about 0.35)."""
    folder = adult_quarter_folder(refill=True, intersect_limit=150)
    report = _ks({k: v for k, v in within_group_ranks([folder], np.random.default_rng(1)).items()
                  if k in VALUE_PATTERNS})
    print(report)
    assert report["value frequency (release)"][1] < ALPHA and report["value frequency (folder)"][1] < ALPHA, report


def test_counterfeit_statistics_list_groups_in_id_order(small_streams, adult_folder):
    """The statistics file says how many counterfeits each group has, nothing else: its rows are in group-id
    order (the ids are a random permutation), not in the order the publisher made the groups."""
    for frames, cfs, _, _ in [*small_streams, adult_folder]:
        for cf in cfs:
            ids = [int(g) for g in cf["group"]]
            assert ids == sorted(ids)


def test_the_detector_sees_counterfeits_put_last(small_streams):
    ranks = within_group_ranks(small_streams, np.random.default_rng(0), tamper=True)
    assert _ks(ranks)["row order"][1] < 1e-6


def test_newest_uids_say_no_more_than_the_counterfeit_statistics(small_streams):
    """Pick, in each release with uids, as many rows as it has counterfeits, newest uids first (ties at random):
    the hits exceed a blind pick's, and match what the public per-group counts predict (``sum c_g / n_g`` over
    the picked rows) within 4 standard deviations."""
    rng = np.random.default_rng(2)
    hits = blind = given = var = 0.0
    for frames, cfs, truths, _ in small_streams:
        if "uid" not in frames[0].columns:
            continue
        first: dict[str, int] = {}
        for i, (f, cf, fake) in enumerate(zip(frames, cfs, truths)):
            for u in f["uid"]:
                first.setdefault(u, i)
            total, n = int(pd.to_numeric(cf["counterfeits"]).sum()) if len(cf) else 0, len(f)
            if not 0 < total < n:
                continue
            counts = {int(g): int(c) for g, c in zip(cf["group"], cf["counterfeits"])}
            size = f["group"].astype(int).value_counts()
            noise = rng.random(n)
            chosen = sorted(range(n), key=lambda k: (-first[f["uid"][k]], noise[k]))[:total]
            hits += sum(fake[k] for k in chosen)
            blind += total * total / n
            share = [counts.get(int(f["group"][k]), 0) / size[int(f["group"][k])] for k in chosen]
            given += sum(share)
            var += sum(p * (1 - p) for p in share)
    print(f"newest uids: {hits:.0f} hits, blind {blind:.1f}, given the statistics {given:.1f} "
          f"(sd {math.sqrt(var):.1f})")
    assert abs(hits - given) <= 4 * math.sqrt(var) + 1e-9
