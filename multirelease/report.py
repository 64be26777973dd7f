"""Reports: the JSON document of the contract, and the terminal tables.

The JSON report (DESIGN.md, "Reports") is deterministic: the same scenario and seed give the same bytes
(timings are shown on the terminal only).
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

import numpy as np

from .release import Release
from .table import Table

__all__ = ["RELEASE_METRICS", "compute_release_metrics", "build_report", "dumps", "render_terminal"]

RELEASE_METRICS = ("records", "classes", "k", "l_distinct", "l_entropy", "LM", "EM", "discernibility",
                   "discernibility_normalized", "AIL", "FEM", "VEM", "counterfeits")


def compute_release_metrics(release: Release, snapshot: Table | None) -> dict[str, float]:
    """Size, k, distinct / entropy l and the information-loss metrics of one release."""
    from .metrics import release_metrics
    from .principles import distinct_l, entropy_l

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
    if release.counterfeits:
        out["counterfeits"] = int(sum(release.counterfeits.values()))
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
    releases = []
    for i, (release, metrics) in enumerate(zip(run.sequence.releases, run.release_metrics), 1):
        releases.append({"index": i, "records": len(release), "classes": release.n_classes,
                         "metrics": {k: v for k, v in metrics.items() if k not in ("records", "classes")}})
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
        subject = j.expectation.subject
        if j.holds is False and subject in run.results:
            item["witness"] = run.results[subject].witness(j.expectation.metric)
        expectations.append(item)
    return _clean({"scenario": run.scenario.name, "releases": releases, "attacks": attacks,
                   "expectations": expectations, "verdict": run.verdict, "targets": run.targets})


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


def render_terminal(report: Mapping, console, timings: Mapping[str, float] | None = None, *,
                    json_path: str | None = None) -> None:
    """Print the report as rich tables: releases, attacks, expectations, witnesses of failures, verdict."""
    from rich.table import Table as RichTable

    console.print(f"[bold]{report['scenario']}[/bold]")
    metric_names: list[str] = []
    for r in report["releases"]:
        for k in r["metrics"]:
            if k not in metric_names:
                metric_names.append(k)
    t = RichTable(title="releases", title_justify="left")
    t.add_column("metric")
    for r in report["releases"]:
        t.add_column(f"release {r['index']}", justify="right")
    t.add_row("records", *[_fmt(r["records"]) for r in report["releases"]])
    t.add_row("classes", *[_fmt(r["classes"]) for r in report["releases"]])
    for k in metric_names:
        t.add_row(k, *[_fmt(r["metrics"].get(k)) for r in report["releases"]])
    if timings:
        t.add_row("seconds", *[f"{timings.get('release ' + str(r['index']), 0):.2f}" for r in report["releases"]])
    console.print(t)
    if report["attacks"]:
        a = RichTable(title="attacks", title_justify="left")
        for col in ("attack", "metric", "value", "exact"):
            a.add_column(col)
        for name, res in report["attacks"].items():
            bounds = res.get("bounds", {})
            for metric, value in res["summary"].items():
                a.add_row(name, metric, _fmt(value), "yes")
            for metric, bound in bounds.items():
                shown = interval_text(metric, bound)
                if metric in res.get("estimates", {}):
                    shown += f", estimate {_fmt(res['estimates'][metric])}"
                a.add_row(name, metric, shown, "no")
        console.print(a)
    if report["expectations"]:
        e = RichTable(title="requirements", title_justify="left")
        for col in ("requirement", "value", "holds"):
            e.add_column(col)
        for x in report["expectations"]:
            mark = {True: "[green]yes[/green]", False: "[red]NO[/red]", None: "[yellow]unknown[/yellow]"}[x["holds"]]
            metric = x["expect"].split(" ")[0].split(".", 1)[-1]
            shown = _fmt(x["value"]) if x["value"] is not None else interval_text(metric, x)
            e.add_row(x["expect"], shown, mark)
        console.print(e)
        for x in report["expectations"]:
            if x["holds"] is False and x.get("witness"):
                console.print(f"witness for '{x['expect']}': {brief_witness(x['witness'], json_path)}",
                              markup=False, highlight=False)
    colour, word = VERDICT_WORDS[report["verdict"]]
    console.print(f"verdict: [bold {colour}]{word}[/bold {colour}] (targets: {report.get('targets', '-')})")


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
