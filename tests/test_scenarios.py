"""Every bundled scenario, both ways: ``run`` it with ``--out``, then ``certify`` the files it wrote with the
scenario's own YAML.  One pipeline builds, attacks and judges both, so the two reports must agree figure
for figure (every attack's proven values and intervals, every judged line) and reach the same privacy
verdict; every bundled scenario checks something (its verdict is never ``none``, never a PASS without a
check); and each one's answers are those the README's table of bundled scenarios states (issue 30: its
purpose, its privacy verdict, whether its expectations are reproduced, and ``run``'s exit code - a research
scenario's ``run`` exits by its expectations, ``certify`` always by the privacy verdict).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from multirelease.cli import main
from multirelease.expect import EXIT_CODES

ROOT = Path(__file__).resolve().parents[1]
#: a row of the README's table of answers: | `name.yaml` | purpose | privacy verdict | expectations | exit |
_ROW = re.compile(r"^\| `(?P<name>[a-z0-9_]+)\.yaml` \| (?P<purpose>research|certification) \| "
                  r"(?P<verdict>PASS|FAIL|UNKNOWN) \| (?P<reproduced>reproduced|NOT reproduced|-) \| "
                  r"(?P<code>[0-3]) \|")


def readme_answers() -> dict[str, dict]:
    """The README's table of every bundled scenario's answers, by scenario name."""
    rows = {}
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            rows[m["name"]] = m.groupdict()
    return rows


SCENARIOS = sorted((Path(__file__).resolve().parents[1] / "scenarios").glob("*.yaml"))
#: the Adult-scale scenarios (each run and certified in 10-80 s of CPU): marked slow, run by .ci/run
CASES = [pytest.param(p, marks=pytest.mark.slow, id=p.stem) if "adult" in p.stem else pytest.param(p, id=p.stem)
         for p in SCENARIOS]


def _run(capsys, *argv) -> int:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err and err == "", err
    return code


@pytest.mark.parametrize("scenario", CASES)
def test_run_and_certify_of_its_files_agree(scenario: Path, tmp_path: Path, capsys):
    out = tmp_path / "out"
    code_run = _run(capsys, "run", scenario, "--out", out, "--json", tmp_path / "run.json", "--quiet")
    files = sorted(out.glob("release_*.csv"), key=lambda p: int(p.stem.split("_")[1]))
    code_cert = _run(capsys, "certify", scenario, *files, "--json", tmp_path / "certify.json", "--quiet")
    ran = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    certified = json.loads((tmp_path / "certify.json").read_text(encoding="utf-8"))

    assert ran["verdict"] != "none", f"{scenario.name} checks nothing"
    assert ran["expectations"], f"{scenario.name} states nothing it must show"
    assert (ran["verdict"], ran["targets"]) == (certified["verdict"], certified["targets"])
    assert code_cert == EXIT_CODES[certified["verdict"]]
    if ran["purpose"] == "certification":
        assert code_run == code_cert
    row = readme_answers().get(scenario.stem)
    assert row is not None, f"{scenario.name} is not in the README's table of answers"
    reproduced = {"pass": "reproduced", "fail": "NOT reproduced"}.get(ran.get("reproduced"), "-")
    assert (row["purpose"], row["verdict"], row["reproduced"], int(row["code"])) == \
        (ran["purpose"], ran["verdict"].upper(), reproduced, code_run), scenario.name
    assert len(files) == len(ran["releases"]) == len(certified["releases"])
    for a, b in zip(ran["releases"], certified["releases"]):
        assert (a["records"], a["classes"]) == (b["records"], b["classes"])
    for name, result in ran["attacks"].items():
        assert name in certified["attacks"], name
        other = certified["attacks"][name]
        assert result["summary"] == other["summary"], name
        assert result.get("bounds") == other.get("bounds"), name
        assert result["exact"] == other["exact"], name
    judged = [(e["expect"], e["value"], e["holds"]) for e in ran["expectations"]]
    assert judged == [(e["expect"], e["value"], e["holds"]) for e in certified["expectations"]]
