"""Li & Zhou, section VI, on Adult: the experiment behind Figures 3, 4, 5 and 7, as tables and PNG plots.

The update stream is the one of ``scenarios/adult_updates_m_distinct.yaml`` (8,000 records, 800 deletions,
2,000 insertions and 2,000 internal occupation updates of diameter d = 5 per release, ages +1, education and
marital status by their semantics, 10 releases).  The same stream is published four ways:

* naive distinct l-diversity (Mondrian on each snapshot alone), l = 2 and 4: vulnerable sensitive values per
  release found by the update-graph attack (Figure 3);
* m-invariance (m = 4): records that internal updates make invalid, per release and in total (Figure 4);
* m-Distinct (m = 4), once per variant (``--variants``, default both): ``default`` (no refilling, no
  intersection buckets: counterfeits that cannot be told from real rows by their values) and ``paper``
  (Li & Zhou's Algorithms 2-3 as written, ``variant: paper`` of the publisher): vulnerable values (0 by
  Lemma 3), counterfeits per QI-group (Figure 7), median relative error of 10,000 random count queries
  (section VI.C.1, Figure 5), publishing time per release.  Each row, legend and title names its variant.

The update-graph attack links a record's versions the way Li & Zhou's adversary does: by the population (who
is in each release, with their quasi-identifiers), since the releases publish no uid (``linkage:
population``, as the scenario does).

Usage::

    .venv/bin/python benchmarks/li_zhou_experiment.py [--out benchmarks/out/li_zhou] [--releases 10]
        [--queries 10000] [--theta 0.5] [--l 2 4] [--m 4] [--variants default paper]

Writes ``results.json``, ``per_release.csv``, ``per_release.md`` and ``fig3_vulnerable.png``,
``fig4_invalid.png``, ``fig5_query_error.png``, ``fig7_counterfeits.png``, ``time_per_release.png``.
``benchmarks/replicate.py li_zhou`` reuses this module for every figure of section VI at the paper's settings.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from multirelease.pipeline import load_scenario_document, load_yaml, run_scenario  # noqa: E402

SCENARIO = ROOT / "scenarios" / "adult_updates_m_distinct.yaml"


def count_query_error(release, snapshot, n_queries: int, theta: float, rng: np.random.Generator) -> float:
    """Median relative error ``|R* - R| / R*`` of random count queries (section VI.C.1).

    Each query asks for the records whose every QI and the sensitive value lie in a range of
    ``max(1, round(theta * |dom|))`` consecutive leaf codes.  ``R`` is counted on the raw snapshot (a prefix-sum
    cube, inclusion-exclusion over the ``2^q`` corners); ``R*`` sums over QI-groups the real rows of the group
    (its size minus its published counterfeits) times the share of its region inside each QI range (uniform
    spread) and the share of its rows whose value is in the sensitive range.  Queries with ``R* = 0`` are
    left out.  With ``theta`` below about 0.3 most queries on Adult's five dimensions select no record at all
    (``R = 0``), so the median error is 1; the default 0.5 keeps the median meaningful (Figure 5(b): the error
    falls as ``theta`` grows).
    """
    schema = release.schema
    quasi = list(release.quasi)
    sens = schema[schema.sensitive[0]].hierarchy
    cols = [list(schema.quasi).index(n) for n in quasi]
    raw = np.column_stack([snapshot.qi_codes[:, cols], sens.encode(pd.Series(snapshot.sensitive, dtype=object))])
    dims = [schema[n].hierarchy.n_leaves for n in quasi] + [sens.n_leaves]
    cube = np.zeros(dims, dtype=np.int64)
    np.add.at(cube, tuple(raw.T), 1)
    for ax in range(len(dims)):
        cube = np.cumsum(cube, axis=ax)
    cube = np.pad(cube, [(1, 0)] * len(dims))
    widths = [max(1, int(round(theta * d))) for d in dims]
    lo = np.column_stack([rng.integers(0, d - w + 1, size=n_queries) for d, w in zip(dims, widths)])
    hi = lo + np.array(widths) - 1
    R = np.zeros(n_queries, dtype=np.int64)
    for corner in range(1 << len(dims)):
        idx, sign = [], 1
        for ax in range(len(dims)):
            if corner >> ax & 1:
                idx.append(lo[:, ax])
                sign = -sign
            else:
                idx.append(hi[:, ax] + 1)
        R += sign * cube[tuple(idx)]
    # the published side, per class
    rows = release.class_rows()
    first = np.array([r[0] for r in rows])
    glo = release.lo[first].astype(np.int64)
    ghi = release.hi[first].astype(np.int64)
    size = release.class_sizes.astype(np.float64)
    groups = release.group[first] if release.group is not None else np.arange(1, len(first) + 1)
    cf = np.array([(release.counterfeits or {}).get(int(g), 0) for g in groups], dtype=np.float64)
    real = size - cf
    scodes = sens.encode(pd.Series(release.sensitive, dtype=object))
    scount = np.zeros((len(first), sens.n_leaves + 1))
    np.add.at(scount, (release.classes, scodes + 1), 1)
    scum = np.cumsum(scount, axis=1)
    est = np.zeros(n_queries)
    for start in range(0, n_queries, 500):
        sl = slice(start, start + 500)
        frac = np.ones((lo[sl].shape[0], len(first)))
        for j in range(len(quasi)):
            a, b = lo[sl, j][:, None], hi[sl, j][:, None]
            ov = np.minimum(b, ghi[None, :, j]) - np.maximum(a, glo[None, :, j]) + 1
            frac *= np.clip(ov, 0, None) / (ghi[None, :, j] - glo[None, :, j] + 1)
        a, b = lo[sl, -1], hi[sl, -1]
        sfrac = (scum[:, b + 1] - scum[:, a]).T / size[None, :]
        est[sl] = (frac * sfrac * real[None, :]).sum(axis=1)
    ok = est > 0
    return float(np.median(np.abs(est[ok] - R[ok]) / est[ok])) if ok.any() else float("nan")


def stream_document(doc: dict, *, initial: int | None = None, delete: int | None = None,
                    insert: int | None = None, sensitive: int | None = None, d: int | None = None) -> dict:
    """The scenario document with another update stream: counts per release and the diameter ``d`` of the
    occupation's candidate update sets (section VI.A); ``None`` keeps the scenario's."""
    out = copy.deepcopy(doc)
    stream = out["dynamics"]["stream"]
    for key, value in (("initial", initial), ("delete", delete), ("insert", insert), ("sensitive", sensitive)):
        if value is not None:
            stream[key] = int(value)
    if d is not None:
        out["transitions"] = dict(out.get("transitions") or {}, diameter=int(d))
    return out


def variant(doc: dict, publisher: dict, linkage: str | None, n_releases: int) -> dict:
    """The document publishing ``n_releases`` releases with ``publisher``, attacked by the update graph with
    ``linkage`` (``None``: no attack)."""
    d = copy.deepcopy(doc)
    attrs = doc["releases"][0]["attributes"]
    d["releases"] = [dict(publisher, attributes=attrs) for _ in range(n_releases)]
    d["attacks"] = [{"update_graph": {"linkage": linkage}}] if linkage else []
    d["expect"] = []
    d["name"] = f"{doc['name']}:{publisher['publisher']}"
    return d


def label(publisher: dict) -> str:
    """The name of a run in tables and legends: publisher, its letter and, for m-Distinct, its variant."""
    name = publisher["publisher"]
    letter = "l" if name == "naive" else "m"
    out = f"{name}_{letter}{publisher.get(letter)}"
    if name.startswith("m_distinct"):
        out += f"_{publisher.get('variant', 'default')}"
    return out


def run_plan(doc: dict, base: Path, publisher: dict, linkage: str | None, n_releases: int, *, queries: int = 0,
             theta: float = 0.5, thetas: Sequence[float] = (), name: str | None = None, progress=print
             ) -> list[dict]:
    """Publish (and attack, unless ``linkage`` is None) one stream; one row per release: sizes, publishing
    seconds, vulnerable values and largest risk (with the attack), invalid records (m-invariance), counterfeits
    and ``CNT_g`` (counterfeits per QI-group), median query error (``queries`` > 0, m-Distinct only: at
    ``theta``, and on the last release at each of ``thetas`` as ``error_theta_<t>``)."""
    name = name or label(publisher)
    t0 = time.perf_counter()
    sc = load_scenario_document(variant(doc, publisher, linkage, n_releases), base=base, path=SCENARIO)
    run = run_scenario(sc, attack=linkage is not None)
    ug = run.results.get("update_graph")
    targets = ug.targets if ug is not None else [{}] * len(run.sequence.releases)
    if progress:
        progress(f"{name}: {time.perf_counter() - t0:.1f} s" + (
            f", update_graph {run.timings['attack update_graph']:.2f} s, summary {dict(ug.summary)}" if ug else ""))
    rng = np.random.default_rng(7)
    rows = []
    for i, (rel, snap, state, target) in enumerate(zip(run.sequence.releases, run.sequence.snapshots,
                                                        run.states, targets), 1):
        stats = state.get("stats", {}) if isinstance(state, dict) else {}
        row = {"variant": name, "release": i, "records": len(snap), "published_rows": len(rel),
               "groups": rel.n_classes, "publish_seconds": round(run.timings[f"release {i}"], 3),
               "vulnerable_values": target.get("vulnerable_values"),
               "max_risk": round(target["max_risk"], 4) if "max_risk" in target else None,
               "invalid": stats.get("invalid"), "invalid_total": stats.get("invalid_total"),
               "counterfeits": stats.get("counterfeits", 0),
               "counterfeits_per_group": round(stats.get("counterfeits", 0) / max(rel.n_classes, 1), 4)}
        if queries and publisher["publisher"].startswith("m_distinct"):
            row["median_query_error"] = round(count_query_error(rel, snap, queries, theta, rng), 4)
            for t in thetas if i == len(run.sequence.releases) else ():
                row[f"error_theta_{t:g}"] = round(count_query_error(rel, snap, queries, t, rng), 4)
        rows.append(row)
    if ug is not None:
        rows[-1]["attack_seconds"] = round(run.timings["attack update_graph"], 3)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "li_zhou"))
    ap.add_argument("--releases", type=int, default=10)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--theta", type=float, default=0.5)
    ap.add_argument("--l", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--variants", nargs="+", choices=("default", "paper"), default=["default", "paper"],
                    help="m_distinct variants to run (default: both)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc, base = load_yaml(SCENARIO)
    plans = [({"publisher": "naive", "l": l}, "population") for l in args.l]
    plans += [({"publisher": "m_invariance", "m": args.m}, "population")]
    plans += [({"publisher": "m_distinct", "m": args.m, "variant": v}, "population") for v in args.variants]
    print(f"m_distinct variants: {', '.join(args.variants)} (paper: Li & Zhou Algorithms 2-3 as written)", flush=True)
    rows = []
    for pub, linkage in plans:
        rows += run_plan(doc, base, pub, linkage, args.releases, queries=args.queries, theta=args.theta,
                         progress=lambda s: print(s, flush=True))
    table = pd.DataFrame(rows)
    table.to_csv(out / "per_release.csv", index=False)
    try:
        md = table.to_markdown(index=False)
    except ImportError:  # tabulate is optional
        md = table.to_string(index=False)
    (out / "per_release.md").write_text(md + "\n")
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    _plots(table, out)
    print(table.to_string(index=False))
    return 0


def _plots(table: pd.DataFrame, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def plot(fname, ycol, title, variants, ylabel):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for v in variants:
            sub = table[table.variant == v]
            if ycol in sub and sub[ycol].notna().any():
                ax.plot(sub.release, sub[ycol], marker="o", label=v)
        ax.set_xlabel("release")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=120)
        plt.close(fig)

    variants = list(dict.fromkeys(table.variant))
    distinct = sorted({v.rsplit("_", 1)[1] for v in variants if v.startswith("m_distinct")})
    which = f" - m_distinct variant: {', '.join(distinct)}" if distinct else ""
    plot("fig3_vulnerable.png", "vulnerable_values", "Vulnerable sensitive values (Fig. 3)" + which,
         [v for v in variants if v.startswith(("naive", "m_distinct"))], "vulnerable values")
    plot("fig4_invalid.png", "invalid_total", "Invalid records of m-invariance (Fig. 4)",
         [v for v in variants if v.startswith("m_invariance")], "invalid records (cumulative)")
    plot("fig5_query_error.png", "median_query_error", "Median relative query error (Fig. 5)" + which,
         [v for v in variants if v.startswith("m_distinct")], "median relative error")
    plot("fig7_counterfeits.png", "counterfeits_per_group", "Counterfeits per QI-group (Fig. 7)" + which,
         [v for v in variants if v.startswith(("m_distinct", "m_invariance"))], "counterfeits / group")
    plot("time_per_release.png", "publish_seconds", "Publishing time per release" + which, variants, "seconds")


if __name__ == "__main__":
    sys.exit(main())
