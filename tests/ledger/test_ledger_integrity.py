"""Issue 30, "A verdict never hides what the attacks found", for the ledger:

* integrity is part of the verdict: ``ledger DIR --verify`` / ``--html`` and ``certify --ledger`` of a published
  file that changed, is missing, or was never recorded give FAIL (exit 1), named - with the SHA-256 the ledger
  recorded and the one found now - in the first line the terminal prints and in the page's first heading,
  even when the attacks find nothing wrong with the files as they are (the edits here are harmless on purpose);
* ``release`` of month ``n`` reports each release under its own index with its own figures (the gate's table
  once showed the new release as "release 1", with release 1's metrics).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from multirelease.cli import main

from ledger_data import release, three_months, write_snapshots, write_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def three(tmp_path):
    """Three monthly releases of m-invariance through the ledger (all PASS)."""
    spec, _, ledger, rel, codes = three_months(tmp_path)
    assert codes == [0, 0, 0]
    return spec, ledger, rel


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def touch_harmlessly(path: Path) -> tuple[str, str]:
    """Append an empty line: the file's SHA-256 changes, what it publishes does not (the attacks still PASS).
    Returns (recorded, found)."""
    before = sha(path)
    path.write_bytes(path.read_bytes() + b"\n")
    return before, sha(path)


class _Headings(HTMLParser):
    """The text of every <h1> / <h2>, in document order."""

    def __init__(self):
        super().__init__()
        self.headings: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("h1", "h2") and self._in is None:
            self._in = tag
            self.headings.append("")

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            self.headings[-1] += data


def first_heading(page: Path) -> str:
    parser = _Headings()
    parser.feed(page.read_text(encoding="utf-8"))
    assert parser.headings, "the page has no heading"
    return " ".join(parser.headings[0].split())


def terminal(*args: str) -> tuple[int, list[str]]:
    """Run the command as a user does, stdout and stderr in one stream (the terminal): exit code and lines."""
    proc = subprocess.run([sys.executable, "-m", "multirelease.cli", *map(str, args)], cwd=ROOT, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})
    return proc.returncode, proc.stdout.splitlines()


def cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------- TASK A: integrity is part of the verdict
def test_untouched_ledger_passes_as_before(three, capsys, tmp_path):
    spec, ledger, rel = three
    code, out, err = cli(capsys, "ledger", ledger, "--verify", "-q", "--json", tmp_path / "v.json")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[-1] == "verify: verdict PASS" and "FAIL" not in out and err == ""
    assert lines[0].startswith("verify: every file the ledger recorded has its recorded SHA-256")
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["verdict"] == "pass" and "integrity" not in report and "certified_verdict" not in report
    page = tmp_path / "p.html"
    code, out, err = cli(capsys, "ledger", ledger, "--html", page, "-q")
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert 'id="verdict-word">PASS<' in text and 'id="integrity"' not in text
    assert first_heading(page) == "spec"  # the page opens as before: its name, then the PASS box


def test_changed_file_fails_verify_first_line_names_it_with_both_hashes(three):
    spec, ledger, rel = three
    recorded, found = touch_harmlessly(rel / "release_2.csv")
    code, lines = terminal("ledger", ledger, "--verify", "-q")
    assert code == 1
    first = lines[0]
    assert first.startswith("verify: FAIL - release_2.csv changed"), first
    assert f"recorded sha256 {recorded}" in first and f"found sha256 {found}" in first
    # the attacks find nothing on the edited file: the last line says so, and still FAIL
    assert lines[-1].startswith("verify: verdict FAIL - release_2.csv changed") and "certify PASS" in lines[-1]
    assert not any(line.startswith(("verify: verdict PASS", "verdict: PASS")) for line in lines)


def test_changed_file_page_opens_with_fail_naming_it(three, capsys, tmp_path):
    spec, ledger, rel = three
    recorded, found = touch_harmlessly(rel / "release_2.csv")
    page, report_path = tmp_path / "board.html", tmp_path / "board.json"
    code, out, err = cli(capsys, "ledger", ledger, "--html", page, "--json", report_path, "-q")
    assert code == 1
    assert out.splitlines()[0].startswith("verify: FAIL - release_2.csv changed")
    head = first_heading(page)
    assert "PASS" not in head and head.startswith("Verdict: FAIL") and "release_2.csv changed" in head
    text = page.read_text(encoding="utf-8")
    assert 'id="verdict-word">FAIL<' in text and 'id="verdict-word">PASS' not in text
    assert recorded in text and found in text  # the integrity table: both hashes
    assert "<title>multirelease: spec - FAIL</title>" in text
    # the re-certification is still shown, below, under its own title: what the attacks found is not hidden
    assert text.index('id="verdict-word"') < text.index('id="recertified-word">PASS<')
    report = json.loads(report_path.read_text())
    assert report["verdict"] == "fail" and report["certified_verdict"] == "pass"
    assert report["integrity"] == [{"file": str(rel / "release_2.csv"), "problem": "changed", "release": 2,
                                    "recorded_sha256": recorded, "found_sha256": found}]


def test_missing_file_fails_naming_it_missing(three, capsys, tmp_path):
    spec, ledger, rel = three
    recorded = sha(rel / "release_3.csv")
    (rel / "release_3.csv").unlink()
    page = tmp_path / "p.html"
    code, out, err = cli(capsys, "ledger", ledger, "--html", page, "-q")
    assert code == 1
    first, last = out.splitlines()[0], out.splitlines()[-1]
    assert first == f"verify: FAIL - release_3.csv missing (recorded sha256 {recorded}, found missing)"
    assert last.startswith("verify: verdict FAIL - release_3.csv missing") and "not certified" in last
    assert "release 3:" in err and "missing" in err
    head = first_heading(page)
    assert "PASS" not in head and head.startswith("Verdict: FAIL") and "release_3.csv missing" in head
    assert recorded in page.read_text(encoding="utf-8")


def test_foreign_release_file_fails_naming_it(three, capsys):
    spec, ledger, rel = three
    foreign = rel / "release_4.csv"
    foreign.write_bytes((rel / "release_3.csv").read_bytes())  # a release no gate certified
    code, lines = terminal("ledger", ledger, "--verify", "-q")
    assert code == 1
    assert lines[0] == f"verify: FAIL - release_4.csv not recorded by the ledger (recorded none, found sha256 " \
                       f"{sha(foreign)})"
    assert lines[-1].startswith("verify: verdict FAIL - release_4.csv")
    foreign.unlink()
    (rel / "counterfeits_9.csv").write_text("group,counterfeits\n1,1\n")
    code, out, err = cli(capsys, "ledger", ledger, "--verify", "-q")
    assert code == 1 and out.splitlines()[0].startswith("verify: FAIL - counterfeits_9.csv not recorded")


def test_certify_ledger_with_an_edited_file_is_not_pass(three, capsys, tmp_path):
    spec, ledger, rel = three
    files = [rel / f"release_{i}.csv" for i in (1, 2, 3)]
    code, out, err = cli(capsys, "certify", spec, *files, "--ledger", ledger, "-q")
    assert code == 0, err  # the files the ledger recorded: PASS on the ledger's truth
    recorded, found = touch_harmlessly(files[1])
    report_path, page = tmp_path / "c.json", tmp_path / "c.html"
    code, out, err = cli(capsys, "certify", spec, *files, "--ledger", ledger, "-q", "--json", report_path,
                         "--html", page)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (f"certify: release_2.csv is not the file the ledger recorded as release 2 (recorded sha256 "
                        f"{recorded}, found sha256 {found})")
    assert lines[-1].startswith("certify: verdict FAIL - release_2.csv is not the file the ledger recorded")
    report = json.loads(report_path.read_text())
    assert report["verdict"] == "fail" and report["certified_verdict"] == "pass"
    assert [(p["problem"], p["release"], p["recorded_sha256"], p["found_sha256"]) for p in report["integrity"]] \
        == [("unrecorded", 2, recorded, found)]
    head = first_heading(page)
    assert "PASS" not in head and "release_2.csv" in head
    # --json - keeps the output for the report: the line goes to the error stream
    code, out, err = cli(capsys, "certify", spec, *files, "--ledger", ledger, "--json", "-")
    assert code == 1 and json.loads(out)["verdict"] == "fail" and "release_2.csv is not the file" in err


# ---------------------------------------------------------------------- TASK B: what release prints
def _table(out: str) -> dict[str, list[str]]:
    """The terminal's plain releases table: row name -> cells (the header row under 'metric')."""
    lines = out.splitlines()
    start = lines.index("releases") + 1
    rows = {}
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        cells = line.split()
        if cells[0] == "metric":
            rows["metric"] = [" ".join(cells[i:i + 2]) for i in range(1, len(cells), 2)]
        else:
            rows[cells[0]] = cells[1:]
    return rows


def test_release_of_month_two_reports_release_two(tmp_path, capsys):
    spec = write_spec(tmp_path)
    snaps = write_snapshots(tmp_path, months=2)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    assert release(spec, snaps[0], ledger, rel / "release_1.csv") == 0
    gate = tmp_path / "gate.json"
    code, out, err = cli(capsys, "release", spec, snaps[1], "--ledger", ledger, "--out", rel / "release_2.csv",
                         "--json", gate)
    assert code == 0, err
    rows = [len(pd.read_csv(rel / f"release_{i}.csv")) for i in (1, 2)]
    assert rows[0] != rows[1]  # m-invariance adds counterfeits in month 2: the two counts differ
    # the figures of each file computed apart: certify of the written files against the ledger's truth
    alone = tmp_path / "alone.json"
    assert main(["certify", str(spec), str(rel / "release_1.csv"), str(rel / "release_2.csv"), "--ledger",
                 str(ledger), "--json", str(alone), "-q"]) == 0
    truth = json.loads(alone.read_text())["releases"]
    report = json.loads(gate.read_text())["releases"]
    assert [r["index"] for r in report] == [1, 2]
    assert [r["records"] for r in report] == rows == [r["records"] for r in truth]
    for mine, theirs in zip(report, truth):
        assert mine["classes"] == theirs["classes"]
        for metric in ("LM", "discernibility", "k", "l_distinct"):
            assert math.isclose(mine["metrics"][metric], theirs["metrics"][metric], rel_tol=1e-12), metric
        assert mine["metrics"].get("counterfeits") == theirs["metrics"].get("counterfeits")
    table = _table(out)
    assert table["metric"] == ["release 1", "release 2"]
    assert table["records"] == [f"{n:,}" for n in rows]
    assert table["LM"] == [f"{r['metrics']['LM']:.4g}" for r in truth]
    assert table["discernibility"] == [f"{r['metrics']['discernibility']:,}" for r in truth]
