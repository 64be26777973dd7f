"""The possible-worlds engine's entry point: :func:`analyze` a whole problem, block by block.

The engine's definitions and algorithms are in :mod:`solver.worlds.counting` (one block: linkability, counting,
sampling); :mod:`solver.worlds.component` solves the blocks as tasks any executor runs.  This module merges
their figures into one :class:`WorldsAnalysis` per problem: linkability, the breach probability ``p(o, s, k)``
of Wong et al. (001, Definition 2) and the localized ``q(o, s, j, k)`` (001, section III.A), with proven bounds
and confidence intervals where a block was sampled.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from .counting import DEFAULT_MAX_TYPE_WORLDS
from .linkability import DEFAULT_TIME_LIMIT
from .problem import WorldsProblem
from .component import solve_blocks

__all__ = ["WorldsAnalysis", "analyze"]


@dataclass(eq=False)
class WorldsAnalysis:
    """Per-individual results of :func:`analyze` (``N`` individuals, ``V`` values, ``R`` releases).

    Attributes
    ----------
    linkable : (N, V) bool - persistent: in some world; free: in some world of some table.
    breach : (N, V) float - ``p(o, s, k)`` (an estimate where ``exact`` is false).
    localized : (R, N, V) float - ``q(o, s, j, k)``; NaN where ``o`` is absent from table ``j``.
    exact : (N, V) bool - the breach value is exact.
    low, high : (N, V) float - proven bounds of the breach (equal to it when exact).
    localized_low, localized_high : (R, N, V) float - proven bounds of ``localized``.
    linkable_low : (N, V) bool - pairs proven linkable; ``linkable`` is their superset when
        ``linkability_exact`` is false (undecided pairs are reported linkable), else equal.
    ci_low, ci_high : (N, V) float - 95% confidence interval of the estimate (equal to it when exact).
    """

    problem: WorldsProblem
    blocks: list
    linkable: np.ndarray
    breach: np.ndarray
    localized: np.ndarray
    exact: np.ndarray
    low: np.ndarray
    high: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    linkability_exact: bool
    block_of: np.ndarray  # (R', N) block index per spanned release slot (persistent: R' = 1)
    type_of: np.ndarray  # (R', N) type index within that block
    seconds: float = 0.0
    linkable_low: np.ndarray | None = None  # (N, V) pairs proven linkable (a world realizes them)
    localized_low: np.ndarray | None = None  # (R, N, V) proven bounds of ``localized`` (NaN where absent)
    localized_high: np.ndarray | None = None
    #: what was decided of linkability: ``"full"`` (every pair) or ``"min"`` (:func:`analyze`)
    linkability_scope: str = "full"

    @property
    def linkage(self) -> np.ndarray:
        """``|E[v, s]| / |E|`` (Definition 3.2 of 004): equal to the breach in both modes (module docstring)."""
        return self.breach

    @property
    def all_exact(self) -> bool:
        return bool(self.exact.all())

    def breach_fraction(self, i: int, v: int) -> Fraction | None:
        """The exact breach probability of individual ``i`` and value ``v`` as a fraction (``None`` if estimated)."""
        if not self.exact[i, v]:
            return None
        miss = Fraction(1)
        for slot in range(self.block_of.shape[0]):
            b = self.block_of[slot, i]
            if b < 0:
                continue
            miss *= 1 - self.blocks[b].fraction(int(self.type_of[slot, i]), v)
        return 1 - miss

    def localized_fraction(self, j: int, i: int, v: int) -> Fraction | None:
        """Exact ``q(o, s, j, k)`` (``j`` 0-based release position)."""
        slot = j if self.problem.mode == "free" else 0
        b = self.block_of[slot, i]
        if b < 0 or (self.problem.mode == "persistent" and i not in set(self.problem.releases[j].people.tolist())):
            return Fraction(0)
        return self.blocks[b].fraction(int(self.type_of[slot, i]), v)


def analyze(problem: WorldsProblem, *, max_type_worlds: int = DEFAULT_MAX_TYPE_WORLDS,
            time_limit: float = DEFAULT_TIME_LIMIT, samples: int = 2_000, count: bool = True,
            rng: np.random.Generator | None = None, linkability: str = "full") -> WorldsAnalysis:
    """Linkability, breach / linkage and localized probabilities of every individual and value.

    Parameters
    ----------
    problem : WorldsProblem
    max_type_worlds, time_limit : per block, the enumeration budget before sampling (see module docstring);
        ``time_limit`` is also the CP-SAT budget of the coupled linkability decision, all blocks together.
    samples : recorded states of the sampler (blocks beyond the budget only).
    count : when false, only linkability is computed (``breach`` etc. are NaN).
    rng : generator of the sampler (default seeded 0).
    linkability : ``"full"`` decides every (individual, value) pair; ``"min"`` (without ``count``) what the
        least linkability and the disclosed individuals need (:func:`solver.worlds.linkability.decide_coupled_all`):
        ``linkable`` is then an upper set for the individuals above the least linkability of their part, and
        ``linkability_exact`` says that this scope was decided.

    Examples
    --------
    >>> from solver.worlds.problem import build_problem            # doctest: +SKIP
    >>> a = analyze(build_problem(view))                   # doctest: +SKIP
    >>> a.breach.max(), a.linkable.sum(axis=1).min()       # doctest: +SKIP
    """
    t0 = time.perf_counter()
    problem.check_sizes()
    rng = rng if rng is not None else np.random.default_rng(0)
    N, V, R = problem.n_individuals, problem.n_values, len(problem.releases)
    slots = R if problem.mode == "free" else 1
    block_of = np.full((slots, N), -1, dtype=np.int64)
    type_of = np.full((slots, N), -1, dtype=np.int64)
    results = []
    linkable = np.zeros((N, V), dtype=bool)
    linkable_low = np.zeros((N, V), dtype=bool)
    linkability_exact = True
    blocks = problem.blocks()
    # every block through the executor (solver.worlds.component: chunks of blocks, the same figures whoever
    # solves them); sub-blocks in the order of reduce_blocks
    solved = solve_blocks(problem, blocks, count=count, max_type_worlds=max_type_worlds, time_limit=time_limit,
                          samples=samples, rng=rng, scope=linkability)
    for b, (parent, bc, lk, lk_exact, proven) in enumerate(solved):
        block = bc.block
        linkability_exact &= lk_exact
        results.append(replace(bc, origin=blocks[parent]))
        slot = block.releases[0] if problem.mode == "free" else 0
        for t, mem in enumerate(block.members):
            block_of[slot, mem] = b
            type_of[slot, mem] = t
            linkable[mem] |= lk[t]
            linkable_low[mem] |= proven[t]
    breach = np.full((N, V), np.nan)
    localized = np.full((R, N, V), np.nan)
    loc_low, loc_high = np.full((R, N, V), np.nan), np.full((R, N, V), np.nan)
    exact = np.zeros((N, V), dtype=bool)
    low, high = np.zeros((N, V)), np.zeros((N, V))
    ci_low, ci_high = np.zeros((N, V)), np.zeros((N, V))
    if count:
        miss = np.ones((N, V))
        miss_low = np.ones((N, V))  # from the proven upper bounds of each table
        miss_high = np.ones((N, V))
        miss_cl, miss_ch = np.ones((N, V)), np.ones((N, V))
        exact[:] = True
        for slot in range(slots):
            # one row per (block, type): q, proven bounds, confidence interval
            rows_q, rows_lo, rows_hi, rows_cl, rows_ch = [], [], [], [], []
            row_of = np.full(N, -1, dtype=np.int64)
            for i_b in np.unique(block_of[slot][block_of[slot] >= 0]):
                bc = results[i_b]
                for t, mem in enumerate(bc.block.members):
                    if bc.exact:
                        w = bc.worlds
                        q = np.array([x / w for x in bc.linked[t]]) if w else np.zeros(V)
                        lo_ = hi_ = cl = ch = q
                    else:
                        q = bc.estimate[t] if bc.estimate is not None else np.full(V, np.nan)
                        bounds = np.array([bc.interval(t, v) for v in range(V)])
                        lo_, hi_ = bounds[:, 0], bounds[:, 1]
                        cl = bc.ci[t, :, 0] if bc.ci is not None else lo_
                        ch = bc.ci[t, :, 1] if bc.ci is not None else hi_
                    row_of[mem] = len(rows_q)
                    rows_q.append(q)
                    rows_lo.append(lo_)
                    rows_hi.append(hi_)
                    rows_cl.append(cl)
                    rows_ch.append(ch)
            if not rows_q:
                continue
            ind = np.flatnonzero(row_of >= 0)
            r_ = row_of[ind]
            Q, LO, HI = np.array(rows_q)[r_], np.array(rows_lo)[r_], np.array(rows_hi)[r_]
            CL, CH = np.array(rows_cl)[r_], np.array(rows_ch)[r_]
            exact[ind] &= LO == HI
            miss[ind] *= 1 - Q
            miss_low[ind] *= 1 - HI
            miss_high[ind] *= 1 - LO
            miss_cl[ind] *= 1 - CH
            miss_ch[ind] *= 1 - CL
            if problem.mode == "free":
                localized[slot, ind] = Q
                loc_low[slot, ind] = LO
                loc_high[slot, ind] = HI
        breach = 1 - miss
        low, high = 1 - miss_high, 1 - miss_low
        ci_low, ci_high = 1 - miss_ch, 1 - miss_cl
        if problem.mode == "persistent":
            for j, g in enumerate(problem.releases):
                localized[j, g.people] = breach[g.people]
        # exact values: no accumulated rounding in the bounds
        low = np.where(exact, breach, low)
        high = np.where(exact, breach, high)
        if problem.mode == "persistent":
            for j, g in enumerate(problem.releases):
                loc_low[j, g.people] = low[g.people]
                loc_high[j, g.people] = high[g.people]
    return WorldsAnalysis(problem=problem, blocks=results, linkable=linkable, breach=breach, localized=localized,
                          exact=exact, low=low, high=high, ci_low=ci_low, ci_high=ci_high,
                          linkability_exact=linkability_exact, block_of=block_of,
                          type_of=type_of, seconds=time.perf_counter() - t0, linkable_low=linkable_low,
                          localized_low=loc_low, localized_high=loc_high, linkability_scope=linkability)


