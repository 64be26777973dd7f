"""Linking attributes: published columns that are neither quasi-identifier nor sensitive.

Shmueli & Tassa (004, section 5.2, Example 5.1 with Tables 15-16): a *non-identifier* such as blood type is
"insignificant ... in the case of a single release. However, in the case of multiple releases they empower the
adversary by allowing him to create links between tuples in different releases."  Bob is in a 2-diverse class
of both releases of Example 5.1; O+ is the only blood type found in both of his classes, so his disease is
measles.

The adversary model (DESIGN.md, ``adversary``).  Every published column of role ``non-identifier`` or
``insensitive`` is a *linking attribute*.  It is **persistent** by default: one value per individual for the
whole sequence, unknown to the adversary, published as it is.  ``adversary.changing: [names]`` declares the
ones that change between releases: a changing value links nothing across releases and the attacks set it
aside (so does a column only one release of the sequence publishes).  A column the adversary *knows* for its
targets is, by definition, a quasi-identifier: declare it ``role: quasi`` (a flat hierarchy of its values,
``hierarchy: {any: [A+, O+, ...]}``, publishes it as is where a publisher keeps it).

What the attacks do with them.  Each release's row carries a *linked value*: its sensitive value together with
the tuple of its persistent linking values (:meth:`Linking.values`).  Possible worlds (004, Definition 3.1: a
world gives each individual one tuple of published non-quasi-identifier values), the update graph (a record's
versions keep their linking tuple), the intersection and difference attacks (candidate sets of tuples) and the
correspondence attacks (a generator's buddies agree on the tuple) run on linked values, so their cost is that
of the distinct published tuples; every disclosure metric is then read on the sensitive value alone
(:meth:`Linking.project`): a target whose linked values ``(O+, measles)`` and ``(A+, measles)`` differ still has
one sensitive value.  Witnesses name the linking columns (:meth:`Linking.label`).

A persistent linking column published by some releases of a sequence and not by others would link only those
releases; the attacks do not model it and refuse the sequence (:class:`multirelease.errors.InputError`, exit 2)
rather than judge less than was published.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError

__all__ = ["LINKING_ROLES", "Linking", "Projection", "linking_of", "tuple_pins", "SEPARATOR"]

#: roles of the published columns that are neither quasi-identifier nor sensitive
LINKING_ROLES = ("non-identifier", "insensitive")
#: joins a sensitive value and its linking values into one linked value (never found in a published cell)
SEPARATOR = "\x1f"


@dataclass(frozen=True)
class Linking:
    """The persistent linking columns of a sequence view, and how the attacks read them.

    Attributes
    ----------
    columns : tuple of str
        The persistent linking columns: published by every release of the view (in schema order).
    ignored : tuple of str
        Published linking columns that link nothing: declared changing (``adversary.changing``) or published
        by one release only.
    """

    columns: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.columns)

    def values(self, release) -> np.ndarray:
        """The linked value of every row of ``release``: its sensitive value, then its linking values, joined
        by :data:`SEPARATOR`; the sensitive values themselves when there is no linking column."""
        sens = np.asarray(release.sensitive, dtype=object)
        if not self.columns:
            return sens
        other = release.other
        parts = [pd.Series(sens, dtype=object).astype(str)]
        for c in self.columns:
            parts.append(pd.Series(other[c].to_numpy(dtype=object), dtype=object).astype(str))
        joined = parts[0]
        for p in parts[1:]:
            joined = joined + SEPARATOR + p.to_numpy()
        return joined.to_numpy(dtype=object)

    @staticmethod
    def sensitive_of(values: Sequence) -> np.ndarray:
        """The sensitive part of linked values (the values themselves when they carry no linking tuple)."""
        return np.array([str(v).split(SEPARATOR, 1)[0] for v in values], dtype=object)

    @staticmethod
    def project(dictionary: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, sensitive)``: for each linked value of ``dictionary`` the code of its sensitive value in
        ``sensitive`` (the sorted distinct sensitive values).  Disclosure is judged on ``sensitive``: a
        target linkable to several linked values with one sensitive value has that value disclosed."""
        sens = Linking.sensitive_of(dictionary)
        codes, uniq = pd.factorize(pd.Series(sens, dtype=object), sort=True)
        return codes.astype(np.int64), np.asarray(uniq, dtype=object)

    def label(self, value) -> str:
        """A linked value as a reader sees it: ``measles (bt=O+)``."""
        parts = str(value).split(SEPARATOR)
        if len(parts) == 1 or not self.columns:
            return parts[0]
        return parts[0] + " (" + ", ".join(f"{c}={v}" for c, v in zip(self.columns, parts[1:])) + ")"

    def note(self) -> str | None:
        """One line for an attack's notes: which columns linked the releases, which were set aside."""
        out = []
        if self.columns:
            out.append("linking columns read as persistent (Shmueli & Tassa, section 5.2): " + ", ".join(self.columns))
        if self.ignored:
            out.append("published columns that link nothing across releases (changing or in one release): "
                       + ", ".join(self.ignored))
        return "; ".join(out) or None


@dataclass(frozen=True, eq=False)
class Projection:
    """Per-linked-value figures read on the sensitive value (:meth:`Linking.project`): the attacks compute a
    figure for every (target, linked value); the worlds, paths or candidates of ``(s, t)`` over the tuples ``t``
    are disjoint, so a sensitive value's figure is the sum over its linked values, and a set of linked values
    holds ``s`` when it holds one of them.

    Attributes
    ----------
    codes : ndarray of int
        For each linked value of the dictionary, the code of its sensitive value in ``values``.
    values : ndarray of object
        The distinct sensitive values, sorted.
    """

    codes: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, dictionary: Sequence) -> "Projection":
        return cls(*Linking.project(dictionary))

    @cached_property
    def onehot(self) -> np.ndarray:
        """``(V, S)``: 1 where linked value ``v`` carries sensitive value ``s``."""
        out = np.zeros((len(self.codes), len(self.values)))
        out[np.arange(len(self.codes)), self.codes] = 1.0
        return out

    def sum(self, x) -> np.ndarray:
        """``(..., V)`` -> ``(..., S)``: the sum over the linked values of each sensitive value."""
        return np.asarray(x, dtype=np.float64) @ self.onehot

    def any(self, x) -> np.ndarray:
        """``(..., V)`` bool -> ``(..., S)``: true where some linked value of the sensitive value is."""
        return self.sum(np.asarray(x, dtype=bool)) > 0


def linking_of(releases: Sequence, changing: Sequence[str] = ()) -> Linking:
    """The :class:`Linking` of a sequence of releases.

    Raises
    ------
    InputError
        A persistent linking column published by at least two releases but not by all of them.
    """
    releases = list(releases)
    if not releases:
        return Linking()
    schema = releases[0].schema
    published: dict[str, list[int]] = {}
    for r, release in enumerate(releases):
        for name in release.attributes:
            if name in schema and schema[name].role in LINKING_ROLES:
                published.setdefault(name, []).append(r)
    changing = set(changing)
    columns, ignored = [], []
    for name in schema.names:
        if name not in published:
            continue
        where = published[name]
        if name in changing or len(releases) == 1 or len(where) == 1:
            ignored.append(name)
        elif len(where) == len(releases):
            columns.append(name)
        else:
            missing = [r + 1 for r in range(len(releases)) if r not in where]
            raise InputError(f"linking column '{name}' is published by releases "
                             f"{', '.join(str(r + 1) for r in where)} but not by release "
                             f"{', '.join(map(str, missing))}: the attacks link through a persistent column "
                             f"published by every release (or by one); publish it in every release, leave it "
                             f"out, or declare it in adversary.changing", key=f"schema.attributes.{name}")
    return Linking(tuple(columns), tuple(ignored))


def tuple_pins(population: Sequence, releases: Sequence, linking: Linking, *, chunk: int = 2048) -> list[tuple]:
    """Shmueli & Tassa's Example 5.1 attacker (004, section 5.2) on a sequence, exactly: ``(individual,
    release index, value)`` for every individual of a snapshot that the persistent linking columns pin to one
    sensitive value in a release.

    The adversary knows each snapshot's quasi-identifiers and who is in it (``population``, one public table per
    release).  An individual's linking tuple is one for the whole sequence: it is among the tuples of the rows
    whose region holds the individual's point, in every release the individual is in; its candidate values in
    a release are those of such rows whose tuple survives all of them.  A release with fewer rows than its
    snapshot's individuals withholds someone (BPG suppresses records): the adversary cannot tell who, so that
    release constrains no one and is read for no one (counterfeit rows, more rows than individuals, are rows
    like any other).  Bob of Example 5.1 is in a 2-diverse class of both releases and O+ is the only blood type
    found in both: measles.  Cost: one containment test per (distinct region, distinct point), in chunks of
    ``chunk`` points, then joins over the (individual, row) pairs."""
    if not linking:
        return []
    tuple_code: dict[str, int] = {}
    seen, rows_of, members = [], [], []
    for r, (table, release) in enumerate(zip(population, releases)):
        if table is None or len(release) < len(table) or not len(table):
            continue
        cols = [list(table.schema.quasi).index(n) for n in release.quasi]
        points, person_point = np.unique(table.qi_codes[:, cols], axis=0, return_inverse=True)
        other = release.other
        joined = pd.Series([""] * len(release), dtype=object)
        for c in linking.columns:
            joined = joined + SEPARATOR + other[c].astype(str).to_numpy()
        tup = np.array([tuple_code.setdefault(t, len(tuple_code)) for t in joined], dtype=np.int64)
        # one containment test per distinct region (its bounds and value sets), then back to its rows
        keys = [release.lo, release.hi] + [np.asarray(release.masks[n], dtype=np.int64)[:, None]
                                           for n in release.quasi if n in release.masks]
        _, first, region = np.unique(np.hstack(keys), axis=0, return_index=True, return_inverse=True)
        hit_region, hit_point = [], []
        for s in range(0, len(points), chunk):
            i, j = np.nonzero(release.contains_points(points[s:s + chunk], rows=first))
            hit_region.append(i)
            hit_point.append(j + s)
        pairs = pd.DataFrame({"point": np.concatenate(hit_point), "region": np.concatenate(hit_region)}).merge(
            pd.DataFrame({"region": region.ravel(), "row": np.arange(len(release))}), on="region")
        people = pd.DataFrame({"who": [str(x) for x in table.ids], "point": person_point.ravel()})
        members.append(people["who"])
        both = people.merge(pairs, on="point")[["who", "row"]]
        both["tuple"] = tup[both["row"].to_numpy()]
        both["value"] = np.asarray(release.sensitive, dtype=object)[both["row"].to_numpy()].astype(str)
        both["release"] = r
        rows_of.append(both)
        seen.append(both[["who", "tuple"]].drop_duplicates().assign(release=r))
    if not rows_of:
        return []
    seen_all = pd.concat(seen, ignore_index=True)
    present = pd.concat(members, ignore_index=True).value_counts()  # the releases read for each individual
    counts = seen_all.groupby(["who", "tuple"]).size().rename("n").reset_index()
    counts = counts[counts["n"].to_numpy() == present.reindex(counts["who"]).to_numpy()]
    feasible = counts[["who", "tuple"]]
    cands = pd.concat(rows_of, ignore_index=True).merge(feasible, on=["who", "tuple"])
    values = cands.groupby(["who", "release"])["value"].agg(["nunique", "first"]).reset_index()
    pinned = values[values["nunique"] == 1].sort_values(["release", "who"], kind="stable")
    return list(zip(pinned["who"], pinned["release"].astype(int), pinned["first"]))
