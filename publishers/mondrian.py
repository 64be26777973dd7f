"""Mondrian: multidimensional strict partitioning (LeFevre, DeWitt, Ramakrishnan, ICDE 2006).

The table is split recursively.  At each partition the quasi-identifiers are tried in order of decreasing
normalized width; a split is *allowable* when every part still satisfies the principle (k-anonymity,
distinct or entropy l-diversity, or their conjunction).  Splits:

* ``interval`` attributes (numeric / ordered leaves): at the median code, ``x <= median`` vs ``x > median``
  (``x < median`` vs ``x >= median`` when the median is the maximum) - strict partitioning;
* ``hierarchy`` / ``subsets`` attributes: into the children of the lowest node covering the partition's
  values (the categorical variant of Mondrian over taxonomies).

A partition with no allowable split becomes an equivalence class and is published as the *closure* of its
records (Definition 2.2 of Shmueli & Tassa): the interval of its values, the lowest common node, or the set
of its values.  Cost: ``O(n log n * q)`` numpy work.

This module also registers ``naive``, the baseline way to republish: every snapshot anonymized alone with
Mondrian and no memory of earlier releases (the strawman of Fung et al., Li & Zhou and Barbosa et al.).
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.params import Interval, Options
from multirelease.model.principles import Principle
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.schema import Attribute
from multirelease.model.table import Table

from .base import PublisherBase, PublishResult

__all__ = ["Mondrian", "NaiveRepublication", "mondrian_partition", "release_from_partition"]


def mondrian_partition(codes: np.ndarray, sensitive: np.ndarray, attributes: Sequence[Attribute],
                       principle: Principle, *, accept: Callable[[np.ndarray], bool] | None = None
                       ) -> list[np.ndarray]:
    """Split rows into Mondrian partitions, each satisfying ``principle``.

    Parameters
    ----------
    codes : ndarray (n, q) of int
        Leaf codes of the quasi-identifiers to partition on.
    sensitive : ndarray (n,) of int
        Sensitive value codes ``0..V-1`` (all zero when no principle needs them).
    attributes : sequence of Attribute
        The attributes of ``codes``' columns (their hierarchies and generalization models).
    principle : Principle
    accept : callable, optional
        An extra condition on every class: ``accept(rows)`` (row indices into ``codes``) must be true for the
        whole table and for every part of an allowable split (e.g. the per-individual budgets of
        :mod:`publishers.global_guarantee`).

    Returns
    -------
    list of ndarray
        Row indices of every partition, in depth-first order of the split tree.

    Raises
    ------
    InputError
        When the whole table does not satisfy the principle (no partition can).
    """
    codes = np.asarray(codes)
    sensitive = np.asarray(sensitive, dtype=np.int64)
    n, q = codes.shape
    n_values = int(sensitive.max()) + 1 if n else 1
    if n == 0:
        return []
    if not principle.ok(np.bincount(sensitive, minlength=n_values)):
        raise InputError(f"the table of {n} records cannot satisfy {principle.describe()} even as one class")
    if accept is not None and not accept(np.arange(n)):
        raise InputError(f"the table of {n} records cannot satisfy the publisher's condition even as one class")
    span = np.array([max(a.hierarchy.n_leaves - 1, 1) for a in attributes], dtype=np.float64)
    interval = np.array([a.generalization == "interval" for a in attributes])
    child_lo = {}
    lca: dict[tuple[int, int, int], int] = {}

    def covering_node(j: int, a: int, b: int) -> int:
        key = (j, a, b)
        node = lca.get(key)
        if node is None:
            h = attributes[j].hierarchy
            nlo, nhi = h.node_closure(np.array([a]), np.array([b]))
            node = lca[key] = h._range_index[(int(nlo[0]), int(nhi[0]))]
        return node
    final: list[np.ndarray] = []
    stack = [np.arange(n)]
    while stack:
        idx = stack.pop()
        if len(idx) < 2 * principle.k or q == 0:
            final.append(idx)
            continue
        sub = codes[idx]
        lo = sub.min(axis=0)
        hi = sub.max(axis=0)
        width = np.empty(q)
        for j in range(q):
            if interval[j] or lo[j] == hi[j]:
                width[j] = (hi[j] - lo[j]) / span[j]
            else:
                h = attributes[j].hierarchy
                node = covering_node(j, int(lo[j]), int(hi[j]))
                width[j] = (h.node_hi[node] - h.node_lo[node]) / span[j]
        split_done = False
        for j in np.argsort(-width, kind="stable"):
            if width[j] <= 0:
                break
            col = sub[:, j]
            if interval[j]:
                m = len(col)
                median = np.partition(col, (m - 1) // 2)[(m - 1) // 2]
                left = col <= median
                if left.all():
                    left = col < median
                assign = (~left).astype(np.int64)
                n_parts = 2
            else:
                h = attributes[j].hierarchy
                node = covering_node(j, int(lo[j]), int(hi[j]))
                if (j, node) not in child_lo:  # node ids are per hierarchy: key by attribute too
                    child_lo[j, node] = h.node_lo[list(h.children[node])]
                bounds = child_lo[j, node]
                assign = np.searchsorted(bounds, col, side="right") - 1
                n_parts = len(bounds)
            counts = np.zeros((n_parts, n_values), dtype=np.int64)
            np.add.at(counts, (assign, sensitive[idx]), 1)
            nonempty = counts.sum(axis=1) > 0
            if nonempty.sum() < 2 or not principle.classes_ok(counts[nonempty]).all():
                continue
            order = np.argsort(assign, kind="stable")
            sizes = np.bincount(assign, minlength=n_parts)
            parts = np.split(idx[order], np.cumsum(sizes)[:-1])
            if accept is not None and not all(accept(p) for p in parts if len(p)):
                continue
            stack.extend(p for p in reversed(parts) if len(p))
            split_done = True
            break
        if not split_done:
            final.append(idx)
    return final


def release_from_partition(snapshot: Table, attributes: Sequence[str], partitions: Sequence[np.ndarray],
                           rng: np.random.Generator) -> tuple[Release, ReleaseTruth]:
    """Publish each partition as one class generalized to the closure of its records.

    Rows are grouped by class; the class order and the row order inside each class are random (``rng``), so
    that nothing about the raw table leaks through the order of the file.
    """
    schema = snapshot.schema
    attributes = schema.restrict(attributes)
    quasi = [n for n in attributes if schema[n].is_quasi]
    all_q = list(schema.quasi)
    cols = [all_q.index(n) for n in quasi]
    codes = snapshot.qi_codes[:, cols]
    perm_classes = rng.permutation(len(partitions))
    rows = np.concatenate([rng.permutation(partitions[c]) for c in perm_classes]) if len(partitions) else \
        np.zeros(0, dtype=np.int64)
    sizes = np.array([len(partitions[c]) for c in perm_classes], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else np.zeros(0, dtype=np.int64)
    group = np.repeat(np.arange(1, len(sizes) + 1), sizes)
    sub = codes[rows]
    lo = np.zeros((len(rows), len(quasi)), dtype=np.int32)
    hi = np.zeros_like(lo)
    masks = {}
    if len(rows):
        for j, name in enumerate(quasi):
            a = schema[name]
            clo = np.minimum.reduceat(sub[:, j], starts)
            chi = np.maximum.reduceat(sub[:, j], starts)
            clo, chi = a.closure(clo, chi)
            lo[:, j] = np.repeat(clo, sizes)
            hi[:, j] = np.repeat(chi, sizes)
            if a.is_subsets:
                bits = np.left_shift(np.uint64(1), sub[:, j].astype(np.uint64))
                cm = np.bitwise_or.reduceat(bits, starts)
                masks[name] = np.repeat(cm, sizes)
    frame = snapshot.frame.iloc[rows]
    sens_names = [n for n in attributes if schema[n].is_sensitive]
    sensitive = snapshot.sensitive[rows] if sens_names == list(schema.sensitive) else \
        _composite(frame, sens_names)
    others = [n for n in attributes if not schema[n].is_quasi and not schema[n].is_sensitive]
    other = frame[others].reset_index(drop=True) if others else None
    release = Release(schema=schema, attributes=tuple(attributes), lo=lo, hi=hi, sensitive=sensitive,
                      masks=masks, other=other, group=group)
    truth = ReleaseTruth.of_people(snapshot.ids[rows])
    return release, truth


def _composite(frame, names):
    from multirelease.model.table import composite_sensitive

    return composite_sensitive(frame, names)


class Mondrian(PublisherBase):
    """k-anonymous and / or l-diverse Mondrian release of one snapshot.

    Parameters
    ----------
    k : int >= 1, default 1
        k-anonymity: every class of the release holds at least ``k`` records (LeFevre et al.; 1 leaves it to
        ``l``).
    l : number >= 1, default 1
        l-diversity: every class holds at least ``l`` distinct sensitive values (distinct l-diversity unless
        ``l_kind: entropy``; 1 leaves it to ``k``).
    l_kind : "distinct" | "entropy", default "distinct"
        Which l-diversity ``l`` means: ``distinct`` (at least ``l`` distinct values in a class) or ``entropy``
        (the entropy of a class's sensitive values at least ``log l``).
    """

    name = "mondrian"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ('LeFevre, DeWitt, Ramakrishnan, "Mondrian Multidimensional K-Anonymity" (ICDE 2006): '
             "strict multidimensional "
             "partitioning; the single-release generalizer of Shmueli & Tassa and Barbosa et al.")
    params = {"k": Interval(int, 2, None), "l": Interval(float, 1, None), "l_kind": Options(("distinct", "entropy"))}
    defaults = {"k": 1, "l": 1.0, "l_kind": "distinct"}
    guarantee = ("linking.k >= {k}", ("linking.l_distinct >= {l}", "l > 1"))
    #: a month's release depends on its snapshot alone: ``release --repair`` may raise k and l
    repair = {"k": "times", "l": "plus"}
    #: its state is a count of releases, and a union of two k-anonymous, distinct- or entropy-l-diverse classes
    #: is so too: a repair may merge the classes its witnesses name
    merges_classes = True
    #: k read as Fung et al.'s crack sizes (their section 7.1 publishes Adult five times by Mondrian, k = 40)
    claims = ("correspondence.FA >= {k}", "correspondence.CA >= {k}", "correspondence.BA >= {k}")
    #: a single-release guarantee: a linking column unknown to the adversary changes no class of one release
    linking_default = "keep"
    linking_covered = True

    def check_config(self, file, key):
        if self.config["k"] <= 1 and self.config["l"] <= 1:
            raise InputError(f"{self.name} needs k >= 2 or l > 1", file=file, key=key)

    @property
    def principle(self) -> Principle:
        return Principle(k=self.config["k"], l=self.config["l"], l_kind=self.config["l_kind"])

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        principle = self.principle
        attributes = self.published_attributes(snapshot, attributes, need_sensitive=principle.needs_sensitive,
                                               reason=f" with l = {principle.l}")
        quasi = [n for n in attributes if schema[n].is_quasi]
        cols = [list(schema.quasi).index(n) for n in quasi]
        sens_codes = _factorize(snapshot.sensitive) if principle.needs_sensitive else np.zeros(len(snapshot), np.int64)
        parts = mondrian_partition(snapshot.qi_codes[:, cols], sens_codes, [schema[n] for n in quasi], principle)
        release, truth = release_from_partition(snapshot, attributes, parts, rng)
        prev = int((state or {}).get("releases", 0))
        return PublishResult(release=release, truth=truth, state={"releases": prev + 1})


class NaiveRepublication(Mondrian):
    """The naive way to republish: each snapshot anonymized alone by Mondrian, nothing remembered.

    Every release satisfies the principle on its own; combined, they leak (the baselines of Fung et al.
    section 6, Li & Zhou section VI and Barbosa et al. section 7).
    """

    name = "naive"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ("the naive republication baseline of Fung et al. section 6 (papers/002), Li & Zhou section VI "
             "(papers/000) "
             "and Barbosa et al. section 7 (papers/003), with Mondrian (LeFevre et al., ICDE 2006)")


def _factorize(values: np.ndarray) -> np.ndarray:
    import pandas as pd

    codes, _ = pd.factorize(pd.Series(values, dtype=object), sort=True)
    return codes.astype(np.int64)
