"""The BCF family: continuous publishing of a growing table safe from correspondence attacks.

Paper: Fung, Wang, Fu, Pei, "Anonymity for Continuous Data Publishing" (EDBT 2008,
``../shared/papers/002_26e2f2912f1b36d2.txt``): BCF-anonymity (``FA, CA, BA >= k``, section 3) reached by top-down
specialization (Algorithm 1).

Modules:

* :mod:`.tds` - ``tds`` (:class:`TopDownSpecialization`): k-anonymity by top-down specialization over hierarchy
  cuts, the search Algorithm 1 runs and the first release of a chain;
* :mod:`.anonymizer` - ``bcf`` (:class:`BCFAnonymizer`): Algorithm 1 and its section 7.1 extension;
* :mod:`.closed` - the closed forms of FA, CA, BA on two cut releases (section 4, Theorems 4.2-4.5);
* :mod:`.measure` - the incremental validity test (Procedures 2 and 3, section 5.2);
* :mod:`.exact` - the exact correspondence engine as validity test and final check;
* :mod:`.state` - the chain of earlier releases (own or foreign) and the records behind it.

Signature: each publisher is a :class:`publishers.base.PublisherBase`, ``publish(snapshot, *, attributes,
state, rng) -> PublishResult``, registered in ``publishers.PUBLISHERS``.

Tests: ``tests/publishers/test_tds_bcf.py``, ``test_bcf_state_digests.py``; the brute force over buddy-count
matrices (any ``r1``) is ``tests/publishers/test_bcf_any_r1.py``; the registry-wide property is
``tests/publishers/test_publisher_guarantees.py``.
"""
from multirelease.registry import lazy_names

__all__ = ["BCFAnonymizer", "TopDownSpecialization"]
__getattr__ = lazy_names(__name__, {"BCFAnonymizer": "anonymizer", "TopDownSpecialization": "tds"})
