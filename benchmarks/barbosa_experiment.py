"""Section 7 of Barbosa, Pinto, Gomes (CIKM 2012) on Adult: BPG (over Mondrian) against m-invariance.

A 10,000-record table sampled from the 30,162 Adult records; before each release ``r`` random records leave and
``r`` pool records arrive, until the pool is used (``1 + 20,162 // r`` releases; the paper's 200k / 600k with
``r`` in 40k..5k, scaled to Adult).  k = l = 10 (occupation sensitive, the other eight attributes
quasi-identifiers) for BPG, m = 10 for m-invariance.  For every rate and method: seconds per release, FEM and
VEM per release (Figure 3; with suppression, dirty records and counterfeits as in section 5), and BPG's share
of its total time (Table 4: post-processing and database over the whole publication, the anonymizer's
encoding and Mondrian being the rest).  The intersection attack of section 4 is run on every sequence.  Its
adversary tracks records by uid, so m-invariance is asked for uids (``uid: true``: its QI-groups kept as cohorts
of random uids, counterfeits included); BPG publishes its own.  No m-Distinct runs here (no m_distinct variant
is involved).  ``benchmarks/replicate.py barbosa`` reuses this module for Figures 1-3.

Writes ``releases_r<r>.csv``, ``summary.csv`` (Table 4), ``figure3_r<r>.png`` (FEM and VEM per release) and
``time_r<r>.png`` under ``--out``::

    python benchmarks/barbosa_experiment.py [--rates 2000 1000 500] [--methods bpg m_invariance] [--out DIR]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "barbosa_adult_bpg.yaml"


def adult_stream(r: int, seed: int = 11, initial: int = 10_000, releases: int | None = None,
                 pool: int | None = None):
    """``(schema, first snapshot, changes by release index, number of releases)`` of the replacement stream:
    ``releases`` when given, else ``1 + pool // r`` (``pool``: the arrivals to use, default all of Adult's)."""
    from multirelease.model.dynamics import generate_stream
    from multirelease.pipeline import load_scenario, load_yaml
    from multirelease.model.table import read_table

    sc = load_scenario(SCENARIO)  # its ``data`` is the stream's first snapshot: read the whole pool again
    doc, base = load_yaml(SCENARIO)
    data = read_table(sc.schema, doc["data"], base=base, source=str(SCENARIO), key="data")
    n_rel = releases or 1 + (len(data) - initial if pool is None else pool) // r
    snap, changes = generate_stream(data, n_rel, {"initial": initial, "insert": r, "delete": r}, None,
                                    np.random.default_rng([seed, 5]))
    return sc.schema, snap, changes, n_rel


def make_publisher(method: str, database: str | None = None):
    from publishers import PUBLISHERS

    if method == "bpg":
        return PUBLISHERS["bpg"](k=10, l=10, **({"database": database} if database else {}))
    if method == "m_invariance":  # the record-tracking adversary reads uids: the counterfeits need theirs
        return PUBLISHERS["m_invariance"](m=10, uid=True)
    if method == "naive":
        return PUBLISHERS["naive"](k=10, l=10)
    raise SystemExit(f"unknown method {method}")


def run_method(method: str, r: int, seed: int = 11, releases: int | None = None, progress=print, *,
               initial: int = 10_000, pool: int | None = None):
    """Publish the whole stream with one method; returns (rows, releases as the adversary sees them)."""
    from dataclasses import replace

    from multirelease.model.metrics import fem, vem
    from multirelease.model.table import Table

    _, snap, changes, n_rel = adult_stream(r, seed, initial=initial, releases=releases, pool=pool)
    with tempfile.TemporaryDirectory() as tmp:
        pub = make_publisher(method, str(Path(tmp) / "bpg.sqlite"))
        state, table, rows, seen = None, snap, [], []
        for i in range(1, n_rel + 1):
            if i in changes:
                table = table.apply(changes[i])
            fresh = Table(table.schema, table.frame)  # nothing cached: encoding counts in every method's time
            t0 = time.perf_counter()
            res = pub.publish(fresh, state=state, rng=np.random.default_rng([seed, i]))
            seconds = time.perf_counter() - t0
            state = res.state
            rel = res.release
            if rel.uid is None:  # a publisher without uids (naive Mondrian): its rows are real, their ids track
                if res.truth.counterfeit.any():
                    raise SystemExit(f"{method} published counterfeits without uids: ask it for uids")
                rel = replace(rel, uid=np.asarray(res.truth.person, dtype=object).astype(str))
            seen.append(rel)
            n_fake = int(res.truth.counterfeit.sum())
            t_size = max(len(table), len(rel) - n_fake)
            row = {"rate": r, "method": method, "release": i, "seconds": seconds, "records": len(rel),
                   "counterfeits": n_fake, "classes": rel.n_classes, "snapshot": len(table),
                   "FEM": fem(rel, t_size), "VEM": vem(rel, t_size)}
            timings = res.stats.get("seconds")  # BPG's phases (publishers.bpg.postprocessor.BPG, Notes)
            if method == "bpg" and timings:
                row.update({"anonymizer_seconds": timings["encoding"] + timings["generalizer"],
                            "bpg_seconds": timings["post_processing"] + timings["database"]})
            rows.append(row)
            if progress:
                progress(f"r={r} {method} release {i}/{n_rel}: {seconds:.2f} s, FEM {row['FEM']:.3f}, "
                         f"VEM {row['VEM']:.3f}")
        from publishers.bpg.postprocessor import clear_cache

        clear_cache()
    return rows, seen


def attack(releases, k: int = 10, l: int = 10) -> dict:
    from attacks.intersection.attack import Intersection
    from multirelease.model.sequence import Adversary, ReleaseSequence

    seq = ReleaseSequence()
    for rel in releases:
        seq.append(rel, None, None)
    view = seq.view(Adversary(record_tracking=True, quasi_identifiers="none"))
    t0 = time.perf_counter()
    res = Intersection(k=k, l=l).run(view)
    return {"attack_seconds": time.perf_counter() - t0, **res.summary}


def plots(frame: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for r, part in frame.groupby("rate"):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for method, m in part.groupby("method"):
            axes[0].plot(m["release"], m["FEM"], marker="o", ms=3, label=method)
            axes[1].plot(m["release"], m["VEM"], marker="o", ms=3, label=method)
        for ax, name in zip(axes, ("FEM", "VEM")):
            ax.set_xlabel("release")
            ax.set_ylabel(f"{name} (bits)")
            ax.set_title(f"{name} per release, r = {r} (m_invariance with uids; no m_distinct)", fontsize=9)
            ax.legend()
        fig.tight_layout()
        path = out / f"figure3_r{r}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
        fig, ax = plt.subplots(figsize=(6, 4))
        for method, m in part.groupby("method"):
            ax.plot(m["release"], m["seconds"], marker="o", ms=3, label=method)
        ax.set_xlabel("release")
        ax.set_ylabel("seconds")
        ax.set_title(f"time per release, r = {r} (m_invariance with uids; no m_distinct)", fontsize=9)
        ax.legend()
        fig.tight_layout()
        path = out / f"time_r{r}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=int, nargs="+", default=[2000, 1000, 500])
    ap.add_argument("--methods", nargs="+", default=["bpg", "m_invariance"])
    ap.add_argument("--releases", type=int, default=None, help="stop after this many releases (default: pool used)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "barbosa")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    args.out.mkdir(parents=True, exist_ok=True)
    all_rows, summary = [], []
    for r in args.rates:
        for method in args.methods:
            rows, seen = run_method(method, r, args.seed, args.releases, progress=lambda s: print(s, file=sys.stderr))
            all_rows.extend(rows)
            frame = pd.DataFrame(rows)
            item = {"rate": r, "method": method, "releases": len(rows), "total_seconds": frame["seconds"].sum(),
                    "mean_FEM": frame["FEM"].mean(), "mean_VEM": frame["VEM"].mean()}
            if "bpg_seconds" in frame:
                item["bpg_seconds"] = frame["bpg_seconds"].sum()
                item["bpg_ratio"] = item["bpg_seconds"] / item["total_seconds"]
                item["bpg_ratio_max_release"] = (frame["bpg_seconds"] / frame["seconds"]).iloc[1:].max() \
                    if len(frame) > 1 else float("nan")
            item.update(attack(seen))
            summary.append(item)
            print(pd.Series(item).to_string(), file=sys.stderr)
        pd.DataFrame([x for x in all_rows if x["rate"] == r]).to_csv(args.out / f"releases_r{r}.csv", index=False)
    table = pd.DataFrame(summary)
    table.to_csv(args.out / "summary.csv", index=False)
    written = plots(pd.DataFrame(all_rows), args.out)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False))
    print("\n".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
