"""Repair on FAIL (issue 29): when the gate refuses a month, the cheapest changed release of it that passes.

``release SPEC SNAPSHOT --ledger DIR --out FILE --repair`` runs the month's gate as usual; when it FAILs (or is
UNKNOWN) it searches changed candidate releases of the month, judged by *the same gate* (every attack of the
spec over every release the ledger holds plus the candidate, the publisher's guarantee and the spec's
requirements), cheapest first, and proposes the first that PASSes.  Nothing is written: ``--repair --accept``
makes the same search (deterministic: the publisher is seeded from the ledger's secret, the candidates come in a
fixed order) and writes the proposal through the ordinary release path, recorded with a ``repair`` event.

**The search space** (the issue's item 2):

* *classes merged* (:mod:`multirelease.ledger.coarsen`, for a publisher whose classes may be merged after it
  made them, :attr:`publishers.base.PublisherBase.merges_classes`: Mondrian and ``naive``): each class holding a
  person the failing witnesses name is merged with one other class of the release as the publisher made it, or
  has those persons withheld; CP-SAT chooses the merges and withholdings at the least added loss (exact over
  disjoint pairs among each class's cheapest partners); a merged release whose gate names new persons has
  their classes merged in the next round;
* *records withheld from this month*: the persons the failing requirements' witnesses name (every record the
  update-graph attack pins to one value, ``all_targets``; every individual a possible world discloses,
  ``all_individuals``; else the witness's one ``target`` / ``individual``), taken out of this month's table
  and the rest published anew; the gate then runs again and the persons its new witnesses name are added -
  greedy, so the number withheld is an upper bound of the least that would do.  A requirement on the month's
  loss (``release[n].LM <= x``) withholds the records that cost the most
  (:func:`multirelease.model.metrics.row_loss`): two aims published side by side (half the gap below ``x`` and
  :data:`WIDE` times it), then a secant on the count withheld (:func:`_aimed`).  For m-invariance and the other
  publishers that follow a record over its lifespan, a withheld record is a departure this month and an arrival
  when it comes back: the publisher's own check and the next month's gate judge its return like any other (a
  return that its check refuses is refused then, exit 2, as any month).  They stay in the population: next
  month's snapshot holds them again and they are published then, when the gate allows (the ledger records the
  table that was published, so they come back as insertions);
* *the publisher's own parameters made stricter* (:attr:`publishers.base.PublisherBase.repair`: Mondrian's
  ``k`` times 1.5, 2, 3, 5 and ``l`` plus 1, 2) - the naive fix; a parameter's next rung is costed only once
  the one before it failed the gate (a stricter parameter is taken to cost no less: not proven for Mondrian's
  greedy cuts, so the proposal is the cheapest of the candidates generated, not of every rung).

Each candidate is first *published only* (no attack: a fraction of the gate's time; the first candidates side by
side in forked processes, one per core) and costed; a candidate whose own release misses a line that needs no
attack (``release[n].LM <= x``) is refused without a gate; the rest are gated in order of cost - the release
published for the costing is the one gated, not published again - so the first that passes is the cheapest of
those generated.  The cost is the loss metric LM of the month (Iyengar's, averaged over the records of the
snapshot; a withheld record counts as suppressed, loss 1), ties broken by fewer records withheld.  Each
candidate continues its own copy of the state the ledger holds for the last release (m-invariance's signatures
and rows).  BPG (whose state is its own database) and bcf (which reads the releases as published) are not
repaired yet: ``--repair`` refuses them (exit 2) and says so.

m-Distinct and m-invariance are not offered *extra counterfeits* (the issue names them): a counterfeit added to
a group of records that persist changes the group's signature, which invariance forbids (Xiao & Tao [4] of Li &
Zhou; Li & Zhou, Definitions 13 and 15: the update set signature of a group must stay legal), and a counterfeit
in a group of new records fixes that signature for every later release (it is the group's signature from then
on).  Neither failure the repairs above meet (a value pinned by the update graph, a loss line) is answered by
one: the counterfeits the publisher already adds are the least its principle needs.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from multirelease.errors import InputError
from multirelease.model.table import Table

__all__ = ["Candidate", "Repair", "search", "ladder", "offenders", "withhold", "serially", "repair_report",
           "MAX_GATES"]

#: the most candidate gates one search runs (each costs a month's gate)
MAX_GATES = 12
#: rounds of withholding (each adds the persons the last gate's witnesses name)
MAX_ROUNDS = 8
#: the wider aim at a loss line ``release[n].LM <= x``, published beside the first (half the gap below ``x``):
#: this many times the gap below it
WIDE = 1.5
_WHO = ("target", "individual", "person")


@dataclass
class Candidate:
    """One changed release of the month: the publisher's parameters (``params``, those changed) and the
    persons withheld; ``cost`` (LM over the snapshot, withheld records at loss 1) once published."""

    params: dict
    withheld: tuple = ()
    cost: float = math.inf
    metrics: dict = field(default_factory=dict)
    run: Any = None
    resume_marks: Any = None
    #: classes merged with another (:mod:`multirelease.ledger.coarsen`); 0: the publisher's own classes
    merged: int = 0
    #: the candidate's release, published (or merged) and not attacked: what its gate attacks
    published: Any = None
    #: why it was not gated (a line that needs no attack already fails on its own release), else ""
    refused: str = ""
    #: the rounds of witnesses behind it (each round adds the persons the last gate's witnesses name)
    rounds: int = 1

    @property
    def verdict(self) -> str | None:
        """The gate's verdict, ``"fail"`` for a candidate refused before its gate, ``None`` if never gated."""
        return self.run.verdict if self.run is not None else ("fail" if self.refused else None)

    def words(self, base: Mapping) -> list[str]:
        """What changed, one phrase each (``publisher.k: 10 -> 15``, ``3 classes merged``, ``2 records
        withheld``)."""
        out = [f"publisher.{k}: {base.get(k)} -> {v}" for k, v in self.params.items()]
        if self.merged:
            out.append(f"{self.merged:,} class merge{'s' if self.merged != 1 else ''}")
        if self.withheld:
            out.append(f"{len(self.withheld):,} record{'s' if len(self.withheld) != 1 else ''} withheld")
        return out or ["nothing"]


@dataclass
class Repair:
    """The search's answer: the proposal (``None`` when no candidate passed), the candidates tried, the gates
    run, the seconds, and the failing lines the proposal answers (with their witnesses' persons)."""

    proposal: Candidate | None
    tried: list
    gates: int
    seconds: float
    answered: list
    params: dict = field(default_factory=dict)


def ladder(publisher_cls, params: Mapping) -> list[dict]:
    """The publisher's parameters made stricter, one at a time, mildest first (the naive fix's candidates)."""
    out = []
    defaults = getattr(publisher_cls, "defaults", {})
    for name, kind in getattr(publisher_cls, "repair", {}).items():
        now = params.get(name, defaults.get(name))
        if now is None:
            continue
        if kind == "times":
            steps = sorted({max(int(now) + 1, math.ceil(now * f)) for f in (1.5, 2, 3, 5)})
        else:  # "plus"
            steps = [now + d for d in (1, 2)]
        out += [{name: type(now)(v) if not isinstance(now, bool) else v} for v in steps]
    return out


def offenders(run, reach: float = 0.5) -> tuple[list[str], list[str]]:
    """The persons the failing requirements' witnesses name (``target`` / ``individual`` of a witness), and
    the failing lines.  A line whose witness names no person (a class too small) gives none; a line on the new
    release's loss names its costliest records (:func:`_costly`, aimed ``reach`` times the gap below it)."""
    persons: list[str] = []
    lines: list[str] = []
    for j in run.judged:
        if j.holds is True or j.kind == "waived":
            continue
        lines.append(j.expectation.text)
        e = j.expectation
        newest = run.scenario.steps[-1].index
        if e.subject == "release" and e.metric == "LM" and e.op in ("<=", "<") and \
                e.release_index(newest) == newest:  # the new release's loss (release[n] or release[-1])
            persons += [p for p in _costly(run, e.number, reach) if p not in persons]
            continue
        res = run.results.get(j.expectation.subject)
        if res is None:
            continue
        witness = res.witness(j.expectation.metric)
        if not isinstance(witness, Mapping):
            continue
        every = witness.get("all_targets") or witness.get("all_individuals")  # every person it names
        if isinstance(every, list):
            persons += [str(w) for w in every if str(w) not in persons]
            continue
        for key in _WHO:
            who = witness.get(key)
            if isinstance(who, (str, int)) and str(who) not in persons:
                persons.append(str(who))
                break
    return persons, lines


def _costly(run, threshold: float, reach: float = 0.5) -> list[str]:
    """A requirement ``release[n].LM <= x`` the new release misses: the persons of its costliest rows
    (:func:`multirelease.model.metrics.row_loss`), as many as bring the release's LM ``reach`` times the gap
    below ``x`` if the rest were published as they are (the publisher groups the rest anew: the gate decides, and
    the next round adds more)."""
    release, truth = run.sequence.releases[-1], run.sequence.truths[-1]
    if truth is None:
        return []
    loss, order = _costliest(release, truth)
    q = release.lo.shape[1]
    # aimed below the line (half the gap by default): the publisher regroups the rest, which costs part of what
    # was gained (measured on Adult, m-invariance: aiming at the line took three gates, half the gap below it one)
    if len(release) and q:
        now = float(loss.sum()) / (len(release) * q)
        threshold -= max(now - threshold, 0.0) * reach
    total, n, out = float(loss.sum()), len(release), []
    for i in order:
        if n == 0 or total / (n * q) <= threshold:
            break
        total -= float(loss[i])
        n -= 1
        out.append(str(truth.person[i]))
    return out


def _aimed(published, failing, *, before: tuple, now: tuple) -> list[str] | None:
    """When the only lines a withholding candidate misses are on its own loss (``release[n].LM <= x``): the
    persons of its costliest rows, as many as the secant through ``before`` and ``now`` (records withheld, LM)
    says bring LM to ``x``, with a tenth more for the regrouping that a secant does not see (measured on Adult,
    m-invariance: the publisher regroups what remains, and each record withheld gains less than the last).
    ``None`` for any other line (the witnesses name the persons then) or a secant that is not falling."""
    lines = [j.expectation for j in failing]
    if not lines or any(e.metric != "LM" or e.op not in ("<=", "<") for e in lines):
        return None
    (w0, lm0), (w1, lm1) = before, now
    if lm0 is None or lm1 is None or w1 <= w0 or lm1 >= lm0:
        return None
    x = min(e.number for e in lines)
    need = math.ceil((lm1 - x) / ((lm0 - lm1) / (w1 - w0)) * 1.1) + 1
    release, truth = published.sequence.releases[-1], published.sequence.truths[-1]
    _, order = _costliest(release, truth)
    return [str(truth.person[i]) for i in order[:need]]


def _costliest(release, truth) -> tuple:
    """``(loss, order)``: each row's loss (:func:`multirelease.model.metrics.row_loss`) and the rows of real
    records (not counterfeits), costliest first (ties in row order)."""
    import numpy as np

    from multirelease.model.metrics import row_loss

    loss = row_loss(release)
    real = np.asarray([p is not None and not c for p, c in zip(truth.person, truth.counterfeit)], dtype=bool)
    return loss, [i for i in np.argsort(-loss, kind="stable") if real[i]]


def serially(publish: Callable) -> Callable[[list], list]:
    """``publish`` of each item in turn; a refusal (:class:`InputError`) in place of its run."""
    def many(items):
        out = []
        for item in items:
            try:
                out.append(publish(*item))
            except InputError as exc:
                out.append(exc)
        return out
    return many


def withhold(table: Table, persons: Sequence[str]) -> Table:
    """``table`` without the records of ``persons`` (the table itself when there are none)."""
    if not persons:
        return table
    frame = table.frame
    keep = ~frame.index.astype(str).isin(list(persons))
    return Table(table.schema, frame[keep])


def search(*, base_run, table: Table, publisher_cls, params: Mapping,
           publish: Callable[[dict, Table], Any], gate: Callable[[dict, Table, Any], tuple[Any, Any]],
           precheck: Callable[[Any], list] | None = None, coarsen: Callable[[Any, Sequence[str]], Any] | None = None,
           publish_many: Callable[[list], list] | None = None,
           progress: Callable[[str, int, int], None] | None = None, eligible: set | None = None) -> Repair:
    """The cheapest candidate that passes the gate (module docstring).  ``publish(params, table)`` publishes the
    month's ``table`` under ``params`` (the spec's, changed) and returns it unattacked, a run whose
    ``release_metrics[-1]`` costs it; ``gate(params, table, published)`` gates that very release (not published
    again) and returns ``(run, marks)``: the gate's run and what the gate's resume must be set back to when it is
    recorded.  ``precheck(published)``: the failing lines that need no attack (the spec's ``release[n]``
    metrics), judged before a gate is spent.  ``coarsen(run, persons)``: the release of ``run`` with the classes
    of ``persons`` merged (:mod:`multirelease.ledger.coarsen`), or ``None``; given only for a publisher whose
    classes may be merged after it published them.  ``publish_many([(params, table), ...])``: ``publish`` of each,
    side by side where the machine allows (the first candidates).  ``eligible``: the persons that may be withheld
    (default: everyone in the table)."""
    t0 = time.perf_counter()
    notify = progress or (lambda *_: None)
    rows = len(table)
    persons, answered = offenders(base_run)
    in_table = set(table.frame.index.astype(str)) if eligible is None else set(eligible)

    def costed(c: Candidate, aim: tuple | None = None, follow: bool = True) -> Candidate:
        """``c`` published (or merged) and costed; a candidate whose own release misses a line that needs no
        attack is refused before any gate (withholding: more records are withheld first, publish only, unless
        not ``follow``).  ``aim``: the point (records withheld, LM) the next round's secant starts from."""
        aim = aim or (0, base_run.release_metrics[-1].get("LM"))  # the month as given
        while True:
            if c.published is None:
                c.published = serially(publish)([({**params, **c.params}, withhold(table, c.withheld))])[0]
            if isinstance(c.published, InputError):  # the publisher refuses these parameters on this table
                c.published = None
                c.cost, c.refused = math.inf, "the publisher refuses it"
                return c
            c.metrics = c.published.release_metrics[-1]
            kept = rows - len(c.withheld)
            c.cost = (float(c.metrics.get("LM", 1.0)) * kept + len(c.withheld)) / rows if rows else math.inf
            failing = precheck(c.published) if precheck is not None else []
            if not failing:
                return c
            c.refused = "misses " + "; ".join(j.expectation.text for j in failing)
            if c.params or c.merged or not follow:
                return c
            c.published.judged = failing
            aimed = _aimed(c.published, failing, before=aim, now=(len(c.withheld), c.metrics.get("LM")))
            aim = (len(c.withheld), c.metrics.get("LM"))
            more = tuple(p for p in (aimed if aimed is not None else offenders(c.published)[0])
                         if p in in_table and p not in c.withheld)
            if not more or c.rounds >= MAX_ROUNDS:
                return c
            tried.append(c)  # shown in the search, never gated
            c = Candidate({}, c.withheld + more, rounds=c.rounds + 1)

    def merged(base, named: Sequence[str], before: Candidate | None) -> Candidate | None:
        if coarsen is None or not named:
            return None
        out = coarsen(base, named)
        if out is None:
            return None
        published, removed, pairs = out
        was = before.withheld if before is not None else ()
        c = Candidate({}, was + tuple(p for p in removed if p not in was), published=published,
                      merged=(before.merged if before is not None else 0) + pairs,
                      rounds=before.rounds + 1 if before is not None else 1)
        return costed(c)

    tried: list[Candidate] = []
    queue: list[Candidate] = []
    # each parameter's rungs in order, the next one costed only once the one before failed the gate (a stricter
    # parameter is not expected to cost less: the milder rung is the cheaper candidate of its parameter)
    rungs: dict[str, list[dict]] = {}
    for p in ladder(publisher_cls, params):
        rungs.setdefault(next(iter(p)), []).append(p)
    first = tuple(p for p in persons if p in in_table)
    wide = tuple(p for p in offenders(base_run, reach=WIDE)[0] if p in in_table)
    # the first candidates are published side by side (publish_many): the witnesses' persons withheld, a wider
    # aim at a loss line (taken only if the narrower misses it), and each parameter's mildest rung
    batch = ([Candidate({}, first)] if first else []) + ([Candidate({}, wide)] if len(wide) > len(first) else []) \
        + [Candidate(dict(r.pop(0))) for r in rungs.values() if r]
    for c, published in zip(batch, (publish_many or serially(publish))(
            [({**params, **c.params}, withhold(table, c.withheld)) for c in batch])):
        c.published = published
    narrow = batch[0] if len(batch) > 1 and batch[1].withheld and not batch[1].params else None
    for c in batch:
        if c is narrow:  # the wider aim continues from it: its point starts the secant
            queue.append(costed(c, follow=False))
        else:
            queue.append(costed(c, aim=(len(narrow.withheld), narrow.metrics.get("LM"))
                                if narrow is not None and c is batch[1] else None))
    if first:
        queue += [c for c in [merged(base_run, first, None)] if c is not None]
    gates = 0
    while queue and gates < MAX_GATES:
        queue.sort(key=lambda c: (not c.refused, c.cost, len(c.withheld), c.merged, sorted(c.params.items())),
                   reverse=False)
        c = queue.pop(0)
        if c.refused:  # refused before its gate: shown, and its parameter's next rung costed
            tried.append(c)
            if c.params and rungs.get(next(iter(c.params))):
                queue.append(costed(Candidate(dict(rungs[next(iter(c.params))].pop(0)))))
            continue
        if not math.isfinite(c.cost):
            break
        notify(f"repair: candidate {gates + 1} ({', '.join(c.words(params))})", gates, MAX_GATES)
        c.run, c.resume_marks = gate({**params, **c.params}, withhold(table, c.withheld), c.published)
        gates += 1
        tried.append(c)
        if c.run.verdict == "pass":
            return Repair(c, tried, gates, time.perf_counter() - t0, answered, dict(params))
        if c.params and rungs.get(next(iter(c.params))):
            queue.append(costed(Candidate(dict(rungs[next(iter(c.params))].pop(0)))))
        if not c.params and c.rounds < MAX_ROUNDS:
            more = tuple(p for p in offenders(c.run)[0] if p in in_table and p not in c.withheld)
            if more and c.merged:  # the merged release's new witnesses: their classes merged too
                queue += [m for m in [merged(c.run, more, c)] if m is not None]
            elif more:
                queue.append(costed(Candidate({}, c.withheld + more, rounds=c.rounds + 1)))
    return Repair(None, tried, gates, time.perf_counter() - t0, answered, dict(params))


def repair_report(outcome) -> dict:
    """The report's ``repair`` key (``release --repair --json``, and the ``Result`` of
    :func:`multirelease.ledger_publish` with ``repair``): the candidates gated, the proposal, its cost and SHA-256,
    the month as given (its failing lines, its LM); the rest of the report is the proposal's gate.  ``outcome``:
    :class:`multirelease.ledger.operations.Outcome` with its ``repair``."""
    fixed = outcome.repair

    def one(c) -> dict:
        return {"changes": c.words(fixed.params), "withheld": len(c.withheld), "loss": c.cost,
                "LM": c.metrics.get("LM"), "discernibility": c.metrics.get("discernibility"),
                "verdict": c.verdict, "gated": c.run is not None, "refused": c.refused or None,
                "merged": c.merged}

    given = outcome.failed.release_metrics[-1] if outcome.failed is not None else {}
    return {"as_given": {"failed": fixed.answered, "LM": given.get("LM"),
                         "discernibility": given.get("discernibility")},
            "tried": [one(c) for c in fixed.tried], "gates": fixed.gates, "seconds": fixed.seconds,
            "proposal": None if fixed.proposal is None else {**one(fixed.proposal), **outcome.proposal},
            "accepted": bool(outcome.files)}
