"""What the release ledger keeps of its gate, so that a month's ``release`` costs what the new release costs and
not what the history does (issue 14, "The gate"; the time of release 12 against release 1 in
``benchmarks/bench_ledger.py``).

The gate certifies the *whole* sequence every month: every attack of the spec over releases ``1 .. n``.  An
attack that can be extended one release at a time (:mod:`attacks.incremental`: ``linking``, ``intersection``,
``update_graph``) keeps a state in the ledger's database - a part per release (append-only: the new release's
links, uids, classes) and a summary of the prefix (its rows, its worst case) - and
:func:`multirelease.pipeline.run_ledger_step` extends it by the new release: no earlier release is read,
parsed, published or attacked again, and the result is the one the attack gives on the whole sequence
(tests/ledger/test_ledger_incremental.py: verdict, figures and witnesses equal a from-scratch ``certify`` of the
same files).  The release metrics of every release are kept too.

**Trust.**  A state is used only when it was kept for exactly the releases the ledger holds: a part for every
release ``1 .. n - 1``, each recorded with the SHA-256 of its release file, equal to the ledger's; and every
published file still there hashes to its recorded SHA-256 (a published file that changed is bad input: the
sequence is no longer the one the gate certified; ``ledger --verify`` judges it).  A
state is keyed by the attack, its parameters and everything the attack reads besides the releases (schema,
adversary, update model, targets): a spec amended in any of them starts the state again from the earlier
releases (folded in one at a time).  Anything missing or stale: the releases are read and folded in, and the
states are kept again, in the release's transaction (:func:`record`).

Tables (made in the first transaction that records a state): ``gate_parts (key, n, sha256, part)``,
``gate_summary (key, n, summary)``, ``release_metrics (n, metrics)``.  They hold ids and memberships (the
ledger's private data, like its snapshots), never a digest of a raw value.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from multirelease.errors import InputError
from .store import Ledger, LedgerRelease, sha256_file, table_from_bytes
from multirelease.model.schema import Schema
from multirelease.model.table import Table

__all__ = ["GateResume", "record", "last_snapshot", "state_key"]

_DDL = (
    "CREATE TABLE IF NOT EXISTS gate_parts (key TEXT NOT NULL, n INTEGER NOT NULL, sha256 TEXT NOT NULL, "
    "part BLOB NOT NULL, PRIMARY KEY (key, n))",
    "CREATE TABLE IF NOT EXISTS gate_summary (key TEXT PRIMARY KEY, n INTEGER NOT NULL, summary BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS release_metrics (n INTEGER PRIMARY KEY, metrics TEXT NOT NULL)",
)


def last_snapshot(led: Ledger, history: Sequence[LedgerRelease], schema: Schema) -> Table | None:
    """The snapshot behind the last release the ledger holds (``None`` for a new ledger)."""
    if not history:
        return None
    return table_from_bytes(schema, led.blob(history[-1].n, "snapshot"))


def _tables(led: Ledger) -> set[str]:
    return {r[0] for r in led.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


class GateResume:
    """What the ledger kept of releases ``1 .. n - 1`` for the gate of release ``n`` (the ``resume`` of
    :func:`multirelease.pipeline.run_ledger_step`).  Checks the recorded files first (module docstring)."""

    def __init__(self, led: Ledger, history: Sequence[LedgerRelease], schema: Schema, doc: Mapping):
        self.led, self.history, self.schema = led, list(history), schema
        self.context = {k: doc.get(k) for k in ("schema", "adversary", "transitions", "targets")}
        self._earlier: list | None = None
        self.used: dict[str, bool] = {}  # attack name -> its kept state was used
        self.keys: dict[str, str] = {}
        self.kept_metrics = False  # metrics() read every earlier release's metrics from the ledger
        self._check_files()
        self._have = _tables(led) if led.con is not None else set()

    def _check_files(self) -> None:
        for r in self.history:
            for file, sha in ((r.file, r.sha256), (r.counterfeits_file, r.counterfeits_sha256)):
                found = sha256_file(file) if file else None
                if found is not None and found != sha:
                    raise InputError(f"release {r.n} changed since it was published (recorded sha256 {sha}, found "
                                     f"sha256 {found}): the sequence is no longer the one the gate certified "
                                     "(ledger --verify judges it)", file=file)

    def key(self, name: str, attack: Any) -> str:
        """The state's key: the attack, its parameters and what it reads besides the releases."""
        return state_key(self.context, name, attack)

    def earlier(self) -> list:
        """Releases ``1 .. n - 1`` as published, with their snapshots (read once, on first use)."""
        if self._earlier is None:
            self._earlier = [self.led.release(r.n, self.schema) for r in self.history]
        return self._earlier

    def metrics(self) -> list:
        """The release metrics of releases ``1 .. n - 1`` (computed from the releases when not kept)."""
        n = len(self.history)
        if "release_metrics" in self._have:
            rows = self.led.con.execute("SELECT metrics FROM release_metrics WHERE n <= ? ORDER BY n",
                                        (n,)).fetchall()
            # kept before the release metrics a requirement can name grew (issue 26's shares): computed again
            if len(rows) == n and all('"counterfeit_share"' in m for (m,) in rows):
                self.kept_metrics = True
                return [json.loads(m) for (m,) in rows]
        from multirelease.reports.document import compute_release_metrics

        self.kept_metrics = False
        return [compute_release_metrics(r, s) for r, s in self.earlier()]

    def state(self, name: str, attack: Any) -> Any:
        """The attack's kept state over releases ``1 .. n - 1``, or ``None`` (nothing kept, or not for
        exactly these releases)."""
        key = self.keys[name] = self.key(name, attack)
        self.used[name] = False
        kept = self.kept(key)
        if kept is None:
            return None
        self.used[name] = True
        return attack.load_state(*kept)

    def kept(self, key: str) -> tuple[list, bytes] | None:
        """The parts (one per release ``1 .. n - 1``) and summary kept under ``key``, as stored; ``None`` when
        nothing is kept for exactly these releases (module docstring, "Trust")."""
        n = len(self.history)
        if not n or not {"gate_parts", "gate_summary"} <= self._have:
            return None
        row = self.led.con.execute("SELECT n, summary FROM gate_summary WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] != n:
            return None
        parts = self.led.con.execute("SELECT n, sha256, part FROM gate_parts WHERE key = ? AND n <= ? ORDER BY n",
                                     (key, n)).fetchall()
        if [p[0] for p in parts] != list(range(1, n + 1)) or \
                any(p[1] != r.sha256 for p, r in zip(parts, self.history)):
            return None
        return [p[2] for p in parts], row[1]


def state_key(context: Mapping, name: str, attack: Any) -> str:
    """An attack state's key: the attack, its parameters and ``context``, what it reads besides the releases
    (the spec's schema, adversary, transitions and targets: :attr:`GateResume.context`)."""
    doc = {"attack": name, "config": getattr(attack, "config", {}), **context}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def record(led: Ledger, n: int, sha: str, run: Any, resume: GateResume) -> None:
    """Keep the gate's states and release metrics of release ``n`` (inside the release's transaction)."""
    for ddl in _DDL:
        led.con.execute(ddl)
    shas = [r.sha256 for r in resume.history] + [sha]
    keep = sorted(resume.keys[name] for name, kept in run.gate.items() if kept is not None and name in resume.keys)
    marks = ", ".join("?" * len(keep))
    for table in ("gate_parts", "gate_summary"):  # states of attacks the spec no longer runs (amended)
        led.con.execute(f"DELETE FROM {table} WHERE key NOT IN ({marks})", keep)
    for name, kept in run.gate.items():
        key = resume.keys.get(name)
        if kept is None or key is None:
            continue
        parts, summary = kept
        if len(parts) != 1 or not resume.used.get(name):  # folded from release 1: every part again
            led.con.execute("DELETE FROM gate_parts WHERE key = ?", (key,))
        first = n - len(parts) + 1
        led.con.executemany("INSERT OR REPLACE INTO gate_parts (key, n, sha256, part) VALUES (?, ?, ?, ?)",
                            [(key, i, shas[i - 1], p) for i, p in enumerate(parts, first)])
        led.con.execute("INSERT OR REPLACE INTO gate_summary (key, n, summary) VALUES (?, ?, ?)", (key, n, summary))
    metrics = run.release_metrics
    start = n if resume.kept_metrics else 1
    led.con.executemany("INSERT OR REPLACE INTO release_metrics (n, metrics) VALUES (?, ?)",
                        [(i, json.dumps(metrics[i - 1], sort_keys=True, default=_plain)) for i in range(start, n + 1)])


def _plain(x: Any) -> Any:
    """NumPy scalars as Python numbers (a kept metric reads back as the number it was)."""
    return x.item() if hasattr(x, "item") else str(x)
