"""The oracle of the possible-worlds engine's tests: every world by plain enumeration (tiny instances)."""
from __future__ import annotations

import itertools
import math

import numpy as np

from .matching import has_perfect_matching
from .problem import WorldsProblem

__all__ = ["brute_force"]


def brute_force(problem: WorldsProblem, *, max_assignments: int = 200_000) -> dict:
    """Every world by plain enumeration of value assignments (tiny instances; the tests' oracle).

    Returns ``{"worlds": int, "linked": (N, V) int array (worlds where o has s in at least one table),
    "local": (R, N, V) int array (worlds where o has s in table j), "linkable": (N, V) bool}``.  A world is an
    assignment of values to individuals (persistent) or one per table (free), kept when every table has a
    perfect matching between its individuals and its records (same value, region containing the point).
    """
    N, V, R = problem.n_individuals, problem.n_values, len(problem.releases)
    expanded = []
    for g in problem.releases:
        rec_group = np.repeat(np.arange(g.n_groups), g.group_count)
        expanded.append((g.adjacency.toarray()[:, rec_group], g.group_value[rec_group]))

    def consistent(j: int, assignment: dict) -> bool:
        g = problem.releases[j]
        adj, rec_val = expanded[j]
        vals = np.array([assignment[p] for p in g.people.tolist()], dtype=np.int64)
        return has_perfect_matching(adj & (vals[:, None] == rec_val[None, :]))

    if problem.mode == "persistent":
        people = sorted({p for g in problem.releases for p in g.people.tolist()})
        if V ** len(people) > max_assignments:
            raise ValueError("instance too large for brute force")
        worlds = []
        for combo in itertools.product(range(V), repeat=len(people)):
            a = dict(zip(people, combo))
            if all(consistent(j, a) for j in range(R)):
                worlds.append(a)
        linked = np.zeros((N, V), dtype=object)
        local = np.zeros((R, N, V), dtype=object)
        for w in worlds:
            for p, v in w.items():
                linked[p, v] += 1
            for j, g in enumerate(problem.releases):
                for p in g.people.tolist():
                    local[j, p, w[p]] += 1
        return {"worlds": len(worlds), "linked": linked, "local": local, "linkable": linked > 0}
    per_table = []
    for j, g in enumerate(problem.releases):
        people = g.people.tolist()
        if V ** len(people) > max_assignments:
            raise ValueError("instance too large for brute force")
        ws = []
        for combo in itertools.product(range(V), repeat=len(people)):
            a = dict(zip(people, combo))
            if consistent(j, a):
                ws.append(a)
        per_table.append(ws)
    total = math.prod(len(ws) for ws in per_table)
    if total > max_assignments:
        raise ValueError("too many series of tables for brute force")
    linked = np.zeros((N, V), dtype=object)
    local = np.zeros((R, N, V), dtype=object)
    for series in itertools.product(*per_table):
        hit = np.zeros((N, V), dtype=bool)
        for j, w in enumerate(series):
            for p, v in w.items():
                hit[p, v] = True
                local[j, p, v] += 1
        linked += hit
    return {"worlds": total, "linked": linked, "local": local, "linkable": linked > 0}
