"""Issue 22's Adult months: linking columns through the ledger, and the tuple-intersection attacker.

Three monthly Adult snapshots of 10,000 rows (1,000 leave, 2,000 arrive, 300 occupations change a month), each
made a release with ``multirelease release`` (through :func:`multirelease.ledger.operations.make_release`) by
m_invariance (m = 2), m_distinct (m = 2) and bpg (k = 5, l = 2), spec ``linking: {l: 2}``, ``transitions:
{free: true}``; sex, age, marital-status and education quasi-identifiers, occupation sensitive, race,
native-country, workclass and salary-class ``insensitive`` (linking columns: persistent, Shmueli & Tassa
section 5.2).  Each publisher runs with its default (``linking: omit``) and with ``linking: keep``.

After each month, an attacker written here from Example 5.1 (independent of ``attacks/``): for each target of
the month's snapshot (its quasi-identifiers and presence known) and each written release it is present in, the
linking tuples of the classes whose region contains its point; their intersection over the releases is what its
tuple can be; its candidate occupations in a release are those of the rows of its candidate classes that carry
such a tuple.  A target is *pinned* in a release when one occupation is left (``wrong`` when it is not the true
one).  A release with fewer rows than its snapshot withholds records (BPG): the attacker cannot tell whose,
so it neither constrains nor judges anyone there (``withholds_records``; reading it anyway pins wrongly).  Without
the columns every tuple is the empty one, and a pin is an l-diversity failure.

Prints one JSON line per (publisher, choice, month): verdict, exit code, seconds, CPU seconds, peak RSS, rows
published, counterfeit rows, the linking columns published, and the pins per written release.  Usage::

    .venv/bin/python benchmarks/bench_linking.py [--only m_invariance|m_distinct|bpg] [--choice omit|keep]
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ledger import adult, stream  # noqa: E402
from multirelease.errors import InputError  # noqa: E402
from multirelease.ledger.operations import load_spec, make_release  # noqa: E402
from multirelease.formats.release_csv import read_release_csv  # noqa: E402
from multirelease.model.table import Table  # noqa: E402
from multirelease.model.transitions import load_transitions  # noqa: E402

H = Path("/work/shared/data/adult")
LINKING = ("race", "native-country", "workclass", "salary-class")
PUBLISHERS = {"m_invariance": "{publisher: m_invariance, m: 2, linking: %s}",
              "m_distinct": "{publisher: m_distinct, m: 2, linking: %s}",
              "bpg": "{publisher: bpg, k: 5, l: 2, linking: %s}"}


def spec_text(publisher: str, choice: str) -> str:
    quasi = ("sex", "age", "marital-status", "education")
    lines = ["schema:", "  attributes:", "    id: identifier"]
    lines += [f"    {a}: {{role: quasi, hierarchy: {{file: {H}/adult_hierarchy_{a}.csv}}}}" for a in quasi]
    lines += [f"    {a}: {{role: insensitive}}" for a in LINKING]
    lines += [f"    occupation: {{role: sensitive, hierarchy: {{file: {H}/adult_hierarchy_occupation.csv}}}}",
              "transitions: {free: true}", f"publisher: {PUBLISHERS[publisher] % choice}",
              "attacks:", "  - linking: {l: 2}", ""]
    return "\n".join(lines)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def pins(schema, snapshots: list[pd.DataFrame], files: list[Path]) -> list[dict]:
    """The tuple-intersection attacker over the written releases (module docstring): per release, targets
    pinned and pinned wrongly."""
    releases = [read_release_csv(f, schema) for f in files]
    last = snapshots[len(files) - 1]
    targets = last.index.to_numpy()
    quasi = list(releases[0].quasi)
    linking = [c for c in LINKING if c in releases[0].attributes]
    feasible: dict = {}  # target -> set of tuples (None: not yet constrained)
    per_release = []
    for r, (rel, snap) in enumerate(zip(releases, snapshots)):
        if len(rel) < len(snap):  # BPG withholds records: the attacker cannot tell who, the release shows no one
            per_release.append(None)
            continue
        present = [t for t in targets if t in snap.index]
        table = Table.from_frame(schema, snap.loc[present].reset_index())
        cols = [list(schema.quasi).index(n) for n in quasi]
        points = table.qi_codes[:, cols]
        lo, hi = rel.class_regions
        tuples = (rel.other[linking].astype(str).agg("\x1f".join, axis=1).to_numpy()
                  if linking else np.full(len(rel), "", dtype=object))
        cls_tuples = pd.Series(tuples).groupby(rel.classes).agg(set).to_dict()
        uniq, inv = np.unique(points, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        inside = np.all((lo[None, :, :] <= uniq[:, None, :]) & (uniq[:, None, :] <= hi[None, :, :]), axis=2)
        rows_of = {c: np.flatnonzero(rel.classes == c) for c in range(rel.n_classes)}
        cand_classes = [np.flatnonzero(inside[u]) for u in range(len(uniq))]
        for k, t in enumerate(present):
            here = set().union(*(cls_tuples[c] for c in cand_classes[inv[k]]))
            feasible[t] = here if t not in feasible else feasible[t] & here
        per_release.append((rel, present, inv, cand_classes, tuples, rows_of))
    out = []
    for r, item in enumerate(per_release):
        if item is None:
            out.append({"release": r + 1, "withholds_records": True})
            continue
        rel, present, inv, cand_classes, tuples, rows_of = item
        truth = snapshots[r].loc[present, "occupation"].to_numpy()
        pinned = wrong = 0
        for k, t in enumerate(present):
            ok = feasible[t]
            values = {rel.sensitive[i] for c in cand_classes[inv[k]] for i in rows_of[c] if tuples[i] in ok}
            if len(values) == 1:
                pinned += 1
                wrong += next(iter(values)) != truth[k]
        out.append({"release": r + 1, "targets": len(present), "pinned": pinned, "wrong": wrong})
    return out


def run(publisher: str, choice: str, folder: Path, seed: int = 22) -> None:
    spec = folder / f"{publisher}_{choice}.yaml"
    spec.write_text(spec_text(publisher, choice), encoding="utf-8")
    doc, base, schema, _ = load_spec(spec)
    model = load_transitions({"free": True}, schema)
    ledger, rel = folder / f"{publisher}_{choice}_ledger", folder / f"{publisher}_{choice}_releases"
    rel.mkdir()
    rng = np.random.default_rng(seed)
    snapshots, files = [], []
    for month, frame in stream(adult(), 3, 10000, 1000, 2000, 300, rng, model):
        snapshots.append(frame.copy())
        table = Table.from_frame(schema, frame.reset_index())
        out = rel / f"release_{month}.csv"
        t0, c0 = time.perf_counter(), _cpu()
        line = {"bench": "linking_months", "publisher": publisher, "linking": choice, "month": month}
        try:
            outcome = make_release(spec, table, ledger, out)
        except InputError as err:
            line.update({"exit": 2, "refused": err.one_line()})
            print(json.dumps(line), flush=True)
            break
        line.update({"verdict": outcome.verdict, "exit": outcome.exit_code,
                     "seconds": round(time.perf_counter() - t0, 2), "cpu_seconds": round(_cpu() - c0, 2),
                     "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
        if outcome.exit_code != 0:
            line["message"] = outcome.message.splitlines()[0][:300] if outcome.message else ""
            print(json.dumps(line), flush=True)
            break
        files.append(out)
        published = pd.read_csv(out, dtype=str)
        cf = rel / f"counterfeits_{month}.csv"
        line.update({"rows": len(published), "linking_published": [c for c in LINKING if c in published.columns],
                     "counterfeit_rows": int(pd.read_csv(cf)["counterfeits"].sum()) if cf.exists() else 0,
                     "pins": pins(schema, snapshots, files)})
        print(json.dumps(line), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=tuple(PUBLISHERS))
    ap.add_argument("--choice", choices=("omit", "keep"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-linking-") as tmp:
        for publisher in PUBLISHERS:
            if args.only not in (None, publisher):
                continue
            for choice in ("omit", "keep"):
                if args.choice not in (None, choice):
                    continue
                sub = Path(tmp) / f"{publisher}_{choice}"
                sub.mkdir()
                run(publisher, choice, sub)


if __name__ == "__main__":
    main()
