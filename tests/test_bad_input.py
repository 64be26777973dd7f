"""Bad input: exit code 2, exactly one line on stderr naming the file, the key and the problem, no traceback,
and nothing written (DESIGN.md, "CLI and exit codes").

Over 500 lines because it is one contract checked on every input path (files, attributes, values, expect
lines, parameters, hierarchies, dynamics, releases, certify, usage), each case one broken key of the same
base scenario through the same helpers; the sections below follow the input's structure.

Every case starts from ``tests/data/tiny.yaml`` (16 people, a numeric and a nested quasi-identifier, one
sensitive attribute), breaks one thing, and runs the CLI in-process through :func:`multirelease.cli.main`;
two cases go through a real subprocess to prove that no traceback reaches the terminal.
"""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from multirelease.cli import main

DATA = Path(__file__).resolve().parent / "data"
TINY_CSV = DATA / "tiny.csv"
GOOD_RELEASE = DATA / "tiny_release.csv"
SPEC = DATA / "tiny_spec.yaml"


# ---------------------------------------------------------------------- helpers
def tiny_doc() -> dict:
    """The scenario of tests/data/tiny.yaml, with its data path made absolute."""
    doc = yaml.safe_load((DATA / "tiny.yaml").read_text(encoding="utf-8"))
    doc["data"] = {"file": str(TINY_CSV)}
    return doc


def write_yaml(tmp_path: Path, doc: dict, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def write_text(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def expect_bad(capsys, argv: list[str], *needles: str) -> str:
    """Run the CLI; assert exit 2, one stderr line ``error: ...`` containing every needle; return it."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 2, (code, captured.out, captured.err)
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    lines = captured.err.strip("\n").splitlines()
    assert len(lines) == 1, captured.err
    line = lines[0]
    assert line.startswith("error: "), line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def run_bad(capsys, tmp_path: Path, scenario: Path, *needles: str) -> str:
    """``run SCENARIO --out DIR --json PATH`` must fail with code 2 and write nothing."""
    out = tmp_path / "out"
    report = tmp_path / "report.json"
    line = expect_bad(capsys, ["run", scenario, "--out", out, "--json", report, "--quiet"], *needles)
    assert not report.exists()
    assert not out.exists() or not list(out.iterdir())
    return line


def run_doc_bad(capsys, tmp_path: Path, doc: dict, *needles: str) -> str:
    scenario = write_yaml(tmp_path, doc)
    return run_bad(capsys, tmp_path, scenario, scenario.name, *needles)


def publish_bad(capsys, tmp_path: Path, scenario: Path, *needles: str) -> str:
    out = tmp_path / "published"
    line = expect_bad(capsys, ["publish", scenario, "--out", out], *needles)
    assert not out.exists() or not list(out.iterdir())
    return line


def release_csv(tmp_path: Path, replace: tuple[str, str] | None = None, header: str | None = None,
                name: str = "release.csv") -> Path:
    """tests/data/tiny_release.csv with one substring replaced (first occurrence) or another header."""
    lines = GOOD_RELEASE.read_text(encoding="utf-8").splitlines()
    if header is not None:
        lines[0] = header
    if replace is not None:
        old, new = replace
        for i in range(1, len(lines)):
            if old in lines[i]:
                lines[i] = lines[i].replace(old, new, 1)
                break
        else:  # pragma: no cover - a broken test
            raise AssertionError(f"{old!r} not in the release")
    return write_text(tmp_path, name, "\n".join(lines) + "\n")


def given_release_doc(path: Path) -> dict:
    doc = tiny_doc()
    doc["releases"] = [{"file": str(path)}]
    doc["attacks"] = [{"linking": {}}]
    doc["expect"] = ["linking.k >= 2"]
    return doc


# ---------------------------------------------------------------------- sanity: the base scenario is good
def test_base_scenario_is_valid(capsys, tmp_path):
    assert main(["run", str(write_yaml(tmp_path, tiny_doc())), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------- files and YAML
def test_missing_scenario_file(capsys, tmp_path):
    missing = tmp_path / "nowhere.yaml"
    run_bad(capsys, tmp_path, missing, "nowhere.yaml", "not found")


def test_malformed_yaml(capsys, tmp_path):
    path = write_text(tmp_path, "broken.yaml", "name: x\nschema: {attributes: [unclosed\nreleases: - a\n")
    line = run_bad(capsys, tmp_path, path, "broken.yaml", "malformed YAML")
    assert "line " in line


def test_yaml_that_is_not_a_mapping(capsys, tmp_path):
    path = write_text(tmp_path, "list.yaml", "- a\n- b\n")
    run_bad(capsys, tmp_path, path, "list.yaml", "mapping")


def test_unknown_top_level_key(capsys, tmp_path):
    doc = tiny_doc()
    doc["relases"] = []
    run_doc_bad(capsys, tmp_path, doc, "relases", "unknown top-level key")


def test_missing_schema(capsys, tmp_path):
    doc = tiny_doc()
    del doc["schema"]
    run_doc_bad(capsys, tmp_path, doc, ": schema:", "missing")


# ---------------------------------------------------------------------- unknown attributes
def test_unknown_attribute_in_data_columns(capsys, tmp_path):
    text = TINY_CSV.read_text(encoding="utf-8").splitlines()
    text = [text[0] + ",height"] + [ln + ",180" for ln in text[1:]]
    data = write_text(tmp_path, "people.csv", "\n".join(text) + "\n")
    doc = tiny_doc()
    doc["data"] = {"file": str(data)}
    scenario = write_yaml(tmp_path, doc)
    run_bad(capsys, tmp_path, scenario, "people.csv", "column height", "unknown attribute 'height'")


def test_unknown_attribute_in_data_rows(capsys, tmp_path):
    doc = tiny_doc()
    doc["data"] = {"rows": [{"id": 1, "age": 30, "country": "UK", "disease": "flu", "height": 180}]}
    run_doc_bad(capsys, tmp_path, doc, "data.rows", "unknown attribute 'height'")


def test_unknown_attribute_in_release_file_column(capsys, tmp_path):
    path = release_csv(tmp_path, header="group,age,nation,disease")
    scenario = write_yaml(tmp_path, given_release_doc(path))
    run_bad(capsys, tmp_path, scenario, "release.csv", "column nation", "unknown attribute 'nation'")


def test_unknown_attribute_in_release_attributes(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2, "attributes": ["age", "nation", "disease"]}]
    run_doc_bad(capsys, tmp_path, doc, "releases[0].attributes", "unknown attribute 'nation'")


def test_identifier_in_release_attributes(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2, "attributes": ["id", "age", "disease"]}]
    run_doc_bad(capsys, tmp_path, doc, "releases[0].attributes", "identifier")


def test_unknown_attribute_in_dynamics_update(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "naive", "k": 2}]
    doc["dynamics"] = {2: {"update": {3: {"height": 180}}}}
    run_doc_bad(capsys, tmp_path, doc, "dynamics.2", "unknown attribute 'height'")


def test_dynamics_update_value_not_in_hierarchy(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "naive", "k": 2}]
    doc["dynamics"] = {2: {"update": {3: {"country": "Mars"}}}}
    run_doc_bad(capsys, tmp_path, doc, "dynamics.2", "'Mars'", "hierarchy")


# ---------------------------------------------------------------------- values
def test_data_value_not_in_hierarchy(capsys, tmp_path):
    text = TINY_CSV.read_text(encoding="utf-8").replace("3,27,UK,cancer", "3,27,Mars,cancer")
    data = write_text(tmp_path, "people.csv", text)
    doc = tiny_doc()
    doc["data"] = {"file": str(data)}
    scenario = write_yaml(tmp_path, doc)
    run_bad(capsys, tmp_path, scenario, "people.csv", "column country", "'Mars'", "not in its hierarchy")


def test_data_row_value_not_in_hierarchy(capsys, tmp_path):
    doc = tiny_doc()
    doc["data"] = {"rows": [{"id": 1, "age": 130, "country": "UK", "disease": "flu"}]}
    run_doc_bad(capsys, tmp_path, doc, "data.rows", "'130'", "age", "not in its hierarchy")


def test_release_file_truncated_interval(capsys, tmp_path):
    path = release_csv(tmp_path, replace=('"[30,39]"', '"[30,"'))
    scenario = write_yaml(tmp_path, given_release_doc(path))
    run_bad(capsys, tmp_path, scenario, "release.csv", "column age", "line 5", "'[30,'")


def test_release_file_label_not_a_node(capsys, tmp_path):
    path = release_csv(tmp_path, replace=("Europe", "Asia"))
    scenario = write_yaml(tmp_path, given_release_doc(path))
    run_bad(capsys, tmp_path, scenario, "release.csv", "column country", "line 2", "'Asia'", "hierarchy")


def test_release_file_interval_outside_domain(capsys, tmp_path):
    path = release_csv(tmp_path, replace=('"[20,29]"', '"[10,29]"'))
    scenario = write_yaml(tmp_path, given_release_doc(path))
    run_bad(capsys, tmp_path, scenario, "release.csv", "column age", "outside the domain")


def test_interval_for_a_non_ordered_hierarchy(capsys, tmp_path):
    # country's leaves are names: an interval is not a generalized value of it
    path = release_csv(tmp_path, replace=("Europe", '"[1,2]"'))
    scenario = write_yaml(tmp_path, given_release_doc(path))
    run_bad(capsys, tmp_path, scenario, "release.csv", "column country", "'[1,2]'", "hierarchy of 'country'")


def test_interval_for_numeric_leaves_that_are_not_ordered(capsys, tmp_path):
    # numbers as leaves, but not ascending in depth-first order: not an ordered hierarchy
    doc = tiny_doc()
    doc["schema"]["attributes"]["grade"] = {"role": "quasi", "hierarchy": {"low": [3, 1], "high": [2, 4]}}
    doc["data"] = {"rows": [{"id": i, "age": 20 + i, "country": "UK", "disease": d, "grade": g}
                            for i, (d, g) in enumerate([("flu", 1), ("cold", 3), ("flu", 2), ("hiv", 4)], 1)]}
    doc["releases"] = [{"rows": [{"age": "[20,29]", "country": "UK", "disease": "flu", "grade": "[1,3]"}]}]
    doc["attacks"] = [{"linking": {}}]
    doc["expect"] = []
    run_doc_bad(capsys, tmp_path, doc, "releases[0].rows", "'[1,3]'", "grade")


def test_interval_generalization_declared_for_non_ordered_hierarchy(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["generalization"] = "interval"
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.country.generalization", "ascending order")


def test_release_rows_sensitive_value_not_in_hierarchy(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["disease"]["hierarchy"] = {"illness": ["flu", "cold", "cancer", "hiv"]}
    doc["releases"] = [{"rows": [{"age": "[20,29]", "country": "UK", "disease": "plague"}]}]
    doc["attacks"] = []
    doc["expect"] = []
    run_doc_bad(capsys, tmp_path, doc, "releases[0].rows", "'plague'")


# ---------------------------------------------------------------------- expect lines
def test_expect_line_that_does_not_parse(capsys, tmp_path):
    doc = tiny_doc()
    doc["expect"] = ["linking.k >= 2", "linking.k >= ten"]
    run_doc_bad(capsys, tmp_path, doc, "expect[1]", "cannot parse", "linking.k >= ten")


def test_expect_that_is_not_a_string(capsys, tmp_path):
    doc = tiny_doc()
    doc["expect"] = [{"linking.k": 2}]
    run_doc_bad(capsys, tmp_path, doc, "expect[0]", "must be a string")


def test_expect_naming_an_attack_not_run(capsys, tmp_path):
    doc = tiny_doc()
    doc["expect"] = ["correspondence.FA == 4"]
    run_doc_bad(capsys, tmp_path, doc, "expect[0]", "correspondence", "not run")


def test_expect_naming_a_metric_that_does_not_exist(capsys, tmp_path):
    doc = tiny_doc()
    doc["expect"] = ["linking.kk >= 2"]
    run_doc_bad(capsys, tmp_path, doc, "expect[0]", "no metric 'kk'")


def test_expect_naming_a_release_that_does_not_exist(capsys, tmp_path):
    doc = tiny_doc()
    doc["expect"] = ["release[2].LM < 0.5"]
    run_doc_bad(capsys, tmp_path, doc, "expect[0]", "no release 2")


def test_expect_naming_an_unknown_release_metric(capsys, tmp_path):
    doc = tiny_doc()
    doc["expect"] = ["release[1].beauty < 0.5"]
    run_doc_bad(capsys, tmp_path, doc, "expect[0]", "unknown release metric 'beauty'")


def test_expect_division_by_zero(capsys, tmp_path):
    doc = tiny_doc()
    doc["expect"] = ["linking.alpha <= 1/0"]
    run_doc_bad(capsys, tmp_path, doc, "expect[0]", "division by zero")


# ---------------------------------------------------------------------- parameters
@pytest.mark.parametrize("params, key, words", [
    ({"k": 1}, "releases[0].k", ["must be an int in [2, inf)", "Got 1"]),
    ({"k": 2, "l": 0}, "releases[0].l", ["must be a number in [1, inf)", "Got 0"]),
    ({"k": 2, "l_kind": "bogus"}, "releases[0].l_kind", ["must be one of", "'bogus'"]),
    ({"k": 2, "m": 3}, "releases[0].m", ["unknown parameter 'm'"]),
    ({"k": "three"}, "releases[0].k", ["must be an int"]),
    ({"k": True}, "releases[0].k", ["must be an int"]),
])
def test_publisher_parameter_out_of_range(capsys, tmp_path, params, key, words):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", **params}]
    run_doc_bad(capsys, tmp_path, doc, key, *words)


@pytest.mark.parametrize("params, key, words", [
    ({"k": 1}, "attacks[0].linking.k", ["must be an int in [2, inf)"]),
    ({"l": 0.5}, "attacks[0].linking.l", ["must be a number in [1, inf)"]),
    ({"alpha": 0}, "attacks[0].linking.alpha", ["(0, 1]"]),
    ({"z": 1}, "attacks[0].linking.z", ["unknown parameter 'z'"]),
])
def test_attack_parameter_out_of_range(capsys, tmp_path, params, key, words):
    doc = tiny_doc()
    doc["attacks"] = [{"linking": params}]
    run_doc_bad(capsys, tmp_path, doc, key, *words)


def test_publisher_without_k_or_l(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian"}]
    run_doc_bad(capsys, tmp_path, doc, "releases[0]", "k >= 2 or l > 1")


def test_unknown_publisher(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrain", "k": 2}]
    run_doc_bad(capsys, tmp_path, doc, "releases[0].publisher", "unknown publisher 'mondrain'")


def test_unknown_attack(capsys, tmp_path):
    doc = tiny_doc()
    doc["attacks"] = [{"linkage": {"k": 2}}]
    run_doc_bad(capsys, tmp_path, doc, "attacks[0]", "unknown attack 'linkage'")


def test_seed_negative(capsys, tmp_path):
    doc = tiny_doc()
    doc["seed"] = -1
    run_doc_bad(capsys, tmp_path, doc, ": seed:", "non-negative integer")


def test_seed_not_an_integer(capsys, tmp_path):
    doc = tiny_doc()
    doc["seed"] = "abc"
    run_doc_bad(capsys, tmp_path, doc, ": seed:", "non-negative integer")


def test_unsatisfiable_principle(capsys, tmp_path):
    # 16 records cannot be 20-anonymous even as one class
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 20}]
    doc["attacks"] = [{"linking": {}}]
    doc["expect"] = []
    run_doc_bad(capsys, tmp_path, doc, "releases[0]", "cannot satisfy")


# ---------------------------------------------------------------------- hierarchies
def test_hierarchy_file_missing(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": "no_such_hierarchy.csv"}
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.country.hierarchy.file", "no_such_hierarchy.csv",
                "not found")


def test_arx_hierarchy_with_a_leaf_twice(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": str(DATA / "arx_leaf_twice.csv")}
    scenario = write_yaml(tmp_path, doc)
    run_bad(capsys, tmp_path, scenario, "arx_leaf_twice.csv", "line 4", "leaf 'UK' appears twice")


def test_arx_hierarchy_with_a_label_naming_two_nodes(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": str(DATA / "arx_label_two_nodes.csv")}
    scenario = write_yaml(tmp_path, doc)
    run_bad(capsys, tmp_path, scenario, "arx_label_two_nodes.csv", "line 3", "'West'", "names two nodes")


def test_nested_hierarchy_with_a_leaf_twice(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"Europe": ["UK", "France"], "America": ["US", "UK"]}
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.country.hierarchy", "leaf 'UK' appears twice")


def test_nested_hierarchy_with_a_label_naming_two_nodes(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"Europe": {"West": ["UK"], "East": ["PL"]},
                                                           "America": {"West": ["US", "Canada"]}}
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.country.hierarchy", "'West'", "names two nodes")


def test_quasi_identifier_without_hierarchy(capsys, tmp_path):
    doc = tiny_doc()
    del doc["schema"]["attributes"]["country"]["hierarchy"]
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.country", "needs a hierarchy")


def test_unknown_role(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["disease"]["role"] = "secret"
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.disease.role", "'secret'")


def test_numeric_hierarchy_max_below_min(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["age"]["hierarchy"] = {"numeric": {"min": 60, "max": 20}}
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.age.hierarchy.numeric", "below min")


@pytest.mark.parametrize("bands", [["x"], [2.5], [5, "10"]])
def test_numeric_hierarchy_bands_not_integers(capsys, tmp_path, bands):
    doc = tiny_doc()
    doc["schema"]["attributes"]["age"]["hierarchy"] = {"numeric": {"min": 20, "max": 59, "bands": bands}}
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes.age.hierarchy.numeric", "band widths must be integers")


def test_arx_hierarchy_not_utf8(capsys, tmp_path):
    arx = tmp_path / "latin1.csv"
    arx.write_bytes("Zürich;Europe;*\nUK;Europe;*\n".encode("latin-1"))
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": str(arx)}
    scenario = write_yaml(tmp_path, doc)
    run_bad(capsys, tmp_path, scenario, "latin1.csv", "schema.attributes.country.hierarchy", "UTF-8")


def test_two_identifiers(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["ssn"] = "identifier"
    run_doc_bad(capsys, tmp_path, doc, "schema.attributes", "at most one attribute can be the identifier")


def test_publisher_name_not_a_string(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": ["mondrian"], "k": 2}]
    run_doc_bad(capsys, tmp_path, doc, "releases[0].publisher", "unknown publisher")


# ---------------------------------------------------------------------- dynamics
def test_dynamics_deleting_an_unknown_id(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "naive", "k": 2}]
    doc["dynamics"] = {2: {"delete": [3, 99]}}
    run_doc_bad(capsys, tmp_path, doc, "dynamics.2", "'99'", "unknown record")


def test_dynamics_deleting_an_unknown_id_publish_writes_nothing(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "naive", "k": 2}]
    doc["dynamics"] = {2: {"delete": [99]}}
    scenario = write_yaml(tmp_path, doc)
    publish_bad(capsys, tmp_path, scenario, "scenario.yaml", "dynamics.2", "'99'")


@pytest.mark.parametrize("index", [0, 3, "two"])
def test_dynamics_release_index_out_of_range(capsys, tmp_path, index):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "naive", "k": 2}]
    doc["dynamics"] = {index: {"delete": [3]}}
    run_doc_bad(capsys, tmp_path, doc, f"dynamics.{index}", "1..2")


def test_dynamics_unknown_key(capsys, tmp_path):
    doc = tiny_doc()
    doc["dynamics"] = {1: {"remove": [3]}}
    run_doc_bad(capsys, tmp_path, doc, "dynamics.1", "unknown key 'remove'")


# ---------------------------------------------------------------------- releases and adversary
def test_release_file_missing(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"file": "no_such_release.csv"}]
    run_doc_bad(capsys, tmp_path, doc, "releases[0].file", "no_such_release.csv", "not found")


def test_release_item_with_unknown_key(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"file": str(GOOD_RELEASE), "format": "csv"}]
    run_doc_bad(capsys, tmp_path, doc, "releases[0]", "unknown key 'format'")


def test_releases_empty(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = []
    run_doc_bad(capsys, tmp_path, doc, ": releases:", "non-empty list")


def test_adversary_unknown_value(capsys, tmp_path):
    doc = tiny_doc()
    doc["adversary"] = {"sensitive": "sometimes"}
    run_doc_bad(capsys, tmp_path, doc, "adversary.sensitive", "'sometimes'")


# ---------------------------------------------------------------------- certify
def certify_bad(capsys, tmp_path: Path, argv: list, *needles: str) -> str:
    report = tmp_path / "verdict.json"
    line = expect_bad(capsys, ["certify", *argv, "--json", report], *needles)
    assert not report.exists()
    return line


def test_certify_with_a_missing_release_file(capsys, tmp_path):
    certify_bad(capsys, tmp_path, [SPEC, tmp_path / "release_9.csv", "--require", "linking.k >= 2"],
                "release_9.csv", "release 1", "not found")


def test_certify_with_an_unparsable_require(capsys, tmp_path):
    certify_bad(capsys, tmp_path, [SPEC, GOOD_RELEASE, "--require", "linking.k >== 2"],
                "--require", "cannot parse", "linking.k >== 2")


def test_certify_require_with_an_unknown_attack(capsys, tmp_path):
    certify_bad(capsys, tmp_path, [SPEC, GOOD_RELEASE, "--require", "linkage.k >= 2"],
                "--require", "unknown attack 'linkage'")


def test_certify_require_with_an_unknown_metric(capsys, tmp_path):
    certify_bad(capsys, tmp_path, [SPEC, GOOD_RELEASE, "--require", "linking.kk >= 2"],
                "--require", "no metric 'kk'")


def test_certify_unknown_attack_option(capsys, tmp_path):
    certify_bad(capsys, tmp_path, [SPEC, GOOD_RELEASE, "--attack", "linkage", "--require", "linking.k >= 2"],
                "--attack", "unknown attack 'linkage'")


def test_certify_malformed_release_file(capsys, tmp_path):
    bad = release_csv(tmp_path, replace=('"[30,39]"', '"[30,"'), name="release_1.csv")
    certify_bad(capsys, tmp_path, [SPEC, bad, "--require", "linking.k >= 2"],
                "release_1.csv", "column age", "'[30,'")


def test_certify_missing_spec(capsys, tmp_path):
    certify_bad(capsys, tmp_path, [tmp_path / "nospec.yaml", GOOD_RELEASE, "--require", "linking.k >= 2"],
                "nospec.yaml", "not found")


def test_certify_spec_with_a_publisher(capsys, tmp_path):
    spec = write_yaml(tmp_path, tiny_doc(), "spec.yaml")
    certify_bad(capsys, tmp_path, [spec], "spec.yaml", "releases", "as published")


# group 2 of tiny_release.csv with its third row (line 7) published in the age band [40,49]: the adversary
# tells it from the group's other rows, [30,39], so the column cannot make them one class
MIXED_GROUP = ('2,"[30,39]",America,hiv', '2,"[40,49]",America,hiv')


def test_certify_group_mixing_generalized_qi_values(capsys, tmp_path):
    bad = release_csv(tmp_path, replace=MIXED_GROUP, name="release_1.csv")
    line = certify_bad(capsys, tmp_path, [SPEC, bad, "--require", "linking.k >= 2"],
                       "release_1.csv", "group 2", "data row 4 (line 5) has age=[30,39]",
                       "data row 6 (line 7) has age=[40,49]")
    assert "country=" not in line  # only the QI values that differ


def test_run_release_file_group_mixing_generalized_qi_values(capsys, tmp_path):
    bad = release_csv(tmp_path, replace=MIXED_GROUP)
    scenario = write_yaml(tmp_path, given_release_doc(bad))
    run_bad(capsys, tmp_path, scenario, "release.csv", "group 2", "line 5", "line 7")
    doc = given_release_doc(bad)
    doc["releases"][0]["anatomy"] = True  # declared anatomy-style: the group is the class (sizes 3, 4, 5, 4)
    assert main(["run", str(write_yaml(tmp_path, doc, "anatomy.yaml")), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_group_mixing_generalized_qi_values_accepted_as_anatomy(tmp_path):
    """The same file declared anatomy-style: accepted, one class per group (sizes 3, 4, 5, 4 as in the
    consistent file), while without a group column the adversary sees five classes of identical QI values
    (the moved row alone: [40,49] with America)."""
    from multirelease.formats.release_csv import read_release_csv
    from multirelease.model.schema import Schema

    schema = Schema.from_mapping(yaml.safe_load(SPEC.read_text(encoding="utf-8"))["schema"], base=DATA)
    mixed = release_csv(tmp_path, replace=MIXED_GROUP)
    release = read_release_csv(mixed, schema, anatomy=True)
    assert release.class_sizes.tolist() == read_release_csv(GOOD_RELEASE, schema).class_sizes.tolist() == [3, 4, 5, 4]
    no_group = release_csv(tmp_path, replace=MIXED_GROUP, name="no_group.csv")
    lines = no_group.read_text(encoding="utf-8").splitlines()
    no_group.write_text("\n".join(x.split(",", 1)[1] for x in lines) + "\n", encoding="utf-8")
    assert read_release_csv(no_group, schema).class_sizes.tolist() == [3, 3, 1, 5, 4]


# ---------------------------------------------------------------------- command-line usage
def test_unknown_command(capsys):
    expect_bad(capsys, ["frobnicate"], "frobnicate")


def test_unknown_option(capsys, tmp_path):
    expect_bad(capsys, ["run", str(DATA / "tiny.yaml"), "--colour"], "--colour")


def test_json_path_is_a_directory(capsys, tmp_path):
    out = tmp_path / "out"
    expect_bad(capsys, ["run", DATA / "tiny.yaml", "--json", tmp_path, "--out", out, "--quiet"],
               str(tmp_path), "--json", "directory")
    assert not out.exists()


def test_out_is_a_file(capsys, tmp_path):
    target = write_text(tmp_path, "taken", "")
    report = tmp_path / "report.json"
    expect_bad(capsys, ["run", DATA / "tiny.yaml", "--out", target, "--json", report, "--quiet"],
               "taken", "--out", "not a directory")
    assert not report.exists()
    expect_bad(capsys, ["publish", DATA / "tiny.yaml", "--out", target], "taken", "--out")
    assert target.read_text() == ""


def test_certify_json_path_is_a_directory(capsys, tmp_path):
    expect_bad(capsys, ["certify", SPEC, GOOD_RELEASE, "-r", "linking.k >= 2", "--json", tmp_path],
               "--json", "directory")


# ---------------------------------------------------------------------- through a real process
CLI = Path(sys.executable).with_name("multirelease")


def run_process(*args: str) -> subprocess.CompletedProcess:
    assert CLI.is_file(), f"console script not installed at {CLI}"
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_process_missing_scenario_file(tmp_path):
    proc = run_process("run", tmp_path / "nowhere.yaml", "--json", tmp_path / "r.json")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip("\n").splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "nowhere.yaml" in lines[0], proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "r.json").exists()


def test_process_parameter_out_of_range(tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 1}]
    scenario = write_yaml(tmp_path, doc)
    out = tmp_path / "out"
    proc = run_process("run", scenario, "--out", out, "--json", "-")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip("\n").splitlines()
    assert len(lines) == 1, proc.stderr
    assert "scenario.yaml" in lines[0] and "releases[0].k" in lines[0] and "Got 1" in lines[0]
    assert proc.stdout == ""
    assert not out.exists()


def test_process_malformed_release_during_certify(tmp_path):
    bad = release_csv(tmp_path, replace=("Europe", "Asia"), name="release_1.csv")
    proc = run_process("certify", SPEC, bad, "--require", "linking.k >= 2")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip("\n").splitlines()
    assert len(lines) == 1 and "release_1.csv" in lines[0] and "'Asia'" in lines[0], proc.stderr


def test_release_group_ids_must_be_integers(tmp_path, capsys):
    bad = tmp_path / "release.csv"
    bad.write_text('group,age,country,disease\n1.5,"[20,29]",Europe,flu\n', encoding="utf-8")
    from multirelease.cli import main

    code = main(["certify", str(Path(__file__).parent / "data" / "tiny_spec.yaml"), str(bad), "-r", "linking.k >= 2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "release.csv" in err[0] and "column group" in err[0] and "integers" in err[0]
