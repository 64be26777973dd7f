"""``--targets-file PATH``: every target row of the attacks, beside the report (issue 16).

A report lists a bounded number of target rows - the worst ones (``correspondence``'s parameter ``rows``) -
so that it does not grow with the table; the whole list is written on request as one flat table: a column
``attack``, then each row's keys flattened with dots (``qid.age``, ``F.anonymity``, ...; lists and mappings
as JSON text).  ``.csv`` is written with pandas, ``.parquet`` with pyarrow (``pip install pyarrow``).  The
path is checked before anything runs (bad input: exit 2, nothing written) and the file is written under a
temporary name and renamed.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from multirelease.errors import InputError

__all__ = ["check_targets_file", "write_targets_file"]

_KINDS = (".csv", ".parquet")


def check_targets_file(path: Path | None) -> None:
    """Refuse a path that cannot take the file (exit 2 before any work)."""
    if path is None:
        return
    if path.is_dir():
        raise InputError("is a directory, not a file", file=str(path), key="--targets-file")
    if path.suffix.lower() not in _KINDS:
        raise InputError("must end with .csv or .parquet", file=str(path), key="--targets-file")
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError("writing Parquet needs pyarrow (pip install pyarrow); or give a .csv path",
                             file=str(path), key="--targets-file") from None
    base = path.parent if str(path.parent) else Path(".")
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir() or not os.access(base, os.W_OK):
        raise InputError(f"cannot be written: '{base}' is not a writable folder", file=str(path),
                         key="--targets-file")


def _cell(x):
    return json.dumps(x, ensure_ascii=False) if isinstance(x, (list, dict, tuple)) else x


def write_targets_file(results, path: Path) -> int:
    """Write every target row of every attack result (``{name: AttackResult}``); returns the rows written."""
    import pandas as pd

    frames = []
    for name, res in results.items():
        rows = list(res.targets)
        if not rows:
            continue
        frame = pd.json_normalize(rows, sep=".")
        for c in frame.columns:
            col = frame[c]
            if col.dtype == object:
                frame[c] = col.map(_cell)
            elif col.dtype.kind == "f" and bool((col.dropna() % 1 == 0).all()):
                frame[c] = col.astype("Int64")  # counts stay integers where a row has no such cell
        frame.insert(0, "attack", name)
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame({"attack": []})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        if path.suffix.lower() == ".parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return len(table)
