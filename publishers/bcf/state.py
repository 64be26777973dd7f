"""The state of the BCF-anonymizer: the chain of earlier releases, whose they are, and the records behind them.

Paper: ../shared/papers/002_26e2f2912f1b36d2.txt (Fung, Wang, Fu, Pei).  ``R_n`` is anonymized against every
earlier release ``R_1..R_{n-1}`` of the chain (sections 3 and 7.1), so the state (JSON) keeps them:

* ``chain``: one entry per earlier release, either
  - **own** (``"made_by": "bcf"``): written by this anonymizer - the classes (one taxonomy label per QI) and
    the groups ``[class, sensitive value, count, x_B, [x_B per earlier release]]``, the ``k`` it was made
    for, how its validity was measured (``incremental``: Procedures 2-3 and section 7.1, so the stored
    ``x_B`` are the crack sizes the later releases need; ``exact``: the correspondence engine) and a SHA-256
    ``digest`` of that content; or
  - **foreign** (``"made_by": "foreign"``): a release this anonymizer did not make (by ``tds``, by hand, by
    anything), kept as published: ``[group id or null, [QI labels], sensitive value, count]`` per distinct
    row (:func:`state_from_releases`);
* ``records``: the ids and a keyed digest of every record of the last snapshot, to check that ``D1 ⊆ D1 ∪ D2``
  with unchanged values (the publishing model of section 1.1: events are never deleted) - a violation is an
  :class:`InputError`.  The digest is HMAC-SHA-256 under a key drawn from :mod:`secrets` once per process and
  stored nowhere (issue 14: nothing stores an unkeyed hash of a raw value - an unkeyed 32-bit row hash let
  anyone holding the state recover every sensitive value from known QIs by hashing the candidates); the state
  names the key by a keyed digest of a constant, so a state from another process is refused rather than
  misread.  The release ledger stores no digest at all: it remakes them from its own snapshot
  (``multirelease.ledger.operations``).

:func:`incremental_chain` says when the incremental formulas may be trusted: every entry is own, its digest
matches (a hand-edited or hand-made entry is foreign), it was measured incrementally with the same ``k``, and
it is a cut of the taxonomies.  Otherwise the publisher searches with the exact engine.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.release import Release
from multirelease.model.schema import Schema
from multirelease.model.table import Table

from .closed import is_cut
from .measure import CutFamily
from .tds import CutSpace, CutSpecializer

__all__ = ["STATE_FORMAT", "own_entry", "foreign_entry", "entry_release", "incremental_chain", "family_of",
           "b_prefix", "record_digests", "check_growth", "state_from_releases", "state_for_sequence"]

STATE_FORMAT = "bcf/2"
#: formats this module reads (``bcf/1`` entries carry no digest, so they are read as foreign)
READABLE = (None, "bcf/1", STATE_FORMAT)


# ---------------------------------------------------------------------- entries
def _digest(content: Mapping) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _own_content(entry: Mapping) -> dict:
    return {x: entry.get(x) for x in ("classes", "groups", "k", "measure", "quasi", "sensitive")}


def own_entry(space: CutSpace, spec: CutSpecializer, sens: np.ndarray, values: pd.Index, crack_of, *, k: int,
              measure: str, quasi: Sequence[str], sensitive: Sequence[str]) -> dict:
    """The release the search ended at, as an own entry: class labels and groups ``[class, value, count, x_B,
    [x_B per earlier release]]`` (``x_B`` from the incremental measure; 0 when measured exactly)."""
    live, inv = np.unique(spec.cls, return_inverse=True)
    inv = inv.reshape(-1)
    classes = []
    for c in live:
        labels = []
        for j, a in enumerate(space.attributes):
            lo, hi = space.node_range(j, int(spec.class_nodes[c, j]))
            labels.append(a.hierarchy.label(lo, hi, allow_intervals=False))
        classes.append(labels)
    S = len(values)
    uniq, counts = np.unique(inv * S + sens, return_counts=True)
    groups = []
    for u, n in zip(uniq.tolist(), counts.tolist()):
        ci, s = divmod(u, S)
        per_i: list[int] = []
        if crack_of is not None:
            gs, gc = crack_of[int(live[ci])]
            hit = np.flatnonzero(gs == s)
            per_i = [int(x) for x in gc[:, hit[0]]] if len(hit) else [0] * gc.shape[0]
        groups.append([ci, str(values[s]), int(n), max(per_i, default=0), per_i])
    entry = {"made_by": "bcf", "classes": classes, "groups": groups, "k": int(k), "measure": measure,
             "quasi": list(quasi), "sensitive": list(sensitive)}
    entry["digest"] = _digest(_own_content(entry))
    return entry


def foreign_entry(release: Release) -> dict:
    """A release as published (distinct rows with their counts), for a chain this anonymizer did not make."""
    labels = release.qi_labels()
    frame = pd.DataFrame({"group": release.group if release.group is not None else -1,
                          **{a: labels[a].to_numpy() for a in release.quasi},
                          "__s": release.sensitive.astype(str)})
    counts = frame.groupby(list(frame.columns), sort=True, dropna=False).size()
    rows = []
    for key, n in counts.items():
        key = key if isinstance(key, tuple) else (key,)
        g = None if int(key[0]) < 0 else int(key[0])
        rows.append([g, [str(x) for x in key[1:-1]], str(key[-1]), int(n)])
    return {"made_by": "foreign", "quasi": list(release.quasi), "rows": rows}


def entry_release(entry: Mapping, schema: Schema, quasi: Sequence[str], sensitive: Sequence[str]) -> Release:
    """An earlier release of the chain as the adversary sees it (QIs and the composite sensitive value)."""
    attrs = [schema[n] for n in quasi]
    if entry.get("made_by") == "foreign":
        if list(entry.get("quasi", [])) != list(quasi):
            raise InputError(f"bcf state: an earlier release publishes the quasi-identifiers {entry.get('quasi')}, "
                             f"this one {list(quasi)}")
        rows = [(g, labels, v, n) for g, labels, v, n in entry["rows"]]
    else:
        classes = entry["classes"]
        rows = [(None, classes[int(c)], v, n) for c, v, n, *_ in entry["groups"]]
    n_rows = sum(int(r[3]) for r in rows)
    q = len(attrs)
    lo = np.zeros((n_rows, q), dtype=np.int32)
    hi = np.zeros((n_rows, q), dtype=np.int32)
    masks = {a.name: np.zeros(n_rows, dtype=np.uint64) for a in attrs if a.is_subsets}
    sens = np.empty(n_rows, dtype=object)
    group = np.zeros(n_rows, dtype=np.int64) if any(r[0] is not None for r in rows) else None
    at = 0
    for g, labels, v, n in rows:
        if len(labels) != q:
            raise InputError("bcf state: a stored class has the wrong number of labels")
        for j, (a, lab) in enumerate(zip(attrs, labels)):
            if entry.get("made_by") == "foreign":
                x, y, m = a.parse_cell(str(lab))
            else:
                x, y = a.hierarchy.parse(str(lab), allow_intervals=False)
                m = (((1 << (y - x + 1)) - 1) << x) if a.is_subsets else 0
            lo[at:at + n, j], hi[at:at + n, j] = x, y
            if a.is_subsets:
                masks[a.name][at:at + n] = np.uint64(m)
        sens[at:at + n] = v
        if group is not None:
            group[at:at + n] = -1 if g is None else int(g)
        at += int(n)
    attributes = schema.restrict(list(quasi) + list(sensitive))
    return Release(schema=schema, attributes=attributes, lo=lo, hi=hi, sensitive=sens, masks=masks, group=group)


def incremental_chain(chain: Sequence[Mapping], space: CutSpace, *, k: int, quasi: Sequence[str],
                      sensitive: Sequence[str]) -> str | None:
    """``None`` when Procedures 2-3 and section 7.1 may be trusted on this chain, else why not (one phrase):
    an entry this anonymizer did not write (foreign, or its digest does not match: edited or hand-made), one
    measured exactly or for another ``k`` (its ``x_B`` are not the incremental crack sizes, or it is not
    BCF-anonymous for this ``k``), or one that is not a cut of the taxonomies."""
    for i, entry in enumerate(chain, 1):
        if entry.get("made_by") == "foreign":
            return f"release {i} was not made by bcf"
        if entry.get("digest") != _digest(_own_content(entry)):
            return f"release {i} is not in the state bcf wrote (no digest, or one that does not match)"
        if entry.get("measure") != "incremental":
            return f"release {i} was checked by the exact engine, not by the incremental measure"
        if int(entry.get("k", -1)) != int(k):
            return f"release {i} was made for k = {entry.get('k')}"
        if list(entry.get("quasi", [])) != list(quasi) or list(entry.get("sensitive", [])) != list(sensitive):
            return f"release {i} publishes other attributes"
        for labels in entry["classes"]:
            for j, (a, lab) in enumerate(zip(space.attributes, labels)):
                try:
                    lo, hi = a.hierarchy.parse(str(lab), allow_intervals=False)
                except InputError:
                    return f"release {i} has a value that is not a taxonomy node"
                if space.node_of_range(j, lo, hi) is None:
                    return f"release {i} has a value that is not a taxonomy node"
    return None


def family_of(entry: Mapping, space: CutSpace, values: pd.Index) -> CutFamily:
    """The classes of an own entry as a :class:`CutFamily` (weights = group counts)."""
    q = len(space.attributes)
    m = len(entry["classes"])
    lo = np.zeros((m, q), dtype=np.int64)
    hi = np.zeros((m, q), dtype=np.int64)
    for c, labels in enumerate(entry["classes"]):
        if len(labels) != q:
            raise InputError("bcf state: a stored class has the wrong number of labels")
        for j, (a, lab) in enumerate(zip(space.attributes, labels)):
            lo[c, j], hi[c, j] = a.hierarchy.parse(str(lab), allow_intervals=False)
    W = np.zeros((m, len(values)), dtype=np.int64)
    for c, v, n, *_ in entry["groups"]:
        W[int(c), values.get_loc(v)] += int(n)
    if not is_cut(lo, hi):
        raise InputError("bcf state: a stored release is not a cut generalization")
    return CutFamily(lo, hi, W)


def b_prefix(entry: Mapping, fam: CutFamily, values: pd.Index, t: int) -> np.ndarray:
    """Per class and value, ``max_{i<t} x_B(g; R_i)``: the records of each group that the B-attacks by the
    releases before ``R_{t+1}`` (0-based ``t``) force to be older than ``T_{t+1}`` (section 7.1)."""
    out = np.zeros_like(fam.weights)
    for g in entry["groups"]:
        c, v, per_i = g[0], g[1], (g[4] if len(g) > 4 else [g[3]])
        x = max(per_i[:t], default=0)
        if x:
            out[int(c), values.get_loc(v)] = max(out[int(c), values.get_loc(v)], int(x))
    return out


# ---------------------------------------------------------------------- the records behind the last release
#: the key of the record digests: from :mod:`secrets`, once per process, never stored
_RECORD_KEY = secrets.token_bytes(32)


def _key_id() -> str:
    return hmac.new(_RECORD_KEY, b"bcf record digests", hashlib.sha256).hexdigest()[:16]


def _record_macs(snapshot: Table, quasi: Sequence[str], sens: Sequence[str], ids=None) -> list[str]:
    """HMAC-SHA-256 (128 bits, hex) of every record's published QI and sensitive values under the process
    key: equal values give equal digests in this process, and nobody without the key can test a guess."""
    frame = snapshot.frame if ids is None else snapshot.frame.loc[ids]
    cols = list(quasi) + list(sens)
    rows = frame[cols].astype(str).to_numpy().tolist() if cols else [[] for _ in range(len(frame))]
    return [hmac.new(_RECORD_KEY, json.dumps(r).encode("utf-8"), hashlib.sha256).hexdigest()[:32] for r in rows]


def record_digests(snapshot: Table, quasi: Sequence[str], sens: Sequence[str]) -> dict:
    return {"ids": [str(i) for i in snapshot.ids], "mac": _record_macs(snapshot, quasi, sens), "key": _key_id()}


def check_growth(snapshot: Table, quasi, sens, records: Mapping, name: str) -> None:
    """``D1 ⊆ D1 ∪ D2``: every record of the previous snapshot is still there with the same values."""
    ids = list(records.get("ids", []))
    if not ids:
        return
    if "crc" in records or records.get("key") != _key_id():
        raise InputError(f"{name}: the state's record digests were made by another process (or an older version, "
                         f"with unkeyed hashes): continue the sequence through a release ledger, which keeps the "
                         f"snapshot itself")
    macs = list(records.get("mac", []))
    if len(ids) != len(macs):
        raise InputError(f"{name}: malformed state (ids and digests differ in length)")
    present = pd.Index(ids).isin(snapshot.frame.index)
    if not present.all():
        gone = ids[int(np.flatnonzero(~present)[0])]
        raise InputError(f"{name}: record '{gone}' of the previous release left the table; continuous publishing "
                         f"(Fung et al.) needs every earlier record in every later release")
    now = _record_macs(snapshot, quasi, sens, ids)
    bad = np.flatnonzero(np.asarray(now, dtype=object) != np.asarray(macs, dtype=object))
    if len(bad):
        raise InputError(f"{name}: record '{ids[int(bad[0])]}' changed its values since the previous release; "
                         f"continuous publishing (Fung et al.) never updates a published record")


# ---------------------------------------------------------------------- a chain bcf did not make
def state_from_releases(releases: Sequence[Release], snapshot: Table | None = None) -> dict:
    """The state to give ``bcf`` when the earlier releases were published by something else (``tds``, a file,
    by hand): the releases as published, and - when ``snapshot`` (the table behind the last of them) is given
    - its records, so that the growth of the table is checked too.  ``bcf`` then measures ``R_n`` with the
    exact correspondence engine (the incremental formulas assume what a foreign release does not give them).

    >>> state = state_from_releases([r1], d1)                          # doctest: +SKIP
    >>> PUBLISHERS["bcf"](k=2).publish(d12, state=state, rng=rng)    # doctest: +SKIP
    """
    if not releases:
        raise InputError("bcf: state_from_releases needs at least one earlier release")
    quasi = list(releases[0].quasi)
    sens = list(releases[0].sensitive_attributes)
    for i, r in enumerate(releases, 1):
        if list(r.quasi) != quasi or list(r.sensitive_attributes) != sens:
            raise InputError(f"bcf: release {i} publishes other quasi-identifiers or sensitive attributes than "
                             f"release 1")
    if snapshot is not None and len(snapshot) != len(releases[-1]):
        raise InputError(f"bcf: the snapshot has {len(snapshot)} records, the last release {len(releases[-1])}")
    state = {"format": STATE_FORMAT, "quasi": quasi, "sensitive": sens,
             "chain": [foreign_entry(r) for r in releases], "last_size": len(releases[-1])}
    if snapshot is not None:
        state["records"] = record_digests(snapshot, quasi, sens)
    return state


def _rows(release: Release) -> dict:
    """The release as a multiset of rows (QI ranges and masks, sensitive value): what the adversary sees."""
    cols = {f"lo{j}": release.lo[:, j] for j in range(release.lo.shape[1])}
    cols.update({f"hi{j}": release.hi[:, j] for j in range(release.hi.shape[1])})
    cols.update({f"m{name}": m.astype(np.int64) for name, m in release.masks.items()})
    cols["s"] = np.asarray(release.sensitive, dtype=object).astype(str)
    frame = pd.DataFrame(cols)
    return frame.groupby(list(frame.columns), sort=True).size().to_dict() if len(frame) else {}


def state_for_sequence(releases: Sequence[Release], snapshot: Table | None, state: Mapping | None) -> dict | None:
    """The state bcf should publish the next release of a sequence from: its own ``state`` when that state's
    chain is exactly the sequence's releases (row for row, as the adversary sees them), else
    :func:`state_from_releases` of the whole sequence (``snapshot``: the table behind its last release).
    ``None`` for an empty sequence: the first release."""
    if not releases:
        return None
    chain = list((state or {}).get("chain", []))
    if state and len(chain) == len(releases):
        schema = releases[0].schema
        quasi, sens = list(state.get("quasi", [])), list(state.get("sensitive", []))
        try:
            same = all(list(r.quasi) == quasi and _rows(entry_release(e, schema, quasi, sens)) == _rows(r)
                       for e, r in zip(chain, releases))
        except (InputError, KeyError, ValueError, TypeError):
            same = False
        if same:
            return dict(state)
    return state_from_releases(releases, snapshot)
