"""How often the global-guarantee publisher publishes random tiny serial tables, and why it refuses (issue 13,
item 4).  One JSON line.

Each case (seed ``s`` of ``--seeds``) is one random serial table (:func:`tiny_sequence`): 6-12 people with
two quasi-identifiers (age 0-9, a two-level zip hierarchy) and a transient sensitive value among four
(Wong et al., 001: values change freely between releases), published 2-4 times; between releases each
person's value is redrawn with probability 1/2, 0-2 people leave and 0-2 arrive.  Every release goes through
``global_guarantee`` with ``l`` (default 2) and ``horizon`` = the number of releases.  A case is *published*
when every release is; otherwise the refusal is classified from its message: ``impossible`` (no release can
keep the guarantee), ``budget`` (one would, but it spends more than the horizon keeps), ``other``.  With
``--shrink`` the publisher may shrink the horizon (``shrink: true``).

    python benchmarks/global_guarantee_refusals.py [--seeds 100] [--l 2] [--shrink] [--sensitive free]

Measured (issue 13, item 4; 100 cases, 317 releases; loaded machine).  Before (/work/old: one InputError for
every refusal, no ``shrink``): l = 2, 0 published; l = 1.5, 10 published.  After, ``--sensitive free`` (the
tables' transient values): l = 2, 0 published (85 budget, 15 impossible), with ``--shrink`` 1 (96 impossible,
3 most_general); l = 1.5, 11 published (88 budget, 1 most_general), with ``--shrink`` 17 (64 impossible, 19
most_general).  ``--sensitive persistent`` (the whole-sequence check for an adversary who takes values as
persistent): l = 1.5, 9 published (2 more refused by ``check``), with ``--shrink`` 14 (8 ``check``).  The
same figures in any order of the cases and any process (no state is shared between publications; the refusal
counts of tests/publishers/test_publisher_guarantees.py moved with test order because hypothesis drew constants from the
modules imported so far: tests/conftest.py imports them all first).  Four values spread at random over 6-12
people rarely allow p <= 1/2 twice: a value held by a fraction f of a class in two releases gives p about
1 - (1 - f)^2.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from multirelease.errors import InputError, SolverError  # noqa: E402
from multirelease.model.hierarchy import Hierarchy  # noqa: E402
from multirelease.model.schema import Attribute, Schema  # noqa: E402
from multirelease.model.table import Table  # noqa: E402

VALUES = ("flu", "hiv", "cancer", "none")
ZIPS = {"z1": "Z1", "z2": "Z1", "z3": "Z2", "z4": "Z2"}


def tiny_schema() -> Schema:
    return Schema((Attribute("id", "identifier"),
                   Attribute("age", "quasi", Hierarchy.numeric("age", 0, 9)),
                   Attribute("zip", "quasi", Hierarchy.from_nested("zip", {"*": {"Z1": ["z1", "z2"],
                                                                                 "Z2": ["z3", "z4"]}})),
                   Attribute("disease", "sensitive", Hierarchy.from_nested("disease", list(VALUES)))))


def tiny_sequence(seed: int) -> list[Table]:
    """The snapshots of one random tiny serial table (module docstring); reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    schema = tiny_schema()
    n_releases = int(rng.integers(2, 5))
    rows: dict[str, list[str]] = {}
    next_id = 0

    def person() -> list[str]:
        return [str(rng.integers(0, 10)), str(rng.choice(list(ZIPS))), str(rng.choice(VALUES))]

    for _ in range(int(rng.integers(6, 13))):
        rows[f"p{next_id}"] = person()
        next_id += 1
    tables = []
    for r in range(n_releases):
        if r:
            for pid, row in rows.items():  # transient values: redrawn freely
                if rng.random() < 0.5:
                    row[2] = str(rng.choice(VALUES))
            n_del = min(int(rng.integers(0, 3)), len(rows) - 6)
            for pid in rng.choice(sorted(rows), size=max(n_del, 0), replace=False).tolist():
                del rows[pid]
            for _ in range(min(int(rng.integers(0, 3)), 12 - len(rows))):
                rows[f"p{next_id}"] = person()
                next_id += 1
        frame = pd.DataFrame([rows[p] for p in rows], columns=["age", "zip", "disease"],
                             index=pd.Index(list(rows), name="id"), dtype=object)
        tables.append(Table(schema, frame))
    return tables


def classify(error: Exception) -> str:
    """The refusal's ``kind`` (:class:`publishers.global_guarantee.Refusal`); ``other`` for an error without
    one (the publisher before issue 13 raised a plain InputError)."""
    return getattr(error, "kind", "other")


def publish_sequence(tables, l: float, shrink: bool, sensitive: str = "free"):
    from publishers.global_guarantee import GlobalGuarantee

    params = {"l": l, "horizon": len(tables)}
    if shrink:
        params["shrink"] = True
    if "sensitive" in GlobalGuarantee.params:  # older versions know transient values only
        params["sensitive"] = sensitive
    publisher = GlobalGuarantee(**params)
    rng = np.random.default_rng(0)
    state, releases = None, []
    for t in tables:
        res = publisher.publish(t, state=state, rng=rng)
        state = res.state
        releases.append(res.release)
    return releases


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--l", type=float, default=2.0)
    ap.add_argument("--shrink", action="store_true")
    ap.add_argument("--sensitive", choices=("free", "persistent"), default="free",
                    help="the adversary the publisher's own check assumes (the tables' values are transient: free)")
    args = ap.parse_args(argv)
    kinds: Counter = Counter()
    releases_total = 0
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        tables = tiny_sequence(seed)
        releases_total += len(tables)
        try:
            publish_sequence(tables, args.l, args.shrink, args.sensitive)
            kinds["published"] += 1
        except (InputError, SolverError) as e:
            kinds[classify(e)] += 1
    line = {"bench": "global_guarantee_refusals", "seconds": round(time.perf_counter() - t0, 2),
            "cases": args.seeds, "l": args.l, "shrink": args.shrink, "sensitive": args.sensitive,
            "published": kinds["published"],
            "releases_total": releases_total}
    line.update({f"refused_{kind}": n for kind, n in sorted(kinds.items()) if kind != "published"})
    print(json.dumps(line))
    return line


if __name__ == "__main__":
    main()
