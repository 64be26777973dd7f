"""Executors (issue 16, item 3): the correspondence attack's components solved in this process, in local worker
processes, or on a Dask cluster (a ``dask.distributed.LocalCluster`` stands for a real one) give the same
report, byte for byte; so do the possible-worlds attack's blocks and the joint update-graph attack's
components; ``--targets-file`` writes every target row the report leaves out."""
from __future__ import annotations

import gc
import importlib.util
import json
import os
import pickle
from pathlib import Path

import pandas as pd
import pytest
import yaml

from multirelease.cli import main
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.reports.document import build_report, dumps
import multirelease.reports.document as document
import solver.correspondence.flow_shards as flow_shards
import solver.correspondence.flows as flows
import solver.correspondence.regions as regions
import solver.update.worlds as update_worlds
import solver.worlds.component as worlds_component
from solver.executor import InlineExecutor, LocalExecutor, chunks, current_executor, cycles_uncollected, use_executor

ROOT = Path(__file__).resolve().parents[2]


def _census(tmp_path: Path, rows: int = 1200, k: int = 10) -> Path:
    spec = importlib.util.spec_from_file_location("census", ROOT / "benchmarks" / "census.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_census(rows, seed=3, k=k, out=tmp_path / "census")


def _report(path: Path, executor=None) -> str:
    return dumps(build_report(run_scenario(load_scenario(path), executor=executor)))


def _square(x: int) -> int:
    return x * x


def test_chunks_partition_every_item_once_deterministically():
    sizes = [5, 1, 9, 3, 3, 7, 0, 2]
    parts = chunks(sizes, 3)
    assert sorted(i for p in parts for i in p) == list(range(len(sizes)))
    assert parts == chunks(sizes, 3) and len(parts) == 3
    loads = sorted(sum(sizes[i] for i in p) for p in parts)
    assert loads == [10, 10, 10]  # 9+1 / 7+3 / 5+3+2 (+0): greedy largest-first balances this one exactly
    # items below min_size left out; largest first, each to the lightest list: 9 | 7, 3 | 5, 3
    assert chunks(sizes, 3, min_size=3) == [[2], [4, 5], [0, 3]]


def _wait_for(path: str) -> bool:
    """A task that waits (30 s at most) for ``path`` to exist: whether it saw it."""
    import os
    import time

    end = time.monotonic() + 30
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.01)
    return False


def test_meanwhile_runs_here_while_the_workers_run_the_tasks(tmp_path):
    """``map(..., meanwhile=g)``: with worker processes, ``g`` runs in this process while the tasks run - each
    task waits for the file ``g`` writes, so a ``g`` run after them would leave every task waiting in vain -;
    inline, once, after the tasks; the results are the tasks' in either case."""
    import os

    flag = tmp_path / "flag"
    calls: list = []

    def meanwhile():
        calls.append(os.getpid())
        flag.write_text("here")

    assert LocalExecutor(2).map(_wait_for, [str(flag)] * 2, meanwhile=meanwhile) == [True, True]
    assert calls == [os.getpid()]
    flag.unlink()
    assert InlineExecutor().map(_square, [2, 3], meanwhile=meanwhile) == [4, 9] and len(calls) == 2
    assert LocalExecutor(1).map(_square, [4], meanwhile=meanwhile) == [16] and len(calls) == 3


def test_certify_imports_its_attacks_solvers_ahead():
    """What certify imports while its files are read: the named attack's engines (OR-Tools' flows among
    them); names that are no attack, or not names, are passed over (their own step refuses them)."""
    import subprocess
    import sys

    code = ("import sys; from multirelease.pipeline import _import_ahead; "
            "from solver.executor import InlineExecutor, use_executor; "
            "told = []; ex = InlineExecutor(); ex.imports = told.extend; "
            "before = 'ortools' in sys.modules; _import_ahead([{'nope': {}}, 3], []); "
            "with_ex = use_executor(ex); with_ex.__enter__(); _import_ahead(None, ['correspondence', 'nope']); "
            "print(before, 'ortools' in sys.modules, 'solver.correspondence.flow_shards' in sys.modules, "
            "'solver.correspondence.flow_shards' in told)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "True", "True", "True"]  # the executor's workers told to import too


def test_dask_workers_import_what_they_are_told_beside_their_task():
    """``DaskExecutor.imports``: every worker imports the modules while it runs a task (not after it), and a
    module that fails to import is passed over; the workers go on running tasks."""
    pytest.importorskip("dask.distributed")
    import time

    from solver.executor import DaskExecutor

    ex = DaskExecutor("local", workers=2)
    try:
        assert not any(ex.client.run(_imported, "tabnanny").values())  # nothing imported it before the fork
        busy = ex.client.submit(_after, (1.5, 7), pure=False)
        ex.imports(("no_such_module_here", "tabnanny"))
        deadline = time.monotonic() + 60
        while not all(ex.client.run(_imported, "tabnanny").values()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not busy.done()  # imported beside the task, which still runs
        assert busy.result() == 7 and ex.map(_square, [2, 3]) == [4, 9]
    finally:
        ex.close()


#: a process that starts a local Dask cluster while a lock its workers log through is held, as a thread writing to
#: ``stderr`` holds its buffer's: a worker forked from it would wait for that lock forever at its first log line
_HELD_LOCK_CLUSTER = r"""
import json.tool, logging, os, sys, threading
from solver.executor import DaskExecutor
assert "publishers" not in sys.modules
import publishers

class Held(logging.Handler):  # a handler through a lock of its own, as a stream's buffer is written
    def __init__(self):
        super().__init__()
        self.held, self.pid = threading.Lock(), os.getpid()
    def emit(self, record):
        if os.getpid() != self.pid:  # a forked copy of this process
            with self.held:
                pass

handler = Held()
logging.getLogger().addHandler(handler)
handler.held.acquire()  # never released
ex = DaskExecutor("local", workers=2)
seen = ex.client.run(lambda pid=os.getpid(): ("publishers" in sys.modules, "json.tool" in sys.modules,
                                               os.getppid() == pid))
print(sorted(set(seen.values())), ex.map(abs, [-2, 3]))
ex.close()
"""


def test_dask_local_workers_start_from_a_fork_server():
    """A local Dask cluster's workers are forked by a fork server, never from the process that starts the
    cluster, which runs threads then (a worker forked while one of them held a lock hung, and the cluster with
    it: the README's test command hung once so): they start although a lock their log lines go through is
    held in that process.  They start with the modules of this tool it had imported (``publishers``), not with
    the others (``json.tool``)."""
    pytest.importorskip("dask.distributed")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _HELD_LOCK_CLUSTER], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[0] == "[(True, False, False)] [2, 3]"


_COMMAND_WITH_LOCAL_CLUSTER = r"""
import sys
import solver.executor as executor
real, seen = executor.start_fork_server, []

def spy(modules=()):
    seen.append(("multirelease.cli" in sys.modules, list(modules)))
    return real(modules)

executor.start_fork_server = spy
from multirelease.__main__ import main
code = main(["certify", "tests/data/tiny_spec.yaml", "tests/data/tiny_release.csv", "--require", "linking.k >= 2",
             "--scheduler", "local", "--workers", "1"])
print(code, seen)
"""


def test_the_command_starts_a_local_clusters_fork_server_before_its_imports():
    """``multirelease ... --scheduler local`` (:mod:`multirelease.__main__`) starts the fork server of its
    cluster's workers before it imports its command line (the server imports the pipeline meanwhile), then certifies
    as without it; other command lines start none."""
    pytest.importorskip("dask.distributed")
    import subprocess
    import sys

    from multirelease.__main__ import starts_local_cluster

    assert starts_local_cluster(["certify", "a.yaml", "--scheduler", "local"])
    assert starts_local_cluster(["run", "--scheduler=local", "a.yaml"])
    assert not starts_local_cluster(["certify", "a.yaml", "--scheduler", "tcp://host:8786", "local"])
    assert not starts_local_cluster(["certify", "local", "--workers", "2"])
    out = subprocess.run([sys.executable, "-c", _COMMAND_WITH_LOCAL_CLUSTER], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-1] == \
        "0 [(False, ['multirelease.pipeline']), (True, [])]"  # then by the cluster: running
    assert "verdict: PASS" in out.stdout


class _Held:
    """A result whose identity tells where a later task got it: made there, or sent there."""

    def __init__(self, i: int):
        self.i = i


#: every _Held made in this process (kept alive, so that no id is reused)
_MADE: dict = {}


def _make(i: int) -> _Held:
    h = _Held(i)
    _MADE[id(h)] = h
    return h


def _held_here(task: tuple) -> tuple[bool, int]:
    h, k = task
    return _MADE.get(id(h)) is h, h.i + k


def _is_made_here(h: _Held) -> bool:
    return _MADE.get(id(h)) is h


def _environ(name: str) -> str | None:
    import os

    return os.environ.get(name)


def _every(server) -> dict:
    """The milliseconds between two runs of each periodic callback of a Dask server."""
    return {name: pc.callback_time for name, pc in server.periodic_callbacks.items()}


def _worker_every(dask_worker) -> dict:
    return _every(dask_worker)


def _scheduler_every(dask_scheduler) -> tuple[dict, bool]:
    return _every(dask_scheduler), "stealing" in dask_scheduler.extensions


def _imported(name: str) -> bool:
    import sys

    return name in sys.modules


@pytest.fixture(scope="module")
def dask_pair():
    """One local Dask cluster of two single-threaded workers for the tests of this module that only need such
    a cluster (starting one costs seconds)."""
    pytest.importorskip("dask.distributed")
    from solver.executor import DaskExecutor

    ex = DaskExecutor("local", workers=2)
    try:
        yield ex
    finally:
        ex.close()


@pytest.fixture
def dask_local(dask_pair):
    """:func:`dask_pair` for one test: nothing kept when it starts, the client's ``submit`` as Dask made it."""
    dask_pair._kept.clear()
    yield dask_pair
    dask_pair._kept.clear()
    dask_pair.client.__dict__.pop("submit", None)


def test_dask_keeps_results_where_they_were_made(dask_local):
    """``map(..., keep=True)`` on Dask (issue 28): a later task holding a kept result (as itself or an item of
    its tuple) runs on the worker that made it, when that one is free, and gets that very object, not a copy
    sent back; without ``keep`` it gets a copy.  Local processes and this process give the same values.  The
    local cluster's workers run without Dask's ``MALLOC_TRIM_THRESHOLD_`` (glibc's adaptive mmap threshold
    left on), measuring their event loop and memory once a second, under a scheduler that steals no work."""
    ex = dask_local
    made = ex.map(_make, [1, 2], keep=True)  # one on each worker
    assert ex.map(_held_here, [(h, 10) for h in made]) == [(True, 11), (True, 12)]
    assert ex.map(_is_made_here, made) == [True, True]  # the task itself kept
    again = ex.map(_make, [4])  # not kept: sent back to a worker as a copy
    assert ex.map(_held_here, [(again[0], 10)]) == [(False, 14)]
    assert set(ex.client.run(_environ, "MALLOC_TRIM_THRESHOLD_").values()) == {None}
    # the workers and the scheduler look at themselves seldom, and steal no work
    for every in [*ex.client.run(_worker_every).values(), *map(_every, ex._cluster.workers.values())]:
        assert (every["tick"], every["memory_monitor"], every["monitor"]) == (1000, 1000, 5000)
    every, steals = ex.client.run_on_scheduler(_scheduler_every)
    assert (every["tick"], every["monitor"], steals) == (1000, 5000, False)
    for other in (InlineExecutor(), LocalExecutor(2)):
        made = other.map(_make, [1, 2], keep=True)
        assert [v for _, v in other.map(_held_here, [(h, 10) for h in made])] == [11, 12]


def _after(task: tuple) -> int:
    """``task = (seconds, i)``: ``i`` after sleeping; a negative ``i`` raises instead."""
    import time

    seconds, i = task
    time.sleep(seconds)
    if i < 0:
        raise ValueError(f"task {-i}")
    return i


def test_dask_fetches_each_result_when_its_task_is_done(dask_local, monkeypatch):
    """Dask: every result is fetched as soon as its task is done (the second task's, done first, before the
    first's), and returned in the order of the tasks; failed tasks raise the first one's error in task order
    once all are done, whichever failed first."""
    import distributed

    fetched = []
    real = distributed.Future.result

    def result(self, *args, **kwargs):
        value = real(self, *args, **kwargs)
        fetched.append(value)
        return value

    ex = dask_local
    monkeypatch.setattr(distributed.Future, "result", result)
    assert ex.map(_after, [(1.5, 0), (0.0, 1)]) == [0, 1]
    assert fetched == [1, 0]
    with pytest.raises(ValueError, match="task 1"):
        ex.map(_after, [(1.5, -1), (0.0, -2), (0.0, 3)])


def _where(task: tuple) -> int:
    """``task = (seconds, i)``: this process's id after sleeping."""
    import time

    time.sleep(task[0])
    return os.getpid()


def test_dask_hands_the_next_task_to_the_first_free_worker(dask_local):
    """Dask hands out as many tasks as its workers have threads (with many tasks, twice as many), then the next
    one in task order when one is done, as local processes do: a long task and three short ones on two
    workers - never more than two running, and the short ones all on the other worker.  (Given every task at
    once, the scheduler assigns each to a worker at once: on the census of issue 28 it put the insertion behind
    a release file and the other release file behind the data, and the read took 0.5 s longer.)"""
    from solver.executor import _AHEAD_TASKS

    ex = dask_local
    assert sum(ex._slots().values()) == 2
    submitted: list = []  # every future handed out
    running: list = []  # how many were running when each was handed out
    real = ex.client.submit

    def submit(*args, **kwargs):
        running.append(sum(not f.done() for f in submitted))
        submitted.append(real(*args, **kwargs))
        return submitted[-1]

    ex.client.submit = submit
    long, *short = ex.map(_where, [(2.0, 0), (0.2, 1), (0.2, 2), (0.2, 3)])
    assert len(set(short)) == 1 and long not in short
    assert len(submitted) == 4 and running[:2] == [0, 1] and max(running) == 1
    # with at least _AHEAD_TASKS tasks per thread, each worker holds one more than it runs, never more (the
    # flow shards: a worker starts its next shard without a round trip through this process); one fewer
    # task, one per thread as above - the results in task order either way
    for n, most in ((_AHEAD_TASKS * 2, 4), (_AHEAD_TASKS * 2 - 1, 2)):
        submitted.clear()
        running.clear()
        out = ex.map(_where, [(0.3 if i < 4 else 0.01, i) for i in range(n)])  # none done before the fifth
        assert len(out) == n and len(submitted) == n
        assert running[:most] == list(range(most)) and max(running) == most - 1


def _make_after(task: tuple) -> _Held:
    """``task = (seconds, i)``: a _Held made here after sleeping, which knows this process's id."""
    import time

    time.sleep(task[0])
    h = _make(task[1])
    h.pid = os.getpid()
    return h


def _held_where(task: tuple) -> tuple[int, bool, int]:
    """``task = (held, seconds)``: after sleeping, this process's id, whether ``held`` was made here, its value."""
    import time

    h, seconds = task
    time.sleep(seconds)
    return os.getpid(), _MADE.get(id(h)) is h, h.i


def test_dask_spreads_tasks_whose_kept_results_share_a_worker(dask_local):
    """Two kept results made by one worker (the other busy), then read by two tasks at once: one runs where
    they are (that very object), the other on the idle worker (a copy sent there) - not both on the first
    worker, one after the other, the other idle (the census's releases read by one worker were aggregated
    one after the other: 0.6-0.9 s longer)."""
    ex = dask_local
    slow, a, b = ex.map(_make_after, [(1.0, 0), (0.05, 1), (0.05, 2)], keep=True)
    assert a.pid == b.pid != slow.pid  # the short ones made one after the other on the free worker
    (pa, here_a, va), (pb, here_b, vb) = ex.map(_held_where, [(a, 0.3), (b, 0.3)])
    assert (va, vb) == (1, 2) and pa != pb and {pa, pb} == {a.pid, slow.pid}
    assert (here_a, here_b) == (pa == a.pid, pb == b.pid) and here_a != here_b


def test_executors_keep_the_order_of_the_tasks():
    tasks = list(range(20, 0, -1))
    want = [t * t for t in tasks]
    assert InlineExecutor().map(_square, tasks) == want
    assert LocalExecutor(2).map(_square, tasks) == want  # two worker processes
    assert isinstance(current_executor(), LocalExecutor)
    ex = InlineExecutor()
    with use_executor(ex):
        assert current_executor() is ex
    assert current_executor() is not ex


def _many_shards(monkeypatch, *, small_chunks: bool = True) -> list:
    """Small shards of region groups and (``small_chunks``) chunks of components on a small census, the
    population's points and the first release's regions in several chunks; returns the list to which the
    number of shards and the executor solving them are appended at every plan.  The chunks of components are
    cut inside the shard tasks: workers started afresh (a Dask cluster's processes) keep their own size."""
    if small_chunks:
        monkeypatch.setattr(flows, "_CHUNK_WORK", 1000)
    monkeypatch.setattr(flow_shards, "_SHARD_WORK", 100)
    monkeypatch.setattr(regions, "_POINTS_TASK", 40)
    monkeypatch.setattr(regions, "_REGIONS_TASK", 10)
    seen: list = []
    real = flow_shards.ShardedEngine._plan

    def counted(self):
        tasks, ex = real(self)
        seen.append((len(tasks), ex.name))
        return tasks, ex

    monkeypatch.setattr(flow_shards.ShardedEngine, "_plan", counted)
    return seen


def test_local_processes_give_the_inline_report(tmp_path, monkeypatch):
    """Worker processes (forced: every input counts as large) against this process alone, with several shards
    of sensitive values (tasks)."""
    path = _census(tmp_path)
    seen = _many_shards(monkeypatch)
    inline = _report(path, InlineExecutor())
    assert seen[0][0] >= 3  # several shards
    for module, name in ((flow_shards, "_PARALLEL_WORK"), (regions, "_PARALLEL_ROWS"), (regions, "_PARALLEL_POINTS"),
                         (regions, "_PARALLEL_REGIONS"), (document, "_PARALLEL_ROWS")):
        monkeypatch.setattr(module, name, 0)
    ran: list = []
    mapping: list = []  # the function of the map running now
    real = LocalExecutor.map

    def logged(self, fn, tasks, **kwargs):
        tasks = list(tasks)
        ran.append((fn.__name__, len(tasks)))
        mapping.append(fn.__name__)
        try:
            return real(self, fn, tasks, **kwargs)
        finally:
            mapping.pop()

    import attacks.correspondence.assemble as assemble

    grouped: list = []
    real_groups = assemble.request_groups

    def groups(*args):
        grouped.append(tuple(mapping))
        return real_groups(*args)

    monkeypatch.setattr(LocalExecutor, "map", logged)
    monkeypatch.setattr(assemble, "request_groups", groups)
    assert _report(path, LocalExecutor(2)) == inline
    assert seen[-1] == (seen[0][0], "local")  # the same shards, solved by the worker processes
    tasks = dict(ran)  # and every step before them: metrics and aggregation per release, points and regions in chunks
    assert tasks["_metrics_task"] == 2 and tasks["_aggregate_task"] == 2
    assert tasks["_region_pairs_task"] >= 4 and tasks["_comparable_task"] >= 2
    doc = json.loads(inline)
    assert doc["attacks"]["correspondence"]["exact"] is True
    # the report's request groups computed while the workers solve the shards; the witnesses' generators in one
    # map, a task each
    assert grouped == [("solve_shard",)]
    worst = doc["attacks"]["correspondence"]["worst"]
    assert [n for f, n in ran if f == "witness_part"] == [sum("generator" in w for w in worst.values())] == [3]


def test_population_points_computed_while_the_metrics_are(tmp_path, monkeypatch):
    """The correspondence attack's population points and coded sensitive values (they need no release
    aggregated) are computed once, by its ``prepare``, while the executor computes the releases' metrics (the
    metrics map's ``meanwhile``), kept in the view the attacks then read; the report is the one of a run that
    computes them in the attack."""
    import attacks.correspondence.attack as corr_attack

    path = _census(tmp_path)
    calls: list = []
    real_points = corr_attack.population_points
    real_codes = corr_attack._sensitive_codes
    real_metrics = document.compute_metrics_all
    inside = [False]

    def points(view):
        calls.append(inside[0])
        return real_points(view)

    def codes(view):
        calls.append(("codes", inside[0]))
        return real_codes(view)

    def metrics(pairs, meanwhile=None):
        def during():
            inside[0] = True
            try:
                return meanwhile()
            finally:
                inside[0] = False
        return real_metrics(pairs, meanwhile=during if meanwhile is not None else None)

    monkeypatch.setattr(corr_attack, "population_points", points)
    monkeypatch.setattr(corr_attack, "_sensitive_codes", codes)
    monkeypatch.setattr(document, "compute_metrics_all", metrics)
    run = run_scenario(load_scenario(path), executor=InlineExecutor())
    assert calls == [("codes", True), True]  # once each, ahead, during the metrics
    assert set(run.view.ahead["correspondence"]) == {"codes", "points"}
    prepared = dumps(build_report(run))
    monkeypatch.setattr(corr_attack.Correspondence, "prepare", lambda self, view: None)
    calls.clear()
    assert _report(path, InlineExecutor()) == prepared and calls == [("codes", False), False]  # in the run instead


def test_release_files_read_by_the_workers(tmp_path, monkeypatch, capsys):
    """``certify`` reads its release files as executor tasks (one per file; forced here on small files): the
    same report as reading them in this process, and bad input in a file read by a worker is the same one
    line (file, key, problem) with exit 2."""
    import multirelease.formats.scenario as scenario_mod

    path = _census(tmp_path)
    folder = tmp_path / "published"
    assert main(["publish", str(path), "--out", str(folder)]) == 0
    files = [str(folder / "release_1.csv"), str(folder / "release_2.csv")]
    real = scenario_mod._read_ahead
    read: list = []

    def counted(*args):
        out = real(*args)
        read.append(len(out[0]))  # release files read by the executor's tasks
        return out

    monkeypatch.setattr(scenario_mod, "_read_ahead", counted)

    def certify(workers: str, name: str, *extra: str) -> tuple[int, str]:
        out = tmp_path / name
        code = main(["certify", str(path), *files, "--attack", "correspondence", "--json", str(out), "--quiet",
                     "--workers", workers, *extra])
        return code, (out.read_text(encoding="utf-8") if out.exists() else capsys.readouterr().err)

    inline = certify("0", "inline.json")  # two tasks, in this process
    assert certify("2", "small.json") == inline and read[-1] == 0  # small files: read one by one, here
    monkeypatch.setattr(scenario_mod, "_PARALLEL_BYTES", 0)
    assert certify("2", "local.json") == inline and read[-1] == 2  # two tasks, in two worker processes
    if importlib.util.find_spec("distributed") is not None:  # read by Dask workers, aggregated where read
        assert certify("2", "dask.json", "--scheduler", "local") == inline and read[-1] == 2
    text = Path(files[1]).read_text(encoding="utf-8").splitlines()
    head = text[0].split(",")
    cells = text[5].split(",")
    cells[head.index("sex")] = "Robot"
    Path(files[1]).write_text("\n".join(text[:5] + [",".join(cells)] + text[6:]) + "\n", encoding="utf-8")
    capsys.readouterr()
    bad_local = certify("2", "bad_local.json")
    bad_inline = certify("0", "bad_inline.json")
    assert bad_local == bad_inline and bad_local[0] == 2
    assert f"{files[1]}: column sex, line 6:" in bad_local[1].replace("\n", "")
    # an error crosses processes whole: its problem, file and key apart (a caller may locate it further)
    from multirelease.errors import InputError

    back = pickle.loads(pickle.dumps(InputError("is not in the hierarchy", file="r.csv", key="column sex")))
    assert (type(back), back.problem, back.file, back.key) == (InputError, "is not in the hierarchy", "r.csv",
                                                                "column sex")


@pytest.mark.parametrize("part_rows", [None, 300])
def test_tables_read_ahead_by_the_workers(tmp_path, monkeypatch, capsys, part_rows):
    """The scenario's data and its insertion read by the workers beside the release files (forced on small
    files), the data in parts of at most ``part_rows`` records too: the insertion's records take the numbers
    after the data's (the population's targets would lose the inserted individuals otherwise, and the report
    would differ), and a bad cell in either is told as when read here - the same line, exit 2, the earlier
    file's error first."""
    import multirelease.formats.scenario as scenario_mod
    from multirelease.model.table import read_table

    if part_rows is not None:
        monkeypatch.setattr(scenario_mod, "_PART_ROWS", part_rows)

    path = _census(tmp_path)
    folder = tmp_path / "published"
    assert main(["publish", str(path), "--out", str(folder)]) == 0
    files = [str(folder / "release_1.csv"), str(folder / "release_2.csv")]
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    ahead: list = []
    real = scenario_mod._read_ahead
    monkeypatch.setattr(scenario_mod, "_read_ahead", lambda *a: ahead.append(sorted(real(*a)[1])) or real(*a))

    def certify(workers: str, name: str) -> tuple[int, str]:
        out = tmp_path / name
        code = main(["certify", str(path), *files, "--attack", "correspondence", "--json", str(out), "--quiet",
                     "--workers", workers])
        return code, (out.read_text(encoding="utf-8") if out.exists() else capsys.readouterr().err)

    inline = certify("0", "inline.json")
    monkeypatch.setattr(scenario_mod, "_PARALLEL_BYTES", 0)
    handed: list = []  # the read tasks in the order they were handed out
    real_map = LocalExecutor.map

    def logged(self, fn, tasks, **kwargs):
        if fn is scenario_mod._read_input_task:
            handed.append([t[3] if t[0] == "table" else Path(t[1]).name for t in tasks])
        return real_map(self, fn, tasks, **kwargs)

    monkeypatch.setattr(LocalExecutor, "map", logged)
    assert certify("2", "local.json") == inline and ahead[-1] == ["data", "dynamics.2.insert"]
    # the costliest first: the data's 1,200 records, the release files (the second the larger), the insertion's
    # few records (120, the census's 10%) last; in parts, the release files, then the data's four parts
    if part_rows is None:
        assert handed[0] == ["data", "release_2.csv", "release_1.csv", "dynamics.2.insert"]
    else:
        assert handed[0] == ["release_2.csv", "release_1.csv", "data", "data", "data", "data", "dynamics.2.insert"]
    # the inserted records numbered after the data's, as read_table numbers them in its turn
    plan = load_scenario(path)
    inserted = plan.dynamics[2].insert
    data = read_table(plan.schema, spec["data"], base=path.parent, source=str(path), key="data")
    assert inserted.index[0] == str(len(data) + 1) and len(set(inserted.index) & set(data.ids)) == 0
    csv = path.parent / spec["data"]["file"]
    lines = csv.read_text(encoding="utf-8").splitlines()
    head = lines[0].split(";")
    for line in (len(lines) - 3, 7):  # a bad cell in the insertion, then one in the data as well
        cells = lines[line].split(";")
        cells[head.index("sex")] = "Robot"
        lines[line] = ";".join(cells)
        csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
        capsys.readouterr()
        bad_local, bad_inline = certify("2", "bad_local.json"), certify("0", "bad_inline.json")
        assert bad_local == bad_inline and bad_local[0] == 2
        # the file's line, and the record's number (the insertion's numbered after the data's 1,200)
        assert f"line {line + 1}: " in bad_local[1] and f"(record {line})" in bad_local[1]


def test_figures_do_not_depend_on_the_shards(tmp_path, monkeypatch):
    """One shard (the whole graph in one task) and many of region groups give the same figures and rows;
    only the generators shown as witnesses may differ (a shard solves its components in chunks)."""
    path = _census(tmp_path)
    one = json.loads(_report(path, InlineExecutor()))["attacks"]["correspondence"]
    seen = _many_shards(monkeypatch)
    many = json.loads(_report(path, InlineExecutor()))["attacks"]["correspondence"]
    assert seen[0][0] >= 3
    assert one["summary"] == many["summary"] and one["targets"] == many["targets"]
    for metric, w in one["worst"].items():
        assert {k: x for k, x in w.items() if k != "generator"} == \
            {k: x for k, x in many["worst"][metric].items() if k != "generator"}


def test_shards_and_witness_parts_run_with_the_cycle_collector_paused(tmp_path, monkeypatch):
    """A flow shard builds its components and answers its requests, and a witness part its generator, with the
    cyclic garbage collector paused (its passes there reclaim nothing); it runs again after each task."""
    path = _census(tmp_path)
    _many_shards(monkeypatch)
    seen: list = []
    for cls, name in ((flow_shards, "_engine"), (flows.TwoReleaseEngine, "answer_arrays"),
                      (flows.TwoReleaseEngine, "base_arcs"), (flows.TwoReleaseEngine, "_objective")):
        real = getattr(cls, name)

        def spy(*args, _real=real, _name=name):
            seen.append((_name, gc.isenabled()))
            return _real(*args)

        monkeypatch.setattr(cls, name, spy)
    _report(path, InlineExecutor())
    assert {n for n, _ in seen} == {"_engine", "answer_arrays", "base_arcs", "_objective"}
    assert not any(on for _, on in seen)
    assert gc.isenabled()


def test_cycles_uncollected_restores_the_collector_as_it_was():
    assert gc.isenabled()
    with pytest.raises(KeyError):
        with cycles_uncollected():
            assert not gc.isenabled()
            raise KeyError("x")
    assert gc.isenabled()  # resumed after an error
    gc.disable()
    try:
        with cycles_uncollected():
            pass
        assert not gc.isenabled()  # paused by someone else before: left paused
    finally:
        gc.enable()


@pytest.mark.parametrize("processes", [False, True])
def test_dask_local_cluster_gives_the_local_report(tmp_path, monkeypatch, processes):
    distributed = pytest.importorskip("dask.distributed")
    from solver.executor import DaskExecutor

    path = _census(tmp_path)
    _many_shards(monkeypatch, small_chunks=not processes)  # several shards (tasks) on this small input
    local = _report(path)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        ex = DaskExecutor(client=client)
        seen = []
        real = ex.map
        ex.map = lambda fn, tasks, **kw: seen.append(len(tasks)) or real(fn, tasks, **kw)  # what went to the cluster
        assert _report(path, ex) == local
        assert seen and sum(seen) >= 2
        if not processes:  # the command line, with the cluster's address
            out = tmp_path / "dask.json"
            code = main(["run", str(path), "--json", str(out), "--quiet", "--scheduler", cluster.scheduler_address])
            assert code in (0, 1) and out.read_text(encoding="utf-8") == local


def test_three_releases_on_dask_give_the_local_report(tmp_path, monkeypatch):
    """The chain engine's bulk pass (three releases: flow and LP bounds per component) through Dask and
    through local worker processes (forced) gives this process's report."""
    distributed = pytest.importorskip("dask.distributed")
    import solver.correspondence.generators as generators
    from solver.executor import DaskExecutor

    path = _census(tmp_path, rows=500)  # census.csv holds 550 rows
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["data"]["limit"] = 350
    doc["dynamics"] = {2: {"insert": {"file": "census.csv", "separator": ";", "offset": 350, "limit": 100}},
                       3: {"insert": {"file": "census.csv", "separator": ";", "offset": 450, "limit": 100}}}
    doc["releases"] = [{"publisher": "mondrian", "k": 10}] * 3
    doc["attacks"] = [{"correspondence": {"k": 10, "time_limit": 5.0}}]
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    inline = _report(path, InlineExecutor())
    assert json.loads(inline)["attacks"]["correspondence"]["exact"] is True
    monkeypatch.setattr(generators, "_PARALLEL_LOAD", 0)
    assert _report(path, LocalExecutor(2)) == inline
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        ex = DaskExecutor(client=client)
        seen = []
        real = ex.map
        ex.map = lambda fn, tasks, **kw: seen.append(fn.__name__) or real(fn, tasks, **kw)
        assert _report(path, ex) == inline
        assert "_bulk_task" in seen


def test_targets_file_holds_every_row(tmp_path):
    path = _census(tmp_path, rows=1000)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["attacks"] = [{"correspondence": {"k": 10, "rows": 6}}]
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out, rows = tmp_path / "r.json", tmp_path / "rows.csv"
    code = main(["run", str(path), "--json", str(out), "--quiet", "--targets-file", str(rows)])
    assert code in (0, 1)
    report = json.loads(out.read_text(encoding="utf-8"))["attacks"]["correspondence"]
    table = pd.read_csv(rows)
    assert len(report["targets"]) <= 6 < len(table)
    assert set(table["attack"]) == {"correspondence"}
    assert int(table["points"].sum()) == report["summary"]["targets"]
    for fam in "FCB":
        metric = {"F": "FA", "C": "CA", "B": "BA"}[fam]
        if metric in report["summary"]:
            assert int(table[f"{fam}.anonymity"].min()) == report["summary"][metric]
            assert min(r[fam]["anonymity"] for r in report["targets"] if fam in r) == report["summary"][metric]
    bad = main(["run", str(path), "--targets-file", str(tmp_path / "rows.txt")])
    assert bad == 2 and not (tmp_path / "rows.txt").exists()


def _worlds_and_updates(tmp_path: Path) -> Path:
    """A stream of Adult records (3 releases, naive 3-diverse publisher, occupation updated along a window
    model): the possible-worlds attack (free values: one block per anonymized group and release) and the joint
    update-graph attack (CP-SAT per component of records and groups) both have many components."""
    adult = ROOT.parent / "shared" / "data" / "adult"
    quasi = ("sex", "age", "marital-status", "education")
    attrs = {a: {"role": "quasi", "hierarchy": {"file": str(adult / f"adult_hierarchy_{a}.csv")}} for a in quasi}
    attrs["occupation"] = {"role": "sensitive", "hierarchy": {"file": str(adult / "adult_hierarchy_occupation.csv")}}
    for a in ("race", "native-country", "workclass", "salary-class"):
        attrs[a] = {"role": "insensitive"}
    release = {"publisher": "naive", "l": 3, "attributes": [*quasi, "occupation"]}
    doc = {"name": "components", "seed": 7, "schema": {"attributes": attrs},
           "data": {"file": str(adult / "adult.csv"), "separator": ";", "limit": 1000},
           "transitions": {"diameter": 5, "shape": "window"},
           "dynamics": {"stream": {"initial": 120, "delete": 12, "insert": 24, "sensitive": 24,
                                   "qi": {"age": {"grow": 1}}}},
           "releases": [release] * 3,
           "adversary": {"quasi_identifiers": "all", "presence": True, "sensitive": "free"},
           "attacks": [{"possible_worlds": {}},
                       {"update_graph": {"linkage": "population", "joint": True, "time_limit": 60}}]}
    path = tmp_path / "components.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_worlds_and_update_graph_components_on_every_executor(tmp_path, monkeypatch):
    """The possible-worlds blocks and the joint update-graph components, one chunk in this process (the
    single-process computation), many chunks in this process, in two local worker processes (forced), and on
    a Dask LocalCluster of two workers: the same report byte for byte, exact, with several components."""
    distributed = pytest.importorskip("dask.distributed")
    from solver.executor import DaskExecutor

    path = _worlds_and_updates(tmp_path)
    single = _report(path, InlineExecutor())
    doc = json.loads(single)["attacks"]
    assert doc["possible_worlds"]["exact"] is True and doc["update_graph"]["exact"] is True
    assert doc["possible_worlds"]["summary"]["blocks"] >= 20
    assert doc["update_graph"]["worst"]["joint"]["solver"]["components"] >= 5
    assert doc["update_graph"]["summary"]["joint_extra"] > 0  # the joint attack finds more than the SUG
    # many chunks: a few blocks / components per task
    monkeypatch.setattr(worlds_component, "_CHUNK_WORK", 40)
    monkeypatch.setattr(update_worlds, "_CHUNK_WORK", 60)
    assert _report(path, InlineExecutor()) == single
    monkeypatch.setattr(worlds_component, "_PARALLEL_WORK", 0)
    monkeypatch.setattr(worlds_component, "_PARALLEL_WORK_PERSISTENT", 0)
    monkeypatch.setattr(update_worlds, "_PARALLEL_WORK", 0)
    assert _report(path, LocalExecutor(2)) == single
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        ex = DaskExecutor(client=client)
        seen: dict = {}
        real = ex.map
        ex.map = lambda fn, tasks, **kw: seen.setdefault(fn.__name__, []).append(len(tasks)) or real(fn, tasks, **kw)
        assert _report(path, ex) == single
        assert max(seen["solve_chunk"]) >= 2 and max(seen["solve_update_chunk"]) >= 2


def _sampled_problem(broken: bool = False):
    """Three independent chains of 8 records (age windows of three around each record's own, within its
    chain): three blocks, each counted beyond a budget of one type-world (sampled).  ``broken``: three
    records of the last chain are published at p17's age only (that block has no world)."""
    import numpy as np

    from multirelease.model.hierarchy import Hierarchy
    from multirelease.model.release import Release
    from multirelease.model.schema import Attribute, Schema
    from multirelease.model.sequence import Adversary, ReleaseSequence
    from multirelease.model.table import Table
    from solver.worlds.problem import build_problem

    schema = Schema((Attribute("age", "quasi", Hierarchy.numeric("age", 0, 23)),
                     Attribute("disease", "sensitive", Hierarchy.from_nested("disease", ["a", "b", "c"]))))
    frame = pd.DataFrame({"age": [str(x) for x in range(24)], "disease": list("aabbccab") * 3},
                         index=pd.Index([f"p{i}" for i in range(24)], name="id"), dtype=object)
    start = [8 * (i // 8) for i in range(24)]
    lo = np.array([[max(start[i], i - 1)] for i in range(24)], dtype=np.int32)
    hi = np.array([[min(start[i] + 7, i + 1)] for i in range(24)], dtype=np.int32)
    if broken:
        lo[17:20] = hi[17:20] = 17
    rel = Release(schema=schema, attributes=("age", "disease"), lo=lo, hi=hi,
                  sensitive=frame["disease"].to_numpy(dtype=object))
    seq = ReleaseSequence()
    seq.append(rel, None, Table(schema, frame))
    return build_problem(seq.view(Adversary(sensitive="persistent")))


def test_worlds_chunks_keep_sampled_figures_executor_independent(monkeypatch):
    """Blocks beyond the counting budget are sampled: with several chunks each chunk's sampler has its own
    generator drawn from the caller's, so inline and worker-process runs give the same estimates and
    intervals; linkability and the blocks' order are those of the single chunk."""
    import numpy as np

    from solver.worlds.analysis import analyze

    problem = _sampled_problem()
    one = analyze(problem, max_type_worlds=1, samples=200)
    assert len(one.blocks) == 3 and not one.all_exact
    monkeypatch.setattr(worlds_component, "_CHUNK_WORK", 4)
    with use_executor(InlineExecutor()):
        inline = analyze(_sampled_problem(), max_type_worlds=1, samples=200)
    monkeypatch.setattr(worlds_component, "_PARALLEL_WORK", 0)
    monkeypatch.setattr(worlds_component, "_PARALLEL_WORK_PERSISTENT", 0)
    seen = []
    real = LocalExecutor.map
    monkeypatch.setattr(LocalExecutor, "map", lambda self, fn, tasks: seen.append(len(tasks)) or real(self, fn, tasks))
    with use_executor(LocalExecutor(2)):
        local = analyze(_sampled_problem(), max_type_worlds=1, samples=200)
    assert seen == [3]  # one task per block
    for name in ("breach", "low", "high", "ci_low", "ci_high"):
        assert np.array_equal(getattr(inline, name), getattr(local, name), equal_nan=True), name
    assert np.array_equal(inline.linkable, local.linkable) and np.array_equal(one.linkable, inline.linkable)
    assert [int(b.block.members[0][0]) for b in one.blocks] == [int(b.block.members[0][0]) for b in inline.blocks]
    assert ((inline.low <= inline.breach + 1e-12) & (inline.breach <= inline.high + 1e-12)).all()


def test_worlds_block_without_world_is_named_alike_by_every_executor(monkeypatch):
    """Two blocks without a world (three records published at p17's age only): one chunk in this process and
    one chunk per block in two worker processes refuse the input with the same one-line message, naming the
    first block in the blocks' order."""
    from multirelease.errors import InputError
    from solver.worlds.analysis import analyze

    with pytest.raises(InputError) as one:
        analyze(_sampled_problem(broken=True))
    monkeypatch.setattr(worlds_component, "_CHUNK_WORK", 4)
    monkeypatch.setattr(worlds_component, "_PARALLEL_WORK", 0)
    monkeypatch.setattr(worlds_component, "_PARALLEL_WORK_PERSISTENT", 0)
    with use_executor(LocalExecutor(2)), pytest.raises(InputError) as many:
        analyze(_sampled_problem(broken=True))
    assert str(one.value) == str(many.value) and "\n" not in str(one.value)
    assert "p16, p17" in str(one.value)


def test_workers_flag_on_every_executor_gives_one_report(tmp_path, monkeypatch, capsys):
    """``--workers N`` (issue 28, item 2): this process only (0), N local processes with no cap but the
    cores, or a local Dask cluster of N workers (``--scheduler local``): the same report byte for byte; a
    negative count, or a count for a remote cluster's workers, is refused with exit 2 and one line."""
    pytest.importorskip("dask.distributed")
    from solver.executor import DaskExecutor, executor_for

    path = _census(tmp_path)
    monkeypatch.setattr(flows, "_CHUNK_WORK", 1000)
    monkeypatch.setattr(flows, "_PARALLEL_WORK", 0)  # local processes even on this small input
    reports = []
    for extra in (["--workers", "0"], ["--workers", "2"], ["--scheduler", "local", "--workers", "2"]):
        out = tmp_path / f"{'_'.join(extra)}.json"
        assert main(["run", str(path), "--json", str(out), "--quiet", *extra]) in (0, 1)
        reports.append(out.read_text(encoding="utf-8"))
    assert reports[0] == reports[1] == reports[2]
    assert isinstance(executor_for(None, 0), InlineExecutor)
    assert executor_for(None, 12).processes == 12  # no hidden cap
    ex = executor_for("local", 1)
    try:
        assert isinstance(ex, DaskExecutor) and len(ex.client.scheduler_info()["workers"]) == 1
    finally:
        ex.close()
    capsys.readouterr()
    assert main(["run", str(path), "--quiet", "--workers", "-1"]) == 2
    assert "--workers" in capsys.readouterr().err
    assert main(["run", str(path), "--quiet", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "has its own workers" in err and len(err.strip().splitlines()) == 1
