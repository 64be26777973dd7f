"""One independent component of the possible-worlds problem, solved from plain data (for executors).

The blocks of :mod:`solver.worlds` (and the sub-blocks of :mod:`solver.worlds_reduce`) are independent: the
worlds of the whole problem are the products of theirs (Shmueli & Tassa, 004, Definition 3.1; Wong et al.,
001, Definition 1).  :func:`solve_component` decides one of them - linkability (flows, CP-SAT only for the
coupling) and, on request, its exact counts - from picklable arguments only (a :class:`~solver.worlds.Block`
is numpy arrays and tuples), so that a process pool or a Dask cluster can run it; the result is plain data
too, the same whichever process computed it.

    >>> from solver.worlds_component import solve_component          # doctest: +SKIP
    >>> out = executor.submit(solve_component, block, problem.n_values).result()   # doctest: +SKIP
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .linkability import DEFAULT_TIME_LIMIT, decide_coupled_all
from .worlds import Block
from .worlds_reduce import reduce_block

__all__ = ["solve_component"]


def _plain_problem(block: Block, n_values: int) -> SimpleNamespace:
    """What the engines read of a problem when solving one block: the number of values, release indices and
    individual names for messages (global indices stand for names)."""
    n_rel = max(block.releases) + 1 if block.releases else 0
    top = max((int(m.max()) for m in block.members if len(m)), default=-1) + 1
    return SimpleNamespace(n_values=n_values, releases=[SimpleNamespace(index=r + 1) for r in range(n_rel)],
                           individuals=np.array([str(i) for i in range(top)], dtype=object))


def solve_component(block: Block, n_values: int, *, time_limit: float = DEFAULT_TIME_LIMIT, count: bool = False,
                    max_type_worlds: int = 5_000, samples: int = 2_000, seed: int = 0) -> dict:
    """Linkability (and, with ``count``, the world counts) of one block, as plain data.

    Returns ``{"linkable": (T, V) bool, "linkability_exact": bool, "proven": (T, V) bool, "parts": [...]}``:
    ``linkable[t]`` are the values the members of type ``t`` take in some world (an upper set with
    ``proven`` its proven part when ``linkability_exact`` is false); ``parts`` lists the independent
    sub-blocks, each ``{"types": [...], "exact": bool, "worlds": int | None, "linked": [[int]] | None,
    "method": str}`` (counts only with ``count``; ``worlds`` is ``None`` when the part was estimated).
    Raises :class:`~multirelease.errors.InputError` when the block has no world."""
    from .counting import count_block  # counting imports this module's siblings: import late

    problem = _plain_problem(block, n_values)
    where = {int(m[0]): t for t, m in enumerate(block.members)}
    subs = reduce_block(problem, block)
    coupled = [i for i, s in enumerate(subs) if s.coupled]
    decided = dict(zip(coupled, decide_coupled_all(problem, [(subs[i].block, subs[i].cand) for i in coupled],
                                                   time_limit=time_limit))) if coupled else {}
    T = block.n_types
    linkable = np.zeros((T, n_values), dtype=bool)
    proven = np.zeros((T, n_values), dtype=bool)
    exact = True
    parts = []
    rng = np.random.default_rng(seed)
    for i, sub in enumerate(subs):
        rows = [where[int(m[0])] for m in sub.block.members]
        lk, ok, _, pr = decided[i] if sub.coupled else (sub.cand, True, None, sub.cand)
        linkable[rows] = lk
        proven[rows] = pr
        exact &= ok
        part = {"types": rows, "exact": bool(ok), "worlds": None, "linked": None, "method": "linkability_only"}
        if count:
            bc = count_block(problem, sub.block, lk, max_type_worlds=max_type_worlds, time_limit=time_limit,
                             samples=samples, rng=rng)
            part.update(exact=bool(ok and bc.exact), method=bc.method)
            if bc.exact:
                part.update(worlds=int(bc.worlds), linked=[[int(x) for x in row] for row in bc.linked])
        parts.append(part)
    return {"linkable": linkable, "linkability_exact": bool(exact), "proven": proven, "parts": parts}
