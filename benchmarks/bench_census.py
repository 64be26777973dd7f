"""The census ladder (issue 16, items 2 and 4): two releases of 10^4, 10^5, 10^6 rows drawn from Adult's
marginals (:mod:`census`, seeded, written to /tmp), the correspondence attack by ``run`` and by ``certify``
(witnesses on, every individual a target).

Each figure is one command of the command line run as a process of its own, under an address-space cap
(``--cap-gb``, default 8): ``seconds`` its wall time, ``cpu_seconds`` user + system time of it and its
worker processes (the fairer figure on a shared machine), ``peak_mb`` the largest resident set among them
(``ru_maxrss`` of the children), ``report_mb`` the JSON report's size; ``exit`` the command's exit code
(``null`` when the cap or ``--timeout`` killed it).  With ``--old DIR`` the same commands also run on the
code in ``DIR`` (an older checkout), in the same run, and each line carries both (``old_seconds``, ...).

* ``run_<rows>`` - ``multirelease run census.yaml --json --out`` (publishes both Mondrian releases, k = 40,
  then attacks); target: 10^6 rows under 60 s and 4 GB;
* ``certify_<rows>`` - ``multirelease certify census.yaml release_1.csv release_2.csv --attack
  correspondence --json`` on the files ``run`` wrote; target: 10^6 rows under 60 s and 4 GB, the report
  under 5 MB.

    python benchmarks/bench_census.py [--rows 10000 100000 1000000] [--old /work/old] [--timeout 900]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from census import make_census  # noqa: E402


def _measure(cmd: list[str], cwd: Path, env: dict, cap_gb: float, timeout: float) -> dict:
    """Run ``cmd`` in a child process of a fresh measuring process, so that ``RUSAGE_CHILDREN`` is this
    command's alone."""
    probe = [sys.executable, __file__, "--measure", json.dumps({"cmd": cmd, "cwd": str(cwd), "env": env,
                                                                 "cap_gb": cap_gb, "timeout": timeout})]
    out = subprocess.run(probe, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _measured(spec: dict) -> dict:
    cap = int(spec["cap_gb"] * 1024 ** 3)

    def limit():  # in the command's process: the address-space cap
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.nice(5)

    env = dict(os.environ, **spec["env"])
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(spec["cmd"], cwd=spec["cwd"], env=env, preexec_fn=limit, capture_output=True,
                              text=True, timeout=spec["timeout"])
        code = proc.returncode if proc.returncode >= 0 else None
        err = proc.stderr.strip().splitlines()[-1:] if proc.returncode not in (0, 1, 3) else []
    except subprocess.TimeoutExpired:
        code, err = None, ["timeout"]
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"seconds": round(wall, 2), "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 2),
            "peak_mb": round(ru.ru_maxrss / 1024, 1), "exit": code, "error": err[0][:200] if err else None}


def _cli(code_dir: Path) -> tuple[list[str], Path, dict]:
    return [sys.executable, "-m", "multirelease.cli"], code_dir, {"PYTHONPATH": str(code_dir)}


def ladder(rows: list[int], old: Path | None, cap_gb: float, timeout: float, seed: int,
           only: str | None = None) -> None:
    for n in rows:
        folder = Path(f"/tmp/census_bench_{n}")
        spec = make_census(n, seed=seed, out=folder)
        versions = [("", ROOT)] + ([("old_", old)] if old is not None else [])
        lines = {"run": {"bench": f"run_{n}", "rows": n}, "certify": {"bench": f"certify_{n}", "rows": n}}
        for prefix, code_dir in versions:
            base, cwd, env = _cli(code_dir)
            rel = folder / f"{prefix or 'new_'}releases"
            report = folder / f"{prefix or 'new_'}run.json"
            m = {"exit": None}
            if only != "certify":
                report.unlink(missing_ok=True)
                m = _measure(base + ["run", str(spec), "--json", str(report), "--out", str(rel), "--quiet"], cwd,
                             env, cap_gb, timeout)
                m["report_mb"] = round(report.stat().st_size / 1e6, 3) if report.exists() else None
                lines["run"].update({prefix + k: v for k, v in m.items()})
            files = [rel / "release_1.csv", rel / "release_2.csv"]
            if not all(f.exists() and m["exit"] is not None for f in files):
                # the old code may not have written its releases: certify the new code's
                files = [folder / "new_releases" / "release_1.csv", folder / "new_releases" / "release_2.csv"]
            if only == "run":
                continue
            report = folder / f"{prefix or 'new_'}certify.json"
            report.unlink(missing_ok=True)
            # no --quiet: older checkouts lack it on certify (the terminal tables of a pipe are small)
            m = _measure(base + ["certify", str(spec), *map(str, files), "--attack", "correspondence", "--json",
                                 str(report)], cwd, env, cap_gb, timeout)
            m["report_mb"] = round(report.stat().st_size / 1e6, 3) if report.exists() else None
            if report.exists():
                doc = json.loads(report.read_text(encoding="utf-8"))
                res = doc["attacks"].get("correspondence", {})
                m["summary"] = res.get("summary")
                m["witnesses"] = sorted(k for k, w in res.get("worst", {}).items() if "generator" in w)
            lines["certify"].update({prefix + k: v for k, v in m.items()})
        for line in lines.values():
            if len(line) > 2:
                print(json.dumps({k: v for k, v in line.items() if v is not None}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--old", type=Path, default=None, help="an older checkout to compare in the same run")
    ap.add_argument("--only", choices=("run", "certify"), default=None, help="one command only")
    ap.add_argument("--cap-gb", type=float, default=8.0)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(_measured(json.loads(args.measure))))
        return
    ladder(args.rows, args.old, args.cap_gb, args.timeout, args.seed, args.only)


if __name__ == "__main__":
    main()
