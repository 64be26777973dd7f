"""Flow propagation on a block of possible worlds: prune what no world uses, split what is independent.

A block (:class:`solver.worlds.problem.Block`) is a connected component of the consistency graph.  Most of what the
adversary of Shmueli & Tassa (004, section 3: l-linkability) or Wong et al. (001, Definition 1) learns is
decided by matchings alone, release by release; CP-SAT is needed only for the *persistent-value coupling*: a
type (interchangeable individuals, counted not listed) that can still take two values and is present in two
releases.  :func:`reduce_block` does the polynomial part:

1. **Per-release pruning, to a fixpoint.**  In release ``k`` a world is a perfect b-matching between the
   types present and the record groups, each type using only groups whose value it can still take
   (``cand[t, v]``).  The edges in no perfect b-matching (:func:`solver.worlds.matching.matchable_edges`: flow plus
   strongly connected components of the residual graph, Dulmage-Mendelsohn) carry no world; a value no edge
   of ``t`` reaches in some release where ``t`` is present is not linkable to ``t``.  Each round removes
   edges and candidates; the rounds stop when none changes (at most ``sum |E|`` rounds, a handful in
   practice).  This is necessary (a world is a perfect b-matching of every release on candidate edges), so
   every world of the block survives.
2. **Splitting.**  The surviving edges split the block into independent sub-blocks (connected components of
   types and groups over every spanned release): the worlds of the block are the products of the worlds of
   its sub-blocks, so counts multiply and probabilities are computed inside one sub-block.
3. **Deciding without CP-SAT where flows suffice.**  In a sub-block where no type with two or more candidate
   values is present in two or more releases, releases do not interact: the values of the other types are
   forced, and each release's last matching round is exact, so ``cand`` *is* the linkability and every
   release's perfect b-matching on candidate edges, together, is a world (existence proven).
   Otherwise (``coupled``), the candidates are a superset to be decided by CP-SAT
   (:func:`solver.worlds.linkability.block_linkability`).

Everything here is ``O(rounds * (max-flow + E))`` per block (OR-Tools ``SimpleMaxFlow``, scipy's strongly
connected components).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from multirelease.errors import InputError

from .matching import matchable_edges
from .problem import Block, WorldsProblem, no_world_message

__all__ = ["SubBlock", "reduce_block", "reduce_blocks", "reduce_blocks_tagged", "edge_values"]


@dataclass(frozen=True, eq=False)
class SubBlock:
    """An independent part of a block after flow propagation.

    Attributes
    ----------
    block : Block
        The sub-block (its edges are the surviving edges only; same global group indices).
    cand : ndarray (T, V) bool
        Candidate values of each type: exactly the linkable values unless :attr:`coupled`.
    coupled : bool
        A type with two or more candidate values is present in two or more releases: CP-SAT decides.
    """

    block: Block
    cand: np.ndarray
    coupled: bool


def edge_values(block: Block, k: int) -> np.ndarray:
    """The sensitive value code of every edge of spanned release ``k``."""
    e = block.edges[k]
    return block.group_value[k][e[:, 1]] if len(e) else np.zeros(0, np.int64)


def _no_world(problem: WorldsProblem, block: Block) -> InputError:
    return InputError(no_world_message(problem, block))


def reduce_block(problem: WorldsProblem, block: Block) -> list[SubBlock]:
    """The block's independent sub-blocks after per-release pruning (see the module docstring).

    Raises :class:`InputError` when a release of the block has no perfect b-matching (no world)."""
    R, T, V = len(block.releases), block.n_types, problem.n_values
    if T == 0:
        raise _no_world(problem, block)
    n_t = block.type_count
    cand = np.zeros((T, V), dtype=bool)
    for k in range(R):
        e = block.edges[k]
        cand[e[:, 0], edge_values(block, k)] = True
    allowed = getattr(problem, "allowed", None)
    if allowed is not None:  # pairs an earlier proof excluded (a prefix of the sequence): no world has them
        cand &= allowed_rows(allowed, block, V)
    alive = [np.ones(len(e), dtype=bool) for e in block.edges]
    vals = [edge_values(block, k) for k in range(R)]
    stable = 0  # releases in a row that changed nothing
    k = 0
    while stable < R:
        e = block.edges[k]
        keep = alive[k] & cand[e[:, 0], vals[k]] if len(e) else alive[k]
        idx = np.flatnonzero(keep)
        tc = np.where(block.present[:, k], n_t, 0)
        ok = matchable_edges(tc, block.group_count[k], e[idx])
        if ok is None:
            raise _no_world(problem, block)
        new_alive = np.zeros(len(e), dtype=bool)
        new_alive[idx[ok]] = True
        reach = np.zeros((T, V), dtype=bool)
        reach[e[new_alive, 0], vals[k][new_alive]] = True
        pres = block.present[:, k]
        new_cand = cand.copy()
        new_cand[pres] &= reach[pres]
        changed = not np.array_equal(new_alive, alive[k]) or not np.array_equal(new_cand, cand)
        alive[k], cand = new_alive, new_cand
        stable = 0 if changed else stable + 1
        k = (k + 1) % R
    return _split(block, alive, cand)


def allowed_rows(allowed, block: Block, n_values: int) -> np.ndarray:
    """``(T, V)`` rows of an :attr:`~solver.worlds.problem.WorldsProblem.allowed` mask (the whole array, or
    the rows of a task's individuals by global index) for the block's types (a type's members share their row:
    they were interchangeable in the prefix too)."""
    first = np.fromiter((int(m[0]) for m in block.members), dtype=np.int64, count=block.n_types)
    if isinstance(allowed, dict):
        every = np.ones(n_values, dtype=bool)
        return np.array([allowed.get(int(i), every) for i in first], dtype=bool).reshape(-1, n_values)
    return allowed[first]


def _split(block: Block, alive: list, cand: np.ndarray) -> list[SubBlock]:
    """Connected components of types and groups over the surviving edges of every release."""
    R, T = len(block.releases), block.n_types
    offs = np.cumsum([T] + [len(g) for g in block.groups])
    rows, cols = [], []
    for k in range(R):
        e = block.edges[k][alive[k]]
        rows.append(e[:, 0])
        cols.append(offs[k] + e[:, 1])
    n = int(offs[-1])
    rr = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cc = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    graph = sparse.csr_matrix((np.ones(len(rr), dtype=np.int8), (rr, cc)), shape=(n, n))
    n_comp, label = connected_components(graph, directed=False)
    multi = cand.sum(axis=1) >= 2
    type_label = label[:T]
    # components in order of their first type (types are in order of first member); everything sorted by
    # component once, each component a slice
    first = {}
    for t, c in enumerate(type_label.tolist()):
        first.setdefault(c, len(first))
    rank = np.full(n_comp, -1, dtype=np.int64)
    rank[np.fromiter(first.keys(), dtype=np.int64)] = np.fromiter(first.values(), dtype=np.int64)
    n_sub = len(first)
    t_rank = rank[type_label]
    t_order = np.argsort(t_rank, kind="stable")
    t_cuts = np.searchsorted(t_rank[t_order], np.arange(n_sub + 1))
    tpos = np.empty(T, dtype=np.int64)
    tpos[t_order] = np.arange(T) - t_cuts[t_rank[t_order]]
    per_k = []
    for k in range(R):
        g_rank = rank[label[offs[k]:offs[k + 1]]]
        g_order = np.argsort(g_rank, kind="stable")
        g_cuts = np.searchsorted(g_rank[g_order], np.arange(n_sub + 1))
        gpos = np.empty(len(g_rank), dtype=np.int64)
        gpos[g_order] = np.arange(len(g_rank)) - g_cuts[g_rank[g_order]]
        e = block.edges[k][alive[k]]
        e_rank = t_rank[e[:, 0]]
        e_order = np.argsort(e_rank, kind="stable")
        e = e[e_order]
        e_cuts = np.searchsorted(e_rank[e_order], np.arange(n_sub + 1))
        local = np.column_stack([tpos[e[:, 0]], gpos[e[:, 1]]]).astype(np.int64).reshape(-1, 2)
        per_k.append((g_order, g_cuts, local, e_cuts))
    out = []
    for c in range(n_sub):
        types = t_order[t_cuts[c]:t_cuts[c + 1]]
        groups, edges, gcount, gvalue = [], [], [], []
        for k in range(R):
            g_order, g_cuts, local, e_cuts = per_k[k]
            loc = g_order[g_cuts[c]:g_cuts[c + 1]]
            edges.append(local[e_cuts[c]:e_cuts[c + 1]])
            groups.append(block.groups[k][loc])
            gcount.append(block.group_count[k][loc])
            gvalue.append(block.group_value[k][loc])
        present = block.present[types]
        sub = Block(releases=block.releases, members=tuple(block.members[t] for t in types), groups=tuple(groups),
                    edges=tuple(edges), present=present, group_count=tuple(gcount), group_value=tuple(gvalue))
        coupled = bool((multi[types] & (present.sum(axis=1) >= 2)).any())
        out.append(SubBlock(sub, cand[types].copy(), coupled))
    return out


def reduce_blocks(problem: WorldsProblem, blocks: list[Block]) -> list[SubBlock]:
    """:func:`reduce_block` of every block, the blocks spanning the same releases pruned together as one
    disjoint union (one max-flow and one strongly-connected-components pass per release and round for all of
    them: the flows and components of a disjoint union are those of its parts).  Sub-blocks come out in
    the order of the blocks.  On a block without a world, the error names that block."""
    return [sub for _, sub in reduce_blocks_tagged(problem, blocks)]


def reduce_blocks_tagged(problem: WorldsProblem, blocks: list[Block]) -> list[tuple[int, SubBlock]]:
    """:func:`reduce_blocks`, each sub-block with the position in ``blocks`` of the block it was split from.

    Order: the groups of blocks spanning the same releases in order of first appearance, then the blocks of
    a group in order, then each block's sub-blocks in order of their first type - the order of
    :func:`reduce_block` block by block, whichever blocks are pruned together (the greatest fixpoint of the
    pruning of a disjoint union is the union of its parts' fixpoints, and :func:`_split` keeps the union's
    type, group and edge order inside every component)."""
    by_rel: dict = {}
    for pos, b in enumerate(blocks):
        by_rel.setdefault(b.releases, []).append(pos)
    out = []
    for rel, group in by_rel.items():
        if len(group) == 1:
            out.extend((group[0], sub) for sub in reduce_block(problem, blocks[group[0]]))
            continue
        try:
            subs = reduce_block(problem, _union(rel, [blocks[p] for p in group]))
        except InputError:
            for p in group:  # the block to blame
                reduce_block(problem, blocks[p])
            raise
        # the members of the blocks of one group are disjoint: a type's first member names its block
        owner = {int(m[0]): p for p in group for m in blocks[p].members}
        out.extend((owner[int(sub.block.members[0][0])], sub) for sub in subs)
    return out


def _union(releases: tuple, blocks: list[Block]) -> Block:
    """The disjoint union of blocks spanning the same releases (types and local groups renumbered)."""
    R = len(releases)
    members, present = [], []
    groups, edges, gcount, gvalue = ([[] for _ in range(R)] for _ in range(4))
    t_off = 0
    g_off = [0] * R
    for b in blocks:
        members.extend(b.members)
        present.append(b.present.reshape(-1, R))
        for k in range(R):
            groups[k].append(b.groups[k])
            edges[k].append(b.edges[k] + np.array([t_off, g_off[k]], dtype=np.int64))
            gcount[k].append(b.group_count[k])
            gvalue[k].append(b.group_value[k])
            g_off[k] += len(b.groups[k])
        t_off += b.n_types

    def cat(parts, width=None):
        return np.concatenate(parts) if parts else np.zeros((0, width) if width else 0, np.int64)

    return Block(releases=releases, members=tuple(members), groups=tuple(cat(g) for g in groups),
                 edges=tuple(cat(e, 2).reshape(-1, 2) for e in edges), present=np.vstack(present),
                 group_count=tuple(cat(c) for c in gcount), group_value=tuple(cat(v) for v in gvalue))
