"""The possible-worlds attack at a custodian's scale (issue 24): monthly Adult snapshots through the ledger, the
gate reading linkability only; one JSON line per case.

**Shape.** A month-1 snapshot of ``rows`` Adult records (drawn without replacement); each later month 10% leave
and 20% arrive (new people with the values of random Adult records, fresh ids), no value changes - the shape of
the issue (10,000 rows: 1,000 leave, 2,000 arrive).  Quasi-identifiers: sex, age, marital-status, education,
race, native-country, workclass (``--qis 7``) or the first four (``--qis 4``), with their ARX hierarchies;
occupation sensitive.  Publisher ``mondrian`` (k = 10, distinct l = 2); adversary ``{quasi_identifiers: all,
presence: true, sensitive: persistent | free}``; attacks ``linking`` and ``possible_worlds``.  The requirement
is ``possible_worlds.min_linkability >= 1`` (it always holds; it reads linkability only, as ``disclosed == 0``
does) and the spec waives the attack's baseline ``possible_worlds.disclosed == 0`` by name (issue 30), so
every month is published and the sequence grows while ``disclosed`` is still computed and shown;
``--require`` replaces the line (``disclosed == 0`` fails from month 2 on Adult, so the ledger keeps release
1 and every gate is month 2's).  ``--time-limit`` sets the attack's ``time_limit``.

**Figures** per case: each month's wall and CPU seconds of the whole ``release`` call (publish, gate, files),
the attack's own seconds, ``disclosed`` and ``min_linkability`` (a number when proven, ``[low, high]`` when a
solver stopped) and the process's peak resident memory; ``max_month_s`` and ``exact`` (every month proven).
Each case runs in a fresh process (its peak memory is its own).  Adult is read in place.

    .venv/bin/python benchmarks/bench_worlds_custodian.py [--rows 1000 3000 10000 30000] [--months 2 6 12]
        [--adversary persistent free] [--qis 7 4] [--require LINE] [--month-limit SECONDS] [--time-limit S]

``--month-limit`` stops a case after the first month slower than that (default 600 s: the case is reported
with the months it did).  The anonypyx grid (``benchmarks/bench_anonypyx_grid.py``) is the other half of the
issue's check: run it beside this one.
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

ROOT = Path(__file__).resolve().parents[1]
ADULT = Path("/work/shared/data/adult")
QIS = ("sex", "age", "marital-status", "education", "race", "native-country", "workclass")


def spec_text(qis: int, sensitive: str, require: str, time_limit: float | None = None) -> str:
    lines = ["schema:", "  attributes:", "    id: identifier"]
    lines += [f"    {a}: {{role: quasi, hierarchy: {{file: {ADULT}/adult_hierarchy_{a}.csv}}}}" for a in QIS[:qis]]
    lines += [f"    occupation: {{role: sensitive, hierarchy: {{file: {ADULT}/adult_hierarchy_occupation.csv}}}}",
              "publisher: {publisher: mondrian, k: 10, l: 2}",
              f"adversary: {{quasi_identifiers: all, presence: true, sensitive: {sensitive}}}",
              "attacks:", "  - linking: {k: 10}",
              f"  - possible_worlds: {{time_limit: {time_limit:g}}}" if time_limit else "  - possible_worlds: {}",
              "waive: [possible_worlds.disclosed]  # the sequence grows whatever is disclosed (the figure is shown)",
              "expect:", f"  - {require}", ""]
    return "\n".join(lines)


def _figure(res, metric: str):
    if res is None or metric not in res.reported_metrics():
        return None
    return res.summary[metric] if res.is_proven(metric) else list(res.interval(metric))


def child(rows: int, months: int, sensitive: str, qis: int, require: str, month_limit: float,
          time_limit: float | None = None) -> dict:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np

    from bench_ledger import adult, stream
    from multirelease.ledger.operations import make_release
    from multirelease.model.table import Table
    from multirelease.ledger.operations import load_spec

    folder = Path(tempfile.mkdtemp(prefix="custodian_"))
    spec = folder / "spec.yaml"
    spec.write_text(spec_text(qis, sensitive, require, time_limit), encoding="utf-8")
    _, _, schema, _ = load_spec(spec)
    (folder / "releases").mkdir()
    data = adult()[list(QIS[:qis]) + ["occupation"]]
    per_month = []
    for month, frame in stream(data, months, rows, rows // 10, rows // 5, 0, np.random.default_rng(0)):
        table = Table.from_frame(schema, frame.reset_index())
        t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        out = make_release(spec, table, folder / "ledger", folder / "releases" / f"release_{month}.csv")
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        res = out.run.results.get("possible_worlds") if out.run else None
        per_month.append({"month": month, "seconds": round(time.perf_counter() - t0, 2),
                          "cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 2),
                          "attack_s": round(out.run.timings.get("attack possible_worlds", 0.0), 2) if out.run else None,
                          "verdict": out.verdict, "disclosed": _figure(res, "disclosed"),
                          "min_linkability": _figure(res, "min_linkability"),
                          "peak_mb": round(r1.ru_maxrss / 1024)})
        if per_month[-1]["seconds"] > month_limit:
            break
    exact = all(not isinstance(m["disclosed"], list) and not isinstance(m["min_linkability"], list)
                for m in per_month)
    return {"bench": "worlds_custodian", "rows": rows, "months": months, "adversary": sensitive, "qis": qis,
            "require": require, "time_limit": time_limit, "months_done": len(per_month), "exact": exact,
            "max_month_s": max(m["seconds"] for m in per_month),
            "peak_mb": max(m["peak_mb"] for m in per_month), "per_month": per_month}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1000, 3000, 10000, 30000])
    ap.add_argument("--months", type=int, nargs="+", default=[2, 6, 12])
    ap.add_argument("--adversary", nargs="+", default=["persistent", "free"], choices=["persistent", "free"])
    ap.add_argument("--qis", type=int, nargs="+", default=[7, 4], choices=[4, 7])
    ap.add_argument("--require", default="possible_worlds.min_linkability >= 1")
    ap.add_argument("--month-limit", type=float, default=600.0)
    ap.add_argument("--time-limit", type=float, default=0.0,
                    help="the possible-worlds attack's time_limit (seconds of CP-SAT for the coupled parts; "
                         "0: its default)")
    ap.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        rows, months, sensitive, qis, require, limit, tl = args.child
        print(json.dumps(child(int(rows), int(months), sensitive, int(qis), require, float(limit),
                               float(tl) or None)), flush=True)
        return
    for qis in args.qis:
        for sensitive in args.adversary:
            for rows in args.rows:
                for months in args.months:
                    proc = subprocess.run([sys.executable, __file__, "--child", str(rows), str(months), sensitive,
                                           str(qis), args.require, str(args.month_limit),
                                           str(args.time_limit)],
                                          capture_output=True, text=True)
                    if proc.returncode:
                        print(json.dumps({"bench": "worlds_custodian", "rows": rows, "months": months,
                                          "adversary": sensitive, "qis": qis,
                                          "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}), flush=True)
                        continue
                    print(proc.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
