"""A census-sized continuous-publishing scenario drawn from Adult's marginals (issue 16, item 2).

Every attribute of a row is drawn independently from its marginal distribution in ``adult.csv`` (read in
place, never copied) with ``numpy.random.default_rng(seed)``: the same ``--rows`` and ``--seed`` give the same
bytes.  The first ``--rows`` records are ``D1``; ``--new`` more (default a tenth) are ``D2``.  Written to
``--out`` (default ``/tmp/census_<rows>``; data sets are never committed):

* ``census.csv`` - ``D1`` then ``D2`` (``;``-separated, Adult's header);
* ``census.yaml`` - the scenario of Fung et al.'s section 6 at that size: native-country sensitive (Sen1),
  the eight other attributes quasi-identifiers (ARX hierarchies of the shared data), ``R1`` = Mondrian
  (``k``) of ``D1``, ``R2`` = Mondrian (``k``) of ``D1 u D2``, the correspondence attack with ``k``.

``multirelease run census.yaml --out DIR`` publishes and attacks; ``multirelease certify census.yaml
DIR/release_1.csv DIR/release_2.csv --attack correspondence`` certifies the files.

    python benchmarks/census.py --rows 1000000 [--seed 0] [--k 40] [--out /tmp/census_1000000]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "data" / "adult"
ATTRS = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
         "salary-class")
SENSITIVE = "native-country"

__all__ = ["make_census", "draw_marginals"]


def draw_marginals(rows: int, seed: int) -> pd.DataFrame:
    """``rows`` records, every attribute drawn independently from its marginal in ``adult.csv`` (Adult's header,
    values as categoricals); the same ``rows`` and ``seed`` give the same frame."""
    adult = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str)
    rng = np.random.default_rng(seed)
    out = {}
    for a in ATTRS:
        freq = adult[a].value_counts(sort=False).sort_index()
        out[a] = pd.Categorical.from_codes(rng.choice(len(freq), size=rows, p=(freq / freq.sum()).to_numpy()),
                                           categories=freq.index)
    return pd.DataFrame(out, columns=list(ATTRS))


def make_census(rows: int, *, new: int | None = None, seed: int = 0, k: int = 40,
                out: str | Path | None = None, sensitive: str = SENSITIVE, quasi: tuple | None = None) -> Path:
    """Write ``census.csv`` and ``census.yaml`` (see the module docstring); returns the scenario's path.
    ``sensitive`` and ``quasi`` choose the roles (default: native-country sensitive, every other attribute a
    quasi-identifier; attributes in neither are left out of the file)."""
    new = rows // 10 if new is None else new
    folder = Path(out or f"/tmp/census_{rows}")
    folder.mkdir(parents=True, exist_ok=True)
    quasi = tuple(quasi) if quasi is not None else tuple(a for a in ATTRS if a != sensitive)
    kept = [a for a in ATTRS if a in quasi or a == sensitive]
    frame = draw_marginals(rows + new, seed)[kept]
    frame.to_csv(folder / "census.csv", sep=";", index=False)
    schema = {a: {"role": "sensitive" if a == sensitive else "quasi",
                  "hierarchy": {"file": str(ADULT / f"adult_hierarchy_{a}.csv")}} for a in kept}
    doc = {"name": f"census_{rows}",
           "description": f"{rows} + {new} rows drawn from Adult's marginals (seed {seed}): Mondrian k = {k} "
                          f"releases of D1 and D1 u D2, the correspondence attack (Fung et al., section 6)",
           "seed": seed,
           "schema": {"attributes": schema},
           "data": {"file": "census.csv", "separator": ";", "limit": rows},
           "dynamics": {2: {"insert": {"file": "census.csv", "separator": ";", "offset": rows, "limit": new}}},
           "releases": [{"publisher": "mondrian", "k": k}, {"publisher": "mondrian", "k": k}],
           "adversary": {"correspondence": True},
           "attacks": [{"correspondence": {"k": k}}]}
    path = folder / "census.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, required=True, help="records of D1")
    ap.add_argument("--new", type=int, default=None, help="records of D2 (default rows / 10)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=40)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    print(make_census(args.rows, new=args.new, seed=args.seed, k=args.k, out=args.out))


if __name__ == "__main__":
    main()
