"""The bulk machinery of the chain engine (solver/correspondence/chain_lp.py) against CP-SAT optima, on random release
chains too large for brute force: every LP dual bound and every two-release flow bound is at least the exact
maximum of its arrival objective, every LP-derived generator satisfies the model exactly, and the engine's
answers (bulk first, CP-SAT only for what stays open) equal CP-SAT's own optimum objective by objective."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solver.correspondence.chain_lp import pair_relaxation_bounds
from solver.correspondence.generators import ChainEngine
from solver.correspondence.regions import aggregate, sensitive_codes
from strategies import cut_releases, local_recodings, mondrian_regions, raw_tables, schemas


def chains(draw, n: int, kind):
    schema = draw(schemas(max_quasi=2, max_leaves=6, max_sensitive=2, subsets=False))
    sizes = [draw(st.integers(2, 6)) for _ in range(n)]
    table = draw(raw_tables(schema, min_size=sum(sizes), max_size=sum(sizes)))
    return [draw(kind(table.subset(table.ids[:sum(sizes[:i + 1])])))[0] for i in range(n)]


def exact_arrivals(engine: ChainEngine, comp, c: int, t: int) -> int:
    """CP-SAT's optimum of ``y[c, t] - y[c, t - 1]`` with nothing but the model (no hint, no bounds).

    ``linearization_level = 2`` gives the single worker the model's full LP relaxation for its optimality
    proof (the optimum and the OPTIMAL status asserted are unchanged).  With the default level the oracle
    had a heavy tail: one objective of a 4-release local-recoding chain took 3.6 s, whole examples up to 19 s
    of CPU, one unseeded run of this test 754 s; with it, the slowest of 2,640 examples (seeds 1-40) took
    2.5 s and the total CPU fell by about 40 % per example."""
    model = engine._model(comp).clone()
    by = {key: [model.get_int_var_from_proto_index(v.index) for v in vs] for key, vs in comp._by_cj.items()}
    model.maximize(sum(by.get((c, t - 1), [])) - sum(by.get((c, t - 2), [])))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.linearization_level = 2
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(round(solver.objective_value))


@settings(settings.default, max_examples=max(5, settings.default.max_examples // 3), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_bounds_hold_and_bulk_answers_are_exact(data):
    n = data.draw(st.integers(3, 4))
    kind = data.draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    rels = chains(data.draw, n, kind)
    codes, _ = sensitive_codes(rels)
    nodes = [aggregate(r, c) for r, c in zip(rels, codes)]
    try:
        engine = ChainEngine(nodes, domain_sizes=[a.domain_size for a in rels[0].qi_attributes])
    except Exception as exc:  # no generator: nothing to bound
        assert "no generator" in str(exc)
        return
    for comp in engine.components:
        k = comp.n_classes
        present = np.zeros((k, n), bool)
        present[comp.C, comp.J] = True
        exact = np.full((k, n), -1, np.int64)
        for c, j in zip(*np.nonzero(present)):
            exact[c, j] = exact_arrivals(engine, comp, int(c), int(j) + 1)
        # the two-release flow relaxation never cuts an optimum
        flow = pair_relaxation_bounds(comp.J, comp.V, comp.C, comp.count, n, comp.cap, present)
        assert np.all((flow < 0) | (flow >= exact) | ~present)
        # the trivial bound either
        assert np.all(comp.ub[present] >= exact[present])
        # every LP dual bound, for its own objective and for all the others at once
        lp = engine._lp(comp)
        for c, j in zip(*np.nonzero(present)):
            w = lp.arrivals({int(c): 1}, int(j) + 1)
            bound, z = lp.solve(w)
            assert bound >= exact[c, j]
            assert np.all(lp.arrival_bounds(lp.duals, k)[present] >= exact[present])
            point = lp.integer_point(z, w)
            if point is not None:
                assert lp.feasible(point)
                y = comp.loads(point, n)
                assert y[c, j] - (y[c, j - 1] if j else 0) <= exact[c, j]
        # the engine (bulk, then CP-SAT for what stays open) answers every objective exactly
        wanted = present.copy()
        engine._bulk(comp, wanted)
        for c, j in zip(*np.nonzero(present)):
            lo, hi, ok, _ = engine._answer_one(int(j) + 1, engine.components.index(comp), int(c), None)
            assert ok and lo == hi == exact[c, j]


def test_forked_workers_give_the_same_answers():
    """The bulk pass in two forked worker processes answers every crack question as one process does (three
    cumulative Mondrian releases of 150 / 300 / 450 Adult records, k = 5)."""
    import solver.correspondence.generators as generators
    from attacks.correspondence.attack import Correspondence, _requests
    from multirelease.model.schema import Schema
    from multirelease.model.sequence import Adversary, SequenceView
    from multirelease.model.table import read_table
    from publishers.mondrian import Mondrian

    adult = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"
    names = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
             "salary-class")
    spec = {"attributes": {a: {"role": "sensitive" if a == "race" else "quasi",
                               "hierarchy": {"file": str(adult / f"adult_hierarchy_{a}.csv")}} for a in names}}
    schema = Schema.from_mapping(spec, base=adult, source="test")
    table = read_table(schema, {"file": str(adult / "adult.csv"), "separator": ";", "limit": 450}, base=adult,
                       source="test", key="data")
    rels = [Mondrian(k=5).publish(table.subset(table.ids[:m]), rng=np.random.default_rng(m)).release
            for m in (150, 300, 450)]
    codes, _ = sensitive_codes(rels)
    nodes = [aggregate(r, c) for r, c in zip(rels, codes)]
    view = SequenceView(tuple(rels), Adversary(correspondence=True, quasi_identifiers="none"), ())
    targets = Correspondence()._targets(view, nodes, [])
    requests, _ = _requests(targets, nodes, 3)
    sizes = [a.domain_size for a in rels[0].qi_attributes]
    one = ChainEngine(nodes, domain_sizes=sizes, processes=1).answer(requests)
    saved = generators._PARALLEL_LOAD
    generators._PARALLEL_LOAD = 0
    try:
        engine = ChainEngine(nodes, domain_sizes=sizes, processes=2)
        two = engine.answer(requests)
    finally:
        generators._PARALLEL_LOAD = saved
    assert all(a.exact for a in one)
    assert [(a.low, a.high, a.exact) for a in one] == [(a.low, a.high, a.exact) for a in two]
