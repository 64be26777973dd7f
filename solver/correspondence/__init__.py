"""The exact correspondence engine: crack sizes of the F-, C- and B-attacks over any number of releases.

Paper: Fung, Wang, Fu, Pei, "Anonymity for Continuous Data Publishing" (EDBT 2008,
``../shared/papers/002_26e2f2912f1b36d2.txt``): generators and buddies (section 3), crack sizes (Definitions 3.1,
3.3, 3.5; Theorems 4.2-4.4) and more than two releases (section 7.1).

Modules:

* :mod:`.crack` - the shared question and answer (:class:`CrackRequest`, :class:`CrackAnswer`);
* :mod:`.regions` - group aggregation and the geometry of published regions;
* two releases, min-cost flows: :mod:`.flows` (:class:`TwoReleaseEngine`, the buddy graph), :mod:`.flow_tasks`
  (one component as a task any process runs), :mod:`.flow_witness` (a generator written out as a witness);
* more releases, buddy chains: :mod:`.generators` (:class:`ChainEngine`), :mod:`.chain_component` (the
  component model), :mod:`.chain_bulk` (objectives closed without CP-SAT), :mod:`.chain_lp` (LP bounds and
  LP-guided generators), :mod:`.chain_cpsat` (the CP-SAT fallback), :mod:`.chain_witness` (buddy chains as a
  witness).

Signature: both engines answer ``answer(requests) -> list[CrackAnswer]`` (exact values, or proven intervals where
a solver stopped).

Tests: ``tests/attacks/test_correspondence.py`` (the paper's examples, the closed forms against the engine and
the brute force over generators), ``tests/solver/test_chain_lp.py``, ``tests/solver/test_executor.py``.
"""
from multirelease.registry import lazy_names

__all__ = ["CrackRequest", "CrackAnswer", "TwoReleaseEngine", "ChainEngine"]
__getattr__ = lazy_names(__name__, {"CrackRequest": "crack", "CrackAnswer": "crack", "TwoReleaseEngine": "flows",
                                    "ChainEngine": "generators"})
