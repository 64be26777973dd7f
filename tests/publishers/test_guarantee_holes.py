"""Two holes the release ledger's gate found (issue 13, item 1): a publisher whose own check passed while its
declared guarantee, run by the pipeline over the *whole* sequence, failed.  Each is kept as an explicit
case: the publisher now refuses or repairs, and what it publishes passes the pipeline's attack over every
release so far.

1. **global_guarantee, persistent values** (Wong et al. 001; the gate's witness ``idx00071q``): on two months
   of a small table (tests/ledger_data.py's data, 60 records then 12 arrivals) Mondrian's release 2 passes
   the transient-value checks (release alone, and the exact survival product of section III.A) but the
   default adversary, who takes values as persistent, intersects the two releases and links a new individual
   to one value: ``possible_worlds.min_linkability = 1 < 2``.
2. **m_invariance, updates outside the public update model** (Li & Zhou Lemma 3; the ledger's data before
   bfba1de: five records a month redraw their disease uniformly): the own check renamed a record whose value
   changed (a new lifespan) and looked at the last two releases; the gate's adversary links versions by
   quasi-identifiers under the window model, where ``asthma -> cancer`` has no edge, and finds
   ``update_graph.vulnerable_values = 1`` on release 2 (record ``idx00082q``, seed 3).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from attacks import ATTACKS
from multirelease.model.schema import Schema
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.table import Table
from multirelease.errors import InputError
from multirelease.model.transitions import load_transitions
from publishers.global_guarantee import GlobalGuarantee
from publishers.m_invariance.invariance import MInvariance

sys.path.insert(0, str(Path(__file__).parents[1]))
from ledger_data import SPEC, write_snapshots  # noqa: E402  (the ledger engineer's data)


def _schema(tmp_path: Path) -> Schema:
    doc = yaml.safe_load(SPEC.format(publisher="x", sensitive="", transitions="", attacks="  - linking\n",
                                     expect="  - linking.k >= 1\n"))
    return Schema.from_mapping(doc["schema"], base=tmp_path)


def _whole_sequence(releases, snapshots, mode: str):
    seq = ReleaseSequence()
    for r, s in zip(releases, snapshots):
        seq.append(r, None, s)
    return ATTACKS["possible_worlds"]().run(seq.view(Adversary(sensitive=mode)))


def _publish(snapshots, sensitive="persistent"):
    pub = GlobalGuarantee(l=2, sensitive=sensitive)  # "free": the publisher as it was (transient values only)
    out, state = [], None
    for i, snap in enumerate(snapshots, 1):
        res = pub.publish(snap, state=state, rng=np.random.default_rng([0, i]))
        out.append(res.release)
        state = res.state
    return out, state


@pytest.fixture(scope="module")
def ledger_months(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gg")
    schema = _schema(tmp)
    paths = write_snapshots(tmp, months=2, n=60, leave=0, arrive=12, update=0)
    return [Table.from_frame(schema, pd.read_csv(p, dtype=str)) for p in paths]


def test_global_guarantee_hole_is_real_without_the_whole_sequence_check(ledger_months):
    """The counterexample: the release 2 the old check let through breaks l-linkability for the persistent
    adversary over both releases (a new individual, linked to one value), and holds for the transient one."""
    releases, state = _publish(ledger_months, sensitive="free")
    assert state["history"] is None
    persistent = _whole_sequence(releases, ledger_months, "persistent")
    assert persistent.exact and persistent.summary["min_linkability"] == 1
    who = persistent.witness("min_linkability")["individual"]
    assert who not in set(ledger_months[0].ids) and who in set(ledger_months[1].ids)
    free = _whole_sequence(releases, ledger_months, "free")
    assert free.summary["min_linkability"] >= 2 and free.summary["max_breach"] <= 0.5


def test_global_guarantee_now_repairs_and_keeps_its_guarantee_over_the_sequence(ledger_months):
    releases, state = _publish(ledger_months)
    assert len(state["history"]) == 2
    for mode in ("persistent", "free"):
        res = _whole_sequence(releases, ledger_months, mode)
        lo, _ = res.interval("min_linkability")
        _, hi = res.interval("max_breach")
        assert lo >= 2 and hi <= 0.5, (mode, res.summary)


# ---------------------------------------------------------------------- 2. m_invariance
DISEASES = ["flu", "cold", "cancer", "hiv", "asthma", "gastritis"]
WINDOW = {"diameter": 2, "shape": "window", "values": DISEASES}


def out_of_model_months(folder: Path, seed: int) -> list[Path]:
    """tests/ledger_data.py's months as they were before bfba1de: 120 records, then each month 10 leave,
    15 arrive and 5 redraw their disease uniformly (outside the window model)."""
    rng = np.random.default_rng(seed)
    countries = ["UK", "France", "Spain", "US", "Canada", "Mexico"]
    person = lambda: {"age": int(rng.integers(20, 60)), "country": countries[rng.integers(6)],  # noqa: E731
                      "disease": DISEASES[rng.integers(6)]}
    rows = {f"idx{i:05d}q": person() for i in range(1, 121)}
    next_id, paths = 121, []
    for month in (1, 2, 3):
        if month > 1:
            for rid in rng.choice(sorted(rows), 10, replace=False):
                del rows[rid]
            for rid in rng.choice(sorted(rows), 5, replace=False):
                rows[rid] = {**rows[rid], "disease": DISEASES[rng.integers(6)]}
            for _ in range(15):
                rows[f"idx{next_id:05d}q"] = person()
                next_id += 1
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "id"
        paths.append(folder / f"snapshot_{month}.csv")
        frame.to_csv(paths[-1])
    return paths


def _update_graph(releases, snapshots, model):
    seq = ReleaseSequence()
    for r, s in zip(releases, snapshots):
        seq.append(r, None, s)
    return ATTACKS["update_graph"](linkage="population").run(seq.view(Adversary(sensitive="transitions"), model))


@pytest.mark.parametrize("seed,rng_seed,bad_release,who", [(3, 0, 2, "idx00082q"), (4, 0, 3, "idx00071q")])
def test_m_invariance_out_of_model_update(tmp_path, seed, rng_seed, bad_release, who):
    """Without the public model the publisher publishes a release the gate's attack over the sequence finds a
    vulnerable value in; with the model bound (as the pipeline binds it) it refuses exactly that release,
    naming the record, and every release it did publish passes the attack over the whole sequence."""
    model = load_transitions(WINDOW)
    schema = _schema(tmp_path)
    snaps = [Table.from_frame(schema, pd.read_csv(p, dtype=str)) for p in out_of_model_months(tmp_path, seed)]
    blind, bound = MInvariance(m=2), MInvariance(m=2)
    bound.bind_transitions(model)
    s_blind = s_bound = None
    published = []
    for i, snap in enumerate(snaps, 1):
        rb = blind.publish(snap, state=s_blind, rng=np.random.default_rng([rng_seed, i]))
        s_blind = rb.state
        found = _update_graph([*published, rb.release], snaps[:i], model).summary["vulnerable_values"]
        assert (found > 0) == (i == bad_release)  # the hole: the old check let this release through
        if i == bad_release:
            with pytest.raises(InputError, match=f"update-graph attack over all {i} releases.*'{who}'"):
                bound.publish(snap, state=s_bound, rng=np.random.default_rng([rng_seed, i]))
            return
        rr = bound.publish(snap, state=s_bound, rng=np.random.default_rng([rng_seed, i]))
        assert rr.release.to_frame().equals(rb.release.to_frame())  # same release when it holds
        s_bound = rr.state
        published.append(rr.release)
        assert _update_graph(published, snaps[:i], model).summary["vulnerable_values"] == 0
