"""The correspondence attacks on continuous data publishing, computed exactly (the ``correspondence`` attack).

Paper: Fung, Wang, Fu, Pei, "Anonymity for Continuous Data Publishing" (EDBT 2008,
``../shared/papers/002_26e2f2912f1b36d2.txt``): the F-, C- and B-attacks (section 3), their crack sizes
(Theorems 4.2-4.5) and more than two releases (section 7.1).

Modules:

* :mod:`.attack` - :class:`Correspondence`: targets, the exact engine (:mod:`solver.correspondence`), FA, CA, BA
  and the witness;
* :mod:`.targets` - the targets (population or given) and their crack questions;
* :mod:`.closed` - the closed forms of the paper, which the exact engine equals where their assumptions hold.

Signature: :class:`attacks.base.AttackBase`, ``run(view, progress=None) -> AttackResult``, registered in
``attacks.ATTACKS``.

Tests: ``tests/attacks/test_correspondence.py`` (the paper's Example 1.1, the closed forms against the engine,
the brute force over generators) and ``tests/attacks/test_correspondence_linking.py`` (linking columns).
"""
from multirelease.registry import lazy_names

__all__ = ["Correspondence"]
__getattr__ = lazy_names(__name__, {"Correspondence": "attack"})
