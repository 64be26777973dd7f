"""The layout of the code (issue 23): no import circles, and no package folder with more modules than one can
scan.

The import graph is read from the source (``ast``), not from ``sys.modules``: every ``import`` and ``from ...
import`` counts wherever it stands - at the top of a module, inside a function (the late imports that keep
``import multirelease`` cheap) or under ``if TYPE_CHECKING:`` - because a late import that only dodges a circle is
still a circle in the design.  ``from package import name`` is an edge to ``package.name`` when that is a module,
else to ``package`` (its ``__init__``); importing a module does not count as importing the packages above it.
The circles are the strongly connected components of the graph with more than one module (Tarjan, via
networkx).
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("multirelease", "publishers", "attacks", "solver")
#: modules at one level of a package (``__init__`` not counted): "about 12" in the issue
MAX_MODULES = 12


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the four packages."""
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _targets(module: str, is_package: bool, node: ast.AST, known: dict[str, Path]) -> list[str]:
    """The project modules one import statement names (outside modules are left out)."""

    def owner(name: str) -> str | None:
        """The longest known prefix: ``solver.executor.plan_chunks`` -> ``solver.executor``."""
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    if isinstance(node, ast.Import):
        return [m for a in node.names if (m := owner(a.name))]
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    out = []
    for alias in node.names:
        target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else owner(base)
        if target:
            out.append(target)
    return out


def import_graph() -> nx.DiGraph:
    known = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, path.name == "__init__.py", node, known):
                    if target != module:
                        graph.add_edge(module, target, line=node.lineno)
    return graph


def circles(graph: nx.DiGraph) -> list[list[str]]:
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def test_the_graph_sees_late_imports():
    """The walker reads imports inside functions and relative ones: the CLI imports the reference late (inside
    ``describe``), and the possible-worlds analysis imports its component solver relatively."""
    graph = import_graph()
    assert graph.has_edge("multirelease.cli", "multirelease.reports.reference")
    assert len(graph) > 80 and graph.number_of_edges() > 200


def test_a_circle_is_found():
    """The check itself: a circle added to the graph is reported with its modules."""
    graph = import_graph()
    graph.add_edge("multirelease.reports.reference", "multirelease.cli")
    found = circles(graph)
    assert any({"multirelease.cli", "multirelease.reports.reference"} <= set(c) for c in found), found


def test_no_import_circles():
    graph = import_graph()
    found = circles(graph)
    lines = [" <-> ".join(c) + ": " + "; ".join(f"{a} -> {b} (line {graph.edges[a, b]['line']})"
                                                 for a in c for b in c if graph.has_edge(a, b)) for c in found]
    assert not found, "modules that import each other:\n" + "\n".join(lines)
@pytest.mark.parametrize("package", PACKAGES)
def test_no_folder_holds_too_many_modules(package):
    crowded = {}
    for folder in [ROOT / package, *(p for p in (ROOT / package).rglob("*") if p.is_dir())]:
        if not (folder / "__init__.py").exists():
            continue
        modules = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
        if len(modules) > MAX_MODULES:
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert not crowded, f"folders with more than {MAX_MODULES} modules: {crowded}"
