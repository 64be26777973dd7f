"""The ledger's keyed pseudonyms of the persons behind its snapshots (issue 25, item 6).

A board page (``ledger DIR --html``, ``certify --ledger ... --html``) names persons in its witnesses (the record
the update-graph attack follows, the individual of a possible world...).  The snapshot's identifier column is
the custodian's own key to a person (a patient number, an account): it must not leave the ledger with the
page.  The page names each person by a pseudonym instead, ``P-`` and the first 10 hex digits of the HMAC-SHA-256
of the identifier under the ledger's secret (:func:`~multirelease.ledger.store.keyed_digest`, the only digest
of raw data the ledger keeps): stable across the ledger's pages and months (the same person has the same
pseudonym on every page of one ledger), unlinkable to the identifier without the secret, and different in
every other ledger.  The custodian, who holds the secret, finds the person back with :func:`find_person`; raw
identifiers appear on a page only when asked for (``--raw-ids``).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Iterable

from .store import Ledger, keyed_digest

__all__ = ["PREFIX", "pseudonym", "ledger_pseudonyms", "find_person"]

#: what every pseudonym starts with
PREFIX = "P-"
#: hex digits of the HMAC kept: 40 bits, no collision expected below about a million persons per ledger
DIGITS = 10
#: the HMAC's message is this label and the identifier, so that a pseudonym is never the digest of anything
#: else the ledger keys (a snapshot's MAC is the HMAC of the snapshot's bytes)
_LABEL = b"multirelease pseudonym\x00"


def pseudonym(secret: bytes, identifier: object) -> str:
    """``P-3f9a0c12de``: the keyed pseudonym of one snapshot identifier under the ledger's ``secret``."""
    return PREFIX + keyed_digest(secret, _LABEL + str(identifier).encode("utf-8"))[:DIGITS]


def _snapshot_ids(data: bytes | None) -> list[str]:
    """The identifier column of a snapshot as the ledger stores it (CSV, identifier first:
    :func:`~multirelease.ledger.store.table_bytes`)."""
    if not data:
        return []
    import pandas as pd

    frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, usecols=[0])
    return frame.iloc[:, 0].tolist()


def _ids(led: Ledger) -> Iterable[str]:
    for r in led.history():
        yield from _snapshot_ids(led.blob(r.n, "snapshot"))


def ledger_pseudonyms(ledger_dir: str | Path) -> dict[str, str]:
    """``{identifier: pseudonym}`` for every identifier of every snapshot behind the ledger's releases (the
    persons a page can name: a withdrawn month is in no gate).  Reads the ledger without its lock."""
    with Ledger(ledger_dir, write=False) as led:
        secret = bytes.fromhex(led.meta()["secret"])
        return {i: pseudonym(secret, i) for i in dict.fromkeys(_ids(led))}


def find_person(ledger_dir: str | Path, name: str) -> list[str]:
    """The custodian's way back: the identifiers whose pseudonym is ``name`` (one, unless two identifiers
    share the first :data:`DIGITS` hex digits; none when no snapshot of the ledger holds it)."""
    return sorted(i for i, p in ledger_pseudonyms(ledger_dir).items() if p == name)
