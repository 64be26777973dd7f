"""The state of BPG (Barbosa, Pinto, Gomes, CIKM 2012, section 6): the paper's *table of neighbourhoods*,
kept in an SQLite database so that release ``n + 1`` can be made by another process.

* every record ever seen is in the part of ``records`` of the release that first stored it (its stable
  ``uid``, its stored values): one row per release holding the columns of its new records as packed arrays,
  and the keys of the records whose new versions it stored (no longer current), so that a release reads the
  records with one vectorized decode per release instead of one Python row per record;
* every release has a row in ``published``: which record each published row is and its group id, so that the
  releases as published (uids, classes, sensitive values) can be re-read for BPG's own check (the
  all-release intersection attack, :meth:`publishers.bpg.postprocessor.BPG._check`);
* every neighbourhood has a row in ``neighbourhoods``: the quasi-identifier region ``[lo, hi]`` the adversary
  can infer for its records, their common *signature* (``releases``: the releases they were published in; bit
  ``i`` of the paper's signature ``sigma`` is 1 iff ``i`` is listed) and its members (the paper's foreign key
  from a record to its neighbourhood, stored on the neighbourhood's side).

:class:`Store` is one database: its connection (WAL mode, checkpointed in the background after each release),
the in-memory copy of its last release (:class:`Mirror`, checked against a random token written with every
release, so a database changed by another process is always re-read) and the transaction that writes a release
(:class:`Update`).  :func:`new_uids` is the uid stream, keyed by the database's secret salt.

The publisher's state between releases is plain JSON (``{"database": path, "releases": n}``, DESIGN.md), and
the pipeline builds a new publisher for every release, so the open stores of this process are found by path in
one registry, :data:`STORES` - the module's only mutable object, whose open connections and temporary files are
closed and removed at exit.  :func:`clear_cache` closes them at once (the next release re-reads its database,
as a new process would); no result depends on whether a store was open.

Size: about 590 lines, over the usual 500: the schema, its packed columns, the one-transaction writer and the
store registry share the database's layout, and splitting them would spread one file format over several
modules.
"""
from __future__ import annotations

import atexit
import hashlib
import itertools
import json
import os
import sqlite3
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.principles import Principle

__all__ = ["Store", "Stores", "STORES", "Mirror", "Update", "Joined", "SCHEMA_VERSION", "SEP", "read_state",
           "check_invariant", "clear_cache", "new_uids", "join_columns", "refine_blocks"]

SCHEMA_VERSION = "4"  # 4: records packed per release (3: one row per record)
#: the separator of a record's stored raw values (``records.vals``)
SEP = "\x1f"

#: the tables, made in the first release's transaction (a first release that fails leaves no half-made store).
#: A record's quasi-identifiers are stored once, as leaf codes (``codes``), and its sensitive value once
#: (``sensitive``): ``vals`` holds only the raw values the release cannot make from those (the publisher's
#: ``vals_columns``; on Adult, none), which the release of a dirty record or a counterfeit reads back.
#: ``records`` is append-only: a release adds one row (its new records, and the keys it supersedes)
_DDL = ("""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""", """
CREATE TABLE neighbourhoods (
    id INTEGER PRIMARY KEY,
    releases TEXT NOT NULL,      -- the signature: releases (from 1) its records were published in
    lo TEXT NOT NULL,            -- JSON list: lowest leaf code per quasi-identifier
    hi TEXT NOT NULL,            -- JSON list: highest leaf code per quasi-identifier
    size INTEGER NOT NULL,
    members BLOB NOT NULL        -- the keys of its records (int64, little-endian): the paper's foreign key
)""", """
CREATE TABLE records (
    release INTEGER PRIMARY KEY, -- the release that first stored these records (from 1)
    keys BLOB NOT NULL,          -- their keys, ascending (int64, little-endian)
    version BLOB NOT NULL,       -- their versions (int64)
    current BLOB NOT NULL,       -- 1 for the latest version of an identifier when stored (uint8)
    counterfeit BLOB NOT NULL,   -- 1 for a counterfeit (uint8)
    codes BLOB NOT NULL,         -- leaf codes of the published quasi-identifiers, row after row (int32)
    rid BLOB NOT NULL,           -- the identifiers (texts, see _pack_texts; none for a counterfeit)
    uid BLOB NOT NULL,           -- unique (see new_uids; texts)
    sensitive BLOB NOT NULL,     -- the composite sensitive values (texts)
    vals BLOB NOT NULL,          -- raw values of the attributes listed in meta 'vals_columns', joined by U+001F
    superseded BLOB NOT NULL     -- keys of earlier records a new version stored here replaces (int64)
)""", """
CREATE TABLE published (
    release INTEGER PRIMARY KEY, -- from 1
    keys BLOB NOT NULL,          -- the record of every published row, in file order (int64, little-endian)
    grp BLOB NOT NULL            -- the published group id of every row (int64, little-endian)
)""")


def _connect(path: Path, *, new: bool = False) -> sqlite3.Connection:
    """A connection in WAL mode with ``synchronous=NORMAL`` (a commit survives the process; the WAL is synced at
    checkpoints).  A ``new`` file is empty when it is switched to WAL: that switch, a rollback-journal transaction
    (three fsyncs, tens of milliseconds on a busy disk), is not synced, as it holds nothing to lose: the
    release's data come in the first WAL commit, with the usual durability."""
    con = sqlite3.connect(str(path), isolation_level=None)
    try:
        if new:
            con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        # no checkpoint inside a commit: the release that crossed SQLite's 1,000-page limit paid for copying
        # every earlier release's pages (release 10 of the Adult stream); each release's pages are checkpointed
        # in the background instead (:meth:`Store.checkpoint_later`)
        con.execute("PRAGMA wal_autocheckpoint=0")
    except sqlite3.Error:  # not a database: nothing left open
        con.close()
        raise
    return con


def _checkpoint(path: str) -> None:
    try:
        con = sqlite3.connect(path)
        try:
            con.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            con.close()
    except sqlite3.Error:  # nothing is lost: the WAL keeps the pages until a later checkpoint copies them
        pass


def _remove_files(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.exists():
            p.unlink()


# ---------------------------------------------------------------------- the in-memory copy
class Joined:
    """The stored rows' values, split on access (most stored rows are never needed)."""

    def __init__(self, texts):
        self.texts = texts if isinstance(texts, np.ndarray) and texts.dtype == object else \
            np.asarray(list(texts), dtype=object)

    def __len__(self):
        return len(self.texts)

    def texts_at(self, idx: np.ndarray) -> np.ndarray:
        return self.texts[np.asarray(idx, dtype=np.int64)]

    def __getitem__(self, i):
        return str(self.texts[int(i)]).split(SEP)


@dataclass(eq=False)
class Mirror:
    """The database as arrays, records in key order (a record's *position*): what one release reads.

    ``codes`` holds the leaf codes of every record (flat when read from the file: ``reshape(-1, q)``); ``nbh``
    the id of each record's neighbourhood (``-1``: none, never published or no longer in one).  ``rid_pos`` maps
    an identifier to the position of its current, real version; ``uid_set`` holds every uid; ``nbh_releases``,
    ``nbh_lo``, ``nbh_hi`` map a neighbourhood id to its signature and region."""

    key: np.ndarray
    rid: np.ndarray
    version: np.ndarray
    uid: np.ndarray
    current: np.ndarray
    counterfeit: np.ndarray
    sensitive: np.ndarray
    vals: Joined
    codes: np.ndarray
    nbh: np.ndarray
    rid_pos: dict
    uid_set: set
    nbh_releases: dict
    nbh_lo: dict
    nbh_hi: dict
    #: every stored release as published: ``(record keys, group ids)`` of its rows, in file order
    history: list = field(default_factory=list)
    #: every record's presence-and-class signature over the stored releases, as a block number
    #: (:func:`refine_blocks`; 0: never published)
    blocks: np.ndarray | None = None


def refine_blocks(block: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """The signature blocks after one more release: records are in one block when they were in one block and
    are in the same class of the release (``cls``: class index, -1 when not published).  Block 0 stays the
    never-published records' (Barbosa et al. section 4: the signature is the presence and the class in every
    release; :func:`attacks.intersection.core.signature_blocks` refines it the same way)."""
    width = int(cls.max()) + 2 if len(cls) else 1
    key = np.concatenate([[0], block.astype(np.int64) * width + (cls.astype(np.int64) + 1)])
    return pd.factorize(key)[0][1:].astype(np.int64)


def _pack_texts(values) -> bytes:
    """Texts (``None`` allowed) as one blob, split again by :func:`_unpack_texts` with one ``str.split``: a
    mark, their count and the positions of the ``None`` ones (int64), then the others joined by NUL as one
    UTF-8 text; texts that hold a NUL are stored with their lengths instead (mark ``L``)."""
    values = [None if v is None else str(v) for v in values]
    none = np.fromiter((i for i, v in enumerate(values) if v is None), dtype="<i8")
    texts = [v for v in values if v is not None]
    head = np.array([len(values), len(none)], dtype="<i8").tobytes() + none.tobytes()
    joined = "\0".join(texts)
    if joined.count("\0") == max(len(texts) - 1, 0):
        return b"N" + head + joined.encode("utf-8")
    lengths = np.fromiter(map(len, texts), dtype="<i8", count=len(texts))
    return b"L" + head + lengths.tobytes() + "".join(texts).encode("utf-8")


def _unpack_texts(blob: bytes) -> list:
    blob = bytes(blob)
    n, n_none = (int(x) for x in np.frombuffer(blob, dtype="<i8", count=2, offset=1))
    none = np.frombuffer(blob, dtype="<i8", count=n_none, offset=17).tolist()
    at = 17 + 8 * n_none
    if blob[:1] == b"N":
        texts = blob[at:].decode("utf-8").split("\0") if n > n_none else []
    else:
        lengths = np.frombuffer(blob, dtype="<i8", count=n - n_none, offset=at)
        text = blob[at + 8 * (n - n_none):].decode("utf-8")
        ends = np.cumsum(lengths).tolist()
        texts = [text[e - k:e] for e, k in zip(ends, lengths.tolist())]
    for i in none:  # ascending: each None goes back to its place
        texts.insert(i, None)
    return texts


def _positions(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The positions of ``wanted`` keys among the ascending ``keys`` (keys are handed out one after another, so
    usually an offset)."""
    if len(keys) and int(keys[-1]) - int(keys[0]) == len(keys) - 1:
        return np.asarray(wanted, dtype=np.int64) - int(keys[0])
    return np.searchsorted(keys, wanted)


def _ints(blob: bytes, dtype: str) -> np.ndarray:
    return np.frombuffer(blob, dtype=dtype).astype(np.int64)


def _read_records(con: sqlite3.Connection) -> dict:
    """Every stored record, in key order, as columns: one decode per release part (table ``records``)."""
    try:
        parts = con.execute("SELECT keys, version, current, counterfeit, codes, rid, uid, sensitive, vals, "
                            "superseded FROM records ORDER BY release").fetchall()
    except sqlite3.OperationalError:  # the one-row-per-record table of an older format
        raise InputError(f"the BPG database was written in an older format (its schema_version is not "
                         f"{SCHEMA_VERSION}): start a new sequence") from None
    cols = list(zip(*parts)) if parts else [()] * 10
    key = np.concatenate([_ints(b, "<i8") for b in cols[0]]) if parts else np.zeros(0, np.int64)
    version = np.concatenate([_ints(b, "<i8") for b in cols[1]]) if parts else np.zeros(0, np.int64)
    current = np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in cols[2]]).astype(bool) if parts \
        else np.zeros(0, bool)
    fake = np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in cols[3]]).astype(bool) if parts \
        else np.zeros(0, bool)
    codes = np.frombuffer(b"".join(cols[4]), dtype="<i4").astype(np.int32)
    texts = [list(itertools.chain.from_iterable(map(_unpack_texts, c))) for c in cols[5:9]]
    superseded = np.concatenate([_ints(b, "<i8") for b in cols[9]]) if parts else np.zeros(0, np.int64)
    order = None if len(key) < 2 or (np.diff(key) > 0).all() else np.argsort(key, kind="stable")
    if order is not None:  # keys are assigned in increasing order: only a hand-made file needs this
        q = len(codes) // len(key)
        key, version, current, fake = key[order], version[order], current[order], fake[order]
        codes = codes.reshape(-1, q)[order].reshape(-1)
        texts = [[t[i] for i in order.tolist()] for t in texts]
    current[_positions(key, superseded)] = False
    rid, uid, sens, vals = (np.asarray(t, dtype=object) for t in texts)
    return {"key": key, "rid": rid, "version": version, "uid": uid, "current": current, "counterfeit": fake,
            "sensitive": sens, "codes": codes, "vals": vals}


def _load(con: sqlite3.Connection) -> Mirror:
    """The whole database as a :class:`Mirror`."""
    r = _read_records(con)
    keys = r["key"]
    nbh = np.full(len(keys), -1, dtype=np.int64)
    nb = con.execute("SELECT id, releases, lo, hi, members FROM neighbourhoods").fetchall()
    if nb:  # every neighbourhood's members at once
        members = [np.frombuffer(blob, dtype="<i8") for *_, blob in nb]
        ids = np.repeat(np.fromiter((int(x[0]) for x in nb), dtype=np.int64, count=len(nb)),
                        [len(m) for m in members])
        nbh[_positions(keys, np.concatenate(members))] = ids
    rid, uid, current, counterfeit = r["rid"], r["uid"], r["current"], r["counterfeit"]
    live = np.flatnonzero(current & ~counterfeit)
    history = [(np.frombuffer(k, dtype="<i8").astype(np.int64), np.frombuffer(g, dtype="<i8").astype(np.int64))
               for k, g in con.execute("SELECT keys, grp FROM published ORDER BY release")]
    blocks = np.zeros(len(keys), dtype=np.int64)
    for k, g in history:
        cls = np.full(len(keys), -1, dtype=np.int64)
        cls[_positions(keys, k)] = pd.factorize(g)[0]
        blocks = refine_blocks(blocks, cls)
    return Mirror(key=keys, rid=rid, version=r["version"], uid=uid, current=current,
                  counterfeit=counterfeit, sensitive=r["sensitive"], vals=Joined(r["vals"]),
                  codes=r["codes"], nbh=nbh,
                  rid_pos=dict(zip(rid[live].tolist(), live.tolist())), uid_set=set(uid.tolist()),
                  nbh_releases={int(i): rel for i, rel, _, _, _ in nb},
                  nbh_lo={int(i): json.loads(lo) for i, _, lo, _, _ in nb},
                  nbh_hi={int(i): json.loads(hi) for i, _, _, hi, _ in nb},
                  history=history, blocks=blocks)


# ---------------------------------------------------------------------- one release's transaction
@dataclass(eq=False)
class Update:
    """What one release changes in the database.

    ``records`` are the columns of the new records (``key``, ``rid``, ``uid``, ``sensitive``, ``codes`` (rows of
    leaf codes), ``version``, ``current``, ``counterfeit``) and ``texts`` their stored raw values;
    ``superseded`` the keys of stored records that a new version replaces; ``new_nbh`` the new neighbourhoods
    ``(id, signature, lo, hi, size, member keys as int64 bytes)``, ``gone`` the emptied ones and ``shrunk`` the
    ones that lost records ``(size, member keys, id)``; ``published`` the release's rows (record keys and group
    ids, file order)."""

    release: int
    token: str
    records: dict
    texts: list
    superseded: list
    new_nbh: list
    gone: list
    shrunk: list
    published: tuple = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def _json_ints(values: list[int]) -> str:
    """``json.dumps`` of a list of ints (the same text, without the encoder's overhead)."""
    return "[" + ", ".join(map(str, values)) + "]"


def _write(con: sqlite3.Connection, up: Update) -> None:
    """One transaction, only what changed: new neighbourhoods, shrunk or emptied old ones, the release's part of
    ``records`` (its new records as packed columns, the keys its new versions supersede), the release as
    published, the release counter and the token.  For a new database the transaction that made its tables
    (:meth:`Stores.create`) is still open: the first release is stored with them or not at all."""
    r = up.records
    part = (up.release, np.ascontiguousarray(r["key"], dtype="<i8").tobytes(),
            np.ascontiguousarray(r["version"], dtype="<i8").tobytes(),
            np.asarray(r["current"], dtype=np.uint8).tobytes(), np.asarray(r["counterfeit"], dtype=np.uint8).tobytes(),
            np.ascontiguousarray(r["codes"], dtype="<i4").tobytes(), _pack_texts(r["rid"].tolist()),
            _pack_texts(r["uid"].tolist()), _pack_texts(r["sensitive"].tolist()), _pack_texts(up.texts),
            np.asarray(up.superseded, dtype="<i8").tobytes())
    if not con.in_transaction:
        con.execute("BEGIN")
    try:
        if up.new_nbh:
            con.executemany("INSERT INTO neighbourhoods VALUES (?, ?, ?, ?, ?, ?)",
                            [(nid, rel, _json_ints(lo), _json_ints(hi), size, members)
                             for nid, rel, lo, hi, size, members in up.new_nbh])
        if up.gone:
            con.executemany("DELETE FROM neighbourhoods WHERE id = ?", [(t,) for t in up.gone])
        if up.shrunk:
            con.executemany("UPDATE neighbourhoods SET size = ?, members = ? WHERE id = ?", up.shrunk)
        con.execute("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", part)
        keys, grp = up.published
        con.execute("INSERT INTO published VALUES (?, ?, ?)",
                    (up.release, np.ascontiguousarray(keys, dtype="<i8").tobytes(),
                     np.ascontiguousarray(grp, dtype="<i8").tobytes()))
        con.execute("UPDATE meta SET value = ? WHERE key = 'releases'", (str(up.release),))
        con.execute("INSERT OR REPLACE INTO meta VALUES ('token', ?)", (up.token,))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


# ---------------------------------------------------------------------- one database
class Store:
    """One BPG database: its path, its connection, its ``meta`` table, the in-memory copy of its last release
    and the thread checkpointing its WAL.  Made by :meth:`Stores.create` or :meth:`Stores.resume`."""

    def __init__(self, path: Path, con: sqlite3.Connection, meta: dict[str, str]):
        self.path = path
        self.con = con
        self.meta = meta
        #: ``(token, mirror)`` after this process's last write: valid while the database's token is the same
        self._copy: tuple[str, Mirror] | None = None
        self._checkpoint: threading.Thread | None = None

    @property
    def release(self) -> int:
        """The number of releases stored."""
        return int(self.meta["releases"])

    def mirror(self) -> Mirror:
        """The database as arrays: the in-memory copy when the database's token is still the one this process
        wrote with it, else read from the file."""
        copy, self._copy = self._copy, None
        if copy is not None and copy[0] == self.meta.get("token"):
            return copy[1]
        return _load(self.con)

    def write(self, update: Update) -> None:
        """Store a release (one transaction)."""
        _write(self.con, update)
        self.meta.update(releases=str(update.release), token=update.token)

    def remember(self, mirror: Mirror) -> None:
        """Keep ``mirror``, the database after the last write, in memory for the next release."""
        self._copy = (self.meta["token"], mirror)

    def checkpoint_later(self) -> None:
        """Copy the WAL's committed pages into the database file in a thread of its own (SQLite releases the GIL),
        while the caller goes on; the next use of the database, and the process's exit, wait for it - that wait
        counts in the next release's time."""
        self.wait_checkpoint()
        self._checkpoint = threading.Thread(target=_checkpoint, args=(str(self.path),), daemon=True)
        self._checkpoint.start()

    def wait_checkpoint(self) -> None:
        thread, self._checkpoint = self._checkpoint, None
        if thread is not None:
            thread.join()

    def close(self) -> None:
        self.wait_checkpoint()
        self._copy = None
        self.con.close()


class Stores:
    """The databases this process has open, by path: a release that succeeded leaves its store open (and its
    in-memory copy) for the next release of the sequence, which finds it by the path in its state."""

    def __init__(self) -> None:
        self._open: dict[str, Store] = {}
        #: databases made in the temporary directory (no ``database`` parameter): removed at exit
        self._temporary: set[str] = set()

    def create(self, path: Path | None, meta: dict[str, str]) -> Store:
        """A new database at ``path`` (replacing any file there; ``None``: a temporary file removed at exit),
        its tables and ``meta`` made in a transaction left open, committed with the first release."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            old = self._open.pop(str(path), None)
            if old is not None:
                old.close()
            _remove_files(path)
        else:
            fd, name = tempfile.mkstemp(prefix="bpg-", suffix=".sqlite")
            os.close(fd)
            os.unlink(name)
            path = Path(name)
            self._temporary.add(str(path))
        con = _connect(path, new=True)
        con.execute("BEGIN")
        for ddl in _DDL:
            con.execute(ddl)
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        return Store(path, con, dict(meta))

    def resume(self, state: dict, fingerprint: dict[str, str]) -> Store:
        """The database of a publisher's ``state`` (``{"database", "releases"}``), checked: it is a BPG database,
        at release ``releases``, made with the same ``fingerprint`` (schema version, attributes, principle...)."""
        if "database" not in state or "releases" not in state:
            raise InputError("the state of bpg needs 'database' and 'releases'", key="state")
        path = Path(state["database"])
        if not path.is_file():
            raise InputError("BPG database not found", file=str(path), key="state.database")
        store = self._open.pop(str(path), None)
        try:
            if store is not None:
                store.wait_checkpoint()
            else:
                store = Store(path, _connect(path), {})
            store.meta = dict(store.con.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:  # not SQLite at all (from _connect), or without the meta table
            if store is not None:
                store.close()
            raise InputError("not a BPG database", file=str(path)) from None
        meta = store.meta
        if int(meta.get("releases", -1)) != int(state["releases"]):
            store.close()
            raise InputError(f"the state is at release {state['releases']} but the database at release "
                             f"{meta.get('releases')}", file=str(path), key="state.releases")
        for k, v in fingerprint.items():
            if meta.get(k) != v:
                store.close()
                why = " (an older store format: start a new sequence)" if k == "schema_version" else ""
                raise InputError(f"the database was made with {k} = {meta.get(k)}, not {v}{why}", file=str(path),
                                 key=k)
        return store

    def keep(self, store: Store) -> None:
        """After a release: the store stays open for the next release of this process (WAL: other processes may
        read it meanwhile) and its WAL is checkpointed in the background."""
        self._open[str(store.path)] = store
        store.checkpoint_later()

    def wait_checkpoints(self) -> None:
        """Wait for every open store's background checkpoint (before this process forks: a process forked
        while the checkpointing thread held one of SQLite's locks would wait for it forever in its first
        SQLite call - the ledger's repair publishes its candidates in forked processes)."""
        for store in list(self._open.values()):
            store.wait_checkpoint()

    def close_all(self) -> None:
        while self._open:
            _, store = self._open.popitem()
            store.close()

    def at_exit(self) -> None:
        self.close_all()
        for name in self._temporary:
            _remove_files(Path(name))


#: the stores of this process (see the module docstring)
STORES = Stores()
atexit.register(STORES.at_exit)
if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(before=STORES.wait_checkpoints)


def clear_cache() -> None:
    """Close this process's databases and forget their in-memory copies (the next release re-reads its
    database, as a new process would)."""
    STORES.close_all()


# ---------------------------------------------------------------------- stored values and uids
def join_columns(vals: np.ndarray) -> list[str]:
    """Every row's values of a 2-d object array as one text, joined by :data:`SEP`, column by column (no list
    per row: the first release joins every record's values at once)."""
    n_rows = vals.shape[0]
    if not n_rows or vals.ndim != 2 or not vals.shape[1]:
        return [""] * n_rows
    cols = [c.tolist() for c in vals.T]
    try:
        return list(map(SEP.join, zip(*cols)))
    except TypeError:  # a value that is not text
        return list(map(SEP.join, zip(*[list(map(str, c)) for c in cols])))


def new_uids(salt: str, release: int, count: int, seen: set) -> tuple[list[str], set]:
    """The uids of the ``count`` records first stored by release ``release``, in position order, and their set.

    Section 4 of Barbosa et al.: "a unique identifier for each individual, that stays constant across distinct
    releases", independent of real-world data.  They are the successive 8-byte words (as hex) of SHAKE-256 of
    the database's secret salt and the release number: ids that say nothing about the records or their order
    without the salt, made at once for every new record (one call, not a keyed hash per record) and the same in
    any process that makes this release from the same database.  A word equal to a stored uid or to an earlier
    word (a chance of about 3e-8 with a million records) is skipped for the next one, so uids are unique.
    Stored with the records, a uid stays with its record for every later release."""
    xof = hashlib.shake_256(f"BPG uids of release {release}\x00".encode() + bytes.fromhex(salt))
    words = count
    while True:
        text = xof.digest(8 * words).hex()  # a longer digest starts with the shorter one
        uids = [text[i:i + 16] for i in range(0, len(text), 16)]
        fresh = set(uids)
        if words == count and len(fresh) == count and seen.isdisjoint(fresh):
            return uids, fresh
        uids = [u for u in dict.fromkeys(uids) if u not in seen][:count]
        if len(uids) == count:
            return uids, set(uids)
        words += count - len(uids)


# ---------------------------------------------------------------------- inspection
def read_state(path: str | Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """``(meta, records, neighbourhoods)`` of a BPG database, for inspection and tests."""
    path = Path(path)
    if not path.is_file():
        raise InputError("BPG database not found", file=str(path))
    con = _connect(path)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        r = _read_records(con)
        nbhs = pd.read_sql_query("SELECT * FROM neighbourhoods ORDER BY id", con)
    finally:
        con.close()
    q = len(r["codes"]) // len(r["key"]) if len(r["key"]) else 0
    codes = r["codes"].astype("<i4").reshape(len(r["key"]), q)
    records = pd.DataFrame({"key": r["key"], "rid": r["rid"], "version": r["version"], "uid": r["uid"],
                            "current": r["current"].astype(np.int64), "counterfeit": r["counterfeit"].astype(np.int64),
                            "sensitive": r["sensitive"], "codes": [row.tobytes() for row in codes],
                            "vals": r["vals"]})
    nbh = pd.Series(pd.NA, index=records["key"], dtype="Int64")
    for nid, blob in zip(nbhs["id"], nbhs["members"]):
        nbh.loc[np.frombuffer(blob, dtype="<i8")] = nid
    records["nbh"] = nbh.to_numpy()
    nbhs = nbhs.drop(columns=["members"])
    return meta, records, nbhs


def check_invariant(path: str | Path, principle: Principle | None = None) -> list[str]:
    """The problems with BPG's invariant in a database (empty when it holds; section 6, "Analysis": each
    record is associated with only one neighbourhood and all neighbourhoods satisfy the principle): every
    published record has one neighbourhood, every neighbourhood's records exist and satisfy the principle."""
    meta, records, nbhs = read_state(path)
    if principle is None:
        p = json.loads(meta["principle"])
        principle = Principle(k=p["k"], l=p["l"], l_kind=p["l_kind"])
    problems = []
    values = {v: i for i, v in enumerate(sorted(set(records["sensitive"])))}
    members = records[records["nbh"].notna()].groupby("nbh")
    sizes = dict(zip(nbhs["id"], nbhs["size"]))
    for nid, grp in members:
        nid = int(nid)
        if nid not in sizes:
            problems.append(f"records point to neighbourhood {nid}, which does not exist")
            continue
        if sizes[nid] != len(grp):
            problems.append(f"neighbourhood {nid} says {sizes[nid]} records, holds {len(grp)}")
        counts = np.bincount([values[v] for v in grp["sensitive"]], minlength=len(values))
        if not principle.ok(counts):
            problems.append(f"neighbourhood {nid} ({len(grp)} records) breaks {principle.describe()}")
    empty = set(sizes) - {int(x) for x in members.groups}
    if empty:
        problems.append(f"neighbourhood {sorted(empty)[0]} has no records")
    return problems
