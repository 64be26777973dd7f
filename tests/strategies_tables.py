"""Hypothesis strategies for hierarchies, schemas and raw tables, and the label oracle (re-exported by
:mod:`strategies`, which says what every strategy draws; import from there).

* hierarchies: :func:`hierarchy_specs` / :func:`hierarchies`, :func:`numeric_hierarchies`,
  :func:`ordered_hierarchies`, :func:`any_hierarchies`;
* :func:`schemas`, :func:`raw_tables`, :func:`schemas_and_tables`;
* :func:`leaf_set` - the leaf labels a published cell covers, read from its text (a brute-force oracle).
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from multirelease.model.hierarchy import Hierarchy
from multirelease.model.schema import Attribute, Schema
from multirelease.model.table import Table

__all__ = [
    "hierarchy_specs", "hierarchies", "numeric_hierarchies", "ordered_hierarchies", "any_hierarchies",
    "schemas", "raw_tables", "schemas_and_tables", "leaf_set", "flatten_leaves",
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
            models: Sequence[str] | None = None, max_linking: int = 0) -> Schema:
    """A :class:`Schema`: 1-4 quasi-identifiers, one sensitive attribute, maybe an identifier, shuffled.

    Each QI draws a generalization model among ``models`` (default ``hierarchy``, ``interval`` and, when
    ``subsets``, ``subsets``): ``hierarchy`` over a categorical or numeric taxonomy, ``interval`` over a
    numeric or ordered one, ``subsets`` over any (at most ``max_leaves`` <= 64 leaves).  The sensitive
    attribute ``disease`` has a flat hierarchy of ``min_sensitive..max_sensitive`` values.
    ``identifier=None`` draws whether there is an ``id`` column.  ``max_linking``: up to that many linking
    columns (``bt``, ``lab``; role ``non-identifier`` or ``insensitive``, 2-3 values each: Shmueli & Tassa's
    blood type of Example 5.1, :mod:`multirelease.model.linking`).
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
    for name in ("bt", "lab")[:draw(_ints(0, max_linking))] if max_linking else ():
        values = draw(st.lists(_pick(("O+", "A+", "B-", "AB", "x1", "x2")), unique=True, min_size=2, max_size=3))
        role = draw(_pick(("non-identifier", "insensitive")))
        attrs.append(Attribute(name, role, Hierarchy.from_nested(name, values)))
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
