"""The bad-input corpus, second part (issue 15 item 4): hostile YAML, blank and NaN sensitive values, absurd
hierarchies, updates outside the declared transitions, broken CSV, counterfeit and release files, ``--require``
lines, output paths that cannot be written, and misuse of the ledger commands.

Every case is one command run in-process through :func:`multirelease.cli.main` and must give exit code 2,
exactly one line on stderr (``error: FILE: KEY: PROBLEM``) holding every needle of the case, no traceback, and
leave the test's folder exactly as it was: no output file, no output folder, no temporary file left behind
(the folder's listing is compared before and after).  ``tests/test_bad_input.py`` holds the first part; the
two share the tiny scenario of ``tests/data``.

Over 500 lines because it is one corpus: each case is a few lines of input and the needles its one error line
must hold, read as a table; the checking is the single :func:`expect_bad` near the top.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from multirelease.cli import main
from multirelease.model.hierarchy import MAX_LEAVES
from multirelease.formats.yaml_safe import MAX_ALIAS_NODES, MAX_ALIASES, MAX_BYTES

DATA = Path(__file__).resolve().parent / "data"
TINY_CSV = DATA / "tiny.csv"
GOOD_RELEASE = DATA / "tiny_release.csv"
SPEC = DATA / "tiny_spec.yaml"
REQ = ["--require", "linking.k >= 2"]


# ---------------------------------------------------------------------- helpers
def tiny_doc() -> dict:
    doc = yaml.safe_load((DATA / "tiny.yaml").read_text(encoding="utf-8"))
    doc["data"] = {"file": str(TINY_CSV)}
    return doc


def put(tmp: Path, name: str, text: str | bytes) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def put_yaml(tmp: Path, doc: dict, name: str = "scenario.yaml") -> Path:
    return put(tmp, name, yaml.safe_dump(doc, sort_keys=False))


def run_args(scenario: Path, tmp: Path) -> list:
    """``run`` with every output asked for: none of them may appear."""
    return ["run", scenario, "--out", tmp / "out", "--json", tmp / "report.json", "--quiet"]


def data_csv(tmp: Path, old: str, new: str, name: str = "people.csv") -> Path:
    text = TINY_CSV.read_text(encoding="utf-8")
    assert old in text
    return put(tmp, name, text.replace(old, new, 1))


def with_data(tmp: Path, path: Path, **schema_changes) -> Path:
    doc = tiny_doc()
    doc["data"] = {"file": str(path)}
    for name, spec in schema_changes.items():
        doc["schema"]["attributes"][name] = spec
    return put_yaml(tmp, doc)


def release_file(tmp: Path, old: str | None = None, new: str = "", name: str = "release_1.csv",
                 text: str | None = None) -> Path:
    body = GOOD_RELEASE.read_text(encoding="utf-8") if text is None else text
    if old is not None:
        assert old in body
        body = body.replace(old, new, 1)
    return put(tmp, name, body)


def certify_args(tmp: Path, *files, spec: Path = SPEC, extra: list | None = None) -> list:
    return ["certify", spec, *files, *(REQ if extra is None else extra), "--json", tmp / "verdict.json"]


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def expect_bad(capsys, tmp: Path, argv: list, needles: tuple[str, ...]) -> str:
    """Exit 2, one line ``error: ...`` holding every needle, no traceback, the folder unchanged."""
    before = listing(tmp)
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 2, (code, captured.out[-2000:], captured.err[-2000:])
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    lines = captured.err.strip("\n").splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    assert listing(tmp) == before, sorted(listing(tmp) - before)
    return lines[0]


# ---------------------------------------------------------------------- hostile YAML
def _alias_bomb(levels: int) -> str:
    items = ['&a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    items += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "name: bomb\ndescription: [" + ", ".join(items) + "]\n"


def _tiny_text() -> str:
    return (DATA / "tiny.yaml").read_text(encoding="utf-8").replace("data: {file: tiny.csv}",
                                                                    f"data: {{file: {TINY_CSV}}}")


YAML_CASES: dict[str, tuple[Callable[[], str], tuple[str, ...]]] = {
    "duplicate top-level key": (lambda: _tiny_text() + "seed: 4\n", ("duplicate key 'seed'", "first at line 3",
                                                                     "line 19")),
    "duplicate attribute": (lambda: _tiny_text().replace("    disease: {role: sensitive}",
                                                         "    disease: {role: sensitive}\n    age: {role: sensitive}"),
                            ("duplicate key 'age'", "first at line 7")),
    "duplicate publisher parameter": (lambda: _tiny_text().replace("{publisher: mondrian, k: 2, l: 2}",
                                                                   "{publisher: mondrian, k: 5, l: 2, k: 2}"),
                                      ("duplicate key 'k'",)),
    "duplicate key 1 and 1.0": (lambda: _tiny_text() + "dynamics: {1: {delete: [3]}, 1.0: {delete: [4]}}\n",
                                ("duplicate key 1.0",)),
    "alias bomb (9**9 values)": (lambda: _alias_bomb(8), ("alias bomb", f"more than {MAX_ALIAS_NODES:,} extra")),
    "too many aliases": (lambda: "name: x\ndescription: &d a\nexpect: [" + ", ".join(["*d"] * (MAX_ALIASES + 1))
                         + "]\n",
                         (f"more than {MAX_ALIASES} aliases",)),
    "recursive alias": (lambda: "name: x\ndescription: &d [a, *d]\n", ("recursive alias",)),
    "nesting 50,000 deep": (lambda: "name: " + "[" * 50_000 + "]" * 50_000 + "\n", ("nested deeper than 100",)),
    "python object tag": (lambda: "name: !!python/object/apply:os.system [echo pwned]\n",
                          ("malformed YAML", "python/object")),
    "integer of 5,000 digits": (lambda: _tiny_text().replace("seed: 3", "seed: " + "9" * 5000),
                                ("malformed YAML", "digits")),
    "tab indentation": (lambda: "name: x\nschema:\n\tattributes: {}\n", ("malformed YAML", "line 3")),
    "binary file": (lambda: "\x00\x01\x02name", ("malformed YAML",)),
    "empty document": (lambda: "", ("a scenario must be a YAML mapping",)),
    "two documents": (lambda: "name: a\n---\nname: b\n", ("malformed YAML",)),
}


@pytest.mark.parametrize("case", list(YAML_CASES))
def test_hostile_yaml(capsys, tmp_path, case):
    make, needles = YAML_CASES[case]
    scenario = put(tmp_path, "hostile.yaml", make())
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("hostile.yaml", *needles))


@pytest.mark.parametrize("copies, refused", [(10, False), (11, True)])
def test_alias_expansion_budget_is_exact(monkeypatch, copies, refused):
    """An anchored list of 9 scalars is 10 nodes: ``copies`` aliases of it add ``10 * copies`` nodes to the
    expanded document, refused only above the budget (here 100)."""
    import multirelease.formats.yaml_safe as ys
    from multirelease.errors import InputError

    monkeypatch.setattr(ys, "MAX_ALIAS_NODES", 100)
    text = "a: &x [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [" + ", ".join(["*x"] * copies) + "]\n"
    if refused:
        with pytest.raises(InputError, match="more than 100 extra values"):
            ys.load_text(text, source="budget.yaml")
    else:
        assert ys.load_text(text)["b"] == [list(range(1, 10))] * copies


def test_yaml_over_the_size_limit(capsys, tmp_path):
    scenario = put(tmp_path, "big.yaml", "name: x\ndescription: " + "a" * MAX_BYTES + "\n")
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("big.yaml", "over 10 MB"))


def test_not_utf8_yaml(capsys, tmp_path):
    scenario = put(tmp_path, "latin.yaml", "name: Zürich\n".encode("latin-1"))
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("latin.yaml", "UTF-8"))


def test_alias_bomb_in_certify_spec(capsys, tmp_path):
    spec = put(tmp_path, "spec.yaml", _alias_bomb(8))
    expect_bad(capsys, tmp_path, certify_args(tmp_path, GOOD_RELEASE, spec=spec), ("spec.yaml", "alias bomb"))


def test_duplicate_key_in_certify_spec(capsys, tmp_path):
    text = SPEC.read_text(encoding="utf-8").replace("    disease: {role: sensitive}",
                                                    "    disease: {role: sensitive}\n    disease: {role: quasi}")
    spec = put(tmp_path, "spec.yaml", text)
    expect_bad(capsys, tmp_path, certify_args(tmp_path, GOOD_RELEASE, spec=spec),
               ("spec.yaml", "duplicate key 'disease'"))


def test_anchors_and_merge_keys_still_work(capsys, tmp_path):
    """The strict loader keeps what YAML is for: an anchor used twice, a merge key overridden; the scenario
    runs."""
    text = _tiny_text().replace("releases:\n  - {publisher: mondrian, k: 2, l: 2}",
                                "releases:\n  - &m {publisher: mondrian, k: 3, l: 2}\n  - {<<: *m, k: 2}\n  - *m")
    from multirelease.formats.yaml_safe import load_text

    doc = load_text(text)
    assert doc == yaml.safe_load(text)
    assert doc["releases"] == [{"publisher": "mondrian", "k": 3, "l": 2}, {"publisher": "mondrian", "k": 2, "l": 2},
                               {"publisher": "mondrian", "k": 3, "l": 2}]
    scenario = put(tmp_path, "anchors.yaml", text)
    assert main(["run", str(scenario), "--quiet"]) == 0, capsys.readouterr()


# ---------------------------------------------------------------------- missing sensitive values
MISSING = {"blank": "", "NaN": "NaN", "nan": "nan", "null": "null", "N/A": "N/A", "spaces": "  "}


@pytest.mark.parametrize("label", list(MISSING))
def test_missing_sensitive_value_in_data_csv(capsys, tmp_path, label):
    data = data_csv(tmp_path, "3,27,UK,cancer", f"3,27,UK,{MISSING[label]}")
    scenario = with_data(tmp_path, data)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("people.csv", "column disease, line 4", "sensitive value of 'disease' is missing", "record 3",
                "allow_missing"))


def test_missing_sensitive_value_declared_is_a_value(capsys, tmp_path):
    """``allow_missing: true``: the blank is kept as a value of its own (the run goes through)."""
    data = data_csv(tmp_path, "3,27,UK,cancer", "3,27,UK,")
    scenario = with_data(tmp_path, data, disease={"role": "sensitive", "allow_missing": True})
    assert main(["run", str(scenario), "--quiet"]) in (0, 1)
    assert capsys.readouterr().err == ""


def test_missing_sensitive_value_in_yaml_rows(capsys, tmp_path):
    doc = tiny_doc()
    doc["data"] = {"rows": [{"id": 1, "age": 30, "country": "UK", "disease": "flu"},
                            {"id": 2, "age": 31, "country": "US", "disease": float("nan")}]}
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("scenario.yaml", "data.rows[1]", "'nan'"))


def test_missing_sensitive_value_in_dynamics_update(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "mondrian", "k": 2}]
    doc["dynamics"] = {2: {"update": {3: {"disease": ""}}}}
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("scenario.yaml", "dynamics.2", "blank", "record 3"))


def test_missing_sensitive_value_in_release_file(capsys, tmp_path):
    bad = release_file(tmp_path, "Europe,cold", "Europe,")
    expect_bad(capsys, tmp_path, certify_args(tmp_path, bad),
               ("release_1.csv", "column disease, line 3", "missing (blank)"))


def test_nan_sensitive_value_in_release_file(capsys, tmp_path):
    bad = release_file(tmp_path, "Europe,cold", "Europe,NaN")
    expect_bad(capsys, tmp_path, certify_args(tmp_path, bad), ("release_1.csv", "column disease, line 3", "'NaN'"))


def test_allow_missing_on_a_quasi_identifier(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["allow_missing"] = True
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("schema.attributes.country.allow_missing", "sensitive attributes only"))


def test_allow_missing_not_a_boolean(capsys, tmp_path):
    doc = tiny_doc()
    doc["schema"]["attributes"]["disease"] = {"role": "sensitive", "allow_missing": "yes please"}
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("schema.attributes.disease.allow_missing", "true or false"))


# ---------------------------------------------------------------------- hierarchies
def hierarchy_doc(tmp: Path, spec) -> Path:
    doc = tiny_doc()
    doc["schema"]["attributes"]["age"]["hierarchy"] = spec
    return put_yaml(tmp, doc)


@pytest.mark.parametrize("numeric, words", [
    ({"min": 0, "max": 10 ** 11 - 1}, ["100,000,000,000 values", f"{MAX_LEAVES:,}"]),
    ({"min": -(10 ** 12), "max": 10 ** 12, "bands": [1000]}, ["more than the"]),
    ({"min": True, "max": 60}, ["must be integers"]),
    ({"min": 20, "max": "sixty"}, ["must be integers"]),
    ({"min": 20, "max": 59, "bands": [10, 15]}, ["each divide the next"]),
    ({"min": 20, "max": 59, "bands": [-5]}, ["positive"]),
    ({"min": 20}, ["needs 'min' and 'max'"]),
    ({"min": 20, "max": 59, "step": 2}, ["unknown key 'step'"]),
])
def test_numeric_hierarchy_refused(capsys, tmp_path, numeric, words):
    scenario = hierarchy_doc(tmp_path, {"numeric": numeric})
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("scenario.yaml", "schema.attributes.age.hierarchy.numeric", *words))


def test_numeric_hierarchy_of_10_to_the_11_leaves_is_refused_before_allocation():
    """The domain is checked before one leaf is built: a MemoryError before the limit existed."""
    import resource
    import time

    from multirelease.errors import InputError
    from multirelease.model.hierarchy import Hierarchy

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(InputError, match="more than the 1,000,000 leaves"):
        Hierarchy.numeric("income", 0, 10 ** 11 - 1, [1000, 10 ** 6])
    assert time.perf_counter() - start < 0.5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KB: nothing allocated


ARX_CASES = {
    "empty file": ("", ["hierarchy file is empty"]),
    "empty label": ("UK;Europe;*\nFrance;;*\n", ["line 2", "empty label"]),
    "leaf also an inner node": ("Europe;*\nUK;Europe;*\n", ["both a leaf and an inner node"]),
    "label with two parents": ("UK;Europe;*\nFrance;West;*\nUS;West;Earth\n", ["line 3", "'West'", "names two nodes"]),
    "not UTF-8": ("Zürich;Europe;*\n".encode("latin-1"), ["UTF-8"]),
}


@pytest.mark.parametrize("case", list(ARX_CASES))
def test_arx_hierarchy_file(capsys, tmp_path, case):
    text, words = ARX_CASES[case]
    arx = put(tmp_path, "country_hierarchy.csv", text)
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": str(arx)}
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("country_hierarchy.csv", *words))


COUNTRIES_41 = [f"country{i:02d}" for i in range(41)]  # one more than the 40 leaves of age (20..59)


def test_arx_hierarchy_with_too_many_levels(capsys, tmp_path):
    # 20,000 levels on one line: the cycle check of the labels was quadratic (minutes), the build recursive
    arx = put(tmp_path, "country_hierarchy.csv", "UK;" + ";".join(f"a{i}" for i in range(20_000)) + ";*\nUS;a0;*\n")
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": str(arx)}
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path),
               ("country_hierarchy.csv", "line 1", "20,002 levels", "more than the 100"))


def test_arx_hierarchy_with_an_empty_separator(capsys, tmp_path):
    arx = put(tmp_path, "country_hierarchy.csv", "UK;Europe;*\nUS;America;*\n")
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": str(arx), "separator": ""}
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path),
               ("country_hierarchy.csv", "separator must be one character"))


def test_arx_hierarchy_with_more_leaves_than_the_limit(capsys, tmp_path, monkeypatch):
    import multirelease.model.hierarchy as hierarchy

    monkeypatch.setattr(hierarchy, "MAX_LEAVES", 40)
    arx = put(tmp_path, "country_hierarchy.csv", "".join(f"{c};*\n" for c in COUNTRIES_41))
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"file": str(arx)}
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("country_hierarchy.csv", "41 leaves", "more than the 40"))


def test_nested_hierarchy_with_more_leaves_than_the_limit(capsys, tmp_path, monkeypatch):
    import multirelease.model.hierarchy as hierarchy

    monkeypatch.setattr(hierarchy, "MAX_LEAVES", 40)
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = {"World": COUNTRIES_41}
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("scenario.yaml", "schema.attributes.country.hierarchy", "more than 40 leaves"))


@pytest.mark.parametrize("spec, words", [
    ({}, ["non-empty mapping or list"]),
    ({"Europe": [["UK"]]}, ["has no label"]),
    ({"Europe": 3.5, "America": ["US"]}, ["float"]),
    ({"*": ["UK"], "Europe": ["*"]}, ["'*'"]),
])
def test_nested_hierarchy_refused(capsys, tmp_path, spec, words):
    doc = tiny_doc()
    doc["schema"]["attributes"]["country"]["hierarchy"] = spec
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("scenario.yaml", "schema.attributes.country.hierarchy", *words))


# ---------------------------------------------------------------------- dynamics against the transitions
def transitions_doc(tmp: Path, dynamics: dict, transitions: dict | None = None) -> Path:
    doc = tiny_doc()
    doc["schema"]["attributes"]["disease"] = {"role": "sensitive", "hierarchy": ["flu", "cold", "cancer", "hiv"]}
    doc["transitions"] = transitions or {"candidates": {"flu": ["flu", "cold"], "cold": ["cold", "flu"]},
                                         "unlisted": "stay"}
    doc["releases"] = [{"publisher": "mondrian", "k": 2}, {"publisher": "mondrian", "k": 2}]
    doc["dynamics"] = dynamics
    return put_yaml(tmp, doc)


def test_update_outside_the_declared_transitions(capsys, tmp_path):
    # record 1 has flu; CUS(flu) = {flu, cold}
    scenario = transitions_doc(tmp_path, {2: {"update": {1: {"disease": "cancer"}}}})
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("scenario.yaml", "dynamics.2", "record 1", "'flu' -> 'cancer'", "outside the declared transitions",
                "CUS('flu') = {cold, flu}"))


def test_update_of_an_unlisted_value_that_must_stay(capsys, tmp_path):
    # record 3 has cancer, not listed: unlisted: stay, so CUS(cancer) = {cancer}
    scenario = transitions_doc(tmp_path, {2: {"update": [{"id": 3, "disease": "hiv"}]}})
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("dynamics.2", "'cancer' -> 'hiv'"))


def test_update_outside_a_diameter_model(capsys, tmp_path):
    scenario = transitions_doc(tmp_path, {2: {"update": {1: {"disease": "cancer"}}}},
                               {"diameter": 2, "shape": "blocks"})
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), ("dynamics.2", "'flu' -> 'cancer'"))


def test_update_inside_the_declared_transitions_is_accepted(capsys, tmp_path):
    scenario = transitions_doc(tmp_path, {2: {"update": {1: {"disease": "cold"}, 3: {"age": 28}}}})
    assert main(["run", str(scenario), "--quiet"]) in (0, 1)
    assert capsys.readouterr().err == ""


def test_given_snapshots_outside_the_declared_transitions(capsys, tmp_path):
    doc = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    doc["schema"]["attributes"]["disease"] = {"role": "sensitive", "hierarchy": ["flu", "cold", "cancer", "hiv"]}
    doc["transitions"] = {"candidates": {"flu": ["flu", "cold"]}}
    first = [{"id": 1, "age": 23, "country": "UK", "disease": "flu"}, {"id": 2, "age": 25, "country": "US",
                                                                        "disease": "cold"}]
    second = [{**first[0], "disease": "hiv"}, first[1]]
    row = [{"age": "[20,29]", "country": "*", "disease": "flu"}, {"age": "[20,29]", "country": "*", "disease": "cold"}]
    doc["releases"] = [{"rows": row, "snapshot": {"rows": first}},
                       {"rows": [{**row[0], "disease": "hiv"}, row[1]], "snapshot": {"rows": second}}]
    doc["attacks"] = [{"linking": {}}]
    scenario = put_yaml(tmp_path, doc)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path),
               ("scenario.yaml", "releases[1].snapshot", "record 1", "'flu' -> 'hiv'"))


# ---------------------------------------------------------------------- data CSV
@pytest.mark.parametrize("text, words", [
    ("id,age,country,disease\n1,23,UK,flu\n2,25,France\n", ["people.csv"]),
    ("id,age,country,disease\n1,23,UK,flu,extra,more\n", ["people.csv", "line 2", "more fields than the header"]),
    ("", ["people.csv", "cannot parse CSV"]),
    ("id,age,country,disease\n1,23,UK,flu\n1,25,France,cold\n", ["identifier '1' appears twice"]),
    ("id,age,country\n1,23,UK\n", ["attribute 'disease' has no column"]),
    ("id,age,country,disease\n1,twenty,UK,flu\n", ["'twenty'", "not in its hierarchy"]),
    ("id,age,age,country,disease\n1,23,23,UK,flu\n", ["people.csv"]),
])
def test_data_csv_refused(capsys, tmp_path, text, words):
    data = put(tmp_path, "people.csv", text)
    scenario = with_data(tmp_path, data)
    expect_bad(capsys, tmp_path, run_args(scenario, tmp_path), tuple(words))


@pytest.mark.parametrize("part, value, words", [
    ("offset", 10 ** 15, ["data.offset", "past the last record"]),  # was a MemoryError (range(1, offset + 1))
    ("separator", ";;", ["data.separator", "one character"]),  # was a pandas warning on stderr, then the error
    ("separator", "", ["data.separator", "one character"]),  # was a ValueError traceback
    ("rows", [{"id": 1, "age": 30, "country": "UK", "disease": "flu"}], ["data", "not both"]),
])
def test_data_spec_refused(capsys, tmp_path, part, value, words):
    doc = tiny_doc()
    doc["data"][part] = value
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path), ("scenario.yaml", *words))


@pytest.mark.parametrize("key, value", [("name", {"a": 1}), ("description", ["a", "b"])])
def test_name_and_description_are_texts(capsys, tmp_path, key, value):
    doc = tiny_doc()
    doc[key] = value
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path), (f"scenario.yaml: {key}:", "a text"))


def test_m_larger_than_a_domain_without_hierarchy(capsys, tmp_path):
    # disease has no hierarchy: m-invariance cannot borrow counterfeit values from it (was an AttributeError)
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "m_invariance", "m": 10 ** 12}]
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path),
               ("releases[0]", "m = 1000000000000 distinct sensitive values", "the domain has 4"))


def test_data_offset_not_an_integer(capsys, tmp_path):
    doc = tiny_doc()
    doc["data"]["offset"] = "ten"
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path), ("data.offset", "integer >= 0"))


# ---------------------------------------------------------------------- release and counterfeit files
@pytest.mark.parametrize("text, words", [
    ("", ["release_1.csv"]),
    ("group,age,country,disease\n", ["release_1.csv", "no record"]),
    ("group,age,country,disease\n1,\"[20,29]\",Europe\n", ["release_1.csv"]),
    ("group,id,age,country,disease\n1,7,\"[20,29]\",Europe,flu\n", ["release_1.csv", "identifier"]),
    ("group,age,age,country,disease\n1,\"[20,29]\",\"[20,29]\",Europe,flu\n", ["release_1.csv"]),
    ("group,age,country,disease\n1,\"[29,20]\",Europe,flu\n", ["release_1.csv", "reversed"]),
    ("group,age,country,disease\none,\"[20,29]\",Europe,flu\n", ["release_1.csv", "column group", "integers"]),
])
def test_release_file_refused(capsys, tmp_path, text, words):
    bad = release_file(tmp_path, text=text)
    expect_bad(capsys, tmp_path, certify_args(tmp_path, bad), tuple(words))


@pytest.mark.parametrize("text, words", [
    ("group,counterfeits\n1,-2\n", ["counterfeits_1.csv", "column counterfeits", ">= 0"]),
    ("group,counterfeits\n1,two\n", ["counterfeits_1.csv", "integers"]),
    ("group,fakes\n1,2\n", ["counterfeits_1.csv", "exactly the columns group,counterfeits"]),
    ("group,counterfeits\n1.5,2\n", ["counterfeits_1.csv", "integers"]),
    ("group,counterfeits\n99,2\n", ["counterfeits_1.csv: counterfeits for group 99", "release_1.csv does not have"]),
    ("group,counterfeits\n1,2\n1,3\n", ["counterfeits_1.csv", "group 1 appears twice"]),
])
def test_counterfeit_file_refused(capsys, tmp_path, text, words):
    release = release_file(tmp_path)
    put(tmp_path, "counterfeits_1.csv", text)
    expect_bad(capsys, tmp_path, certify_args(tmp_path, release), tuple(words))


def test_counterfeits_rows_in_a_scenario(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"file": str(GOOD_RELEASE), "counterfeits": {"rows": [{"group": 1, "counterfeits": -1}]}}]
    doc["attacks"] = [{"linking": {}}]
    doc["expect"] = []
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path),
               ("scenario.yaml", "releases[0].counterfeits", ">= 0"))


def test_counterfeits_file_missing_in_a_scenario(capsys, tmp_path):
    doc = tiny_doc()
    doc["releases"] = [{"file": str(GOOD_RELEASE), "counterfeits": {"file": "nowhere.csv"}}]
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path),
               ("releases[0].counterfeits.file", "'nowhere.csv' not found"))


# ---------------------------------------------------------------------- --require
@pytest.mark.parametrize("line, words", [
    ("", ["cannot parse"]),
    ("linking.k", ["cannot parse"]),
    ("linking.k >= nan", ["cannot parse"]),
    ("linking.k => 2", ["cannot parse"]),
    ("linking.k >= 2 and linking.l >= 2", ["cannot parse"]),
    ("release[0].LM < 0.5", ["no release 0"]),
    ("release[1].LM < 1/0", ["division by zero"]),
])
def test_require_refused(capsys, tmp_path, line, words):
    expect_bad(capsys, tmp_path, certify_args(tmp_path, GOOD_RELEASE, extra=["--require", line]),
               ("--require", *words))


# ---------------------------------------------------------------------- output paths
def test_json_under_a_file(capsys, tmp_path):
    blocker = put(tmp_path, "plain.txt", "")
    scenario = put_yaml(tmp_path, tiny_doc())
    expect_bad(capsys, tmp_path, ["run", scenario, "--json", blocker / "r.json", "--out", tmp_path / "out", "-q"],
               ("plain.txt/r.json", "--json", "not a folder"))


def test_out_under_a_file(capsys, tmp_path):
    blocker = put(tmp_path, "plain.txt", "")
    scenario = put_yaml(tmp_path, tiny_doc())
    expect_bad(capsys, tmp_path, ["run", scenario, "--json", tmp_path / "r.json", "--out", blocker / "sub", "-q"],
               ("plain.txt/sub", "--out", "not a folder"))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (no file can be created there)")
@pytest.mark.parametrize("option", ["--json", "--out"])
def test_output_where_nothing_can_be_created(capsys, tmp_path, option):
    scenario = put_yaml(tmp_path, tiny_doc())
    argv = ["run", scenario, "-q", option, "/proc/self/multirelease-test"]
    expect_bad(capsys, tmp_path, argv, ("/proc/self/multirelease-test", option, "cannot be written"))


def test_publish_out_under_a_file(capsys, tmp_path):
    blocker = put(tmp_path, "plain.txt", "")
    expect_bad(capsys, tmp_path, ["publish", put_yaml(tmp_path, tiny_doc()), "--out", blocker / "x"],
               ("--out", "not a folder"))


def test_certify_json_under_a_file(capsys, tmp_path):
    blocker = put(tmp_path, "plain.txt", "")
    expect_bad(capsys, tmp_path, ["certify", SPEC, GOOD_RELEASE, *REQ, "--json", blocker / "v.json"],
               ("--json", "not a folder"))


def test_bad_scenario_with_good_outputs_writes_nothing(capsys, tmp_path):
    """The work fails after the outputs were checked: still nothing written, no temporary left."""
    doc = tiny_doc()
    doc["releases"] = [{"publisher": "mondrian", "k": 20}]
    expect_bad(capsys, tmp_path, run_args(put_yaml(tmp_path, doc), tmp_path), ("releases[0]", "cannot satisfy"))


# ---------------------------------------------------------------------- CLI misuse
@pytest.mark.parametrize("argv, words", [
    (["run"], ["Missing argument"]),
    (["certify"], ["Missing argument"]),
    (["publish", str(DATA / "tiny.yaml")], ["Missing option", "--out"]),
    (["run", str(DATA / "tiny.yaml"), "--targets", "everyone"], ["--targets", "'everyone'"]),
    (["certify", str(SPEC), str(GOOD_RELEASE), "--targets", "all", *REQ], ["--targets"]),
    (["run", str(DATA / "tiny.yaml"), "--json"], ["--json", "requires an argument"]),
    (["ledger"], ["Missing argument"]),
])
def test_cli_misuse(capsys, tmp_path, argv, words):
    expect_bad(capsys, tmp_path, argv, tuple(words))


# ---------------------------------------------------------------------- ledger misuse
LEDGER_SPEC = """\
schema:
  attributes:
    id: identifier
    age: {role: quasi, hierarchy: {numeric: {min: 20, max: 59, bands: [10, 20]}}}
    country: {role: quasi, hierarchy: {Europe: [UK, France], America: [US, Canada]}}
    disease: {role: sensitive, hierarchy: [flu, cold, cancer, hiv]}
publisher: {publisher: mondrian, k: 2, l: 2}
transitions: {candidates: {flu: [flu, cold], cold: [cold, flu]}}
attacks: [linking]
expect: ["linking.k >= 2"]
"""


def ledger_paths(tmp: Path) -> tuple[Path, Path, Path]:
    spec = put(tmp, "spec.yaml", LEDGER_SPEC)
    snapshot = put(tmp, "month1.csv", TINY_CSV.read_text(encoding="utf-8"))
    return spec, snapshot, tmp / "ledger"


def release_argv(spec: Path, snapshot: Path, ledger: Path, out: Path) -> list:
    return ["release", spec, snapshot, "--ledger", ledger, "--out", out, "--quiet"]


@pytest.fixture(scope="module")
def one_month(tmp_path_factory) -> tuple[Path, Path, Path, Path]:
    """A ledger holding one release of the tiny table (made once for the module)."""
    tmp = tmp_path_factory.mktemp("ledger_month")
    spec, snapshot, ledger = ledger_paths(tmp)
    out = tmp / "public" / "release_1.csv"
    out.parent.mkdir()
    assert main([str(a) for a in release_argv(spec, snapshot, ledger, out)]) == 0
    return spec, snapshot, ledger, out


def test_ledger_release_out_inside_the_ledger(capsys, tmp_path):
    spec, snapshot, ledger = ledger_paths(tmp_path)
    ledger.mkdir()
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, ledger / "r.csv"),
               ("--out", "outside the ledger folder"))


def test_ledger_release_out_folder_missing(capsys, tmp_path):
    spec, snapshot, ledger = ledger_paths(tmp_path)
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "no" / "r.csv"),
               ("--out", "folder does not exist"))


def test_ledger_release_out_is_a_directory(capsys, tmp_path):
    spec, snapshot, ledger = ledger_paths(tmp_path)
    (tmp_path / "public").mkdir()
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "public"),
               ("--out", "is a directory"))


def test_ledger_is_a_file(capsys, tmp_path):
    spec, snapshot, _ = ledger_paths(tmp_path)
    ledger = put(tmp_path, "ledger.txt", "not a ledger")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "r.csv"),
               ("ledger.txt", "--ledger"))


def test_ledger_under_a_file(capsys, tmp_path):
    spec, snapshot, _ = ledger_paths(tmp_path)
    blocker = put(tmp_path, "plain.txt", "")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, blocker / "ledger", tmp_path / "r.csv"),
               ("plain.txt/ledger", "--ledger", "not a folder"))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (no file can be created there)")
@pytest.mark.parametrize("which", ["--ledger", "--out"])
def test_ledger_release_where_nothing_can_be_created(capsys, tmp_path, which):
    spec, snapshot, ledger = ledger_paths(tmp_path)
    out = tmp_path / "r.csv"
    if which == "--ledger":
        ledger = Path("/proc/self/multirelease-ledger")
    else:
        out = Path("/proc/self/r.csv")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, out), (which, "cannot be written"))


def test_ledger_spec_without_identifier(capsys, tmp_path):
    spec, snapshot, ledger = ledger_paths(tmp_path)
    spec.write_text(LEDGER_SPEC.replace("    id: identifier\n", ""), encoding="utf-8")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "r.csv"),
               ("spec.yaml", "schema", "identifier"))


def test_ledger_spec_with_data(capsys, tmp_path):
    spec, snapshot, ledger = ledger_paths(tmp_path)
    spec.write_text(LEDGER_SPEC + f"data: {{file: {TINY_CSV}}}\n", encoding="utf-8")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "r.csv"),
               ("spec.yaml", "unknown top-level key 'data'"))


def test_ledger_spec_with_duplicate_key(capsys, tmp_path):
    spec, snapshot, ledger = ledger_paths(tmp_path)
    spec.write_text(LEDGER_SPEC + "publisher: {publisher: naive, k: 2}\n", encoding="utf-8")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "r.csv"),
               ("spec.yaml", "duplicate key 'publisher'"))


def test_ledger_snapshot_without_identifier_column(capsys, tmp_path):
    spec, _, ledger = ledger_paths(tmp_path)
    lines = TINY_CSV.read_text(encoding="utf-8").splitlines()
    snapshot = put(tmp_path, "month1.csv", "\n".join(x.split(",", 1)[1] for x in lines) + "\n")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "r.csv"),
               ("month1.csv", "SNAPSHOT", "identifier column 'id'"))


def test_ledger_snapshot_with_blank_sensitive_value(capsys, tmp_path):
    spec, _, ledger = ledger_paths(tmp_path)
    snapshot = data_csv(tmp_path, "3,27,UK,cancer", "3,27,UK,", name="month1.csv")
    expect_bad(capsys, tmp_path, release_argv(spec, snapshot, ledger, tmp_path / "r.csv"),
               ("month1.csv", "disease"))


HEADER_ONLY = "id,age,country,disease\n"


@pytest.mark.parametrize("text, needles", [
    (HEADER_ONLY, ("month.csv", "SNAPSHOT", "no record", "header only")),
    ("", ("month.csv", "SNAPSHOT", "empty (0 bytes)")),
    (TINY_CSV.read_text(encoding="utf-8").replace(",", ";"), ("month.csv", "SNAPSHOT", "one column",
                                                              "separator: ';'")),
])
def test_ledger_first_month_from_a_failed_export_creates_nothing(capsys, tmp_path, text, needles):
    """Issue 25: a header-only, empty or wrongly separated month 1 is refused before the ledger exists."""
    spec, _, ledger = ledger_paths(tmp_path)
    month = put(tmp_path, "month.csv", text)
    expect_bad(capsys, tmp_path, release_argv(spec, month, ledger, tmp_path / "release_1.csv"), needles)
    assert not ledger.exists()


def test_ledger_header_only_month_2_is_refused(capsys, tmp_path, one_month):
    """Issue 25: a header-only month 2 once read as "0 inserted, 120 deleted" and was published empty."""
    spec, _, ledger, _ = one_month
    from ledger_data import folder_bytes

    month2 = put(tmp_path, "month2.csv", HEADER_ONLY)
    before = folder_bytes(ledger)
    expect_bad(capsys, tmp_path, release_argv(spec, month2, ledger, tmp_path / "release_2.csv"),
               ("month2.csv", "no record", "header only"))
    assert folder_bytes(ledger) == before  # the ledger's bytes unchanged


def test_ledger_month_outside_the_declared_transitions(capsys, tmp_path, one_month):
    spec, snapshot, ledger, _ = one_month
    month2 = data_csv(tmp_path, "1,23,UK,flu", "1,23,UK,cancer", name="month2.csv")
    before = listing(ledger)
    expect_bad(capsys, tmp_path, release_argv(spec, month2, ledger, tmp_path / "release_2.csv"),
               ("month2.csv", "SNAPSHOT", "record 1", "'flu' -> 'cancer'"))
    assert listing(ledger) == before


def test_ledger_release_over_an_existing_file(capsys, tmp_path, one_month):
    spec, _, ledger, _ = one_month
    month2 = data_csv(tmp_path, "1,23,UK,flu", "1,24,UK,flu", name="month2.csv")
    taken = put(tmp_path, "release_2.csv", "taken")
    expect_bad(capsys, tmp_path, release_argv(spec, month2, ledger, taken), ("release_2.csv", "never overwrites"))
    assert taken.read_text() == "taken"


def test_ledger_spec_changed_without_amend(capsys, tmp_path, one_month):
    _, _, ledger, _ = one_month
    spec = put(tmp_path, "spec2.yaml", LEDGER_SPEC.replace("mondrian, k: 2", "mondrian, k: 3"))
    month2 = data_csv(tmp_path, "1,23,UK,flu", "1,24,UK,flu", name="month2.csv")
    expect_bad(capsys, tmp_path, release_argv(spec, month2, ledger, tmp_path / "release_2.csv"),
               ("spec2.yaml", "--amend"))


def test_ledger_amend_without_reason(capsys, tmp_path, one_month):
    spec, _, ledger, _ = one_month
    month2 = data_csv(tmp_path, "1,23,UK,flu", "1,24,UK,flu", name="month2.csv")
    expect_bad(capsys, tmp_path, [*release_argv(spec, month2, ledger, tmp_path / "release_2.csv"), "--amend", " "],
               ("--amend", "reason"))


def test_ledger_history_of_a_missing_folder(capsys, tmp_path):
    expect_bad(capsys, tmp_path, ["ledger", tmp_path / "nowhere"], ("nowhere",))


def test_ledger_history_of_a_folder_that_is_no_ledger(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    expect_bad(capsys, tmp_path, ["ledger", tmp_path / "empty", "--verify"], ("empty",))


def test_certify_ledger_with_require(capsys, tmp_path, one_month):
    spec, _, ledger, out = one_month
    expect_bad(capsys, tmp_path, ["certify", spec, out, "--ledger", ledger, *REQ], ("--ledger", "requirements"))


def test_certify_ledger_without_files(capsys, tmp_path, one_month):
    spec, _, ledger, _ = one_month
    expect_bad(capsys, tmp_path, ["certify", spec, "--ledger", ledger], ("--ledger", "give the release files"))


def test_certify_ledger_with_more_files_than_releases(capsys, tmp_path, one_month):
    spec, _, ledger, out = one_month
    expect_bad(capsys, tmp_path, ["certify", spec, out, out, "--ledger", ledger], ("--ledger", "2 files", "1 releases"))


def test_certify_ledger_json_under_a_file(capsys, tmp_path, one_month):
    spec, _, ledger, out = one_month
    blocker = put(tmp_path, "plain.txt", "")
    expect_bad(capsys, tmp_path, ["certify", spec, out, "--ledger", ledger, "--json", blocker / "v.json"],
               ("--json", "not a folder"))


# ---------------------------------------------------------------------- check_updates against a brute force
@settings(max_examples=60)  # small tables and models: 60 draws cover stay / move / leave / arrive mixes
@given(data=st.data())
def test_check_updates_matches_a_row_by_row_brute_force(data):
    """``transitions.check_updates`` refuses a pair of snapshots exactly when some record present in both
    changed its sensitive value from ``a`` to ``b`` with ``P_trans(a, b) = 0`` (Definition 12 of Li & Zhou),
    and names such a record; the brute force walks the records one by one."""
    import pandas as pd

    from multirelease.errors import InputError
    from multirelease.model.hierarchy import Hierarchy
    from multirelease.model.schema import Attribute, Schema
    from multirelease.model.table import Table
    from multirelease.model.transitions import check_updates
    from strategies import transition_models

    values = ["flu", "cold", "cancer", "hiv", "asthma"][: data.draw(st.integers(2, 5))]
    schema = Schema((Attribute("id", "identifier"), Attribute("age", "quasi", Hierarchy.numeric("age", 20, 29)),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", values))))
    model = data.draw(transition_models(values))
    n = data.draw(st.integers(1, 8))
    before = {str(i): data.draw(st.sampled_from(values)) for i in range(n)}
    after = {i: (data.draw(st.sampled_from(values)) if data.draw(st.booleans()) else v)
             for i, v in before.items() if data.draw(st.integers(0, 4))}  # some records leave
    after.update({str(100 + j): values[0] for j in range(data.draw(st.integers(0, 2)))})  # arrivals

    def table(rows):
        return Table.from_frame(schema, pd.DataFrame({"id": list(rows), "age": ["25"] * len(rows),
                                                      "disease": list(rows.values())}, dtype=object))

    bad = {i for i in after if i in before and after[i] != before[i]
           and model.prob[values.index(before[i]), values.index(after[i])] == 0}
    if not bad:
        check_updates(model, table(before), table(after), source="s.yaml", key="dynamics.2")
        return
    with pytest.raises(InputError) as err:
        check_updates(model, table(before), table(after), source="s.yaml", key="dynamics.2")
    import re

    named = re.findall(r"record (\w+): '", err.value.problem)  # the first few, each with its old -> new value
    assert named and set(named) <= bad and len(named) == min(len(bad), 3), err.value.problem
    assert "outside the declared transitions" in err.value.problem
    assert (f"{len(bad)} of the " in err.value.problem or f"all {len(bad)} updates" in err.value.problem
            or len(bad) == 1), err.value.problem  # every record outside the model counted
