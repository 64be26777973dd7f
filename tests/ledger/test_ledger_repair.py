"""Repair on FAIL (issue 29): ``release --repair`` proposes the cheapest changed release of a failing month that
passes the gate, writes nothing; ``--repair --accept`` writes exactly that release (the same SHA-256), recorded
with a ``repair`` event; the files then certify PASS from scratch against the ledger's snapshots, and the next
month runs normally.  A kill during ``--accept`` loses nothing."""
from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multirelease.cli import main
from multirelease.ledger.store import Ledger

from ledger_data import folder_bytes, release, write_snapshots, write_spec

# the small monthly table, Mondrian k = 3, l = 2; the update-graph attack pins a value in month 2 (seed 4)
MONDRIAN = dict(publisher="mondrian, k: 3, l: 2", sensitive=", sensitive: free",
                attacks="  - linking\n  - possible_worlds\n  - update_graph: {linkage: population}\n",
                expect="  - linking.k >= 3\n")


@pytest.fixture()
def failing(tmp_path):
    snaps = write_snapshots(tmp_path, months=3, seed=4)
    spec = write_spec(tmp_path, **MONDRIAN)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    assert release(spec, snaps[0], ledger, rel / "release_1.csv") == 0
    assert release(spec, snaps[1], ledger, rel / "release_2.csv") == 1  # the month as given FAILs
    return spec, snaps, ledger, rel


def _sha(text: str) -> str:
    return re.search(r"sha256 ([0-9a-f]{64})", text).group(1)


def test_repair_proposes_then_accept_writes_exactly_it(failing, capsys):
    spec, snaps, ledger, rel = failing
    before = folder_bytes(ledger)
    capsys.readouterr()
    args = [str(spec), str(snaps[1]), "--ledger", str(ledger), "--out", str(rel / "release_2.csv"), "-q"]
    assert main(["release", *args, "--repair"]) == 0
    out = capsys.readouterr()
    assert "requirement 'update_graph.vulnerable_values == 0' failed as given" in out.err
    # merging two classes the witnesses name with their nearest costs less than withholding their two records
    # (LM 0.0993 -> 0.1065 against 0.1137 with the two at loss 1): CP-SAT's choice, then gated
    assert "repair: proposal 2 class merges: records withheld 0" in out.out and "gate PASS" in out.out
    proposed = _sha(out.out.splitlines()[-1])
    # nothing written until accepted; the proposal is the same every time
    assert folder_bytes(ledger) == before and not (rel / "release_2.csv").exists()
    assert main(["release", *args, "--repair"]) == 0 and _sha(capsys.readouterr().out.splitlines()[-1]) == proposed
    gate = ledger.parent / "gate.json"
    assert main(["release", *args, "--repair", "--json", str(gate)]) == 0
    report = json.loads(gate.read_text())["repair"]
    assert report["proposal"]["sha256"] == proposed and report["proposal"]["withheld"] == 0
    assert report["proposal"]["merged"] == 2
    assert report["as_given"]["failed"] == ["update_graph.vulnerable_values == 0"]
    assert [t["verdict"] for t in report["tried"]][-1] == "pass" and folder_bytes(ledger) == before
    page = ledger.parent / "repair.html"
    assert main(["release", *args, "--repair", "--html", str(page)]) == 0
    text = page.read_text()
    assert "Repair: the month as given FAILED; the verdict below is the proposal's, not written until accepted" \
        in text and proposed in text and 'aria-label="loss before and after the repair"' in text
    assert "idx0" not in text and "P-" in text and folder_bytes(ledger) == before  # persons by pseudonym only
    assert main(["release", *args, "--accept"]) == 2  # --accept accepts a repair
    capsys.readouterr()
    assert main(["release", *args, "--repair", "--accept"]) == 0
    out = capsys.readouterr().out
    assert "PASS (the repair accepted)" in out and _sha(out.splitlines()[-1]) == proposed
    import hashlib

    assert hashlib.sha256((rel / "release_2.csv").read_bytes()).hexdigest() == proposed
    # the history names the repair, its cost and the line it answered, persons by pseudonym only
    assert main(["ledger", str(ledger)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("2 ") and "snapshot 125 rows" in lines[1]  # nothing withheld
    assert lines[2].startswith("2 ") and "repair: 2 class merges (of 125 records)" in lines[2]
    assert "answered update_graph.vulnerable_values == 0" in lines[2] and "idx" not in lines[2]
    # the ledger's page shows the accepted repair: the failing line, what changed, the loss before and after
    board = ledger.parent / "board.html"
    assert main(["ledger", str(ledger), "--html", str(board), "-q"]) == 0
    text = board.read_text()
    section = text[text.index('id="ledger-repairs"'):]
    assert "Repairs accepted (1)" in section and "Release 2" in section and "2 class merges" in section
    assert "update_graph.vulnerable_values == 0" in section and "loss before and after the repair" in section
    assert "LM 0.1065 (as given 0.0993)" in section
    # the files certify PASS from scratch with the ledger's snapshots (not the incremental gate)
    files = [str(rel / f"release_{i}.csv") for i in (1, 2)]
    assert main(["certify", str(spec), *files, "--ledger", str(ledger), "-q"]) == 0
    # the next month runs normally: gated against both releases (here it fails as given and is repaired in turn)
    assert release(spec, snaps[2], ledger, rel / "release_3.csv") == 1
    assert release(spec, snaps[2], ledger, rel / "release_3.csv", "--repair", "--accept") == 0
    with Ledger(ledger, write=False) as led:
        assert [r.n for r in led.history()] == [1, 2, 3]


def test_repair_from_python_shows_the_search_and_its_page(failing, capsys):
    """``multirelease.ledger_publish(..., repair=True)`` (issue 29, item 3): the same proposal as the CLI (its
    SHA-256), the search in ``report["repair"]`` as ``--json`` writes it, the repair section with the loss before
    and after in the result's HTML page (a notebook's view); nothing written until ``accept=True``, which writes
    exactly that file."""
    import hashlib

    import multirelease

    spec, snaps, ledger, rel = failing
    before = folder_bytes(ledger)
    out_file = rel / "release_2.csv"
    args = [str(spec), str(snaps[1]), "--ledger", str(ledger), "--out", str(out_file), "-q", "--repair"]
    gate = ledger.parent / "gate.json"
    assert main(["release", *args, "--json", str(gate)]) == 0
    cli = json.loads(gate.read_text())["repair"]
    res = multirelease.ledger_publish(spec, snaps[1], ledger=ledger, out=out_file, repair=True)
    assert res.exit_code == 0 and res.verdict == "pass" and not out_file.exists() and folder_bytes(ledger) == before
    rep = res.report["repair"]
    assert rep["proposal"]["sha256"] == cli["proposal"]["sha256"] and rep["proposal"]["sha256"] in res.message
    assert rep["as_given"] == cli["as_given"] and [t["changes"] for t in rep["tried"]] == \
        [t["changes"] for t in cli["tried"]] and rep["accepted"] is False
    page = res._repr_html_()
    assert 'id="repair"' in page and 'aria-label="loss before and after the repair"' in page
    assert rep["proposal"]["sha256"] in page and "not written until accepted" in page
    done = multirelease.ledger_publish(spec, snaps[1], ledger=ledger, out=out_file, repair=True, accept=True)
    assert done.exit_code == 0 and done.report["repair"]["accepted"] is True
    assert hashlib.sha256(out_file.read_bytes()).hexdigest() == cli["proposal"]["sha256"]


def test_m_invariance_month_missing_a_utility_requirement_is_repaired(tmp_path, capsys, monkeypatch):
    """m-invariance and a requirement ``release[2].LM <= x`` that month 2 misses (x: 92% of the month's LM under
    this ledger's publisher seed): the costliest records are withheld (m-invariance publishes them as departures
    and takes them back next month as arrivals); the accepted release meets x, certifies PASS from scratch, and
    month 3 goes out normally."""
    # no value changes: with them, m-invariance's own check refuses month 3 of this table for about one secret in
    # eight, repair or not (measured on 24 ledgers; the update-graph attack pins a record that changed value).
    # Without them it still refuses month 3 after the repair for about one secret in 60 (a withheld record back
    # as an arrival is pinned): the publisher is seeded by a fixed number here instead of the ledger's secret
    from multirelease.ledger import operations

    monkeypatch.setattr(operations, "_seed", lambda secret: 26)
    snaps = write_snapshots(tmp_path, months=3, seed=1, update=0)
    first = write_spec(tmp_path)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    assert release(first, snaps[0], ledger, rel / "release_1.csv") == 0
    gate = tmp_path / "gate.json"
    assert release(first, snaps[1], ledger, rel / "release_2.csv", "--dry-run", "--json", str(gate)) == 0
    lm = json.loads(gate.read_text())["releases"][-1]["metrics"]["LM"]
    x = math.floor(lm * 0.92 * 10_000) / 10_000
    spec = write_spec(tmp_path, "utility.yaml", expect=f"  - linking.l_distinct >= 2\n  - release[2].LM <= {x}\n")
    amend = ("--amend", "the board asks for less loss")
    assert release(spec, snaps[1], ledger, rel / "release_2.csv", *amend) == 1
    capsys.readouterr()
    assert release(spec, snaps[1], ledger, rel / "release_2.csv", *amend, "--repair", "--accept") == 0
    out = capsys.readouterr()
    assert f"requirement 'release[2].LM <= {x}' failed as given: {lm}" in out.err
    proposal = next(line for line in out.out.splitlines() if line.startswith("repair: proposal"))
    withheld, after = re.search(r"records withheld (\d+); LM [0-9.]+ -> ([0-9.]+)", proposal).groups()
    assert int(withheld) > 0 and float(after) <= x
    assert release(spec, snaps[2], ledger, rel / "release_3.csv") == 0
    import pandas as pd

    with Ledger(ledger, write=False) as led:
        assert [r.n for r in led.history()] == [1, 2, 3]
        kept = [set(pd.read_csv(io.BytesIO(led.blob(n, "snapshot")), dtype=str)["id"]) for n in (2, 3)]
    given = [set(pd.read_csv(f, dtype=str)["id"]) for f in snaps[1:]]
    gone = given[0] - kept[0]  # the ledger keeps the table that was published
    assert len(gone) == int(withheld) and gone & given[1]
    # those still in month 3's population are published there (as arrivals): month 3 withholds no one
    assert kept[1] == given[1]
    files = [str(rel / f"release_{i}.csv") for i in (1, 2, 3)]
    assert main(["certify", str(spec), *files, "--ledger", str(ledger), "-q"]) == 0


def test_a_first_release_is_not_repaired(tmp_path, capsys):
    """Before its first release a ledger has no secret yet (it is kept with that release), so a proposal could
    not be made again the same by --accept: refused, exit 2, nothing made."""
    snaps = write_snapshots(tmp_path, months=1)
    spec = write_spec(tmp_path, **{**MONDRIAN, "expect": "  - linking.k >= 1000\n"})
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    assert release(spec, snaps[0], ledger, rel / "release_1.csv", "--repair") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a first release cannot be repaired" in err[0]
    assert not ledger.exists() and not any(rel.iterdir())


def test_a_publisher_whose_state_the_ledger_does_not_hold_is_not_repaired(tmp_path, capsys):
    snaps = write_snapshots(tmp_path, months=2, n=60, leave=0, arrive=12, update=0)
    bpg = dict(publisher="bpg, k: 3, l: 2", sensitive="", transitions="", attacks="  - linking\n")
    spec = write_spec(tmp_path, **bpg, expect="  - linking.k >= 3\n")
    strict = write_spec(tmp_path, "strict.yaml", **bpg, expect="  - linking.k >= 1000\n")  # BPG cannot meet it
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    assert release(spec, snaps[0], ledger, rel / "release_1.csv") == 0
    before = folder_bytes(ledger)
    capsys.readouterr()
    assert release(strict, snaps[1], ledger, rel / "release_2.csv", "--amend", "k", "--repair") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bpg continues its state outside the ledger's copy (its database)" in err[0]
    assert folder_bytes(ledger) == before and not (rel / "release_2.csv").exists()


# before anything is written (the re-run searches again and finds the same proposal) and between the commit and
# the rename (the re-run installs the file); the other points are the ordinary release's (test_ledger_faults.py)
@pytest.mark.slow  # processes killed and re-run: .ci/run runs it, the README's quick run does not
@pytest.mark.parametrize("point", ("gated", "committed"))
def test_kill_during_accept_loses_nothing(failing, point):
    spec, snaps, ledger, rel = failing
    cmd = [sys.executable, "-m", "multirelease.cli", "release", str(spec), str(snaps[1]), "--ledger", str(ledger),
           "--out", str(rel / "release_2.csv"), "-q", "--repair"]
    proposed = _sha(subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[-1])
    killed = subprocess.run(cmd + ["--accept"], capture_output=True, env={**os.environ,
                                                                         "MULTIRELEASE_FAULT_POINT": point})
    assert killed.returncode == -signal.SIGKILL
    again = subprocess.run(cmd + ["--accept"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    import hashlib

    assert hashlib.sha256((rel / "release_2.csv").read_bytes()).hexdigest() == proposed
    assert sorted(p.name for p in rel.iterdir()) == ["release_1.csv", "release_2.csv"]
    with Ledger(ledger, write=False) as led:
        assert [r.n for r in led.history()] == [1, 2] and led.history()[-1].sha256 == proposed
        assert [(e.n, e.kind) for e in led.events()] == [(2, "repair")]


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000), k=st.sampled_from([2, 3]))
def test_an_accepted_repair_certifies_pass_from_scratch(tmp_path_factory, seed, k):
    """Whatever month the gate refuses, a repair it accepts is a sequence that ``certify --ledger`` (every file
    read back, every attack run on the whole sequence, not the ledger's incremental gate) judges PASS; a month
    the gate passes is written as it is."""
    folder = tmp_path_factory.mktemp("repair")
    snaps = write_snapshots(folder, months=2, seed=seed)
    spec = write_spec(folder, **{**MONDRIAN, "publisher": f"mondrian, k: {k}, l: 2",
                                 "expect": f"  - linking.k >= {k}\n"})
    ledger, rel = folder / "ledger", folder / "releases"
    rel.mkdir()
    assert release(spec, snaps[0], ledger, rel / "release_1.csv") == 0
    code = release(spec, snaps[1], ledger, rel / "release_2.csv", "--repair", "--accept")
    assert code in (0, 1)  # 1: no candidate passed, nothing written
    files = sorted(str(f) for f in rel.glob("release_*.csv"))
    assert len(files) == (2 if code == 0 else 1)
    assert main(["certify", str(spec), *files, "--ledger", str(ledger), "-q"]) == 0


def _square_or_refuse(x):
    from multirelease.errors import InputError

    if x < 0:
        raise InputError(f"refused {x}")
    return {"square": x * x}


def test_side_by_side_gives_what_serially_gives_in_the_order_given():
    """The repair's first candidates are published in forked processes (one per core): the results come back in
    the order of the items, rebuilt here, a refusal in place of its result - as :func:`serially` gives them."""
    from multirelease.errors import InputError
    from multirelease.ledger.operations import _side_by_side
    from multirelease.ledger.repair import serially

    items = [(3,), (-1,), (5,), (0,)]
    got = _side_by_side(_square_or_refuse, items, lambda r: r["square"], lambda item, sq: {"square": sq})
    want = serially(_square_or_refuse)(items)
    assert [g if isinstance(g, dict) else str(g) for g in got] == \
        [w if isinstance(w, dict) else str(w) for w in want]
    assert [g["square"] for g in got if not isinstance(g, InputError)] == [9, 25, 0]
    assert isinstance(got[1], InputError) and "refused -1" in str(got[1])
