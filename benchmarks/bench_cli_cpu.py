"""CPU seconds (user + system of the child process) of ``run`` and ``certify`` of one scenario, one JSON line
per figure, the medians of ``--repeat`` runs (issue 12: no slower than before).

``run SCENARIO --out DIR`` writes the releases that ``certify SCENARIO DIR/release_<i>.csv...`` then reads.
With ``--against CHECKOUT`` the same two commands also run from that older checkout (``PYTHONPATH`` set to
it, its own copy of the scenario when it has one), alternating with this one so that both see the same load:
on a shared machine CPU seconds are the figure to compare, wall seconds are printed too.

Usage: ``.venv/bin/python benchmarks/bench_cli_cpu.py scenarios/adult_updates_m_distinct.yaml --repeat 3
[--against /path/to/old/checkout]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _child_cpu(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, int]:
    """``(cpu seconds, wall seconds, peak MB)`` of one command, from its own resource usage (``os.wait4``);
    fails loudly on an exit other than a verdict's."""
    with tempfile.TemporaryFile(mode="w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1, 3):  # PASS, FAIL and UNKNOWN are results; anything else an error
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}: {err.read().strip().splitlines()[-1:]}")
    return usage.ru_utime + usage.ru_stime, wall, int(usage.ru_maxrss / 1024)


def _commands(scenario: Path, out: Path, n_releases: int) -> tuple[list[str], list[str]]:
    cli = [sys.executable, "-m", "multirelease.cli"]
    files = [str(out / f"release_{i}.csv") for i in range(1, n_releases + 1)]
    return cli + ["run", str(scenario), "--out", str(out)], cli + ["certify", str(scenario)] + files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", help="an older checkout to time the same commands from")
    args = ap.parse_args()
    scenario = Path(args.scenario).resolve()
    import yaml

    n_releases = len(yaml.safe_load(scenario.read_text())["releases"])
    sides = [("this", ROOT, scenario)]
    if args.against:
        old = Path(args.against).resolve()
        mine = old / scenario.relative_to(ROOT) if scenario.is_relative_to(ROOT) else scenario
        sides.append(("against", old, mine if mine.is_file() else scenario))
    times: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            for label, checkout, scen in sides:
                out = Path(tmp) / f"{label}_{k}"
                env = dict(os.environ, PYTHONPATH=str(checkout))
                run, cert = _commands(scen, out, n_releases)
                times.setdefault((label, "run"), []).append(_child_cpu(run, checkout, env))
                times.setdefault((label, "certify"), []).append(_child_cpu(cert, checkout, env))
    for (label, command), xs in times.items():
        print(json.dumps({"bench": f"{command}_cpu", "checkout": label, "scenario": scenario.name,
                          "cpu_seconds": round(statistics.median(x[0] for x in xs), 2),
                          "wall_seconds": round(statistics.median(x[1] for x in xs), 2),
                          "peak_mb": max(x[2] for x in xs),
                          "runs_cpu": [round(x[0], 2) for x in xs]}))


if __name__ == "__main__":
    main()
