"""Every bundled scenario's JSON report and release files, from this checkout and from another one, compared
byte for byte (issue 23: a pure move changes no output).

For each ``scenarios/*.yaml`` both checkouts run ``multirelease run SCENARIO --json R.json --out DIR --format
native`` in a fresh interpreter (``PYTHONPATH`` set to the checkout, the scenario run from the checkout's own
folder so that its relative data paths resolve the same way), and the two folders are compared file by file.
Prints one line per scenario (``same`` or the files that differ) and exits 1 when any differs.

Usage: ``.venv/bin/python benchmarks/same_outputs.py --against /work/before [--keep DIR [--reuse]]
[--only NAME...]``; ``--reuse`` takes the other side's outputs from an earlier call with the same ``--keep``.
The other checkout must sit beside ``shared/`` as this one does (the scenarios read ``../../shared/data``).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(checkout: Path, scenario: str, out: Path) -> tuple[int, float]:
    """Run one scenario from ``checkout`` into ``out``; ``(exit code, wall seconds)``. Exit codes 0, 1 and 3 are
    verdicts; anything else stops the comparison with the command's last error line."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cmd = [sys.executable, "-m", "multirelease.cli", "run", f"scenarios/{scenario}", "--json", str(out / "report.json"),
           "--out", str(out / "releases"), "--quiet"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"{checkout}: {scenario}: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.returncode, time.perf_counter() - t0


def _differences(a: Path, b: Path) -> list[str]:
    """Relative paths of the files that differ or exist on one side only."""
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name != "exit"}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name != "exit"}
    diff = sorted(str(p) + " (one side only)" for p in files_a ^ files_b)
    diff += sorted(str(p) for p in files_a & files_b if not filecmp.cmp(a / p, b / p, shallow=False))
    return diff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="the other checkout (e.g. a worktree of the commit before)")
    ap.add_argument("--keep", help="write both sides' outputs under this folder (default: a temporary one)")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: take the other checkout's outputs already in the folder instead of running it")
    ap.add_argument("--only", nargs="*", help="scenario file names to compare (default: every bundled one)")
    args = ap.parse_args()
    other = Path(args.against).resolve()
    names = args.only or sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml"))
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="same_outputs_"))
    differing = 0
    for name in names:
        stem = name.removesuffix(".yaml")
        code_a, wall_a = _run(ROOT, name, work / "this" / stem)
        done = work / "other" / stem / "exit"
        if args.reuse and done.exists():
            code_b, wall_b = int(done.read_text()), 0.0
        else:
            code_b, wall_b = _run(other, name, work / "other" / stem)
            done.write_text(str(code_b))
        diff = _differences(work / "this" / stem, work / "other" / stem)
        if code_a != code_b:
            diff.insert(0, f"exit {code_a} vs {code_b}")
        differing += bool(diff)
        n_files = sum(1 for p in (work / "this" / stem).rglob("*") if p.is_file() and p.name != "exit")
        print(f"{name}: {'same' if not diff else 'DIFFERENT: ' + ', '.join(diff)} "
              f"({n_files} files, exit {code_a}; {wall_a:.1f} s here, {wall_b:.1f} s there)", flush=True)
    print(f"{len(names) - differing} of {len(names)} scenarios byte-identical")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
