"""The small monthly table of the ledger tests and its spec templates, shared by every test that makes a ledger
(tests/ledger/, tests/publishers/test_guarantee_holes.py, test_bcf_state_digests.py, tests/formats/test_arx_notation.py).

``write_snapshots`` writes months of a 120-row table with departures, arrivals and updates inside the public
update model (:data:`MODEL`); ``write_spec`` a ledger spec from :data:`SPEC` (m-invariance by default);
``release`` runs ``multirelease release`` quietly; ``folder_bytes`` reads a release folder for comparisons.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from multirelease.cli import main
from multirelease.model.transitions import load_transitions

DISEASES = ["flu", "cold", "cancer", "hiv", "asthma", "gastritis"]
COUNTRIES = ["UK", "France", "Spain", "US", "Canada", "Mexico"]
#: the small table's schema, the head of every spec template here and in tests/ledger/test_ledger_publishers.py
#: (a ``str.format`` template: braces doubled)
SCHEMA = """\
schema:
  attributes:
    id: identifier
    age: {{role: quasi, hierarchy: {{numeric: {{min: 20, max: 59, bands: [5, 10, 20]}}}}}}
    country: {{role: quasi, hierarchy: {{Europe: [UK, France, Spain], America: [US, Canada, Mexico]}}}}
    disease: {{role: sensitive}}
"""
SPEC = SCHEMA + """\
publisher: {{publisher: {publisher}}}
adversary: {{quasi_identifiers: all, presence: true{sensitive}}}
{transitions}attacks:
{attacks}expect:
{expect}"""
M_INVARIANCE = dict(publisher="m_invariance, m: 2", sensitive=", sensitive: transitions",
                    transitions="transitions: {diameter: 2, shape: window, values: [flu, cold, cancer, hiv, asthma, "
                                "gastritis]}\n",
                    attacks="  - linking: {l: 2}\n  - update_graph: {linkage: population}\n",
                    expect="  - linking.l_distinct >= 2\n")


MODEL = load_transitions({"diameter": 2, "shape": "window", "values": DISEASES})


def write_spec(folder: Path, name: str = "spec.yaml", **changes) -> Path:
    fields = {**M_INVARIANCE, **changes}
    path = folder / name
    path.write_text(SPEC.format(**fields), encoding="utf-8")
    return path


def write_snapshots(folder: Path, months: int = 3, n: int = 120, leave: int = 10, arrive: int = 15,
                    update: int = 5, seed: int = 0) -> list[Path]:
    """Monthly snapshots of a small table: ``leave`` records leave, ``arrive`` arrive and ``update`` redraw
    their disease from the spec's public update model (:data:`MODEL`) each month; identifiers look like nothing a
    release can contain (``idx00012q``)."""
    rng = np.random.default_rng(seed)
    rows: dict[str, dict] = {}
    next_id = 1

    def person():
        return {"age": int(rng.integers(20, 60)), "country": COUNTRIES[rng.integers(6)],
                "disease": DISEASES[rng.integers(6)]}

    for _ in range(n):
        rows[f"idx{next_id:05d}q"] = person()
        next_id += 1
    paths = []
    for month in range(1, months + 1):
        if month > 1:
            for rid in rng.choice(sorted(rows), leave, replace=False):
                del rows[rid]
            for rid in rng.choice(sorted(rows), update, replace=False):  # within the public update model
                rows[rid] = {**rows[rid], "disease": str(MODEL.values[MODEL.sample(
                    MODEL.indices([rows[rid]["disease"]]), rng)[0]])}
            for _ in range(arrive):
                rows[f"idx{next_id:05d}q"] = person()
                next_id += 1
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "id"
        path = folder / f"snapshot_{month}.csv"
        frame.to_csv(path)
        paths.append(path)
    return paths


def release(spec: Path, snapshot: Path, ledger: Path, out: Path, *extra: str) -> int:
    return main(["release", str(spec), str(snapshot), "--ledger", str(ledger), "--out", str(out), "-q", *extra])


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}


def three_months(folder: Path) -> tuple[Path, list[Path], Path, Path, list[int]]:
    """Three monthly releases of m-invariance through the ledger, one ``release`` call at a time: ``(spec,
    snapshots, ledger, release folder, exit codes)``."""
    spec = write_spec(folder)
    snaps = write_snapshots(folder)
    ledger, rel = folder / "ledger", folder / "releases"
    rel.mkdir()
    codes = [release(spec, s, ledger, rel / f"release_{i}.csv") for i, s in enumerate(snaps, 1)]
    return spec, snaps, ledger, rel, codes
