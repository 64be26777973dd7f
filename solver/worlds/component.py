"""One independent component of the possible-worlds problem, solved from plain data (for executors).

The blocks of :mod:`solver.worlds.problem` (and the sub-blocks of :mod:`solver.worlds.reduce`) are independent: the
worlds of the whole problem are the products of theirs (Shmueli & Tassa, 004, Definition 3.1; Wong et al.,
001, Definition 1).  :func:`solve_component` decides one of them - linkability (flows, CP-SAT only for the
coupling) and, on request, its exact counts - from picklable arguments only (a :class:`~solver.worlds.problem.Block`
is numpy arrays and tuples), so that a process pool or a Dask cluster can run it; the result is plain data
too, the same whichever process computed it.

    >>> from solver.worlds.component import solve_component          # doctest: +SKIP
    >>> out = executor.submit(solve_component, block, problem.n_values).result()   # doctest: +SKIP

:func:`solve_blocks` is how :func:`solver.worlds.analysis.analyze` solves every block: the blocks are packed into
*chunks* (:func:`solver.executor.chunks`, from the blocks' sizes alone) and each chunk is one task of the
current executor (:mod:`solver.executor`: this process, local worker processes, or a Dask cluster) -
:func:`solve_chunk` prunes its blocks together (:func:`solver.worlds.reduce.reduce_blocks_tagged`), decides
their coupled sub-blocks in one CP-SAT model (:func:`solver.worlds.linkability.decide_coupled_all`) and counts every
sub-block (:func:`solver.worlds.counting.count_block`).  A chunk's answer depends on the chunk only (the sampler of
a chunk draws from its own generator, seeded from the caller's), and the chunks depend on the input only, so
the figures are the same byte for byte whichever executor ran them.  A small input is one chunk, solved in
this process with the caller's generator: exactly the single-process computation.  The chunks of a call
share one wall-clock deadline for deciding their coupled sub-blocks, ``time_limit`` seconds after the call
(one budget for all coupled blocks, as in one process); counting keeps its budget per block.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from multirelease.errors import InputError

from .counting import BlockCounts, count_block
from .linkability import DEFAULT_TIME_LIMIT, decide_coupled_all
from .problem import Block, WorldsProblem
from .reduce import reduce_block, reduce_blocks_tagged

__all__ = ["solve_component", "solve_blocks", "solve_chunk", "ChunkTask"]

#: blocks' total size (types + consistency edges) per chunk (one task of the executor), and the most chunks.
#: Below two chunks' worth the input is one chunk, solved in this process exactly as a single process would.
_CHUNK_WORK = 50_000
_MAX_CHUNKS = 64
#: total size from which local worker processes solve the chunks (a Dask executor takes any input of two
#: chunks or more).  Flow-decided blocks are cheap: a census of 10^5 rows, two releases, free values
#: (13,550 blocks, 44,688 units in 9 forced chunks) took 8.7 s in two worker processes against 9.2 s in this
#: process (2 loaded cores), with more CPU in this process (3.05 s against 2.25 s: pickling).  The full
#: Adult table over two releases is 30,000 units: one chunk
_PARALLEL_WORK = 500_000
#: the same threshold for persistent values, whose coupled parts CP-SAT decides (seconds per chunk, not
#: milliseconds): the custodian's shape of issue 24 at 30,000 rows, month 3 (about 100,000 units, two
#: chunks) spends 28 s and 19 s in them in one process
_PARALLEL_WORK_PERSISTENT = 50_000


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


@dataclass(eq=False)
class ChunkTask:
    """One task: blocks (with their positions in the whole problem), what the engines read of the problem
    (:func:`_plain_of`), the budgets, and the generator of the chunk's sampler."""

    positions: list
    blocks: list
    problem: Any
    count: bool
    max_type_worlds: int
    time_limit: float
    samples: int
    rng: Any
    deadline: float | None = None  # wall clock (time.time()) shared by the chunks of one call, else None
    scope: str = "full"  # linkability decided for every pair, or for min_linkability and disclosed (linkability)


def _plain_of(problem: WorldsProblem, blocks: list[Block]) -> SimpleNamespace:
    """What the engines read of the problem while solving these blocks: the number of values, the release
    indices and the names of the individuals an error message can name (the first member of every type), so
    that a task travels light and a worker's messages are this process's."""
    names = {int(m[0]): problem.individuals[int(m[0])] for b in blocks for m in b.members}
    allowed = getattr(problem, "allowed", None)
    if allowed is not None:  # the rows of this chunk's types only (reduce.allowed_rows reads a type's first member)
        allowed = {i: allowed[i] for i in names}
    return SimpleNamespace(n_values=problem.n_values, mode=problem.mode, individuals=names, allowed=allowed,
                           releases=[SimpleNamespace(index=g.index) for g in problem.releases])


def _settle(problem, sub, decided, *, count: bool, max_type_worlds: int, time_limit: float, samples: int, rng):
    """One sub-block's linkability and counts: ``(BlockCounts, linkable, linkability exact, proven)``."""
    block = sub.block
    if sub.coupled:
        lk, lk_exact, _, proven = decided
    else:
        lk, lk_exact, proven = sub.cand, True, sub.cand
    if count:
        bc = count_block(problem, block, lk, max_type_worlds=max_type_worlds, time_limit=time_limit,
                         samples=samples, rng=rng)
    else:
        bc = BlockCounts(block, lk, False, "linkability_only")
    if not lk_exact and bc.exact:
        # the enumeration over a superset of the linkable pairs is complete (the type-world model checks
        # realizability whatever the candidates): its worlds decide linkability exactly
        lk = np.array([[x > 0 for x in row] for row in bc.linked], dtype=bool)
        proven = lk.copy()
        lk_exact = True
        bc = BlockCounts(block, lk, True, bc.method, worlds=bc.worlds, linked=bc.linked,
                         type_worlds=bc.type_worlds, seconds=bc.seconds)
    elif not lk_exact:
        # undecided pairs are reported linkable; proven are those realized by a world found
        proven = proven.copy()
        if bc.estimate is not None:
            proven |= bc.estimate > 0  # the sampler's states are worlds
        bc = BlockCounts(block, lk, False, bc.method, estimate=bc.estimate, ci=bc.ci, samples=bc.samples)
    return bc, lk, lk_exact, proven


def solve_chunk(task: ChunkTask) -> list[tuple]:
    """Every sub-block of a chunk's blocks (module level: it pickles): per sub-block, in the order of
    :func:`solver.worlds.reduce.reduce_blocks_tagged`, ``(block position, BlockCounts, linkable, linkability
    exact, proven)``.  Raises :class:`~multirelease.errors.InputError` for a block without a world."""
    problem = task.problem
    tagged = reduce_blocks_tagged(problem, task.blocks)
    coupled = [i for i, (_, sub) in enumerate(tagged) if sub.coupled]
    left = task.time_limit if task.deadline is None else max(task.deadline - time.time(), 1e-3)
    # the least linkability among the individuals flows decided bounds what the coupled parts must decide
    ceiling = min((int(sub.cand.sum(axis=1).min()) for _, sub in tagged if not sub.coupled and sub.block.n_types),
                  default=None)
    decided = dict(zip(coupled, decide_coupled_all(problem, [(tagged[i][1].block, tagged[i][1].cand)
                                                             for i in coupled],
                                                   time_limit=left, scope=task.scope,
                                                   ceiling=ceiling))) if coupled else {}
    out = []
    for i, (pos, sub) in enumerate(tagged):
        bc, lk, lk_exact, proven = _settle(problem, sub, decided.get(i), count=task.count,
                                           max_type_worlds=task.max_type_worlds, time_limit=task.time_limit,
                                           samples=task.samples, rng=task.rng)
        out.append((task.positions[pos], bc, lk, lk_exact, proven))
    return out


def block_size(block: Block) -> int:
    """The work measure of a block: its types plus its consistency edges."""
    return block.n_types + sum(len(e) for e in block.edges)


def solve_blocks(problem: WorldsProblem, blocks: list[Block], *, count: bool = True,
                 max_type_worlds: int, time_limit: float, samples: int, rng: np.random.Generator,
                 executor=None, scope: str = "full") -> list[tuple]:
    """Every sub-block of ``blocks`` (the problem's blocks), through the executor (module docstring):
    ``(block position, BlockCounts, linkable, linkability exact, proven)`` per sub-block, in the order of
    :func:`solver.worlds.reduce.reduce_blocks_tagged` over all the blocks.  ``scope``: the linkability decided
    (:func:`solver.worlds.linkability.decide_coupled_all`; ``"min"`` only without counting)."""
    if count and scope != "full":
        raise ValueError("world counting needs the full linkability (scope 'full')")
    from solver.executor import InlineExecutor, plan_chunks

    parallel = _PARALLEL_WORK_PERSISTENT if getattr(problem, "mode", None) == "persistent" else _PARALLEL_WORK
    parts, ex = plan_chunks([block_size(b) for b in blocks], chunk_work=_CHUNK_WORK, max_chunks=_MAX_CHUNKS,
                            parallel_work=parallel, executor=executor)
    deadline = None
    if len(parts) == 1:  # one chunk: the whole problem, the caller's generator (the single-process run)
        rngs = [rng]
        plain = [problem]
    else:
        deadline = time.time() + time_limit
        rngs = [np.random.default_rng(int(s)) for s in rng.integers(0, 2 ** 63 - 1, size=len(parts))]
        plain = [problem if isinstance(ex, InlineExecutor) else _plain_of(problem, [blocks[i] for i in part])
                 for part in parts]
    tasks = [ChunkTask(part, [blocks[i] for i in part], plain[c], count, max_type_worlds, time_limit, samples,
                       rngs[c], deadline, scope) for c, part in enumerate(parts)]
    try:
        answers = [a for out in ex.map(solve_chunk, tasks) for a in out]
    except InputError:
        if len(tasks) == 1:
            raise
        # a block without a world: the error names the block one chunk would (the first in the blocks'
        # order), whichever chunk found one first - the whole problem in this process, to its first error
        solve_chunk(ChunkTask(list(range(len(blocks))), list(blocks), problem, count, max_type_worlds, time_limit,
                              samples, np.random.default_rng(0), scope=scope))
        raise
    # the order of reduce_blocks_tagged over all blocks: groups of the same releases in order of first
    # appearance, then block position, then each block's own order (kept by the stable sort)
    rank: dict = {}
    for b in blocks:
        rank.setdefault(b.releases, len(rank))
    return sorted(answers, key=lambda a: (rank[blocks[a[0]].releases], a[0]))
