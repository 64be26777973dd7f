"""YAML scenarios: parsing and validating the document (nothing runs, no publisher or attack is built).

Top-level keys (DESIGN.md): ``name``, ``description``, ``seed``, ``schema``, ``data``, ``dynamics``,
``transitions``, ``releases``, ``adversary``, ``attacks``, ``expect``, ``targets``.  Paths are relative to
the scenario file.  :func:`parse_scenario` raises :class:`~multirelease.errors.InputError` naming the file,
the key and the problem.  Publishers and attacks are named here with their raw parameters; the pipeline
(:mod:`multirelease.pipeline`, the one module that imports the ``publishers`` and ``attacks`` registries)
builds them, publishes or reads every release, attacks and judges.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.expect import Expectation
from multirelease.model.release import Release
from multirelease.formats.release_csv import (counterfeits_from_frame, read_release_bytes, read_release_csv,
                                             release_from_frame)
from multirelease.model.schema import Schema
from multirelease.model.sequence import Adversary
from multirelease.model.table import Change, Table, file_spec, read_table

__all__ = ["Scenario", "ReleaseStep", "AttackSpec", "parse_scenario", "load_yaml", "TOP_KEYS", "TARGETS", "PURPOSES"]

TOP_KEYS = ("name", "description", "seed", "schema", "data", "dynamics", "transitions", "releases", "adversary",
            "attacks", "expect", "targets", "purpose", "waive")
#: what a scenario is for (issue 30): ``certification`` (its ``expect`` lines are requirements: privacy claims,
#: PASS / FAIL / UNKNOWN) or ``research`` (its ``expect`` lines are expectations: a paper's figures, reproduced
#: or not; the privacy verdict comes from the baselines and ``--require`` alone)
PURPOSES = ("certification", "research")
#: who an attack judges: the individuals of the data (``population``) or every target the published regions
#: allow (``regions``; Fung et al.'s BCF-anonymity is defined over these)
TARGETS = ("population", "regions")


@dataclass(eq=False)
class ReleaseStep:
    """One item of ``releases``: a publisher to run, or a release given as published."""

    index: int
    publisher: Any = None  # a publishers.PublisherBase, built by the pipeline
    publisher_name: str | None = None
    params: dict = field(default_factory=dict)  # the publisher's raw parameters
    attributes: tuple[str, ...] | None = None
    given: Release | None = None
    snapshot: Table | None = None
    key: str = ""


@dataclass(eq=False)
class AttackSpec:
    """One item of ``attacks``: a registered name and its raw parameters (the pipeline builds the attack)."""

    name: str
    params: dict
    key: str


@dataclass(eq=False)
class Scenario:
    path: Path
    name: str
    description: str
    seed: int
    schema: Schema
    data: Table | None
    dynamics: dict[int, Change]
    transitions: Any  # a multirelease.model.transitions.TransitionModel, or None
    steps: list[ReleaseStep]
    adversary: Adversary
    attack_specs: list[AttackSpec]
    expect_lines: list[tuple[str, str]]  # (line, key)
    targets: str | None = None  # explicit ``targets``; None: population when there is data, else regions
    purpose: str = "certification"  # PURPOSES
    #: baseline lines waived by name (``<attack>.<metric>``): (name, key) from ``waive`` and ``--waive``
    waive: list[tuple[str, str]] = field(default_factory=list)
    #: per step, the lines its release claims (the guarantee and claims of the publisher that made it, also
    #: when certify reads the file in its place); ``None``: a release given as published, claiming nothing
    claims: list = field(default_factory=list)
    certifying: bool = False  # certify / a ledger's gate: the exit code follows the requirements alone
    attacks: list[tuple[str, Any]] = field(default_factory=list)  # built by the pipeline
    expect: list[Expectation] = field(default_factory=list)  # parsed and validated by the pipeline
    expect_sources: list[str] = field(default_factory=list)  # "expect" | "require", one per expect
    all_applicable: bool = False  # certify with no attack named: every registered attack that applies
    #: who asked for each attack, to word its refusal (an attack that cannot run on these releases) in the
    #: user's terms: name -> (file, key, requirement); requirement None for an attack the spec lists (``attacks``)
    #: or ``--attack`` names, else the line that brought it in (an ``expect`` or ``--require`` line, or the
    #: publisher's guarantee a ledger judges: ``m_invariance's guarantee 'update_graph.vulnerable_values == 0'``)
    attack_origins: dict = field(default_factory=dict)
    #: the snapshots validation already computed: release index -> (table before, its change, table after);
    #: :func:`multirelease.pipeline.build_sequence` takes one when it meets the very same table and change
    applied: dict[int, tuple[Table, Change, Table]] = field(default_factory=dict, repr=False)

    @property
    def source(self) -> str:
        return str(self.path)


def load_yaml(path: str | Path) -> tuple[dict, Path]:
    """Read a YAML mapping through the strict loader (:mod:`multirelease.formats.yaml_safe`: size and alias limits,
    duplicate keys refused); missing files and malformed YAML become one-line :class:`InputError`."""
    from .yaml_safe import load_file

    path = Path(path)
    doc = load_file(path)
    if not isinstance(doc, dict):
        raise InputError("a scenario must be a YAML mapping", file=str(path))
    return doc, path.resolve().parent


def parse_scenario(doc: Mapping, *, base: Path, path: Path, meanwhile: Callable[[], Any] | None = None) -> Scenario:
    """Validate a scenario mapping read from ``path`` (relative paths resolve against ``base``).

    Everything that needs no registry is checked here: keys, schema, data, releases given as published,
    dynamics (each change against the table it will meet), transitions, adversary, targets.  Publisher and
    attack names and parameters are checked when the pipeline builds them, still before anything runs.
    ``meanwhile`` runs here while the executor's workers read the input files (:func:`_read_ahead`), if they do.
    """
    source = str(path)
    for key in doc:
        if key not in TOP_KEYS:
            raise InputError(f"unknown top-level key '{key}' (known: {', '.join(TOP_KEYS)})", file=source, key=str(key))
    if "schema" not in doc:
        raise InputError("missing key 'schema'", file=source, key="schema")
    schema = Schema.from_mapping(doc["schema"], base=base, source=source)
    seed = doc.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}", file=source, key="seed")
    files, tables = _read_ahead(doc, doc.get("releases"), schema, base, source, meanwhile)
    data = None
    if doc.get("data") is not None:
        data = read_table(schema, doc["data"], base=base, source=source, key="data", prefetched=tables)
    targets = doc.get("targets")
    if targets is not None and targets not in TARGETS:
        raise InputError(f"must be one of {', '.join(TARGETS)}, got {targets!r}", file=source, key="targets")
    if targets == "population" and data is None:
        raise InputError("targets: population needs the population: give 'data'", file=source, key="targets")

    releases = doc.get("releases")
    if not isinstance(releases, list) or not releases:
        raise InputError("releases must be a non-empty list", file=source, key="releases")
    steps = [_load_step(i, item, schema, data, base, source, files) for i, item in enumerate(releases, 1)]

    from multirelease.model.transitions import check_updates, load_transitions

    transitions = load_transitions(doc.get("transitions"), schema, source=source)
    dyn_spec = doc.get("dynamics")
    if isinstance(dyn_spec, Mapping) and "stream" in dyn_spec:
        data, dynamics = _load_stream(dyn_spec, schema, data, len(steps), transitions, seed, source)
    else:
        dynamics = _load_dynamics(dyn_spec, schema, data, len(steps), base, source, tables)
    table = data
    applied: dict[int, tuple[Table, Change, Table]] = {}
    for idx, change in dynamics.items():  # validate every change against the table it will meet
        after = table.apply(change)
        check_updates(transitions, table, after, source=source, key=f"dynamics.{idx}")  # and against the model
        applied[idx] = (table, change, after)
        table = after
    previous = None
    for step in steps:  # releases given with their snapshots: consecutive snapshots follow the model too
        if step.snapshot is not None:
            check_updates(transitions, previous, step.snapshot, source=source, key=f"{step.key}.snapshot")
            previous = step.snapshot
    adversary = Adversary.from_mapping(doc.get("adversary"), source=source, schema=schema)

    specs: list[AttackSpec] = []
    spec = doc.get("attacks") or []
    if not isinstance(spec, list):
        raise InputError("attacks must be a list of {name: {params}}", file=source, key="attacks")
    for j, item in enumerate(spec):
        key = f"attacks[{j}]"
        if isinstance(item, str):
            name, params = item, {}
        elif isinstance(item, Mapping) and len(item) == 1:
            (name, params), = item.items()
            params = params or {}
        else:
            raise InputError("each attack is a name or {name: {params}}", file=source, key=key)
        if not isinstance(params, Mapping):
            raise InputError("attack parameters must be a mapping", file=source, key=f"{key}.{name}")
        specs.append(AttackSpec(name=str(name), params=dict(params), key=f"{key}.{name}"))

    lines = doc.get("expect") or []
    if not isinstance(lines, list):
        raise InputError("expect must be a list of strings", file=source, key="expect")
    purpose = doc.get("purpose", "certification")
    if purpose not in PURPOSES:
        raise InputError(f"must be one of {', '.join(PURPOSES)}, got {purpose!r}", file=source, key="purpose")
    waive = doc.get("waive") or []
    if not isinstance(waive, list) or not all(isinstance(w, str) for w in waive):
        raise InputError("waive must be a list of baseline names like 'possible_worlds.disclosed'", file=source,
                         key="waive")
    for text_key in ("name", "description"):
        if isinstance(doc.get(text_key), (Mapping, list)):
            raise InputError("must be a text, not a mapping or a list", file=source, key=text_key)
    name = doc.get("name") or Path(path).stem
    return Scenario(path=Path(path), name=str(name), description=str(doc.get("description") or ""), seed=seed,
                    schema=schema, data=data, dynamics=dynamics, transitions=transitions, steps=steps,
                    adversary=adversary, attack_specs=specs,
                    expect_lines=[(line, f"expect[{j}]") for j, line in enumerate(lines)], targets=targets,
                    applied=applied, purpose=purpose, waive=[(w, f"waive[{j}]") for j, w in enumerate(waive)])


#: input files (release files, the data, insertions) of this many bytes in all (two files or more) are read by
#: the executor's workers, one task each
_PARALLEL_BYTES = 16_000_000


def _read_input_task(task: tuple, schema: Schema) -> Any:
    """One input file read by a worker: a release file parsed (:func:`read_release_bytes`; its bytes as sent,
    else read here from its path), or the bad input it holds; a table (``("table", spec, base, key)``: the
    data or an insertion, its leaf codes computed here; :func:`read_table` numbers their records from 1), or
    a part of one (``("table", spec, base, key, first_id, lines)``, :func:`_table_parts`), or ``None`` when it
    cannot be read (read again in its turn, to say why)."""
    if task[0] == "table":  # a part of a table: numbered from first_id, its records where lines says
        _, spec, base, key, *part = task
        first_id, lines = part or (1, None)
        try:
            table = read_table(schema, spec, base=base, source=None, key=key, first_id=first_id, lines=lines)
        except InputError:
            return None
        table.qi_codes, table.leaf_counts  # the leaf codes and counts computed by the worker travel with the table
        return table
    data, path, separator, anatomy, notation = task
    try:
        if data is None:
            try:
                data = Path(path).read_bytes()
            except OSError as exc:
                raise InputError(f"cannot read ({exc.strerror})", file=path) from None
        release = read_release_bytes(data, schema, source=path, separator=separator, anatomy=anatomy,
                                     notation=notation)
    except InputError as exc:
        return exc
    release.sensitive_codes  # factorized by the worker, they travel with the release
    return release


def _table_jobs(doc: Mapping, base: Path) -> list[tuple[str, Mapping, Path]]:
    """The tables of a scenario read from files: ``(key, spec, path)`` of ``data`` and of every insertion of
    ``dynamics`` given as ``{file: ...}`` (what :func:`read_table` reads under that key), when
    :func:`file_spec` takes the spec (one it refuses is read in its turn, to say why)."""
    out = []
    specs = [("data", doc.get("data"))]
    dyn = doc.get("dynamics")
    if isinstance(dyn, Mapping) and "stream" not in dyn:
        specs += [(f"dynamics.{i}.insert", c.get("insert")) for i, c in dyn.items() if isinstance(c, Mapping)]
    for key, spec in specs:
        if isinstance(spec, Mapping) and "rows" not in spec:
            try:
                out.append((key, spec, file_spec(spec, base=base, source=None, key=key)[0]))
            except InputError:
                continue
    return out


def _read_ahead(doc: Mapping, releases: Any, schema: Schema, base: Path, source: str,
                meanwhile: Callable[[], Any] | None = None) -> tuple[dict, dict]:
    """The input files of a scenario read at once by the current executor (:mod:`solver.executor`), one task
    per file (issue 28: reading is most of what ``certify`` does outside the attacks): ``({release index:
    Release or the InputError it raised}, {read_table key: Table})``, each taken (and an error raised) in its
    turn by :func:`_load_step` and :func:`read_table`, so that bad input is told in the same order as when the
    files were read one by one.  Both empty for fewer than two files, or small ones with local processes; a
    remote cluster reads the release files only (sent their bytes) - the tables' files are where this
    process runs."""
    from solver.executor import LocalExecutor, current_executor

    from .arx import notation_of

    jobs = []
    for i, item in enumerate(releases if isinstance(releases, list) else [], 1):
        if not isinstance(item, Mapping) or "file" not in item or "publisher" in item:
            continue
        path = Path(str(item["file"]))
        path = path if path.is_absolute() else base / path
        anatomy = item.get("anatomy", False)
        if not path.is_file() or not isinstance(anatomy, bool):
            continue
        try:
            notation = notation_of(item.get("notation"), key=f"releases[{i - 1}].notation", file=source)
        except InputError:
            continue  # told by _load_step
        sep = item.get("separator")
        jobs.append((i, path, None if sep is None else str(sep), anatomy, notation))
    ex = current_executor()
    remote = getattr(ex, "name", "") == "dask" and getattr(ex, "address", None) != "local"
    tables = [] if remote else _table_jobs(doc, base)
    sizes = [j[1].stat().st_size for j in jobs] + [t[2].stat().st_size for t in tables]
    if not sizes or (isinstance(ex, LocalExecutor) and sum(sizes) < _PARALLEL_BYTES):
        return {}, {}
    # a worker on this machine reads the file itself (a file of 10^7 records is half a gigabyte that this
    # process need not hold and send), a large table in parts; a remote cluster is sent its bytes
    tasks: list = []
    costs: list[float] = []
    owner: list[str | None] = []  # the table key of each task (None: a release file)
    scans: dict = {}  # a file's line breaks, for every table read from it
    for key, spec, path in tables:
        parts = _table_parts(spec, base, scans)
        if parts is None:
            tasks.append(("table", spec, base, key))
            costs.append(_read_cost(path, spec))
        else:
            for part_spec, first_id, lines in parts:
                tasks.append(("table", part_spec, base, key, first_id, lines))
                costs.append(_TABLE_COST * (lines[2] - lines[1]))
        owner += [key] * (len(tasks) - len(owner))
    scans.clear()  # not held while the files are read (10^7 records: 80 MB of positions)
    for i, path, sep, anatomy, notation in jobs:
        try:
            tasks.append((path.read_bytes() if remote else None, str(path), sep, anatomy, notation))
        except OSError:
            return {}, {}  # read_release_csv says why
        costs.append(_read_cost(path))
        owner.append(None)
    if len(tasks) < 2:
        return {}, {}
    # handed out the costliest first, so that the workers end together (on the census of issue 28 with two
    # workers, the data read at once: the data, then the release files, then the insertion - 4.3 s instead of
    # 4.8 s; in parts: the release files, then the data's four parts, then the insertion)
    order = sorted(range(len(tasks)), key=lambda k: -costs[k])
    done: list = [None] * len(tasks)
    for k, out in zip(order, ex.map(_read_input_task, [tasks[k] for k in order], shared=schema,
                                    meanwhile=meanwhile, keep=True)):
        done[k] = out
    read = {}
    for key, _, _ in tables:  # a table read in parts is put together (a part that failed: read in its turn)
        outs = [out for out, o in zip(done, owner) if o == key]
        if outs and all(out is not None for out in outs):
            table = Table.concat(outs)
            if table is not None:
                read[key] = table
    files = {job[0]: out for job, out in zip(jobs, [out for out, o in zip(done, owner) if o is None])}
    return files, read


#: a table file of more records than this is read in parts of at most this many, one task each (issue 28)
_PART_ROWS = 250_000


def _table_parts(spec: Mapping, base: Path, scans: dict | None = None
                 ) -> list[tuple[dict, int, tuple[bytes, int, int]]] | None:
    """A table file (``spec``, a CSV file of :func:`_table_jobs`) cut into parts of at most
    :data:`_PART_ROWS` records, as even as can be, when it has more and every line of it is a record
    (:func:`~multirelease.formats.csv_read.line_breaks`): per part, the ``spec`` of its records (its
    ``offset`` and ``limit``), the number of its first record from 1, and where its records are; ``None``
    otherwise (read in one task), also when ``spec`` would be refused (:func:`read_table` says why).  The
    parts put together (:meth:`Table.concat`) are the table read at once (the census of issue 28: its data's
    900,000 records in four parts read side by side).  ``scans`` keeps each file's line breaks for the other
    tables read from it (the census of 10^7 records: its data and its insertion, one scan of 0.8 GB)."""
    from .csv_read import line_breaks, line_ranges

    try:
        path, sep, offset, limit = file_spec(spec, base=base, source=None, key="")
    except InputError:
        return None  # read_table says why
    if path.suffix.lower() == ".parquet" or sep in " \t":
        return None  # pyarrow reads neither in parts (read_csv_frame)
    scans = {} if scans is None else scans
    try:
        if limit is not None and limit <= _PART_ROWS or path.stat().st_size < 2 * _PART_ROWS:
            return None  # a part's records at most (a line holds two bytes or more): the file is not looked through
        if path not in scans:
            scans[path] = line_breaks(path)
        cut = line_ranges(path, offset, limit, rows=_PART_ROWS, breaks=scans[path]) if scans[path] else None
    except OSError:
        return None  # read_table says why
    if cut is None or len(cut[1]) < 2:
        return None
    header, ranges = cut
    ends = [first for _, _, first in ranges[1:]] + [None if limit is None else offset + limit]
    return [({**spec, "offset": first, "limit": (end - first) if end is not None else None}, first - offset + 1,
             (header, start, stop)) for (start, stop, first), end in zip(ranges, ends)]


#: a table's read costs this many times a release file's of as many bytes (its leaf codes are computed too:
#: on the census of issue 28, 900,000 records read as the data in 3.2 s, as a release in 2.0 s)
_TABLE_COST = 1.6


def _read_cost(path: Path, spec: Mapping | None = None) -> float:
    """What reading a file costs, roughly, to hand out the costliest first: its bytes - for a table
    (``spec``), those of the records it reads (``offset``, ``limit``: its records counted from the length of its
    first lines), times :data:`_TABLE_COST`.  Only the order of the tasks depends on it, never a result."""
    size = float(path.stat().st_size)
    if spec is None:
        return size
    offset, limit = spec.get("offset", 0), spec.get("limit")
    if path.suffix.lower() != ".parquet" and isinstance(offset, int) and isinstance(limit, (int, type(None))) \
            and (offset or limit):
        with open(path, "rb") as f:
            head = f.read(1 << 20)
        lines = head.count(b"\n")
        if lines > 1:
            per = len(head) / lines
            rows = max(0.0, size / per - 1 - offset)
            size = (rows if limit is None else min(float(limit), rows)) * per
    return _TABLE_COST * size


def _load_step(i: int, item: Any, schema: Schema, data: Table | None, base: Path, source: str,
               files: Mapping[int, Any] | None = None) -> ReleaseStep:
    key = f"releases[{i - 1}]"
    if not isinstance(item, Mapping):
        raise InputError("each release is {publisher: name, ...} or {file: path} or {rows: [...]}", file=source,
                         key=key)
    attributes = None
    if "attributes" in item:
        attrs = item["attributes"]
        if not isinstance(attrs, list) or not attrs:
            raise InputError("attributes must be a non-empty list", file=source, key=f"{key}.attributes")
        try:
            attributes = schema.restrict([str(a) for a in attrs])
        except InputError as exc:
            raise exc.located(file=source, key=f"{key}.attributes") from None
    if "publisher" in item:
        name = item["publisher"]
        if not isinstance(name, str):
            raise InputError(f"unknown publisher {name!r} (a publisher is named by a string)", file=source,
                             key=f"{key}.publisher")
        params = {k: v for k, v in item.items() if k not in ("publisher", "attributes")}
        if data is None:
            raise InputError("a published release needs the raw table: give 'data'", file=source, key=key)
        return ReleaseStep(index=i, publisher_name=name, params=params, attributes=attributes, key=key)
    allowed = {"file", "rows", "counterfeits", "snapshot", "separator", "anatomy", "notation"}
    unknown = set(item) - allowed - {"attributes"}
    if unknown:
        raise InputError(f"unknown key '{sorted(unknown)[0]}'", file=source, key=key)
    anatomy = item.get("anatomy", False)
    if not isinstance(anatomy, bool):  # an anatomy-style release: QIs published as they are, the group links
        raise InputError(f"must be true or false, got {anatomy!r}", file=source, key=f"{key}.anatomy")
    counterfeits = None
    if "counterfeits" in item:
        counterfeits = _load_counterfeits(item["counterfeits"], base, source, f"{key}.counterfeits")
    if "file" in item:
        path = Path(str(item["file"]))
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise InputError(f"release file '{item['file']}' not found", file=source, key=f"{key}.file")
        from .arx import notation_of  # notation: native | arx (default: told from the file)

        sep = item.get("separator")
        notation = notation_of(item.get("notation"), key=f"{key}.notation", file=source)
        release = (files or {}).get(i)
        if isinstance(release, InputError):
            raise release
        if release is None:
            release = read_release_csv(path, schema, separator=None if sep is None else str(sep), anatomy=anatomy,
                                       notation=notation)
        if counterfeits is not None:
            from dataclasses import replace

            release = replace(release, counterfeits=counterfeits)
            unknown = set(counterfeits) - set(release.group.tolist()) if release.group is not None else set()
            if unknown:
                cf_file = item["counterfeits"].get("file") if isinstance(item["counterfeits"], Mapping) else None
                raise InputError(f"counterfeits for group {min(unknown)}, which {path.name} does not have",
                                 file=str(cf_file or source), key=None if cf_file else f"{key}.counterfeits")
    elif "rows" in item:
        rows = item["rows"]
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise InputError("rows must be a list of mappings", file=source, key=f"{key}.rows")
        frame = pd.DataFrame([{str(k): _text(v) for k, v in r.items()} for r in rows], dtype=object)
        if frame.isna().any().any():
            raise InputError("every row must give every column", file=source, key=f"{key}.rows")
        try:
            release = release_from_frame(schema, frame, source=source, counterfeits=counterfeits, anatomy=anatomy)
        except InputError as exc:
            raise InputError(exc.problem, file=source, key=f"{key}.rows {exc.key or ''}".strip()) from None
    else:
        raise InputError("needs 'publisher', 'file' or 'rows'", file=source, key=key)
    if attributes is not None and set(attributes) != set(release.attributes):
        raise InputError("attributes do not match the release's columns", file=source, key=f"{key}.attributes")
    snapshot = None
    if "snapshot" in item:
        snapshot = read_table(schema, item["snapshot"], base=base, source=source, key=f"{key}.snapshot")
    return ReleaseStep(index=i, given=release, snapshot=snapshot, key=key)


def _load_counterfeits(spec: Any, base: Path, source: str, key: str) -> dict[int, int]:
    if isinstance(spec, Mapping) and "file" in spec:
        path = Path(str(spec["file"]))
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise InputError(f"counterfeits file '{spec['file']}' not found", file=source, key=f"{key}.file")
        return counterfeits_from_frame(pd.read_csv(path, dtype=str, keep_default_na=False), source=str(path))
    if isinstance(spec, Mapping) and "rows" in spec and isinstance(spec["rows"], list):
        try:
            return counterfeits_from_frame(pd.DataFrame(spec["rows"], dtype=object), source=source)
        except InputError as exc:
            raise InputError(exc.problem, file=source, key=key) from None
    raise InputError("counterfeits must be {file: path} or {rows: [{group, counterfeits}]}", file=source, key=key)


def _load_dynamics(spec: Any, schema: Schema, data: Table | None, n_releases: int, base: Path,
                   source: str, tables: Mapping[str, Table] | None = None) -> dict[int, Change]:
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise InputError("dynamics must map a release index (from 1) to {insert, delete, update}", file=source,
                         key="dynamics")
    if data is None:
        raise InputError("dynamics need the raw table: give 'data'", file=source, key="dynamics")
    out: dict[int, Change] = {}
    next_id = len(data) + 1
    for idx, change in spec.items():
        key = f"dynamics.{idx}"
        if not isinstance(idx, int) or not 1 <= idx <= n_releases:
            raise InputError(f"release index must be an integer in 1..{n_releases}", file=source, key=key)
        out[idx] = Change.from_mapping(schema, change, base=base, source=source, key=key, next_id=next_id,
                                       prefetched=tables)
        if out[idx].insert is not None:
            next_id += len(out[idx].insert)
    return dict(sorted(out.items()))


def _load_stream(spec: Mapping, schema: Schema, data: Table | None, n_releases: int, transitions, seed: int,
                 source: str) -> tuple[Table, dict[int, Change]]:
    """``dynamics: {stream: {...}}`` - a generated update stream (multirelease.model.dynamics); the first snapshot
    (a sample of ``data``) replaces ``data``."""
    from multirelease.model.dynamics import generate_stream, load_stream

    if set(spec) != {"stream"}:
        other = sorted(str(k) for k in spec if k != "stream")[0]
        raise InputError("a generated stream cannot be mixed with explicit changes", file=source,
                         key=f"dynamics.{other}")
    if data is None:
        raise InputError("dynamics need the raw table: give 'data'", file=source, key="dynamics")
    params = load_stream(spec["stream"], schema, source=source)
    stream_seed = seed if params["seed"] is None else params["seed"]
    rng = np.random.default_rng([stream_seed, 5])
    return generate_stream(data, n_releases, params, transitions, rng, source=source)


def _text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
