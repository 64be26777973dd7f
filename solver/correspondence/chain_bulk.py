"""The bulk pass of the chain engine (:mod:`solver.correspondence.generators`): close arrival objectives without CP-SAT.

Per component (:class:`~solver.correspondence.chain_component.Component`), for the objectives ``wanted[c, t - 1]``
(arrivals at atom class ``c`` at ``T_t``):

1. upper bounds from the two-release flow relaxation (:func:`solver.correspondence.chain_lp.pair_relaxation_bounds`);
2. *packed* LP rounds: for one ``t``, the total arrivals of one open class per node of ``R_t`` (classes of
   different nodes compete little), the LP optimum made integral (:meth:`ChainLP.integer_point`) and added
   to the pool - every objective it brings to its upper bound is proved;
3. one LP per objective still open: its safe dual bound, and its optimum made integral.

Every upper bound is a proof (flow, or a dual bound valid whatever the LP's tolerances) and every generator
is checked exactly, so an objective is closed only when a generator reaches a proved bound.  Components are
independent: with enough work they run through the executor (:meth:`BulkPass.run_all`, :mod:`solver.executor`).  The
pass stops where the budget's :class:`~solver.correspondence.chain_component.Clock` runs out; what stays open goes
to CP-SAT.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .chain_component import Clock, Component, Stats
from .chain_lp import ChainLP, pair_relaxation_bounds

__all__ = ["BulkPass"]

def _bulk_task(task):
    """In a worker (any process, any machine: :mod:`solver.executor`): :meth:`BulkPass.run` on one component
    ``(ci, pass, component, wanted)``; returns what the parent merges - the new generators (each checked
    exactly in the worker, re-added in the parent), the proven bounds and counts.  The worker's copy of the
    clock keeps its own time for the budget."""
    ci, bulk, comp, wanted = task
    first = len(comp.pool)
    flows, lps = bulk.stats.flow_bounds, bulk.stats.lp_solves
    if not bulk.clock.over():
        bulk.run(comp, wanted)
    return ci, comp.pool[first:], comp.ub, bulk.stats.flow_bounds - flows, bulk.stats.lp_solves - lps


@dataclass(eq=False)
class BulkPass:
    """Flow and LP bounds and LP generators for ``n`` releases, charging ``clock`` and counting in
    ``stats``; ``lp_rounds`` passes of packed LP rounds."""

    n: int
    clock: Clock
    stats: Stats
    lp_rounds: int = 3

    def run(self, comp: Component, wanted: np.ndarray) -> None:
        """Close as many objectives ``wanted[c, t - 1]`` of ``comp`` as possible (steps 1-3 above)."""
        n = self.n
        start = time.perf_counter()

        def open_() -> np.ndarray:
            return wanted & (comp.best < comp.ub)

        try:
            if not open_().any():
                return
            fb = pair_relaxation_bounds(comp.J, comp.V, comp.C, comp.count, n, comp.cap, open_())
            comp.ub = np.where(fb >= 0, np.minimum(comp.ub, fb), comp.ub)
            self.stats.flow_bounds += int((fb >= 0).sum())
            if not open_().any():
                return
            lp = comp.chain_lp(n)
            nodes_of: dict = {}  # (class, release) -> its nodes (a plain dict: looked up thousands of times a round)
            for c, j, v in zip(comp.C.tolist(), comp.J.tolist(), comp.V.tolist()):
                nodes_of.setdefault((c, j), []).append(v)
            rng = np.random.default_rng(0)
            for _ in range(self.lp_rounds):
                tried = np.zeros_like(wanted)
                for t in range(1, n + 1):
                    while True:
                        need = np.flatnonzero(open_()[:, t - 1] & ~tried[:, t - 1])
                        if not len(need) or self.clock.over():
                            break
                        taken, packed = set(), []
                        for c in rng.permutation(need).tolist():
                            mine = nodes_of[(c, t - 1)]
                            if not taken.intersection(mine):
                                taken.update(mine)
                                packed.append(c)
                        tried[packed, t - 1] = True
                        self.lp_step(comp, lp, lp.arrivals({c: 1 for c in packed}, t), None)
                        start = self.clock.charge(start)
            for t in range(1, n + 1):
                for c in np.flatnonzero(open_()[:, t - 1]).tolist():
                    if comp.best[c, t - 1] >= comp.ub[c, t - 1]:
                        continue
                    if self.clock.over():
                        return
                    self.lp_step(comp, lp, lp.arrivals({c: 1}, t), (c, t))
                    start = self.clock.charge(start)
        finally:
            self.clock.charge(start)
            comp.lp = None  # the LP (and its island cache) is not needed again: free it

    def run_all(self, components: list[Component], wanted: list[np.ndarray], processes: int,
                parallel_load: int) -> None:
        """:meth:`run` on every component - through the current executor (:mod:`solver.executor`: local
        worker processes, or Dask) when there are at least ``parallel_load`` open objectives or the executor
        is not local (components are independent; the largest first; merged in that order, whoever solved
        them), else in this process."""
        from solver.executor import LocalExecutor, current_executor

        work = [ci for ci in range(len(components)) if (wanted[ci] & (components[ci].best < components[ci].ub)).any()]
        load = sum(int(wanted[ci].sum()) for ci in work)
        ex = current_executor()
        if isinstance(ex, LocalExecutor):
            ex = LocalExecutor(processes)
            if processes <= 1 or len(work) < 2 or load < parallel_load:
                ex = None
        if ex is None:
            for ci in sorted(work, key=lambda i: len(components[i].J)):
                if not self.clock.over():
                    self.run(components[ci], wanted[ci])
            return
        start = time.perf_counter()
        try:
            order = sorted(work, key=lambda i: -len(components[i].J))
            # what a worker needs of a component (no solver objects: they do not travel)
            tasks = [(ci, self, replace(components[ci], model=None, lp=None, _by_class=None), wanted[ci])
                     for ci in order]
            for ci, points, ub, flow_bounds, lp_solves in ex.map(_bulk_task, tasks):
                comp = components[ci]
                for z in points:
                    comp.add(z, self.n)
                comp.ub = np.minimum(comp.ub, ub)
                self.stats.flow_bounds += flow_bounds
                self.stats.lp_solves += lp_solves
        finally:
            self.clock.charge(start)

    def lp_step(self, comp: Component, lp: ChainLP, w: np.ndarray, single: tuple | None) -> None:
        """One LP solve of objective ``w``: its dual bounds on every arrival (and on ``single = (c, t)``, its
        own objective), and its optimum made integral added to the pool."""
        out = lp.solve(w)
        self.stats.lp_solves += 1
        if out is None:
            return
        bound, z = out
        comp.ub = np.minimum(comp.ub, lp.arrival_bounds(lp.duals, comp.n_classes))
        if single is not None:
            c, t = single
            comp.ub[c, t - 1] = min(comp.ub[c, t - 1], bound)
            if comp.best[c, t - 1] >= comp.ub[c, t - 1]:
                return
        point = lp.integer_point(z, w)
        if point is not None:
            comp.add(point, self.n)
