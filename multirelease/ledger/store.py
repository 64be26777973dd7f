"""The release ledger's store (issue 14): one private SQLite database per sequence of releases.

A ledger folder ``DIR`` (mode 0700) holds ``ledger.sqlite`` (0600, WAL), a ``lock`` file and, for BPG, the
publisher's own database (``bpg_<n>.db``, the state of release ``n``).  The database holds what only the data
holder may know: every snapshot (ids and raw values, the truth behind each release), the truth of each release
(which id is behind which row, counterfeit flags), the publishers' state (JSON), the ledger's secret (from
:mod:`secrets`: it seeds the publishers and keys every digest of raw data, HMAC-SHA-256), the spec each release
was made with (and the reason of any amendment), each release as published and the SHA-256 of every file
written, and the ledger's events (issue 25): a release withdrawn before it went out (its row moved to
``withdrawn``, with the reason), a month whose churn the custodian confirmed, a repair accepted (issue 29).
No unkeyed digest of a raw value is stored: a snapshot is recognised by its HMAC under the secret.

Writers hold an exclusive ``flock`` on ``lock`` for the whole call (a second writer fails at once: "ledger is in
use by process N", the pid being written into the lock file while it is held and cleared after).  A release is
one SQLite transaction (:meth:`Ledger.record`); the first one also makes the tables, so a ledger either holds a
release or does not exist.  Readers (``ledger DIR``, ``certify --ledger``) take no lock: WAL gives them the last
committed state.
"""
from __future__ import annotations

import fcntl
import hashlib
import hmac
import io
import json
import os
import secrets
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.release import Release, ReleaseTruth
from multirelease.formats.release_csv import counterfeits_from_frame, read_release_bytes
from multirelease.model.schema import Schema
from multirelease.model.table import Table

__all__ = ["Ledger", "LedgerRelease", "LedgerEvent", "DB_NAME", "LOCK_NAME", "keyed_digest", "table_bytes",
           "table_from_bytes"]

DB_NAME = "ledger.sqlite"
LOCK_NAME = "lock"
VERSION = "1"

_DDL = ("""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""", """
CREATE TABLE releases (
    n INTEGER PRIMARY KEY,
    created TEXT NOT NULL,          -- UTC, ISO 8601
    snapshot_rows INTEGER NOT NULL,
    records INTEGER NOT NULL,       -- rows published (counterfeits included)
    publisher TEXT NOT NULL,
    verdict TEXT NOT NULL,
    inserted INTEGER NOT NULL, deleted INTEGER NOT NULL, updated INTEGER NOT NULL,
    file TEXT NOT NULL,             -- absolute path of the release file
    sha256 TEXT NOT NULL,           -- of the release file as written
    counterfeits_file TEXT,         -- counterfeit statistics beside it, if any
    counterfeits_sha256 TEXT,
    spec TEXT NOT NULL,             -- JSON: the spec document this release was made with
    spec_path TEXT NOT NULL,        -- where it was read (hierarchy files are relative to its folder)
    amend TEXT,                     -- why the spec changed at this release (release --amend)
    snapshot_mac TEXT NOT NULL,     -- HMAC-SHA-256 of the snapshot under the ledger's secret
    release_csv BLOB NOT NULL,      -- zlib: the release file's bytes
    counterfeits_csv BLOB,          -- zlib: the counterfeit statistics' bytes
    snapshot BLOB NOT NULL,         -- zlib CSV: the raw snapshot with its identifier column
    truth BLOB NOT NULL,            -- zlib JSON: {"person": [id or null per row], "counterfeit": [0/1 per row]}
    state BLOB NOT NULL             -- zlib JSON: the publisher's state after this release
)""")


#: made by the first write that needs them (a ledger made before issue 25 gains them then; readers cope without)
_EVENT_DDL = (
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, "
    "n INTEGER NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL)",
    # a withdrawn release's row as it was in ``releases`` (several rows may share an ``n``: a number is reused)
    "CREATE TABLE IF NOT EXISTS withdrawn AS SELECT * FROM releases WHERE 0",
)


def keyed_digest(secret: bytes, data: bytes) -> str:
    """HMAC-SHA-256 of ``data`` under the ledger's secret (the only digest of raw data the ledger keeps)."""
    return hmac.new(secret, data, hashlib.sha256).hexdigest()


def table_bytes(table: Table) -> bytes:
    """A snapshot's canonical bytes: CSV with the identifier column first, rows in identifier order."""
    frame = table.frame.sort_index(kind="stable")
    return frame.to_csv(index=True, index_label=table.schema.identifier or "id").encode("utf-8")


def table_from_bytes(schema: Schema, data: bytes) -> Table:
    """The snapshot :func:`table_bytes` wrote (validated and normalized when it was first read: the values
    come back as the same text, so it is not validated again - a fifth of a twelfth month's call on Adult)."""
    frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, index_col=0)
    frame.index = pd.Index(frame.index.to_numpy(dtype=object), name=schema.identifier or "id")
    return Table(schema, frame[list(schema.published)])


def _pack(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def _unpack(blob: bytes | None) -> bytes | None:
    return None if blob is None else zlib.decompress(blob)


@dataclass(frozen=True)
class LedgerRelease:
    """One row of the ledger's history (the private blobs are read on demand by :meth:`Ledger.blobs`)."""

    n: int
    created: str
    snapshot_rows: int
    records: int
    publisher: str
    verdict: str
    inserted: int
    deleted: int
    updated: int
    file: str
    sha256: str
    counterfeits_file: str | None
    counterfeits_sha256: str | None
    spec: str
    spec_path: str
    amend: str | None
    snapshot_mac: str


_FIELDS = tuple(LedgerRelease.__dataclass_fields__)


@dataclass(frozen=True)
class LedgerEvent:
    """One event of the ledger's history besides its releases (issue 25): ``kind`` ``withdrawn`` (release
    ``n`` withdrawn before it went out; ``detail`` the custodian's reason), ``churn`` (release ``n``'s snapshot
    removed more than half of the population or more than doubled it, confirmed with ``--confirm-churn``;
    ``detail`` the figures) or ``repair`` (release ``n`` is a repair of the month, ``release --repair --accept``:
    what changed, its cost, the lines it answered, persons by pseudonym)."""

    created: str
    n: int
    kind: str
    detail: str
#: the compressed columns of a release's row (:meth:`Ledger.blobs`), in table order
_BLOBS = ("release_csv", "counterfeits_csv", "snapshot", "truth", "state")


class Ledger:
    """One ledger folder.  ``Ledger(dir, write=True)`` takes the writer's lock (exit 2 when held); a reader
    opens the database only if it exists."""

    def __init__(self, folder: str | Path, *, write: bool):
        self.dir = Path(folder)
        self.write = write
        self._lock_fd: int | None = None
        self.con: sqlite3.Connection | None = None
        self.created_dir = False
        if write:
            self._lock()
        if (self.dir / DB_NAME).is_file():
            self._open()
        elif not write:
            raise InputError("no ledger here (ledger.sqlite not found)", file=str(self.dir))

    # ------------------------------------------------------------------ lock
    def _lock(self) -> None:
        d = self.dir
        if d.exists() and not d.is_dir():
            raise InputError("exists and is not a directory", file=str(d), key="--ledger")
        if not d.exists():
            d.mkdir(mode=0o700, parents=True)
            self.created_dir = True
        os.chmod(d, 0o700)
        fd = os.open(d / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise InputError(f"ledger is in use by process {holder}", file=str(d)) from None
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
        if self._lock_fd is not None:
            os.ftruncate(self._lock_fd, 0)  # at rest the lock file is empty (a FAIL leaves every byte as it was)
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def discard_new_folder(self) -> None:
        """After a first call that recorded nothing: remove the folder it made (lock file included)."""
        self.close()
        if self.created_dir and not (self.dir / DB_NAME).exists():
            for p in self.dir.iterdir():
                p.unlink()
            self.dir.rmdir()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ database
    def _open(self) -> None:
        path = self.dir / DB_NAME
        self.con = sqlite3.connect(str(path), isolation_level=None)  # readers write nothing
        try:
            names = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError:
            self.con.close()
            self.con = None
            raise InputError("not a ledger database", file=str(path)) from None
        if not {"meta", "releases"} <= names:
            # a first call killed before its transaction committed: WAL mode set, no table - start again
            self.con.close()
            self.con = None
            if self.write:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
            else:
                raise InputError("no ledger here (no release recorded)", file=str(self.dir))

    @property
    def exists(self) -> bool:
        return self.con is not None

    def meta(self) -> dict[str, str]:
        if self.con is None:
            return {}
        return dict(self.con.execute("SELECT key, value FROM meta").fetchall())

    def secret(self) -> bytes:
        """The ledger's secret (a new one, from :mod:`secrets`, for a ledger not made yet: kept by the caller
        and stored with the first release)."""
        s = self.meta().get("secret")
        return bytes.fromhex(s) if s else secrets.token_bytes(32)

    def history(self) -> list[LedgerRelease]:
        if self.con is None:
            return []
        rows = self.con.execute(f"SELECT {', '.join(_FIELDS)} FROM releases ORDER BY n").fetchall()
        return [LedgerRelease(*r) for r in rows]

    def blobs(self, n: int) -> dict[str, bytes | None]:
        """The private and published bytes of release ``n``: release_csv, counterfeits_csv, snapshot, truth,
        state (decompressed)."""
        row = self.con.execute(f"SELECT {', '.join(_BLOBS)} FROM releases WHERE n = ?", (n,)).fetchone()
        return {k: _unpack(v) for k, v in zip(_BLOBS, row)}

    def release(self, n: int, schema: Schema) -> tuple[Release, Table]:
        """Release ``n`` as published (from the ledger's copy) and the snapshot behind it."""
        b = self.blobs(n)
        cf = None
        if b["counterfeits_csv"] is not None:
            cf = counterfeits_from_frame(pd.read_csv(io.BytesIO(b["counterfeits_csv"]), dtype=str,
                                                     keep_default_na=False))
        # the file's own notation (project's or ARX's, release --format), told from its header
        release = read_release_bytes(b["release_csv"], schema, source=f"ledger release {n}", counterfeits=cf)
        return release, table_from_bytes(schema, b["snapshot"])

    def blob(self, n: int, key: str) -> bytes | None:
        """One of :meth:`blobs` (``key``: one of its names), the others left unread."""
        if key not in _BLOBS:
            raise KeyError(key)
        row = self.con.execute(f"SELECT {key} FROM releases WHERE n = ?", (n,)).fetchone()
        return _unpack(row[0])

    def state(self, n: int) -> dict:
        return json.loads(self.blob(n, "state"))

    def events(self) -> list[LedgerEvent]:
        """The ledger's events, oldest first (none for a ledger that never had one)."""
        if self.con is None or not self._has("events"):
            return []
        rows = self.con.execute("SELECT created, n, kind, detail FROM events ORDER BY id").fetchall()
        return [LedgerEvent(*r) for r in rows]

    def withdrawn(self) -> list[LedgerRelease]:
        """The rows of the releases withdrawn, in the order they were withdrawn."""
        if self.con is None or not self._has("withdrawn"):
            return []
        rows = self.con.execute(f"SELECT {', '.join(_FIELDS)} FROM withdrawn ORDER BY rowid").fetchall()
        return [LedgerRelease(*r) for r in rows]

    def _has(self, table: str) -> bool:
        return self.con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                                (table,)).fetchone() is not None

    # ------------------------------------------------------------------ the writes
    def begin(self, secret: bytes) -> None:
        """Open the release's transaction (making the database and its tables in it for a new ledger)."""
        if self.con is None:
            path = self.dir / DB_NAME
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            os.close(fd)
            self.con = sqlite3.connect(str(path), isolation_level=None)
            self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("PRAGMA synchronous=FULL")
        self.con.execute("BEGIN IMMEDIATE")
        names = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in names:
            for ddl in _DDL:
                self.con.execute(ddl)
            self.con.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [("version", VERSION), ("secret", secret.hex())])

    def record(self, row: LedgerRelease, *, release_csv: bytes, counterfeits_csv: bytes | None, snapshot: bytes,
               truth: ReleaseTruth, state: Mapping) -> None:
        """Insert release ``row.n`` (inside the transaction :meth:`begin` opened)."""
        truth_json = json.dumps({"person": [None if p is None else str(p) for p in truth.person],
                                 "counterfeit": np.asarray(truth.counterfeit, dtype=int).tolist()})
        values = [getattr(row, f) for f in _FIELDS]
        blobs = [_pack(release_csv), None if counterfeits_csv is None else _pack(counterfeits_csv),
                 _pack(snapshot), _pack(truth_json.encode()), _pack(json.dumps(state, sort_keys=True).encode())]
        cols = _FIELDS + _BLOBS
        self.con.execute(f"INSERT INTO releases ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                         values + blobs)

    def event(self, n: int, kind: str, detail: str, created: str) -> None:
        """Record an event (inside the transaction :meth:`begin` opened)."""
        for ddl in _EVENT_DDL:
            self.con.execute(ddl)
        self.con.execute("INSERT INTO events (created, n, kind, detail) VALUES (?, ?, ?, ?)",
                         (created, n, kind, detail))

    def withdraw(self, n: int, reason: str, created: str) -> None:
        """Withdraw release ``n`` (inside the transaction :meth:`begin` opened): its row moves to ``withdrawn``,
        the gate's states kept for it or after it are dropped (the next gate folds the releases in again), and
        the event is recorded."""
        for ddl in _EVENT_DDL:
            self.con.execute(ddl)
        self.con.execute("INSERT INTO withdrawn SELECT * FROM releases WHERE n = ?", (n,))
        self.con.execute("DELETE FROM releases WHERE n = ?", (n,))
        have = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table in ("gate_parts", "gate_summary", "release_metrics"):
            if table in have:
                self.con.execute(f"DELETE FROM {table} WHERE n >= ?", (n,))
        self.event(n, "withdrawn", reason, created)

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        if self.con is not None and self.con.in_transaction:
            self.con.execute("ROLLBACK")


def spec_fingerprint(doc: Mapping) -> str:
    """What must stay the same from one release to the next: the schema and the publisher."""
    return json.dumps({"schema": doc.get("schema"), "publisher": doc.get("publisher")}, sort_keys=True,
                      default=str)


def sha256_file(path: str | Path) -> str | None:
    p = Path(path)
    if not p.is_file():
        return None
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
