"""The Python API for notebooks: ``run``, ``certify``, ``publish``, ``release`` and the ledger, with pandas
DataFrames and dicts as well as files (issue 15, item 6).

Every function is a thin front end over the same functions as the command line (no second path):
:func:`multirelease.pipeline.load_scenario`, :func:`~multirelease.pipeline.certify_plan`,
:func:`~multirelease.pipeline.run_scenario` and :func:`~multirelease.reports.document.build_report` for ``run``,
``certify`` and ``publish``; :func:`multirelease.ledger.operations.make_release`,
:func:`~multirelease.ledger.operations.verify_ledger` for the ledger.  A dict or a DataFrame is *materialized*
first, as the CLI would receive it: each DataFrame becomes a CSV file and the dict a YAML file, in a private
temporary folder removed when the call returns; relative ``file:`` paths of the dict are resolved against
``base`` (default: the working directory), as a scenario file's are against its folder.  So the result of
``multirelease.run(doc)`` is the report ``multirelease run doc.yaml --json -`` prints for the same inputs.

Bad input raises :class:`multirelease.errors.InputError` (the CLI's exit 2) naming the file and key; a dict
is named ``<scenario dict>``, a DataFrame ``<DataFrame i>``.  Results are immutable :class:`Result` objects.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .errors import InputError

__all__ = ["Result", "run", "certify", "publish", "ledger_publish", "ledger_history", "ledger_withdraw",
           "verify_ledger", "ledger_headroom"]

_DICT_NAME = "<scenario dict>"
_FRAME_COLUMNS = ("kind", "subject", "metric", "value", "lower", "upper", "exact", "holds", "requirement",
                  "reason")


@dataclass(frozen=True, eq=False)
class Result:
    """One call's outcome, immutable.

    ``verdict`` (``pass`` / ``fail`` / ``unknown`` / ``none``) and ``exit_code`` are the CLI's; ``report``
    is the JSON report ``--json`` writes (a new dict at every access); ``releases`` the published releases
    as DataFrames (``publish``, ``run``: the rows of ``release_<i>.csv``; copies); ``files`` the files
    written; ``message`` and ``problems`` what the ledger commands print.  :meth:`to_frame` has one row per
    expectation and metric; in a notebook the object shows the HTML report page (``--html``).
    """

    command: str
    verdict: str
    exit_code: int
    report_json: str = field(repr=False)
    release_frames: tuple = field(default=(), repr=False)
    files: tuple = ()
    message: str = ""
    problems: tuple = ()

    @property
    def report(self) -> dict:
        """The JSON report, as ``--json`` writes it."""
        return json.loads(self.report_json)

    @property
    def releases(self) -> list:
        """The releases (pandas DataFrames, in the release file format), copies."""
        return [f.copy() for f in self.release_frames]

    def to_frame(self):
        """One row per judged expectation (``kind`` = ``expectation``), attack metric (``attack``: a proven
        value, or an interval ``[lower, upper]`` with its ``reason``) and release metric (``release``)."""
        import pandas as pd

        from .expect import parse_expectation

        rep = self.report
        rows = []
        for e in rep.get("expectations", []):
            parsed = parse_expectation(e["expect"])
            subject = f"release[{parsed.index}]" if parsed.subject == "release" else parsed.subject
            rows.append({"kind": "expectation", "subject": subject, "metric": parsed.metric, "value": e["value"],
                         "lower": e.get("lower", e["value"]), "upper": e.get("upper", e["value"]),
                         "exact": e.get("exact", e["value"] is not None), "holds": e["holds"],
                         "requirement": e["expect"], "reason": e.get("reason", "")})
        for name, att in rep.get("attacks", {}).items():
            for metric, value in att.get("summary", {}).items():
                rows.append({"kind": "attack", "subject": name, "metric": metric, "value": value, "lower": value,
                             "upper": value, "exact": True, "holds": None, "requirement": "", "reason": ""})
            for metric, b in att.get("bounds", {}).items():
                rows.append({"kind": "attack", "subject": name, "metric": metric, "value": None,
                             "lower": b.get("lower"), "upper": b.get("upper"), "exact": False, "holds": None,
                             "requirement": "", "reason": b.get("reason", "")})
        for r in rep.get("releases", []):
            figures = {"records": r.get("records"), "classes": r.get("classes"), **r.get("metrics", {})}
            for metric, value in figures.items():
                rows.append({"kind": "release", "subject": f"release[{r['index']}]", "metric": metric,
                             "value": value, "lower": value, "upper": value, "exact": True, "holds": None,
                             "requirement": "", "reason": ""})
        return pd.DataFrame(rows, columns=list(_FRAME_COLUMNS))

    def _repr_html_(self) -> str:
        """The HTML report of this result (what ``--html`` writes), shown by Jupyter: one ``<div
        class="multirelease-report">`` whose style applies to it alone (issue 25, item 6: the whole page's global
        style restyled the notebook around it)."""
        from multirelease.reports.html_page import render_html  # imported here: `import multirelease` stays cheap

        return render_html(self.report, fragment=True)

    def __repr__(self) -> str:
        rep = self.report
        name = rep.get("scenario", "")
        parts = [f"{self.command} {name!r}".strip(), f"verdict {self.verdict.upper()}", f"exit {self.exit_code}"]
        if rep.get("expectations"):
            held = sum(1 for e in rep["expectations"] if e["holds"] is True)
            parts.append(f"{held}/{len(rep['expectations'])} requirements hold")
        if self.release_frames:
            parts.append(f"{len(self.release_frames)} releases")
        return f"Result({', '.join(parts)})"


# ---------------------------------------------------------------------- materializing dicts and DataFrames
def _is_frame(x: Any) -> bool:
    return type(x).__name__ == "DataFrame" and hasattr(x, "to_csv")


class _Materializer:
    """Writes DataFrames as CSV files and dicts as YAML files in one private temporary folder."""

    def __init__(self, folder: Path, base: Path):
        self.folder = folder
        self.base = base
        self.frames: dict[str, str] = {}

    def frame(self, df, stem: str, separator: str = ",") -> str:
        path = self.folder / f"{stem}.csv"
        df.to_csv(path, index=False, sep=separator)
        self.frames[str(path)] = f"<DataFrame {stem}>"
        return str(path)

    def document(self, doc: Mapping, stem: str) -> Path:
        """``doc`` with every DataFrame written as a CSV (``{file: path}``), every relative ``file:``
        resolved against ``base``, dumped as YAML."""
        import yaml

        counter = iter(range(1, 1 << 30))

        def walk(node: Any, key: str) -> Any:
            if _is_frame(node):
                return {"file": self.frame(node, f"{key}_{next(counter)}")}
            if isinstance(node, Mapping):
                out = {}
                for k, v in node.items():
                    if k == "file" and isinstance(v, (str, Path)) and not Path(v).is_absolute():
                        v = str((self.base / v).resolve())
                    elif k == "file" and isinstance(v, Path):
                        v = str(v)
                    out[k] = walk(v, str(k))
                return out
            if isinstance(node, (list, tuple)):
                return [walk(v, key) for v in node]
            if isinstance(node, Path):
                return str(node)
            if type(node).__module__ == "numpy" and hasattr(node, "item"):  # np.int64(3) -> 3
                return node.item()
            return node

        path = self.folder / f"{stem}.yaml"
        plain = walk(dict(doc), stem)
        plain.setdefault("name", stem)
        try:
            path.write_text(yaml.safe_dump(plain, sort_keys=False, allow_unicode=True), encoding="utf-8")
        except yaml.YAMLError as exc:  # a value YAML cannot hold (an object, a numpy scalar)
            raise InputError(f"cannot be written as YAML ({str(exc).splitlines()[0]})", file=_DICT_NAME) from None
        self.frames[str(path)] = _DICT_NAME
        return path

    def rename(self, exc: InputError) -> InputError:
        """The same error naming ``<scenario dict>`` / ``<DataFrame ...>`` instead of temporary files."""
        def clean(text: str | None) -> str | None:
            if text is None:
                return None
            for tmp, label in self.frames.items():
                text = text.replace(tmp, label)
            return text.replace(str(self.folder), "<temporary>")

        return InputError(clean(exc.problem), file=clean(exc.file), key=clean(exc.key))


@contextmanager
def _materialized(base: str | Path | None) -> Iterator[_Materializer]:
    folder = Path(tempfile.mkdtemp(prefix="multirelease-api-"))
    mat = _Materializer(folder, Path(base).resolve() if base is not None else Path.cwd())
    try:
        yield mat
    except InputError as exc:
        raise mat.rename(exc) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _path_or_document(mat: _Materializer, source: Any, stem: str) -> Path:
    if isinstance(source, (str, Path)):
        return Path(source)
    if isinstance(source, Mapping):
        return mat.document(source, stem)
    raise InputError(f"expected a file path or a dict, got {type(source).__name__}", key=stem)


def _from_run(command: str, run, *, files: Sequence = (), message: str = "", problems: Sequence = (),
              exit_code: int | None = None, extra: Mapping | None = None) -> Result:
    """The result of one pass of the pipeline; ``problems`` (files that are not what a ledger recorded,
    :class:`multirelease.ledger.operations.FileProblem`) make the verdict FAIL (issue 30: integrity is part of
    the verdict), as in the CLI; ``extra``: keys added to the report (a repair's, as ``--json`` has them)."""
    from multirelease.reports.document import build_report, dumps

    frames = tuple(r.to_frame() for r in run.sequence.releases)
    report = {**build_report(run), **(extra or {})}
    verdict = run.verdict
    if problems:
        from multirelease.ledger.operations import integrity_report

        report = integrity_report(report, problems)
        verdict, exit_code = "fail", 1
    return Result(command=command, verdict=verdict, exit_code=run.exit_code if exit_code is None else exit_code,
                  report_json=dumps(report), release_frames=frames, files=tuple(str(f) for f in files),
                  message=message, problems=tuple(str(p) for p in problems))


# ---------------------------------------------------------------------- the commands
def run(scenario: str | Path | Mapping, *, base: str | Path | None = None, progress=None) -> Result:
    """``multirelease run``: publish or read every release of a scenario, attack, judge its ``expect`` lines.

    ``scenario`` is a YAML path or a scenario dict (DESIGN.md keys); in a dict, ``data``, a release, a
    ``snapshot``, ``counterfeits`` or an ``insert`` may be a pandas DataFrame.  ``progress`` is a callback
    ``(description, done, total)``.
    """
    from . import pipeline

    with _materialized(base) as mat:
        plan = pipeline.load_scenario(_path_or_document(mat, scenario, "scenario"))
        return _from_run("run", pipeline.run_scenario(plan, progress=progress))


def certify(spec: str | Path | Mapping, releases: Sequence = (), *, require: Sequence[str] = (),
            attacks: Sequence[str] = (), targets: str | None = None, ledger: str | Path | None = None,
            base: str | Path | None = None, progress=None) -> Result:
    """``multirelease certify``: PASS with a proof, FAIL with a witness, UNKNOWN, or ``none`` (nothing checked).

    ``spec`` is a YAML path or dict (schema, and optionally data, dynamics, adversary, attacks, expect,
    targets); ``releases`` the releases as published, in order: CSV paths, DataFrames (the release file
    format), or ``(release, counterfeits)`` pairs of DataFrames.  ``require`` are ``--require`` lines,
    ``attacks`` ``--attack`` names.  ``ledger`` (``certify --ledger``) certifies the files against a ledger's
    truth, with the spec's attacks and requirements only.
    """
    from . import pipeline

    with _materialized(base) as mat:
        spec_path = _path_or_document(mat, spec, "spec")
        files = []
        for i, item in enumerate(releases, 1):
            counterfeits = None
            if isinstance(item, tuple) and len(item) == 2 and _is_frame(item[0]):
                item, counterfeits = item
            if _is_frame(item):
                item = mat.frame(item, f"release_{i}")
                if counterfeits is not None:
                    mat.frame(counterfeits, f"counterfeits_{i}")
            elif not isinstance(item, (str, Path)):
                raise InputError(f"expected a file path or a DataFrame, got {type(item).__name__}",
                                 key=f"release {i}")
            files.append(item)
        problems: list = []
        if ledger is not None:
            from multirelease.ledger.operations import certify_plan_checked

            if require or attacks or targets:
                raise InputError("a ledger certifies with the spec's attacks and requirements only", key="ledger")
            if not files:
                raise InputError("give the release files", key="ledger")
            plan, problems = certify_plan_checked(ledger, files, spec_path)
            if plan is None:  # a file is missing: nothing certified, the verdict FAIL names it
                from multirelease.ledger.operations import uncertified_report

                return Result("certify", "fail", 1, json.dumps(uncertified_report("ledger", problems)),
                              problems=tuple(str(p) for p in problems))
        else:
            plan = pipeline.certify_plan(spec_path, files, requires=list(require), attack_names=list(attacks),
                                         targets=targets)
        return _from_run("certify", pipeline.run_scenario(plan, progress=progress), problems=problems)


def publish(scenario: str | Path | Mapping, out: str | Path | None = None, *, base: str | Path | None = None,
            progress=None) -> Result:
    """``multirelease publish``: the releases of a scenario, no attacks (verdict ``none``).  With ``out`` the
    files ``release_<i>.csv`` / ``counterfeits_<i>.csv`` are written there as the CLI writes them."""
    from . import pipeline

    with _materialized(base) as mat:
        plan = pipeline.load_scenario(_path_or_document(mat, scenario, "scenario"))
        result = pipeline.run_scenario(plan, progress=progress, attack=False)
        written = []
        if out is not None:
            from .cli import write_releases

            written = write_releases(result.sequence, Path(out))
        return _from_run("publish", result, files=written)


def ledger_publish(spec: str | Path | Mapping, snapshot, *, ledger: str | Path, out: str | Path,
                   dry_run: bool = False, amend: str | None = None, base: str | Path | None = None,
                   progress=None, confirm_churn: bool = False, repair: bool = False, accept: bool = False) -> Result:
    """``multirelease release``: the ledger's next release from this month's ``snapshot`` (a CSV path or a
    DataFrame with the identifier column), certified before ``out`` is written; ``exit_code`` 0 on PASS,
    1 / 3 (nothing written) otherwise.  The ledger records the spec's contents, not its file.  ``amend``:
    the reason of a spec change; ``confirm_churn``: the month is real although it removes more than half of the
    records or more than doubles them (``--confirm-churn``).  ``repair``: when the gate fails, the cheapest changed
    release that passes it is proposed (``exit_code`` 0, nothing written; ``message`` names its SHA-256) and
    ``accept`` writes it (``release --repair [--accept]``, :mod:`multirelease.ledger.repair`); the result's
    ``report["repair"]`` is what ``--json`` writes of the search (the candidates gated, the proposal and its cost,
    the month as given), and its HTML page (a notebook's view) opens with the repair section of ``--html``."""
    from multirelease.ledger.operations import load_spec, make_release

    with _materialized(base) as mat:
        spec_path = _path_or_document(mat, spec, "spec")
        if _is_frame(snapshot):
            snapshot = mat.frame(snapshot, "snapshot", separator=load_spec(spec_path)[3])
        outcome = make_release(spec_path, snapshot, ledger, out, dry_run=dry_run, amend=amend, progress=progress,
                               confirm_churn=confirm_churn, repair=repair, accept=accept)
    if outcome.run is None:  # the release of this snapshot was already recorded
        return Result("release", outcome.verdict, outcome.exit_code, "{}", files=tuple(map(str, outcome.files)),
                      message=outcome.message)
    extra = None
    if outcome.repair is not None:  # the search, the proposal and its cost: report["repair"], and the page's section
        from multirelease.ledger.repair import repair_report

        extra = {"repair": repair_report(outcome)}
    return _from_run("release", outcome.run, files=outcome.files, message=outcome.message,
                     exit_code=outcome.exit_code, extra=extra)


def ledger_history(folder: str | Path):
    """``multirelease ledger DIR``: one row per release the ledger holds (number, date, snapshot rows,
    records, publisher, verdict, changes, files and their SHA-256), as a DataFrame."""
    import pandas as pd

    from multirelease.ledger.store import Ledger, LedgerRelease

    columns = [f for f in LedgerRelease.__dataclass_fields__ if f not in ("spec", "snapshot_mac")]
    with Ledger(folder, write=False) as led:
        rows = [{c: getattr(r, c) for c in columns} for r in led.history()]
    return pd.DataFrame(rows, columns=columns)


def ledger_withdraw(folder: str | Path, n: int, reason: str) -> tuple[str, ...]:
    """``multirelease ledger DIR --withdraw N --reason TEXT``: release ``n``, the last, never went out; its files
    are removed and later gates no longer count it (:func:`multirelease.ledger.operations.withdraw_release`).
    Returns the files removed."""
    from multirelease.ledger.operations import withdraw_release

    return tuple(withdraw_release(folder, n, reason)[1])


def verify_ledger(folder: str | Path, *, progress=None, releases: str | Path | None = None) -> Result:
    """``multirelease ledger DIR --verify``: every recorded file checked against its SHA-256 and the files
    re-certified with the ledger's snapshots; ``problems`` lists changed or missing files (exit code 1).
    ``releases``: the folder the release files moved to (``--releases DIR``)."""
    from multirelease.ledger import operations as ledger_release

    run_, problems = ledger_release.verify_ledger_checked(folder, progress, releases=releases)
    if run_ is None:  # a recorded file is missing: nothing certified, the verdict FAIL names it
        return Result("verify", "fail", 1, json.dumps(ledger_release.uncertified_report("ledger", problems)),
                      problems=tuple(str(p) for p in problems))
    return _from_run("verify", run_, problems=problems)


def ledger_headroom(folder: str | Path, *, months: int = 12, futures: int = 20, seed: int = 0, executor=None):
    """``multirelease ledger DIR --headroom``: how many more months the ledger's sequence passes its gate (issue
    26; :func:`multirelease.ledger.headroom.forecast`).  Returns a frozen
    :class:`~multirelease.ledger.headroom.Headroom` dataclass - ``passing`` (the share of futures whose gate
    still passes, by month ahead), ``median`` / ``low`` / ``high`` (months of headroom, 10-90% band),
    ``first_failing``, ``witness``, ``churn`` (the assumptions), ``lines()`` (what the CLI prints) and
    ``to_json()`` - aggregate only.  ``executor`` (:mod:`solver.executor`) runs the futures (default: local
    processes); the ledger is only read."""
    from multirelease.ledger.headroom import forecast

    return forecast(folder, months=months, futures=futures, seed=seed, executor=executor)
