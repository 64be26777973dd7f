"""Foundation benchmark: the bundled Adult Mondrian release (30,162 records, k = 10, distinct l = 5).

Prints one JSON line per figure: ``{"bench": ..., "seconds": ..., "peak_mb": ...}``.  ``seconds`` is the
median of ``--repeat`` runs; ``peak_mb`` is the peak resident memory of a fresh process doing that step
alone (``ru_maxrss``, interpreter and libraries included).  Target: 5 s or less and under 1 GB.

    python benchmarks/bench_foundation.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _fresh import in_fresh_process, peak_mb

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "adult_mondrian.yaml"
FIGURES = ("load_adult", "mondrian_adult_k10_l5", "linking_checks_adult", "scenario_adult_mondrian_in_process",
           "cli_run_adult_mondrian")


def _load():
    from multirelease.pipeline import load_scenario

    return load_scenario(SCENARIO)


def one(figure: str, repeat: int) -> dict:
    import numpy as np

    sys.path.insert(0, str(ROOT))
    times = []
    if figure == "load_adult":
        for _ in range(repeat):
            t0 = time.perf_counter()
            sc = _load()
            sc.data.qi_codes  # encoding included
            times.append(time.perf_counter() - t0)
    elif figure == "mondrian_adult_k10_l5":
        sc = _load()
        sc.data.qi_codes
        publisher = sc.steps[0].publisher
        for _ in range(repeat):
            t0 = time.perf_counter()
            publisher.publish(sc.data, rng=np.random.default_rng(0))
            times.append(time.perf_counter() - t0)
    elif figure == "linking_checks_adult":
        from attacks import ATTACKS
        from multirelease.model.sequence import Adversary, SequenceView

        sc = _load()
        rel = sc.steps[0].publisher.publish(sc.data, rng=np.random.default_rng(0)).release
        for _ in range(repeat):
            view = SequenceView((rel,), Adversary())
            t0 = time.perf_counter()
            ATTACKS["linking"](k=10, l=5).run(view)
            times.append(time.perf_counter() - t0)
    elif figure == "scenario_adult_mondrian_in_process":
        from multirelease.reports.document import build_report
        from multirelease.pipeline import run_scenario

        for _ in range(repeat):
            t0 = time.perf_counter()
            build_report(run_scenario(_load()))
            times.append(time.perf_counter() - t0)
    else:
        raise SystemExit(f"unknown figure {figure}")
    peak = peak_mb()
    return {"bench": figure, "seconds": round(statistics.median(times), 4), "peak_mb": round(peak, 1),
            "runs": repeat}


def cli_figure(repeat: int) -> dict:
    exe = Path(sys.executable).with_name("multirelease")
    times, peaks = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        subprocess.run([str(exe), "run", str(SCENARIO), "--quiet"], check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
        peaks.append(max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024)
    return {"bench": "cli_run_adult_mondrian", "seconds": round(statistics.median(times), 4),
            "peak_mb": round(max(peaks), 1), "runs": repeat, "note": "whole command: start-up, load, publish, report"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.repeat)))
        return
    for figure in FIGURES:
        if figure == "cli_run_adult_mondrian":
            print(json.dumps(cli_figure(args.repeat)), flush=True)
            continue
        print(json.dumps(in_fresh_process(__file__, ["--one", figure, "--repeat", args.repeat], cwd=ROOT)), flush=True)


if __name__ == "__main__":
    main()
