"""Replicate a paper's experiments: every figure as a PNG and its table as a CSV, one command per paper.

Usage::

    .venv/bin/python benchmarks/replicate.py PAPER [--figure N ...] [--quick] [--out DIR]

``PAPER`` is ``li_zhou`` (Li & Zhou, section VI, Figures 3-9) or ``barbosa`` (Barbosa et al., section 7,
Figures 1-3); ``fung``, ``shmueli_tassa`` and ``wong`` print "not yet" and exit 2 (their experiments are in
``fung_experiment.py`` and ``shmueli_tassa_experiment.py`` for now).  ``--figure`` picks figures (``3`` makes
3(a) and 3(b), ``3a`` only the panel); ``--quick`` runs every figure at a small size in seconds (what
``tests/benchmarks/test_replicate_quick.py`` runs and checks the papers' trends on); ``--out`` is the folder
(default: a new temporary folder, printed).  For each figure the paper's setting, ours, and every difference
between them are printed; ``<paper>_fig<N>.png`` and ``<paper>_fig<N>.csv`` are written, and a line of JSON
per figure gives its wall time.

The runs come from the experiment scripts (``li_zhou_experiment.run_plan`` over the stream of
``scenarios/adult_updates_m_distinct.yaml``, ``barbosa_experiment.run_method`` and ``attack``); a run that
several figures share is made once per invocation.  m-Distinct runs name their variant (``default``: the
project's, counterfeits drawn like real rows; ``paper``: Li & Zhou's Algorithms 2-3 as written, with the
counterfeit value tell): in every series name, title and CSV row.

Paper data versus ours: Li & Zhou used OCC (200k records, 4 QIs, occupation with 50 values); Barbosa et al.
SAL and OCC (600k records); neither is here.  Adult (30,162 records, occupation with 14 values) stands in,
with the papers' stream scaled to its size (the proportions of table, insertions, deletions and updates kept).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import barbosa_experiment  # noqa: E402
import li_zhou_experiment  # noqa: E402

NOT_YET = ("fung", "shmueli_tassa", "wong")


@dataclass(frozen=True)
class Figure:
    """One panel: ``make(settings, runs)`` returns its long table (``series``, ``x``, ``y`` and more)."""

    key: str
    title: str
    xlabel: str
    ylabel: str
    paper: str  # the paper's setting and its headline reading, as stated in its text
    make: Callable
    differences: tuple = ()


@dataclass
class Runs:
    """The runs of one invocation, each made once: key -> rows."""

    settings: dict
    cache: dict = field(default_factory=dict)

    def get(self, key: tuple, make: Callable) -> list:
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]


# ---------------------------------------------------------------------------------------------- Li & Zhou
#: section VI.A on OCC: 20,000 records, 2,000 out, 5,000 in and 5,000 occupation updates per release, 20
#: releases, d = 10; scaled by 1/4 to Adult's 30,162 records (28,750 used)
LI_ZHOU_FULL = dict(initial=5000, delete=500, insert=1250, sensitive=1250, releases=20, d=10, delete_cnt=750,
                    l=(2, 4), m=4, ms=(2, 4, 6, 8), ds=(1, 2, 4, 6, 8, 10), ds_distinct=(2, 4, 6, 8, 10),
                    ms_cnt=(2, 4, 6, 8), d_cnt=5, m_cnt=6, queries=10_000, theta=0.5, thetas=(0.2, 0.4, 0.6, 0.8, 1.0),
                    variants=("paper", "default"))
LI_ZHOU_QUICK = dict(initial=240, delete=24, insert=60, sensitive=60, releases=3, d=10, delete_cnt=36,
                     l=(2, 4), m=4, ms=(2, 4), ds=(1, 10), ds_distinct=(5, 10), ms_cnt=(2, 6), d_cnt=5, m_cnt=6,
                     queries=300, theta=0.5, thetas=(0.3, 1.0), variants=("paper", "default"))
LI_ZHOU_DIFFERENCES = (
    "data: Adult (30,162 records, occupation with 14 values) for OCC (200k records, 50 values): the stream is "
    "scaled by 1/4 (20,000 / 2,000 / 5,000 / 5,000 -> 5,000 / 500 / 1,250 / 1,250), d counts values of 14",
    "quasi-identifiers: sex, age, marital-status, education (Table VII's four, Adult's hierarchies)",
    "one repetition per point (the paper does not say how many it averaged)",
)


def _lz_doc(s: dict, *, d: int, delete: int | None = None) -> tuple[dict, Path]:
    doc, base = li_zhou_experiment.load_yaml(li_zhou_experiment.SCENARIO)
    return li_zhou_experiment.stream_document(doc, initial=s["initial"], delete=delete or s["delete"],
                                              insert=s["insert"], sensitive=s["sensitive"], d=d), base


def _lz_run(runs: Runs, publisher: dict, *, d: int, attack: bool = False, queries: bool = False,
            delete: int | None = None, releases: int | None = None) -> list[dict]:
    s = runs.settings
    releases = releases or s["releases"]
    key = ("li_zhou", json.dumps(publisher, sort_keys=True), d, attack, queries, delete, releases)
    for other in (key[:4] + (True, delete, s["releases"]), key[:5] + (delete, s["releases"])):
        if not queries and other in runs.cache:  # the same releases (a prefix of them), perhaps with query errors
            return runs.cache[other][:releases]

    def make():
        doc, base = _lz_doc(s, d=d, delete=delete)
        thetas = s["thetas"] if queries and publisher.get("m") == s["m"] and d == s["d"] else ()  # Fig. 5(b)'s
        rows = li_zhou_experiment.run_plan(doc, base, publisher, "population" if attack else None, releases,
                                           queries=s["queries"] if queries else 0, theta=s["theta"],
                                           thetas=thetas, progress=_progress)
        for r in rows:
            r["d"] = d
        return rows

    return runs.get(key, make)


def _distinct(m: int, variant: str) -> dict:
    return {"publisher": "m_distinct", "m": m, "variant": variant}


def _long(rows: list[dict], series: str, x: str, y: str, **extra) -> list[dict]:
    return [{"series": series, "x": r[x], "y": r[y], **{k: r.get(k) for k in extra.get("keep", ())}} for r in rows]


def lz_fig3a(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for l in s["l"]:
        rows = _lz_run(runs, {"publisher": "naive", "l": l}, d=s["d"], attack=True)
        out += _share(rows, f"naive_l{l}")
    rows = _lz_run(runs, _distinct(s["m"], "paper"), d=s["d"], attack=True)
    return pd.DataFrame(out + _share(rows, li_zhou_experiment.label(_distinct(s["m"], "paper"))))


def _share(rows, series):
    """Vulnerable values after each release, and their share of the values published so far (real rows)."""
    published, out = 0, []
    for r in rows:
        published += r["records"]
        out.append({"series": series, "x": r["release"], "y": r["vulnerable_values"],
                    "share_of_published": round(r["vulnerable_values"] / published, 4)})
    return out


def lz_fig3b(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for l in s["l"]:
        for d in s["ds"]:
            last = _lz_run(runs, {"publisher": "naive", "l": l}, d=d, attack=True)[-1]
            out.append({"series": f"naive_l{l}", "x": d, "y": last["vulnerable_values"]})
    return pd.DataFrame(out)


def lz_fig4a(runs: Runs) -> pd.DataFrame:
    s = runs.settings
    rows = _lz_run(runs, {"publisher": "m_invariance", "m": s["m"]}, d=s["d"])
    return pd.DataFrame(_long(rows, f"m_invariance_m{s['m']}", "release", "invalid_total", keep=("invalid",)))


def lz_fig4b(runs: Runs) -> pd.DataFrame:
    s = runs.settings
    out = [{"series": f"m_invariance_m{s['m']}", "x": d,
            "y": _lz_run(runs, {"publisher": "m_invariance", "m": s["m"]}, d=d)[-1]["invalid_total"]}
           for d in s["ds"]]
    return pd.DataFrame(out)


def _distinct_runs(runs: Runs, ms, d: int, *, queries: bool = False, delete: int | None = None,
                   releases: int | None = None):
    s = runs.settings
    for m in ms:
        for v in s["variants"]:
            pub = _distinct(m, v)
            yield m, li_zhou_experiment.label(pub), _lz_run(runs, pub, d=d, queries=queries, delete=delete,
                                                            releases=releases)


def lz_fig5a(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for _, name, rows in _distinct_runs(runs, sorted({2, s["m"]}), s["d"], queries=True):
        out += _long(rows, name, "release", "median_query_error")
    return pd.DataFrame(out)


def lz_fig5b(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for _, name, rows in _distinct_runs(runs, [s["m"]], s["d"], queries=True):
        for t in s["thetas"]:
            out.append({"series": name, "x": t, "y": rows[-1][f"error_theta_{t:g}"]})
    return pd.DataFrame(out)


def lz_fig6(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for d in s["ds_distinct"]:
        for _, name, rows in _distinct_runs(runs, [s["m"]], d, queries=True):
            out.append({"series": name, "x": d,
                        "y": round(float(pd.Series([r["median_query_error"] for r in rows]).mean()), 4)})
    return pd.DataFrame(out)


def lz_fig7(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for _, name, rows in _distinct_runs(runs, [s["m_cnt"]], s["d_cnt"], delete=s["delete_cnt"]):
        out += _long(rows, name, "release", "counterfeits_per_group", keep=("counterfeits", "groups"))
    return pd.DataFrame(out)


def _mean_cnt(rows) -> float:
    return round(float(pd.Series([r["counterfeits_per_group"] for r in rows[1:]]).mean()), 4)


def lz_fig8a(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for d in s["ds_distinct"]:
        for _, name, rows in _distinct_runs(runs, [s["m_cnt"]], d, delete=s["delete_cnt"]):
            out.append({"series": name, "x": d, "y": _mean_cnt(rows)})
    return pd.DataFrame(out)


def lz_fig8b(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for m, name, rows in _distinct_runs(runs, sorted(set(s["ms_cnt"]) | {s["m_cnt"]}), s["d_cnt"],
                                        delete=s["delete_cnt"]):
        out.append({"series": name.rsplit("_", 1)[1], "x": m, "y": _mean_cnt(rows)})
    return pd.DataFrame(out)


def lz_fig9a(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for d in s["ds_distinct"]:
        for _, name, rows in _distinct_runs(runs, [s["m"]], d, releases=2):
            out.append({"series": name, "x": d, "y": rows[1]["publish_seconds"]})
    return pd.DataFrame(out)


def lz_fig9b(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for m, name, rows in _distinct_runs(runs, sorted(set(s["ms"]) | {2, s["m"]}), s["d"], releases=2):
        out.append({"series": name.rsplit("_", 1)[1], "x": m, "y": rows[1]["publish_seconds"]})
    return pd.DataFrame(out)


LI_ZHOU = (
    Figure("3a", "Vulnerable sensitive values vs release (Fig. 3(a))", "release", "vulnerable values (cumulative)",
           "l-diversity [10] republished 20 times, d = 10: vulnerable values grow with every release; about 66% of "
           "published values disclosed after 20 releases with 2-diversity; larger l, fewer", lz_fig3a,
           ("l = 2, 4 (the text names 2-diversity and 'a larger l')", "m_distinct (variant: paper) beside, "
            "attacked the same way: 0 by Lemma 3")),
    Figure("3b", "Vulnerable values vs update diameter d (Fig. 3(b))", "d", "vulnerable values after the last release",
           "vulnerable values vs d: a smaller d gives more; fewer as l grows", lz_fig3b),
    Figure("4a", "m-invariance: invalid records vs release (Fig. 4(a))", "release", "invalid records (cumulative)",
           "m-invariance [4] republished: the invalid records increase gradually with each release", lz_fig4a,
           ("m = 4 (the text gives no m for Fig. 4)",)),
    Figure("4b", "m-invariance: invalid records vs d (Fig. 4(b))", "d", "invalid records after the last release",
           "invalid counts increase dramatically with d; none at d = 1", lz_fig4b),
    Figure("5a", "m-Distinct: median relative query error vs release (Fig. 5(a))", "release",
           "median relative error", "2- and 4-Distinct, 10,000 random count queries: the error increases smoothly, "
           "then stops increasing", lz_fig5a, ("theta = 0.5 (the text gives none for Fig. 5(a); below about 0.3 "
                                               "most queries on Adult select no record)",)),
    Figure("5b", "m-Distinct: median relative query error vs theta (Fig. 5(b))", "theta",
           "median relative error (last release)", "m = 4: a larger range theta gives a smaller error",
           lz_fig5b, ("the error at the last release (the text does not say which release)",)),
    Figure("6", "m-Distinct: median relative query error vs d (Fig. 6)", "d",
           "median relative error (mean over releases)", "the accuracy increases with d (the error falls)", lz_fig6,
           ("d = 1 left out: no occupation can change, the stream's occupation updates are void",)),
    Figure("7", "m-Distinct: counterfeits per QI-group CNT_g vs release (Fig. 7)", "release", "CNT_g",
           "m = 6, d = 5, 3,000 deletions per release: CNT_g rises at first, falls after the 7th release", lz_fig7,
           ("3,000 deletions scaled to 750 (of 5,000)",)),
    Figure("8a", "m-Distinct: mean CNT_g vs d (Fig. 8(a))", "d", "mean CNT_g over releases 2..n",
           "m = 6: a larger d gives fewer counterfeits per group", lz_fig8a),
    Figure("8b", "m-Distinct: mean CNT_g vs m (Fig. 8(b))", "m", "mean CNT_g over releases 2..n",
           "d = 5: CNT_g grows with m; 8-Distinct the largest, below 2", lz_fig8b),
    Figure("9a", "m-Distinct: time to publish T2* vs d (Fig. 9(a))", "d", "seconds (release 2)",
           "the cost of publishing T2* grows with d", lz_fig9a,
           ("time of our Python publisher including its self-check (the paper: C++, no check); two-release runs",)),
    Figure("9b", "m-Distinct: time to publish T2* vs m (Fig. 9(b))", "m", "seconds (release 2)",
           "the cost falls from m = 2 to 4, rises from 4 to 8", lz_fig9b,
           ("time of our Python publisher including its self-check (the paper: C++, no check); two-release runs",)),
)


# ---------------------------------------------------------------------------------------------- Barbosa et al.
#: section 7: 200k of 600k tuples, r in 40k, 20k, 10k, 5k (400k / r + 1 releases), k = l = m = 10; scaled by 1/20
BARBOSA_FULL = dict(initial=10_000, pool=20_000, rates=(2000, 1000, 500, 250), fig3_rates=(250, 2000),
                    methods=("bpg", "m_invariance"))
BARBOSA_QUICK = dict(initial=500, pool=400, rates=(200, 100), fig3_rates=(100, 200), methods=("bpg", "m_invariance"))
BARBOSA_DIFFERENCES = (
    "data: Adult (30,162 records, 8 quasi-identifiers, occupation with 14 values) for SAL and OCC (600k, 4 QIs, "
    "50 values): table 10,000 and 20,000 arrivals for 200k and 400k, r scaled by 1/20 (40k..5k -> 2,000..250)",
    "one repetition for the paper's ten; Mondrian's split is the project's (the paper: degeneracy)",
    "m-invariance publishes uids (uid: true, QI-groups kept as cohorts) for the record-tracking adversary",
    "no m-Distinct involved (no m_distinct variant)",
)


def _bb_run(runs: Runs, method: str, r: int) -> dict:
    s = runs.settings

    def make():
        t0 = time.perf_counter()
        rows, seen = barbosa_experiment.run_method(method, r, initial=s["initial"], pool=s["pool"], progress=None)
        wall = time.perf_counter() - t0
        _progress(f"barbosa {method} r={r}: {len(rows)} releases, {wall:.1f} s")
        return {"rows": rows, "attack": barbosa_experiment.attack(seen)}

    return runs.get(("barbosa", method, r), make)


def _bb_times(runs: Runs, per_release: bool) -> pd.DataFrame:
    s, out = runs.settings, []
    for method in s["methods"]:
        for r in s["rates"]:
            run = _bb_run(runs, method, r)
            frame = pd.DataFrame(run["rows"])
            row = {"series": method, "x": r, "y": round(float(frame.seconds.mean() if per_release else
                                                              frame.seconds.sum()), 4),
                   "releases": len(frame), "violations": run["attack"]["violations"]}
            if "bpg_seconds" in frame:
                row["bpg_ratio"] = round(float(frame.bpg_seconds.sum() / frame.seconds.sum()), 4)
            out.append(row)
    return pd.DataFrame(out)


def bb_fig1(runs: Runs) -> pd.DataFrame:
    return _bb_times(runs, per_release=False)


def bb_fig2(runs: Runs) -> pd.DataFrame:
    return _bb_times(runs, per_release=True)


def bb_fig3(runs: Runs) -> pd.DataFrame:
    s, out = runs.settings, []
    for r in s["fig3_rates"]:
        for method in s["methods"]:
            for row in _bb_run(runs, method, r)["rows"]:
                for metric in ("FEM", "VEM"):
                    out.append({"series": f"{method} r={r}", "panel": metric, "x": row["release"],
                                "y": round(row[metric], 4), "counterfeits": row["counterfeits"]})
    return pd.DataFrame(out)


BARBOSA = (
    Figure("1", "Total execution time vs update rate r (Fig. 1)", "r", "seconds (whole run)",
           "the total time grows as r decreases (twice the releases per halving); BPG 20-40% faster than "
           "m-invariance; Table 4: BPG's post-processing 0.22-0.25 of the total", bb_fig1,
           ("the CSV has Table 4's ratio (bpg_ratio) and the intersection attack's violations",)),
    Figure("2", "Average execution time per release vs r (Fig. 2)", "r", "seconds per release",
           "BPG very stable per release; m-invariance more efficient as more releases are made, approaching BPG",
           bb_fig2),
    Figure("3", "FEM and VEM per release (Fig. 3)", "release", "bits",
           "r = 5k and 40k: m-invariance very high FEM, very low VEM; BPG's VEM better by 1.62-2.2 times, its FEM "
           "slightly worse at first, recovering (lowest ratio 0.83)", bb_fig3, ("r = 250 and 2,000 for 5k and 40k",)),
)

PAPERS = {"li_zhou": (LI_ZHOU, LI_ZHOU_FULL, LI_ZHOU_QUICK, LI_ZHOU_DIFFERENCES),
          "barbosa": (BARBOSA, BARBOSA_FULL, BARBOSA_QUICK, BARBOSA_DIFFERENCES)}


# ---------------------------------------------------------------------------------------------- output
def _progress(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def plot(fig: Figure, table: pd.DataFrame, path: Path, caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(table["panel"])) if "panel" in table else [None]
    f, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        part = table if panel is None else table[table["panel"] == panel]
        for series, sub in part.groupby("series", sort=False):
            ax.plot(sub["x"], sub["y"], marker="o", ms=3, label=str(series))
        ax.set_xlabel(fig.xlabel)
        ax.set_ylabel(fig.ylabel if panel is None else f"{panel} ({fig.ylabel})")
        ax.legend(fontsize=7)
    f.suptitle(f"{fig.title}\n{caption}", fontsize=8)
    f.tight_layout()
    f.savefig(path, dpi=110)
    plt.close(f)


def select(figures, wanted) -> list:
    if not wanted:
        return list(figures)
    out = [f for f in figures if any(f.key == w or f.key.rstrip("ab") == w for w in wanted)]
    unknown = [w for w in wanted if not any(f.key == w or f.key.rstrip("ab") == w for f in figures)]
    if unknown:
        raise SystemExit(f"replicate: no figure {', '.join(unknown)} (known: {', '.join(f.key for f in figures)})")
    return out


def replicate(paper: str, figures=(), *, quick: bool = False, out: Path, runs: Runs | None = None,
              echo=print) -> dict[str, pd.DataFrame]:
    """Make the figures of ``paper`` into ``out``; returns each figure's table by key (``runs`` shares runs
    between calls)."""
    table_of, full, small, differences = PAPERS[paper]
    settings = small if quick else full
    runs = runs if runs is not None and runs.settings is settings else Runs(settings)
    out.mkdir(parents=True, exist_ok=True)
    echo(f"{paper}: {'quick' if quick else 'paper-scale'} settings {json.dumps(settings)}")
    for line in differences:
        echo(f"  differs from the paper: {line}")
    if quick:
        echo("  differs from the paper: --quick: a small table and few releases, for the trends only")
    tables = {}
    for fig in select(table_of, figures):
        t0 = time.perf_counter()
        table = fig.make(runs)
        variants = sorted({str(v).rsplit("_", 1)[-1] for v in table["series"] if str(v).startswith("m_distinct")}
                          | ({str(v) for v in table["series"]} & {"paper", "default"}))
        which = f"m_distinct variant: {', '.join(variants)}" if variants else "no m_distinct variant involved"
        table.insert(0, "figure", fig.key)
        table["m_distinct_variant"] = ", ".join(variants) or None
        stem = f"{paper}_fig{fig.key}"
        table.to_csv(out / f"{stem}.csv", index=False)
        plot(fig, table, out / f"{stem}.png", f"{which}; {'quick' if quick else 'Adult, paper settings scaled'}")
        echo(f"figure {fig.key}: {fig.title} [{which}]")
        echo(f"  paper: {fig.paper}")
        for line in fig.differences:
            echo(f"  differs: {line}")
        echo(f"  ours: {_reading(table)}")
        echo(json.dumps({"paper": paper, "figure": fig.key, "seconds": round(time.perf_counter() - t0, 2),
                         "png": str(out / f'{stem}.png'), "csv": str(out / f'{stem}.csv')}))
        tables[fig.key] = table
    return tables


def _reading(table: pd.DataFrame, points: int = 6) -> str:
    """Per series its ``x->y`` values in x order (at most ``points`` of them, evenly spaced, the last kept)."""
    parts = []
    keys = ["panel", "series"] if "panel" in table else ["series"]
    for key, sub in table.groupby(keys, sort=False):
        name = " ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
        pairs = list(zip(sub["x"], sub["y"]))
        if len(pairs) > points:
            step = (len(pairs) - 1) / (points - 1)
            pairs = [pairs[round(i * step)] for i in range(points)]
        parts.append(f"{name}: " + ", ".join(f"{x:g}->{y:g}" for x, y in pairs))
    return "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paper", help="li_zhou | barbosa (fung, shmueli_tassa, wong: not yet)")
    ap.add_argument("--figure", nargs="+", default=[], help="figure numbers (3) or panels (3a); default all")
    ap.add_argument("--quick", action="store_true", help="small table, few releases: the trends in seconds")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: a new temporary folder)")
    args = ap.parse_args(argv)
    if args.paper in NOT_YET:
        print(f"replicate: {args.paper}: not yet (see docs/replication.md)", file=sys.stderr)
        return 2
    if args.paper not in PAPERS:
        print(f"replicate: unknown paper '{args.paper}' (known: {', '.join([*PAPERS, *NOT_YET])})", file=sys.stderr)
        return 2
    try:
        select(PAPERS[args.paper][0], args.figure)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix=f"replicate_{args.paper}_"))
    print(f"output folder: {out}")
    t0 = time.perf_counter()
    replicate(args.paper, args.figure, quick=args.quick, out=out)
    print(json.dumps({"paper": args.paper, "seconds": round(time.perf_counter() - t0, 1), "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
