"""Contracts over the registries, scikit-learn style: every registered publisher and attack is checked by the
same tests, so a new module is checked the day it is registered, without a new test.

Publishers: parameters validated (an unknown name and a value out of range are one-line input errors),
deterministic under a seed, state JSON-serializable, no identifier column in what they publish, and three
releases with insertions, deletions and updates through the one pipeline (or a refusal as bad input).
Attacks: parameters validated, JSON-serializable and deterministic results, honest intervals (a metric is a
proven value or a bound with ``lower <= upper`` and a reason), and ``run`` == ``certify`` on the files
``run --out`` wrote.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from attacks import ATTACKS
from attacks.base import REASONS
from multirelease.cli import main
from multirelease.errors import InputError
from multirelease.params import Interval
from multirelease.pipeline import load_scenario, run_scenario
from publishers import PUBLISHERS

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = yaml.safe_load((DATA / "tiny.yaml").read_text(encoding="utf-8"))["schema"]

#: three releases of the tiny table: deletions, insertions, a QI update and a sensitive update
DYNAMICS = {
    2: {"delete": [1, 5], "insert": {"rows": [{"id": 17, "age": 33, "country": "US", "disease": "flu"},
                                              {"id": 18, "age": 44, "country": "France", "disease": "cold"}]},
        "update": {3: {"disease": "flu"}}},
    3: {"delete": [2], "insert": {"rows": [{"id": 19, "age": 29, "country": "UK", "disease": "hiv"}]},
        "update": {4: {"age": 35}}},
}


#: the setting each principle is defined for, where it is narrower than "any change, default adversary":
#: continuous publishing (Fung et al.: records are only inserted, at least k per release), tuple insertions
#: only (Shmueli & Tassa section 5.3), the public update model of m-Distinct (Li & Zhou), k >= 2 for the
#: k-anonymity publishers
INSERT_ONLY = {2: {"insert": DYNAMICS[2]["insert"]},
               3: {"insert": {"rows": [{"id": 19, "age": 29, "country": "UK", "disease": "hiv"},
                                       {"id": 20, "age": 52, "country": "Canada", "disease": "cancer"}]}}}
TRANSITIONS = {"candidates": {"flu": ["flu", "cold"], "cold": ["cold", "flu"], "cancer": ["cancer"], "hiv": ["hiv"]}}
#: DYNAMICS with its sensitive update inside TRANSITIONS (record 3's cancer -> flu is not; the pipeline refuses
#: updates outside the declared model)
IN_MODEL = {**DYNAMICS, 2: {**DYNAMICS[2], "update": {4: {"disease": "cold"}}}}
SETTING = {
    "bcf": {"dynamics": INSERT_ONLY}, "tds": {"dynamics": INSERT_ONLY},
    "sequential_diversity": {"dynamics": INSERT_ONLY}, "non_sequential_diversity": {"dynamics": INSERT_ONLY},
    "m_distinct": {"transitions": TRANSITIONS, "dynamics": IN_MODEL},
    "m_distinct_star": {"transitions": TRANSITIONS, "dynamics": IN_MODEL},
    "global_guarantee": {"adversary": {"sensitive": "free"}},
}
#: publishers that may refuse the tiny table on their setting (each refusal must still be one line of bad
#: input); issue 13 item 4: the global guarantee's budget over a horizon refuses most tiny tables
MAY_REFUSE = {"global_guarantee"}


def example_params(cls) -> dict:
    """The smallest valid value of each required parameter (2 for ``k``, ``l``, ``m``), and ``k = 2`` where
    the publisher takes a ``k`` (k = 1 with l = 1 is no principle at all)."""
    out = {"k": 2} if "k" in cls.params and cls.name != "global_guarantee" else {}
    for name in cls.required:
        rule = cls.params[name]
        if isinstance(rule, Interval):
            low = 2 if rule.low is None else max(rule.low, 2)
            out[name] = rule.kind(low)
        else:  # pragma: no cover - every required parameter today is a number
            raise AssertionError(f"{cls.name}.{name}: no example value for {rule!r}")
    return out


def scenario_doc(releases: list, attacks: list | None = None, expect: list | None = None, **extra) -> dict:
    doc = {"name": "contract", "seed": 7, "schema": SCHEMA, "data": {"file": str(DATA / "tiny.csv")},
           "dynamics": {i: c for i, c in DYNAMICS.items() if i <= len(releases)}, "releases": releases}
    if attacks is not None:
        doc["attacks"] = attacks
    if expect is not None:
        doc["expect"] = expect
    doc.update(extra)
    return doc


def write(tmp_path: Path, doc: dict, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


# ---------------------------------------------------------------------- publishers
@pytest.mark.parametrize("name", sorted(PUBLISHERS))
def test_publisher_rejects_unknown_and_out_of_range_parameters(name):
    cls = PUBLISHERS[name]
    with pytest.raises(InputError, match="nonsense"):
        cls(**example_params(cls), nonsense=1)
    for param, rule in cls.params.items():
        if isinstance(rule, Interval) and rule.low is not None:
            bad = {**example_params(cls), param: rule.kind(rule.low) - 1}
            with pytest.raises(InputError, match=param):
                cls(**bad)


@pytest.mark.parametrize("name", sorted(PUBLISHERS))
def test_publisher_is_deterministic_and_publishes_no_identifier(name, tmp_path):
    """Three releases with insertions, deletions and updates through the pipeline, twice with the same
    seed: the same release files (uids aside: they are secrets, drawn from ``secrets``), JSON-serializable
    states, and never the identifier column.  A refusal must be bad input (exit 2), not a crash."""
    cls = PUBLISHERS[name]
    doc = scenario_doc([{"publisher": name, **example_params(cls)} for _ in range(3)], attacks=[])
    doc.update(SETTING.get(name, {}))
    path = write(tmp_path, doc)
    frames = []
    for _ in range(2):
        try:
            run = run_scenario(load_scenario(path), attack=False)
        except InputError as exc:
            assert exc.one_line() and "\n" not in exc.one_line()
            assert name in MAY_REFUSE, f"{name} refused its own setting: {exc.one_line()}"
            return
        for state in run.states:
            json.dumps(state)
        frames.append([r.to_frame().drop(columns=["uid"], errors="ignore") for r in run.sequence.releases])
    for a, b in zip(*frames):
        assert "id" not in a.columns
        assert a.equals(b)


# ---------------------------------------------------------------------- attacks
#: the adversary each attack family states (its paper's); an attack not listed takes the default adversary
ADVERSARY = {"correspondence": {"correspondence": True}, "intersection": {"record_tracking": True},
             "possible_worlds": {"sensitive": "free"}}
def two_release_doc(attack: str) -> dict:
    publisher = {"publisher": "bpg", "k": 2} if attack == "intersection" else {"publisher": "mondrian", "k": 2}
    doc = scenario_doc([publisher, dict(publisher)], attacks=[{attack: {}}], adversary=ADVERSARY.get(attack, {}))
    if attack == "correspondence":
        doc["dynamics"] = {2: INSERT_ONLY[2]}
    if attack == "update_graph":  # Li & Zhou's public update model: candidate update sets
        doc["transitions"] = TRANSITIONS
        doc["dynamics"] = {2: IN_MODEL[2]}
    return doc


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_rejects_unknown_parameters(name):
    with pytest.raises(InputError, match="nonsense"):
        ATTACKS[name](nonsense=1)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_results_are_serializable_deterministic_and_honest(name, tmp_path):
    path = write(tmp_path, two_release_doc(name))
    runs = []
    for _ in range(2):
        run = run_scenario(load_scenario(path))
        runs.append(run.results[name])
    a, b = runs
    assert json.dumps(a.to_json(), sort_keys=True, default=str) == json.dumps(b.to_json(), sort_keys=True,
                                                                              default=str)
    doc = a.to_json()
    for metric, value in doc["summary"].items():
        assert a.is_proven(metric) and np.isfinite(value)
    for metric, bound in doc.get("bounds", {}).items():
        assert bound["reason"] in REASONS or bound["reason"] == "not proven" or bound.get("detail")
        if bound["lower"] is not None and bound["upper"] is not None:
            assert bound["lower"] <= bound["upper"]
    if a.exact:
        assert not doc.get("bounds")
    declared = getattr(ATTACKS[name], "metrics", ())
    reported = set(a.reported_metrics())
    if declared:  # every metric it reports is one it declares (expect lines are validated against them)
        assert all(m in declared for m in reported), sorted(set(reported) - set(declared))


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_run_and_certify_agree(name, tmp_path, capsys):
    """``certify`` of the files ``run --out`` wrote, with the scenario's own YAML, gives the same figures and
    the same exit code."""
    path = write(tmp_path, two_release_doc(name))
    out = tmp_path / "out"
    code_run, text, _ = cli(capsys, "run", path, "--out", out, "--json", "-")
    files = sorted(out.glob("release_*.csv"))
    code_cert, text2, _ = cli(capsys, "certify", path, *files, "--json", "-")
    run_doc, cert_doc = json.loads(text), json.loads(text2)
    assert code_run == code_cert
    assert run_doc["verdict"] == cert_doc["verdict"] and run_doc["targets"] == cert_doc["targets"]
    for attack in run_doc["attacks"]:
        assert run_doc["attacks"][attack]["summary"] == cert_doc["attacks"][attack]["summary"]
        assert run_doc["attacks"][attack].get("bounds") == cert_doc["attacks"][attack].get("bounds")
