"""Hypothesis strategies for releases of a raw table, each drawn as ``(release, truth)`` (re-exported by
:mod:`strategies`): :func:`cut_releases` (global recoding by a cut), :func:`local_recodings` (every cell
generalized on its own), :func:`mondrian_regions` (a random strict partition of the QI space into boxes),
:func:`generalized_releases` (any of them).  Release rows come in a random order; ``truth.person[i]`` is the
identifier behind row ``i``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from hypothesis import strategies as st

from multirelease.model.hierarchy import Hierarchy
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.schema import Attribute, Schema
from multirelease.model.table import Table

from strategies_tables import _BOOL, _ints, _pick

__all__ = ["cut_releases", "local_recodings", "mondrian_regions", "generalized_releases"]


# ---------------------------------------------------------------------- releases
def _published(draw, schema: Schema, vertical: bool) -> tuple[str, ...]:
    """All published attributes, or (``vertical``) a subset keeping at least one QI."""
    pub = schema.published
    if not vertical:
        return pub
    keep = draw(st.lists(_pick(pub), unique=True, min_size=1, max_size=len(pub)))
    if not any(schema[n].is_quasi for n in keep):
        keep.append(draw(_pick(schema.quasi)))
    return schema.restrict(keep)


def _mask(codes) -> int:
    m = 0
    for c in codes:
        m |= 1 << int(c)
    return m


def _range_mask(lo: int, hi: int) -> int:
    return ((1 << (hi - lo + 1)) - 1) << lo


def _assemble(table: Table, attributes: Sequence[str], rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              masks: dict, group: np.ndarray | None = None) -> tuple[Release, ReleaseTruth]:
    """A release of ``table``'s rows ``rows`` (in that order) with the given generalized cells."""
    schema = table.schema
    sens = [n for n in attributes if schema[n].is_sensitive]
    from multirelease.model.table import composite_sensitive

    sensitive = composite_sensitive(table.frame.iloc[rows], sens)
    others = [n for n in attributes if not schema[n].is_quasi and not schema[n].is_sensitive]
    other = table.frame.iloc[rows][others].reset_index(drop=True) if others else None
    masks = {k: np.asarray(v, dtype=np.uint64) for k, v in masks.items()}
    release = Release(schema=schema, attributes=tuple(attributes),
                      lo=np.asarray(lo, dtype=np.int32).reshape(len(rows), -1),
                      hi=np.asarray(hi, dtype=np.int32).reshape(len(rows), -1),
                      sensitive=np.asarray(sensitive, dtype=object), masks=masks, other=other, group=group)
    return release, ReleaseTruth.of_people(table.ids[rows])


def _random_cut(draw, h: Hierarchy) -> list[int]:
    """Nodes of a random cut: every leaf under exactly one of them."""
    cut: list[int] = []
    stack = [0]
    while stack:
        j = stack.pop()
        if h.is_leaf_node(j) or draw(_BOOL):
            cut.append(j)
        else:
            stack.extend(reversed(h.children[j]))
    return cut


@st.composite
def cut_releases(draw, table: Table, *, vertical: bool = False, shuffle: bool = True) -> tuple[Release, ReleaseTruth]:
    """Global recoding (Fung et al.'s cuts): each QI's leaves mapped to their ancestor in a random cut of its
    hierarchy.  ``subsets`` attributes get the node's leaves as mask.  Returns ``(release, truth)``."""
    schema = table.schema
    attributes = _published(draw, schema, vertical)
    quasi = [n for n in attributes if schema[n].is_quasi]
    n = len(table)
    rows = np.asarray(draw(st.permutations(range(n))) if shuffle else range(n), dtype=np.int64)
    all_q = list(schema.quasi)
    lo = np.zeros((n, len(quasi)), dtype=np.int32)
    hi = np.zeros_like(lo)
    masks = {}
    for j, name in enumerate(quasi):
        a = schema[name]
        h = a.hierarchy
        cut = _random_cut(draw, h)
        leaf_lo = np.zeros(h.n_leaves, dtype=np.int32)
        leaf_hi = np.zeros(h.n_leaves, dtype=np.int32)
        for node in cut:
            leaf_lo[h.node_lo[node]:h.node_hi[node] + 1] = h.node_lo[node]
            leaf_hi[h.node_lo[node]:h.node_hi[node] + 1] = h.node_hi[node]
        codes = table.qi_codes[rows, all_q.index(name)] if n else np.zeros(0, dtype=np.int32)
        lo[:, j] = leaf_lo[codes]
        hi[:, j] = leaf_hi[codes]
        if a.is_subsets:
            masks[name] = [_range_mask(int(x), int(y)) for x, y in zip(lo[:, j], hi[:, j])]
    return _assemble(table, attributes, rows, lo, hi, masks)


@st.composite
def local_recodings(draw, table: Table, *, vertical: bool = False,
                    shuffle: bool = True) -> tuple[Release, ReleaseTruth]:
    """Local recoding: every cell generalized on its own - to a random ancestor (``hierarchy``), a random
    interval containing the value (``interval``) or a random set containing it (``subsets``)."""
    schema = table.schema
    attributes = _published(draw, schema, vertical)
    quasi = [n for n in attributes if schema[n].is_quasi]
    n = len(table)
    rows = np.asarray(draw(st.permutations(range(n))) if shuffle else range(n), dtype=np.int64)
    all_q = list(schema.quasi)
    lo = np.zeros((n, len(quasi)), dtype=np.int32)
    hi = np.zeros_like(lo)
    masks: dict[str, list[int]] = {}
    for j, name in enumerate(quasi):
        a = schema[name]
        h = a.hierarchy
        col = []
        for c in (table.qi_codes[rows, all_q.index(name)] if n else []):
            c = int(c)
            if a.generalization == "hierarchy":
                depth = draw(_ints(0, h.height))
                node = h.node_at_or_above(c, h.height - depth)
                lo[len(col), j], hi[len(col), j] = h.node_lo[node], h.node_hi[node]
                col.append(0)
            elif a.generalization == "interval":
                left = draw(_ints(0, c))
                right = draw(_ints(0, h.n_leaves - 1 - c))
                lo[len(col), j], hi[len(col), j] = c - left, c + right
                col.append(0)
            else:
                extra = draw(_ints(0, (1 << h.n_leaves) - 1))
                m = extra | (1 << c)
                bits = [b for b in range(h.n_leaves) if m >> b & 1]
                lo[len(col), j], hi[len(col), j] = bits[0], bits[-1]
                col.append(m)
        if a.is_subsets:
            masks[name] = col
    return _assemble(table, attributes, rows, lo, hi, masks)


@st.composite
def mondrian_regions(draw, table: Table, *, vertical: bool = False, shuffle: bool = True,
                     max_boxes: int = 8, with_group: bool = False) -> tuple[Release, ReleaseTruth]:
    """A random strict partition (as Mondrian makes): the QI space is split recursively into disjoint boxes
    (``interval``: at a random point; ``hierarchy``: into the children of the box's node; ``subsets``: the
    box's set into two random non-empty parts).  Each non-empty box is published either as its whole region
    or as the closure of its rows (drawn per box); regions of different classes are disjoint.
    ``with_group`` adds the box number as the ``group`` column."""
    schema = table.schema
    attributes = _published(draw, schema, vertical)
    quasi = [n for n in attributes if schema[n].is_quasi]
    qattrs = [schema[n] for n in quasi]
    all_q = list(schema.quasi)
    codes = table.qi_codes[:, [all_q.index(n) for n in quasi]]
    n = len(table)

    def full(a: Attribute):
        h = a.hierarchy
        if a.is_subsets:
            return ("set", _range_mask(0, h.n_leaves - 1))
        if a.generalization == "hierarchy":
            return ("node", 0)
        return ("iv", 0, h.n_leaves - 1)

    def split(a: Attribute, dim):
        h = a.hierarchy
        if dim[0] == "node":
            kids = h.children[dim[1]]
            return [("node", k) for k in kids] if kids else None
        if dim[0] == "iv":
            if dim[1] == dim[2]:
                return None
            s = draw(_ints(dim[1], dim[2] - 1))
            return [("iv", dim[1], s), ("iv", s + 1, dim[2])]
        bits = [b for b in range(h.n_leaves) if dim[1] >> b & 1]
        if len(bits) < 2:
            return None
        part = draw(st.lists(_pick(bits), unique=True, min_size=1, max_size=len(bits) - 1))
        m = _mask(part)
        return [("set", m), ("set", dim[1] & ~m)]

    boxes = [tuple(full(a) for a in qattrs)]
    final = []
    while boxes:
        box = boxes.pop()
        if len(final) + len(boxes) + 1 >= max_boxes or not draw(_BOOL):
            final.append(box)
            continue
        j = draw(_ints(0, len(qattrs) - 1)) if qattrs else None
        parts = split(qattrs[j], box[j]) if j is not None else None
        if not parts:
            final.append(box)
            continue
        boxes.extend(box[:j] + (p,) + box[j + 1:] for p in parts)

    def inside(a: Attribute, dim, col):
        h = a.hierarchy
        if dim[0] == "node":
            return (h.node_lo[dim[1]] <= col) & (col <= h.node_hi[dim[1]])
        if dim[0] == "iv":
            return (dim[1] <= col) & (col <= dim[2])
        return np.array([bool(dim[1] >> int(c) & 1) for c in col], dtype=bool)

    box_of = np.full(n, -1, dtype=np.int64)
    for b, box in enumerate(final):
        hit = np.ones(n, dtype=bool)
        for j, (a, d) in enumerate(zip(qattrs, box)):
            hit &= inside(a, d, codes[:, j])
        box_of[hit] = b
    assert (box_of >= 0).all(), "the boxes must cover the QI space"
    lo = np.zeros((n, len(quasi)), dtype=np.int32)
    hi = np.zeros_like(lo)
    masks = {a.name: [0] * n for a in qattrs if a.is_subsets}
    for b, box in enumerate(final):
        members = np.flatnonzero(box_of == b)
        if not len(members):
            continue
        closure = draw(_BOOL)
        for j, (a, d) in enumerate(zip(qattrs, box)):
            h = a.hierarchy
            col = codes[members, j]
            if closure:
                clo, chi = a.closure(np.array([col.min()]), np.array([col.max()]))
                blo, bhi = int(clo[0]), int(chi[0])
                m = _mask(set(col.tolist()))
            elif d[0] == "node":
                blo, bhi, m = int(h.node_lo[d[1]]), int(h.node_hi[d[1]]), 0
            elif d[0] == "iv":
                blo, bhi, m = d[1], d[2], 0
            else:
                bits = [x for x in range(h.n_leaves) if d[1] >> x & 1]
                blo, bhi, m = bits[0], bits[-1], d[1]
            lo[members, j] = blo
            hi[members, j] = bhi
            if a.is_subsets:
                for r in members:
                    masks[a.name][r] = m
    rows = np.asarray(draw(st.permutations(range(n))) if shuffle else range(n), dtype=np.int64)
    group = (box_of[rows] + 1) if with_group else None
    return _assemble(table, attributes, rows, lo[rows], hi[rows], {k: [v[r] for r in rows] for k, v in masks.items()},
                     group=group)


def generalized_releases(table: Table, **kw) -> st.SearchStrategy[tuple[Release, ReleaseTruth]]:
    """Any of :func:`cut_releases`, :func:`local_recodings`, :func:`mondrian_regions`."""
    return st.one_of(cut_releases(table, **kw), local_recodings(table, **kw), mondrian_regions(table, **kw))
