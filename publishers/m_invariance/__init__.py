"""The m-invariance family: re-publication with counterfeit records under insertions, deletions and updates.

Papers: m-invariance (Xiao & Tao, SIGMOD 2007; reference [4] of Li & Zhou) and its extension to internal
updates, m-Distinct and m-Distinct* (Li & Zhou, ICDE 2008, ``../shared/papers/000_3b754a1d6e85dc35.txt``,
sections IV-V).

Modules:

* :mod:`.invariance` - ``m_invariance`` (:class:`MInvariance`): buckets, signatures, counterfeits;
* :mod:`.distinct` - ``m_distinct`` and ``m_distinct_star`` (:class:`MDistinct`, :class:`MDistinctStar`);
* private, shared by both: ``_split`` (step 4, the balanced recursive split), ``_publish`` (QI-groups to a
  release), ``_cohorts`` (uid cohorts for the record-tracking adversary), ``_guarantee`` (the self-check every
  release passes before it is returned); of m-Distinct alone: ``_distinct_parts`` (bitmask buckets,
  Algorithm 2's intersection buckets) and ``_assign`` (Algorithm 3's placement).

Signature: each publisher is a :class:`publishers.base.PublisherBase`, ``publish(snapshot, *, attributes,
state, rng) -> PublishResult``, registered in ``publishers.PUBLISHERS``.

Tests: ``tests/publishers/test_m_distinct*.py`` and ``test_counterfeit_indistinguishable.py``; the brute force
over update graphs and record tracking that every release is checked against is in
``tests/publishers/test_m_publishers_guarantee.py``; the registry-wide property is
``tests/publishers/test_publisher_guarantees.py``.
"""
from multirelease.registry import lazy_names

__all__ = ["MInvariance", "MDistinct", "MDistinctStar"]
__getattr__ = lazy_names(__name__, {"MInvariance": "invariance", "MDistinct": "distinct", "MDistinctStar": "distinct"})
