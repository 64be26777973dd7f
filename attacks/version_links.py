"""Linking the versions of a record across releases (Li & Zhou, Definition 6: the external knowledge
tables ``E_i``) - the first step of the update-graph attack (:mod:`attacks.update_graph`).

``linkage: uid`` follows the releases' ``uid`` column (a stable record id): a uid's version at release ``i``
is in the QI-group of its row.  ``linkage: population`` follows the population (``view.population``:
identifiers and QI values of every snapshot): a person's version is in the QI-group(s) whose region contains
the person's QI point.  :func:`node_weights` gives the SUG's node weights (Definition 10) per release.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.release import Release
from multirelease.sequence import SequenceView
from multirelease.transitions import TransitionModel

__all__ = ["VersionLinks", "containing_classes", "link_versions", "node_weights"]


@dataclass(frozen=True, eq=False)
class VersionLinks:
    """Which QI-group each target (a uid or a person) is in at each release.

    Attributes
    ----------
    targets : ndarray of object
        The target ids.
    mode : "uid" or "population"
    pairs : tuple of (ndarray, ndarray)
        Per release: ``(target index, class index)`` pairs (several per target when regions overlap).
    counts : tuple of ndarray
        Per release: ``(n_classes, V)`` counts of each value of the transition model's domain in each class.
    counterfeits : tuple of ndarray
        Per release: published counterfeit count of each class (0 without statistics).
    groups : tuple of ndarray
        Per release: the published group id of each class (for witnesses).
    """

    targets: np.ndarray
    mode: str
    pairs: tuple
    counts: tuple
    counterfeits: tuple
    groups: tuple

    @property
    def n_releases(self) -> int:
        return len(self.pairs)

    def present(self, i: int) -> np.ndarray:
        out = np.zeros(len(self.targets), dtype=bool)
        out[self.pairs[i][0]] = True
        return out

    def subset(self, targets: np.ndarray) -> "VersionLinks":
        """The links of some targets only (indices), renumbered ``0..len-1``."""
        targets = np.asarray(targets, dtype=np.int64)
        remap = np.full(len(self.targets), -1, dtype=np.int64)
        remap[targets] = np.arange(len(targets))
        pairs = []
        for t, g in self.pairs:
            keep = remap[t] >= 0
            pairs.append((remap[t[keep]], g[keep]))
        return VersionLinks(self.targets[targets], self.mode, tuple(pairs), self.counts, self.counterfeits,
                            self.groups)


def _class_counts(release: Release, model: TransitionModel, index: int) -> np.ndarray:
    codes = model.indices(list(release.sensitive))
    if (codes < 0).any():
        bad = release.sensitive[int(np.flatnonzero(codes < 0)[0])]
        raise InputError(f"release {index}: sensitive value '{bad}' is not in the transition model",
                         key="transitions")
    counts = np.zeros((release.n_classes, len(model)), dtype=np.int64)
    np.add.at(counts, (release.classes, codes), 1)
    return counts


def _class_groups(release: Release) -> np.ndarray:
    first = np.zeros(release.n_classes, dtype=np.int64)
    first[release.classes[::-1]] = np.arange(len(release))[::-1]
    return np.asarray(release.group)[first] if release.group is not None else np.arange(1, release.n_classes + 1)


def _class_counterfeits(release: Release, groups: np.ndarray) -> np.ndarray:
    if not release.counterfeits:
        return np.zeros(len(groups), dtype=np.int64)
    return np.array([int(release.counterfeits.get(int(g), 0)) for g in groups], dtype=np.int64)


def containing_classes(release: Release, points: np.ndarray, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """``(point index, class index)`` pairs: the class's region contains the point (QI leaf codes over
    :attr:`Release.quasi`).  Per attribute a packed bitset ``leaf -> classes containing it`` is ANDed over the
    attributes: ``O(P * C / 8 * q)`` byte operations, no dense ``points x classes`` comparison per attribute."""
    n_cls = release.n_classes
    reps = np.zeros(n_cls, dtype=np.int64)
    reps[release.classes[::-1]] = np.arange(len(release))[::-1]
    packed = None
    for j, a in enumerate(release.qi_attributes):
        leaves = np.arange(a.hierarchy.n_leaves)[:, None]
        inc = (release.lo[reps, j][None, :] <= leaves) & (leaves <= release.hi[reps, j][None, :])
        if a.name in release.masks:
            m = release.masks[a.name][reps].astype(np.uint64)
            inc &= ((m[None, :] >> leaves.astype(np.uint64)) & np.uint64(1)).astype(bool)
        bits = np.packbits(inc, axis=1)[points[:, j]]
        packed = bits if packed is None else packed & bits
    if packed is None:  # no published QI: every class contains everyone
        p, c = np.meshgrid(np.arange(len(points)), np.arange(n_cls), indexing="ij")
        return p.ravel(), c.ravel()
    # the non-zero bytes first (8 classes each), then their bits
    pb, byte = np.nonzero(packed)
    bits = np.unpackbits(packed[pb, byte][:, None], axis=1)
    k, bit = np.nonzero(bits)
    cls = byte[k].astype(np.int64) * 8 + bit
    return pb[k], cls


def link_versions(view: SequenceView, model: TransitionModel, linkage: str = "auto") -> VersionLinks:
    """Link the versions of every record across the releases of ``view`` (see the module docstring)."""
    releases = view.releases
    if linkage == "auto":
        if all(r.uid is not None for r in releases):
            linkage = "uid"
        elif view.population and all(p is not None for p in view.population):
            linkage = "population"
        else:
            raise InputError("update_graph links the versions of a record by a 'uid' column in every release or "
                             "by the population (data or snapshots, with quasi_identifiers known)")
    counts = tuple(_class_counts(r, model, i) for i, r in enumerate(releases, 1))
    groups = tuple(_class_groups(r) for r in releases)
    counterfeits = tuple(_class_counterfeits(r, g) for r, g in zip(releases, groups))
    pairs = []
    if linkage == "uid":
        missing = [i for i, r in enumerate(releases, 1) if r.uid is None]
        if missing:
            raise InputError(f"release {missing[0]} has no 'uid' column (linkage: uid)")
        all_uid = np.concatenate([np.asarray(r.uid, dtype=object).astype(str) for r in releases])
        codes, uniques = pd.factorize(pd.Series(all_uid, dtype=object), sort=False)
        start = 0
        for i, r in enumerate(releases, 1):
            t = codes[start:start + len(r)].astype(np.int64)
            start += len(r)
            if len(np.unique(t)) != len(t):
                raise InputError(f"release {i}: a uid appears twice")
            pairs.append((t, r.classes.astype(np.int64)))
        targets = np.asarray(uniques, dtype=object)
    elif linkage == "population":
        pops = view.population
        if not pops or any(p is None for p in pops):
            raise InputError("linkage: population needs the population of every release (data or snapshots, "
                             "with quasi_identifiers known)")
        all_ids = np.concatenate([np.asarray(p.ids, dtype=object).astype(str) for p in pops])
        codes, uniques = pd.factorize(pd.Series(all_ids, dtype=object), sort=False)
        start = 0
        for r, pop in zip(releases, pops):
            t_all = codes[start:start + len(pop)].astype(np.int64)
            start += len(pop)
            cols = [list(pop.schema.quasi).index(n) for n in r.quasi]
            pts = pop.qi_codes[:, cols]
            p, c = containing_classes(r, pts)
            pairs.append((t_all[p], c.astype(np.int64)))
        targets = np.asarray(uniques, dtype=object)
    else:
        raise InputError(f"unknown linkage '{linkage}' (known: auto, uid, population)")
    return VersionLinks(targets, linkage, tuple(pairs), counts, counterfeits, groups)


def node_weights(links: VersionLinks, i: int, weights: str = "frequency") -> np.ndarray:
    """``(n_targets, V)`` node weights of release ``i`` (0-based): the probability of linking each target's
    version to each value from that release alone (Definition 10, second bullet); rows of absent targets are
    zero.  A target in several classes gets the average of their rows."""
    t, g = links.pairs[i]
    counts = links.counts[i].astype(np.float64)
    if weights == "uniform":
        rows = (counts > 0).astype(np.float64)
    else:
        rows = counts
    rows = rows / np.maximum(rows.sum(axis=1, keepdims=True), 1e-300)
    out = np.zeros((len(links.targets), counts.shape[1]))
    np.add.at(out, t, rows[g])
    mult = np.bincount(t, minlength=len(links.targets)).astype(np.float64)
    nz = mult > 0
    out[nz] /= mult[nz, None]
    return out
