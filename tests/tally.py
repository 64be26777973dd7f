"""One harness for the properties that must also show their inputs mattered (issue 22's linking columns).

:func:`tally` runs ``check`` on every example hypothesis draws from ``strategy`` (the check asserts the
property) and counts the examples where it returned true - for the linking tests, where the linking columns
changed the answer, so that a brute force that ignored them would have disagreed.  The caller asserts the count.
"""
from __future__ import annotations

from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

__all__ = ["tally"]


def tally(strategy: st.SearchStrategy, check: Callable[[Any], Any], max_examples: int) -> dict[str, int]:
    """``{"examples": n, "mattered": m}``: ``check(example)`` on ``max_examples`` draws of ``strategy``, ``m``
    of which returned true."""
    out = {"examples": 0, "mattered": 0}

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def prop(example):
        out["examples"] += 1
        out["mattered"] += bool(check(example))

    prop()
    return out
