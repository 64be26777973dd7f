"""Attacks extended one release at a time: the state a release ledger keeps so that month ``n + 1`` does not
attack the first ``n`` releases again (issue 14, the gate).

An attack that can be extended has three methods besides ``run``:

* ``extend(state, view, index) -> (AttackResult, state)``: ``view`` holds the *new* release only (release
  ``index`` of the sequence, with the population behind it), ``state`` what the attack kept of releases
  ``1 .. index - 1`` (``None`` for the first).  The result is the one ``run`` gives on the whole sequence -
  the same code computes it, on the same arrays (tests/ledger/test_ledger_incremental.py checks figures, witnesses
  and verdicts against a from-scratch certify of the same files);
* ``state_parts(state) -> (part, summary)``: what to store for the release just added (``part``: bytes kept
  once per release, append-only) and for the prefix so far (``summary``: small, replaced every release);
* ``load_state(parts, summary) -> state``: the state again from the stored parts of releases ``1 .. n`` and
  the last summary;
* optionally ``fold(state, view, index) -> state``: release ``index`` added without computing a result - how
  the ledger rebuilds a state it did not keep when the attack's result over every prefix would cost more than
  the release itself (the possible-worlds attack: :mod:`attacks.worlds_state`).

The bytes are :func:`pack` / :func:`unpack`: a NumPy ``.npz`` archive of arrays with a JSON document beside
them (no pickle: ``allow_pickle=False``).
"""
from __future__ import annotations

import io
import json
import zlib
from typing import Any, Mapping

import numpy as np
import pandas as pd

__all__ = ["pack", "unpack", "strings", "from_strings", "extend_codes", "pack_rows", "unpack_rows", "unpack_gaps"]


def pack(meta: Mapping[str, Any] | None = None, arrays: Mapping[str, np.ndarray] | None = None) -> bytes:
    """``meta`` (JSON) and ``arrays`` (numeric NumPy arrays) as one ``.npz`` archive."""
    buf = io.BytesIO()
    out = {f"a_{k}": np.asarray(v) for k, v in (arrays or {}).items()}
    out["meta"] = np.frombuffer(json.dumps(meta or {}, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    np.savez(buf, **out)  # not compressed: a month reads every part back (zlib was a third of its gate)
    return buf.getvalue()


def unpack(data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """The ``(meta, arrays)`` :func:`pack` wrote."""
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        meta = json.loads(bytes(z["meta"]).decode("utf-8"))
        arrays = {k[2:]: z[k] for k in z.files if k.startswith("a_")}
    return meta, arrays


def strings(values) -> np.ndarray:
    """Strings as one uint8 array (NUL-separated UTF-8), for :func:`pack`."""
    return np.frombuffer("\0".join(str(v) for v in values).encode("utf-8"), dtype=np.uint8)


def from_strings(data: np.ndarray) -> list[str]:
    text = bytes(np.asarray(data, dtype=np.uint8)).decode("utf-8")
    return text.split("\0") if text else []


def extend_codes(known: list, items) -> tuple[np.ndarray, list]:
    """``(codes, fresh)``: the index of each of ``items`` in ``known + fresh``, ``fresh`` the items not known
    yet in order of first appearance - the numbering :func:`pandas.factorize` (``sort=False``) gives the
    concatenation of every release's items."""
    items = pd.Series(items, dtype=object)
    codes = pd.Index(known, dtype=object).get_indexer(items) if len(known) else np.full(len(items), -1)
    fresh = list(pd.unique(items[codes < 0]))
    return pd.Index(known + fresh, dtype=object).get_indexer(items).astype(np.int64), fresh


def pack_rows(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The column indices of a CSR matrix (ascending in every row) as bytes: each row's first index and then
    the gaps, in the narrowest unsigned type, deflated (a release's membership is mostly runs of near
    classes: a tenth of its int32 size)."""
    d = np.asarray(indices, dtype=np.int64).copy()
    d[1:] -= indices[:-1]
    starts = np.asarray(indptr[:-1])[np.diff(indptr) > 0]
    d[starts] = indices[starts]
    dtype = np.uint16 if (d.max(initial=0) < 2**16) else np.uint32
    head = np.frombuffer(np.dtype(dtype).str.encode().ljust(4), dtype=np.uint8)
    return np.concatenate([head, np.frombuffer(zlib.compress(d.astype(dtype).tobytes(), 1), dtype=np.uint8)])


def unpack_gaps(data: np.ndarray) -> np.ndarray:
    """The first index and gaps of every row :func:`pack_rows` packed, inflated (not summed yet)."""
    dtype = np.dtype(bytes(data[:4]).decode().strip())
    return np.frombuffer(zlib.decompress(bytes(data[4:])), dtype=dtype)


def unpack_rows(indptr: np.ndarray, data: np.ndarray, *, packed: bool = True) -> np.ndarray:
    """The column indices :func:`pack_rows` packed (int32); ``packed=False``: ``data`` is already
    :func:`unpack_gaps` of them (of the rows ``indptr`` delimits)."""
    d = (unpack_gaps(data) if packed else np.asarray(data)).astype(np.int64)
    c = np.cumsum(d)
    lengths = np.diff(indptr)
    before = np.concatenate([[0], c])[np.asarray(indptr[:-1])]  # the running sum before each row
    return (c - np.repeat(before, lengths)).astype(np.int32)
