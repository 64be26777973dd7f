"""Replicate a paper's experiments: every figure as a PNG and its table as a CSV, one command per paper.

Usage::

    .venv/bin/python benchmarks/replicate.py PAPER [--figure N ...] [--quick] [--out DIR]

``PAPER`` is ``li_zhou`` (Li & Zhou, section VI, Figures 3-9), ``barbosa`` (Barbosa et al., section 7,
Figures 1-3), ``shmueli_tassa`` (Shmueli & Tassa, section 6, Figures 6-17; Figures 1-5 compare with two
algorithms of other papers that the project does not implement) or ``fung`` (Fung et al., section 6, Figures
1-2); ``wong`` has no experiment (its figures are worked examples, reproduced by scenarios) and exits 2 saying
so.  ``--figure`` picks figures (``3`` makes 3(a) and 3(b), ``3a`` only the panel); ``--quick`` runs every
figure at a small size in seconds (what ``tests/benchmarks/test_replicate_quick*.py`` run and check the papers'
trends on); ``--out`` is the folder (default: a new temporary folder, printed).  For each figure the paper's
setting, ours, and every difference between them are printed; ``<paper>_fig<N>.png`` and ``<paper>_fig<N>.csv``
are written, and a line of JSON per figure gives its wall time.

The runs come from the experiment scripts (``li_zhou_experiment.run_plan`` over the stream of
``scenarios/adult_updates_m_distinct.yaml``, ``barbosa_experiment.run_method`` and ``attack``,
``shmueli_tassa_experiment.run_sequence``, ``fung_experiment.run_case``); a run that several figures share is
made once per invocation.  m-Distinct runs name their variant (``default``: the project's, counterfeits drawn
like real rows; ``paper``: Li & Zhou's Algorithms 2-3 as written, with the counterfeit value tell): in every
series name, title and CSV row.

Paper data versus ours: Li & Zhou used OCC (200k records, 4 QIs, occupation with 50 values); Barbosa et al.
SAL and OCC (600k records); Shmueli & Tassa CENSUS (500k records); none is here.  Adult (30,162 records,
occupation with 14 values) stands in for OCC and SAL, with the papers' streams scaled to its size (the
proportions of table, insertions, deletions and updates kept); a table drawn from Adult's marginals at the
paper's N stands in for CENSUS.  Fung et al. and Shmueli & Tassa's Figure 14 used Adult itself.
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
import fung_experiment  # noqa: E402
import li_zhou_experiment  # noqa: E402
import shmueli_tassa_experiment  # noqa: E402

#: papers without an experimental section: what stands in for them
NO_EXPERIMENTS = {"wong": "Wong et al. report no experiment (Figures 1-4 are worked examples); "
                          "scenarios/wong_figure_2.yaml and wong_figure_4.yaml reproduce them with "
                          "'multirelease run'"}


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


# ---------------------------------------------------------------------------------------------- Shmueli & Tassa
#: section 6: CENSUS (500k records, 7 QIs) with N = 100,000, l = 5, p = 100 unless a figure varies one of them;
#: ten releases I_1..I_10 (Figures 6-13); Adult (Figure 14); four releases with N = 100k, +50k, +30k, +20k
#: (Figures 15-17). The text does not give the five l, the N or the p it varied: ours are below.
SHMUELI_TASSA_FULL = dict(n=100_000, l=5, p=100, ls=(2, 3, 4, 5, 6), ns=(25_000, 50_000, 100_000, 200_000),
                          ps=(25, 50, 100, 200, 400), batches=(100_000, 50_000, 30_000, 20_000), adult_rows=None,
                          seed=11, data_seed=0)
SHMUELI_TASSA_QUICK = dict(n=400, l=3, p=100, ls=(2, 3), ns=(200, 400), ps=(10, 100), batches=(200, 100, 60, 40),
                           adult_rows=600, seed=11, data_seed=0)
SHMUELI_TASSA_DIFFERENCES = (
    "data: CENSUS (500k records) is not here; its stand-in is a table drawn from Adult's marginals "
    "(benchmarks/census.py: every attribute independently, seed 0) at the paper's N, with Adult's hierarchies; "
    "A_8 (the paper does not name it; its diversity 13.4) is occupation (diversity 7.5)",
    "the five l (2-6), the four N (25k-200k) and the five p (25-400) are ours: the text gives none",
    "one repetition per point; release i drawn with numpy's default_rng([11, i]), the preprocessing [11, 0]",
)


def _st_table(runs: Runs, n: int | None = None, *, adult: bool = False):
    s = runs.settings
    if adult:
        def make():
            table = shmueli_tassa_experiment.adult_table()
            rows = s["adult_rows"]
            return table if rows is None else type(table)(table.schema, table.frame.iloc[:rows])
        return runs.get(("st_table", "adult"), make)
    n = n or s["n"]
    return runs.get(("st_table", n), lambda: shmueli_tassa_experiment.census_table(n, s["data_seed"]))


def _st_run(runs: Runs, algorithm: str = "sequential", *, l: int | None = None, n: int | None = None,
            p: int | None = None, adult: bool = False, releases=None, known=None, sizes=None,
            label: str | None = None) -> list[dict]:
    """One sequence of releases (:func:`shmueli_tassa_experiment.run_sequence`), made once per invocation."""
    s = runs.settings
    l, n, p = l or s["l"], n or s["n"], p or s["p"]
    releases = releases or (shmueli_tassa_experiment.FIGURE14 if adult else shmueli_tassa_experiment.FIGURE6)
    key = ("st", algorithm, l, "adult" if adult else n, p, json.dumps(releases), json.dumps(known),
           json.dumps(sizes))

    def make():
        t0 = time.perf_counter()
        rows = shmueli_tassa_experiment.run_sequence(_st_table(runs, n, adult=adult), releases, algorithm=algorithm,
                                                     l=l, p=p, seed=s["seed"], known=known, sizes=sizes,
                                                     label=label)
        _progress(f"shmueli_tassa {label or algorithm} l={l} N={'adult' if adult else n} p={p}: "
                  f"{time.perf_counter() - t0:.1f} s")
        return rows

    return runs.get(key, make)


def _mean(rows: list[dict], metric: str = "LM") -> float:
    return round(float(pd.Series([r[metric] for r in rows if r["release"] > 0]).mean()), 4)


ALGORITHMS = ("sequential", "non-sequential")


def st_fig6(runs: Runs) -> pd.DataFrame:
    return pd.DataFrame([{"series": a, "x": r["release"], "y": round(r["LM"], 4), "attributes": r["attributes"]}
                         for a in ALGORITHMS for r in _st_run(runs, a)[1:]])


def _st_vs(runs: Runs, param: str, values, metric: str = "LM", **kw) -> pd.DataFrame:
    return pd.DataFrame([{"series": a, "x": v, "y": _mean(_st_run(runs, a, **{param: v}, **kw), metric)}
                         for a in ALGORITHMS for v in values])


def st_fig7(runs: Runs) -> pd.DataFrame:
    return _st_vs(runs, "l", runs.settings["ls"])


def st_fig8(runs: Runs) -> pd.DataFrame:
    return _st_vs(runs, "n", runs.settings["ns"])


def st_fig9(runs: Runs) -> pd.DataFrame:
    return pd.DataFrame([{"series": f"p={p}", "x": r["release"], "y": round(r["LM"], 4)}
                         for p in runs.settings["ps"] for r in _st_run(runs, p=p)[1:]])


def _st_time(runs: Runs, param: str, values) -> pd.DataFrame:
    """Figures 10-12: the sequential algorithm's preprocessing and each release's seconds."""
    return pd.DataFrame([{"series": "preprocessing" if r["release"] == 0 else f"release {r['release']}", "x": v,
                          "y": round(r["seconds"], 3)} for v in values for r in _st_run(runs, **{param: v})])


def st_fig10(runs: Runs) -> pd.DataFrame:
    return _st_time(runs, "l", runs.settings["ls"])


def st_fig11(runs: Runs) -> pd.DataFrame:
    return _st_time(runs, "n", runs.settings["ns"])


def st_fig12(runs: Runs) -> pd.DataFrame:
    return _st_time(runs, "p", runs.settings["ps"])


def st_fig13(runs: Runs) -> pd.DataFrame:
    return _st_vs(runs, "l", runs.settings["ls"], metric="EM")


def st_fig14(runs: Runs) -> pd.DataFrame:
    return _st_vs(runs, "l", runs.settings["ls"], adult=True)


def _vertical_known() -> list[list[str]]:
    """Figure 15's adaptive publisher: every attribute but country (A_7) and work class (A_6) known upfront."""
    known = [a for a in shmueli_tassa_experiment.NUMBERED if a not in ("native-country", "workclass")]
    return [known] * len(shmueli_tassa_experiment.VERTICAL)


def _batches(runs: Runs) -> list[int]:
    return [int(x) for x in pd.Series(runs.settings["batches"]).cumsum()]


def _st_dynamic(runs: Runs, series: dict, releases, sizes) -> pd.DataFrame:
    """Figures 15-17: ``series`` maps a label to what that publisher knows at each release (None: everything)."""
    out = []
    for label, known in series.items():
        rows = _st_run(runs, n=sizes[-1] if sizes else None, releases=releases, known=known, sizes=sizes,
                       label=label)
        out += [{"series": label, "x": r["release"], "y": round(r["LM"], 4), "records": r["records"],
                 "attributes": r["attributes"]} for r in rows[1:]]
    return pd.DataFrame(out)


def st_fig15(runs: Runs) -> pd.DataFrame:
    return _st_dynamic(runs, {"adaptive": _vertical_known(), "prophetic": None}, shmueli_tassa_experiment.VERTICAL,
                       None)


def st_fig16(runs: Runs) -> pd.DataFrame:
    every = [shmueli_tassa_experiment.NUMBERED] * len(runs.settings["batches"])
    return _st_dynamic(runs, {"adaptive (= prophetic)": None}, every, _batches(runs))


def st_fig17(runs: Runs) -> pd.DataFrame:
    vertical = shmueli_tassa_experiment.VERTICAL
    return _st_dynamic(runs, {"adaptive": shmueli_tassa_experiment.cumulative_known(vertical), "prophetic": None},
                       vertical, _batches(runs))


_PROPHETIC = ("a prophetic publisher that builds worlds across arrival batches is not sound: a world that gives "
              "a present individual the value of one who arrives later does not keep the release's multiset of "
              "sensitive values, so no release is consistent with it (condition 9; the adversary knows the "
              "insertion times, section 5.2); knowing the later tuples upfront changes nothing, so the prophetic "
              "series of the horizontal setting is the adaptive one")
SHMUELI_TASSA = (
    Figure("6", "LM per release, sequential vs non-sequential (Fig. 6)", "release", "LM (average per entry)",
           "N = 100,000, l = 5, p = 100, releases I_1..I_10: the sequential algorithm achieves the same diversity "
           "with significantly smaller information losses", st_fig6),
    Figure("7", "LM vs l (Fig. 7)", "l", "LM (mean over the ten releases)",
           "N = 100,000, five l: the information loss increases with l", st_fig7),
    Figure("8", "LM vs N (Fig. 8)", "N", "LM (mean over the ten releases)",
           "l = 5, several N: the difference between the two algorithms remains more or less the same", st_fig8),
    Figure("9", "LM per release vs p, sequential (Fig. 9)", "release", "LM (average per entry)",
           "N = 100,000, l = 5: the information loss decreases with p, but the rate of decrease is rather slow",
           st_fig9),
    Figure("10", "Runtime vs l, sequential (Fig. 10)", "l", "seconds",
           "N = 100,000, p = 100: preprocessing and each release; roughly linear in l", st_fig10,
           ("the preprocessing time is also the non-sequential algorithm's, up to its one anonymization V",)),
    Figure("11", "Runtime vs N, sequential (Fig. 11)", "N", "seconds",
           "l = 5, p = 100: roughly linear in N", st_fig11),
    Figure("12", "Runtime vs p, sequential (Fig. 12)", "p", "seconds",
           "N = 100,000, l = 5: the runtime decreases with p up to about p = 100, then increases", st_fig12),
    Figure("13", "EM vs l (Fig. 13)", "l", "EM, bits (mean over the ten releases)",
           "N = 100,000, five l: consistent with Figures 6-11 (the loss grows with l; sequential below "
           "non-sequential)", st_fig13),
    Figure("14", "Adult: LM vs l (Fig. 14)", "l", "LM (mean over the ten releases)",
           "Adult (32,561 records), the ten releases listed in the text, five l: consistent with CENSUS",
           st_fig14, ("Adult's 30,162 records without missing values (the paper: 32,561)",)),
    Figure("15", "Vertically dynamic: adaptive vs prophetic (Fig. 15)", "release", "LM (average per entry)",
           "I_1 = {2,5,8}, I_2 = {1,7,8}, I_3 = {1,3,4,8}, I_4 = {6,7,8}; the adaptive algorithm learns country "
           "at release 2 and work class at 4: slightly better in releases 1 and 3, the prophetic in 2 and 4",
           st_fig15),
    Figure("16", "Horizontally dynamic (Fig. 16)", "release", "LM (average per entry)",
           "all seven QIs, N = 100k, then +50k, +30k, +20k tuples; adaptive (learns tuples as they arrive) vs "
           "prophetic (knows all 200k upfront)", st_fig16, (_PROPHETIC,)),
    Figure("17", "Fully dynamic: adaptive vs prophetic (Fig. 17)", "release", "LM (average per entry)",
           "Figure 15's attributes with Figure 16's tuples; the adaptive algorithm knows only release 1's tuples "
           "and attributes upfront: it keeps its advantage in releases 1 and 3, the prophetic has it in 2 and 4",
           st_fig17, ("the prophetic publisher knows every attribute upfront but builds each arrival batch's "
                      "worlds when the batch arrives (see Figure 16)",)),
)


# ---------------------------------------------------------------------------------------------- Fung et al.
#: section 6: Adult, D1 = the test set (15,060 records), D2 = 200, 2,000 or all 30,162 training records;
#: Sen1 and Sen3; k = 40 ... 200
FUNG_FULL = dict(d1=15_060, d2=(200, 2000, 15_102), ks=(40, 80, 120, 160, 200), sens=(1, 3), exact=False)
FUNG_QUICK = dict(d1=600, d2=(20, 100, 600), ks=(10, 20), sens=(1, 3), exact=True)
FUNG_DIFFERENCES = (
    "data: one Adult file (30,162 records): D1 its first 15,060 records (the size of the paper's test set), "
    "D2 the next 200, 2,000 or 15,102 (the rest; the paper's allD2 is all 30,162 training records)",
    "anonymizer: the project's TDS (k-anonymized R1, R2) and BCF-anonymizer, k from 40 to 200 as the paper",
    "FA, CA, BA by the closed forms (Theorems 4.2-4.4), which the exact correspondence attack matches (the quick "
    "mode runs both and checks that they agree)",
)


def _fung_cases(runs: Runs) -> list[tuple[dict, dict]]:
    s = runs.settings

    def make():
        out = []
        for sen in s["sens"]:
            table = fung_experiment.load(sen)
            for n2 in s["d2"]:
                t0 = time.perf_counter()
                for k in s["ks"]:
                    out.append(fung_experiment.run_case(table, sen, n2, k, d1_size=s["d1"], exact=s["exact"]))
                _progress(f"fung Sen{sen} D2={n2}: {time.perf_counter() - t0:.1f} s")
        return out

    return runs.get(("fung",), make)


def _d2_name(runs: Runs, n2: int) -> str:
    return "allD2" if n2 == max(runs.settings["d2"]) else f"{n2}D2"


def fung_fig1(runs: Runs) -> pd.DataFrame:
    out = []
    for det, prev in _fung_cases(runs):
        for metric in ("FA", "CA", "BA"):
            out.append({"panel": f"{metric} {det['sen']}", "series": _d2_name(runs, det["D2"]), "x": det["k"],
                        "y": det[metric], "violation": det[metric] < det["k"]})
    boundary = [{"panel": f"{m} Sen{sen}", "series": f"{m} = k", "x": k, "y": k, "violation": False}
                for sen in runs.settings["sens"] for m in ("FA", "CA", "BA") for k in runs.settings["ks"]]
    return pd.DataFrame(out + boundary)


def fung_fig2(runs: Runs) -> pd.DataFrame:
    out = []
    for det, prev in _fung_cases(runs):
        panel = f"{det['sen']} {_d2_name(runs, det['D2'])}"
        for series, col in (("BCF-anonymized R2", "cost_bcf_R2"), ("k-anonymized R2", "cost_k_R2"),
                            ("k-anonymized D2 alone", "cost_kD2_alone"), ("R1 + k-anonymized D2", "cost_kD2")):
            row = {"panel": panel, "series": series, "x": det["k"], "y": round(prev[col], 5)}
            if col == "cost_bcf_R2":  # what the BCF-anonymized R2 achieves, and how it was measured
                row.update({m: prev[f"{m}_bcf"] for m in ("FA", "CA", "BA")}, measured_by="closed form",
                           certificate_agrees=prev["certificate_agrees"])
                if "BA_exact" in prev:
                    row.update({m: prev[f"{m}_exact"] for m in ("FA", "CA", "BA")}, measured_by="exact attack")
            out.append(row)
    return pd.DataFrame(out)


FUNG = (
    Figure("1", "Violations of BCF-anonymity by k-anonymized R1, R2 (Fig. 1)", "k", "anonymity",
           "FA = CA (Theorem 4.5); FA generally grows with k but 4 of 5 cases have FA < k for Sen3 and allD2 (worst "
           "k = 40, FA = 21); BA < k more frequent and severe for 200D2 and 2000D2, down to BA = 1 (k = 80, Sen1, "
           "200D2)", fung_fig1, ("CA drawn too (the paper omits it since FA = CA)",)),
    Figure("2", "Discernibility cost of R2 (Fig. 2)", "k", "normalized discernibility cost",
           "BCF-anonymized R2 costs more than the unsafe k-anonymized R2 (mainly for 200D2 and 2000D2; +25% on "
           "average in Fig. 2d) and, for 200D2, 66% (Sen1) and 32% (Sen3) less than k-anonymized D2; similar to it "
           "for allD2", fung_fig2,
           ("k-anonymized D2's cost drawn normalized by |D2|^2 (alone) and over R1 with it by |D1 u D2|^2 (the "
            "text does not say which)", "k-anonymized D2 needs |D2| >= k: no point for 200D2 at k > 200")),
)

PAPERS = {"li_zhou": (LI_ZHOU, LI_ZHOU_FULL, LI_ZHOU_QUICK, LI_ZHOU_DIFFERENCES),
          "barbosa": (BARBOSA, BARBOSA_FULL, BARBOSA_QUICK, BARBOSA_DIFFERENCES),
          "shmueli_tassa": (SHMUELI_TASSA, SHMUELI_TASSA_FULL, SHMUELI_TASSA_QUICK, SHMUELI_TASSA_DIFFERENCES),
          "fung": (FUNG, FUNG_FULL, FUNG_QUICK, FUNG_DIFFERENCES)}


# ---------------------------------------------------------------------------------------------- output
def _progress(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def plot(fig: Figure, table: pd.DataFrame, path: Path, caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(table["panel"])) if "panel" in table else [None]
    cols = min(len(panels), 3)
    nrows = -(-len(panels) // cols)
    f, axes = plt.subplots(nrows, cols, figsize=(5.5 * cols, 4 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels):
        part = table if panel is None else table[table["panel"] == panel]
        for series, sub in part.groupby("series", sort=False):
            ax.plot(sub["x"], sub["y"], marker="o", ms=3, label=str(series))
        ax.set_xlabel(fig.xlabel)
        ax.set_ylabel(fig.ylabel if panel is None else f"{panel} ({fig.ylabel})")
        if panel is not None:
            ax.set_title(str(panel), fontsize=9)
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
    ap.add_argument("paper", help="li_zhou | barbosa | shmueli_tassa | fung (wong: no experiments)")
    ap.add_argument("--figure", nargs="+", default=[], help="figure numbers (3) or panels (3a); default all")
    ap.add_argument("--quick", action="store_true", help="small table, few releases: the trends in seconds")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: a new temporary folder)")
    args = ap.parse_args(argv)
    if args.paper in NO_EXPERIMENTS:
        print(f"replicate: {args.paper}: {NO_EXPERIMENTS[args.paper]}", file=sys.stderr)
        return 2
    if args.paper not in PAPERS:
        known = ", ".join([*PAPERS, *NO_EXPERIMENTS])
        print(f"replicate: unknown paper '{args.paper}' (known: {known})", file=sys.stderr)
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
