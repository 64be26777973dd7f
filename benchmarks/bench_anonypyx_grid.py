"""The anonypyx grid (issue 16, items 1 and 4): our possible-worlds linkability against anonypyx's exact-cover
trajectory attack, on the same instances, in the same run; one JSON line per instance.

**Peer.** anonypyx (PyPI, 0.2.11) is the only open multi-release attack code: its ``TrajectoryAttacker``
follows every target through the releases (a trajectory is one record per release whose regions contain the
target's quasi-identifiers and whose sensitive values agree: persistent values), then keeps the trajectories
that are part of some exact multiset cover of the releases' record counts (``finalise``, a dancing-links
search).  A target is *disclosed* when the trajectories left give it one sensitive value: Shmueli & Tassa's
(004, section 3) l-linkability with l = 1, our ``possible_worlds.disclosed`` in ``persistent`` mode.  anonypyx
runs in a virtual environment of its own (``--peer-python``, default ``/tmp/venv-anonypyx/bin/python``; made
on first use with ``python3 -m venv /tmp/venv-anonypyx && /tmp/venv-anonypyx/bin/pip install anonypyx``), with
a 120 s limit per instance in a subprocess.

**Generator.** anonypyx ships no data generator (neither the 0.2.11 wheel nor its repository has one); the
instances are made with anonypyx's own anonymiser, in its environment: the first N records of Adult
(``age`` numeric; ``sex``, ``race``, ``marital-status`` categorical; ``occupation`` sensitive), and per release a
random 80% of them (``numpy.random.default_rng(seed)``) published by anonypyx's Mondrian with k = 3
(``anonypyx.mondrian.Mondrian`` and ``models.kAnonymity``, the ``machine-readable`` generalisation, one schema
for the whole table so that every release has the same columns).  The grid: N = 50, 100, 200, 400, 1,000,
2,000 x 2, 3, 5 releases x seeds 0 and 1 = 36 instances.  Our side reads the same release frames: numeric
intervals as intervals, one-hot sets as ``subsets`` masks.

**Ours.** ``seconds``: building the problem and deciding linkability of every individual and value
(``solver.worlds.analysis.analyze(count=False)``, what ``min_linkability`` and ``disclosed`` need), in a fresh
process (``ours_cpu_s``: its CPU seconds, the figure to read on a loaded machine; ``ours_peak_mb``: the
process's peak resident memory); ``exact``: linkability decided exactly (no pair left to a time limit).
``count_*``: the whole ``possible_worlds`` attack on the same instance (linkability, linkage counts,
witnesses), its counts exact or an interval with its reason.

    python benchmarks/bench_anonypyx_grid.py [--n 50 100 ...] [--releases 2 3 5] [--seeds 0 1]
        [--peer-limit 120] [--before /path/to/older/tree] [--no-peer] [--no-count]

``--root DIR`` runs our side from another tree of the project; ``--before DIR`` also runs our side from an
older checkout of the project (e.g. ``git archive HEAD``) in the same run: its figures are in ``before_*``
keys.  ``--peer-cache`` reuses anonypyx's result kept beside each instance by an earlier run (``peer_cached``).
Timings are wall clock on the machine as loaded, with CPU seconds beside ours.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"
QIS = ["age", "sex", "race", "marital-status", "education", "workclass", "native-country", "salary-class"]
SENSITIVE = "occupation"
K = 3
SHARE = 0.8


# ---------------------------------------------------------------------- peer side (anonypyx's environment)
def _peer_frame(n: int):
    import pandas as pd

    df = pd.read_csv(ADULT, sep=";", nrows=n)[QIS + [SENSITIVE]].reset_index(drop=True)
    for c in QIS[1:]:
        df[c] = df[c].astype("category")
    df["age"] = df["age"].astype(int)
    return df


def peer_generate(n: int, releases: int, seed: int, out: str) -> None:
    """anonypyx's Mondrian (k = 3) on a random 80% of the first ``n`` Adult records, ``releases`` times."""
    import numpy as np
    from anonypyx import models
    from anonypyx.generalisation import MachineReadable
    from anonypyx.mondrian import Mondrian

    df = _peer_frame(n)
    schema = MachineReadable.create_for_data(df, QIS)
    rng = np.random.default_rng(seed)
    out_rel = []
    for _ in range(releases):
        present = np.sort(rng.choice(n, size=int(round(SHARE * n)), replace=False))
        sub = df.loc[present]
        parts = Mondrian(sub, QIS).partition([models.kAnonymity(K)])
        gen = schema.generalise(sub, parts)
        out_rel.append({"present": present.tolist(), "frame": json.loads(gen.to_json(orient="split", index=False))})
    Path(out).write_text(json.dumps({"n": n, "schema": schema.to_json_dict(), "releases": out_rel}))


def peer_attack(path: str) -> None:
    """anonypyx's trajectory attack on the instance: observe every release, finalise (exact multiset cover);
    prints the seconds and the targets left with one sensitive value."""
    import pandas as pd
    from anonypyx.attackers.trajectory_attacker import TrajectoryAttacker
    from anonypyx.generalisation import MachineReadable

    inst = json.loads(Path(path).read_text())
    df = _peer_frame(inst["n"])
    schema = MachineReadable.from_json_dict(inst["schema"])
    prior = schema._preprocess(df[QIS].copy())
    prior.insert(0, "ID", range(len(prior)))
    frames = [pd.DataFrame(**r["frame"]) for r in inst["releases"]]
    t0 = time.perf_counter()
    attacker = TrajectoryAttacker(prior, QIS, schema)
    for r, frame in zip(inst["releases"], frames):
        attacker.observe(frame, QIS + [SENSITIVE], set(r["present"]))
    attacker.finalise()
    seconds = time.perf_counter() - t0
    disclosed = 0
    for target in range(inst["n"]):
        pred = attacker.predict(target, SENSITIVE)
        if pred is not None and len(pred) == 1:
            disclosed += 1
    print(json.dumps({"seconds": seconds, "disclosed": disclosed}))


# ---------------------------------------------------------------------- our side
def ours(path: str, count: bool) -> None:
    """Our possible-worlds engine on the instance (persistent values): linkability, then counting."""
    sys.path.insert(0, os.environ.get("BENCH_ROOT", str(ROOT)))
    import numpy as np
    import pandas as pd

    from multirelease.model.hierarchy import Hierarchy
    from multirelease.model.release import Release
    from multirelease.model.schema import Attribute, Schema
    from multirelease.model.sequence import Adversary, ReleaseSequence
    from multirelease.model.table import Table
    from solver.worlds.analysis import analyze
    from solver.worlds.problem import build_problem

    inst = json.loads(Path(path).read_text())
    raw = pd.read_csv(ADULT, sep=";", nrows=inst["n"])[QIS + [SENSITIVE]].astype(str)
    one_hot = inst["schema"]["one_hot_sets"]
    leaves = {c: sorted(col[len(c) + 1:] for col in one_hot[c]) for c in QIS[1:]}
    ages = raw["age"].astype(int)
    attrs = [Attribute("id", "identifier"),
             Attribute("age", "quasi", Hierarchy.numeric("age", int(ages.min()), int(ages.max())), "interval")]
    attrs += [Attribute(c, "quasi", Hierarchy.from_nested(c, leaves[c]), "subsets") for c in QIS[1:]]
    occ = sorted(raw[SENSITIVE].unique())
    attrs.append(Attribute(SENSITIVE, "sensitive", Hierarchy.from_nested(SENSITIVE, occ)))
    schema = Schema(tuple(attrs))
    raw.index = pd.Index([str(i) for i in range(len(raw))], name="id")
    seq = ReleaseSequence()
    amin = int(ages.min())
    for r in inst["releases"]:
        frame = pd.DataFrame(**r["frame"])
        rep = np.repeat(np.arange(len(frame)), frame["count"].to_numpy())
        f = frame.iloc[rep].reset_index(drop=True)
        lo = [f["age_min"].to_numpy() - amin]
        hi = [f["age_max"].to_numpy() - amin]
        masks = {}
        for c in QIS[1:]:
            h = schema[c].hierarchy
            m = np.zeros(len(f), dtype=np.uint64)
            for v in leaves[c]:
                m |= np.where(f[f"{c}_{v}"].to_numpy().astype(bool), np.uint64(1 << h.code(v)), np.uint64(0))
            codes = [[h.code(v) for v in leaves[c] if f.at[i, f"{c}_{v}"]] for i in range(len(f))]
            lo.append(np.array([min(x) for x in codes]))
            hi.append(np.array([max(x) for x in codes]))
            masks[c] = m
        rel = Release(schema=schema, attributes=tuple(QIS + [SENSITIVE]),
                      lo=np.column_stack(lo).astype(np.int32), hi=np.column_stack(hi).astype(np.int32),
                      sensitive=f[SENSITIVE].to_numpy(dtype=object).astype(str).astype(object), masks=masks)
        snap = Table(schema, raw.iloc[r["present"]])
        seq.append(rel, None, snap)
    view = seq.view(Adversary(sensitive="persistent"))
    t0, c0 = time.perf_counter(), time.process_time()
    a = analyze(build_problem(view), count=False)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    n_links = a.linkable.sum(axis=1)
    present = n_links > 0
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"seconds": seconds, "cpu_s": cpu, "peak_mb": round(peak, 1), "exact": bool(a.linkability_exact),
           "min_linkability": int(n_links[present].min()), "disclosed": int((n_links == 1).sum()),
           "blocks": len(a.blocks), "largest_block": max(b.block.n_people for b in a.blocks),
           "largest_types": max(b.block.n_types for b in a.blocks)}
    if not a.linkability_exact:
        low = np.maximum(a.linkable_low.sum(axis=1), 1)
        out["disclosed_interval"] = [out["disclosed"], int((low[present] == 1).sum())]
    if count:
        from attacks.possible_worlds import PossibleWorlds

        t0 = time.perf_counter()
        res = PossibleWorlds(time_limit=5).run(view)
        out["count_seconds"] = time.perf_counter() - t0
        out["count_exact"] = bool(res.exact)
        out["max_linkage"] = res.summary.get("max_linkage")
        b = res.bounds.get("max_linkage")
        if b is not None:
            out["max_linkage_interval"] = [b.lower, b.upper, b.reason]
    print(json.dumps(out))


# ---------------------------------------------------------------------- driver
def _run(cmd: list[str], timeout: float | None, env: dict | None = None) -> tuple[dict | None, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return None, last[:200]
    lines = proc.stdout.strip().splitlines()
    return (json.loads(lines[-1]) if lines else {}), ""


def _peer_environment(python: str) -> None:
    """anonypyx's environment of its own: made on first use (``python3 -m venv`` beside ``bin/python``, then
    ``pip install anonypyx``), like CI's pycanon environment; an error names the failing step."""
    if Path(python).exists():
        return
    venv = Path(python).resolve().parents[1] if Path(python).parent.name == "bin" else None
    if venv is None:
        sys.exit(f"--peer-python {python}: no such interpreter (expected .../bin/python of a venv to create)")
    for cmd in (["python3", "-m", "venv", str(venv)], [str(venv / "bin" / "pip"), "install", "--quiet", "anonypyx"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"{' '.join(cmd)}: {(proc.stderr.strip().splitlines() or ['failed'])[-1]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[50, 100, 200, 400, 1000, 2000])
    ap.add_argument("--releases", type=int, nargs="+", default=[2, 3, 5])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--peer-python", default="/tmp/venv-anonypyx/bin/python")
    ap.add_argument("--peer-limit", type=float, default=120.0)
    ap.add_argument("--ours-limit", type=float, default=600.0)
    ap.add_argument("--root", default=str(ROOT), help="the tree of the project our side runs from")
    ap.add_argument("--before", help="an older tree of the project: its figures in before_* keys")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--no-count", action="store_true")
    ap.add_argument("--keep", help="folder to keep the instances in")
    ap.add_argument("--peer-cache", action="store_true",
                    help="reuse anonypyx's result kept in the --keep folder by an earlier run (peer_cached: true)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        what, *rest = args.child
        if what == "generate":
            peer_generate(int(rest[0]), int(rest[1]), int(rest[2]), rest[3])
        elif what == "attack":
            peer_attack(rest[0])
        else:
            ours(rest[0], rest[1] == "1")
        return
    me = str(Path(__file__).resolve())
    _peer_environment(args.peer_python)
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="anonypyx-grid-"))
    tmp.mkdir(parents=True, exist_ok=True)
    totals = {"instances": 0, "ours_exact": 0, "ours_max_s": 0.0, "ours_max_cpu_s": 0.0, "peer_finished": 0,
              "agree": 0}
    for n in args.n:
        for R in args.releases:
            for seed in args.seeds:
                inst = tmp / f"n{n}_r{R}_s{seed}.json"
                if not inst.exists():
                    _, err = _run([args.peer_python, me, "--child", "generate", str(n), str(R), str(seed),
                                   str(inst)], None)
                    if err:
                        print(json.dumps({"bench": "anonypyx_grid", "n": n, "releases": R, "seed": seed,
                                          "error": err}), flush=True)
                        continue
                line = {"bench": "anonypyx_grid", "n": n, "releases": R, "seed": seed}
                root = str(Path(args.root).resolve())
                env = dict(os.environ, BENCH_ROOT=root, PYTHONPATH=root)
                mine, err = _run([sys.executable, me, "--child", "ours", str(inst), "0" if args.no_count else "1"],
                                 args.ours_limit, env)
                if mine is None:
                    line["ours_error"] = err
                else:
                    line.update({"ours_s": round(mine.pop("seconds"), 3), "ours_exact": mine.pop("exact"),
                                 "ours_disclosed": mine.pop("disclosed")})
                    line.update({f"ours_{k}": (round(v, 3) if isinstance(v, float) else v) for k, v in mine.items()})
                if args.before:
                    env_b = dict(os.environ, BENCH_ROOT=str(Path(args.before).resolve()),
                                 PYTHONPATH=str(Path(args.before).resolve()))
                    old, err = _run([sys.executable, me, "--child", "ours", str(inst), "0"], args.ours_limit, env_b)
                    if old is None:
                        line["before_error"] = err
                    else:
                        line.update({"before_s": round(old["seconds"], 3), "before_cpu_s": round(old["cpu_s"], 3),
                                     "before_exact": old["exact"], "before_disclosed": old["disclosed"]})
                cache = inst.with_suffix(".peer")
                if not args.no_peer and args.peer_cache and cache.exists():
                    line.update(json.loads(cache.read_text()), peer_cached=True)
                elif not args.no_peer:
                    t0 = time.perf_counter()
                    theirs, err = _run([args.peer_python, me, "--child", "attack", str(inst)], args.peer_limit)
                    line["peer_finished"] = theirs is not None
                    if theirs is None:
                        line["peer_s"] = round(time.perf_counter() - t0, 3)
                        line["peer_error"] = err
                    else:
                        line["peer_s"] = round(theirs["seconds"], 3)
                        line["peer_disclosed"] = theirs["disclosed"]
                    cache.write_text(json.dumps({k: v for k, v in line.items() if k.startswith("peer_")}))
                totals["instances"] += 1
                if line.get("ours_exact"):
                    totals["ours_exact"] += 1
                totals["ours_max_s"] = max(totals["ours_max_s"], line.get("ours_s", float("inf")))
                totals["ours_max_cpu_s"] = max(totals["ours_max_cpu_s"], line.get("ours_cpu_s", float("inf")))
                if line.get("peer_finished"):
                    totals["peer_finished"] += 1
                    totals["agree"] += int(line.get("ours_disclosed") == line["peer_disclosed"])
                print(json.dumps(line), flush=True)
    print(json.dumps({"bench": "anonypyx_grid_total", **totals}), flush=True)


if __name__ == "__main__":
    main()
