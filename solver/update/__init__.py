"""Joint possible worlds of releases with internal updates (the ``update_graph: {joint: true}`` attack).

Paper: Li & Zhou (``../shared/papers/000_3b754a1d6e85dc35.txt``, section III): the per-record Sensitive-attribute
Update Graph prunes each record's candidate values alone; a joint world constrains every record at once.

Modules:

* :mod:`.worlds` - the CP-SAT model per connected component and :func:`joint_feasible`;
* :mod:`.tasks` - the components as tasks any process runs (:mod:`solver.executor`).

Signature: ``joint_feasible(links, model, sug_feasible, ...) -> JointResult``.

Tests: ``tests/attacks/test_update_graph_linking.py`` (the joint attack against a brute force over every world of
each component), ``tests/attacks/test_update_graph.py`` (never less than the per-record SUG),
``tests/solver/test_executor.py``.
"""
from multirelease.registry import lazy_names

__all__ = ["joint_feasible", "JointResult"]
__getattr__ = lazy_names(__name__, {"joint_feasible": "worlds", "JointResult": "worlds"})
