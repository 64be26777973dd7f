"""The LP relaxation of a coupled part's type-worlds: worlds from its vertices, refutations with a certificate
(issue 24).

A world of a coupled part (:mod:`solver.worlds.linkability`) is an integral point of the type-world polytope
``P``: ``m[t, v] >= 0`` members of type ``t`` with value ``v`` (``sum_v m[t, v] = n_t``), and in every release
``k`` a transport ``f >= 0`` of the types present onto the record groups, each group receiving its count and each
type sending ``m[t, v]`` to the groups of value ``v`` (Shmueli & Tassa, 004, section 3: a world assigns each
individual one value for the whole sequence, consistent with every release).  :class:`Relaxation` builds the
equalities ``A x = b`` of ``P`` once (``x`` = the pairs' ``m``, then the ``f`` of each usable edge of a pair
that reaches several groups of its value in a release; a pair that reaches one carries ``m`` on that edge, which
is ``m``'s column; ``A`` has entries 0, 1 and -1) and answers two questions with HiGHS (``highspy``):

**Worlds from vertices** (:meth:`Relaxation.vertex`, :meth:`Relaxation.integral`).  Each release alone is a
transportation problem (its vertices are integral); the releases share ``m``, so ``P`` can have fractional
vertices, but on the custodian's parts (monthly Adult snapshots, 7 quasi-identifiers, 30,000 rows, month 7: parts
of up to 2,081 types over 7 releases) the simplex vertex maximizing a weight on the open pairs was integral three
times in four, realizing 744 of 796 short types' second values in 0.7 s (CP-SAT rounds: 10-20 s for the same part).
A vertex is a world only after it is checked: integral, non-negative and ``A x = b`` in integer arithmetic;
anything else is ``None``.

**Refutation with a certificate** (:meth:`Relaxation.refute`).  From one world ``x0``, the directions ``d``
with ``x0 + e d`` in ``P`` for a small ``e > 0`` form the tangent cone ``C = {d : A d = 0, d_i >= 0 where
x0_i = 0}``.  ``P`` is convex, so a pair with ``m0[t, v] = 0`` is positive somewhere on ``P`` iff some ``d`` in
``C`` has ``d[t, v] > 0``.  All those coordinates are ``>= 0`` on ``C`` and ``C`` is closed under sums and
scaling, so one LP finds them all: maximize ``sum z``, ``z[t, v] <= d[t, v]``, ``0 <= z <= 1``, ``d`` in ``C``;
at an optimum each ``z`` is 0 or 1, and 0 exactly on the pairs zero on all of ``P`` (the set ``S``).  Floating
point does not prove it; a *certificate* does: a vector ``y`` with ``c = A^T y`` such that ``c_i = 0`` where
``x0_i > 0``, ``c_i >= 0`` elsewhere and ``c_j > 0`` on ``S``.  For any ``d`` in ``C``, ``0 = y^T A d =
sum c_i d_i``, a sum of non-negative terms, so ``d_j = 0`` on ``S``: no point of ``P``, and no world, realizes a
pair of ``S``.  The LP's duals give ``y`` (else a second LP asks for one); it is scaled to integers and checked
exactly (``A`` integral, int64 arithmetic), and only the pairs it proves are refuted.  The relaxation can leave
pairs that no world realizes (``P`` is not integral): those stay open for CP-SAT.
"""
from __future__ import annotations

from fractions import Fraction
from math import lcm

import numpy as np
import highspy
from scipy import sparse

from .problem import Block

__all__ = ["Relaxation"]

#: an LP value this close to 0 or 1 reads as 0 or 1 (the cone LP's answer); other values: not trusted
TOLERANCE = 1e-6
#: the largest denominator tried when a certificate's floating-point ``y`` is read as rationals
DENOMINATOR = 64


class Relaxation:
    """The equalities of one part's type-world polytope on the candidate pairs ``cand`` (module docstring)."""

    def __init__(self, block: Block, cand: np.ndarray):
        self.block, self.cand = block, cand
        T, V = cand.shape
        pairs = self.pairs = np.argwhere(cand)
        n_pairs = self.n_pairs = len(pairs)
        self.keys = list(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))  # (t, v) of each pair, as ints
        pair_id = np.full((T, V), -1, dtype=np.int64)
        pair_id[pairs[:, 0], pairs[:, 1]] = np.arange(n_pairs)
        rows, cols, vals, rhs = [pairs[:, 0]], [np.arange(n_pairs)], [np.ones(n_pairs, dtype=np.int64)], \
            [block.type_count.astype(np.int64)]  # sum_v m[t, v] = n_t
        n_rows, n_cols = T, n_pairs
        self.uses = []  # per release: the edges with a column, and their columns
        for k in range(len(block.releases)):
            edges = block.edges[k]
            value = block.group_value[k][edges[:, 1]]
            use = np.flatnonzero(cand[edges[:, 0], value] & block.present[edges[:, 0], k])
            pair = pair_id[edges[use, 0], value[use]]
            reach = np.bincount(pair, minlength=n_pairs)  # a pair's edges in this release
            # a pair that reaches one group carries m[t, v] on that edge: the edge is m's column (every
            # Mondrian-like release; HiGHS took 1.8 s a vertex on the full system of a part of 4,872 types over 12
            # releases, 0.5 s on this one); a pair that reaches several has a column per edge summing to m
            single = reach[pair] == 1
            col = pair.copy()
            col[~single] = n_cols + np.arange(int((~single).sum()))
            n_cols += int((~single).sum())
            self.uses.append((use, col))
            split = np.flatnonzero((reach > 1) & block.present[pairs[:, 0], k])
            none = np.flatnonzero((reach == 0) & block.present[pairs[:, 0], k])  # no group of v: m[t, v] = 0
            row_of = np.full(n_pairs, -1, dtype=np.int64)
            row_of[split] = n_rows + np.arange(len(split))
            row_of[none] = n_rows + len(split) + np.arange(len(none))
            n_rows += len(split) + len(none)
            many = ~single
            rows += [row_of[split], row_of[none], row_of[pair[many]]]
            cols += [split, none, col[many]]
            vals += [-np.ones(len(split), dtype=np.int64), np.ones(len(none), dtype=np.int64),
                     np.ones(int(many.sum()), dtype=np.int64)]
            rhs.append(np.zeros(len(split) + len(none), dtype=np.int64))
            rows.append(n_rows + edges[use, 1])  # every group receives its count
            cols.append(col)
            vals.append(np.ones(len(use), dtype=np.int64))
            rhs.append(block.group_count[k].astype(np.int64))
            n_rows += len(block.group_count[k])
        self.a = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                   shape=(n_rows, n_cols), dtype=np.int64)
        self.b = np.concatenate(rhs)
        self.n_cols = n_cols
        self._lp = None  # the HiGHS model of A x = b, x >= 0 (made by the first vertex)

    # ------------------------------------------------------------------ points
    def point(self, m: dict, flows: list[np.ndarray]) -> np.ndarray:
        """``x`` of a world given as ``{(t, v): members}`` and its transport per release (one value per edge)."""
        x = np.zeros(self.n_cols, dtype=np.int64)
        x[:self.n_pairs] = [m.get(key, 0) for key in self.keys]
        for (use, col), f in zip(self.uses, flows):
            own = col >= self.n_pairs  # an edge that is m's column is m (a transport saying otherwise: no world)
            x[col[own]] = f[use[own]]
        return x

    def world_of(self, x: np.ndarray) -> dict:
        """The type-world ``{(t, v): members}`` of a point."""
        return dict(zip(self.keys, np.asarray(x[:self.n_pairs]).astype(np.int64).tolist()))

    def flows(self, x: np.ndarray) -> list[np.ndarray]:
        """The transport of a point per release, one value per edge of ``block.edges[k]`` (0 off the columns)."""
        out = []
        for k, (use, col) in enumerate(self.uses):
            f = np.zeros(len(self.block.edges[k]), dtype=np.int64)
            f[use] = x[col]
            out.append(f)
        return out

    def is_world(self, x: np.ndarray) -> bool:
        """``x`` (integers) is a point of ``P``: non-negative and ``A x = b`` exactly."""
        return bool((x >= 0).all() and np.array_equal(self.a @ x, self.b))

    # ------------------------------------------------------------------ worlds
    def vertex(self, weight: np.ndarray) -> np.ndarray | None:
        """The simplex vertex of ``P`` maximizing ``weight`` (one per pair), in floating point (``None``: the LP
        failed)."""
        cost = np.zeros(self.n_cols)
        cost[:self.n_pairs] = -weight
        if self._lp is None:
            b = self.b.astype(float)
            self._lp = _model(self.a, b, b, np.zeros(self.n_cols), np.full(self.n_cols, np.inf))
        solved = _solve(self._lp, cost, dual_simplex=True)
        return None if solved is None else solved[0]

    def integral(self, point: np.ndarray) -> np.ndarray | None:
        """``point`` as a world (integers, checked: :meth:`is_world`), or ``None``."""
        x = np.round(point)
        if np.abs(point - x).max(initial=0) > TOLERANCE:
            return None
        x = x.astype(np.int64)
        return x if self.is_world(x) else None

    def fractional_types(self, point: np.ndarray) -> np.ndarray:
        """The types with a fractional coordinate (their ``m``, or the transport of one of their edges)."""
        frac = np.abs(point - np.round(point)) > TOLERANCE
        types = [self.pairs[frac[:self.n_pairs], 0]]
        for k, (use, col) in enumerate(self.uses):
            types.append(self.block.edges[k][use[frac[col]], 0])
        return np.unique(np.concatenate(types))

    # ------------------------------------------------------------------ refutations
    def refute(self, x0: np.ndarray) -> np.ndarray:
        """``(T, V)`` bool: the candidate pairs zero in every world, each proven by a checked certificate
        (module docstring), from the world ``x0``; pairs the LP could not prove are not in it."""
        out = np.zeros(self.cand.shape, dtype=bool)
        zero = np.flatnonzero(x0[:self.n_pairs] == 0)
        if not len(zero):
            return out
        n_z, n_cols, n_rows = len(zero), self.n_cols, self.a.shape[0]
        a_eq = sparse.hstack([self.a, sparse.csr_matrix((n_rows, n_z))]).tocsr()
        a_ub = sparse.csr_matrix((np.r_[np.ones(n_z), -np.ones(n_z)],
                                  (np.r_[np.arange(n_z), np.arange(n_z)], np.r_[n_cols + np.arange(n_z), zero])),
                                 shape=(n_z, n_cols + n_z))
        lower = np.zeros(n_cols + n_z)  # the cone: >= 0 where the world is 0, free where it is positive
        lower[np.flatnonzero(x0 > 0)] = -np.inf
        upper = np.full(n_cols + n_z, np.inf)
        upper[n_cols:] = 1
        cost = np.zeros(n_cols + n_z)
        cost[n_cols:] = -1
        rows = np.r_[np.full(n_z, -np.inf), np.zeros(n_rows)], np.zeros(n_z + n_rows)  # z <= d, then A d = 0
        solved = _solve(_model(sparse.vstack([a_ub, a_eq]), *rows, lower, upper), cost)
        if solved is None:
            return out
        x, duals = solved
        z = x[n_cols:]
        stuck = zero[z < TOLERANCE]  # the pairs the LP says no world realizes: a certificate proves them
        if not len(stuck):
            return out
        proven = self._certified(x0, stuck, duals[n_z:])
        if proven is None or not proven.all():
            again = self._certificate(x0, stuck)
            if again is not None:
                proven = again if proven is None else proven | again
        if proven is not None:
            hit = self.pairs[stuck[proven]]
            out[hit[:, 0], hit[:, 1]] = True
        return out

    def _certified(self, x0: np.ndarray, stuck: np.ndarray, y: np.ndarray) -> np.ndarray | None:
        """Which of ``stuck`` the vector ``y`` proves (``c = A^T y``: 0 where ``x0 > 0``, ``>= 0`` elsewhere,
        ``> 0`` on the pair), checked in integer arithmetic; ``None`` when ``y`` is no certificate."""
        scaled = _integral(y)
        if scaled is None:
            return None
        for sign in (1, -1):
            c = self.a.T @ (sign * scaled)
            positive = x0 > 0
            if (c[positive] == 0).all() and (c[~positive] >= 0).all():
                return c[stuck] > 0
        return None

    def _certificate(self, x0: np.ndarray, stuck: np.ndarray) -> np.ndarray | None:
        """A certificate for ``stuck`` from an LP of its own (``A^T y``: 0 where ``x0 > 0``, ``>= 1`` on
        ``stuck``, ``>= 0`` elsewhere), checked by :meth:`_certified`."""
        at = self.a.T.tocsr().astype(float)
        positive = np.flatnonzero(x0 > 0)
        rest = np.setdiff1d(np.flatnonzero(x0 == 0), stuck)
        need = np.r_[np.ones(len(stuck)), np.zeros(len(rest)), np.zeros(len(positive))]
        upper = np.r_[np.full(len(stuck) + len(rest), np.inf), np.zeros(len(positive))]
        free = np.full(self.a.shape[0], np.inf)
        solved = _solve(_model(sparse.vstack([at[stuck], at[rest], at[positive]]), need, upper, -free, free),
                        np.zeros(self.a.shape[0]), dual_simplex=True)
        if solved is None:
            return None
        return self._certified(x0, stuck, solved[0])


def _model(a: sparse.spmatrix, row_lower: np.ndarray, row_upper: np.ndarray, col_lower: np.ndarray,
           col_upper: np.ndarray) -> "highspy.HighsLp":
    """HiGHS's model of ``row_lower <= A x <= row_upper``, ``col_lower <= x <= col_upper`` (costs set per solve)."""
    csc = sparse.csc_matrix(a, dtype=float)
    lp = highspy.HighsLp()
    lp.num_row_, lp.num_col_ = csc.shape
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.col_lower_, lp.col_upper_ = col_lower, col_upper
    matrix = lp.a_matrix_
    matrix.format_ = highspy.MatrixFormat.kColwise
    matrix.num_row_, matrix.num_col_ = csc.shape
    matrix.start_, matrix.index_, matrix.value_ = csc.indptr, csc.indices, csc.data
    return lp


def _solve(lp: "highspy.HighsLp", cost: np.ndarray, dual_simplex: bool = False
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(x, row duals)`` of the LP minimizing ``cost`` over ``lp`` (``None`` unless solved to optimality), by
    HiGHS (its dual simplex when asked: what scipy's ``linprog(method="highs-ds")`` runs, here without scipy's
    conversions of the model and the basis on every call - on the custodian's month 12 at 30,000 rows, 1,866
    LPs, most of them small, spent more time there than in HiGHS)."""
    lp.col_cost_ = cost
    highs = highspy._core._Highs()  # the solver class itself: the public subclass prints a banner on stdout
    highs.setOptionValue("output_flag", False)
    if dual_simplex:
        highs.setOptionValue("solver", "simplex")
        highs.setOptionValue("simplex_strategy", 1)
    highs.passModel(lp)
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    solution = highs.getSolution()
    return np.asarray(solution.col_value), np.asarray(solution.row_dual)


def _integral(y: np.ndarray) -> np.ndarray | None:
    """``y`` times the least common denominator of its entries read as fractions (up to :data:`DENOMINATOR`),
    as int64; ``None`` when an entry is not such a fraction."""
    common = 1
    for v in np.unique(np.round(y, 9)):
        common = lcm(common, Fraction(float(v)).limit_denominator(DENOMINATOR).denominator)
        if common > 10 ** 6:
            return None
    scaled = y * common
    out = np.round(scaled)
    if np.abs(scaled - out).max(initial=0) > 1e-5 or np.abs(out).max(initial=0) > 2 ** 40:
        return None
    return out.astype(np.int64)
