"""Terminal output people read (issue 15, item 2): never cut, plain when piped, progress only on a terminal.

The piped runs are real subprocesses (stdout a pipe, ``COLUMNS=40``): rich would otherwise lay tables out
for 40 columns and cut long names with an ellipsis.  On a terminal (a rich console forced to be one, 50
columns) tables fold long cells and split the releases over several tables instead.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path

import yaml
from rich.console import Console

from multirelease.cli import main
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.reports.document import _fmt, progress_display, render_terminal

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "scenarios" / "li_zhou_toy_m_distinct.yaml"


def piped(*argv, columns: int = 40) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("FORCE_COLOR", None)
    env.pop("TTY_COMPATIBLE", None)
    return subprocess.run([sys.executable, "-m", "multirelease.cli", *map(str, argv)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def test_piped_output_is_plain_and_never_cut(tmp_path):
    report_path = tmp_path / "r.json"
    proc = piped("run", TOY, "--json", report_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\u2026" not in out and "\x1b" not in out and "\u2503" not in out and "\u2502" not in out
    assert proc.stderr == ""  # no progress bar on a pipe
    report = json.loads(report_path.read_text(encoding="utf-8"))
    lines = out.splitlines()
    # the longest release metric name, with every release's value, on one line
    (row,) = [ln for ln in lines if ln.split()[:1] == ["discernibility_normalized"]]
    assert row.split()[1:] == [_fmt(r["metrics"]["discernibility_normalized"]) for r in report["releases"]]
    # every requirement whole, on one line with its value and mark
    for x in report["expectations"]:
        (req,) = [ln for ln in lines if x["expect"] in ln]
        assert req.split()[-1] == "yes" and len(req) > 40
    assert lines[-1] == "verdict: PASS (targets: population)"


def test_piped_unknown_interval_line_is_whole(tmp_path):
    """A long interval (Li & Zhou's joint attack stopped by a CP-SAT time limit of a microsecond) piped at
    40 columns: the requirement, its interval and why, on one line."""
    doc = yaml.safe_load(TOY.read_text(encoding="utf-8"))
    doc["attacks"] = [{"update_graph": {"linkage": "uid", "joint": True, "time_limit": 1e-6}}]
    doc["expect"] = ["update_graph.joint_max_risk <= 0.9"]
    sc = tmp_path / "toy.yaml"
    sc.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    proc = piped("run", sc)
    assert proc.returncode == 3, proc.stderr
    assert "\u2026" not in proc.stdout
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.lstrip().startswith("update_graph.joint_max_risk <= 0.9")]
    assert "0 <= joint_max_risk <= 1 (stopped: CP-SAT time limit 1e-06 s (joint attack))" in line
    assert line.split()[-1] == "unknown"
    assert proc.stdout.splitlines()[-1] == "verdict: UNKNOWN (targets: population)"


def test_terminal_tables_fold_and_split_instead_of_cutting(capsys):
    assert main(["run", str(TOY), "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=50, color_system=None)
    render_terminal(report, console)
    text = buf.getvalue()
    assert "\u2026" not in text
    assert all(len(ln) <= 50 for ln in text.splitlines())
    assert "releases (continued)" in text  # three releases do not fit beside the metric names in 50 columns
    for r in report["releases"]:
        for name, value in r["metrics"].items():
            assert name in text and _fmt(value) in text
    rows = [ln for ln in text.splitlines() if "discernibility_normalized" in ln]
    assert len(rows) == text.count("releases (continued)") + 1  # the name whole in each part of the table


def test_quiet_and_json_stdout_unchanged(capsys, tmp_path):
    assert main(["run", str(TOY), "--quiet"]) == 0  # the verdict line only (issue 25)
    assert capsys.readouterr() == ("verdict: PASS (targets: population)\n", "")
    to_file = tmp_path / "r.json"
    assert main(["run", str(TOY), "--quiet", "--json", str(to_file)]) == 0
    capsys.readouterr()
    assert main(["run", str(TOY), "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out == to_file.read_text(encoding="utf-8")  # stdout holds the JSON document only


def test_version_from_package_metadata(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"multirelease {version('multirelease')}\n"


def test_progress_only_on_a_terminal_and_only_for_long_work():
    with progress_display(Console(file=io.StringIO(), force_terminal=False)) as update:
        assert update is None  # piped: no callback at all
    quick = io.StringIO()
    with progress_display(Console(file=quick, force_terminal=True, width=80), delay=5.0) as update:
        update("attack quick: step (1/2)", 1, 2)
    assert quick.getvalue() == ""  # done before the delay: nothing drawn
    slow = io.StringIO()
    threads = threading.active_count()
    with progress_display(Console(file=slow, force_terminal=True, width=80), delay=0.05) as update:
        update("attack slow: components (1/3)", 1, 3)
        time.sleep(0.3)
        assert slow.getvalue() == ""  # drawn when the work reports progress, not by a thread of its own
        update("attack slow: components (2/3)", 2, 3)
        assert "attack slow: components (2/3)" in slow.getvalue()
        update("attack slow: components (3/3)", 3, 3)  # within 0.1 s of the last drawing: not drawn
        assert "(3/3)" not in slow.getvalue()
        time.sleep(0.15)
        update("attack slow: components (3/3)", 3, 3)
        assert "(3/3)" in slow.getvalue()
        assert threading.active_count() == threads  # a worker forked meanwhile inherits no lock a thread holds


def test_attacks_report_their_own_steps_through_the_pipeline():
    seen = []
    run = run_scenario(load_scenario(TOY), progress=lambda what, done, total: seen.append(what))
    assert run.verdict == "pass"
    assert any(s.startswith("attack update_graph: release ") for s in seen), seen
    assert any(s.startswith("attack intersection: ") for s in seen), seen
