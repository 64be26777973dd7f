"""The ``multirelease`` command (and ``python -m multirelease``): :func:`multirelease.cli.main`, preceded, when
the command line starts a local Dask cluster (``--scheduler local``), by the start of the fork server its
workers are forked by (:func:`solver.executor.start_fork_server`), before the command line's own imports.

The fork server is a fresh interpreter that imports ``distributed`` and what the workers' tasks are made of
(:data:`_WORKER_MODULES`) before it forks a worker (1.1 s on 2 cores); started first, it imports them beside
this process's imports (typer, rich, pandas: 0.8 s) instead of after them, and the cluster is up 0.3 s sooner
(issue 28).  The command line is only looked at, not parsed: a false hint starts a server that is never used, a
missed one starts it later."""
from __future__ import annotations

import sys
from typing import Sequence

#: what the fork server imports beside ``distributed``: the pipeline, what the first tasks (reading the input) run
#: - not the command line itself (typer, rich), which no worker runs
_WORKER_MODULES = ("multirelease.pipeline",)


def starts_local_cluster(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` asks for a local Dask cluster (``--scheduler local`` or
    ``--scheduler=local``)."""
    args = list(argv)
    return "--scheduler=local" in args or any(a == "--scheduler" and b == "local" for a, b in zip(args, args[1:]))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if starts_local_cluster(args):
        from solver.executor import start_fork_server

        start_fork_server(_WORKER_MODULES)
    from multirelease.cli import main as command

    return command(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
