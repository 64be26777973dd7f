"""Publishers: one folder per family, one shared signature (:class:`publishers.base.Publisher`).

``PUBLISHERS`` maps the contract's publisher names to their classes; the scenario loader, the CLI and the
contract tests all read it.  Each class is imported when its name is first looked up
(:class:`~multirelease.registry.LazyRegistry`); the classes are also attributes of this package.

* :mod:`.base` - the signature and :class:`PublishResult`;
* :mod:`.mondrian` - ``mondrian`` and ``naive``: the single-release baselines (LeFevre et al.);
* :mod:`.global_guarantee` - ``global_guarantee`` (Wong et al., 001);
* :mod:`.m_invariance` - ``m_invariance``, ``m_distinct``, ``m_distinct_star`` (Xiao & Tao; Li & Zhou, 000);
* :mod:`.bcf` - ``tds`` and ``bcf`` (Fung et al., 002);
* :mod:`.bpg` - ``bpg`` (Barbosa et al., 003);
* :mod:`.sequential` - ``sequential_diversity`` and ``non_sequential_diversity`` (Shmueli & Tassa, 004).
"""
from multirelease.registry import LazyRegistry

from .base import Publisher, PublisherBase, PublishResult

PUBLISHERS = LazyRegistry(__name__, {
    "mondrian": "mondrian:Mondrian",
    "naive": "mondrian:NaiveRepublication",
    "bpg": "bpg.postprocessor:BPG",
    "tds": "bcf.tds:TopDownSpecialization",
    "bcf": "bcf.anonymizer:BCFAnonymizer",
    "global_guarantee": "global_guarantee:GlobalGuarantee",
    "sequential_diversity": "sequential.diversity:SequentialDiversity",
    "non_sequential_diversity": "sequential.diversity:NonSequentialDiversity",
    "m_invariance": "m_invariance.invariance:MInvariance",
    "m_distinct": "m_invariance.distinct:MDistinct",
    "m_distinct_star": "m_invariance.distinct:MDistinctStar",
})

__getattr__ = PUBLISHERS.attribute_getter()

__all__ = ["PUBLISHERS", "Publisher", "PublisherBase", "PublishResult"]
