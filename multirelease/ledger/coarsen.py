"""Coarser classes for a repair (issue 29, item 2: "a coarser generalization of the groups the witnesses name").

A failing gate's witnesses name persons (:func:`multirelease.ledger.repair.offenders`): the update-graph attack
pins a value through the class a person sits in (Li & Zhou, section III: the candidate values of a record are
those of its QI-group), a possible world discloses an individual of a class (Shmueli & Tassa, section 3).  A
coarser generalization of exactly those classes widens what the adversary can tell of them and leaves the rest
of the release as the publisher made it.  Merging two classes of a k-anonymous, distinct- or entropy-l-diverse
release keeps it so (the union of two classes holds at least as many records and distinct values as either, and
the entropy of a mixture is at least the smaller entropy), so the publisher's own guarantee stays true - the
gate judges it anyway, with every other line.

**The choice is exact.**  Each named class (a class holding a named person) is either *merged* with one other
class of the release - published as the closure of the union (Shmueli & Tassa, Definition 2.2), the loss of its
rows rising to that of the union - or has its named persons *withheld* (taken out of the month's release, their
loss counting 1, only where the class keeps ``min_size`` records).  Merges are disjoint pairs: a class joins at
most one merge.  CP-SAT picks, among each named class's :data:`PARTNERS` cheapest partners, the set of merges and
withholdings that covers every named class at the least added loss - an exact minimum of that space (the loss in
exact integers: the numerator of Iyengar's LM times the least common multiple of the ``|A_m| - 1``, when it is
small enough, else rounded to a millionth of a record's loss, and the docstring of :func:`plan_merges` says
which).  A deterministic time limit bounds the solve; if it stops before proving the optimum, the plan is its
best and the bound it proved is reported (``Plan.bound``).  The gate then judges the merged release; a merged
class may meet a new witness, whose classes the next round merges in turn.

The merged release is reordered as the publisher orders its own (classes in random order, rows in random order
inside a class, groups numbered in file order; seeded): the order of the file shows nothing of the classes that
were merged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from multirelease.model.metrics import row_loss
from multirelease.model.release import Release, ReleaseTruth

__all__ = ["PARTNERS", "Plan", "plan_merges", "merge_classes"]

#: partners offered to each named class (its cheapest merges)
PARTNERS = 8
#: CP-SAT's deterministic time limit for a plan (seconds of its deterministic clock)
DETERMINISTIC_LIMIT = 20.0
#: largest integer scale for the exact loss (beyond it the loss is rounded to a millionth of a record's)
_EXACT_SCALE = 10 ** 7


@dataclass(frozen=True)
class Plan:
    """The classes to merge (pairs of class indices of the release), the rows to withhold, the added loss
    (LM numerator, a record's full loss being ``q``), the bound CP-SAT proved and whether it proved the plan
    optimal, and whether the loss was exact (integers) or rounded."""

    pairs: tuple
    withheld_rows: tuple
    added: float
    bound: float
    optimal: bool
    exact_loss: bool


def _regions(release: Release) -> tuple[np.ndarray, np.ndarray, dict]:
    """Every class's region (its rows' common generalized values) and its subsets masks."""
    lo, hi = release.class_regions
    masks = {}
    for name, m in release.masks.items():
        out = np.zeros(release.n_classes, dtype=np.uint64)
        np.bitwise_or.at(out, release.classes, m)
        masks[name] = out
    return lo, hi, masks


def _union_loss(release: Release, lo, hi, masks, a: int, others: np.ndarray) -> np.ndarray:
    """The LM numerator of one row of class ``a`` merged with each of ``others``."""
    ulo = np.minimum(lo[a][None, :], lo[others])
    uhi = np.maximum(hi[a][None, :], hi[others])
    ulo, uhi = release._closed(ulo, uhi)
    umasks = {n: m[a] | m[others] for n, m in masks.items()}
    return row_loss(release, ulo, uhi, umasks)


def _scale(release: Release) -> tuple[int, bool]:
    """The integer the loss is multiplied by: the lcm of the ``|A_m| - 1`` when small (exact), else 10^6."""
    lcm = 1
    for a in release.qi_attributes:
        lcm = math.lcm(lcm, max(a.hierarchy.n_leaves - 1, 1))
    return (lcm, True) if lcm <= _EXACT_SCALE else (10 ** 6, False)


def plan_merges(release: Release, loss: np.ndarray, named_rows: Sequence[int], *, min_size: int = 1,
                partners: int = PARTNERS) -> Plan | None:
    """The cheapest way to change every class holding a row of ``named_rows`` (module docstring): CP-SAT over
    the merges (each named class with one of its ``partners`` cheapest partners, disjoint pairs) and the
    withholdings (the named rows of a class that keeps ``min_size`` records).  ``loss``: each row's LM
    numerator as published.  ``None`` when no named class can be changed."""
    from ortools.sat.python import cp_model

    named_rows = np.unique(np.asarray(named_rows, dtype=np.int64))
    if len(named_rows) == 0 or release.n_classes < 1:
        return None
    cls = release.classes
    sizes = release.class_sizes
    lo, hi, masks = _regions(release)
    here = row_loss(release, lo, hi, masks)  # one row of each class, as published
    named = np.unique(cls[named_rows])
    scale, exact = _scale(release)
    q = release.lo.shape[1]
    edges: dict[tuple[int, int], int] = {}
    for a in named:
        others = np.flatnonzero(np.arange(release.n_classes) != a)
        if len(others) == 0:
            continue
        union = _union_loss(release, lo, hi, masks, int(a), others)
        added = (sizes[a] + sizes[others]) * union - sizes[a] * here[a] - sizes[others] * here[others]
        units = np.rint(added * scale).astype(np.int64)
        for j in np.lexsort((others, units))[:partners]:
            key = (int(min(a, others[j])), int(max(a, others[j])))
            edges[key] = int(units[j])
    m = cp_model.CpModel()
    x = {e: m.new_bool_var(f"merge_{e[0]}_{e[1]}") for e in sorted(edges)}
    withhold_cost = {}
    rows_of = {int(a): named_rows[cls[named_rows] == a] for a in named}
    for a, rows in rows_of.items():
        if sizes[a] - len(rows) >= max(min_size, 1):
            withhold_cost[a] = int(np.rint((q - loss[rows]).sum() * scale))
    y = {a: m.new_bool_var(f"withhold_{a}") for a in sorted(withhold_cost)}
    touching: dict[int, list] = {}
    for (a, b), v in x.items():
        touching.setdefault(a, []).append(v)
        touching.setdefault(b, []).append(v)
    for a in rows_of:
        options = touching.get(a, []) + ([y[a]] if a in y else [])
        if not options:
            return None
        m.add(sum(options) == 1)
    for c, vs in touching.items():
        if c not in rows_of:
            m.add(sum(vs) <= 1)
    m.minimize(sum(edges[e] * v for e, v in x.items()) + sum(withhold_cost[a] * v for a, v in y.items()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1  # deterministic: the proposal --accept writes is the one shown
    solver.parameters.max_deterministic_time = DETERMINISTIC_LIMIT
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    pairs = tuple(e for e, v in x.items() if solver.value(v))
    gone = tuple(int(r) for a, v in y.items() if solver.value(v) for r in rows_of[a])
    return Plan(pairs, gone, solver.objective_value / scale, solver.best_objective_bound / scale,
                status == cp_model.OPTIMAL, exact)


def merge_classes(release: Release, truth: ReleaseTruth, pairs: Sequence[tuple[int, int]],
                  withheld_rows: Sequence[int], rng: np.random.Generator) -> tuple[Release, ReleaseTruth]:
    """``release`` with each pair of classes published as one (the closure of their union), the rows
    ``withheld_rows`` left out, classes and rows in a fresh random order (module docstring)."""
    from dataclasses import replace

    cls = release.classes.copy()
    label = np.arange(release.n_classes)
    for a, b in pairs:
        label[b] = a
    cls = label[cls]
    keep = np.ones(len(release), dtype=bool)
    keep[np.asarray(withheld_rows, dtype=np.int64)] = False
    kept = np.flatnonzero(keep)
    groups = np.unique(cls[kept])
    order = rng.permutation(len(groups))
    rows = np.concatenate([rng.permutation(kept[cls[kept] == groups[g]]) for g in order]) if len(kept) else kept
    new_cls = cls[rows]
    _, first = np.unique(new_cls, return_index=True)
    rank = np.empty(len(groups), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(groups))  # groups numbered in file order
    number = rank[np.searchsorted(groups, new_cls)]
    lo = release.lo[rows].astype(np.int64)
    hi = release.hi[rows].astype(np.int64)
    glo = np.full((len(groups), lo.shape[1]), np.iinfo(np.int32).max, dtype=np.int64)
    ghi = np.full((len(groups), lo.shape[1]), -1, dtype=np.int64)
    np.minimum.at(glo, number, lo)
    np.maximum.at(ghi, number, hi)
    glo, ghi = release._closed(glo, ghi)
    masks = {}
    for name, mk in release.masks.items():
        g = np.zeros(len(groups), dtype=np.uint64)
        np.bitwise_or.at(g, number, mk[rows])
        masks[name] = g[number]
    out = replace(release, lo=glo[number], hi=ghi[number], masks=masks, sensitive=release.sensitive[rows],
                  other=None if release.other is None else release.other.iloc[rows].reset_index(drop=True),
                  group=number + 1, uid=None if release.uid is None else release.uid[rows])
    return out, ReleaseTruth(person=truth.person[rows], counterfeit=truth.counterfeit[rows])
