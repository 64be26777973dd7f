"""Benchmarks of issue 5, one JSON line per figure.

* ``m_distinct_publish`` - m-Distinct (m = 4) publishing time of each release of the 10-release Adult scenario
  (``scenarios/adult_updates_m_distinct.yaml``; target: 5 s or less per release) and the peak memory;
* ``sug_attack`` - the update-graph attack (per-record SUG, forward/backward sums, every prefix) over those 10
  releases (target: 10 s or less) and its peak memory.  The releases publish no uid, so the attack links
  a record's versions as Li & Zhou's adversary does, by the population (``linkage: population``, the
  scenario's).

Both lines name the m_distinct variant (``--variant``: the scenario's ``default``, or ``paper``, Li & Zhou's
Algorithms 2-3 as written).

Usage: ``.venv/bin/python benchmarks/bench_updates.py [--releases 10] [--variant default|paper]``.  Peak
memory is the process's peak resident set size (``ru_maxrss``) at the end of the phase (tracemalloc would slow
the publisher's Python loops tenfold); ``peak_mb_traced`` re-measures the attack under tracemalloc (its numpy arrays).
"""
from __future__ import annotations

import argparse
import json
import sys
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attacks.update_graph.attack import UpdateGraph  # noqa: E402
from multirelease.pipeline import load_scenario  # noqa: E402
from multirelease.model.sequence import ReleaseSequence  # noqa: E402


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, rss_mb()


def traced_peak(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--releases", type=int, default=10)
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "adult_updates_m_distinct.yaml"))
    ap.add_argument("--variant", choices=("default", "paper"), default=None,
                    help="m_distinct variant (default: the scenario's)")
    args = ap.parse_args(argv)
    sc = load_scenario(args.scenario)
    steps = sc.steps[:args.releases]
    pub = steps[0].publisher
    if args.variant is not None:
        config = {k: v for k, v in pub.config.items()
                  if k not in ("variant", "refill", "intersect_limit", "transitions")}
        pub = type(pub)(**config, variant=args.variant)
        pub.bind_transitions(sc.transitions)
    variant = pub.config.get("variant")
    table, state = sc.data, None
    seq = ReleaseSequence()
    times, peaks = [], []
    for step in steps:
        change = sc.dynamics.get(step.index)
        if change is not None:
            table = table.apply(change)
        rng = np.random.default_rng([sc.seed, step.index])
        res, sec, peak = measure(lambda: pub.publish(table, attributes=step.attributes, state=state, rng=rng))
        state = res.state
        seq.append(res.release, res.truth, table)
        times.append(round(sec, 3))
        peaks.append(round(peak, 1))
    print(json.dumps({"bench": "m_distinct_publish", "seconds": max(times), "peak_mb": max(peaks),
                      "scenario": Path(args.scenario).name, "m": pub.config["m"], "variant": variant,
                      "releases": len(steps),
                      "seconds_per_release": times, "target_seconds": 5,
                      "note": "seconds: the slowest release"}), flush=True)
    view = seq.view(sc.adversary, sc.transitions)
    res, sec, peak = measure(lambda: UpdateGraph(linkage="population").run(view))
    traced = traced_peak(lambda: UpdateGraph(linkage="population").run(view))
    print(json.dumps({"bench": "sug_attack", "seconds": round(sec, 3), "peak_mb": round(peak, 1),
                      "variant": variant, "linkage": "population",
                      "releases": len(steps), "records": res.summary["records"],
                      "versions": res.summary["versions"], "vulnerable_values": res.summary["vulnerable_values"],
                      "target_seconds": 10, "peak_mb_traced": round(traced, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
