"""Exact linkability, world counting, breach and linkage probabilities (the possible-worlds engine).

Definitions (see :mod:`solver.worlds.problem`):

* **linkability** of an individual: the values it takes in at least one possible world (Shmueli & Tassa,
  004, section 3: l-linkability);
* **linkage probability** ``|E[v, s]| / |E|`` (004, Definition 3.2, ``E`` = all possible worlds);
* **breach probability** ``p(o, s, k) = W_link(o, s, k) / W_total,k`` (Wong et al., 001, Definition 2): the
  fraction of worlds (series of tables) in which ``o`` has ``s`` in at least one table; and the localized
  ``q(o, s, j, k) = L_link(o, s, j, k) / W_total,k`` (001, section III.A) for table ``j`` alone.

A world is an assignment of values to individuals, counted once however many bijections realize it.  In
``persistent`` mode an individual has one value in every table, so ``p(o, s, k)`` equals the linkage
probability and ``q(o, s, j, k)`` as well (for every ``j`` where ``o`` is present).  In ``free`` mode the
tables are independent, the worlds of the series are the products of the worlds of each table, and::

    p(o, s, k) = 1 - prod_j (1 - q(o, s, j, k))                                                   (*)

which is Lemma 2 of 001 when every anonymized group is homogeneous (``q = n_{j,1} / n_j``).

Algorithms, per :class:`~solver.worlds.problem.Block` (worlds of different blocks combine freely):

1. **Linkability, exact.**  Flow propagation (:mod:`solver.worlds.reduce`): per release, the type-group
   edges in some perfect b-matching on candidate values (:func:`solver.worlds.matching.matchable_edges`, strongly
   connected components), to a fixpoint over the releases; the surviving edges split each block into
   independent sub-blocks.  Where no type with two candidate values is present in two releases, the
   candidates are the linkable values; elsewhere (persistent values coupled across releases) CP-SAT decides
   on the *type-world* model below (:func:`solver.worlds.linkability.decide_coupled_all`).  Counting and sampling
   work on the sub-blocks (their worlds multiply).
2. **Counting, exact.**  A *type-world* is the matrix ``m[t, v]``: how many members of type ``t`` take value
   ``v``.  It is realizable iff, for every release, the integral transport of the ``m[., v]`` into the
   groups of value ``v`` along the consistency edges saturates every group (CP-SAT: integer flows per
   release, one ``m`` shared by all releases).  The individual-level worlds of a type-world number
   ``prod_t multinomial(n_t; m[t, .])``, and a given member of ``t`` takes ``v`` in a fraction
   ``m[t, v] / n_t`` of them.  So

   * a block that is one type adjacent to all its groups (a homogeneous anonymized group, or classes
     identical in every release) has the closed form ``N = n! / prod_v c_v!``, linkage ``c_v / n``;
   * otherwise the distinct type-worlds are enumerated with CP-SAT (``num_workers = 1``; each solution is
     forbidden before the next solve), up to ``max_type_worlds`` per block (default 5,000) and
     ``time_limit`` seconds per block;

   every count is an exact Python integer, every probability an exact :class:`fractions.Fraction`.
3. **Beyond the limits: an estimate, labelled as one.**  A Markov chain on the block's individual-level
   worlds (moves: swap the values of two individuals, or change one individual's value; a move is kept iff
   every release still has a perfect matching - a max flow per changed value).  Proposals are symmetric, so
   the uniform distribution over the worlds reachable from the start is stationary; irreducibility is not
   proved.  ``samples`` recorded states after a burn-in; a 95% batch-means confidence interval per
   ``(individual, value)``.  Proven bounds still hold: 0 for a value that is not linkable, 1 for an
   individual linkable to a single value.

Limits (measured, ``benchmarks/bench_worlds.py``):

* one release (and every ``free`` sequence): linkability is polynomial - 2,000 Adult records under Mondrian in
  0.2 s, 30,162 records over two releases in a few seconds; counting is closed-form for homogeneous groups
  (every Mondrian class) and enumerated otherwise, exact up to ``max_type_worlds`` type-worlds per block;
* persistent values over several releases: flows, then CP-SAT on the coupled sub-blocks only.  The anonypyx
  grid (``benchmarks/bench_anonypyx_grid.py``: up to 2,000 Adult records, 2-5 Mondrian releases of a random
  80%) is decided exactly, each instance in under 2 s; before the flow propagation, blocks of a few hundred
  types took 5 s and more.  Still out of reach: one block of 2,000 Adult records under two Mondrian releases
  on *different* QI subsets (``bench_worlds.py``, ``linkability_two_releases_2000``: 1,059 types, all of them
  coupled, 4,858 candidate pairs) is *not* decided within 60 s (the first world alone takes CP-SAT about 15 s
  on one worker) - the undecided pairs are reported linkable, ``linkability_exact`` is false, and the attack
  labels ``min_linkability`` an upper bound.

API (stable; used by the attacks, the publishers and the tests)::

    problem = solver.worlds.problem.build_problem(view)                 # or problem_from_arrays(...)
    a = solver.worlds.analysis.analyze(problem)                         # WorldsAnalysis
    a.linkable[i, v], a.breach[i, v], a.localized[j, i, v]       # per individual i, value v, release j
    a.breach_fraction(i, v), a.localized_fraction(j, i, v)       # exact Fractions (None if estimated)
    a.exact[i, v], a.low / a.high (proven), a.ci_low / a.ci_high (95% CI of estimates)
    solver.worlds.witness.witness_world(problem, block, i, v)          # a world where i has v
    solver.worlds.counting.brute_force(problem)                         # oracle for tiny instances

Entry point: :func:`solver.worlds.analysis.analyze`.  Reference implementation for tests: :func:`brute_force`
(:mod:`solver.worlds.oracle`).  Linkability and the type-world model live in :mod:`solver.worlds.linkability`, the
sampler in :mod:`solver.worlds.sampling`; this module counts and combines.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from multirelease.errors import InputError

from .linkability import DEFAULT_TIME_LIMIT, _TypeWorldModel, block_linkability
from .problem import Block, WorldsProblem, no_world_message
from .oracle import brute_force
from .sampling import sample_block

__all__ = ["BlockCounts", "block_linkability", "count_block", "brute_force", "breach_closed_form",
           "multinomial", "DEFAULT_MAX_TYPE_WORLDS"]

#: type-worlds enumerated per block before counting falls back to sampling
DEFAULT_MAX_TYPE_WORLDS = 5_000


def multinomial(n: int, parts: Sequence[int]) -> int:
    """``n! / prod(parts!)`` (exact; ``sum(parts) == n``)."""
    out, left = 1, n
    for k in parts:
        out *= math.comb(left, int(k))
        left -= int(k)
    return out


def breach_closed_form(sizes: Sequence[int], counts: Sequence[int]) -> Fraction:
    """Lemma 2 of Wong et al. (001): ``(prod n_j - prod (n_j - n_{j,1})) / prod n_j`` for an individual whose
    anonymized group in table ``j`` has ``n_j`` records, ``n_{j,1}`` of them with the value ``s_1``.

    Examples
    --------
    >>> breach_closed_form([2, 2], [1, 1]), breach_closed_form([4, 4], [1, 1])
    (Fraction(3, 4), Fraction(7, 16))
    """
    total = math.prod(int(n) for n in sizes)
    miss = math.prod(int(n) - int(c) for n, c in zip(sizes, counts))
    return Fraction(total - miss, total)


# ---------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class BlockCounts:
    """What the engine knows about one block.

    ``linkable[t, v]``: a member of type ``t`` takes value ``v`` in some world (exact).  When ``exact``:
    ``worlds`` distinct worlds (a Python int) and ``linked[t, v]`` of them give a given member of ``t`` the
    value ``v``.  Otherwise ``estimate[t, v]`` (a sampled fraction) with its 95% interval ``ci[t, v]``.
    ``method``: ``closed_form``, ``product``, ``enumeration`` or ``sampling``.  ``origin``: the connected
    component of the consistency graph this (pruned, independent) block was split from, for witness worlds.
    """

    block: Block
    linkable: np.ndarray
    exact: bool
    method: str
    worlds: int | None = None
    linked: list | None = None  # T lists of V Python ints
    estimate: np.ndarray | None = None
    ci: np.ndarray | None = None  # (T, V, 2)
    type_worlds: int = 0
    samples: int = 0
    seconds: float = 0.0
    origin: Block | None = None

    def fraction(self, t: int, v: int) -> Fraction | None:
        """Exact ``linked / worlds`` of a member of type ``t`` and value ``v`` (``None`` if not exact)."""
        if not self.exact:
            lo, hi = self.interval(t, v)
            return Fraction(int(lo)) if lo == hi else None  # proven 0 or 1
        return Fraction(self.linked[t][v], self.worlds)

    def probability(self, t: int, v: int) -> float:
        if self.exact:
            return self.linked[t][v] / self.worlds if self.worlds else 0.0
        return float(self.estimate[t, v])

    def interval(self, t: int, v: int) -> tuple[float, float]:
        """Proven bounds of the fraction (a point when exact)."""
        if self.exact:
            p = self.probability(t, v)
            return p, p
        if not self.linkable[t, v]:
            return 0.0, 0.0
        if self.linkable[t].sum() == 1:
            return 1.0, 1.0
        return 0.0, 1.0


# ---------------------------------------------------------------------- counting
def count_block(problem: WorldsProblem, block: Block, linkable: np.ndarray, *,
                max_type_worlds: int = DEFAULT_MAX_TYPE_WORLDS, time_limit: float = DEFAULT_TIME_LIMIT,
                samples: int = 2_000, rng: np.random.Generator | None = None) -> BlockCounts:
    """Count the block's worlds exactly (closed form or enumeration), else estimate (see module docstring)."""
    t0 = time.perf_counter()
    V = problem.n_values
    if block.is_complete():
        counts = None
        n = int(block.type_count[0])
        for k in range(len(block.releases)):
            if not block.present[0, k]:
                continue
            c = np.bincount(block.group_value[k], weights=block.group_count[k], minlength=V).astype(np.int64)
            if counts is not None and not np.array_equal(c, counts):
                raise InputError(no_world_message(problem, block))
            counts = c
        worlds = multinomial(n, counts.tolist())
        linked = [[worlds * int(c) // n for c in counts.tolist()]]
        return BlockCounts(block, linkable, True, "closed_form", worlds=worlds, linked=linked, type_worlds=1,
                           seconds=time.perf_counter() - t0)
    if len(block.releases) > 1 and not _coupled(block, linkable):
        by_release = _count_by_release(problem, block, linkable, max_type_worlds=max_type_worlds,
                                       time_limit=time_limit, samples=samples, rng=rng)
        if by_release is not None:
            return by_release
    model = _TypeWorldModel(block, linkable)
    n_t = block.type_count
    worlds = 0
    linked = [[0] * V for _ in range(block.n_types)]
    found = 0
    deadline = time.perf_counter() + time_limit
    complete = False
    while found < max_type_worlds:
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        status, m, _ = model.solve(left)
        if status == "infeasible":
            complete = True
            break
        if status == "unknown":
            break
        found += 1
        weight = 1
        rows = [[0] * V for _ in range(block.n_types)]
        for (t, v), c in m.items():
            rows[t][v] = c
        for t in range(block.n_types):
            weight *= multinomial(int(n_t[t]), rows[t])
        worlds += weight
        for t in range(block.n_types):
            for v in range(V):
                if rows[t][v]:
                    linked[t][v] += weight * rows[t][v] // int(n_t[t])
        if not model.vars:  # every type's values fixed: one type-world
            complete = True
            break
        model.model.add_forbidden_assignments(model.vars, [tuple(m[k] for k in model.keys)])
    if complete:
        if found == 0:
            raise InputError(no_world_message(problem, block))
        return BlockCounts(block, linkable, True, "enumeration", worlds=worlds, linked=linked, type_worlds=found,
                           seconds=time.perf_counter() - t0)
    est, ci, n_samples = sample_block(problem, block, linkable, samples=samples,
                                       rng=rng if rng is not None else np.random.default_rng(0))
    return BlockCounts(block, linkable, False, "sampling", estimate=est, ci=ci, type_worlds=found,
                       samples=n_samples, seconds=time.perf_counter() - t0)


def _coupled(block: Block, linkable: np.ndarray) -> bool:
    """A type with two or more linkable values is present in two or more releases."""
    return bool(((linkable.sum(axis=1) >= 2) & (block.present.sum(axis=1) >= 2)).any())


def _count_by_release(problem: WorldsProblem, block: Block, linkable: np.ndarray, **kw) -> BlockCounts | None:
    """Counts of an uncoupled block as a product over its releases (``None`` when a release is beyond the
    budget).

    Uncoupled (:mod:`solver.worlds.reduce`): every type with several linkable values is present in one
    release only, every other type has its one value everywhere.  A world is then one choice per release of
    the values of that release's free types, each release consistent on its own, so ``|E| = prod_k |E_k|`` and
    a member of a type present at release ``k`` takes ``v`` in ``|E_k[t, v]| * prod_{j != k} |E_j|`` worlds
    (multinomial products over aggregated types inside each release: :func:`count_block` of the release)."""
    t0 = time.perf_counter()
    V = problem.n_values
    T = block.n_types
    worlds = 1
    parts = []
    for k, r in enumerate(block.releases):
        types = np.flatnonzero(block.present[:, k])
        pos = np.full(T, -1, dtype=np.int64)
        pos[types] = np.arange(len(types))
        e = block.edges[k]
        sub = Block(releases=(r,), members=tuple(block.members[t] for t in types), groups=(block.groups[k],),
                    edges=(np.column_stack([pos[e[:, 0]], e[:, 1]]).reshape(-1, 2),),
                    present=np.ones((len(types), 1), dtype=bool), group_count=(block.group_count[k],),
                    group_value=(block.group_value[k],))
        bc = count_block(problem, sub, linkable[types], **kw)
        if not bc.exact:
            return None
        parts.append((types, bc))
        worlds *= bc.worlds
    linked = [[0] * V for _ in range(T)]
    done = np.zeros(T, dtype=bool)
    for types, bc in parts:
        rest = worlds // bc.worlds
        for i, t in enumerate(types.tolist()):
            if not done[t]:
                linked[t] = [x * rest for x in bc.linked[i]]
                done[t] = True
    return BlockCounts(block, linkable, True, "product", worlds=worlds, linked=linked,
                       type_worlds=sum(bc.type_worlds for _, bc in parts), seconds=time.perf_counter() - t0)


# ---------------------------------------------------------------------- the whole problem
