"""The update-graph attack on releases with internal updates (the ``update_graph`` attack).

Paper: Li & Zhou (``../shared/papers/000_3b754a1d6e85dc35.txt``, section III): candidate update sets, the
Sensitive-attribute Update Graph (SUG) of each record, its feasible sub-SUG and the path-weight disclosure risk;
with ``joint: true`` every record's values at once (:mod:`solver.update`).

Modules:

* :mod:`.attack` - :class:`UpdateGraph`: the SUG passes, risks and witnesses;
* :mod:`.version_links` - linking the versions of a record across releases (Definition 6: the adversary's
  external knowledge);
* :mod:`.incremental` - the links kept one release at a time for the ledger.

Signature: :class:`attacks.base.AttackBase`, ``run(view, progress=None) -> AttackResult``, registered in
``attacks.ATTACKS``.

Tests: ``tests/attacks/test_update_graph.py`` (Definition 11's pruning, Lemmas 1 and 2),
``tests/attacks/test_update_graph_prefixes.py``, ``tests/attacks/test_update_graph_linking.py`` (the joint
attack against a brute force over worlds).
"""
from multirelease.registry import lazy_names

__all__ = ["UpdateGraph"]
__getattr__ = lazy_names(__name__, {"UpdateGraph": "attack"})
