"""Witnesses of the chain engine (:mod:`solver.correspondence.generators`): a generator as buddy chains.

A pooled solution ``z`` over atom classes (:class:`~solver.correspondence.chain_component.Component`) becomes a
generator of Fung et al., section 7.1: every class is put at one of its atoms (the target's atom for the class of the
crack question), the individuals at an atom arrive in release order (``y[a, t] - y[a, t - 1]`` at ``T_t``),
and each one is given a record of every release from its arrival on - its chain of buddies - with the
target's arrivals placed in the cracked class's nodes first, so the chains show the crack's optimum.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .chain_component import Component
from .crack import CrackRequest
from .flows import generator_json

__all__ = ["atom_solution", "chain_witness"]


def atom_solution(comp: Component, z: np.ndarray, prefer: dict) -> dict:
    """The generator ``z`` over atom classes as ``{(j, v, atom): count}``: every class at one of its atoms
    (``prefer[class]`` when given - the target's atom)."""
    out: dict = {}
    for j, v, c, x in zip(comp.J.tolist(), comp.V.tolist(), comp.C.tolist(), z.tolist()):
        if x:
            a = prefer.get(c, comp.members[c][0])
            out[(j, v, a)] = out.get((j, v, a), 0) + int(x)
    return out


def chain_witness(engine, req: CrackRequest, releases, values, point) -> dict:
    """A generator (buddy chains) realizing the request's optimum for
    :class:`~solver.correspondence.generators.ChainEngine` ``engine`` (the incumbent when not optimal), as
    :func:`solver.correspondence.flows.generator_json`."""
    n = engine.n
    a_p = engine.atom_of.get(tuple(req.signature))
    sols = {}
    for s, part in engine._parts(req).items():
        if part is None:
            continue
        ci, c, rows = part
        _, _, _, z = engine._answer_one(req.t, ci, c, rows)
        comp = engine.components[ci]
        cls_nodes = set(comp.V[rows].tolist()) if rows is not None else \
            set(comp.V[(comp.J == req.j - 1) & (comp.C == c)].tolist())
        sols[ci] = (atom_solution(comp, z, {c: a_p}), (req.t, req.j - 1, cls_nodes, a_p))
    chains: Counter = Counter()
    for ci, comp in enumerate(engine.components):
        if ci in sols:
            sol, obj = sols[ci]
        else:
            sol, obj = atom_solution(comp, comp.pool[0], {}), None
        by_atom: dict = {}
        for (jj, v, aa), x in sol.items():
            by_atom.setdefault(aa, []).append((jj, v, x))
        for a, items in by_atom.items():
            y = np.zeros(n, np.int64)
            for jj, v, x in items:
                y[jj] += x
            total = int(y[-1])
            if not total:
                continue
            arrival = np.searchsorted(y, np.arange(total), side="right")  # 0-based release
            node_of = np.full((n, total), -1, np.int64)
            for k in range(n):
                rows_ = [(v, x) for jj, v, x in items if jj == k and x]
                present = np.arange(y[k])
                if obj is not None and a == obj[3] and k == obj[1]:
                    t0 = obj[0] - 1
                    first = present[arrival[present] == t0]
                    present = np.concatenate([first, present[arrival[present] != t0]])
                    rows_.sort(key=lambda r: r[0] not in obj[2])
                ids = np.repeat([v for v, _ in rows_], [x for _, x in rows_]) if rows_ else np.zeros(0, np.int64)
                node_of[k, present] = ids
            for ind in range(total):
                t0 = int(arrival[ind])
                chains[(t0, tuple(int(node_of[k, ind]) for k in range(t0, n)))] += 1
    grouped: dict = {}
    for (t0, members), cnt in chains.items():
        if t0 == n - 1:
            continue  # records of the last release starting their chain there are listed as "start"
        grouped.setdefault(t0, []).append((members, cnt))
    parts = [(np.array([m for m, _ in items], dtype=np.int64), np.array([c for _, c in items], np.int64))
             for _, items in sorted(grouped.items())]
    return generator_json(engine.nodes, releases, values, point, parts, focus=(req.j - 1, req.cls))
