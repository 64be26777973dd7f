"""Hypothesis strategies shared by every property test of multirelease.

Everything is small by default (tables of 1-30 rows, hierarchies of 2-12 leaves) so that property tests
stay fast; every size is a parameter.  The building blocks:

* hierarchies: :func:`hierarchy_specs` / :func:`hierarchies` (random nested taxonomies, built with
  :meth:`Hierarchy.from_nested`), :func:`numeric_hierarchies` (:meth:`Hierarchy.numeric`),
  :func:`ordered_hierarchies` (taxonomies over ascending, gapped numbers: intervals are valid values);
* :func:`schemas` - 1-4 quasi-identifiers (``hierarchy`` / ``interval`` / ``subsets`` models), one
  sensitive attribute over a small flat domain, optionally an identifier, in a random column order;
* :func:`raw_tables` - a validated :class:`Table` of a schema;
* releases of a raw table, each drawn as ``(release, truth)``: :func:`cut_releases` (global recoding by a
  cut), :func:`local_recodings` (every cell generalized on its own), :func:`mondrian_regions` (a random
  strict partition of the QI space into boxes);
* :func:`update_streams` - a list of :class:`Change` that applies in sequence without error.

Release rows come in a random order; ``truth.person[i]`` is the identifier behind row ``i``.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from multirelease.hierarchy import Hierarchy
from multirelease.release import Release, ReleaseTruth
from multirelease.schema import Attribute, Schema
from multirelease.table import Change, Table

__all__ = [
    "hierarchy_specs", "hierarchies", "numeric_hierarchies", "ordered_hierarchies", "any_hierarchies",
    "schemas", "raw_tables", "schemas_and_tables",
    "cut_releases", "local_recodings", "mondrian_regions", "generalized_releases",
    "update_streams",
    "leaf_set", "flatten_leaves",
]

#: awkward but legal leaf labels (CSV / pandas NA look-alikes, spaces, non-ASCII); plain ``v<i>`` first so
#: that shrinking goes to boring labels
SPECIAL_LABELS = ("NA", "None", "null", "a b", "x-y_z", "Été", "#1", "true")
SENSITIVE_LABELS = ("flu", "HIV", "cancer", "none", "NA", "gastritis")
ATTRIBUTE_NAMES = ("age", "zip", "job", "marital-status", "sex", "native country", "city", "edu")


# cached strategy objects: hypothesis validates every new strategy object on its first draw, which
# dominates the cost of the many small draws below
_BOOL = st.booleans()


@functools.lru_cache(maxsize=4096)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


def _pick(values) -> st.SearchStrategy:
    return _pick_cached(tuple(values))


@functools.lru_cache(maxsize=4096)
def _pick_cached(values: tuple) -> st.SearchStrategy:
    return st.sampled_from(values)



# ---------------------------------------------------------------------- hierarchies
def _tree(draw, leaves: Sequence[str], depth: int, max_depth: int, unary: bool, new_label, as_dict: bool) -> Any:
    """Children of a node at ``depth`` whose leaves (in order) are ``leaves``: a list or a mapping."""
    children: list[tuple[str, Any]] = []  # (label, body); body None for a leaf
    can_nest = depth + 2 <= max_depth
    if not can_nest or (len(leaves) == 1 and not unary) or not draw(_BOOL):
        children = [(x, None) for x in leaves]
    else:
        n = len(leaves)
        k = draw(_ints(1 if unary else 2, max(1 if unary else 2, min(4, n))))
        cuts = sorted(draw(st.lists(_ints(1, n - 1), unique=True, min_size=k - 1, max_size=k - 1))) \
            if n > 1 else []
        groups = [list(leaves[a:b]) for a, b in zip([0] + cuts, cuts + [n])]
        for g in groups:
            if len(groups) == 1 or ((len(g) > 1 or unary) and draw(_BOOL)):
                label = new_label(g)
                children.append((label, _tree(draw, g, depth + 1, max_depth, unary, new_label,
                                              draw(_BOOL))))
            else:
                children.extend((x, None) for x in g)
    if as_dict:
        return {lab: ([] if body is None and draw(_BOOL) else body) for lab, body in children}
    return [lab if body is None else {lab: body} for lab, body in children]


@st.composite
def hierarchy_specs(draw, *, min_leaves: int = 2, max_leaves: int = 12, max_depth: int = 3, unary: bool = True,
                    leaf_labels: Sequence[str] | None = None, named_root: bool | None = None) -> Any:
    """A nested YAML-like taxonomy spec for :meth:`Hierarchy.from_nested` (lists and mappings mixed).

    Leaves are unique labels (``v<i>`` and some awkward ones: ``NA``, ``a b``, ``Été``...), inner nodes
    ``g<i>``; leaves sit at depth ``1..max_depth``; ``unary`` allows inner nodes with one child (chains, as in
    ARX files).  ``leaf_labels`` fixes the leaves (in depth-first order); ``named_root`` picks a
    single-key mapping (named root) vs. an anonymous ``*`` root (drawn when ``None``).
    """
    if leaf_labels is None:
        n = draw(_ints(min_leaves, max_leaves))
        pool = [f"v{i}" for i in range(n)] + list(SPECIAL_LABELS)
        leaf_labels = draw(st.lists(_pick(pool), unique=True, min_size=n, max_size=n))
    counter = iter(range(10_000))

    def new_label(group):
        return f"g{next(counter)}"

    named = draw(_BOOL) if named_root is None else named_root
    body = _tree(draw, list(leaf_labels), 0, max(1, max_depth), unary, new_label, draw(_BOOL))
    if named:
        return {"top": body}
    if isinstance(body, dict) and len(body) == 1:  # a one-key mapping would name the root
        return [body]
    return body


def flatten_leaves(spec: Any) -> list[str]:
    """The leaves of a nested spec in depth-first order (an oracle independent of :class:`Hierarchy`)."""
    out: list[str] = []

    def walk(body):
        if isinstance(body, dict):
            for k, v in body.items():
                if v is None or (isinstance(v, (list, dict)) and not v):
                    out.append(str(k))
                else:
                    walk(v)
        elif isinstance(body, list):
            for item in body:
                if isinstance(item, dict):
                    walk(item)
                else:
                    out.append(str(item))

    walk(spec)
    return out


@st.composite
def hierarchies(draw, name: str = "h", *, min_leaves: int = 2, max_leaves: int = 12, max_depth: int = 3,
                unary: bool = True) -> Hierarchy:
    """A random categorical taxonomy (:func:`hierarchy_specs` built with :meth:`Hierarchy.from_nested`)."""
    spec = draw(hierarchy_specs(min_leaves=min_leaves, max_leaves=max_leaves, max_depth=max_depth, unary=unary))
    return Hierarchy.from_nested(name, spec)


@st.composite
def numeric_hierarchies(draw, name: str = "n", *, min_leaves: int = 1, max_leaves: int = 12) -> Hierarchy:
    """:meth:`Hierarchy.numeric` over ``min..max`` (possibly negative), with 0-2 nested bands whose widths
    each divide the next (the last band may be partial)."""
    lo = draw(_ints(-10, 60))
    size = draw(_ints(min_leaves, max_leaves))
    n_bands = draw(_ints(0, 2))
    bands: list[int] = []
    if n_bands:
        bands.append(draw(_ints(1, 5)))
        for _ in range(n_bands - 1):
            bands.append(bands[-1] * draw(_ints(2, 3)))
    return Hierarchy.numeric(name, lo, lo + size - 1, bands)


@st.composite
def ordered_hierarchies(draw, name: str = "o", *, min_leaves: int = 2, max_leaves: int = 12,
                        max_depth: int = 3) -> Hierarchy:
    """A taxonomy over ascending numbers with gaps (``3, 4, 9, 15``...): :attr:`Hierarchy.ordered` is true,
    so intervals ``[a,b]`` are values besides its nodes (named ``[a,b]`` after their leaves, or ``r<i>``)."""
    n = draw(_ints(min_leaves, max_leaves))
    start = draw(_ints(-20, 50))
    gaps = draw(st.lists(_ints(1, 4), min_size=n - 1, max_size=n - 1))
    values = np.cumsum([start] + gaps).tolist()
    leaves = [str(v) for v in values]
    used: set[str] = set()
    counter = iter(range(10_000))

    def new_label(group):
        lab = f"[{group[0]},{group[-1]}]"
        if lab in used or len(group) == 1 or draw(_BOOL):
            lab = f"r{next(counter)}"
        used.add(lab)
        return lab

    body = _tree(draw, leaves, 0, max(1, max_depth), True, new_label, draw(_BOOL))
    if isinstance(body, dict) and len(body) == 1:
        body = [body]
    h = Hierarchy.from_nested(name, body)
    assert h.ordered
    return h


def any_hierarchies(name: str = "h", *, max_leaves: int = 12) -> st.SearchStrategy[Hierarchy]:
    """Any of the three kinds of hierarchy."""
    return st.one_of(hierarchies(name, max_leaves=max_leaves), numeric_hierarchies(name, max_leaves=max_leaves),
                     ordered_hierarchies(name, max_leaves=max_leaves))


# ---------------------------------------------------------------------- schemas and tables
@st.composite
def schemas(draw, *, min_quasi: int = 1, max_quasi: int = 4, subsets: bool = True, identifier: bool | None = None,
            max_leaves: int = 12, min_sensitive: int = 2, max_sensitive: int = 4,
            models: Sequence[str] | None = None) -> Schema:
    """A :class:`Schema`: 1-4 quasi-identifiers, one sensitive attribute, maybe an identifier, shuffled.

    Each QI draws a generalization model among ``models`` (default ``hierarchy``, ``interval`` and, when
    ``subsets``, ``subsets``): ``hierarchy`` over a categorical or numeric taxonomy, ``interval`` over a
    numeric or ordered one, ``subsets`` over any (at most ``max_leaves`` <= 64 leaves).  The sensitive
    attribute ``disease`` has a flat hierarchy of ``min_sensitive..max_sensitive`` values.
    ``identifier=None`` draws whether there is an ``id`` column.
    """
    models = tuple(models) if models is not None else ("hierarchy", "interval") + (("subsets",) if subsets else ())
    q = draw(_ints(min_quasi, max_quasi))
    names = draw(st.lists(_pick(ATTRIBUTE_NAMES), unique=True, min_size=q, max_size=q))
    attrs = []
    for name in names:
        model = draw(_pick(models))
        if model == "hierarchy":
            h = draw(st.one_of(hierarchies(name, max_leaves=max_leaves),
                               numeric_hierarchies(name, max_leaves=max_leaves)))
        elif model == "interval":
            h = draw(st.one_of(numeric_hierarchies(name, max_leaves=max_leaves),
                               ordered_hierarchies(name, max_leaves=max_leaves)))
        else:
            h = draw(any_hierarchies(name, max_leaves=min(max_leaves, 64)))
        attrs.append(Attribute(name, "quasi", h, model))
    n_sens = draw(_ints(min_sensitive, max_sensitive))
    sens_values = draw(st.lists(_pick(SENSITIVE_LABELS), unique=True, min_size=n_sens, max_size=n_sens))
    attrs.append(Attribute("disease", "sensitive", Hierarchy.from_nested("disease", sens_values)))
    if identifier if identifier is not None else draw(_BOOL):
        attrs.append(Attribute("id", "identifier"))
    order = draw(st.permutations(range(len(attrs))))
    return Schema(tuple(attrs[i] for i in order))


@st.composite
def raw_tables(draw, schema: Schema, min_size: int = 1, max_size: int = 30) -> Table:
    """A raw :class:`Table` of ``schema``: ``min_size..max_size`` rows, every value a leaf label (text).

    With an identifier attribute, ids are distinct non-consecutive numbers as text; without, the table's
    row numbers from 1.  Values are skewed towards a few leaves so that equal QI tuples occur.
    """
    n = draw(_ints(min_size, max_size))
    data: dict[str, list[str]] = {}
    for a in schema.attributes:
        if a.role == "identifier":
            ids = draw(st.lists(_ints(0, 999), unique=True, min_size=n, max_size=n))
            data[a.name] = [str(i) for i in ids]
            continue
        leaves = a.hierarchy.leaves
        few = draw(st.lists(_pick(leaves), min_size=1, max_size=3, unique=True))
        pool = _pick(few) if draw(_BOOL) else _pick(leaves)
        data[a.name] = draw(st.lists(pool, min_size=n, max_size=n))
    frame = pd.DataFrame(data, dtype=object, columns=list(schema.names))
    return Table.from_frame(schema, frame)


@st.composite
def schemas_and_tables(draw, min_size: int = 1, max_size: int = 30, **schema_kw) -> tuple[Schema, Table]:
    """``(schema, table)`` drawn together (see :func:`schemas` and :func:`raw_tables`)."""
    schema = draw(schemas(**schema_kw))
    return schema, draw(raw_tables(schema, min_size, max_size))


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
    from multirelease.table import composite_sensitive

    sensitive = composite_sensitive(table.frame.iloc[rows], sens)
    others = [n for n in attributes if not schema[n].is_quasi and not schema[n].is_sensitive]
    other = table.frame.iloc[rows][others].reset_index(drop=True) if others else None
    masks = {k: np.asarray(v, dtype=np.uint64) for k, v in masks.items()}
    release = Release(schema=schema, attributes=tuple(attributes), lo=np.asarray(lo, dtype=np.int32).reshape(len(rows), -1),
                      hi=np.asarray(hi, dtype=np.int32).reshape(len(rows), -1), sensitive=np.asarray(sensitive, dtype=object),
                      masks=masks, other=other, group=group)
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
def local_recodings(draw, table: Table, *, vertical: bool = False, shuffle: bool = True) -> tuple[Release, ReleaseTruth]:
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


# ---------------------------------------------------------------------- brute-force oracle on labels
def leaf_set(attribute: Attribute, text: str) -> frozenset[str]:
    """The leaf labels a published cell covers, computed from its text by walking the hierarchy's children
    (``*``, a node, a leaf, ``[a,b]`` on numeric leaves, ``{a,b}``) - independent of the leaf-code ranges."""
    h = attribute.hierarchy
    text = str(text).strip()
    if text.startswith("{") and text.endswith("}"):
        return frozenset(x.strip() for x in text[1:-1].split(",") if x.strip())
    if text == "*":
        return frozenset(h.leaves)
    j = h.node_of(text)
    if j is not None:
        out, stack = [], [j]
        while stack:
            x = stack.pop()
            if h.is_leaf_node(x):
                out.append(h.node_labels[x])
            stack.extend(h.children[x])
        return frozenset(out)
    if text.startswith("[") and text.endswith("]"):
        a, b = (float(x) for x in text[1:-1].split(","))
        return frozenset(x for x in h.leaves if a <= float(x) <= b)
    raise AssertionError(f"cannot read cell {text!r} of {attribute.name}")


# ---------------------------------------------------------------------- dynamics
@st.composite
def update_streams(draw, table: Table, n_releases: int = 3, *, max_insert: int = 5, max_delete: int = 5,
                   max_update: int = 5, keep_nonempty: bool = True) -> list[Change]:
    """``n_releases`` :class:`Change` objects that apply in sequence with :meth:`Table.apply`.

    Each deletes existing ids, updates QI and sensitive cells of surviving ids (to random leaves, possibly
    unchanged) and inserts rows with fresh ids (never used before in the stream).  With ``keep_nonempty`` no
    change empties the table.
    """
    schema = table.schema
    current = list(table.ids)
    seen = set(current)
    next_id = 1 + max([int(i) for i in seen if str(i).isdigit()] + [len(seen)])
    cols = list(schema.published)
    changes = []
    for _ in range(n_releases):
        room = len(current) - (1 if keep_nonempty else 0)
        delete = draw(st.lists(_pick(current), unique=True, max_size=max(0, min(max_delete, room)))) \
            if room > 0 else []
        alive = [i for i in current if i not in set(delete)]
        update: dict[str, dict[str, str]] = {}
        if alive:
            for rid in draw(st.lists(_pick(alive), unique=True, max_size=max_update)):
                names = draw(st.lists(_pick(cols), unique=True, min_size=1, max_size=len(cols)))
                update[rid] = {a: draw(_pick(schema[a].hierarchy.leaves)) for a in names}
        n_ins = draw(_ints(0, max_insert))
        ids = []
        for _ in range(n_ins):
            ids.append(str(next_id))
            next_id += draw(_ints(1, 3))
        seen.update(ids)
        insert = None
        if ids:
            data = {a: [draw(_pick(schema[a].hierarchy.leaves)) for _ in ids] for a in cols}
            insert = pd.DataFrame(data, index=pd.Index(ids, name=schema.identifier or "id"), dtype=object)
        changes.append(Change(insert=insert, delete=tuple(delete), update=update))
        current = alive + ids
    return changes


# ---------------------------------------------------------------------- internal updates (Li & Zhou)
@st.composite
def transition_models(draw, values: Sequence[str], *, stay: bool | None = None, kind: str | None = None):
    """A public update model over ``values`` (:class:`multirelease.transitions.TransitionModel`): random
    candidate update sets (each value may stay when ``stay``, drawn when ``None``), the free model, a window or
    blocks of a random diameter, or random probabilities over a random support.  ``kind`` fixes the family
    (``candidates``, ``free``, ``window``, ``blocks``, ``probabilities``)."""
    from multirelease.transitions import TransitionModel

    values = list(values)
    n = len(values)
    kind = kind or draw(_pick(("candidates", "free", "window", "blocks", "probabilities")))
    if kind == "free":
        return TransitionModel.free(values)
    if kind in ("window", "blocks"):
        return TransitionModel.with_diameter(values, draw(_ints(1, n)), kind)
    keep = draw(_BOOL) if stay is None else stay
    adj = np.zeros((n, n), dtype=bool)
    for a in range(n):
        row = draw(st.lists(_ints(0, n - 1), min_size=1, max_size=n, unique=True))
        adj[a, row] = True
        if keep:
            adj[a, a] = True
    if kind == "candidates":
        return TransitionModel(tuple(values), adj / adj.sum(axis=1, keepdims=True), "candidates")
    w = np.array([[draw(_ints(1, 5)) if adj[a, b] else 0 for b in range(n)] for a in range(n)], dtype=float)
    return TransitionModel(tuple(values), w / w.sum(axis=1, keepdims=True), "probabilities")


@st.composite
def sug_layers(draw, model, *, max_layers: int = 4, max_candidates: int | None = None):
    """One record's SUG as data: ``(layers, gaps)`` with ``layers[i] = {value: weight}`` (a random candidate
    set of the model's values with positive weights summing to 1) and ``gaps[i] >= 1`` releases between
    versions ``i`` and ``i + 1``."""
    values = list(model.values)
    n_layers = draw(_ints(1, max_layers))
    cap = len(values) if max_candidates is None else min(max_candidates, len(values))
    layers = []
    for _ in range(n_layers):
        cand = draw(st.lists(_pick(values), min_size=1, max_size=cap, unique=True))
        w = np.array([draw(_ints(1, 4)) for _ in cand], dtype=float)
        layers.append({v: float(x) for v, x in zip(cand, w / w.sum())})
    gaps = [draw(_ints(1, 2)) for _ in range(n_layers - 1)]
    return layers, gaps


@st.composite
def stream_params(draw, n_rows: int, *, sensitive: bool = True) -> dict:
    """Parameters of :func:`multirelease.dynamics.generate_stream` for a data set of ``n_rows`` rows: an initial
    sample, deletions, insertions from the pool and internal sensitive updates per release."""
    initial = draw(_ints(max(1, n_rows // 3), max(1, n_rows // 2)))
    return {"initial": initial, "delete": draw(_ints(0, max(0, initial // 4))),
            "insert": draw(_ints(0, max(0, (n_rows - initial) // 4))),
            "sensitive": draw(_ints(0, initial)) if sensitive else 0, "qi": {}, "seed": draw(_ints(0, 1000))}
