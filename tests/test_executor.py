"""Executors (issue 16, item 3): the correspondence attack's components solved in this process, in local worker
processes, or on a Dask cluster (a ``dask.distributed.LocalCluster`` stands for a real one) give the same
report, byte for byte; ``--targets-file`` writes every target row the report leaves out."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from multirelease.cli import main
from multirelease.pipeline import load_scenario, run_scenario
from multirelease.report import build_report, dumps
from solver import flows
from solver.executor import InlineExecutor, LocalExecutor, chunks, current_executor, use_executor

ROOT = Path(__file__).resolve().parents[1]


def _census(tmp_path: Path, rows: int = 1200, k: int = 10) -> Path:
    spec = importlib.util.spec_from_file_location("census", ROOT / "benchmarks" / "census.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_census(rows, seed=3, k=k, out=tmp_path / "census")


def _report(path: Path, executor=None) -> str:
    return dumps(build_report(run_scenario(load_scenario(path), executor=executor)))


def _square(x: int) -> int:
    return x * x


def test_chunks_partition_every_item_once_deterministically():
    sizes = [5, 1, 9, 3, 3, 7, 0, 2]
    parts = chunks(sizes, 3)
    assert sorted(i for p in parts for i in p) == list(range(len(sizes)))
    assert parts == chunks(sizes, 3) and len(parts) == 3
    loads = sorted(sum(sizes[i] for i in p) for p in parts)
    assert loads == [10, 10, 10]  # 9+1 / 7+3 / 5+3+2 (+0): greedy largest-first balances this one exactly
    # items below min_size left out; largest first, each to the lightest list: 9 | 7, 3 | 5, 3
    assert chunks(sizes, 3, min_size=3) == [[2], [4, 5], [0, 3]]


def test_executors_keep_the_order_of_the_tasks():
    tasks = list(range(20, 0, -1))
    want = [t * t for t in tasks]
    assert InlineExecutor().map(_square, tasks) == want
    assert LocalExecutor(2).map(_square, tasks) == want  # two worker processes
    assert isinstance(current_executor(), LocalExecutor)
    ex = InlineExecutor()
    with use_executor(ex):
        assert current_executor() is ex
    assert current_executor() is not ex


def test_local_processes_give_the_inline_report(tmp_path, monkeypatch):
    """Worker processes (forced: every input counts as large) against this process alone."""
    path = _census(tmp_path)
    monkeypatch.setattr(flows, "_CHUNK_WORK", 1000)
    inline = _report(path, InlineExecutor())
    monkeypatch.setattr(flows, "_PARALLEL_WORK", 0)
    assert _report(path, LocalExecutor(2)) == inline
    doc = json.loads(inline)
    assert doc["attacks"]["correspondence"]["exact"] is True


@pytest.mark.parametrize("processes", [False, True])
def test_dask_local_cluster_gives_the_local_report(tmp_path, monkeypatch, processes):
    distributed = pytest.importorskip("dask.distributed")
    from solver.executor import DaskExecutor

    path = _census(tmp_path)
    monkeypatch.setattr(flows, "_CHUNK_WORK", 1000)  # several chunks of components (tasks) on this small input
    local = _report(path)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        ex = DaskExecutor(client=client)
        seen = []
        real = ex.map
        ex.map = lambda fn, tasks: seen.append(len(tasks)) or real(fn, tasks)  # count what went to the cluster
        assert _report(path, ex) == local
        assert seen and sum(seen) >= 2
        if not processes:  # the command line, with the cluster's address
            out = tmp_path / "dask.json"
            code = main(["run", str(path), "--json", str(out), "--quiet", "--scheduler", cluster.scheduler_address])
            assert code in (0, 1) and out.read_text(encoding="utf-8") == local


def test_three_releases_on_dask_give_the_local_report(tmp_path, monkeypatch):
    """The chain engine's bulk pass (three releases: flow and LP bounds per component) through Dask and
    through local worker processes (forced) gives this process's report."""
    distributed = pytest.importorskip("dask.distributed")
    from solver import generators
    from solver.executor import DaskExecutor

    path = _census(tmp_path, rows=500)  # census.csv holds 550 rows
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["data"]["limit"] = 350
    doc["dynamics"] = {2: {"insert": {"file": "census.csv", "separator": ";", "offset": 350, "limit": 100}},
                       3: {"insert": {"file": "census.csv", "separator": ";", "offset": 450, "limit": 100}}}
    doc["releases"] = [{"publisher": "mondrian", "k": 10}] * 3
    doc["attacks"] = [{"correspondence": {"k": 10, "time_limit": 5.0}}]
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    inline = _report(path, InlineExecutor())
    assert json.loads(inline)["attacks"]["correspondence"]["exact"] is True
    monkeypatch.setattr(generators, "_PARALLEL_LOAD", 0)
    assert _report(path, LocalExecutor(2)) == inline
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        ex = DaskExecutor(client=client)
        seen = []
        real = ex.map
        ex.map = lambda fn, tasks: seen.append(fn.__name__) or real(fn, tasks)
        assert _report(path, ex) == inline
        assert "_bulk_task" in seen


def test_targets_file_holds_every_row(tmp_path):
    path = _census(tmp_path, rows=1000)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["attacks"] = [{"correspondence": {"k": 10, "rows": 6}}]
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out, rows = tmp_path / "r.json", tmp_path / "rows.csv"
    code = main(["run", str(path), "--json", str(out), "--quiet", "--targets-file", str(rows)])
    assert code in (0, 1)
    report = json.loads(out.read_text(encoding="utf-8"))["attacks"]["correspondence"]
    table = pd.read_csv(rows)
    assert len(report["targets"]) <= 6 < len(table)
    assert set(table["attack"]) == {"correspondence"}
    assert int(table["points"].sum()) == report["summary"]["targets"]
    for fam in "FCB":
        metric = {"F": "FA", "C": "CA", "B": "BA"}[fam]
        if metric in report["summary"]:
            assert int(table[f"{fam}.anonymity"].min()) == report["summary"][metric]
            assert min(r[fam]["anonymity"] for r in report["targets"] if fam in r) == report["summary"][metric]
    bad = main(["run", str(path), "--targets-file", str(tmp_path / "rows.txt")])
    assert bad == 2 and not (tmp_path / "rows.txt").exists()
