"""Two holes the release ledger's gate found (issue 13, item 1): a publisher whose own check passed while its
declared guarantee, run by the pipeline over the *whole* sequence, failed.  Each is kept as an explicit
case: the publisher now refuses or repairs, and what it publishes passes the pipeline's attack over every
release so far.

1. **global_guarantee, persistent values** (Wong et al. 001; the gate's witness ``idx00071q``): on two months
   of a small table (tests/test_ledger.py's data, 60 records then 12 arrivals) Mondrian's release 2 passes
   the transient-value checks (release alone, and the exact survival product of section III.A) but the
   default adversary, who takes values as persistent, intersects the two releases and links a new individual
   to one value: ``possible_worlds.min_linkability = 1 < 2``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from attacks import ATTACKS
from multirelease.schema import Schema
from multirelease.sequence import Adversary, ReleaseSequence
from multirelease.table import Table
from publishers.global_guarantee import GlobalGuarantee

sys.path.insert(0, str(Path(__file__).parent))
from test_ledger import SPEC, write_snapshots  # noqa: E402  (the ledger engineer's data)


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
