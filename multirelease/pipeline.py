"""The one pipeline behind ``run``, ``certify`` and ``publish``: build the sequence -> attack it -> judge.

This is the module of the core that imports the ``publishers`` and ``attacks`` registries (DESIGN.md:
dependencies point one way).  Every front end goes through the same three steps, so that ``certify`` of the
files ``run --out`` wrote, with the scenario's own YAML, reaches the same figures and the same verdict:

1. **build the sequence** (:func:`build_sequence`): the data, the dynamics applied once per release (the one
   place that applies them), each release published by its publisher from its state or read as published,
   the hidden truths kept apart from what the adversary sees (:class:`~multirelease.model.sequence.ReleaseSequence`
   and its :meth:`~multirelease.model.sequence.ReleaseSequence.view`);
2. **attack** (:func:`run_attacks`): every attack of the plan on the adversary's view only;
3. **judge** (:func:`judge`): every requirement on the interval its metric is proven to lie in - it holds when
   the whole interval satisfies it, fails when none of it does, else it is UNKNOWN; no requirement at all is
   verdict ``none`` ("nothing was checked"), never PASS.

A plan is a :class:`~multirelease.formats.scenario.Scenario` whose publishers, attacks and requirements are built
(:func:`plan`); :func:`load_scenario` reads one from a scenario file (``run``, ``publish``) and
:func:`certify_plan` from a spec and release files (``certify``).  Requirements are one list whatever their
origin: the YAML's ``expect`` lines, ``--require`` lines, and every attack's *baseline* (issue 30,
:func:`baselines`: what "no one is disclosed" means for it, raised by its own parameters and by what the
releases claim), which ``--require`` adds to and never replaces, and which is waived only by name
(``waive`` / ``--waive``, shown in the verdict).  A ``purpose: research`` scenario's ``expect`` lines are
*expectations* (a paper's figures: reproduced or not) judged apart from the privacy verdict; ``run`` of it
exits by them, ``certify`` and ``release`` by the requirements.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

from .errors import InputError
from .expect import EXIT_CODES, Expectation, parse_expectation, verdict_of
from multirelease.formats.scenario import TARGETS, Scenario, load_yaml, parse_scenario
from multirelease.model.sequence import ReleaseSequence

__all__ = ["Judgement", "ScenarioRun", "load_scenario", "load_scenario_document", "load_yaml", "plan", "certify_plan",
           "build_sequence", "run_attacks", "judge", "run_scenario", "resolve_targets", "ledger_plan",
           "run_ledger_step"]

#: progress callback ``(description, done, total)``
Step = Callable[[str, int, int], None]


class Judgement(NamedTuple):
    """One requirement judged: its proven ``value`` (None when the metric is an interval), whether it
    ``holds`` (True / False / None = unknown), the interval ``[lower, upper]`` it was judged on (``None``
    sides are open) with the ``reason`` it is not a value, and where the requirement came from
    (``expect``, ``require`` or ``default``)."""

    expectation: Expectation
    value: float | None
    holds: bool | None
    lower: float | None = None
    upper: float | None = None
    reason: str = ""
    detail: str = ""
    source: str = "expect"
    #: ``requirement`` (counts in the privacy verdict), ``expectation`` (a research figure: reproduced or not)
    #: or ``waived`` (a baseline waived by name: shown, not counted)
    kind: str = "requirement"


@dataclass(eq=False)
class ScenarioRun:
    """Everything one pass of the pipeline produced: the sequence (with its hidden truths), the attack
    results, the judged requirements, and the target population the attacks judged."""

    scenario: Scenario
    sequence: ReleaseSequence
    targets: str = "population"
    results: dict = field(default_factory=dict)
    judged: list = field(default_factory=list)  # Judgement
    timings: dict = field(default_factory=dict)
    release_metrics: list = field(default_factory=list)
    states: list = field(default_factory=list)  # each publisher's serialized state after each release
    #: a ledger step's attack states to keep (:func:`run_ledger_step`): name -> (parts, summary) or None
    gate: dict = field(default_factory=dict)
    #: the adversary's view the attacks read, made (and prepared) while the releases' metrics were computed
    view: Any = None

    @property
    def verdict(self) -> str:
        """The privacy verdict: the requirements (baselines included) only."""
        return verdict_of([j for j in self.judged if j.kind == "requirement"])

    @property
    def reproduced(self) -> str:
        """The expectations' answer (``pass``: every one reproduced; ``none``: the scenario has none)."""
        return verdict_of([j for j in self.judged if j.kind == "expectation"])

    @property
    def waived(self) -> list:
        """The baselines waived by name, judged (shown beside the verdict, never counted in it)."""
        return [j for j in self.judged if j.kind == "waived"]

    @property
    def exit_code(self) -> int:
        """``run`` of a research scenario exits by its expectations (the paper scenarios are regression
        tests); everything else by the privacy verdict."""
        if self.scenario.purpose == "research" and not self.scenario.certifying and self.reproduced != "none":
            return EXIT_CODES[self.reproduced]
        return EXIT_CODES[self.verdict]


# ---------------------------------------------------------------------- plans
def load_scenario(path: str | Path, *, waives: Sequence[str] = ()) -> Scenario:
    """Read, validate and build a scenario file (nothing runs yet); ``waives``: baselines waived by name."""
    doc, base = load_yaml(path)
    return load_scenario_document(doc, base=base, path=Path(path), waives=waives)


def load_scenario_document(doc: Mapping, *, base: Path, path: Path, waives: Sequence[str] = ()) -> Scenario:
    """Validate and build a scenario mapping read from ``path`` (paths resolve against ``base``)."""
    return plan(parse_scenario(doc, base=base, path=path), waives=waives)


def plan(scenario: Scenario, *, requires: Sequence[str] = (), extra_attacks: Sequence[str] = (),
         all_applicable: bool = False, waives: Sequence[str] = (),
         guarantee: tuple[str, Sequence[str]] | None = None) -> Scenario:
    """Build the publishers, attacks and requirements of a parsed scenario (all validated, nothing run).

    ``requires`` are requirement lines from the command line; ``extra_attacks`` replace the YAML's attacks
    (``certify --attack``); with ``all_applicable`` and no attack named, every registered attack that applies
    to the sequence is run (decided when the sequence is built), and every attack a requirement names;
    ``waives`` are baseline names from the command line (``--waive``), added to the YAML's ``waive``;
    ``guarantee`` is ``(publisher name, its guarantee's lines)`` judged as requirements (a ledger's gate:
    :func:`ledger_plan`), located at the spec's ``publisher``.
    """
    from attacks import ATTACKS
    from publishers import PUBLISHERS

    source = scenario.source
    for step in scenario.steps:
        if step.publisher_name is None or step.publisher is not None:
            continue
        name = step.publisher_name
        if name not in PUBLISHERS:
            raise InputError(f"unknown publisher '{name}' (known: {', '.join(sorted(PUBLISHERS))})", file=source,
                             key=f"{step.key}.publisher")
        step.publisher = PUBLISHERS[name](_file=source, _key=step.key, **step.params)
        bind = getattr(step.publisher, "bind_transitions", None)
        if bind is not None:  # publishers that need the public update model (m-Distinct) get the scenario's
            bind(scenario.transitions)
        bind = getattr(step.publisher, "bind_adversary", None)
        if bind is not None:  # publishers whose own check depends on the adversary (global_guarantee: values
            bind(scenario.adversary)  # persistent or free) check against the scenario's

    attacks: list[tuple[str, Any]] = []
    scenario.attack_origins = {}
    if extra_attacks:
        for name in extra_attacks:
            if name not in ATTACKS:
                raise InputError(f"unknown attack '{name}' (known: {', '.join(sorted(ATTACKS))})", key="--attack")
            attacks.append((name, ATTACKS[name]()))
            scenario.attack_origins.setdefault(name, (None, "--attack", None))
    else:
        for spec in scenario.attack_specs:
            if spec.name not in ATTACKS:
                raise InputError(f"unknown attack '{spec.name}' (known: {', '.join(sorted(ATTACKS))})",
                                 file=source, key=spec.key.rsplit(".", 1)[0])
            attacks.append((spec.name, ATTACKS[spec.name](_file=source, _key=spec.key, **spec.params)))
            scenario.attack_origins.setdefault(spec.name, (source, spec.key, None))
    scenario.attacks = attacks
    scenario.all_applicable = bool(all_applicable and not attacks)
    scenario.waive = list(scenario.waive) + [(w, "--waive") for w in waives]
    for name, key in scenario.waive:
        _check_waiver(name, ATTACKS, file=source if key != "--waive" else None, key=key)
    if not scenario.claims:
        scenario.claims = [step.publisher.claim_requirements() if step.publisher is not None else None
                           for step in scenario.steps]

    lines = [(line, key, "expect", source, "") for line, key in scenario.expect_lines]
    lines += [(line, "--require", "require", None, "") for line in requires]
    if guarantee is not None:  # the publisher's own claim, judged like a --require line, in the spec's words
        lines += [(line, "publisher", "require", source, f"{guarantee[0]}'s guarantee ") for line in guarantee[1]]
    scenario.expect = []
    scenario.expect_sources = []
    for line, key, origin, file, whose in lines:
        e = parse_expectation(line, file=file, key=key)
        _require_attack(e, scenario, ATTACKS, file=file, key=key,
                        strict=origin == "expect" and not scenario.all_applicable, whose=whose)
        scenario.expect.append(e)
        scenario.expect_sources.append(origin)
    return scenario


def _check_waiver(name: str, registry, *, file: str | None, key: str) -> None:
    """A waiver names a baseline line, ``<attack>.<metric>``: a registered attack and one of its metrics (the
    floors of :attr:`attacks.base.AttackBase.baseline`, or a metric its parameters or the releases' claims
    bound); one-line error otherwise."""
    subject, _, metric = str(name).partition(".")
    floors = sorted(f"{a}.{m}" for a, cls in registry.items() for m, _, _ in getattr(cls, "baseline", ()))
    if subject not in registry or metric not in tuple(getattr(registry[subject], "metrics", ())):
        raise InputError(f"'{name}' names no baseline: give <attack>.<metric> (the floors: {', '.join(floors)})",
                         file=file, key=key)


def _require_attack(e: Expectation, scenario: Scenario, registry, *, file: str | None, key: str | None,
                    strict: bool, whose: str = "") -> None:
    """A requirement names a release metric or a registered attack's metric.  An ``expect`` line of a YAML
    that lists its attacks must name one of them (``strict``); an attack any other requirement names that
    the plan does not run yet is added with its default parameters, and the line is kept as its origin
    (``whose``: ``"m_invariance's guarantee "`` for a publisher's claim) to word the attack's refusal."""
    from multirelease.reports.document import RELEASE_METRICS

    n = len(scenario.steps)
    if e.subject == "release":
        if e.release_index(n) is None:
            raise InputError(f"'{e.text}': there is no release {e.index} (1..{n}, or -1..-{n} from the newest)",
                             file=file, key=key)
        if e.metric not in RELEASE_METRICS:
            raise InputError(f"'{e.text}': unknown release metric '{e.metric}' "
                             f"(known: {', '.join(RELEASE_METRICS)})", file=file, key=key)
        return
    attacks = dict(scenario.attacks)
    if e.subject not in attacks:
        if strict:
            raise InputError(f"'{e.text}': attack '{e.subject}' is not run by this scenario", file=file, key=key)
        if e.subject not in registry:
            raise InputError(f"'{e.text}': unknown attack '{e.subject}' (known: {', '.join(sorted(registry))})",
                             file=file, key=key)
        scenario.attacks.append((e.subject, registry[e.subject]()))
        attacks[e.subject] = scenario.attacks[-1][1]
    if e.subject not in scenario.attack_origins:
        scenario.attack_origins[e.subject] = (file, key, f"{whose}'{e.text}'")
    metrics = getattr(attacks[e.subject], "metrics", ())
    if metrics and e.metric not in metrics:
        raise InputError(f"'{e.text}': {e.subject} has no metric '{e.metric}' (known: {', '.join(metrics)})",
                         file=file, key=key)


def certify_plan(spec_path: str | Path, release_files: Sequence[str | Path], *, requires: Sequence[str] = (),
                 attack_names: Sequence[str] = (), targets: str | None = None,
                 notation: str | None = None, waives: Sequence[str] = ()) -> Scenario:
    """The plan of ``certify``: the spec's schema, data, dynamics, adversary, attacks and ``expect``, with the
    release files (in publication order) in place of its releases.

    File ``i`` takes the place of the spec's release ``i``: a release the spec gives as published keeps its
    ``snapshot`` (the population behind it), the population behind any other is the spec's ``data`` after the
    dynamics up to ``i`` - exactly the sequence ``run`` built - so a scenario's own YAML certifies what its
    ``run --out`` wrote.  ``counterfeits_<i>.csv`` beside ``release_<i>.csv`` is read with it.  Attacks: those
    named, else the spec's ``attacks`` when it has the key, else every registered attack that applies.
    ``notation`` (``native`` / ``arx``) is the files' notation; ``None``: told from each file.
    """
    doc, base = load_yaml(spec_path)
    doc = dict(doc)
    yaml_releases = doc.get("releases") or []
    if not isinstance(yaml_releases, list):
        yaml_releases = []
    if release_files:
        items = []
        for j, f in enumerate(release_files, 1):
            p = Path(f).resolve()
            if not p.is_file():  # name the file given on the command line, not the spec
                raise InputError("release file not found", file=str(f), key=f"release {j}")
            item: dict[str, Any] = {"file": str(p)} if notation is None else {"file": str(p), "notation": notation}
            old = yaml_releases[j - 1] if j <= len(yaml_releases) else None
            if isinstance(old, Mapping):
                item.update({k: old[k] for k in ("snapshot", "attributes", "anatomy", "separator") if k in old})
            cf = p.with_name(p.name.replace("release_", "counterfeits_", 1)) if p.name.startswith("release_") else None
            if cf is not None and cf.is_file():
                item["counterfeits"] = {"file": str(cf)}
            items.append(item)
        n_files = len(items)
        # the spec's later releases still count for its dynamics (a generated stream depends on how many
        # releases it serves) but are not certified
        doc["releases"] = items + [dict(r) for r in yaml_releases[n_files:] if isinstance(r, Mapping)]
    elif not yaml_releases:
        raise InputError("give at least one release file", file=str(spec_path))
    else:
        for item in yaml_releases:
            if isinstance(item, Mapping) and "publisher" in item:
                raise InputError("certify reads releases as published, not publishers: give the release files",
                                 file=str(spec_path), key="releases")
        n_files = len(yaml_releases)
    if targets is not None:
        if targets not in TARGETS:
            raise InputError(f"must be one of {', '.join(TARGETS)}, got {targets!r}", key="--targets")
        doc["targets"] = targets
    has_attacks = "attacks" in doc
    scenario = parse_scenario(doc, base=base, path=Path(spec_path),
                              meanwhile=lambda: _import_ahead(doc.get("attacks"), attack_names))
    scenario.steps = scenario.steps[:n_files]
    scenario.certifying = True
    if release_files:  # what the spec says made each file: the releases claim it (the attacks' baselines)
        scenario.claims = [_spec_claims(yaml_releases[j], str(spec_path), f"releases[{j}]")
                           if j < len(yaml_releases) else None for j in range(n_files)]
    return plan(scenario, requires=requires, extra_attacks=attack_names, all_applicable=not has_attacks,
                waives=waives)


#: modules ``certify`` imports after reading its inputs whatever the attacks (the releases' metrics, the report)
_AFTER_READING = ("multirelease.model.metrics", "multirelease.model.principles", "multirelease.model.transitions",
                  "multirelease.reports.document")


def _import_ahead(spec_attacks: Any, attack_names: Sequence[str]) -> None:
    """Import what ``certify`` runs after reading its inputs - the attacks named (else the spec's, else all),
    each one's :attr:`~attacks.base.AttackBase.imports`, and :data:`_AFTER_READING` - while the executor's
    workers read the input files (issue 28: about 0.3 s of OR-Tools, SciPy and the engines, taken off the serial
    part), and has the executor's workers import them too (:meth:`solver.executor.Executor.imports`).  Only
    imports: a name that is not an attack, or a module that fails to import, is left to the step that needs it,
    which says what is wrong in its turn."""
    from attacks import ATTACKS
    from solver.executor import current_executor, import_modules

    names = list(attack_names)
    if not names and isinstance(spec_attacks, list):
        names = [next(iter(a)) for a in spec_attacks if isinstance(a, Mapping) and len(a) == 1]
    if not names and spec_attacks is None:
        names = list(ATTACKS)
    modules = list(_AFTER_READING)
    for name in names:
        try:
            modules += list(getattr(ATTACKS[name], "imports", ()))
        except Exception:  # noqa: BLE001 - a warm-up only: the step that needs the module says what is wrong
            continue
    current_executor().imports(modules)  # the workers too, where they were started before these imports
    import_modules(modules)


def _spec_claims(item: Any, source: str, key: str) -> tuple[str, ...] | None:
    """The lines a spec's release item claims when it names the publisher that made it (``None`` otherwise)."""
    from publishers import PUBLISHERS

    if not isinstance(item, Mapping) or not isinstance(item.get("publisher"), str) or \
            item["publisher"] not in PUBLISHERS:
        return None
    params = {k: v for k, v in item.items() if k not in ("publisher", "attributes")}
    return PUBLISHERS[item["publisher"]](_file=source, _key=key, **params).claim_requirements()


def ledger_plan(doc: Mapping, *, path: Path, base: Path, earlier: Sequence[tuple[Any, Any]],
                snapshot: Any = None, seed: int = 0) -> Scenario:
    """The plan of one step of a release ledger (issue 14, ``release`` and ``ledger --verify``).

    ``doc`` is a ledger spec (the scenario's ``schema``, ``transitions``, ``adversary``, ``attacks``, ``expect``,
    ``targets`` and ``publisher: {publisher: NAME, params...}``); ``earlier`` the releases the ledger holds,
    each ``(Release, snapshot Table)``, read as published with the population behind it; ``snapshot`` this
    month's raw table, published by the spec's publisher as the next release (``None``: certify ``earlier``
    only).  The requirements are the spec's ``expect`` lines plus the publisher's own guarantee
    (:meth:`publishers.base.PublisherBase.guarantee_requirements`), so the gate judges what the publisher
    claims with the same attacks as ``run`` and ``certify``.  ``seed`` seeds the publisher (the ledger's
    secret, never the spec).
    """
    from publishers import PUBLISHERS

    from multirelease.formats.scenario import ReleaseStep

    source = str(path)
    pub = doc.get("publisher")
    if not isinstance(pub, Mapping) or not isinstance(pub.get("publisher"), str):
        raise InputError("must be {publisher: NAME, params...}", file=source, key="publisher")
    name = pub["publisher"]
    if name not in PUBLISHERS:
        raise InputError(f"unknown publisher '{name}' (known: {', '.join(sorted(PUBLISHERS))})", file=source,
                         key="publisher.publisher")
    sdoc = {k: doc[k] for k in ("name", "description", "schema", "transitions", "adversary", "attacks", "expect",
                                "targets", "waive") if k in doc}
    sdoc["data"] = {"rows": []}
    sdoc["releases"] = [dict(pub)]
    scenario = parse_scenario(sdoc, base=base, path=path)
    step = scenario.steps[0]
    steps = [ReleaseStep(index=i, given=r, snapshot=s, key=f"ledger release {i}") for i, (r, s) in
             enumerate(earlier, 1)]
    if snapshot is not None:
        step.index, step.key = len(steps) + 1, "publisher"
        steps.append(step)
        scenario.data = snapshot
    scenario.steps = steps
    scenario.seed = seed
    params = {k: v for k, v in pub.items() if k not in ("publisher", "attributes")}
    claims = PUBLISHERS[name](_file=source, _key="publisher", **params)
    if len(steps) == 1 and getattr(claims, "guarantee_first", None):  # what a first release claims (bcf)
        claims.guarantee = claims.guarantee_first
    scenario.certifying = True
    # the earlier releases were made under the spec of their month (an --amend may have changed it): no claim
    # raises the baselines; the publisher's guarantee is judged as a requirement (an attack it needs that
    # cannot run is refused naming the guarantee, not an attack the spec never listed)
    scenario.claims = [None] * len(steps)
    return plan(scenario, guarantee=(name, claims.guarantee_requirements()))


def run_ledger_step(scenario: Scenario, resume: Any, progress: Step | None = None, *,
                    states: Mapping[str, dict] | None = None, built: ScenarioRun | None = None) -> ScenarioRun:
    """One ledger step with the gate extended by the new release (issue 14: the gate still certifies the
    whole sequence).  ``scenario`` is a :func:`ledger_plan` whose last step publishes the new release;
    ``resume`` (:class:`multirelease.ledger.gate.GateResume`) gives what the ledger kept of releases
    ``1 .. n - 1``: ``metrics()`` (their release metrics), ``state(name, attack)`` (an attack's state, or
    ``None``) and ``earlier()`` (the releases as published, with their snapshots, read only when needed).

    Only the new release is published.  Each attack that can be extended (:mod:`attacks.incremental`) is
    extended by it - from its kept state, else from the earlier releases folded in one at a time - and its new
    state is left in ``run.gate``; any other attack runs on the whole sequence.  The judgement is
    :func:`judge`'s, as in :func:`run_scenario`.  ``built``: the new release published already by
    :func:`build_sequence` from this very ``scenario`` (a repair candidate is published and costed before it
    is gated, :mod:`multirelease.ledger.repair`): it is not published again."""
    notify = progress or (lambda *_: None)
    step = scenario.steps[-1]
    if getattr(step.publisher, "state_for_sequence", None) is not None:
        # a publisher that reads the releases as published (bcf): the whole sequence, as run_scenario builds it
        for s, (release, snapshot) in zip(scenario.steps[:-1], resume.earlier()):
            s.given, s.snapshot = release, snapshot
        return run_scenario(scenario, progress, states=states)
    run = ScenarioRun(scenario=scenario, sequence=ReleaseSequence())
    total = 1 + len(scenario.attacks)
    if built is not None and built.scenario is scenario:
        run.sequence, run.states = built.sequence, list(built.states)
        run.release_metrics, run.timings = list(built.release_metrics), dict(built.timings)
    else:
        build_sequence(replace(scenario, steps=[step]), run, notify, total, states)
    run.release_metrics = list(resume.metrics()) + run.release_metrics
    run.targets = resolve_targets(scenario, run.sequence)
    for j, (name, attack) in enumerate(scenario.attacks):
        notify(f"attack {name}", 1 + j, total)
        t0 = time.perf_counter()
        try:
            run.results[name], run.gate[name] = _extend_attack(scenario, run, resume, name, attack, step.index)
        except InputError as exc:
            raise attack_refused(scenario, name, j, exc) from None
        run.timings[f"attack {name}"] = time.perf_counter() - t0
    run.judged = judge(requirements(scenario), run.results, run.release_metrics)
    notify("done", total, total)
    return run


def _extend_attack(scenario: Scenario, run: ScenarioRun, resume: Any, name: str, attack: Any, index: int):
    """``(result, (parts, summary) or None)``: the attack over releases ``1 .. index`` (see
    :func:`run_ledger_step`)."""
    def view(pairs):
        seq = ReleaseSequence()
        for release, snapshot in pairs:
            seq.append(release, None, snapshot)
        return seq.view(scenario.adversary, scenario.transitions, targets=run.targets)

    new = [(run.sequence.releases[-1], run.sequence.snapshots[-1])]
    attack = reads(scenario, name, attack)
    extend = getattr(attack, "extend", None)
    state = resume.state(name, attack) if extend is not None else None
    parts: list = []
    out: Any = NotImplemented if extend is None else None
    if extend is not None and state is None and index > 1:
        # not kept: the earlier releases folded in, without the prefixes' results where the attack can (fold)
        fold = getattr(attack, "fold", None) or (lambda s, v, i: _state_of(extend(s, v, i)))
        for i, pair in enumerate(resume.earlier(), 1):
            state = fold(state, view([pair]), i)
            if state is NotImplemented:
                out = NotImplemented
                break
            parts.append(attack.state_parts(state)[0])
    if out is not NotImplemented:
        out = extend(state, view(new), index)
    if out is NotImplemented:  # not extendable: the whole sequence
        return attack.run(view(list(resume.earlier()) + new)), None
    part, summary = attack.state_parts(out[1])
    return out[0], (parts + [part], summary)


def _state_of(out: Any) -> Any:
    """The state of an ``extend`` answer (``NotImplemented`` stays so)."""
    return out if out is NotImplemented else out[1]


def resolve_targets(scenario: Scenario, sequence: ReleaseSequence) -> str:
    """The explicit target population: the scenario's ``targets``, else ``population`` when every release
    has the population behind it, else ``regions``."""
    known = len(sequence.snapshots) > 0 and all(s is not None for s in sequence.snapshots)
    if scenario.targets is None:
        return "population" if known else "regions"
    if scenario.targets == "population" and not known:
        missing = next(i for i, s in enumerate(sequence.snapshots, 1) if s is None)
        raise InputError(f"targets: population needs the population behind every release (release {missing} has "
                         "none: give 'data' or a 'snapshot')", file=scenario.source, key="targets")
    return scenario.targets


# ---------------------------------------------------------------------- 1. build the sequence
def build_sequence(scenario: Scenario, run: ScenarioRun, notify: Step, total: int,
                   states: Mapping[str, dict] | None = None, ahead: Callable[[], Any] | None = None) -> None:
    """Publish or read every release into ``run.sequence``: the one place where dynamics are applied.
    ``states`` (publisher name -> state) continues a sequence made earlier (a ledger's step); ``ahead`` runs
    here while the executor's workers compute the releases' metrics (:func:`_prepare_attacks`)."""
    from multirelease.reports.document import compute_metrics_all

    seq = run.sequence
    table = scenario.data
    states = dict(states or {})
    built = []
    for step in scenario.steps:
        notify(f"release {step.index}", step.index - 1, total)
        t0 = time.perf_counter()
        change = scenario.dynamics.get(step.index)
        if change is not None and table is not None:
            before, done, after = scenario.applied.get(step.index, (None, None, None))
            # validation applied this very change to this very table already (the same objects): reuse it
            table = after if before is table and done is change else table.apply(change)
        if step.publisher is not None:
            rng = np.random.default_rng([scenario.seed, step.index])
            name = step.publisher_name
            state = states.get(name)
            # a publisher that must meet its principle over the whole sequence (bcf after an R1 it did not
            # make) reads the releases as published; its own state when that state is this sequence
            follow = getattr(step.publisher, "state_for_sequence", None)
            if follow is not None:
                state = follow(list(seq.releases), seq.snapshots[-1] if len(seq) else None, state)
            try:
                result = step.publisher.publish(table, attributes=step.attributes, state=state, rng=rng)
            except InputError as exc:  # e.g. a principle the table cannot satisfy: name the release
                raise exc.located(file=scenario.source, key=step.key) from None
            states[name] = result.state
            run.states.append(result.state)
            seq.append(result.release, result.truth, table)
            check = getattr(step.publisher, "check_kept_linking", None)
            if check is not None:  # linking: keep - the guarantee over the whole sequence, columns read
                try:
                    check(seq, scenario.adversary, scenario.transitions)
                except InputError as exc:
                    raise exc.located(file=scenario.source, key=step.key) from None
        else:
            snap = step.snapshot if step.snapshot is not None else table
            seq.append(step.given, None, snap)
            run.states.append({})
        run.timings[f"release {step.index}"] = time.perf_counter() - t0
        built.append((seq.releases[-1], seq.snapshots[-1]))
    run.release_metrics.extend(compute_metrics_all(built, meanwhile=ahead))  # side by side (issue 28)


def _prepare_attacks(scenario: Scenario, run: ScenarioRun) -> None:
    """The adversary's view of the built sequence, made once and kept in ``run.view``, and each attack's work
    ahead of its run (:meth:`attacks.base.AttackBase.prepare`) - done while the workers compute the releases'
    metrics, where this process would wait (issue 28).  Targets that cannot be resolved are left to
    :func:`resolve_targets` to refuse in their turn."""
    try:
        targets = resolve_targets(scenario, run.sequence)
    except InputError:
        return
    run.view = run.sequence.view(scenario.adversary, scenario.transitions, targets=targets)
    for _, attack in scenario.attacks:
        prepare = getattr(attack, "prepare", None)
        if prepare is not None:
            try:
                prepare(run.view)
            except InputError:  # told by the attack's run, in its turn
                pass


# ---------------------------------------------------------------------- 2. attack
def run_attacks(scenario: Scenario, run: ScenarioRun, notify: Step, total: int) -> None:
    """Run every attack of the plan on the adversary's view (never on the truth).

    With ``all_applicable`` (``certify`` of a spec without ``attacks``): every registered attack that applies,
    and every attack a requirement names even when it does not apply - it is run all the same, so that its own
    checks say why it cannot (``update_graph`` without ``transitions``, ``correspondence`` on one release):
    exit 2 naming the requirement, never a requirement left UNKNOWN as "not reported".  Attacks that do not
    apply run first: a refusal comes before the costly work."""
    view = run.view
    if view is None or view.targets != run.targets or len(view) != len(run.sequence):
        view = run.sequence.view(scenario.adversary, scenario.transitions, targets=run.targets)
    attacks = list(scenario.attacks)
    if scenario.all_applicable:
        from attacks import ATTACKS

        built = dict(scenario.attacks)  # those the requirements named, with their default parameters
        candidates = [(name, built.get(name) or ATTACKS[name]()) for name in sorted(ATTACKS)]
        attacks = [(name, attack) for name, attack in candidates if name in built or attack.applies(view)]
        scenario.attacks = attacks
    offset = len(scenario.steps)
    first = [j for j, (_, attack) in enumerate(attacks) if not attack.applies(view)]
    for step, j in enumerate(first + [j for j in range(len(attacks)) if j not in first]):
        name, attack = attacks[j]
        notify(f"attack {name}", offset + step, total)
        t0 = time.perf_counter()
        try:
            # the attack's own steps (components, release pairs) shown in the same bar's description
            run.results[name] = reads(scenario, name, attack).run(view, progress=lambda done, n, what: notify(
                f"attack {name}: {what} ({done}/{n})", offset + step, total))
        except InputError as exc:
            raise attack_refused(scenario, name, j, exc) from None
        run.timings[f"attack {name}"] = time.perf_counter() - t0
    run.results = {name: run.results[name] for name, _ in attacks if name in run.results}  # the plan's order


def attack_refused(scenario: Scenario, name: str, j: int, exc: InputError) -> InputError:
    """An attack's refusal in the words of whoever asked for it (:attr:`Scenario.attack_origins`): the spec's
    ``attacks[j].NAME``, or the requirement that brought the attack in (``--require: 'update_graph.vulnerable_values
    == 0' cannot be judged: update_graph needs ...``; a ledger's ``publisher: m_invariance's guarantee ...``)."""
    origin = scenario.attack_origins.get(name)
    if origin is None:  # run because it applies (certify with no attack named)
        return exc.located(file=scenario.source, key=f"attacks[{j}].{name}")
    file, key, requirement = origin
    if requirement is None:
        return exc.located(file=file, key=key)
    n = len(scenario.steps)  # a command-line line: say which spec and how many releases
    spec = f" on {n} release{'s' if n != 1 else ''} with {scenario.source}" if file is None else ""
    return InputError(f"{requirement} cannot be judged{spec}: {exc.one_line()}", file=file, key=key)


def reads(scenario: Scenario, name: str, attack: Any) -> Any:
    """The attack told which of its metrics the requirements read (:meth:`attacks.base.AttackBase.reading`), so
    that it computes what they judge and may skip costly figures nothing reads; ``None`` when no requirement
    names it (every figure: the attack was listed to be shown).  ``run`` and ``certify`` go through here alike."""
    if not hasattr(attack, "reading"):
        return attack
    lines = [line for line in requirements(scenario) if line.expectation.subject == name]
    if not any(line.source != "baseline" for line in lines):  # listed to be shown: every figure
        return attack.reading(None)
    return attack.reading([line.expectation.metric for line in lines])


# ---------------------------------------------------------------------- 3. judge
class Line(NamedTuple):
    """One line to judge: the parsed line, where it came from (``expect``, ``require``, ``baseline``) and its
    kind (``requirement``, ``expectation``, ``waived``: :class:`Judgement`)."""

    expectation: Expectation
    source: str
    kind: str = "requirement"


def release_claims(scenario: Scenario) -> tuple[str, ...]:
    """The lines every release of the sequence claims (its publisher's guarantee and claims), each at the
    weakest number any release claims; nothing when a release claims nothing (given as published with no
    publisher named).  They raise the attacks' baselines (:meth:`attacks.base.AttackBase.baseline_requirements`):
    five Mondrian k = 40 releases claim ``correspondence.FA >= 40``."""
    claims = list(scenario.claims)
    if not claims or any(c is None for c in claims):
        return ()
    weakest: dict = {}
    counted: dict = {}
    for lines in claims:
        for line in dict.fromkeys(lines):
            e = parse_expectation(line)
            key = (e.subject, e.metric, e.op)
            counted[key] = counted.get(key, 0) + 1
            old = weakest.get(key)
            if old is None or (e.op in (">=", ">") and e.number < old.number) or \
                    (e.op in ("<=", "<") and e.number > old.number) or (e.op == "==" and e.number != old.number):
                weakest[key] = e if e.op != "==" or old is None else None
    return tuple(e.text for key, e in weakest.items() if e is not None and counted[key] == len(claims))


def baselines(scenario: Scenario) -> list[Line]:
    """Every attack's baseline lines (:meth:`attacks.base.AttackBase.baseline_requirements`), raised to what
    the releases claim; a line waived by name (``<attack>.<metric>``) is kept as ``waived``; a line the spec
    or the command line states already is not repeated."""
    stated = [e for e, source in zip(scenario.expect, scenario.expect_sources)
              if source != "expect" or scenario.purpose != "research"]  # requirements, not expectations
    waived = {name for name, _ in scenario.waive}
    claims = release_claims(scenario)
    out = []
    for name, attack in scenario.attacks:
        for line in getattr(attack, "baseline_requirements", lambda _=(): [])(claims):
            e = parse_expectation(line)
            if any(_implies(s, e) for s in stated):
                continue
            out.append(Line(e, "baseline", "waived" if f"{e.subject}.{e.metric}" in waived else "requirement"))
    return out


def _implies(stated: Expectation, baseline: Expectation) -> bool:
    """Does a stated requirement settle the baseline (same metric, at least as strict)?  Then the baseline
    is not repeated (``--require 'linking.k >= 10'`` covers ``linking.k >= 2``)."""
    if (stated.subject, stated.index, stated.metric) != (baseline.subject, baseline.index, baseline.metric):
        return False
    s, b = stated.number, baseline.number
    if baseline.op in (">=", ">") and stated.op in (">=", ">", "=="):
        return s >= b if baseline.op == ">=" or stated.op == ">" else s > b
    if baseline.op in ("<=", "<") and stated.op in ("<=", "<", "=="):
        return s <= b if baseline.op == "<=" or stated.op == "<" else s < b
    return baseline.op == "==" and stated.op == "==" and s == b


def requirements(scenario: Scenario) -> list[Line]:
    """The lines judged: the plan's ``expect`` lines (expectations in a ``purpose: research`` scenario),
    ``--require`` lines, and the attacks' baselines (:func:`baselines`)."""
    out = [Line(e, source, "expectation" if source == "expect" and scenario.purpose == "research"
                else "requirement") for e, source in zip(scenario.expect, scenario.expect_sources)]
    return out + baselines(scenario)


def judge(reqs: Sequence[Line], results: Mapping[str, Any], release_metrics: Sequence[Mapping]) -> list[Judgement]:
    """Judge each line on the interval its metric is proven to lie in (DESIGN.md, "Verdicts over
    intervals"): an estimate is never read as a value.  A baseline on a metric its attack does not report
    for these releases (``linking.l_distinct`` without a sensitive attribute) is left out."""
    judged = []
    for line in reqs:
        e, source, kind = line.expectation, line.source, line.kind
        if e.subject == "release":
            value = release_metrics[e.release_index(len(release_metrics)) - 1].get(e.metric)
            if value is None:
                judged.append(Judgement(e, None, None, reason="not reported", source=source, kind=kind))
                continue
            v = float(value)
            judged.append(Judgement(e, value, e.judge(v, v), v, v, source=source, kind=kind))
            continue
        res = results.get(e.subject)
        if res is None or (e.metric not in res.summary and e.metric not in res.bounds):
            if source != "baseline":
                judged.append(Judgement(e, None, None, reason="not reported", source=source, kind=kind))
            continue
        bound = res.bound(e.metric)
        low, high = res.interval(e.metric)
        value = res.summary[e.metric] if res.is_proven(e.metric) else None
        judged.append(Judgement(e, value, e.judge(low, high), bound.lower, bound.upper, bound.reason, bound.detail,
                                source, kind))
    return judged


# ---------------------------------------------------------------------- the whole path
def run_scenario(scenario: Scenario, progress: Step | None = None, *, attack: bool = True,
                 states: Mapping[str, dict] | None = None, executor: Any = None) -> ScenarioRun:
    """Build the sequence, attack it (unless ``attack`` is false: ``publish``), judge the requirements;
    ``states`` continues the publishers' sequence (:func:`ledger_plan`); ``executor``
    (:mod:`solver.executor`, e.g. Dask for ``--scheduler``) computes the releases' metrics and solves the
    attacks' independent components (default: local processes) - the same figures whichever it is."""
    from solver.executor import use_executor

    notify = progress or (lambda *_: None)
    run = ScenarioRun(scenario=scenario, sequence=ReleaseSequence())
    total = len(scenario.steps) + (len(scenario.attacks) if attack else 0)
    with use_executor(executor):  # the releases' metrics, and the attacks' components
        build_sequence(scenario, run, notify, total, states,
                       ahead=(lambda: _prepare_attacks(scenario, run)) if attack else None)
        run.targets = resolve_targets(scenario, run.sequence)
        if attack:
            run_attacks(scenario, run, notify, total)
    if attack:
        run.judged = judge(requirements(scenario), run.results, run.release_metrics)
    notify("done", total, total)
    return run
