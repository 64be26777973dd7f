"""The intersection and difference attacks on successive releases (the ``intersection`` attack).

Paper: Barbosa, Pinto, Gomes (CIKM 2012, ``../shared/papers/003_9c5f9a30c53bd642.txt``), section 4: an adversary
who tracks a record across releases (by uid, or by its published values) intersects and subtracts the
sensitive multisets of the classes it was published in, and judges what remains against the principle.

Modules:

* :mod:`.attack` - :class:`Intersection`, over every release at once;
* :mod:`.core` - the record-tracking engine: signatures, blocks and the principle's verdict per block;
* :mod:`.incremental` - the releases in uid space, kept one release at a time for the ledger.

Signature: :class:`attacks.base.AttackBase`, ``run(view, progress=None) -> AttackResult``, registered in
``attacks.ATTACKS``.

Tests: ``tests/attacks/test_intersection_all_releases.py`` (against a brute force over subsets of releases),
``tests/attacks/test_intersection_bpg.py``, ``tests/attacks/test_intersection_linking.py`` (with linking columns,
against ``tests/bruteforce.py``'s ``intersection_failures``).
"""
from multirelease.registry import lazy_names

__all__ = ["Intersection"]
__getattr__ = lazy_names(__name__, {"Intersection": "attack"})
