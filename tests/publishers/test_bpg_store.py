"""The SQLite state of BPG (publishers.bpg.store; Barbosa, Pinto, Gomes, CIKM 2012, section 6) and what the
publisher keeps between releases.

* the uid stream (section 4: an identifier constant across releases, independent of the data) is reproducible
  from the salt and the release number, and unique;
* the in-memory copy of a database is used only while the database's token is the one this process wrote:
  a release written by another process (another registry of stores) in between is read from the file, and the
  sequence equals one made with every release read from the file;
* the publisher keeps no state of its own: its timings come back in the result's ``stats``;
* bad states and broken invariants are reported.
"""
from __future__ import annotations

import os
import sqlite3
import time

import numpy as np
import pandas as pd
import pytest

import publishers.bpg.postprocessor as bpg_module
from multirelease.errors import InputError
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.principles import Principle
from multirelease.model.schema import Attribute, Schema
from multirelease.model.table import Table
from publishers.bpg.postprocessor import BPG
from publishers.bpg.store import Stores, check_invariant, clear_cache, new_uids, read_state

_SCHEMA = Schema((Attribute("q", "quasi", Hierarchy.numeric("q", 0, 7)),
                  Attribute("r", "quasi", Hierarchy.numeric("r", 0, 3)),
                  Attribute("s", "sensitive", Hierarchy.from_nested("s", ["a", "b", "c", "d"]))))


def _snapshots(seed: int = 3, releases: int = 4) -> list[Table]:
    """A stream: 60 records, then before each release some leave, some arrive and some change their ``q``."""
    rng = np.random.default_rng(seed)
    rows = {i: {"q": int(rng.integers(8)), "r": int(rng.integers(4)), "s": "abcd"[int(rng.integers(4))]}
            for i in range(1, 61)}
    out, nxt = [], 61
    for _ in range(releases):
        frame = pd.DataFrame(list(rows.values()), index=[str(i) for i in rows], dtype=object)
        out.append(Table(_SCHEMA, frame))
        for i in rng.choice(sorted(rows), size=8, replace=False).tolist():
            del rows[i]
        for i in rng.choice(sorted(rows), size=4, replace=False).tolist():
            rows[i] = {**rows[i], "q": int(rng.integers(8))}
        for _ in range(10):
            rows[nxt] = {"q": int(rng.integers(8)), "r": int(rng.integers(4)), "s": "abcd"[int(rng.integers(4))]}
            nxt += 1
    return out


def _frames(results):
    return [r.release.to_frame() for r in results]


def test_new_uids_are_reproducible_and_unique():
    """The uids of a release's new records: a stream of the salt and the release number (the same in any
    process), where a word equal to a stored uid (or to an earlier word) is skipped for the next one."""
    salt = "ab" * 16
    a, fresh = new_uids(salt, 3, 5, set())
    assert len(fresh) == 5 and fresh == set(a) and all(len(u) == 16 and int(u, 16) >= 0 for u in a)
    assert new_uids(salt, 3, 5, set())[0] == a
    assert not set(new_uids(salt, 4, 5, set())[0]) & fresh and not set(new_uids("cd" * 16, 3, 5, set())[0]) & fresh
    longer = new_uids(salt, 3, 7, set())[0]
    assert longer[:5] == a
    assert new_uids(salt, 3, 5, {a[1], a[3]}) == ([a[0], a[2], a[4], longer[5], longer[6]],
                                                   {a[0], a[2], a[4], longer[5], longer[6]})
    assert new_uids(salt, 3, 0, fresh) == ([], set())


def _sequence(path, snapshots, *, fresh_reads: bool, other_process: int | None = None, monkeypatch=None):
    """Publish the snapshots with BPG (k = 3, l = 2) into ``path``; ``fresh_reads``: close every database
    after each release (each release reads the file, as a new process would); ``other_process``: that release
    (0-based) is made through a registry of its own, as by another process, while this one keeps its copy."""
    state, out = None, []
    for i, snap in enumerate(snapshots):
        pub = BPG(k=3, l=2, database=str(path))
        if i == other_process:
            with monkeypatch.context() as m:
                other = Stores()
                m.setattr(bpg_module, "STORES", other)
                res = pub.publish(snap, state=state, rng=np.random.default_rng([5, i]))
                other.close_all()
        else:
            res = pub.publish(snap, state=state, rng=np.random.default_rng([5, i]))
        if fresh_reads:
            clear_cache()
        state = res.state
        out.append(res)
    clear_cache()
    return out


def test_a_release_written_elsewhere_is_read_from_the_file(tmp_path, monkeypatch):
    """Release 2 is written through another registry (another process's view); release 3 in this process must
    not use the copy it kept of release 1: the sequence is the one made with every release read from the
    file, and the databases end equal."""
    snaps = _snapshots()
    ref = _sequence(tmp_path / "ref.sqlite", snaps, fresh_reads=True)
    mixed = _sequence(tmp_path / "mixed.sqlite", snaps, fresh_reads=False, other_process=1, monkeypatch=monkeypatch)
    cached = _sequence(tmp_path / "cached.sqlite", snaps, fresh_reads=False)
    assert all(len(f) > 0 for f in _frames(ref))
    for a, b, c in zip(_frames(ref), _frames(mixed), _frames(cached)):
        assert a.equals(b) and a.equals(c)
    _, r_ref, n_ref = read_state(tmp_path / "ref.sqlite")
    _, r_mixed, n_mixed = read_state(tmp_path / "mixed.sqlite")
    assert r_ref.equals(r_mixed) and n_ref.equals(n_mixed)
    assert (r_ref["version"] > 1).any()  # updates made new versions
    assert check_invariant(tmp_path / "mixed.sqlite", Principle(k=3, l=2)) == []


def test_publisher_keeps_no_state_and_reports_its_timings(tmp_path):
    snaps = _snapshots(releases=2)
    pub = BPG(k=3, l=2, database=str(tmp_path / "t.sqlite"))
    before = dict(vars(pub))
    r1 = pub.publish(snaps[0], rng=np.random.default_rng(0))
    r2 = pub.publish(snaps[1], state=r1.state, rng=np.random.default_rng(1))
    assert vars(pub).keys() == before.keys() and pub.config == before["config"]
    for res in (r1, r2):
        sec = res.stats["seconds"]
        assert set(sec) == {"total", "encoding", "generalizer", "database", "post_processing"}
        assert min(sec.values()) >= 0 and sec["generalizer"] > 0
        assert sec["total"] >= sec["encoding"] + sec["generalizer"] + sec["database"]
    clear_cache()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a platform without fork")
def test_a_fork_waits_for_the_background_checkpoint(tmp_path, monkeypatch):
    """A release leaves its store checkpointing in a thread; this process forking meanwhile (the ledger's
    repair publishes candidates in forked processes) first waits for it, so that no forked process inherits
    one of SQLite's locks held by that thread."""
    import publishers.bpg.store as store_module

    done = []

    def slow_checkpoint(path: str) -> None:
        time.sleep(0.4)
        done.append(path)

    monkeypatch.setattr(store_module, "_checkpoint", slow_checkpoint)
    BPG(k=3, l=2, database=str(tmp_path / "t.sqlite")).publish(_snapshots(releases=1)[0],
                                                                 rng=np.random.default_rng(0))
    assert done == []  # still checkpointing
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert done == [str(tmp_path / "t.sqlite")]  # waited for before the fork
    clear_cache()


def test_bad_states_are_refused(tmp_path):
    not_db = tmp_path / "x.sqlite"
    not_db.write_bytes(b"not a database at all, just some bytes" * 10)
    snap = _snapshots(releases=1)[0]
    with pytest.raises(InputError, match="not a BPG database"):
        BPG(k=3).publish(snap, state={"database": str(not_db), "releases": 1}, rng=np.random.default_rng(0))
    with pytest.raises(InputError, match="needs 'database' and 'releases'"):
        BPG(k=3).publish(snap, state={"database": str(not_db)}, rng=np.random.default_rng(0))
    with pytest.raises(InputError, match="not found"):
        BPG(k=3).publish(snap, state={"database": str(tmp_path / "none.sqlite"), "releases": 1},
                         rng=np.random.default_rng(0))


def test_check_invariant_finds_a_broken_neighbourhood(tmp_path):
    path = tmp_path / "b.sqlite"
    _sequence(path, _snapshots(releases=2), fresh_reads=False)
    assert check_invariant(path) == []
    _, records, nbhs = read_state(path)
    nid = int(nbhs["id"].iloc[0])
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE neighbourhoods SET size = size + 1 WHERE id = ?", (nid,))
    con.close()
    assert check_invariant(path) == [f"neighbourhood {nid} says {int(nbhs['size'].iloc[0]) + 1} records, "
                                     f"holds {int(nbhs['size'].iloc[0])}"]
    # a neighbourhood of one record breaks 3-anonymity
    con = sqlite3.connect(path)
    members = np.frombuffer(con.execute("SELECT members FROM neighbourhoods WHERE id = ?", (nid,)).fetchone()[0],
                            dtype="<i8")
    with con:
        con.execute("UPDATE neighbourhoods SET size = 1, members = ? WHERE id = ?", (members[:1].tobytes(), nid))
    con.close()
    assert any("breaks" in p and f"neighbourhood {nid} " in p for p in check_invariant(path, Principle(k=3)))
