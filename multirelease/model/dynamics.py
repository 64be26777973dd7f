"""Generated update streams of fully dynamic data sets (Li & Zhou, sections II.A and VI.A).

A fully dynamic data set (Definition 5) changes between releases by *external updates* (insertions and
deletions, Definition 1) and *internal updates* (QI and sensitive values of a record that stays, Definition 2).
:func:`generate_stream` draws such a stream from a seed, in the spirit of the experiment of section VI.A:

* the first snapshot is a random sample of ``initial`` rows of the data; the other rows form the pool that
  insertions draw from (without replacement, so a deleted record never comes back);
* before every release after the first, ``delete`` random present records leave and ``insert`` pool rows
  arrive (external updates at fixed rates);
* internal QI updates follow each attribute's semantics (``qi``):
  ``{grow: 1}`` - a numeric value grows by the step every release, capped at the domain's maximum ("the age of
  each record will increase 1 till reach 100"); ``{order: [v1, v2, ...], rate: p}`` - with probability ``p``
  the value moves to a uniformly drawn *higher* value of the order, never lower ("its education may update
  from bachelor to any education not lower than bachelor"); ``{moves: {v: [allowed next values]}, rate: p}`` -
  with probability ``p`` the value moves to one of its allowed values ("the marital status of a record may
  update from married to any one in {married, divorced, separated, widowed}");
* internal sensitive updates: ``sensitive`` random present records (that stay) redraw their sensitive value
  from the public model ``P_trans`` (:class:`~multirelease.model.transitions.TransitionModel`), whose candidate
  update sets have the internal-update diameter d of section VI.A.

Every random choice comes from one ``np.random.Generator`` seeded by the stream's ``seed`` (default: the
scenario's), so a scenario gives the same stream byte for byte.  The YAML form is the ``stream`` key of
``dynamics``::

    dynamics:
      stream: {initial: 8000, insert: 2000, delete: 800, sensitive: 2000,
               qi: {age: {grow: 1}, education: {order: [...], rate: 0.1}}}
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from .hierarchy import _scalar
from .schema import Schema
from .table import Change, Table
from .transitions import TransitionModel

__all__ = ["STREAM_KEYS", "generate_stream", "load_stream"]

STREAM_KEYS = ("initial", "insert", "delete", "sensitive", "qi", "seed")


def _count(spec: Mapping, name: str, source, key) -> int:
    v = spec.get(name, 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InputError(f"The '{name}' parameter of stream must be an int in [0, inf). Got {v!r}.", file=source,
                         key=f"{key}.{name}")
    return int(v)


def _qi_rules(schema: Schema, spec: Any, source, key) -> dict[str, dict]:
    """Validate ``qi``: ``{attr: {grow: step} | {order: [...], rate} | {moves: {...}, rate}}``."""
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise InputError("qi must map quasi-identifiers to update rules", file=source, key=f"{key}.qi")
    rules: dict[str, dict] = {}
    for attr, rule in spec.items():
        where = f"{key}.qi.{attr}"
        attr = str(attr)
        if attr not in schema or not schema[attr].is_quasi:
            raise InputError(f"'{attr}' is not a quasi-identifier", file=source, key=where)
        h = schema[attr].hierarchy
        if not isinstance(rule, Mapping) or len(set(rule) & {"grow", "order", "moves"}) != 1:
            raise InputError("a rule is {grow: step}, {order: [...], rate: p} or {moves: {...}, rate: p}",
                             file=source, key=where)
        extra = set(rule) - {"grow", "order", "moves", "rate"}
        if extra:
            raise InputError(f"unknown key '{sorted(extra)[0]}'", file=source, key=where)
        rate = rule.get("rate", 1.0)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise InputError(f"rate must be a number in [0, 1]; got {rate!r}", file=source, key=f"{where}.rate")
        if "grow" in rule:
            step = rule["grow"]
            if isinstance(step, bool) or not isinstance(step, int) or step < 0:
                raise InputError(f"grow must be a non-negative int; got {step!r}", file=source, key=f"{where}.grow")
            if not h.ordered:
                raise InputError("grow needs numeric leaves", file=source, key=where)
            rules[attr] = {"kind": "grow", "step": int(step), "rate": float(rate)}
        elif "order" in rule:
            order = rule["order"]
            if not isinstance(order, list) or not order:
                raise InputError("order must be a non-empty list of values", file=source, key=f"{where}.order")
            order = [_scalar(v) for v in order]
            bad = [v for v in order if v not in h._leaf_index]
            if bad:
                raise InputError(f"'{bad[0]}' is not a value of '{attr}'", file=source, key=f"{where}.order")
            missing = [v for v in h.leaves if v not in order]
            if missing:
                raise InputError(f"value '{missing[0]}' of '{attr}' is missing from the order", file=source,
                                 key=f"{where}.order")
            rules[attr] = {"kind": "order", "order": order, "rate": float(rate)}
        else:
            moves = rule["moves"]
            if not isinstance(moves, Mapping):
                raise InputError("moves must map a value to its allowed next values", file=source,
                                 key=f"{where}.moves")
            table: dict[str, list[str]] = {}
            for a, nxt in moves.items():
                a = _scalar(a)
                if a not in h._leaf_index:
                    raise InputError(f"'{a}' is not a value of '{attr}'", file=source, key=f"{where}.moves")
                if not isinstance(nxt, list):
                    raise InputError(f"the moves of '{a}' must be a list", file=source, key=f"{where}.moves.{a}")
                nxt = [_scalar(b) for b in nxt]
                bad = [b for b in nxt if b not in h._leaf_index]
                if bad:
                    raise InputError(f"'{bad[0]}' is not a value of '{attr}'", file=source,
                                     key=f"{where}.moves.{a}")
                table[a] = nxt
            rules[attr] = {"kind": "moves", "moves": table, "rate": float(rate)}
    return rules


def load_stream(spec: Any, schema: Schema, *, source: str | None = None, key: str = "dynamics.stream") -> dict:
    """Validate a ``stream`` mapping (see the module docstring); returns the checked parameters."""
    if not isinstance(spec, Mapping):
        raise InputError(f"stream must be a mapping with {', '.join(STREAM_KEYS)}", file=source, key=key)
    unknown = set(spec) - set(STREAM_KEYS)
    if unknown:
        raise InputError(f"unknown key '{sorted(unknown)[0]}' (known: {', '.join(STREAM_KEYS)})", file=source,
                         key=key)
    out = {name: _count(spec, name, source, key) for name in ("insert", "delete", "sensitive")}
    out["initial"] = spec.get("initial")
    if out["initial"] is not None:
        out["initial"] = _count(spec, "initial", source, key)
        if out["initial"] < 1:
            raise InputError("initial must be at least 1", file=source, key=f"{key}.initial")
    seed = spec.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError(f"seed must be a non-negative integer, got {seed!r}", file=source, key=f"{key}.seed")
    out["seed"] = seed
    out["qi"] = _qi_rules(schema, spec.get("qi"), source, key)
    return out


def generate_stream(data: Table, n_releases: int, params: Mapping, transitions: TransitionModel | None,
                    rng: np.random.Generator, *, source: str | None = None,
                    key: str = "dynamics.stream") -> tuple[Table, dict[int, Change]]:
    """Draw the first snapshot and the changes before releases ``2..n_releases``.

    Parameters
    ----------
    data : Table
        All rows available: the first snapshot is a sample of ``params["initial"]`` of them (all when
        ``None``), the rest is the insertion pool.
    params : mapping
        Checked by :func:`load_stream`: ``initial``, ``insert``, ``delete``, ``sensitive`` (counts per release)
        and ``qi`` (rules per quasi-identifier).
    transitions : TransitionModel or None
        ``P_trans`` of the sensitive values; required when ``sensitive > 0``.

    Returns
    -------
    (Table, dict of int -> Change)
        The first snapshot and the change applied before each later release.

    Raises
    ------
    InputError
        When the pool runs dry, a deletion would empty the table, or a sensitive value is outside the model.
    """
    schema = data.schema
    n = len(data)
    initial = n if params.get("initial") is None else int(params["initial"])
    if initial > n:
        raise InputError(f"initial {initial} exceeds the {n} rows of the data", file=source, key=f"{key}.initial")
    order = rng.permutation(n)
    first = np.sort(order[:initial])
    pool = list(order[initial:])
    snapshot = Table(schema, data.frame.iloc[first])
    sens_names = list(schema.sensitive)
    n_sens = int(params.get("sensitive", 0))
    if n_sens and transitions is None:
        raise InputError("sensitive updates need a transition model: give 'transitions'", file=source,
                         key=f"{key}.sensitive")
    if n_sens and len(sens_names) != 1:
        raise InputError("generated sensitive updates need exactly one sensitive attribute", file=source,
                         key=f"{key}.sensitive")
    rules = params.get("qi") or {}
    changes: dict[int, Change] = {}
    frame = snapshot.frame.copy()
    for idx in range(2, n_releases + 1):
        present = frame.index.to_numpy(dtype=object)
        n_del = int(params.get("delete", 0))
        if n_del >= len(present):
            raise InputError(f"release {idx}: deleting {n_del} of {len(present)} records would empty the table",
                             file=source, key=f"{key}.delete")
        del_pos = np.sort(rng.choice(len(present), size=n_del, replace=False)) if n_del else np.zeros(0, int)
        keep = np.ones(len(present), dtype=bool)
        keep[del_pos] = False
        stay = frame.iloc[np.flatnonzero(keep)]
        stay_ids = stay.index.to_numpy(dtype=object)  # one conversion (indexing the Index per row is slow)
        update: dict[str, dict[str, str]] = {}
        for attr, rule in rules.items():
            old = stay[attr].to_numpy(dtype=object)
            new = _update_qi(schema[attr].hierarchy, rule, old, rng)
            changed = np.flatnonzero(new != old)
            for j in changed:
                update.setdefault(stay_ids[j], {})[attr] = new[j]
        if n_sens:
            name = sens_names[0]
            k = min(n_sens, len(stay))
            pos = np.sort(rng.choice(len(stay), size=k, replace=False))
            cur = stay[name].to_numpy(dtype=object)[pos]
            codes = transitions.indices(list(cur))
            if (codes < 0).any():
                bad = cur[int(np.flatnonzero(codes < 0)[0])]
                raise InputError(f"sensitive value '{bad}' is not in the transition model", file=source,
                                 key="transitions")
            nxt = transitions.sample(codes, rng)
            for j, c_old, c_new in zip(pos, codes, nxt):
                if c_new != c_old:
                    update.setdefault(stay_ids[j], {})[name] = transitions.values[int(c_new)]
        n_ins = int(params.get("insert", 0))
        if n_ins > len(pool):
            raise InputError(f"release {idx}: the pool has {len(pool)} rows left, {n_ins} insertions asked",
                             file=source, key=f"{key}.insert")
        ins_pos = np.sort(np.asarray(pool[:n_ins], dtype=np.int64))
        pool = pool[n_ins:]
        insert = data.frame.iloc[ins_pos] if n_ins else None
        change = Change(insert=insert, delete=tuple(present[del_pos]), update=update, source=source,
                        key=f"{key} (release {idx})")
        changes[idx] = change
        frame = Table(schema, frame).apply(change).frame
    return snapshot, changes


def _update_qi(h, rule: Mapping, old: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """New values of one quasi-identifier for the records that stay (see the module docstring)."""
    n = len(old)
    move = rng.random(n) < rule["rate"]
    new = old.copy()
    if rule["kind"] == "grow":
        codes = h.encode(pd.Series(old, dtype=object)).astype(np.int64)
        vals = h.leaf_values[codes] + rule["step"]
        target = np.searchsorted(h.leaf_values, vals, side="right") - 1  # the largest leaf <= value + step
        target = np.clip(target, 0, h.n_leaves - 1)
        target = np.maximum(target, codes)
        out = np.asarray(h.leaves, dtype=object)[target]
        new[move] = out[move]
        return new
    if rule["kind"] == "order":
        rank = {v: i for i, v in enumerate(rule["order"])}
        order = rule["order"]
        for j in np.flatnonzero(move):
            r = rank[old[j]]
            if r + 1 < len(order):
                new[j] = order[int(rng.integers(r + 1, len(order)))]
        return new
    moves = rule["moves"]
    for j in np.flatnonzero(move):
        nxt = moves.get(old[j])
        if nxt:
            new[j] = nxt[int(rng.integers(0, len(nxt)))]
    return new
