"""Attacks: one module per attack family, one shared signature (:class:`attacks.base.Attack`).

``ATTACKS`` maps the contract's attack names to their classes; the scenario loader, the CLI and the contract
tests all read it.
"""
from .base import Attack, AttackBase, AttackResult, Progress
from .correspondence import Correspondence
from .linking import Linking

ATTACKS: dict[str, type[AttackBase]] = {
    Linking.name: Linking,
    Correspondence.name: Correspondence,
}

__all__ = ["ATTACKS", "Attack", "AttackBase", "AttackResult", "Progress", "Linking", "Correspondence"]
