"""ARX's output notation: release files that ARX writes (and that ``--format arx`` writes) read as releases.

ARX (Prasser et al., the ARX Data Anonymization Tool) writes an anonymized table with ``;`` between cells and
a generalized value as

* a label of the attribute's hierarchy file (``20-29``, ``Europe``, a redaction label ``816**``) - the file
  decides which values it covers, whatever the label looks like (the Adult age file puts 21..30 under
  ``20-29``): labels are looked up first, exactly as in the project's own notation;
* an interval of its interval-based hierarchies, ``[20, 30[`` (``[`` / ``]`` facing inwards: the end is
  included, outwards: excluded; ``[20, 29]`` is closed), and the out-of-bounds labels ``<20`` and ``>=80``;
* a masked value ``81***`` (its redaction hierarchies): every value of the same length that agrees with it
  wherever it shows a character;
* a set ``{UK, France}`` (its grouping hierarchies);
* ``*`` for a suppressed value (the root).

A cell stands for the values of the attribute's domain (the hierarchy's leaves) it covers: an interval
``[0, 10[`` over leaves ``1..100`` is the leaves ``1..9``.  What a cell covers must be a generalized value of
the attribute's model (:class:`~multirelease.model.schema.Attribute`): a node for ``hierarchy``, a run of ordered
leaves for ``interval``, any set for ``subsets``; anything else, and any cell that starts like an ARX form but
does not parse, is bad input (one line naming the cell).

Writing (:func:`format_cell`) is the inverse: a leaf, a node's label, ``*``, and for a run of ordered leaves
that is no node ``<b`` (from the first leaf), ``>=a`` (to the last) or ``[a, b[`` with ``b`` the next leaf,
each bound written as the leaf's own text; a ``subsets`` value as ``{a, b}``.  A text that a hierarchy label
already names (and that would therefore read back as that node) is never written for another range.

The project's own notation (DESIGN.md, "Release files") is a subset of what :func:`parse_cell` reads: a cell
that the native parser reads means the same here, so a file is read the same whatever notation it is taken
to be in; the notation of a file is told from its header's separator (:func:`detect_separator`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from multirelease.errors import InputError
from multirelease.model.hierarchy import _scalar

if TYPE_CHECKING:  # pragma: no cover
    from multirelease.model.schema import Attribute

__all__ = ["NOTATIONS", "SEPARATORS", "parse_cell", "format_cell", "detect_separator", "notation_of"]

NOTATIONS = ("native", "arx")
SEPARATORS = {"native": ",", "arx": ";"}

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_INTERVAL = re.compile(rf"^([\[\]])\s*({_NUM})\s*,\s*({_NUM})\s*([\[\]])$")
_CLOSED = re.compile(rf"^\[\s*{_NUM}\s*,\s*{_NUM}\s*\]$")
_BOUND = re.compile(rf"^(<|>=)\s*({_NUM})$")
_ARX_START = ("[", "]", "<", ">", "{")
_FORMS = "ARX writes [a, b[, [a, b], ]a, b], <b, >=a, masks like 81*** and sets {a, b}"


# ---------------------------------------------------------------------- reading
def parse_cell(attribute: "Attribute", text: Any) -> tuple[int, int, int]:
    """A published QI cell in ARX's notation (or the project's) -> ``(lo, hi, mask)`` leaf codes, as
    :meth:`multirelease.model.schema.Attribute.parse_cell`.  Raises :class:`InputError` with one line."""
    raw = _scalar(text)
    try:
        return attribute.parse_cell(raw)  # labels first: the hierarchy file decides what a label covers
    except InputError as native:
        if _CLOSED.match(raw):  # the project's own form: its reading (and its errors) stand
            raise native from None
        codes = _arx_codes(attribute, raw)
        if codes is None:
            raise native from None
    return _as_value(attribute, raw, codes)


def _arx_codes(attribute: "Attribute", raw: str) -> np.ndarray | None:
    """The leaf codes an ARX form covers; ``None`` when ``raw`` is no ARX form at all."""
    h = attribute.hierarchy
    if raw.startswith("{") and raw.endswith("}"):
        items = [x.strip() for x in raw[1:-1].split(",") if x.strip()]
        if not items:
            raise InputError(f"empty set '{raw}' for '{attribute.name}'")
        return np.unique([h.code(x) for x in items])
    if "*" in raw and not raw.startswith(_ARX_START):
        return _mask_codes(attribute, raw)
    m_iv, m_bd = _INTERVAL.match(raw), _BOUND.match(raw)
    if m_iv is None and m_bd is None:
        if raw.startswith(_ARX_START):
            raise InputError(f"malformed ARX cell '{raw}' for '{attribute.name}' ({_FORMS})")
        return None
    values = h.leaf_values
    if values is None:
        raise InputError(f"interval '{raw}' given for '{attribute.name}', whose hierarchy leaves are not numbers "
                         f"in ascending order")
    if m_iv is not None:
        left, a, b, right = m_iv.group(1), float(m_iv.group(2)), float(m_iv.group(3)), m_iv.group(4)
        if a > b:
            raise InputError(f"interval '{raw}' of '{attribute.name}' has its ends reversed")
        keep = ((values >= a) if left == "[" else (values > a)) & ((values <= b) if right == "]" else (values < b))
    else:
        x = float(m_bd.group(2))
        keep = values < x if m_bd.group(1) == "<" else values >= x
    codes = np.flatnonzero(keep)
    if not len(codes):
        raise InputError(f"'{raw}' covers no value of the domain of '{attribute.name}'")
    return codes


def _mask_codes(attribute: "Attribute", raw: str) -> np.ndarray:
    """The leaves a masked value (ARX's redaction, ``81***``) covers: same length, same character wherever
    the mask shows one."""
    leaves = attribute.hierarchy.leaves
    shown = [(i, c) for i, c in enumerate(raw) if c != "*"]
    codes = np.asarray([j for j, leaf in enumerate(leaves) if len(leaf) == len(raw)
                        and all(leaf[i] == c for i, c in shown)], dtype=np.int64)
    if not len(codes):
        raise InputError(f"mask '{raw}' matches no value of the hierarchy of '{attribute.name}'")
    return codes


def _as_value(attribute: "Attribute", raw: str, codes: np.ndarray) -> tuple[int, int, int]:
    """Leaf codes as a generalized value of the attribute's model (module docstring)."""
    lo, hi = int(codes[0]), int(codes[-1])
    if attribute.is_subsets:
        mask = 0
        for c in codes.tolist():
            mask |= 1 << c
        return lo, hi, mask
    if hi - lo + 1 != len(codes):
        raise InputError(f"'{raw}' covers values of '{attribute.name}' that are not one run of its hierarchy "
                         f"(it generalizes by {attribute.generalization})")
    h = attribute.hierarchy
    if attribute.generalization == "hierarchy" and lo != hi and not h.is_node_range(lo, hi):
        raise InputError(f"'{raw}' is not a node of the hierarchy of '{attribute.name}' (it covers "
                         f"{h.leaves[lo]}..{h.leaves[hi]})")
    return lo, hi, 0


# ---------------------------------------------------------------------- writing
def format_cell(attribute: "Attribute", lo: int, hi: int, mask: int = 0) -> str:
    """The ARX text of a generalized cell (inverse of :func:`parse_cell`)."""
    h = attribute.hierarchy
    lo, hi = int(lo), int(hi)
    if attribute.is_subsets and mask:
        codes = [c for c in range(lo, hi + 1) if mask >> c & 1]
        if len(codes) == hi - lo + 1 and (lo == hi or h.is_node_range(lo, hi)):
            return h.label(lo, hi, allow_intervals=False)
        return "{" + ", ".join(h.leaves[c] for c in codes) + "}"
    if lo == hi or (lo == 0 and hi == h.n_leaves - 1) or h.is_node_range(lo, hi):
        return h.label(lo, hi, allow_intervals=False)
    if not (attribute.allows_intervals and h.leaf_values is not None):
        raise ValueError(f"range [{lo},{hi}] is not a node of the hierarchy of '{attribute.name}'")
    leaves = h.leaves
    if lo == 0:
        candidates = [f"<{leaves[hi + 1]}"]
    elif hi == h.n_leaves - 1:
        candidates = [f">={leaves[lo]}"]
    else:
        candidates = [f"[{leaves[lo]}, {leaves[hi + 1]}["]
    candidates.append(f"[{leaves[lo]}, {leaves[hi]}]")
    for text in candidates:
        if h.node_of(text) is None:  # a label names its node, whatever it looks like
            return text
    raise InputError(f"the values {leaves[lo]}..{leaves[hi]} of '{attribute.name}' cannot be written in ARX's "
                     f"notation: hierarchy labels name other values with the same text")


def detect_separator(header: str, columns: Any) -> str:
    """The separator of a release file, told from its header line: ``;`` (ARX's) when splitting the header
    there gives more known ``columns`` than splitting it at commas, else ``,``."""
    known = set(columns)

    def score(sep: str) -> int:
        return sum(c.strip().strip('"') in known for c in header.rstrip("\r\n").split(sep))

    return ";" if score(";") > score(",") else ","


def notation_of(value: str | None, *, key: str = "--format", file: str | None = None) -> str | None:
    """A validated notation name (``None``: detect it from the file)."""
    if value is None or value == "auto":
        return None
    if value not in NOTATIONS:
        raise InputError(f"must be one of auto, {', '.join(NOTATIONS)}; got {value!r}", file=file, key=key)
    return value
