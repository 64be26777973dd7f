"""Publishers: one module per principle, one shared signature (:class:`publishers.base.Publisher`).

``PUBLISHERS`` maps the contract's publisher names to their classes; the scenario loader, the CLI and the
contract tests all read it.
"""
from .base import Publisher, PublisherBase, PublishResult
from .mondrian import Mondrian, NaiveRepublication

PUBLISHERS: dict[str, type[PublisherBase]] = {
    Mondrian.name: Mondrian,
    NaiveRepublication.name: NaiveRepublication,
}

__all__ = ["PUBLISHERS", "Publisher", "PublisherBase", "PublishResult"]
