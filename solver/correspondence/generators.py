"""Exact crack sizes for more than two releases: CP-SAT models of generators as buddy chains.

Fung et al., section 7.1: ``R_i`` publishes ``D_1 .. D_i`` and every record of ``R_i`` has a corresponding
record in every later release.  A generator assigns every individual a timestamp ``T_t``, one record in
each of ``R_t, .., R_n`` (its *chain* of buddies, every record of every release used exactly once) and one
instantiation shared by the whole chain: a raw point in the intersection of the chain's regions, with the
chain's sensitive value.

Atom model
    What matters about an instantiation is only which published regions contain it: its *atom*
    (:func:`solver.correspondence.regions.atoms`).  Individuals at the same atom with the same sensitive value are
    interchangeable, so a generator is, for every value ``s``, integers ``z[j, v, a]`` (records of group
    node ``v`` of ``R_j`` instantiated in atom ``a``, for atoms inside ``v``'s region) with

    * ``sum_a z[j, v, a] = |v|`` (every record is instantiated),
    * ``y[a, j] = sum_v z[j, v, a]`` - the individuals at ``a`` present at ``T_j`` - non-decreasing in ``j``
      (an individual, once published, is in every later release).

    Conversely such ``z`` define a generator: at atom ``a`` the ``y[a, j] - y[a, j-1]`` individuals arriving
    at ``T_j`` are matched to records of every later release arbitrarily (all their regions contain ``a``).
    Pairwise-comparable regions are not enough for a chain (the three regions of a chain need a common
    point), which is why chains are built over atoms, not over the pairwise buddy graph, and why this is
    not a network flow.

Atom classes
    Within one component (one sensitive value), atoms with the same incidence - the same nodes of every
    release contain them - are merged into one *class* with loads ``y[c, j] = sum of its atoms' loads``.
    Exactness: a class solution splits into atom solutions any way we like (all member atoms sit in the same
    nodes), in particular with everything at the target's atom ``a_p``; conversely, for any atom solution,
    arrivals at ``a_p`` (``y[a_p, t] - y[a_p, t-1]``) are at most the class's arrivals (a sum of
    non-negative per-atom arrivals, loads being monotone) and the class's records at ``a_p`` at most the
    class's.  So every crack maximum below is the same over classes as over atoms.  When the cracked class
    holds every record of ``R_j`` that can sit in ``a_p``'s class, the records there include every
    individual present, hence every arrival of ``T_t <= T_j``: the objective is then the arrivals alone
    (one objective per (component, class, ``t``) instead of one per (``j``, class of ``R_j``)).

Not a flow for ``n >= 3``
    With equal numbers of records of one value in ``R_1`` and ``R_3`` monotonicity forces ``y_1 = y_2 =
    y_3``; with disjoint regions per release (Mondrian) the generators are then the non-negative integer
    tables on the atoms with the three partitions' block sums - with unit block sums, 3-dimensional matching.
    So no exact flow formulation of the chain exists unless P = NP: proofs come from flows, LP duals and
    CP-SAT, generators from flows, the LP and CP-SAT.  The LP relaxation was tight on every objective sampled
    on Adult (its optimal vertices integral but for a small island of variables).

Crack question ``(t, j, class, target)`` (:class:`~solver.correspondence.crack.CrackRequest`): the records of the class
that can be the target's are those instantiated in the target's atom ``a_p`` and arriving at ``T_t``; over
one generator at most ``min(sum_{v in class} z[j, v, a_p], y[a_p, t] - y[a_p, t-1])`` of them can, and the
minimum is attained (individuals at an atom are interchangeable).  CP-SAT maximizes it, per sensitive value
and per connected component (values and components are independent).

How the objectives are answered (:meth:`ChainEngine.answer`): every component starts with one generator (a
sequence of min-cost flows, release by release; else the LP relaxation made integral; else CP-SAT) and
the trivial bound; then, in bulk and without CP-SAT (:class:`solver.correspondence.chain_bulk.BulkPass`):
upper bounds from the two-release flow relaxation, packed LP rounds whose integral optima join the pool of
generators, and one LP per objective still open (its safe dual bound and its optimum made integral).  An
objective is closed when a generator of the pool reaches a proved upper bound; components are independent,
so large inputs run this through the executor (:mod:`solver.executor`: local worker processes, or a Dask
cluster with ``--scheduler``).  Whatever stays open goes to CP-SAT, hinted with the
best generator, within the per-model time limit and the run's budget.  Statuses: OPTIMAL - exact; FEASIBLE
- bounds (the incumbent and CP-SAT's objective bound), result not exact; INFEASIBLE - no generator
(:class:`~solver.correspondence.flows.NoGenerator`); anything else, or the budget spent - the proven bounds, not exact.
Nothing is ever passed silently.

Where it lives: the component model, its bounds, pool and first generator in
:mod:`solver.correspondence.chain_component`; the bulk pass in :mod:`solver.correspondence.chain_bulk` (LPs in
:mod:`solver.correspondence.chain_lp`); the CP-SAT model in :mod:`solver.correspondence.chain_cpsat`; witnesses in
:mod:`solver.correspondence.chain_witness`.  This module asks the questions.

Measured on five cumulative Mondrian releases of Adult (k = 40, 6,000 new records each; 44,033 objectives
in 645 components, the largest of 7,655 incidences): every objective closed by the bulk pass - about 7,500
LP solves and 26,600 max flows, no CP-SAT call.
"""
from __future__ import annotations

import os
import time
from typing import Sequence

import numpy as np
from ortools.sat.python import cp_model

from multirelease.errors import SolverError

from .chain_bulk import BulkPass
from .chain_component import Clock, Component, Stats, build_components, flow_generator
from .chain_cpsat import component_model, solve_component
from .chain_lp import ChainLP
from .chain_witness import chain_witness
from .crack import CrackAnswer, CrackRequest
from .flows import NoGenerator
from .regions import Nodes, atoms

__all__ = ["ChainEngine"]

#: open objectives from which the bulk pass forks worker processes
#: (:meth:`solver.correspondence.chain_bulk.BulkPass.run_all`)
_PARALLEL_LOAD = 2000


class ChainEngine:
    """Answers :class:`~solver.correspondence.crack.CrackRequest` for ``n >= 3`` (or any ``n``) releases with CP-SAT.

    Parameters
    ----------
    nodes : per release, the aggregated groups (:func:`solver.correspondence.regions.aggregate`).
    domain_sizes : leaves per quasi-identifier.
    time_limit : seconds per CP-SAT model.
    processes : local worker processes for the bulk bounds of large inputs (components are independent;
        default: the machine's cores, at most 8); a Dask executor made current by the pipeline is used
        instead, whatever the input's size.
    budget : seconds for all the solver work of one :meth:`answer` (``None``: no limit).  CP-SAT takes the
        objectives from the smallest upper bound up (the rows that decide FA, CA and BA first); once the
        budget is spent the rest keep their proven bounds - the best generator found (low) and the best
        proved bound (high) - and the answer is not exact.
    workers : CP-SAT search workers per model (default 1: the models are small and many).
    """

    exact_engine = "buddy chains over atom classes: flow and LP-dual bounds, LP and CP-SAT generators"

    def __init__(self, nodes: Sequence[Nodes], time_limit: float = 20.0, *, domain_sizes: Sequence[int] | None = None,
                 workers: int = 1, budget: float | None = None, processes: int | None = None):
        self.nodes = list(nodes)
        self.n = n = len(nodes)
        self.time_limit = float(time_limit)
        self.budget = None if budget is None else float(budget)
        self.clock = Clock(self.budget)
        self.processes = max(1, min(int(processes if processes is not None else (os.cpu_count() or 1)), 8))
        self.workers = int(workers)
        if domain_sizes is None:
            domain_sizes = [int(max(nd.region_hi[:, j].max() if nd.n_regions else 0 for nd in nodes)) + 1
                            for j in range(nodes[0].lo.shape[1])]
        self.atoms = atoms(self.nodes, domain_sizes)
        self.atom_of = {a.signature: i for i, a in enumerate(self.atoms)}
        self.stats = Stats()
        self._cache: dict = {}
        self._values_of: dict = {}
        self._clipped = False  # the last CP-SAT solve was cut short by what was left of the budget
        self.bulk = BulkPass(n, self.clock, self.stats)
        self.components, self.comp_of = build_components(self.nodes, self.atoms)
        for comp in self.components:
            self._prepare(comp)

    # ------------------------------------------------------------------ bounds and the first generator
    def _prepare(self, comp: Component) -> None:
        """Trivial bounds, then a first generator: min-cost flows release by release, else the LP relaxation
        made integral, else CP-SAT (INFEASIBLE: :class:`NoGenerator`)."""
        comp.prepare_bounds(self.n)
        sol = flow_generator(comp, self.n)
        if sol is None:
            sol = self._lp_point(comp)
        if sol is None:
            sol, status = self._solve(comp, None, None)
            if sol is None:
                if status == cp_model.INFEASIBLE:
                    raise NoGenerator("no generator: the records of the releases cannot all be given buddy "
                                      "chains in every later release")
                raise SolverError(f"CP-SAT could not find a generator (status {status})")
        comp.add(sol, self.n)

    def _lp(self, comp: Component) -> ChainLP:
        return comp.chain_lp(self.n)

    def _lp_point(self, comp: Component) -> np.ndarray | None:
        """A generator from the LP relaxation (integral part kept, island completed; checked exactly)."""
        lp = self._lp(comp)
        out = lp.solve(np.zeros(lp.m, np.int64))
        return None if out is None else lp.integer_point(out[1])

    def _model(self, comp: Component) -> cp_model.CpModel:
        return component_model(comp, self.n)

    def _bulk(self, comp: Component, wanted: np.ndarray) -> None:
        """The bulk pass on one component (:meth:`solver.correspondence.chain_bulk.BulkPass.run`)."""
        self.bulk.run(comp, wanted)

    def _bulk_all(self, wanted: list[np.ndarray]) -> None:
        self.bulk.run_all(self.components, wanted, self.processes, _PARALLEL_LOAD)

    def _solve(self, comp: Component, objective: tuple | None, hint: np.ndarray | None):
        """:func:`solver.correspondence.chain_cpsat.solve_component` within the per-model time limit, cut to what is
        left of the budget for an objective; ``(value, bound, optimal)`` of an objective in ``self._last``."""
        limit = self.time_limit
        self._clipped = False
        if self.budget is not None and objective is not None:
            left = max(min(limit, self.clock.left()), 0.05)
            self._clipped = left < limit
            limit = left
        sol, status, self._last = solve_component(comp, self.n, objective, hint, time_limit=limit,
                                                  workers=self.workers, stats=self.stats)
        return sol, status

    # ------------------------------------------------------------------ questions
    def _parts(self, req: CrackRequest):
        """Per value: ``None`` (no record of the class can represent the target) or ``(component, class,
        rows)`` - ``rows`` the incidence indices of the class's nodes (of that value, containing the target)
        at the target's atom class in ``R_j``, or ``None`` when they are all the records of ``R_j`` there
        (then every arrival at ``T_t`` is present at ``T_j`` in one of them: the objective is the arrivals)."""
        a_p = self.atom_of.get(tuple(req.signature))
        nd = self.nodes[req.j - 1]
        out = {}
        for s in self._class_values(req.j - 1, req.cls):
            if a_p is None or (s, a_p) not in self.comp_of:
                out[s] = None
                continue
            ci, c = self.comp_of[(s, a_p)]
            comp = self.components[ci]
            here = comp.incidences(c, req.j - 1)
            mine = here[nd.cls[comp.V[here]] == req.cls]
            if not len(mine):
                out[s] = None
            elif len(mine) == len(here):
                out[s] = (ci, c, None)
            else:
                out[s] = (ci, c, mine)
        return out

    def _class_values(self, j: int, cls: int) -> list[int]:
        """The sensitive values of class ``cls`` of ``R_{j+1}`` (cached per release)."""
        if j not in self._values_of:
            nd = self.nodes[j]
            pairs = np.unique(np.stack([nd.cls, nd.value], axis=1), axis=0) if len(nd.cls) else np.zeros((0, 2), int)
            by: dict[int, list[int]] = {}
            for c, v in pairs.tolist():
                by.setdefault(c, []).append(v)
            self._values_of[j] = by
        return self._values_of[j].get(int(cls), [])

    def _upper(self, comp: Component, t: int, c: int, rows) -> int:
        arr = int(comp.ub[c, t - 1])
        if rows is not None:
            arr = min(arr, int(comp.count[rows].sum()))
        return max(arr, 0)

    def _value(self, comp: Component, z: np.ndarray, t: int, c: int, rows) -> int:
        y = comp.loads(z, self.n)
        arr = int(y[c, t - 1] - (y[c, t - 2] if t >= 2 else 0))
        return arr if rows is None else min(arr, int(z[rows].sum()))

    def answer(self, requests: Sequence[CrackRequest]) -> list[CrackAnswer]:
        parts = [self._parts(req) for req in requests]
        wanted = [np.zeros((comp.n_classes, self.n), bool) for comp in self.components]
        for req, pr in zip(requests, parts):
            for part in pr.values():
                if part is not None:
                    wanted[part[0]][part[1], req.t - 1] = True
        self._bulk_all(wanted)
        if self.budget is not None:  # spend the budget where the minima are decided: smallest bounds first
            todo = {}
            for req, pr in zip(requests, parts):
                for part in pr.values():
                    if part is not None:
                        ci, c, rows = part
                        todo.setdefault((ci, req.t, c, None if rows is None else rows.tobytes()), (req.t, part))
            order = sorted(todo.values(), key=lambda x: self._upper(self.components[x[1][0]], x[0], x[1][1],
                                                                    x[1][2]))
            for t, part in order:
                self._answer_one(t, *part)
        out = []
        for req, pr in zip(requests, parts):
            low, high, exact = {}, {}, True
            for s, part in pr.items():
                if part is None:
                    low[s] = high[s] = 0
                    continue
                lo, hi, ex, _ = self._answer_one(req.t, *part)
                low[s], high[s] = lo, hi
                exact &= ex
            out.append(CrackAnswer(low=low, high=high, exact=exact))
        return out

    def _answer_one(self, t: int, ci: int, c: int, rows):
        """``(low, high, exact, generator)`` of one arrival objective: closed by the pool when a pooled
        generator reaches the proved bound, else by CP-SAT (hinted with the best pooled generator) within the
        per-model time limit and what is left of the budget."""
        key = (ci, t, c, None if rows is None else rows.tobytes())
        if key in self._cache:
            return self._cache[key]
        self.stats.objectives += 1
        comp = self.components[ci]
        ub = self._upper(comp, t, c, rows)
        if rows is None:
            base, best = int(comp.best[c, t - 1]), comp.pool[int(comp.best_sol[c, t - 1])]
        else:
            vals = [self._value(comp, z, t, c, rows) for z in comp.pool]
            i = int(np.argmax(vals))
            base, best = vals[i], comp.pool[i]
        if base >= ub:
            self.stats.hinted += 1
            out = (base, base, True, best)
        elif self.clock.over():
            self.stats.over_budget += 1
            out = (base, ub, False, best)
        else:
            t0 = time.perf_counter()
            sol, status = self._solve(comp, (t, None, rows, c), best)
            self.clock.charge(t0)
            if sol is None:
                if status == cp_model.INFEASIBLE:
                    raise NoGenerator("no generator exists for these releases")
                self._not_optimal()
                out = (base, ub, False, best)
            else:
                comp.add(sol, self.n)
                value, bound, optimal = self._last
                if not optimal:
                    self._not_optimal()
                out = (value, value if optimal else max(value, min(bound, ub)), optimal, sol)
        self._cache[key] = out
        return out

    def _not_optimal(self) -> None:
        self.stats.not_optimal += 1
        self.stats.clipped += self._clipped

    # ------------------------------------------------------------------ what the run did
    def stop_reason(self) -> tuple[str, str]:
        """Why answers are not exact (:data:`attacks.base.REASONS`): ``budget`` when the run's budget left
        objectives unsolved or cut a CP-SAT solve short, else ``time_limit`` (CP-SAT's per-model limit)."""
        limit = f"CP-SAT time limit {self.time_limit:g} s per model"
        if self.stats.over_budget or self.stats.clipped or self.clock.over():
            budget = f"budget {self.budget:g} s"
            return "budget", budget if self.stats.not_optimal <= self.stats.clipped else f"{budget}; {limit}"
        return "time_limit", limit

    def report(self) -> dict:
        """The engine's figures for benchmarks (JSON-ready)."""
        st = self.stats
        return {"lp_solves": st.lp_solves, "cp_sat_solves": st.solves, "flow_bounds": st.flow_bounds,
                "objectives": st.objectives, "closed_by_pool": st.hinted, "not_optimal": st.not_optimal,
                "over_budget": st.over_budget, "processes": self.processes, "components": len(self.components),
                "seconds": round(self.clock.spent, 3), "statuses": dict(st.statuses)}

    # ------------------------------------------------------------------ witness
    def witness(self, req: CrackRequest, releases, values, point) -> dict:
        """A generator (buddy chains) realizing the request's optimum (the incumbent when not optimal):
        :func:`solver.correspondence.chain_witness.chain_witness`."""
        return chain_witness(self, req, releases, values, point)
