"""The Markov-chain estimate of the possible-worlds engine (:mod:`solver.worlds.counting`), for blocks beyond the
exact counting budget.

A chain on the block's individual-level worlds: moves swap the values of two individuals or change one
individual's value, and a move is kept iff every release still has a perfect matching (a b-matching per
changed value).  Proposals are symmetric, so the uniform distribution over the worlds reachable from the
start (a CP-SAT type-world) is stationary; irreducibility is not proved - the result is an *estimate*,
labelled as one, with a 95% batch-means confidence interval per (type, value).
"""
from __future__ import annotations

import math

import numpy as np

from multirelease.errors import SolverError

from .linkability import DEFAULT_TIME_LIMIT, _TypeWorldModel
from .matching import perfect_b_matching
from .problem import Block, WorldsProblem

__all__ = ["sample_block"]


def _feasible_value(problem: WorldsProblem, block: Block, k: int, vals: dict, v: int) -> bool:
    """Within spanned release ``k``: can the block's individuals with value ``v`` fill its groups of value ``v``?"""
    g = problem.releases[block.releases[k]]
    present = block.present[:, k]
    tc = np.zeros(block.n_types, dtype=np.int64)
    for t, mem in enumerate(block.members):
        if present[t]:
            tc[t] = sum(1 for p in mem.tolist() if vals[p] == v)
    gsel = block.group_value[k] == v
    gcount = np.where(gsel, block.group_count[k], 0)
    e = block.edges[k]
    keep = gsel[e[:, 1]] if len(e) else np.zeros(0, bool)
    return perfect_b_matching(tc, gcount, e[keep]) is not None
    del g


def sample_block(problem: WorldsProblem, block: Block, linkable: np.ndarray, *, samples: int,
                  rng: np.random.Generator, thin: int = 3, burn_in: int = 200, batches: int = 20
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    cand = linkable
    model = _TypeWorldModel(block, cand)
    status, m, _ = model.solve(DEFAULT_TIME_LIMIT)
    if status != "feasible":
        raise SolverError("no start world for sampling")
    vals = {}
    for t, mem in enumerate(block.members):
        seq = []
        for v in range(problem.n_values):
            seq.extend([v] * m.get((t, v), 0))
        for p, v in zip(mem.tolist(), seq):
            vals[p] = v
    people = [p for mem in block.members for p in mem.tolist()]
    type_of = {p: t for t, mem in enumerate(block.members) for p in mem.tolist()}
    R = len(block.releases)

    def ok(changed_values) -> bool:
        return all(_feasible_value(problem, block, k, vals, v) for k in range(R) for v in changed_values)

    steps = burn_in + samples * thin
    T, V = block.n_types, problem.n_values
    tally = np.zeros((batches, T, V), dtype=np.float64)
    per_batch = max(1, samples // batches)
    recorded = 0
    for step in range(steps):
        a = people[int(rng.integers(len(people)))]
        if rng.random() < 0.5 and len(people) > 1:
            b = people[int(rng.integers(len(people)))]
            va, vb = vals[a], vals[b]
            if va != vb and cand[type_of[a], vb] and cand[type_of[b], va]:
                vals[a], vals[b] = vb, va
                if not ok((va, vb)):
                    vals[a], vals[b] = va, vb
        else:
            va = vals[a]
            vb = int(rng.integers(V))
            if vb != va and cand[type_of[a], vb]:
                vals[a] = vb
                if not ok((va, vb)):
                    vals[a] = va
        if step >= burn_in and (step - burn_in) % thin == 0 and recorded < per_batch * batches:
            bi = recorded // per_batch
            for p in people:
                tally[bi, type_of[p], vals[p]] += 1
            recorded += 1
    n_t = block.type_count[:, None].astype(np.float64)
    frac = tally / (per_batch * n_t[None])
    est = frac.mean(axis=0)
    half = 1.96 * frac.std(axis=0, ddof=1) / math.sqrt(batches)
    ci = np.stack([np.clip(est - half, 0, 1), np.clip(est + half, 0, 1)], axis=-1)
    ci[~cand] = 0.0
    est[~cand] = 0.0
    return est, ci, recorded
