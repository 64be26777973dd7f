"""The ``multirelease`` command line: ``run``, ``certify``, ``publish`` - thin front ends over one pipeline
(:mod:`multirelease.pipeline`).

Exit codes (DESIGN.md): 0 everything held / PASS / nothing was checked (verdict ``none``), 1 an expectation or
requirement failed / FAIL, 2 bad input (one line naming the file, the key and the problem; no traceback), 3 UNKNOWN.
"""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import typer
from rich.console import Console

from .errors import InputError

# plain help (click's): flags without a type label, no markup characters shown literally (issue 25, item 7)
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, help="Publish, attack and certify multi-release anonymized tables.")
out_console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


@contextmanager
def progress_bar() -> Iterator:
    """A progress callback ``(description, done, total)`` drawing a transient bar on a terminal's stderr, once
    the work has lasted a second (:func:`multirelease.reports.document.progress_display`); ``None`` when piped."""
    from multirelease.reports.document import progress_display

    with progress_display(err_console) as update:
        yield update


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        out_console.print(f"multirelease {version('multirelease')}", markup=False, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """Publish, attack and certify multi-release anonymized tables."""


def _write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:  # a failed write (disk full, interrupted) leaves neither the file nor its temporary
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _emit_json(report: dict, target: str) -> None:
    from multirelease.reports.document import dumps

    text = dumps(report)
    if target == "-":
        sys.stdout.write(text)
    else:
        _write_text_atomic(Path(target), text)


def _check_targets(json_path: str | None = None, out: Path | None = None, *, ledger: Path | None = None,
                   out_file: Path | None = None, html: Path | None = None, targets_file: Path | None = None) -> None:
    """Refuse output paths that cannot be written, before anything runs (exit 2, one line, nothing created;
    :mod:`multirelease.outputs`): ``--json``, ``--html``, ``--targets-file`` and ``--out`` FILE files,
    ``--out`` DIR and ``--ledger`` folders."""
    from .outputs import check_output_dir, check_output_file
    from multirelease.reports.targets_file import check_targets_file

    check_output_file(json_path or None, "--json")
    check_output_file(html, "--html")
    check_output_dir(out, "--out")
    check_output_dir(ledger, "--ledger")
    check_output_file(out_file, "--out")
    check_output_file(targets_file, "--targets-file")
    check_targets_file(targets_file)


def _verdict_only(report: dict, json_path: str | None) -> None:
    """``--quiet``: no table, but still the verdict line (and a research scenario's expectations line)."""
    from multirelease.reports.document import reproduced_line, verdict_line

    lines = [reproduced_line(report), verdict_line(report)]
    for line in filter(None, lines):
        _text_console(json_path).print(line, markup=False, highlight=False, soft_wrap=True)


def write_releases(sequence, out: Path, notation: str = "native") -> list[Path]:
    """Write ``release_<i>.csv`` (and ``counterfeits_<i>.csv``) for every release, in the project's notation or
    ARX's (``notation``): all files are written to a temporary folder beside ``out`` first, then moved in, so a
    failure leaves no half-written file."""
    import io
    import shutil

    from multirelease.formats.release_csv import release_csv, write_counterfeits_csv

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        names = []
        for i, release in enumerate(sequence.releases, 1):
            (tmp / f"release_{i}.csv").write_text(release_csv(release, notation), encoding="utf-8")
            names.append(f"release_{i}.csv")
            if release.counterfeits:
                buf = io.StringIO()
                write_counterfeits_csv(release.counterfeits, buf)
                (tmp / f"counterfeits_{i}.csv").write_text(buf.getvalue(), encoding="utf-8")
                names.append(f"counterfeits_{i}.csv")
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [out / n for n in names]


_FORMAT_HELP = "release files in the project's notation ('native') or ARX's ('arx': ';', [20, 30[, <20, >=80, 81***)"
_READ_FORMAT_HELP = "notation of the release files: 'native', 'arx', or 'auto' (told from each file's header)"


def _write_format(value: str) -> str:
    from multirelease.formats.arx import notation_of

    notation = notation_of(value)
    if notation is None:
        raise InputError("must be native or arx when writing", key="--format")
    return notation


_WAIVE_HELP = ("waive one attack's baseline line by name, '<attack>.<metric>' (repeatable): it is still shown, "
               "named in the verdict, and not counted")
_HTML_HELP = "write the report as one self-contained HTML page here (verdict, plots, witnesses; loads nothing)"
_RAW_IDS_HELP = ("with --html: name persons by the snapshots' identifiers; by default the page names them by the "
                 "ledger's keyed pseudonyms (P-...)")

_TARGETS_HELP = "who the attacks judge: 'population' (the individuals of the data) or 'regions' (every target " \
                "the published regions allow); default population when there is data"


_SCHEDULER_HELP = "solve the attacks' independent components on this Dask scheduler (tcp://host:8786, or 'local': " \
                  "a Dask cluster of --workers processes started for the command; needs the dask extra of " \
                  "multirelease); default: local processes - the same figures either way"
_WORKERS_HELP = "worker processes for the attacks' independent components: local processes, or the workers of " \
                "--scheduler local; 0 = this process only; default: every core"
_TARGETS_FILE_HELP = "write every target row of the attacks here (.csv, or .parquet with pyarrow); the report " \
                     "lists the worst ones"


@contextmanager
def _executor(scheduler: str | None, workers: int | None = None):
    """The executor of ``--scheduler`` and ``--workers`` (:mod:`solver.executor`; ``None`` without them), current
    for reading the release files and for the pipeline, closed at the end."""
    from solver.executor import executor_for, use_executor

    executor = executor_for(scheduler, workers) if scheduler or workers is not None else None
    try:
        with use_executor(executor):
            yield executor
    finally:
        if executor is not None:
            executor.close()


def _run_pipeline(pipeline, sc, executor):
    """``pipeline.run_scenario`` with ``executor`` (:func:`_executor`)."""
    with progress_bar() as bar:
        return pipeline.run_scenario(sc, progress=bar, executor=executor)


def _finish(run, json_path: str | None, quiet: bool, out: Path | None = None, notation: str = "native", *,
            html: Path | None = None, targets_file: Path | None = None, names: dict | None = None) -> None:
    """Report one pass of the pipeline (terminal, JSON, HTML page, release files) and exit with its verdict's
    code.  ``names``: the page names persons by these (a ledger's pseudonyms, :func:`_page_names`)."""
    from multirelease.reports.document import build_report, render_terminal

    report = build_report(run)
    if not quiet and json_path != "-":
        render_terminal(report, out_console, run.timings, json_path=json_path)
    elif json_path != "-":  # --json -: the output is the JSON alone
        _verdict_only(report, json_path)
    if out is not None:
        write_releases(run.sequence, out, notation)
    if json_path:
        _emit_json(report, json_path)
    if targets_file is not None:
        from multirelease.reports.targets_file import write_targets_file

        write_targets_file(run.results, targets_file)
    if html is not None:
        from multirelease.reports.html_page import write_html
        from multirelease.reports.document import page_context

        write_html({**report, **page_context(run)}, html, names=names)
    raise typer.Exit(run.exit_code)


@app.command()
def run(scenario: Path = typer.Argument(..., metavar="SCENARIO", help="the scenario YAML file"),
        json_path: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                                help="write the JSON report here ('-': stdout)"),
        out: Optional[Path] = typer.Option(None, "--out", metavar="DIR",
                                           help="write every release as release_<i>.csv here"),
        targets: Optional[str] = typer.Option(None, "--targets", help=_TARGETS_HELP),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no tables: the verdict line only"),
        fmt: str = typer.Option("native", "--format", help=_FORMAT_HELP),
        html: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help=_HTML_HELP),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", help=_SCHEDULER_HELP),
        workers: Optional[int] = typer.Option(None, "--workers", metavar="N", help=_WORKERS_HELP),
        targets_file: Optional[Path] = typer.Option(None, "--targets-file", help=_TARGETS_FILE_HELP),
        waive: Optional[List[str]] = typer.Option(None, "--waive", help=_WAIVE_HELP)) -> None:
    """Run a scenario: publish or read its releases, attack them, judge its requirements (the attacks'
    baselines always among them) and, for a research scenario, its expectations."""
    from . import pipeline
    from multirelease.formats.scenario import TARGETS

    _check_targets(json_path, out, html=html, targets_file=targets_file)
    notation = _write_format(fmt)
    if targets is not None and targets not in TARGETS:
        raise InputError(f"must be one of {', '.join(TARGETS)}, got {targets!r}", key="--targets")
    with _executor(scheduler, workers) as executor:
        sc = pipeline.load_scenario(scenario, waives=waive or [])
        if targets is not None:
            if targets == "population" and sc.data is None and any(s.snapshot is None for s in sc.steps):
                raise InputError("targets: population needs the population: give 'data'", file=str(scenario),
                                 key="--targets")
            sc.targets = targets
        result = _run_pipeline(pipeline, sc, executor)
    _finish(result, json_path, quiet, out, notation, html=html, targets_file=targets_file)


@app.command()
def certify(spec: Path = typer.Argument(..., metavar="SPEC",
                                        help="YAML with the schema (and optionally data, dynamics, "
                                                  "adversary, attacks, expect, targets)"),
            releases: Optional[List[Path]] = typer.Argument(None, metavar="RELEASES",
                                                            help="release CSV files, in publication order"),
            require: Optional[List[str]] = typer.Option(None, "--require", "-r",
                                                        help="'<attack>.<metric> <op> <number>' (repeatable)"),
            attack: Optional[List[str]] = typer.Option(None, "--attack", "-a", help="run only these attacks"),
            targets: Optional[str] = typer.Option(None, "--targets", help=_TARGETS_HELP),
            json_path: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                                    help="write the JSON report here ('-': stdout)"),
            quiet: bool = typer.Option(False, "--quiet", "-q", help="no tables: the verdict line only"),
            ledger: Optional[Path] = typer.Option(None, "--ledger", metavar="DIR",
                                                  help="certify against this ledger's truth "
                                                  "(the snapshots behind its releases)"),
            fmt: str = typer.Option("auto", "--format", help=_READ_FORMAT_HELP),
            html: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help=_HTML_HELP),
            scheduler: Optional[str] = typer.Option(None, "--scheduler", help=_SCHEDULER_HELP),
            workers: Optional[int] = typer.Option(None, "--workers", metavar="N", help=_WORKERS_HELP),
            targets_file: Optional[Path] = typer.Option(None, "--targets-file", help=_TARGETS_FILE_HELP),
            waive: Optional[List[str]] = typer.Option(None, "--waive", help=_WAIVE_HELP),
            raw_ids: bool = typer.Option(False, "--raw-ids", help=_RAW_IDS_HELP),
            ) -> None:
    """Certify release files: PASS (exit 0) with a proof, FAIL (1) with a witness, UNKNOWN (3), NONE (0)
    when nothing was checked.  The same pipeline as run: the same files give the same verdict."""
    from . import pipeline
    from multirelease.formats.arx import notation_of

    _check_targets(json_path, html=html, targets_file=targets_file)
    notation = notation_of(fmt)
    names = _page_names(ledger, raw_ids, html, "--ledger and --html")
    problems: list = []
    if ledger is not None:
        if require or attack or targets:
            raise InputError("--ledger certifies with the spec's attacks and requirements only", key="--ledger")
        if not releases:
            raise InputError("give the release files", key="--ledger")
    with _executor(scheduler, workers) as executor:
        if ledger is not None:
            from multirelease.ledger.operations import certify_plan_checked, integrity_line

            sc, problems = certify_plan_checked(ledger, releases, spec, notation=notation)
            if problems:  # first, before any table: the files are not the ones the ledger recorded
                _text_console(json_path).print(f"certify: {integrity_line(problems)}", markup=False,
                                               highlight=False, soft_wrap=True)
        else:
            _not_a_ledger_spec(spec)
            sc = pipeline.certify_plan(spec, releases or [], requires=require or [], attack_names=attack or [],
                                       targets=targets, notation=notation, waives=waive or [])
        result = _run_pipeline(pipeline, sc, executor)
    if ledger is not None and problems:
        _finish_integrity("certify", result, problems, json_path, quiet, html=html, targets_file=targets_file,
                          names=names)
    _finish(result, json_path, quiet, html=html, targets_file=targets_file, names=names)


def _not_a_ledger_spec(spec: Path) -> None:
    """``certify SPEC FILES`` with a ledger's spec (it names a ``publisher``): the files are certified against
    the ledger's truth with ``--ledger DIR`` (issue 25, item 5) - say so rather than "unknown key"."""
    from multirelease.formats.scenario import load_yaml

    try:
        doc, _ = load_yaml(spec)
    except InputError:
        return  # certify_plan reports it
    if isinstance(doc, dict) and "publisher" in doc and "releases" not in doc:
        raise InputError("is a ledger spec (it names a publisher): certify its releases against the ledger with "
                         "--ledger DIR", file=str(spec), key="publisher")


@app.command()
def publish(scenario: Path = typer.Argument(..., metavar="SCENARIO", help="the scenario YAML file"),
            out: Path = typer.Option(..., "--out", metavar="DIR",
                                     help="directory for release_<i>.csv (and counterfeits_<i>.csv)"),
            fmt: str = typer.Option("native", "--format", help=_FORMAT_HELP),
            ) -> None:
    """Publish a scenario's releases (no attacks): release files and counterfeit statistics only - never the
    publishers' state, ids or maps, which stay with the data holder."""
    from . import pipeline

    _check_targets(out=out)
    notation = _write_format(fmt)
    sc = pipeline.load_scenario(scenario)
    with progress_bar() as bar:
        result = pipeline.run_scenario(sc, progress=bar, attack=False)
    written = write_releases(result.sequence, out, notation)
    out_console.print(f"wrote {len(written)} files to {out}")


@app.command("release")
def release_cmd(spec: Path = typer.Argument(..., metavar="SPEC", help="YAML: schema, adversary, attacks, expect, "
                                            "targets, publisher: {publisher: NAME, ...}, snapshot: {separator}"),
                snapshot: Path = typer.Argument(..., metavar="SNAPSHOT",
                                                help="this month's raw table (CSV with its identifier column)"),
                ledger: Path = typer.Option(..., "--ledger", metavar="DIR",
                                            help="the ledger folder (made by the first call)"),
                out: Path = typer.Option(..., "--out", metavar="FILE", help="the release file to write"),
                dry_run: bool = typer.Option(False, "--dry-run", help="run the gate only: write nothing"),
                amend: Optional[str] = typer.Option(None, "--amend", metavar="REASON",
                                                    help="why the spec differs from the last release's (recorded)"),
                confirm_churn: bool = typer.Option(False, "--confirm-churn", help="the month is real although it "
                                                   "removes more than half of the records or more than doubles "
                                                   "them (recorded)"),
                repair: bool = typer.Option(False, "--repair", help="when the gate fails, propose the cheapest "
                                            "changed release of the month that passes it (nothing written)"),
                accept: bool = typer.Option(False, "--accept", help="with --repair: write the proposal (recorded)"),
                json_path: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                                        help="write the gate's JSON report here"),
                html: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="write the gate's page here "
                                                    "(with --repair: the failing lines, the candidates, the proposal, "
                                                    "the loss before and after)"),
                quiet: bool = typer.Option(False, "--quiet", "-q", help="no tables: the verdict line only"),
                fmt: str = typer.Option("native", "--format", help=_FORMAT_HELP)) -> None:
    """Make the next release of the ledger's sequence from SNAPSHOT, certify the whole sequence, and write FILE
    only on PASS (exit 0); FAIL (1) / UNKNOWN (3): nothing written, the ledger unchanged.  --repair: when the
    gate fails, the cheapest changed release that passes it is shown (exit 0, nothing written) and
    --repair --accept writes exactly that release."""
    from multirelease.ledger.operations import make_release
    from multirelease.ledger.repair import repair_report
    from multirelease.reports.document import build_report, render_terminal

    _check_targets(json_path, ledger=ledger, out_file=out, html=html)
    notation = _write_format(fmt)
    with progress_bar() as bar:
        outcome = make_release(spec, snapshot, ledger, out, dry_run=dry_run, amend=amend, progress=bar,
                               notation=notation, confirm_churn=confirm_churn, repair=repair, accept=accept)
    if outcome.run is not None:
        report = build_report(outcome.run)  # every release of the sequence under its own index
        if outcome.repair is not None:
            report["repair"] = repair_report(outcome)
        if not quiet and json_path != "-":
            render_terminal(report, out_console, outcome.run.timings, json_path=json_path)
        if json_path:
            _emit_json(report, json_path)
        if html is not None:
            from multirelease.reports.document import page_context
            from multirelease.reports.html_page import write_html

            write_html({**report, **page_context(outcome.run)}, html, names=_month_names(ledger, outcome.run))
    ch = outcome.changes
    if ch:
        out_console.print(f"snapshot: {ch['inserted']:,} inserted, {ch['deleted']:,} deleted, "
                          f"{ch['updated']:,} updated")
    failed = outcome.failed if outcome.failed is not None else (outcome.run if outcome.verdict != "pass" else None)
    if failed is not None:
        for j in failed.judged:
            if j.holds is not True:
                shown = j.value if j.value is not None else f"[{j.lower}, {j.upper}] {j.reason}".strip()
                err_console.print(f"requirement '{j.expectation.text}' {'failed' if j.holds is False else 'unknown'}"
                                  f"{' as given' if outcome.repair is not None else ''}: {shown}", markup=False,
                                  highlight=False, soft_wrap=True)
    if outcome.repair is not None:
        for line in _repair_lines(outcome):
            out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    (out_console if outcome.exit_code == 0 else err_console).print(outcome.message, markup=False, highlight=False,
                                                                    soft_wrap=True)
    raise typer.Exit(outcome.exit_code)


def _month_names(ledger: Path, run) -> dict:
    """The names ``release --html`` gives persons: the ledger's keyed pseudonyms of everyone in its snapshots and
    in this month's table as the gate read it (``run``'s: not recorded yet when the page shows a proposal or a
    failing gate)."""
    from multirelease.ledger.pseudonyms import ledger_pseudonyms, pseudonym
    from multirelease.ledger.store import DB_NAME, Ledger

    if (ledger / DB_NAME).is_file():
        names = ledger_pseudonyms(ledger)
        with Ledger(ledger, write=False) as led:
            secret = bytes.fromhex(led.meta()["secret"])
    else:  # a first month that did not pass: no ledger, no secret - pseudonyms under a secret of this page alone
        import secrets

        names, secret = {}, secrets.token_bytes(32)
    for i in run.sequence.snapshots[-1].frame.index.astype(str):
        names.setdefault(i, pseudonym(secret, i))
    return names


def _repair_lines(outcome) -> list[str]:
    """What ``release --repair`` prints of its search: every candidate gated (what changed, its cost, the
    gate's verdict), and the proposal's cost beside the month as given."""
    fixed = outcome.repair
    params = fixed.params
    lines = []
    for c in fixed.tried:
        verdict = f"gate {c.run.verdict.upper()}" if c.run is not None else f"not gated, {c.refused}"
        lines.append(f"repair: tried {', '.join(c.words(params))}: loss {c.cost:.4f}, {verdict}")
    if fixed.proposal is not None:
        c = fixed.proposal
        given = outcome.failed.release_metrics[-1]
        now = c.metrics
        lines.append(f"repair: proposal {', '.join(c.words(params))}: records withheld {len(c.withheld):,}; "
                     f"LM {given.get('LM', 0):.4f} -> {now.get('LM', 0):.4f}; discernibility "
                     f"{given.get('discernibility', 0):,.0f} -> {now.get('discernibility', 0):,.0f}; counterfeits "
                     f"{given.get('counterfeits', 0)} -> {now.get('counterfeits', 0)}; loss (withheld at 1) "
                     f"{c.cost:.4f}; {fixed.gates} gate{'s' if fixed.gates != 1 else ''} in {fixed.seconds:.1f} s")
    return lines


def _text_console(json_path: str | None) -> Console:
    """Where a ledger command's verdict lines go: the terminal's output, or its error stream when ``--json -``
    writes the report to the output."""
    return err_console if json_path == "-" else out_console


def _finish_integrity(command: str, run, problems, json_path: str | None, quiet: bool, *,
                      html: Path | None = None, targets_file: Path | None = None, page: dict | None = None,
                      names: dict | None = None) -> None:
    """Report a certification of files that are not all the ones the ledger recorded (``ledger --verify``,
    ``certify --ledger``) and exit 1: the verdict is FAIL and names the files whatever the attacks found on them
    (:func:`multirelease.ledger.operations.integrity_report`); the attacks' figures are still shown, as the
    re-certification of the files as they are.  ``run`` None: the files could not be certified (one is
    missing)."""
    from multirelease.ledger.operations import integrity_report, uncertified_report
    from multirelease.reports.document import build_report, page_context, render_terminal

    if run is not None:
        report = integrity_report(build_report(run), problems)
        if not quiet and json_path != "-":
            render_terminal(report, out_console, run.timings, json_path=json_path)
    else:
        report = uncertified_report((page or {}).get("scenario", "ledger"), problems)
    if json_path:
        _emit_json(report, json_path)
    if targets_file is not None and run is not None:
        from multirelease.reports.targets_file import write_targets_file

        write_targets_file(run.results, targets_file)
    if html is not None:
        from multirelease.reports.html_page import write_html

        context = page_context(run) if run is not None else {}
        write_html({**report, **context, **{k: v for k, v in (page or {}).items() if k != "scenario"}}, html,
                   names=names)
    words = ", ".join(p.words() for p in problems)
    now = "as they are now" if command == "verify" else "as given, with the ledger's snapshots,"
    after = (f"the files {now} certify {run.verdict.upper()}, which does not make the verdict PASS"
             if run is not None else "the files were not certified")
    _text_console(json_path).print(f"{command}: verdict FAIL - {words} ({after})", markup=False, highlight=False,
                                   soft_wrap=True)
    raise typer.Exit(1)


def _page_names(ledger: Path | None, raw_ids: bool, html: Path | None, needs: str) -> dict | None:
    """The names a ledger's page gives persons (issue 25, item 6): the ledger's keyed pseudonyms
    (:func:`multirelease.ledger.pseudonyms.ledger_pseudonyms`), or ``None`` - the identifiers as the report
    holds them - with ``--raw-ids`` or without a ledger or a page."""
    if raw_ids and (ledger is None or html is None):
        raise InputError(f"only names persons on a page: give {needs} too", key="--raw-ids")
    if raw_ids or ledger is None or html is None:
        return None
    from multirelease.ledger.pseudonyms import ledger_pseudonyms

    return ledger_pseudonyms(ledger)


@app.command("ledger")
def ledger_cmd(folder: Path = typer.Argument(..., metavar="DIR", help="the ledger folder"),
               verify: bool = typer.Option(False, "--verify", help="check every published file's SHA-256 and "
                                           "re-certify the files"),
               json_path: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                                       help="with --verify: the JSON report (with --headroom: "
                                                       "the forecast under 'headroom')"),
               quiet: bool = typer.Option(False, "--quiet", "-q", help="no tables: the verdict line only"),
               fmt: str = typer.Option("auto", "--format", help=_READ_FORMAT_HELP),
               html: Optional[Path] = typer.Option(None, "--html", metavar="FILE",
                                                   help="re-certify as --verify and write the "
                                                   "HTML page (verdict, plots, witnesses, history) here"),
               raw_ids: bool = typer.Option(False, "--raw-ids", help=_RAW_IDS_HELP),
               releases: Optional[Path] = typer.Option(None, "--releases", metavar="DIR", help="with --verify: the "
                                                       "release files moved here (found by name and SHA-256)"),
               withdraw: Optional[int] = typer.Option(None, "--withdraw", metavar="N", help="withdraw release N, "
                                                      "the last, which never went out (with --reason; recorded)"),
               reason: Optional[str] = typer.Option(None, "--reason", help="with --withdraw: why the release "
                                                    "never went out"),
               headroom: bool = typer.Option(False, "--headroom", help="forecast how many more months the "
                                             "sequence passes its gate: simulated futures of the churn fitted on the "
                                             "ledger's history, each month published and gated (nothing stored)"),
               months: Optional[int] = typer.Option(None, "--months", metavar="N", help="with --headroom: months "
                                                    "ahead (default 12)"),
               futures: Optional[int] = typer.Option(None, "--futures", metavar="R", help="with --headroom: "
                                                     "simulated futures (default 20)"),
               seed: Optional[int] = typer.Option(None, "--seed", metavar="S", help="with --headroom: the seed of "
                                                  "every simulated draw (default 0)")) -> None:
    """The ledger's history, one line per release (amendments, withdrawals and confirmed churn among them).

    --verify checks every published file against its recorded SHA-256 (and the release folders for files the
    ledger never recorded) and re-certifies the files with the ledger's snapshots: a changed, missing or
    unrecorded file makes the verdict FAIL (exit 1), named in the first line printed with both hashes; --html
    implies --verify.  --withdraw N removes the last release's files and takes it out of every later gate: only
    for a release that never went out (a release that was sent stays published).  --headroom forecasts the
    months left before the gate fails (issue 26): the share of simulated futures whose gate still passes, by
    month ahead, the median headroom with its 10-90% band and the line that fails first; with --html, a plot."""
    from multirelease.formats.arx import notation_of
    from multirelease.ledger.operations import (check_files, history_lines, integrity_line, ledger_name,
                                                repair_events, verify_ledger_checked, withdraw_release)
    from multirelease.reports.document import build_report, render_terminal

    notation = notation_of(fmt)
    _check_targets(json_path, html=html)
    if headroom and (withdraw is not None or reason is not None):
        raise InputError("forecasts, --withdraw changes the ledger: run them apart", key="--headroom")
    for flag, value in (("--months", months), ("--futures", futures), ("--seed", seed)):
        if value is not None and not headroom:
            raise InputError("goes with --headroom", key=flag)
    if headroom:
        from multirelease.ledger.headroom import DEFAULT_FUTURES, DEFAULT_MONTHS, DEFAULT_SEED, check_request

        months, futures = DEFAULT_MONTHS if months is None else months, DEFAULT_FUTURES if futures is None else futures
        seed = DEFAULT_SEED if seed is None else seed
        check_request(months, futures, seed)
    if withdraw is not None:
        if verify or html is not None or releases is not None:
            raise InputError("withdraw alone, then verify", key="--withdraw")
        row, removed = withdraw_release(folder, withdraw, reason)
        gone = ", ".join(removed) if removed else "no file left to remove"
        out_console.print(f"release {row.n} withdrawn ({gone}); later gates do not count it and the next month is "
                          f"release {row.n} again", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(0)
    if reason is not None:
        raise InputError("--reason goes with --withdraw N", key="--reason")
    names = _page_names(folder, raw_ids, html, "--html")
    verify = verify or html is not None or releases is not None
    history = list(history_lines(folder))
    text = _text_console(json_path)
    if verify:  # the integrity of the published files first: it decides the verdict whatever the attacks find
        found = check_files(folder, releases)
        moved = bool(found) and releases is None and all(p.problem == "missing" and not Path(p.file).parent.exists()
                                                         for p in found)  # the release folder itself is gone
        hint = "; if the release folder moved, give --releases NEWDIR" if moved else ""
        text.print(f"verify: FAIL - {integrity_line(found)}{hint}" if found else
                   "verify: every file the ledger recorded has its recorded SHA-256; no unrecorded release file "
                   "beside them", markup=False, highlight=False, soft_wrap=True)
    for line in history:
        text.print(line, markup=False, highlight=False, soft_wrap=True)
    forecast = None
    if headroom and verify and found:
        text.print("headroom: not forecast: the published files are not the ones the ledger recorded", markup=False,
                   highlight=False, soft_wrap=True)
    elif headroom:
        from multirelease.ledger.headroom import forecast as forecast_headroom

        forecast = forecast_headroom(folder, months=months, futures=futures, seed=seed)
        for line in forecast.lines():
            text.print(line, markup=False, highlight=False, soft_wrap=True)
    if not verify:
        if json_path and forecast is not None:
            _emit_json({"ledger": forecast.ledger, "headroom": forecast.to_json()}, json_path)
        raise typer.Exit(0)
    with progress_bar() as bar:
        run, problems = verify_ledger_checked(folder, bar, notation=notation, checked=found, releases=releases)
    for p in problems:
        err_console.print(str(p), markup=False, highlight=False, soft_wrap=True)
    page = {"ledger_history": history, "ledger_problems": [str(p) for p in problems],
            "ledger_repairs": repair_events(folder)}
    if forecast is not None:
        page["headroom"] = forecast.to_json()
    if problems:
        _finish_integrity("verify", run, problems, json_path, quiet, html=html,
                          page={**page, "scenario": ledger_name(folder)}, names=names)
    report = build_report(run)
    if forecast is not None:
        report["headroom"] = page["headroom"]
    if not quiet and json_path != "-":
        render_terminal(report, out_console, run.timings, json_path=json_path)
    if json_path:
        _emit_json(report, json_path)
    if html is not None:
        from multirelease.reports.html_page import write_html
        from multirelease.reports.document import page_context

        write_html({**report, **page_context(run), **page}, html, names=names)
    text.print(f"verify: verdict {run.verdict.upper()}", markup=False, highlight=False)
    raise typer.Exit(run.exit_code)


@app.command("describe")
def describe_cmd(name: Optional[str] = typer.Argument(None, metavar="NAME",
                                                      help="a publisher, an attack, a metric (FA, "
                                                      "correspondence.FA, release.LM), a group of keys (scenario, "
                                                      "releases, schema, adversary, dynamics, stream, transitions, "
                                                      "targets, spec) or exit-codes"),
                 list_names: bool = typer.Option(False, "--list", help="list every name")) -> None:
    """Print the reference entry of NAME: the text of docs/reference/, generated from the code."""
    from multirelease.reports.reference import describe, names

    if list_names or name is None:
        out_console.print("\n".join(names()), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(0)
    text = describe(name)
    if out_console.is_terminal:
        from rich.markdown import Markdown

        out_console.print(Markdown(text))
    else:
        out_console.print(text, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(0)


def main(argv: list[str] | None = None) -> int:
    """Entry point: turns :class:`InputError` into exit code 2 and one line on stderr."""
    try:
        # with standalone_mode=False, click *returns* the code of a raised Exit instead of raising it
        rv = app(args=argv, standalone_mode=False)
    except InputError as exc:
        err_console.print(f"error: {exc.one_line()}", markup=False, highlight=False, soft_wrap=True)
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # pragma: no cover - click internals
        return exc.code if isinstance(exc.code, int) else 1
    except typer.Abort:
        return 130
    except Exception as exc:  # command-line usage errors (click's, vendored or not)
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            err_console.print(exc.format_message(), markup=False, highlight=False)
            return 2
        err_console.print(f"error: {exc.format_message()}", markup=False, highlight=False, soft_wrap=True)
        return 2
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
