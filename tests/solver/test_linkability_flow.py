"""Possible worlds without enumeration (issue 16, item 1): flow propagation, splitting, and CP-SAT only for the
persistent-value coupling, against the brute force over every world.

Instances: one raw table of 2-6 individuals with persistent sensitive values (Shmueli & Tassa, 004,
Definition 3.1), published 3-5 times, each release over a random subset of the individuals (insertions and
deletions) by any generalization the strategies draw (cuts, local recodings, Mondrian regions).  The oracle
(:func:`solver.worlds.oracle.brute_force`) enumerates every assignment of values to individuals and keeps those
for which every release has a perfect matching; it knows nothing of types, flows or CP-SAT.

* the engine (:func:`solver.worlds.analysis.analyze`) equals the oracle on linkability, the number of worlds and every
  linkage fraction ``|E[v, s]| / |E|`` (004, Definition 3.2);
* :func:`solver.worlds.reduce.reduce_block` keeps every pair a world realizes, and on a sub-block it declares
  uncoupled its candidates *are* the linkable pairs;
* :func:`solver.worlds.linkability.decide_coupled` alone (CP-SAT from the unpruned candidates: every value of an
  adjacent group) decides linkability exactly - the coupling path is checked even where flows would have
  decided it.
"""
from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from multirelease.model.sequence import Adversary, ReleaseSequence
from solver.worlds.analysis import analyze
from solver.worlds.linkability import _block_values, decide_coupled
from solver.worlds.problem import build_problem
from solver.worlds.oracle import brute_force
from solver.worlds.reduce import reduce_block
from strategies import generalized_releases, schemas_and_tables

# every example runs the brute force over up to 3^6 assignments and 3-5 matchings each, plus CP-SAT: 30
# examples keep the module well under the thorough profile's minute
_SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], max_examples=30)


@st.composite
def persistent_sequences(draw, max_size: int = 6):
    """``(tables, releases)``: 3-5 releases of subsets of one table of 2-``max_size`` individuals (values
    persistent)."""
    schema, table = draw(schemas_and_tables(min_size=2, max_size=max_size, identifier=True, max_sensitive=3))
    ids = list(table.ids)
    tables, releases = [], []
    for _ in range(draw(st.integers(3, 5))):
        keep = [i for i in ids if draw(st.booleans())] or [ids[draw(st.integers(0, len(ids) - 1))]]
        t = table.subset(keep)
        rel, _ = draw(generalized_releases(t))
        tables.append(t)
        releases.append(rel)
    return tables, releases


def _problem(tables, releases, max_assignments: int = 3 ** 6 + 1):
    seq = ReleaseSequence()
    for t, r in zip(tables, releases):
        seq.append(r, None, t)
    problem = build_problem(seq.view(Adversary(sensitive="persistent")))
    try:
        bf = brute_force(problem, max_assignments=max_assignments)
    except ValueError:
        assume(False)
    return problem, bf


@given(persistent_sequences())
@_SETTINGS
def test_engine_equals_brute_force_on_three_to_five_releases(case):
    problem, bf = _problem(*case)
    assume(bf["worlds"] > 0)
    a = analyze(problem)
    assert a.linkability_exact and a.all_exact
    assert np.array_equal(a.linkable, bf["linkable"])
    assert math.prod(b.worlds for b in a.blocks) == bf["worlds"]
    for i in range(problem.n_individuals):
        for v in range(problem.n_values):
            assert a.breach_fraction(i, v) == Fraction(int(bf["linked"][i, v]), bf["worlds"])
    n_links = a.linkable.sum(axis=1)
    present = bf["linkable"].any(axis=1)
    assert int(n_links[present].min()) == int(bf["linkable"].sum(axis=1)[present].min())


@given(persistent_sequences())
@_SETTINGS
def test_reduction_keeps_every_world_and_decides_uncoupled_blocks(case):
    problem, bf = _problem(*case)
    assume(bf["worlds"] > 0)
    for block in problem.blocks():
        members = set(np.concatenate(block.members).tolist()) if block.members else set()
        seen = set()
        for sub in reduce_block(problem, block):
            for t, mem in enumerate(sub.block.members):
                for p in mem.tolist():
                    seen.add(p)
                    truth = bf["linkable"][p]
                    assert not (truth & ~sub.cand[t]).any()  # no realizable pair pruned
                    if not sub.coupled:
                        assert np.array_equal(sub.cand[t], truth)
        assert seen == members


@given(persistent_sequences())
@_SETTINGS
def test_coupled_decision_alone_equals_brute_force(case):
    problem, bf = _problem(*case)
    assume(bf["worlds"] > 0)
    for block in problem.blocks():
        if block.n_types == 0:
            continue
        cand = _block_values(problem, block)
        lk, exact, witnesses, proven = decide_coupled(problem, block, cand, time_limit=20)
        assert exact
        assert np.array_equal(proven, lk)
        for t, mem in enumerate(block.members):
            for p in mem.tolist():
                assert np.array_equal(lk[t], bf["linkable"][p])
        for (t, v), world in witnesses.items():  # each witness is a type-world realizing its pair
            assert world[t, v] > 0
            for tt, mem in enumerate(block.members):
                assert sum(c for (x, _), c in world.items() if x == tt) == len(mem)


@given(persistent_sequences(max_size=9), st.sampled_from(["full", "min"]), st.sampled_from([1, 10_000]),
       st.sampled_from([(1, 2), (1, 3), (1, 4), (10_000, 30)]), st.sampled_from([None, 1, 2, 3]))
@settings(_SETTINGS, max_examples=60)
def test_every_block_decided_together_equals_brute_force(case, scope, batch_types, local_types, ceiling):
    """:func:`decide_coupled_all` over every block of a problem at once - each block a model of its own
    (``BATCH_TYPES`` = 1) or all in one CP-SAT model (10,000), where a round's optimum refutes the open pairs
    of the blocks it leaves out; every part first searching near its first world, two to four types freed at a
    time (``LOCAL_MIN_TYPES`` = 1, ``LOCAL_TYPES`` = 2-4), or none - gives the brute force's linkability (``full``), or its least linkability and its disclosed
    individuals (``min``: 004, Definition 3.3; below a ``ceiling`` known from elsewhere, the least linkability
    only where it is below the ceiling)."""
    import solver.worlds.linkability as lk_module

    problem, bf = _problem(*case, max_assignments=3 ** 9 + 1)
    assume(bf["worlds"] > 0)
    blocks = [b for b in problem.blocks() if b.n_types]
    saved = lk_module.BATCH_TYPES, lk_module.LOCAL_MIN_TYPES, lk_module.LOCAL_TYPES
    lk_module.BATCH_TYPES, (lk_module.LOCAL_MIN_TYPES, lk_module.LOCAL_TYPES) = batch_types, local_types
    try:
        answers = lk_module.decide_coupled_all(problem, [(b, _block_values(problem, b)) for b in blocks],
                                               time_limit=20, scope=scope, ceiling=ceiling)
    finally:
        lk_module.BATCH_TYPES, lk_module.LOCAL_MIN_TYPES, lk_module.LOCAL_TYPES = saved
    least, disclosed, truth_least, truth_disclosed = [], set(), [], set()
    for block, (lk, exact, witnesses, proven) in zip(blocks, answers):
        assert exact
        assert not (proven & ~lk).any()
        for t, mem in enumerate(block.members):
            for p in mem.tolist():
                truth = bf["linkable"][p]
                assert not (proven[t] & ~truth).any() and not (truth & ~lk[t]).any()
                if scope == "full":
                    assert np.array_equal(lk[t], truth)
                least.append(int(lk[t].sum()))
                truth_least.append(int(truth.sum()))
                disclosed |= {p} if lk[t].sum() == 1 else set()
                truth_disclosed |= {p} if truth.sum() == 1 else set()
    cap = ceiling if scope == "min" and ceiling is not None else math.inf
    assert min(min(least), cap) == min(min(truth_least), cap)
    assert disclosed == truth_disclosed


@given(persistent_sequences(max_size=7), st.sampled_from(["full", "min"]))
@settings(_SETTINGS, max_examples=40)
def test_a_prefix_linkability_carried_into_the_next_release(case, scope):
    """The ledger's gate carries a month's linkability into the next (issue 24): the engine's upper set over
    releases ``1 .. n - 1`` given as :attr:`~solver.worlds.problem.WorldsProblem.allowed` of releases ``1 .. n``
    (a world of the longer sequence restricted to the prefix is a world of the prefix) leaves the engine's
    answer the brute force's: linkability (``full``), or the least linkability and the disclosed individuals
    (``min``)."""
    import dataclasses

    tables, releases = case
    problem, bf = _problem(tables, releases, max_assignments=3 ** 7 + 1)
    assume(bf["worlds"] > 0)
    prefix, _ = _problem(tables[:-1], releases[:-1], max_assignments=3 ** 7 + 1)
    before = analyze(prefix, count=False, linkability=scope)
    allowed = np.ones((problem.n_individuals, problem.n_values), dtype=bool)
    where = {str(v): j for j, v in enumerate(problem.values)}
    cols = np.array([where[str(v)] for v in prefix.values], dtype=np.int64)
    rows = {str(x): i for i, x in enumerate(problem.individuals)}
    for i, x in enumerate(prefix.individuals):
        allowed[rows[str(x)]] = False
        allowed[rows[str(x)], cols] = before.linkable[i]
    a = analyze(dataclasses.replace(problem, allowed=allowed, _blocks=[]), count=False, linkability=scope)
    truth = bf["linkable"]
    if scope == "full":
        assert np.array_equal(a.linkable, truth)
    links = a.linkable.sum(axis=1)
    assert int(links.min()) == int(truth.sum(axis=1).min())
    assert set(np.flatnonzero(links == 1)) == set(np.flatnonzero(truth.sum(axis=1) == 1))


@given(persistent_sequences())
@_SETTINGS
def test_component_entry_point_from_plain_data(case):
    """solve_component on a pickled block (what an executor receives) gives the brute force's linkability and,
    multiplied over the blocks, its number of worlds."""
    import pickle

    from solver.worlds.component import solve_component

    problem, bf = _problem(*case)
    assume(bf["worlds"] > 0)
    total = 1
    for block in problem.blocks():
        out = pickle.loads(pickle.dumps(solve_component(pickle.loads(pickle.dumps(block)), problem.n_values,
                                                        count=True)))
        assert out["linkability_exact"]
        for t, mem in enumerate(block.members):
            for p in mem.tolist():
                assert np.array_equal(out["linkable"][t], bf["linkable"][p])
        for part in out["parts"]:
            assert part["exact"]
            total *= part["worlds"]
    assert total == bf["worlds"]


@st.composite
def partition_blocks(draw):
    """``(block, V, region)``: a block of 4-8 individuals (one per type), 2-3 releases, each a partition of the
    individuals present into 1-2 regions, with one group per region and value drawn from a true assignment of
    2-3 values - the single-edge shape of Mondrian-like releases, with room for other worlds."""
    from solver.worlds.problem import Block

    n = draw(st.integers(4, 8))
    V = draw(st.integers(2, 3))
    truth = np.array(draw(st.lists(st.integers(0, V - 1), min_size=n, max_size=n)))
    R = draw(st.integers(2, 3))
    present = np.array([[draw(st.booleans()) or k == 0 for k in range(R)] for _ in range(n)])
    region = np.array([[draw(st.integers(0, 1)) for k in range(R)] for _ in range(n)])
    groups, edges, counts, values = [], [], [], []
    for k in range(R):
        keys = sorted({(int(region[t, k]), int(truth[t])) for t in range(n) if present[t, k]})
        index = {key: g for g, key in enumerate(keys)}
        groups.append(np.arange(len(keys)))
        counts.append(np.array([sum(1 for t in range(n) if present[t, k] and (region[t, k], truth[t]) == key)
                                for key in keys], dtype=np.int64))
        values.append(np.array([v for _, v in keys], dtype=np.int64))
        edges.append(np.array([[t, index[key]] for t in range(n) if present[t, k] for key in keys
                               if key[0] == region[t, k]], dtype=np.int64).reshape(-1, 2))
    block = Block(releases=tuple(range(R)), members=tuple(np.array([t]) for t in range(n)), groups=tuple(groups),
                  edges=tuple(edges), present=present, group_count=tuple(counts), group_value=tuple(values))
    return block, V, region


def _partition_linkable(block, V, region) -> np.ndarray:
    """Brute force over every assignment of values: linkable pairs of the block (each region of each release
    must hold its groups' values exactly)."""
    import itertools

    n, R = block.n_types, len(block.releases)
    want = [{(int(region[t, k]), int(block.group_value[k][g])): int(block.group_count[k][g])
             for t, g in block.edges[k].tolist()} for k in range(R)]
    out = np.zeros((n, V), dtype=bool)
    for values in itertools.product(range(V), repeat=n):
        ok = True
        for k in range(R):
            got: dict = {}
            for t in range(n):
                if block.present[t, k]:
                    got[int(region[t, k]), values[t]] = got.get((int(region[t, k]), values[t]), 0) + 1
            if got != want[k]:
                ok = False
                break
        if ok:
            out[np.arange(n), list(values)] = True
    return out


@given(partition_blocks(), st.randoms(use_true_random=False))
@settings(_SETTINGS, max_examples=60)
def test_worlds_near_a_world_are_worlds(case, rnd):
    """:func:`solver.worlds.linkability._solve_near` frees some types of a block, keeps every other type's values
    and transport of a first world, and solves the freed types alone: every pair it proves is linkable in the
    brute force over assignments (its world, with the kept types, is a world of the block), its witness counts
    every type's members once, and with every type freed it proves every linkable pair some world realizes
    beside the first one's, when one exists (the small model is then the whole block)."""
    import solver.worlds.linkability as lk_module

    block, V, region = case
    truth = _partition_linkable(block, V, region)
    cand = _block_values(SimpleNamespace(n_values=V), block)  # every value of an adjacent group
    tw = lk_module._TypeWorldModel(block, cand)
    status, _, solver = tw.solve(10)
    assert status == "feasible"
    values = solver.response_proto.solution
    for attempt in range(6):  # five random neighbourhoods, then every type
        free = sorted(rnd.sample(range(block.n_types), rnd.randint(1, block.n_types))) if attempt < 5 else \
            list(range(block.n_types))
        state = lk_module._PartState(cand)
        state.settle(tw.values_of(values))
        before = state.linkable.copy()
        lk_module._solve_near(block, state, free, lk_module._edge_flows(tw, values), tw.values_of(values), 99)
        assert not (state.linkable & ~truth).any()
        for world in state.witnesses.values():
            for tt in range(block.n_types):
                assert sum(c for (x, _), c in world.items() if x == tt) == 1
    if (truth & ~before).any():
        assert (state.linkable & ~before).any()


@given(partition_blocks(), st.randoms(use_true_random=False))
@settings(_SETTINGS, max_examples=60)
def test_neighbourhoods_are_nearest_first(case, rnd):
    """:meth:`solver.worlds.linkability._Neighbours.around` (the types freed around fractional or undecided types)
    keeps the seeds, takes as many types as asked (or every type reachable from the seeds), and never skips a
    nearer type for a farther one: distances are breadth first over the graph of types that share a group in some
    release, computed by networkx from the edges alone."""
    import networkx as nx

    import solver.worlds.linkability as lk_module

    block = case[0]
    graph = nx.Graph()
    graph.add_nodes_from(range(block.n_types))
    for k, edges in enumerate(block.edges):
        for g in np.unique(edges[:, 1]):
            members = edges[edges[:, 1] == g, 0].tolist()
            graph.add_edges_from((a, b) for a in members for b in members if a != b)
    near = lk_module._Neighbours(block)
    for _ in range(5):
        seeds = sorted(rnd.sample(range(block.n_types), rnd.randint(1, 3)))
        size = rnd.randint(len(seeds), block.n_types + 1)
        got = near.around(seeds, size)
        distance = nx.multi_source_dijkstra_path_length(graph, seeds)
        assert got == sorted(got) and set(seeds) <= set(got) and len(set(got)) == len(got)
        assert len(got) == min(size, len(distance))
        left = set(distance) - set(got)
        if left:
            assert max(distance[t] for t in got) <= min(distance[t] for t in left)


def _first_world(block, cand):
    """A world of a block by CP-SAT: ``(type-world model, solution vector)``."""
    import solver.worlds.linkability as lk_module

    tw = lk_module._TypeWorldModel(block, cand)
    status, _, solver = tw.solve(10)
    assert status == "feasible"
    return tw, np.array(solver.response_proto.solution, dtype=np.int64)  # a copy: the solver's goes with it


@given(persistent_sequences(max_size=7), st.integers(0, 2 ** 32 - 1))
@settings(_SETTINGS, max_examples=40)
def test_relaxation_refutes_with_checked_certificates_and_its_worlds_are_worlds(case, seed):
    """:mod:`solver.worlds.relaxation` against the brute force over assignments: every pair
    :meth:`~solver.worlds.relaxation.Relaxation.refute` refutes is linkable to none of the type's members in any
    world; a vertex :meth:`~solver.worlds.relaxation.Relaxation.integral` accepts is a world (every pair it
    realizes is linkable, every type's members counted once); a point that breaks one equality is no world; and a
    vector ``y`` that is not a certificate - the LP's own with one entry changed - proves nothing the brute force
    says is linkable."""
    import solver.worlds.linkability as lk_module
    from solver.worlds.relaxation import Relaxation

    problem, bf = _problem(*case, max_assignments=3 ** 7 + 1)
    assume(bf["worlds"] > 0)
    rng = np.random.default_rng(seed)
    for block in problem.blocks():
        cand = _block_values(problem, block)
        truth = np.array([np.any([bf["linkable"][p] for p in mem.tolist()], axis=0) for mem in block.members])
        tw, values = _first_world(block, cand)
        relax = Relaxation(block, cand)
        x0 = relax.point(tw.values_of(values), lk_module._edge_flows(tw, values))
        assert relax.is_world(x0)
        refuted = relax.refute(x0)
        assert not (refuted & truth).any()
        weight = rng.random(relax.n_pairs)
        point = relax.vertex(weight)
        x = None if point is None else relax.integral(point)
        if x is not None:
            assert relax.is_world(x)
            for (t, v), c in relax.world_of(x).items():
                assert c == 0 or truth[t, v]
            assert all(sum(c for (s, _), c in relax.world_of(x).items() if s == t) == len(mem)
                       for t, mem in enumerate(block.members))
        broken = x0.copy()
        broken[0] += 1
        assert not relax.is_world(broken)
        linkable_zero = np.flatnonzero((x0[:relax.n_pairs] == 0) & truth[relax.pairs[:, 0], relax.pairs[:, 1]])
        if len(linkable_zero):
            y = rng.integers(-3, 4, relax.a.shape[0]).astype(float)
            proven = relax._certified(x0, linkable_zero, y)
            assert proven is None or not proven.any()


@given(partition_blocks())
@settings(_SETTINGS, max_examples=60)
def test_relaxation_on_single_edge_releases(case):
    """On Mondrian-shaped blocks (:func:`partition_blocks`): the relaxation's refutations are pairs no assignment
    realizes, and :func:`solver.worlds.linkability._relaxed` - refutations, vertices, fractional vertices
    completed by CP-SAT - proves only linkable pairs and refutes only unlinkable ones, each proven pair's witness
    a world of the block."""
    import solver.worlds.linkability as lk_module
    from solver.worlds.relaxation import Relaxation

    block, V, region = case
    truth = _partition_linkable(block, V, region)
    cand = _block_values(SimpleNamespace(n_values=V), block)  # every value of an adjacent group
    tw, values = _first_world(block, cand)
    relax = Relaxation(block, cand)
    state = lk_module._PartState(cand)
    x0 = relax.point(tw.values_of(values), lk_module._edge_flows(tw, values))
    world, transport = lk_module._relaxed(relax, state, x0, 99, deadline=float("inf"))
    assert relax.is_world(relax.point(world, transport))
    assert not (state.linkable & ~truth).any() and not (state.refuted & truth).any()
    for (t, v), world in state.witnesses.items():
        assert world[t, v] > 0
        assert all(sum(c for (s, _), c in world.items() if s == tt) == 1 for tt in range(block.n_types))


def test_relaxation_refutes_what_counts_force():
    """Two releases: type 0 alone in a group of value 0, then types 0 and 1 in one region with one record of
    value 0 and one of value 1.  Every value of an adjacent group is a candidate of both types; the relaxation
    refutes exactly (0, 1) and (1, 0), with a certificate, from the only world."""
    from solver.worlds.problem import Block
    from solver.worlds.relaxation import Relaxation

    block = Block(releases=(0, 1), members=(np.array([0]), np.array([1])), groups=(np.arange(1), np.arange(2)),
                  edges=(np.array([[0, 0]]), np.array([[0, 0], [0, 1], [1, 0], [1, 1]])),
                  present=np.array([[True, True], [False, True]]), group_count=(np.array([1]), np.array([1, 1])),
                  group_value=(np.array([0]), np.array([0, 1])))
    cand = np.ones((2, 2), dtype=bool)
    tw, values = _first_world(block, cand)
    import solver.worlds.linkability as lk_module

    relax = Relaxation(block, cand)
    x0 = relax.point(tw.values_of(values), lk_module._edge_flows(tw, values))
    assert relax.world_of(x0) == {(0, 0): 1, (0, 1): 0, (1, 0): 0, (1, 1): 1}
    assert relax.refute(x0).tolist() == [[False, True], [True, False]]
