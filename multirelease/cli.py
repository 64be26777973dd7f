"""The ``multirelease`` command line: ``run``, ``certify``, ``publish``.

Exit codes (DESIGN.md): 0 everything held / PASS, 1 an expectation or requirement failed / FAIL,
2 bad input (one line naming the file, the key and the problem; no traceback), 3 UNKNOWN.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List, Optional

import typer
from rich.console import Console

from .errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Publish, attack and certify multi-release anonymized tables.")
out_console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

from .expect import EXIT_CODES as EXIT


@contextmanager
def progress_bar() -> Iterator:
    """A progress callback ``(description, done, total)`` drawing a transient bar on a terminal's stderr."""
    if not err_console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task("starting", total=1)

        def update(description: str, done: int, total: int) -> None:
            bar.update(task, description=description, completed=done, total=max(total, 1))

        yield update


def _write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _emit_json(report: dict, target: str) -> None:
    from .report import dumps

    text = dumps(report)
    if target == "-":
        sys.stdout.write(text)
    else:
        _write_text_atomic(Path(target), text)


def _check_targets(json_path: str | None = None, out: Path | None = None) -> None:
    """Refuse output paths that cannot be written, before anything runs (exit 2, nothing written)."""
    if json_path and json_path != "-" and Path(json_path).is_dir():
        raise InputError("is a directory, not a file", file=str(json_path), key="--json")
    if out is not None and out.exists() and not out.is_dir():
        raise InputError("exists and is not a directory", file=str(out), key="--out")


def write_releases(sequence, out: Path, states: list | None = None) -> list[Path]:
    """Write ``release_<i>.csv`` (and ``counterfeits_<i>.csv``) for every release, each file atomically."""
    from .release import write_counterfeits_csv

    out.mkdir(parents=True, exist_ok=True)
    written = []
    frames = [(i, r.to_frame(), r.counterfeits) for i, r in enumerate(sequence.releases, 1)]
    for i, frame, cf in frames:
        _write_text_atomic(out / f"release_{i}.csv", frame.to_csv(index=False))
        written.append(out / f"release_{i}.csv")
        if cf:
            import io

            buf = io.StringIO()
            write_counterfeits_csv(cf, buf)
            _write_text_atomic(out / f"counterfeits_{i}.csv", buf.getvalue())
            written.append(out / f"counterfeits_{i}.csv")
    return written


@app.command()
def run(scenario: Path = typer.Argument(..., help="the scenario YAML file"),
        json_path: Optional[str] = typer.Option(None, "--json", help="write the JSON report here ('-': stdout)"),
        out: Optional[Path] = typer.Option(None, "--out", help="write every release as release_<i>.csv here"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no terminal tables")) -> None:
    """Run a scenario: publish or read its releases, attack them, judge its expectations."""
    from .report import build_report, render_terminal
    from .scenario import load_scenario, run_scenario

    _check_targets(json_path, out)
    sc = load_scenario(scenario)
    with progress_bar() as bar:
        result = run_scenario(sc, progress=bar)
    report = build_report(result)
    if not quiet and json_path != "-":
        render_terminal(report, out_console, result.timings)
    if out is not None:
        write_releases(result.sequence, out)
    if json_path:
        _emit_json(report, json_path)
    raise typer.Exit(EXIT[report["verdict"]])


@app.command()
def certify(spec: Path = typer.Argument(..., help="YAML with the schema (and optionally data, adversary, "
                                                  "attacks, expect)"),
            releases: Optional[List[Path]] = typer.Argument(None, help="release CSV files, in publication order"),
            require: Optional[List[str]] = typer.Option(None, "--require", "-r",
                                                        help="'<attack>.<metric> <op> <number>' (repeatable)"),
            attack: Optional[List[str]] = typer.Option(None, "--attack", "-a", help="run only these attacks"),
            json_path: Optional[str] = typer.Option(None, "--json", help="write the JSON verdict here ('-': stdout)"),
            ) -> None:
    """Certify release files: PASS (exit 0) with a proof, FAIL (1) with a witness, UNKNOWN (3)."""
    from .certify import certify as do_certify
    from .report import _fmt

    _check_targets(json_path)
    with progress_bar() as bar:
        cert = do_certify(spec, releases or [], requires=require or [], attack_names=attack or [], progress=bar)
    doc = cert.to_json()
    if json_path != "-":
        from rich.table import Table as RichTable

        t = RichTable(title="requirements", title_justify="left")
        for col in ("requirement", "value", "exact", "holds"):
            t.add_column(col)
        for r in doc["requirements"]:
            mark = {True: "[green]yes[/green]", False: "[red]NO[/red]", None: "[yellow]unknown[/yellow]"}[r["holds"]]
            t.add_row(r["require"], _fmt(r["value"]), "yes" if r["exact"] else "no", mark)
        out_console.print(t)
        for r in doc["requirements"]:
            if r["holds"] is False and r.get("witness"):
                out_console.print(f"witness for '{r['require']}': {_brief(r['witness'], json_path)}")
        colour = {"pass": "green", "fail": "red", "unknown": "yellow"}[doc["verdict"]]
        out_console.print(f"verdict: [bold {colour}]{doc['verdict'].upper()}[/bold {colour}]")
    if json_path:
        _emit_json(doc, json_path)
    raise typer.Exit(cert.exit_code)


def _brief(witness: Any, json_path: str | None, limit: int = 2000) -> str:
    """A witness for the terminal: whole when short, else its scalar fields and where the rest is (a
    correspondence witness on Adult is a whole generator of thousands of buddy groups)."""
    text = json.dumps(witness, default=str)
    if len(text) <= limit or not isinstance(witness, dict):
        return text
    short = {k: v for k, v in witness.items() if isinstance(v, (str, int, float, bool)) or
             (isinstance(v, dict) and len(json.dumps(v, default=str)) <= 300)}
    rest = "in the --json report" if json_path else "with --json PATH"
    return f"{json.dumps(short, default=str)} (+ {', '.join(k for k in witness if k not in short)}: {rest})"


@app.command()
def publish(scenario: Path = typer.Argument(..., help="the scenario YAML file"),
            out: Path = typer.Option(..., "--out", help="directory for release_<i>.csv and state_<i>.json")) -> None:
    """Publish a scenario's releases (no attacks): release files plus each publisher's serialized state."""
    from .scenario import load_scenario, run_scenario

    _check_targets(out=out)
    sc = load_scenario(scenario)
    sc.attacks = []
    sc.expect = []
    with progress_bar() as bar:
        result = run_scenario(sc, progress=bar)
    written = write_releases(result.sequence, out)
    for i, state in enumerate(result.states, 1):
        _write_text_atomic(out / f"state_{i}.json", json.dumps(state, sort_keys=True, indent=1) + "\n")
    out_console.print(f"wrote {len(written)} files to {out}")


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
