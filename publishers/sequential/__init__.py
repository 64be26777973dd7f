"""The sequential family: l-diverse sequential releases by possible worlds.

Paper: Shmueli & Tassa, "Privacy by Diversity in Sequential Releases of Databases"
(``../shared/papers/004_db68606f48036092.txt``): every release is consistent with the same ``l`` possible worlds
(Theorem 4.1), by Algorithms 1 and 2 (section 6.2), and the non-sequential baseline of section 4.5.

Modules:

* :mod:`.diversity` - ``sequential_diversity`` and ``non_sequential_diversity`` (:class:`SequentialDiversity`,
  :class:`NonSequentialDiversity`);
* :mod:`.algorithms` - the geometry of regions, Algorithm 1 and Algorithm 2;
* :mod:`.check` - the publishers' own check of each release against the possible-worlds attack.

Signature: each publisher is a :class:`publishers.base.PublisherBase`, ``publish(snapshot, *, attributes,
state, rng) -> PublishResult``, registered in ``publishers.PUBLISHERS``.

Tests: ``tests/publishers/test_sequential_diversity.py`` (the paper's examples and the brute force over
worlds); the registry-wide property is ``tests/publishers/test_publisher_guarantees.py``.
"""
from multirelease.registry import lazy_names

__all__ = ["SequentialDiversity", "NonSequentialDiversity"]
__getattr__ = lazy_names(__name__, {"SequentialDiversity": "diversity", "NonSequentialDiversity": "diversity"})
