"""The possible-worlds attack: breach, linkage and linkability over every world a release sequence allows.

The adversary of Wong et al. (001) and Shmueli & Tassa (004) knows every individual's quasi-identifiers (the
population of each release) and reasons over the *possible worlds*: the assignments of sensitive values to
individuals that every release is consistent with (004, Definition 3.1; 001, Definition 1), each world counted
once however many bijections realize it.  Sensitive values are ``persistent`` (one value per individual over the
whole sequence, 004) or ``free`` (transient: values change arbitrarily between releases, 001), per the
scenario's ``adversary.sensitive``.

Summary metrics (DESIGN.md, "Reports"), over the protected values (parameter ``values``, default all):

* ``max_breach`` - the largest ``p(o, s, k)`` (001, Definition 2): the fraction of worlds in which ``o`` has
  ``s`` in at least one table;
* ``max_linkage`` - the largest ``|E[v, s]| / |E|`` (004, Definition 3.2).  A world of a series of tables
  "contains" ``(v, s)`` when one of its tables does, so this equals ``max_breach`` in both modes; it is
  reported under both papers' names;
* ``max_localized`` - the largest ``q(o, s, j, k)`` (001, section III.A): the fraction of worlds in which ``o``
  has ``s`` in table ``j``; the *localized guarantee* (001, Principle 1) holds iff it is ``<= 1/l``, the
  *global guarantee* (Principle 2) iff ``max_breach`` is;
* ``min_linkability`` - the fewest distinct values (all values, protected or not) an individual takes in at
  least one world (004, l-linkability); ``disclosed`` - individuals linkable to one value only;
* ``individuals``, ``blocks`` (independent components once the edges the engine proved no world uses are
  pruned: an engine figure, finer in a ledger's gate, which carries what earlier months proved),
  ``estimated_blocks`` (blocks beyond the exact budget).

Exactness: linkability is exact (per-release perfect-matching SCCs to a fixpoint; CP-SAT only for the
persistent-value coupling across releases, :mod:`solver.worlds.reduce`, :mod:`solver.worlds.linkability`);
probabilities are exact (closed forms, CP-SAT enumeration of type-worlds, exact fractions) up to
``max_type_worlds`` type-worlds per block, and beyond it estimated by a Markov chain over worlds: the result
is then ``exact = False``, ``bounds`` holds the *proven* interval of each estimated metric (reason
``sampled``; the maximum of per-individual intervals ``[low, high]`` lies in ``[max low, max high]``) and the
95% confidence interval of the estimate is in ``worst[<metric>]["ci"]`` and the notes.  When CP-SAT stops on
its time limit while deciding linkability, ``min_linkability`` and ``disclosed`` are bounded (reason
``time_limit``) by the pairs a world was found for and the pairs not proven impossible.  ``individuals``,
``blocks`` and ``estimated_blocks`` are always exact (the split the engine solved).  In a ledger
(:meth:`PossibleWorlds.extend`) each month's gate starts from the linkability the last one left possible.  Engine:
:mod:`solver.worlds.problem`, :mod:`solver.worlds.matching`, :mod:`solver.worlds.counting`.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from multirelease.model.linking import Linking, Projection
from multirelease.params import Interval, ListOf, Options, Text
from multirelease.model.sequence import SequenceView
from solver.worlds.counting import DEFAULT_MAX_TYPE_WORLDS, DEFAULT_TIME_LIMIT
from solver.worlds.analysis import WorldsAnalysis, analyze
from solver.worlds.witness import witness_world
from solver.worlds.problem import WorldsProblem, build_problem

from .worlds_state import WorldsState

from .base import AttackBase, AttackResult, Progress
from .intervals import settle

__all__ = ["PossibleWorlds", "protected_codes"]

#: rows of ``targets``: the individuals with the highest breach probability
_TOP_TARGETS = 20
#: the metrics that need the worlds counted (the others need linkability only)
COUNTING_METRICS = ("max_breach", "max_linkage", "max_localized")


def protected_codes(values_param, dictionary: np.ndarray) -> np.ndarray:
    """Value codes of the protected values (all when ``values_param`` is None); unknown values are ignored
    (a value no release publishes has breach probability 0)."""
    if values_param is None:
        return np.arange(len(dictionary))
    wanted = {str(v) for v in values_param}
    return np.array([i for i, v in enumerate(dictionary) if str(v) in wanted], dtype=np.int64)


#: persons a witness lists at most (``all_individuals``)
WITNESS_CAP = 1000

class PossibleWorlds(AttackBase):
    """Breach / linkage probabilities and linkability over all possible worlds.

    Parameters
    ----------
    values : list of str, optional
        The sensitive values to protect (default: every value).  Wong et al. protect chlamydia, not flu.
    l : number in [1, inf), optional
        When given, ``certify`` requires ``max_breach <= 1/l`` by default.
    max_type_worlds : int, default 5000
        Type-worlds enumerated per block before the probabilities of that block are estimated.
    time_limit : number, default 20
        CP-SAT seconds for deciding the coupled linkability pairs (all coupled blocks together, whichever
        executor solves them: :mod:`solver.worlds.component`), and per block for counting and for each
        witness world.
    samples : int, default 2000
        States recorded by the sampler of blocks beyond the exact budget.
    counting : 'auto' or 'always', default 'auto'
        World counting (``max_breach``, ``max_linkage``, ``max_localized``) costs far more than linkability
        (``min_linkability``, ``disclosed``: one feasibility question per individual and value).  ``auto``
        counts when a requirement reads one of the three, or when no requirement names this attack (it was
        listed to be shown); otherwise the three are not computed and the notes say so.  ``always`` counts.

    Examples
    --------
    >>> PossibleWorlds(values=["chlamydia"]).run(view).summary["max_breach"]   # doctest: +SKIP
    0.75
    """

    name = "possible_worlds"
    params = {
        "values": ListOf(Text()),
        "l": Interval(float, 1, None),
        "max_type_worlds": Interval(int, 1, None),
        "time_limit": Interval(float, 0, None, closed="neither"),
        "samples": Interval(int, 40, None),
        "counting": Options(("auto", "always")),
    }
    defaults = {"max_type_worlds": DEFAULT_MAX_TYPE_WORLDS, "time_limit": DEFAULT_TIME_LIMIT, "samples": 2000,
                "counting": "auto"}
    metrics = ("max_breach", "max_linkage", "max_localized", "min_linkability", "disclosed", "individuals",
               "blocks", "estimated_blocks")
    #: the papers and their definitions (reference, ``multirelease describe``)
    paper = ("Wong, Fu, Liu, Wang, Xu, \"Global Privacy Guarantee in Serial Data Publishing\" (papers/001): "
             "possible worlds Definition 1, breach probability Definition 2, Principles 1-2; Shmueli & Tassa, "
             "\"Privacy by Diversity in Sequential Releases of Databases\" (papers/004): Definitions 3.1-3.3")
    #: what each summary metric means (over the protected ``values``)
    metric_descriptions = {
        "max_breach": "the largest p(o, s, k) (001, Definition 2): over individuals o and protected values s, "
                      "the fraction of possible worlds in which o has s in at least one release; the global "
                      "guarantee asks <= 1/l",
        "max_linkage": "the largest |E[v, s]| / |E| (004, Definition 3.2): the fraction of possible worlds "
                       "linking individual v to value s (equals max_breach; reported under both names)",
        "max_localized": "the largest q(o, s, j, k) (001, section III.A): the fraction of worlds in which o has "
                         "s in release j; the localized guarantee (Principle 1) asks <= 1/l",
        "min_linkability": "the fewest distinct values an individual takes over the possible worlds (004, "
                           "l-linkability, Definition 3.3); higher is safer",
        "disclosed": "individuals linkable to one value only (their value is disclosed)",
        "individuals": "individuals the adversary reasons about",
        "blocks": "independent components of individuals and release classes, solved one by one, once the "
                  "edges the engine proved no world uses are pruned (a ledger's gate, which carries what earlier "
                  "months proved, can split finer than a from-scratch run: the other figures are the same)",
        "estimated_blocks": "blocks beyond the exact budget (max_type_worlds), whose probabilities are sampled "
                            "(then bounded, reason sampled)",
    }

    baseline = (("disclosed", "==", 0),)

    def default_requirements(self) -> list[str]:
        if "l" in self.config:
            return [f"possible_worlds.max_breach <= 1/{self.config['l']:g}"]
        return []

    def applies(self, view: SequenceView) -> bool:
        """A population for every release, a sensitive attribute, one record per individual, and
        ``adversary.sensitive`` persistent or free."""
        if not view.releases or view.adversary.sensitive not in ("persistent", "free"):
            return False
        for r, release in enumerate(view.releases):
            pop = view.population[r] if r < len(view.population) else None
            if pop is None or not release.sensitive_attributes or len(pop) != len(release):
                return False
        return True

    def counts(self) -> bool:
        """Are the worlds counted in :meth:`run` (the ``counting`` parameter and the metrics the requirements
        read, :meth:`~attacks.base.AttackBase.reading`)?"""
        return (self.config["counting"] == "always" or self.read is None
                or any(m in self.read for m in COUNTING_METRICS))

    def analysis(self, view: SequenceView, *, count: bool = True, problem: WorldsProblem | None = None
                 ) -> WorldsAnalysis:
        """The engine's full per-individual result (for publishers and tests); ``count=False``: linkability
        only, decided as far as ``min_linkability`` and ``disclosed`` need (the probabilities are NaN).
        ``problem``: the problem of ``view``'s sequence already built (the ledger's gate, :meth:`extend`)."""
        if problem is None:
            problem = build_problem(view, values=[view.linked_values(r) for r in range(len(view.releases))])
        # the least linkability is read on the sensitive value: with linking columns the engine's values are
        # linked values (two of them may share a sensitive value), so it decides every pair
        scope = "min" if not count and not view.linking else "full"
        return analyze(problem, max_type_worlds=self.config["max_type_worlds"],
                       time_limit=self.config["time_limit"], samples=self.config["samples"],
                       rng=np.random.default_rng(0), count=count, linkability=scope)

    def run(self, view: SequenceView, progress: Progress | None = None) -> AttackResult:
        return self._run(view, progress)[0]

    def _run(self, view: SequenceView, progress: Progress | None = None, problem: WorldsProblem | None = None
             ) -> tuple[AttackResult, WorldsAnalysis]:
        if progress is not None:
            progress(0, 1, "possible worlds")
        linking = view.linking
        count = self.counts()
        a = self.analysis(view, count=count, problem=problem)
        problem = a.problem
        p = _SensitiveView(a, linking)
        prot = protected_codes(self.config.get("values"), p.values)
        N = problem.n_individuals
        notes = [f"sensitive values are {problem.mode} (adversary.sensitive)"]
        if linking.note():
            notes.append(linking.note())
        summary: dict[str, float] = {}
        intervals: dict[str, tuple] = {}
        reasons: dict[str, tuple] = {}
        worst: dict[str, Any] = {}
        n_links = p.linkable.sum(axis=1)
        estimated = [b for b in a.blocks if not b.exact] if count else []
        summary["individuals"] = N
        summary["blocks"] = len(a.blocks)
        summary["estimated_blocks"] = len(estimated)
        summary["min_linkability"] = int(n_links.min()) if N else 0
        summary["disclosed"] = int((n_links == 1).sum())
        if N:
            i = int(np.argmin(n_links))
            worst["min_linkability"] = {"individual": str(problem.individuals[i]),
                                        "values": [str(p.values[v]) for v in np.flatnonzero(p.linkable[i])]}
            if linking:
                worst["min_linkability"].update(p.linked(i))
            hit = np.flatnonzero(n_links == 1)
            if len(hit):  # every individual disclosed (the first 1,000): what a repair withholds (issue 29)
                worst["disclosed"] = {"individual": str(problem.individuals[hit[0]]),
                                      "values": [str(p.values[v]) for v in np.flatnonzero(p.linkable[hit[0]])],
                                      "all_individuals": [str(problem.individuals[j]) for j in hit[:WITNESS_CAP]],
                                      "count": int(len(hit))}
        exact = (all(b.exact for b in a.blocks) or not count) and a.linkability_exact
        stopped = ("time_limit", f"CP-SAT time limit {self.config['time_limit']:g} s per block")
        if not a.linkability_exact:
            # undecided pairs are reported linkable (an upper set); proven are those a world realizes; every
            # individual takes some value in every world
            proven = np.maximum(p.linkable_low.sum(axis=1), 1)
            intervals["min_linkability"] = (int(proven.min()), summary["min_linkability"])
            intervals["disclosed"] = (summary["disclosed"], int((proven == 1).sum()))
            reasons["min_linkability"] = reasons["disclosed"] = stopped
            notes.append("CP-SAT stopped on its time limit while deciding linkability: undecided (individual, "
                         "value) pairs are counted as linkable (min_linkability and disclosed are bounds)")
        if not count:
            notes.append(f"world counting skipped: no requirement reads {', '.join(COUNTING_METRICS)} "
                         "(counting: auto), so they are not computed; min_linkability and disclosed need "
                         "linkability only, decided as far as they need it (an individual above the least "
                         "linkability of its component may take more values than its targets row lists)")
        elif len(prot) and N:
            sub = p.breach[:, prot]
            i, vv = np.unravel_index(int(np.nanargmax(np.where(np.isnan(sub), -1, sub))), sub.shape)
            v = int(prot[vv])
            summary["max_breach"] = summary["max_linkage"] = float(sub[i, vv])
            loc = p.localized[:, :, prot]
            j, li, lv = np.unravel_index(int(np.nanargmax(np.where(np.isnan(loc), -1, loc))), loc.shape)
            summary["max_localized"] = float(loc[j, li, lv])
            if not exact:
                # the maximum of unknowns in [low_i, high_i] lies in [max low_i, max high_i]
                intervals["max_breach"] = intervals["max_linkage"] = (float(np.max(p.low[:, prot])),
                                                                      float(np.max(p.high[:, prot])))
                intervals["max_localized"] = (float(np.nanmax(p.localized_low[:, :, prot])),
                                              float(np.nanmax(p.localized_high[:, :, prot])))
                if estimated:
                    why = ("sampled", f"{len(estimated)} block(s) beyond max_type_worlds = "
                           f"{self.config['max_type_worlds']} or the time limit: Markov-chain estimate")
                else:
                    why = stopped
                for m in ("max_breach", "max_linkage", "max_localized"):
                    reasons[m] = why
            worst["max_breach"] = self._witness(a, p, int(i), v)
            worst["max_linkage"] = worst["max_breach"]
            worst["max_localized"] = {"individual": str(problem.individuals[li]),
                                      "value": str(p.values[prot[lv]]), "release": problem.releases[j].index,
                                      "q": float(loc[j, li, lv])}
            frac = p.localized_fraction(int(j), int(li), int(prot[lv])) if exact else None
            if frac is not None:
                worst["max_localized"]["fraction"] = f"{frac.numerator}/{frac.denominator}"
        else:
            summary["max_breach"] = summary["max_linkage"] = summary["max_localized"] = 0.0
            notes.append("no protected value is published")
        if linking and problem.mode == "free":
            # values transient, linking tuples persistent: the engine lets the tuples change too, a relaxation
            # (its worlds include every true world): linkability is an upper set, probabilities are open
            why = ("relaxation", "adversary.sensitive free with persistent linking columns "
                   f"({', '.join(linking.columns)}): the engine lets them change too (a superset of the worlds)")
            low_link = 1 if N else 0
            intervals["min_linkability"] = (low_link,
                                            intervals.get("min_linkability", (0, summary["min_linkability"]))[1])
            intervals["disclosed"] = (intervals.get("disclosed", (summary["disclosed"], 0))[0], N)
            for m in COUNTING_METRICS if count else ():
                intervals[m] = (None, None)
            for m in ("min_linkability", "disclosed") + (COUNTING_METRICS if count else ()):
                reasons[m] = why
            exact = False
            notes.append("the persistent linking columns are relaxed to changing ones under adversary.sensitive "
                         "free: min_linkability and disclosed are bounds, the probabilities are not proven")
        if estimated:
            notes.append(f"{len(estimated)} block(s) beyond the exact budget (max_type_worlds = "
                         f"{self.config['max_type_worlds']}): their probabilities are Markov-chain estimates "
                         f"(95% batch-means intervals in worst); bounds hold the proven intervals")
        bounds, proven = settle(summary, intervals, *stopped, reasons=reasons)
        reason = next(iter(bounds.values())).reason if bounds else "time_limit"
        targets = self._targets(a, p, prot) if count else self._linkability_targets(a, p)
        if progress is not None:
            progress(1, 1, "done")
        return AttackResult(attack=self.name, summary=summary, exact=exact, worst=worst, targets=tuple(targets),
                            bounds=bounds, notes=tuple(notes), proven=proven, reason=reason), a

    # ------------------------------------------------------------------ one release at a time (attacks.incremental)
    def extend(self, state: "WorldsState | None", view: SequenceView, index: int):
        """The result over releases ``1 .. index`` from the state of ``1 .. index - 1`` and the new release
        (``view``): the problem of the whole sequence from the kept release graphs and the new one's (only the
        new release is read and matched against its population), and the linkability the last gate proved
        carried in (:attr:`solver.worlds.problem.WorldsProblem.allowed`).  Under persistent values (004,
        Definition 3.1) a world of releases ``1 .. index`` restricted to ``1 .. index - 1`` is a world of the
        prefix, so a pair the prefix's gate refuted (by flows or CP-SAT) stays refuted and the individuals it
        disclosed stay disclosed: the new gate decides only what is still open (issue 24, item 3).  Where the
        engine is exact, the figures are a from-scratch run's; where a solver stopped, the carried refutations
        can only narrow its interval.  Free values (a new table adds values) and persistent linking columns
        (read across releases) are run on the whole sequence (``NotImplemented``)."""
        state = self.fold(state, view, index)
        if state is NotImplemented:
            return NotImplemented
        result, a = self._run(view, problem=state.problem())
        return result, state.carried(a)

    def fold(self, state: "WorldsState | None", view: SequenceView, index: int) -> "WorldsState":
        """The state with release ``index`` added and nothing decided (the ledger folds releases whose state
        was not kept this way: no attack of the prefixes is run); ``NotImplemented`` where :meth:`extend` is."""
        if view.adversary.sensitive != "persistent" or view.linking:
            return NotImplemented
        return (state or WorldsState()).add(build_problem(view, values=[view.linked_values(0)]), index)

    @staticmethod
    def state_parts(state: "WorldsState") -> tuple[bytes, bytes]:
        return state.parts[-1], state.summary()

    @staticmethod
    def load_state(parts: list, summary: bytes) -> "WorldsState":
        return WorldsState.load(parts, summary)

    def _witness(self, a: WorldsAnalysis, p: "_SensitiveView", i: int, v: int) -> dict:
        problem = a.problem
        out: dict[str, Any] = {"individual": str(problem.individuals[i]), "value": str(p.values[v]),
                               "breach": float(p.breach[i, v])}
        frac = p.breach_fraction(i, v)
        if frac is not None:
            out["fraction"] = f"{frac.numerator}/{frac.denominator}"
        else:
            out["ci"] = [float(p.ci_low[i, v]), float(p.ci_high[i, v])]
            out["proven"] = [float(p.low[i, v]), float(p.high[i, v])]
        out["localized"] = {str(g.index): (None if np.isnan(p.localized[j, i, v]) else float(p.localized[j, i, v]))
                            for j, g in enumerate(problem.releases)}
        if p.linking:
            out.update(p.linked(i))
        # the worlds of the individual's block(s) in which it has the value (through its likeliest linked value)
        vc = p.likeliest(i, v)
        worlds = []
        counts = []
        for slot in range(a.block_of.shape[0]):
            b = int(a.block_of[slot, i])
            if b < 0:
                continue
            bc = a.blocks[b]
            counts.append({"releases": [problem.releases[r].index for r in bc.block.releases],
                           "individuals": bc.block.n_people, "worlds": bc.worlds if bc.exact else None,
                           "method": bc.method})
            if not bc.linkable[int(a.type_of[slot, i]), vc]:
                continue
            whole = bc.origin if bc.origin is not None else bc.block  # the world of the whole component
            if whole.n_people > 200:
                continue
            w = witness_world(problem, whole, i, vc, time_limit=self.config["time_limit"])
            if w is not None:
                worlds.extend(p.label_world(w["releases"]))
        out["blocks"] = counts
        if worlds:
            out["world"] = worlds
        return out

    def _linkability_targets(self, a: WorldsAnalysis, p: "_SensitiveView") -> list[dict]:
        """Without counting: the individuals linkable to the fewest values."""
        n_links = p.linkable.sum(axis=1)
        order = np.argsort(n_links, kind="stable")[:_TOP_TARGETS]
        decided = (p.linkable == p.linkable_low).all(axis=1)
        return [{"individual": str(a.problem.individuals[i]), "linkability": int(n_links[i]),
                 "linkable": [str(p.values[x]) for x in np.flatnonzero(p.linkable[i])],
                 "decided": bool(decided[i])} for i in order.tolist()]

    def _targets(self, a: WorldsAnalysis, p: "_SensitiveView", prot: np.ndarray) -> list[dict]:
        problem = a.problem
        if not len(prot) or not problem.n_individuals:
            return []
        best = np.nanmax(p.breach[:, prot], axis=1)
        order = np.argsort(-best, kind="stable")[:_TOP_TARGETS]
        rows = []
        for i in order.tolist():
            v = int(prot[int(np.nanargmax(p.breach[i, prot]))])
            rows.append({"individual": str(problem.individuals[i]), "value": str(p.values[v]),
                         "breach": float(p.breach[i, v]), "exact": bool(p.exact[i, v]),
                         "linkable": [str(p.values[x]) for x in np.flatnonzero(p.linkable[i])]})
        return rows


class _SensitiveView:
    """The engine's per-(individual, linked value) results read on the sensitive value alone.

    With persistent linking columns (:mod:`multirelease.model.linking`) the engine's values are linked values
    (sensitive value and linking tuple); the worlds in which ``o`` has sensitive value ``s`` are the disjoint
    union, over the linked values ``(s, t)``, of the worlds in which ``o`` has ``(s, t)`` (one tuple per
    individual, 004 Definition 3.1), so probabilities add up and linkability is their union.  Without linking
    columns this is the engine's result as it is.
    """

    def __init__(self, a: WorldsAnalysis, linking: Linking):
        self.a = a
        self.linking = linking
        if not linking:
            self.values = a.problem.values
            for name in ("linkable", "linkable_low", "breach", "low", "high", "localized", "localized_low",
                         "localized_high", "exact", "ci_low", "ci_high"):
                setattr(self, name, getattr(a, name))
            self.codes = np.arange(len(self.values))
            return
        proj = Projection.of(a.problem.values)
        self.codes, self.values = proj.codes, proj.values

        def add(x):  # probabilities of one sensitive value: the sum over its linked values
            return np.minimum(proj.sum(np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0)), 1.0)

        self.linkable = proj.any(a.linkable)
        self.linkable_low = proj.any(a.linkable_low if a.linkable_low is not None else a.linkable)
        self.breach, self.low, self.high = add(a.breach), add(a.low), add(a.high)
        self.ci_low, self.ci_high = add(a.ci_low), add(a.ci_high)
        self.exact = ~proj.any(~np.asarray(a.exact, dtype=bool))

        def add_nan(x):  # NaN where the individual is absent from the table stays NaN
            if x is None:
                return None
            return np.where(np.isnan(x).all(axis=-1, keepdims=True), np.nan, add(x))

        self.localized = add_nan(a.localized)
        self.localized_low = add_nan(a.localized_low)
        self.localized_high = add_nan(a.localized_high)

    def _members(self, v: int) -> np.ndarray:
        return np.flatnonzero(self.codes == v)

    def breach_fraction(self, i: int, v: int) -> Fraction | None:
        if not self.linking:
            return self.a.breach_fraction(i, v)
        total = Fraction(0)
        for vc in self._members(v):
            if not self.a.linkable[i, vc]:
                continue
            f = self.a.breach_fraction(i, int(vc))
            if f is None:
                return None
            total += f
        return total

    def localized_fraction(self, j: int, i: int, v: int) -> Fraction | None:
        if not self.linking:
            return self.a.localized_fraction(j, i, v)
        total = Fraction(0)
        for vc in self._members(v):
            f = self.a.localized_fraction(j, i, int(vc))
            if f is None:
                return None
            total += f
        return total

    def likeliest(self, i: int, v: int) -> int:
        """The engine's value code behind ``(i, v)``: the linked value of ``v`` with the largest breach."""
        if not self.linking:
            return v
        members = self._members(v)
        return int(members[int(np.argmax(self.a.breach[i, members]))])

    def linked(self, i: int) -> dict:
        """What the linking columns showed of individual ``i``: its linkable linked values, and the columns."""
        vals = self.a.problem.values
        return {"linked_by": list(self.linking.columns),
                "linked_values": [self.linking.label(vals[x]) for x in np.flatnonzero(self.a.linkable[i])]}

    def label_world(self, releases: list) -> list:
        """A witness world's releases with every linked value labelled (``measles (bt=O+)``)."""
        return releases if not self.linking else [self._label_any(rel) for rel in releases]

    def _label_any(self, x):
        if isinstance(x, str):
            return self.linking.label(x)
        if isinstance(x, (list, tuple)):
            return [self._label_any(y) for y in x]
        if isinstance(x, dict):
            return {k: self._label_any(y) for k, y in x.items()}
        return x
