"""Questions and answers shared by the exact correspondence engines (:mod:`solver.correspondence.flows` for two
releases, :mod:`solver.correspondence.generators` for more).

One unified question covers the F-, C- and B-attack of Fung et al. and their extensions to ``n`` releases
(section 7.1): a :class:`CrackRequest` names a target (its *signature*: the published regions containing
its QID point ``p``; and its timestamp ``T_t``) and an equivalence class of a cracking release ``R_j``
(``j >= t``).  A record of that class *represents* the target in a generator when its instantiation
matches ``p`` and its timestamp is ``T_t`` (its chain of buddies starts in ``R_t``).  The answer is, per
sensitive value (group), the maximum over all generators of the number of the class's records that
represent the target; the crack size of the group is its size minus that maximum - Definitions 3.1
(``t = j = 1``, F), 3.3 (``t = 1 < j``, C) and 3.5 (``t = j = 2``, B), read for any number of releases.

For classes whose rows all contain ``p`` (every class of a release without a ``group`` column, since its
rows are identical) this is exactly the paper's crack size; rows of a class that cannot contain ``p``
(possible only with published ``group`` ids over differing rows) count as cracked.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CrackRequest", "CrackAnswer"]


@dataclass(frozen=True)
class CrackRequest:
    """``t``: target timestamp, ``j``: cracking release (both 1-based, ``t <= j``), ``cls``: class of
    ``R_j``, ``signature``: per release, the frozenset of region indices containing the target point."""

    t: int
    j: int
    cls: int
    signature: tuple


@dataclass(frozen=True)
class CrackAnswer:
    """Per sensitive value code: ``low`` <= max number of representing records <= ``high``; ``exact`` when
    ``low == high`` everywhere and each value came from a proof (flow optimum or CP-SAT OPTIMAL)."""

    low: dict = field(default_factory=dict)
    high: dict = field(default_factory=dict)
    exact: bool = True

    @property
    def total_low(self) -> int:
        return int(sum(self.low.values()))

    @property
    def total_high(self) -> int:
        return int(sum(self.high.values()))
