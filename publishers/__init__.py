"""Publishers: one module per principle, one shared signature (:class:`publishers.base.Publisher`).

``PUBLISHERS`` maps the contract's publisher names to their classes; the scenario loader, the CLI and the
contract tests all read it.
"""
from .base import Publisher, PublisherBase, PublishResult
from .mondrian import Mondrian, NaiveRepublication
from .bpg import BPG
from .tds import TopDownSpecialization
from .bcf import BCFAnonymizer
from .global_guarantee import GlobalGuarantee
from .sequential_diversity import NonSequentialDiversity, SequentialDiversity
from .m_invariance import MInvariance
from .m_distinct import MDistinct, MDistinctStar

PUBLISHERS: dict[str, type[PublisherBase]] = {
    Mondrian.name: Mondrian,
    NaiveRepublication.name: NaiveRepublication,
    BPG.name: BPG,
    TopDownSpecialization.name: TopDownSpecialization,
    BCFAnonymizer.name: BCFAnonymizer,
    GlobalGuarantee.name: GlobalGuarantee,
    SequentialDiversity.name: SequentialDiversity,
    NonSequentialDiversity.name: NonSequentialDiversity,
    MInvariance.name: MInvariance,
    MDistinct.name: MDistinct,
    MDistinctStar.name: MDistinctStar,
}

__all__ = ["PUBLISHERS", "Publisher", "PublisherBase", "PublishResult"]
