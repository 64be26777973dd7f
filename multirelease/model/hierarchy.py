"""Generalization hierarchies and the leaf-code encoding.

Every attribute's leaves are numbered in depth-first order of its hierarchy (DESIGN.md, "Generalized
values as leaf-code ranges").  Every hierarchy node is then a contiguous range ``[lo, hi]`` of leaf codes,
and so is every interval of an ordered (numeric) attribute.  Containment, intersection ("comparable",
Definition 4.1 of Fung et al.), closure (Definition 2.2 of Shmueli & Tassa) and the LM loss (their eq. 1)
become integer comparisons on numpy arrays.

Three ways to build a hierarchy, each validated when loaded (no leaf twice, a label names one node):

* :meth:`Hierarchy.from_nested` - a nested YAML mapping, ``{Europe: [UK, France], Asia: [...]}``;
* :meth:`Hierarchy.from_arx_csv` - an ARX hierarchy file, one line per leaf ``leaf;level1;...;*``;
* :meth:`Hierarchy.numeric` - the integers ``min..max`` with optional nested bands of fixed width.

A hierarchy whose leaves are numbers in ascending depth-first order is *ordered*: any interval ``[a,b]`` of
its leaves is a valid generalized value (Mondrian splits it at medians), besides its named nodes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError

__all__ = ["Hierarchy", "ROOT_LABEL", "MAX_LEAVES", "MAX_LEVELS", "parse_interval", "normalize_values"]

ROOT_LABEL = "*"
#: the most leaves a hierarchy may have: one Python object per node is built (1,000,000 numeric leaves take
#: about 1 GB and 25 s), so larger domains are refused before anything is allocated - a numeric domain of
#: 10**11 values ended in a MemoryError; coarsen such a domain (e.g. income in thousands) before publishing
MAX_LEAVES = 1_000_000
#: the most levels of an ARX hierarchy file (leaf to root); ARX's own hierarchies have a handful
MAX_LEVELS = 100
_INTERVAL = re.compile(r"^\[\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\]$")


def parse_interval(text: str) -> tuple[float, float] | None:
    """``"[20,29]"`` -> ``(20.0, 29.0)``; anything else -> ``None``."""
    m = _INTERVAL.match(text.strip())
    if not m:
        return None
    return float(m.group(1)), float(m.group(2))


def _fmt_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A generalization taxonomy over one attribute's values, with leaves coded ``0..n_leaves-1``.

    Nodes are numbered ``0..n_nodes-1`` with the root first; node ``j`` covers the leaf codes
    ``node_lo[j]..node_hi[j]``.  Build instances with the ``from_*`` / :meth:`numeric` constructors.
    """

    name: str
    leaves: tuple[str, ...]
    node_labels: tuple[str, ...]
    node_lo: np.ndarray
    node_hi: np.ndarray
    node_depth: np.ndarray
    node_parent: np.ndarray
    children: tuple[tuple[int, ...], ...]
    ordered: bool
    leaf_values: np.ndarray | None = None  # numeric value of each leaf when ordered
    _label_index: dict = field(default_factory=dict, repr=False)
    _leaf_index: dict = field(default_factory=dict, repr=False)
    _range_index: dict = field(default_factory=dict, repr=False)
    _ancestors: np.ndarray | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def _build(cls, name: str, root: "_Node", *, source: str | None = None, key: str | None = None) -> "Hierarchy":
        leaves: list[str] = []
        labels: list[str] = []
        lo: list[int] = []
        hi: list[int] = []
        depth: list[int] = []
        parent: list[int] = []
        children: list[list[int]] = []
        def visit(node: _Node, par: int, d: int) -> int:
            idx = len(labels)
            labels.append(node.label)
            lo.append(len(leaves))
            hi.append(-1)
            depth.append(d)
            parent.append(par)
            children.append([])
            if par >= 0:
                children[par].append(idx)
            if not node.children:
                leaves.append(node.label)
            for child in node.children:
                visit(child, idx, d + 1)
            hi[idx] = len(leaves) - 1
            return idx

        import sys

        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000))
        try:
            visit(root, -1, 0)
        finally:
            sys.setrecursionlimit(limit)

        label_index: dict[str, int] = {}
        for i, lab in enumerate(labels):
            if lab in label_index:
                raise InputError(f"label '{lab}' names two nodes", file=source, key=key)
            label_index[lab] = i
        if ROOT_LABEL in label_index and label_index[ROOT_LABEL] != 0:
            raise InputError(f"label '{ROOT_LABEL}' is reserved for the root", file=source, key=key)
        leaf_index = {lab: i for i, lab in enumerate(leaves)}
        node_lo = np.asarray(lo, dtype=np.int32)
        node_hi = np.asarray(hi, dtype=np.int32)
        node_depth = np.asarray(depth, dtype=np.int32)
        # deepest node first for each range, so a range's label is the most specific one
        range_index: dict[tuple[int, int], int] = {}
        for i in np.argsort(-node_depth, kind="stable"):
            range_index.setdefault((int(node_lo[i]), int(node_hi[i])), int(i))
        values = None
        ordered = False
        try:
            values = np.asarray([float(x) for x in leaves])
            ordered = bool(len(values) == 1 or np.all(np.diff(values) > 0))
        except ValueError:
            values = None
        if not ordered:
            values = None
        h = cls(
            name=name,
            leaves=tuple(leaves),
            node_labels=tuple(labels),
            node_lo=node_lo,
            node_hi=node_hi,
            node_depth=node_depth,
            node_parent=np.asarray(parent, dtype=np.int32),
            children=tuple(tuple(c) for c in children),
            ordered=ordered,
            leaf_values=values,
            _label_index=label_index,
            _leaf_index=leaf_index,
            _range_index=range_index,
        )
        object.__setattr__(h, "_ancestors", h._ancestor_matrix())
        return h

    @classmethod
    def from_nested(cls, name: str, spec: Any, *, source: str | None = None, key: str | None = None) -> "Hierarchy":
        """A hierarchy from a nested YAML structure.

        A mapping with one key names the root; a mapping with several keys (or a list) gets the root ``*``.
        Values are lists or mappings of children; scalars are leaves.

        Examples
        --------
        >>> h = Hierarchy.from_nested("country", {"Europe": ["UK", "France"], "America": ["US"]})
        >>> h.leaves, h.parse("Europe")
        (('UK', 'France', 'US'), (0, 1))
        """
        seen: set[str] = set()

        def build(label: str, body: Any) -> _Node:
            if body is None or (isinstance(body, (list, tuple, dict)) and len(body) == 0):
                return leaf(label)
            if isinstance(body, Mapping):
                return _Node(label, [build(str(k), v) for k, v in body.items()])
            if isinstance(body, (list, tuple)):
                kids: list[_Node] = []
                for item in body:
                    if isinstance(item, Mapping):
                        kids.extend(build(str(k), v) for k, v in item.items())
                    elif isinstance(item, (list, tuple)):
                        raise InputError(f"a list inside the list of '{label}' has no label", file=source, key=key)
                    else:
                        kids.append(leaf(_scalar(item)))
                return _Node(label, kids)
            raise InputError(f"node '{label}' has a {type(body).__name__} as children", file=source, key=key)

        def leaf(label: str) -> _Node:
            if label in seen:
                raise InputError(f"leaf '{label}' appears twice", file=source, key=key)
            if len(seen) >= MAX_LEAVES:
                raise InputError(f"more than {MAX_LEAVES:,} leaves", file=source, key=key)
            seen.add(label)
            return _Node(label, [])

        if isinstance(spec, Mapping) and len(spec) == 1:
            (root_label, body), = spec.items()
            root = build(str(root_label), body)
        elif isinstance(spec, (Mapping, list, tuple)) and len(spec) > 0:
            root = build(ROOT_LABEL, spec)
        else:
            raise InputError("a hierarchy must be a non-empty mapping or list", file=source, key=key)
        if not root.children:
            raise InputError("a hierarchy needs at least one leaf below its root", file=source, key=key)
        return cls._build(name, root, source=source, key=key)

    @classmethod
    def from_arx_csv(cls, name: str, path: str | Path, *, separator: str = ";", key: str | None = None) -> "Hierarchy":
        """A hierarchy from an ARX hierarchy file: one line per leaf, ``leaf;level1;level2;...;*``, no header.

        As in ARX, a value may generalize to the same label on several levels (``Male;Male;*``, a region kept
        for a level: ``Canada;North America;North America;*``): ARX only asks that each level maps a label to
        one label of the next.  A recipient who reads such a label cannot tell the levels apart, so it names
        its highest node (the largest set of values it may stand for) and the lower repeats are dropped; a
        leaf's label repeated above it names the leaf, refused if it also stands above other values.  A label
        that would then name two nodes (two parents, a cycle) is refused: it is ambiguous in a release.
        """
        path = Path(path)
        if not path.is_file():
            raise InputError("file not found", file=str(path), key=key)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError("not a UTF-8 text file", file=str(path), key=key) from None
        if len(separator) != 1 or separator in "\r\n":
            raise InputError(f"separator must be one character, got {separator!r}", file=str(path), key=key)
        lines = [ln.rstrip("\r\n") for ln in text.splitlines()]
        rows = [ln.split(separator) for ln in lines if ln.strip()]
        if not rows:
            raise InputError("hierarchy file is empty", file=str(path), key=key)
        if len(rows) > MAX_LEAVES:
            raise InputError(f"{len(rows):,} leaves, more than the {MAX_LEAVES:,} a hierarchy may have",
                             file=str(path), key=key)
        deep = next((i for i, row in enumerate(rows, 1) if len(row) > MAX_LEVELS), None)
        if deep is not None:
            raise InputError(f"{len(rows[deep - 1]):,} levels, more than the {MAX_LEVELS} a hierarchy may have",
                             file=str(path), key=f"line {deep}")
        nodes: dict[str, _Node] = {}
        parent_of: dict[str, str] = {}
        roots: list[str] = []
        leaves: set[str] = set()
        for lineno, row in enumerate(rows, 1):
            row = [c.strip() for c in row]
            if any(c == "" for c in row):
                raise InputError("empty label", file=str(path), key=f"line {lineno}")
            leaf = row[0]
            if leaf in leaves:
                raise InputError(f"leaf '{leaf}' appears twice", file=str(path), key=f"line {lineno}")
            leaves.add(leaf)
            # leaf, level1, ..., root: a repeated label keeps its highest level (the leaf stays the leaf)
            path_up = [leaf] + [lab for i, lab in enumerate(row[1:], 1) if lab != leaf and lab not in row[i + 1:]]
            for lower, upper in zip(path_up, path_up[1:]):
                if lower in parent_of and parent_of[lower] != upper:
                    raise InputError(f"label '{lower}' names two nodes (parents '{parent_of[lower]}' and '{upper}')",
                                     file=str(path), key=f"line {lineno}")
                parent_of[lower] = upper
            for lab in path_up:
                if lab not in nodes:
                    nodes[lab] = _Node(lab, [])
            top = path_up[-1]
            if top not in roots:
                roots.append(top)
        for lab in parent_of:  # a label above itself through other labels (X;Y on one line, Y;X on another)
            seen, up = {lab}, parent_of[lab]
            while up in parent_of:
                if up in seen:
                    raise InputError(f"label '{lab}' names two nodes (it is above and below '{parent_of[lab]}')",
                                     file=str(path), key=key)
                seen.add(up)
                up = parent_of[up]
        roots = [r for r in roots if r not in parent_of]
        # children in order of first appearance
        for lab, par in parent_of.items():
            nodes[par].children.append(nodes[lab])
        for lab in leaves:
            if nodes[lab].children:
                raise InputError(f"label '{lab}' is both a leaf and an inner node", file=str(path), key=key)
        if len(roots) == 1:
            root = nodes[roots[0]]
        else:
            root = _Node(ROOT_LABEL, [nodes[r] for r in roots])
        return cls._build(name, root, source=str(path), key=key)

    @classmethod
    def numeric(cls, name: str, minimum: int, maximum: int, bands: Sequence[int] = (), *,
                source: str | None = None, key: str | None = None) -> "Hierarchy":
        """The integers ``minimum..maximum`` as leaves, nested in bands of the given widths.

        ``bands=[5, 10]`` puts ``[0,4]``, ``[5,9]`` under ``[0,9]`` (bands are aligned at ``minimum``;
        each width must divide the next).  Any interval is a valid generalized value as well.
        """
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in (minimum, maximum)):
            raise InputError("numeric min and max must be integers", file=source, key=key)
        if maximum < minimum:
            raise InputError(f"numeric max {maximum} is below min {minimum}", file=source, key=key)
        if int(maximum) - int(minimum) + 1 > MAX_LEAVES:  # refused before one leaf is allocated
            raise InputError(f"numeric domain {minimum}..{maximum} has {int(maximum) - int(minimum) + 1:,} values, "
                             f"more than the {MAX_LEAVES:,} leaves a hierarchy may have", file=source, key=key)
        if not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in bands):
            raise InputError(f"band widths must be integers, got {list(bands)!r}", file=source, key=key)
        widths = [int(w) for w in bands]
        for a, b in zip(widths, widths[1:]):
            if a <= 0 or b % a or b <= a:
                raise InputError(f"band widths {widths} must grow and each divide the next", file=source, key=key)
        if widths and widths[0] <= 0:
            raise InputError("band widths must be positive", file=source, key=key)

        def band(lo: int, hi: int, level: int) -> _Node:
            if level < 0:
                kids = [_Node(str(v), []) for v in range(lo, hi + 1)]
            else:
                w = widths[level]
                kids = [band(s, min(s + w - 1, hi), level - 1) for s in range(lo, hi + 1, w)]
            label = str(lo) if (lo == hi and level < 0) else f"[{lo},{hi}]"
            if lo == hi and level < 0:
                return kids[0]
            if len(kids) == 1 and kids[0].children:
                return kids[0]  # a partial last band: same range (and label) as its only sub-band
            return _Node(label, kids)

        top = len(widths) - 1
        if widths:
            w = widths[-1]
            kids = [band(s, min(s + w - 1, maximum), top - 1) for s in range(minimum, maximum + 1, w)]
            if len(kids) == 1:
                kids = kids[0].children if kids[0].children else kids
        else:
            kids = [_Node(str(v), []) for v in range(minimum, maximum + 1)]
        root = _Node(ROOT_LABEL, kids)
        return cls._build(name, root, source=source, key=key)

    def __repr__(self) -> str:
        kind = "ordered " if self.ordered else ""
        return f"Hierarchy({self.name!r}, {kind}{self.n_leaves} leaves, {self.n_nodes} nodes, height {self.height})"

    # ------------------------------------------------------------------ basic facts
    @property
    def n_leaves(self) -> int:
        return len(self.leaves)

    @property
    def n_nodes(self) -> int:
        return len(self.node_labels)

    @property
    def height(self) -> int:
        return int(self.node_depth.max())

    def is_leaf_node(self, node: int) -> bool:
        return not self.children[node]

    def node_of(self, label: str) -> int | None:
        return self._label_index.get(label)

    def _ancestor_matrix(self) -> np.ndarray:
        """``anc[c, d]``: the node at depth ``d`` on the path from the root to leaf ``c`` (the leaf's own
        node repeated below its depth)."""
        depth = self.height + 1
        anc = np.zeros((self.n_leaves, depth), dtype=np.int32)
        leaf_node = np.flatnonzero([not c for c in self.children])
        for c, node in enumerate(leaf_node):
            path = []
            j = int(node)
            while j >= 0:
                path.append(j)
                j = int(self.node_parent[j])
            path.reverse()
            anc[c, : len(path)] = path
            anc[c, len(path):] = path[-1]
        return anc

    # ------------------------------------------------------------------ encoding
    def code(self, value: Any) -> int:
        """The leaf code of a raw value (raises :class:`InputError` if it is not a leaf)."""
        key = _scalar(value)
        try:
            return self._leaf_index[key]
        except KeyError:
            raise InputError(f"value '{key}' is not a leaf of the hierarchy of '{self.name}'") from None

    def encode(self, values: Iterable[Any]) -> np.ndarray:
        """Leaf codes of many raw values, vectorized through a pandas Categorical (raises on the first value
        that is not a leaf)."""
        s = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
        if len(s) > 1000 and _all_text(s):  # a census column: its few distinct cells looked up once each
            rows, distinct = pd.factorize(s, use_na_sentinel=False)
            s = normalize_values(pd.Series(np.asarray(distinct, dtype=object), dtype=object))
            codes = self._categories.get_indexer(s)[rows]
        else:
            s = normalize_values(s)
            rows = None
            codes = self._categories.get_indexer(s)
        bad = codes < 0
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            first = s.iloc[first if rows is None else int(rows[first])]
            raise InputError(f"value '{first}' is not a leaf of the hierarchy of '{self.name}'")
        return codes.astype(np.int32)

    @property
    def _categories(self) -> pd.Index:
        cats = self.__dict__.get("_cats")
        if cats is None:
            cats = pd.Index(self.leaves, dtype=object)
            object.__setattr__(self, "_cats", cats)
        return cats

    def parse(self, label: str, *, allow_intervals: bool | None = None) -> tuple[int, int]:
        """The leaf-code range of a generalized value: ``*``, a node label, a leaf, or ``[a,b]``.

        Intervals are accepted for ordered hierarchies (``allow_intervals`` defaults to :attr:`ordered`);
        an interval must lie inside the domain; its ends need not be leaves (it covers the leaves inside).
        """
        text = _scalar(label)
        if text == ROOT_LABEL:
            return 0, self.n_leaves - 1
        j = self._label_index.get(text)
        if j is not None:
            return int(self.node_lo[j]), int(self.node_hi[j])
        allow = self.ordered if allow_intervals is None else allow_intervals
        iv = parse_interval(text)
        if iv is not None and allow and self.leaf_values is not None:
            a, b = iv
            if a > b:
                raise InputError(f"interval '{text}' of '{self.name}' has its ends reversed")
            lo = int(np.searchsorted(self.leaf_values, a, side="left"))
            hi = int(np.searchsorted(self.leaf_values, b, side="right")) - 1
            if lo > hi or a < self.leaf_values[0] or b > self.leaf_values[-1]:
                raise InputError(f"interval '{text}' is outside the domain of '{self.name}'")
            return lo, hi
        raise InputError(f"'{text}' is not a value, node or interval of the hierarchy of '{self.name}'")

    def label(self, lo: int, hi: int, *, allow_intervals: bool | None = None) -> str:
        """The label of a leaf-code range: a leaf, the most specific node with that range, or ``[a,b]``."""
        lo, hi = int(lo), int(hi)
        if lo == hi:
            return self.leaves[lo]
        if lo == 0 and hi == self.n_leaves - 1:
            return ROOT_LABEL
        j = self._range_index.get((lo, hi))
        if j is not None:
            return self.node_labels[j]
        allow = self.ordered if allow_intervals is None else allow_intervals
        if allow and self.leaf_values is not None:
            a, b = _fmt_number(self.leaf_values[lo]), _fmt_number(self.leaf_values[hi])
            # a label of the file names its node whatever it looks like: never write another range as it
            return f"[{a},{b}]" if f"[{a},{b}]" not in self._label_index else f"[{a}, {b}]"
        raise ValueError(f"range [{lo},{hi}] is not a node of the hierarchy of '{self.name}'")

    def is_node_range(self, lo: int, hi: int) -> bool:
        return (int(lo), int(hi)) in self._range_index or (lo == 0 and hi == self.n_leaves - 1)

    # ------------------------------------------------------------------ vectorized operations
    def node_closure(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The smallest node containing each range ``[lo, hi]`` (the lowest common ancestor of its ends).

        This is the closure of Definition 2.2 of Shmueli & Tassa for a taxonomy attribute.
        ``O(n * height)`` numpy work.
        """
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        anc = self._ancestors[lo]  # (n, D)
        ok = self.node_hi[anc] >= hi[..., None]
        deepest = ok.sum(axis=-1) - 1
        node = np.take_along_axis(anc, deepest[..., None], axis=-1)[..., 0]
        return self.node_lo[node].astype(np.int32), self.node_hi[node].astype(np.int32)

    def node_at_or_above(self, code: int, depth: int) -> int:
        """The ancestor of leaf ``code`` at ``depth`` (the leaf itself below its depth)."""
        return int(self._ancestors[code, min(depth, self._ancestors.shape[1] - 1)])


class _Node:
    __slots__ = ("label", "children")

    def __init__(self, label: str, children: list["_Node"]):
        self.label = label
        self.children = children


def _all_text(series: pd.Series) -> bool:
    """Is every cell text with no missing one (so that distinct cells are distinct texts: a factorization
    would merge ``True`` and ``1``)?"""
    if isinstance(series.dtype, pd.StringDtype):
        return not series.isna().any()
    return bool(len(series)) and all(isinstance(v, str) for v in series.head(64)) and \
        bool(series.map(type).eq(str).all())


def normalize_values(series: pd.Series) -> pd.Series:
    """:func:`_scalar` over a column, fast when every value is already text."""
    if isinstance(series.dtype, pd.StringDtype) and not series.isna().any():  # text by its dtype: no scan
        return series.str.strip()
    if len(series) and all(isinstance(v, str) for v in series.head(64)) and \
            series.map(type).eq(str).all():
        return series.str.strip()
    return series.map(_scalar)


def _scalar(value: Any) -> str:
    """Raw values are compared as text; YAML numbers ``39`` and ``39.0`` both become ``'39'``."""
    if type(value) is str:  # the common case first (tens of thousands of cells per generated release)
        return value.strip()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (np.integer,)):
        return str(int(value))
    return str(value).strip()
