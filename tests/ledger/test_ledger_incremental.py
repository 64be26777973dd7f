"""The ledger's gate extended one release at a time (multirelease/ledger/gate.py, attacks/incremental.py) gives
the verdict, figures, witnesses and release metrics of a from-scratch ``certify`` of the same files, month by
month, without reading an earlier release again; a published file that changed stops the next release."""
from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multirelease import pipeline
from multirelease.errors import InputError
from multirelease.ledger.store import DB_NAME, Ledger
from multirelease.ledger.operations import ledger_certify_plan, make_release
from ledger_data import M_INVARIANCE, folder_bytes, release, write_snapshots, write_spec

BPG = dict(publisher="bpg, k: 3, l: 2", sensitive=", record_tracking: true, sensitive: transitions",
           transitions=M_INVARIANCE["transitions"],
           attacks="  - intersection: {k: 3, l: 2}\n  - linking\n  - update_graph: {linkage: uid}\n",
           expect="  - linking.l_distinct >= 2\n")
#: persistent values (no updates in its streams): the possible-worlds gate carries each month's linkability into
#: the next (issue 24); every figure a from-scratch certify's, counted worlds included
WORLDS = dict(publisher="mondrian, k: 4, l: 2", sensitive=", sensitive: persistent", transitions="",
              attacks="  - linking: {l: 2}\n  - possible_worlds: {counting: always}\n",
              expect="  - possible_worlds.min_linkability >= 1\nwaive: [possible_worlds.disclosed]\n")
SPECS = {"m_invariance": M_INVARIANCE, "bpg": BPG, "worlds": WORLDS}


def _doc(run) -> str:
    """Everything a gate decides on: the verdict, each requirement's value and interval, every attack's
    result (summary, bounds, exactness, witnesses, per-release rows, notes) - except how the possible-worlds
    engine split its problem (``blocks``, and the blocks a witness lists): the gate, which carries what earlier
    months proved impossible, prunes more and can split finer than a from-scratch run (the metric's
    description says so)."""
    judged = [(j.expectation.text, j.value, j.holds, j.lower, j.upper) for j in run.judged]
    results = {name: res.to_json() for name, res in run.results.items()}
    worlds = results.get("possible_worlds")
    if worlds is not None:
        worlds["summary"].pop("blocks", None)
        for doc in worlds.get("worst", {}).values():
            if isinstance(doc, dict):
                doc.pop("blocks", None)
    return json.dumps({"verdict": run.verdict, "judged": judged, "results": results}, sort_keys=True, default=str)


def _same_metrics(a: list, b: list) -> bool:
    """Release metrics kept by the ledger against those of the files read back.  EM may differ in the last
    bit: the gate measures the new release as published in memory, certify as read from its file (the sum
    over classes in another order) - as ``run`` and ``certify`` always have; every other figure is equal."""
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(math.isclose(x[k], y[k], rel_tol=1e-12, abs_tol=0) or x[k] == y[k]
                                     or (math.isnan(x[k]) and math.isnan(y[k])) for k in x) for x, y in zip(a, b))


def _stream(folder: Path, which: str, snaps: list[Path]):
    """Release the snapshots one call at a time until one does not pass (a gate's FAIL, or a publisher's
    refusal); returns the outcomes of the months that passed and how many earlier releases each call read."""
    spec = write_spec(folder, **SPECS[which])
    ledger, rel = folder / "ledger", folder / "releases"
    rel.mkdir()
    outcomes, reads = [], []
    real = Ledger.release
    for i, s in enumerate(snaps, 1):
        with mock.patch.object(Ledger, "release", autospec=True, side_effect=real) as spy:
            try:
                out = make_release(spec, s, ledger, rel / f"release_{i}.csv")
            except InputError:  # the publisher refused the month (its own check; the ledger's secret seeds it)
                break
        reads.append(spy.call_count)
        if out.verdict != "pass":
            break
        outcomes.append(out)
    return ledger, rel, outcomes, reads


def _from_scratch(ledger: Path, rel: Path, n: int):
    files = [rel / f"release_{i}.csv" for i in range(1, n + 1)]
    sc, problems = ledger_certify_plan(ledger, files=files)
    assert not problems
    return pipeline.run_scenario(sc)


# each example publishes and certifies up to five small releases through the ledger and certifies every prefix
# again from scratch (about 1-3 s): a few examples cover both publishers and every kind of month
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(sorted(SPECS)), months=st.integers(3, 5), n=st.integers(40, 80),
       leave=st.integers(0, 8), arrive=st.integers(4, 14), update=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_incremental_gate_equals_a_from_scratch_certify(tmp_path_factory, which, months, n, leave, arrive, update,
                                                        seed):
    folder = tmp_path_factory.mktemp("stream")
    update = 0 if which == "worlds" else update
    snaps = write_snapshots(folder, months=months, n=n, leave=leave, arrive=arrive, update=update, seed=seed)
    ledger, rel, outcomes, reads = _stream(folder, which, snaps)
    assert outcomes, "the first release of a small stream passes"
    # from the second month on, no earlier release is read: the kept states are extended
    assert reads[:len(outcomes)] == [0] * len(outcomes)
    for i, out in enumerate(outcomes, 1):
        full = _from_scratch(ledger, rel, i)
        assert _doc(out.run) == _doc(full), f"month {i}"
        assert _same_metrics(out.run.release_metrics, full.release_metrics), f"month {i}"


@pytest.mark.parametrize("which", ["bpg", "worlds"])
def test_states_not_kept_are_folded_in_again(tmp_path, which):
    """A ledger whose kept states are gone (an older version's, or removed) reads the earlier releases once,
    folds them in, and keeps the states again: the same figures, and the next month reads nothing.  The
    possible-worlds attack folds the earlier releases without attacking their prefixes (``fold``)."""
    snaps = write_snapshots(tmp_path, months=4, n=80, leave=6, arrive=10, update=0 if which == "worlds" else 3,
                            seed=7)
    spec = write_spec(tmp_path, **SPECS[which])
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    for i in (1, 2):
        assert release(spec, snaps[i - 1], ledger, rel / f"release_{i}.csv") == 0
    with sqlite3.connect(ledger / DB_NAME) as con:
        con.execute("DELETE FROM gate_summary")
        con.execute("DELETE FROM release_metrics")
    real = Ledger.release
    reads = []
    outs = []
    for i in (3, 4):
        with mock.patch.object(Ledger, "release", autospec=True, side_effect=real) as spy:
            outs.append(make_release(spec, snaps[i - 1], ledger, rel / f"release_{i}.csv"))
        reads.append(spy.call_count)
        assert outs[-1].verdict == "pass"
    assert reads == [2, 0]
    for i, out in zip((3, 4), outs):
        full = _from_scratch(ledger, rel, i)
        assert _doc(out.run) == _doc(full) and _same_metrics(out.run.release_metrics, full.release_metrics)


def test_a_changed_published_file_stops_the_next_release(tmp_path, capsys):
    """The gate extends states kept for the files as published: a published file that no longer has its
    recorded SHA-256 is bad input (exit 2, one line naming it), and nothing is written."""
    snaps = write_snapshots(tmp_path, months=3, n=80, update=0, seed=3)  # no update: m-invariance never refuses
    spec = write_spec(tmp_path)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    for i in (1, 2):
        assert release(spec, snaps[i - 1], ledger, rel / f"release_{i}.csv") == 0
    changed = rel / "release_1.csv"
    text = changed.read_text()
    changed.write_text(text.replace("flu", "cold", 1) if "flu" in text else text + "\n")
    before = folder_bytes(ledger)
    capsys.readouterr()
    assert release(spec, snaps[2], ledger, rel / "release_3.csv") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "release 1 changed since it was published" in err[0] and "release_1.csv" in err[0]
    assert folder_bytes(ledger) == before and not (rel / "release_3.csv").exists()


@settings(max_examples=50, deadline=None)  # numpy on at most 60 x 6 arrays: milliseconds per example
@given(data=st.data(), targets=st.integers(1, 60), releases=st.integers(1, 6))
def test_forward_sweep_goes_on_from_kept_layers(data, targets, releases):
    """The update graph's forward sums (Li & Zhou eqs. 1-2) continued from the layers kept for the first
    releases are the sweep from the first release, bit for bit (absences of several releases included)."""
    import numpy as np

    from attacks.update_graph.attack import forward_pass
    from multirelease.model.transitions import TransitionModel

    values = ["a", "b", "c", "d", "e", "f"]
    model = TransitionModel.from_candidates(values, {v: values[max(0, i - 1):i + 2] for i, v in enumerate(values)})
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    present = [rng.random(targets) < 0.7 for _ in range(releases)]
    weights = []
    for p in present:
        w = rng.random((targets, len(values))) * (rng.random((targets, len(values))) < 0.5)
        w[~p] = 0.0
        w[p & (w.sum(axis=1) == 0), 0] = 1.0
        weights.append(w / np.maximum(w.sum(axis=1, keepdims=True), 1e-300))
    full = forward_pass(weights, present, model)
    k = data.draw(st.integers(0, releases), label="kept")
    going_on = forward_pass(weights, present, model, prior=(full.alpha[:k], full.fwd[:k]))
    assert all(np.array_equal(x, y) for x, y in zip(full.alpha + full.fwd, going_on.alpha + going_on.fwd))


@settings(max_examples=100, deadline=None)  # small sparse matrices: microseconds each
@given(rows=st.lists(st.sets(st.integers(0, 70_000), max_size=30), max_size=20))
def test_membership_rows_pack_and_unpack(rows):
    """A release's kept membership (CSR column indices, ascending per row, gaps in 16 or 32 bits) reads back
    as it was, empty rows and indices above 2^16 included."""
    import numpy as np

    from attacks.incremental import pack_rows, unpack_rows

    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.array([i for r in rows for i in sorted(r)], dtype=np.int32)
    assert np.array_equal(unpack_rows(indptr, pack_rows(indptr, indices)), indices)
