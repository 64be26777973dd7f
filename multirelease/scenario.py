"""YAML scenarios: loading (everything validated before anything runs) and running.

Top-level keys (DESIGN.md): ``name``, ``description``, ``seed``, ``schema``, ``data``, ``dynamics``,
``transitions``, ``releases``, ``adversary``, ``attacks``, ``expect``.  Paths are relative to the scenario
file.  :func:`load_scenario` raises :class:`~multirelease.errors.InputError` naming the file, the key and the
problem; :func:`run_scenario` then publishes / reads every release, runs every attack on what the adversary
sees, and judges the expectations.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
import yaml

from .errors import InputError
from .expect import Expectation, parse_expectation, verdict_of
from .release import Release, ReleaseTruth, counterfeits_from_frame, read_release_csv, release_from_frame
from .schema import Schema
from .sequence import Adversary, ReleaseSequence
from .table import Change, Table, read_table

__all__ = ["Scenario", "ReleaseStep", "load_scenario", "load_scenario_document", "load_yaml", "run_scenario", "ScenarioRun", "TOP_KEYS"]

TOP_KEYS = ("name", "description", "seed", "schema", "data", "dynamics", "transitions", "releases", "adversary",
            "attacks", "expect")


@dataclass(eq=False)
class ReleaseStep:
    """One item of ``releases``: a publisher to run, or a release given as published."""

    index: int
    publisher: Any = None  # a publishers.PublisherBase
    publisher_name: str | None = None
    attributes: tuple[str, ...] | None = None
    given: Release | None = None
    snapshot: Table | None = None


@dataclass(eq=False)
class Scenario:
    path: Path
    name: str
    description: str
    seed: int
    schema: Schema
    data: Table | None
    dynamics: dict[int, Change]
    transitions: Any  # a multirelease.transitions.TransitionModel, or None
    steps: list[ReleaseStep]
    adversary: Adversary
    attacks: list[tuple[str, Any]]
    expect: list[Expectation]

    @property
    def source(self) -> str:
        return str(self.path)


def load_yaml(path: str | Path) -> tuple[dict, Path]:
    """Read a YAML mapping; missing files and malformed YAML become one-line :class:`InputError`."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed YAML: {problem}", file=str(path), key=where) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=str(path)) from None
    if not isinstance(doc, dict):
        raise InputError("a scenario must be a YAML mapping", file=str(path))
    return doc, path.resolve().parent


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate a scenario file (nothing runs yet)."""
    doc, base = load_yaml(path)
    return load_scenario_document(doc, base=base, path=Path(path))


def load_scenario_document(doc: Mapping, *, base: Path, path: Path) -> Scenario:
    """Validate a scenario mapping read from ``path`` (relative paths resolve against ``base``)."""
    from attacks import ATTACKS
    from publishers import PUBLISHERS

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
    data = None
    if doc.get("data") is not None:
        data = read_table(schema, doc["data"], base=base, source=source, key="data")

    releases = doc.get("releases")
    if not isinstance(releases, list) or not releases:
        raise InputError("releases must be a non-empty list", file=source, key="releases")
    steps = []
    for i, item in enumerate(releases, 1):
        steps.append(_load_step(i, item, schema, data, base, source, PUBLISHERS))

    from .transitions import load_transitions

    transitions = load_transitions(doc.get("transitions"), schema, source=source)
    for step in steps:  # publishers that need the public update model (m-Distinct) get the scenario's
        bind = getattr(step.publisher, "bind_transitions", None)
        if bind is not None:
            bind(transitions)
    dyn_spec = doc.get("dynamics")
    if isinstance(dyn_spec, Mapping) and "stream" in dyn_spec:
        data, dynamics = _load_stream(dyn_spec, schema, data, len(steps), transitions, seed, source)
    else:
        dynamics = _load_dynamics(dyn_spec, schema, data, len(steps), base, source)
    table = data
    for idx, change in dynamics.items():  # validate every change against the table it will meet
        table = table.apply(change)
    adversary = Adversary.from_mapping(doc.get("adversary"), source=source)

    attacks: list[tuple[str, Any]] = []
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
        if name not in ATTACKS:
            raise InputError(f"unknown attack '{name}' (known: {', '.join(sorted(ATTACKS))})", file=source, key=key)
        if not isinstance(params, Mapping):
            raise InputError("attack parameters must be a mapping", file=source, key=f"{key}.{name}")
        attacks.append((name, ATTACKS[name](_file=source, _key=f"{key}.{name}", **params)))

    expect = []
    lines = doc.get("expect") or []
    if not isinstance(lines, list):
        raise InputError("expect must be a list of strings", file=source, key="expect")
    attack_names = {n for n, _ in attacks}
    for j, line in enumerate(lines):
        e = parse_expectation(line, file=source, key=f"expect[{j}]")
        validate_expectation(e, dict(attacks), len(steps), file=source, key=f"expect[{j}]")
        expect.append(e)
    del attack_names

    name = doc.get("name") or Path(path).stem
    return Scenario(path=Path(path), name=str(name), description=str(doc.get("description") or ""), seed=seed,
                    schema=schema, data=data, dynamics=dynamics, transitions=transitions, steps=steps,
                    adversary=adversary, attacks=attacks, expect=expect)


def validate_expectation(e: Expectation, attacks: Mapping[str, Any], n_releases: int, *, file: str | None,
                         key: str | None) -> None:
    """An expectation must name an attack of the scenario and one of its metrics, or a release metric."""
    from .report import RELEASE_METRICS

    if e.subject == "release":
        if not 1 <= e.index <= n_releases:
            raise InputError(f"'{e.text}': there is no release {e.index} (1..{n_releases})", file=file, key=key)
        if e.metric not in RELEASE_METRICS:
            raise InputError(f"'{e.text}': unknown release metric '{e.metric}' "
                             f"(known: {', '.join(RELEASE_METRICS)})", file=file, key=key)
        return
    if e.subject not in attacks:
        raise InputError(f"'{e.text}': attack '{e.subject}' is not run by this scenario", file=file, key=key)
    metrics = getattr(attacks[e.subject], "metrics", ())
    if metrics and e.metric not in metrics:
        raise InputError(f"'{e.text}': {e.subject} has no metric '{e.metric}' (known: {', '.join(metrics)})",
                         file=file, key=key)


def _load_step(i: int, item: Any, schema: Schema, data: Table | None, base: Path, source: str,
               publishers: Mapping[str, Any]) -> ReleaseStep:
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
        if not isinstance(name, str) or name not in publishers:
            raise InputError(f"unknown publisher '{name}' (known: {', '.join(sorted(publishers))})", file=source,
                             key=f"{key}.publisher")
        params = {k: v for k, v in item.items() if k not in ("publisher", "attributes")}
        publisher = publishers[name](_file=source, _key=key, **params)
        if data is None:
            raise InputError("a published release needs the raw table: give 'data'", file=source, key=key)
        return ReleaseStep(index=i, publisher=publisher, publisher_name=name, attributes=attributes)
    allowed = {"file", "rows", "counterfeits", "snapshot", "separator"}
    unknown = set(item) - allowed - {"attributes"}
    if unknown:
        raise InputError(f"unknown key '{sorted(unknown)[0]}'", file=source, key=key)
    counterfeits = None
    if "counterfeits" in item:
        counterfeits = _load_counterfeits(item["counterfeits"], base, source, f"{key}.counterfeits")
    if "file" in item:
        path = Path(str(item["file"]))
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise InputError(f"release file '{item['file']}' not found", file=source, key=f"{key}.file")
        release = read_release_csv(path, schema, separator=str(item.get("separator", ",")))
        if counterfeits is not None:
            from dataclasses import replace

            release = replace(release, counterfeits=counterfeits)
    elif "rows" in item:
        rows = item["rows"]
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise InputError("rows must be a list of mappings", file=source, key=f"{key}.rows")
        frame = pd.DataFrame([{str(k): _text(v) for k, v in r.items()} for r in rows], dtype=object)
        if frame.isna().any().any():
            raise InputError("every row must give every column", file=source, key=f"{key}.rows")
        try:
            release = release_from_frame(schema, frame, source=source, counterfeits=counterfeits)
        except InputError as exc:
            raise InputError(exc.problem, file=source, key=f"{key}.rows {exc.key or ''}".strip()) from None
    else:
        raise InputError("needs 'publisher', 'file' or 'rows'", file=source, key=key)
    if attributes is not None and set(attributes) != set(release.attributes):
        raise InputError("attributes do not match the release's columns", file=source, key=f"{key}.attributes")
    snapshot = None
    if "snapshot" in item:
        snapshot = read_table(schema, item["snapshot"], base=base, source=source, key=f"{key}.snapshot")
    return ReleaseStep(index=i, given=release, snapshot=snapshot)


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
                   source: str) -> dict[int, Change]:
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
        out[idx] = Change.from_mapping(schema, change, base=base, source=source, key=key, next_id=next_id)
        if out[idx].insert is not None:
            next_id += len(out[idx].insert)
    return dict(sorted(out.items()))


def _load_stream(spec: Mapping, schema: Schema, data: Table | None, n_releases: int, transitions, seed: int,
                 source: str) -> tuple[Table, dict[int, Change]]:
    """``dynamics: {stream: {...}}`` - a generated update stream (multirelease.dynamics); the first snapshot
    (a sample of ``data``) replaces ``data``."""
    from .dynamics import generate_stream, load_stream

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


# ---------------------------------------------------------------------- running
@dataclass(eq=False)
class ScenarioRun:
    """Everything a run produced: the sequence (with its hidden truths), attack results, judged expectations."""

    scenario: Scenario
    sequence: ReleaseSequence
    results: dict = field(default_factory=dict)
    judged: list = field(default_factory=list)  # (Expectation, value, holds: bool | None)
    timings: dict = field(default_factory=dict)
    release_metrics: list = field(default_factory=list)
    states: list = field(default_factory=list)  # each publisher's serialized state after each release

    @property
    def verdict(self) -> str:
        return verdict_of(self.judged)


Step = Callable[[str, int, int], None]


def run_scenario(scenario: Scenario, progress: Step | None = None) -> ScenarioRun:
    """Publish or read every release, run the attacks on the adversary's view, judge the expectations."""
    import time

    from .report import compute_release_metrics

    notify = progress or (lambda *_: None)
    seq = ReleaseSequence()
    table = scenario.data
    states: dict[str, dict] = {}
    run = ScenarioRun(scenario=scenario, sequence=seq)
    total = len(scenario.steps) + len(scenario.attacks)
    for step in scenario.steps:
        notify(f"release {step.index}", step.index - 1, total)
        t0 = time.perf_counter()
        change = scenario.dynamics.get(step.index)
        if change is not None:
            table = table.apply(change)
        if step.publisher is not None:
            rng = np.random.default_rng([scenario.seed, step.index])
            name = step.publisher_name
            try:
                result = step.publisher.publish(table, attributes=step.attributes, state=states.get(name), rng=rng)
            except InputError as exc:  # e.g. a principle the table cannot satisfy: name the release
                raise exc.located(file=scenario.source, key=f"releases[{step.index - 1}]") from None
            states[name] = result.state
            run.states.append(result.state)
            seq.append(result.release, result.truth, table)
        else:
            snap = step.snapshot if step.snapshot is not None else table
            seq.append(step.given, None, snap)
            run.states.append({})
        run.timings[f"release {step.index}"] = time.perf_counter() - t0
        run.release_metrics.append(compute_release_metrics(seq.releases[-1], seq.snapshots[-1]))
    view = seq.view(scenario.adversary, scenario.transitions)
    for j, (name, attack) in enumerate(scenario.attacks):
        notify(f"attack {name}", len(scenario.steps) + j, total)
        t0 = time.perf_counter()
        try:
            run.results[name] = attack.run(view)
        except InputError as exc:
            raise exc.located(file=scenario.source, key=f"attacks[{j}].{name}") from None
        run.timings[f"attack {name}"] = time.perf_counter() - t0
    notify("done", total, total)
    run.judged = judge(scenario.expect, run.results, run.release_metrics)
    return run


def judge(expectations, results: Mapping[str, Any], release_metrics: list) -> list:
    """Judge each expectation on the interval its metric is known to lie in."""
    judged = []
    for e in expectations:
        if e.subject == "release":
            value = release_metrics[e.index - 1].get(e.metric)
            if value is None:
                judged.append((e, None, None))
                continue
            judged.append((e, value, e.judge(float(value), float(value))))
            continue
        res = results[e.subject]
        if e.metric not in res.summary and e.metric not in res.bounds:
            judged.append((e, None, None))
            continue
        low, high = res.interval(e.metric)
        value = res.summary[e.metric] if res.is_proven(e.metric) else None
        judged.append((e, value, e.judge(low, high)))
    return judged
