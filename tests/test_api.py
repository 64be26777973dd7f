"""The Python API (issue 15, item 6): the worked example of docs/python_api.md runs and prints what the page
says, with the figures the CLI reports for the same inputs; DataFrames and dicts give the reports that files
give; results are immutable; ``import multirelease`` stays cheap."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import multirelease
from multirelease.cli import main
from multirelease.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DOC = ROOT / "docs" / "python_api.md"


def _cli_json(args: list[str], tmp_path: Path, name: str = "out.json") -> tuple[int, dict]:
    out = tmp_path / name
    code = main([*args, "--json", str(out), "--quiet"])
    return code, json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The docs' python block executed from the repository root: its namespace and what it printed."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    printed = re.search(r"It prints:\n\n```text\n(.*?)```", text, re.S).group(1)
    namespace: dict = {"__name__": "docs_example"}
    buf = io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(buf):
        exec(compile(block, str(DOC), "exec"), namespace)
    return namespace, buf.getvalue(), printed


def test_docs_example_prints_what_the_page_shows(example):
    _, out, printed = example
    assert out == printed


def test_docs_example_figures_are_the_cli_figures(example, tmp_path):
    """Each principle's scenario written as YAML with the data as the CSV file, run by the CLI: the same JSON
    report as the API's, the same exit code, and the printed comparison holds the CLI's numbers."""
    ns, out, _ = example
    assert set(ns["results"]) == {"naive", "m_invariance"}  # two principles on one table
    for name, params in ns["principles"].items():
        doc = dict(ns["scenario"], name=name, releases=[{"publisher": name, **params}] * 2)
        doc["data"] = {"file": str(DATA / "tiny.csv")}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        code, report = _cli_json(["run", str(path)], tmp_path, f"{name}.json")
        result = ns["results"][name]
        assert result.report == report
        assert (result.verdict, result.exit_code) == (report["verdict"], code)
        assert f"{name} {report['verdict'].upper()} exit {code}" in out.splitlines()
        for (attack, metric) in ns["shown"]:
            assert ns["comparison"].loc[(attack, metric), name] == report["attacks"][attack]["summary"][metric]
    # what the page's prose says of the figures
    naive = ns["results"]["naive"].report["attacks"]["update_graph"]["summary"]
    safe = ns["results"]["m_invariance"].report["attacks"]["update_graph"]["summary"]
    assert (naive["vulnerable_values"], naive["vulnerable_records"], naive["max_risk"]) == (4, 2, 1)
    assert (safe["vulnerable_values"], safe["max_risk"]) == (0, 0.5)


def test_result_is_immutable(example):
    result = example[0]["results"]["naive"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.verdict = "pass"
    report = result.report
    report["verdict"] = "pass"
    report["attacks"].clear()
    assert result.report["verdict"] == "fail" and result.report["attacks"]
    frames = result.releases
    columns = list(frames[0].columns)
    frames[0].columns = [f"changed_{c}" for c in columns]
    assert list(result.releases[0].columns) == columns


def test_to_frame_has_one_row_per_expectation_and_metric(example):
    result = example[0]["results"]["naive"]
    frame = result.to_frame()
    report = result.report
    assert (frame.kind == "expectation").sum() == len(report["expectations"])
    n_metrics = sum(len(a["summary"]) + len(a.get("bounds", {})) for a in report["attacks"].values())
    assert (frame.kind == "attack").sum() == n_metrics
    n_release = sum(2 + len(r["metrics"]) for r in report["releases"])
    assert (frame.kind == "release").sum() == n_release
    row = frame[(frame.kind == "expectation")].iloc[0]
    assert (row.subject, row.metric, row.value, row.holds) == ("update_graph", "vulnerable_values", 4, False)


def test_repr_html_is_the_html_report(example):
    """The page's body as a fragment with its style scoped to it (issue 25, item 6; tests/reports/
    test_board_page.py checks the fragment)."""
    from multirelease.reports.html_page import render_html

    result = example[0]["results"]["m_invariance"]
    assert result._repr_html_() == render_html(result.report, fragment=True)
    assert render_html(result.report).split("<body>", 1)[1].split("</body>", 1)[0] in result._repr_html_()


def test_certify_dataframes_and_dicts_give_the_cli_report(tmp_path):
    """Releases written by ``run --out``, certified by the CLI from the files and by the API from DataFrames
    (read back from those files) with the spec as a path and as a dict: one report."""
    assert main(["run", str(DATA / "tiny.yaml"), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    release = tmp_path / "out" / "release_1.csv"
    spec = DATA / "tiny_spec.yaml"
    code, report = _cli_json(["certify", str(spec), str(release), "--require", "linking.k >= 3"], tmp_path)
    assert code == 1 and report["verdict"] == "fail"  # tiny.yaml's Mondrian release is 2-anonymous
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    doc = yaml.safe_load(spec.read_text(encoding="utf-8"))
    for spec_arg in (spec, doc):
        result = multirelease.certify(spec_arg, [frame], require=["linking.k >= 3"])
        assert result.exit_code == code
        got = result.report
        assert got["scenario"] == (report["scenario"] if spec_arg is spec else got["scenario"])
        got["scenario"] = report["scenario"]  # a dict spec is named by its 'name' key
        assert got == report
    from_files = multirelease.certify(spec, [release], require=["linking.k >= 3"])
    assert from_files.report == report


def test_publish_returns_the_files_the_cli_writes(tmp_path):
    assert main(["publish", str(ROOT / "scenarios" / "toy_republication.yaml"), "--out", str(tmp_path / "cli")]) == 0
    result = multirelease.publish(ROOT / "scenarios" / "toy_republication.yaml", out=tmp_path / "api")
    assert result.verdict == "none" and len(result.releases) == 2
    for i, frame in enumerate(result.releases, 1):
        cli = (tmp_path / "cli" / f"release_{i}.csv").read_text(encoding="utf-8")
        assert (tmp_path / "api" / f"release_{i}.csv").read_text(encoding="utf-8") == cli
        assert frame.to_csv(index=False) == cli


def test_dict_with_numpy_numbers_and_paths_is_the_yaml_file(tmp_path):
    """A dict holding numpy scalars, Paths and tuples runs as the YAML file with plain values does."""
    import numpy as np

    doc = yaml.safe_load((DATA / "tiny.yaml").read_text(encoding="utf-8"))
    code, report = _cli_json(["run", str(DATA / "tiny.yaml")], tmp_path)
    doc["data"] = {"file": DATA / "tiny.csv"}
    doc["seed"] = np.int64(doc["seed"])
    doc["releases"] = ({"publisher": "mondrian", "k": np.int64(2), "l": np.float64(2.0)},)
    result = multirelease.run(doc)
    assert (result.exit_code, result.report) == (code, report)


def test_bad_dict_names_the_dict_not_a_temporary_file():
    doc = {"schema": {"attributes": {"age": {"role": "quasi", "hierarchy": {"numeric": {"min": 0, "max": 9}}}}},
           "data": pd.DataFrame({"age": [1, 2]}), "releases": [{"publisher": "mondrian", "k": 1}]}
    with pytest.raises(InputError) as err:
        multirelease.run(doc)
    line = err.value.one_line()
    assert line.startswith("<scenario dict>: releases[0].k") and "must be an int in [2, inf). Got 1." in line
    assert "multirelease-api-" not in line and "\n" not in line


def test_ledger_through_the_api_matches_the_cli(tmp_path):
    """One month through ``ledger_publish`` with the snapshot as a DataFrame; ``ledger_history`` lists it and
    ``verify_ledger`` gives the report ``multirelease ledger DIR --verify --json`` gives."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("""schema:
  attributes:
    id: identifier
    age: {role: quasi, hierarchy: {numeric: {min: 20, max: 59, bands: [10, 20]}}}
    country: {role: quasi, hierarchy: {Europe: [UK, France], America: [US, Canada]}}
    disease: {role: sensitive}
publisher: {publisher: mondrian, k: 2, l: 2}
attacks: [linking]
expect: ['linking.k >= 2']
""", encoding="utf-8")
    people = pd.read_csv(DATA / "tiny.csv")
    out = tmp_path / "pub" / "release_1.csv"
    out.parent.mkdir()
    result = multirelease.ledger_publish(spec, people, ledger=tmp_path / "ledger", out=out)
    assert (result.verdict, result.exit_code) == ("pass", 0) and out.is_file()
    history = multirelease.ledger_history(tmp_path / "ledger")
    assert list(history["n"]) == [1] and history["records"][0] == 16 and history["file"][0] == str(out)
    verified = multirelease.verify_ledger(tmp_path / "ledger")
    code, report = _cli_json(["ledger", str(tmp_path / "ledger"), "--verify"], tmp_path)
    assert (verified.exit_code, verified.report) == (code, report) and code == 0
    code, report = _cli_json(["certify", str(spec), str(out), "--ledger", str(tmp_path / "ledger")], tmp_path,
                             "certify.json")
    against = multirelease.certify(spec, [pd.read_csv(out, dtype=str, keep_default_na=False)],
                                   ledger=tmp_path / "ledger")
    assert (against.exit_code, against.report) == (code, report) and report["verdict"] == "pass"
    out.write_text(out.read_text() + "\n", encoding="utf-8")  # a changed file is a problem, exit 1
    changed = multirelease.verify_ledger(tmp_path / "ledger")
    assert changed.exit_code == 1 and "changed" in changed.problems[0]
    # integrity is part of the verdict (issue 30), in Python as on the command line
    code, report = _cli_json(["ledger", str(tmp_path / "ledger"), "--verify"], tmp_path, "changed.json")
    assert (changed.verdict, changed.exit_code, changed.report) == ("fail", code, report)
    assert report["integrity"][0]["file"] == str(out) and report["certified_verdict"] == "pass"


def test_import_multirelease_is_cheap():
    code = ("import sys, multirelease; assert callable(multirelease.__getattr__); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'numpy', 'yaml', 'attacks', "
            "'publishers', 'solver') or m.startswith('multirelease.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    assert set(multirelease.__all__) <= set(dir(multirelease))
    for name in multirelease.__all__:
        assert getattr(multirelease, name) is not None
