"""LP bounds and LP-guided generators for the buddy-chain model of :mod:`solver.correspondence.generators`.

The chain model of one component (one sensitive value) has an integer variable per incidence ``z[j, v, c]``
(records of node ``v`` of ``R_j`` instantiated in atom class ``c``), node rows ``sum_c z[j, v, c] = |v|``
and monotone loads ``y[c, j] = sum_v z[j, v, c] <= y[c, j + 1]``.  Its crack objectives are arrivals
``y[c, t] - y[c, t - 1]``.  Not a flow for three releases or more (see :mod:`solver.correspondence.generators`), but on
Adult its LP relaxation had the integer optimum as its value on every objective sampled, and its optimal
vertices were integral except for a small fixed "island" of variables.  This module uses both facts while
proving everything it returns:

* **upper bounds** from the LP *dual*, made safe in the manner of Neumaier and Shcherbina (2004): for any
  row prices ``pi`` (monotone rows clipped to the sign that keeps them valid), ``c.z <= pi_eq.b +
  sum_i max(0, (c - A^T pi)_i) u_i`` for every ``0 <= z <= u`` satisfying the rows, whatever the LP
  solver's tolerances - a valid bound on the integer optimum, rounded down to an integer;
* **generators** (lower bounds) from LP solutions: the integral part is kept, the fractional island is
  completed by a small CP-SAT model over the island alone, and the result is checked exactly against every
  row before it is used.  Islands repeat from one objective to the next; their completions are cached.

GLOP is warm-started from the previous basis (preprocessing off), so a sequence of objectives costs a few
milliseconds each instead of a fresh solve.
"""
from __future__ import annotations

import numpy as np
from ortools.linear_solver import linear_solver_pb2, pywraplp
from ortools.sat.python import cp_model
from scipy.sparse import csr_matrix

__all__ = ["ChainLP"]

_TOL = 1e-6


class ChainLP:
    """The LP relaxation of one component's chain model.

    Parameters
    ----------
    J, V, C : per incidence, the release (0-based), node and atom class.
    count : per incidence, the size of its node.
    n : number of releases.
    """

    def __init__(self, J: np.ndarray, V: np.ndarray, C: np.ndarray, count: np.ndarray, n: int):
        self.n = n
        m = len(J)
        self.m = m
        self.upper = count.astype(np.int64)
        k = int(C.max()) + 1 if m else 0
        # node rows: incidences of one (release, node)
        node_key = J * (int(V.max()) + 1 if m else 1) + V
        _, node_row = np.unique(node_key, return_inverse=True)
        node_row = node_row.reshape(-1)
        n_node = int(node_row.max()) + 1 if m else 0
        rhs = np.zeros(n_node, np.int64)
        rhs[node_row] = count
        # monotone rows: y[c, j] - y[c, j + 1] <= 0 for every (c, j) present (y[c, j + 1] may have no term)
        load_key = C * n + J
        self._load_key = load_key
        present = np.zeros(k * n, bool)
        present[load_key] = True
        mono_ids = np.full(k * n, -1, np.int64)
        heads = np.flatnonzero(present & (np.arange(k * n) % n < n - 1))
        mono_ids[heads] = np.arange(len(heads))
        rows, cols, vals = [node_row], [np.arange(m)], [np.ones(m, np.int64)]
        own = mono_ids[load_key]  # the row where the incidence counts +1 (its own load)
        sel = own >= 0
        rows.append(n_node + own[sel])
        cols.append(np.flatnonzero(sel))
        vals.append(np.ones(int(sel.sum()), np.int64))
        prev = np.where(J > 0, mono_ids[np.maximum(load_key - 1, 0)], -1)  # the row of (c, j - 1): -1 there
        sel = prev >= 0
        rows.append(n_node + prev[sel])
        cols.append(np.flatnonzero(sel))
        vals.append(-np.ones(int(sel.sum()), np.int64))
        self.n_eq = n_node
        self.n_rows = n_node + len(heads)
        self.A = csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                            shape=(self.n_rows, m), dtype=np.int64)
        self.AT = self.A.T.tocsr()
        self.b = np.concatenate([rhs, np.zeros(len(heads), np.int64)])
        self.load_index = {}  # (c, j) -> incidences
        order = np.argsort(load_key, kind="stable")
        cuts = np.flatnonzero(np.diff(load_key[order])) + 1
        for part in np.split(order, cuts) if m else []:
            self.load_index[(int(C[part[0]]), int(J[part[0]]))] = part
        # GLOP, warm-started between objectives
        lp = pywraplp.Solver.CreateSolver("GLOP")
        lp.SetSolverSpecificParametersAsString("use_preprocessing:false")
        self.lp = lp
        self.x = [lp.NumVar(0.0, float(u), "") for u in self.upper.tolist()]
        A = self.A
        for r in range(self.n_rows):
            lo_, hi_ = (float(self.b[r]), float(self.b[r])) if r < n_node else (-lp.infinity(), 0.0)
            ct = lp.RowConstraint(lo_, hi_, "")
            for i, a in zip(A.indices[A.indptr[r]:A.indptr[r + 1]].tolist(),
                            A.data[A.indptr[r]:A.indptr[r + 1]].tolist()):
                ct.SetCoefficient(self.x[i], float(a))
        self.objective = lp.Objective()
        self.objective.SetMaximization()
        self._set: list[int] = []
        self._response = linear_solver_pb2.MPSolutionResponse()
        self._islands: dict = {}
        self._priced = None
        self.lp_solves = 0
        self.island_solves = 0

    # ------------------------------------------------------------------ objectives
    def arrivals(self, weights: dict[int, int], t: int) -> np.ndarray:
        """Objective vector (per incidence): ``sum_c w_c (y[c, t] - y[c, t - 1])`` (``t`` 1-based)."""
        w = np.zeros(self.m, np.int64)
        for c, wc in weights.items():
            w[self.load_index.get((c, t - 1), [])] += wc
            if t >= 2:
                w[self.load_index.get((c, t - 2), [])] -= wc
        return w

    def solve(self, w: np.ndarray):
        """Maximize ``w.z`` over the LP.  Returns ``(safe integer upper bound, LP solution)`` or ``None`` when
        GLOP does not report an optimum."""
        for i in self._set:
            self.objective.SetCoefficient(self.x[i], 0.0)
        nz = np.flatnonzero(w)
        for i, wi in zip(nz.tolist(), w[nz].tolist()):
            self.objective.SetCoefficient(self.x[i], float(wi))
        self._set = nz.tolist()
        status = self.lp.Solve()
        self.lp_solves += 1
        if status != pywraplp.Solver.OPTIMAL:
            return None
        self.lp.FillSolutionResponseProto(self._response)
        z = np.asarray(self._response.variable_value, dtype=np.float64)
        self.duals = np.asarray(self._response.dual_value, dtype=np.float64)
        return self.safe_bound(w, self.duals), z

    def _prices(self, duals: np.ndarray):
        """The clipped prices, ``pi_eq . b`` and ``A^T pi`` (kept for the last price vector: :meth:`solve` and
        :meth:`arrival_bounds` use the same one)."""
        if self._priced is not None and self._priced[0] is duals:
            return self._priced[1]
        pi = duals.copy()
        pi[self.n_eq:] = np.maximum(pi[self.n_eq:], 0.0)
        out = pi, float(pi[:self.n_eq] @ self.b[:self.n_eq]), self.AT @ pi
        self._priced = (duals, out)
        return out

    def safe_bound(self, w: np.ndarray, duals: np.ndarray) -> int:
        """``floor`` of a valid upper bound on ``max w.z`` over integer (and real) points of the model, from any
        row prices: equality rows free, ``<= 0`` rows only with a non-negative price (clipped)."""
        _, base, r = self._prices(duals)
        return int(np.floor(base + float(np.maximum(w - r, 0.0) @ self.upper) + _TOL))

    def arrival_bounds(self, duals: np.ndarray, n_classes: int) -> np.ndarray:
        """The safe bound of *every* arrival objective ``y[c, t] - y[c, t - 1]`` from one price vector, as a
        ``(classes, n)`` integer array (column ``t - 1``): the reduced costs of the objectives differ from
        the zero objective's only on the incidences of ``(c, t)`` and ``(c, t - 1)``.  Loose for objectives
        far from the one the prices were solved for, never invalid."""
        _, base, r = self._prices(duals)
        u = self.upper
        zero = np.maximum(-r, 0.0) * u
        plus = np.maximum(1.0 - r, 0.0) * u - zero  # the incidence's load gains +1
        minus = np.maximum(-1.0 - r, 0.0) * u - zero  # ... or -1
        n = self.n
        key = self._load_key
        d_plus = np.bincount(key, weights=plus, minlength=n_classes * n).reshape(n_classes, n)
        d_minus = np.bincount(key, weights=minus, minlength=n_classes * n).reshape(n_classes, n)
        total = base + float(zero.sum()) + d_plus
        total[:, 1:] += d_minus[:, :-1]
        return np.floor(total + _TOL).astype(np.int64)

    # ------------------------------------------------------------------ integer points
    def feasible(self, z: np.ndarray) -> bool:
        """Exact check of an integer point against every row and bound."""
        if np.any(z < 0) or np.any(z > self.upper):
            return False
        az = self.A @ z
        return bool(np.all(az[:self.n_eq] == self.b[:self.n_eq]) and np.all(az[self.n_eq:] <= 0))

    def integer_point(self, z: np.ndarray, w: np.ndarray | None = None) -> np.ndarray | None:
        """An integer point near an LP solution ``z``: integral entries kept, the fractional island completed
        by CP-SAT (maximizing ``w`` on it when given); ``None`` when that fails.  Always checked exactly."""
        r = np.round(z)
        frac = np.flatnonzero(np.abs(z - r) > _TOL)
        zi = r.astype(np.int64)
        if len(frac):
            rows = np.unique(self.AT[frac].indices)
            fixed = zi.copy()
            fixed[frac] = 0
            rest = self.b[rows] - self.A[rows] @ fixed  # what the island must make up (== for eq, <= for mono)
            wf = w[frac] if w is not None else np.zeros(len(frac), np.int64)
            key = (frac.tobytes(), rows.tobytes(), rest.tobytes(), wf.tobytes())
            island = self._islands.get(key)
            if island is None:
                island = self._island(frac, rows, rest, wf)
                self._islands[key] = island
            if island is None:
                return None
            zi[frac] = island
        return zi if self.feasible(zi) else None

    def _island(self, frac: np.ndarray, rows: np.ndarray, rest: np.ndarray, wf: np.ndarray):
        self.island_solves += 1
        model = cp_model.CpModel()
        pos = {int(i): k for k, i in enumerate(frac.tolist())}
        xs = [model.new_int_var(0, int(self.upper[i]), "") for i in frac.tolist()]
        A = self.A
        for r, rhs in zip(rows.tolist(), rest.tolist()):
            terms = [(xs[pos[i]], a) for i, a in zip(A.indices[A.indptr[r]:A.indptr[r + 1]].tolist(),
                                                     A.data[A.indptr[r]:A.indptr[r + 1]].tolist()) if i in pos]
            expr = sum(a * v for v, a in terms)
            if r < self.n_eq:
                model.add(expr == int(rhs))
            else:
                model.add(expr <= int(rhs))
        if np.any(wf):
            model.maximize(sum(int(a) * v for a, v in zip(wf.tolist(), xs) if a))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_time_in_seconds = 5.0
        status = solver.solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        return np.array([solver.value(v) for v in xs], np.int64)


def pair_relaxation_bounds(J: np.ndarray, V: np.ndarray, C: np.ndarray, count: np.ndarray, n: int, cap: np.ndarray,
                           wanted: np.ndarray) -> np.ndarray:
    """Upper bounds on the arrivals ``y[c, t] - y[c, t - 1]`` from two consecutive releases at a time - a
    network flow, so exact integer arithmetic.

    Relaxation: keep the node rows of ``R_{t-1}`` and ``R_t`` and the monotone row between them, and replace
    every later release by the class capacity ``y[c, t] <= min_{j >= t} cap[c, j]`` (``cap`` as in
    :class:`~solver.correspondence.generators.ChainEngine`: the records of ``R_j`` that can sit in the class).  Network:
    ``S -> a`` (``|a|``, nodes of ``R_{t-1}``) ``-> c_in -> c``, ``S -> X -> c`` (the arrivals, ``|R_t| -
    |R_{t-1}|``), ``c -> c_out`` (the capacity) ``-> b -> T`` (``|b|``, nodes of ``R_t``); every feasible
    flow saturates ``S`` and ``T``.  The maximum flow on one arc over feasible flows is its flow plus the
    maximum flow from its head back to its tail in the residual graph without the arc's own reverse: one
    max-flow per objective on a shared graph.  Arrivals at ``T_t`` (``t >= 2``) are the flow on ``X -> c`` of
    the pair ``(t - 1, t)``; arrivals at ``T_1`` (loads of ``R_1``) the flow on ``c_in -> c`` of the pair
    ``(1, 2)``.

    ``wanted``: ``(classes, n)`` bool, the objectives to bound (1-based ``t`` in column ``t - 1``).  Returns a
    ``(classes, n)`` int64 array, ``-1`` where not computed.
    """
    from ortools.graph.python import max_flow

    k = int(C.max()) + 1 if len(C) else 0
    out = np.full((k, n), -1, np.int64)
    big = int(count.sum()) + 1
    # classes alive at j: present at every release from j on (otherwise their loads are 0 up to there)
    present = np.zeros((k, n), bool)
    present[C, J] = True
    alive = np.flip(np.logical_and.accumulate(np.flip(present, axis=1), axis=1), axis=1)
    capc = np.flip(np.minimum.accumulate(np.flip(np.where(present, cap, 0), axis=1), axis=1), axis=1)
    for p in range(n - 1):
        q = p + 1
        targets = [(q + 1, wanted[:, q])] + ([(1, wanted[:, 0])] if p == 0 else [])
        if not any(w.any() for _, w in targets):
            continue
        ip = np.flatnonzero((J == p) & alive[C, p])
        iq = np.flatnonzero((J == q) & alive[C, q])
        a_ids, a_loc = np.unique(V[ip], return_inverse=True)
        b_ids, b_loc = np.unique(V[iq], return_inverse=True)
        a_size = np.zeros(len(a_ids), np.int64)
        a_size[a_loc.reshape(-1)] = count[ip]
        b_size = np.zeros(len(b_ids), np.int64)
        b_size[b_loc.reshape(-1)] = count[iq]
        cls = np.flatnonzero(alive[:, q])
        cl = np.full(k, -1, np.int64)
        cl[cls] = np.arange(len(cls))
        na, nc, nb = len(a_ids), len(cls), len(b_ids)
        # node numbering
        S, X, T = 0, 1, 2
        A0 = 3
        CIN = A0 + na
        CC = CIN + nc
        COUT = CC + nc
        B0 = COUT + nc
        tails = [np.full(na, S), [S], A0 + a_loc.reshape(-1), CIN + np.arange(nc), np.full(nc, X), CC + np.arange(nc),
                 COUT + cl[C[iq]], B0 + np.arange(nb)]
        heads = [A0 + np.arange(na), [X], CIN + cl[C[ip]], CC + np.arange(nc), CC + np.arange(nc),
                 COUT + np.arange(nc), B0 + b_loc.reshape(-1), np.full(nb, T)]
        caps = [a_size, [int(b_size.sum() - a_size.sum())], np.full(len(ip), big), np.full(nc, big), np.full(nc, big),
                capc[cls, q], np.full(len(iq), big), b_size]
        tails = np.concatenate([np.asarray(x, np.int64) for x in tails]).astype(np.int32)
        heads = np.concatenate([np.asarray(x, np.int64) for x in heads]).astype(np.int32)
        caps = np.concatenate([np.asarray(x, np.int64) for x in caps]).astype(np.int64)
        if caps[na] < 0:
            continue
        mf = max_flow.SimpleMaxFlow()
        mf.add_arcs_with_capacity(tails, heads, caps)
        if mf.solve(S, T) != mf.OPTIMAL or mf.optimal_flow() != int(b_size.sum()):
            continue  # no feasible flow: the relaxation proves nothing here (the caller keeps its bounds)
        flow = np.asarray(mf.flows(np.arange(len(tails), dtype=np.int32)), np.int64)
        m = len(tails)
        res = max_flow.SimpleMaxFlow()
        res.add_arcs_with_capacity(np.concatenate([tails, heads]).astype(np.int32),
                                   np.concatenate([heads, tails]).astype(np.int32),
                                   np.concatenate([caps - flow, flow]).astype(np.int64))
        first_cin = na + 1 + len(ip)  # arc index of c_in -> c for class 0
        first_x = first_cin + nc  # X -> c
        for t, want in targets:
            base_arc = first_x if t == q + 1 else first_cin
            for c in np.flatnonzero(want & alive[:, q]).tolist():
                e = base_arc + int(cl[c])
                rev = m + e
                keep = int(flow[e])
                res.set_arc_capacity(rev, 0)
                st = res.solve(int(heads[e]), int(tails[e]))
                res.set_arc_capacity(rev, keep)
                if st == res.OPTIMAL:
                    out[c, t - 1] = keep + res.optimal_flow()
    return out
