"""Every publisher of the registry through the release ledger (issue 14, item 7), and a scenario's releases
replayed through the ledger as ``run`` makes them.

The first test loops over :data:`publishers.PUBLISHERS`, so a publisher added to the registry is covered the day
it is added: three monthly snapshots of a small table (records leave, arrive, and change their disease within
the spec's public update model; the ledger derives the changes by identifier) go through ``release`` one call at
a time.  Each call PASSes the gate (the file written, the ledger extended) or is refused - exit 2 with one line
naming the reason, nothing written, the ledger's bytes unchanged.  ``ledger DIR`` lists exactly the releases
that passed, and ``certify --ledger`` of their files reaches the verdict and the figures the last gate reached.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from multirelease.cli import main
from multirelease.model.transitions import load_transitions
from publishers import PUBLISHERS

import ledger_data
from ledger_data import DISEASES, SCHEMA, folder_bytes

ROOT = Path(__file__).resolve().parents[2]

#: a small value for each paper letter a publisher may take (its guarantee is then about these values)
LETTERS = {"k": 2, "l": 2, "m": 2}
SPEC = SCHEMA + """\
publisher: {{publisher: {name}{params}}}
adversary: {{quasi_identifiers: all, presence: true, sensitive: free}}
transitions: {{diameter: 2, shape: blocks, values: [{values}]}}
"""
#: publishers whose own check enumerates possible worlds get a smaller table (rows of the first month)
ROWS = {"sequential_diversity": 18, "non_sequential_diversity": 18, "global_guarantee": 24}
MODEL = load_transitions({"diameter": 2, "shape": "blocks", "values": DISEASES})


def write_snapshots(folder: Path, **kw) -> list[Path]:
    """:func:`ledger_data.write_snapshots` with its updates drawn from this spec's model (:data:`MODEL`)."""
    saved, ledger_data.MODEL = ledger_data.MODEL, MODEL
    try:
        return ledger_data.write_snapshots(folder, **kw)
    finally:
        ledger_data.MODEL = saved


def spec_for(folder: Path, name: str) -> Path:
    cls = PUBLISHERS[name]
    missing = [p for p in cls.required if p not in LETTERS]
    assert not missing, f"give LETTERS a small value for {name}'s required parameter(s) {missing}"
    params = "".join(f", {p}: {v}" for p, v in LETTERS.items() if p in cls.params)
    path = folder / "spec.yaml"
    path.write_text(SPEC.format(name=name, params=params, values=", ".join(DISEASES)), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(PUBLISHERS))
def test_every_registered_publisher_through_three_months(tmp_path, capsys, name):
    spec = spec_for(tmp_path, name)
    n = ROWS.get(name, 40)
    snaps = write_snapshots(tmp_path, months=3, n=n, leave=n // 10, arrive=n // 5, update=n // 10, seed=5)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    passed, gates = [], {}
    for i, snap in enumerate(snaps, 1):
        out, gate = rel / f"release_{i}.csv", tmp_path / f"gate_{i}.json"
        before = folder_bytes(ledger)
        capsys.readouterr()
        code = main(["release", str(spec), str(snap), "--ledger", str(ledger), "--out", str(out), "-q",
                     "--json", str(gate)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code in (0, 2), f"{name} month {i}: exit {code} (the gate judged the publisher's own output " \
                               f"{'FAIL' if code == 1 else 'UNKNOWN'}): {err}"
        if code == 0:
            assert out.exists()
            passed.append(out)
            gates[i] = json.loads(gate.read_text())
            assert gates[i]["verdict"] == "pass"
        else:  # refused: one line saying why, nothing written, the ledger as it was
            assert len(err) == 1 and err[0].startswith("error: ") and len(err[0]) > len("error: ") + 10, err
            assert not out.exists() and folder_bytes(ledger) == before
    assert passed, f"{name} refused every month"
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(passed)
    for n, line in enumerate(lines, 1):
        assert line.startswith(f"{n} ") and f" {name} " in line and " PASS " in line
    report = tmp_path / "certified.json"
    assert main(["certify", str(spec), *map(str, passed), "--ledger", str(ledger), "--json", str(report),
                 "-q"]) == 0
    certified = json.loads(report.read_text())
    last = gates[max(gates)]
    assert certified["verdict"] == "pass"
    assert [(e["expect"], e["value"]) for e in certified["expectations"]] == \
        [(e["expect"], e["value"]) for e in last["expectations"]]
    assert certified["releases"][-1]["records"] == last["releases"][-1]["records"]
    assert len(certified["releases"]) == len(passed)


# ---------------------------------------------------------------------- run == release, replayed
REPLAYED = ["toy_republication.yaml", "li_zhou_toy_m_distinct.yaml", "shmueli_tassa_example_4_2_published.yaml"]


@pytest.mark.parametrize("scenario", REPLAYED)
def test_scenario_replayed_through_the_ledger_matches_run(tmp_path, monkeypatch, scenario):
    """A scenario's releases are a ledger replayed from its snapshots: ``release`` fed the snapshot behind each
    of ``run``'s releases, with the publisher seeded as ``run`` seeds it (the ledger's seed is secret; the same
    seed gives the same uids too), writes the same release files byte for byte, and every gate reaches the
    verdict and the figures ``run`` reached on the sequence so far.  A release whose publisher configuration
    differs from the previous one (a vertical release publishing other attributes) is an amended spec."""
    import yaml

    from multirelease import pipeline
    import multirelease.ledger.operations as ledger_release

    path = ROOT / "scenarios" / scenario
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec = {k: doc[k] for k in ("name", "schema", "transitions", "adversary", "attacks", "targets") if k in doc}
    # release[i] lines name a release of the whole sequence; the ledger checks record counts below instead
    spec["expect"] = [e for e in doc.get("expect", []) if not e.startswith("release[")]
    specs = []
    for n, item in enumerate(doc["releases"], 1):
        specs.append(tmp_path / f"spec_{n}.yaml")
        specs[-1].write_text(yaml.safe_dump({**spec, "publisher": dict(item)}, sort_keys=False), encoding="utf-8")

    sc = pipeline.load_scenario(path)
    ident = sc.schema.identifier
    out_run, out_ledger = tmp_path / "run", tmp_path / "ledger_releases"
    out_ledger.mkdir()
    full = tmp_path / "run.json"
    assert main(["run", str(path), "--out", str(out_run), "--json", str(full), "-q"]) == 0
    # run's figures on the first n releases: the scenario's own pipeline on its files 1..n (certify of what
    # run wrote is run's path: one pipeline), its dynamics still those of the whole scenario
    certify_spec = tmp_path / "scenario.yaml"
    certify_spec.write_text(yaml.safe_dump({**doc, "expect": spec["expect"]}, sort_keys=False), encoding="utf-8")
    run_reports = []
    for n in range(1, len(doc["releases"]) + 1):
        report = tmp_path / f"run_{n}.json"
        assert main(["certify", str(certify_spec), *(str(out_run / f"release_{i}.csv") for i in range(1, n + 1)),
                     "--json", str(report), "-q"]) == 0
        run_reports.append(json.loads(report.read_text()))
    assert run_reports[-1]["attacks"] == json.loads(full.read_text())["attacks"]
    snapshots = pipeline.run_scenario(sc, attack=False).sequence.snapshots

    monkeypatch.setattr(ledger_release, "_seed", lambda secret: sc.seed)
    for n, table in enumerate(snapshots, 1):
        snap = tmp_path / f"snapshot_{n}.csv"
        table.frame.rename_axis(ident).to_csv(snap)
        gate = tmp_path / f"gate_{n}.json"
        amend = ["--amend", "the next release of the scenario"] if n > 1 and doc["releases"][n - 2] != \
            doc["releases"][n - 1] else []
        code = main(["release", str(specs[n - 1]), str(snap), "--ledger", str(tmp_path / "ledger"), "--out",
                     str(out_ledger / f"release_{n}.csv"), "--json", str(gate), "-q", *amend])
        assert code == 0
        for name in (f"release_{n}.csv", f"counterfeits_{n}.csv"):
            if (out_run / name).exists() or (out_ledger / name).exists():
                assert (out_ledger / name).read_bytes() == (out_run / name).read_bytes(), name
        gated, ran = json.loads(gate.read_text()), run_reports[n - 1]
        assert gated["verdict"] == ran["verdict"] == "pass"
        ran_values = {e["expect"]: e["value"] for e in ran["expectations"]}
        for e in gated["expectations"]:
            if e["expect"] in ran_values:
                assert e["value"] == ran_values[e["expect"]], e["expect"]
        assert gated["releases"][-1]["records"] == ran["releases"][-1]["records"]
