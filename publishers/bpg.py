"""BPG: the post-processor of Barbosa, Pinto, Gomes (CIKM 2012, section 6, Listing 1;
``003_9c5f9a30c53bd642.txt``) that makes any monotone principle safe across successive releases.

Each release is a query answer (a subset of a dynamic table).  BPG anonymizes it with an ordinary single-release
generalizer (Mondrian by default, or any registered publisher) and post-processes the classes against the
history so that no intersection or difference attack (section 4, :mod:`attacks.intersection`) breaks the
principle.  The history is the paper's *table of neighbourhoods*, kept in an SQLite database (the state
returned by :meth:`BPG.publish` holds its path), so that release ``n + 1`` can be made by another process:

* every record ever seen has a row in ``records`` (its stable ``uid``, its neighbourhood, its stored values);
* every neighbourhood has a row in ``neighbourhoods``: the quasi-identifier region ``[lo, hi]`` the adversary
  can infer for its records and their common *signature* (``releases``: the releases they were published in;
  bit ``i`` of the paper's signature ``sigma`` is 1 iff ``i`` is listed).

Invariant (section 6, "Analysis"): *each record is associated with only one neighbourhood, all records in
the same neighbourhood share the same signature and all neighbourhoods satisfy the protection principle.*
Here the neighbourhoods are the cells of the meet of every published class partition, split by signature, so
every candidate set of the intersection and difference attacks is a union of neighbourhoods, hence valid by
monotonicity (Definition 3).

One release (Listing 1):

1. The signature is a quasi-identifier that is never generalized ("our algorithm sees its signature as a
   quasi-identifier"): the snapshot is split by the records' signatures and the generalizer runs on each part,
   so first-time records form classes of their own.  A part that cannot satisfy the principle as a whole is
   not published.
2. Every record of a class is tentatively published (lines 5-6); for each class ``E1`` and each stored
   neighbourhood ``nu0`` of its records, with ``E0 = db[nu0]``: ``P(E1 - E0)`` else reject ``E1`` (line 12);
   ``P(E0 - E1)`` else add ``E0^-`` (the records of ``E0`` not published in this release) to ``E1`` (line 15);
   ``P(E0 n E1)`` else add ``E0^-`` if that makes it valid, or reject (line 20).  A rejected class's records
   are not published (lines 30-33).
3. Beyond the listing, the records of a neighbourhood left unpublished (``E0 - R1``) must form a valid set too
   (the invariant): an invalid remainder is added to a published class holding records of ``E0`` (dirty
   records), or, without dirty records, every class holding records of ``E0`` is rejected; repeated until
   nothing changes.
4. Every published record of ``E1 n E0`` moves to the new neighbourhood ``nu0 n nu1`` (lines 34-35), first-time
   records to ``nu1``.

Variants (section 6, "Variants"), parameter ``variant``:

* ``dirty`` (default): as above - records of ``E0^-`` omitted from the query may be published ("dirty");
* ``no_dirty``: every failing test rejects the class;
* ``counterfeits``: a part of first-time records that cannot satisfy the principle is completed with
  counterfeit records (as m-invariance does), published with counterfeit statistics
  (:attr:`Release.counterfeits`).  A counterfeit cannot complete a set of records with a history: its
  fresh uid would show it was never published before (see the notes of :class:`BPG`); there the default
  rules apply;
* ``one_at_a_time``: ``E0^-`` records are added to ``E1`` one at a time (nearest first) until ``E0 n E1`` is
  valid, so the rest may "save" other classes.

Every published row carries ``uid``, the record's stable record-tracking id (section 4: "a unique identifier for
each individual, that stays constant across distinct releases", independent of real-world data): drawn when the
record is first stored, from a stream keyed by the database's secret salt (see :func:`_new_uids`), and kept in
the database.  A record whose values changed is, as in section 4, a deletion and an insertion: its new version
is a new record, with a new uid.
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
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.params import Interval, Options, Text
from multirelease.principles import Principle
from multirelease.release import ReleaseTruth
from multirelease.table import Table, composite_sensitive

from .base import PublisherBase, PublishResult
from .mondrian import mondrian_partition, release_from_partition

__all__ = ["BPG", "VARIANTS", "read_state", "check_invariant", "clear_cache"]

VARIANTS = ("dirty", "no_dirty", "counterfeits", "one_at_a_time")
SCHEMA_VERSION = "2"
SEP = "\x1f"


# ---------------------------------------------------------------------- the SQLite store
#: the tables, made in the first release's transaction (a first release that fails leaves no half-made store).
#: A record's quasi-identifiers are stored once, as leaf codes (``codes``), and its sensitive value once
#: (``sensitive``): ``vals`` holds only the raw values the release cannot make from those (see
#: :meth:`BPG._vals_columns`; on Adult, none), which the release of a dirty record or a counterfeit reads back
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
    uid TEXT NOT NULL,           -- unique (see _new_uids)
    current INTEGER NOT NULL,    -- 1 for the latest version of an identifier
    counterfeit INTEGER NOT NULL,
    sensitive TEXT NOT NULL,     -- the composite sensitive value
    codes BLOB NOT NULL,         -- leaf codes of the published quasi-identifiers (int32, little-endian)
    vals TEXT NOT NULL           -- raw values of the attributes listed in meta 'vals_columns', joined by U+001F
)""")
#: rows per INSERT statement of a bulk insert (at most 9 parameters a row, far below SQLite's limit)
_BATCH = 100


def _connect(path: Path, *, new: bool = False) -> sqlite3.Connection:
    """A connection in WAL mode with ``synchronous=NORMAL`` (a commit survives the process; the WAL is synced at
    checkpoints).  A ``new`` file is empty when it is switched to WAL: that switch, a rollback-journal transaction
    (three fsyncs, tens of milliseconds on a busy disk), is not synced, as it holds nothing to lose: the
    release's data come in the first WAL commit, with the usual durability."""
    con = sqlite3.connect(str(path), isolation_level=None)
    if new:
        con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    # no checkpoint inside a commit: the release that crossed SQLite's 1,000-page limit paid for copying
    # every earlier release's pages (release 10 of the Adult stream); each release's pages are checkpointed
    # in the background instead (:func:`_checkpoint_later`)
    con.execute("PRAGMA wal_autocheckpoint=0")
    return con


#: the background WAL checkpoint of each database this process writes (joined before its next use)
_CHECKPOINTS: dict[str, threading.Thread] = {}


def _checkpoint(path: str) -> None:
    try:
        con = sqlite3.connect(path)
        try:
            con.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            con.close()
    except sqlite3.Error:  # nothing is lost: the WAL keeps the pages until a later checkpoint copies them
        pass


def _checkpoint_later(path: Path) -> None:
    """Copy the WAL's committed pages into the database file in a thread of its own (SQLite releases the GIL),
    while the caller goes on; the next write to the database, and the process's exit, wait for it - that wait
    counts in the next release's time."""
    _await_checkpoint(path)
    thread = threading.Thread(target=_checkpoint, args=(str(path),), daemon=True)
    thread.start()
    _CHECKPOINTS[str(path)] = thread


def _await_checkpoint(path: Path) -> None:
    thread = _CHECKPOINTS.pop(str(path), None)
    if thread is not None:
        thread.join()


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
    """The problems with BPG's invariant in a database (empty when it holds): every published record has one
    neighbourhood, every neighbourhood's records exist and satisfy the principle."""
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


# ---------------------------------------------------------------------- the publisher
class BPG(PublisherBase):
    """BPG post-processing (Barbosa et al., Listing 1) over a single-release generalizer.

    Parameters
    ----------
    k : int >= 1, default 1
    l : number >= 1, default 1 (distinct l-diversity: BPG needs a monotone principle, Definition 3)
    variant : "dirty" | "no_dirty" | "counterfeits" | "one_at_a_time", default "dirty"
        The variants of section 6 (see the module docstring).
    generalizer : str, default "mondrian"
        The single-release anonymizer underneath: ``mondrian``, or any registered publisher that produces
        disjoint classes (run with the same ``k`` and ``l``).
    database : str, optional
        Where the SQLite state lives.  Default: a new temporary file at the first release, removed when the
        process exits (give ``database`` to continue the sequence in another process).  The first release
        (``state=None``) starts a new sequence and replaces an existing file at that path.

    Notes
    -----
    The returned state is ``{"database": path, "releases": n}``; giving it back (in this or another process)
    continues the sequence; giving a state whose ``releases`` is not the database's is refused.
    ``last_timings`` holds the seconds spent in the generalizer, the post-processing and the database for the
    last release.  With record tracking a counterfeit that appears for the first time is a new uid: it can
    complete a class of first-time records but not the intersection of a class with its history.
    """

    name = "bpg"
    params = {
        "k": Interval(int, 1, None),
        "l": Interval(float, 1, None),
        "l_kind": Options(("distinct", "entropy")),
        "variant": Options(VARIANTS),
        "generalizer": Text(),
        "database": Text(),
    }
    defaults = {"k": 1, "l": 1.0, "l_kind": "distinct", "variant": "dirty", "generalizer": "mondrian"}
    guarantee = "intersection"

    def check_config(self, file, key):
        c = self.config
        if c["k"] <= 1 and c["l"] <= 1:
            raise InputError(f"{self.name} needs k >= 2 or l > 1", file=file, key=key)
        if c["l_kind"] != "distinct" and c["l"] > 1:
            raise InputError(f"{self.name} needs a monotone principle (Definition 3 of Barbosa et al.); "
                             f"entropy l-diversity is not", file=file, key=f"{key}.l_kind" if key else "l_kind")
        if c["generalizer"] != "mondrian":
            from publishers import PUBLISHERS

            if c["generalizer"] not in PUBLISHERS or c["generalizer"] == self.name:
                raise InputError(f"The 'generalizer' parameter of {self.name} must be a registered single-release "
                                 f"publisher. Got {c['generalizer']!r}.", file=file,
                                 key=f"{key}.generalizer" if key else "generalizer")
        self.last_timings: dict[str, float] = {}

    @property
    def principle(self) -> Principle:
        return Principle(k=self.config["k"], l=self.config["l"], l_kind="distinct")

    # ------------------------------------------------------------------ publish
    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        t_start = time.perf_counter()
        schema = snapshot.schema
        principle = self.principle
        attributes = self.published_attributes(snapshot, attributes, need_sensitive=principle.needs_sensitive,
                                               reason=f" with l = {principle.l:g}")
        quasi = [n for n in attributes if schema[n].is_quasi]
        vals_columns = self._vals_columns(schema, attributes)
        con, path, n, meta = self._open(state, attributes, vals_columns, rng)
        keep = False
        try:
            cached = _CACHE.pop(str(path), None)
            if cached is not None and cached[0] == meta.get("token"):
                db = cached[1]
            else:
                db = _load(con)
            t_db = time.perf_counter() - t_start
            token = rng.bytes(8).hex()
            result, t_gen, t_db_write, new_db = self._publish(con, db, meta, snapshot, attributes, quasi,
                                                              vals_columns, principle, n, rng, token)
            t_db += t_db_write
            _CACHE[str(path)] = (token, new_db)
            keep = True
        finally:
            if keep:  # stays open for the next release of this process (WAL: other processes may read it)
                _OPEN[str(path)] = con
                _checkpoint_later(path)
            else:
                _OPEN.pop(str(path), None)
                con.close()
        total = time.perf_counter() - t_start
        t_enc = getattr(self, "_t_encode", 0.0)
        self.last_timings = {"total": total, "encoding": t_enc, "generalizer": t_gen, "database": t_db,
                             "post_processing": total - t_gen - t_db - t_enc}
        return replace(result, state={"database": str(path), "releases": n})

    def _open(self, state: Mapping | None, attributes: Sequence[str], vals_columns: list[str],
              rng: np.random.Generator):
        """Open the database and check it continues ``state``, or create it (at the first release): its tables
        and meta are then made in a transaction left open, committed with the release by :meth:`_write`."""
        c = self.config
        if state:
            if "database" not in state or "releases" not in state:
                raise InputError(f"the state of {self.name} needs 'database' and 'releases'", key="state")
            path = Path(state["database"])
            if not path.is_file():
                raise InputError("BPG database not found", file=str(path), key="state.database")
            _await_checkpoint(path)
            con = _OPEN.pop(str(path), None) or _connect(path)
            try:
                meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            except sqlite3.DatabaseError:
                con.close()
                raise InputError("not a BPG database", file=str(path)) from None
            if int(meta.get("releases", -1)) != int(state["releases"]):
                con.close()
                raise InputError(f"the state is at release {state['releases']} but the database at release "
                                 f"{meta.get('releases')}", file=str(path), key="state.releases")
            want = self._meta_fingerprint(attributes, vals_columns)
            for k, v in want.items():
                if meta.get(k) != v:
                    con.close()
                    raise InputError(f"the database was made with {k} = {meta.get(k)}, not {v}", file=str(path),
                                     key=k)
            return con, path, int(meta["releases"]) + 1, meta
        if c.get("database"):
            path = Path(c["database"])
            path.parent.mkdir(parents=True, exist_ok=True)
            _await_checkpoint(path)
            old = _OPEN.pop(str(path), None)
            if old is not None:
                old.close()
            _CACHE.pop(str(path), None)
            for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                if p.exists():
                    p.unlink()
        else:
            fd, name = tempfile.mkstemp(prefix="bpg-", suffix=".sqlite")
            os.close(fd)
            os.unlink(name)
            path = Path(name)
            _TEMPORARY.add(str(path))
        con = _connect(path, new=True)
        con.execute("BEGIN")
        for ddl in _DDL:
            con.execute(ddl)
        meta = self._meta_fingerprint(attributes, vals_columns)
        meta.update({"releases": "0", "salt": rng.bytes(16).hex()})
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        return con, path, 1, meta

    def _meta_fingerprint(self, attributes: Sequence[str], vals_columns: list[str]) -> dict[str, str]:
        c = self.config
        return {"schema_version": SCHEMA_VERSION, "attributes": json.dumps(list(attributes)),
                "vals_columns": json.dumps(vals_columns),
                "principle": json.dumps({"k": c["k"], "l": c["l"], "l_kind": "distinct"}, sort_keys=True),
                "variant": c["variant"], "generalizer": c["generalizer"]}

    @staticmethod
    def _vals_columns(schema, attributes: Sequence[str]) -> list[str]:
        """The published attributes whose raw values a release takes from the rows: those neither quasi-identifier
        nor sensitive, and the sensitive ones too when the release's sensitive value is not the schema's composite
        (only some sensitive attributes are published).  The quasi-identifiers come from the leaf codes and the
        sensitive value from the composite, so the stored ``vals`` hold only these columns."""
        sens = [a for a in attributes if schema[a].is_sensitive]
        composite = sens == list(schema.sensitive)
        return [a for a in attributes if not schema[a].is_quasi and not (schema[a].is_sensitive and composite)]

    # ------------------------------------------------------------------ one release
    def _publish(self, con, db: dict, meta: dict, snapshot: Table, attributes, quasi, vals_columns: list[str],
                 principle: Principle, n: int, rng: np.random.Generator, token: str):
        schema = snapshot.schema
        variant = self.config["variant"]
        salt = meta["salt"]
        attrs = list(attributes)
        all_q = list(schema.quasi)
        qcols = [all_q.index(q) for q in quasi]
        t0 = time.perf_counter()
        qi_snap = snapshot.qi_codes[:, qcols].astype(np.int32)  # the snapshot's encoding: any publisher's first step
        self._t_encode = time.perf_counter() - t0

        # -- 1. the universe: stored records, plus new records and new versions of changed ones
        keys = db["key"]
        rid = db["rid"]
        current = db["current"].copy()
        n_old = len(keys)
        snap_ids = np.array([str(x) for x in snapshot.ids.tolist()], dtype=object)
        # the snapshot matched to the stored records: identifier -> position of its current (non-counterfeit)
        # version, a hash map kept with the in-memory copy of the database (no index rebuilt per release)
        rid_pos: dict = db["rid_pos"]
        get = rid_pos.get
        where = np.fromiter(map(get, snap_ids.tolist(), itertools.repeat(-1)), dtype=np.int64, count=len(snap_ids))
        known = where >= 0
        snap_pos = np.full(len(snap_ids), -1, dtype=np.int64)  # universe position of each snapshot row
        sens_snap = snapshot.sensitive if list(schema.sensitive) == [a for a in attrs if schema[a].is_sensitive] \
            else composite_sensitive(snapshot.frame, [a for a in attrs if schema[a].is_sensitive])
        sens_snap = np.asarray(sens_snap, dtype=object)
        if known.any():
            kpos = where[known]
            # same QI leaf codes, same sensitive value, and the same raw values of the vals_columns
            same = (db["codes"].reshape(-1, len(quasi))[kpos] == qi_snap[known]).all(axis=1) & \
                (db["sensitive"][kpos] == sens_snap[known])
            if vals_columns:
                stored = db["vals"].texts_at(kpos)
                mine = np.array(_join_columns(snapshot.frame[vals_columns].to_numpy(dtype=object)[known]),
                                dtype=object)
                same &= mine == stored
            idx_known = np.flatnonzero(known)
            snap_pos[idx_known[same]] = kpos[same]
            changed = kpos[~same]
            current[changed] = False  # a new version replaces them (section 4: updates = deletion + insertion)
            version_of = dict(zip(rid[changed].tolist(), (db["version"][changed] + 1).tolist()))
        else:
            version_of = {}
        fresh = np.flatnonzero(snap_pos < 0)
        next_key = int(keys.max()) + 1 if len(keys) else 1
        new_keys = np.arange(next_key, next_key + len(fresh), dtype=np.int64)
        new_rid = snap_ids[fresh]
        new_version = np.array([version_of.get(r, 1) for r in new_rid.tolist()] if version_of else
                               np.ones(len(fresh)), dtype=np.int64)
        snap_pos[fresh] = n_old + np.arange(len(fresh))
        U = {
            "key": np.concatenate([keys, new_keys]),
            "rid": np.concatenate([rid, new_rid.astype(object)]),
            "version": np.concatenate([db["version"], new_version]),
            "nbh": np.concatenate([db["nbh"], np.full(len(fresh), -1, dtype=np.int64)]),
            "current": np.concatenate([current, np.ones(len(fresh), dtype=bool)]),
            "fake": np.concatenate([db["counterfeit"], np.zeros(len(fresh), dtype=bool)]),
            "sens": np.concatenate([db["sensitive"], sens_snap[fresh]]),
            "codes": np.vstack([db["codes"].reshape(-1, len(quasi)), qi_snap[fresh]]),
        }
        # the stored text of every new record (snapshot rows now, counterfeits below), in position order
        new_texts = _join_columns(snapshot.frame[vals_columns].to_numpy(dtype=object)[fresh]) if vals_columns \
            else [""] * len(fresh)
        vals_of_new: dict[int, list[str]] = {}  # the raw vals_columns of the counterfeits, by key

        # sensitive codes over the universe (the principle only compares values)
        sens_codes, sens_values = pd.factorize(U["sens"], sort=True)
        sens_codes = sens_codes.astype(np.int64)
        n_values = max(len(sens_values), 1)

        k_min, l_min = principle.k, principle.l

        def ok(idx: np.ndarray) -> bool:
            """P(X) of a set of universe positions; the empty set is valid (nothing is exposed)."""
            if len(idx) == 0:
                return True
            if len(idx) < k_min:
                return False
            return l_min <= 1 or len(set(sens_codes[idx].tolist())) >= l_min

        nbh_releases: dict[int, str] = db["nbh_releases"]
        nbh_lo: dict[int, list] = db["nbh_lo"]
        nbh_hi: dict[int, list] = db["nbh_hi"]

        # -- 2. generalize each signature group of the snapshot (the signature is a QI never generalized)
        t_gen = 0.0
        # the snapshot's rows grouped by signature, groups in signature (text) order, rows in snapshot order:
        # signatures are ranked once per neighbourhood, then the rows sorted by rank
        snap_nbh = U["nbh"][snap_pos]
        nb_present, nb_inv = np.unique(snap_nbh, return_inverse=True)
        sig_of_nb = [nbh_releases.get(x, "") for x in nb_present.tolist()]
        sig_texts = sorted(set(sig_of_nb))
        rank = {t: i for i, t in enumerate(sig_texts)}
        sig_code = np.array([rank[t] for t in sig_of_nb], dtype=np.int64)[nb_inv.reshape(-1)] if len(snap_nbh) \
            else np.zeros(0, dtype=np.int64)
        order = np.argsort(sig_code, kind="stable")
        code_sorted = sig_code[order]
        bounds = np.flatnonzero(np.r_[True, code_sorted[1:] != code_sorted[:-1]]) if len(order) else \
            np.zeros(0, int)
        groups = np.split(order, bounds[1:]) if len(order) else []
        classes: list[np.ndarray] = []  # universe positions
        fakes_vals: list[list[str]] = []
        fake_qi: list[np.ndarray] = []
        fake_sens: list[str] = []
        for g in groups:
            g = np.sort(g)
            pos = snap_pos[g]
            codes_g = qi_snap[g]
            if not ok(pos):
                extra = None
                if variant == "counterfeits" and sig_texts[sig_code[g[0]]] == "" and len(g):
                    sens_names = [a for a in attrs if schema[a].is_sensitive]
                    domain = [str(v) for v in sens_values]
                    if len(sens_names) == 1:  # every value of the sensitive attribute's hierarchy may be faked
                        domain += [v for v in schema[sens_names[0]].hierarchy.leaves if v not in set(domain)]
                    extra = self._counterfeits(pos, sens_codes, sens_values, domain, principle, rng)
                if extra is not None:
                    tmpl = rng.choice(len(g), size=len(extra), replace=True)
                    first_fake = len(U["key"]) + len(fake_sens)
                    for t, v in zip(tmpl.tolist(), extra):
                        row = [str(x) for x in snapshot.frame[attrs].iloc[int(g[t])].tolist()]
                        row = self._with_sensitive(schema, attrs, row, v)
                        fakes_vals.append([row[attrs.index(a)] for a in vals_columns])
                        fake_qi.append(codes_g[t])
                        fake_sens.append(v)
                    pos = np.concatenate([pos, first_fake + np.arange(len(extra))])
                    codes_g = np.vstack([codes_g, codes_g[tmpl]])
                    group_values = [str(sens_values[c]) for c in sens_codes[snap_pos[g]]] + list(extra)
                    sc = pd.factorize(np.asarray(group_values, dtype=object))[0].astype(np.int64)
                else:
                    continue  # the part cannot satisfy the principle: not published
            else:
                sc = sens_codes[pos]
            t0 = time.perf_counter()
            parts = self._generalize(snapshot, attrs, quasi, codes_g, sc, pos, g, principle, rng)
            t_gen += time.perf_counter() - t0
            classes.extend(pos[p] for p in parts)
        if fake_sens:  # counterfeits join the universe (new sensitive values get codes beyond the factorization)
            n_f = len(fake_sens)
            start = int(U["key"].max()) + 1 if len(U["key"]) else 1
            fkeys = np.arange(start, start + n_f, dtype=np.int64)
            for kk, row in zip(fkeys.tolist(), fakes_vals):
                vals_of_new[kk] = row
            new_texts.extend(SEP.join(row) for row in fakes_vals)
            U["key"] = np.concatenate([U["key"], fkeys])
            U["rid"] = np.concatenate([U["rid"], np.full(n_f, None, dtype=object)])
            U["version"] = np.concatenate([U["version"], np.ones(n_f, dtype=np.int64)])
            U["nbh"] = np.concatenate([U["nbh"], np.full(n_f, -1, dtype=np.int64)])
            U["current"] = np.concatenate([U["current"], np.zeros(n_f, dtype=bool)])
            U["fake"] = np.concatenate([U["fake"], np.ones(n_f, dtype=bool)])
            U["sens"] = np.concatenate([U["sens"], np.asarray(fake_sens, dtype=object)])
            U["codes"] = np.vstack([U["codes"], np.asarray(fake_qi, dtype=np.int32).reshape(n_f, len(quasi))])
            sens_codes, sens_values = pd.factorize(U["sens"], sort=True)
            sens_codes = sens_codes.astype(np.int64)
            n_values = max(len(sens_values), 1)

        # -- 3. Listing 1: the tests of every class against the stored neighbourhoods
        size_u = len(U["key"])
        nbh = U["nbh"]
        pub = np.zeros(size_u, dtype=bool)
        for c in classes:
            pub[c] = True  # lines 5-6: sigma(t) := sigma(t) || 1 for the records of R1
        has = np.flatnonzero(nbh >= 0)
        nb_sorted = has[np.argsort(nbh[has], kind="stable")]
        nb_ids, nb_start = np.unique(nbh[nb_sorted], return_index=True)
        nb_members = dict(zip(nb_ids.tolist(), np.split(nb_sorted, nb_start[1:]) if len(nb_start) else []))
        nb_sizes = np.diff(np.r_[nb_start, len(nb_sorted)]).astype(np.int64)
        v_idx = np.full(size_u, -1, dtype=np.int64)  # the index in nb_ids of every record's neighbourhood
        v_idx[nb_sorted] = np.repeat(np.arange(len(nb_ids), dtype=np.int64), nb_sizes)
        qi_u = U["codes"]
        accepted: list[np.ndarray] = []
        pairs = self._pair_tests(classes, v_idx, nb_ids, nb_sizes, sens_codes, k_min, l_min)
        if pairs["masks"] and variant != "one_at_a_time":
            accepted = self._listing1(classes, pairs, nb_members, pub, sens_codes, k_min, l_min, variant)
        else:  # the tests on the records themselves (one at a time needs the records' regions)
            passes = pairs["passes"]
            mark = np.zeros(size_u, dtype=bool)  # scratch membership mask (cheaper than np.isin on small sets)
            for ci, c in enumerate(classes):
                e1 = np.sort(c)
                if passes[ci]:  # every test of lines 12, 15 and 20 holds: nothing to change
                    accepted.append(e1)
                    continue
                reject = False
                for v0 in np.unique(nbh[e1]).tolist():
                    if v0 < 0:
                        continue
                    e0 = nb_members[v0]
                    mark[e0] = True
                    in_e0 = mark[e1]
                    mark[e0] = False
                    if not ok(e1[~in_e0]):  # line 12: P(E1 - E0)
                        reject = True
                        break
                    mark[e1] = True
                    in_e1 = mark[e0]
                    mark[e1] = False
                    if not ok(e0[~in_e1]):  # line 15: P(E0 - E1)
                        if variant == "no_dirty":
                            reject = True
                            break
                        notpub = ~pub[e0]
                        e0m = e0[notpub]
                        e1 = np.union1d(e1, e0m)
                        pub[e0m] = True
                        in_e1 = in_e1 | notpub
                    if not ok(e0[in_e1]):  # line 20: P(E0 n E1)
                        if variant == "no_dirty":
                            reject = True
                            break
                        e0m = e0[~pub[e0]]
                        if not ok(np.concatenate([e0[in_e1], e0m])):  # line 22
                            reject = True
                            break
                        if variant == "one_at_a_time":
                            e0m = self._nearest_prefix(e0[in_e1], e0m, e1, qi_u, ok)
                        e1 = np.union1d(e1, e0m)
                        pub[e0m] = True
                if reject:  # lines 30-33: sigma' || 1 := sigma(t); sigma(t) := sigma' || 0
                    pub[e1] = False
                    continue
                accepted.append(e1)

        # -- 4. the invariant: what a neighbourhood leaves unpublished must be valid (or empty)
        accepted = self._settle_leftovers(accepted, pub, nb_members, ok, variant, v_idx, nb_ids, sens_codes, k_min,
                                          l_min)

        # -- 5. the release: every accepted class as the closure of its records; every new record (snapshot
        # records, then counterfeits, in position order) gets its uid
        t_db = 0.0
        new_uids, new_uid_set = _new_uids(salt, n, len(U["key"]) - n_old, db["uid_set"])
        U["uid"] = np.concatenate([db["uid"], np.array(new_uids, dtype=object)])
        published = np.concatenate(accepted) if accepted else np.zeros(0, dtype=np.int64)
        if vals_columns:  # raw columns only where the release publishes them as they are
            frame = self._frame(published, snap_pos, snapshot, vals_columns, db, vals_of_new, U, n_old)
            frame.index = pd.Index(published, name="position")
            for name in schema.published:
                if name not in frame.columns:
                    frame[name] = None
            frame = frame[list(schema.published)]
        else:  # the release is made from the codes and sensitive values below: the rows need no columns
            frame = pd.DataFrame(index=pd.Index(published, name="position"))
        combined = Table(schema, frame)
        sizes = np.array([len(e) for e in accepted], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else sizes
        partitions = [np.arange(a0, a0 + n0) for a0, n0 in zip(starts.tolist(), sizes.tolist())]
        codes_all = np.zeros((len(published), len(all_q)), dtype=np.int32)
        codes_all[:, qcols] = qi_u[published]
        combined.__dict__["qi_codes"] = codes_all
        combined.__dict__["sensitive"] = U["sens"][published]
        release, truth = release_from_partition(combined, attributes, partitions, rng)
        pos_of_key = truth.person.astype(np.int64)
        uid = U["uid"][pos_of_key].astype(object)
        fake = U["fake"][pos_of_key]
        person = np.where(fake, None, U["rid"][pos_of_key]).astype(object)
        counterfeits = None
        if fake.any():
            counts = pd.Series(release.group[fake]).value_counts().sort_index()
            counterfeits = {int(g): int(c) for g, c in counts.items()}
        release = replace(release, uid=uid, counterfeits=counterfeits)
        truth = ReleaseTruth(person=person, counterfeit=fake.copy())

        # -- 6. the new neighbourhoods (lines 34-35) and the database
        t0 = time.perf_counter()
        cls_lo, cls_hi = self._class_regions(release, truth, pos_of_key, accepted, U)
        new_nbh = U["nbh"].copy()
        next_id = (max(nbh_releases) + 1) if nbh_releases else 1
        # one new neighbourhood per (accepted class, old neighbourhood of its records): classes in order, old
        # neighbourhoods ascending (-1, first-time records, first), records in class order
        inserts_nbh = []
        new_rel: dict[int, str] = {}
        new_lo: dict[int, list] = {}
        new_hi: dict[int, list] = {}
        if accepted:
            sizes_acc = np.fromiter((len(e) for e in accepted), dtype=np.int64, count=len(accepted))
            rec = np.concatenate(accepted).astype(np.int64)
            cid = np.repeat(np.arange(len(accepted), dtype=np.int64), sizes_acc)
            olds = nbh[rec]
            span = int(olds.max()) + 2 if len(olds) else 1
            pair = cid * span + (olds + 1)
            order = np.argsort(pair, kind="stable")
            rec_o, pair_o = rec[order], pair[order]
            starts = np.flatnonzero(np.r_[True, pair_o[1:] != pair_o[:-1]]) if len(pair_o) else np.zeros(0, int)
            counts = np.diff(np.r_[starts, len(pair_o)])
            p_c, p_v = pair_o[starts] // span, pair_o[starts] % span - 1
            ids = next_id + np.arange(len(starts), dtype=np.int64)
            new_nbh[rec_o] = np.repeat(ids, counts)
            lo, hi = cls_lo[p_c].astype(np.int64), cls_hi[p_c].astype(np.int64)
            was = p_v >= 0
            if was.any():
                q = lo.shape[1]
                w_v = p_v[was].tolist()
                lo[was] = np.maximum(np.array([nbh_lo[v] for v in w_v], dtype=np.int64).reshape(len(w_v), q),
                                     lo[was])
                hi[was] = np.minimum(np.array([nbh_hi[v] for v in w_v], dtype=np.int64).reshape(len(w_v), q),
                                     hi[was])
            blob = U["key"][rec_o].astype("<i8").tobytes()  # the members of every new neighbourhood
            bounds_b = (np.r_[starts, len(pair_o)] * 8).tolist()
            for j, (nid, v0, l_row, h_row) in enumerate(zip(ids.tolist(), p_v.tolist(), lo.tolist(), hi.tolist())):
                rel = nbh_releases[v0] + f",{n}" if v0 >= 0 else str(n)
                inserts_nbh.append((nid, rel, _json_ints(l_row), _json_ints(h_row), int(counts[j]),
                                    blob[bounds_b[j]:bounds_b[j + 1]]))
                new_rel[nid], new_lo[nid], new_hi[nid] = rel, l_row, h_row
        next_id += len(inserts_nbh)
        # the old neighbourhoods that lost records: shrunk (new member list) or emptied (deleted)
        moved = np.flatnonzero(new_nbh[:n_old] != nbh[:n_old])
        touched = np.unique(nbh[moved]) if len(moved) else np.zeros(0, dtype=np.int64)
        touched = touched[touched >= 0]
        gone: list[int] = []
        shrunk: list[tuple] = []
        if len(touched):
            left = np.flatnonzero(np.isin(new_nbh, touched))
            left = left[np.argsort(new_nbh[left], kind="stable")]
            k_ids, k_start = np.unique(new_nbh[left], return_index=True)
            kept = dict(zip(k_ids.tolist(), np.split(left, k_start[1:]) if len(k_start) else []))
            keys_u = U["key"]
            gone = [int(t) for t in touched.tolist() if t not in kept]
            shrunk = [(len(kept[t]), keys_u[kept[t]].astype("<i8").tobytes(), int(t)) for t in touched.tolist()
                      if t in kept]
        self._write(con, U, n_old, inserts_nbh=inserts_nbh, gone=gone, shrunk=shrunk,
                    current_before=db["current"], texts=new_texts, n=n, token=token)
        # the in-memory copy of the database after this release (the old copy is not used again: the dicts
        # are updated in place)
        for t in gone:
            del nbh_releases[t], nbh_lo[t], nbh_hi[t]
        nbh_releases.update(new_rel)
        nbh_lo.update(new_lo)
        nbh_hi.update(new_hi)
        rid_pos.update(zip(new_rid.tolist(), range(n_old, n_old + len(fresh))))
        uid_set = db["uid_set"]
        if uid_set:
            uid_set |= new_uid_set
        else:
            uid_set = new_uid_set
        new_db = {"key": U["key"], "rid": U["rid"], "version": U["version"], "uid": U["uid"], "nbh": new_nbh,
                  "codes": U["codes"],
                  "current": U["current"], "counterfeit": U["fake"], "sensitive": U["sens"],
                  "vals": _Joined(np.concatenate([db["vals"].texts, np.array(new_texts, dtype=object)])),
                  "nbh_releases": nbh_releases, "nbh_lo": nbh_lo, "nbh_hi": nbh_hi, "rid_pos": rid_pos,
                  "uid_set": uid_set}
        t_db += time.perf_counter() - t0
        return PublishResult(release=release, truth=truth, counterfeit_rows=int(fake.sum())), t_gen, t_db, new_db

    # ------------------------------------------------------------------ helpers
    def _generalize(self, snapshot: Table, attrs, quasi, codes: np.ndarray, sens_codes: np.ndarray,
                    pos: np.ndarray, g: np.ndarray, principle: Principle, rng) -> list[np.ndarray]:
        """Classes of one signature group, as index arrays into ``pos``."""
        schema = snapshot.schema
        name = self.config["generalizer"]
        _, sc = np.unique(sens_codes, return_inverse=True)
        if name == "mondrian" or len(pos) != len(g):
            return mondrian_partition(codes, sc.reshape(-1), [schema[q] for q in quasi], principle)
        from publishers import PUBLISHERS

        pub = PUBLISHERS[name](k=self.config["k"], **({"l": self.config["l"]} if self.config["l"] > 1 else {}))
        sub = Table(schema, snapshot.frame.iloc[g])
        res = pub.publish(sub, attributes=attrs, state=None, rng=rng)
        where = pd.Index(sub.ids.astype(str)).get_indexer(res.truth.person.astype(str))
        cls = res.release.classes
        return [where[cls == c] for c in range(res.release.n_classes)]

    @staticmethod
    def _pair_tests(classes: list[np.ndarray], v_idx: np.ndarray, nb_ids: np.ndarray, nb_sizes: np.ndarray,
                    sens_codes: np.ndarray, k: int, l: float) -> dict:
        """The tests of Listing 1 for every class ``E1`` and every stored neighbourhood ``E0`` of its records
        (a *pair*), on ``E1`` as the generalizer made it, all at once from counts.

        ``P`` is k-anonymity and distinct l-diversity: ``P(X)`` iff ``X`` is empty, or ``|X| >= k`` and ``X``
        holds ``l`` distinct values.  Returns ``passes`` (one bool per class: every test of lines 12, 15 and 20
        holds for every pair, so the class is published unchanged and changes nothing) and, per pair in class
        order then neighbourhood order: the class ``c``, the neighbourhood id ``nb``, ``|E0 n E1|`` (``cnt``),
        the tests ``t12``, ``t15``, ``t20`` and, when there are at most 62 sensitive values (``masks``), the
        value bitmasks of ``E0 n E1`` (``mask_a``) and of ``E1 - E0`` (``mask_e1``)."""
        n_cls = len(classes)
        out = {"passes": np.ones(n_cls, dtype=bool), "masks": False, "first": np.zeros(n_cls, dtype=np.int64),
               "last": np.zeros(n_cls, dtype=np.int64), "sizes": [len(c) for c in classes]}
        if not n_cls or not len(nb_ids):
            out["masks"] = True
            return out
        n_s = int(sens_codes.max()) + 1 if len(sens_codes) else 1
        if float(n_cls) * len(nb_ids) * n_s >= 2.0 ** 62:  # keys would overflow: the loop tests every class
            out["passes"][:] = False
            return out
        sizes = np.asarray(out["sizes"], dtype=np.int64)
        rec = np.concatenate(classes).astype(np.int64)
        cid = np.repeat(np.arange(n_cls, dtype=np.int64), sizes)
        s = sens_codes[rec]

        def valid(size, distinct):
            return (size == 0) | ((size >= k) & ((l <= 1) | (distinct >= l)))

        # (class, value) counts; (neighbourhood, value) counts over the whole universe
        cs_count, d1 = _value_counts(cid, s, n_cls, n_s)
        n_v = len(nb_ids)
        has = np.flatnonzero(v_idx >= 0)
        ns_count, d0 = _value_counts(v_idx[has], sens_codes[has], n_v, n_s)
        n0 = nb_sizes
        # (class, neighbourhood, value) counts of the classes' records that have a neighbourhood
        v_rec = v_idx[rec]
        inb = v_rec >= 0
        if not inb.any():
            out["masks"] = True
            return out
        t_keys, t_cnt = np.unique((cid[inb] * n_v + v_rec[inb]) * n_s + s[inb], return_counts=True)
        t_cv, t_s = t_keys // n_s, t_keys % n_s
        t_c, t_v = t_cv // n_v, t_cv % n_v
        # a value is missing from E1 - E0 (E0 - E1) when all its records of E1 (E0) are in E0 n E1
        all_of_c = t_cnt == cs_count(t_c, t_s)
        all_of_v = t_cnt == ns_count(t_v, t_s)
        p_keys, p_start = np.unique(t_cv, return_index=True)
        p_cnt = np.add.reduceat(t_cnt, p_start)          # |E0 n E1|
        p_dist = np.diff(np.r_[p_start, len(t_cv)])       # its distinct values
        p_c, p_v = p_keys // n_v, p_keys % n_v
        t12 = valid(sizes[p_c] - p_cnt, d1[p_c] - np.add.reduceat(all_of_c.astype(np.int64), p_start))
        t15 = valid(n0[p_v] - p_cnt, d0[p_v] - np.add.reduceat(all_of_v.astype(np.int64), p_start))
        t20 = valid(p_cnt, p_dist)
        out["passes"][p_c[~(t12 & t15 & t20)]] = False
        out["first"] = np.searchsorted(p_c, np.arange(n_cls))
        out["last"] = np.searchsorted(p_c, np.arange(n_cls), side="right")
        out.update(c=p_c, nb=nb_ids[p_v].tolist(), cnt=p_cnt.tolist(), t12=t12.tolist(), t15=t15.tolist(),
                   t20=t20.tolist())
        if n_s <= 62:
            bit = np.left_shift(np.int64(1), t_s)
            present = np.zeros((n_cls, n_s), dtype=np.int64)
            present[cid, s] = 1
            cls_mask = present @ np.left_shift(np.int64(1), np.arange(n_s, dtype=np.int64))
            gone_c = np.bitwise_or.reduceat(np.where(all_of_c, bit, 0), p_start)
            out.update(masks=True, mask_a=np.bitwise_or.reduceat(bit, p_start).tolist(),
                       mask_e1=(cls_mask[p_c] & ~gone_c).tolist())
        return out

    @staticmethod
    def _listing1(classes: list[np.ndarray], pairs: dict, nb_members: dict, pub: np.ndarray, sens_codes: np.ndarray,
                  k: int, l: float, variant: str) -> list[np.ndarray]:
        """Lines 7-33 of Listing 1 (variants ``dirty``, ``no_dirty``, ``counterfeits``) from the pair tests of
        :meth:`_pair_tests`: a test is recomputed (from sizes and value bitmasks) only where the sets changed.

        Within a class the records added so far come from other neighbourhoods than the current ``E0``, so
        ``E0 n E1`` and ``E0 - E1`` are those of the class as generalized, and ``E1 - E0`` is that set plus the
        added records; ``E0^-`` (``E0``'s records not published so far) depends on the classes before."""
        first, last, sizes = pairs["first"].tolist(), pairs["last"].tolist(), pairs["sizes"]
        passes = pairs["passes"].tolist()
        bits = None if all(passes) else np.left_shift(np.int64(1), sens_codes)  # masks: at most 62 values
        nb, cnt, t12, t15, t20 = (pairs.get(x) for x in ("nb", "cnt", "t12", "t15", "t20"))
        mask_a, mask_e1 = pairs.get("mask_a"), pairs.get("mask_e1")
        no_dirty = variant == "no_dirty"

        def valid(size: int, mask: int) -> bool:
            return size == 0 or (size >= k and (l <= 1 or mask.bit_count() >= l))

        accepted = []
        for ci, c in enumerate(classes):
            e1 = np.sort(c)
            if passes[ci]:
                accepted.append(e1)
                continue
            added: list[np.ndarray] = []  # records added to E1 (from E0^- of its neighbourhoods)
            add_size, add_mask = 0, 0
            reject = False
            for j in range(first[ci], last[ci]):
                # line 12: P(E1 - E0)
                if not (valid(sizes[ci] - cnt[j] + add_size, mask_e1[j] | add_mask) if add_size else t12[j]):
                    reject = True
                    break
                a_size, a_mask = cnt[j], mask_a[j]  # E0 n E1
                if t15[j]:
                    ok20 = t20[j]
                else:  # line 15: P(E0 - E1) fails: add E0^- to E1
                    if no_dirty:
                        reject = True
                        break
                    e0 = nb_members[nb[j]]
                    e0m = e0[~pub[e0]]
                    if len(e0m):
                        pub[e0m] = True
                        m = int(np.bitwise_or.reduce(bits[e0m]))
                        added.append(e0m)
                        add_size += len(e0m)
                        add_mask |= m
                        a_size += len(e0m)
                        a_mask |= m
                    ok20 = valid(a_size, a_mask)
                if not ok20:  # line 20: P(E0 n E1) fails
                    if no_dirty:
                        reject = True
                        break
                    e0 = nb_members[nb[j]]
                    e0m = e0[~pub[e0]]
                    m = int(np.bitwise_or.reduce(bits[e0m])) if len(e0m) else 0
                    if not valid(a_size + len(e0m), a_mask | m):  # line 22
                        reject = True
                        break
                    if len(e0m):
                        pub[e0m] = True
                        added.append(e0m)
                        add_size += len(e0m)
                        add_mask |= m
            if added:
                e1 = np.sort(np.concatenate([e1] + added))
            if reject:  # lines 30-33: sigma' || 1 := sigma(t); sigma(t) := sigma' || 0
                pub[e1] = False
                continue
            accepted.append(e1)
        return accepted

    @staticmethod
    def _counterfeits(pos, sens_codes, sens_values, domain: list[str], principle: Principle, rng
                      ) -> list[str] | None:
        """Sensitive values of the counterfeits that make a group of first-time records valid: values it lacks
        first (for l, from ``domain``), then copies of its own values (for k); ``None`` when the domain has too
        few values."""
        present = {str(sens_values[c]) for c in sens_codes[pos].tolist()}
        missing = [v for v in domain if v not in present]
        need_l = max(0, int(np.ceil(principle.l)) - len(present)) if principle.l > 1 else 0
        if need_l > len(missing):
            return None
        out = missing[:need_l]
        own = [str(sens_values[c]) for c in sens_codes[pos]]
        while len(pos) + len(out) < principle.k:
            out.append(own[int(rng.integers(len(own)))])
        return out

    @staticmethod
    def _with_sensitive(schema, attrs, row: list[str], value: str) -> list[str]:
        sens = [a for a in attrs if schema[a].is_sensitive]
        parts = value.split(" | ") if len(sens) > 1 else [value]
        row = list(row)
        for a, v in zip(sens, parts):
            row[attrs.index(a)] = v
        return row

    @staticmethod
    def _nearest_prefix(cell: np.ndarray, candidates: np.ndarray, e1: np.ndarray, qi: np.ndarray, ok) -> np.ndarray:
        """The fewest records of ``candidates`` (nearest to ``E1``'s region first) that make ``cell`` valid and
        leave a valid (or empty) remainder."""
        if not len(candidates):
            return candidates
        box = qi[e1]
        lo, hi = box.min(axis=0), box.max(axis=0)
        pts = qi[candidates]
        dist = (np.maximum(lo - pts, 0) + np.maximum(pts - hi, 0)).sum(axis=1)
        order = candidates[np.argsort(dist, kind="stable")]
        for m in range(1, len(order) + 1):
            if ok(np.concatenate([cell, order[:m]])) and ok(order[m:]):
                return order[:m]
        return order

    @staticmethod
    def _settle_leftovers(accepted: list[np.ndarray], pub: np.ndarray, nb_members: dict, ok, variant: str,
                          v_idx: np.ndarray, nb_ids: np.ndarray, sens_codes: np.ndarray, k: int, l: float
                          ) -> list[np.ndarray]:
        """Make every neighbourhood's unpublished remainder valid or empty: add it to a published class that
        holds records of the neighbourhood (dirty records), or reject every such class (``no_dirty``).

        The neighbourhoods are visited in id order, as in a loop over all of them, but only those whose
        remainder is invalid (found for all at once from counts) are looked at.  Adding a remainder changes
        only its own neighbourhood; rejecting classes (``no_dirty``) can change any, so the list is then made
        again for the neighbourhoods after the current one."""
        alive = [True] * len(accepted)
        owner = np.full(len(pub), -1, dtype=np.int64)
        for ci, e in enumerate(accepted):
            owner[e] = ci
        has = np.flatnonzero(v_idx >= 0)
        v_has = v_idx[has]
        n_v = len(nb_ids)
        n_s = int(sens_codes.max()) + 1 if len(sens_codes) else 1

        def invalid_remainders() -> list[int]:
            un = ~pub[has]
            v = v_has[un]
            size = np.bincount(v, minlength=n_v)
            bad = (size > 0) & (size < k)
            if l > 1:
                distinct = _value_counts(v, sens_codes[has[un]], n_v, n_s)[1]
                bad |= (size > 0) & (distinct < l)
            return nb_ids[bad].tolist()

        changed = True
        while changed:
            changed = False
            todo = invalid_remainders()
            i = 0
            while i < len(todo):
                v0 = todo[i]
                i += 1
                e0 = nb_members[v0]
                rest = e0[~pub[e0]]
                if not len(rest) or ok(rest):
                    continue
                holders = [int(x) for x in np.unique(owner[e0]) if x >= 0 and alive[int(x)]]
                if not holders:
                    continue  # the whole neighbourhood is unpublished: valid by the invariant
                if variant == "no_dirty":
                    for ci in holders:
                        alive[ci] = False
                        pub[accepted[ci]] = False
                        owner[accepted[ci]] = -1
                    todo, i = [x for x in invalid_remainders() if x > v0], 0
                else:
                    ci = holders[0]
                    accepted[ci] = np.union1d(accepted[ci], rest)
                    pub[rest] = True
                    owner[rest] = ci
                changed = True
        return [e for e, a in zip(accepted, alive) if a]

    @staticmethod
    def _frame(published: np.ndarray, snap_pos: np.ndarray, snapshot: Table, columns: list, db: dict,
               vals_of_new: dict, U: dict, n_old: int) -> pd.DataFrame:
        """The raw ``columns`` (:meth:`_vals_columns`) of the published positions (index: record keys as text):
        snapshot rows from the snapshot, the others (dirty records, counterfeits) from their stored values."""
        row_of_pos = np.full(len(U["key"]), -1, dtype=np.int64)
        row_of_pos[snap_pos] = np.arange(len(snap_pos))
        r = row_of_pos[published]
        in_snap = r >= 0
        parts = []
        if in_snap.any():
            f = snapshot.frame.iloc[r[in_snap]][columns].astype(object)
            f.index = pd.Index(U["key"][published[in_snap]].astype(str), name="key")
            parts.append(f)
        other = published[~in_snap]
        if len(other):
            rows = [vals_of_new[int(U["key"][p])] if p >= n_old else db["vals"][p] for p in other.tolist()]
            parts.append(pd.DataFrame(rows, columns=columns,
                                      index=pd.Index(U["key"][other].astype(str), name="key"), dtype=object))
        if not parts:
            return pd.DataFrame(columns=columns, dtype=object)
        frame = pd.concat(parts) if len(parts) > 1 else parts[0]
        return frame.loc[U["key"][published].astype(str)]

    @staticmethod
    def _class_regions(release, truth, pos_of_key, accepted, U) -> tuple[np.ndarray, np.ndarray]:
        """The published region ``nu1`` of every accepted class, in ``accepted`` order."""
        row_class = np.full(len(U["key"]), -1, dtype=np.int64)
        for ci, e in enumerate(accepted):
            row_class[e] = ci
        ci_of_row = row_class[pos_of_key]
        q = release.lo.shape[1]
        lo = np.zeros((len(accepted), q), dtype=np.int64)
        hi = np.zeros((len(accepted), q), dtype=np.int64)
        if len(ci_of_row):
            lo[ci_of_row] = release.lo
            hi[ci_of_row] = release.hi
        return lo, hi

    @staticmethod
    def _write(con, U, n_old, *, inserts_nbh, gone, shrunk, current_before, texts, n, token):
        """One transaction, only what changed: new neighbourhoods, shrunk or emptied old ones, new records,
        superseded versions, the release counter and the token.  For a new database the transaction that made its
        tables (:meth:`_open`) is still open: the first release is stored with them or not at all."""
        keys = U["key"]
        new = slice(n_old, None)
        m = len(keys) - n_old
        # the new records' rows, built column by column (identifiers and uids are text already, None for a
        # counterfeit's identifier).  A row's leaf codes are one blob, a slice of one bytearray: sqlite3 binds a
        # bytearray as it is, but looks up an adapter for every bytes object first (about 0.7 us a row, a third of
        # the first release's insert)
        codes = bytearray(np.ascontiguousarray(U["codes"][new], dtype="<i4").tobytes())
        width = len(codes) // m if m else 0
        blobs = [codes[i:i + width] for i in range(0, len(codes), width)] if width else [bytearray()] * m
        cols = [keys[new].tolist(), U["rid"][new].tolist(), U["uid"][new].tolist(), list(map(str, U["sens"][new])),
                blobs]
        # values shared by many rows are written in the statement rather than bound to every row (a bulk insert
        # costs about as much per bound value as per row): most new rows are first versions of live records
        # (version 1, current, not a counterfeit; the others, new versions and counterfeits, bind them), and
        # when no raw column is stored (see _vals_columns) every row's vals is ''
        vals = "?" if any(texts) else "''"
        if vals == "?":
            cols.append(texts)
        first = (U["version"][new] == 1) & U["current"][new] & ~U["fake"][new]
        n_first = int(first.sum())
        stale = np.flatnonzero(current_before[:n_old] & ~U["current"][:n_old])
        if not con.in_transaction:
            con.execute("BEGIN")
        try:
            if inserts_nbh:
                con.executemany("INSERT INTO neighbourhoods VALUES (?, ?, ?, ?, ?, ?)", inserts_nbh)
            if gone:
                con.executemany("DELETE FROM neighbourhoods WHERE id = ?", [(t,) for t in gone])
            if shrunk:
                con.executemany("UPDATE neighbourhoods SET size = ?, members = ? WHERE id = ?", shrunk)
            if len(stale):
                con.executemany("UPDATE records SET current = 0 WHERE key = ?", [(k,) for k in keys[stale].tolist()])
            if n_first:
                rows = zip(*cols) if n_first == m else itertools.compress(zip(*cols), first.tolist())
                _insert(con, "records", f"(?, ?, 1, ?, 1, 0, ?, ?, {vals})", rows, n_first)
            if n_first < m:
                k, r, u, sens, b, *t = cols
                rows = zip(k, r, U["version"][new].tolist(), u, U["current"][new].astype(np.int64).tolist(),
                           U["fake"][new].astype(np.int64).tolist(), sens, b, *t)
                _insert(con, "records", f"(?, ?, ?, ?, ?, ?, ?, ?, {vals})",
                        itertools.compress(rows, (~first).tolist()), m - n_first)
            con.execute("UPDATE meta SET value = ? WHERE key = 'releases'", (str(n),))
            con.execute("INSERT OR REPLACE INTO meta VALUES ('token', ?)", (token,))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise


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


def _value_counts(group: np.ndarray, value: np.ndarray, n_groups: int, n_values: int):
    """``(count, distinct)``: ``count(g, v)`` the number of rows with group ``g`` and value ``v`` (arrays),
    ``distinct`` the number of distinct values of every group (a dense table when small, else sorted keys)."""
    keys = group.astype(np.int64) * n_values + value
    if n_groups * n_values <= 1 << 22:
        dense = np.bincount(keys, minlength=n_groups * n_values)
        distinct = np.count_nonzero(dense.reshape(n_groups, n_values), axis=1)
        return (lambda g, v: dense[g * n_values + v]), distinct
    uniq, cnt = np.unique(keys, return_counts=True)
    distinct = np.bincount(uniq // n_values, minlength=n_groups)
    return (lambda g, v: cnt[np.searchsorted(uniq, g * n_values + v)]), distinct


def _join_columns(vals: np.ndarray) -> list[str]:
    """:func:`_join_rows` of a 2-d object array, column by column (no list per row: the first release joins
    every record's values at once)."""
    n_rows = vals.shape[0]
    if not n_rows or vals.ndim != 2 or not vals.shape[1]:
        return [""] * n_rows
    cols = [c.tolist() for c in vals.T]
    try:
        return list(map(SEP.join, zip(*cols)))
    except TypeError:  # a value that is not text
        return list(map(SEP.join, zip(*[list(map(str, c)) for c in cols])))


def _join_rows(rows: list[list]) -> list[str]:
    """Every row's values as text, joined by :data:`SEP` (rows of text are joined as they are)."""
    try:
        return [SEP.join(row) for row in rows]
    except TypeError:  # a value that is not text
        return [SEP.join(map(str, row)) for row in rows]


def _json_ints(values: list[int]) -> str:
    """``json.dumps`` of a list of ints (the same text, without the encoder's overhead)."""
    return "[" + ", ".join(map(str, values)) + "]"


def _new_uids(salt: str, release: int, count: int, seen: set) -> tuple[list[str], set]:
    """The uids of the ``count`` records first stored by release ``release``, in position order, and their set.

    They are the successive 8-byte words (as hex) of SHAKE-256 of the database's secret salt and the release
    number: ids that say nothing about the records or their order without the salt, made at once for every new
    record (one call, not a keyed hash per record) and the same in any process that makes this release from the
    same database.  A word equal to a stored uid or to an earlier word (a chance of about 3e-8 with a million
    records) is skipped for the next one, so uids are unique.  Stored with the records, a uid stays with its
    record for every later release."""
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


def _load(con: sqlite3.Connection) -> dict:
    """The whole database as arrays (record positions in key order)."""
    rows = con.execute("SELECT key, rid, version, uid, current, counterfeit, sensitive, codes, vals FROM records "
                       "ORDER BY key").fetchall()
    if rows:
        key, rid, version, uid, cur, fake, sens, codes, vals = zip(*rows)
    else:
        key = rid = version = uid = cur = fake = sens = codes = vals = ()
    out = {
        "key": np.asarray(key, dtype=np.int64),
        "rid": np.asarray(rid, dtype=object),
        "version": np.asarray(version, dtype=np.int64),
        "uid": np.asarray(uid, dtype=object),
        "current": np.asarray(cur, dtype=bool),
        "counterfeit": np.asarray(fake, dtype=bool),
        "sensitive": np.asarray(sens, dtype=object),
        "vals": _Joined(vals),
        "codes": np.frombuffer(b"".join(codes), dtype="<i4").astype(np.int32),
    }
    nbh = np.full(len(key), -1, dtype=np.int64)
    nb = con.execute("SELECT id, releases, lo, hi, members FROM neighbourhoods").fetchall()
    for i, _, _, _, blob in nb:
        nbh[np.searchsorted(out["key"], np.frombuffer(blob, dtype="<i8"))] = int(i)
    out["nbh"] = nbh
    live = np.flatnonzero(out["current"] & ~out["counterfeit"])
    out["rid_pos"] = dict(zip(out["rid"][live].tolist(), live.tolist()))
    out["uid_set"] = set(out["uid"].tolist())
    out["nbh_releases"] = {int(i): r for i, r, _, _, _ in nb}
    out["nbh_lo"] = {int(i): json.loads(lo) for i, _, lo, _, _ in nb}
    out["nbh_hi"] = {int(i): json.loads(hi) for i, _, _, hi, _ in nb}
    return out


#: in-process copy of each database after its last write, keyed by path and checked against the database's
#: token (a new random token is written with every release), so a database changed or restored by another
#: process is always re-read; the result never depends on whether the copy was used
_CACHE: dict[str, tuple[str, dict]] = {}


#: the open connection of each database this process writes (closed by :func:`clear_cache` or at exit)
_OPEN: dict[str, sqlite3.Connection] = {}


def clear_cache() -> None:
    """Forget the in-process copies and close the connections (the next release re-reads its database, as a
    new process would)."""
    _CACHE.clear()
    while _CHECKPOINTS:
        _, thread = _CHECKPOINTS.popitem()
        thread.join()
    while _OPEN:
        _, con = _OPEN.popitem()
        con.close()


#: databases made in the temporary directory (no ``database`` parameter): removed when the process exits
_TEMPORARY: set[str] = set()


def _at_exit() -> None:
    clear_cache()
    for name in _TEMPORARY:
        for p in (Path(name), Path(f"{name}-wal"), Path(f"{name}-shm")):
            if p.exists():
                p.unlink()


atexit.register(_at_exit)


class _Joined:
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
