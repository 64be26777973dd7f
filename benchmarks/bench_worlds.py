"""Possible-worlds benchmarks on Adult (issue 4, item 11): one JSON line per figure.

Every figure is a function ``fig_<name>() -> dict`` registered in :data:`FIGURES`; each runs in a fresh
process so that ``peak_mb`` (``ru_maxrss`` of that process: interpreter, libraries, data loading and the
measured step) is its own.  ``seconds`` is the measured step only (data loading and publishing excluded),
the median of ``--repeat`` runs.  Add a figure by writing one function and one registry entry.

Figures of the engine (:mod:`solver.worlds.problem`, :mod:`solver.worlds.counting`):

* ``linkability_mondrian_2000`` - exact linkability of every individual in one Mondrian release (k = 5,
  distinct l = 3) of the first 2,000 Adult records, occupation sensitive, the eight other attributes
  quasi-identifiers: consistency graph, blocks, linkability (target: 5 s or less);
* ``linkability_mondrian_2000_scc`` - the same, every block through the general perfect-matching /
  strongly-connected-components path (no closed-form shortcut);
* ``counting_mondrian_2000`` - linkability plus exact counting (breach / linkage of every pair);
* ``linkability_two_releases_2000`` - persistent values, two Mondrian releases of the same 2,000 records on
  different quasi-identifier subsets (Shmueli & Tassa's setting): CP-SAT linkability.

Figures of the sequential publisher (:mod:`publishers.sequential.diversity`, Shmueli & Tassa section 6.2, the
ten releases of ``scenarios/shmueli_tassa_adult.yaml``, 30,162 records, l = 5, p = 100):

* ``sequential_preprocessing_adult`` - Algorithm 1 (the l - 1 fake worlds);
* ``sequential_releases_adult`` - Algorithm 2, each of the ten releases (``per_release``); ``seconds`` is the
  slowest; targets: each 10 s or less, the last within 1.25x of the first;
* ``sequential_release_index_adult`` - the same attribute set published as release 1 and as release 11
  (Theorem 4.4: same time, same output for the same randomness).

    python benchmarks/bench_worlds.py [--repeat 3] [--figure NAME ...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _fresh import FigureFailed, figure_line, in_fresh_process, median_time, peak_mb

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "data" / "adult"
ATTRS = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
         "salary-class")


def adult_table(n: int | None = None, sensitive: str = "occupation"):
    """The first ``n`` Adult records (all when ``None``), ``sensitive`` sensitive, the others quasi."""
    sys.path.insert(0, str(ROOT))
    from multirelease.model.schema import Schema
    from multirelease.model.table import read_table

    spec = {"attributes": {a: {"role": "sensitive" if a == sensitive else "quasi",
                               "hierarchy": {"file": str(ADULT / f"adult_hierarchy_{a}.csv")}} for a in ATTRS}}
    schema = Schema.from_mapping(spec, base=ADULT, source="bench")
    table = read_table(schema, {"file": str(ADULT / "adult.csv"), "separator": ";"}, base=ADULT, source="bench",
                       key="data")
    return table if n is None else table.subset(table.ids[:n])


def _mondrian_view(n: int, attributes_list, mode: str = "persistent"):
    import numpy as np

    from multirelease.model.sequence import Adversary, ReleaseSequence
    from publishers.mondrian import Mondrian

    table = adult_table(n)
    seq = ReleaseSequence()
    for i, attrs in enumerate(attributes_list):
        res = Mondrian(k=5, l=3).publish(table, attributes=attrs, rng=np.random.default_rng(i + 1))
        seq.append(res.release, res.truth, table)
    return seq.view(Adversary(sensitive=mode))


# ---------------------------------------------------------------------- figures
def fig_linkability_mondrian_2000(repeat: int) -> dict:
    from solver.worlds.analysis import analyze
    from solver.worlds.problem import build_problem

    view = _mondrian_view(2000, [None])

    def step():
        return analyze(build_problem(view), count=False)

    seconds, a = median_time(step, repeat)
    n_links = a.linkable.sum(axis=1)
    return {"seconds": seconds, "records": 2000, "classes": view.releases[0].n_classes, "blocks": len(a.blocks),
            "min_linkability": int(n_links.min()), "exact": True, "target_s": 5}


def fig_linkability_mondrian_2000_scc(repeat: int) -> dict:
    import numpy as np

    from solver.worlds.linkability import _single_release_linkable
    from solver.worlds.problem import build_problem

    view = _mondrian_view(2000, [None])

    def step():
        problem = build_problem(view)
        linkable = np.zeros((problem.n_individuals, problem.n_values), dtype=bool)
        for block in problem.blocks():
            lk = _single_release_linkable(problem, block, 0)
            for t, mem in enumerate(block.members):
                linkable[mem] |= lk[t]
        return problem, linkable

    seconds, (problem, linkable) = median_time(step, repeat)
    return {"seconds": seconds, "records": 2000, "blocks": len(problem.blocks()),
            "min_linkability": int(linkable.sum(axis=1).min()), "exact": True}


def fig_counting_mondrian_2000(repeat: int) -> dict:
    from solver.worlds.analysis import analyze
    from solver.worlds.problem import build_problem

    view = _mondrian_view(2000, [None])
    seconds, a = median_time(lambda: analyze(build_problem(view)), repeat)
    return {"seconds": seconds, "records": 2000, "max_breach": float(a.breach.max()), "exact": a.all_exact}


def fig_linkability_two_releases_2000(repeat: int) -> dict:
    from solver.worlds.analysis import analyze
    from solver.worlds.problem import build_problem

    view = _mondrian_view(2000, [("age", "education", "sex", "occupation"),
                                 ("marital-status", "workclass", "race", "occupation")])

    seconds, a = median_time(lambda: analyze(build_problem(view), count=False, time_limit=60), repeat)
    exact = a.linkability_exact
    return {"seconds": seconds, "records": 2000, "releases": 2, "blocks": len(a.blocks),
            "largest_block": max(b.block.n_people for b in a.blocks),
            "min_linkability": int(a.linkable.sum(axis=1).min()), "exact": exact}


def _shmueli_tassa_adult():
    """The Adult table and the ten releases of ``scenarios/shmueli_tassa_adult.yaml`` (l = 5, p = 100)."""
    sys.path.insert(0, str(ROOT))
    from multirelease.pipeline import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "shmueli_tassa_adult.yaml")
    sc.data.qi_codes
    return sc


def fig_sequential_preprocessing_adult(repeat: int) -> dict:
    """Algorithm 1 of Shmueli & Tassa on the 30,162 Adult records (l = 5): Mondrian buckets, cyclic and greedy
    orderings, four range-limited permutations."""
    import numpy as np

    sc = _shmueli_tassa_adult()
    pub = sc.steps[0].publisher
    seconds, (state, _) = median_time(lambda: pub._worlds(sc.data, None, np.random.default_rng(0)), repeat)
    return {"seconds": seconds, "records": len(sc.data), "l": 5}


def fig_sequential_releases_adult(repeat: int) -> dict:
    """Algorithm 2 on Adult: the seconds of each of the ten releases of Figure 6 (worlds precomputed), the
    last within 1.25x of the first (Theorem 4.4: the time does not grow with the release index), each
    10 s or less.  ``seconds`` is the slowest release."""
    import numpy as np

    sc = _shmueli_tassa_adult()
    pub = sc.steps[0].publisher
    state, _ = pub._worlds(sc.data, None, np.random.default_rng(0))
    per_release = []
    for step in sc.steps:
        t, res = median_time(lambda: pub.publish(sc.data, attributes=step.attributes, state=state,
                                            rng=np.random.default_rng(step.index)), repeat)
        state = res.state
        per_release.append(round(t, 3))
    return {"seconds": max(per_release), "records": len(sc.data), "l": 5, "p": 100, "per_release": per_release,
            "last_over_first": round(per_release[-1] / per_release[0], 3), "target_s": 10,
            "target_ratio": 1.25}


def fig_sequential_release_index_adult(repeat: int) -> dict:
    """Theorem 4.4 with the attributes held fixed: release 1's attribute set published first, then again as
    release 11 after the nine others; ``seconds`` is release 11, ``ratio`` release 11 over release 1."""
    import numpy as np

    sc = _shmueli_tassa_adult()
    pub = sc.steps[0].publisher
    state, _ = pub._worlds(sc.data, None, np.random.default_rng(0))
    attrs = sc.steps[0].attributes
    first, res = median_time(lambda: pub.publish(sc.data, attributes=attrs, state=state,
                                            rng=np.random.default_rng(1)), repeat)
    state = res.state
    for step in sc.steps[1:]:
        state = pub.publish(sc.data, attributes=step.attributes, state=state,
                            rng=np.random.default_rng(step.index)).state
    last, res11 = median_time(lambda: pub.publish(sc.data, attributes=attrs, state=state,
                                             rng=np.random.default_rng(1)), repeat)
    same = bool(res.release.to_frame().equals(res11.release.to_frame()))
    return {"seconds": last, "release_1_s": round(first, 3), "ratio": round(last / first, 3),
            "identical_output": same}


FIGURES = {
    "linkability_mondrian_2000": fig_linkability_mondrian_2000,
    "linkability_mondrian_2000_scc": fig_linkability_mondrian_2000_scc,
    "counting_mondrian_2000": fig_counting_mondrian_2000,
    "linkability_two_releases_2000": fig_linkability_two_releases_2000,
    "sequential_preprocessing_adult": fig_sequential_preprocessing_adult,
    "sequential_releases_adult": fig_sequential_releases_adult,
    "sequential_release_index_adult": fig_sequential_release_index_adult,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--figure", action="append", help="run only these figures (repeatable)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        out = FIGURES[args.child](args.repeat)
        out["peak_mb"] = peak_mb()
        print(json.dumps(out))
        return
    for fig in args.figure or list(FIGURES):
        try:
            data = in_fresh_process(__file__, ["--child", fig, "--repeat", args.repeat])
        except FigureFailed as exc:
            print(json.dumps({"bench": fig, "error": [str(exc)]}), flush=True)
            continue
        print(json.dumps(figure_line(fig, data)), flush=True)


if __name__ == "__main__":
    main()
