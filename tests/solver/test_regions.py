"""Region location (Fung et al. section 3.1: a target lies in the regions of a release that contain its point):
the coded signatures of many points against containment checked point by point."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from solver.correspondence.regions import Nodes, signature_ids


def _regions(boxes: list[tuple[int, int, int, int]]) -> Nodes:
    lo = np.array([[a, c] for a, _, c, _ in boxes], np.int32).reshape(-1, 2)
    hi = np.array([[b, d] for _, b, _, d in boxes], np.int32).reshape(-1, 2)
    none = np.zeros(0, np.int64)
    return Nodes(lo=lo[:0], hi=hi[:0], masks=np.zeros((0, 0), np.uint64), mask_columns=(), value=none, cls=none,
                 count=none, region=none, region_lo=lo, region_hi=hi, region_masks=np.zeros((len(boxes), 0), np.uint64),
                 row_node=none, class_sizes=none)


def _box(v: int):
    side = st.tuples(st.integers(0, v), st.integers(0, v)).map(sorted)
    return st.tuples(side, side).map(lambda s: (s[0][0], s[0][1], s[1][0], s[1][1]))


@settings(deadline=None)
@given(st.data())
def test_signature_ids_number_the_sets_of_regions_holding_each_point(data):
    """Every point's set of regions per release, numbered as a walk over the releases would number them: the
    empty set first, then per release the single regions in their order, then the sets of several regions in the
    order of the first point lying in each (the reports list targets by these numbers)."""
    v = data.draw(st.integers(1, 6))
    releases = data.draw(st.lists(st.lists(_box(v), min_size=1, max_size=12), min_size=1, max_size=4))
    points = np.array(data.draw(st.lists(st.tuples(st.integers(0, v), st.integers(0, v)), max_size=40)),
                      np.int64).reshape(-1, 2)
    nodes = [_regions(boxes) for boxes in releases]
    ids, sets = signature_ids(nodes, points)

    expected: list[frozenset] = [frozenset()]
    holding = []
    for boxes in releases:
        mine = [frozenset(k for k, (a, b, c, d) in enumerate(boxes) if a <= x <= b and c <= y <= d)
                for x, y in points.tolist()]
        holding.append(mine)
        singles = sorted({next(iter(s)) for s in mine if len(s) == 1})
        for s in [frozenset((k,)) for k in singles] + [s for s in mine if len(s) > 1]:
            if s not in expected:
                expected.append(s)
    assert sets == expected
    assert ids.shape == (len(points), len(releases))
    for l, mine in enumerate(holding):
        assert [sets[k] for k in ids[:, l].tolist()] == mine
