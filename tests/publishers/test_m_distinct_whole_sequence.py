"""m-Distinct's releases against the update-graph attack over the *whole* sequence (issue 13, the hole
m-invariance had: commit f7ab8b0, tests/publishers/test_guarantee_holes.py).

m-invariance's own check renamed a record whose value changed and looked at the last two releases; the
pipeline's adversary (Li & Zhou section III, Definition 6: versions linked through the population's
quasi-identifiers, the public update model, every release) found a vulnerable value on an update outside the
model.  m-Distinct's own check (:mod:`publishers.m_invariance._guarantee`) also looks at two releases at a time, so the
same question is asked of it here: on random streams (6-12 rows, 3-5 releases, insertions, deletions and
sensitive updates drawn inside the public model, or *outside* it), after every release the files as the CLI
writes them (``release_<i>.csv`` with its ``uid`` column when asked, ``counterfeits_<i>.csv``) are read back and
``ATTACKS["update_graph"]`` runs over every release so far - population linkage, and uid linkage when uids are
published - and must find no vulnerable value and no inconsistent record, or the publisher refused.

Why the pairwise check suffices for m-Distinct (and did not for m-invariance): m-Distinct checks Definition 14
on every record in both releases *under the public model itself* (a record whose update leaves the model gets
a legal group of its own, or the release is refused, :meth:`publishers.m_invariance.distinct.MDistinct._repair`), and
Lemma 3 turns that pairwise condition into "no feasible sub-SUG loses a node" over any number of releases;
m-invariance checked persistent values on renamed records, which says nothing about the model's edges.

The checker is not vacuous: :func:`test_the_checker_finds_m_invariances_hole` runs it on m-invariance without
the public model bound (the publisher as it was before f7ab8b0) and finds the vulnerable value.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attacks import ATTACKS
from multirelease.errors import InputError
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.transitions import TransitionModel
from publishers import PUBLISHERS
from strategies import raw_tables, schemas, transition_models
from strategies_dynamics import stream_snapshots
from test_m_publishers_guarantee import _counterfeit_file, _published


def _stream(data, star: bool, outside: bool):
    """``(schema, model, snapshots)``: the public model, and snapshots whose sensitive updates follow it (or,
    with ``outside``, the free model: updates the public model does not allow)."""
    schema = data.draw(schemas(min_sensitive=3, max_sensitive=5, identifier=True, subsets=False, max_quasi=2),
                       label="schema")
    n_rel = data.draw(st.integers(3, 5), label="releases")
    initial = data.draw(st.integers(6, 12), label="rows")
    params = {"initial": initial, "delete": data.draw(st.integers(0, 2), label="delete"),
              "insert": data.draw(st.integers(0, 2), label="insert"),
              "sensitive": data.draw(st.integers(1, 3), label="update"), "qi": {}}
    size = initial + (n_rel - 1) * params["insert"]
    table = data.draw(raw_tables(schema, min_size=size, max_size=size), label="table")
    leaves = list(schema[schema.sensitive[0]].hierarchy.leaves)
    model = data.draw(transition_models(leaves, stay=True, kind="blocks" if star else None), label="model")
    drawn = TransitionModel.free(leaves) if outside else model
    return schema, model, stream_snapshots(data, table, n_rel, params, drawn)


def whole_sequence_findings(publisher, schema, model, snaps) -> tuple[int, list]:
    """Publish ``snaps`` in turn; after each release run the update-graph attack over every release so far (as
    read back from its files) with each linkage the files allow.  Returns ``(releases published, findings)``,
    a finding being ``(release, linkage, vulnerable_values, inconsistent)``; stops at the first finding or
    refusal (:class:`InputError`, re-raised)."""
    seq, state, findings = ReleaseSequence(), None, []
    for i, snap in enumerate(snaps, start=1):
        res = publisher.publish(snap, state=state, rng=np.random.default_rng(i))
        state = res.state
        frame = _published(res.release)
        seq.append(release_from_frame(schema, frame, counterfeits=_counterfeit_file(res.release) or None), None,
                   snap)
        view = seq.view(Adversary(sensitive="transitions"), model)
        for linkage in ("population", "uid") if "uid" in frame.columns else ("population",):
            s = ATTACKS["update_graph"](linkage=linkage).run(view).summary
            if s["vulnerable_values"] or s["inconsistent"]:
                findings.append((i, linkage, s["vulnerable_values"], s["inconsistent"]))
        if findings:
            return i, findings
    return len(snaps), findings


@pytest.mark.parametrize("outside", [False, True], ids=["in_model", "outside_model"])
@pytest.mark.parametrize("name", ["m_distinct", "m_distinct_star"])
def test_m_distinct_keeps_every_node_over_the_whole_sequence(name, outside):
    tally = {"published": 0, "refused": 0}

    # at most 60 examples per case (four cases, an attack run per release): the module stays under a minute in
    # the thorough profile; 1,000 out-of-model and 600 in-model examples found nothing (issue 13 note)
    @settings(max_examples=min(settings.default.max_examples, 60),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(data=st.data(), m=st.integers(2, 3), uid=st.booleans())
    def prop(data, m, uid):
        schema, model, snaps = _stream(data, name == "m_distinct_star", outside)
        pub = PUBLISHERS[name](m=m, uid=uid)
        pub.bind_transitions(model)
        try:
            _, findings = whole_sequence_findings(pub, schema, model, snaps)
        except InputError as err:
            assert err.one_line() and "\n" not in err.one_line()
            tally["refused"] += 1
            return
        assert not findings, f"the update-graph attack over the whole sequence: {findings}"
        tally["published"] += 1

    prop()
    print(f"\n{name} ({'outside' if outside else 'inside'} the model): {tally}")
    assert tally["published"] > 0, tally


def test_the_checker_finds_m_invariances_hole(tmp_path):
    """tests/publishers/test_guarantee_holes.py's first counterexample (seed 3: release 2, record idx00082q):
    m-invariance without the public model bound publishes release 2, and :func:`whole_sequence_findings` finds the
    vulnerable value there; bound, it refuses that release."""
    import pandas as pd

    from multirelease.model.table import Table
    from multirelease.model.transitions import load_transitions
    from test_guarantee_holes import WINDOW, _schema, out_of_model_months

    model = load_transitions(WINDOW)
    schema = _schema(tmp_path)
    snaps = [Table.from_frame(schema, pd.read_csv(p, dtype=str)) for p in out_of_model_months(tmp_path, 3)]
    released, findings = whole_sequence_findings(PUBLISHERS["m_invariance"](m=2), schema, model, snaps)
    assert released == 2 and findings and findings[0][:2] == (2, "population") and findings[0][2] >= 1
    bound = PUBLISHERS["m_invariance"](m=2)
    bound.bind_transitions(model)
    with pytest.raises(InputError, match="idx00082q"):
        whole_sequence_findings(bound, schema, model, snaps)
