"""The update-graph attack's row per prefix (Li & Zhou, eqs. 1-2 and Definition 11 after the first ``n``
releases): the earlier prefixes are computed from the present targets' rows only (``backward_risks(...,
compact=True)``); the rows, the worst target and the summary must be those of the full ``(targets x values)``
arrays, counted here as the attack counted them before (every target, absent ones with zero rows)."""
from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attacks.update_graph.attack import UpdateGraph, backward_risks, forward_pass, link_versions, node_weights
from multirelease.errors import InputError
from multirelease.model.sequence import Adversary
from strategies_dynamics import published_sequence


def _rows_full(links, model):
    """Every prefix's row and the worst (risk, target, prefix) from full arrays."""
    N = links.n_releases
    weights = [node_weights(links, i) for i in range(N)]
    present = [links.present(i) for i in range(N)]
    sp = forward_pass(weights, present, model)
    rows, best = [], (-1.0, None, None)
    for n in range(1, N + 1):
        feas, risk = backward_risks(sp, model, n)
        vul, versions, m = 0, 0, 0.0
        vul_rec = np.zeros(len(links.targets), dtype=bool)
        for i in range(n):
            one = present[i] & (feas[i].sum(axis=1) == 1)
            versions += int(present[i].sum())
            vul += int(one.sum())
            vul_rec |= one
            r = risk[i].max(axis=1)
            t = int(np.argmax(r))
            if r[t] > m + 1e-12:
                m = float(r[t])
            if r[t] > best[0] + 1e-12:
                best = (float(r[t]), t, n)
        rows.append({"release": n, "records": int(present[n - 1].sum()), "versions": versions,
                     "vulnerable_values": vul, "vulnerable_records": int(vul_rec.sum()), "max_risk": m})
    return rows, best


@settings(max_examples=40)  # each example publishes 3-5 releases of up to 30 rows
@given(data=st.data())
def test_prefix_rows_are_those_of_the_full_arrays(data):
    publisher = data.draw(st.sampled_from(["naive", "m_distinct", "m_invariance"]))
    try:
        seq, model, _ = published_sequence(data, publisher, n_releases=data.draw(st.integers(3, 5)))
    except InputError:  # a stream that empties the small table before its last release
        assume(False)
    view = seq.view(Adversary(sensitive="transitions"), model)
    links = link_versions(view, model, "population")
    _, (rows, best), _ = UpdateGraph(linkage="population")._run_links(links, model)
    expected_rows, expected_best = _rows_full(links, model)
    assert rows == expected_rows
    assert best == expected_best


@settings(max_examples=150)  # each example: up to 12 targets, 6 releases, 5 values
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_prefix_rows_on_random_links(data, seed):
    """Synthetic links (targets in random classes with random value counts, random presence): many
    vulnerable values, inconsistent records and layers whose risks are all zero."""
    from scipy import sparse

    from attacks.update_graph.version_links import VersionLinks
    from strategies import transition_models

    rng = np.random.default_rng(seed)
    model = data.draw(transition_models(["a", "b", "c", "d", "e"]))
    T, N, V = int(rng.integers(1, 13)), int(rng.integers(1, 7)), len(model)
    who, where, member, counts = [], [], [], []
    for _ in range(N):
        present = np.flatnonzero(rng.random(T) < 0.7)
        C = int(rng.integers(1, 4))
        cls = rng.integers(0, C, size=len(present))
        who.append(present.astype(np.int64))
        where.append(np.arange(len(present), dtype=np.int64))
        member.append(sparse.csr_matrix((np.ones(len(present), dtype=bool), cls.astype(np.int32),
                                         np.arange(len(present) + 1)), shape=(len(present), C)))
        counts.append(rng.integers(0, 3, size=(C, V)) * (rng.random((C, V)) < 0.5))
    links = VersionLinks(np.asarray([f"t{k}" for k in range(T)], dtype=object), "uid", tuple(who), tuple(where),
                         tuple(member), tuple(counts), tuple(np.zeros(len(c)) for c in counts),
                         tuple(np.arange(len(c)) for c in counts))
    _, (rows, best), _ = UpdateGraph(linkage="uid")._run_links(links, model)
    expected_rows, expected_best = _rows_full(links, model)
    assert rows == expected_rows
    assert best == expected_best
