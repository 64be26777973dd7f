"""Attacks: one module per attack family, one shared signature (:class:`attacks.base.Attack`).

``ATTACKS`` maps the contract's attack names to their classes; the scenario loader, the CLI and the contract
tests all read it.  Each class is imported when its name is first looked up
(:class:`~multirelease.registry.LazyRegistry`); the classes are also attributes of this package.
"""
from multirelease.registry import LazyRegistry

from .base import Attack, AttackBase, AttackResult, Progress

ATTACKS = LazyRegistry(__name__, {
    "linking": "linking:Linking",
    "correspondence": "correspondence:Correspondence",
    "possible_worlds": "possible_worlds:PossibleWorlds",
    "intersection": "intersection:Intersection",
    "update_graph": "update_graph:UpdateGraph",
})

__getattr__ = ATTACKS.attribute_getter()

__all__ = ["ATTACKS", "Attack", "AttackBase", "AttackResult", "Progress", "Linking", "Correspondence", "PossibleWorlds",
           "UpdateGraph", "Intersection"]
