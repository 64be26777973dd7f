"""The one signature every attack shares, and its immutable result.

An attack is built from its validated parameters, says whether it :meth:`~Attack.applies` to a sequence
view, and :meth:`~Attack.run` returns an :class:`AttackResult`: the headline numbers under the papers' names
(``summary``), whether they are exact, the witness of the worst case, and per-target rows.  Attacks see a
:class:`multirelease.sequence.SequenceView` only - never the truth behind a release.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Protocol, runtime_checkable

from multirelease.params import validate_params
from multirelease.sequence import SequenceView

__all__ = ["Attack", "AttackBase", "AttackResult", "Progress"]

#: progress callback: ``progress(done, total, description)``
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class AttackResult:
    """What an attack found.

    ``summary`` maps metric names (``FA``, ``max_breach``, ``k``...) to numbers.  When ``exact`` is false,
    ``bounds`` gives, for each metric that is not known exactly, the interval ``(low, high)`` it is known to
    lie in (an estimate is labelled as one, with its interval); certification decides only on what the
    interval settles.
    """

    attack: str
    summary: Mapping[str, float]
    exact: bool = True
    worst: Mapping[str, Any] = field(default_factory=dict)
    targets: tuple = ()
    bounds: Mapping[str, tuple] = field(default_factory=dict)
    notes: tuple = ()

    def interval(self, metric: str) -> tuple[float, float]:
        """The interval the metric is known to lie in (a point when exact)."""
        if metric in self.bounds:
            lo, hi = self.bounds[metric]
            return float(lo), float(hi)
        v = float(self.summary[metric])
        return v, v

    def witness(self, metric: str) -> Any:
        """The witness of one metric: ``worst[metric]`` when the attack keys its witnesses by metric (or by
        the metric's stem, ``l`` for ``l_distinct``), else the whole ``worst``."""
        worst = dict(self.worst)
        for key in (metric, metric.split("_")[0]):
            if key in worst and isinstance(worst[key], Mapping):
                return worst[key]
        return worst

    def to_json(self) -> dict:
        out = {"summary": {k: _num(v) for k, v in self.summary.items()}, "exact": bool(self.exact),
               "worst": dict(self.worst), "targets": list(self.targets)}
        if self.bounds:
            out["bounds"] = {k: [_num(a), _num(b)] for k, (a, b) in self.bounds.items()}
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

    def __init__(self, *, _file: str | None = None, _key: str | None = None, **params: Any):
        self.config = validate_params(self.name, self.params, params, required=self.required,
                                      defaults=self.defaults, file=_file, key=_key)

    def applies(self, view: SequenceView) -> bool:
        return len(view.releases) > 0

    def default_requirements(self) -> list[str]:
        """Requirements ``certify`` judges when none are given (``'<attack>.<metric> <op> <number>'``)."""
        return []

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.config.items()))
        return f"{type(self).__name__}({args})"
