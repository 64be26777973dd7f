"""Attacks: one module per attack family, one shared signature (:class:`attacks.base.Attack`).

``ATTACKS`` maps the contract's attack names to their classes; the scenario loader, the CLI and the contract
tests all read it.
"""
from .base import Attack, AttackBase, AttackResult, Progress
from .correspondence import Correspondence
from .linking import Linking
from .update_graph import UpdateGraph
from .possible_worlds import PossibleWorlds
from .intersection import Intersection

ATTACKS: dict[str, type[AttackBase]] = {
    Linking.name: Linking,
    Correspondence.name: Correspondence,
    PossibleWorlds.name: PossibleWorlds,
    Intersection.name: Intersection,
    UpdateGraph.name: UpdateGraph,
}

__all__ = ["ATTACKS", "Attack", "AttackBase", "AttackResult", "Progress", "Linking", "Correspondence", "PossibleWorlds",
           "UpdateGraph", "Intersection"]
