"""Release sequences and adversary knowledge.

:class:`ReleaseSequence` is what the data holder keeps: every release, the truth behind it (which person
is behind which row, which rows are counterfeit) and the raw snapshots.  :meth:`ReleaseSequence.view` is what
an adversary gets: the releases only, plus what the scenario's ``adversary`` says the adversary knows
(:class:`Adversary`): quasi-identifiers of the population, presence, record tracking, correspondence, and how
sensitive values behave between releases.  Attacks receive a :class:`SequenceView` and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

from multirelease.errors import InputError
from .linking import LINKING_ROLES, Linking, linking_of
from .release import Release, ReleaseTruth
from .table import Table

__all__ = ["Adversary", "ReleaseSequence", "SequenceView", "ADVERSARY_KEYS"]

ADVERSARY_KEYS = {
    "quasi_identifiers": ("all", "targets", "none"),
    "presence": bool,
    "record_tracking": bool,
    "correspondence": bool,
    "sensitive": ("persistent", "free", "transitions"),
    #: linking columns (published, neither quasi-identifier nor sensitive) whose values change between
    #: releases: they link nothing (:mod:`multirelease.model.linking`); every other one is persistent
    "changing": list,
}


@dataclass(frozen=True)
class Adversary:
    """What the attacker knows (DESIGN.md, ``adversary``)."""

    quasi_identifiers: str = "all"
    presence: bool = True
    record_tracking: bool = False
    correspondence: bool = False
    sensitive: str = "persistent"
    #: linking columns that change between releases (the others are persistent, :mod:`multirelease.model.linking`)
    changing: tuple = ()

    @classmethod
    def from_mapping(cls, spec: Any, *, source: str | None = None, key: str = "adversary",
                     schema=None) -> "Adversary":
        if spec is None:
            return cls()
        if not isinstance(spec, Mapping):
            raise InputError("must be a mapping", file=source, key=key)
        values = {}
        for name, value in spec.items():
            rule = ADVERSARY_KEYS.get(name)
            if rule is None:
                raise InputError(f"unknown key '{name}' (known: {', '.join(ADVERSARY_KEYS)})", file=source,
                                 key=f"{key}.{name}")
            if rule is bool:
                if not isinstance(value, bool):
                    raise InputError(f"must be true or false, got {value!r}", file=source, key=f"{key}.{name}")
            elif rule is list:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise InputError(f"must be a list of attribute names, got {value!r}", file=source,
                                     key=f"{key}.{name}")
                value = tuple(value)
                for col in value if schema is not None else ():
                    if col not in schema or schema[col].role not in LINKING_ROLES:
                        raise InputError(f"'{col}' is not a linking column (an attribute of role "
                                         f"{' or '.join(LINKING_ROLES)})", file=source, key=f"{key}.{name}")
            elif value not in rule:
                raise InputError(f"must be one of {', '.join(rule)}, got {value!r}", file=source, key=f"{key}.{name}")
            values[name] = value
        return cls(**values)


@dataclass(frozen=True, eq=False)
class SequenceView:
    """The adversary's side of a sequence: releases and public background knowledge only.

    ``population[i]`` is the public part of snapshot ``i`` (identifiers and quasi-identifiers, no sensitive
    values) when the adversary knows quasi-identifiers and a snapshot exists; ``None`` otherwise.
    """

    releases: tuple[Release, ...]
    adversary: Adversary = field(default_factory=Adversary)
    population: tuple[Table | None, ...] = ()
    transitions: Any = None
    #: who the attacks judge: ``population`` (the individuals of the snapshots) or ``regions`` (every target
    #: the published regions allow); the pipeline states it in every report
    targets: str = "population"
    #: what attacks computed of this view ahead of their run (:meth:`attacks.base.AttackBase.prepare`), by name
    ahead: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.releases)

    @property
    def schema(self):
        return self.releases[0].schema

    @cached_property
    def linking(self) -> Linking:
        """The persistent linking columns every attack reads (:mod:`multirelease.model.linking`); raises
        :class:`InputError` for a persistent column published by some releases and not others."""
        return linking_of(self.releases, self.adversary.changing)

    def linked_values(self, r: int):
        """Release ``r``'s linked values: sensitive value and persistent linking tuple (:meth:`Linking.values`)."""
        return self.linking.values(self.releases[r])


@dataclass(eq=False)
class ReleaseSequence:
    """Everything the data holder knows: releases, truths (hidden) and snapshots."""

    releases: list[Release] = field(default_factory=list)
    truths: list[ReleaseTruth | None] = field(default_factory=list)
    snapshots: list[Table | None] = field(default_factory=list)

    def append(self, release: Release, truth: ReleaseTruth | None, snapshot: Table | None) -> None:
        self.releases.append(release)
        self.truths.append(truth)
        self.snapshots.append(snapshot)

    def __len__(self) -> int:
        return len(self.releases)

    def view(self, adversary: Adversary, transitions: Any = None, targets: str | None = None) -> SequenceView:
        """What the adversary sees: the releases, and the public QIs of each snapshot if it knows them.

        ``targets`` defaults to ``population`` when every snapshot is known, else ``regions``."""
        population: Sequence[Table | None]
        if adversary.quasi_identifiers == "none":
            population = [None] * len(self.snapshots)
        else:
            population = [None if s is None else _public_part(s) for s in self.snapshots]
        if targets is None:
            targets = "population" if self.snapshots and all(s is not None for s in self.snapshots) else "regions"
        return SequenceView(tuple(self.releases), adversary, tuple(population), transitions, targets)


def _public_part(snapshot: Table) -> Table:
    """The snapshot without its sensitive columns (the truth the adversary must not read)."""
    sens = set(snapshot.schema.sensitive)
    frame = snapshot.frame.copy()
    for name in sens:
        frame[name] = None
    out = Table(snapshot.schema, frame)
    out._keep_figures(snapshot)  # the same quasi-identifiers: their codes and counts, computed once
    if snapshot.id_runs is not None:  # the same identifiers
        out._hold_id_runs(snapshot.id_runs)
    return out
