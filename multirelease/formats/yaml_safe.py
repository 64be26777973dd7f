"""Reading YAML that may be hostile: one loader for every YAML file multirelease reads (scenarios, certify
specs, ledger specs).

:class:`StrictLoader` is PyYAML's ``SafeLoader`` (no Python objects, only plain data) with four limits, each
refused as one :class:`~multirelease.errors.InputError` naming the file, the line and the problem
(DESIGN.md, "CLI and exit codes": exit 2, no traceback):

* **size** - a document over :data:`MAX_BYTES` (10 MiB) is not read at all;
* **duplicate keys** - YAML 1.2 says the keys of a mapping are unique; PyYAML keeps the last silently, so a
  scenario with ``k: 5`` and, further down, ``k: 2`` would run with ``k = 2``.  Refused, naming the key and
  the lines of both (a merge key ``<<: *base`` may still be overridden: that is what it is for);
* **aliases** - an alias shares its anchor's node, so a few lines of nested aliases ("billion laughs") stand
  for ``9**9`` values, which a consumer that walks or prints them expands (a description built that way took
  5.9 GB and 140 s before this loader).  Refused when a document holds more than :data:`MAX_ALIASES` aliases,
  when the aliases would add more than :data:`MAX_ALIAS_NODES` nodes to the document once expanded, or when an
  alias refers to the node that contains it (a recursive structure);
* **depth** - collections nested deeper than :data:`MAX_DEPTH` (PyYAML's composer recurses once per level and
  would end in a ``RecursionError``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from multirelease.errors import InputError

__all__ = ["StrictLoader", "load_text", "load_file", "MAX_BYTES", "MAX_ALIASES", "MAX_ALIAS_NODES", "MAX_DEPTH"]

#: the largest YAML document read (bytes); data belongs in CSV files beside it
MAX_BYTES = 10 * 1024 * 1024
#: the most aliases (``*name``) one document may hold; the scenarios of this repository use at most 10
MAX_ALIASES = 256
#: the most nodes the aliases of a document may add once expanded (beyond the document's own nodes)
MAX_ALIAS_NODES = 1_000_000
#: the deepest nesting of collections
MAX_DEPTH = 100

_MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing duplicate keys, too many aliases, alias expansion beyond a node budget,
    recursive aliases and deep nesting (module docstring).  Use :func:`load_text` / :func:`load_file`."""

    def __init__(self, stream: Any):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    # ------------------------------------------------------------------ composing: aliases and depth
    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"more than {MAX_ALIASES} aliases (a YAML alias bomb?)", event.start_mark)
            return super().compose_node(parent, index)
        nested = self.check_event(CollectionStartEvent)
        if nested:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"collections nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1

    # ------------------------------------------------------------------ duplicate keys, as composed
    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        """Checked here, on the keys as written (a merge key's mapping, flattened in later by the
        constructor, may be overridden)."""
        node = super().compose_mapping_node(anchor)
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, ScalarNode):
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # pragma: no cover - scalars are hashable
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {first.line + 1})", key_node.start_mark)
            seen[key] = key_node.start_mark
        return node


def _check_expansion(root: Node) -> None:
    """Refuse a node graph whose aliases are recursive or expand beyond :data:`MAX_ALIAS_NODES` extra nodes.

    The expanded size of a node is 1 plus the expanded sizes of its children, each shared node counted once per
    reference (memoized per node, so the walk is linear in the number of distinct nodes).
    """
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            on_path.discard(nid)
            total = 1 + sum(size[id(c)] for c in _children(node))
            size[nid] = total
            if total - len(size) > MAX_ALIAS_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f"aliases expand to more than {MAX_ALIAS_NODES:,} extra values (a YAML alias bomb?)",
                    node.start_mark)
            continue
        if nid in size:
            continue
        if nid in on_path:
            raise yaml.composer.ComposerError(None, None, "recursive alias (a node that contains itself)",
                                              node.start_mark)
        on_path.add(nid)
        stack.append((node, True))
        for child in _children(node):
            cid = id(child)
            if cid in on_path:
                raise yaml.composer.ComposerError(None, None, "recursive alias (a node that contains itself)",
                                                  child.start_mark)
            if cid not in size:
                stack.append((child, False))


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load_text(text: str, *, source: str | None = None) -> Any:
    """Parse one YAML document with :class:`StrictLoader` (``None`` for an empty document); every YAML problem
    becomes an :class:`InputError` naming ``source`` and the line and column."""
    if len(text) > MAX_BYTES:
        raise InputError(f"YAML document over {MAX_BYTES // (1024 * 1024)} MB", file=source)
    loader = None
    try:
        loader = StrictLoader(text)  # the reader refuses control characters here already
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "alias" in problem or "duplicate key" in problem or "nested deeper" in problem:
            raise InputError(problem, file=source, key=where) from None
        raise InputError(f"malformed YAML: {problem}", file=source, key=where) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise InputError(f"malformed YAML: {str(exc).splitlines()[0].split(';')[0]}", file=source) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_file(path: str | Path) -> Any:
    """Read a YAML file (missing, over :data:`MAX_BYTES`, not UTF-8 or malformed: :class:`InputError`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    if path.stat().st_size > MAX_BYTES:
        raise InputError(f"YAML file over {MAX_BYTES // (1024 * 1024)} MB ({path.stat().st_size:,} bytes): "
                         "put the data in a CSV file", file=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=str(path)) from None
    return load_text(text, source=str(path))
