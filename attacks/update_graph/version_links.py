"""Linking the versions of a record across releases (Li & Zhou, Definition 6: the external knowledge
tables ``E_i``) - the first step of the update-graph attack (:mod:`attacks.update_graph.attack`).

``linkage: uid`` follows the releases' ``uid`` column (a stable record id): a uid's version at release ``i``
is in the QI-group of its row.  ``linkage: population`` follows the population (``view.population``:
identifiers and QI values of every snapshot): a person's version is in the QI-group(s) whose region contains
the person's QI point.  :func:`node_weights` gives the SUG's node weights (Definition 10) per release.

**Scale.**  Generalized regions overlap: on Adult under 4-Distinct a person's point lies in ~1,500 of ~4,500
classes, 30 million (person, class) pairs in the tenth release.  People at one QI point are interchangeable
here (the same candidate classes, the same node weights), so the links are kept per *location* - a distinct
QI point - as a sparse ``locations x classes`` CSR matrix (the bitsets unpacked a chunk of points at a time),
and the node weights are one sparse product per release (``member @ rows``), spread to the people at each
point.  The rows are summed in ascending class order, the order the per-pair sum used, so the weights are the
same floating-point numbers.  ``adult_updates_m_distinct``: 162 s / 5.8 GB -> 31 s / 0.62 GB for the run.

**Linking columns** (:mod:`multirelease.model.linking`).  With persistent linking columns a record version's value is
its *linked value* (sensitive value and linking tuple, :meth:`multirelease.model.linking.Linking.values`): a record
keeps its linking tuple across its versions while its sensitive part follows ``P_trans``.
:func:`linked_model` builds the product update model over the linked values observed in the releases only -
``P((s, t) -> (s', t')) = P_trans(s, s')`` if ``t == t'``, else 0 (and ``P_trans^k`` over ``k`` steps: the
intermediate values of a record absent in between are any sensitive values, with its tuple) - so the SUG of
Definition 10 is built on linked values, at the cost of the distinct published tuples.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse

from multirelease.errors import InputError
from multirelease.model.linking import SEPARATOR
from multirelease.model.release import Release
from multirelease.model.sequence import SequenceView
from multirelease.model.transitions import TransitionModel

__all__ = ["LinkedTransitions", "VersionLinks", "containing_classes", "linked_model", "containing_matrix", "link_ids",
           "link_release", "link_versions", "node_weights"]


@dataclass(frozen=True, eq=False)
class VersionLinks:
    """Which QI-group(s) each target (a uid or a person) is in at each release.

    Stored factored, since under population linkage a person's QI point lies in the (possibly overlapping)
    regions of many classes and everyone at the same point shares them: per release the targets present (in
    the order of the release's rows or population), the *location* of each (a row of the release under uid
    linkage, a distinct QI point of the population under population linkage), and a sparse ``locations x
    classes`` membership matrix.  Persons at one point are interchangeable for the node weights (Definition
    10), so these are computed once per location; nothing is ``targets x classes``.

    Attributes
    ----------
    targets : ndarray of object
        The target ids.
    mode : "uid" or "population"
    who : tuple of ndarray
        Per release: the indices of the targets present, in release-row (uid) or population order.
    where : tuple of ndarray
        Per release: the location (row of ``member``) of each target in ``who``.
    member : tuple of scipy.sparse.csr_matrix
        Per release: ``(n_locations, n_classes)`` 0/1 membership, column indices ascending in every row; every
        row has at least one entry (a person contained in no class is not present).
    counts : tuple of ndarray
        Per release: ``(n_classes, V)`` counts of each value of the transition model's domain in each class.
    counterfeits : tuple of ndarray
        Per release: published counterfeit count of each class (0 without statistics).
    groups : tuple of ndarray
        Per release: the published group id of each class (for witnesses).
    """

    targets: np.ndarray
    mode: str
    who: tuple
    where: tuple
    member: tuple
    counts: tuple
    counterfeits: tuple
    groups: tuple

    @property
    def n_releases(self) -> int:
        return len(self.who)

    def present(self, i: int) -> np.ndarray:
        out = np.zeros(len(self.targets), dtype=bool)
        out[self.who[i]] = True
        return out

    def pairs_of(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Release ``i``'s ``(target index, class index)`` pairs, target by target (in :attr:`who` order),
        classes ascending - one pair per class containing the target (``O(pairs)`` memory: for the joint
        attack and witnesses, not for the population-wide figures)."""
        m = self.member[i]
        sizes = np.diff(m.indptr)[self.where[i]]
        t = np.repeat(self.who[i], sizes)
        starts = np.repeat(m.indptr[self.where[i]] - np.cumsum(sizes) + sizes, sizes)
        g = m.indices[starts + np.arange(len(t))].astype(np.int64)
        return t.astype(np.int64), g

    @property
    def pairs(self) -> tuple:
        """Every release's :meth:`pairs_of` (materialized on each call)."""
        return tuple(self.pairs_of(i) for i in range(self.n_releases))

    def classes_of(self, i: int, target: int) -> np.ndarray:
        """The classes of release ``i`` containing ``target`` (ascending; empty when absent)."""
        hit = np.flatnonzero(self.who[i] == target)
        if not len(hit):
            return np.zeros(0, dtype=np.int64)
        m = self.member[i]
        loc = self.where[i][hit[0]]
        return m.indices[m.indptr[loc]:m.indptr[loc + 1]].astype(np.int64)

    def subset(self, targets: np.ndarray) -> "VersionLinks":
        """The links of some targets only (indices), renumbered ``0..len-1``; the membership keeps the rows of
        their locations only (a row's node weights do not depend on the other rows)."""
        targets = np.asarray(targets, dtype=np.int64)
        remap = np.full(len(self.targets), -1, dtype=np.int64)
        remap[targets] = np.arange(len(targets))
        who, where, member = [], [], []
        for w, loc, m in zip(self.who, self.where, self.member):
            keep = remap[w] >= 0
            who.append(remap[w[keep]])
            rows, at = np.unique(loc[keep], return_inverse=True)
            where.append(at.reshape(-1).astype(np.int64))
            member.append(m[rows])
        return VersionLinks(self.targets[targets], self.mode, tuple(who), tuple(where), tuple(member), self.counts,
                            self.counterfeits, self.groups)


@dataclass(frozen=True, eq=False)
class LinkedTransitions(TransitionModel):
    """The update model of linked values (see the module docstring): ``values`` are the linked values observed
    in the releases, ``base`` the public ``P_trans`` over sensitive values, ``sens[v]`` the index in ``base`` of
    linked value ``v``'s sensitive part, ``tuples[v]`` a code of its linking tuple.  ``P^k`` is the base
    model's ``P_trans^k`` between the sensitive parts, zero between different tuples (a block-diagonal
    product: the linking tuple is persistent)."""

    base: TransitionModel | None = None
    sens: np.ndarray | None = None
    tuples: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def _same(self) -> np.ndarray:
        return self.tuples[:, None] == self.tuples[None, :]

    def steps(self, k: int) -> np.ndarray:
        key = ("steps", max(int(k), 1))
        if key not in self._cache:
            self._cache[key] = self.base.steps(k)[np.ix_(self.sens, self.sens)] & self._same()
        return self._cache[key]

    def step_prob(self, k: int) -> np.ndarray:
        key = ("prob", max(int(k), 1))
        if key not in self._cache:
            self._cache[key] = np.where(self._same(), self.base.step_prob(k)[np.ix_(self.sens, self.sens)], 0.0)
        return self._cache[key]


def linked_model(base: TransitionModel, values) -> LinkedTransitions:
    """The product update model over the linked values ``values`` (every release's, concatenated: the
    distinct ones, ordered by sensitive value in ``base``'s order, then by linking tuple).

    Raises
    ------
    InputError
        A sensitive value outside ``base``'s domain.
    """
    distinct = pd.unique(pd.Series(np.asarray(values, dtype=object), dtype=object))
    parts = [str(v).split(SEPARATOR, 1) for v in distinct]
    sens = base.indices([p[0] for p in parts])
    if (sens < 0).any():
        bad = parts[int(np.flatnonzero(sens < 0)[0])][0]
        raise InputError(f"sensitive value '{bad}' is not in the transition model", key="transitions")
    tup = [p[1] if len(p) > 1 else "" for p in parts]
    order = sorted(range(len(parts)), key=lambda j: (int(sens[j]), tup[j]))
    tcodes, _ = pd.factorize(pd.Series([tup[j] for j in order], dtype=object), sort=True)
    vals = tuple(str(distinct[j]) for j in order)
    sens = np.asarray(sens[order], dtype=np.int64)
    tcodes = np.asarray(tcodes, dtype=np.int64)
    same = tcodes[:, None] == tcodes[None, :]
    prob = np.where(same, base.prob[np.ix_(sens, sens)], 0.0)
    return LinkedTransitions(vals, prob, f"{base.description} x persistent linking tuples", base=base, sens=sens,
                             tuples=tcodes)


def _class_counts(release: Release, model: TransitionModel, index: int, values=None) -> np.ndarray:
    """Per class, the count of each value of ``model``'s domain: the release's sensitive values, or its linked
    values ``values`` (:class:`LinkedTransitions`)."""
    vals = list(release.sensitive) if values is None else list(values)
    codes = model.indices(vals)
    if (codes < 0).any():
        bad = vals[int(np.flatnonzero(codes < 0)[0])]
        if values is not None:
            bad = str(bad).split(SEPARATOR, 1)[0]
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


def _class_bitsets(release: Release) -> list[np.ndarray]:
    """Per published QI attribute, the packed bitset ``leaf -> classes whose region contains the leaf``
    (``(n_leaves, ceil(C / 8))`` uint8, a class's bit set where its range - and its mask for ``subsets``
    attributes - holds the leaf)."""
    reps = np.zeros(release.n_classes, dtype=np.int64)
    reps[release.classes[::-1]] = np.arange(len(release))[::-1]
    out = []
    for j, a in enumerate(release.qi_attributes):
        leaves = np.arange(a.hierarchy.n_leaves)[:, None]
        inc = (release.lo[reps, j][None, :] <= leaves) & (leaves <= release.hi[reps, j][None, :])
        if a.name in release.masks:
            m = release.masks[a.name][reps].astype(np.uint64)
            inc &= ((m[None, :] >> leaves.astype(np.uint64)) & np.uint64(1)).astype(bool)
        out.append(np.packbits(inc, axis=1))
    return out


def _containing_chunks(release: Release, points: np.ndarray, chunk: int):
    """Yield ``(first point, (chunk, C) bool containment)`` for consecutive chunks of ``points``: the per
    attribute bitsets ANDed (``O(P * C / 8 * q)`` byte operations), then unpacked one chunk at a time."""
    n_cls = release.n_classes
    bitsets = _class_bitsets(release)
    for s in range(0, len(points), chunk):
        pts = points[s:s + chunk]
        if not bitsets:  # no published QI: every class contains everyone
            yield s, np.ones((len(pts), n_cls), dtype=bool)
            continue
        packed = bitsets[0][pts[:, 0]]
        for j in range(1, len(bitsets)):
            packed &= bitsets[j][pts[:, j]]
        yield s, np.unpackbits(packed, axis=1, count=n_cls).view(bool)


def containing_classes(release: Release, points: np.ndarray, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """``(point index, class index)`` pairs: the class's region contains the point (QI leaf codes over
    :attr:`Release.quasi`), point by point with classes ascending.  Per attribute a packed bitset ``leaf ->
    classes containing it`` is ANDed over the attributes: ``O(P * C / 8 * q)`` byte operations, no dense
    ``points x classes`` comparison per attribute (``chunk`` points are unpacked at a time)."""
    ps, cs = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for s, inc in _containing_chunks(release, np.asarray(points), chunk):
        p, c = np.nonzero(inc)
        ps.append(p + s)
        cs.append(c.astype(np.int64))
    return np.concatenate(ps), np.concatenate(cs)


def _unique_rows(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(points, axis=0, return_index=True, return_inverse=True)``, by one integer key per row (the
    codes in mixed radix, whose order is the rows' lexicographic order) when it fits in 62 bits."""
    if points.ndim == 2 and points.shape[1] and len(points) and np.issubdtype(points.dtype, np.integer):
        p = points.astype(np.int64)
        low = p.min(axis=0)
        span = p.max(axis=0) - low + 1
        if float(np.prod(span.astype(np.float64))) < 2.0 ** 62:
            radix = np.concatenate([np.cumprod(span[::-1])[::-1][1:], [1]]).astype(np.int64)
            _, first, inverse = np.unique((p - low) @ radix, return_index=True, return_inverse=True)
            return points[first], first, inverse
    return np.unique(points, axis=0, return_index=True, return_inverse=True)


def containing_matrix(release: Release, points: np.ndarray, chunk: int = 1024) -> tuple[np.ndarray, sparse.csr_matrix]:
    """The distinct points among ``points`` and which classes contain each: ``(inverse, member)`` with
    ``points[k]`` at row ``inverse[k]`` of the ``(n_distinct, n_classes)`` CSR boolean matrix ``member``
    (column indices ascending).  People at one QI point are located alike, so each point is tested once."""
    n_cls = release.n_classes
    points = np.asarray(points)
    if len(points) == 0:
        return np.zeros(0, dtype=np.int64), sparse.csr_matrix((0, n_cls), dtype=bool)
    _, first, inverse = _unique_rows(points)
    sizes, indices = [], []
    for _, inc in _containing_chunks(release, points[first], chunk):
        flat = np.flatnonzero(inc)  # row-major: row k's classes ascending, then row k + 1's
        start = np.arange(len(inc) + 1, dtype=np.int64) * n_cls
        size = np.diff(np.searchsorted(flat, start))
        sizes.append(size)
        flat -= np.repeat(start[:-1], size)  # the class of each (a subtraction: no division)
        indices.append(flat.astype(np.int32))
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(sizes))])
    indices = np.concatenate(indices)
    member = sparse.csr_matrix((np.ones(len(indices), dtype=bool), indices, indptr), shape=(len(first), n_cls))
    return inverse.reshape(-1).astype(np.int64), member


def link_versions(view: SequenceView, model: TransitionModel, linkage: str = "auto") -> VersionLinks:
    """Link the versions of every record across the releases of ``view`` (see the module docstring)."""
    releases = view.releases
    if linkage == "auto":
        if all(r.uid is not None for r in releases):
            linkage = "uid"
        elif view.population and all(p is not None for p in view.population):
            linkage = "population"
        else:
            raise InputError("update_graph needs to link the versions of a record across the releases: by a 'uid' "
                             "column in every release, or by the population behind every release (the spec's "
                             "'data' or each release's 'snapshot', with the adversary's quasi_identifiers known)")
    if isinstance(model, LinkedTransitions):  # linked values: the sensitive value and the linking tuple
        counts = tuple(_class_counts(r, model, i, view.linked_values(i - 1)) for i, r in enumerate(releases, 1))
    else:
        counts = tuple(_class_counts(r, model, i) for i, r in enumerate(releases, 1))
    groups = tuple(_class_groups(r) for r in releases)
    counterfeits = tuple(_class_counterfeits(r, g) for r, g in zip(releases, groups))
    who, where, member = [], [], []
    if linkage not in ("uid", "population"):
        raise InputError(f"unknown linkage '{linkage}' (known: auto, uid, population)")
    if linkage == "uid":
        missing = [i for i, r in enumerate(releases, 1) if r.uid is None]
        if missing:
            raise InputError(f"release {missing[0]} has no 'uid' column (linkage: uid)")
    else:
        pops = view.population
        if not pops or any(p is None for p in pops):
            raise InputError("linkage: population needs the population of every release (data or snapshots, "
                             "with quasi_identifiers known)")
    ids = [link_ids(r, pop, linkage) for r, pop in zip(releases, view.population or [None] * len(releases))]
    codes, uniques = pd.factorize(pd.Series(np.concatenate(ids), dtype=object), sort=False)
    start = 0
    for i, (r, t) in enumerate(zip(releases, ids), 1):
        w, loc, m = link_release(r, view.population[i - 1] if linkage == "population" else None,
                                 codes[start:start + len(t)].astype(np.int64), i)
        start += len(t)
        who.append(w)
        where.append(loc)
        member.append(m)
    targets = np.asarray(uniques, dtype=object)
    return VersionLinks(targets, linkage, tuple(who), tuple(where), tuple(member), counts, counterfeits, groups)


def link_ids(release: Release, population, linkage: str) -> np.ndarray:
    """The target ids of one release: its uids (``uid``) or the ids of the population behind it."""
    if linkage == "uid":
        return np.asarray(release.uid, dtype=object).astype(str)
    return np.asarray(population.ids, dtype=object).astype(str)


def link_release(r: Release, pop, t: np.ndarray, index: int) -> tuple[np.ndarray, np.ndarray, sparse.csr_matrix]:
    """``(who, where, member)`` of one release (:class:`VersionLinks`): ``t`` the target index of each of its
    uids (``pop`` None, uid linkage) or of each person of its population ``pop`` (population linkage)."""
    if pop is None:
        if len(np.unique(t)) != len(t):
            raise InputError(f"release {index}: a uid appears twice")
        # a uid's location is its row, in its row's class
        n = len(r)
        return t, np.arange(n, dtype=np.int64), sparse.csr_matrix(
            (np.ones(n, dtype=bool), r.classes.astype(np.int32), np.arange(n + 1)), shape=(n, r.n_classes))
    cols = [list(pop.schema.quasi).index(n) for n in r.quasi]
    inverse, m = containing_matrix(r, pop.qi_codes[:, cols])
    inside = np.diff(m.indptr)[inverse] > 0  # a person no class contains has no version here
    return t[inside], inverse[inside], m


def node_weights(links: VersionLinks, i: int, weights: str = "frequency") -> np.ndarray:
    """``(n_targets, V)`` node weights of release ``i`` (0-based): the probability of linking each target's
    version to each value from that release alone (Definition 10, second bullet); rows of absent targets are
    zero.  A target in several classes gets the average of their rows, computed once per location as a
    sparse product (``member @ rows``: the rows summed in ascending class order) and spread to its people."""
    counts = links.counts[i].astype(np.float64)
    if weights == "uniform":
        rows = (counts > 0).astype(np.float64)
    else:
        rows = counts
    rows = rows / np.maximum(rows.sum(axis=1, keepdims=True), 1e-300)
    m = links.member[i]
    ones = sparse.csr_matrix((np.ones(len(m.indices)), m.indices, m.indptr), shape=m.shape, copy=False)
    per_loc = np.asarray(ones @ rows)  # m's structure shared, not copied (m.astype copies the indices too)
    mult = np.diff(m.indptr).astype(np.float64)
    nz = mult > 0
    per_loc[nz] /= mult[nz, None]
    out = np.zeros((len(links.targets), counts.shape[1]))
    out[links.who[i]] = per_loc[links.where[i]]
    return out
