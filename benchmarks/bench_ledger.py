"""Benchmarks of issue 14 (the release ledger), one JSON line per figure.

* ``done_when`` - 10,000 Adult rows, three months (each month 1,000 leave, 2,000 arrive, 300 occupations change
  within the public update model's candidate sets), m-invariance (m = 4) through the ledger one call at a
  time: each call's verdict and seconds, the ledger's history lines, ``ledger --verify``'s verdict and whether
  any identifier of any snapshot appears in the folder of releases;
* ``stream`` - 30,000 Adult rows, twelve months of 10% churn (3,000 leave, 3,000 arrive, the arrivals new
  people under fresh ids with the values of random Adult records: the file holds only 30,162 records), for
  m-invariance (m = 4) and BPG (k = l = 10, Barbosa et al. section 7): seconds of every call (gate included:
  the whole sequence is attacked again every month), seconds of the publisher alone (``publish_seconds``), of
  the call without the gate's attacks (``without_attacks_seconds``: ledger read, publish, files, transaction)
  and month 12 / month 1 of each (target: 1.5 or less); the process's peak resident memory after each month
  (``peak_rss_mb``) and its CPU seconds of each call (``cpu_seconds``, user + system, ``resource.getrusage``:
  steadier than wall time on a loaded machine).  The gate extends the attacks' kept states by the new release
  (``multirelease/ledger/gate.py``); ``--repeat R`` runs each stream ``R`` times (fresh ledgers) and reports
  the median seconds of each month.  Month 1 of the first stream also pays the process's first imports of the
  publisher and attacks (measured: about 0.45 s CPU of m_invariance's 1.8, 0.1 s of bpg's 0.85); a
  ``release`` process per month pays them every month.

Adult is read in place (``/work/shared/data/adult/adult.csv``, never copied); the snapshots are handed to
:func:`multirelease.ledger.operations.make_release` as tables (the CLI reads the same from a file); the ledgers
and releases go to a temporary folder removed at the end.  Usage::

    nice .venv/bin/python benchmarks/bench_ledger.py [--only done_when|m_invariance|bpg] [--months 12]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from multirelease.ledger.operations import history_lines, load_spec, make_release, verify_ledger  # noqa: E402
from multirelease.model.table import Table  # noqa: E402
from multirelease.model.transitions import load_transitions  # noqa: E402

ADULT = Path("/work/shared/data/adult/adult.csv")
H = ADULT.parent
M_SPEC = f"""\
schema:
  attributes:
    id: identifier
    sex: {{role: quasi, hierarchy: {{file: {H}/adult_hierarchy_sex.csv}}}}
    age: {{role: quasi, hierarchy: {{file: {H}/adult_hierarchy_age.csv}}}}
    race: {{role: insensitive}}
    marital-status: {{role: quasi, hierarchy: {{file: {H}/adult_hierarchy_marital-status.csv}}}}
    education: {{role: quasi, hierarchy: {{file: {H}/adult_hierarchy_education.csv}}}}
    native-country: {{role: insensitive}}
    workclass: {{role: insensitive}}
    occupation: {{role: sensitive, hierarchy: {{file: {H}/adult_hierarchy_occupation.csv}}}}
    salary-class: {{role: insensitive}}
transitions: {{diameter: 5, shape: window}}
publisher: {{publisher: m_invariance, m: 4, attributes: [sex, age, marital-status, education, occupation]}}
adversary: {{quasi_identifiers: all, presence: true, sensitive: transitions}}
attacks:
  - linking: {{l: 4}}
  - update_graph: {{linkage: population}}
expect:
  - linking.l_distinct >= 4
  - update_graph.inconsistent == 0
"""
BPG_SPEC = "\n".join(
    ["schema:", "  attributes:", "    id: identifier"]
    + [f"    {a}: {{role: quasi, hierarchy: {{file: {H}/adult_hierarchy_{a}.csv}}}}" for a in
       ("sex", "age", "race", "marital-status", "education", "native-country", "workclass")]
    + [f"    occupation: {{role: sensitive, hierarchy: {{file: {H}/adult_hierarchy_occupation.csv}}}}",
       f"    salary-class: {{role: quasi, hierarchy: {{file: {H}/adult_hierarchy_salary-class.csv}}}}",
       "publisher: {publisher: bpg, k: 10, l: 10}",
       "adversary: {presence: true, record_tracking: true}",
       "attacks:", "  - intersection: {k: 10, l: 10}", ""])


def _cpu() -> float:
    """CPU seconds of this process so far (user + system, every thread): less sensitive than wall time to a
    machine other processes load."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def adult() -> pd.DataFrame:
    frame = pd.read_csv(ADULT, sep=";", dtype=str, keep_default_na=False, skipinitialspace=True)
    frame.columns = [c.strip() for c in frame.columns]
    return frame


def stream(data: pd.DataFrame, months: int, initial: int, leave: int, arrive: int, change: int,
           rng: np.random.Generator, model=None):
    """Monthly snapshots (frames indexed by fresh ids): ``leave`` present records leave, ``arrive`` new people
    arrive with the values of random Adult records, ``change`` staying records redraw their occupation from
    the public update model."""
    take = rng.choice(len(data), initial, replace=False)
    frame = data.iloc[take].copy()
    frame.index = pd.Index([f"p{i:06d}" for i in range(initial)], name="id")
    next_id = initial
    for month in range(1, months + 1):
        if month > 1:
            frame, next_id = next_month(data, frame, next_id, leave, arrive, change, rng, model)
        yield month, frame


def next_month(data: pd.DataFrame, frame: pd.DataFrame, next_id: int, leave: int, arrive: int, change: int,
               rng: np.random.Generator, model=None) -> tuple[pd.DataFrame, int]:
    """One month of :func:`stream` after ``frame``: ``(the next snapshot, the next fresh id number)``."""
    frame = frame.drop(index=rng.choice(frame.index.to_numpy(), leave, replace=False))
    if change:
        who = rng.choice(frame.index.to_numpy(), change, replace=False)
        now = model.indices(frame.loc[who, "occupation"].to_numpy())
        frame.loc[who, "occupation"] = np.asarray(model.values, dtype=object)[model.sample(now, rng)]
    new = data.iloc[rng.choice(len(data), arrive, replace=True)].copy()
    new.index = pd.Index([f"p{i:06d}" for i in range(next_id, next_id + arrive)], name="id")
    return pd.concat([frame, new]), next_id + arrive


def run_stream(label: str, spec_text: str, months: int, initial: int, leave: int, arrive: int, change: int,
               seed: int, folder: Path) -> dict:
    spec = folder / f"{label}.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    doc, base, schema, _ = load_spec(spec)
    model = load_transitions(doc.get("transitions"), schema) if change else None
    ledger, rel = folder / f"{label}_ledger", folder / f"{label}_releases"
    rel.mkdir()
    rng = np.random.default_rng(seed)
    seconds, publish, overhead, verdicts, ids, rss, cpu = [], [], [], [], set(), [], []
    for month, frame in stream(adult(), months, initial, leave, arrive, change, rng, model):
        ids |= set(frame.index)
        table = Table.from_frame(schema, frame.reset_index())
        t0, c0 = time.perf_counter(), _cpu()
        outcome = make_release(spec, table, ledger, rel / f"release_{month}.csv")
        seconds.append(round(time.perf_counter() - t0, 2))
        cpu.append(round(_cpu() - c0, 2))
        verdicts.append(outcome.verdict)
        publish.append(round(outcome.run.timings.get(f"release {month}", float("nan")), 2) if outcome.run else None)
        attacks = sum(v for k, v in (outcome.run.timings if outcome.run else {}).items() if k.startswith("attack"))
        overhead.append(round(seconds[-1] - attacks, 2))  # the call without the gate's attacks
        rss.append(round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
        print(json.dumps({"bench": label, "month": month, "rows": len(frame), "seconds": seconds[-1],
                          "cpu_seconds": cpu[-1],
                          "peak_rss_mb": rss[-1], "verdict": outcome.verdict, "exit": outcome.exit_code,
                          "gate": {k: round(v, 2) for k, v in (outcome.run.timings if outcome.run else {}).items()}}),
              flush=True)
        if outcome.exit_code != 0:
            break
    text = "".join(p.read_text() for p in rel.iterdir())
    tokens = set(text.replace("\n", ",").split(","))
    size = sum(p.stat().st_size for p in ledger.iterdir()) / 2**20
    return {"seconds": seconds, "publish": publish, "overhead": overhead, "verdicts": verdicts, "ledger": ledger,
            "ids_in_releases": len(ids & tokens), "peak_rss_mb": rss, "ledger_mb": round(size, 1), "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("done_when", "m_invariance", "bpg"))
    ap.add_argument("--months", type=int, default=12)
    ap.add_argument("--rows", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        folder = Path(tmp)
        if args.only in (None, "done_when"):
            out = run_stream("done_when", M_SPEC, 3, 10000, 1000, 2000, 300, 14, folder)
            run, problems = verify_ledger(out["ledger"])
            print(json.dumps({"bench": "done_when", "seconds": out["seconds"], "verdicts": out["verdicts"],
                              "history": history_lines(out["ledger"]), "verify": run.verdict if run else None,
                              "verify_problems": problems, "ids_in_releases": out["ids_in_releases"]}), flush=True)
        for label, spec in (("m_invariance", M_SPEC), ("bpg", BPG_SPEC)):
            if args.only not in (None, label):
                continue
            churn = args.rows // 10
            runs = []
            for r in range(args.repeat):
                sub = folder / f"{label}_{r}"
                sub.mkdir()
                runs.append(run_stream(label, spec, args.months, args.rows, churn, churn, 0, 15, sub))
            out = runs[-1]

            def median(key):
                return [round(statistics.median(x), 2) for x in zip(*(o[key] for o in runs))]

            s, p, c = median("seconds"), median("publish"), median("cpu")
            out["overhead"] = median("overhead")
            print(json.dumps({"bench": f"stream_{label}", "rows": args.rows, "months": len(s), "repeat": args.repeat,
                              "seconds": s, "peak_rss_mb": max(max(o["peak_rss_mb"]) for o in runs),
                              "publish_seconds": p, "without_attacks_seconds": out["overhead"],
                              "verdicts": out["verdicts"],
                              "cpu_seconds": c, "cpu_last_over_first": round(c[-1] / c[0], 2),
                              "month_last_over_first": round(s[-1] / s[0], 2),
                              "publish_last_over_first": round(p[-1] / p[0], 2),
                              "without_attacks_last_over_first": round(out["overhead"][-1] / out["overhead"][0], 2),
                              "target": 1.5, "ids_in_releases": out["ids_in_releases"],
                              "ledger_mb": out["ledger_mb"]}), flush=True)


if __name__ == "__main__":
    main()
