"""m-Distinct's building blocks against their definitions (Li & Zhou, section V, Algorithms 2-3).

* ``allowed_masks`` (Hall's theorem over subsets) against a brute force over every system of distinct
  representatives (itertools), and against one matching per edge;
* ``intersection_key`` / ``intersection_keys`` (maps enumerated) against the assignment solver's plan (scipy's
  ``linear_sum_assignment``, what Algorithm 2's highest-scored intersection was computed with);
* the array assignment (``assign_old`` / ``assign_new``, eq. 3) against the one-record-one-bucket scan it
  replaced, on random buckets with small coordinates (many ties): the same rows in the same entries;
* the balancing of issue 13: ``spread_deficits`` against every placement of the rows (itertools) - it returns
  one, any feasible deficit vector can come out, and the deficits of unconstrained entries are uniform -, and
  ``sampled_counterfeit_values`` against ``counterfeit_values``' feasibility and its preferences' frequencies.
"""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from publishers.m_invariance._assign import TOL, _scan_max, _scan_min, assign_new, assign_old
from scipy import stats

from publishers.m_invariance._distinct_parts import (Bucket, _allowed_by_matchings, allowed_masks, allowed_masks_of,
                                                     bits, counterfeit_values, intersection_key, intersection_keys,
                                                     intersection_plan, sampled_counterfeit_values, spread_deficits)

masks = st.integers(0, (1 << 7) - 1)


def _brute_allowed(entries):
    """Every edge (entry, value) of some choice of distinct values, one per entry, each in its entry's CUS."""
    out = [0] * len(entries)
    for choice in itertools.product(*(bits(e) for e in entries)):
        if len(set(choice)) == len(choice):
            for ei, v in enumerate(choice):
                out[ei] |= 1 << v
    return tuple(out)


@settings(max_examples=300)  # cheap: entries of up to 6 masks over 7 values
@given(st.lists(masks, min_size=0, max_size=6))
def test_allowed_masks_is_every_edge_of_a_saturating_matching(entries):
    entries = tuple(entries)
    expected = _brute_allowed(entries)
    assert allowed_masks.__wrapped__(entries) == expected
    assert _allowed_by_matchings(entries) == expected


def test_allowed_masks_examples():
    a, b = 1, 2
    assert allowed_masks((1 << a, 1 << a | 1 << b)) == (1 << a, 1 << b)  # the module docstring's {a}, {a, b}
    assert allowed_masks((1 << a, 1 << a)) == (0, 0)  # {a}, {a}: no system of distinct representatives


def _solver_key(a, b):
    plan = intersection_plan(a, b)
    return None if plan is None else tuple(sorted(plan))


@settings(max_examples=300)  # cheap: up to 7 masks a side
@given(st.integers(1, 7).flatmap(lambda n: st.tuples(st.lists(masks.filter(bool), min_size=n, max_size=n),
                                                       st.lists(masks.filter(bool), min_size=n, max_size=n))))
def test_intersection_key_is_the_assignment_solvers(pair):
    a, b = (tuple(sorted(x)) for x in pair)
    assert intersection_key(a, b) == _solver_key(a, b)


@settings(max_examples=60)  # each example scores up to 66 pairs
@given(st.integers(1, 6).flatmap(lambda n: st.lists(st.lists(st.integers(0, 5).map(lambda v: 0b111 << v), min_size=n,
                                                              max_size=n).map(lambda x: tuple(sorted(x))),
                                                     min_size=0, max_size=12, unique=True)))
def test_intersection_keys_of_a_group(group):
    # overlapping windows of three values: many equal shares, so ties between maps are common
    expected = [_solver_key(group[i], group[j]) for i in range(len(group)) for j in range(i + 1, len(group))]
    assert intersection_keys(group) == expected


# ---------------------------------------------------------------------- the assignment against the scan
def _scan_old(order, cand, buckets, vals, points, inv_spans):
    """Algorithm 3 for old records as the publisher scanned it before the arrays (commit 28ce174)."""
    for r in order:
        v = int(vals[r])
        best = None
        for k in cand[r]:
            b = buckets[k]
            eis = [ei for ei, a in enumerate(b.allowed) if a >> v & 1]
            ei = min(eis, key=lambda e: len(b.rows[e]))
            lam = b.lam(points[r], inv_spans)
            score = (1.0 / lam) if (b.freq.get(v, 0) < b.d and len(b.rows[ei]) < b.d) else -lam
            if best is None or score > best[0] + 1e-12:
                best = (score, k, ei)
        buckets[best[1]].add(best[2], r, v, points[r], inv_spans)


def _scan_new(buckets, new_rows, vals, points, inv_spans):
    slots = {}
    for b in [b for b in buckets.values() if b.n]:
        for ei, a in enumerate(b.allowed):
            if len(b.rows[ei]) < b.d:
                for v in bits(a):
                    if b.freq.get(v, 0) < b.d:
                        slots.setdefault(v, []).append((b, ei))
    leftover = []
    for r in new_rows:
        v = int(vals[r])
        best = None
        cand = slots.get(v, [])
        alive = []
        for b, ei in cand:
            if len(b.rows[ei]) >= b.d or b.freq.get(v, 0) >= b.d:
                continue
            alive.append((b, ei))
            lam = b.lam(points[r], inv_spans)
            if best is None or lam < best[0] - 1e-12:
                best = (lam, b, ei)
        if len(alive) < len(cand):
            slots[v] = alive
        if best is None:
            leftover.append(r)
        else:
            best[1].add(best[2], r, v, points[r], inv_spans)
    return leftover


@settings(max_examples=80)  # each example assigns up to 60 records to up to 8 buckets, twice
@given(data=st.data())
def test_array_assignment_is_the_scan(data):
    V, q = 6, 2
    keys = data.draw(st.lists(st.lists(st.integers(1, (1 << V) - 1), min_size=2, max_size=3)
                              .map(lambda x: tuple(sorted(x))), min_size=1, max_size=8, unique=True))
    keys = [k for k in keys if any(allowed_masks(k))]
    if not keys:
        return
    n_old = data.draw(st.integers(0, 40))
    n_new = data.draw(st.integers(0, 20))
    spans = [3.0, 5.0]
    inv_spans = [1.0 / s for s in spans]
    points, vals, cand, old = [], [], {}, []
    for r in range(n_old + n_new):
        points.append([data.draw(st.integers(0, int(s) - 1)) for s in spans])  # small grids: equal lambdas
        if r < n_old:
            ks = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=len(keys), unique=True))
            common = [v for v in range(V) if all(any(a >> v & 1 for a in allowed_masks(k)) for k in ks)]
            if common:
                vals.append(data.draw(st.sampled_from(common)))
                cand[r] = ks
                old.append(r)
                continue
        vals.append(data.draw(st.integers(0, V - 1)))
    vals = np.asarray(vals, dtype=np.int64)
    order = sorted(old, key=lambda r: (len(cand[r]), r))
    new_rows = [r for r in range(len(vals)) if r not in cand]

    def fresh():
        return {k: Bucket(k, q, (k,), allowed_masks(k)) for k in keys}

    ref = fresh()
    _scan_old(order, cand, ref, vals, points, inv_spans)
    ref_left = _scan_new(ref, new_rows, vals, points, inv_spans)
    got = fresh()
    arrays = assign_old(order, cand, got, vals, points, inv_spans, V)
    got_left = assign_new(arrays, np.asarray(new_rows, dtype=np.int64), vals, points)
    assert got_left == ref_left
    for k in keys:
        assert got[k].rows == ref[k].rows
        assert (got[k].freq, got[k].d, got[k].n, got[k].lo, got[k].hi, got[k].area) == \
            (ref[k].freq, ref[k].d, ref[k].n, ref[k].lo, ref[k].hi, ref[k].area)


def _loop(values, better):
    best = 0
    for i in range(1, len(values)):
        if better(values[i], values[best]):
            best = i
    return best


@settings(max_examples=200)  # cheap: up to 30 floats
@given(st.lists(st.integers(0, 8), min_size=1, max_size=30), st.floats(0.1, 10.0))
def test_scans_keep_the_loops_choice(steps, scale):
    # values 4e-13 apart: within and beyond the 1e-12 tie tolerance
    values = np.asarray([scale * (1.0 + k * 4e-13) for k in steps])
    assert _scan_max(values) == _loop(values, lambda a, b: a > b + TOL)
    assert _scan_min(values) == _loop(values, lambda a, b: a < b - TOL)


def test_scan_examples():
    assert _scan_max(np.array([1.0, 1.0 + 5e-13, 1.0 + 1.2e-12])) == 2
    assert _scan_max(np.array([1.0, 1.0 + 1.5e-12, 1.0 + 2e-12])) == 1  # not the argmax: within 1e-12 of 1
    assert _scan_min(np.array([2.0, 2.0 - 1.5e-12, 2.0 - 2e-12])) == 1


@settings(max_examples=100)  # cheap: up to 30 signatures of up to 6 masks
@given(st.lists(st.lists(masks, min_size=1, max_size=6).map(tuple), max_size=30))
def test_allowed_masks_of_many_signatures(keys):
    got = allowed_masks_of(keys)
    assert set(got) == set(keys)
    for key in keys:
        assert got[key] == _brute_allowed(key)


# ---------------------------------------------------------------------- balancing (issue 13)
def _placements(allowed, values, delta):
    """Every placement of rows with these values on entries that allow them, at most ``delta`` per entry (brute
    force): the set of deficit vectors ``delta - count``."""
    out = set()
    for choice in itertools.product(*([e for e, a in enumerate(allowed) if a >> v & 1] for v in values)):
        counts = np.bincount(np.asarray(choice, dtype=np.int64), minlength=len(allowed))
        if counts.max(initial=0) <= delta:
            out.add(tuple(int(delta - c) for c in counts))
    return out


@st.composite
def buckets(draw):
    """A bucket as balancing sees it: allowed masks over 4 values, rows on allowed edges, a delta."""
    k = draw(st.integers(2, 4))
    allowed = draw(st.lists(st.integers(1, 15), min_size=k, max_size=k))
    rows = [[] for _ in range(k)]
    values = []
    for _ in range(draw(st.integers(1, 7))):
        e = draw(st.integers(0, k - 1))
        v = draw(st.sampled_from(bits(allowed[e])))
        rows[e].append(len(values))
        values.append(v)
    delta = max(len(r) for r in rows) + draw(st.integers(0, 1))
    return allowed, rows, np.asarray(values, dtype=np.int64), delta


@settings(max_examples=150)  # cheap: at most 4^7 placements
@given(buckets(), st.integers(0, 2**32 - 1))
def test_spread_deficits_returns_a_placement(bucket, seed):
    allowed, rows, vals, delta = bucket
    out = spread_deficits(allowed, rows, vals, delta, np.random.default_rng(seed))
    assert sorted(r for e in out for r in e) == sorted(r for e in rows for r in e)
    assert all(allowed[e] >> int(vals[r]) & 1 for e, lst in enumerate(out) for r in lst)
    assert tuple(delta - len(e) for e in out) in _placements(allowed, vals.tolist(), delta)


def test_spread_deficits_reaches_every_feasible_deficit_vector():
    """Entries {a, b}, {b}, {b, c}, rows a, b, b, c and delta 2: every feasible deficit vector (brute force,
    more than one) comes out over 300 seeds."""
    allowed, vals = [0b011, 0b010, 0b110], np.array([0, 1, 1, 2])
    rows = [[0, 1], [2], [3]]
    feasible = _placements(allowed, vals.tolist(), 2)
    seen = {tuple(2 - len(e) for e in spread_deficits(allowed, rows, vals, 2, np.random.default_rng(s)))
            for s in range(300)}
    assert seen == feasible and len(feasible) > 1


def test_spread_deficits_is_uniform_over_free_entries():
    """Three entries that allow every value, six rows, delta 3: the three deficits fall on each entry a third of
    the time (chi-square over 3,000 seeds); Algorithm 3's scan would leave them where the rows were not."""
    allowed, vals = [0b111] * 3, np.array([0, 0, 1, 1, 2, 2])
    rows = [[0, 1, 2], [3, 4, 5], []]
    hits = np.zeros(3)
    for s in range(3000):
        out = spread_deficits(allowed, rows, vals, 3, np.random.default_rng(s))
        hits += [3 - len(e) for e in out]
    assert stats.chisquare(hits).pvalue > 1e-3, hits


@settings(max_examples=200)  # cheap: a handful of max-flows per example
@given(st.lists(st.integers(1, 31), min_size=1, max_size=4), st.data())
def test_sampled_counterfeit_values_is_feasible_when_the_flow_is(entries, data):
    V = 5
    counts = data.draw(st.lists(st.integers(0, 2), min_size=len(entries), max_size=len(entries)))
    delta = data.draw(st.integers(1, 3))
    freq = {v: data.draw(st.integers(0, delta)) for v in range(V)}  # the real rows keep every value <= delta
    prefs = [np.asarray(data.draw(st.lists(st.floats(0, 5), min_size=V, max_size=V))) for _ in entries]
    fill = sampled_counterfeit_values(entries, counts, freq, delta, V, np.random.default_rng(0), prefs)
    assert (fill is None) == (counterfeit_values(entries, counts, freq, delta, V) is None)
    if fill is not None:
        assert [len(f) for f in fill] == counts
        assert all(entries[i] >> v & 1 for i, f in enumerate(fill) for v in f)
        total = dict(freq)
        for f in fill:
            for v in f:
                total[v] = total.get(v, 0) + 1
        assert max(total.values()) <= delta


def test_sampled_counterfeit_values_follow_the_preference():
    """One counterfeit, entry {0, 1, 2, 3}, value 3 full: the values 0, 1, 2 come out as 1 : 2 : 5 (the
    preference without the full value), chi-square over 4,000 seeds."""
    pref = [np.array([1.0, 2.0, 5.0, 9.0])]
    hits = np.zeros(4)
    for s in range(4000):
        hits[sampled_counterfeit_values([0b1111], [1], {3: 2}, 2, 4, np.random.default_rng(s), pref)[0][0]] += 1
    assert hits[3] == 0
    assert stats.chisquare(hits[:3], 4000 * np.array([1, 2, 5]) / 8).pvalue > 1e-3, hits
