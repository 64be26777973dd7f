"""The one signature every publisher shares, and its result type.

A publisher is built from its validated parameters (the papers' letters: ``k``, ``l``, ``m``, ``p``, ``d``)
and turns the current raw snapshot, plus the state it returned last time, into the next release::

    publisher = PUBLISHERS["mondrian"](k=10, l=5)
    result = publisher.publish(snapshot, attributes=None, state=None, rng=np.random.default_rng(0))
    result.release, result.truth, result.state   # what is published, who is behind it, what to keep

The state is plain JSON-serializable data, so release ``i+1`` can be made by another process later
(DESIGN.md, "Publisher state is data").
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from multirelease.errors import InputError
from multirelease.params import validate_params
from multirelease.release import Release, ReleaseTruth
from multirelease.table import Table

__all__ = ["Publisher", "PublishResult", "PublisherBase"]

_FRACTION = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+\.\d+)")


def _number_text(value: Any) -> Any:
    """An integral float as an integer (``5.0`` -> ``5``): requirement lines read as the papers write them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _fraction_text(match: "re.Match") -> str:
    """``a/b`` with a non-integral ``b`` (which :mod:`multirelease.expect` does not read) as a decimal."""
    return repr(float(match.group(1)) / float(match.group(2)))


def _holds(condition: str, config: Mapping) -> bool:
    """``"name"``: the parameter is true; ``"name > x"``: it exceeds ``x``."""
    name, _, bound = condition.partition(">")
    value = config.get(name.strip())
    if not bound:
        return bool(value)
    return value is not None and float(value) > float(bound)


@dataclass(frozen=True, eq=False)
class PublishResult:
    """One publication: the release (what recipients see), its truth (kept apart) and the next state.
    ``stats`` holds the publisher's own figures (seconds per phase...) for benchmarks: publishers keep no
    state of their own."""

    release: Release
    truth: ReleaseTruth
    state: dict = field(default_factory=dict)
    counterfeit_rows: int = 0
    stats: dict = field(default_factory=dict)

    def state_json(self) -> str:
        return json.dumps(self.state, sort_keys=True)


@runtime_checkable
class Publisher(Protocol):
    name: ClassVar[str]

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult: ...


class PublisherBase:
    """Stores validated parameters; subclasses declare ``name``, ``params`` (name -> constraint),
    ``required`` and ``defaults``, and implement :meth:`publish`."""

    name: ClassVar[str] = ""
    params: ClassVar[dict] = {}
    required: ClassVar[tuple] = ()
    defaults: ClassVar[dict] = {}
    #: what every release is claimed to satisfy, as certification requirements (``<attack>.<metric> <op>
    #: <number>``, :mod:`multirelease.expect`) with the config's letters in braces (``"linking.k >= {k}"``);
    #: an entry ``(line, condition)`` applies only when ``condition`` holds on the config (``"uid"``: the
    #: parameter is true; ``"l > 1"``: it exceeds the number).  Read it through :meth:`guarantee_requirements`.
    guarantee: ClassVar[tuple] = ()

    def __init__(self, *, _file: str | None = None, _key: str | None = None, **params: Any):
        self.config = validate_params(self.name, self.params, params, required=self.required,
                                      defaults=self.defaults, file=_file, key=_key)
        self.check_config(_file, _key)

    def published_attributes(self, snapshot: Table, attributes: Sequence[str] | None, *,
                             need_sensitive: bool = False, reason: str = "") -> tuple[str, ...]:
        """The attributes this release publishes (default: all but the identifier), in schema order,
        validated; with ``need_sensitive`` a sensitive attribute must be among them (``reason`` says why, in
        the error message: ``" with l = 5"``)."""
        schema = snapshot.schema
        chosen = schema.restrict(attributes if attributes is not None else schema.published)
        if need_sensitive and not any(schema[n].is_sensitive for n in chosen):
            raise InputError(f"{self.name}{reason} needs a published sensitive attribute")
        return chosen

    def guarantee_requirements(self) -> tuple[str, ...]:
        """The requirement lines of :attr:`guarantee` for this config: conditions applied, letters formatted
        (an integral number as an integer, ``1/{l}`` with a non-integral ``l`` as a decimal), each line
        parseable by :func:`multirelease.expect.parse_expectation`."""
        declared = self.guarantee
        values = {k: _number_text(v) for k, v in self.config.items()}
        lines = []
        for entry in declared:
            line, condition = (entry, None) if isinstance(entry, str) else entry
            if condition is not None and not _holds(condition, self.config):
                continue
            lines.append(_FRACTION.sub(_fraction_text, line.format(**values)))
        return tuple(lines)

    def check_config(self, file: str | None, key: str | None) -> None:
        """Cross-parameter checks (one-line :class:`InputError`)."""

    def __getattr__(self, item: str) -> Any:
        config = self.__dict__.get("config", {})
        if item in config:
            return config[item]
        raise AttributeError(item)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.config.items()))
        return f"{type(self).__name__}({args})"
