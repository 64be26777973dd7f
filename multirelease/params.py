"""Parameter constraints, declared once per publisher / attack and checked when a scenario is loaded.

One message format for every bad value (after scikit-learn's ``_param_validation``):
``The 'k' parameter of mondrian must be an int in [2, inf). Got 1.``
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Mapping, Sequence

from .errors import InputError

__all__ = ["Interval", "Options", "Boolean", "ListOf", "Anything", "validate_params"]


@dataclass(frozen=True)
class Interval:
    """A number in ``[low, high]`` (``None`` is unbounded); ``kind`` is ``int`` or ``float``."""

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"  # "both", "left", "right", "neither"

    def check(self, value: Any) -> Any:
        if isinstance(value, bool):
            return None
        if self.kind is int:
            if not isinstance(value, Integral):
                return None
            value = int(value)
        else:
            if not isinstance(value, Real) or math.isnan(float(value)):
                return None
            value = float(value)
        lo_ok = self.low is None or (value >= self.low if self.closed in ("both", "left") else value > self.low)
        hi_ok = self.high is None or (value <= self.high if self.closed in ("both", "right") else value < self.high)
        return value if lo_ok and hi_ok else None

    def describe(self) -> str:
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        low = "-inf" if self.low is None else _num(self.low)
        high = "inf" if self.high is None else _num(self.high)
        noun = "an int" if self.kind is int else "a number"
        return f"{noun} in {left}{low}, {high}{right}"


@dataclass(frozen=True)
class Options:
    values: tuple

    def check(self, value: Any) -> Any:
        return value if value in self.values else None

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Boolean:
    def check(self, value: Any) -> Any:
        return value if isinstance(value, bool) else None

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class ListOf:
    item: Any

    def check(self, value: Any) -> Any:
        if not isinstance(value, Sequence) or isinstance(value, str):
            return None
        out = [self.item.check(v) for v in value]
        return None if any(v is None for v in out) else list(out)

    def describe(self) -> str:
        return f"a list of {self.item.describe()}"


@dataclass(frozen=True)
class Anything:
    """Free-form: checked by the owner itself."""

    def check(self, value: Any) -> Any:
        return value

    def describe(self) -> str:
        return "any value"


@dataclass(frozen=True)
class Text:
    def check(self, value: Any) -> Any:
        return value if isinstance(value, str) else None

    def describe(self) -> str:
        return "a string"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def validate_params(owner: str, spec: Mapping[str, Any], given: Mapping[str, Any] | None, *,
                    required: Sequence[str] = (), defaults: Mapping[str, Any] | None = None,
                    file: str | None = None, key: str | None = None) -> dict[str, Any]:
    """Check ``given`` against ``spec`` (name -> constraint); fill ``defaults``; raise one-line errors."""
    given = dict(given or {})
    if not isinstance(given, dict):
        raise InputError(f"parameters of {owner} must be a mapping", file=file, key=key)
    out = dict(defaults or {})
    for name, value in given.items():
        if name not in spec:
            raise InputError(f"unknown parameter '{name}' of {owner} (known: {', '.join(sorted(spec)) or 'none'})",
                             file=file, key=f"{key}.{name}" if key else name)
        checked = spec[name].check(value)
        if checked is None:
            raise InputError(f"The '{name}' parameter of {owner} must be {spec[name].describe()}. Got {value!r}.",
                             file=file, key=f"{key}.{name}" if key else name)
        out[name] = checked
    for name in required:
        if name not in out:
            raise InputError(f"{owner} needs the parameter '{name}'", file=file, key=key)
    return out
