"""Name -> class registries whose classes are imported on first use.

The publishers and attacks registries (``publishers.PUBLISHERS``, ``attacks.ATTACKS``) name every class of
the contract, but a run needs only a few: importing them all pulled OR-Tools' CP-SAT, SciPy's optimizers and
the solver engines into every command (about 0.6 s of a 1.8 s ``multirelease run`` on Adult).  A
:class:`LazyRegistry` knows each name's module and class and imports it when the name is looked up;
listing the names imports nothing.  Entries can be added (tests register fakes).
"""
from __future__ import annotations

import importlib
from collections.abc import MutableMapping
from typing import Any, Iterator

__all__ = ["LazyRegistry", "lazy_names"]


class LazyRegistry(MutableMapping):
    """``{name: "module:Class"}`` (modules relative to ``package``), resolved on first lookup."""

    def __init__(self, package: str, entries: dict[str, str]):
        self._package = package
        self._where = dict(entries)
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            module, cls = self._where[name].split(":")  # KeyError for an unknown name, as a dict
            self._loaded[name] = getattr(importlib.import_module(f"{self._package}.{module}"), cls)
        return self._loaded[name]

    def __setitem__(self, name: str, cls: Any) -> None:
        self._where[name] = ""
        self._loaded[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def class_name(self, name: str) -> str:
        """``module:Class`` of a registered name (without importing it)."""
        return self._where[name]

    def attribute_getter(self):
        """A module ``__getattr__`` (PEP 562) that serves the registered classes by class name, imported on
        first use: ``publishers.Mondrian``, ``attacks.Correspondence``."""
        by_class = {where.split(":")[1]: name for name, where in self._where.items() if where}

        def __getattr__(attr: str):
            if attr in by_class:
                return self[by_class[attr]]
            raise AttributeError(f"module {self._package!r} has no attribute {attr!r}")

        return __getattr__


def lazy_names(package: str, names: dict[str, str]):
    """A family package's ``__getattr__`` (PEP 562): its public names (``{name: module}``, modules relative to
    ``package``), each imported from its module when first used, so that importing one module of a family
    (``publishers.bcf.state``) does not import the others (``publishers.bcf.anonymizer`` pulls OR-Tools)."""

    def __getattr__(attr: str):
        if attr in names:
            return getattr(importlib.import_module(f"{package}.{names[attr]}"), attr)
        raise AttributeError(f"module {package!r} has no attribute {attr!r}")

    return __getattr__
