"""Exact linkability of the possible-worlds engine (:mod:`solver.worlds.counting`), and the type-world model.

Linkability of an individual: the values it takes in at least one possible world (Shmueli & Tassa, 004,
section 3: l-linkability).  Flows decide it first (:mod:`solver.worlds.reduce`: per-release perfect
b-matchings and their strongly connected components, to a fixpoint, then independent sub-blocks); what is
left is the *persistent-value coupling* of a sub-block where a type that can still take two values is present
in two releases.  That is decided by CP-SAT on the *type-world* model (``m[t, v]``: members of type ``t`` with
value ``v``, one integral transport per release), every coupled sub-block of the problem in one model
(:func:`decide_coupled_all`): each solution settles every pair it realizes, and a round that maximizes the
number of parts realizing one of their open pairs proves, at its optimum, that the parts left out have none
(INFEASIBLE for all their open pairs at once).  A pair left undecided by the time limit is reported linkable,
and the block's linkability is then not exact.

Where the time goes (issue 24; monthly Adult snapshots, 7 quasi-identifiers with their hierarchies, 10% leave
and 20% arrive a month, Mondrian k = 10 l = 2, persistent values, the month-2 gate; cProfile, one core):

* 1,000 rows, before the attack computed only what the requirements read: 101 s, of which 95 s world counting
  (:func:`solver.worlds.counting.count_block`: 1,062 CP-SAT enumerations of type-worlds, for ``max_breach``,
  which the gate's ``disclosed == 0`` never reads) and 12 s here (78 rounds: 7 s of solves, 4 s building the
  models of the open parts again each round).  The consistency graph and the flow reduction: under 0.2 s.
* 30,000 rows, linkability only, :func:`decide_coupled_all` with ``scope="min"``: 1,009 coupled parts, 28,589
  candidate pairs, 19 s of a 25 s gate - 18 rounds of 0.7 s of CP-SAT and 6 s building 4,569 part models
  (Python loops over the edges); the consistency graph and blocks 1.9 s.
* From three releases on (30,000 rows, month 3), values persistent across releases with churn couple most of
  the population into parts that span every release: one CP-SAT model of every part (728 parts in two
  chunks) did not find a first world within the 20 s limit, and ``disclosed`` was only bounded.  Now the
  parts go in batches of at most :data:`BATCH_TYPES` types, one model each, and a round maximizes the open
  pairs it realizes: the two chunks take 28 s and 19 s of one core, of which 12 s is one part of 937 types
  (6 rounds) and 13 s the 110 batches of small parts (10-18 solves each, about 20 ms of CP-SAT set-up per
  solve); month 2 at 10,000 rows went from 11.6 s to 5.9 s.
* Each month's gate decides the whole sequence again, and the coupled parts grow with it: through the
  ledger (``benchmarks/bench_worlds_custodian.py --rows 30000 --months 12 --time-limit 120``, two worker
  processes) month 3 is exact in 56 s (1,359 disclosed), month 4 in 110 s (2,638), and from month 5 on the
  120 s are not enough (``disclosed`` bounded, e.g. [3167, 15505]).
* Month 4 at 30,000 rows, one core: 654 coupled parts (13,381 types, the largest 1,314); 120 s of CP-SAT, of
  which about 27 s raised parts without a disclosed type to levels 3 and more while other parts already had
  one (the least linkability of the whole problem was 1), and most of the rest in the first rounds of the
  large parts, each realizing hundreds of pairs in one optimisation of 4-10 s.  Now: one level for the whole
  call (:func:`decide_coupled_all`: level 2 everywhere first, higher only where no part has a type below it,
  and never above the least linkability the flows already found), no LP relaxation in CP-SAT
  (``linearization_level = 0``: half the time on the large parts), every improving world of a round settled,
  and worlds near the first one found by small models of 60 freed types (:func:`_local_worlds`) before the
  rounds: the month-7 part of 2,081 types from 37 s to 22 s.  With the ledger carrying each month's upper
  set (:attr:`solver.worlds.problem.WorldsProblem.allowed`, :mod:`attacks.worlds_state`), months 2-6 at 30,000
  rows take 10, 23, 43, 59 and 79 s (two worker processes), all exact: the coupled parts still grow with the
  sequence (month 7: 526 parts, 26,894 types, the largest 2,081), and what is left is their size - the rounds'
  optimisations over a part of thousands of types.
* Month 7's coupled parts (one process, ``scope="min"``): 145 s, of which 88 s for the five parts of more than
  1,000 types.  Their LP relaxation is nearly integral: the cone LP of :mod:`solver.worlds.relaxation` refutes
  every pair CP-SAT refutes but one in 9,000 (1,707 pairs of the largest part in 0.5 s, each with a checked
  certificate, where CP-SAT proved them in rounds of 1-6 s), and simplex vertices are worlds three times in
  four (744 of 796 short types of the largest part given their second value by the first one).  With the
  relaxation first (:func:`_relaxed`): 72 s for all of month 7, 28 s for the five large parts (the largest
  decided in 6.6 s without a CP-SAT round); the 262 batches of small parts (19 s) are CP-SAT's as before.
* Month 12 (12 releases, 460 coupled parts, 49,931 types, the largest 4,872; one process): 160 s, of which 56 s
  simplex vertices, 51 s CP-SAT rounds, 27 s completing fractional vertices, 14 s refutations; around that,
  building the problem and its blocks took 15 s before the first part was solved.  The LP was the transport's
  full system (92,352 columns for the largest part) where every edge of these releases carries its pair's ``m``:
  written on ``m`` alone (:mod:`solver.worlds.relaxation`), 108 s; the rounds over thousands of types without
  presolve probing, about 13% less again; the problem and blocks vectorized (:mod:`solver.worlds.problem`),
  5 s.  What is left in a large part is its tail: after twelve vertices a dozen short types remain, each round
  realizing one of them (1.5-2 s a round over 12,400 variables), the last proving the rest have no second value
  - the pairs it refutes are exactly those whose LP maximum is below 1 (0.5 or 2/3), those it realizes have an
  LP maximum of 1 at fractional vertices.
* Month 12 through the ledger (32 chunks in two worker processes, 128 CPU-s, 66-72 s wall): a third of the
  workers' time was Python around the solvers - 1,866 LPs through scipy's ``linprog`` (about 7 ms each of
  conversions, most of the LPs small), 164 CP-SAT models built edge by edge, the neighbourhoods' breadth-first
  search.  With the models built from arrays (:class:`_TypeWorldModel`, :class:`_Neighbours`) and the LPs given to
  HiGHS directly (:mod:`solver.worlds.relaxation`): 57-76 CPU-s, 35-46 s wall, the same figures.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
from ortools.sat.python import cp_model

from multirelease.errors import InputError, SolverError

from .matching import matchable_edges
from .problem import Block, WorldsProblem, _by_appearance, no_world_message

__all__ = ["DEFAULT_TIME_LIMIT", "SCOPES", "block_linkability", "decide_coupled", "decide_coupled_all"]

#: CP-SAT seconds per block (linkability and enumeration each)
DEFAULT_TIME_LIMIT = 20.0


class _TypeWorldModel:
    """CP-SAT model of the type-worlds of a block: ``m[t, v]`` and one integer transport per release.

    A type with one candidate value is a constant (``m[t, v] = n_t``), not a variable; where a type reaches a
    single group of a value in a release (every Mondrian-like release: regions do not overlap), the transport
    on that edge *is* ``m[t, v]``, no variable of its own.  ``m`` holds the variables, ``fixed`` the
    constants; :meth:`solve` returns both.  The edges are grouped by pair with numpy, so that Python runs once
    per variable and constraint, not per edge (the custodian's month 12 at 30,000 rows builds 164 of these
    models: 16.5 s of one core under the profiler before, 8.8 s after, the same CP-SAT model byte for byte)."""

    def __init__(self, block: Block, candidate: np.ndarray, model: cp_model.CpModel | None = None):
        self.block = block
        self.model = model = model if model is not None else cp_model.CpModel()
        T, V = candidate.shape
        n_t = block.type_count.tolist()
        self.m = {}
        self.fixed = {}
        expr = {}
        rows, cols = np.nonzero(candidate)  # a type's candidate values, ascending
        cut = np.searchsorted(rows, np.arange(T + 1)).tolist()
        cols = cols.tolist()
        for t in range(T):
            vs = cols[cut[t]:cut[t + 1]]
            if len(vs) == 1:
                self.fixed[t, vs[0]] = expr[t, vs[0]] = n_t[t]
                continue
            terms = []
            for v in vs:
                var = model.new_int_var(0, n_t[t], f"m_{t}_{v}")
                self.m[t, v] = expr[t, v] = var
                terms.append(var)
            if terms:
                model.add(cp_model.LinearExpr.sum(terms) == n_t[t])
            else:
                model.add(sum([]) == 1)  # a type with no candidate value: no world
        pair_key = rows * V + np.asarray(cols, dtype=np.int64)  # the candidate pairs in the order of expr
        self.flows = []
        for k in range(len(block.releases)):
            edges = block.edges[k]
            gcount, gvalue = block.group_count[k], block.group_value[k]
            # the edges of a candidate value, grouped by pair: pairs in order of their first edge, each pair's
            # edges in order (no Python loop per edge of a pair that reaches one group)
            value = gvalue[edges[:, 1]].astype(np.int64)
            ok = np.flatnonzero(candidate[edges[:, 0], value])
            _, pair = _by_appearance(np.column_stack([edges[ok, 0], value[ok]]))
            order = np.argsort(pair, kind="stable")
            seq = ok[order]
            live = block.present[edges[seq, 0], k]
            seq, multi = seq[live], (np.bincount(pair)[pair[order]] > 1)[live].tolist()
            f = {}
            into_g = [[] for _ in range(len(gcount))]
            e_l, t_l, g_l, v_l = seq.tolist(), edges[seq, 0].tolist(), edges[seq, 1].tolist(), value[seq].tolist()
            i, n = 0, len(e_l)
            while i < n:
                e, t, g, v = e_l[i], t_l[i], g_l[i], v_l[i]
                if not multi[i]:
                    f[e] = expr[t, v]
                    into_g[g].append(expr[t, v])
                    i += 1
                    continue
                cap = n_t[t]
                terms = []
                while i < n and t_l[i] == t and v_l[i] == v:
                    e, g = e_l[i], g_l[i]
                    var = model.new_int_var(0, min(cap, int(gcount[g])), f"f_{k}_{t}_{g}")
                    f[e] = var
                    into_g[g].append(var)
                    terms.append(var)
                    i += 1
                model.add(sum(terms) == expr[t, v])
            # a candidate value with no group in a release where t is present
            for j in np.flatnonzero(block.present[rows, k] & ~np.isin(pair_key, edges[ok, 0] * V + value[ok])).tolist():
                x = expr[int(rows[j]), cols[j]]
                model.add(x == 0) if not isinstance(x, int) else model.add(sum([]) == x)
            for g, c in enumerate(gcount.tolist()):
                into = into_g[g]
                if all(isinstance(x, int) for x in into):  # constants only: a constant constraint, as sum() makes
                    model.add(sum(into) == c)
                else:
                    model.add(cp_model.LinearExpr.sum(into) == c)
            self.flows.append(f)
        self.vars = list(self.m.values())
        self.keys = list(self.m.keys())
        self.index = [v.index for v in self.vars]

    def add_hints(self, sol: dict) -> None:
        """Hint this type-world's variables (beside the hints of other models sharing the CP-SAT model)."""
        hint = self.model.proto.solution_hint  # model.add_hint per variable, in one call (every m index >= 0)
        hint.vars.extend(self.index)
        hint.values.extend([sol.get(key, 0) for key in self.keys])

    def _values(self, solver: cp_model.CpSolver) -> dict:
        return self.values_of(solver.response_proto.solution)

    def values_of(self, values) -> dict:
        """The type-world of a CP-SAT solution vector (``response_proto.solution``)."""
        sol = dict(self.fixed)
        if self.vars:
            sol.update(zip(self.keys, (int(values[i]) for i in self.index)))
        return sol

    def solve(self, time_limit: float, extra: Sequence = ()) -> tuple[str, dict | None, cp_model.CpSolver]:
        """``("feasible", m, solver)``, ``("infeasible", None, solver)`` or ``("unknown", None, solver)``."""
        model = self.model
        lits = []
        for constraint in extra:  # enforced for this solve only, through an assumption
            lit = model.new_bool_var(f"assume_{len(self.vars)}_{id(constraint)}")
            model.add(constraint).only_enforce_if(lit)
            lits.append(lit)
        model.clear_assumptions()
        if lits:
            model.add_assumptions(lits)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1  # >= 2 workers may return wrong enumeration counts
        solver.parameters.max_time_in_seconds = max(time_limit, 0.01)
        solver.parameters.random_seed = 0
        status = solver.solve(model)
        model.clear_assumptions()
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return "feasible", self._values(solver), solver
        if status == cp_model.INFEASIBLE:
            return "infeasible", None, solver
        if status == cp_model.MODEL_INVALID:
            raise SolverError("CP-SAT: invalid type-world model")
        return "unknown", None, solver


def _block_values(problem: WorldsProblem, block: Block) -> np.ndarray:
    V = problem.n_values
    out = np.zeros((block.n_types, V), dtype=bool)
    for k in range(len(block.releases)):
        for t, g in block.edges[k].tolist():
            out[t, block.group_value[k][g]] = True
    return out


def _single_release_linkable(problem: WorldsProblem, block: Block, k: int) -> np.ndarray | None:
    """``(T, V)`` linkable pairs within spanned release ``k`` alone (``None``: no perfect matching)."""
    present = block.present[:, k]
    tc = np.where(present, block.type_count, 0)
    edges = block.edges[k]
    ok = matchable_edges(tc, block.group_count[k], edges)
    out = np.zeros((block.n_types, problem.n_values), dtype=bool)
    if ok is None:
        return None
    e = edges[ok]
    out[e[:, 0], block.group_value[k][e[:, 1]]] = True
    return out


def block_linkability(problem: WorldsProblem, block: Block, *, time_limit: float = DEFAULT_TIME_LIMIT
                      ) -> tuple[np.ndarray, bool, dict]:
    """``(linkable (T, V) bool, exact, witnesses)``: the values each type's members take in some world.

    Flow propagation first (:func:`solver.worlds.reduce.reduce_block`), CP-SAT only on the coupled
    sub-blocks (:func:`decide_coupled`).  ``witnesses[(t, v)]`` is a type-world realizing the pair when
    CP-SAT was used.  ``exact`` is false only when CP-SAT stopped on its time limit (the undecided pairs are
    then reported linkable: an upper bound).  Raises :class:`InputError` when the block has no world at all
    (inconsistent releases)."""
    from .reduce import reduce_block

    linkable = np.zeros((block.n_types, problem.n_values), dtype=bool)
    witnesses: dict = {}
    exact = True
    where = {int(m[0]): t for t, m in enumerate(block.members)}
    deadline = time.perf_counter() + time_limit
    for sub in reduce_block(problem, block):
        rows = np.array([where[int(m[0])] for m in sub.block.members], dtype=np.int64)
        if not sub.coupled:
            linkable[rows] = sub.cand
            continue
        lk, ok, wit, _ = decide_coupled(problem, sub.block, sub.cand,
                                        time_limit=max(deadline - time.perf_counter(), 0.01))
        linkable[rows] = lk
        exact &= ok
        witnesses.update({(int(rows[t]), v): w for (t, v), w in wit.items()})
    return linkable, exact, witnesses


def decide_coupled(problem: WorldsProblem, block: Block, cand: np.ndarray, *,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> tuple[np.ndarray, bool, dict, np.ndarray]:
    """Linkability of one coupled (sub-)block from its candidate pairs: :func:`decide_coupled_all` of it alone."""
    return decide_coupled_all(problem, [(block, cand)], time_limit=time_limit)[0]


#: :func:`decide_coupled_all`'s scopes: every candidate pair, or what ``min_linkability`` and ``disclosed`` need
SCOPES = ("full", "min")


def decide_coupled_all(problem: WorldsProblem, parts: Sequence, *, time_limit: float = DEFAULT_TIME_LIMIT,
                       scope: str = "full", ceiling: int | None = None
                       ) -> list[tuple[np.ndarray, bool, dict, np.ndarray]]:
    """Linkability of independent coupled (sub-)blocks ``[(block, cand), ...]`` by their LP relaxation and CP-SAT.

    The parts are packed into *batches* (:func:`_batches`: a large part alone, small ones together up to
    :data:`BATCH_TYPES` types), one CP-SAT model per batch, built once: the type-world models of its parts
    share no variable.  A part alone in its batch goes through its LP relaxation first (:func:`_relaxed`,
    :mod:`solver.worlds.relaxation`): a first world from a simplex vertex when it is integral, the pairs no
    fractional world realizes refuted by checked certificates, then vertices that realize open pairs, each
    checked a world (a fractional one completed by CP-SAT around its fractional types); the CP-SAT model is
    built only for the pairs this leaves open.  Otherwise a first CP-SAT solve finds a world of every part
    (none: :class:`InputError`, naming the part).  A large part (:data:`LOCAL_MIN_TYPES` types or more) then
    looks for worlds *near* that one
    (:func:`_local_worlds`: the types around one undecided type are freed, every other type keeps its values,
    and a small model of the freed types alone is solved): each one found is a world of the whole part, so its
    pairs are settled; nothing is refuted this way.  Then, in rounds, each part with open candidate pairs gets
    a literal ``hit`` meaning "at least one of my open pairs is realized" (``y[t, v] => m[t, v] >= 1``,
    ``hit => sum of the open y >= 1``), and the round maximizes ``(pairs + 1) * sum(hit) + sum(open y)`` from
    the last world found:

    * every pair of every world CP-SAT finds during the round is settled linkable (each improving solution is
      a world; the second term makes a round realize as many open pairs as it finds, not one);
    * at a proven optimum, a part whose ``hit`` is false has no world realizing any of its open pairs (the
      parts are independent): they are all refuted at once.

    A round stops at :data:`ROUND_DETERMINISTIC` (plus :data:`ROUND_DETERMINISTIC_PER_TYPE` per type of the
    batch) units of CP-SAT's deterministic time (the same bound on every machine, so the same worlds and
    witnesses): a world that realizes a new pair is enough to go on;
    a round that found none is solved again for ``sum(hit)`` alone until proven or out of time.  Every round
    settles or refutes at least one pair per open part.

    ``scope="full"`` decides every candidate pair.  ``scope="min"`` decides what ``min_linkability`` and
    ``disclosed`` read (004, Definition 3.3), with one *level* ``e`` for the whole call, from 2: a type whose
    proven values reach ``e`` needs no more, the others are decided completely.  When no type of any part is
    decided with fewer than ``e`` values, ``e`` grows by one and the parts go again from what they proved;
    the call stops at the first level where one is (its count is the least linkability of all the parts:
    every other type has at least ``e`` values or is decided), or at ``ceiling`` (the least linkability is
    known to be at most ``ceiling`` elsewhere - individuals whose values flows decided - so nothing above it
    is needed).  Level 2 is always decided: a type has one value iff it is decided with one (``disclosed``).

    Returns, per part, ``(linkable, exact, witnesses, proven)``: ``exact`` is true when the part was decided
    within its scope (false: the time limit stopped it); ``linkable`` holds the proven pairs and every pair not
    refuted (an upper set: with ``scope="min"`` a type decided only up to its level may take more values than
    proven); ``proven`` holds the pairs a world realizes."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}")
    deadline = time.perf_counter() + time_limit
    states = [_PartState(cand) for _, cand in parts]
    batches = _batches(parts)
    level = problem.n_values + 1 if scope == "full" else 2
    top = problem.n_values + 1 if scope == "full" or ceiling is None \
        else max(2, min(int(ceiling), problem.n_values + 1))
    while True:
        for batch in batches:
            _decide_batch(problem, [parts[i] for i in batch], [states[i] for i in batch], deadline, level)
        if scope == "full" or level >= top or any(s.below(level) for s in states) \
                or not all(s.done for s in states):
            break
        level += 1
    out = []
    for (_, cand), s in zip(parts, states):
        lk = s.linkable | (cand & ~s.refuted)  # undecided: reported linkable (safe side)
        out.append((lk, s.done, s.witnesses, s.linkable.copy()))
    return out


class _PartState:
    """What is known of one part's pairs: proven (a world realizes them), refuted, and the witnesses."""

    def __init__(self, cand: np.ndarray):
        self.cand = cand
        self.linkable = np.zeros_like(cand)
        self.refuted = np.zeros_like(cand)
        self.witnesses: dict = {}
        self.done = False  # decided to the last level asked
        self.relaxed = False  # the LP relaxation's refutations were tried (:func:`_relaxed`)

    def settle(self, sol: dict) -> int:
        new = 0
        for (t, v), c in sol.items():
            if c > 0 and not self.linkable[t, v]:
                self.linkable[t, v] = True
                self.witnesses[t, v] = sol
                new += 1
        return new

    def undecided(self) -> np.ndarray:
        return self.cand & ~self.linkable & ~self.refuted

    def need(self, level: int) -> np.ndarray:
        """``(T, V)``: the pairs still to decide at ``level``, every undecided pair of a type with fewer proven
        values."""
        return self.undecided() & (self.linkable.sum(axis=1) < level)[:, None]

    def open_pairs(self, level: int) -> list[tuple[int, int]]:
        """:meth:`need` as a list of pairs."""
        return [(int(t), int(v)) for t, v in zip(*np.nonzero(self.need(level)))]

    def below(self, level: int) -> bool:
        """A type is decided (no undecided pair) with fewer than ``level`` values."""
        decided = ~self.undecided().any(axis=1)
        return bool((decided & (self.linkable.sum(axis=1) < level)).any())


#: a part with at least this many types is alone in its batch, and goes through its LP relaxation first
#: (:func:`_relaxed`); smaller ones share a CP-SAT model up to this many types (one model of every part stalled
#: at 30,000 rows and three releases: issue 24).  Month 7's 405 parts of fewer than 30 types at 30,000 rows: 21 s
#: of one core with 30, 13 s with 10 (the parts of 10-29 types through the relaxation), 27 s with 60
BATCH_TYPES = 10
#: deterministic-time units of CP-SAT per round of :func:`decide_coupled_all` before it takes the best world found
#: (0.1 left the 937-type part of the custodian's month 3 at 30,000 rows finding nothing new in every round,
#: then proving each round without a bound: 56 s; 0.5: 12 s, the same figures; 0.5 for every batch slowed the
#: small ones: month 2, 18 s instead of 13 s)
ROUND_DETERMINISTIC = 0.1
#: ... and per type of the batch beyond that (a larger part needs longer to find a better world than the last)
ROUND_DETERMINISTIC_PER_TYPE = 1 / 2000
#: simplex vertices tried per part alone in its batch and level (:func:`_relaxed`): the custodian's month 7 at
#: 30,000 rows realized 830 of the 2,081-type part's open pairs in 3 vertices, the fourth was fractional
VERTEX_ROUNDS = 12
#: fractional vertices in a row that no neighbourhood completes before :func:`_relaxed` gives up; after each, the
#: next vertex aims at a random half of the open pairs, then a quarter, an eighth (the custodian's month 12 at
#: 30,000 rows: the part of 4,872 types stopped at its second vertex, fractional on 760 types, and the CP-SAT
#: rounds took 40 s where twelve vertices had left them 9 s).  The vertices go on to the last open pairs:
#: giving the last three pairs of a part of 3,251 types to the CP-SAT rounds at the first failure took 99 s (a
#: round found nothing within its bound, the unbounded one took 76 s to realize one pair) where vertices decided
#: them in 6 s
VERTEX_FAILURES = 3
#: parts of at least this many types look for worlds near their first one before the rounds (:func:`_local_worlds`)
LOCAL_MIN_TYPES = 60
#: types freed around one undecided type, and the deterministic time of each of those small solves (the
#: custodian's month 7 at 30,000 rows, a part of 2,081 types over 7 releases: 394 solves of 30 types, 8.4 s,
#: proved a second value for 1,396 of its 1,527 types that have one; the rounds alone took 37 s for all of
#: it, 25 s after 30-type neighbourhoods, 22 s after 60-type ones, 25 s after 100-type ones)
LOCAL_TYPES = 60
LOCAL_DETERMINISTIC = 0.1
#: an optimisation over more CP-SAT variables than this runs without presolve probing: on the custodian's month 12
#: at 30,000 rows, a round over the part of 4,872 types (12,400 variables) spent 1.4 of its 2 s in presolve, and
#: the ten parts of 1,000 types or more took 68-71 s instead of 81 s in one process (two runs each), the same figures
NO_PROBING_VARIABLES = 3000


def _batches(parts: Sequence) -> list[list[int]]:
    """Indices of ``parts`` in batches of at most :data:`BATCH_TYPES` types (a larger part alone), in order."""
    out: list[list[int]] = []
    size = BATCH_TYPES
    for i, (block, _) in enumerate(parts):
        n = block.n_types
        if not out or size + n > BATCH_TYPES:
            out.append([])
            size = 0
        out[-1].append(i)
        size += n
    return out


def _decide_batch(problem: WorldsProblem, parts: Sequence, states: list[_PartState], deadline: float,
                  level: int) -> None:
    """:func:`decide_coupled_all` of the parts of one batch at ``level``, in one model, until ``deadline``
    (``states`` are updated: what an earlier level proved or refuted is kept).  A part alone in its batch goes
    through its LP relaxation first (:func:`_relaxed`); the CP-SAT model is built only for what that leaves."""
    if all(not s.open_pairs(level) for s in states):
        for s in states:
            s.done = True
        return
    from .relaxation import Relaxation

    worlds: list = [None] * len(parts)  # the last world of each part, {(t, v): members}
    flows: list = [None] * len(parts)  # ... and its transport per release (one value per edge)
    relax = Relaxation(parts[0][0], parts[0][1] & ~states[0].refuted) \
        if len(parts) == 1 and parts[0][0].n_types >= BATCH_TYPES else None
    x = None
    if relax is not None:
        point = relax.vertex(np.ones(relax.n_pairs))
        x = None if point is None else relax.integral(point)
        if x is None and point is not None:
            x = _complete(relax, states[0], point, _Neighbours(relax.block), level)
    def build() -> tuple[cp_model.CpModel, list[_TypeWorldModel]]:
        """One CP-SAT model of the batch's parts on their pairs not refuted."""
        model = cp_model.CpModel()
        return model, [_TypeWorldModel(block, cand & ~s.refuted, model) for (block, cand), s in zip(parts, states)]

    model, models = None, None
    if x is None:
        model, models = build()
        status, _, solver = _solve(model, deadline - time.perf_counter(), [])
        if status == "infeasible":
            for (block, cand), tw in zip(parts, models):  # name the part without a world
                if decide_status(tw.block, cand, deadline) == "infeasible":
                    raise InputError(no_world_message(problem, block))
            raise InputError(no_world_message(problem, parts[0][0]))
        if status == "unknown":
            for s in states:
                s.done = False
            return
        values = solver.response_proto.solution
        worlds = [tw.values_of(values) for tw in models]
        flows = [_edge_flows(tw, values) for tw in models]
        if relax is not None:
            x = relax.point(worlds[0], flows[0])
    for s, w in zip(states, worlds):
        if w is not None:
            s.settle(w)
    if relax is not None:
        worlds[0], flows[0] = _relaxed(relax, states[0], x, level, deadline)
        if not states[0].open_pairs(level):
            states[0].done = True
            return
    if models is None:
        model, models = build()
    if len(parts) == 1 and parts[0][0].n_types >= LOCAL_MIN_TYPES:
        _local_worlds(parts[0][0], states[0], worlds[0], flows[0], level, deadline)
    y: list[dict] = [{} for _ in parts]  # y[i][t, v] => m[t, v] >= 1, made once per pair
    round_bound = ROUND_DETERMINISTIC + ROUND_DETERMINISTIC_PER_TYPE * sum(block.n_types for block, _ in parts)
    done = [False] * len(parts)
    while True:
        open_ = {}
        for i, s in enumerate(states):
            pairs = s.open_pairs(level)
            if pairs:
                open_[i] = pairs
            else:
                done[i] = True
        if not open_ or deadline - time.perf_counter() <= 0:
            break
        hit = {}
        terms = []
        for i, pairs in open_.items():
            for p in pairs:  # a pair with one candidate value is settled by the first world: never open
                if p not in y[i]:
                    y[i][p] = model.new_bool_var(f"y_{i}_{p[0]}_{p[1]}")
                    model.add(models[i].m[p] >= 1).only_enforce_if(y[i][p])
            lit = model.new_bool_var(f"hit_{i}")
            model.add(sum(y[i][p] for p in pairs) >= 1).only_enforce_if(lit)
            hit[i] = lit
            terms += [y[i][p] for p in pairs]
        weight = len(terms) + 1
        model.maximize(weight * sum(hit.values()) + sum(terms))
        model.clear_hints()  # start from the last world: every round has a solution
        for tw, w in zip(models, worlds):
            tw.add_hints(w)
        seen = _Worlds()
        status, _, solver = _solve(model, deadline - time.perf_counter(), [], optimize=True,
                                   deterministic=round_bound, callback=seen)
        # every improving world of the round is a world: its pairs are settled (the last one is the solver's)
        new = sum(states[i].settle(models[i].values_of(w)) for w in seen.worlds for i in open_)
        if status in ("feasible", "unknown") and new == 0:  # nothing new within the round's bound: prove or find
            model.maximize(sum(hit.values()))
            seen = _Worlds()
            status, _, solver = _solve(model, deadline - time.perf_counter(), [], optimize=True, callback=seen)
            new = sum(states[i].settle(models[i].values_of(w)) for w in seen.worlds for i in open_)
        if status == "unknown" or (status == "feasible" and new == 0):
            break
        if status in ("feasible", "optimal"):
            worlds = [tw._values(solver) for tw in models]
        if status == "infeasible":  # cannot be: every part has a world
            raise SolverError("CP-SAT: a world of every part was found, then lost")
        if status == "optimal":
            # parts are independent: at the optimum, a part left out has no world realizing any of its
            # open pairs, which are proven not linkable
            for i, lit in hit.items():
                if not solver.boolean_value(lit):
                    for t, v in open_[i]:
                        states[i].refuted[t, v] = True
        for lit in hit.values():  # this round's literals are free from now on
            model.add(lit == 0)
    for s, d in zip(states, done):
        s.done = d


def _relaxed(relax, state: _PartState, x: np.ndarray, level: int, deadline: float) -> tuple[dict, list]:
    """What the LP relaxation of a part alone in its batch decides (:mod:`solver.worlds.relaxation`), from its
    world ``x``: the undecided pairs no point of the relaxation realizes are refuted, each by a checked
    certificate (once per part: a refutation holds at every level); then simplex vertices maximizing the
    part's open pairs at ``level`` (weighted by the inverse of their type's size, perturbed by a fixed-seed
    draw so that ties break the same way on every run), each one checked to be a world, while they realize
    new pairs (at most :data:`VERTEX_ROUNDS`), over the pairs not refuted.  A fractional vertex that no
    neighbourhood completes is followed by one aiming at a random half of the open pairs (then a quarter, an
    eighth: :data:`VERTEX_FAILURES` in a row end the phase).  Returns the last world and its transport per
    release."""
    from .relaxation import Relaxation

    state.settle(relax.world_of(x))
    if not state.relaxed:
        state.relaxed = True
        refuted = relax.refute(x)
        if refuted.any():  # a smaller LP for the vertices: the refuted pairs' columns and their edges go
            state.refuted |= refuted
            world, transport = relax.world_of(x), relax.flows(x)
            relax = Relaxation(relax.block, relax.cand & ~state.refuted)
            x = relax.point(world, transport)
    rng = np.random.default_rng(0)
    first, second = relax.pairs[:, 0], relax.pairs[:, 1]
    near = None
    failed = 0  # vertices in a row that no neighbourhood completed
    for _ in range(VERTEX_ROUNDS):
        open_ = state.need(level)[first, second]
        if not open_.any() or deadline - time.perf_counter() <= 0:
            break
        if failed:  # aim at fewer pairs: a vertex realizing fewer is less fractional
            aim = open_ & (rng.random(relax.n_pairs) < 0.5 ** failed)
            open_ = aim if aim.any() else open_
        point = relax.vertex(open_ * (1 + rng.random(relax.n_pairs)) / relax.block.type_count[first])
        if point is None:
            break
        y = relax.integral(point)
        if y is not None:
            x = y
            if not state.settle(relax.world_of(x)):
                break
            continue
        near = near or _Neighbours(relax.block)
        y = _complete(relax, state, point, near, level)
        if y is None:
            failed += 1
            if failed > VERTEX_FAILURES:
                break
            continue
        failed = 0
        x = y
    return relax.world_of(x), relax.flows(x)


def _complete(relax, state: _PartState, point: np.ndarray, near: _Neighbours, level: int) -> np.ndarray | None:
    """A world from a fractional vertex of a part's relaxation: the types with an integral value and transport
    keep them, the others and their nearest neighbours (twice as many, then eight times, at least
    :data:`LOCAL_TYPES`) are completed by CP-SAT (:func:`_solve_near`, within :data:`LOCAL_DETERMINISTIC`:
    month 7's parts at 30,000 rows took 24 s with 0.1, 28 s with 0.25 and 34 s with 0.5, the same figures).
    The world is checked (:meth:`~solver.worlds.relaxation.Relaxation.is_world`) and its pairs settled;
    ``None`` when no neighbourhood completes it."""
    frac = relax.fractional_types(point)
    whole = np.round(point).astype(np.int64)
    for size in (max(LOCAL_TYPES, 2 * len(frac)), max(4 * LOCAL_TYPES, 8 * len(frac))):
        _, world, transport = _solve_near(relax.block, state, near.around(frac, size), relax.flows(whole),
                                          relax.world_of(whole), level, LOCAL_DETERMINISTIC, complete=True)
        if world is not None:
            x = relax.point(world, transport)
            return x if relax.is_world(x) else None
    return None


def _edge_flows(tw: _TypeWorldModel, values) -> list[np.ndarray]:
    """Per release of the block, the transport of a solution on every edge (0 on an edge of no candidate)."""
    out = []
    for k, f in enumerate(tw.flows):
        x = np.zeros(len(tw.block.edges[k]), dtype=np.int64)
        for e, expr in f.items():
            x[e] = expr if isinstance(expr, int) else int(values[expr.index])
        out.append(x)
    return out


def _local_worlds(block: Block, state: _PartState, base: dict, flows: list, level: int, deadline: float) -> None:
    """Worlds of a large part near the world ``base`` (``{(t, v): members}``, its transport ``flows`` per
    release): for each type still short of ``level`` proven values,
    the :data:`LOCAL_TYPES` types nearest to it (breadth first over shared groups) are freed, every other type
    keeps its values and its transport, and the freed types' type-world model - each group's count
    less what the kept types send it - is solved for as many of their open pairs as it realizes within
    :data:`LOCAL_DETERMINISTIC`.  A solution together with the kept types is a world of the part (every group
    receives its count, every type its members), so its pairs are settled, its witness that whole world.  An
    infeasible or empty neighbourhood proves nothing: the rounds that follow decide what is left.  A short type
    that a neighbourhood solved to its optimum (or proven infeasible) left short is not a seed again: most of
    them are disclosed, and a neighbourhood of their own would fail too (month 7: 23 s to 17 s for 2,081 types)."""
    near = _Neighbours(block)
    settled = np.zeros(block.n_types, dtype=bool)  # short types an optimal neighbourhood left short: not seeds
    for seed in range(block.n_types):
        if deadline - time.perf_counter() <= 0:
            return
        short = state.linkable[seed].sum() < level
        if not short or settled[seed] or not (state.cand[seed] & ~state.linkable[seed] & ~state.refuted[seed]).any():
            continue
        free = near.around([seed], LOCAL_TYPES)
        if _solve_near(block, state, free, flows, base, level)[0]:  # proven: nothing more near them
            settled[free] |= state.linkable[free].sum(axis=1) < level


class _Neighbours:
    """The types of a block nearest to some types, breadth first over the groups they share in any release."""

    def __init__(self, block: Block):
        self.block = block
        R = len(block.releases)
        # every type's neighbours in order (``near[cut[t]:cut[t + 1]]``, repeats kept): release by release, the
        # type's edges in order, each edge's group's types in order
        owner, near = [], []
        for k in range(R):
            e = block.edges[k]
            go = np.argsort(e[:, 1], kind="stable")
            gc = np.searchsorted(e[go, 1], np.arange(len(block.group_count[k]) + 1))
            mine = np.argsort(e[:, 0], kind="stable")  # the edges by type, in order
            g = e[mine, 1]
            length = gc[g + 1] - gc[g]
            ends = np.cumsum(length)
            at = np.repeat(gc[g] - ends + length, length) + np.arange(ends[-1] if len(ends) else 0)
            near.append(e[go[at], 0])
            owner.append(np.repeat(e[mine, 0], length))
        owner = np.concatenate(owner) if owner else np.zeros(0, dtype=np.int64)
        order = np.argsort(owner, kind="stable")
        self.near = np.concatenate(near)[order] if near else np.zeros(0, dtype=np.int64)
        self.cut = np.searchsorted(owner[order], np.arange(block.n_types + 1))

    def around(self, seeds: Sequence[int], size: int) -> list[int]:
        """``seeds`` and the types nearest to them, at most ``size`` in all (every seed kept), sorted.  Breadth
        first: a type's neighbours are taken in the order of :attr:`near`, the first ``size`` not taken before."""
        free = [int(t) for t in seeds]
        seen = np.zeros(self.block.n_types, dtype=bool)
        seen[free] = True
        head = 0
        while head < len(free) and len(free) < size:
            t = free[head]
            head += 1
            found = self.near[self.cut[t]:self.cut[t + 1]]
            found = found[~seen[found]]
            if not len(found):
                continue
            _, first = np.unique(found, return_index=True)
            found = found[np.sort(first)][:size - len(free)]
            seen[found] = True
            free += found.tolist()
        return sorted(free)


def _solve_near(block: Block, state: _PartState, free: list, flows: list, base: dict, level: int,
                effort: float = LOCAL_DETERMINISTIC, complete: bool = False
                ) -> tuple[bool, dict | None, list | None]:
    """One neighbourhood of :func:`_local_worlds`: ``(proven, world, transport)``, ``proven`` when its small
    model was solved to the end (optimal, or infeasible), ``world`` the whole part's world it found and
    ``transport`` its transport per release (``None``: none found, or one realizing no new pair).
    ``complete``: keep a world even when it realizes no new pair (the kept types' values are the point to
    complete: :func:`_relaxed`)."""
    R = len(block.releases)
    pos = np.full(block.n_types, -1, dtype=np.int64)
    pos[free] = np.arange(len(free))
    groups, edges, gcount, gvalue = [], [], [], []
    for k in range(R):
        e = block.edges[k]
        inside = pos[e[:, 0]] >= 0
        gs = np.unique(e[inside, 1])
        # what the kept types send each of these groups stays; the freed types share the rest
        kept = np.bincount(e[~inside, 1], weights=flows[k][~inside], minlength=len(block.group_count[k]))
        gpos = np.full(len(block.group_count[k]), -1, dtype=np.int64)
        gpos[gs] = np.arange(len(gs))
        groups.append(block.groups[k][gs])
        gcount.append((block.group_count[k][gs] - kept[gs].astype(np.int64)))
        gvalue.append(block.group_value[k][gs])
        ei = e[inside]
        edges.append(np.column_stack([pos[ei[:, 0]], gpos[ei[:, 1]]]).astype(np.int64).reshape(-1, 2))
    sub = Block(releases=block.releases, members=tuple(block.members[t] for t in free), groups=tuple(groups),
                edges=tuple(edges), present=block.present[free], group_count=tuple(gcount), group_value=tuple(gvalue))
    cand = (state.cand & ~state.refuted)[free]
    near = _TypeWorldModel(sub, cand)
    model = near.model
    terms = []
    for j, t in enumerate(free):
        if state.linkable[t].sum() >= level:
            continue
        for v in np.flatnonzero(cand[j] & ~state.linkable[t]):
            var = near.m.get((j, int(v)))
            if var is not None:
                y = model.new_bool_var(f"y_{j}_{v}")
                model.add(var >= 1).only_enforce_if(y)
                terms.append(y)
    if not terms and not complete:
        return False, None, None
    model.maximize(sum(terms))
    near.add_hints({(j, v): base.get((free[j], v), 0) for j, v in near.keys})
    status, _, solver = _solve(model, 1e9, [], optimize=True, deterministic=effort)
    if status not in ("feasible", "optimal"):
        return status == "infeasible", None, None
    world = {key: c for key, c in base.items() if pos[key[0]] < 0}
    world.update({(free[j], v): c for (j, v), c in near._values(solver).items()})
    if not state.settle(world) and not complete:
        return status == "optimal", None, None
    transport = []
    for k, f in enumerate(_edge_flows(near, solver.response_proto.solution)):
        whole = flows[k].copy()
        whole[pos[block.edges[k][:, 0]] >= 0] = f  # the freed types' edges, in the order the small block has them
        transport.append(whole)
    return status == "optimal", world, transport


def decide_status(block: Block, cand: np.ndarray, deadline: float) -> str:
    """``feasible`` / ``infeasible`` / ``unknown``: does the block have a world on these candidates?"""
    return _TypeWorldModel(block, cand).solve(max(deadline - time.perf_counter(), 0.01))[0]


class _Worlds(cp_model.CpSolverSolutionCallback):
    """The solution vectors CP-SAT finds during one solve (each one a world)."""

    def __init__(self):
        super().__init__()
        self.worlds: list = []

    def on_solution_callback(self) -> None:
        self.worlds.append(np.array(self.response_proto.solution, dtype=np.int64))


def _solve(model: cp_model.CpModel, time_limit: float, assumptions: list, optimize: bool = False,
           deterministic: float | None = None, callback=None, linearization: int | None = None
           ) -> tuple[str, list, cp_model.CpSolver]:
    """One CP-SAT solve (one worker) under assumptions: ``(status, core, solver)``, status ``feasible``
    (``optimal`` when ``optimize`` and proven), ``infeasible`` or ``unknown``; ``core`` (variable indices of
    the assumptions sufficient for infeasibility) only when infeasible."""
    model.clear_assumptions()
    if assumptions:
        model.add_assumptions(assumptions)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(time_limit, 0.01)
    if deterministic is not None:
        solver.parameters.max_deterministic_time = deterministic
    solver.parameters.random_seed = 0
    # the rounds' optimisations without LP relaxation: the custodian's parts (issue 24, months 4 and 7 at 30,000
    # rows) were decided in half the time (11 s instead of 23 s for a part of 1,314 types over 4 releases), the
    # same figures; a first world with it (a part of 1,729 types over 7 releases: 4 s, against 195 s without)
    solver.parameters.linearization_level = linearization if linearization is not None else 0 if optimize else 1
    if optimize and len(model.proto.variables) > NO_PROBING_VARIABLES:
        solver.parameters.cp_model_probing_level = 0
    status = solver.solve(model, callback)
    core = []
    if status == cp_model.INFEASIBLE and assumptions:
        core = list(solver.sufficient_assumptions_for_infeasibility())
    model.clear_assumptions()
    if status == cp_model.OPTIMAL and optimize:
        return "optimal", core, solver
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "feasible", core, solver
    if status == cp_model.INFEASIBLE:
        return "infeasible", core, solver
    if status == cp_model.MODEL_INVALID:
        raise SolverError("CP-SAT: invalid type-world model")
    return "unknown", core, solver
