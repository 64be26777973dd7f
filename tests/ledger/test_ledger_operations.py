"""The custodian's month, hardened (issue 25): bad months refused before anything runs, every spec change on
record, a withdrawal of a release that never went out, output paths checked first, files that moved."""
from __future__ import annotations

import json
import shutil

import pandas as pd

from multirelease.cli import main

from ledger_data import folder_bytes, release, three_months, write_snapshots, write_spec


def _one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_header_only_months_exit_2_and_change_nothing(tmp_path, capsys):
    snaps = write_snapshots(tmp_path, months=2)
    spec = write_spec(tmp_path)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    header = tmp_path / "header.csv"
    header.write_text(snaps[0].read_text().splitlines()[0] + "\n")
    # month 1 header-only: no ledger is made
    assert release(spec, header, ledger, rel / "release_1.csv") == 2
    assert "holds no record" in _one_line_error(capsys) and not ledger.exists() and not any(rel.iterdir())
    assert release(spec, snaps[0], ledger, rel / "release_1.csv") == 0
    before = folder_bytes(ledger)
    assert release(spec, header, ledger, rel / "release_2.csv") == 2
    assert "holds no record" in _one_line_error(capsys)
    assert folder_bytes(ledger) == before and sorted(p.name for p in rel.iterdir()) == ["release_1.csv"]


def _first_month(tmp_path, months: int):
    """A ledger holding release 1 of ``months`` snapshots: ``(snapshots, spec, ledger, releases, its bytes)``."""
    snaps = write_snapshots(tmp_path, months=months)
    spec = write_spec(tmp_path)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    assert release(spec, snaps[0], ledger, rel / "release_1.csv") == 0
    return snaps, spec, ledger, rel, folder_bytes(ledger)


def test_churn_refused_unless_confirmed_and_recorded(tmp_path, capsys):
    snaps, spec, ledger, rel, before = _first_month(tmp_path, 1)
    frame = pd.read_csv(snaps[0])
    half = tmp_path / "partial.csv"
    frame.iloc[:50].to_csv(half, index=False)  # 70 of 120 records gone: a partial export?
    assert release(spec, half, ledger, rel / "release_2.csv") == 2
    line = _one_line_error(capsys)
    assert "removes 70 of the 120 records" in line and "--confirm-churn" in line and "partial.csv" in line
    assert folder_bytes(ledger) == before and not (rel / "release_2.csv").exists()
    doubled = tmp_path / "doubled.csv"
    extra = frame.assign(id=[f"new{i:05d}z" for i in range(len(frame))])
    pd.concat([frame, extra, extra.assign(id=[f"dup{i:05d}z" for i in range(len(frame))])]).to_csv(doubled,
                                                                                                      index=False)
    assert release(spec, doubled, ledger, rel / "release_2.csv") == 2
    assert "360 records, more than twice the 120" in _one_line_error(capsys)
    assert folder_bytes(ledger) == before
    # confirmed: the month is published and the confirmation is on record
    assert release(spec, half, ledger, rel / "release_2.csv", "--confirm-churn") == 0
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("2 ") and out[2].startswith("2 ")
    assert "churn: confirmed: the snapshot removes 70 of the 120 records" in out[2]


def test_every_spec_change_needs_amend_and_is_listed(tmp_path, capsys):
    snaps, spec, ledger, rel, before = _first_month(tmp_path, 3)
    free = write_spec(tmp_path, "free.yaml", transitions="transitions: {free: true}\n")
    assert release(free, snaps[1], ledger, rel / "release_2.csv") == 2
    line = _one_line_error(capsys)
    assert "transitions: {diameter: 2, shape: window" in line and "-> {free: true}" in line
    assert "--amend REASON" in line and "free.yaml" in line and folder_bytes(ledger) == before
    no_expect = write_spec(tmp_path, "no_expect.yaml", expect="  []\n")
    assert release(no_expect, snaps[1], ledger, rel / "release_2.csv") == 2
    assert "expect: removed linking.l_distinct >= 2" in _one_line_error(capsys)
    assert folder_bytes(ledger) == before
    # the name and the description are not what the gate decides: no amendment needed
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text("name: clinic monthly\n" + spec.read_text())
    assert release(renamed, snaps[1], ledger, rel / "release_2.csv") == 0
    stricter = write_spec(tmp_path, "stricter.yaml", expect="  - linking.l_distinct >= 2\n  - linking.k >= 2\n")
    assert release(stricter, snaps[2], ledger, rel / "release_3.csv", "--amend", "the board asks k >= 2") == 0
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("3 ") and "amended: the board asks k >= 2 (changed: expect)" in out[2]


def test_withdraw_the_last_release_then_the_next_month_passes(tmp_path, capsys):
    spec, snaps, ledger, rel, codes = three_months(tmp_path)
    assert codes == [0, 0, 0]
    capsys.readouterr()
    assert main(["ledger", str(ledger), "--withdraw", "3"]) == 2  # a reason is required
    assert "--reason" in _one_line_error(capsys)
    assert main(["ledger", str(ledger), "--withdraw", "2", "--reason", "x"]) == 2  # the last one only
    assert "only the last release can be withdrawn" in _one_line_error(capsys)
    original = (rel / "release_3.csv").read_bytes()
    (rel / "release_3.csv").write_bytes(original + b"x")
    assert main(["ledger", str(ledger), "--withdraw", "3", "--reason", "x"]) == 2  # not the ledger's file
    assert "changed since release 3 was written" in _one_line_error(capsys)
    (rel / "release_3.csv").write_bytes(original)
    assert main(["ledger", str(ledger), "--withdraw", "3", "--reason", "export of the wrong month"]) == 0
    assert "release 3 withdrawn" in capsys.readouterr().out
    assert not any(p.name.endswith("_3.csv") for p in rel.iterdir()) and (rel / "release_2.csv").is_file()
    assert main(["ledger", str(ledger), "--verify", "-q"]) == 0  # what is left is what the ledger holds
    capsys.readouterr()
    # the next month is release 3 again, gated against releases 1 and 2 only
    gate = tmp_path / "gate.json"
    assert release(spec, snaps[2], ledger, rel / "release_3.csv", "--json", str(gate)) == 0
    assert len(json.loads(gate.read_text())["releases"]) == 3
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["1", "2", "3", "3", "3"]
    assert "WITHDRAWN before it went out: export of the wrong month" in out[3]
    assert main(["ledger", str(ledger), "--verify", "-q"]) == 0


def test_verify_finds_moved_files_by_name_and_hash(tmp_path, capsys):
    spec, snaps, ledger, rel, codes = three_months(tmp_path)
    moved = tmp_path / "archive" / "2026"
    moved.parent.mkdir()
    shutil.move(str(rel), str(moved))
    (moved / "release_2.csv").rename(moved / "march.csv")  # renamed too: found by its SHA-256
    capsys.readouterr()
    assert main(["ledger", str(ledger), "--verify", "-q"]) == 1  # where they were: missing
    first = capsys.readouterr().out.splitlines()[0]
    assert "release_1.csv missing" in first and first.endswith("if the release folder moved, give --releases NEWDIR")
    assert main(["ledger", str(ledger), "--verify", "--releases", str(moved), "-q"]) == 0
    assert "verdict PASS" in capsys.readouterr().out
    (moved / "release_3.csv").write_text((moved / "release_3.csv").read_text().replace("flu", "cold", 1))
    assert main(["ledger", str(ledger), "--verify", "--releases", str(moved), "-q"]) == 1
    assert "release_3.csv changed" in capsys.readouterr().out


def test_outputs_checked_first_and_ledger_spec_hint(tmp_path, capsys):
    spec, snaps, ledger, rel, codes = three_months(tmp_path)
    capsys.readouterr()
    for path in ("/proc/x.html", str(tmp_path / "nowhere" / "x.html")):
        assert main(["ledger", str(ledger), "--html", path]) == 2
        line = _one_line_error(capsys)
        assert path in line and "--html" in line
        assert not (tmp_path / "nowhere").exists()
    assert main(["certify", str(spec), str(rel / "release_1.csv"), "--html", "/proc/x.html"]) == 2
    assert "--html" in _one_line_error(capsys)
    assert main(["certify", str(spec), str(rel / "release_1.csv")]) == 2
    assert "--ledger DIR" in _one_line_error(capsys)
    assert main(["certify", str(spec), *(str(rel / f"release_{i}.csv") for i in (1, 2, 3)), "--ledger",
                 str(ledger), "-q"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "verdict: PASS (targets: population)"


def test_help_is_plain(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    for command in ("run", "certify", "release", "ledger"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert "--quiet" in text and "<bool>" not in text and "``" not in text, text


def test_api_withdraw_and_verify_moved(tmp_path):
    import multirelease

    spec, snaps, ledger, rel, codes = three_months(tmp_path)
    removed = multirelease.ledger_withdraw(ledger, 3, "never sent")
    assert [p.split("/")[-1] for p in removed] == ["release_3.csv", "counterfeits_3.csv"][:len(removed)]
    assert list(multirelease.ledger_history(ledger)["n"]) == [1, 2]
    moved = tmp_path / "moved"
    shutil.move(str(rel), str(moved))
    assert multirelease.verify_ledger(ledger).verdict == "fail"
    assert multirelease.verify_ledger(ledger, releases=moved).verdict == "pass"
