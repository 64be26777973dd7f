"""``multirelease release`` / ``ledger`` / ``certify --ledger``: each month's release made from the ledger's
private state and a new snapshot, certified before its file exists (issue 14).

:func:`make_release` is one call of ``release``:

1. read the spec (the scenario's ``schema``, ``transitions``, ``adversary``, ``attacks``, ``expect``,
   ``targets``, plus ``publisher: {publisher: NAME, params...}`` and ``snapshot: {separator}``) and take the
   ledger's lock (:class:`~multirelease.ledger.store.Ledger`); finish a release whose transaction committed but whose
   file was not renamed yet (a kill between the two);
2. read SNAPSHOT (the raw table with its identifier column); insertions, deletions and updates are derived by
   identifier against the last snapshot the ledger holds;
3. **the gate**: :func:`multirelease.pipeline.ledger_plan` and :func:`~multirelease.pipeline.run_scenario` -
   the same build -> attack -> judge as ``run`` and ``certify`` - over every release the ledger holds (read as
   published, with the snapshot behind each) plus the new one, published by the spec's publisher from the
   ledger's state (publishers refuse a release that breaks their own check: exit 2), judged on the spec's
   requirements and the publisher's declared guarantee;
4. PASS: the release (and its counterfeit statistics) is written to a temporary file beside FILE and synced,
   the ledger records the release in one transaction (its copy of the file, the file's SHA-256, snapshot,
   truth, state), then the file is renamed into place and the folder synced.  FAIL / UNKNOWN / ``--dry-run``:
   nothing is written and the ledger's bytes are unchanged.

kill -9 at any moment loses nothing: before the commit nothing was recorded (the re-run starts over, with the
same secret-seeded choices); after it, the next call renames the synced temporary file (or rewrites the file
from the ledger's copy), and a re-run with the same SNAPSHOT and FILE finds the release already recorded.
The publishers' random choices are seeded from the ledger's secret, never from the spec.  The environment
variable ``MULTIRELEASE_FAULT_POINT`` names a point of this procedure where the process kills itself with
SIGKILL (or waits, :func:`_point`): it is set only by the tests (tests/ledger/test_ledger.py).
"""
from __future__ import annotations

import datetime as _dt
import hmac
import hashlib
import io
import json
import os
import re
import signal
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from multirelease.errors import InputError
from multirelease.formats.release_csv import release_csv as release_text
from .store import Ledger, LedgerRelease, keyed_digest, sha256_file, table_bytes
from .spec_changes import amend_refusal, changed_keys, spec_changes
from .gate import GateResume, last_snapshot, record as record_gate
from multirelease.formats.scenario import load_yaml
from multirelease.model.schema import Schema
from multirelease.model.table import Table, read_table

__all__ = ["make_release", "Outcome", "load_spec", "history_lines", "verify_ledger", "ledger_certify_plan",
           "FileProblem", "check_files", "certify_plan_checked", "verify_ledger_checked", "integrity_line",
           "integrity_report", "uncertified_report", "ledger_name", "withdraw_release", "churn_problem",
           "SPEC_KEYS", "FAULT_ENV"]

SPEC_KEYS = ("name", "description", "schema", "transitions", "adversary", "attacks", "expect", "targets",
             "publisher", "snapshot", "waive")
FAULT_ENV = "MULTIRELEASE_FAULT_POINT"


def _point(name: str) -> None:
    """A moment of :func:`make_release` the fault test can kill the process at (or, with
    ``MULTIRELEASE_FAULT_WAIT=<file>``, hold it at until that file exists: the concurrency test)."""
    if os.environ.get(FAULT_ENV) != name:
        return
    wait = os.environ.get("MULTIRELEASE_FAULT_WAIT")
    if not wait:
        os.kill(os.getpid(), signal.SIGKILL)
    while not os.path.exists(wait):
        time.sleep(0.02)


@dataclass
class Outcome:
    """One ``release`` call: the pipeline's run (None when the release was already recorded), the release
    number, the verdict, the exit code and the files written."""

    run: Any
    n: int
    verdict: str
    exit_code: int
    message: str
    files: list = field(default_factory=list)
    changes: dict = field(default_factory=dict)
    #: ``--repair``: the search's answer (:class:`multirelease.ledger.repair.Repair`), the run of the month as
    #: given (``run`` is then the proposal's) and the proposal's words and SHA-256
    repair: Any = None
    failed: Any = None
    proposal: dict = field(default_factory=dict)


# ---------------------------------------------------------------------- spec and snapshot
def load_spec(path: str | Path) -> tuple[dict, Path, Schema, str]:
    """The spec document, its folder, its schema (with an identifier attribute) and the snapshot separator."""
    doc, base = load_yaml(path)
    source = str(path)
    for key in doc:
        if key not in SPEC_KEYS:
            raise InputError(f"unknown top-level key '{key}' (known: {', '.join(SPEC_KEYS)})", file=source,
                             key=str(key))
    for key in ("schema", "publisher"):
        if key not in doc:
            raise InputError(f"missing key '{key}'", file=source, key=key)
    pub = doc["publisher"]
    if not isinstance(pub, Mapping) or not isinstance(pub.get("publisher"), str):
        raise InputError("must be {publisher: NAME, params...}", file=source, key="publisher")
    if "database" in pub:
        raise InputError("a ledger keeps the publisher's database itself: remove 'database'", file=source,
                         key="publisher.database")
    schema = Schema.from_mapping(doc["schema"], base=base, source=source)
    if schema.identifier is None:
        raise InputError("a ledger follows records by identifier: give one attribute role: identifier",
                         file=source, key="schema")
    snap = doc.get("snapshot") or {}
    if not isinstance(snap, Mapping) or set(snap) - {"separator"}:
        raise InputError("must be {separator: ','}", file=source, key="snapshot")
    return dict(doc), base, schema, str(snap.get("separator", ","))


def read_snapshot(schema: Schema, path: str | Path, separator: str) -> Table:
    """This month's raw table, checked before anything runs (issue 25: a failed export is not a month): an
    empty file, a header without records, or a file that the spec's separator reads as one column is refused
    with one line; then every value is validated by the schema."""
    p = Path(path).resolve()
    if not p.is_file():
        raise InputError("snapshot file not found", file=str(path), key="SNAPSHOT")
    import pandas as pd

    if p.stat().st_size == 0:
        raise InputError("the snapshot file is empty (0 bytes): a failed export? nothing was published",
                         file=str(path), key="SNAPSHOT")
    try:
        header = [str(c).strip() for c in pd.read_csv(p, sep=separator, nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        header = []
    if len(header) == 1 and len(schema.attributes) > 1:
        other = next((s for s in (";", ",", "\t", "|") if s != separator and s in header[0]), None)
        hint = f"; its header holds {other!r}: give snapshot: {{separator: {other!r}}} in the spec" if other else ""
        raise InputError(f"the separator {separator!r} reads the snapshot as one column ({header[0][:60]!r}){hint}",
                         file=str(path), key="SNAPSHOT")
    if schema.identifier not in header:  # without it rows would be numbered: records followed by position
        raise InputError(f"the identifier column '{schema.identifier}' is missing", file=str(path), key="SNAPSHOT")
    table = read_table(schema, {"file": str(p), "separator": separator}, base=p.parent, source=str(path),
                       key="SNAPSHOT")
    if len(table) == 0:
        raise InputError("the snapshot holds no record (a header only): a failed export? a month with no one is "
                         "not published", file=str(path), key="SNAPSHOT")
    return table


def derive_changes(old: Table | None, new: Table) -> dict[str, int]:
    """Insertions, deletions and updates (a record whose values differ) by identifier."""
    if old is None:
        return {"inserted": len(new), "deleted": 0, "updated": 0}
    import numpy as np
    import pandas as pd

    a, b = old.frame, new.frame
    common = a.index.intersection(b.index)
    ia, ib = a.index.get_indexer(common), b.index.get_indexer(common)
    diff = np.zeros(len(common), dtype=bool)
    for c in (c for c in b.columns if c in a.columns):  # column by column, as text
        x, y = a[c], b[c]
        try:  # equal typed values are equal texts; the others (and missing values) compared as text below
            ne = pd.array(x.array.take(ia) != y.array.take(ib)).to_numpy(dtype=bool, na_value=True)
        except (TypeError, ValueError, AttributeError):
            ne = np.ones(len(common), dtype=bool)
        at = np.flatnonzero(ne)
        if len(at):
            ne[at] = pd.Series(x.to_numpy(dtype=object)[ia[at]]).astype(str).to_numpy() != \
                pd.Series(y.to_numpy(dtype=object)[ib[at]]).astype(str).to_numpy()
        diff |= ne
    return {"inserted": int(len(b.index.difference(a.index))), "deleted": int(len(a.index.difference(b.index))),
            "updated": int(diff.sum())}


def churn_problem(changes: Mapping[str, int], before: int, after: int) -> str | None:
    """A month that removes more than half of the population or more than doubles it (issue 25: most often a
    partial or a duplicated export): the words saying so, ``None`` for an ordinary month.  ``before`` /
    ``after``: the records of the last snapshot and of this one."""
    if not before:
        return None
    if changes["deleted"] * 2 > before:
        return (f"the snapshot removes {changes['deleted']:,} of the {before:,} records of the last one "
                f"({changes['deleted'] / before:.0%})")
    if after > 2 * before:
        return f"the snapshot has {after:,} records, more than twice the {before:,} of the last one"
    return None


# ---------------------------------------------------------------------- files
def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _partial(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial")


def _write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (0644: a release is public) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.fchmod(fd, 0o644)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _install(path: Path, data: bytes) -> None:
    """``path`` atomically: temporary file beside it, fsync, rename, fsync the folder."""
    tmp = _partial(path)
    _write_synced(tmp, data)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def counterfeits_path(out: Path) -> Path:
    """Where the counterfeit statistics of ``out`` go (``certify`` reads ``counterfeits_<i>.csv`` beside
    ``release_<i>.csv``)."""
    name = out.name
    return out.with_name(name.replace("release_", "counterfeits_", 1) if name.startswith("release_")
                         else f"counterfeits_{name}")


def _recover(led: Ledger, history: Sequence[LedgerRelease]) -> None:
    """Finish what a killed call left: the last release's files (committed, not yet renamed) and the BPG
    databases neither of the last two releases refers to (the one before the last is kept for a withdrawal of
    the last: :func:`withdraw_release`)."""
    keep: set[str] = set()
    if history:
        last = history[-1]
        blobs = None
        for file, key in ((last.file, "release_csv"), (last.counterfeits_file, "counterfeits_csv")):
            if file and not Path(file).exists() and _partial(Path(file)).exists():
                blobs = blobs or led.blobs(last.n)
                _install(Path(file), blobs[key])
        for r in history[-2:]:
            if r.publisher == "bpg":
                keep.add(str(led.state(r.n).get("database")))
    for p in led.dir.glob("bpg_*.db*"):
        if p.name.split(".db")[0] + ".db" not in keep:
            p.unlink()


# ---------------------------------------------------------------------- BPG's own database
def _bpg_prepare(led: Ledger, n: int, doc: dict, state: dict | None) -> tuple[dict, dict | None, Path]:
    """BPG keeps its state in its own SQLite database (:mod:`publishers.bpg.store`): release ``n`` is made in
    ``bpg_<n>.db`` in the ledger folder, a copy of ``bpg_<n-1>.db`` (SQLite's backup), so that a gate that
    fails leaves the recorded database as it was; the ledger's state names the file of its release."""
    work = led.dir / f"bpg_{n}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)
    if state is None:
        pub = dict(doc["publisher"], database=str(work))
        return {**doc, "publisher": pub}, None, work
    src = sqlite3.connect(str(led.dir / state["database"]))
    dst = sqlite3.connect(str(work))
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return doc, {**state, "database": str(work)}, work


def _bpg_close(work: Path, keep: bool) -> None:
    from publishers.bpg.store import clear_cache

    clear_cache()
    if not keep:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{work}{suffix}").unlink(missing_ok=True)


# ---------------------------------------------------------------------- states as stored
def _state_to_store(name: str, state: Mapping) -> dict:
    """The state the ledger stores: bcf's state carries a digest of every record's raw values (``records``,
    HMAC-SHA-256 under a per-process key, to check that no published record changed, Fung et al.'s
    ``D1 ⊆ D1 ∪ D2``); the ledger holds the snapshot itself, so it stores none and remakes them when the state
    is read (:func:`_state_from_store`)."""
    state = dict(state)
    if name == "bcf" and isinstance(state.get("records"), Mapping):
        state["records"] = "ledger"
    return state


def _state_from_store(name: str, state: dict, snapshot: Table) -> dict:
    if name == "bcf" and state.get("records") == "ledger":
        from publishers.bcf.state import record_digests

        state = {**state, "records": record_digests(snapshot, state.get("quasi", []), state.get("sensitive", []))}
    return state


# ---------------------------------------------------------------------- release
def _seed(secret: bytes) -> int:
    return int.from_bytes(hmac.new(secret, b"publisher seed", hashlib.sha256).digest(), "big")


def make_release(spec_path: str | Path, snapshot: str | Path | Table, ledger_dir: str | Path, out: str | Path, *,
                 dry_run: bool = False, amend: str | None = None,
                 progress: Callable[[str, int, int], None] | None = None, notation: str = "native",
                 confirm_churn: bool = False, repair: bool = False, accept: bool = False) -> Outcome:
    """One call of ``multirelease release`` (module docstring).  Bad input raises :class:`InputError`.
    ``notation``: the release file in the project's notation or ARX's (:mod:`multirelease.formats.arx`).
    ``amend``: the reason of a spec that differs from the last release's in a recorded key
    (:mod:`.spec_changes`); ``confirm_churn``: the custodian states that a month removing more than half of the
    population, or more than doubling it, is real (:func:`churn_problem`; recorded as an event).  ``repair``:
    when the gate does not pass, search the cheapest changed release that does (:mod:`.repair`) and propose it
    (nothing written); with ``accept`` write that proposal, recorded with a ``repair`` event."""
    if accept and not repair:
        raise InputError("--accept accepts a repair: give --repair --accept", key="--accept")
    old_umask = os.umask(0o077)
    try:
        return _make_release(Path(spec_path), snapshot, Path(ledger_dir), Path(out).resolve(), dry_run, amend,
                             progress, notation, confirm_churn, repair and not dry_run, accept)
    finally:
        os.umask(old_umask)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _make_release(spec_path: Path, snapshot, ledger_dir: Path, out: Path, dry_run: bool, amend: str | None,
                  progress, notation: str = "native", confirm_churn: bool = False, repair: bool = False,
                  accept: bool = False) -> Outcome:
    from multirelease import pipeline

    doc, base, schema, sep = load_spec(spec_path)
    if out.is_dir():
        raise InputError("is a directory, not a file", file=str(out), key="--out")
    if not out.parent.is_dir():
        raise InputError("folder does not exist", file=str(out.parent), key="--out")
    if ledger_dir.resolve() in (out.parent, *out.parent.parents):
        raise InputError("a release is public: write it outside the ledger folder", file=str(out), key="--out")
    if amend is not None and not amend.strip():
        raise InputError("give the reason of the amendment", key="--amend")
    # the snapshot is read and checked before the ledger is opened: a refused month creates nothing
    table = snapshot if isinstance(snapshot, Table) else read_snapshot(schema, snapshot, sep)
    if len(table) == 0:
        raise InputError("the snapshot holds no record: a month with no one is not published", key="SNAPSHOT")
    _point("start")
    led = Ledger(ledger_dir, write=True)
    recorded = False
    try:
        _point("locked")
        history = led.history()
        _recover(led, history)
        secret = led.secret()
        snap_bytes = table_bytes(table)
        mac = keyed_digest(secret, snap_bytes)
        last = history[-1] if history else None
        n = len(history) + 1
        if last is not None and last.snapshot_mac == mac and last.file == str(out):
            return Outcome(None, last.n, "pass", 0, f"release {last.n} of this snapshot is already in the ledger "
                           f"({out})", [out])
        if out.exists():
            raise InputError("exists: the ledger never overwrites a file", file=str(out), key="--out")
        if last is not None and amend is None:
            differs = spec_changes(json.loads(last.spec), doc)
            if differs:
                raise InputError(amend_refusal(last.n, differs), file=str(spec_path))
        _point("read")
        # the earlier releases are not read: the gate extends what the ledger kept of them (ledger_gate)
        resume = GateResume(led, history, schema, doc)
        previous = last_snapshot(led, history, schema)
        changes = derive_changes(previous, table)
        churn = churn_problem(changes, len(previous) if previous is not None else 0, len(table))
        if churn is not None and not confirm_churn:
            raise InputError(f"{churn}: a partial or duplicated export? nothing was published; if the month is "
                             "real, give --confirm-churn (recorded in the ledger)", file=str(snapshot),
                             key="SNAPSHOT")
        # updates follow the spec's public model
        from multirelease.model.transitions import check_updates, load_transitions

        check_updates(load_transitions(doc.get("transitions"), schema, source=str(spec_path)),
                      previous, table, source=str(snapshot), key="SNAPSHOT")
        name = doc["publisher"]["publisher"]
        state = None
        if last is not None and last.publisher == name:
            state = _state_from_store(name, led.state(last.n), previous)
        plan_doc, work = doc, None
        if name == "bpg":
            plan_doc, state, work = _bpg_prepare(led, n, doc, state)
        try:
            sc = pipeline.ledger_plan(plan_doc, path=spec_path, base=base, earlier=[(None, None)] * len(history),
                                      snapshot=table, seed=_seed(secret))
            _point("planned")
            # a copy: the state as the ledger holds it stays for a repair's candidates
            states = _state_copy(name, state)
            run = pipeline.run_ledger_step(sc, resume, progress, states=states)
            _point("gated")
            verdict = run.verdict
            if verdict == "none":
                raise InputError("nothing to certify: the spec states no requirement and the publisher declares "
                                 "no guarantee", file=str(spec_path), key="expect")
            fixed = None
            if repair and verdict != "pass" and not history:
                # the ledger's secret, which seeds the publisher, is kept with the first release: before it, a
                # proposal could not be made again the same by --accept
                raise InputError("a first release cannot be repaired: its proposal could not be reproduced (the "
                                 "ledger's secret is made with it); change the spec (parameters, requirements) "
                                 "and run it again", key="--repair")
            if repair and verdict != "pass":
                fixed = _repair(doc, spec_path, base, history, secret, table, name, state, resume, run, progress)
                if fixed.proposal is None:
                    return Outcome(run, n, verdict, run.exit_code, f"release {n}: {verdict.upper()}, {out} not "
                                   f"written; no repair passes the gate ({fixed.gates} candidates gated in "
                                   f"{fixed.seconds:.1f} s)", changes=changes, repair=fixed, failed=run)
                failed, run, verdict = run, fixed.proposal.run, "pass"
                resume.used, resume.keys, resume.kept_metrics = fixed.proposal.resume_marks
                if fixed.proposal.withheld:
                    from .repair import withhold

                    table = withhold(table, fixed.proposal.withheld)
                    snap_bytes = table_bytes(table)
                    changes = derive_changes(previous, table)
            if fixed is not None and not accept:
                release = run.sequence.releases[-1]
                digest = hashlib.sha256(release_text(release, notation).encode("utf-8")).hexdigest()
                return Outcome(run, n, "pass", 0, f"release {n}: FAIL as given; the repair below PASSes the gate, "
                               f"{out} not written (sha256 {digest}); accept it with --repair --accept",
                               changes=changes, repair=fixed, failed=failed, proposal={"sha256": digest})
            if verdict != "pass" or dry_run:
                word = "would be written" if verdict == "pass" else "not written"
                return Outcome(run, n, verdict, run.exit_code, f"release {n}: {verdict.upper()}, {out} {word}",
                               changes=changes)
            release, truth = run.sequence.releases[-1], run.sequence.truths[-1]
            new_state = _state_to_store(name, run.states[-1])
            if work is not None:
                new_state["database"] = work.name
                _bpg_close(work, keep=True)
            release_csv = release_text(release, notation).encode("utf-8")
            cf_csv, cf_out = None, None
            if release.counterfeits:
                buf = io.StringIO()
                cf = release.counterfeits
                buf.write("group,counterfeits\n" + "".join(f"{g},{c}\n" for g, c in cf.items()))
                cf_csv, cf_out = buf.getvalue().encode("utf-8"), counterfeits_path(out)
                if cf_out.exists():
                    raise InputError("exists: the ledger never overwrites a file", file=str(cf_out), key="--out")
            _write_synced(_partial(out), release_csv)
            if cf_csv is not None:
                _write_synced(_partial(cf_out), cf_csv)
            _point("written")
            row = LedgerRelease(n=n, created=_now(),
                                snapshot_rows=len(table), records=len(release), publisher=name,
                                verdict=_recorded_verdict(run),
                                file=str(out), sha256=hashlib.sha256(release_csv).hexdigest(),
                                counterfeits_file=None if cf_out is None else str(cf_out),
                                counterfeits_sha256=None if cf_csv is None else hashlib.sha256(cf_csv).hexdigest(),
                                spec=json.dumps(doc, sort_keys=True, default=str), spec_path=str(spec_path.resolve()),
                                amend=amend, snapshot_mac=mac, **changes)
            led.begin(secret)
            led.record(row, release_csv=release_csv, counterfeits_csv=cf_csv, snapshot=snap_bytes, truth=truth,
                       state=new_state)
            record_gate(led, n, row.sha256, run, resume)
            if churn is not None:
                led.event(n, "churn", f"confirmed: {churn}", row.created)
            if fixed is not None:
                led.event(n, "repair", _repair_words(fixed, failed, secret, len(table) + len(
                    fixed.proposal.withheld)), row.created)
            _point("recorded")
            led.commit()
            recorded = True
            _point("committed")
            os.replace(_partial(out), out)
            if cf_out is not None:
                os.replace(_partial(cf_out), cf_out)
            _point("renamed")
            _fsync_dir(out.parent)
            if work is not None and last is not None and last.publisher == "bpg":
                _recover(led, led.history())  # the previous release's database is no longer referred to
            _point("done")
            files = [out] + ([cf_out] if cf_out is not None else [])
            word = " (the repair accepted)" if fixed is not None else ""
            return Outcome(run, n, "pass", 0, f"release {n}: PASS{word}, wrote {out} (sha256 {row.sha256})", files,
                           changes, repair=fixed, failed=failed if fixed is not None else None,
                           proposal={"sha256": row.sha256} if fixed is not None else {})
        finally:
            if work is not None and not recorded:
                _bpg_close(work, keep=False)
            if not recorded:
                led.rollback()
    finally:
        if not recorded and not led.history():
            led.discard_new_folder()
        led.close()


# ---------------------------------------------------------------------- repair (issue 29)
def _state_copy(name: str, state: dict | None) -> dict | None:
    """The publishers' states for one publish, a copy of the state the ledger holds (a publisher may change
    what it is given; each repair candidate continues the same state).  The entries of a ``history`` list are
    shared, not copied: a publisher's record of its earlier releases, which it extends with a new list and never
    changes (:func:`publishers.m_invariance._guarantee.extend_history`), and which its check rebuilds once per
    entry object (:func:`publishers.m_invariance._guarantee.sequence_check`)."""
    if state is None:
        return None
    history = state.get("history")
    rest = {k: v for k, v in state.items() if k != "history"}
    copy = json.loads(json.dumps(rest))
    if "history" in state:
        copy["history"] = list(history) if isinstance(history, list) else history
    return {name: copy}


def _repair(doc, spec_path, base, history, secret, table, name, state, resume, run, progress):
    """:func:`multirelease.ledger.repair.search` with this month's publish and gate (module docstring of
    :mod:`.repair`); a publisher that carries a state from release to release is refused."""
    from dataclasses import replace

    import numpy as np

    from multirelease import pipeline
    from multirelease.model.sequence import ReleaseSequence
    from publishers import PUBLISHERS
    from .repair import search, withhold

    cls = PUBLISHERS[name]
    if name == "bpg" or getattr(cls, "state_for_sequence", None) is not None:
        where = "its database" if name == "bpg" else "the releases as published"
        raise InputError(f"{name} continues its state outside the ledger's copy ({where}): "
                         "a changed release of it is not searched yet; --repair works for the publishers whose "
                         "state the ledger holds (mondrian, naive, tds, m_invariance, m_distinct, "
                         "global_guarantee, sequential_diversity)", key="--repair")

    def plan(params, shown):
        doc_c = {**doc, "publisher": {**doc["publisher"], **params}}
        return pipeline.ledger_plan(doc_c, path=spec_path, base=base, earlier=[(None, None)] * len(history),
                                    snapshot=shown, seed=_seed(secret))

    def publish(params, shown):
        sc = plan(params, shown)
        one = pipeline.ScenarioRun(scenario=sc, sequence=ReleaseSequence())
        pipeline.build_sequence(replace(sc, steps=[sc.steps[-1]]), one, lambda *_: None, 1, _state_copy(name, state))
        return one

    def publish_many(items):
        """``publish`` of each item, side by side in forked processes where there are cores for it; the same
        releases (each is seeded alike wherever it runs)."""
        return _side_by_side(publish, items, lambda run: (run.sequence.releases[-1], run.sequence.truths[-1],
                                                          run.states, run.release_metrics, run.timings),
                             lambda item, parts: _rebuilt(plan(*item), item[1], *parts))

    def _rebuilt(sc, shown, release, truth, states, metrics, timings):
        one = pipeline.ScenarioRun(scenario=sc, sequence=ReleaseSequence())
        one.sequence.append(release, truth, shown)
        one.states, one.release_metrics, one.timings = states, metrics, timings
        return one

    def gate(params, shown, published):
        out = pipeline.run_ledger_step(published.scenario, resume, None, states=_state_copy(name, state),
                                       built=published)
        return out, (dict(resume.used), dict(resume.keys), resume.kept_metrics)

    # the lines judged on the candidate's own release (release[n].LM <= x): no gate is spent on one that misses
    alone = [line for line in pipeline.requirements(run.scenario)
             if line.expectation.subject == "release" and line.kind == "requirement"]
    earlier = list(resume.metrics())

    def precheck(published):
        return [j for j in pipeline.judge(alone, {}, earlier + published.release_metrics) if j.holds is False]

    params = {k: v for k, v in doc["publisher"].items() if k != "publisher"}

    def coarsen(given, named):
        """``given``'s release with the classes of ``named`` merged (:mod:`.coarsen`): ``(run, withheld, merges)``."""
        from multirelease.model.metrics import row_loss
        from multirelease.reports.document import compute_release_metrics
        from .coarsen import merge_classes, plan_merges

        release, truth, shown = given.sequence.releases[-1], given.sequence.truths[-1], given.sequence.snapshots[-1]
        where = {str(p): i for i, p in enumerate(truth.person) if p is not None}
        plan_ = plan_merges(release, row_loss(release), [where[p] for p in named if p in where],
                            min_size=int(params.get("k", cls.defaults.get("k", 1)) or 1))
        if plan_ is None:
            return None
        gone = tuple(str(truth.person[r]) for r in plan_.withheld_rows)
        rng = np.random.default_rng([_seed(secret), len(history) + 1, 29, len(gone), len(plan_.pairs)])
        merged, new_truth = merge_classes(release, truth, plan_.pairs, plan_.withheld_rows, rng)
        kept = withhold(shown, gone)
        sc = plan({}, kept)
        one = pipeline.ScenarioRun(scenario=sc, sequence=ReleaseSequence())
        one.sequence.append(merged, new_truth, kept)
        one.states = list(given.states[-1:])
        one.release_metrics = [compute_release_metrics(merged, kept)]
        return one, gone, len(plan_.pairs)

    return search(base_run=run, table=table, publisher_cls=cls, params=params, publish=publish, gate=gate,
                  precheck=precheck, coarsen=coarsen if getattr(cls, "merges_classes", False) else None,
                  publish_many=publish_many, progress=progress)


#: what :func:`_side_by_side`'s forked workers run (set just before the fork, read by the child)
_FORKED: dict = {}


def _forked_task(i: int):
    """One item of :func:`_side_by_side` in a forked worker: its parts, or the refusal's words."""
    fn, items, parts = _FORKED["fn"], _FORKED["items"], _FORKED["parts"]
    try:
        return True, parts(fn(*items[i]))
    except InputError as exc:
        return False, str(exc)


def _side_by_side(fn, items, parts, rebuild) -> list:
    """``fn(*item)`` for every item: in forked worker processes, one per item up to the cores, when ``fork``
    exists and there are two items and two cores (the children return ``parts(result)``, which ``rebuild(item,
    parts)`` makes a result again in this process), else here in turn.  A refusal (:class:`InputError`) comes
    back in place of its result."""
    import multiprocessing

    from solver.executor import LocalExecutor
    from .repair import serially

    workers = min(len(items), os.cpu_count() or 1)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():  # a spawned child has no _FORKED
        return serially(fn)(items)
    _FORKED.update(fn=fn, items=items, parts=parts)
    try:
        done = LocalExecutor(workers).map(_forked_task, range(len(items)))  # forked where fork exists
    finally:
        _FORKED.clear()
    return [rebuild(item, got) if ok else InputError(got) for item, (ok, got) in zip(items, done)]


def _repair_words(fixed, failed, secret, rows: int) -> str:
    """The ``repair`` event's detail (shown by ``ledger DIR``): what changed, the cost, the lines it answered
    and the witnesses' persons by the ledger's pseudonyms (never an identifier)."""
    from .pseudonyms import pseudonym

    c = fixed.proposal
    base_lm = failed.release_metrics[-1].get("LM")
    named = ", ".join(pseudonym(secret, p) for p in c.withheld[:5]) + (", ..." if len(c.withheld) > 5 else "")
    return (f"{'; '.join(c.words(fixed.params))} (of {rows:,} records); loss {c.cost:.4f} (LM "
            f"{c.metrics.get('LM', 0):.4f}; as given {base_lm:.4f}); answered {'; '.join(fixed.answered)}"
            + (f"; withheld {named}" if named else "")
            + f"; {fixed.gates} candidate{'s' if fixed.gates != 1 else ''} gated in {fixed.seconds:.1f} s")


# ---------------------------------------------------------------------- the gate's report
def _recorded_verdict(run) -> str:
    """The verdict the ledger records for a published month: ``PASS``, with the baselines the spec waived by
    name and whether each held (issue 30: a waiver is recorded and shown by ``ledger DIR``)."""
    waived = run.waived
    if not waived:
        return "PASS"
    words = {True: "held", False: "BROKEN", None: "undecided"}
    return "PASS (waived: " + ", ".join(f"{j.expectation.text} {words[j.holds]}" for j in waived) + ")"


def withdraw_release(ledger_dir: str | Path, n: int, reason: str | None) -> tuple[LedgerRelease, list[str]]:
    """``multirelease ledger DIR --withdraw N --reason TEXT`` (issue 25): release ``n``, the last one, never went
    out - the custodian says so, with the reason.  In one transaction its row moves to the ledger's
    ``withdrawn`` table (kept, with the event and the reason) and the gate's states kept for it are dropped;
    later gates no longer count it and the next month is release ``n`` again.  Its files are removed from the
    release folder first (only when they are the bytes the ledger recorded: a changed file is refused, exit 2;
    a missing one is taken as already removed), so that a kill at any moment leaves either the release recorded
    (run the withdrawal again) or withdrawn.  A release that was sent cannot be un-published: never withdraw it.
    Returns the withdrawn row and the files removed."""
    if reason is None or not reason.strip():
        raise InputError("say why the release never went out: --reason TEXT (recorded in the ledger)",
                         key="--reason")
    old_umask = os.umask(0o077)
    led = Ledger(ledger_dir, write=True)
    try:
        history = led.history()
        done = [w for w in led.withdrawn() if w.n == n]
        if done and (not history or history[-1].n < n):  # a re-run after a kill: the withdrawal was committed
            return done[-1], []
        if not history:
            raise InputError("the ledger holds no release", file=str(ledger_dir), key="--withdraw")
        _recover(led, history)
        last = history[-1]
        if n != last.n:
            why = f"no release {n}" if not 1 <= n < last.n else "withdraw the later ones first, newest first"
            raise InputError(f"only the last release can be withdrawn: release {last.n} is the last ({why})",
                             file=str(ledger_dir), key="--withdraw")
        if len(history) > 1 and history[-2].publisher == "bpg":
            database = led.state(history[-2].n).get("database")
            if not (led.dir / str(database)).is_file():
                raise InputError(f"release {history[-2].n}'s BPG database ({database}) is no longer kept (made "
                                 "before withdrawals existed): the release cannot be withdrawn", file=str(ledger_dir),
                                 key="--withdraw")
        files = [(f, sha) for f, sha in ((last.file, last.sha256), (last.counterfeits_file, last.counterfeits_sha256))
                 if f]
        for f, sha in files:
            found = sha256_file(f)
            if found is not None and found != sha:
                raise InputError(f"changed since release {n} was written (recorded sha256 {sha}, found sha256 "
                                 f"{found}): it is not the ledger's file; move it away first", file=f, key="--withdraw")
        removed = []
        for f, _ in files:
            if Path(f).exists():
                Path(f).unlink()
                removed.append(f)
        if removed:
            _fsync_dir(Path(removed[0]).parent)
        _point("withdraw-removed")
        led.begin(led.secret())
        led.withdraw(n, reason.strip(), _now())
        led.commit()
        _point("withdraw-committed")
        return last, removed
    finally:
        led.rollback()
        led.close()
        os.umask(old_umask)


#: a ``repair`` event's detail as :func:`_repair_words` writes it (read back by :func:`repair_events`)
_REPAIR_DETAIL = re.compile(
    r"^(?P<changes>.*) \(of (?P<rows>[\d,]+) records\); loss (?P<loss>[\d.]+) \(LM (?P<LM>[\d.]+); as given "
    r"(?P<given>[\d.]+)\); answered (?P<answered>.*?)(?:; withheld (?P<withheld>.*?))?; (?P<gates>\d+) candidates? "
    r"gated in (?P<seconds>[\d.]+) s$")


def repair_events(ledger_dir: str | Path) -> list[dict]:
    """Every accepted repair of the ledger (``ledger DIR --html``'s repair section): the release, when, what
    changed, the records of the month, the loss and LM of the release written against the month as given, the
    failing lines it answered, the persons withheld (by pseudonym), the gates and seconds of its search."""
    with Ledger(ledger_dir, write=False) as led:
        events = [e for e in led.events() if e.kind == "repair"]
    out = []
    for e in events:
        m = _REPAIR_DETAIL.match(e.detail)
        if m is None:  # an older ledger's wording: shown as it is
            out.append({"n": e.n, "created": e.created, "detail": e.detail})
            continue
        g = m.groupdict()
        out.append({"n": e.n, "created": e.created, "changes": g["changes"].split("; "),
                    "records": int(g["rows"].replace(",", "")), "loss": float(g["loss"]), "LM": float(g["LM"]),
                    "LM_as_given": float(g["given"]), "answered": g["answered"].split("; "),
                    "withheld": g["withheld"] or "", "gates": int(g["gates"]), "seconds": float(g["seconds"])})
    return out


def history_lines(ledger_dir: str | Path) -> list[str]:
    """``multirelease ledger DIR``: one line per release, with what each amendment changed, and the ledger's
    events (withdrawals, confirmed churn) in the order they happened."""
    with Ledger(ledger_dir, write=False) as led:
        history, events, withdrawn = led.history(), led.events(), led.withdrawn()
    withdrawals = [e for e in events if e.kind == "withdrawn"]  # the k-th of release n is its k-th row withdrawn
    lines: list[str] = []
    previous: dict = {}

    def add(r: LedgerRelease) -> None:
        nonlocal previous
        line = (f"{r.n}  {r.created}  snapshot {r.snapshot_rows:,} rows  published {r.records:,}  "
                f"{r.publisher}  {r.verdict}  sha256 {r.sha256}")
        doc = json.loads(r.spec)
        if r.amend:
            keys = changed_keys(previous, doc) if previous else []
            line += f"  amended: {r.amend}" + (f" (changed: {', '.join(keys)})" if keys else "")
        previous = doc
        lines.append(line)
        lines.extend(f"{e.n}  {e.created}  {e.kind}: {e.detail}" for e in events
                     if e.kind != "withdrawn" and e.n == r.n and e.created == r.created)

    active = {r.n: r for r in history}
    for n in sorted({r.n for r in history} | {r.n for r in withdrawn}):
        for w, e in zip([r for r in withdrawn if r.n == n], [e for e in withdrawals if e.n == n]):
            add(w)
            lines.append(f"{n}  {e.created}  WITHDRAWN before it went out: {e.detail} (later gates do not count it)")
        if n in active:
            add(active[n])
    return lines


@dataclass(frozen=True)
class FileProblem:
    """A published file that is not what the ledger recorded (issue 30: integrity is part of the verdict).

    ``problem``: ``changed`` (a recorded file whose SHA-256 is not the recorded one), ``missing`` (a recorded
    file that is gone), ``foreign`` (a ``release_*.csv`` / ``counterfeits_*.csv`` in a release folder that the
    ledger never recorded) or ``unrecorded`` (a file given to ``certify --ledger`` as release ``n`` that is not
    the file the ledger recorded as release ``n``).  ``recorded`` / ``found``: the SHA-256 the ledger recorded
    (``None``: none) and the one of the file now (``None``: missing)."""

    file: str
    problem: str
    release: int | None = None
    recorded: str | None = None
    found: str | None = None

    @property
    def name(self) -> str:
        return Path(self.file).name

    def words(self) -> str:
        """``release_2.csv changed``: what the verdict names."""
        return {"changed": f"{self.name} changed", "missing": f"{self.name} missing",
                "foreign": f"{self.name} not recorded by the ledger",
                "unrecorded": f"{self.name} is not the file the ledger recorded as release {self.release}"
                }[self.problem]

    def hashes(self) -> str:
        """``recorded sha256 X, found sha256 Y`` (``found missing`` / ``recorded none``)."""
        recorded = f"recorded sha256 {self.recorded}" if self.recorded else "recorded none"
        found = f"found sha256 {self.found}" if self.found else "found missing"
        return f"{recorded}, {found}"

    def __str__(self) -> str:
        """One line: the release, the file's path, what is wrong and both hashes."""
        where = f"release {self.release}: " if self.release is not None else ""
        verb = {"changed": "changed", "missing": "is missing", "foreign": "is not recorded by the ledger",
                "unrecorded": f"is not the file the ledger recorded as release {self.release}"}[self.problem]
        return f"{where}{self.file} {verb} ({self.hashes()})"

    def to_json(self) -> dict:
        return {"file": self.file, "problem": self.problem, "release": self.release,
                "recorded_sha256": self.recorded, "found_sha256": self.found}


def integrity_line(problems: Sequence[FileProblem]) -> str:
    """What the verdict names: ``release_2.csv changed (recorded sha256 X, found sha256 Y); ...``."""
    return "; ".join(f"{p.words()} ({p.hashes()})" for p in problems)


def integrity_report(report: Mapping, problems: Sequence[FileProblem]) -> dict:
    """The report of a certification whose files are not all the ones the ledger recorded: the verdict is
    ``fail`` whatever the attacks found on the files as they are (kept as ``certified_verdict``), and
    ``integrity`` lists each file with both hashes.  Without problems the report is returned as it was."""
    if not problems:
        return dict(report)
    out = dict(report)
    if "verdict" in report:
        out["certified_verdict"] = report["verdict"]
    out["verdict"] = "fail"
    out["integrity"] = [p.to_json() for p in problems]
    return out


def uncertified_report(name: str, problems: Sequence[FileProblem]) -> dict:
    """The report when the files could not be certified at all (a recorded file is missing): no release, no
    attack, the verdict ``fail`` naming the ``problems`` (:func:`integrity_report`; at least one)."""
    return integrity_report({"scenario": name, "releases": [], "attacks": {}, "expectations": []}, problems)


def _recorded_problems(history: Sequence[LedgerRelease]) -> list[FileProblem]:
    """Every recorded file (release and counterfeit statistics) checked against its SHA-256."""
    out = []
    for r in history:
        for file, sha in ((r.file, r.sha256), (r.counterfeits_file, r.counterfeits_sha256)):
            if not file:
                continue
            found = sha256_file(file)
            if found != sha:
                out.append(FileProblem(file, "missing" if found is None else "changed", r.n, sha, found))
    return out


def _foreign_problems(history: Sequence[LedgerRelease]) -> list[FileProblem]:
    """``release_*.csv`` / ``counterfeits_*.csv`` files in the folders of the recorded files that the ledger did
    not record: the public holds a release no gate certified."""
    recorded = {str(Path(f)) for r in history for f in (r.file, r.counterfeits_file) if f}
    out = []
    for folder in sorted({Path(f).parent for f in recorded}):
        if not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            if p.name.startswith(("release_", "counterfeits_")) and p.name.endswith(".csv") and p.is_file() \
                    and str(p) not in recorded:
                out.append(FileProblem(str(p), "foreign", None, None, sha256_file(p)))
    return out


def relocate(history: Sequence[LedgerRelease], folder: str | Path | None) -> list[LedgerRelease]:
    """The history with its files found in ``folder`` (``ledger --verify --releases DIR``, issue 25: the release
    folder moved): each recorded file by its name there, else by its recorded SHA-256 among the folder's files
    (renamed); a file found by neither is looked for by its name (and reported missing).  ``None``: as
    recorded."""
    if folder is None:
        return list(history)
    import dataclasses

    root = Path(folder)
    if not root.is_dir():
        raise InputError("is not a folder", file=str(folder), key="--releases")
    by_hash: dict[str, str] | None = None  # the folder's files by SHA-256: hashed only for a file renamed

    def find(file: str | None, sha: str | None) -> str | None:
        nonlocal by_hash
        if not file:
            return file
        named = root / Path(file).name
        if named.is_file():
            return str(named.resolve())
        if by_hash is None:
            by_hash = {}
            for f in sorted(root.rglob("*.csv")):
                if f.is_file():
                    by_hash.setdefault(sha256_file(f), str(f.resolve()))
        return by_hash.get(sha, str(named.resolve()))

    return [dataclasses.replace(r, file=find(r.file, r.sha256),
                                counterfeits_file=find(r.counterfeits_file, r.counterfeits_sha256)) for r in history]


def check_files(ledger_dir: str | Path, releases: str | Path | None = None) -> list[FileProblem]:
    """``ledger DIR --verify``'s integrity check: every recorded file against its SHA-256, and the release
    folders for files the ledger never recorded.  ``releases``: the folder the files moved to
    (:func:`relocate`)."""
    with Ledger(ledger_dir, write=False) as led:
        history = led.history()
    if not history:
        raise InputError("the ledger holds no release", file=str(ledger_dir))
    history = relocate(history, releases)
    return _recorded_problems(history) + _foreign_problems(history)


def ledger_name(ledger_dir: str | Path) -> str:
    """The name its reports give the ledger's sequence: the last spec's ``name``, else its file's stem (as
    the pipeline names a scenario)."""
    with Ledger(ledger_dir, write=False) as led:
        history = led.history()
    if not history:
        raise InputError("the ledger holds no release", file=str(ledger_dir))
    return str(json.loads(history[-1].spec).get("name") or Path(history[-1].spec_path).stem)


def ledger_certify_plan(ledger_dir: str | Path, files: Sequence[str | Path] | None = None,
                        spec_path: str | Path | None = None, notation: str | None = None):
    """The plan certifying release files against the ledger's truth: file ``i`` with the snapshot behind the
    ledger's release ``i``; the spec given (``certify SPEC FILES --ledger DIR``), else the one the last release
    was made with.  ``files`` None: the files the ledger recorded.  Returns ``(plan, problems)``, problems
    being one line (:class:`FileProblem`) per file that is not the one recorded: a recorded file missing or
    changed, or a file given as release ``i`` whose SHA-256 is not the one recorded for release ``i``
    (:func:`certify_plan_checked` gives them as :class:`FileProblem`)."""
    plan, problems = certify_plan_checked(ledger_dir, files, spec_path, notation)
    return plan, [str(p) for p in problems]


def certify_plan_checked(ledger_dir: str | Path, files: Sequence[str | Path] | None = None,
                         spec_path: str | Path | None = None, notation: str | None = None,
                         checked: Sequence[FileProblem] | None = None, releases: str | Path | None = None):
    """:func:`ledger_certify_plan` with its problems as :class:`FileProblem`; the plan is ``None`` when a
    recorded file is missing.  ``checked``: with ``files`` None, the recorded files' problems the caller found
    already (:func:`check_files`), used instead of hashing every file again.  ``releases``: the folder the
    recorded files moved to (:func:`relocate`)."""
    from multirelease import pipeline
    from multirelease.formats.release_csv import read_release_csv

    with Ledger(ledger_dir, write=False) as led:
        history = led.history()
        if not history:
            raise InputError("the ledger holds no release", file=str(ledger_dir))
        history = relocate(history, releases)
        last_doc = json.loads(history[-1].spec)
        if spec_path is None:
            path = Path(history[-1].spec_path)
            doc, base = last_doc, path.parent
        else:
            path = Path(spec_path)
            raw, base = load_yaml(path)
            doc = {k: v for k, v in raw.items() if k in SPEC_KEYS}
            doc.setdefault("publisher", last_doc["publisher"])
            doc.setdefault("schema", last_doc["schema"])
        schema = Schema.from_mapping(doc["schema"], base=base, source=str(path))
        earlier = []
        recorded = files is None
        # the recorded files: hashed once (:func:`_recorded_problems`), or taken from the caller who did
        problems: list[FileProblem] = (list(checked) if checked is not None else _recorded_problems(history)) \
            if recorded else []
        gone = {p.file for p in problems if p.problem == "missing"}
        files = [r.file for r in history] if files is None else list(files)
        if len(files) > len(history):
            raise InputError(f"{len(files)} files but the ledger holds {len(history)} releases", key="--ledger")
        missing = False
        for i, f in enumerate(files, 1):
            r = history[i - 1]
            p = Path(f)
            if recorded:
                cf = r.counterfeits_file if r.counterfeits_file not in gone else None
                if r.file in gone:
                    missing = True
                    continue
            else:  # a file given as release i: the one the ledger recorded, or an unrecorded release
                digest = sha256_file(p)
                cf = str(counterfeits_path(p)) if p.name.startswith("release_") and counterfeits_path(p).is_file() \
                    else None
                if digest is not None and digest != r.sha256:
                    problems.append(FileProblem(str(p), "unrecorded", i, r.sha256, digest))
                elif digest is not None:
                    cf_digest = sha256_file(cf) if cf is not None else None
                    if cf_digest != r.counterfeits_sha256:  # the release's counterfeit statistics are not its own
                        shown = cf if cf is not None else str(counterfeits_path(p))
                        problems.append(FileProblem(shown, "unrecorded", i, r.counterfeits_sha256, cf_digest))
            release = read_release_csv(p, schema, counterfeits=cf, notation=notation)
            earlier.append((release, led.release(i, schema)[1]))
    if missing:
        return None, problems
    return pipeline.ledger_plan(doc, path=path, base=base, earlier=earlier, snapshot=None), problems


def verify_ledger(ledger_dir: str | Path, progress=None, notation: str | None = None):
    """``ledger DIR --verify``: the recorded files re-certified with the ledger's snapshots and last spec.
    Returns ``(run or None, problems)``: problems are one line per file that is not what the ledger recorded
    (changed, missing, or a release file in a release folder that the ledger never recorded); the run is
    ``None`` when a recorded file is missing.  Any problem makes the verdict FAIL whatever the run says
    (:func:`integrity_report`; :func:`verify_ledger_checked` gives them as :class:`FileProblem`)."""
    run, problems = verify_ledger_checked(ledger_dir, progress, notation)
    return run, [str(p) for p in problems]


def verify_ledger_checked(ledger_dir: str | Path, progress=None, notation: str | None = None,
                          checked: Sequence[FileProblem] | None = None, releases: str | Path | None = None):
    """:func:`verify_ledger` with its problems as :class:`FileProblem` (:func:`check_files`'; ``checked``: its
    answer when the caller has it already - the files are not hashed and the folders not listed again).
    ``releases``: the folder the recorded files moved to (:func:`relocate`)."""
    from multirelease import pipeline

    problems = check_files(ledger_dir, releases) if checked is None else list(checked)
    sc, _ = certify_plan_checked(ledger_dir, notation=notation,
                                 checked=[p for p in problems if p.problem != "foreign"], releases=releases)
    if sc is None:
        return None, problems
    return pipeline.run_scenario(sc, progress), problems
