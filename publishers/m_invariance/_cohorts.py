"""Record tracking for m-invariance and m-Distinct (``uid: true``): QI-groups as *cohorts* of uids.

Barbosa et al. (section 4) give the adversary a stable ``uid`` per record: for every two releases she
intersects the uid sets of a target's QI-groups (and removes the uids of a release the target is absent from).
Re-grouping the records of a signature bucket, as m-invariance and m-Distinct do, makes those intersections
small: one uid of a group of release 1 met again with one other uid in release 2 isolates both.  With
``uid: true`` the publishers therefore keep every QI-group as a **cohort**:

* a cohort is born with fresh uids (real rows and counterfeits alike: uniform random 48-bit draws, so a
  counterfeit's uid says nothing) and is published as one QI-group, with exactly the same uids, in every
  release until it retires (all its uids disappear together);
* a member whose new value its slot cannot take moves to a free slot of its cohort that can (its uid changes,
  its QI-group does not);
* a member that leaves, or whose new value no slot of its cohort can take, leaves a *ghost*: a counterfeit row with the
  slot's uid (counted in the counterfeit statistics), whose value is the slot's old value (m-invariance) or a
  value of the old value's candidate update set distinct from the others (m-Distinct), so the slot's value
  sequence stays a feasible update path;
* a cohort with no real member left retires; records that lost their slot, and new records, form new cohorts.

Every uid's candidate set, for every pair of releases, is then its whole cohort: ``m`` rows, ``m`` distinct
values in every release (:func:`publishers.m_invariance._guarantee.check_cohorts` checks the invariant, the intersection
attack the candidate sets).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from ._guarantee import PrivateRows

__all__ = ["fresh_uids", "Cohorts", "continue_cohorts"]


def fresh_uids(n: int, rng: np.random.Generator, taken: set) -> list[str]:
    """``n`` new uids: independent uniform 48-bit draws (12 hex digits), none in ``taken`` (updated)."""
    out: list[str] = []
    while len(out) < n:
        for x in rng.integers(0, 1 << 48, size=n - len(out), dtype=np.int64):
            u = f"{int(x):012x}"
            if u not in taken:
                taken.add(u)
                out.append(u)
    return out


@dataclass
class Cohorts:
    """The continuing cohorts of one release: group specs ``[(row | -1, value)]``, their uids, the snapshot rows
    they hold (real members) and the records that lost their slot (present, with a previous group)."""

    groups: list = field(default_factory=list)
    uids: list = field(default_factory=list)
    placed: set = field(default_factory=set)
    evicted: list = field(default_factory=list)


def _ghost_values(old: Sequence[int], taken: set, options: Callable[[int], Sequence[int]],
                  prefer: Sequence[int], rng: np.random.Generator) -> list[int] | None:
    """Distinct values for ghost slots: each in ``options(old value)``, none in ``taken``; each ghost gets its
    ``prefer``-red value where possible, else its old value, else another (an assignment problem with costs 0,
    1, 2 and random tie-breaks)."""
    if not old:
        return []
    cand = sorted({v for o in old for v in options(o)} - taken)
    if len(cand) < len(old):
        return None
    big = 1e6
    cost = np.full((len(old), len(cand)), big)
    for i, (o, want) in enumerate(zip(old, prefer)):
        ok = set(options(o))
        for j, v in enumerate(cand):
            if v in ok:
                cost[i, j] = (0.0 if v == want else 1.0 if v == o else 2.0) + 1e-3 * rng.random()
    r, c = linear_sum_assignment(cost)
    if (cost[r, c] >= big).any():
        return None
    out = [0] * len(old)
    for i, j in zip(r, c):
        out[i] = cand[j]
    return out


def continue_cohorts(prev: PrivateRows, ids: Sequence[str], vals: np.ndarray, vindex: Mapping[str, int],
                     keep: Callable[[int, int], bool], options: Callable[[int], Sequence[int]] | None,
                     rng: np.random.Generator, step: Callable[[int], int] | None = None) -> Cohorts:
    """Carry the cohorts of the previous release (its groups) into this one.

    ``keep(old, new)``: a member whose slot held ``old`` may hold ``new`` now; ``options(old)``: the values a ghost
    slot may take next (``None``: the old value only); ``step(old)``: the value a ghost would move to if it were a
    real record (a random draw that imitates the real records' updates, so that ghost values age like real
    ones; default: the old value).  Members with equal new values in one cohort keep one
    slot among them (at random); when the ghosts find no distinct values, a random member is turned into a ghost
    until they do; a cohort without real members retires.
    """
    row_of = {p: r for r, p in enumerate(ids)}
    out = Cohorts()
    groups = prev.groups()
    keys = list(groups)
    for g in (keys[int(i)] for i in rng.permutation(len(keys))):
        slots = groups[g]
        old = [vindex[prev.value[i]] for i in slots]
        real: dict[int, int] = {}  # slot position -> snapshot row
        lost: list[int] = []
        for k in rng.permutation(len(slots)):
            k = int(k)
            p = prev.person[slots[k]]
            r = row_of.get(p) if p is not None else None
            if r is None:
                continue
            if keep(old[k], int(vals[r])) and all(int(vals[r]) != int(vals[q]) for q in real.values()):
                real[k] = r
            else:
                lost.append(r)
        # a member that cannot keep its own slot may take over a free slot of its cohort whose value it can hold
        # (an update within the signature): it stays in its QI-group, its old slot becomes a ghost
        for r in list(lost):
            v = int(vals[r])
            if any(int(vals[q]) == v for q in real.values()):
                continue
            free = [k for k in range(len(slots)) if k not in real and keep(old[k], v)]
            if free:
                real[free[int(rng.integers(0, len(free)))]] = r
                lost.remove(r)
        while True:
            ghosts = [k for k in range(len(slots)) if k not in real]
            if options is None:
                gv = [old[k] for k in ghosts]
                clash = {int(vals[r]) for r in real.values()} & set(gv)
                ok = not clash
            else:
                prefer = [step(old[k]) if step is not None else old[k] for k in ghosts]
                found = _ghost_values([old[k] for k in ghosts], {int(vals[r]) for r in real.values()}, options,
                                      prefer, rng)
                ok = found is not None
                gv = found or []
            if ok or not real:
                break
            k = sorted(real)[int(rng.integers(0, len(real)))]
            lost.append(real.pop(k))
        out.evicted.extend(lost)
        if not real:
            continue
        spec, uids = [], []
        gvals = dict(zip(ghosts, gv))
        for k, i in enumerate(slots):
            if k in real:
                spec.append((real[k], int(vals[real[k]])))
                out.placed.add(real[k])
            else:
                spec.append((-1, int(gvals[k])))
            uids.append(prev.uid[i])
        out.groups.append(spec)
        out.uids.append(uids)
    return out
