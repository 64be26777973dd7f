"""Coarser classes for a repair (issue 29, :mod:`multirelease.ledger.coarsen`): CP-SAT's choice of merges and
withholdings is the least added loss, checked against a brute force over every way to change the named classes
(disjoint pairs, withholding where a class keeps ``min_size``); the merged release is a truthful, coarser
release of the same records (every row's published region contains its raw values, each merged class is the
closure of its rows), and its loss is the plan's."""
from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from multirelease.ledger.coarsen import merge_classes, plan_merges
from multirelease.model.metrics import row_loss
from multirelease.model.principles import Principle
from publishers.mondrian import mondrian_partition, release_from_partition

from strategies_tables import schemas_and_tables


def _release(schema, table, k, seed):
    quasi = list(schema.quasi)
    parts = mondrian_partition(table.qi_codes, np.zeros(len(table), np.int64), [schema[n] for n in quasi],
                               Principle(k=k))
    return release_from_partition(table, schema.published, parts, np.random.default_rng(seed))


def _brute(release, loss, named_rows, min_size):
    """The least added loss (LM numerator, a record's full loss q) over every assignment of each named class
    to a merge with another class (disjoint pairs) or to withholding its named rows, from the definitions."""
    cls, sizes = release.classes, release.class_sizes
    q = release.lo.shape[1]
    named = sorted({int(cls[r]) for r in named_rows})
    rows_of = {a: [r for r in named_rows if cls[r] == a] for a in named}
    lo, hi = release.class_regions
    masks = {}
    for name, m in release.masks.items():
        out = np.zeros(release.n_classes, dtype=np.uint64)
        np.bitwise_or.at(out, cls, m)
        masks[name] = out

    def one(a):
        return float(row_loss(release, lo[[a]], hi[[a]], {n: m[[a]] for n, m in masks.items()})[0])

    def merged(a, b):
        ulo, uhi = release._closed(np.minimum(lo[[a]], lo[[b]]), np.maximum(hi[[a]], hi[[b]]))
        union = row_loss(release, ulo, uhi, {n: m[[a]] | m[[b]] for n, m in masks.items()})[0]
        return (sizes[a] + sizes[b]) * union - sizes[a] * one(a) - sizes[b] * one(b)

    options = []
    for a in named:
        mine = [("merge", b) for b in range(release.n_classes) if b != a]
        if sizes[a] - len(rows_of[a]) >= max(min_size, 1):
            mine.append(("withhold", a))
        options.append(mine)
    best = math.inf
    for pick in itertools.product(*options):
        used: dict[int, int] = {}
        pairs = set()
        cost = 0.0
        ok = True
        for a, (kind, b) in zip(named, pick):
            if kind == "withhold":
                used[a] = used.get(a, 0) + 1
                cost += sum(q - loss[r] for r in rows_of[a])
                continue
            pair = (min(a, b), max(a, b))
            if pair in pairs:  # two named classes merged with each other: one merge
                continue
            pairs.add(pair)
            used[a] = used.get(a, 0) + 1
            used[b] = used.get(b, 0) + 1
            cost += merged(a, b)
        # every named class in exactly one change, any other class in at most one merge
        if any(v > 1 for v in used.values()):
            ok = False
        if ok:
            best = min(best, cost)
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=schemas_and_tables(min_size=8, max_size=24, max_quasi=3), k=st.sampled_from([2, 3]),
       seed=st.integers(0, 2 ** 16), picks=st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=3),
       min_size=st.sampled_from([1, 2]))
def test_the_plan_is_the_least_added_loss_and_the_merged_release_is_it(data, k, seed, picks, min_size):
    schema, table = data
    assume(len(table) >= 2 * k)
    release, truth = _release(schema, table, k, seed)
    assume(2 <= release.n_classes <= 7)  # something to merge; the brute force's product stays small
    named_rows = sorted({p % len(release) for p in picks})
    loss = row_loss(release)
    plan = plan_merges(release, loss, named_rows, min_size=min_size, partners=release.n_classes)
    best = _brute(release, loss, named_rows, min_size)
    if plan is None:
        assert best == math.inf
        return
    assert plan.optimal and math.isclose(plan.added, best, rel_tol=0, abs_tol=1e-6)
    # the merged release: the same records less the withheld, each row's region containing its raw values, a
    # merged class the closure of its rows, and its loss the plan's
    out, out_truth = merge_classes(release, truth, plan.pairs, plan.withheld_rows, np.random.default_rng(seed))
    gone = {str(truth.person[r]) for r in plan.withheld_rows}
    assert sorted(map(str, out_truth.person)) == sorted(str(p) for p in truth.person if str(p) not in gone)
    where = {str(p): i for i, p in enumerate(table.ids)}
    raw = table.qi_codes[[where[str(p)] for p in out_truth.person]]
    assert (out.contains_points(raw)[np.arange(len(out)), np.arange(len(out))]).all()
    for rows in out.class_rows():
        lo, hi, _ = out.closure_of(rows)
        assert (out.lo[rows] == lo).all() and (out.hi[rows] == hi).all()
    assert out.n_classes == release.n_classes - len(plan.pairs)
    assert math.isclose(row_loss(out).sum() + release.lo.shape[1] * len(plan.withheld_rows) - loss.sum(),
                        plan.added, abs_tol=1e-6)
    # groups are numbered in file order and each group's rows are together
    first = [int(g) for g in dict.fromkeys(out.group.tolist())]
    assert first == list(range(1, out.n_classes + 1))


def test_a_merged_release_is_the_same_for_the_same_seed_and_its_order_is_fresh():
    from pathlib import Path

    import pandas as pd

    from multirelease.model.schema import Schema
    from multirelease.model.table import Table

    schema = Schema.from_mapping({"attributes": {"age": {"role": "quasi", "hierarchy": {"numeric": {"min": 0,
                                                                                                 "max": 15}}}}},
                                 base=Path("."))
    frame = pd.DataFrame({"age": [str(i) for i in range(16)]}, index=pd.Index([f"p{i}" for i in range(16)]))
    table = Table(schema, frame)
    release, truth = _release(schema, table, 2, 0)
    plan = plan_merges(release, row_loss(release), [0])
    assert plan is not None and len(plan.pairs) == 1 and not plan.withheld_rows
    a = merge_classes(release, truth, plan.pairs, (), np.random.default_rng(7))
    b = merge_classes(release, truth, plan.pairs, (), np.random.default_rng(7))
    assert list(a[1].person) == list(b[1].person) and (a[0].lo == b[0].lo).all()
    # the merged class: the two nearest ages' classes (an interval of 4 ages), the rest as published
    sizes = sorted(a[0].class_sizes.tolist())
    assert sizes == [2] * 6 + [4]
    merged_rows = a[0].class_rows()[int(np.argmax(a[0].class_sizes))]
    assert int(a[0].hi[merged_rows[0], 0] - a[0].lo[merged_rows[0], 0]) == 3

