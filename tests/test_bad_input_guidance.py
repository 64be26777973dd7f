"""The bad-input corpus, third part (issue 25, items 1 and 4): errors that say what to do in the words of the
user's own file, and that count every bad record instead of naming the first.

* a publisher's guarantee that needs the public update model, with no ``transitions``: the line names the
  publisher's guarantee (not an attack the spec never listed) and the forms of ``transitions`` to write;
* updates outside the declared transitions: how many, the first few (record, old -> new value, the candidate
  update set spelled out) and the forms that would admit them;
* a requirement on an attack that cannot run on the given files: exit 2 saying why, not UNKNOWN "not reported";
* a table with several bad values: the count and the first few, each with its line (or row) and column.

Every case is checked by :func:`test_bad_input_hostile.expect_bad`: exit code 2, exactly one line on stderr,
no traceback, the test's folder unchanged (nothing written).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from multirelease.cli import main
from test_bad_input_hostile import (LEDGER_SPEC, SPEC, GOOD_RELEASE, TINY_CSV, data_csv, expect_bad, put, put_yaml,
                                    release_argv, run_args, tiny_doc)

FORMS = ("{free: true}", "{diameter: D, shape: window}", "{candidates: {VALUE: [VALUE, ...]}}")


# ---------------------------------------------------------------------- a guarantee that needs transitions
M_INVARIANCE_SPEC = LEDGER_SPEC.replace("publisher: {publisher: mondrian, k: 2, l: 2}\n",
                                        "publisher: {publisher: m_invariance, m: 2}\n"
                                        "adversary: {quasi_identifiers: all, presence: true, "
                                        "sensitive: transitions}\n") \
    .replace("transitions: {candidates: {flu: [flu, cold], cold: [cold, flu]}}\n", "") \
    .replace('expect: ["linking.k >= 2"]\n', "")


def test_ledger_guarantee_without_transitions_names_the_publisher(capsys, tmp_path):
    """m_invariance's guarantee is judged by update_graph, which the spec never listed: the line names the
    guarantee at the spec's ``publisher`` and the forms to write; no ledger is created."""
    assert "\ntransitions:" not in M_INVARIANCE_SPEC and "m_invariance" in M_INVARIANCE_SPEC
    spec = put(tmp_path, "spec.yaml", M_INVARIANCE_SPEC)
    month = put(tmp_path, "month1.csv", TINY_CSV.read_text(encoding="utf-8"))
    line = expect_bad(capsys, tmp_path, release_argv(spec, month, tmp_path / "ledger", tmp_path / "release_1.csv"),
                      ("spec.yaml: publisher:", "m_invariance's guarantee 'update_graph.vulnerable_values == 0'",
                       "needs the public update model", "'transitions'", *FORMS))
    assert "attacks[" not in line
    assert not (tmp_path / "ledger").exists()


def test_scenario_listing_update_graph_without_transitions(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "m_invariance", "m": 2}, {"publisher": "m_invariance", "m": 2}]
    doc["dynamics"] = {2: {"update": {1: {"age": 24}}}}
    doc["attacks"] = ["linking", "update_graph"]
    doc["expect"] = []
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("scenario.yaml: attacks[1].update_graph:", "needs the public update model", *FORMS))


# ---------------------------------------------------------------------- updates outside the model, counted
def _transitions_doc(tmp: Path, dynamics: dict) -> Path:
    doc = tiny_doc()
    doc["schema"]["attributes"]["disease"] = {"role": "sensitive", "hierarchy": ["flu", "cold", "cancer", "hiv"]}
    doc["transitions"] = {"candidates": {"flu": ["flu", "cold"], "cold": ["cold", "flu"]}}
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "mondrian", "k": 2}]
    doc["dynamics"] = dynamics
    return put_yaml(tmp, doc)


def test_updates_outside_the_transitions_are_counted(capsys, tmp_path):
    # records 1, 4, 7, 13 have flu (CUS(flu) = {cold, flu}); 9 moves to cold, inside the model
    update = {1: {"disease": "cancer"}, 4: {"disease": "hiv"}, 7: {"disease": "cancer"}, 9: {"disease": "cold"},
              13: {"disease": "hiv"}}
    line = expect_bad(capsys, tmp_path, run_args(_transitions_doc(tmp_path, {2: {"update": update}}), tmp_path),
                      ("dynamics.2", "4 of the 5 updates of a sensitive value are outside the declared transitions",
                       "candidate update set CUS(value), the values the model lets it become",
                       "record 1: 'flu' -> 'cancer' (CUS('flu') = {cold, flu})", "record 4: 'flu' -> 'hiv'",
                       "record 7: 'flu' -> 'cancer'", "(the first 3 shown)", *FORMS))
    assert "record 13" not in line and "record 9" not in line


def test_ledger_month_with_updates_outside_the_transitions_counts_them(capsys, tmp_path):
    spec = put(tmp_path, "spec.yaml", LEDGER_SPEC)
    month1 = put(tmp_path, "month1.csv", TINY_CSV.read_text(encoding="utf-8"))
    ledger = tmp_path / "ledger"
    assert main([str(a) for a in release_argv(spec, month1, ledger, tmp_path / "release_1.csv")]) == 0
    capsys.readouterr()
    text = TINY_CSV.read_text(encoding="utf-8").replace("1,23,UK,flu", "1,23,UK,cancer") \
        .replace("4,31,US,flu", "4,31,US,hiv")
    month2 = put(tmp_path, "month2.csv", text)
    expect_bad(capsys, tmp_path, release_argv(spec, month2, ledger, tmp_path / "release_2.csv"),
               ("month2.csv: SNAPSHOT:", "all 2 updates of a sensitive value are outside the declared transitions",
                "record 1: 'flu' -> 'cancer'", "record 4: 'flu' -> 'hiv'", "candidate update set", "{free: true}"))


# ---------------------------------------------------------------------- requirements on attacks that cannot run
def test_require_update_graph_without_transitions_on_one_release(capsys, tmp_path):
    """Was UNKNOWN "stopped: not reported" (exit 3): the spec gives no transitions."""
    line = expect_bad(capsys, tmp_path, ["certify", SPEC, GOOD_RELEASE, "--require",
                                         "update_graph.vulnerable_values == 0", "--json", tmp_path / "v.json"],
                      ("--require: 'update_graph.vulnerable_values == 0' cannot be judged on 1 release with",
                       "tiny_spec.yaml", "needs the public update model", *FORMS))
    assert "not reported" not in line


def test_require_correspondence_on_one_release(capsys, tmp_path):
    expect_bad(capsys, tmp_path, ["certify", SPEC, GOOD_RELEASE, "--require", "correspondence.FA >= 2"],
               ("--require: 'correspondence.FA >= 2' cannot be judged on 1 release", "needs at least two releases"))


def test_expect_line_on_an_attack_that_cannot_run(capsys, tmp_path):
    doc = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    doc["expect"] = ["linking.k >= 2", "update_graph.vulnerable_values == 0"]
    spec = put_yaml(tmp_path, doc, "spec.yaml")
    expect_bad(capsys, tmp_path, ["certify", spec, GOOD_RELEASE],
               ("spec.yaml: expect[1]: 'update_graph.vulnerable_values == 0' cannot be judged",
                "needs the public update model", "{free: true}"))


# ---------------------------------------------------------------------- every bad value of a table
BAD_ROWS = {"3,27,UK,cancer": "3,27,Mars,cancer", "5,34,Canada,cold": "5,abc,Canada,cold",
            "7,38,Canada,flu": "7,38,Canada,", "9,42,France,flu": "9,142,France,flu",
            "12,49,UK,hiv": "12,49,Moon,", "13,52,France,flu": "1,52,France,flu",
            "15,56,Canada,cancer": "15,56,Atlantis,cancer"}


def _bad_table_text() -> str:
    text = TINY_CSV.read_text(encoding="utf-8")
    for old, new in BAD_ROWS.items():
        assert old in text
        text = text.replace(old, new, 1)
    return text


BAD_NEEDLES = ("8 bad values in 7 records",
               "column country, line 4: value 'Mars' of 'country' is not in its hierarchy (record 3)",
               "column age, line 6: value 'abc' of 'age' is not in its hierarchy: not a number (record 5)",
               "column disease, line 8: sensitive value of 'disease' is missing (blank) (record 7)",
               "column age, line 10: value '142' of 'age' is not in its hierarchy: outside 20..59 (record 9)",
               "column country, line 13: value 'Moon' of 'country' is not in its hierarchy (record 12)",
               "(the first 5 shown)", "allow_missing: true")


def test_every_bad_value_of_the_data_is_counted(capsys, tmp_path):
    data = put(tmp_path, "people.csv", _bad_table_text())
    doc = tiny_doc()
    doc["data"] = {"file": str(data)}
    line = expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path), ("people.csv: ", *BAD_NEEDLES))
    assert "Atlantis" not in line and "appears twice" not in line  # counted, not shown


def test_every_bad_value_of_a_ledger_snapshot_is_counted(capsys, tmp_path):
    spec = put(tmp_path, "spec.yaml", LEDGER_SPEC)
    month = put(tmp_path, "month1.csv", _bad_table_text())
    expect_bad(capsys, tmp_path, release_argv(spec, month, tmp_path / "ledger", tmp_path / "release_1.csv"),
               ("month1.csv: ", *BAD_NEEDLES))
    assert not (tmp_path / "ledger").exists()


def test_bad_values_of_yaml_rows_are_placed_by_row(capsys, tmp_path):
    doc = tiny_doc()
    doc["data"] = {"rows": [{"id": 1, "age": 30, "country": "UK", "disease": "flu"},
                            {"id": 2, "age": 31, "country": "Mars", "disease": "cold"},
                            {"id": 2, "age": 130, "country": "US", "disease": ""}]}
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path),
               ("scenario.yaml: data.rows: 4 bad values in 2 records",
                "data.rows[1]: value 'Mars' of 'country' is not in its hierarchy (record 2)",
                "data.rows[2]: identifier '2' appears twice", "data.rows[2]: value '130' of 'age'",
                "data.rows[2]: sensitive value of 'disease' is missing (blank)"))


def test_one_bad_value_keeps_the_one_problem_line(capsys, tmp_path):
    data = data_csv(tmp_path, "3,27,UK,cancer", "3,27,Mars,cancer")
    doc = tiny_doc()
    doc["data"] = {"file": str(data)}
    line = expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path),
                      ("people.csv: column country, line 4: value 'Mars' of 'country' is not in its hierarchy "
                       "(record 3)",))
    assert "bad values" not in line
