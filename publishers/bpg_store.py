"""The state of BPG (Barbosa, Pinto, Gomes, CIKM 2012, section 6): the paper's *table of neighbourhoods*,
kept in an SQLite database so that release ``n + 1`` can be made by another process.

* every record ever seen has a row in ``records`` (its stable ``uid``, its stored values);
* every release has a row in ``published``: which record each published row is and its group id, so that the
  releases as published (uids, classes, sensitive values) can be re-read for BPG's own check (the
  all-release intersection attack, :meth:`publishers.bpg.BPG._check`);
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

Size: about 545 lines, over the usual 500: the schema, the one-transaction writer and the store registry
share the database's layout, and splitting them would spread one file format over several modules.
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
from multirelease.principles import Principle

__all__ = ["Store", "Stores", "STORES", "Mirror", "Update", "Joined", "SCHEMA_VERSION", "SEP", "read_state",
           "check_invariant", "clear_cache", "new_uids", "join_columns", "refine_blocks"]

SCHEMA_VERSION = "3"
#: the separator of a record's stored raw values (``records.vals``)
SEP = "\x1f"

#: the tables, made in the first release's transaction (a first release that fails leaves no half-made store).
#: A record's quasi-identifiers are stored once, as leaf codes (``codes``), and its sensitive value once
#: (``sensitive``): ``vals`` holds only the raw values the release cannot make from those (the publisher's
#: ``vals_columns``; on Adult, none), which the release of a dirty record or a counterfeit reads back
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
    key INTEGER PRIMARY KEY,
    rid TEXT,                    -- the identifier (NULL for a counterfeit)
    version INTEGER NOT NULL,
    uid TEXT NOT NULL,           -- unique (see new_uids)
    current INTEGER NOT NULL,    -- 1 for the latest version of an identifier
    counterfeit INTEGER NOT NULL,
    sensitive TEXT NOT NULL,     -- the composite sensitive value
    codes BLOB NOT NULL,         -- leaf codes of the published quasi-identifiers (int32, little-endian)
    vals TEXT NOT NULL           -- raw values of the attributes listed in meta 'vals_columns', joined by U+001F
)""", """
CREATE TABLE published (
    release INTEGER PRIMARY KEY, -- from 1
    keys BLOB NOT NULL,          -- the record of every published row, in file order (int64, little-endian)
    grp BLOB NOT NULL            -- the published group id of every row (int64, little-endian)
)""")
#: rows per INSERT statement of a bulk insert (at most 9 parameters a row, far below SQLite's limit)
_BATCH = 100


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
    release; :func:`attacks.intersection_core.signature_blocks` refines it the same way)."""
    width = int(cls.max()) + 2 if len(cls) else 1
    key = np.concatenate([[0], block.astype(np.int64) * width + (cls.astype(np.int64) + 1)])
    return pd.factorize(key)[0][1:].astype(np.int64)


def _load(con: sqlite3.Connection) -> Mirror:
    """The whole database as a :class:`Mirror`."""
    rows = con.execute("SELECT key, rid, version, uid, current, counterfeit, sensitive, codes, vals FROM records "
                       "ORDER BY key").fetchall()
    if rows:
        key, rid, version, uid, cur, fake, sens, codes, vals = zip(*rows)
    else:
        key = rid = version = uid = cur = fake = sens = codes = vals = ()
    keys = np.asarray(key, dtype=np.int64)
    nbh = np.full(len(key), -1, dtype=np.int64)
    nb = con.execute("SELECT id, releases, lo, hi, members FROM neighbourhoods").fetchall()
    for i, _, _, _, blob in nb:
        nbh[np.searchsorted(keys, np.frombuffer(blob, dtype="<i8"))] = int(i)
    rid = np.asarray(rid, dtype=object)
    current = np.asarray(cur, dtype=bool)
    counterfeit = np.asarray(fake, dtype=bool)
    uid = np.asarray(uid, dtype=object)
    live = np.flatnonzero(current & ~counterfeit)
    history = [(np.frombuffer(k, dtype="<i8").astype(np.int64), np.frombuffer(g, dtype="<i8").astype(np.int64))
               for k, g in con.execute("SELECT keys, grp FROM published ORDER BY release")]
    blocks = np.zeros(len(keys), dtype=np.int64)
    for k, g in history:
        cls = np.full(len(keys), -1, dtype=np.int64)
        cls[np.searchsorted(keys, k)] = pd.factorize(g)[0]
        blocks = refine_blocks(blocks, cls)
    return Mirror(key=keys, rid=rid, version=np.asarray(version, dtype=np.int64), uid=uid, current=current,
                  counterfeit=counterfeit, sensitive=np.asarray(sens, dtype=object), vals=Joined(vals),
                  codes=np.frombuffer(b"".join(codes), dtype="<i4").astype(np.int32), nbh=nbh,
                  rid_pos=dict(zip(rid[live].tolist(), live.tolist())), uid_set=set(uid.tolist()),
                  nbh_releases={int(i): r for i, r, _, _, _ in nb},
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


def _insert(con: sqlite3.Connection, table: str, row: str, rows, count: int) -> None:
    """Insert ``count`` rows (an iterator of tuples) into ``table``; ``row`` is one row's ``VALUES`` term,
    ``"(?, ?, 1, ...)"``.  A bulk insert (the first release stores every record at once) puts :data:`_BATCH` rows
    in one statement: far fewer statement steps.  The rows are streamed (``zip`` reuses its tuple): no list of
    ``count`` tracked tuples for the garbage collector to scan."""
    n_par = row.count("?")
    if count >= 2 * _BATCH:
        flat = list(itertools.chain.from_iterable(rows))
        full = count // _BATCH * _BATCH
        w = n_par * _BATCH
        con.executemany(f"INSERT INTO {table} VALUES " + ", ".join([row] * _BATCH),
                        (flat[i:i + w] for i in range(0, full * n_par, w)))
        rows = zip(*[iter(flat[full * n_par:])] * n_par)
    con.executemany(f"INSERT INTO {table} VALUES {row}", rows)


def _write(con: sqlite3.Connection, up: Update) -> None:
    """One transaction, only what changed: new neighbourhoods, shrunk or emptied old ones, new records,
    superseded versions, the release counter and the token.  For a new database the transaction that made its
    tables (:meth:`Stores.create`) is still open: the first release is stored with them or not at all."""
    r = up.records
    m = len(r["key"])
    # the new records' rows, built column by column (identifiers and uids are text already, None for a
    # counterfeit's identifier).  A row's leaf codes are one blob, a slice of one bytearray: sqlite3 binds a
    # bytearray as it is, but looks up an adapter for every bytes object first (about 0.7 us a row, a third of
    # the first release's insert)
    codes = bytearray(np.ascontiguousarray(r["codes"], dtype="<i4").tobytes())
    width = len(codes) // m if m else 0
    blobs = [codes[i:i + width] for i in range(0, len(codes), width)] if width else [bytearray()] * m
    cols = [r["key"].tolist(), r["rid"].tolist(), r["uid"].tolist(), list(map(str, r["sensitive"])), blobs]
    # values shared by many rows are written in the statement rather than bound to every row (a bulk insert
    # costs about as much per bound value as per row): most new rows are first versions of live records
    # (version 1, current, not a counterfeit; the others, new versions and counterfeits, bind them), and
    # when no raw column is stored every row's vals is ''
    vals = "?" if any(up.texts) else "''"
    if vals == "?":
        cols.append(up.texts)
    first = (r["version"] == 1) & r["current"] & ~r["counterfeit"]
    n_first = int(first.sum())
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
        if up.superseded:
            con.executemany("UPDATE records SET current = 0 WHERE key = ?", [(k,) for k in up.superseded])
        if n_first:
            rows = zip(*cols) if n_first == m else itertools.compress(zip(*cols), first.tolist())
            _insert(con, "records", f"(?, ?, 1, ?, 1, 0, ?, ?, {vals})", rows, n_first)
        if n_first < m:
            k, rid, u, sens, b, *t = cols
            rows = zip(k, rid, r["version"].tolist(), u, r["current"].astype(np.int64).tolist(),
                       r["counterfeit"].astype(np.int64).tolist(), sens, b, *t)
            _insert(con, "records", f"(?, ?, ?, ?, ?, ?, ?, ?, {vals})",
                    itertools.compress(rows, (~first).tolist()), m - n_first)
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
                raise InputError(f"the database was made with {k} = {meta.get(k)}, not {v}", file=str(path), key=k)
        return store

    def keep(self, store: Store) -> None:
        """After a release: the store stays open for the next release of this process (WAL: other processes may
        read it meanwhile) and its WAL is checkpointed in the background."""
        self._open[str(store.path)] = store
        store.checkpoint_later()

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
        records = pd.read_sql_query("SELECT * FROM records ORDER BY key", con)
        nbhs = pd.read_sql_query("SELECT * FROM neighbourhoods ORDER BY id", con)
    finally:
        con.close()
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
