"""Perfect matchings of one release: existence, the edges that lie in some perfect matching, permanents.

One release alone is a bipartite graph between individuals and records (a record's region contains the
individual's point).  Aggregated, it is a *b-matching* problem between individual *types* (``n_t``
interchangeable members) and record *groups* (``c_g`` interchangeable records): a perfect b-matching is an
integral ``x[t, g] >= 0`` on the edges with ``sum_g x[t, g] = n_t`` and ``sum_t x[t, g] = c_g`` - a saturating
flow ``source -> t -> g -> sink``.

* :func:`perfect_b_matching` - one perfect b-matching (OR-Tools ``SimpleMaxFlow``), or ``None``.
* :func:`matchable_edges` - the edges that carry flow in *some* perfect b-matching: those with flow in the
  one found, and those whose ends lie in one strongly connected component of its residual graph (arcs
  ``t -> g`` where ``x[t, g] < n_t``, ``g -> t`` where ``x[t, g] > 0``).  This is the classical
  characterization of maximally-matchable edges (Dulmage-Mendelsohn; the algorithm of ref. [30] of Shmueli
  & Tassa), lifted to groups: an alternating cycle through ``t -> g`` moves one member of ``t`` into ``g``.
  ``O(E)`` after the flow (``scipy.sparse.csgraph.connected_components(connection="strong")``).
* :func:`permanent` - Ryser's formula with Gray-code updates, ``O(2^n n)`` in numpy (``n <= 25``): the number
  of bijections of a 0/1 consistency matrix.
* :func:`has_perfect_matching` - Hopcroft-Karp (``scipy.sparse.csgraph.maximum_bipartite_matching``) on an
  explicit 0/1 matrix.
"""
from __future__ import annotations

import numpy as np
from ortools.graph.python import max_flow
from scipy import sparse
from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

from multirelease.errors import SolverError

__all__ = ["perfect_b_matching", "matchable_edges", "permanent", "has_perfect_matching"]


def perfect_b_matching(type_count: np.ndarray, group_count: np.ndarray, edges: np.ndarray) -> np.ndarray | None:
    """One perfect b-matching: ``x`` (one integer per edge) or ``None`` when there is none.

    Parameters
    ----------
    type_count : (T,) int - members of each type.
    group_count : (G,) int - records of each group.
    edges : (E, 2) int - ``(type, group)`` pairs.
    """
    type_count = np.asarray(type_count, dtype=np.int64)
    group_count = np.asarray(group_count, dtype=np.int64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    T, G = len(type_count), len(group_count)
    if type_count.sum() != group_count.sum():
        return None
    if T == 0:
        return np.zeros(0, dtype=np.int64)
    src, snk = T + G, T + G + 1
    smf = max_flow.SimpleMaxFlow()
    tails = np.concatenate([np.full(T, src), edges[:, 0], T + np.arange(G)]).astype(np.int32)
    heads = np.concatenate([np.arange(T), T + edges[:, 1], np.full(G, snk)]).astype(np.int32)
    caps = np.concatenate([type_count, type_count[edges[:, 0]], group_count]).astype(np.int64)
    arcs = smf.add_arcs_with_capacity(tails, heads, caps)
    status = smf.solve(src, snk)
    if status != smf.OPTIMAL:
        raise SolverError(f"max flow failed with status {status}")
    if smf.optimal_flow() != type_count.sum():
        return None
    return np.asarray(smf.flows(arcs[T:T + len(edges)]), dtype=np.int64)


def matchable_edges(type_count: np.ndarray, group_count: np.ndarray, edges: np.ndarray,
                    x: np.ndarray | None = None) -> np.ndarray | None:
    """Bool per edge: it carries flow in at least one perfect b-matching (``None``: no perfect b-matching).

    ``x`` is a perfect b-matching already found (else one is computed)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if x is None:
        x = perfect_b_matching(type_count, group_count, edges)
        if x is None:
            return None
    T, G = len(type_count), len(group_count)
    tc = np.asarray(type_count, dtype=np.int64)
    fwd = x < tc[edges[:, 0]]  # t -> g: a member of t not yet in g could move there
    bwd = x > 0  # g -> t: a member of t in g could leave it
    rows = np.concatenate([edges[fwd, 0], T + edges[bwd, 1]])
    cols = np.concatenate([T + edges[fwd, 1], edges[bwd, 0]])
    graph = sparse.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(T + G, T + G))
    _, scc = connected_components(graph, directed=True, connection="strong")
    return (x > 0) | (scc[edges[:, 0]] == scc[T + edges[:, 1]])


def permanent(matrix: np.ndarray) -> int:
    """The permanent of a square 0/1 (or small integer) matrix, exactly (Python integers).

    Ryser's formula ``perm(A) = (-1)^n sum_{S} (-1)^{|S|} prod_i sum_{j in S} a_ij`` over the column subsets
    in Gray-code order, ``O(2^n * n)``; row sums are kept in int64 (exact for 0/1 matrices up to n = 25), the
    products accumulated as Python integers.

    Examples
    --------
    >>> permanent(np.ones((3, 3), dtype=int))
    6
    """
    a = np.asarray(matrix, dtype=np.int64)
    n = a.shape[0]
    if a.shape != (n, n):
        raise ValueError("permanent needs a square matrix")
    if n == 0:
        return 1
    if n > 25:
        raise ValueError("permanent: n > 25 is out of reach of Ryser's formula")
    # drop all-zero rows early
    if (a.sum(axis=1) == 0).any():
        return 0
    total = 0
    rowsum = np.zeros(n, dtype=np.int64)
    prev = 0
    for k in range(1, 1 << n):
        gray = k ^ (k >> 1)
        diff = gray ^ prev
        j = diff.bit_length() - 1
        if gray & diff:
            rowsum += a[:, j]
        else:
            rowsum -= a[:, j]
        prev = gray
        size = bin(gray).count("1")
        prod = 1
        for v in rowsum.tolist():
            if v == 0:
                prod = 0
                break
            prod *= v
        if prod:
            total += prod if (size % 2) == (n % 2) else -prod
    return int(total)


def has_perfect_matching(adjacency: np.ndarray | sparse.spmatrix) -> bool:
    """Does a square 0/1 matrix (rows: individuals, columns: records) have a perfect matching?"""
    m = sparse.csr_matrix(adjacency)
    n, k = m.shape
    if n != k:
        return False
    if n == 0:
        return True
    match = maximum_bipartite_matching(m, perm_type="column")
    return bool((match >= 0).all())
