"""Scaling of ``certify`` over workers and executors (issue 28): one JSON line per command.

The census shape of issue 28: ``rows`` records drawn from Adult's marginals (:mod:`census`, seeded, written to
``/tmp/scale_out_<rows>``; never committed) - sex, age, race, marital-status, education, native-country and
workclass quasi-identifiers with their ARX hierarchies, occupation sensitive - published as two Mondrian
k = 10 releases, 90% of the rows then all of them (the last 10% inserted), then certified::

    multirelease certify census.yaml release_1.csv release_2.csv --attack correspondence \\
        --require 'correspondence.FA >= 1' --json report.json [--workers N | --scheduler local --workers N]

with witnesses, every individual a target.  Executors: ``inline`` (``--workers 0``: this process only),
``local`` (``--workers N`` local processes) and ``dask`` (``--scheduler local --workers N``: a Dask
``LocalCluster`` of N single-threaded workers started by the command), for ``N`` in ``--workers`` (default
1, 2, 4, 8, 16 up to this machine's cores: it reads the core count).

Each command runs in a measuring process of its own (``--one``), which runs the command line's ``main`` and
records:

* ``seconds`` - the command's wall time in that process (imports included);
* ``in_tasks_seconds`` - the wall time spent inside the executors' ``map`` calls (every task the engines
  hand to an executor, also when an executor runs them in this process), and ``outside_share`` - the rest
  as a share of ``seconds``: the serial part that more workers cannot shorten;
* ``peak_mb`` - the peak of the proportional set size (PSS) summed over the measuring process and all its
  descendants (worker processes, Dask's nannies and workers): shared pages counted once; sampled every 0.2 s,
  or every twenty times a sample's CPU time when that is longer (:class:`PeakPss`: a sample of 2 GB takes
  40 ms, so every 0.8 s); and ``peak_rss_mb``, their summed resident set size every 0.2 s, an upper bound
  of the PSS at every instant (shared pages counted in every process);
* ``report_mb`` and the attack's figures (FA, CA, BA, cracked targets), which must be the same on every line;
* ``maps`` - per ``map`` call, in order: its wall time and the CPU time of the command's process meanwhile
  (every thread: its ``meanwhile`` work, the results it receives, a Dask client's event loop - what the
  workers share the cores with); ``process_cpu_seconds``, that process's CPU over the whole command, and
  ``outside_cpu_seconds``, the part outside the maps.  A map's wall on 1 and on N workers gives its own
  speedup;
* ``tasks`` - per ``map`` call, in order: its tasks' count, the sum of their durations and the longest
  (``[n, sum, longest]`` seconds; each task timed where it runs, in a worker or in this process), and
  ``projected_seconds`` - per ``N`` of 1, 2, 4, 8, 16, what the command would take on ``N`` workers with these
  task durations: the time outside the tasks plus each map's tasks handed out in order to the first free of
  ``N`` workers (:func:`projected`).  Read on a 1-worker line (durations not shared with other workers), it
  is what the tasks' granularity and the serial part leave to a machine with more cores than this one; it
  assumes that N workers run a task as fast as one did (no memory bandwidth or cache shared).

``publish`` is measured the same way once per size (``--skip-publish`` reuses the files).

A ``machine`` line, first and last, gives ``parallel_ceiling``: per N, the speedup N processes of perfectly
parallel pure-Python work get on this machine at that moment (:func:`ceiling`; on a virtual machine whose cores
are shared it is below N and varies) - the certify lines' speedups are read against it.

    python benchmarks/bench_scale_out.py [--rows 1000000 10000000] [--executors inline local dask]
                                         [--workers 1 2 4 8 16] [--repeat 3] [--timeout 3600]

With ``--repeat R`` each certify command runs ``R`` times - in rounds, every command once a round, so that a
machine whose speed drifts slows them alike - and its line holds the median run (by seconds) with
``runs_seconds``, every run's wall time in round order.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

QUASI = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass")
SENSITIVE = "occupation"
K = 10


def census(rows: int, seed: int = 0) -> Path:
    """The census scenario of ``rows`` records (90% in release 1, 10% inserted for release 2)."""
    from census import make_census

    folder = Path(f"/tmp/scale_out_{rows}")
    spec = folder / "census.yaml"
    if not spec.exists():
        new = rows // 10
        make_census(rows - new, new=new, seed=seed, k=K, out=folder, sensitive=SENSITIVE, quasi=QUASI)
    return spec


#: the most of one core the memory sampler may take
_SAMPLING_SHARE = 0.05


class PeakPss(threading.Thread):
    """The peak memory (MB) of this process and all its descendants: their summed resident set size (RSS)
    every ``every`` seconds, and their summed PSS (shared pages counted once) as often as that costs at most
    :data:`_SAMPLING_SHARE` of one core.  The kernel walks every page of a process to give its PSS: 40-46 ms
    of CPU for a census certify's 1.8 GB on a local Dask cluster - sampled every 0.2 s, a fifth of a core
    taken from the command measured (on 2 cores, as much as its workers lost); RSS costs next to nothing, and
    bounds the PSS from above (a page shared by forked workers counts in each), so a short peak between two
    PSS samples is still bounded."""

    def __init__(self, every: float = 0.2):
        super().__init__(daemon=True)
        import psutil

        self.me = psutil.Process()
        self.every = every
        self.peak = 0.0  # PSS
        self.peak_rss = 0.0
        self.cost = 0.0  # CPU seconds of the last PSS sample
        self.stopped = threading.Event()

    def _read(self, pss: bool) -> tuple[int, int]:
        """The tree's summed ``(PSS, RSS)`` in bytes (PSS 0 unless ``pss``: only RSS is cheap)."""
        import psutil

        total = rss = 0
        for proc in [self.me, *self.me.children(recursive=True)]:
            try:
                info = proc.memory_full_info() if pss else proc.memory_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            total += info.pss if pss else 0
            rss += info.rss
        return total, rss

    def sample(self) -> None:
        """One PSS sample (and one RSS sample)."""
        t0 = time.thread_time()
        total, rss = self._read(pss=True)
        self.peak = max(self.peak, total / 2 ** 20)
        self.peak_rss = max(self.peak_rss, rss / 2 ** 20)
        self.cost = time.thread_time() - t0

    def sample_rss(self) -> None:
        self.peak_rss = max(self.peak_rss, self._read(pss=False)[1] / 2 ** 20)

    def run(self) -> None:
        due = 0.0
        while not self.stopped.wait(self.every):
            if time.perf_counter() >= due:
                self.sample()
                due = time.perf_counter() + self.cost / _SAMPLING_SHARE
            else:
                self.sample_rss()


class TimedTask:
    """``fn`` that appends each call's start and duration to ``log`` (one JSON line ``{"map": k, "start": t,
    "seconds": s}``, written by whichever process runs the task: a local worker, a Dask worker or this one) and
    returns ``fn``'s result unchanged (so that a Dask cluster keeps it as it would ``fn``'s)."""

    def __init__(self, fn, log: str, index: int):
        self.fn, self.log, self.index = fn, log, index

    def __call__(self, *args):
        start = time.time()  # one clock for every process of this machine: the order tasks started in
        t0 = time.perf_counter()
        try:
            return self.fn(*args)
        finally:
            line = json.dumps({"map": self.index, "start": start, "seconds": time.perf_counter() - t0}) + "\n"
            with open(self.log, "a", encoding="utf-8") as f:  # one short appended write: lines never mix
                f.write(line)


def _timed_executors(log: str, maps: list) -> list:
    """Wrap every executor's ``map`` to add its wall time (outermost calls only) to the returned counter, to
    append ``[wall seconds, this process's CPU seconds]`` of each outermost call to ``maps`` (the CPU of every
    thread of the command's process while the map ran: the ``meanwhile`` work, the results received and
    unpickled, a Dask client's event loop - what the map's workers share the cores with), and to time each of
    its tasks (:class:`TimedTask`, map ``k`` the ``k``-th outermost call)."""
    import solver.executor as executors

    spent = [0.0]
    depth = [0]
    calls = [0]
    for cls in (executors.InlineExecutor, executors.LocalExecutor, executors.DaskExecutor):
        real = cls.map

        def timed(self, fn, tasks, _real=real, **kwargs):
            depth[0] += 1
            if depth[0] == 1:  # a map inside a task (a forked worker inherits the depth) is part of the task
                fn = TimedTask(fn, log, calls[0])
                calls[0] += 1
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return _real(self, fn, tasks, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    wall = time.perf_counter() - t0
                    spent[0] += wall
                    maps.append([round(wall, 3), round(time.process_time() - c0, 3)])

        cls.map = timed
    return spent


def task_durations(log: str) -> list[list[float]]:
    """Per map, in order: its tasks' seconds in the order they started, from a :class:`TimedTask` log."""
    per: dict[int, list] = {}
    with open(log, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            per.setdefault(rec["map"], []).append((rec["start"], rec["seconds"]))
    return [[s for _, s in sorted(per[k])] for k in sorted(per)]


def projected(outside: float, durations: list[list[float]], workers: int) -> float:
    """What a command would take on ``workers`` workers, its time outside the tasks unchanged and each map's
    tasks, lasting as long as they did, handed out in order, each to the first worker free - as the executors
    hand them out (a map lasts until its last task ends)."""
    import heapq

    total = outside
    for seconds in durations:
        free = [0.0] * min(workers, len(seconds))
        for s in seconds:
            heapq.heappush(free, heapq.heappop(free) + s)
        total += max(free, default=0.0)
    return total


def one(spec: dict) -> dict:
    """Run one command line (``spec["argv"]``) in this process, measured."""
    t0 = time.perf_counter()
    sampler = PeakPss()
    sampler.start()
    import tempfile

    from multirelease.__main__ import main  # the command as installed (a local cluster's fork server first)

    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "tasks.jsonl")
        Path(log).touch()
        maps: list = []
        spent = _timed_executors(log, maps)
        c0 = time.process_time()
        code = main(spec["argv"])
        seconds = time.perf_counter() - t0
        cpu = time.process_time() - c0
        sampler.stopped.set()
        sampler.sample()
        durations = task_durations(log)
    outside = seconds - spent[0]
    out = {"exit": code, "seconds": round(seconds, 2), "in_tasks_seconds": round(spent[0], 2),
           "outside_share": round(outside / seconds, 3), "peak_mb": round(sampler.peak, 1),
           "peak_rss_mb": round(sampler.peak_rss, 1),
           "tasks": [[len(d), round(sum(d), 3), round(max(d), 3)] for d in durations], "maps": maps,
           "process_cpu_seconds": round(cpu, 2),
           "outside_cpu_seconds": round(cpu - sum(m[1] for m in maps), 2),
           "projected_seconds": {n: round(projected(outside, durations, n), 2) for n in (1, 2, 4, 8, 16)}}
    report = spec.get("report")
    if report and Path(report).exists():
        out["report_mb"] = round(Path(report).stat().st_size / 1e6, 3)
        doc = json.loads(Path(report).read_text(encoding="utf-8"))
        res = doc["attacks"].get("correspondence", {})
        out["summary"] = {k: v for k, v in (res.get("summary") or {}).items() if not isinstance(v, (dict, list))}
        out["verdict"] = doc.get("verdict")
    return out


def measure(argv: list[str], report: Path | None, timeout: float) -> dict:
    probe = [sys.executable, __file__, "--one", json.dumps({"argv": argv, "report": str(report) if report else None})]
    try:
        proc = subprocess.run(probe, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"exit": None, "error": "timeout"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"exit": None, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(lines[-1])


def _spin(loops: int) -> float:
    """Pure-Python work with no memory traffic: the seconds one process takes for ``loops`` additions."""
    t0 = time.perf_counter()
    total = 0
    for i in range(loops):
        total += i
    return time.perf_counter() - t0


def ceiling(workers: list[int], loops: int = 20_000_000, repeat: int = 3) -> dict:
    """What this machine gives N processes of perfectly parallel work right now: the median over ``repeat``
    rounds of ``N x (one process alone) / (the slowest of N processes at once)``, per N.  A virtual machine
    whose cores are shared with its neighbours gives less than N (1.35 for 2 was seen here): no command can
    scale better than this, and the certify lines are read against it."""
    import multiprocessing
    import statistics
    from concurrent.futures import ProcessPoolExecutor

    out = {}
    for n in workers:
        ratios = []
        for _ in range(repeat):
            alone = _spin(loops)
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                together = max(pool.map(_spin, [loops] * n))
            ratios.append(n * alone / together)
        out[str(n)] = round(statistics.median(ratios), 2)
    return out


def configs(executors, workers) -> list[tuple[str, int, list[str]]]:
    out = []
    if "inline" in executors:
        out.append(("inline", 0, ["--workers", "0"]))
    for n in workers:
        if "local" in executors:
            out.append(("local", n, ["--workers", str(n)]))
        if "dask" in executors:
            out.append(("dask", n, ["--scheduler", "local", "--workers", str(n)]))
    return out


def main() -> None:
    from solver.executor import available_cores

    cores = available_cores()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--executors", nargs="+", default=["inline", "local", "dask"], choices=["inline", "local", "dask"])
    ap.add_argument("--workers", type=int, nargs="+", default=[n for n in (1, 2, 4, 8, 16) if n <= cores])
    ap.add_argument("--skip-publish", action="store_true", help="reuse the release files of an earlier run")
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each certify command: the line gives the median run's figures, and every run's "
                         "seconds (a shared machine's timings vary by tens of percent from run to run)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        sys.stdout.flush()
        print(json.dumps(one(json.loads(args.one))))
        return
    print(json.dumps({"bench": "machine", "cores": cores, "parallel_ceiling": ceiling(args.workers)}), flush=True)
    for rows in args.rows:
        spec = census(rows, args.seed)
        folder = spec.parent
        releases = folder / "releases"
        if not (args.skip_publish and (releases / "release_2.csv").exists()):
            m = measure(["publish", str(spec), "--out", str(releases)], None, args.timeout)
            print(json.dumps({"bench": f"publish_{rows}", "rows": rows, "cores": cores, **m}), flush=True)
        commands = []
        for name, n, extra in configs(args.executors, args.workers):
            report = folder / f"certify_{name}_{n}.json"
            argv = ["certify", str(spec), str(releases / "release_1.csv"), str(releases / "release_2.csv"),
                    "--attack", "correspondence", "--require", "correspondence.FA >= 1", "--json", str(report),
                    "--quiet", *extra]
            commands.append((name, n, report, argv))
        # round by round, every command once a round: a machine whose speed drifts (a shared virtual machine)
        # slows every command alike, not the ones measured last
        runs: dict = {(name, n): [] for name, n, _, _ in commands}
        for _ in range(max(1, args.repeat)):
            for name, n, report, argv in commands:
                report.unlink(missing_ok=True)
                runs[name, n].append(measure(argv, report, args.timeout))
        for name, n, _, _ in commands:
            done = runs[name, n]
            timed = sorted((r for r in done if "seconds" in r), key=lambda r: r["seconds"])
            m = timed[(len(timed) - 1) // 2] if timed else done[0]
            if len(done) > 1:
                m = {**m, "runs_seconds": [r.get("seconds") for r in done]}
            print(json.dumps({"bench": f"certify_{rows}", "rows": rows, "executor": name, "workers": n,
                              "cores": cores, **m}), flush=True)
    print(json.dumps({"bench": "machine", "cores": cores, "parallel_ceiling": ceiling(args.workers)}), flush=True)


if __name__ == "__main__":
    main()
