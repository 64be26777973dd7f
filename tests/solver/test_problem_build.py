"""The possible-worlds problem's construction (:mod:`solver.worlds.problem`) against plain references.

Issue 24 vectorized it: distinct rows by one int64 code (:func:`_unique_rows`) instead of numpy's sort of
structured rows, and the blocks' types and edges (:func:`_components`) without a text signature and a Python
loop per individual.  Both are compared here with what the definitions say, written the slow way: the
distinct rows of ``np.unique(axis=0)``, and types as individuals of one connected component with the same set of
adjacent groups in every release (Shmueli & Tassa, 004, section 3; the module docstring)."""
from __future__ import annotations

import numpy as np
import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from solver.worlds.problem import ReleaseGraph, WorldsProblem, _components, _unique_rows


@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 40), st.integers(1, 8), st.sampled_from(["small", "huge", "wide"]))
@settings(deadline=None)
def test_unique_rows_partitions_as_numpy(seed, n, q, kind):
    rng = np.random.default_rng(seed)
    if kind == "small":
        a = rng.integers(-3, 4, (n, q))
    elif kind == "huge":  # the whole int64 range (mask columns viewed as int64): no mixed radix fits
        a = rng.integers(-2 ** 63, 2 ** 63 - 1, (n, q), dtype=np.int64)
        a[rng.random((n, q)) < 0.6] = 7
    else:  # many columns of a few thousand values: the codes are renumbered on the way
        a = rng.integers(0, 3000, (n, q + 6))
    a = np.vstack([a, a[rng.integers(0, n, 4)]])
    uniq, first, inv = np.unique(a, axis=0, return_index=True, return_inverse=True)
    mine, mfirst, minv = _unique_rows(a, index=True)
    assert len(mine) == len(uniq)
    assert np.array_equal(mine[minv], a) and np.array_equal(a[mfirst], mine)
    # the same partition of the rows, each part named by the same first occurrence
    assert np.array_equal(first[inv.reshape(-1)], mfirst[minv])
    assert np.array_equal(np.sort(mfirst), np.sort(first))


def _random_problem(rng: np.random.Generator) -> WorldsProblem:
    """Releases of random populations (some individuals absent) and random person -> group adjacency, some of it
    repeated so that types have several members."""
    n_ind = int(rng.integers(1, 30))
    releases = []
    for r in range(int(rng.integers(1, 5))):
        people = np.sort(rng.choice(n_ind, size=int(rng.integers(0, n_ind + 1)), replace=False)).astype(np.int64)
        n_groups = int(rng.integers(1, 8))
        patterns = rng.random((3, n_groups)) < 0.35
        dense = patterns[rng.integers(0, 3, len(people))] if len(people) else np.zeros((0, n_groups), bool)
        dense |= rng.random(dense.shape) < 0.05
        releases.append(ReleaseGraph(index=r + 1, people=people, group_value=rng.integers(0, 3, n_groups),
                                     group_count=rng.integers(1, 3, n_groups), group_rows=(),
                                     adjacency=sparse.csr_matrix(dense)))
    return WorldsProblem(individuals=np.array([f"i{i}" for i in range(n_ind)], dtype=object),
                         values=np.array(["a", "b", "c"], dtype=object), releases=tuple(releases), mode="persistent")


def _reference(problem: WorldsProblem) -> set:
    """Per component: the frozenset of its types (each: members, and per release None or its adjacent groups)."""
    g = nx.Graph()
    adjacent = {}
    for k, rg in enumerate(problem.releases):
        for p, person in enumerate(rg.people):
            groups = frozenset(int(x) for x in rg.adjacency.indices[rg.adjacency.indptr[p]:rg.adjacency.indptr[p + 1]])
            adjacent[int(person), k] = groups
            g.add_node(("i", int(person)))
            for x in groups:
                g.add_edge(("i", int(person)), ("g", k, x))
    out = set()
    for comp in nx.connected_components(g):
        people = sorted(n[1] for n in comp if n[0] == "i")
        types: dict = {}
        for p in people:
            sig = tuple(adjacent.get((p, k)) for k in range(len(problem.releases)))
            types.setdefault(sig, []).append(p)
        out.add(frozenset((tuple(m), sig) for sig, m in types.items()))
    return out


@given(st.integers(0, 2 ** 32 - 1))
@settings(deadline=None)
def test_components_types_and_edges_match_the_definition(seed):
    problem = _random_problem(np.random.default_rng(seed))
    blocks = [b for b in _components(problem, list(range(len(problem.releases)))) if b.n_types]
    got = set()
    for b in blocks:
        types = []
        for t, members in enumerate(b.members):
            sig = []
            for k in range(len(problem.releases)):
                if not b.present[t, k]:
                    sig.append(None)
                    continue
                e = b.edges[k]
                sig.append(frozenset(int(b.groups[k][x]) for x in e[e[:, 0] == t, 1]))
            types.append((tuple(int(m) for m in members), tuple(sig)))
        got.add(frozenset(types))
        # members in order, types in order of their first member, and each group's count and value carried
        firsts = [int(m[0]) for m in b.members]
        assert firsts == sorted(firsts) and all(list(m) == sorted(m) for m in b.members)
        for k, rg in enumerate(problem.releases):
            assert np.array_equal(b.group_count[k], rg.group_count[b.groups[k]])
            assert np.array_equal(b.group_value[k], rg.group_value[b.groups[k]])
    assert got == _reference(problem)
    # blocks in order of their first individual
    starts = [int(b.members[0][0]) for b in blocks]
    assert starts == sorted(starts)
