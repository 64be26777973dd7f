"""Global guarantee: serial releases whose breach probability never exceeds ``1/l`` (Wong et al., 001).

Problem 1 of 001: given ``l``, the published tables ``T_1*, ..., T_{k-1}*`` and the raw table ``T_k``,
publish ``T_k*`` maximizing utility such that ``p(o, s, k) <= 1/l`` for every individual ``o`` and every
protected value ``s``, where ``p`` is the breach probability of Definition 2 (sensitive values transient:
"the assignment in one data release is independent of the assignment in another release", section I).
The paper's own algorithm (its ref. [9], the full version) is not available; this module implements the
following one.

**Survival.**  The worlds of a series of tables are the product of the worlds of each table (Definition 1
constrains each table alone; values are free), so with ``q(o, s, j)`` the fraction of release ``j``'s
worlds giving ``o`` the value ``s`` (section III.A; Lemma 2 is its homogeneous-class case)::

    1 - p(o, s, k) = prod_j (1 - q(o, s, j)) =: S_k(o, s)

and the guarantee is ``S_k(o, s) >= 1 - 1/l``.  The state keeps ``S_{k-1}`` (exact fractions, only entries
below 1); release ``k`` keeps the guarantee iff ``q(o, s, k) <= 1 - (1 - 1/l) / S_{k-1}(o, s)`` (the *whole*
remaining budget) for every individual it publishes.

**Horizon.**  ``horizon = K`` keeps budget for the releases ``k+1..K``: release ``k`` may spend only its share,
the geometric split of what is left over the ``r = max(K - k + 1, 1)`` remaining releases::

    q(o, s, k) <= 1 - ((1 - 1/l) / S_{k-1}(o, s)) ** (1 / r)

(for ``K = 2`` this is the even split ``(1 - 1/l) ** (k / K)`` of the survival; the last release of the
horizon, and every later one, may spend everything).  The publisher tries ``r``, then ``r - 1``, ... ``1``:
a release found only at ``r' < r`` keeps the guarantee now but spends budget the horizon kept for later, and
is published only with ``shrink: true`` (the state's horizon then becomes ``k + r' - 1``); otherwise the
refusal says how much it would spend.

**Partitioning.**  Mondrian (LeFevre et al.) with an acceptance test (:func:`publishers.mondrian.
mondrian_partition`, ``accept``): a split is taken only when, in every part, each protected value's frequency
``c_s / n`` is within the cap of every member.  Mondrian's regions are disjoint, so every class is one
homogeneous block and ``q(o, s, k) = c_s / n`` of ``o``'s class.  When the table as one class fails (some
member's cap is below the value's frequency in the whole table), *merging* tries the other way round: down
Mondrian's splits (any quasi-identifier, ``k`` only) to the finest classes, whose siblings are merged back
into their parent, bottom up, wherever a class breaks a member's cap - a finer class can put a member with
little budget left away from a value (memoized on row sets; it gives up after ``MERGE_BUDGET`` rows
visited).  The paper available here defers its algorithm, merging and suppression included, to the full
version [9]; this is our own.  Suppressing a record (dropping it) is not a candidate: the adversary knows
who is in each snapshot (the attack's population is the snapshot), and fully generalizing a record is what
merging does.

**Refusals** (:class:`Refusal`, an :class:`InputError`, one line, ``kind``):

* ``impossible`` - proven for *every* release of the snapshot: in every world of a release publishing the
  ``n`` records with their values, exactly ``c_s`` individuals hold ``s``, so ``sum_o q(o, s, k) = c_s``;
  when the whole budgets left sum to less than ``c_s`` (or a member holds ``s`` with no budget left for it)
  no release can keep the guarantee;
* ``most_general`` - the most general release (the snapshot as one class) breaks the guarantee by the exact
  count, and merging found no release either (a finer release that merging does not reach may exist: this
  is not a proof);
* ``budget`` - a release keeps the guarantee now but spends more than the horizon's share (how much: the
  worst pair's ``q`` against its share, and the horizon the release fits);
* ``check`` / ``unknown`` - the release failed its own check (below), or the check could not decide.

**Own check.**  Every release is checked before it is returned: by the possible-worlds attack
(``ATTACKS["possible_worlds"]``, :meth:`~attacks.base.AttackResult.interval`) on the release as published,
``max_breach <= 1/l`` (001, Lemma 1: ``q <= p``) and ``min_linkability >= l`` over its whole proven
interval; and by the exact engine (:func:`solver.worlds.analysis.analyze`, free mode, exact fractions) for the new
survivals ``S_k(o, s) >= 1 - 1/l`` of every individual and protected value - the global guarantee over the
whole sequence for the transient-value adversary the paper assumes (``sensitive: free``).  An adversary who
takes values as *persistent* (the default adversary) intersects the releases: a class of release 2 whose
older members cannot hold ``s`` (release 1) forces ``s`` on its new member, although every release alone
and the survival product pass (tests/publishers/test_guarantee_holes.py keeps such a case: ``min_linkability = 1``).
So the possible-worlds attack also runs, persistent values, on the *whole sequence* - the earlier releases
and snapshots are kept in the private state (``history``) while the sequence has at most
:data:`SEQUENCE_ROWS` rows; above it that check is not made (the publisher cannot see the spec's adversary,
and the exact engine does not finish at Adult's size), and only with ``sensitive: persistent`` (the default,
the contract's default adversary; ``sensitive: free`` keeps the paper's transient adversary alone).  A release
failing it is repaired once, as the snapshot in one class when that keeps the budget, else refused (``check``).
When values did change, the releases may refute persistent values (no possible world at all: the attack says so, and
so would the pipeline's); that adversary then learns nothing and the check is skipped.  Optimality: Mondrian is a
greedy heuristic (no optimum is claimed).

State (JSON): ``{"releases": k, "horizon": K, "l": l, "values": [...], "survival": {id: {value: "a/b"}},
"history": [{"release": columns, "ids": [...], "columns": snapshot columns}, ...] or null}``.
Releases of *other* publishers in the same sequence are not in this state (a publisher sees its own state).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError, SolverError
from multirelease.params import Boolean, Interval, ListOf, Options, Text
from multirelease.model.principles import Principle
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.table import Table
from solver.worlds.analysis import analyze
from solver.worlds.problem import problem_from_arrays

from .base import PublisherBase, PublishResult
from .mondrian import _factorize, mondrian_partition, release_from_partition

__all__ = ["GlobalGuarantee", "Refusal", "remaining_caps"]

#: safety margin of the floating-point caps (the exact check follows)
_EPS = 1e-9

#: largest sequence (rows summed over its releases) checked by the persistent-value adversary; the history of
#: a larger sequence is not kept (module docstring, "Own check")
SEQUENCE_ROWS = 5_000


def _extend_history(history, release, snapshot: Table):
    """The private history of the sequence (releases in the CSV layout, snapshots' published columns), or
    ``None`` once it exceeds :data:`SEQUENCE_ROWS`."""
    if history is None or len(release) + sum(len(h["ids"]) for h in history) > SEQUENCE_ROWS:
        return None
    frame = release.to_frame()
    return [*history, {"release": {c: [str(v) for v in frame[c]] for c in frame.columns},
                       "ids": [str(x) for x in snapshot.ids],
                       "columns": {c: [str(v) for v in snapshot.frame[c]] for c in snapshot.frame.columns}}]


class Refusal(InputError):
    """A release the publisher does not write: ``kind`` is ``impossible``, ``most_general``, ``budget``,
    ``check`` or ``unknown`` (module docstring); ``witness`` holds the individual, value and figures."""

    def __init__(self, problem: str, kind: str, **witness):
        super().__init__(problem)
        self.kind = kind
        self.witness = witness


def _fraction(x: float) -> Fraction:
    return Fraction(x).limit_denominator(10**6)


def remaining_caps(survival: Mapping[str, Mapping[str, str]], ids: Sequence[str], values: Sequence[str], l: float,
                   remaining: int) -> np.ndarray:
    """``(n, V)`` float caps on ``q(o, s, k)``: the share ``1 - ((1 - 1/l) / S(o, s)) ** (1 / remaining)`` of
    the budget each pair has left (``remaining = 1``: all of it)."""
    floor = 1 - 1 / l
    surv = np.ones((len(ids), len(values)), dtype=np.float64)
    col = {v: j for j, v in enumerate(values)}
    for i, o in enumerate(ids):
        for s, text in (survival.get(str(o)) or {}).items():
            if s in col:
                surv[i, col[s]] = float(Fraction(text))
    return 1 - np.minimum(floor / surv, 1.0) ** (1 / remaining) - _EPS


#: rows (summed over the row sets it splits) the merging search may visit before it gives up; it runs only
#: where Mondrian fails at the root, and each visit costs one Mondrian split per quasi-identifier
MERGE_BUDGET = 1_000_000


class _Splits:
    """The Mondrian splits of a row set, one per quasi-identifier: :func:`mondrian_partition` on that
    attribute alone, stopped after its first split (``accept`` says yes to the root and to the parts of the
    first split it takes, no to anything after), so the split rules stay Mondrian's own."""

    def __init__(self, codes: np.ndarray, sens: np.ndarray, attributes, k: int):
        self.codes, self.sens, self.attributes, self.k = codes, sens, list(attributes), k

    def __call__(self, rows: np.ndarray) -> list[list[np.ndarray]]:
        out = []
        for j, a in enumerate(self.attributes):
            parts: list[np.ndarray] = []
            seen = [0]

            def first_split(sub: np.ndarray) -> bool:
                if seen[0] == 0:  # the root
                    seen[0] = -1
                    return True
                if sum(len(p) for p in parts) >= len(rows):
                    return False  # a deeper split: stop
                parts.append(rows[sub])
                return True

            mondrian_partition(self.codes[rows][:, [j]], self.sens[rows], [a], Principle(k=self.k),
                               accept=first_split)
            if len(parts) > 1 and sum(len(p) for p in parts) == len(rows):
                out.append(parts)
        return out


def _merge(n: int, splits: _Splits, accept, budget: int = MERGE_BUDGET) -> list[np.ndarray] | None:
    """Merging over Mondrian's split trees: a row set keeps the classes of the first split (any attribute)
    whose every part has a solution, else it is one class if ``accept`` holds - siblings merged back into
    their parent wherever a finer class breaks a member's cap.  Memoized on row sets; ``None`` when the
    table has no solution or the search visits ``budget`` rows."""
    memo: dict[bytes, list[np.ndarray] | None] = {}
    visited = [0]

    def solve(rows: np.ndarray) -> list[np.ndarray] | None:
        key = np.sort(rows).tobytes()
        if key in memo:
            return memo[key]
        visited[0] += len(rows)
        if visited[0] > budget:
            raise _Exhausted
        memo[key] = None
        for parts in splits(rows):
            sols = []
            for p in parts:
                sol = solve(p)
                if sol is None:
                    break
                sols.extend(sol)
            else:
                memo[key] = sols
                return sols
        if accept(rows):
            memo[key] = [rows]
        return memo[key]

    try:
        return solve(np.arange(n))
    except _Exhausted:
        return None


class _Exhausted(Exception):
    """The merging search reached its budget."""


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
    shrink : bool, default false
        Publish a release that spends more than the horizon's share (the horizon shrinks) instead of refusing.
    k : int >= 1, default 1
        Optional k-anonymity of every class as well.
    sensitive : ``persistent`` or ``free``, optional
        The adversary the guarantee is kept against: ``free`` is the paper's transient values alone;
        ``persistent`` adds the whole-sequence check of the module docstring.  By default the scenario's
        ``adversary.sensitive`` (bound by the pipeline, :meth:`bind_adversary`: ``free`` gives ``free``, anything
        else ``persistent``), ``persistent`` when no scenario binds one; given, it overrides the scenario's.
    """

    name = "global_guarantee"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ('Wong, Fu, Liu, Wang, Xu, "Global Privacy Guarantee in Serial Data Publishing" (papers/001): Problem 1, '
             "breach probability Definition 2, global guarantee Principle 2")
    params = {"l": Interval(float, 1, None, closed="neither"), "values": ListOf(Text()),
              "horizon": Interval(int, 1, None), "shrink": Boolean(), "k": Interval(int, 1, None),
              "sensitive": Options(("persistent", "free"))}
    required = ("l",)
    defaults = {"horizon": 2, "k": 1, "shrink": False, "sensitive": "persistent"}
    #: Wong et al. 001, Principle 2 (``p(o, s, k) <= 1/l``, Definition 2) and l-linkability (Shmueli & Tassa,
    #: Definition 3.3: at least ``l`` values an individual can be linked to), by the possible-worlds attack
    guarantee = ("possible_worlds.max_breach <= 1/{l}", "possible_worlds.min_linkability >= {l}")

    def __init__(self, **params):
        super().__init__(**params)
        self.__dict__["_given"] = frozenset(k for k in params if not k.startswith("_"))

    def bind_adversary(self, adversary) -> None:
        """The scenario's adversary (:class:`multirelease.model.sequence.Adversary`, bound by the pipeline): its
        ``sensitive`` chooses the own check's adversary unless the ``sensitive`` parameter was given."""
        if "sensitive" not in self.__dict__["_given"]:
            self.config["sensitive"] = "free" if adversary.sensitive == "free" else "persistent"

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = self.published_attributes(snapshot, attributes, need_sensitive=True)
        state = dict(state or {})
        l = float(self.config["l"])
        horizon = min(int(self.config["horizon"]), int(state.get("horizon", self.config["horizon"])))
        k = int(state.get("releases", 0)) + 1
        survival = {str(o): dict(v) for o, v in (state.get("survival") or {}).items()}
        sens = np.asarray(snapshot.sensitive, dtype=object).astype(str)
        protected = self.config.get("values")
        protected = sorted(set(sens)) if protected is None else [str(v) for v in protected]
        ids = [str(x) for x in snapshot.ids]
        col = {v: j for j, v in enumerate(protected)}
        pcode = np.array([col.get(v, -1) for v in sens], dtype=np.int64)
        quasi = [n for n in attributes if schema[n].is_quasi]
        cols = [list(schema.quasi).index(n) for n in quasi]
        codes, scodes, qattrs = snapshot.qi_codes[:, cols], _factorize(snapshot.sensitive), [schema[n] for n in quasi]
        kk = int(self.config["k"])
        remaining = max(horizon - k + 1, 1)
        splits = _Splits(codes, scodes, qattrs, kk)
        parts, fits = None, remaining
        for r in range(remaining, 0, -1):
            accept = self._accept(pcode, len(protected), remaining_caps(survival, ids, protected, l, r), scodes, l)
            try:
                parts = mondrian_partition(codes, scodes, qattrs, Principle(k=kk), accept=accept)
            except InputError:
                if len(snapshot) < kk:
                    raise InputError(f"{self.name}: release {k} has {len(snapshot)} records, fewer than k = {kk}")
                parts = _merge(len(snapshot), splits, accept)
            if parts is not None:
                fits = r
                break
        if parts is None:
            self._impossible(snapshot, attributes, survival, protected, sens, ids, l, k)
            parts, fits = [np.arange(len(snapshot))], 1  # the most general release keeps it (exactly)
        if fits < remaining and not self.config["shrink"]:
            raise self._over_budget(parts, survival, ids, protected, pcode, l, k, horizon, remaining, fits)
        history = state.get("history", [] if k == 1 else None) if self.config["sensitive"] == "persistent" else None
        candidates = [parts]
        if len(parts) > 1 and accept(np.arange(len(snapshot))):
            candidates.append([np.arange(len(snapshot))])  # the repair: the snapshot as one class (section 5)
        for i, cand in enumerate(candidates):
            release, truth = release_from_partition(snapshot, attributes, cand, rng)
            try:
                self._attack_check(release, truth, snapshot, protected, l, k)
                new_survival = self._update(release, snapshot, survival, protected, l, k)
                self._sequence_check(release, snapshot, history, protected, l, k)
                break
            except Refusal:
                if i == len(candidates) - 1:
                    raise
        new_state = {"releases": k, "horizon": horizon if fits == remaining else k + fits - 1, "l": l,
                     "values": list(protected), "survival": new_survival,
                     "history": _extend_history(history, release, snapshot)}
        return PublishResult(release=release, truth=truth, state=new_state)

    # ------------------------------------------------------------------ budgets
    @staticmethod
    def _accept(pcode: np.ndarray, n_values: int, caps: np.ndarray, scodes: np.ndarray, l: float):
        """The class test: every member within its caps, and at least ``l`` distinct values (all values,
        protected or not: the own check asks for l-linkability, which the caps imply only when every value
        is protected)."""
        def accept(rows: np.ndarray) -> bool:
            if len(np.unique(scodes[rows])) < l:
                return False
            pc = pcode[rows]
            pc = pc[pc >= 0]
            if not len(pc):
                return True
            freq = np.bincount(pc, minlength=n_values) / len(rows)
            held = freq > 0  # a value the class does not hold costs nobody (even with no budget left)
            return bool((freq[None, held] <= caps[rows][:, held]).all())
        return accept

    def _over_budget(self, parts, survival, ids, protected, pcode, l, k, horizon, remaining, fits) -> Refusal:
        """The ``budget`` refusal: the pair whose ``q`` exceeds its horizon share the most."""
        share = remaining_caps(survival, ids, protected, l, remaining) + _EPS
        best = (-1.0, 0, 0, 0.0)
        for rows in parts:
            pc = pcode[rows]
            freq = np.bincount(pc[pc >= 0], minlength=len(protected)) / len(rows)
            over = freq[None, :] - share[rows]
            i, j = np.unravel_index(int(np.argmax(over)), over.shape)
            if over[i, j] > best[0]:
                best = (float(over[i, j]), int(rows[i]), int(j), float(freq[j]))
        _, i, j, q = best
        s = Fraction((survival.get(ids[i]) or {}).get(protected[j], "1"))
        p = 1 - float(s) * (1 - q)
        return Refusal(
            f"{self.name}: release {k} keeps p(o, s, k) <= 1/{l:g} only by spending more than the horizon "
            f"({horizon} releases) keeps for later: individual '{ids[i]}', value '{protected[j]}' gets "
            f"q = {q:.4g} where its share is {max(share[i, j], 0):.4g} (p reaches {p:.4g} of {1 / l:.4g}); the "
            f"release fits a horizon of {k + fits - 1}: set 'shrink: true' to publish it", "budget",
            individual=ids[i], value=protected[j], q=q, share=float(share[i, j]), fits=k + fits - 1)

    def _impossible(self, snapshot, attributes, survival, protected, sens, ids, l, k) -> None:
        """Raise the ``impossible`` or ``most_general`` refusal, or return when the most general release keeps
        the guarantee after all (the float caps are a hair tighter than the exact bound)."""
        floor = 1 - 1 / _fraction(l)
        present = set(ids)
        for s in protected:
            holders = [o for o, v in zip(ids, sens) if v == s]
            if not holders:
                continue
            cap = {o: 1 - floor / Fraction(e[s]) for o, e in survival.items() if o in present and s in e}
            total = sum(cap.values(), Fraction(0)) + (len(ids) - len(cap)) * (1 - floor)
            spent = [o for o in holders if cap.get(o, 1) == 0]
            if spent or total < len(holders):
                who = spent[0] if spent else (min(cap, key=cap.get) if cap else holders[0])
                why = (f"individual '{who}' holds '{s}' but p(o, s, {k - 1}) = 1/{l:g} already" if spent else
                       f"{len(holders)} records hold '{s}', so q(o, '{s}', {k}) sums to {len(holders)} over the "
                       f"individuals in every release, but their budgets left sum to {float(total):.4g} "
                       f"(tightest: '{who}')")
                raise Refusal(f"{self.name}: release {k}: no release of these {len(ids)} records can keep "
                              f"p(o, s, k) <= 1/{l:g}: {why}", "impossible", individual=who, value=s)
        release, _ = release_from_partition(snapshot, attributes, [np.arange(len(snapshot))], np.random.default_rng(0))
        worst = self._worst(release, snapshot, survival, protected)
        if worst is not None and worst[2] > 1 - floor:
            o, s, p = worst
            raise Refusal(f"{self.name}: release {k}: not even the most general release (the {len(ids)} records "
                          f"as one class) keeps p(o, s, k) <= 1/{l:g}: individual '{o}', value '{s}' would reach "
                          f"p = {p} (exact possible-worlds count), and merging finer classes found no release",
                          "most_general", individual=o, value=s, p=p)

    # ------------------------------------------------------------------ own check
    def _attack_check(self, release, truth, snapshot: Table, protected: list[str], l: float, k: int, *,
                      seq: ReleaseSequence | None = None, sensitive: str = "free") -> None:
        """The possible-worlds attack on the release as published (or on ``seq``, the whole sequence):
        ``max_breach <= 1/l`` (a necessary part of the global guarantee, Lemma 1 of 001) and
        ``min_linkability >= l``, over the whole proven interval, for an adversary of the ``sensitive`` mode."""
        from attacks import ATTACKS

        if seq is None:
            seq = ReleaseSequence()
            seq.append(release, truth, snapshot)
        try:
            result = ATTACKS["possible_worlds"](values=protected).run(seq.view(Adversary(sensitive=sensitive)))
        except SolverError as exc:
            raise Refusal(f"{self.name}: release {k}: UNKNOWN whether p(o, s, k) <= 1/{l:g}: the possible-worlds "
                          f"attack stopped ({exc})", "unknown") from None
        checks = (("max_breach", lambda x: x <= 1 / l + 1e-12, f"<= 1/{l:g}"),
                  ("min_linkability", lambda x: x >= l, f">= {l:g}"))
        for metric, ok, need in checks:
            lo, hi = result.interval(metric)
            if ok(lo) and ok(hi):  # both metrics are monotone requirements: the ends decide the interval
                continue
            who = result.witness(metric).get("individual", "?")
            if ok(lo) or ok(hi):
                raise Refusal(f"{self.name}: release {k}: UNKNOWN whether {metric} {need} (individual '{who}'): the "
                              f"possible-worlds attack proved only [{lo:g}, {hi:g}] ({result.bound(metric).reason})",
                              "unknown", individual=who, metric=metric)
            raise Refusal(f"{self.name}: release {k} fails its own check {metric} {need} (individual '{who}', "
                          f"{metric} = {hi:g}, {sensitive} sensitive values, {len(seq)} release(s))", "check",
                          individual=who, metric=metric)

    def _sequence_check(self, release, snapshot: Table, history, protected: list[str], l: float, k: int) -> None:
        """The declared guarantee over the whole sequence for the default adversary (persistent values): the
        possible-worlds attack on every release so far (rebuilt from the private ``history``) and this one."""
        if history is None or len(release) + sum(len(h["ids"]) for h in history) > SEQUENCE_ROWS:
            return  # above the size limit the transient-value check stands alone (module docstring)
        seq = ReleaseSequence()
        for h in history:
            past = pd.DataFrame(h["columns"], index=pd.Index(h["ids"], name=snapshot.frame.index.name), dtype=object)
            seq.append(release_from_frame(snapshot.schema, pd.DataFrame(h["release"], dtype=object)), None,
                       Table(snapshot.schema, past))
        seq.append(release, None, snapshot)
        try:
            self._attack_check(release, None, snapshot, protected, l, k, seq=seq, sensitive="persistent")
        except Refusal:
            raise
        except InputError as exc:  # values changed: the releases refute persistent values (no world at all)
            if not str(exc).startswith("no possible world"):
                raise

    @staticmethod
    def _exact(release, snapshot: Table):
        cols = [list(snapshot.schema.quasi).index(n) for n in release.quasi]
        problem = problem_from_arrays([release], [snapshot.qi_codes[:, cols]], [snapshot.ids], mode="free")
        return problem, analyze(problem)

    def _worst(self, release, snapshot: Table, survival: dict, protected: list[str]):
        """``(individual, value, p)``: the largest exact ``p(o, s, k)`` this release would give."""
        problem, a = self._exact(release, snapshot)
        if not a.all_exact:
            return None
        values = list(problem.values)
        best = None
        for i, o in enumerate(problem.individuals):
            for s in protected:
                if s in values:
                    q = a.localized_fraction(0, i, values.index(s))
                    p = 1 - Fraction((survival.get(str(o)) or {}).get(s, "1")) * (1 - q)
                    if best is None or p > best[2]:
                        best = (str(o), s, p)
        return best

    def _update(self, release, snapshot: Table, survival: dict, protected: list[str], l: float, k: int) -> dict:
        """New survivals from the exact ``q`` of this release (free mode: the release alone), checked exactly."""
        problem, a = self._exact(release, snapshot)
        if not a.all_exact:
            raise Refusal(f"{self.name}: release {k}: UNKNOWN whether p(o, s, k) <= 1/{l:g}: the exact engine could "
                          f"not count the release's worlds within its budget", "unknown")
        bound = 1 - 1 / _fraction(l)
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
                new = Fraction(out.get(o, {}).get(s, "1")) * (1 - q)
                if new < bound:
                    raise Refusal(f"{self.name}: release {k} fails its own check p(o, s, k) <= 1/{l:g}: individual "
                                  f"'{o}', value '{s}', p = {1 - new}", "check", individual=o, value=s)
                out.setdefault(o, {})[s] = f"{new.numerator}/{new.denominator}"
        return out
