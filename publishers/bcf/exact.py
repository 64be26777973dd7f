"""The exact side of the BCF-anonymizer: FA, CA, BA by the correspondence engine, the search's validity test
where the incremental formulas do not apply, and the check of every release before it is returned.

Paper: ../shared/papers/002_26e2f2912f1b36d2.txt (Fung, Wang, Fu, Pei).  BCF-anonymity (section 3.2) asks
``FA, CA, BA >= k`` (Definitions 3.2, 3.4, 3.6), where the crack sizes are minima over *all* generators
(Definitions 3.1, 3.3, 3.5).  :mod:`attacks.correspondence.attack` computes them exactly for any generalization and
any number of releases (min-cost flows for two, CP-SAT for more); here it is run, through the registry
(publishers may call attacks, never the reverse), over every target the published regions allow
(``targets="regions"``: the paper's definitions range over every target ``P`` that matches the classes).
A requirement is met only when the whole proven interval of its metric is ``>= k``: a bound that does not
settle it counts as not met.  A metric the engine does not report has no target at all (Definition 3.2 with
an empty ``D1``: no F- or C-attack) and is met.

:class:`ExactBCF` is the search's validity test (:class:`publishers.bcf.tds.CutConstraint`): a step is valid when
the whole tentative ``R_n`` passes the exact check against the chain.  It is anti-monotone in what matters
for the search: the greedy search only moves from a valid ``R_n`` to a valid one, so it ends at a valid
release whenever the most general ``R_n`` is valid (and refuses, naming the requirement and the witness
target, when it is not).  Classes smaller than ``k`` are rejected without running the engine
(``BA <= |qid_n|``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.model.release import Release
from multirelease.model.schema import Schema
from multirelease.model.sequence import Adversary, ReleaseSequence

from .tds import CutSpace, Specialization, cut_cells

__all__ = ["GUARANTEE", "METRICS", "exact_result", "unmet", "refusal", "ReleaseOfCut", "ExactBCF"]

#: the requirements bcf guarantees, formatted with its config (``k``)
GUARANTEE = ("correspondence.FA >= {k}", "correspondence.CA >= {k}", "correspondence.BA >= {k}")
METRICS = ("FA", "CA", "BA")


def exact_result(releases: Sequence[Release], k: int):
    """The correspondence attack's :class:`~attacks.base.AttackResult` on the chain, every target the
    regions allow."""
    from attacks import ATTACKS

    seq = ReleaseSequence()
    for r in releases:
        seq.append(r, None, None)
    view = seq.view(Adversary(correspondence=True), targets="regions")
    return ATTACKS["correspondence"](k=int(k), witness=False).run(view)


def unmet(result, k: int) -> tuple[str, float, float] | None:
    """The first of FA, CA, BA whose proven interval is not wholly ``>= k``: ``(metric, low, high)``."""
    for m in METRICS:
        if m not in result.summary and m not in result.bounds:
            continue  # no target for this attack: the minimum over no class
        low, high = result.interval(m)
        if not low >= k:
            return m, low, high
    return None


def refusal(name: str, k: int, failure: tuple[str, float, float], result, *, what: str = "the release") -> InputError:
    """The one-line refusal: which requirement failed, by how much, and for whom (the witness target and the
    class of the release that cracks it)."""
    m, low, high = failure
    value = f"{m} = {low:g}" if low == high else f"{m} only known in [{low:g}, {high:g}]"
    w = result.worst.get(m) or {}
    who = "no target" if not w else (
        "the target " + ", ".join(f"{a}={v}" for a, v in w.get("target", {}).items())
        + f" at T{w.get('timestamp')} (class {w.get('class')} of release {w.get('release')})")
    return InputError(f"{name} refuses {what}: correspondence.{m} >= {k} fails ({value}) for {who}")


class ReleaseOfCut:
    """The release ``R_n`` a cut assignment gives (the records in snapshot order; what the exact engine reads:
    QIs and the composite sensitive value)."""

    def __init__(self, schema: Schema, space: CutSpace, quasi: Sequence[str], sensitive: Sequence[str],
                 values: np.ndarray):
        self.schema, self.space = schema, space
        self.attributes = schema.restrict(list(quasi) + list(sensitive))
        self.values = np.asarray(values, dtype=object)

    def __call__(self, node: np.ndarray) -> Release:
        lo, hi, masks = cut_cells(self.space, node)
        return Release(schema=self.schema, attributes=self.attributes, lo=lo, hi=hi, sensitive=self.values,
                       masks=masks)


class ExactBCF:
    """Validity of a specialization of ``R_n`` by the exact engine on the whole chain (see the module
    docstring).  ``checks`` counts the engine runs, ``skipped`` the steps rejected by class size alone;
    ``top`` and ``last`` are the results of the most general and of the last accepted ``R_n``."""

    def __init__(self, k: int, earlier: Sequence[Release], build: ReleaseOfCut, n: int):
        self.k = int(k)
        self.earlier = list(earlier)
        self.build = build
        q = len(build.space.attributes)
        self.node = np.tile(np.array([build.space.root(j) for j in range(q)], dtype=np.int64), (n, 1))
        self.checks = 0
        self.skipped = 0
        self.top = None
        self.last = None
        self._pending = None

    def _run(self, node: np.ndarray):
        self.checks += 1
        return exact_result(self.earlier + [self.build(node)], self.k)

    def check_top(self, sizes, group_s, group_n) -> bool:
        self.top = self.last = self._run(self.node)
        return unmet(self.top, self.k) is None

    def check(self, step: Specialization) -> bool:
        self._pending = None
        if int(step.sizes.min()) < self.k:  # BA <= |qid_n| (Definition 3.6)
            self.skipped += 1
            return False
        node = self.node.copy()
        node[step.records, step.j] = step.children[step.record_child]
        res = self._run(node)
        if unmet(res, self.k) is not None:
            return False
        self._pending = (step, node, res)
        return True

    def commit(self, step: Specialization) -> None:
        assert self._pending is not None and self._pending[0] is step
        _, self.node, self.last = self._pending
        self._pending = None
