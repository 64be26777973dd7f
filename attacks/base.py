"""The one signature every attack shares, and its immutable result.

An attack is built from its validated parameters, says whether it :meth:`~Attack.applies` to a sequence
view, and :meth:`~Attack.run` returns an :class:`AttackResult`: the headline numbers under the papers' names
(``summary``), whether they are exact, the witness of the worst case, and per-target rows.  Attacks see a
:class:`multirelease.model.sequence.SequenceView` only - never the truth behind a release.

Intervals (DESIGN.md, "Verdicts over intervals"): a metric is either *proven* (a value) or known to lie in a
:class:`Bound` ``[lower, upper]`` (either side may be open) with the reason it is not a value
(``time_limit``, ``budget``, ``sampled``, ``lp_bound``).  When a result is not ``exact``, a summary metric
without a bound is proven only if the attack lists it in ``proven``; any other is judged as wholly unknown
(open on both sides), so an attack that forgets a bound can make a verdict UNKNOWN, never wrong.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, Mapping, NamedTuple, Protocol, runtime_checkable

from multirelease.params import validate_params
from multirelease.model.sequence import SequenceView

__all__ = ["Attack", "AttackBase", "AttackResult", "Bound", "Progress", "REASONS"]

#: progress callback: ``progress(done, total, description)``
Progress = Callable[[int, int, str], None]

#: why a metric is an interval and not a value
REASONS = ("time_limit", "budget", "sampled", "lp_bound", "relaxation")


class Bound(NamedTuple):
    """``lower <= metric <= upper`` (``None``: open on that side), proven; ``reason`` says why it is not a
    value (one of :data:`REASONS`) and ``detail`` how (``"budget 2 s"``)."""

    lower: float | None
    upper: float | None
    reason: str = "budget"
    detail: str = ""

    def to_json(self) -> dict:
        out = {"lower": _num(self.lower), "upper": _num(self.upper), "reason": self.reason}
        if self.detail:
            out["detail"] = self.detail
        return out


def _as_bound(value: Any, reason: str) -> Bound:
    if isinstance(value, Bound):
        return value
    lo, hi = value[0], value[1]
    return Bound(None if lo is None else lo, None if hi is None else hi,
                 value[2] if len(value) > 2 else reason, value[3] if len(value) > 3 else "")


@dataclass(frozen=True)
class AttackResult:
    """What an attack found.

    ``summary`` maps metric names (``FA``, ``max_breach``, ``k``...) to numbers.  When ``exact`` is false,
    ``bounds`` gives, for each metric that is not known exactly, the :class:`Bound` it is known to lie in
    (plain ``(low, high)`` tuples are accepted and get ``reason``); ``proven`` names the summary metrics that
    are exact all the same (counts of targets, ...).  ``summary`` may still hold an estimate of a bounded
    metric: the report shows it labelled as one, and the judge never reads it.  ``stats`` holds the engine's
    own figures (solves, processes, seconds) for benchmarks; attacks keep no state of their own.
    """

    attack: str
    summary: Mapping[str, float]
    exact: bool = True
    worst: Mapping[str, Any] = field(default_factory=dict)
    targets: tuple = ()
    bounds: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple = ()
    proven: tuple = ()
    reason: str = "budget"
    stats: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bounds", {k: _as_bound(v, self.reason) for k, v in dict(self.bounds).items()})

    def is_proven(self, metric: str) -> bool:
        """Is ``summary[metric]`` a proven value (not an estimate, not one side of an interval)?"""
        if metric in self.bounds or metric not in self.summary:
            return False
        return bool(self.exact) or metric in self.proven

    def bound(self, metric: str) -> Bound:
        """The proven interval of a metric: a point when proven, its bound, else open on both sides."""
        if self.is_proven(metric):
            v = float(self.summary[metric])
            return Bound(v, v, "", "")
        if metric in self.bounds:
            return self.bounds[metric]
        return Bound(None, None, self.reason, "not proven")

    def interval(self, metric: str) -> tuple[float, float]:
        """``(low, high)`` with infinities for open sides (what the judge reads)."""
        b = self.bound(metric)
        return (float("-inf") if b.lower is None else float(b.lower),
                float("inf") if b.upper is None else float(b.upper))

    def reported_metrics(self) -> list[str]:
        names = list(self.summary)
        return names + [m for m in self.bounds if m not in self.summary]

    def witness(self, metric: str) -> Any:
        """The witness of one metric: ``worst[metric]`` when the attack keys its witnesses by metric (or by
        the metric's stem, ``l`` for ``l_distinct``), else the whole ``worst``."""
        worst = dict(self.worst)
        for key in (metric, metric.split("_")[0]):
            if key in worst and isinstance(worst[key], Mapping):
                return worst[key]
        return worst

    def shown_targets(self) -> list:
        """The target rows the report lists: all of them (a result with many keeps the rest for
        ``--targets-file``, :class:`attacks.correspondence.targets.CorrespondenceResult`)."""
        return list(self.targets)

    def to_json(self) -> dict:
        """The report's form: ``summary`` holds proven values only, ``bounds`` the rest (with their reason),
        ``estimates`` the labelled point estimates of bounded metrics."""
        proven = {k: _num(v) for k, v in self.summary.items() if self.is_proven(k)}
        out: dict[str, Any] = {"summary": proven, "exact": bool(self.exact), "worst": dict(self.worst),
                               "targets": self.shown_targets()}
        bounds = {m: self.bound(m).to_json() for m in self.reported_metrics() if not self.is_proven(m)}
        if bounds:
            out["bounds"] = bounds
            estimates = {k: _num(v) for k, v in self.summary.items() if k in bounds}
            if estimates:
                out["estimates"] = estimates
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    try:
        import numpy as np

        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return _num(float(v))
    except ImportError:  # pragma: no cover
        pass
    return v


@runtime_checkable
class Attack(Protocol):
    name: ClassVar[str]

    def applies(self, view: SequenceView) -> bool: ...

    def run(self, view: SequenceView, progress: Progress | None = None) -> AttackResult: ...


class AttackBase:
    """Stores validated parameters; subclasses declare ``name``, ``params``, ``defaults``, ``metrics``."""

    name: ClassVar[str] = ""
    params: ClassVar[dict] = {}
    required: ClassVar[tuple] = ()
    defaults: ClassVar[dict] = {}
    #: the summary metrics this attack reports (used to validate ``expect`` lines)
    metrics: ClassVar[tuple] = ()
    #: the metrics the run's requirements read (:meth:`reading`); ``None``: no requirement names this attack,
    #: every metric is computed.  An attack may leave out figures no requirement reads when they cost far more
    #: than the others, and says so in its notes (possible worlds: world counting).
    read: frozenset | None = None
    #: modules its run imports (its engines, their solvers): ``certify`` imports them while its workers read the
    #: input files (:func:`multirelease.pipeline.certify_plan`)
    imports: ClassVar[tuple] = ()

    def __init__(self, *, _file: str | None = None, _key: str | None = None, **params: Any):
        self.config = validate_params(self.name, self.params, params, required=self.required,
                                      defaults=self.defaults, file=_file, key=_key)

    def applies(self, view: SequenceView) -> bool:
        return len(view.releases) > 0

    def prepare(self, view: SequenceView) -> None:
        """Work of :meth:`run` that needs the view but none of the executor's workers, done ahead while they
        compute the releases' metrics (:func:`multirelease.pipeline.build_sequence`, issue 28) and kept in
        ``view.ahead[self.name]``; :meth:`run` does it itself when it finds nothing there.  Nothing by default."""

    #: the attack's *baseline* (issue 30): what "no one is disclosed" means against this adversary, as
    #: ``(metric, op, number)``; judged whenever the attack runs, beside the spec's and the command line's
    #: requirements, raised by its own parameters (:meth:`default_requirements`) and by what the releases
    #: claim (:meth:`baseline_requirements`), waived only by name (``--waive <attack>.<metric>``)
    baseline: ClassVar[tuple] = ()

    def default_requirements(self) -> list[str]:
        """The requirements this attack's own parameters state (``linking: {k: 10}`` -> ``linking.k >= 10``)."""
        return []

    def baseline_requirements(self, claims: Iterable[str] = ()) -> list[str]:
        """The baseline lines of this run of the attack: :attr:`baseline`, its parameters' lines
        (:meth:`default_requirements`) and the ``claims`` that name it (lines the releases' publishers state,
        :func:`multirelease.pipeline.release_claims`), one line per metric and direction, the strictest."""
        from multirelease.expect import parse_expectation

        lines = [f"{self.name}.{m} {op} {x:g}" for m, op, x in self.baseline]
        lines += list(self.default_requirements())
        lines += [c for c in claims if c.split(".", 1)[0] == self.name]
        strictest: dict = {}
        for line in lines:
            e = parse_expectation(line)
            key = (e.metric, e.op)
            old = strictest.get(key)
            if old is None or (e.op in (">=", ">") and e.number > old.number) or \
                    (e.op in ("<=", "<") and e.number < old.number):
                strictest[key] = e
        return [e.text for e in strictest.values()]

    def reading(self, metrics: Iterable[str] | None) -> "AttackBase":
        """This attack for a run whose requirements read ``metrics`` of it (``None``: none names it): a copy,
        the parameters unchanged (the pipeline calls it before every run, :func:`multirelease.pipeline.reads`)."""
        out = copy.copy(self)
        out.read = None if metrics is None else frozenset(metrics)
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.config.items()))
        return f"{type(self).__name__}({args})"
