"""``expect`` lines and certification requirements: ``<attack>.<metric> <op> <number>``.

Examples: ``correspondence.FA == 4``, ``possible_worlds.max_breach <= 1/2``, ``linking.k >= 10``, and for
release metrics ``release[1].LM < 0.4``.  The number may be a fraction ``a/b``.  A release index counts from 1;
a negative one counts from the newest release, as Python's do: ``release[-1].counterfeit_share <= 0.05`` judges
the newest release of whatever sequence is certified (a ledger's month, every month: issue 26).

An expectation is judged on the interval its metric is known to lie in (a point when the attack is exact):
it *holds* when every value of the interval satisfies it, *fails* when none does, and is *unknown*
otherwise - an estimate is never rounded into a verdict.
"""
from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from fractions import Fraction

from .errors import InputError

__all__ = ["Expectation", "parse_expectation", "verdict_of", "OPS", "EXIT_CODES"]

OPS = {"==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt,
       ">": operator.gt}
_LINE = re.compile(
    r"^\s*(?P<subject>[A-Za-z_][\w]*(?:\[(?P<index>-?\d+)\])?)\.(?P<metric>[A-Za-z_][\w]*)\s*"
    r"(?P<op>==|!=|<=|>=|<|>)\s*(?P<number>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:\s*/\s*\d+)?)\s*$")
#: relative tolerance of ``==`` / ``!=`` (floating-point results of exact rational computations)
REL_TOL = 1e-9


@dataclass(frozen=True)
class Expectation:
    text: str
    subject: str  # attack name, or "release"
    index: int | None  # release index (from 1; negative: from the newest, -1) for release metrics
    metric: str
    op: str
    number: float

    def check(self, value: float) -> bool:
        """Does one value satisfy the expectation (``==`` with a relative tolerance of 1e-9)?"""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        if self.op in ("==", "!="):
            same = math.isclose(float(value), self.number, rel_tol=REL_TOL, abs_tol=1e-12)
            return same if self.op == "==" else not same
        return OPS[self.op](float(value), self.number)

    def release_index(self, n: int) -> int | None:
        """The release (from 1) a release metric's line judges in a sequence of ``n`` releases: its index, or
        for a negative one ``n + 1 + index`` (``release[-1]``: the newest); ``None`` when there is no such
        release (or the line names no release)."""
        if self.index is None:
            return None
        i = self.index if self.index > 0 else n + 1 + self.index if self.index < 0 else 0
        return i if 1 <= i <= n else None

    def judge(self, low: float, high: float) -> bool | None:
        """``True`` / ``False`` when the whole interval ``[low, high]`` settles it, else ``None``."""
        if math.isclose(low, high, rel_tol=REL_TOL, abs_tol=1e-12):
            return self.check(low)
        op, x = self.op, self.number
        if op in ("<", "<="):
            if self.check(high):
                return True
            if not self.check(low):
                return False
            return None
        if op in (">", ">="):
            if self.check(low):
                return True
            if not self.check(high):
                return False
            return None
        inside = low - 1e-12 <= x <= high + 1e-12
        if op == "==":
            return None if inside else False
        return None if inside else True


def parse_expectation(text: object, *, file: str | None = None, key: str | None = None) -> Expectation:
    """Parse one line; raises :class:`InputError` naming the file and key when it does not parse."""
    if not isinstance(text, str):
        raise InputError(f"expectation must be a string like 'linking.k >= 10', got {text!r}", file=file, key=key)
    m = _LINE.match(text)
    if not m:
        raise InputError(f"cannot parse expectation '{text}' (want '<attack>.<metric> <op> <number>', "
                         f"op one of == != < <= > >=)", file=file, key=key)
    subject = m.group("subject").split("[")[0]
    index = int(m.group("index")) if m.group("index") else None
    if (subject == "release") != (index is not None):
        raise InputError(f"'{text}': release metrics are written release[<i>].<metric> (i from 1, or -1 for the "
                         "newest)", file=file, key=key)
    num = m.group("number").replace(" ", "")
    if "/" in num:
        a, b = num.split("/")
        if Fraction(b) == 0:
            raise InputError(f"'{text}': division by zero", file=file, key=key)
        number = float(Fraction(a) / Fraction(b))
    else:
        number = float(num)
    return Expectation(text=text.strip(), subject=subject, index=index, metric=m.group("metric"), op=m.group("op"),
                       number=number)


#: exit codes of the contract for each verdict (``none``: nothing was checked)
EXIT_CODES = {"pass": 0, "fail": 1, "unknown": 3, "none": 0}


def verdict_of(judged) -> str:
    """``fail`` if any judged expectation fails, else ``unknown`` if any is unsettled, else ``pass``;
    ``none`` when there was nothing to judge (never PASS without a check).

    ``judged`` holds judgements whose third field ``holds`` is ``True / False / None``.
    """
    holds = [j[2] for j in judged]
    if not holds:
        return "none"
    if any(h is False for h in holds):
        return "fail"
    if any(h is None for h in holds):
        return "unknown"
    return "pass"
