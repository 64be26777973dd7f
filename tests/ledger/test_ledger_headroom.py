"""Headroom (issue 26): ``ledger DIR --headroom`` forecasts the months the sequence still passes its gate from
simulated futures of the churn fitted on the ledger's history, without changing a byte of the ledger; the
utility shares a requirement can name (``release[-1].counterfeit_share``, ``withheld_share``) against a hand
count; the real month the gate first fails lies inside the forecast's 10-90% band."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

from multirelease.cli import main
from multirelease.errors import InputError
from multirelease.expect import parse_expectation
from multirelease.formats.release_csv import read_release_bytes
from multirelease.ledger.headroom import fit_churn, forecast
from multirelease.ledger import operations
from multirelease.ledger.operations import load_spec, make_release, withdraw_release
from multirelease.model.table import Table
from multirelease.pipeline import Line, judge
from multirelease.reports.document import compute_release_metrics
from solver.executor import InlineExecutor

from ledger_data import MODEL, folder_bytes, release, write_snapshots, write_spec

#: m-invariance's spec of tests/ledger_data.py with the custodian's utility requirement "counterfeits at most x"
COUNTERFEITS = "  - linking.l_distinct >= 2\n  - release[-1].counterfeit_share <= {x}\n"
#: the band tests' table: 300 records, each month 25 leave, 30 arrive, 10 diseases change (tests/ledger_data.py)
BAND_TABLE = dict(n=300, leave=25, arrive=30, update=10)


def _ledger(folder, seed: int, months: int, x: float = 0.06, **table):
    """The ledger of the first three months of the small table (seed ``seed``; ``table``: its size and churn,
    :func:`ledger_data.write_snapshots`) under "counterfeits at most ``x``", and the snapshots of ``months`` more
    made by the same process; ``None`` when one of the three months does not pass (no ledger to forecast)."""
    spec = write_spec(folder, expect=COUNTERFEITS.format(x=x))
    snaps = write_snapshots(folder, months=3 + months, seed=seed, **table)
    ledger, rel = folder / "ledger", folder / "releases"
    rel.mkdir()
    for i, s in enumerate(snaps[:3], 1):
        try:
            if make_release(spec, s, ledger, rel / f"release_{i}.csv").verdict != "pass":
                return None
        except InputError:  # m-invariance refuses the month (its own check)
            return None
    return spec, snaps, ledger, rel


@contextmanager
def _fixed_publisher_seed():
    """The publisher seeded by a fixed number instead of the ledger's secret (``secrets``: a new one for every
    ledger): the real months and the forecast are then the same at every run (as in test_ledger_publishers.py)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(operations, "_seed", lambda secret: 26)
        yield


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    with _fixed_publisher_seed():
        return _ledger(tmp_path_factory.mktemp("headroom"), 0, 0)


# ---------------------------------------------------------------------- the metrics, by hand
def test_counterfeit_and_withheld_shares_against_a_hand_count(tmp_path):
    spec = write_spec(tmp_path)
    _, _, schema, _ = load_spec(spec)
    # 5 records in the snapshot; 4 rows published of which 1 counterfeit (group 2): 3 real rows, 2 withheld
    snap = Table.from_frame(schema, pd.DataFrame({"id": [f"r{i}" for i in range(5)], "age": [21, 22, 23, 24, 25],
                                                  "country": ["UK"] * 5,
                                                  "disease": ["flu", "cold", "flu", "hiv", "cold"]}))
    text = b'group,age,country,disease\n1,"[20,24]",Europe,flu\n1,"[20,24]",Europe,cold\n2,"[20,24]",Europe,hiv\n' \
           b'2,"[20,24]",Europe,flu\n'
    rel = read_release_bytes(text, schema, source="hand", counterfeits={2: 1})
    m = compute_release_metrics(rel, snap)
    assert m["counterfeits"] == 1
    assert m["counterfeit_share"] == pytest.approx(1 / 4)
    assert m["withheld_share"] == pytest.approx(2 / 5)
    plain = compute_release_metrics(read_release_bytes(text, schema, source="hand"), snap)
    assert plain["counterfeit_share"] == 0 and plain["withheld_share"] == pytest.approx(1 / 5)
    assert "withheld_share" not in compute_release_metrics(rel, None)
    # release[-1] is the newest release, release[-2] the one before; release[0] names none
    metrics = [plain, m]
    newest, before = (judge([Line(parse_expectation(f"release[{i}].counterfeit_share <= 0.2"), "expect")], {},
                            metrics)[0] for i in (-1, -2))
    assert (newest.holds, newest.value) == (False, pytest.approx(0.25))
    assert (before.holds, before.value) == (True, 0)
    assert parse_expectation("release[0].counterfeit_share <= 0.2").release_index(4) is None
    assert parse_expectation("release[-1].LM <= 0.3").release_index(4) == 4
    assert parse_expectation("release[-5].LM <= 0.3").release_index(4) is None


def test_churn_fitted_against_a_hand_count(tmp_path):
    _, _, schema, _ = load_spec(write_spec(tmp_path))
    ids = [f"r{i}" for i in range(10)]
    a = pd.DataFrame({"id": ids, "age": [30] * 10, "country": ["UK"] * 10, "disease": ["flu"] * 10})
    b = a[~a["id"].isin(["r0", "r1"])].copy()  # 2 of 10 leave
    b.loc[b["id"] == "r2", "disease"] = "cold"  # 1 of the 8 staying changes its disease, 1 its age
    b.loc[b["id"] == "r3", "age"] = 41
    b = pd.concat([b, pd.DataFrame({"id": ["n1", "n2", "n3"], "age": [50, 51, 52], "country": ["US"] * 3,
                                    "disease": ["asthma"] * 3})])  # 3 arrive
    churn = fit_churn([Table.from_frame(schema, a), Table.from_frame(schema, b)], MODEL)
    assert (churn.deletion, churn.insertion) == (pytest.approx(0.2), pytest.approx(0.3))
    assert churn.updates == {"disease": pytest.approx(1 / 8), "age": pytest.approx(1 / 8), "country": 0}
    assert len(churn.arrivals) == 3 and set(churn.arrivals["age"].astype(int)) == {50, 51, 52}
    # a simulated month: arrivals under the prefix only, sensitive updates inside the model and never "no change"
    frame = Table.from_frame(schema, b).frame
    churn.updates["disease"] = 0.5
    nxt = churn.step(frame, np.random.default_rng(3), "sim~1-1-")
    fresh = nxt.index[~nxt.index.isin(frame.index)]
    assert all(i.startswith("sim~1-1-") for i in fresh) and not any(str(i).startswith("sim~") for i in frame.index)
    kept = frame.index.intersection(nxt.index)
    old, new = frame.loc[kept, "disease"], nxt.loc[kept, "disease"]
    moved = old != new
    assert moved.sum() >= 1
    assert all(MODEL.adjacency[MODEL.index(x), MODEL.index(y)] for x, y in zip(old[moved], new[moved]))


# ---------------------------------------------------------------------- read-only, deterministic, aggregate
def test_forecast_leaves_the_ledger_bytes_alone_and_is_deterministic(small, capsys):
    spec, snaps, ledger, rel = small
    before = (folder_bytes(ledger), folder_bytes(rel))
    out, page = ledger.parent / "headroom.json", ledger.parent / "board.html"
    # the board's page re-certifies the files (--html implies --verify) and shows the forecast's plot
    assert main(["ledger", str(ledger), "--headroom", "--months", "2", "--futures", "3", "--seed", "5",
                 "--json", str(out), "--html", str(page)]) == 0
    printed = capsys.readouterr().out
    assert (folder_bytes(ledger), folder_bytes(rel)) == before
    report = json.loads(out.read_text())
    assert report["verdict"] == "pass"
    cli = report["headroom"]
    text = page.read_text()
    assert '<section id="headroom">' in text and "share of futures passing" in text and "3 futures of 2 months" \
        in text and "seed 5" in text
    # the same seed through another executor (this process) gives the same forecast
    api = forecast(ledger, months=2, futures=3, seed=5, executor=InlineExecutor()).to_json()
    assert (folder_bytes(ledger), folder_bytes(rel)) == before
    cli.pop("seconds"), api.pop("seconds")
    assert cli == api
    assert [p["release"] for p in cli["passing"]] == [4, 5] and cli["futures"] == 3 and cli["seed"] == 5
    assert 0 <= cli["headroom"]["low"] <= cli["headroom"]["median"] <= cli["headroom"]["high"] <= 2
    assert cli["churn"]["deletion_rate"] == pytest.approx(20 / 245)  # 10 of 120, 10 of 125
    assert "headroom: month +1 (release 4)" in printed and "seed 5" in printed
    # aggregate only: no identifier of any snapshot in the forecast's lines, its JSON or the page (which names
    # persons by pseudonyms; the verify report's JSON beside the forecast is the custodian's, with identifiers)
    ids = set().union(*(set(pd.read_csv(s)["id"]) for s in snaps))
    lines = "\n".join(line for line in printed.splitlines() if line.startswith("headroom:"))
    words = set(re.split(r"[\s<>\"'(),;:]+", f"{lines}\n{json.dumps(cli)}\n{text}"))
    assert len(lines.splitlines()) == 5
    assert not ids & words


@pytest.mark.parametrize("args, flag", [
    (["--headroom", "--months", "0"], "--months"),
    (["--headroom", "--futures", "-1"], "--futures"),
    (["--headroom", "--seed", "-3"], "--seed"),
    (["--months", "3"], "--months"),
    (["--headroom", "--withdraw", "3", "--reason", "x"], "--headroom"),
])
def test_bad_requests_exit_2_with_one_line(small, capsys, args, flag):
    ledger = small[2]
    assert main(["ledger", str(ledger), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and flag in err[0] and "Traceback" not in err[0]


def test_a_ledger_too_short_or_empty_exits_2(tmp_path, capsys):
    spec = write_spec(tmp_path)
    snap = write_snapshots(tmp_path, months=1)[0]
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    assert release(spec, snap, ledger, rel / "release_1.csv") == 0
    capsys.readouterr()
    assert main(["ledger", str(ledger), "--headroom"]) == 2
    assert "two months" in capsys.readouterr().err
    withdraw_release(ledger, 1, "never sent")
    assert main(["ledger", str(ledger), "--headroom"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--headroom" in err[0] and "no release" in err[0]


# ---------------------------------------------------------------------- the band against the real months
def _real_headroom(spec, snaps, ledger, rel) -> int:
    """Months 4.. released through the ledger until the gate first fails (FAIL, or the publisher refusing the
    month): the months that passed."""
    for k, s in enumerate(snaps[3:], 1):
        try:
            ok = make_release(spec, s, ledger, rel / f"release_{k + 3}.csv").verdict == "pass"
        except InputError:
            ok = False
        if not ok:
            return k - 1
    return len(snaps) - 3


def _band(folder, seed: int, months: int, futures: int):
    """``(low, high, real months of headroom, forecast)`` on the band tests' table under "counterfeits at most
    3%"; ``None`` when the seed's first three months do not pass."""
    with _fixed_publisher_seed():
        made = _ledger(folder, seed, months, x=0.03, **BAND_TABLE)
        if made is None:
            return None
        h = forecast(made[2], months=months, futures=futures, seed=0)
        return h.low, h.high, _real_headroom(*made), h


def test_the_real_first_failure_lies_inside_the_band(tmp_path):
    # seed 3: the real month 4 fails at once (4.5% counterfeits); the forecast's band is 0 to 5 of 8 months,
    # so a forecast of "never within 8 months" (or of a late failure) would be outside it
    low, high, real, h = _band(tmp_path, 3, 8, 10)
    assert low <= real <= high, (low, high, real, h.headroom)
    assert high < 8 and h.passing[-1] < 0.5
    assert h.first_failing[0][0] == "release[-1].counterfeit_share <= 0.03"


@pytest.mark.slow  # twelve ledgers, 10 futures x 8 months each: .ci/run runs it, the README's quick run does not
def test_the_real_first_failure_lies_inside_the_band_on_several_seeds(tmp_path):
    # a 10-90% band misses about one real sequence in five by construction: the real first failure must lie
    # inside it on at least 80% of the seeds whose first three months pass, and the bands must say something
    # (not "anything from 0 to 8 months") on several of them.  Measured: inside on 9 of the 10 ledgers (seeds 0
    # and 2 fail one of their first three months); seed 4 outside (band 1-6 months, the real sequence passed all
    # 8); informative bands on seeds 3 (0-5), 4 (1-6), 7 (0-7) and 8 (1-8)
    found = []
    for seed in range(12):
        (tmp_path / str(seed)).mkdir()
        band = _band(tmp_path / str(seed), seed, 8, 10)
        if band is not None:
            found.append(band)
    inside = [low <= real <= high for low, high, real, _ in found]
    assert len(found) >= 8 and sum(inside) >= 0.8 * len(found), [b[:3] for b in found]
    assert sum(1 for low, high, _, _ in found if (low, high) != (0, 8)) >= 3, [b[:3] for b in found]

