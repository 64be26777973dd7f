"""Correspondence attacks on continuous data publishing (Fung, Wang, Fu, Pei, EDBT 2008), computed exactly.

Release ``R_i`` publishes all records collected up to ``T_i``; the adversary knows the *correspondence*:
every record of ``R_i`` reappears in every later release (section 3.1; ``adversary: {correspondence:
true}``).  Cross-examining the releases, it *cracks* records of a target's equivalence class - shows that
they cannot be the target's record under any *generator* (any underlying data consistent with all
releases) - in three ways (Table 3):

* **F-attack** (Definition 3.1): target at ``T1``, cracking ``R1``: records whose instantiation cannot match
  the target's QID;
* **C-attack** (Definition 3.3): target at ``T1``, cracking ``R2``: records that cannot both match its QID
  and have timestamp ``T1``;
* **B-attack** (Definition 3.5): target at ``T2``, cracking ``R2``: records that must have timestamp ``T1``.

``FA``, ``CA``, ``BA`` (Definitions 3.2, 3.4, 3.6) are the smallest class sizes left after cracking, over
all classes and targets.  With ``n > 2`` releases a target at ``T_t`` is cracked in ``R_t`` (F when ``t < n``,
B when ``t >= 2``; for ``1 < t < n`` the one exact number is both, as the composition "B then F" of
section 7.1 is) and in every later ``R_j`` (C; it includes the composition "B then C").

How the numbers are computed (``method: exact``, the default): crack sizes come straight from the
definitions - a minimum over *all* generators - by the engines of :mod:`solver`: min-cost flows over the
group-aggregated buddy graph for two releases (:mod:`solver.correspondence.flows`), CP-SAT models of buddy chains
for more (:mod:`solver.correspondence.generators`).  They hold for any generalization: cuts, local recoding,
Mondrian regions, overlapping classes ("comparable" is then a non-empty intersection of regions).
``method: closed_form`` uses Theorems 4.2 - 4.4 and the micro attacks / compositions of section 7.1
(:mod:`attacks.correspondence.closed`); it needs cut generalization and is exact only for two releases.

Targets
-------
* ``targets:`` parameter - a list of ``{qid: {attribute: leaf value, ...}, timestamp: i}``: those targets
  only.  Their crack sums appear in the summary as ``F_<n>``, ``C_<n>``, ``B_<n>`` (``n`` the 1-based
  position in the list; only the attacks the timestamp allows: F and C for ``timestamp < n_releases``, B
  for ``timestamp >= 2``) and the crack size of each group as ``F_<n>_<value>`` (the sensitive value with
  every non-word character replaced by ``_``).  For ``C`` over several later releases the worst release
  is reported.
* otherwise, with a population (snapshots with the individuals' QIs): every distinct raw QI tuple with its
  timestamp (the first release whose snapshot holds the individual) - the certification case.  The answer
  depends on a target's signature and timestamp only, so the tuples sharing both are one row with their
  number (``points``) and individuals: a census of 10^6 rows is tens of thousands of rows, not 10^6;
* otherwise every target the published regions allow: one per distinct *signature* (the set of published
  regions containing the point, :func:`solver.correspondence.regions.atoms`) and timestamp.

Rows (``targets`` of the report; at most ``rows`` of them, the worst, the rest to ``--targets-file``): per
target and attack, the class of the release that cracks it most, its
size, crack and anonymity (with bounds when not exact), its number of groups (sensitive values) and how
many of them the attack cracks entirely; ``worst`` lists every group of its class with its crack size, and
given targets have per-group summary names (below).

Summary: ``FA``, ``CA``, ``BA``; ``targets`` (number of targets: rows weighted by their ``points``),
``cracked`` (targets with a positive crack in some attack), ``violations`` (targets below ``k`` when ``k`` is
given) and the per-target names above.  ``worst`` holds, under ``FA``, ``CA`` and ``BA``, the target and class
attaining the minimum with a *generator* realizing its crack sizes (buddy pairs per group with counts and
instantiation points).

Linking columns (:mod:`multirelease.model.linking`; Shmueli & Tassa 004, section 5.2).  A published column of role
``non-identifier`` or ``insensitive`` not declared changing is persistent: a record reappears in every later
release with the same value of it (section 3.1: the correspondence keeps a record's values), so a generator's
buddies agree on the *linked value* (sensitive value and linking tuple), not on the sensitive value alone.
The engines and the closed forms take the linked values as the composite values of the paper's setting
(buddies agree on the whole value; Theorems 4.2 - 4.4 hold for any value domain, the linking tuple being one
more component, as for several sensitive attributes), so crack sizes stay exact and count records: no
projection.  The groups of a class are then the records of one linked value (``worst`` lists them with the
sensitive value, the labelled linked value and ``linked_by``; generators label their nodes the same way);
the per-value names ``F_<n>_<value>`` add up the groups of one sensitive value.

Intervals (DESIGN.md, "Verdicts over intervals").  A run stopped by ``budget`` or CP-SAT's ``time_limit``
(or the closed forms beyond two releases) knows each crack only within proven bounds.  Every summary metric
is then a proven value or a :class:`~attacks.base.Bound` with its reason: ``FA``, ``CA``, ``BA`` in
``[min of the rows' low ends, min of their high ends]``; ``cracked`` from the targets whose crack is proven
positive to those whose crack may be; ``violations`` from the rows proven below ``k`` to those that may be;
the per-target names likewise.  ``targets`` is always exact.  The engine's figures (solves, seconds) are in
the result's ``stats``.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from multirelease.errors import InputError
from multirelease.params import Anything, Boolean, Interval, Options
from multirelease.model.release import Release
from multirelease.model.sequence import SequenceView

from attacks.base import AttackBase, AttackResult, Progress
from .targets import (CorrespondenceResult, Target, base_targets, class_id, given_targets, has_population,
                      parse_targets, population_points, requests_of, shown_rows, target_arrays)

#: the crack questions of the targets (kept under this name for the tests and benchmarks)
_requests = requests_of

__all__ = ["Correspondence", "is_cut"]

FAMILIES = ("F", "C", "B")


class _MetricNames(tuple):
    """The fixed metric names, plus the per-target names ``F_<n>``, ``C_<n>``, ``B_<n>`` and
    ``F_<n>_<value>`` (whose values depend on the data, so they are matched by pattern)."""

    _PATTERN = re.compile(r"^[FCB]_\d+(_\w+)?$")

    def __contains__(self, item: object) -> bool:
        return tuple.__contains__(self, item) or bool(self._PATTERN.match(str(item)))


def _safe(value: str) -> str:
    return re.sub(r"\W", "_", str(value))


def is_cut(release: Release) -> bool:
    """Is the release a global recoding by a cut of every taxonomy (section 3): every published QI value a
    hierarchy node, the values of one attribute pairwise disjoint, and classes of identical records?"""
    for j, a in enumerate(release.qi_attributes):
        pairs = np.unique(np.column_stack([release.lo[:, j], release.hi[:, j]]), axis=0)
        h = a.hierarchy
        for lo, hi in pairs:
            if lo != hi and not h.is_node_range(int(lo), int(hi)):
                return False
        if a.name in release.masks:
            full = np.array([((1 << (int(hi) - int(lo) + 1)) - 1) << int(lo) for lo, hi in
                             zip(release.lo[:, j], release.hi[:, j])], dtype=object)
            if any(int(m) != int(f) for m, f in zip(release.masks[a.name], full)):
                return False
        order = np.argsort(pairs[:, 0], kind="stable")
        p = pairs[order]
        if len(p) > 1 and np.any(p[1:, 0] <= p[:-1, 1]):
            return False
    if release.group is not None:
        key = np.column_stack([release.lo, release.hi])
        for c in range(release.n_classes):
            rows = key[release.classes == c]
            if len(rows) and np.any(rows != rows[0]):
                return False
    return True


class Correspondence(AttackBase):
    """F-, C- and B-attacks (and their n-release extensions) with exact crack sizes and witnesses.

    Parameters
    ----------
    targets : list of {qid: {attribute: value}, timestamp: int}, optional
        Attack only these targets (see the module docstring for the summary names).
    k : int >= 1, optional
        The BCF-anonymity threshold: ``violations`` counts target rows with anonymity below ``k`` and
        ``multirelease certify`` requires ``FA, CA, BA >= k``.
    method : "exact" | "closed_form", default "exact"
        ``exact`` counts every crack with the generator flows (two releases) or CP-SAT (more); ``closed_form``
        reads the crack sizes off Theorems 4.2-4.4 (releases generalized by cuts of the taxonomies only).
    time_limit : float > 0, default 20
        Seconds per CP-SAT model (more than two releases); a model stopped early makes the result inexact
        with bounds.
    budget : float > 0, default 300
        Seconds for all the solver work of one run (more than two releases: flow and LP bounds, then CP-SAT
        on the rows with the smallest bounds first); what is left unsolved keeps its proven bounds and the
        result is inexact.
    witness : bool, default true
        Attach the generator realizing each worst crack.
    rows : int >= 3, default 1000
        At most this many target rows in the report: beyond it, the worst ``rows // 3`` of each attack family
        (and every given target); all of them go to ``--targets-file``.

    Examples
    --------
    >>> Correspondence().run(view).summary["FA"]    # doctest: +SKIP
    4
    """

    name = "correspondence"
    params = {
        "targets": Anything(),
        "k": Interval(int, 1, None),
        "method": Options(("exact", "closed_form")),
        "time_limit": Interval(float, 0, None, closed="neither"),
        "budget": Interval(float, 0, None, closed="neither"),
        "witness": Boolean(),
        "rows": Interval(int, 3, None),
    }
    defaults = {"method": "exact", "time_limit": 20.0, "budget": 300.0, "witness": True, "rows": 1000}
    metrics = _MetricNames(("FA", "CA", "BA", "targets", "cracked", "violations"))
    imports = ("attacks.correspondence.assemble", "attacks.correspondence.targets", "solver.correspondence.crack",
               "solver.correspondence.flow_shards", "solver.correspondence.flow_witness")
    #: the paper and its definitions (reference, ``multirelease describe``)
    paper = ("Fung, Wang, Fu, Pei, \"Anonymity for Continuous Data Publishing\" (EDBT 2008; papers/002): "
             "F-, C-, B-attacks Definitions 3.1-3.6, crack sizes Theorems 4.2-4.4, n releases section 7.1")
    #: what each summary metric means; ``<n>`` is a target's position in the ``targets`` parameter
    metric_descriptions = {
        "FA": "F-anonymity (Definition 3.2): the smallest class size left in R1 after the F-attack cracks "
              "records that cannot match the target's QID, over every target and class; higher is safer",
        "CA": "C-anonymity (Definition 3.4): the smallest class size left in a later release after the C-attack "
              "cracks records that cannot both match the target's QID and have its timestamp",
        "BA": "B-anonymity (Definition 3.6): the smallest class size left in R2 after the B-attack cracks records "
              "that must have the earlier timestamp (target at T2)",
        "targets": "target rows judged (one per distinct QI tuple and timestamp of the population, or per "
                   "published-region signature and timestamp with targets: regions)",
        "cracked": "target rows with a positive crack in some attack",
        "violations": "target rows whose anonymity is below the parameter k (0 without k)",
        "{F,C,B}_<n>": "the F-, C- or B-attack's crack sum of given target n (the attacks its timestamp allows)",
        "{F,C,B}_<n>_<value>": "that attack's crack size of the group of the sensitive value named last, in "
                               "given target n's class",
    }

    def __init__(self, *, _file: str | None = None, _key: str | None = None, **params: Any):
        super().__init__(_file=_file, _key=_key, **params)
        self._given = parse_targets(self.config.get("targets"), file=_file, key=f"{_key}.targets" if _key else
                                     "targets")

    baseline = (("FA", ">=", 2), ("CA", ">=", 2), ("BA", ">=", 2))

    def default_requirements(self) -> list[str]:
        k = self.config.get("k")
        return [] if k is None else [f"{self.name}.{m} >= {k}" for m in ("FA", "CA", "BA")]

    def applies(self, view: SequenceView) -> bool:
        return _problem(view) is None

    def prepare(self, view: SequenceView) -> None:
        """What needs no release aggregated, computed while the workers compute the releases' metrics: the
        releases' coded sensitive (or linked) values and the population's points (:func:`population_points`)."""
        if _problem(view) is None:
            ahead = {"codes": _sensitive_codes(view)}
            if has_population(view):
                ahead["points"] = population_points(view)
            view.ahead[self.name] = ahead

    # ------------------------------------------------------------------ run
    def run(self, view: SequenceView, progress: Progress | None = None) -> AttackResult:
        problem = _problem(view)
        if problem is not None:
            raise InputError(f"correspondence: {problem}")
        from solver.correspondence.regions import aggregate_all

        releases = view.releases
        n = len(releases)
        notes: list[str] = []
        linking = view.linking
        prepared = view.ahead.get(self.name, {})
        codes, values = prepared["codes"] if "codes" in prepared else _sensitive_codes(view)
        if linking.note():
            notes.append(linking.note())
        # the population's points need no release: computed ahead (prepare), else here while the workers
        # aggregate the releases
        points: list = [prepared["points"]] if "points" in prepared else []
        ahead = (lambda: points.append(population_points(view))) if has_population(view) and not points else None
        nodes = aggregate_all(releases, codes, meanwhile=ahead)
        if progress:
            progress(0, 3, "targets")
        targets = self._targets(view, nodes, notes, points[0] if points else None)
        requests, where = _requests(targets, nodes, n)
        if progress:
            progress(1, 3, f"{len(requests)} crack questions")
        method = self.config["method"]
        engine = None
        groups: list = []
        if method == "closed_form":
            answers, exact = _closed_answers(releases, nodes, requests, values, notes)
        else:
            engine = _engine(nodes, self.config["time_limit"], [a.domain_size for a in releases[0].qi_attributes],
                             self.config["budget"])
            if hasattr(engine, "answer_arrays"):  # exact answers as arrays (two releases)
                from .assemble import request_groups

                def groups_ahead() -> None:  # what the report reads of the releases, while the workers answer
                    groups.append(request_groups(nodes, requests, len(values)))

                answers, exact = engine.answer_arrays(requests, meanwhile=groups_ahead), True
            else:
                answers = engine.answer(requests)
                exact = all(a.exact for a in answers)
        if progress:
            progress(2, 3, "summary")
        result = _assemble(self, view, nodes, values, targets, requests, where, answers, exact, engine, notes,
                           linking, groups[0] if groups else None)
        if progress:
            progress(3, 3, "done")
        return result

    #: population targets sharing a signature and timestamp make one row (False: one row per point)
    _aggregate = True

    def _targets(self, view: SequenceView, nodes, notes: list[str], points: tuple | None = None) -> list[Target]:
        return base_targets(view, nodes, notes, aggregate=self._aggregate, points=points) + \
            given_targets(view, nodes, self._given)


# ---------------------------------------------------------------------- helpers
#: the summary metric of each attack family (``worst`` is keyed by it, as certification looks witnesses up)
_METRIC_OF = {"F": "FA", "C": "CA", "B": "BA"}


def _problem(view: SequenceView) -> str | None:
    if len(view.releases) < 2:
        return "needs at least two releases"
    if not view.adversary.correspondence:
        return "the adversary has no correspondence knowledge (adversary: {correspondence: true})"
    q = view.releases[0].quasi
    if not q:
        return "the releases publish no quasi-identifier"
    if any(r.quasi != q for r in view.releases[1:]):
        return "every release must publish the same quasi-identifiers"
    if any(len(view.releases[i]) > len(view.releases[i + 1]) for i in range(len(view.releases) - 1)):
        return "a later release has fewer records than an earlier one (every record must reappear)"
    return None


def _sensitive_codes(view: SequenceView) -> tuple[list[np.ndarray], np.ndarray]:
    """The releases' sensitive values coded over one dictionary - with linking columns their linked values
    (sensitive value and persistent linking tuple), on which buddies agree."""
    from solver.correspondence.regions import sensitive_codes

    linking = view.linking
    return sensitive_codes(view.releases, [linking.values(r) for r in view.releases] if linking else None)


def _engine(nodes, time_limit: float, domain_sizes, budget: float | None = None):
    if len(nodes) == 2:  # one task per shard of the buddy graph's region groups (issue 28)
        from solver.correspondence.flow_shards import ShardedEngine

        return ShardedEngine(nodes[0], nodes[1])
    from solver.correspondence.generators import ChainEngine

    return ChainEngine(nodes, time_limit=time_limit, domain_sizes=domain_sizes, budget=budget)


@functools.lru_cache(maxsize=None)
def _families(t: int, j: int, n: int) -> tuple[str, ...]:
    if j > t:
        return ("C",)
    return tuple(f for f, ok in (("F", t < n), ("B", t >= 2)) if ok)


def _assemble(attack: Correspondence, view, nodes, values, targets, requests, where, answers, exact, engine,
              notes, linking=None, groups=None) -> AttackResult:
    """The rows, summary and witnesses from the answers' crack intervals.

    A row's anonymity is the minimum over its candidate classes, so it lies in ``[min low, min high]``.  Its
    crack is that of the class attaining the minimum (ties: the earliest release, then the class order); when
    intervals leave several classes possible - those whose low end is at most the minimum's high end - the
    crack lies between the smallest low and the largest high of theirs.  ``cracked`` and ``violations``
    count the rows whose crack (anonymity) is proven positive (below ``k``) for their lower end, and those
    where it may be for their upper end.  ``values`` are linked values when ``linking`` has columns: groups
    are per linked value, shown with their sensitive value and label.  ``groups``: the requests'
    :func:`~attacks.correspondence.assemble.request_groups` when computed ahead."""
    from attacks.intervals import settle

    from .assemble import RequestFigures, TargetRows, class_ids, family_cells

    if linking:
        sens_of = linking.sensitive_of(values)
        shown_values = np.array([linking.label(v) for v in values], dtype=object)
    else:
        sens_of = shown_values = values
    releases = view.releases
    n = len(releases)
    k = attack.config.get("k")
    fig = RequestFigures(nodes, requests, answers, len(values), groups)
    # every (target, candidate request) in the targets' order, and each one's attack families
    e_tgt, e_rel, e_req = where.tgt, where.rel, where.req
    e_pos = np.arange(len(e_rel), dtype=np.int64)
    arrays = target_arrays(targets)
    t_of, weight, base = arrays["t"], arrays["weight"], arrays["given"] == 0
    e_t = t_of[e_tgt]
    fam_of = {"F": (e_rel == e_t) & (e_t < n), "C": e_rel > e_t, "B": (e_rel == e_t) & (e_t >= 2)}
    cells = {}
    for fam in FAMILIES:
        sel = np.flatnonzero(fam_of[fam])
        c = family_cells(fig, e_tgt[sel], e_req[sel], e_rel[sel], e_pos[sel], len(targets))
        c["entries"] = sel
        c["open"] = c["has"] & ((c["c_lo"] != c["c_hi"]) | (c["a_lo"] != c["a_hi"]))
        c["id"] = np.zeros(len(targets), np.int64)
        has = np.flatnonzero(c["has"])
        c["id"][has] = class_ids(releases, fig.j[c["req"][has]], fig.cls[c["req"][has]])
        cells[fam] = c
    open_rows = any(bool(c["open"].any()) for c in cells.values())
    # the summary: minima, cracked and violations over the population's targets
    best: dict[str, tuple] = {}
    anon_of: dict[str, tuple] = {}
    ranked: dict[str, list] = {fam: [] for fam in FAMILIES}
    violations = [0, 0]
    any_lo = np.zeros(len(targets), bool)
    any_hi = np.zeros(len(targets), bool)
    for fam in FAMILIES:
        c = cells[fam]
        any_lo |= c["has"] & (c["c_lo"] > 0)
        any_hi |= c["has"] & (c["c_hi"] > 0)
        mine = np.flatnonzero(c["has"] & base)
        if not len(mine):
            continue
        a_lo, a_hi = c["a_lo"][mine], c["a_hi"][mine]
        if k is not None:
            violations[0] += int(weight[mine][a_hi < k].sum())
            violations[1] += int(weight[mine][a_lo < k].sum())
        ti = int(mine[np.lexsort((mine, a_lo, a_hi))[0]])
        best[fam] = ((int(c["a_hi"][ti]), int(c["a_lo"][ti])), ti, int(c["req"][ti]))
        ranked[fam] = list(zip(a_hi.tolist(), a_lo.tolist(), mine.tolist()))
        anon_of[fam] = (int(a_lo.min()), int(a_hi.min()))
    cracked = [int(weight[base & any_lo].sum()), int(weight[base & any_hi].sum())]
    # the rows, each built when read (TargetRows); the given targets' per-value figures now
    summary: dict[str, float] = {}
    intervals: dict[str, tuple] = {}
    rows = TargetRows(releases[0], targets, arrays, cells, fig, FAMILIES)
    given = arrays["given"]
    for ti in np.flatnonzero(given).tolist():
        for fam in FAMILIES:
            c = cells[fam]
            if not c["has"][ti]:
                continue
            r = int(c["req"][ti])
            name = f"{fam}_{int(given[ti])}"
            summary[name] = int(c["c_lo"][ti])
            intervals[name] = (int(c["c_lo"][ti]), int(c["c_hi"][ti]))
            _given_values(summary, intervals, name, fig, c, e_tgt, e_req, ti, r, values, sens_of)
    head: dict[str, float] = {}
    for fam, metric in (("F", "FA"), ("C", "CA"), ("B", "BA")):
        if fam in best:
            head[metric] = anon_of[fam][1]
            intervals[metric] = anon_of[fam]
        else:
            notes.append(f"no target for the {fam}-attack: {metric} is not reported")
    head["targets"] = int(weight[base].sum())
    head["cracked"] = cracked[0]
    intervals["cracked"] = tuple(cracked)
    if k is not None:
        head["violations"] = violations[0]
        intervals["violations"] = tuple(violations)
    head.update(summary)
    worst: dict[str, Any] = {}
    generate: list[tuple] = []  # (metric, request, point) of the witnesses whose generator is asked for
    for fam in FAMILIES:
        if fam not in best:
            continue
        _, ti, r = best[fam]
        tg = targets[ti]
        req = requests[r]
        groups = fig.groups(r, values)
        point = {a.name: a.hierarchy.leaves[int(c)] for a, c in zip(releases[0].qi_attributes, tg.point)}
        w = {"attack": fam, "target": rows[ti]["qid"], "point": point, "timestamp": tg.t, "release": req.j,
             "class": class_id(releases[req.j - 1], req.cls), **{x: rows[ti][fam][x] for x in
                                                                   ("size", "crack", "anonymity")},
             "groups": [{"sensitive": str(sens_of[v]), "size": s, "crack": c} for v, s, c, _ in groups]}
        if linking:
            w["linked_by"] = list(linking.columns)
            for g, (v, *_) in zip(w["groups"], groups):
                g["linked"] = str(shown_values[v])
        if attack.config["witness"] and engine is not None:
            generate.append((_METRIC_OF[fam], req, tg.point))
        worst[_METRIC_OF[fam]] = w
    if generate:  # every family's generator at once where the engine can (one map of the executor)
        wanted = [(req, point) for _, req, point in generate]
        made = engine.witnesses(wanted, releases, shown_values) if hasattr(engine, "witnesses") else \
            [engine.witness(req, releases, shown_values, point) for req, point in wanted]
        for (metric, _, _), generator in zip(generate, made):
            worst[metric]["generator"] = generator
    stats: dict[str, Any] = {}
    if engine is not None:
        notes.append(f"exact engine: {engine.exact_engine}")
        stats = dict(getattr(engine, "report", lambda: {})())
        reason, detail = engine.stop_reason() if hasattr(engine, "stop_reason") else ("budget", "")
    else:
        reason, detail = "budget", "closed forms of section 7.1 bound cracks beyond two releases"
    bounds, proven = settle(head, intervals, reason, detail)
    shown = shown_rows(targets, ranked, attack.config["rows"], FAMILIES)
    if len(shown) < len(rows):
        notes.append(f"targets: the report lists the {len(shown)} rows of the worst targets of {len(rows)} "
                     f"(parameter rows; multirelease run/certify --targets-file writes them all)")
    return CorrespondenceResult(attack=attack.name, summary=head, exact=bool(exact) and not bounds and not open_rows,
                                worst=worst, targets=rows, bounds=bounds, notes=tuple(notes), proven=proven,
                                reason=reason, stats=stats, shown=None if len(shown) == len(rows) else tuple(shown))


def _given_values(summary: dict, intervals: dict, name: str, fig, cells: dict, e_tgt, e_req, ti: int, r: int,
                  values, sens_of) -> None:
    """A given target's per-value names ``<name>_<value>``: the crack of the groups of one sensitive value
    added up (one group per linked value), over the classes that may attain the minimum (only the chosen
    one when every such class is settled)."""
    sel = cells["entries"]
    at = np.flatnonzero(e_tgt[sel] == ti)
    possible = e_req[sel[at]][cells["possible"][at]].tolist()
    if all(fig.anon_lo[x] == fig.anon_hi[x] for x in possible):
        possible = [r]
    per_value: dict[str, tuple] = {}
    for r2 in possible:
        in_class: dict[str, list] = {}
        for v, _, c, c_hi_v in fig.groups(r2, values):
            acc = in_class.setdefault(f"{name}_{_safe(sens_of[v])}", [0, 0])
            acc[0] += c
            acc[1] += c_hi_v
        for gname, (c, c_hi_v) in in_class.items():
            old = per_value.get(gname, (c, c_hi_v))
            per_value[gname] = (min(old[0], c), max(old[1], c_hi_v))
    for gname, (lo, hi) in per_value.items():
        summary[gname] = lo
        intervals[gname] = (lo, hi)


def _closed_answers(releases, nodes, requests, values, notes):
    """Answers from the closed forms (cut generalization only)."""
    from solver.correspondence.crack import CrackAnswer

    from .closed import b_background, sequence_crack
    from solver.correspondence.regions import regions_comparable

    if not all(is_cut(r) for r in releases):
        raise InputError("method closed_form needs releases generalized by cuts of the taxonomies (section 3 of "
                         "Fung et al.); use method: exact")
    n = len(releases)
    nv = len(values)
    counts = []
    for nd in nodes:
        c = np.zeros((int(nd.class_sizes.shape[0]), nv), dtype=np.int64)
        np.add.at(c, (nd.cls, nd.value), nd.count)
        counts.append(c)
    # class regions: one region per class under a cut
    reg_of_class = []
    for nd in nodes:
        m = np.zeros(len(nd.class_sizes), np.int64)
        m[nd.cls] = nd.region
        reg_of_class.append(m)
    comp = {}
    for i in range(n):
        for j in range(i + 1, n):
            a, b = nodes[i], nodes[j]
            rc = regions_comparable(a.region_lo, a.region_hi, a.region_masks, b.region_lo, b.region_hi,
                                    b.region_masks)
            comp[(i, j)] = rc[np.ix_(reg_of_class[i], reg_of_class[j])]
    bcache: dict = {}
    out = []
    for req in requests:
        classes = []
        for l in range(n):
            cl = [c for c in range(len(reg_of_class[l])) if reg_of_class[l][c] in req.signature[l]]
            classes.append(cl[0] if cl else -1)
        groups = [counts[l][classes[l]] if classes[l] >= 0 else np.zeros(nv, np.int64) for l in range(n)]
        bcs = []
        for i in range(req.t - 1):
            key = (i, req.t - 1)
            if key not in bcache:
                bcache[key] = b_background(comp[key], counts[i], counts[req.t - 1])
            bcs.append(bcache[key][classes[req.t - 1]])
        crack = sequence_crack(req.t, req.j, groups, bcs)
        g = groups[req.j - 1]
        cand = {int(v): int(g[v] - crack[v]) for v in np.flatnonzero(g)}
        if n == 2:
            out.append(CrackAnswer(low=cand, high=dict(cand), exact=True))
        else:  # section 7.1 inferences are sound: the true maximum is at most the closed form's
            out.append(CrackAnswer(low={v: 0 for v in cand}, high=cand, exact=False))
    if n > 2:
        notes.append("closed forms of section 7.1 (optimal micro attacks and compositions) give lower bounds on "
                     "crack sizes beyond two releases: anonymity is reported as an upper bound")
    return out, n == 2
