"""Exact crack sizes for more than two releases: CP-SAT models of generators as buddy chains.

Fung et al., section 7.1: ``R_i`` publishes ``D_1 .. D_i`` and every record of ``R_i`` has a corresponding
record in every later release.  A generator assigns every individual a timestamp ``T_t``, one record in
each of ``R_t, .., R_n`` (its *chain* of buddies, every record of every release used exactly once) and one
instantiation shared by the whole chain: a raw point in the intersection of the chain's regions, with the
chain's sensitive value.

Atom model
    What matters about an instantiation is only which published regions contain it: its *atom*
    (:func:`solver.regions.atoms`).  Individuals at the same atom with the same sensitive value are
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

Crack question ``(t, j, class, target)`` (:class:`~solver.crack.CrackRequest`): the records of the class
that can be the target's are those instantiated in the target's atom ``a_p`` and arriving at ``T_t``; over
one generator at most ``min(sum_{v in class} z[j, v, a_p], y[a_p, t] - y[a_p, t-1])`` of them can, and the
minimum is attained (individuals at an atom are interchangeable).  CP-SAT maximizes it, per sensitive value
and per connected component (values and components are independent).

Every solve is hinted with a generator built from a sequence of min-cost flows (release by release, each
atom receiving at least the individuals it already holds); a request whose hint already reaches the trivial
upper bound needs no CP-SAT call.  Statuses: OPTIMAL - exact; FEASIBLE - bounds (the incumbent and CP-SAT's
objective bound), result not exact; INFEASIBLE - no generator (:class:`~solver.flows.NoGenerator`);
anything else - the trivial bounds, not exact.  Nothing is ever passed silently.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from ortools.graph.python import min_cost_flow
from ortools.sat.python import cp_model

from multirelease.errors import SolverError

from .crack import CrackAnswer, CrackRequest
from .flows import NoGenerator, generator_json
from .regions import Nodes, atoms

__all__ = ["ChainEngine"]


@dataclass(eq=False)
class _Component:
    value: int
    nodes: list  # (j, v) pairs
    atoms: list  # atom ids
    inc: list  # (j, v, a) incidences
    hint: dict | None = None  # (j, v, a) -> z of a generator (None: no flow hint found)
    solution: dict | None = None  # a proved-feasible generator


@dataclass
class _Stats:
    solves: int = 0
    hinted: int = 0
    not_optimal: int = 0
    statuses: Counter = field(default_factory=Counter)


class ChainEngine:
    """Answers :class:`~solver.crack.CrackRequest` for ``n >= 3`` (or any ``n``) releases with CP-SAT.

    Parameters
    ----------
    nodes : per release, the aggregated groups (:func:`solver.regions.aggregate`).
    domain_sizes : leaves per quasi-identifier (taken from ``nodes`` when omitted is not possible; pass them).
    time_limit : seconds per CP-SAT model.
    """

    exact_engine = "CP-SAT (buddy chains over atoms)"

    def __init__(self, nodes: Sequence[Nodes], time_limit: float = 20.0, *, domain_sizes: Sequence[int] | None = None,
                 workers: int = 8):
        self.nodes = list(nodes)
        self.n = len(nodes)
        self.time_limit = float(time_limit)
        self.workers = int(workers)
        if domain_sizes is None:
            domain_sizes = [int(max(nd.region_hi[:, j].max() if nd.n_regions else 0 for nd in nodes)) + 1
                            for j in range(nodes[0].lo.shape[1])]
        self.atoms = atoms(self.nodes, domain_sizes)
        self.atom_of = {a.signature: i for i, a in enumerate(self.atoms)}
        self.stats = _Stats()
        # region -> nodes, per release
        reg_nodes = []
        for nd in self.nodes:
            m: dict[int, list[int]] = {}
            for v, r in enumerate(nd.region.tolist()):
                m.setdefault(r, []).append(v)
            reg_nodes.append(m)
        # incidences per value
        inc_by_value: dict[int, list] = {}
        for a, atom in enumerate(self.atoms):
            for j in range(self.n):
                for r in atom.signature[j]:
                    for v in reg_nodes[j].get(r, ()):
                        inc_by_value.setdefault(int(self.nodes[j].value[v]), []).append((j, v, a))
        # every node must hold at least one atom (it does: its region contains its records' points) -
        # nodes of a release whose region meets no atom of the last release cannot reappear: no generator
        covered = [np.zeros(len(nd), bool) for nd in self.nodes]
        for incs in inc_by_value.values():
            for j, v, _ in incs:
                covered[j][v] = True
        for j, c in enumerate(covered[:-1]):
            if not c.all():
                raise NoGenerator(f"no generator: some records of release {j + 1} lie outside every region of "
                                  f"release {self.n}")
        self.components: list[_Component] = []
        self.comp_of: dict[tuple[int, int], int] = {}  # (value, atom) -> component
        for s, incs in sorted(inc_by_value.items()):
            parent: dict = {}

            def find(x):
                while parent.setdefault(x, x) != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            for j, v, a in incs:
                ra, rb = find(("n", j, v)), find(("a", a))
                if ra != rb:
                    parent[ra] = rb
            groups: dict = {}
            for j, v, a in incs:
                groups.setdefault(find(("a", a)), []).append((j, v, a))
            for members in groups.values():
                comp = _Component(value=s, nodes=sorted({(j, v) for j, v, _ in members}),
                                  atoms=sorted({a for _, _, a in members}), inc=members)
                idx = len(self.components)
                self.components.append(comp)
                for a in comp.atoms:
                    self.comp_of[(s, a)] = idx
        for comp in self.components:
            comp.hint = self._flow_hint(comp)
            if comp.hint is not None:
                comp.solution = comp.hint
            else:
                sol, status = self._solve(comp, None, None)
                if sol is None:
                    if status == cp_model.INFEASIBLE:
                        raise NoGenerator("no generator: the records of the releases cannot all be given buddy "
                                          "chains in every later release")
                    raise SolverError(f"CP-SAT could not find a generator (status {status})")
                comp.solution = sol

    # ------------------------------------------------------------------ hint: a generator from flows
    def _flow_hint(self, comp: _Component) -> dict | None:
        """Release by release, a min-cost flow sends the records of ``R_j`` to atoms inside their regions,
        every atom receiving at least the individuals it held at ``T_{j-1}``; ``None`` when a release cannot
        be completed that way (the greedy choices of earlier releases are not revisited)."""
        atoms_ = comp.atoms
        a_index = {a: i for i, a in enumerate(atoms_)}
        held = np.zeros(len(atoms_), np.int64)
        z: dict = {}
        for j in range(self.n):
            incs = [(v, a) for jj, v, a in comp.inc if jj == j]
            vs = sorted({v for v, _ in incs})
            if not vs:
                if held.any():
                    return None
                continue
            v_index = {v: i for i, v in enumerate(vs)}
            k1, k2 = len(vs), len(atoms_)
            sink = k1 + k2
            cnt = self.nodes[j].count[vs].astype(np.int64)
            tails = np.array([v_index[v] for v, _ in incs] + list(k1 + np.arange(k2)), dtype=np.int32)
            heads = np.array([k1 + a_index[a] for _, a in incs] + [sink] * k2, dtype=np.int32)
            caps = np.array([int(self.nodes[j].count[v]) for v, _ in incs] + [int(cnt.sum())] * k2, dtype=np.int64)
            smcf = min_cost_flow.SimpleMinCostFlow()
            # prefer atoms already holding individuals (cost 0) over new ones (cost 1): keeps chains compact
            costs = np.array([0 if held[a_index[a]] else 1 for _, a in incs] + [0] * k2, dtype=np.int64)
            smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
            supplies = np.concatenate([cnt, -held, [-(int(cnt.sum()) - int(held.sum()))]]).astype(np.int64)
            if supplies[-1] > 0:
                return None
            smcf.set_nodes_supplies(np.arange(sink + 1, dtype=np.int32), supplies)
            status = smcf.solve()
            if status != smcf.OPTIMAL:
                return None
            flows = smcf.flows(np.arange(len(incs), dtype=np.int32))
            new_held = np.zeros_like(held)
            for (v, a), f in zip(incs, flows):
                z[(j, v, a)] = int(f)
                new_held[a_index[a]] += int(f)
            held = new_held
        return z

    # ------------------------------------------------------------------ CP-SAT
    def _solve(self, comp: _Component, objective: tuple | None, hint: dict | None):
        """Build and solve the model of one component; returns ``(solution dict, status)`` (solution
        ``None`` unless OPTIMAL / FEASIBLE) and, for an objective, ``(value, bound)`` in ``self._last``."""
        model = cp_model.CpModel()
        z = {}
        for j, v, a in comp.inc:
            z[(j, v, a)] = model.new_int_var(0, int(self.nodes[j].count[v]), f"z_{j}_{v}_{a}")
        by_node: dict = {}
        by_atom: dict = {}
        for key, var in z.items():
            j, v, a = key
            by_node.setdefault((j, v), []).append(var)
            by_atom.setdefault((a, j), []).append(var)
        for (j, v), vars_ in by_node.items():
            model.add(sum(vars_) == int(self.nodes[j].count[v]))
        for a in comp.atoms:
            for j in range(self.n - 1):
                model.add(sum(by_atom.get((a, j), [])) <= sum(by_atom.get((a, j + 1), [])))
        if objective is not None:
            t, j_obj, cls_nodes, a_p = objective
            w = model.new_int_var(0, sum(int(self.nodes[j_obj].count[v]) for v in cls_nodes), "w")
            model.add(w <= sum(z[(j_obj, v, a_p)] for v in cls_nodes if (j_obj, v, a_p) in z))
            arrived = sum(by_atom.get((a_p, t - 1), [])) - (sum(by_atom.get((a_p, t - 2), [])) if t >= 2 else 0)
            model.add(w <= arrived)
            model.maximize(w)
        if hint:
            for key, var in z.items():
                model.add_hint(var, int(hint.get(key, 0)))
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = self.time_limit
        solver.parameters.num_workers = self.workers
        status = solver.solve(model)
        self.stats.solves += 1
        self.stats.statuses[solver.status_name(status)] += 1
        if status == cp_model.MODEL_INVALID:
            raise SolverError(f"CP-SAT model invalid: {model.validate()}")
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            sol = {key: int(solver.value(var)) for key, var in z.items()}
            if objective is not None:
                self._last = (int(solver.objective_value), int(np.floor(solver.best_objective_bound + 1e-9)),
                              status == cp_model.OPTIMAL)
            return sol, status
        self._last = None
        return None, status

    # ------------------------------------------------------------------ questions
    def _value_of(self, comp: _Component, sol: dict, t: int, j: int, cls_nodes, a_p: int) -> int:
        rows = sum(sol.get((j, v, a_p), 0) for v in cls_nodes)
        y = [sum(x for (jj, v, a), x in sol.items() if a == a_p and jj == k) for k in range(self.n)]
        arrived = y[t - 1] - (y[t - 2] if t >= 2 else 0)
        return min(rows, arrived)

    def _parts(self, req: CrackRequest):
        """Per value: (component, class nodes of that value containing the target's atom, atom)."""
        a_p = self.atom_of.get(tuple(req.signature))
        nd = self.nodes[req.j - 1]
        out = {}
        sel = np.flatnonzero((nd.cls == req.cls))
        for s in np.unique(nd.value[sel]).tolist():
            if a_p is None:
                out[int(s)] = None
                continue
            cls_nodes = [int(v) for v in sel if nd.value[v] == s and nd.region[v] in req.signature[req.j - 1]]
            c = self.comp_of.get((int(s), a_p))
            out[int(s)] = None if c is None or not cls_nodes else (c, cls_nodes, a_p)
        return out

    def answer(self, requests: Sequence[CrackRequest]) -> list[CrackAnswer]:
        cache: dict = {}
        out = []
        for req in requests:
            low, high, exact = {}, {}, True
            for s, part in self._parts(req).items():
                if part is None:
                    low[s] = high[s] = 0
                    continue
                c, cls_nodes, a_p = part
                key = (c, req.t, req.j, tuple(cls_nodes), a_p)
                if key not in cache:
                    cache[key] = self._answer_one(c, req.t, req.j, cls_nodes, a_p)
                lo, hi, ex, _ = cache[key]
                low[s], high[s] = lo, hi
                exact &= ex
            out.append(CrackAnswer(low=low, high=high, exact=exact))
        return out

    def _upper(self, c: int, t: int, j: int, cls_nodes, a_p: int) -> int:
        comp = self.components[c]
        rows = sum(int(self.nodes[j - 1].count[v]) for v in cls_nodes)
        # individuals arriving at T_t in the atom: at most the records of R_t that can sit in it
        arr = sum(int(self.nodes[jj].count[v]) for jj, v, a in comp.inc if a == a_p and jj == t - 1)
        return min(rows, arr)

    def _answer_one(self, c: int, t: int, j: int, cls_nodes, a_p: int):
        comp = self.components[c]
        ub = self._upper(c, t, j, cls_nodes, a_p)
        base = self._value_of(comp, comp.solution, t, j - 1, cls_nodes, a_p)
        if base >= ub:
            self.stats.hinted += 1
            return base, base, True, comp.solution
        sol, status = self._solve(comp, (t, j - 1, cls_nodes, a_p), comp.solution)
        if sol is None:
            if status == cp_model.INFEASIBLE:
                raise NoGenerator("no generator exists for these releases")
            self.stats.not_optimal += 1
            return base, ub, False, comp.solution
        value, bound, optimal = self._last
        if not optimal:
            self.stats.not_optimal += 1
        return value, (value if optimal else max(value, min(bound, ub))), optimal, sol

    # ------------------------------------------------------------------ witness
    def witness(self, req: CrackRequest, releases, values, point) -> dict:
        """A generator (buddy chains) realizing the request's optimum (the incumbent when not optimal)."""
        sols = {}
        for s, part in self._parts(req).items():
            if part is None:
                continue
            c, cls_nodes, a_p = part
            _, _, _, sol = self._answer_one(c, req.t, req.j, cls_nodes, a_p)
            sols[c] = (sol, (req.t, req.j - 1, set(cls_nodes), a_p))
        chains: Counter = Counter()
        for ci, comp in enumerate(self.components):
            sol, obj = sols.get(ci, (comp.solution, None))
            for a in comp.atoms:
                y = [sum(x for (jj, v, aa), x in sol.items() if aa == a and jj == k) for k in range(self.n)]
                total = y[-1]
                if not total:
                    continue
                arrival = np.searchsorted(np.asarray(y), np.arange(total), side="right")  # 0-based release
                node_of = np.full((self.n, total), -1, np.int64)
                for k in range(self.n):
                    rows = [(v, x) for (jj, v, aa), x in sol.items() if aa == a and jj == k and x]
                    present = np.arange(y[k])
                    if obj is not None and a == obj[3] and k == obj[1]:
                        t0 = obj[0] - 1
                        first = present[arrival[present] == t0]
                        present = np.concatenate([first, present[arrival[present] != t0]])
                        rows.sort(key=lambda r: r[0] not in obj[2])
                    ids = np.repeat([v for v, _ in rows], [x for _, x in rows]) if rows else np.zeros(0, np.int64)
                    node_of[k, present] = ids
                for ind in range(total):
                    t0 = int(arrival[ind])
                    chains[(t0, tuple(int(node_of[k, ind]) for k in range(t0, self.n)))] += 1
        grouped: dict = {}
        for (t0, members), cnt in chains.items():
            if t0 == self.n - 1:
                continue  # records of the last release starting their chain there are listed as "start"
            grouped.setdefault(t0, []).append((members, cnt))
        parts = [(np.array([m for m, _ in items], dtype=np.int64), np.array([c for _, c in items], np.int64))
                 for _, items in sorted(grouped.items())]
        return generator_json(self.nodes, releases, values, point, parts)
