"""BCF's state keeps no unkeyed hash of a raw value (issue 14 item 3): whoever holds the state - the publisher's
own, or the ledger's copy - cannot recover a sensitive value by hashing every candidate value of a record
whose quasi-identifiers are known.  The state's record digests are HMAC-SHA-256 under a per-process key from
``secrets`` (publishers/bcf/state.py) and still catch a published record that changed."""
from __future__ import annotations

import hashlib
import json
import zlib

import numpy as np
import pandas as pd
import pytest

from multirelease.errors import InputError
from multirelease.ledger.store import Ledger
from multirelease.ledger.operations import load_spec, make_release, read_snapshot
from publishers import PUBLISHERS
from ledger_data import DISEASES, write_snapshots, write_spec

BCF = dict(publisher="bcf, k: 2", sensitive=", correspondence: true", transitions="", attacks="  - linking\n",
           expect="  - linking.k >= 2\n")


def _candidate_hashes(frame: pd.DataFrame, quasi: list[str], sensitive: str) -> tuple[set, set]:
    """Every unkeyed digest of every record's QI values with every candidate sensitive value: pandas' row hash
    (64 bits and the 32 bits the old state kept), CRC-32, MD5, SHA-1, SHA-256 of the usual serializations.
    Returns ``(integers, hex strings)``."""
    ints, hexes = set(), set()
    for value in DISEASES:
        rows = frame[quasi].astype(str).assign(**{sensitive: value})
        h = pd.util.hash_pandas_object(rows, index=False).to_numpy()
        ints |= {int(x) for x in h} | {int(x & np.uint64(0xFFFFFFFF)) for x in h}
        for r in rows.to_numpy().tolist():
            for text in (",".join(r), ";".join(r), "|".join(r), json.dumps(r), str(r), str(tuple(r))):
                b = text.encode()
                ints.add(zlib.crc32(b))
                hexes |= {f"{zlib.crc32(b):08x}", hashlib.md5(b).hexdigest(), hashlib.sha1(b).hexdigest(),
                          hashlib.sha256(b).hexdigest()}
    return ints, hexes


def _found(doc, ints: set, hexes: set) -> list:
    """The leaves of a JSON document that are (or are a piece of at least 8 hex digits of) a candidate hash."""
    out = []

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, bool):
            return
        elif isinstance(x, int):
            if x in ints or (x & 0xFFFFFFFFFFFFFFFF) in ints:
                out.append(x)
        elif isinstance(x, str) and len(x) >= 8 and all(c in "0123456789abcdef" for c in x.lower()):
            if any(x.lower() in h or h in x.lower() for h in hexes):
                out.append(x)

    walk(doc)
    return out


@pytest.fixture()
def bcf_ledger(tmp_path):
    spec = write_spec(tmp_path, **BCF)
    snaps = write_snapshots(tmp_path, months=2, n=60, leave=0, arrive=12, update=0, seed=5)
    ledger, rel = tmp_path / "ledger", tmp_path / "releases"
    rel.mkdir()
    outs = [make_release(spec, s, ledger, rel / f"release_{i}.csv") for i, s in enumerate(snaps, 1)]
    assert [o.verdict for o in outs] == ["pass", "pass"]
    return spec, snaps, ledger, outs


def test_no_unkeyed_hash_of_any_raw_value_in_the_state(bcf_ledger):
    spec, snaps, ledger, outs = bcf_ledger
    _, _, schema, sep = load_spec(spec)
    frames = [read_snapshot(schema, s, sep).frame for s in snaps]
    ints, hexes = set(), set()
    for f in frames:
        a, b = _candidate_hashes(f, ["age", "country"], "disease")
        ints |= a
        hexes |= b
    with Ledger(ledger, write=False) as led:
        stored = [json.loads(led.blobs(r.n)["state"]) for r in led.history()]
    own = [o.run.states[-1] for o in outs]  # the publisher's state as returned, digests included
    assert all(len(s["records"]["mac"]) == len(f) for s, f in zip(own, frames))
    assert all(s["records"] == "ledger" for s in stored)  # the ledger keeps the snapshot, no digest
    for doc in own + stored:
        assert _found(doc, ints, hexes) == []
    # the detector finds the digests the state used to keep (pandas' row hash, low 32 bits), every one of them
    f, s = frames[-1], own[-1]
    rows = f[["age", "country", "disease"]].astype(str)
    old = (pd.util.hash_pandas_object(rows, index=False).to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)
    old_state = {**s, "records": {"ids": s["records"]["ids"], "crc": old.tolist()}}
    assert len(_found(old_state, ints, hexes)) == len(f)


def test_keyed_digests_still_catch_a_changed_record(bcf_ledger):
    spec, snaps, ledger, outs = bcf_ledger
    _, _, schema, sep = load_spec(spec)
    state = outs[-1].run.states[-1]
    table = read_snapshot(schema, snaps[-1], sep)
    frame = table.frame.copy()
    grown = pd.concat([frame, frame.iloc[:4].rename(index=lambda i: f"{i}new")])
    bcf = PUBLISHERS["bcf"](k=2)
    from multirelease.model.table import Table

    bcf.publish(Table(schema, grown), state=state, rng=np.random.default_rng(0))  # unchanged records: accepted
    first = frame.index[0]
    changed = grown.copy()
    changed.loc[first, "disease"] = next(d for d in DISEASES if d != frame.loc[first, "disease"])
    with pytest.raises(InputError, match=f"record '{first}' changed its values"):
        bcf.publish(Table(schema, changed), state=state, rng=np.random.default_rng(0))
    foreign = {**state, "records": {**state["records"], "key": "0" * 16}}  # digests of another process's key
    with pytest.raises(InputError, match="made by another process"):
        bcf.publish(Table(schema, grown), state=foreign, rng=np.random.default_rng(0))
