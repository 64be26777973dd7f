"""The pieces of the sharded two-release engine (issue 28) against brute force: a request table's subset, the
region groups (connected components of the comparable region pairs, Fung et al. section 3.1: no buddy arc
leaves one) and the requests each shard is sent."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from solver.correspondence.crack import CrackRequest, RequestTable
from solver.correspondence.flow_shards import ShardedEngine, Shared


def _requests(draw, r1: int, r2: int) -> list[CrackRequest]:
    regions = (st.frozensets(st.integers(0, r1 - 1), max_size=3), st.frozensets(st.integers(0, r2 - 1), max_size=3))
    return draw(st.lists(st.builds(CrackRequest, t=st.integers(1, 2), j=st.integers(1, 2), cls=st.integers(0, 4),
                                   signature=st.tuples(*regions)), max_size=12))


@settings(deadline=None)
@given(st.data())
def test_a_request_tables_subset_holds_the_requests_taken(data):
    requests = _requests(data.draw, 6, 6)
    idx = data.draw(st.lists(st.integers(0, max(0, len(requests) - 1)), max_size=8)) if requests else []
    sub = RequestTable.of(requests).take(np.array(idx, np.int64))
    assert len(sub) == len(idx)
    assert [sub.request(k) for k in range(len(idx))] == [requests[i] for i in idx]


class _Nodes:  # what region_groups reads of the nodes: the number of regions
    def __init__(self, n: int):
        self.n_regions = n


@settings(deadline=None)
@given(st.data())
def test_region_groups_are_the_components_of_the_comparable_pairs_and_shards_get_the_requests_reaching_them(data):
    r1, r2 = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))
    pairs = data.draw(st.lists(st.tuples(st.integers(0, r1 - 1), st.integers(0, r2 - 1)), max_size=10))
    eng = ShardedEngine.__new__(ShardedEngine)
    eng.nodes = (_Nodes(r1), _Nodes(r2))
    eng.pairs = (np.array([a for a, _ in pairs], np.int64), np.array([b for _, b in pairs], np.int64))
    g1, g2 = eng.region_groups()
    # brute force: grow each region's group along the pairs until nothing is added
    reach = {("1", a): {("1", a)} for a in range(r1)} | {("2", b): {("2", b)} for b in range(r2)}
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            both = reach[("1", a)] | reach[("2", b)]
            for x in both:
                if reach[x] != both | reach[x]:
                    reach[x] = reach[x] | both
                    changed = True
    label = {("1", a): g1[a] for a in range(r1)} | {("2", b): g2[b] for b in range(r2)}
    for x in reach:
        for y in reach:
            assert (label[x] == label[y]) == (y in reach[x])
    # shards: groups dealt out at random; a shard gets every request with one of its regions of R2 in its
    # signature, ascending
    n_groups = int(max(g1.max(), g2.max())) + 1
    n_shards = data.draw(st.integers(1, 4))
    shard_of = np.array(data.draw(st.lists(st.integers(0, n_shards - 1), min_size=n_groups, max_size=n_groups)))
    requests = _requests(data.draw, r1, r2)
    eng._shared = Shared(RequestTable.of(requests), eng.pairs, ())
    got = eng._shard_requests(shard_of[g2], n_shards)
    for k in range(n_shards):
        want = [i for i, r in enumerate(requests) if any(shard_of[g2[b]] == k for b in r.signature[1])]
        assert got[k].tolist() == want
