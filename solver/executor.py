"""Where independent components are solved: this process, local worker processes, or a Dask cluster.

The exact engines split their work into independent *components* (connected components of the buddy graph
for the correspondence attack, Fung et al. section 3.1: no arc joins two of them, so their optima add up;
DESIGN.md, "Group aggregation").  An :class:`Executor` has one operation, :meth:`~Executor.map`: apply a
module-level function to a list of picklable tasks and return the results **in the order of the tasks**,
whoever computed them.  ``map(fn, tasks, shared=x)`` calls ``fn(task, x)``: ``x`` (arrays every task reads,
e.g. a region table) is sent to each worker once - inherited by forked local processes, broadcast once to a
Dask cluster - instead of once per task.  ``map(..., meanwhile=g)`` calls ``g()`` in this process once the tasks
are handed out, while the workers run them (work of this process that needs none of their results: certify
imports its attacks' solvers while its input files are read; inline, after the tasks).  ``map(..., keep=True)``:
the results may be tasks of later maps (the releases certify reads, then aggregates) - a Dask cluster keeps
each where it was computed and runs a later task that holds it there, instead of sending it back and forth;
processes and this process have nothing to keep.  Each task is solved
by the same code in any process, so the figures (and reports) are the same byte for byte whichever executor ran
them.

* :class:`InlineExecutor` - this process, in order (small inputs, tests);
* :class:`LocalExecutor` - the default: ``concurrent.futures.ProcessPoolExecutor`` over this machine's
  cores (forked where ``fork`` exists), in this process when there are too few tasks to be worth it;
* :class:`DaskExecutor` - ``multirelease run/certify --scheduler ADDRESS``: a ``dask.distributed`` cluster
  (``pip install 'multirelease[dask]'``; imported only here, only then); ``--scheduler local --workers N``
  starts a local Dask cluster of ``N`` workers for the command.

``--workers N`` sets the local processes (``0``: this process only); there is no cap but the cores.

The pipeline makes the executor current for the attacks (:func:`use_executor`); engines ask
:func:`current_executor`.
"""
from __future__ import annotations

import contextlib
import contextvars
import multiprocessing
import os
from typing import Any, Callable, Iterator, Protocol, Sequence

from multirelease.errors import InputError

__all__ = ["Executor", "InlineExecutor", "LocalExecutor", "DaskExecutor", "available_cores", "executor_for",
           "current_executor", "executor_for_work", "import_modules", "cycles_uncollected", "start_fork_server",
           "plan_chunks", "use_executor", "chunks"]


class Executor(Protocol):
    """Maps a function over picklable tasks; results in the order of the tasks."""

    name: str

    def map(self, fn: Callable[..., Any], tasks: Sequence[Any], *, shared: Any = None,
            meanwhile: Callable[[], Any] | None = None, keep: bool = False) -> list: ...

    def imports(self, modules: Sequence[str]) -> None:
        """Have the workers import ``modules`` ahead of the tasks that need them, while they do other work: a
        hint, waited for by nothing (a module that fails to import is left to the task that needs it)."""

    def close(self) -> None: ...


class InlineExecutor:
    """Every task in this process, in order."""

    name = "inline"

    def map(self, fn: Callable[..., Any], tasks: Sequence[Any], *, shared: Any = None,
            meanwhile: Callable[[], Any] | None = None, keep: bool = False) -> list:
        out = [fn(t) for t in tasks] if shared is None else [fn(t, shared) for t in tasks]
        if meanwhile is not None:
            meanwhile()
        return out

    def imports(self, modules: Sequence[str]) -> None:
        pass  # this process imports what it runs

    def close(self) -> None:
        pass


@contextlib.contextmanager
def cycles_uncollected() -> Iterator[None]:
    """Python's cyclic garbage collector paused inside the block (reference counting frees everything as usual;
    the collector resumes after it, also on an error, if it ran before).  For steps that build hundreds of
    thousands of small objects none of which is in a cycle: the collector's full passes over them reclaim
    nothing and cost a sixth of a flow shard's time on the census of issue 28 (14 passes over up to 250,000
    objects in one shard, 0 collected), a quarter of an m-Distinct release on Adult."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class LocalExecutor:
    """Local worker processes (``concurrent.futures``): ``processes`` workers (default: every core this process
    may use, :func:`available_cores`; no other cap); with fewer than ``min_tasks`` tasks, or one worker, this
    process does them in order."""

    name = "local"

    def __init__(self, processes: int | None = None, *, min_tasks: int = 2):
        self.processes = max(1, int(processes if processes is not None else available_cores()))
        self.min_tasks = int(min_tasks)

    def map(self, fn: Callable[..., Any], tasks: Sequence[Any], *, shared: Any = None,
            meanwhile: Callable[[], Any] | None = None, keep: bool = False) -> list:
        tasks = list(tasks)
        if self.processes <= 1 or len(tasks) < max(2, self.min_tasks):
            return InlineExecutor().map(fn, tasks, shared=shared, meanwhile=meanwhile)
        from concurrent.futures import ProcessPoolExecutor

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        # ``shared`` reaches every worker once, as the pool's initializer argument; under fork so do the tasks
        # (inherited, not pickled: only a task's number goes through the pipe - sending a release of 10^6 rows
        # to a worker cost more than aggregating it), and only the results come back through the pipes
        forked = method == "fork"
        with ProcessPoolExecutor(max_workers=min(self.processes, len(tasks)),
                                 mp_context=multiprocessing.get_context(method),
                                 initializer=_keep_shared, initargs=(shared, tasks if forked else None)) as pool:
            # every task is submitted (and, under fork, every worker started) before ``meanwhile`` runs here
            if forked:
                results = pool.map(_numbered_task, [fn] * len(tasks), range(len(tasks)))
            else:
                results = pool.map(_with_shared, [fn] * len(tasks), tasks)
            if meanwhile is not None:
                meanwhile()
            return list(results)

    def imports(self, modules: Sequence[str]) -> None:
        pass  # each map forks its workers from this process, with every module it imported by then

    def close(self) -> None:
        pass


#: what :meth:`LocalExecutor.map`'s ``shared`` argument and its tasks (forked workers) are in a worker process
_SHARED: list = [None, None]


def _keep_shared(shared: Any, tasks: Any = None) -> None:
    _SHARED[0] = shared
    _SHARED[1] = tasks


def _with_shared(fn: Callable[..., Any], task: Any) -> Any:
    return fn(task) if _SHARED[0] is None else fn(task, _SHARED[0])


def _numbered_task(fn: Callable[..., Any], i: int) -> Any:
    return _with_shared(fn, _SHARED[1][i])


#: what a local cluster's scheduler, nannies and workers do less often than Dask's defaults: the event loop's
#: latency measured every second instead of every 20 ms, a worker's memory looked at every second instead of
#: every 100 ms, the system's figures for a dashboard every 5 s instead of every 0.5 s, and no work stealing
#: (the executor hands out no more tasks than there are threads: there is nothing to steal).  Idle, a cluster
#: of two workers on 2 cores took 1.4-1.9 s of CPU in this process and 0.65-0.76 s in each worker every 20 s,
#: with these 0.25 s and 0.1 s: on the census of issue 28, 2-4 s of CPU that the tasks had to share with it.
_QUIET = {"distributed.admin.tick.interval": "1s", "distributed.worker.memory.monitor-interval": "1s",
          "distributed.admin.system-monitor.interval": "5s", "distributed.scheduler.work-stealing": False}


class DaskExecutor:
    """A ``dask.distributed`` cluster at ``address`` (``tcp://host:8786``), an existing ``Client``, or with
    ``address="local"`` a ``LocalCluster`` of ``workers`` single-threaded worker processes started here (default:
    :func:`available_cores`) and closed with the executor.  Tasks are handed out in order, as many at a time as
    the cluster's workers have threads and the next one when one is done, each to a worker with a free thread
    (a preference: a worker gone, the scheduler takes another), and gathered in order (``pure=False``: every
    task runs).

    The results of a ``map(..., keep=True)`` stay on the worker that computed them too, for the executor's
    life: a later task that holds one of them (the task itself, or an item of a task that is a tuple) is sent
    the result's future instead of its pickle, and runs where the result already is when that worker has a
    free thread (a census release read by a worker is not sent back to it to be aggregated), else on the
    worker with the most free threads, which the scheduler sends the result to (two releases read by one
    worker are aggregated side by side).  A kept result must not be changed in
    place afterwards (the worker's copy would not follow); the releases and tables certify keeps are never
    changed after reading (new ones are made; only caches of figures derived from their own data are added).

    The local cluster's workers are started in the environment of this process, as local worker processes
    are, not in the one Dask sets by default: ``MALLOC_TRIM_THRESHOLD_=65536`` turns off glibc's adaptive mmap
    threshold, so that every large numpy temporary is mapped and faulted in afresh (on the 10^6 census of issue
    28: 3.5x the page faults, the flow shards 15% slower), and ``OMP_NUM_THREADS=1`` caps pyarrow's thread pool
    (the census's files read by one worker in 7.9-8.7 s instead of 7.1-7.6 s).  Nor do they run Dask's
    statistical profiler, and they, their nannies and the scheduler look at themselves less often
    (:data:`_QUIET`).  They are forked by a fork server (:func:`start_fork_server`), never from this process:
    when the cluster starts, this process runs threads (the cluster's event loop, which logs, and one thread per
    worker that starts it), and a worker forked while one of them held a lock - the buffer of ``stderr`` - held
    it forever and hung at its first log line, and the cluster with it.  The fork server is a fresh interpreter
    started once per process, which imports ``distributed`` and the modules of this tool this process has
    imported by then, beside this process's own work: each worker starts with them, as a forked one did (a
    worker started in a fresh interpreter imports the readers and solvers again: on 2 cores, 0.6 s to start the
    cluster and 0.55 s to import; with the fork server started here, with the cluster, 1.25 s to start it and
    nothing to import, against 0.58 s forked from this process - the command line starts the server before its
    own imports, :mod:`multirelease.__main__`: command line and cluster up in 1.25-1.82 s instead of 2.06-2.14 s,
    1.27-1.59 s forked).  Each worker imports the main script of this process again, as under
    ``spawn``: a script that starts a local cluster runs from ``if __name__ == "__main__":``.  A remote cluster
    keeps its own configuration."""

    name = "dask"

    def __init__(self, address: str | None = None, *, client: Any = None, workers: int | None = None):
        self._cluster = None
        self._kept: dict[int, tuple[Any, Any, tuple]] = {}  # id -> (result, its future, the workers holding it)
        if client is None:
            # started first: the fork server imports its modules while this process imports dask
            fork_server = address == "local" and start_fork_server()
            try:
                import dask.config
                from dask.distributed import Client, LocalCluster
            except ImportError:
                raise InputError("needs dask.distributed: pip install 'multirelease[dask]'",
                                 key="--scheduler") from None
            if address == "local":
                settings = {"distributed.nanny.pre-spawn-environ": {}, "distributed.worker.profile.enabled": False,
                            **_QUIET}
                if fork_server:
                    settings["distributed.worker.multiprocessing-method"] = "forkserver"
                with dask.config.set(settings):
                    self._cluster = LocalCluster(n_workers=workers or available_cores(), threads_per_worker=1,
                                                 processes=True, dashboard_address=None)
                client = Client(self._cluster, set_as_default=False)
            else:
                try:
                    client = Client(address, set_as_default=False, timeout=10)
                except (OSError, TimeoutError) as exc:
                    raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}", key="--scheduler") \
                        from None
            self._owned = True
        else:
            self._owned = False
        self.client = client
        self.address = address

    def _remote(self, task: Any) -> tuple[Any, tuple]:
        """``task`` with every kept result in it (itself, or an item of a tuple) replaced by its future, and the
        workers that hold those results."""
        kept = self._kept
        if not kept:
            return task, ()
        if id(task) in kept:
            return kept[id(task)][1], kept[id(task)][2]
        if type(task) is tuple and any(id(x) in kept for x in task):
            homes = tuple(w for x in task if id(x) in kept for w in kept[id(x)][2])
            return tuple(kept[id(x)][1] if id(x) in kept else x for x in task), homes
        return task, ()

    def map(self, fn: Callable[..., Any], tasks: Sequence[Any], *, shared: Any = None,
            meanwhile: Callable[[], Any] | None = None, keep: bool = False) -> list:
        remote = [self._remote(t) for t in tasks]
        if not remote:
            if meanwhile is not None:
                meanwhile()
            return []
        # as many tasks handed out as the cluster has threads, the next one each time one is done, in the order
        # of the tasks, each to a worker with a free thread - one that holds a kept result the task reads if
        # there is one, else the one with the most free threads (the scheduler would assign every task to a
        # worker at once, alternately: four files to read on two workers, the data and a release file on one,
        # then the insertion and the other release file - the read 0.5 s longer; and it runs every task where
        # its kept result is: the census's two releases read by one worker were aggregated one after the other
        # there, 0.6-0.9 s longer, the other worker idle).  With many tasks per thread (:data:`_AHEAD_TASKS`),
        # each worker holds one more per thread, queued behind the one it runs: it starts it as soon as that one
        # ends instead of waiting for its result to reach this process and the next task to come back (on the
        # census of issue 28 with two workers: 12 ms per task, 0.38 s per worker over the 64 flow shards, 0.10 s
        # queued); with few, a task queued on one worker could wait there while another is idle
        args = () if shared is None else (self.client.scatter(shared, broadcast=True, hash=False),)  # sent once
        futures: list = [None] * len(remote)
        free = self._slots()
        if len(remote) >= _AHEAD_TASKS * sum(free.values()):
            free = {w: 2 * n for w, n in free.items()}
        placed: list = [None] * len(remote)

        def submit(k: int) -> Any:
            task, homes = remote[k]
            worker = next((w for w in homes if free.get(w, 0) > 0), None) or \
                max(free, key=lambda w: free[w], default=None)
            where = {}
            if worker is not None and free[worker] > 0:
                free[worker] -= 1
                placed[k] = worker
                where = {"workers": [worker], "allow_other_workers": True}  # a worker gone: any other
            futures[k] = self.client.submit(fn, task, *args, pure=False, **where)
            return futures[k]

        def done(k: int) -> None:
            if placed[k] is not None:
                free[placed[k]] += 1

        first = [submit(k) for k in range(min(sum(free.values()) or 1, len(remote)))]
        if meanwhile is not None:
            meanwhile()
        results = self._fetch(futures, first, submit, done)
        kept = [(r, f) for r, f in zip(results, futures) if keep and _keepable(r)]
        if kept:  # the object, its future and where it is held together: an id is not reused while it lives
            held = self.client.who_has([f for _, f in kept])
            for r, f in kept:
                self._kept[id(r)] = (r, f, tuple(held.get(f.key, ())))
        return results

    def _slots(self) -> dict[str, int]:
        """The threads of each of the cluster's workers (the tasks it can run at once)."""
        workers = self.client.scheduler_info().get("workers", {})
        return {addr: max(1, int(w.get("nthreads", 1))) for addr, w in workers.items()}

    def _fetch(self, futures: list, first: list, submit: Callable[[int], Any], done: Callable[[int], None]
               ) -> list:
        """The results of every task in their order: the ``first`` handed out, each next one (``submit(k)``)
        when one is done (``done(k)`` told first), and each result fetched as soon as its task is done, while
        the others run (``Client.gather`` waits for all of them, then fetches them one worker after the other:
        the census's releases, read side by side, came back one second after the last was read); a task that
        failed raises its error once every task is done, the first in task order."""
        from dask.distributed import as_completed

        at = {f.key: i for i, f in enumerate(first)}
        results: list = [None] * len(futures)
        failed = []
        finished = as_completed(first, loop=self.client.loop)
        for f in finished:
            done(at[f.key])
            if len(at) < len(futures):  # a thread is free: the next task, before this result is fetched
                g = submit(len(at))
                at[g.key] = len(at)
                finished.add(g)
            if f.status == "finished":
                results[at[f.key]] = f.result()
            else:
                failed.append(at[f.key])
        if failed:
            futures[min(failed)].result()  # raises the task's error
        return results

    def imports(self, modules: Sequence[str]) -> None:
        """Every worker imports ``modules`` in its event loop, beside the task it runs (a local cluster's workers
        are started when it starts, before ``certify`` imports its solvers; on the census of issue 28 they
        imported them when the flow shards' shared part reached them: 0.85 s with both workers idle)."""
        with contextlib.suppress(Exception):  # a hint only
            self.client.run(_import_quietly, tuple(modules), wait=False)

    def close(self) -> None:
        self._kept.clear()
        if self._owned:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()


#: a Dask map hands each worker one task per thread ahead of those it runs when it has at least this many tasks
#: per thread of the cluster (:meth:`DaskExecutor.map`)
_AHEAD_TASKS = 8


#: the top-level packages whose imported modules the fork server of a local Dask cluster imports too
_OWN_PACKAGES = ("multirelease", "attacks", "publishers", "solver")


def start_fork_server(modules: Sequence[str] = ()) -> bool:
    """Start this process's fork server (``multiprocessing``'s ``forkserver``), which a local Dask cluster's
    workers are forked by, if it is not running, with ``distributed``, ``modules`` and every module of
    :data:`_OWN_PACKAGES` imported by now to import before it forks any process; whether there is one (not on
    Windows).  It is not waited for: it imports them while this process goes on, and the first process it forks
    waits for it - the command line starts it before its own imports when it is to start a local cluster
    (:mod:`multirelease.__main__`).  A server already running keeps what it imported (``distributed``'s own list
    of modules, set when it starts its workers, comes too late to change it)."""
    import sys

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    from multiprocessing import forkserver

    own = sorted(name for name in list(sys.modules) if name.partition(".")[0] in _OWN_PACKAGES)
    multiprocessing.get_context("forkserver").set_forkserver_preload(["distributed", *modules, *own])
    forkserver.ensure_running()
    return True


def _keepable(result: Any) -> bool:
    """A result :meth:`DaskExecutor.map` keeps on its worker (not a plain value nor an error)."""
    return result is not None and not isinstance(result, (bool, int, float, str, BaseException))


async def _import_quietly(modules: Sequence[str]) -> None:
    """``modules`` imported by a Dask worker in a thread of its own (its event loop goes on answering; a
    coroutine, which ``Client.run`` alone runs without being waited for)."""
    import asyncio

    await asyncio.to_thread(import_modules, modules)


def import_modules(modules: Sequence[str]) -> None:
    """Import ``modules`` ahead of the steps that need them; one that fails is left to the step that needs it,
    which says what is wrong in its turn."""
    import importlib

    for module in modules:
        with contextlib.suppress(Exception):  # left to the task that needs it, which says what is wrong
            importlib.import_module(module)


def executor_for(scheduler: str | None = None, processes: int | None = None) -> Executor:
    """The executor of a command line (``--scheduler``, ``--workers``): Dask at ``scheduler`` when given
    (``local``: a local Dask cluster of ``processes`` workers; a remote cluster has its own workers, so
    ``processes`` is refused with it), else ``processes`` local worker processes (``0``: this process only,
    :class:`InlineExecutor`; default: every core)."""
    if processes is not None and processes < 0:
        raise InputError(f"must be 0 (this process) or more workers, got {processes}", key="--workers")
    if scheduler:
        if processes is not None and scheduler != "local":
            raise InputError("a Dask cluster has its own workers: --workers goes with local processes or "
                             "--scheduler local", key="--workers")
        return DaskExecutor(scheduler, workers=processes)
    if processes == 0:
        return InlineExecutor()
    return LocalExecutor(processes)


_CURRENT: contextvars.ContextVar = contextvars.ContextVar("multirelease_executor", default=None)


def current_executor() -> Executor:
    """The executor the pipeline made current (:func:`use_executor`), else local processes."""
    ex = _CURRENT.get()
    return ex if ex is not None else LocalExecutor()


@contextlib.contextmanager
def use_executor(executor: Executor | None) -> Iterator[Executor | None]:
    """Make ``executor`` current for the engines inside the block (``None``: leave the current one)."""
    if executor is None:
        yield None
        return
    token = _CURRENT.set(executor)
    try:
        yield executor
    finally:
        _CURRENT.reset(token)


def chunks(sizes: Sequence[int], parts: int, *, min_size: int = 0) -> list[list[int]]:
    """Indices ``0..len(sizes)-1`` packed into at most ``parts`` lists of about equal total size (largest
    first, each to the lightest list; every list in ascending order): a deterministic partition, so a task
    list depends on the input only.  Items of size ``< min_size`` are left out (solved where they are)."""
    import heapq

    order = sorted((i for i in range(len(sizes)) if sizes[i] >= min_size), key=lambda i: (-sizes[i], i))
    parts = max(1, min(parts, len(order)))
    heap = [(0, k) for k in range(parts)]
    out: list[list[int]] = [[] for _ in range(parts)]
    for i in order:
        load, k = heapq.heappop(heap)
        out[k].append(i)
        heapq.heappush(heap, (load + sizes[i], k))
    return [sorted(x) for x in out if x]


def plan_chunks(sizes: Sequence[int], *, chunk_work: int, max_chunks: int, parallel_work: int,
                executor: Executor | None = None) -> tuple[list[list[int]], Executor]:
    """The chunks of one call and who solves them: :func:`chunks` of ``sizes`` into about ``total //
    chunk_work`` parts (at most ``max_chunks``; from the sizes alone, so the answers are the same whichever
    executor runs them), and ``executor`` (else :func:`current_executor`) - in this process instead when
    there is one chunk, or when local processes would get less than ``parallel_work`` in all."""
    total = sum(sizes)
    parts = chunks(sizes, max(1, min(max_chunks, total // chunk_work)))
    ex = executor_for_work(total, parallel_work, executor)
    return parts, (InlineExecutor() if len(parts) < 2 else ex)


def executor_for_work(total: int, parallel_work: int, executor: Executor | None = None) -> Executor:
    """Who runs the tasks of ``total`` work: ``executor`` (else :func:`current_executor`), or this process when
    local processes would get less than ``parallel_work`` in all (forking a pool costs more than that)."""
    ex = executor if executor is not None else current_executor()
    return InlineExecutor() if isinstance(ex, LocalExecutor) and total < parallel_work else ex
