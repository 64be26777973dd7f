"""What every benchmark script shares: each figure runs in a fresh process (so its peak memory is its own) and
prints one JSON line.

* :func:`peak_mb` - the peak resident memory of this process, ``ru_maxrss`` in MB (interpreter and libraries
  included);
* :func:`in_fresh_process` - run a script's figure in a new interpreter and return the JSON of its last line;
* :func:`figure_line` - the common keys first (``bench``, ``seconds``, ``peak_mb``, rounded), the figure's own
  after;
* :func:`median_time` - the median wall time of a call repeated, with its last result.
"""
from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["peak_mb", "in_fresh_process", "figure_line", "median_time", "FigureFailed"]


class FigureFailed(RuntimeError):
    """A figure's process exited with an error (the message is the last line it wrote to stderr)."""


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_fresh_process(script: str | Path, args: Sequence[str], *, cwd: str | Path | None = None) -> dict:
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True, cwd=cwd)
    if proc.returncode:
        raise FigureFailed((proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def figure_line(bench: str, data: dict) -> dict:
    data = dict(data)
    line = {"bench": bench, "seconds": round(data.pop("seconds"), 3), "peak_mb": round(data.pop("peak_mb"), 1)}
    line.update(data)
    return line


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """``(median seconds, last result)`` of ``repeat`` calls of ``fn``."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out
