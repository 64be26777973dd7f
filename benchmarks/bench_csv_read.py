"""Reading a census snapshot: pandas' default (C) reader against pyarrow (issue 16, item 3).

One JSON line per figure, medians of ``--repeat`` runs, on the ``census.csv`` of ``benchmarks/census.py``
(``--rows`` records of ``D1`` and a tenth more of ``D2``, ``;``-separated): the three reads a census scenario
makes - all of ``D1`` (``limit``), ``D2`` (``offset`` past ``D1``, ``limit``), the whole file - through

* ``pandas_c``: ``pandas.read_csv(dtype=str, keep_default_na=False, skipinitialspace=True)`` (the loader's
  reference semantics, :func:`multirelease.formats.csv_read.pandas_csv_frame`);
* ``pandas_engine_pyarrow``: the same call with ``engine="pyarrow"`` (no ``skipinitialspace``, no callable
  ``skiprows``: whole-file read only, for reference);
* ``loader``: :func:`multirelease.formats.csv_read.read_csv_frame` (pyarrow where it agrees with pandas), checked
  equal to ``pandas_c`` frame for frame;
* ``parquet``: the same records written once as Parquet, read by the loader (:func:`read_parquet_frame`).

    python benchmarks/bench_csv_read.py --rows 1000000 [--repeat 3] [--out /tmp/census_1000000]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _fresh import median_time  # noqa: E402
from multirelease.formats.csv_read import pandas_csv_frame, read_csv_frame, read_parquet_frame  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    folder = Path(args.out or f"/tmp/census_{args.rows}")
    csv = folder / "census.csv"
    if not csv.is_file():
        spec = importlib.util.spec_from_file_location("census", ROOT / "benchmarks" / "census.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.make_census(args.rows, out=folder)
    new = args.rows // 10
    reads = {"D1": (0, args.rows), "D2": (args.rows, new), "file": (0, None)}
    for what, (offset, limit) in reads.items():
        t_pd, ref = median_time(lambda: pandas_csv_frame(csv, ";", offset, limit), args.repeat)
        t_ld, got = median_time(lambda: read_csv_frame(csv, ";", offset, limit), args.repeat)
        pd.testing.assert_frame_equal(got, ref)
        line = {"figure": f"read_{what}", "rows": len(ref), "pandas_c_s": round(t_pd, 3), "loader_s": round(t_ld, 3),
                "speedup": round(t_pd / t_ld, 2), "identical": True}
        if limit is None:
            t_pa, _ = median_time(lambda: pd.read_csv(csv, sep=";", dtype=str, keep_default_na=False, engine="pyarrow"),
                             args.repeat)
            line["pandas_engine_pyarrow_s"] = round(t_pa, 3)
            parquet = folder / "census.parquet"
            ref.to_parquet(parquet, index=False)
            t_pq, pq = median_time(lambda: read_parquet_frame(parquet), args.repeat)
            pd.testing.assert_frame_equal(pq, ref)
            line["parquet_s"] = round(t_pq, 3)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
