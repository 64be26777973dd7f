"""Attributes, their roles, and the schema of a table.

Roles (DESIGN.md, "Scenario files"): ``identifier`` (the key of the raw table, never published),
``quasi`` (quasi-identifiers: generalized before publication, known to the adversary), ``sensitive``
(published as is; several sensitive attributes form one composite sensitive value), ``non-identifier`` and
``insensitive`` (published as is and not protected, but *linking columns*: one value per person across the
releases unless ``adversary.changing`` says otherwise, which every attack reads to link a person's rows across
releases - Shmueli & Tassa, section 5.2, Example 5.1; :mod:`multirelease.model.linking`).  Publishers leave them out
of multi-release principles' releases unless given ``linking: keep``.

A quasi-identifier generalizes in one of three ways:

* ``hierarchy`` - to nodes of its taxonomy (the default for categorical hierarchies);
* ``interval`` - to any interval of its ordered leaves (the default for numeric / ordered hierarchies);
* ``subsets`` - to any subset of its leaves, written ``{UK,France}`` (the toy examples of Shmueli & Tassa);
  held as a bitset of at most 64 leaves beside the bounding code range.

Missing sensitive values.  A blank sensitive cell, or one reading ``NaN``, ``NA``, ``N/A`` or ``null`` (any
case; :data:`MISSING_VALUES`), is refused as bad input: counted as a value of its own it would make a class
look more diverse than it is.  An attribute that really has such a value declares it, either by listing it
as a leaf of its hierarchy or with ``allow_missing: true``::

    disease: {role: sensitive, allow_missing: true}   # blank / NaN kept, as a value of their own
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from .hierarchy import ROOT_LABEL, Hierarchy, _scalar

__all__ = ["Attribute", "Schema", "ROLES", "GENERALIZATIONS", "COMPOSITE_SEPARATOR", "MISSING_VALUES"]

ROLES = ("identifier", "quasi", "non-identifier", "sensitive", "insensitive")
GENERALIZATIONS = ("hierarchy", "interval", "subsets")
COMPOSITE_SEPARATOR = " | "
#: sensitive cells that mean "no value" (compared after stripping, case-insensitively; module docstring)
MISSING_VALUES = ("", "nan", "na", "n/a", "null")


@dataclass(frozen=True, eq=False)
class Attribute:
    """One column of the raw table: its name, role, hierarchy (quasi-identifiers) and generalization model."""

    name: str
    role: str
    hierarchy: Hierarchy | None = None
    generalization: str = "hierarchy"
    allow_missing: bool = False  # sensitive only: blank / NaN cells are a value of their own (module docstring)

    @property
    def is_quasi(self) -> bool:
        return self.role == "quasi"

    @property
    def is_sensitive(self) -> bool:
        return self.role == "sensitive"

    @property
    def allows_intervals(self) -> bool:
        return self.generalization == "interval"

    @property
    def is_subsets(self) -> bool:
        return self.generalization == "subsets"

    @property
    def domain_size(self) -> int:
        return self.hierarchy.n_leaves if self.hierarchy is not None else 0

    # ------------------------------------------------------------------ one generalized cell
    def parse_cell(self, text: Any) -> tuple[int, int, int]:
        """A published QI cell -> ``(lo, hi, mask)``; ``mask`` is the leaf bitset (0 unless ``subsets``)."""
        h = self.hierarchy
        raw = _scalar(text)
        if raw.startswith("{") and raw.endswith("}"):
            if not self.is_subsets:
                raise InputError(f"set '{raw}' given for '{self.name}', which does not generalize to subsets")
            items = [x.strip() for x in raw[1:-1].split(",") if x.strip()]
            if not items:
                raise InputError(f"empty set '{raw}' for '{self.name}'")
            codes = [h.code(x) for x in items]
            mask = 0
            for c in codes:
                mask |= 1 << c
            return min(codes), max(codes), mask
        lo, hi = h.parse(raw, allow_intervals=self.allows_intervals or None)
        if self.generalization == "hierarchy" and not h.is_node_range(lo, hi) and lo != hi:
            raise InputError(f"'{raw}' is not a node of the hierarchy of '{self.name}'")
        mask = _range_mask(lo, hi) if self.is_subsets else 0
        return lo, hi, mask

    def format_cell(self, lo: int, hi: int, mask: int = 0) -> str:
        """The published text of a generalized cell (inverse of :meth:`parse_cell`)."""
        h = self.hierarchy
        if self.is_subsets and mask:
            if mask == _range_mask(lo, hi):
                try:
                    return h.label(lo, hi, allow_intervals=False)
                except ValueError:
                    pass
            codes = [c for c in range(lo, hi + 1) if mask >> c & 1]
            if len(codes) == 1:
                return h.leaves[codes[0]]
            if len(codes) == h.n_leaves:
                return ROOT_LABEL
            return "{" + ",".join(h.leaves[c] for c in codes) + "}"
        return h.label(lo, hi, allow_intervals=self.allows_intervals)

    def closure(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The smallest generalized value of this attribute's model that contains each range.

        Definition 2.2 of Shmueli & Tassa: a node for ``hierarchy``, the range itself for ``interval``
        (and for ``subsets``, whose closure is the union of the sets, handled by the caller's masks).
        """
        if self.generalization == "hierarchy":
            return self.hierarchy.node_closure(lo, hi)
        return np.asarray(lo, dtype=np.int32), np.asarray(hi, dtype=np.int32)


def _range_mask(lo: int, hi: int) -> int:
    return ((1 << (hi - lo + 1)) - 1) << lo


@dataclass(frozen=True, eq=False)
class Schema:
    """The attributes of a table, in column order, with lookups by role."""

    attributes: tuple[Attribute, ...]
    _by_name: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        by_name = {}
        for a in self.attributes:
            if a.name in by_name:
                raise InputError(f"attribute '{a.name}' is declared twice", key="schema.attributes")
            by_name[a.name] = a
        object.__setattr__(self, "_by_name", by_name)
        if len(self.identifiers) > 1:
            raise InputError("at most one attribute can be the identifier", key="schema.attributes")

    def __repr__(self) -> str:
        return "Schema(" + ", ".join(f"{a.name}:{a.role}" for a in self.attributes) + ")"

    # ------------------------------------------------------------------ lookups
    def __getitem__(self, name: str) -> Attribute:
        try:
            return self._by_name[name]
        except KeyError:
            raise InputError(f"unknown attribute '{name}'") from None

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def _role(self, role: str) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes if a.role == role)

    @property
    def identifiers(self) -> tuple[str, ...]:
        return self._role("identifier")

    @property
    def identifier(self) -> str | None:
        ids = self.identifiers
        return ids[0] if ids else None

    @property
    def quasi(self) -> tuple[str, ...]:
        return self._role("quasi")

    @property
    def sensitive(self) -> tuple[str, ...]:
        return self._role("sensitive")

    @property
    def published(self) -> tuple[str, ...]:
        """Every attribute a release may carry (all but the identifier)."""
        return tuple(a.name for a in self.attributes if a.role != "identifier")

    @property
    def qi_attributes(self) -> tuple[Attribute, ...]:
        return tuple(self[n] for n in self.quasi)

    def restrict(self, names: Iterable[str]) -> tuple[str, ...]:
        """The published attributes among ``names`` in schema order (validated)."""
        wanted = list(names)
        for n in wanted:
            if n not in self:
                raise InputError(f"unknown attribute '{n}'")
            if self[n].role == "identifier":
                raise InputError(f"attribute '{n}' is the identifier and is never published")
        return tuple(n for n in self.published if n in set(wanted))

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_mapping(cls, spec: Any, *, base: Path, source: str | None = None) -> "Schema":
        """A schema from the scenario's ``schema`` mapping; hierarchy files are relative to ``base``."""
        if not isinstance(spec, Mapping) or "attributes" not in spec:
            raise InputError("schema must be a mapping with 'attributes'", file=source, key="schema")
        unknown = set(spec) - {"attributes"}
        if unknown:
            raise InputError(f"unknown key '{sorted(unknown)[0]}'", file=source, key="schema")
        attrs_spec = spec["attributes"]
        if not isinstance(attrs_spec, Mapping) or not attrs_spec:
            raise InputError("attributes must be a non-empty mapping of name -> {role, ...}",
                             file=source, key="schema.attributes")
        attrs = []
        for name, a in attrs_spec.items():
            attrs.append(_attribute_from_mapping(str(name), a, base=base, source=source))
        try:
            schema = cls(tuple(attrs))
        except InputError as exc:  # an attribute declared twice, two identifiers: name the file
            raise exc.located(file=source) from None
        if not schema.quasi:
            raise InputError("no attribute has role 'quasi'", file=source, key="schema.attributes")
        return schema


_ATTRIBUTE_KEYS = {"role", "hierarchy", "generalization", "allow_missing"}


def _attribute_from_mapping(name: str, spec: Any, *, base: Path, source: str | None) -> Attribute:
    key = f"schema.attributes.{name}"
    if isinstance(spec, str):
        spec = {"role": spec}
    if not isinstance(spec, Mapping):
        raise InputError("must be a mapping with a 'role'", file=source, key=key)
    unknown = set(spec) - _ATTRIBUTE_KEYS
    if unknown:
        raise InputError(f"unknown key '{sorted(unknown)[0]}'", file=source, key=key)
    role = spec.get("role")
    if role not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}; got {role!r}", file=source, key=f"{key}.role")
    hierarchy = None
    if "hierarchy" in spec:
        hierarchy = load_hierarchy(name, spec["hierarchy"], base=base, source=source, key=f"{key}.hierarchy")
    if role == "quasi" and hierarchy is None:
        raise InputError("a quasi-identifier needs a hierarchy", file=source, key=key)
    gen = spec.get("generalization")
    if gen is None:
        gen = "interval" if (hierarchy is not None and hierarchy.ordered) else "hierarchy"
    if gen not in GENERALIZATIONS:
        raise InputError(f"generalization must be one of {', '.join(GENERALIZATIONS)}; got {gen!r}",
                         file=source, key=f"{key}.generalization")
    if gen == "interval" and hierarchy is not None and not hierarchy.ordered:
        raise InputError("interval generalization needs leaves that are numbers in ascending order",
                         file=source, key=f"{key}.generalization")
    if gen == "subsets" and hierarchy is not None and hierarchy.n_leaves > 64:
        raise InputError(f"subsets generalization supports at most 64 values; '{name}' has {hierarchy.n_leaves}",
                         file=source, key=f"{key}.generalization")
    allow_missing = spec.get("allow_missing", False)
    if not isinstance(allow_missing, bool):
        raise InputError(f"must be true or false, got {allow_missing!r}", file=source, key=f"{key}.allow_missing")
    if allow_missing and role != "sensitive":
        raise InputError("applies to sensitive attributes only", file=source, key=f"{key}.allow_missing")
    return Attribute(name=name, role=role, hierarchy=hierarchy, generalization=gen, allow_missing=allow_missing)


def load_hierarchy(name: str, spec: Any, *, base: Path, source: str | None, key: str) -> Hierarchy:
    """``{file: path}`` (ARX CSV), ``{numeric: {min, max, bands}}``, or a nested mapping / list."""
    if isinstance(spec, Mapping) and set(spec) <= {"file", "separator"} and "file" in spec:
        path = Path(spec["file"])
        if not path.is_absolute():
            path = base / path
        if not path.is_file():
            raise InputError(f"hierarchy file '{spec['file']}' not found", file=source, key=f"{key}.file")
        return Hierarchy.from_arx_csv(name, path, separator=str(spec.get("separator", ";")), key=key)
    if isinstance(spec, Mapping) and "numeric" in spec and len(spec) == 1:
        num = spec["numeric"]
        if not isinstance(num, Mapping) or "min" not in num or "max" not in num:
            raise InputError("numeric needs 'min' and 'max'", file=source, key=f"{key}.numeric")
        extra = set(num) - {"min", "max", "bands"}
        if extra:
            raise InputError(f"unknown key '{sorted(extra)[0]}'", file=source, key=f"{key}.numeric")
        bands = num.get("bands") or []
        if not isinstance(bands, Sequence) or isinstance(bands, str):
            raise InputError("bands must be a list of widths", file=source, key=f"{key}.numeric.bands")
        return Hierarchy.numeric(name, num["min"], num["max"], bands, source=source, key=f"{key}.numeric")
    return Hierarchy.from_nested(name, spec, source=source, key=key)
