"""Hypothesis strategies for sequences over time (re-exported by :mod:`strategies`): :func:`update_streams`
(changes that apply in sequence), and for releases with internal updates (Li & Zhou): :func:`transition_models`
(public update models), :func:`sug_layers` (one record's SUG as data), :func:`stream_params` (parameters of
:func:`multirelease.model.dynamics.generate_stream`), :func:`stream_snapshots` (the snapshots of a generated stream);
and, inside a test, :func:`published_sequence` (such a stream published by a registered publisher).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from multirelease.model.table import Change, Table

from strategies_tables import _BOOL, _ints, _pick

__all__ = ["update_streams", "transition_models", "sug_layers", "stream_params", "stream_snapshots",
           "published_sequence"]


# ---------------------------------------------------------------------- dynamics
@st.composite
def update_streams(draw, table: Table, n_releases: int = 3, *, max_insert: int = 5, max_delete: int = 5,
                   max_update: int = 5, keep_nonempty: bool = True) -> list[Change]:
    """``n_releases`` :class:`Change` objects that apply in sequence with :meth:`Table.apply`.

    Each deletes existing ids, updates QI and sensitive cells of surviving ids (to random leaves, possibly
    unchanged) and inserts rows with fresh ids (never used before in the stream).  With ``keep_nonempty`` no
    change empties the table.
    """
    schema = table.schema
    current = list(table.ids)
    seen = set(current)
    next_id = 1 + max([int(i) for i in seen if str(i).isdigit()] + [len(seen)])
    cols = list(schema.published)
    changes = []
    for _ in range(n_releases):
        room = len(current) - (1 if keep_nonempty else 0)
        delete = draw(st.lists(_pick(current), unique=True, max_size=max(0, min(max_delete, room)))) \
            if room > 0 else []
        alive = [i for i in current if i not in set(delete)]
        update: dict[str, dict[str, str]] = {}
        if alive:
            for rid in draw(st.lists(_pick(alive), unique=True, max_size=max_update)):
                names = draw(st.lists(_pick(cols), unique=True, min_size=1, max_size=len(cols)))
                update[rid] = {a: draw(_pick(schema[a].hierarchy.leaves)) for a in names}
        n_ins = draw(_ints(0, max_insert))
        ids = []
        for _ in range(n_ins):
            ids.append(str(next_id))
            next_id += draw(_ints(1, 3))
        seen.update(ids)
        insert = None
        if ids:
            data = {a: [draw(_pick(schema[a].hierarchy.leaves)) for _ in ids] for a in cols}
            insert = pd.DataFrame(data, index=pd.Index(ids, name=schema.identifier or "id"), dtype=object)
        changes.append(Change(insert=insert, delete=tuple(delete), update=update))
        current = alive + ids
    return changes


# ---------------------------------------------------------------------- internal updates (Li & Zhou)
@st.composite
def transition_models(draw, values: Sequence[str], *, stay: bool | None = None, kind: str | None = None):
    """A public update model over ``values`` (:class:`multirelease.model.transitions.TransitionModel`): random
    candidate update sets (each value may stay when ``stay``, drawn when ``None``), the free model, a window or
    blocks of a random diameter, or random probabilities over a random support.  ``kind`` fixes the family
    (``candidates``, ``free``, ``window``, ``blocks``, ``probabilities``)."""
    from multirelease.model.transitions import TransitionModel

    values = list(values)
    n = len(values)
    kind = kind or draw(_pick(("candidates", "free", "window", "blocks", "probabilities")))
    if kind == "free":
        return TransitionModel.free(values)
    if kind in ("window", "blocks"):
        return TransitionModel.with_diameter(values, draw(_ints(1, n)), kind)
    keep = draw(_BOOL) if stay is None else stay
    adj = np.zeros((n, n), dtype=bool)
    for a in range(n):
        row = draw(st.lists(_ints(0, n - 1), min_size=1, max_size=n, unique=True))
        adj[a, row] = True
        if keep:
            adj[a, a] = True
    if kind == "candidates":
        return TransitionModel(tuple(values), adj / adj.sum(axis=1, keepdims=True), "candidates")
    w = np.array([[draw(_ints(1, 5)) if adj[a, b] else 0 for b in range(n)] for a in range(n)], dtype=float)
    return TransitionModel(tuple(values), w / w.sum(axis=1, keepdims=True), "probabilities")


@st.composite
def sug_layers(draw, model, *, max_layers: int = 4, max_candidates: int | None = None):
    """One record's SUG as data: ``(layers, gaps)`` with ``layers[i] = {value: weight}`` (a random candidate
    set of the model's values with positive weights summing to 1) and ``gaps[i] >= 1`` releases between
    versions ``i`` and ``i + 1``."""
    values = list(model.values)
    n_layers = draw(_ints(1, max_layers))
    cap = len(values) if max_candidates is None else min(max_candidates, len(values))
    layers = []
    for _ in range(n_layers):
        cand = draw(st.lists(_pick(values), min_size=1, max_size=cap, unique=True))
        w = np.array([draw(_ints(1, 4)) for _ in cand], dtype=float)
        layers.append({v: float(x) for v, x in zip(cand, w / w.sum())})
    gaps = [draw(_ints(1, 2)) for _ in range(n_layers - 1)]
    return layers, gaps


@st.composite
def stream_params(draw, n_rows: int, *, sensitive: bool = True) -> dict:
    """Parameters of :func:`multirelease.model.dynamics.generate_stream` for a data set of ``n_rows`` rows: an initial
    sample, deletions, insertions from the pool and internal sensitive updates per release."""
    initial = draw(_ints(max(1, n_rows // 3), max(1, n_rows // 2)))
    return {"initial": initial, "delete": draw(_ints(0, max(0, initial // 4))),
            "insert": draw(_ints(0, max(0, (n_rows - initial) // 4))),
            "sensitive": draw(_ints(0, initial)) if sensitive else 0, "qi": {}, "seed": draw(_ints(0, 1000))}


def stream_snapshots(data, table: Table, n_releases: int, params: dict, model) -> list[Table]:
    """The ``n_releases`` snapshots of :func:`multirelease.model.dynamics.generate_stream` over ``table`` (a seed drawn
    from ``data``, hypothesis's ``st.data()``): the first, then each change applied to the one before (a
    release without a change repeats it).  A stream the parameters cannot generate is rejected (``assume``)."""
    from hypothesis import assume

    from multirelease.model.dynamics import generate_stream
    from multirelease.errors import InputError

    try:
        first, changes = generate_stream(table, n_releases, params, model,
                                         np.random.default_rng(data.draw(st.integers(0, 99), label="seed")))
    except InputError:
        assume(False)
    snaps = [first]
    for i in range(2, n_releases + 1):
        snaps.append(snaps[-1].apply(changes[i]) if i in changes else snaps[-1])
    return snaps


def published_sequence(data, publisher, *, m=2, n_releases=3, model_kind=None, **config):
    """A random table, transition model and update stream, published ``n_releases`` times by ``publisher``
    (``config``: more of its parameters; a release the publisher refuses discards the example): ``(sequence,
    model, states)``.  Drawn inside a test from hypothesis's ``data``."""
    from hypothesis import assume

    from multirelease.errors import InputError
    from multirelease.model.dynamics import generate_stream
    from multirelease.model.sequence import ReleaseSequence
    from publishers import PUBLISHERS
    from strategies import raw_tables, schemas


    schema = data.draw(schemas(min_sensitive=3, max_sensitive=5, identifier=True, subsets=False))
    table = data.draw(raw_tables(schema, min_size=12, max_size=30))
    sens = schema[schema.sensitive[0]].hierarchy.leaves
    model = data.draw(transition_models(sens, stay=True, kind=model_kind))
    params = data.draw(stream_params(len(table)))
    rng = np.random.default_rng(params["seed"])
    first, changes = generate_stream(table, n_releases, params, model, rng)
    if publisher == "naive":
        pub = PUBLISHERS["naive"](l=m)
    else:
        pub = PUBLISHERS[publisher](m=m, **config)
        if hasattr(pub, "bind_transitions"):
            pub.bind_transitions(model)
    seq = ReleaseSequence()
    snap, state, states = first, None, []
    for i in range(1, n_releases + 1):
        if i in changes:
            snap = snap.apply(changes[i])
        try:
            res = pub.publish(snap, state=state, rng=np.random.default_rng(i))
        except InputError:
            assume(False)
        state = res.state
        states.append(state)
        seq.append(res.release, res.truth, snap)
    return seq, model, states
