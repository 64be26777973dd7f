"""The update-graph attack's links kept one release at a time (:mod:`attacks.incremental`; Li & Zhou section
III, Definition 6: the external knowledge tables ``E_i``).

:class:`LinkState` holds what :func:`attacks.update_graph.version_links.link_versions` computes from every release - the
targets in order of first appearance and, per release, who is present, at which location, the sparse
``locations x classes`` membership, the per-class value counts, counterfeits and group ids - plus the rows of
the prefixes already judged (a prefix's row depends on its own releases only) and the running worst case.
A new release is linked alone (:func:`attacks.update_graph.version_links.link_release`, the code ``link_versions`` runs
for each release) against the targets seen so far; :meth:`LinkState.links` is then the
:class:`~attacks.update_graph.version_links.VersionLinks` ``link_versions`` gives on the whole sequence, array for
array, so :meth:`attacks.update_graph.attack.UpdateGraph._run_links` computes the same figures ``run`` does.

The forward sweep of eqs. 1-2 is kept too (per release, the node weights, normalized forward sums and
reachability of the targets present): a layer depends on the earlier ones only, so the sweep goes on from the
new release (:func:`attacks.update_graph.attack.forward_pass` with ``prior``).  Cost per release: linking the new
release, its forward layer, and one backward sweep over the kept layers (``O(N T V^2)`` NumPy work for ``N``
releases, ``T`` targets, ``V`` values: the eq. 2 risk of a version after the new release depends on every
later layer, so that sweep is over the whole sequence - elementwise work, no release read, linked or
published again); the per-prefix backward sweeps of the earlier releases (``O(N^2 T V^2)``) are not redone.
Kept per release: about ``T_i V`` floats twice (an uncompressed ``.npz``: read back every month).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import sparse

from multirelease.errors import InputError
from multirelease.model.release import Release
from multirelease.model.transitions import TransitionModel

from attacks.incremental import extend_codes, from_strings, pack, pack_rows, strings, unpack, unpack_gaps, unpack_rows
from .version_links import (VersionLinks, _class_counterfeits, _class_counts, _class_groups, link_ids,
                            link_release)

__all__ = ["LinkState", "StoredMembership"]


class StoredMembership:
    """A kept release's ``(locations, classes)`` 0/1 membership as stored (:func:`attacks.incremental.pack_rows`),
    standing for the :class:`scipy.sparse.csr_matrix` :class:`~attacks.update_graph.version_links.VersionLinks`
    holds: the node weights of a kept release are kept too, so the gate reads a kept membership only for the rows of a
    witness (:meth:`VersionLinks.subset`, ``m[rows]``: only those rows are decoded); anything else
    (``indices``, ``astype``: the joint attack's pairs) decodes the whole matrix once - the same matrix."""

    def __init__(self, shape, indptr: np.ndarray, packed: np.ndarray):
        self.shape = tuple(int(x) for x in shape)
        self.indptr = indptr
        self._packed = packed
        self._matrix = None
        self._gaps = None

    def matrix(self) -> sparse.csr_matrix:
        if self._matrix is None:
            indices = unpack_rows(self.indptr, self._packed)
            self._matrix = sparse.csr_matrix((np.ones(len(indices), dtype=bool), indices, self.indptr),
                                             shape=self.shape)
        return self._matrix

    @property
    def indices(self) -> np.ndarray:
        return self.matrix().indices

    def astype(self, dtype):
        return self.matrix().astype(dtype)

    def __getitem__(self, rows) -> sparse.csr_matrix:
        """The rows ``rows`` (an array of locations) as a CSR matrix, decoded alone."""
        if self._matrix is not None:
            return self._matrix[rows]
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        lo, hi = np.asarray(self.indptr, dtype=np.int64)[rows], np.asarray(self.indptr, dtype=np.int64)[rows + 1]
        sizes = hi - lo
        indptr = np.concatenate([[0], np.cumsum(sizes)])
        if self._gaps is None:  # inflated once: several witnesses may read rows of this release
            self._gaps = unpack_gaps(self._packed)
        gaps = self._gaps
        at = np.repeat(lo - indptr[:-1], sizes) + np.arange(int(indptr[-1]))
        indices = unpack_rows(indptr, gaps[at], packed=False)
        return sparse.csr_matrix((np.ones(len(indices), dtype=bool), indices, indptr),
                                 shape=(len(rows), self.shape[1]))


@dataclass
class LinkState:
    """Releases ``1 .. n`` linked (see the module docstring)."""

    mode: str | None = None
    targets: list = field(default_factory=list)
    per_release: list = field(default_factory=list)  # (who, where, member, counts, counterfeits, groups)
    rows: list = field(default_factory=list)
    best: tuple = (-1.0, None, None)
    added: tuple = ()  # the targets the last release added
    layer_rows: list = field(default_factory=list)  # per release swept: (weights, alpha, fwd) of who, in order

    @classmethod
    def empty(cls) -> "LinkState":
        return cls()

    def extend(self, release: Release, population, index: int, model: TransitionModel, linkage: str):
        """The state with ``release`` (release ``index``, ``population`` behind it) linked, or
        ``NotImplemented`` when ``linkage: auto`` would link the whole sequence otherwise."""
        mode = linkage
        if linkage == "auto":
            mode = self.mode or ("uid" if release.uid is not None else "population" if population is not None
                                 else None)
            if mode is None:
                raise InputError("update_graph links the versions of a record by a 'uid' column in every release "
                                 "or by the population (data or snapshots, with quasi_identifiers known)")
            if mode == "uid" and release.uid is None:
                return NotImplemented  # every release would now be linked by the population
        if mode not in ("uid", "population"):
            raise InputError(f"unknown linkage '{linkage}' (known: auto, uid, population)")
        if mode == "uid" and release.uid is None:
            raise InputError(f"release {index} has no 'uid' column (linkage: uid)")
        if mode == "population" and population is None:
            raise InputError("linkage: population needs the population of every release (data or snapshots, "
                             "with quasi_identifiers known)")
        counts = _class_counts(release, model, index)
        groups = _class_groups(release)
        cf = _class_counterfeits(release, groups)
        codes, fresh = extend_codes(self.targets, link_ids(release, population, mode))
        targets = self.targets + fresh
        who, where, member = link_release(release, population if mode == "population" else None, codes, index)
        return replace(self, mode=mode, targets=targets,
                       per_release=self.per_release + [(who, where, member, counts, cf, groups)], added=tuple(fresh))

    def with_prefix(self, rows: list, best: tuple, sp) -> "LinkState":
        """The state after the attack judged the new release: its rows, worst case and the new release's
        layer of the forward sweep (node weights, forward sums and reachability of the targets present)."""
        i = len(self.per_release) - 1
        who = self.per_release[i][0]
        layers = self.layer_rows[:i] + [(sp.weights[i][who], sp.alpha[i][who], sp.fwd[i][who])]
        return replace(self, rows=list(rows), best=tuple(best), layer_rows=layers)

    def links(self) -> VersionLinks:
        """The :class:`VersionLinks` of every release so far."""
        cols = list(zip(*self.per_release))
        return VersionLinks(np.asarray(self.targets, dtype=object), self.mode, *map(tuple, cols))

    def layers(self) -> tuple[list, list, list] | None:
        """``(weights, alpha, fwd)`` of the releases already swept, as the dense ``(targets, values)`` arrays
        :func:`attacks.update_graph.attack.forward_pass` made (a target absent from a release has a zero row)."""
        if not self.layer_rows:
            return None
        T = len(self.targets)
        out: tuple[list, list, list] = ([], [], [])
        for (who, *_), rows in zip(self.per_release, self.layer_rows):
            for k, r in enumerate(rows):
                dense = np.zeros((T, r.shape[1]), dtype=r.dtype)
                dense[who] = r
                out[k].append(dense)
        return out

    # ------------------------------------------------------------------ stored
    def parts(self) -> tuple[bytes, bytes]:
        who, where, m, counts, cf, groups = self.per_release[-1]
        w, alpha, fwd = self.layer_rows[-1]
        # people at one location have one row of node weights: kept once per location; the forward sums
        # (mostly zero: a version's candidates are its group's values) kept as their non-zero entries
        per_loc = np.zeros((m.shape[0], w.shape[1]))
        per_loc[where] = w
        nz = np.flatnonzero(alpha)
        # with population linkage a version's candidates are the values of every group around it: the sums
        # are mostly non-zero, and kept whole (half the bytes of their positions and values)
        sums = {"alpha": alpha} if 2 * len(nz) > alpha.size else {"alpha_at": nz, "alpha": alpha.ravel()[nz]}
        part = pack({"shape": list(m.shape), "values": int(fwd.shape[1])},
                    {"who": who, "where": where, "indptr": m.indptr, "indices": pack_rows(m.indptr, m.indices),
                     "counts": counts,
                     "counterfeits": cf, "groups": groups, "new_targets": strings(self.added),
                     "w_loc": per_loc, **sums, "fwd": np.packbits(fwd, axis=1)})
        best = [float(self.best[0])] + [None if x is None else int(x) for x in self.best[1:]]
        summary = json.dumps({"mode": self.mode, "rows": self.rows, "best": best}, sort_keys=True)
        return part, summary.encode("utf-8")

    @classmethod
    def load(cls, parts: list, summary: bytes) -> "LinkState":
        doc = json.loads(summary)
        targets: list = []
        per, layers = [], []
        for part in parts:
            meta, a = unpack(part)
            targets += from_strings(a["new_targets"])
            m = StoredMembership(meta["shape"], a["indptr"], a["indices"])
            per.append((a["who"], a["where"], m, a["counts"], a["counterfeits"], a["groups"]))
            fwd = np.unpackbits(a["fwd"], axis=1, count=meta["values"]).view(bool)
            if "alpha_at" in a:  # kept as non-zero entries (and every part of an older ledger)
                alpha = np.zeros(fwd.shape)
                alpha.ravel()[a["alpha_at"]] = a["alpha"]
            else:
                alpha = a["alpha"]
            layers.append((a["w_loc"][a["where"]], alpha, fwd))
        return cls(doc["mode"], targets, per, doc["rows"], tuple(doc["best"]), layer_rows=layers)
