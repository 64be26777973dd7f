"""The releases in uid space, kept one release at a time (:mod:`attacks.incremental`) for the intersection
attack of Barbosa et al. section 4 (:mod:`attacks.intersection.attack`).

:class:`TrackedState` holds, per release, the uid of every row (an index into the uids in order of first
publication), its class and its sensitive value (an index into the values in order of first publication), and
the published group id of every class - what :func:`attacks.intersection.core.tracked` computes from the
releases, without reading them again.  :meth:`TrackedState.tracked` is that :class:`Tracked`, element for
element (the values renumbered in sorted order, as ``tracked`` numbers them): the signature blocks and the
verdicts are then computed by the attack's own code, so the result is the one ``run`` gives on the whole
sequence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.release import Release

from attacks.incremental import extend_codes, from_strings, pack, strings, unpack
from .core import Tracked

__all__ = ["TrackedState"]


@dataclass
class TrackedState:
    """Releases ``1 .. n`` in uid space (see the module docstring)."""

    uids: list = field(default_factory=list)
    values: list = field(default_factory=list)
    rows: list = field(default_factory=list)  # per release: (uid index, class, value index, group ids)
    added: tuple = ((), ())  # the uids and values the last release added (its stored part)

    @classmethod
    def empty(cls) -> "TrackedState":
        return cls()

    def extend(self, release: Release, index: int) -> "TrackedState":
        """The state with ``release`` (release ``index``) added; a uid twice in it is bad input."""
        uid = pd.Series(np.asarray(release.uid, dtype=object), dtype=object).astype(str)
        codes, fresh = extend_codes(self.uids, uid)
        if len(np.unique(codes)) != len(codes):
            first = uid[uid.duplicated()].iloc[0]
            raise InputError(f"uid '{first}' appears twice in release {index}", key="column uid")
        vals = pd.Series(np.asarray(release.sensitive, dtype=object), dtype=object).astype(str)
        vcodes, vfresh = extend_codes(self.values, vals)
        uids, values = self.uids + fresh, self.values + vfresh
        if release.n_classes:
            _, first_row = np.unique(release.classes, return_index=True)
            gid = np.asarray(release.group)[first_row] if release.group is not None else \
                np.arange(1, release.n_classes + 1)
        else:
            gid = np.zeros(0, dtype=np.int64)
        row = (codes, np.asarray(release.classes, dtype=np.int64), vcodes, np.asarray(gid, dtype=np.int64))
        return TrackedState(uids, values, self.rows + [row], (tuple(fresh), tuple(vfresh)))

    def tracked(self) -> Tracked:
        """The :class:`Tracked` of :func:`attacks.intersection.core.tracked` on the same releases."""
        n_u, n_rel = len(self.uids), len(self.rows)
        order = sorted(range(len(self.values)), key=lambda j: self.values[j])
        rank = np.empty(len(self.values), dtype=np.int64)
        rank[order] = np.arange(len(order))
        cls = np.full((n_rel, n_u), -1, dtype=np.int64)
        sens = np.full((n_rel, n_u), -1, dtype=np.int64)
        for i, (u, c, v, _) in enumerate(self.rows):
            cls[i, u] = c
            sens[i, u] = rank[v]
        return Tracked(uids=np.asarray(self.uids, dtype=object), cls=cls, sens=sens,
                       values=np.asarray([self.values[j] for j in order], dtype=object),
                       group_ids=[g for *_, g in self.rows])

    # ------------------------------------------------------------------ stored
    def parts(self) -> tuple[bytes, bytes]:
        u, c, v, g = self.rows[-1]
        part = pack({"release": len(self.rows)}, {"uid": u, "cls": c, "value": v, "group": g,
                                                  "new_uids": strings(self.added[0]),
                                                  "new_values": strings(self.added[1])})
        return part, b""

    @classmethod
    def load(cls, parts: list, summary: bytes) -> "TrackedState":
        uids: list = []
        values: list = []
        rows = []
        for part in parts:
            _, a = unpack(part)
            uids += from_strings(a["new_uids"])
            values += from_strings(a["new_values"])
            rows.append((a["uid"].astype(np.int64), a["cls"].astype(np.int64), a["value"].astype(np.int64),
                         a["group"].astype(np.int64)))
        return cls(uids, values, rows)
