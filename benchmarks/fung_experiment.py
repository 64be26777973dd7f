"""The Adult experiment of Fung, Wang, Fu and Pei (EDBT 2008, section 6): detection (Figure 1) and
prevention (Figure 2) of correspondence attacks.

D1 = the first 15,060 records of ../shared/data/adult/adult.csv; D2 = the next 200 / 2,000 / 15,102
("200D2", "2000D2", "allD2"); Sen1 (native-country sensitive, 8 QIs) and Sen3 (native-country, education,
occupation sensitive, 6 QIs); k in {40, 80, 120, 160, 200}.

* Detection (section 6.1, Figure 1): R1 = TDS k-anonymization of D1, R2 = TDS k-anonymization of D1 ∪ D2,
  each alone; FA, CA, BA of (R1, R2) by the closed forms (Theorems 4.2-4.4; FA = CA, Theorem 4.5).
* Prevention (section 6.2, Figure 2): normalized discernibility cost ``sum |E|^2 / |R2|^2`` of
  - BCF-anonymized R2 (the ``bcf`` publisher, after R1), certified FA, CA, BA >= k by its closed-form
    certificate and, with ``--exact``, by the exact correspondence attack;
  - k-anonymized R2 (the detection R2: unsafe);
  - k-anonymized D2: D2 anonymized alone (safe: disjoint individuals); its cost is reported over the
    recipient's whole data (R1's classes and D2's classes, normalized by ``|D1 ∪ D2|^2``, column
    ``cost_kD2``) and over D2 alone (``cost_kD2_alone``).

Usage::

    .venv/bin/python benchmarks/fung_experiment.py --out out/fung [--exact] [--sens 1 3] [--d2 200 2000 15102]

Writes ``detection.csv``/``.md``, ``prevention.csv``/``.md``, ``figure1.png`` and ``figure2.png`` into
``--out``, and prints one JSON line per case (with the TDS and BCF times).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from multirelease.model.schema import Schema  # noqa: E402
from multirelease.model.sequence import Adversary, SequenceView  # noqa: E402
from multirelease.model.table import Table, read_table  # noqa: E402
from publishers import PUBLISHERS  # noqa: E402
from publishers.bcf.anonymizer import closed_form  # noqa: E402

D1_SIZE = 15060
D2_SIZES = (200, 2000, 15102)
KS = (40, 80, 120, 160, 200)
SCENARIOS = {1: ROOT / "scenarios" / "fung_adult_sen1.yaml", 3: ROOT / "scenarios" / "fung_adult_sen3.yaml"}


def load(sen: int) -> Table:
    """The whole Adult table under the Sen1 / Sen3 schema of the scenario file."""
    path = SCENARIOS[sen]
    doc = yaml.safe_load(path.read_text())
    schema = Schema.from_mapping(doc["schema"], base=path.parent, source=str(path))
    spec = dict(doc["data"])
    spec.pop("limit", None)
    return read_table(schema, spec, base=path.parent, source=str(path), key="data")


def prefix(table: Table, start: int, stop: int) -> Table:
    return Table(table.schema, table.frame.iloc[start:stop])


def cost(sizes: np.ndarray, total: int) -> float:
    sizes = np.asarray(sizes, dtype=np.float64)
    return float((sizes ** 2).sum() / float(total) ** 2)


def exact_measures(r1, r2) -> dict:
    from attacks import ATTACKS

    attack = ATTACKS["correspondence"](witness=False)
    view = SequenceView((r1, r2), Adversary(correspondence=True), (None, None))
    s = attack.run(view).summary
    return {m: float(s[m]) for m in ("FA", "CA", "BA")}


def run_case(table: Table, sen: int, n2: int, k: int, *, d1_size: int = D1_SIZE, exact: bool = False
             ) -> tuple[dict, dict]:
    """One point of Figures 1 and 2: the detection row (FA, CA, BA of k-anonymized R1 and R2 by the closed
    forms) and the prevention row (the three discernibility costs; with ``exact`` the exact attack's FA, CA, BA
    of the BCF-anonymized R2 beside its certificate)."""
    d1 = prefix(table, 0, d1_size)
    d12 = prefix(table, 0, d1_size + n2)
    d2 = prefix(table, d1_size, d1_size + n2)
    rng = np.random.default_rng([sen, n2, k])
    t0 = time.perf_counter()
    r1 = PUBLISHERS["bcf"](k=k).publish(d1, rng=rng)  # the first release of a chain: TDS
    t_r1 = time.perf_counter() - t0
    t0 = time.perf_counter()
    r2k = PUBLISHERS["tds"](k=k).publish(d12, rng=rng)
    t_tds = time.perf_counter() - t0
    cf = closed_form(r1.release, r2k.release)
    det = {"sen": f"Sen{sen}", "D2": n2, "k": k, "FA": cf["FA"], "CA": cf["CA"], "BA": cf["BA"],
           "violation": bool(min(cf["FA"], cf["BA"]) < k), "tds_R1_s": round(t_r1, 3), "tds_R2_s": round(t_tds, 3)}
    t0 = time.perf_counter()
    r2b = PUBLISHERS["bcf"](k=k).publish(d12, state=r1.state, rng=rng)
    t_bcf = time.perf_counter() - t0
    cert = r2b.state["certificate"]
    cfb = closed_form(r1.release, r2b.release)
    row = {"sen": f"Sen{sen}", "D2": n2, "k": k,
           "cost_bcf_R2": cost(r2b.release.class_sizes, len(d12)),
           "cost_k_R2": cost(r2k.release.class_sizes, len(d12)),
           "FA_bcf": cfb["FA"], "CA_bcf": cfb["CA"], "BA_bcf": cfb["BA"],
           "certificate_agrees": bool(cert["FA"] == cfb["FA"] and cert["BA"] == cfb["BA"]),
           "bcf_s": round(t_bcf, 3), "bcf_specializations": r2b.state["stats"]["specializations"]}
    if n2 >= k:
        rd2 = PUBLISHERS["tds"](k=k).publish(d2, rng=rng)
        sizes = np.concatenate([r1.release.class_sizes, rd2.release.class_sizes])
        row["cost_kD2"] = cost(sizes, len(d12))
        row["cost_kD2_alone"] = cost(rd2.release.class_sizes, len(d2))
    else:
        row["cost_kD2"] = row["cost_kD2_alone"] = float("nan")
    if exact:
        t0 = time.perf_counter()
        ex = exact_measures(r1.release, r2b.release)
        row.update({f"{m}_exact": v for m, v in ex.items()})
        row["exact_s"] = round(time.perf_counter() - t0, 3)
    return det, row


def run(sens, d2_sizes, ks, exact: bool, out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    det_rows, prev_rows = [], []
    for sen in sens:
        table = load(sen)
        for n2 in d2_sizes:
            for k in ks:
                det, row = run_case(table, sen, n2, k, exact=exact)
                det_rows.append(det)
                prev_rows.append(row)
                print(json.dumps({**det, **{k2: v for k2, v in row.items() if k2 not in det}}), flush=True)
    det_df, prev_df = pd.DataFrame(det_rows), pd.DataFrame(prev_rows)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in (("detection", det_df), ("prevention", prev_df)):
        df.to_csv(out / f"{name}.csv", index=False)
        (out / f"{name}.md").write_text(_markdown(df))
    plot(det_df, prev_df, out)
    return det_df, prev_df


def _markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(_fmt(r[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def _fmt(v) -> str:
    if isinstance(v, float):
        return "" if np.isnan(v) else (f"{v:.4f}" if not v.is_integer() else str(int(v)))
    return str(v)


def plot(det: pd.DataFrame, prev: pd.DataFrame, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sens = sorted(det["sen"].unique())
    fig, axes = plt.subplots(2, len(sens), figsize=(5 * len(sens), 8), squeeze=False)
    for col, sen in enumerate(sens):
        for row, metric in enumerate(("FA", "BA")):
            ax = axes[row][col]
            sub = det[det["sen"] == sen]
            for n2, g in sub.groupby("D2"):
                ax.plot(g["k"], g[metric], marker="o", label=f"{n2}D2")
            ks = sorted(sub["k"].unique())
            ax.plot(ks, ks, "k--", label=f"{metric} = k")
            ax.set_title(f"Figure 1: {metric}, {sen} (k-anonymized R1, R2)")
            ax.set_xlabel("k")
            ax.set_ylabel(metric)
            ax.legend()
    fig.tight_layout()
    fig.savefig(out / "figure1.png", dpi=110)
    plt.close(fig)
    d2s = sorted(prev["D2"].unique())
    fig, axes = plt.subplots(len(d2s), len(sens), figsize=(5 * len(sens), 3.6 * len(d2s)), squeeze=False)
    for r, n2 in enumerate(d2s):
        for c, sen in enumerate(sens):
            ax = axes[r][c]
            g = prev[(prev["sen"] == sen) & (prev["D2"] == n2)]
            ax.plot(g["k"], g["cost_bcf_R2"], marker="o", label="BCF-anonymized R2")
            ax.plot(g["k"], g["cost_k_R2"], marker="s", label="k-anonymized R2")
            ax.plot(g["k"], g["cost_kD2"], marker="^", label="k-anonymized D2")
            ax.set_title(f"Figure 2: {sen}, {n2}D2")
            ax.set_xlabel("k")
            ax.set_ylabel("discernibility cost")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "figure2.png", dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/fung_experiment")
    p.add_argument("--sens", type=int, nargs="+", default=[1, 3], choices=[1, 3])
    p.add_argument("--d2", type=int, nargs="+", default=list(D2_SIZES))
    p.add_argument("--k", type=int, nargs="+", default=list(KS))
    p.add_argument("--exact", action="store_true", help="certify every BCF-anonymized R2 by the exact engine")
    args = p.parse_args(argv)
    run(args.sens, args.d2, args.k, args.exact, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
