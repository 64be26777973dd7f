"""Helpers for attacks whose solvers may stop early (DESIGN.md, "Verdicts over intervals").

An attack collects, for every summary metric it could not settle, a proven ``(lower, upper)`` interval;
:func:`settle` turns intervals that closed to a point into proven values and labels the rest with the reason
the solver stopped (:class:`attacks.base.Bound`), so that :class:`~attacks.base.AttackResult` gets ``summary``,
``bounds`` and ``proven`` that agree with each other.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .base import Bound

__all__ = ["min_of_intervals", "settle"]


def min_of_intervals(intervals: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """The minimum of unknowns ``x_i`` with ``lo_i <= x_i <= hi_i`` lies in ``[min lo_i, min hi_i]`` (both
    ends attained: every ``x_i`` at its low end, or at its high end)."""
    los, his = zip(*intervals)
    return min(los), min(his)


def settle(summary: dict, intervals: Mapping[str, tuple], reason: str, detail: str = "", *,
           reasons: Mapping[str, tuple[str, str]] | None = None) -> tuple[dict, tuple]:
    """Split proven intervals into values and bounds.

    ``intervals[metric] = (lower, upper)`` (``None`` for an open side).  A metric whose interval is one
    point gets that point in ``summary`` and is proven; any other keeps ``summary``'s entry as its estimate
    and gets a :class:`Bound` with ``reason`` and ``detail`` (or ``reasons[metric] = (reason, detail)``).
    Every other summary metric is listed as proven: the caller passes an interval for each metric a stopped
    solver could have left open.  Returns ``(bounds, proven)``.
    """
    bounds: dict[str, Bound] = {}
    for metric, (lo, hi) in intervals.items():
        if lo is not None and hi is not None and lo > hi:
            raise AssertionError(f"{metric}: empty interval [{lo}, {hi}]")
        if lo is not None and lo == hi:
            summary[metric] = lo
            continue
        why, how = (reasons or {}).get(metric, (reason, detail))
        bounds[metric] = Bound(lo, hi, why, how)
    proven = tuple(m for m in summary if m not in bounds)
    return bounds, proven
