"""Global guarantee: serial releases whose breach probability never exceeds ``1/l`` (Wong et al., 001).

Problem 1 of 001: given ``l``, the published tables ``T_1*, ..., T_{k-1}*`` and the raw table ``T_k``,
publish ``T_k*`` maximizing utility such that ``p(o, s, k) <= 1/l`` for every individual ``o`` and every
protected value ``s``, where ``p`` is the breach probability of Definition 2 (sensitive values transient:
they change freely between releases).  The paper's own algorithm (its ref. [9]) is not available; this module
implements the following one.

**Budgets.**  Releases of homogeneous anonymized groups are independent in the adversary's worlds, so by
Lemma 2 (and its exact form (*) in :mod:`solver.counting`)::

    1 - p(o, s, k) = prod_j (1 - q(o, s, j, k)) =: S_k(o, s)     (the *survival* of (o, s))

and the global guarantee is ``S_k(o, s) >= 1 - 1/l``.  The publisher keeps ``S_{k-1}`` in its state (exact
fractions, only the entries below 1) and, for release ``k``, gives every pair the cap

    q(o, s, k, k) <= 1 - F_k / S_{k-1}(o, s),   F_k = (1 - 1/l) ** (min(k, K) / K)

where ``K`` is the parameter ``horizon``: the survival budget is spent evenly over ``K`` releases (with
``K = 1`` the first release may spend all of it, leaving nothing for an individual's own value later - every
later class holding it would breach).  ``F_k >= 1 - 1/l`` always, so the caps imply the guarantee.

**Partitioning.**  Mondrian (LeFevre et al.) with an extra acceptance test
(:func:`publishers.mondrian.mondrian_partition`, ``accept``): a split is taken only when, in every part, each
protected value's frequency ``c_s / n`` is within the cap of every member - the budgets of the individuals
decide how far the table can be split.  Mondrian's regions are disjoint, so in the adversary's view every
class is one homogeneous block and ``q(o, s, k, k) = c_s / n`` of ``o``'s class exactly.  The table as one
class failing the test means no Mondrian release can keep the guarantee: :class:`InputError`.

**Verification.**  The release is checked with the exact engine (:func:`solver.counting.analyze` on the
release alone, free mode) and the new survivals are computed from its exact fractions, then checked
``>= 1 - 1/l`` with rational arithmetic.  Optimality: Mondrian is a greedy heuristic (no optimum is claimed).

State (JSON): ``{"releases": k, "horizon": K, "l": l, "values": [...], "survival": {id: {value: "a/b"}}}``.
Releases of *other* publishers in the same sequence are not in this state (a publisher sees its own state).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

from multirelease.errors import InputError, SolverError
from multirelease.params import Interval, ListOf, Text
from multirelease.principles import Principle
from multirelease.table import Table
from solver.counting import analyze
from solver.worlds import problem_from_arrays

from .base import PublisherBase, PublishResult
from .mondrian import _factorize, mondrian_partition, release_from_partition

__all__ = ["GlobalGuarantee", "survival_caps"]

#: safety margin of the floating-point caps (the exact check follows)
_EPS = 1e-9


def survival_caps(survival: Mapping[str, Mapping[str, str]], ids: Sequence[str], values: Sequence[str], l: float,
                  k: int, horizon: int) -> np.ndarray:
    """``(n, V)`` float caps on ``q(o, s, k, k)`` for the individuals ``ids`` and protected ``values``."""
    floor = (1 - 1 / l) ** (min(k, horizon) / horizon)
    caps = np.full((len(ids), len(values)), 1 - floor, dtype=np.float64)
    col = {v: j for j, v in enumerate(values)}
    for i, o in enumerate(ids):
        entry = survival.get(str(o))
        if not entry:
            continue
        for s, text in entry.items():
            if s in col:
                caps[i, col[s]] = 1 - floor / float(Fraction(text))
    return caps - _EPS


class GlobalGuarantee(PublisherBase):
    """Mondrian releases under per-individual survival budgets (global guarantee, Problem 1 of 001).

    Parameters
    ----------
    l : number > 1
        ``p(o, s, k) <= 1/l`` for every individual and protected value, over every release so far.
    values : list of str, optional
        The protected sensitive values (default: every value).
    horizon : int >= 1, default 2
        Releases over which the survival budget is spread (module docstring).
    k : int >= 1, default 1
        Optional k-anonymity of every class as well.
    """

    name = "global_guarantee"
    params = {"l": Interval(float, 1, None, closed="neither"), "values": ListOf(Text()),
              "horizon": Interval(int, 1, None), "k": Interval(int, 1, None)}
    required = ("l",)
    defaults = {"horizon": 2, "k": 1}
    guarantee = "global_guarantee"

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = self.published_attributes(snapshot, attributes, need_sensitive=True)
        state = dict(state or {})
        l = float(self.config["l"])
        horizon = int(self.config["horizon"])
        k = int(state.get("releases", 0)) + 1
        survival = {str(o): dict(v) for o, v in (state.get("survival") or {}).items()}
        sens = np.asarray(snapshot.sensitive, dtype=object).astype(str)
        protected = self.config.get("values")
        protected = sorted(set(sens)) if protected is None else [str(v) for v in protected]
        ids = [str(x) for x in snapshot.ids]
        caps = survival_caps(survival, ids, protected, l, k, horizon)
        # per row, the column of its protected value (-1: not protected)
        col = {v: j for j, v in enumerate(protected)}
        pcode = np.array([col.get(v, -1) for v in sens], dtype=np.int64)
        P = len(protected)

        def accept(rows: np.ndarray) -> bool:
            pc = pcode[rows]
            pc = pc[pc >= 0]
            if not len(pc):
                return True
            freq = np.bincount(pc, minlength=P) / len(rows)
            return bool((freq[None, :] <= caps[rows]).all())

        quasi = [n for n in attributes if schema[n].is_quasi]
        cols = [list(schema.quasi).index(n) for n in quasi]
        principle = Principle(k=int(self.config["k"]))
        try:
            parts = mondrian_partition(snapshot.qi_codes[:, cols], _factorize(snapshot.sensitive),
                                       [schema[n] for n in quasi], principle, accept=accept)
        except InputError:
            worst = np.unravel_index(int(np.argmin(caps)), caps.shape) if caps.size else (0, 0)
            raise InputError(
                f"{self.name}: release {k} cannot keep p(o, s, k) <= 1/{l:g} even as one class (tightest budget: "
                f"individual '{ids[worst[0]]}', value '{protected[worst[1]]}', q <= {max(caps[worst], 0):.4g}); "
                f"raise 'horizon' or lower 'l'") from None
        release, truth = release_from_partition(snapshot, attributes, parts, rng)
        survival = self._update(release, snapshot, survival, protected, l)
        new_state = {"releases": k, "horizon": horizon, "l": l, "values": list(protected), "survival": survival}
        return PublishResult(release=release, truth=truth, state=new_state)

    def _update(self, release, snapshot: Table, survival: dict, protected: list[str], l: float) -> dict:
        """New survivals from the exact ``q`` of this release (free mode: the release alone), checked exactly."""
        cols = [list(snapshot.schema.quasi).index(n) for n in release.quasi]
        problem = problem_from_arrays([release], [snapshot.qi_codes[:, cols]], [snapshot.ids], mode="free")
        a = analyze(problem)
        if not a.all_exact:
            raise SolverError(f"{self.name}: the exact engine could not count the release's worlds")
        bound = 1 - Fraction(1) / Fraction(l).limit_denominator(10**6)
        values = list(problem.values)
        out = {o: dict(v) for o, v in survival.items()}
        for i, o in enumerate(problem.individuals):
            o = str(o)
            for s in protected:
                if s not in values:
                    continue
                q = a.localized_fraction(0, i, values.index(s))
                if not q:
                    continue
                prev = Fraction(out.get(o, {}).get(s, "1"))
                new = prev * (1 - q)
                if new < bound:
                    raise SolverError(f"{self.name}: budget check failed for '{o}', '{s}' (survival {new})")
                out.setdefault(o, {})[s] = f"{new.numerator}/{new.denominator}"
        return out
