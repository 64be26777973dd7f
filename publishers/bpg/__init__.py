"""The BPG family: a post-processor that makes any monotone principle safe across successive releases.

Paper: Barbosa, Pinto, Gomes (CIKM 2012, ``../shared/papers/003_9c5f9a30c53bd642.txt``), section 6, Listing 1:
the intersection and difference attacks of section 4 are answered by the *table of neighbourhoods*.

Modules:

* :mod:`.postprocessor` - ``bpg`` (:class:`BPG`): one release anonymized by a single-release generalizer and
  post-processed against the history;
* :mod:`.listing1` - the tests of Listing 1 (E1-E4 and the leftovers) over the neighbourhoods;
* :mod:`.store` - the history in its own SQLite database, so that release ``n + 1`` can be made by another
  process.

Signature: each publisher is a :class:`publishers.base.PublisherBase`, ``publish(snapshot, *, attributes,
state, rng) -> PublishResult``, registered in ``publishers.PUBLISHERS``.

Tests: ``tests/publishers/test_bpg_store.py``; the intersection attacker it must withstand, against its brute
force, in ``tests/attacks/test_intersection_bpg.py``; the registry-wide property is
``tests/publishers/test_publisher_guarantees.py``.
"""
from multirelease.registry import lazy_names

__all__ = ["BPG"]
__getattr__ = lazy_names(__name__, {"BPG": "postprocessor"})
