"""Correspondence-attack benchmark on Adult (Fung et al., section 6; issue 3, items 11 and 13).

Setting: ``D1`` = the first 15,060 records of ``adult.csv``, ``D2`` = the next 2,000; ``R1`` = Mondrian
(k = 40) of ``D1``, ``R2`` = Mondrian (k = 40) of ``D1 u D2``; Sen1: sensitive native-country, the other 8
attributes quasi-identifiers (ARX hierarchies, as in ``scenarios/adult_mondrian.yaml``).

Figures (one JSON line each: ``{"bench", "seconds", "peak_mb", ...}``; ``seconds`` the median of
``--repeat`` runs of the measured step only - releases are built beforehand; ``peak_mb`` the peak resident
memory of a fresh process doing setup and that step, ``ru_maxrss``, interpreter and libraries included;
``peak_mb_worker`` the largest forked worker's, when the engine used worker processes):

* ``exact_2000D2_sen1_k40`` - the exact engine (min-cost flows), all three attacks, every target the
  published regions allow, witnesses included (target: 10 s);
* ``exact_2000D2_sen1_k40_population`` - the same with the population as targets (certification case);
* ``closed_form_2000D2_sen1_k40`` - the paper's closed forms on the same pair (what Theorems 4.2 - 4.4 would
  claim; not valid for Mondrian regions - the exact figures differ, which the JSON shows) (target: the
  exact engine within 20x of it);
* ``bcf_2000D2_sen1_k40`` - the BCF-anonymizer publishing ``R2`` of ``D1 u D2`` after its own ``R1`` (TDS,
  k = 40), with ``FA``, ``CA``, ``BA`` of its certificate (target: 7 s);
* ``exact_5_releases`` (``--five``) - five cumulative Mondrian releases (6,000 new records each), the chain
  engine (flow and LP bounds, LP generators, CP-SAT for what stays open with ``--time-limit`` seconds per
  model), every target the regions allow (target: 60 s); ``lp_solves``, ``cp_sat_solves`` and the worker
  processes used are in the JSON line.

    python benchmarks/bench_correspondence.py [--repeat 3] [--five] [--time-limit 2]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

from _fresh import figure_line, in_fresh_process, peak_mb

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "data" / "adult"
ATTRS = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
         "salary-class")
FIGURES = ("exact_2000D2_sen1_k40", "exact_2000D2_sen1_k40_population", "closed_form_2000D2_sen1_k40",
           "bcf_2000D2_sen1_k40")


def _setup(n_releases: int = 2):
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from multirelease.model.schema import Schema
    from multirelease.model.sequence import Adversary, ReleaseSequence
    from multirelease.model.table import read_table
    from publishers.mondrian import Mondrian

    spec = {"attributes": {a: {"role": "sensitive" if a == "native-country" else "quasi",
                               "hierarchy": {"file": str(ADULT / f"adult_hierarchy_{a}.csv")}} for a in ATTRS}}
    schema = Schema.from_mapping(spec, base=ADULT, source="bench")
    table = read_table(schema, {"file": str(ADULT / "adult.csv"), "separator": ";"}, base=ADULT, source="bench",
                       key="data")
    ids = table.ids
    if n_releases == 2:
        cuts = [15060, 17060]
    else:
        cuts = [min(len(ids), 6000 * (i + 1)) for i in range(n_releases)]
        cuts[-1] = len(ids) if n_releases == 5 else cuts[-1]
    seq = ReleaseSequence()
    for i, c in enumerate(cuts):
        snap = table.subset(ids[:c])
        res = Mondrian(k=40).publish(snap, rng=np.random.default_rng(i + 1))
        seq.append(res.release, res.truth, snap)
    return seq, Adversary


def one(figure: str, repeat: int, time_limit: float) -> dict:
    seq, Adversary = _setup(5 if figure == "exact_5_releases" else 2)
    from attacks.correspondence.attack import Correspondence
    from attacks.correspondence.closed import closed_form_two

    times = []
    extra: dict = {}
    if figure == "bcf_2000D2_sen1_k40":
        import numpy as np

        from publishers import PUBLISHERS

        d1, d12 = seq.snapshots
        r1 = PUBLISHERS["bcf"](k=40).publish(d1, rng=np.random.default_rng(1))
        for _ in range(repeat):
            t0 = time.perf_counter()
            r2 = PUBLISHERS["bcf"](k=40).publish(d12, state=r1.state, rng=np.random.default_rng(2))
            times.append(time.perf_counter() - t0)
        extra = {m: r2.state["certificate"][m] for m in ("FA", "CA", "BA") if m in r2.state["certificate"]}
        return {"seconds": statistics.median(times), **extra}
    for _ in range(repeat):
        if figure == "closed_form_2000D2_sen1_k40":
            t0 = time.perf_counter()
            out = closed_form_two(*seq.releases)
            times.append(time.perf_counter() - t0)
            extra = {k: out[k] for k in ("FA", "CA", "BA")}
            continue
        population = figure.endswith("population")
        view = seq.view(Adversary(correspondence=True, quasi_identifiers="all" if population else "none"))
        attack = Correspondence(time_limit=time_limit, witness=figure != "exact_5_releases")
        t0 = time.perf_counter()
        res = attack.run(view)
        times.append(time.perf_counter() - t0)
        extra = {k: res.summary.get(k) for k in ("FA", "CA", "BA", "targets")}
        extra["exact"] = res.exact
        extra.update({k: res.stats[k] for k in ("lp_solves", "cp_sat_solves", "processes") if k in res.stats})
        if res.bounds:
            extra["bounds"] = {k: [b.lower, b.upper, b.reason] for k, b in res.bounds.items()
                               if k in ("FA", "CA", "BA", "cracked")}
    return {"seconds": statistics.median(times), **extra}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--five", action="store_true", help="also run five cumulative releases (CP-SAT)")
    ap.add_argument("--time-limit", type=float, default=2.0, help="seconds per CP-SAT model")
    ap.add_argument("--figure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.figure:
        out = one(args.figure, args.repeat, args.time_limit)
        out["peak_mb"] = peak_mb()
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if children:  # forked workers of the chain engine (the largest one)
            out["peak_mb_worker"] = round(children, 1)
        print(json.dumps(out))
        return
    figures = list(FIGURES) + (["exact_5_releases"] if args.five else [])
    for fig in figures:
        data = in_fresh_process(__file__, ["--figure", fig, "--repeat", 1 if fig == "exact_5_releases" else args.repeat,
                                           "--time-limit", args.time_limit])
        print(json.dumps(figure_line(fig, data)), flush=True)


if __name__ == "__main__":
    main()
