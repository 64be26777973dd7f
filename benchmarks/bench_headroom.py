"""Headroom (issue 26) on an Adult ledger: the forecast's time and memory, and whether the real month the gate
first fails lies inside its 10-90% band.  One JSON line per figure.

**The ledger.**  Three real Adult months of ``--rows`` records (default 10,000) made by ``bench_ledger.stream``:
10% churn (a tenth of the rows leave and as many arrive each month, the arrivals new people with the values of
random Adult records) and 300 occupations a month changed within the public update model ``{diameter: 5,
shape: window}``; m-invariance (m = 4, ``bench_repair.m_spec_text``: quasi-identifiers sex, age,
marital-status, education, occupation sensitive, attacks ``linking`` and ``update_graph``) with the custodian's
utility requirement "counterfeit rows at most x%", ``release[-1].counterfeit_share <= x`` (``--max-counterfeits``,
default 0.001: on this stream the share grows from 0 in month 3 to about 0.1% by month 9 and past it within a
year).

**Figures.**

* ``ledger``: the three months' verdicts and seconds;
* ``headroom``: ``multirelease ledger DIR --headroom --months 12 --futures 20`` run as a process of its own
  (the CLI, futures on the local executor's two workers): its wall seconds, its peak resident memory
  (``peak_rss_mb``: the largest of the process and its workers, ``getrusage(RUSAGE_CHILDREN)``), the lines it
  printed, the band (median and 10-90% months of headroom, and the first failing release they mean) and the
  share passing by month ahead;
* ``real``: months 4-15 made by the same process with another seed (``--seed`` + 1, continuing month 3's
  table) and released one at a time through the ledger (``make_release``, as ``release`` does) until the gate
  first fails: that month, the months of headroom it means (months passed after month 3), and whether they lie
  inside the forecast's 10-90% band (a sequence that never failed through month 15 is "12 or more", inside when
  the band's top is the horizon).

Adult is read in place; everything goes to a temporary folder removed at the end.  Usage::

    nice .venv/bin/python benchmarks/bench_headroom.py [--rows 10000] [--months 12] [--futures 20] [--seed 14]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ledger import adult, next_month, stream  # noqa: E402
from bench_repair import QIS, emit, m_spec_text  # noqa: E402
from multirelease.ledger.operations import load_spec, make_release  # noqa: E402
from multirelease.model.table import Table  # noqa: E402
from multirelease.model.transitions import load_transitions  # noqa: E402

UPDATES = 300
REAL_MONTHS = 3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--months", type=int, default=12)
    ap.add_argument("--futures", type=int, default=20)
    ap.add_argument("--seed", type=int, default=14, help="the ledger's three months; the real months 4-15 take "
                    "seed + 1, the forecast --seed 0")
    ap.add_argument("--max-counterfeits", type=float, default=0.001)
    args = ap.parse_args()
    churn = args.rows // 10
    with tempfile.TemporaryDirectory(prefix="bench-headroom-") as tmp:
        folder = Path(tmp)
        spec = folder / "spec.yaml"
        spec.write_text(m_spec_text(f"release[-1].counterfeit_share <= {args.max_counterfeits:g}"), encoding="utf-8")
        doc, _, schema, _ = load_spec(spec)
        model = load_transitions(doc.get("transitions"), schema)
        data = adult()[list(QIS) + ["occupation"]]
        ledger, rel = folder / "ledger", folder / "releases"
        rel.mkdir()

        def month(n: int, frame) -> object:
            t0 = time.perf_counter()
            out = make_release(spec, Table.from_frame(schema, frame.reset_index()), ledger, rel / f"release_{n}.csv")
            return out, time.perf_counter() - t0

        rng = np.random.default_rng(args.seed)
        verdicts, seconds = [], []
        for n, frame in stream(data, REAL_MONTHS, args.rows, churn, churn, UPDATES, rng, model):
            out, s = month(n, frame)
            verdicts.append(out.verdict)
            seconds.append(round(s, 2))
        emit(bench="ledger", rows=args.rows, months=REAL_MONTHS, verdicts=verdicts, seconds=seconds,
             requirement=f"release[-1].counterfeit_share <= {args.max_counterfeits:g}")

        report = folder / "headroom.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        cli = subprocess.run([sys.executable, "-m", "multirelease.cli", "ledger", str(ledger), "--headroom",
                              "--months", str(args.months), "--futures", str(args.futures), "--json", str(report)],
                             capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if cli.returncode != 0:
            emit(bench="headroom", exit=cli.returncode, stderr=cli.stderr.strip().splitlines()[-3:])
            return
        h = json.loads(report.read_text())["headroom"]
        band = h["headroom"]
        emit(bench="headroom", rows=args.rows, months=args.months, futures=args.futures, seconds=round(wall, 1),
             peak_rss_mb=round(max(peak, before) / 1024, 1), target_seconds=600,
             band={k: band[k] for k in ("low", "median", "high", "censored")},
             first_failing_release=band["first_failing_release"],
             passing=[round(p["share"], 2) for p in h["passing"]], fails_first=h["first_failing"][:2],
             lines=[line for line in cli.stdout.splitlines() if line.startswith("headroom:")])

        rng = np.random.default_rng(args.seed + 1)
        next_id = args.rows + (REAL_MONTHS - 1) * churn
        first_fail, real = None, []
        for n in range(REAL_MONTHS + 1, REAL_MONTHS + args.months + 1):
            frame, next_id = next_month(data, frame, next_id, churn, churn, UPDATES, rng, model)
            out, s = month(n, frame)
            share = out.run.release_metrics[-1].get("counterfeit_share") if out.run is not None else None
            real.append({"month": n, "verdict": out.verdict, "seconds": round(s, 2), "counterfeit_share": share})
            if out.verdict != "pass":
                first_fail = n
                break
        passed = (first_fail - REAL_MONTHS - 1) if first_fail is not None else args.months
        inside = band["low"] <= passed <= band["high"]
        emit(bench="real", seed=args.seed + 1, months=real, first_failing_month=first_fail,
             months_of_headroom=passed if first_fail is not None else f"{args.months} or more",
             band=[band["low"], band["high"]], inside_band=inside)


if __name__ == "__main__":
    main()
