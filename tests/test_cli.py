"""The command line: ``run``, ``certify`` and ``publish``, their exit codes, the JSON report of the contract
(DESIGN.md, "Reports" and "CLI and exit codes"), release files and determinism.

The scenarios are tiny (tests/data/tiny.yaml: 16 people, a numeric and a nested quasi-identifier, one
sensitive attribute) so that each test takes a fraction of a second; one test runs the Adult scenario end
to end.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

import attacks
from attacks.base import AttackBase, AttackResult
from multirelease.cli import main
from multirelease.formats.release_csv import read_release_csv
from multirelease.pipeline import load_scenario

DATA = Path(__file__).resolve().parent / "data"
TINY = DATA / "tiny.yaml"
TINY_FAIL = DATA / "tiny_fail.yaml"
SPEC = DATA / "tiny_spec.yaml"
GOOD_RELEASE = DATA / "tiny_release.csv"  # 4 classes of sizes 3, 4, 5, 4; l_distinct 3
ADULT = Path(__file__).resolve().parents[1] / "scenarios" / "adult_mondrian.yaml"

TOP_KEYS = ["scenario", "purpose", "releases", "attacks", "expectations", "verdict", "targets"]


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def tiny_doc(**changes) -> dict:
    doc = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    doc["data"] = {"file": str(DATA / "tiny.csv")}
    doc.update(changes)
    return doc


def write_yaml(tmp_path: Path, doc: dict, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def run_json(capsys, scenario: Path, *extra) -> tuple[int, dict]:
    code, out, err = cli(capsys, "run", scenario, "--json", "-", *extra)
    assert err == ""
    return code, json.loads(out)


# ---------------------------------------------------------------------- a test-only inexact attack
class FakeBounds(AttackBase):
    """An attack whose only metric is known to lie in [0.4, 0.6] (point estimate 0.5)."""

    name = "fake_bounds"
    metrics = ("x",)

    def run(self, view, progress=None) -> AttackResult:
        return AttackResult(attack="fake_bounds", summary={"x": 0.5}, exact=False, bounds={"x": (0.4, 0.6)},
                            worst={"note": "an interval, not a witness"})


@pytest.fixture
def fake_bounds(monkeypatch):
    monkeypatch.setitem(attacks.ATTACKS, "fake_bounds", FakeBounds)
    return FakeBounds


# ---------------------------------------------------------------------- run: exit codes
def test_run_exit_0_when_every_expectation_holds(capsys):
    code, out, err = cli(capsys, "run", TINY)
    assert code == 0
    assert err == ""
    assert "verdict: PASS" in out
    assert "linking.k >= 2" in out


def test_run_exit_1_when_an_expectation_fails(capsys):
    code, out, err = cli(capsys, "run", TINY_FAIL)
    assert code == 1
    assert err == ""
    assert "verdict: FAIL" in out


def test_run_quiet_prints_the_verdict_line_only(capsys):
    code, out, err = cli(capsys, "run", TINY, "--quiet")
    assert (code, out, err) == (0, "verdict: PASS (targets: population)\n", "")
    code, out, err = cli(capsys, "run", TINY_FAIL, "-q")
    assert (code, out, err) == (1, "verdict: FAIL (targets: population)\n", "")


def test_run_exit_3_when_an_interval_straddles_the_threshold(capsys, tmp_path, fake_bounds):
    doc = tiny_doc(attacks=[{"fake_bounds": {}}], expect=["fake_bounds.x <= 0.5"])
    code, report = run_json(capsys, write_yaml(tmp_path, doc))
    assert code == 3
    assert report["verdict"] == "unknown"
    # an interval is not a value: the expectation shows the interval and why it is one
    assert report["expectations"] == [{"expect": "fake_bounds.x <= 0.5", "value": None, "holds": None,
                                       "exact": False, "lower": 0.4, "upper": 0.6, "reason": "budget",
                                       "kind": "requirement"}]
    assert report["attacks"]["fake_bounds"]["exact"] is False
    assert report["attacks"]["fake_bounds"]["summary"] == {}
    assert report["attacks"]["fake_bounds"]["bounds"] == {"x": {"lower": 0.4, "upper": 0.6, "reason": "budget"}}
    assert report["attacks"]["fake_bounds"]["estimates"] == {"x": 0.5}


def test_run_inexact_but_settled_by_the_interval(capsys, tmp_path, fake_bounds):
    doc = tiny_doc(attacks=[{"fake_bounds": {}}], expect=["fake_bounds.x <= 0.7"])
    code, report = run_json(capsys, write_yaml(tmp_path, doc))
    assert (code, report["verdict"]) == (0, "pass")
    doc = tiny_doc(attacks=[{"fake_bounds": {}}], expect=["fake_bounds.x <= 0.7", "fake_bounds.x <= 0.3"])
    code, report = run_json(capsys, write_yaml(tmp_path, doc))
    assert (code, report["verdict"]) == (1, "fail")
    assert [e["holds"] for e in report["expectations"]] == [True, False]


def test_fail_wins_over_unknown(capsys, tmp_path, fake_bounds):
    doc = tiny_doc(attacks=[{"linking": {}}, {"fake_bounds": {}}],
                   expect=["fake_bounds.x <= 0.5", "linking.k >= 1000"])
    code, report = run_json(capsys, write_yaml(tmp_path, doc))
    assert (code, report["verdict"]) == (1, "fail")


# ---------------------------------------------------------------------- run: the JSON report
def test_report_has_exactly_the_contract_keys_and_shapes(capsys):
    code, report = run_json(capsys, TINY)
    assert code == 0
    assert list(report) == TOP_KEYS
    assert report["scenario"] == "tiny"
    assert report["verdict"] == "pass"

    (release,) = report["releases"]
    assert set(release) == {"index", "records", "classes", "metrics"}
    assert release["index"] == 1 and release["records"] == 16
    assert isinstance(release["classes"], int) and 1 <= release["classes"] <= 8
    assert isinstance(release["metrics"], dict)
    assert release["metrics"]["k"] >= 2 and release["metrics"]["l_distinct"] >= 2
    for name in ("LM", "discernibility"):
        assert isinstance(release["metrics"][name], (int, float))

    assert list(report["attacks"]) == ["linking"]
    linking = report["attacks"]["linking"]
    assert {"summary", "exact", "worst", "targets"} <= set(linking)
    assert set(linking) <= {"summary", "exact", "worst", "targets", "bounds", "notes"}
    assert linking["exact"] is True
    assert linking["summary"]["k"] == release["metrics"]["k"]
    assert linking["summary"]["l_distinct"] == release["metrics"]["l_distinct"]
    assert linking["summary"]["violations"] == 0
    assert all(isinstance(v, (int, float)) for v in linking["summary"].values())
    assert isinstance(linking["worst"], dict) and linking["worst"]["k"]["size"] == linking["summary"]["k"]
    assert isinstance(linking["targets"], list) and linking["targets"][0]["release"] == 1

    # the linking attack's baselines (k, l_distinct >= 2, also its parameters' lines) are the expect lines:
    # not repeated
    assert report["expectations"] == [
        {"expect": "linking.k >= 2", "value": linking["summary"]["k"], "holds": True, "exact": True,
         "kind": "requirement"},
        {"expect": "linking.l_distinct >= 2", "value": linking["summary"]["l_distinct"], "holds": True,
         "exact": True, "kind": "requirement"},
        {"expect": "release[1].records == 16", "value": 16, "holds": True, "exact": True, "kind": "requirement"},
    ]
    assert report["targets"] == "population"  # the scenario has data: its individuals are the targets


def test_report_of_a_failing_scenario(capsys):
    code, report = run_json(capsys, TINY_FAIL)
    assert code == 1
    assert list(report) == TOP_KEYS
    assert report["verdict"] == "fail"
    assert [(e["expect"], e["holds"]) for e in report["expectations"]] == [
        ("linking.k >= 2", True), ("linking.k >= 1000", False), ("linking.l_distinct >= 2", True)]
    assert report["expectations"][-1]["source"] == "baseline"


def test_json_to_stdout_is_only_json(capsys):
    code, out, err = cli(capsys, "run", TINY, "--json", "-")
    assert code == 0 and err == ""
    assert out.endswith("}\n")
    assert json.loads(out)["verdict"] == "pass"


def test_json_to_a_file(capsys, tmp_path):
    path = tmp_path / "reports" / "tiny.json"
    code, out, err = cli(capsys, "run", TINY, "--json", path, "--quiet")  # a mistyped folder is never made
    assert (code, out) == (2, "") and err.strip().endswith(f"its folder does not exist ('{path.parent}'): make it "
                                                           "first") and not path.parent.exists()
    path.parent.mkdir()
    code, out, err = cli(capsys, "run", TINY, "--json", path, "--quiet")
    assert (code, out, err) == (0, "verdict: PASS (targets: population)\n", "")
    assert list(json.loads(path.read_text(encoding="utf-8"))) == TOP_KEYS
    assert [p.name for p in path.parent.iterdir()] == ["tiny.json"]  # no temporary file left behind


def test_json_file_written_even_when_an_expectation_fails(capsys, tmp_path):
    path = tmp_path / "fail.json"
    code, _, _ = cli(capsys, "run", TINY_FAIL, "--json", path, "--quiet")
    assert code == 1
    assert json.loads(path.read_text(encoding="utf-8"))["verdict"] == "fail"


def test_same_scenario_gives_byte_identical_json(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli(capsys, "run", TINY, "--json", a, "--quiet")[0] == 0
    assert cli(capsys, "run", TINY, "--json", b, "--quiet")[0] == 0
    assert a.read_bytes() == b.read_bytes()
    code, out, _ = cli(capsys, "run", TINY, "--json", "-")
    assert out.encode("utf-8") == a.read_bytes()


# ---------------------------------------------------------------------- run --out
def test_out_writes_release_files_readable_back(capsys, tmp_path):
    out = tmp_path / "out"
    code, report = run_json(capsys, TINY, "--out", out)
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["release_1.csv"]
    schema = load_scenario(TINY).schema
    release = read_release_csv(out / "release_1.csv", schema)
    (meta,) = report["releases"]
    assert len(release) == meta["records"] == 16
    assert release.n_classes == meta["classes"]
    assert int(release.class_sizes.min()) == meta["metrics"]["k"]
    frame = pd.read_csv(out / "release_1.csv", dtype=str)
    assert list(frame.columns) == ["group", "age", "country", "disease"]
    assert "id" not in frame.columns


def test_out_release_certifies(capsys, tmp_path):
    out = tmp_path / "out"
    code, report = run_json(capsys, TINY, "--out", out)
    k = report["releases"][0]["metrics"]["k"]
    code, out_text, _ = cli(capsys, "certify", TINY, out / "release_1.csv", "--require", f"linking.k >= {k}",
                            "--json", "-")
    assert code == 0
    assert json.loads(out_text)["verdict"] == "pass"
    code, _, _ = cli(capsys, "certify", TINY, out / "release_1.csv", "--require", f"linking.k >= {k + 1}")
    assert code == 1


def test_different_seed_changes_row_order_not_k(capsys, tmp_path):
    outs, reports = [], []
    for seed in (3, 4):
        scenario = write_yaml(tmp_path, tiny_doc(seed=seed), f"seed{seed}.yaml")
        out = tmp_path / f"out{seed}"
        code, report = run_json(capsys, scenario, "--out", out)
        assert code == 0
        outs.append((out / "release_1.csv").read_text(encoding="utf-8"))
        reports.append(report)
    assert outs[0] != outs[1]
    assert reports[0]["releases"][0]["metrics"]["k"] == reports[1]["releases"][0]["metrics"]["k"]
    assert reports[0]["attacks"]["linking"]["summary"] == reports[1]["attacks"]["linking"]["summary"]
    # the same classes, published in another order
    cols = ["age", "country", "disease"]
    rows = [sorted(map(tuple, pd.read_csv(pd.io.common.StringIO(t), dtype=str)[cols].to_numpy().tolist()))
            for t in outs]
    assert rows[0] == rows[1]


# ---------------------------------------------------------------------- certify
def test_certify_pass(capsys):
    code, out, err = cli(capsys, "certify", SPEC, GOOD_RELEASE, "--require", "linking.k >= 2")
    assert code == 0 and err == ""
    assert "verdict: PASS" in out


def test_certify_pass_json(capsys):
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "--require", "linking.k >= 2",
                       "--require", "linking.l_distinct >= 3", "--json", "-")
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"] == "pass"
    assert [(r["index"], r["records"], r["classes"]) for r in doc["releases"]] == [(1, 16, 4)]
    assert doc["targets"] == "regions"  # a schema-only spec: every target the published regions allow
    # the linking attack's baselines (k >= 2, l_distinct >= 2) are settled by the stricter lines required
    assert [(r["expect"], r["value"], r["holds"], r["exact"]) for r in doc["expectations"]] == [
        ("linking.k >= 2", 3, True, True), ("linking.l_distinct >= 3", 3, True, True)]
    assert all("witness" not in r for r in doc["expectations"])


def test_certify_fail_with_a_witness(capsys, tmp_path):
    path = tmp_path / "verdict.json"
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "--require", "linking.k >= 4", "--json", path)
    assert code == 1
    assert "verdict: FAIL" in out and "witness" in out
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["verdict"] == "fail"
    req, base = doc["expectations"]  # the require line, then the linking attack's l_distinct baseline
    assert (base["expect"], base["source"], base["value"], base["holds"]) == ("linking.l_distinct >= 2", "baseline",
                                                                             3, True)
    assert (req["expect"], req["value"], req["holds"], req["exact"]) == ("linking.k >= 4", 3, False, True)
    witness = req["witness"]  # the class that attains k
    assert witness["release"] == 1 and witness["size"] == 3 and witness["group"] == 1
    assert witness["qi"] == {"age": "[20,29]", "country": "Europe"}
    assert witness["sensitive"] == {"cancer": 1, "cold": 1, "flu": 1}


def test_certify_mixed_requirements_fail(capsys):
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "-r", "linking.k >= 2", "-r", "linking.alpha <= 1/3",
                       "--json", "-")
    assert code == 1
    doc = json.loads(out)
    assert [r["holds"] for r in doc["expectations"]] == [True, False, True]  # + the l_distinct >= 2 baseline
    assert "witness" in doc["expectations"][1] and "witness" not in doc["expectations"][0]


def test_certify_release_metric_requirement(capsys):
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "-r", "release[1].records == 16", "--json", "-")
    assert code == 0
    assert json.loads(out)["expectations"][0]["value"] == 16


def test_certify_unknown_when_bounds_straddle(capsys, fake_bounds):
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "--require", "fake_bounds.x <= 0.5", "--json", "-")
    assert code == 3
    doc = json.loads(out)
    assert doc["verdict"] == "unknown"
    (req,) = [r for r in doc["expectations"] if r.get("source") != "baseline"]
    assert req["holds"] is None and req["exact"] is False and req["value"] is None
    assert (req["lower"], req["upper"]) == (0.4, 0.6)
    assert "witness" not in req
    assert doc["attacks"]["fake_bounds"]["bounds"] == {"x": {"lower": 0.4, "upper": 0.6, "reason": "budget"}}


def test_certify_unknown_terminal(capsys, fake_bounds):
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "--require", "fake_bounds.x <= 0.5")
    assert code == 3
    assert "verdict: UNKNOWN" in out


@pytest.mark.parametrize("requirement, code, verdict, holds", [
    ("fake_bounds.x <= 0.7", 0, "pass", True),   # the whole interval [0.4, 0.6] is below 0.7
    ("fake_bounds.x <= 0.3", 1, "fail", False),  # the whole interval is above 0.3
    ("fake_bounds.x >= 0.4", 0, "pass", True),
    ("fake_bounds.x > 0.6", 1, "fail", False),
    ("fake_bounds.x == 0.5", 3, "unknown", None),
    ("fake_bounds.x != 0.9", 0, "pass", True),
])
def test_certify_inexact_but_settled_by_the_interval(capsys, fake_bounds, requirement, code, verdict, holds):
    got, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "--require", requirement, "--attack", "fake_bounds",
                      "--json", "-")
    doc = json.loads(out)
    assert (got, doc["verdict"]) == (code, verdict)
    assert doc["expectations"][0]["holds"] is holds
    assert doc["expectations"][0]["exact"] is False
    assert list(doc["attacks"]) == ["fake_bounds"]


def test_certify_unknown_and_pass_is_unknown(capsys, fake_bounds):
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, "-r", "linking.k >= 2", "-r", "fake_bounds.x < 0.5",
                       "--json", "-")
    assert code == 3
    assert [r["holds"] for r in json.loads(out)["expectations"] if r.get("source") != "baseline"] == [True, None]


def test_certify_uses_the_spec_expect_lines(capsys, tmp_path):
    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    spec["attacks"] = [{"linking": {}}]
    spec["expect"] = ["linking.k >= 3"]
    path = write_yaml(tmp_path, spec, "spec.yaml")
    code, out, _ = cli(capsys, "certify", path, GOOD_RELEASE, "--json", "-")
    assert code == 0
    assert [r["expect"] for r in json.loads(out)["expectations"]] == ["linking.k >= 3", "linking.l_distinct >= 2"]
    spec["expect"] = ["linking.k >= 4"]
    path = write_yaml(tmp_path, spec, "spec.yaml")
    assert cli(capsys, "certify", path, GOOD_RELEASE)[0] == 1


def test_certify_two_releases(capsys, tmp_path):
    second = tmp_path / "release_2.csv"
    text = GOOD_RELEASE.read_text(encoding="utf-8").splitlines()
    second.write_text("\n".join(text[:4] + text[5:]) + "\n", encoding="utf-8")  # class 2 shrinks to 3
    code, out, _ = cli(capsys, "certify", SPEC, GOOD_RELEASE, second, "-r", "linking.k >= 3", "--json", "-")
    assert code == 0
    doc = json.loads(out)
    assert [r["records"] for r in doc["releases"]] == [16, 15]


# ---------------------------------------------------------------------- publish
def test_publish_writes_releases_only(capsys, tmp_path):
    """A release folder holds releases only: no publisher state, ids or maps (DESIGN.md, release ledger)."""
    out = tmp_path / "pub"
    code, text, err = cli(capsys, "publish", TINY, "--out", out)
    assert code == 0 and err == ""
    assert sorted(p.name for p in out.iterdir()) == ["release_1.csv"]
    assert [p.name for p in tmp_path.iterdir()] == ["pub"]  # no temporary folder left beside it
    release = read_release_csv(out / "release_1.csv", load_scenario(TINY).schema)
    assert len(release) == 16 and int(release.class_sizes.min()) >= 2


def test_publish_matches_run_out(capsys, tmp_path):
    assert cli(capsys, "publish", TINY, "--out", tmp_path / "pub")[0] == 0
    assert cli(capsys, "run", TINY, "--out", tmp_path / "run", "--quiet")[0] == 0
    assert (tmp_path / "pub" / "release_1.csv").read_bytes() == (tmp_path / "run" / "release_1.csv").read_bytes()


def test_publish_ignores_expectations(capsys, tmp_path):
    # publish runs no attacks: a failing expectation does not change its exit code
    code, _, _ = cli(capsys, "publish", TINY_FAIL, "--out", tmp_path / "pub")
    assert code == 0


def test_publish_two_releases_with_dynamics(capsys, tmp_path):
    doc = tiny_doc(releases=[{"publisher": "mondrian", "k": 2}, {"publisher": "mondrian", "k": 2}],
                   dynamics={2: {"delete": [1, 2], "insert": {"rows": [
                       {"id": 17, "age": 33, "country": "US", "disease": "flu"},
                       {"id": 18, "age": 44, "country": "France", "disease": "cold"},
                       {"id": 19, "age": 29, "country": "UK", "disease": "hiv"}]}}},
                   attacks=[], expect=[])
    out = tmp_path / "pub"
    assert cli(capsys, "publish", write_yaml(tmp_path, doc), "--out", out)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["release_1.csv", "release_2.csv"]
    schema = load_scenario(TINY).schema
    assert len(read_release_csv(out / "release_1.csv", schema)) == 16
    assert len(read_release_csv(out / "release_2.csv", schema)) == 17


# ---------------------------------------------------------------------- usage
def test_no_arguments_shows_help_and_exits_2(capsys):
    code = main([])
    captured = capsys.readouterr()
    assert code == 2
    assert "run" in captured.out + captured.err


def test_help_exits_0(capsys):
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    assert "certify" in out


# ---------------------------------------------------------------------- Adult, end to end
def test_adult_mondrian_end_to_end(capsys, tmp_path):
    if not (ADULT.parents[2] / "shared" / "data" / "adult" / "adult.csv").is_file():
        pytest.fail("the Adult data set is missing (../shared/data/adult beside the repository)")
    out = tmp_path / "adult"
    code, report = run_json(capsys, ADULT, "--out", out)
    assert code == 0
    assert list(report) == TOP_KEYS
    assert report["verdict"] == "pass"
    (release,) = report["releases"]
    assert release["records"] == 30162
    assert release["metrics"]["k"] >= 10
    assert release["metrics"]["l_distinct"] >= 5
    summary = report["attacks"]["linking"]["summary"]
    assert summary["k"] >= 10 and summary["l_distinct"] >= 5 and summary["violations"] == 0
    assert all(e["holds"] is True for e in report["expectations"])
    code, text, _ = cli(capsys, "certify", ADULT, out / "release_1.csv", "--require", "linking.k >= 10",
                        "--require", "linking.l_distinct >= 5", "--json", "-")
    assert code == 0
    assert json.loads(text)["verdict"] == "pass"


def test_registries_resolve_names_and_import_lazily():
    """Every registered name resolves to a class of that name; listing the registries imports no publisher or
    attack module (a run imports only what it uses)."""
    import subprocess
    import sys

    from publishers import PUBLISHERS

    for registry in (PUBLISHERS, attacks.ATTACKS):
        for name in list(registry):
            assert registry[name].name == name
    code = ("import sys, publishers, attacks; names = sorted(publishers.PUBLISHERS) + sorted(attacks.ATTACKS); "
            "loaded = [m for m in sys.modules if m.startswith(('publishers.', 'attacks.', 'solver'))]; "
            "print(len(names), sorted(loaded))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split(" ", 1)
    assert out[0] == "16" and out[1].strip() == "['attacks.base', 'publishers.base']"
