"""Correspondence attacks read linking columns (issue 22; Fung, Wang, Fu, Pei, EDBT 2008, with Shmueli &
Tassa's persistent non-identifiers, 004 section 5.2; :mod:`attacks.correspondence.attack`).

A record reappears in every later release with its values (Fung et al., section 3.1); a persistent linking
value is one of them, so a generator's buddies agree on the sensitive value *and* the linking tuple.

* a hand example: R1's one flu record (QI ``*``, blood type A) can be the buddy of either flu record of R2
  (QI ``a`` with blood type B, QI ``b`` with blood type A) without the column; with it, only of the ``b`` one,
  so the F-attack cracks it for a target ``a`` at ``T1`` (crack 1, not 0), by the exact engine and by the
  closed forms (Theorem 4.2 on linked values);
* the brute force of tests/attacks/test_correspondence.py (every generator: injective buddy maps of equal values
  whose chains have a common instantiation; Definitions 3.1 - 3.6 and their chain reading) given each
  record's sensitive value and linking tuple, read from the published frame, compared with the exact engines
  on random 2-4 release continuous-publishing sequences (insertions only: the paper's model has no deletion
  or update) with one or two linking columns, cuts, local recodings and Mondrian regions: FA, CA, BA, every
  target's anonymity and the witness generator; the closed forms equal the exact engine on cut pairs.
"""
from __future__ import annotations

import pandas as pd
from hypothesis import assume, settings
from hypothesis import strategies as st

from attacks.correspondence.attack import Correspondence
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.linking import LINKING_ROLES
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.schema import Attribute, Schema
from multirelease.model.sequence import Adversary, SequenceView
from strategies import cut_releases, local_recodings, mondrian_regions, raw_tables, schemas
from test_correspondence import brute_force, brute_force_targets, check_brute_force_truth, check_witness
from tally import tally


def _view(releases, changing=()) -> SequenceView:
    return SequenceView(tuple(releases), Adversary(correspondence=True, quasi_identifiers="none",
                                                   changing=tuple(changing)), ())


def _linking_columns(release) -> list[str]:
    return [a for a in release.attributes if release.schema[a].role in LINKING_ROLES]


# ---------------------------------------------------------------------- hand example
def test_a_blood_type_names_the_buddy_and_cracks_the_record():
    q = Hierarchy.from_nested("q", ["a", "b"])
    schema = Schema((Attribute("q", "quasi", q),
                     Attribute("s", "sensitive", Hierarchy.from_nested("s", ["flu", "hiv"])),
                     Attribute("bt", "non-identifier", Hierarchy.from_nested("bt", ["A", "B"]))))
    r1 = release_from_frame(schema, pd.DataFrame({"q": [q.label(0, 1)], "s": ["flu"], "bt": ["A"]}, dtype=object))
    r2 = release_from_frame(schema, pd.DataFrame({"q": ["a", "b"], "s": ["flu", "flu"], "bt": ["B", "A"]},
                                                 dtype=object))
    target = [{"qid": {"q": "a"}, "timestamp": 1}]
    for method in ("exact", "closed_form"):
        res = Correspondence(targets=target, method=method).run(_view([r1, r2]))
        assert res.exact
        assert res.summary["F_1"] == 1 and res.summary["F_1_flu"] == 1 and res.summary["FA"] == 0
        blind = Correspondence(targets=target, method=method).run(_view([r1, r2], changing=("bt",)))
        assert blind.summary["F_1"] == 0 and blind.summary["FA"] == 1
    res = Correspondence(targets=target).run(_view([r1, r2]))
    w = res.worst["FA"]
    assert w["linked_by"] == ["bt"]
    assert w["groups"] == [{"sensitive": "flu", "size": 1, "crack": 1, "linked": "flu (bt=A)"}]
    buddies = w["generator"]["buddies"]
    assert [(b["r1"], b["r2"]) for b in buddies] == [(0, 1)]  # R1's record is R2's (b, bt=A)
    check_witness([r1, r2], res)


# ---------------------------------------------------------------------- brute force
@st.composite
def linked_sequences(draw, n_releases: int, max_new: int = 3, max_leaves: int = 4):
    """Releases ``R_i`` of ``D_1 u .. u D_i`` (continuous publishing) of a table with one or two linking
    columns, each generalized by a cut, a local recoding or Mondrian regions."""
    kind = draw(st.sampled_from([cut_releases, local_recodings, mondrian_regions]))
    schema = draw(schemas(max_quasi=2, max_leaves=max_leaves, max_sensitive=2, subsets=False, max_linking=2))
    assume(any(a.role in LINKING_ROLES for a in schema.attributes))
    if n_releases == 2:
        sizes = [draw(st.integers(1, max_new)) for _ in range(2)]
    else:
        sizes = [draw(st.integers(1, 2))] + [1] * (n_releases - 2) + [draw(st.integers(1, 2))]
    table = draw(raw_tables(schema, min_size=sum(sizes), max_size=sum(sizes)))
    rels = [draw(kind(table.subset(table.ids[:sum(sizes[:i + 1])])))[0] for i in range(n_releases)]
    assume(all(_linking_columns(r) == _linking_columns(rels[0]) and _linking_columns(r) for r in rels))
    return rels


def _linked_records(release) -> list[tuple]:
    """Each record's sensitive value and linking tuple, read from the published frame."""
    frame = release.to_frame()
    sens = [str(v) for v in release.sensitive]
    cols = _linking_columns(release)
    return [(s,) + tuple(str(x) for x in row) for s, row in zip(sens, frame[cols].itertuples(index=False))]


def _check(rels) -> bool:
    truth = brute_force(rels, [_linked_records(r) for r in rels])
    res = check_brute_force_truth(rels, truth, lambda **kw: Correspondence(**kw).run(_view(rels)))
    targets = brute_force_targets(rels, truth)
    check_witness(rels, res)  # buddies agree on the labelled linked value
    for w in res.worst.values():
        assert w["linked_by"] == _linking_columns(rels[0])
    if len(rels) == 2 and all(_is_cut(r) for r in rels):
        closed = Correspondence(targets=targets, method="closed_form", witness=False).run(_view(rels)) if targets \
            else Correspondence(method="closed_form", witness=False).run(_view(rels))
        assert {m: closed.summary.get(m) for m in ("FA", "CA", "BA")} == \
            {m: res.summary.get(m) for m in ("FA", "CA", "BA")}
    blind = Correspondence(targets=targets, witness=False).run(_view(rels, _linking_columns(rels[0]))) if targets \
        else Correspondence(witness=False).run(_view(rels, _linking_columns(rels[0])))
    return blind.summary != res.summary


def _is_cut(release) -> bool:
    from attacks.correspondence.attack import is_cut

    return is_cut(release)


def _tallied(strategy, n: int):
    return tally(strategy, _check, max(5, int(n * settings.default.max_examples / 60)))


def test_two_releases_with_linking_columns_equal_brute_force():
    got = _tallied(linked_sequences(2), 20)
    assert got["mattered"] > 0, got


def test_three_and_four_releases_with_linking_columns_equal_brute_force():
    _tallied(st.integers(3, 4).flatmap(linked_sequences), 10)
