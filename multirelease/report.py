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
    """The contract's JSON report of a :class:`~multirelease.scenario.ScenarioRun`."""
    releases = []
    for i, (release, metrics) in enumerate(zip(run.sequence.releases, run.release_metrics), 1):
        releases.append({"index": i, "records": len(release), "classes": release.n_classes,
                         "metrics": {k: v for k, v in metrics.items() if k not in ("records", "classes")}})
    attacks = {name: res.to_json() for name, res in run.results.items()}
    expectations = [{"expect": e.text, "value": value, "holds": holds} for e, value, holds in run.judged]
    return _clean({"scenario": run.scenario.name, "releases": releases, "attacks": attacks,
                   "expectations": expectations, "verdict": run.verdict})


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


def render_terminal(report: Mapping, console, timings: Mapping[str, float] | None = None) -> None:
    """Print the report as rich tables: releases, attacks, expectations, verdict."""
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
                shown = _fmt(value)
                if metric in bounds:
                    lo, hi = bounds[metric]
                    shown = f"~{_fmt(value)} in [{_fmt(lo)}, {_fmt(hi)}] (estimate)"
                a.add_row(name, metric, shown, "yes" if res["exact"] and metric not in bounds else "no")
        console.print(a)
    if report["expectations"]:
        e = RichTable(title="expectations", title_justify="left")
        for col in ("expect", "value", "holds"):
            e.add_column(col)
        for x in report["expectations"]:
            mark = {True: "[green]yes[/green]", False: "[red]NO[/red]", None: "[yellow]unknown[/yellow]"}[x["holds"]]
            e.add_row(x["expect"], _fmt(x["value"]), mark)
        console.print(e)
    colour = {"pass": "green", "fail": "red", "unknown": "yellow"}[report["verdict"]]
    console.print(f"verdict: [bold {colour}]{report['verdict'].upper()}[/bold {colour}]")
