"""Certification: PASS only with a proof, FAIL with a witness, UNKNOWN when a solver stopped early.

``multirelease certify SPEC.yaml RELEASE.csv ...`` reads a schema (and optionally the population ``data``,
``adversary``, ``transitions``, ``attacks`` and ``expect``) from a YAML file, reads the release files as
published, runs the attacks - those named, else those of the YAML, else every registered attack that applies
to what the adversary sees - and judges each requirement on the interval its metric is known to lie in.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .errors import InputError
from .expect import EXIT_CODES, Expectation, parse_expectation, verdict_of
from .scenario import judge, load_scenario_document, validate_expectation

__all__ = ["Certification", "certify"]


@dataclass(eq=False)
class Certification:
    scenario: Any
    view: Any
    results: dict = field(default_factory=dict)
    judged: list = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return verdict_of(self.judged)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict:
        from .report import _clean

        reqs = []
        for e, value, holds in self.judged:
            item = {"require": e.text, "value": value, "holds": holds,
                    "exact": bool(self.results[e.subject].exact) if e.subject in self.results else True}
            if holds is False and e.subject in self.results:
                item["witness"] = self.results[e.subject].witness(e.metric)
            reqs.append(item)
        return _clean({"scenario": self.scenario.name, "releases": [
            {"index": i, "records": len(r), "classes": r.n_classes} for i, r in enumerate(self.view.releases, 1)],
            "attacks": {n: r.to_json() for n, r in self.results.items()},
            "requirements": reqs, "verdict": self.verdict})


def certify(spec_path: str | Path, release_files: Sequence[str | Path], *, requires: Sequence[str] = (),
            attack_names: Sequence[str] = (), progress=None) -> Certification:
    """Certify the release files against the requirements (see the module docstring)."""
    from attacks import ATTACKS

    from .scenario import load_yaml

    doc, base = load_yaml(spec_path)
    doc = dict(doc)
    if release_files:
        releases = []
        for j, f in enumerate(release_files, 1):
            p = Path(f).resolve()
            if not p.is_file():  # name the file given on the command line, not the spec
                raise InputError("release file not found", file=str(f), key=f"release {j}")
            item: dict[str, Any] = {"file": str(p)}
            cf = p.with_name(p.name.replace("release_", "counterfeits_", 1)) if p.name.startswith("release_") else None
            if cf is not None and cf.is_file():
                item["counterfeits"] = {"file": str(cf)}
            releases.append(item)
        doc["releases"] = releases
    elif not doc.get("releases"):
        raise InputError("give at least one release file", file=str(spec_path))
    for item in doc.get("releases") or []:
        if isinstance(item, dict) and "publisher" in item:
            raise InputError("certify reads releases as published, not publishers", file=str(spec_path),
                             key="releases")
    if attack_names:
        unknown = [a for a in attack_names if a not in ATTACKS]
        if unknown:
            raise InputError(f"unknown attack '{unknown[0]}' (known: {', '.join(sorted(ATTACKS))})",
                             key="--attack")
        doc["attacks"] = [{a: {}} for a in attack_names]
    lines = list(doc.get("expect") or []) + list(requires)
    doc["expect"] = []
    scenario = load_scenario_document(doc, base=base, path=Path(spec_path))
    from .sequence import ReleaseSequence

    seq = ReleaseSequence()
    table = scenario.data
    for step in scenario.steps:
        # the population behind each release: the spec's data evolved by its dynamics, as `run` does (a
        # scenario's own YAML certifies the files its `run --out` wrote), unless the release item names one
        change = scenario.dynamics.get(step.index)
        if change is not None and table is not None:
            table = table.apply(change)
        seq.append(step.given, None, step.snapshot if step.snapshot is not None else table)
    view = seq.view(scenario.adversary, scenario.transitions)
    attacks = list(scenario.attacks)
    if not attacks:
        attacks = [(name, cls()) for name, cls in sorted(ATTACKS.items()) if cls().applies(view)]
    expectations: list[Expectation] = []
    for j, line in enumerate(lines):
        e = parse_expectation(line, file=str(spec_path) if j < len(lines) - len(requires) else None,
                              key=f"expect[{j}]" if j < len(lines) - len(requires) else "--require")
        expectations.append(e)
    if not expectations:
        for name, attack in attacks:
            for line in getattr(attack, "default_requirements", lambda: [])():
                expectations.append(parse_expectation(line))
    if not expectations:
        raise InputError("nothing to certify: give --require '<attack>.<metric> <op> <number>', an 'expect' list, "
                         "or attack parameters (k, l, ...)", file=str(spec_path))
    names = {n for n, _ in attacks}
    for e in expectations:
        if e.subject != "release" and e.subject not in names:
            if e.subject not in ATTACKS:
                raise InputError(f"'{e.text}': unknown attack '{e.subject}'", key="--require")
            attacks.append((e.subject, ATTACKS[e.subject]()))
            names.add(e.subject)
    attack_map = dict(attacks)
    for e in expectations:
        validate_expectation(e, attack_map, len(scenario.steps), file=None, key="--require")
    cert = Certification(scenario=scenario, view=view)
    for j, (name, attack) in enumerate(attacks):
        if progress:
            progress(f"attack {name}", j, len(attacks))
        cert.results[name] = attack.run(view)
    if progress:
        progress("done", len(attacks), len(attacks))
    from .report import compute_release_metrics

    metrics = [compute_release_metrics(r, s) for r, s in zip(seq.releases, seq.snapshots)]
    cert.judged = judge(expectations, cert.results, metrics)
    return cert
