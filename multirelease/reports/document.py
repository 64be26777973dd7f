"""Reports: the JSON document of the contract, and the terminal tables.

The JSON report (DESIGN.md, "Reports") is deterministic: the same scenario and seed give the same bytes
(timings are shown on the terminal only).
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from multirelease.model.release import Release
from multirelease.model.table import Table

__all__ = ["RELEASE_METRICS", "compute_metrics_all", "compute_release_metrics", "build_report", "page_context",
           "dumps", "render_terminal", "progress_display"]

RELEASE_METRICS = ("records", "classes", "k", "l_distinct", "l_entropy", "LM", "EM", "discernibility",
                   "discernibility_normalized", "AIL", "FEM", "VEM", "counterfeits", "counterfeit_share",
                   "withheld_share")


#: releases of fewer rows than this in all have their metrics computed in this process
_PARALLEL_ROWS = 200_000


def compute_metrics_all(pairs: list[tuple[Release, Table | None]],
                        meanwhile: Callable[[], Any] | None = None) -> list[dict[str, float]]:
    """:func:`compute_release_metrics` of every ``(release, snapshot)``, one task of the current executor each
    (issue 28), the snapshot sent as its :class:`~multirelease.model.metrics.SnapshotFigures`; ``meanwhile``
    runs in this process while the workers compute them (:meth:`solver.executor.Executor.map`)."""
    from multirelease.model.metrics import SnapshotFigures
    from solver.executor import executor_for_work

    ex = executor_for_work(sum(len(r) for r, _ in pairs), _PARALLEL_ROWS)
    return ex.map(_metrics_task, [(r, SnapshotFigures.of(s)) for r, s in pairs], meanwhile=meanwhile)


def _metrics_task(task: tuple) -> dict[str, float]:
    return compute_release_metrics(*task)


def compute_release_metrics(release: Release, snapshot: Table | None) -> dict[str, float]:
    """Size, k, distinct / entropy l, the information-loss metrics of one release, and two utility shares a
    custodian's requirement can name (issue 26: ``release[-1].counterfeit_share <= 0.05``):

    * ``counterfeit_share`` = counterfeit rows / rows published (the counterfeit statistics' total over
      ``len(release)``; 0 for a release without counterfeits; absent for an empty release) - m-invariance's
      and m-Distinct's price for the records that left or changed (Xiao & Tao, section 4; Li & Zhou);
    * ``withheld_share`` = records of the snapshot not in the release / records of the snapshot (with the
      snapshot only): counted as ``max(0, |snapshot| - (rows published - counterfeit rows)) / |snapshot|``, the
      rows published that are not counterfeits being records of the snapshot (a publisher that adds real
      records the snapshot lacks, BPG's dirty records, Barbosa et al. section 6, would hide as many withheld
      ones).  A ledger records the table it published (a repair's withheld records are not in the month's
      recorded snapshot), so for its gate this counts what the publisher itself left out."""
    from multirelease.model.metrics import release_metrics
    from multirelease.model.principles import distinct_l, entropy_l

    out: dict[str, float] = {"records": len(release), "classes": release.n_classes}
    if len(release):
        out["k"] = int(release.class_sizes.min())
        if release.sensitive_attributes:
            codes, values = release.sensitive_codes
            counts = np.zeros((release.n_classes, len(values)), dtype=np.int64)
            np.add.at(counts, (release.classes, codes), 1)
            out["l_distinct"] = int(distinct_l(counts).min())
            out["l_entropy"] = float(entropy_l(counts).min())
    original = None
    if snapshot is not None:
        # |T| of the suppression variants; a publisher may add real records the snapshot lacks (BPG's "dirty
        # records", Barbosa et al. section 6): they count in |T| as well
        n_fake = int(sum(release.counterfeits.values())) if release.counterfeits else 0
        original = max(len(snapshot), len(release) - n_fake)
    out.update(release_metrics(release, snapshot=snapshot, original_size=original))
    n_fake = int(sum(release.counterfeits.values())) if release.counterfeits else 0
    if release.counterfeits:
        out["counterfeits"] = n_fake
    if len(release):
        out["counterfeit_share"] = n_fake / len(release)
    if snapshot is not None and len(snapshot):
        out["withheld_share"] = max(0, len(snapshot) - (len(release) - n_fake)) / len(snapshot)
    return out


def _clean(v: Any) -> Any:
    """JSON-safe numbers: numpy scalars to Python, integral floats to int, NaN/inf to None.

    Exact types are tested first (a report of the correspondence attack on Adult holds millions of small
    dicts, ints and strings; ``isinstance(v, Mapping)`` goes through the ABC machinery every time)."""
    kind = type(v)
    if kind is str or kind is int or kind is bool or v is None:
        return v
    if kind is dict:
        return {k if type(k) is str else str(k): _clean(x) for k, x in v.items()}
    if kind is list or kind is tuple:
        return [_clean(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_clean(x) for x in v.tolist()]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        if math.isnan(f) or math.isinf(f):
            return None
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def build_report(run) -> dict:
    """The contract's JSON report of one pass of the pipeline (:class:`~multirelease.pipeline.ScenarioRun`);
    ``run`` and ``certify`` write the same document.

    Each expectation carries its proven ``value`` (``None`` when the metric is only known to lie in an
    interval, then ``lower`` / ``upper`` / ``reason`` say which and why), whether it ``holds``, where it came
    from, and - when it fails - the witness of its metric.  ``targets`` says who the attacks judged.
    """
    if len(run.sequence.releases) == len(run.release_metrics):
        sizes = [(len(release), release.n_classes) for release in run.sequence.releases]
    else:  # a ledger's gate publishes the new release alone; the metrics are every release's, in order
        sizes = [(metrics.get("records"), metrics.get("classes")) for metrics in run.release_metrics]
    releases = [{"index": i, "records": records, "classes": classes,
                 "metrics": {k: v for k, v in metrics.items() if k not in ("records", "classes")}}
                for i, ((records, classes), metrics) in enumerate(zip(sizes, run.release_metrics), 1)]
    attacks = {name: res.to_json() for name, res in run.results.items()}
    expectations = []
    for j in run.judged:
        item: dict[str, Any] = {"expect": j.expectation.text, "value": j.value, "holds": j.holds,
                                "exact": j.value is not None}
        if j.value is None:
            item.update({"lower": j.lower, "upper": j.upper, "reason": j.reason})
            if j.detail:
                item["detail"] = j.detail
        if j.source != "expect":
            item["source"] = j.source
        item["kind"] = j.kind
        subject = j.expectation.subject
        if j.holds is False and subject in run.results:
            item["witness"] = run.results[subject].witness(j.expectation.metric)
        expectations.append(item)
    out = {"scenario": run.scenario.name, "purpose": run.scenario.purpose, "releases": releases,
           "attacks": attacks, "expectations": expectations, "verdict": run.verdict, "targets": run.targets}
    if any(j.kind == "expectation" for j in run.judged):
        out["reproduced"] = run.reproduced
    waived = run.waived
    if waived:
        out["waived"] = [{"name": f"{j.expectation.subject}.{j.expectation.metric}", "line": j.expectation.text,
                          "holds": j.holds} for j in waived]
    return _clean(out)


def page_context(run) -> dict:
    """What the HTML page (:func:`multirelease.reports.html_page.render_html`) shows beyond the JSON contract's
    keys: the adversary's knowledge (the scenario's ``adversary``) and the scenario's description; the page
    reads ``{**build_report(run), **page_context(run)}``."""
    out: dict[str, Any] = {}
    adversary = getattr(run.scenario, "adversary", None)
    if dataclasses.is_dataclass(adversary):
        out["adversary"] = dataclasses.asdict(adversary)
        from multirelease.errors import InputError
        from multirelease.model.linking import linking_of

        try:
            linking = linking_of(run.sequence.releases, adversary.changing)
        except InputError:
            linking = None
        if linking is not None and (linking.columns or linking.ignored):
            out["adversary"]["linking"] = {"persistent": list(linking.columns), "ignored": list(linking.ignored)}
    if getattr(run.scenario, "description", ""):
        out["description"] = " ".join(str(run.scenario.description).split())
    return _clean(out)


def dumps(report: Mapping) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f.is_integer() and abs(f) < 1e15:
            return f"{int(f):,}"
        return f"{f:.4g}"
    return str(v)


def interval_text(metric: str, bound: Mapping) -> str:
    """``24,043 <= cracked <= 30,162 (stopped: budget 2 s)`` - a metric known only to lie in an interval."""
    lo, hi = bound.get("lower"), bound.get("upper")
    text = metric
    if lo is not None:
        text = f"{_fmt(lo)} <= {text}"
    if hi is not None:
        text = f"{text} <= {_fmt(hi)}"
    if lo is None and hi is None:
        text = f"{metric} unknown"
    why = bound.get("detail") or bound.get("reason") or ""
    label = "estimated" if bound.get("reason") == "sampled" else "stopped"
    return f"{text} ({label}: {why})" if why else text


VERDICT_WORDS = {"pass": ("green", "PASS"), "fail": ("red", "FAIL"), "unknown": ("yellow", "UNKNOWN"),
                 "none": ("cyan", "NONE (nothing was checked)")}
#: the expectations' answer of a research scenario (issue 30)
REPRODUCED_WORDS = {"pass": ("green", "reproduced"), "fail": ("red", "NOT reproduced"),
                    "unknown": ("yellow", "unknown (a solver stopped)"), "none": ("cyan", "none")}


def verdict_words(report: Mapping) -> tuple[str, str]:
    """``(colour, text)`` of the privacy verdict: a PASS beside a waived baseline that fails (an attack
    disclosed someone) is never green, and names the waivers."""
    colour, word = VERDICT_WORDS[report["verdict"]]
    waived = report.get("waived") or []
    if waived:
        word += " (waived: " + ", ".join(w["name"] for w in waived) + ")"
        if report["verdict"] == "pass" and any(w["holds"] is not True for w in waived):
            colour = "yellow"
    return colour, word


def verdict_line(report: Mapping) -> str:
    """``verdict: PASS (targets: population)``: the last line of every terminal report (and all ``-q`` prints)."""
    return f"verdict: {verdict_words(report)[1]} (targets: {report.get('targets', '-')})"


def reproduced_line(report: Mapping) -> str | None:
    """``expectations: reproduced (3 of 3)`` for a research scenario's expectations, else ``None``."""
    if "reproduced" not in report:
        return None
    lines = [x for x in report["expectations"] if x.get("kind") == "expectation"]
    held = sum(1 for x in lines if x["holds"] is True)
    return f"expectations: {REPRODUCED_WORDS[report['reproduced']][1]} ({held} of {len(lines)} as the paper says)"


def _sections(report: Mapping, timings: Mapping[str, float] | None) -> list[tuple[str, list[str], list[list], str]]:
    """The terminal's tables as data: ``(title, columns, rows, kind)``; a cell is text, or ``(text, style)``
    for the requirements' marks."""
    out = []
    rel = report["releases"]
    metric_names: list[str] = []
    for r in rel:
        metric_names += [k for k in r["metrics"] if k not in metric_names]
    rows = [["records", *[_fmt(r["records"]) for r in rel]], ["classes", *[_fmt(r["classes"]) for r in rel]]]
    rows += [[k, *[_fmt(r["metrics"].get(k)) for r in rel]] for k in metric_names]
    if timings:
        rows.append(["seconds", *[f"{timings.get('release ' + str(r['index']), 0):.2f}" for r in rel]])
    out.append(("releases", ["metric", *[f"release {r['index']}" for r in rel]], rows, "releases"))
    if report["attacks"]:
        rows = []
        for name, res in report["attacks"].items():
            for metric, value in res["summary"].items():
                rows.append([name, metric, _fmt(value), "yes"])
            for metric, bound in res.get("bounds", {}).items():
                shown = interval_text(metric, bound)
                if metric in res.get("estimates", {}):
                    shown += f", estimate {_fmt(res['estimates'][metric])}"
                rows.append([name, metric, shown, "no"])
        out.append(("attacks", ["attack", "metric", "value", "exact"], rows, "attacks"))
    for kind, title in (("expectation", "expectations (research: the paper's figures)"),
                        ("requirement", "requirements (privacy)"), ("waived", "waived baselines (not judged)")):
        rows = []
        for x in report["expectations"]:
            if x.get("kind", "requirement") != kind:
                continue
            mark = {True: ("yes", "green"), False: ("NO", "red"), None: ("unknown", "yellow")}[x["holds"]]
            metric = x["expect"].split(" ")[0].split(".", 1)[-1]
            shown = _fmt(x["value"]) if x["value"] is not None else interval_text(metric, x)
            rows.append([x["expect"], x.get("source", "expect"), shown, mark])
        if rows:
            out.append((title, ["line", "from", "value", "holds"], rows, "requirements"))
    return out


def _plain(cell: Any) -> str:
    return cell[0] if isinstance(cell, tuple) else str(cell)


def _plain_table(title: str, columns: list[str], rows: list[list], kind: str) -> list[str]:
    """A table as aligned plain lines, never cut (for a pipe or a file: the width is the widest cell's)."""
    cells = [columns] + [[_plain(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    right = [kind == "releases" and i > 0 for i in range(len(columns))]
    lines = [title]
    for r in cells:
        parts = [c.rjust(w) if rj else c.ljust(w) for c, w, rj in zip(r, widths, right)]
        lines.append(("  " + "  ".join(parts)).rstrip())
    return lines


def _rich_tables(title: str, columns: list[str], rows: list[list], kind: str, width: int) -> list:
    """rich tables that wrap (fold) long cells instead of cutting them with an ellipsis; a releases table
    wider than the terminal is split into several tables of fewer releases, each with the metric names."""
    from rich.table import Table as RichTable
    from rich.text import Text

    def cell(c: Any) -> Text:
        return Text(c[0], style=c[1]) if isinstance(c, tuple) else Text(str(c))

    groups = [list(range(1, len(columns)))]
    first = max(len(_plain(r[0])) for r in [columns] + rows)
    if kind == "releases" and len(columns) > 1:
        w = [max(len(_plain(r[i])) for r in [columns] + rows) + 3 for i in range(1, len(columns))]
        groups, cur, used = [], [], first + 4
        for i, wi in enumerate(w, 1):
            if cur and used + wi > width:
                groups.append(cur)
                cur, used = [], first + 4
            cur.append(i)
            used += wi
        groups.append(cur)
    tables = []
    for n, g in enumerate(groups):
        t = RichTable(title=title if n == 0 else f"{title} (continued)", title_justify="left")
        t.add_column(columns[0], overflow="fold", min_width=min(first, max(8, width // 3)))
        for i in g:
            t.add_column(columns[i], overflow="fold", justify="right" if kind == "releases" else "left")
        for r in rows:
            t.add_row(*[cell(r[0])] + [cell(r[i]) for i in g])
        tables.append(t)
    return tables


def render_terminal(report: Mapping, console, timings: Mapping[str, float] | None = None, *,
                    json_path: str | None = None) -> None:
    """Print the report: releases, attacks, requirements, witnesses of failures, verdict.

    On a terminal, rich tables that fold long cells (never an ellipsis) and split a releases table wider than
    the screen; piped or redirected (``console.is_terminal`` false), plain aligned lines that are never
    wrapped or cut, whatever ``COLUMNS`` says."""
    colour, word = verdict_words(report)
    verdict = verdict_line(report)
    witnesses = [f"witness for '{x['expect']}': {brief_witness(x['witness'], json_path)}"
                 for x in report["expectations"] if x["holds"] is False and x.get("witness")]
    reproduced = reproduced_line(report)
    if not console.is_terminal:
        lines = [str(report["scenario"])]
        for section in _sections(report, timings):
            lines += _plain_table(*section)
        for line in lines + witnesses + ([reproduced] if reproduced else []) + [verdict]:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    from rich.text import Text

    console.print(Text(str(report["scenario"]), style="bold"))
    for section in _sections(report, timings):
        for table in _rich_tables(*section, console.width):
            console.print(table)
    for line in witnesses:
        console.print(line, markup=False, highlight=False)
    if reproduced:
        rc = REPRODUCED_WORDS[report["reproduced"]][0]
        console.print(Text.assemble("expectations: ", (reproduced.split(": ", 1)[1], rc)))
    console.print(Text.assemble("verdict: ", (word, f"bold {colour}"),
                                f" (targets: {report.get('targets', '-')})"))


@contextmanager
def progress_display(console, delay: float = 1.0, every: float = 0.1) -> Iterator:
    """A progress callback ``(description, done, total)`` drawing a transient bar on ``console`` - only when it
    is a terminal, and only once the work has lasted ``delay`` seconds (short runs print nothing); ``None``
    otherwise, so that piped output stays clean.  The bar is drawn by the callback itself, in the thread that
    reports the progress, at most once every ``every`` seconds: no thread of its own (rich's ``Progress``
    refreshes from one), because the engines fork worker processes meanwhile, and a process forked while
    another thread held ``stderr``'s lock waits for it forever when it flushes ``stderr`` at its exit.  So the
    bar appears, and changes, when the work reports progress."""
    if not console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    clock = time.monotonic
    state: dict[str, Any] = {"bar": None, "task": None, "due": clock() + delay, "drawn": 0.0}

    def update(description: str, done: int, total: int) -> None:
        now = clock()
        if now < state["due"]:
            return
        if state["bar"] is None:
            state["bar"] = Progress(TextColumn("{task.description}"), BarColumn(),
                                    TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                    console=console, transient=True, auto_refresh=False)
            state["task"] = state["bar"].add_task(description, total=max(total, 1), completed=done)
            state["bar"].start()
        state["bar"].update(state["task"], description=description, completed=done, total=max(total, 1))
        if now - state["drawn"] >= every:
            state["bar"].refresh()
            state["drawn"] = now

    try:
        yield update
    finally:
        if state["bar"] is not None:
            state["bar"].stop()


def brief_witness(witness: Any, json_path: str | None, limit: int = 2000) -> str:
    """A witness for the terminal: whole when short, else its scalar fields and where the rest is (a
    correspondence witness on Adult is a whole generator of thousands of buddy groups)."""
    text = json.dumps(witness, default=str)
    if len(text) <= limit or not isinstance(witness, dict):
        return text
    short = {k: v for k, v in witness.items() if isinstance(v, (str, int, float, bool)) or
             (isinstance(v, dict) and len(json.dumps(v, default=str)) <= 300)}
    rest = "in the --json report" if json_path else "with --json PATH"
    return f"{json.dumps(short, default=str)} (+ {', '.join(k for k in witness if k not in short)}: {rest})"
