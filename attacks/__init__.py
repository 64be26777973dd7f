"""Attacks: one module or folder per attack family, one shared signature (:class:`attacks.base.Attack`).

``ATTACKS`` maps the contract's attack names to their classes; the scenario loader, the CLI and the contract
tests all read it.  Each class is imported when its name is first looked up
(:class:`~multirelease.registry.LazyRegistry`); the classes are also attributes of this package.

* :mod:`.base` - the signature ``run(view) -> AttackResult``, the result and its reasons; :mod:`.intervals` -
  figures of solvers that may stop early; :mod:`.incremental` - attacks extended one release at a time;
* :mod:`.linking` - ``linking``: what one release alone lets an adversary link;
* :mod:`.correspondence` - ``correspondence`` (Fung et al., 002): the F-, C- and B-attacks, exactly;
* :mod:`.possible_worlds` - ``possible_worlds`` (Shmueli & Tassa, 004; Wong et al., 001);
* :mod:`.intersection` - ``intersection`` (Barbosa et al., 003): intersection and difference with record
  tracking;
* :mod:`.update_graph` - ``update_graph`` (Li & Zhou, 000): the update-graph attack on internal updates.
"""
from multirelease.registry import LazyRegistry

from .base import Attack, AttackBase, AttackResult, Progress

ATTACKS = LazyRegistry(__name__, {
    "linking": "linking:Linking",
    "correspondence": "correspondence.attack:Correspondence",
    "possible_worlds": "possible_worlds:PossibleWorlds",
    "intersection": "intersection.attack:Intersection",
    "update_graph": "update_graph.attack:UpdateGraph",
})

__getattr__ = ATTACKS.attribute_getter()

__all__ = ["ATTACKS", "Attack", "AttackBase", "AttackResult", "Progress", "Linking", "Correspondence", "PossibleWorlds",
           "UpdateGraph", "Intersection"]
