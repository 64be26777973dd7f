"""Section 6.2 of Shmueli & Tassa (Figure 6) on Adult: LM and time per release, sequential vs non-sequential.

The ten releases, l = 5 and p = 100 are those of ``scenarios/shmueli_tassa_adult.yaml`` (the sequential
algorithm) and ``scenarios/shmueli_tassa_adult_non_sequential.yaml`` (the baseline of section 4.5).  Both
publishers are driven here directly so that the preprocessing (Algorithm 1; for the baseline also the one
anonymization of the whole table) is timed apart from the releases; release ``i`` uses
``np.random.default_rng([seed, i])`` as the scenario runner does, the preprocessing ``[seed, 0]``, so the
numbers differ slightly from ``multirelease run`` (which spends release 1's generator on Algorithm 1 too).

Writes ``figure6.csv`` (one row per release and algorithm: attributes, LM, seconds), ``figure6.png`` (LM per
release, the paper's Figure 6) and ``time.png`` (seconds per release, the paper's Figures 10-12 in spirit)
under ``--out``, and prints the table as Markdown::

    python benchmarks/shmueli_tassa_experiment.py [--out DIR] [--fractions 200]

``--fractions N`` additionally measures, on N small random tables published twice by the sequential
algorithm (l = 2), how often the plain fraction of Definition 3.3 (the exact attack's ``max_linkage``)
exceeds 1/l, and prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from publishers import PUBLISHERS  # noqa: E402
from publishers.sequential.diversity import NonSequentialDiversity  # noqa: E402
SCENARIOS = {"sequential": ROOT / "scenarios" / "shmueli_tassa_adult.yaml",
             "non-sequential": ROOT / "scenarios" / "shmueli_tassa_adult_non_sequential.yaml"}


#: Shmueli & Tassa's numbering of CENSUS's attributes (section 6): A_1..A_7 quasi-identifiers, A_8 sensitive
NUMBERED = ("age", "sex", "education", "marital-status", "race", "workclass", "native-country", "occupation")


def subsets(*index_sets) -> list[tuple[str, ...]]:
    """Releases given by the paper's attribute numbers (``{2, 6, 7, 8}``) as attribute names, A_1..A_8 order."""
    return [tuple(NUMBERED[i - 1] for i in sorted(s)) for s in index_sets]


#: section 6.2, Figures 6-13: the ten releases I_1..I_10
FIGURE6 = subsets({2, 6, 7, 8}, {4, 5, 6, 7, 8}, {3, 5, 8}, {1, 8}, {1, 2, 6, 7, 8}, {1, 2, 3, 4, 8}, {2, 3, 5, 8},
                  {2, 5, 6, 8}, {4, 8}, {2, 3, 8})
#: section 6.2, Figure 14 (Adult): the ten "randomly selected" releases listed in the text
FIGURE14 = subsets({1, 2, 3, 4, 5, 8}, {3, 4, 6, 7, 8}, {1, 2, 4, 5, 8}, {1, 5, 7, 8}, {3, 4, 6, 7, 8},
                   {4, 5, 7, 8}, {1, 2, 4, 5, 7, 8}, {1, 7, 8}, {4, 8}, {3, 5, 6, 8})
#: section 6.3, Figures 15 and 17: four releases; country (A_7) first seen in release 2, work class (A_6) in 4
VERTICAL = subsets({2, 5, 8}, {1, 7, 8}, {1, 3, 4, 8}, {6, 7, 8})


def schema():
    """The schema of ``scenarios/shmueli_tassa_adult.yaml`` (occupation sensitive, salary-class never
    published)."""
    import yaml

    from multirelease.model.schema import Schema

    path = SCENARIOS["sequential"]
    return Schema.from_mapping(yaml.safe_load(path.read_text())["schema"], base=path.parent, source=str(path))


def adult_table():
    """Adult's 30,162 records under :func:`schema`."""
    from multirelease.pipeline import load_scenario

    return load_scenario(SCENARIOS["sequential"]).data


def census_table(rows: int, seed: int = 0):
    """CENSUS's stand-in: ``rows`` records drawn from Adult's marginals (``benchmarks/census.py``)."""
    from census import draw_marginals
    from multirelease.model.table import Table

    return Table.from_frame(schema(), draw_marginals(rows, seed).astype(str))


def cumulative_known(releases) -> list[list[str]]:
    """What an adaptive publisher knows at each release: the attributes of every release so far (section 6.3:
    "it learns of each ... attribute only when it appears first")."""
    seen, out = [], []
    for attrs in releases:
        seen += [a for a in attrs if a not in seen]
        out.append(list(seen))
    return out


def run_sequence(table, releases, *, algorithm: str = "sequential", l: int = 5, p: int = 100, seed: int = 11,
                 known=None, sizes=None, label: str | None = None) -> list[dict]:
    """Publish ``releases`` (attribute tuples) of ``table`` and measure each: one row for the preprocessing
    (``release`` 0: Algorithm 1; for the non-sequential baseline also the anonymization ``V`` of the whole
    table) and one per release with its LM and EM (section 2.2, averages over the published entries) and
    seconds.

    ``known[i]`` are the attributes the publisher knows at release ``i + 1`` (an adaptive publisher, section
    6.3; default every attribute: the prophetic one); ``sizes[i]`` the number of records present at release
    ``i + 1``, the first ones of ``table`` (insertions, section 5.2).  Release ``i`` uses
    ``np.random.default_rng([seed, i])``, the preprocessing ``[seed, 0]``."""
    from multirelease.model.metrics import entropy_metric, leaf_frequencies, loss_metric
    from multirelease.model.table import Table

    name = {"sequential": "sequential_diversity", "non-sequential": "non_sequential_diversity"}[algorithm]
    sizes = list(sizes or [len(table)] * len(releases))
    label = label or algorithm
    rows, state = [], None
    for i, attrs in enumerate(releases, 1):
        snap = table if sizes[i - 1] == len(table) else Table(table.schema, table.frame.iloc[:sizes[i - 1]])
        config = {"l": l, "p": p}
        if known is not None:
            config["known"] = list(known[i - 1])
        pub = PUBLISHERS[name](**config)
        if i == 1:
            snap.qi_codes  # encoding outside the timings
            t0 = time.perf_counter()
            if not isinstance(pub, NonSequentialDiversity):  # Algorithm 1
                state, _ = pub._worlds(snap, None, np.random.default_rng([seed, 0]))
            else:  # Algorithm 1 and the whole anonymization V: publish once and keep the state
                state = pub.publish(snap, attributes=attrs, state=None, rng=np.random.default_rng([seed, 0])).state
            rows.append({"algorithm": label, "release": 0, "attributes": "preprocessing", "records": len(snap),
                         "LM": None, "EM": None, "seconds": time.perf_counter() - t0})
        t0 = time.perf_counter()
        res = pub.publish(snap, attributes=attrs, state=state, rng=np.random.default_rng([seed, i]))
        seconds = time.perf_counter() - t0
        state = res.state
        rows.append({"algorithm": label, "release": i, "attributes": ", ".join(attrs), "records": len(snap),
                     "LM": loss_metric(res.release), "EM": entropy_metric(res.release, leaf_frequencies(snap)),
                     "seconds": seconds})
    return rows


def run_algorithm(label: str, path: Path) -> list[dict]:
    """Figure 6 on the scenario file's table, releases, l, p and seed."""
    from multirelease.pipeline import load_scenario

    sc = load_scenario(path)
    cfg = sc.steps[0].publisher.config
    rows = run_sequence(sc.data, [step.attributes for step in sc.steps], algorithm=label, l=int(cfg["l"]),
                        p=int(cfg["p"]), seed=sc.seed)
    for r in rows[1:]:
        print(f"{label:15s} release {r['release']:2d}  LM {r['LM']:.4f}  {r['seconds']:6.2f} s", file=sys.stderr)
    return rows


def plots(frame: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rel = frame[frame.release > 0]
    paths = []
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.4
    for k, (label, grp) in enumerate(rel.groupby("algorithm", sort=False)):
        ax.bar(grp.release + (k - 0.5) * width, grp.LM, width=width, label=label)
    ax.set_xlabel("release")
    ax.set_ylabel("LM (average per entry)")
    ax.set_xticks(range(1, int(rel.release.max()) + 1))
    ax.set_title("Adult, l = 5, p = 100: information loss per release (Shmueli & Tassa, Figure 6)")
    ax.legend()
    fig.tight_layout()
    paths.append(out / "figure6.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for label, grp in rel.groupby("algorithm", sort=False):
        ax.plot(grp.release, grp.seconds, marker="o", label=label)
    pre = frame[frame.release == 0].set_index("algorithm").seconds
    ax.set_xlabel("release")
    ax.set_ylabel("seconds")
    ax.set_xticks(range(1, int(rel.release.max()) + 1))
    ax.set_title("time per release (preprocessing: " +
                 ", ".join(f"{k} {v:.1f} s" for k, v in pre.items()) + ")", fontsize=9)
    ax.legend()
    fig.tight_layout()
    paths.append(out / "time.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def fractions(n_tables: int, seed: int = 0) -> dict:
    """How often the plain fraction |E[v,s]|/|E| exceeds 1/l on small random sequences (l = 2)."""
    from attacks.possible_worlds import PossibleWorlds
    from multirelease.model.schema import Schema
    from multirelease.model.sequence import Adversary, ReleaseSequence
    from multirelease.model.table import Table
    from publishers.sequential.diversity import SequentialDiversity, diversity

    schema = Schema.from_mapping({"attributes": {
        "x": {"role": "quasi", "hierarchy": {"numeric": {"min": 0, "max": 3}}},
        "y": {"role": "quasi", "hierarchy": {"*": {"A": ["a1", "a2"], "B": ["b1", "b2"]}}},
        "s": {"role": "sensitive", "hierarchy": ["u", "v", "w"]}}}, base=ROOT)
    rng = np.random.default_rng(seed)
    over, done, worst = 0, 0, 0.0
    while done < n_tables:
        n = int(rng.integers(4, 9))
        rows = [{"x": int(rng.integers(0, 4)), "y": str(rng.choice(["a1", "a2", "b1", "b2"])),
                 "s": "uvw"[int(rng.integers(0, 3))]} for _ in range(n)]
        table = Table.from_rows(schema, rows)
        if diversity(table.sensitive) < 2:
            continue
        pub, state, seq = SequentialDiversity(l=2), None, ReleaseSequence()
        for i, attrs in enumerate((("x", "s"), ("y", "s")), 1):
            res = pub.publish(table, attributes=attrs, state=state, rng=np.random.default_rng([seed, done, i]))
            state = res.state
            seq.append(res.release, res.truth, table)
        summary = PossibleWorlds().run(seq.view(Adversary(sensitive="persistent"))).summary
        done += 1
        over += summary["max_linkage"] > 0.5 + 1e-12
        worst = max(worst, summary["max_linkage"])
    return {"bench": "plain_fraction_l2", "tables": n_tables, "over_1_over_l": over, "share": over / n_tables,
            "worst_max_linkage": worst}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "shmueli_tassa")
    ap.add_argument("--fractions", type=int, default=0, help="also measure the plain fraction on N small tables")
    ap.add_argument("--skip-adult", action="store_true")
    args = ap.parse_args()
    if not args.skip_adult:
        args.out.mkdir(parents=True, exist_ok=True)
        rows = []
        for label, path in SCENARIOS.items():
            rows.extend(run_algorithm(label, path))
        frame = pd.DataFrame(rows)
        frame.to_csv(args.out / "figure6.csv", index=False)
        paths = plots(frame, args.out)
        wide = frame[frame.release > 0].pivot(index="release", columns="algorithm", values=["LM", "seconds"])
        attrs = frame[(frame.release > 0) & (frame.algorithm == "sequential")].set_index("release").attributes
        print("| release | attributes | LM sequential | LM non-sequential | s sequential | s non-sequential |")
        print("|---|---|---|---|---|---|")
        for r in wide.index:
            print(f"| {r} | {attrs[r]} | {wide.loc[r, ('LM', 'sequential')]:.4f} | "
                  f"{wide.loc[r, ('LM', 'non-sequential')]:.4f} | {wide.loc[r, ('seconds', 'sequential')]:.2f} | "
                  f"{wide.loc[r, ('seconds', 'non-sequential')]:.2f} |")
        pre = frame[frame.release == 0].set_index("algorithm").seconds
        mean = frame[frame.release > 0].groupby("algorithm").LM.mean()
        print(f"| mean | | {mean['sequential']:.4f} | {mean['non-sequential']:.4f} | "
              f"preprocessing {pre['sequential']:.2f} | preprocessing + V {pre['non-sequential']:.2f} |")
        print("wrote " + ", ".join(str(p) for p in [args.out / "figure6.csv", *paths]), file=sys.stderr)
    if args.fractions:
        print(json.dumps(fractions(args.fractions)))


if __name__ == "__main__":
    main()
