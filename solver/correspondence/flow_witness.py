"""A generator written out as the correspondence attacks' witness (Fung et al., EDBT 2008, section 3.1).

A generator pairs every record of ``R1`` with a *buddy* in ``R2`` (for more releases: a chain of buddies,
section 7.1) and instantiates each pair at a raw point of the intersection of their regions.  The engines
(:mod:`solver.correspondence.flows` for two releases, :mod:`solver.correspondence.chain_witness` for chains) find
the buddy counts; this module turns them into the report's JSON: the aggregated groups of every release, each buddy
pair or chain with its count and the point it is instantiated at (the target's point when it lies inside), and the
records of the last release that start their chain there.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from multirelease.errors import SolverError

from .regions import Nodes

__all__ = ["generator_json"]


#: a witness lists the whole generator up to this many groups (all releases), else the cracked class's part
MAX_NODES = 400


def _node_json(nd: Nodes, release, values, shown: np.ndarray | None = None) -> list[dict]:
    out = []
    attrs = release.qi_attributes
    if release.group is None:
        class_ids = np.arange(1, release.n_classes + 1)
    else:
        class_ids = np.zeros(release.n_classes, dtype=np.int64)
        class_ids[release.classes] = release.group
    for i in (range(len(nd)) if shown is None else np.flatnonzero(shown).tolist()):
        qi = {}
        for j, a in enumerate(attrs):
            m = int(nd.masks[i, nd.mask_columns.index(j)]) if j in nd.mask_columns else 0
            qi[a.name] = a.format_cell(int(nd.lo[i, j]), int(nd.hi[i, j]), m)
        cls = int(nd.cls[i])
        gid = int(class_ids[cls])
        out.append({"id": i, "class": gid, "qi": qi, "sensitive": str(values[nd.value[i]]),
                    "count": int(nd.count[i])})
    return out


def _point_in(nodes_list: Sequence[Nodes], members: Sequence[tuple[int, int]], prefer: Sequence[int]) -> list[int]:
    """A raw point in the intersection of the regions of ``members`` ((release, node) pairs): ``prefer`` when
    it lies inside, else the smallest leaf code of each attribute that all of them contain."""
    q = nodes_list[0].lo.shape[1]
    lo = np.max([nodes_list[r].lo[i] for r, i in members], axis=0)
    hi = np.min([nodes_list[r].hi[i] for r, i in members], axis=0)
    mcols = nodes_list[0].mask_columns
    masks = {}
    for jj, j in enumerate(mcols):
        m = -1
        for r, i in members:
            m &= int(nodes_list[r].masks[i, jj])
        masks[j] = m
    inside = all(lo[j] <= prefer[j] <= hi[j] and (j not in masks or (masks[j] >> int(prefer[j])) & 1)
                 for j in range(q))
    if inside:
        return [int(x) for x in prefer]
    out = []
    for j in range(q):
        c = int(lo[j])
        if j in masks:
            while c <= hi[j] and not (masks[j] >> c) & 1:
                c += 1
        out.append(c)
    return out


def generator_json(nodes_list: Sequence[Nodes], releases, values, point, chains, focus: tuple | None = None,
                   max_nodes: int = MAX_NODES) -> dict:
    """A generator as JSON: the aggregated groups of every release, and its buddy chains.

    ``chains``: list of ``(members, counts)`` - ``members`` an ``(m, L)`` array of node ids of ``L``
    consecutive releases ending with the last one (``L = n - t + 1`` for chains starting in ``R_t``), and the
    number of records following each chain.  Every chain is instantiated at one point of the intersection of
    its regions (the target's point when it lies inside).  Records of a release that follow no listed chain
    are records of the last release that start their chain there (no buddy in any earlier release), each
    instantiated anywhere in its region (``start`` lists them with counts).

    ``{"nodes": {"1": [...], "2": [...]}, "buddies": [{"r1": id, "r2": id, "count": n, "at": {...},
    "target": bool}, ...], "start": [...]}``; for more than two releases buddies are ``{"chain": {"<i>": id,
    ...}, "timestamp": t, ...}``.

    A report does not grow with the table: with more than ``max_nodes`` groups and a ``focus`` ``(release
    index from 0, class)``, only the chains through the focus class's groups are listed (with the groups
    they pass through and the class's records starting there): the part of the generator that decides the
    crack.  ``"partial": {"groups": shown, "of": all, "chains": shown, "of_chains": all}`` says so; the
    whole generator is checked all the same (every record used exactly once).
    """
    n = len(nodes_list)
    total = sum(len(nd) for nd in nodes_list)
    parsed = []
    for members, counts in chains:
        members = np.asarray(members, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        keep = counts > 0
        parsed.append((members[keep], counts[keep]))
    chains = parsed
    shown = in_focus = None
    if focus is not None and total > max_nodes:
        fj, fcls = focus
        in_focus = [np.zeros(len(nd), bool) for nd in nodes_list]
        in_focus[fj] = nodes_list[fj].cls == fcls
        shown = [f.copy() for f in in_focus]
        for members, _ in chains:
            if not members.size:
                continue
            t0 = n - members.shape[1]
            hit = np.zeros(len(members), bool)
            for x in range(members.shape[1]):
                hit |= in_focus[t0 + x][members[:, x]]
            for x in range(members.shape[1]):
                shown[t0 + x][members[hit, x]] = True
    out: dict = {"nodes": {str(i + 1): _node_json(nd, r, values, None if shown is None else shown[i]) for i, (nd, r)
                           in enumerate(zip(nodes_list, releases))}}
    used = [np.zeros(len(nd), np.int64) for nd in nodes_list]
    for members, counts in chains:
        if members.size:
            t0 = n - members.shape[1]
            for x in range(members.shape[1]):
                np.add.at(used[t0 + x], members[:, x], counts)
    buddies = []
    q_attrs = releases[0].qi_attributes

    def labels(p):
        return {a.name: a.hierarchy.leaves[int(c)] for a, c in zip(q_attrs, p)}

    for members, counts in chains:
        L = members.shape[1] if members.ndim == 2 else 0
        t = n - L + 1
        listed = np.ones(len(members), bool)
        if shown is not None and L:  # the chains through the focus class only
            listed[:] = False
            for x in range(L):
                listed |= in_focus[t - 1 + x][members[:, x]]
        for row, cnt in zip(members[listed].tolist(), counts[listed].tolist()):
            mem = [(t - 1 + x, row[x]) for x in range(L)]
            p = _point_in(nodes_list, mem, point)
            entry: dict = {}
            if n == 2 and L == 2:
                entry = {"r1": int(row[0]), "r2": int(row[1])}
            else:
                entry = {"chain": {str(r + 1): i for r, i in mem}, "timestamp": t}
            entry.update({"count": int(cnt), "at": labels(p), "at_target": [int(x) for x in p] == [int(x) for x in
                                                                                                    point]})
            buddies.append(entry)
    out["buddies"] = buddies
    start = []
    for r, nd in enumerate(nodes_list):
        left = nd.count - used[r]
        if np.any(left < 0):
            raise SolverError("witness uses more records than a group holds")
        if r < n - 1:
            if np.any(left):
                raise SolverError(f"witness leaves records of release {r + 1} without buddies")
            continue
        for i in np.flatnonzero(left if shown is None else left * shown[r]):
            p = _point_in(nodes_list, [(r, int(i))], point)
            start.append({"release": r + 1, "node": int(i), "count": int(left[i]), "at": labels(p),
                          "at_target": [int(x) for x in p] == [int(x) for x in point]})
    out["start"] = start
    if shown is not None:
        out["partial"] = {"groups": int(sum(int(x.sum()) for x in shown)), "of": total,
                          "chains": len(buddies), "of_chains": int(sum(len(c) for _, c in chains))}
    return out
