"""Publishers: one module per principle, one shared signature (:class:`publishers.base.Publisher`).

``PUBLISHERS`` maps the contract's publisher names to their classes; the scenario loader, the CLI and the
contract tests all read it.  Each class is imported when its name is first looked up
(:class:`~multirelease.registry.LazyRegistry`); the classes are also attributes of this package.
"""
from multirelease.registry import LazyRegistry

from .base import Publisher, PublisherBase, PublishResult

PUBLISHERS = LazyRegistry(__name__, {
    "mondrian": "mondrian:Mondrian",
    "naive": "mondrian:NaiveRepublication",
    "bpg": "bpg:BPG",
    "tds": "tds:TopDownSpecialization",
    "bcf": "bcf:BCFAnonymizer",
    "global_guarantee": "global_guarantee:GlobalGuarantee",
    "sequential_diversity": "sequential_diversity:SequentialDiversity",
    "non_sequential_diversity": "sequential_diversity:NonSequentialDiversity",
    "m_invariance": "m_invariance:MInvariance",
    "m_distinct": "m_distinct:MDistinct",
    "m_distinct_star": "m_distinct:MDistinctStar",
})

__getattr__ = PUBLISHERS.attribute_getter()

__all__ = ["PUBLISHERS", "Publisher", "PublisherBase", "PublishResult"]
