"""bcf after any R1 (issue 13, items 1-3 and 5): R1 by ``tds``, by hand (a random cut, a random local recoding)
or by ``bcf`` itself; R2 by ``bcf`` after insertions.

Over 500 lines because it is one oracle and what it checks: the brute force below is written from the
paper for these tests alone, and the properties are only readable next to it.

The oracle is a brute force written from Fung et al.'s definitions (../shared/papers/002_26e2f2912f1b36d2.txt),
independent of the correspondence engine: it enumerates every *generator* of ``(R1, R2)`` (section 3.1: an
injective buddy assignment of every record of ``R1`` to a comparable record of ``R2`` - same sensitive value,
intersecting regions - with instantiations) up to the interchangeability of identical records, i.e. every
matrix ``M[a, b]`` of buddy counts between the groups of ``R1`` and ``R2``, and takes the crack sizes as minima
over them:

* F (Definition 3.1): a record of ``g1`` can be the target ``P`` (at ``T1``, QID ``p``) under a generator iff
  its buddy's region holds ``p`` (its instantiation is then free to be ``p``), so
  ``crack(g1) = min_M sum_b M[g1, b] [p not in b]``;
* C (Definition 3.3): a record of ``g2`` can be ``P`` iff it has a buddy (timestamp ``T1``) whose region holds
  ``p``: ``crack(g2) = min_M (|g2| - sum_a M[a, g2] [p in a])``;
* B (Definition 3.5): ``crack(g2) = min_M sum_a M[a, g2]`` (records of ``g2`` with timestamp ``T1``);

then Definitions 3.2, 3.4 and 3.6 (sum over the groups of a class, max over the targets ``p`` that match it -
every point of the QID domain the published regions allow - min over classes).

The property: the published R2 has FA, CA, BA >= k by the brute force, or bcf refused - and then the most
general R2 (every QI at the root) fails by the brute force too; refusals are counted, and a run that refuses
every case fails.  A refusal of a release whose most general R2 is valid is never allowed.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multirelease.errors import InputError
from multirelease.model.hierarchy import Hierarchy
from multirelease.model.release import Release
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.schema import Attribute, Schema
from multirelease.model.table import Table
from publishers import PUBLISHERS
from publishers.bcf.anonymizer import state_from_releases

from strategies import cut_releases, raw_tables, schemas

CUT_MODELS = ("hierarchy", "interval", "subsets")


# ---------------------------------------------------------------------- the brute force
def _regions(release: Release) -> list[tuple[frozenset, ...]]:
    """Every row's region as one set of leaf codes per QI (a mask for ``subsets`` attributes)."""
    out = []
    for i in range(len(release)):
        cells = []
        for j, a in enumerate(release.qi_attributes):
            if a.name in release.masks:
                m = int(release.masks[a.name][i])
                cells.append(frozenset(x for x in range(a.domain_size) if m >> x & 1))
            else:
                cells.append(frozenset(range(int(release.lo[i, j]), int(release.hi[i, j]) + 1)))
        out.append(tuple(cells))
    return out


def _groups(release: Release):
    """``[(class, region, value, count)]``: the groups (records of one class with one sensitive value)."""
    regions = _regions(release)
    counts: dict[tuple, int] = {}
    for c, reg, v in zip(release.classes.tolist(), regions, release.sensitive.tolist()):
        counts[(c, reg, str(v))] = counts.get((c, reg, str(v)), 0) + 1
    return [(c, reg, v, n) for (c, reg, v), n in sorted(counts.items(), key=lambda x: (x[0][0], x[0][2]))]


def _holds(region, p) -> bool:
    return all(x in cell for x, cell in zip(p, region))


def _generators(g1, g2) -> np.ndarray:
    """Every buddy-count matrix ``M (|g1|, |g2|)``: row sums ``|g1_a|``, column sums ``<= |g2_b|``, support on
    comparable pairs (same value, every QI's regions intersect)."""
    comp = [[v1 == v2 and all(x & y for x, y in zip(r1, r2)) for (_, r2, v2, _) in g2]
            for (_, r1, v1, _) in g1]
    out: list[np.ndarray] = []
    cap0 = [n for *_, n in g2]
    M = np.zeros((len(g1), len(g2)), dtype=np.int64)

    def place(a: int, cap: list[int]) -> None:
        if a == len(g1):
            out.append(M.copy())
            return
        targets = [b for b in range(len(g2)) if comp[a][b]]

        def spread(i: int, left: int) -> None:
            if left == 0:
                place(a + 1, cap)
                return
            if i == len(targets):
                return
            b = targets[i]
            for x in range(min(left, cap[b]), -1, -1):
                M[a, b] = x
                cap[b] -= x
                spread(i + 1, left - x)
                cap[b] += x
                M[a, b] = 0

        spread(0, g1[a][3])

    place(0, cap0)
    return np.array(out, dtype=np.int64).reshape(len(out), len(g1), len(g2))


def brute_force_bcf(r1: Release, r2: Release) -> dict[str, float]:
    """FA, CA, BA of ``(R1, R2)`` from Definitions 3.1-3.6 over every generator and every target the regions
    allow (``inf`` where a family has no target)."""
    g1, g2 = _groups(r1), _groups(r2)
    gens = _generators(g1, g2)
    assert len(gens), "no generator: R1 is not a release of records that reappear in R2"
    sizes = [a.domain_size for a in r1.qi_attributes]
    points = list(itertools.product(*[range(s) for s in sizes]))
    in1 = np.array([[_holds(r, p) for (_, r, _, _) in g1] for p in points], dtype=bool).reshape(len(points), len(g1))
    in2 = np.array([[_holds(r, p) for (_, r, _, _) in g2] for p in points], dtype=bool).reshape(len(points), len(g2))
    cls1 = np.array([c for c, *_ in g1])
    cls2 = np.array([c for c, *_ in g2])
    n1 = np.array([n for *_, n in g1])
    n2 = np.array([n for *_, n in g2])
    b_crack = gens.sum(1).min(0)  # per group of R2
    fa = ca = ba = np.inf
    for c in np.unique(cls1):
        mine = np.flatnonzero(cls1 == c)
        size = int(n1[mine].sum())
        worst = None
        for pi in range(len(points)):
            if not in1[pi, mine[0]] or not in2[pi].any():
                continue  # P must match qid1 and some qid2
            out = gens[:, mine, :] * (~in2[pi])[None, None, :]
            crack = out.sum(2).min(0).sum()
            worst = crack if worst is None else max(worst, crack)
        if worst is not None:
            fa = min(fa, size - worst)
    for c in np.unique(cls2):
        mine = np.flatnonzero(cls2 == c)
        size = int(n2[mine].sum())
        ba = min(ba, size - int(b_crack[mine].sum()))
        worst = None
        for pi in range(len(points)):
            if not in2[pi, mine[0]] or not in1[pi].any():
                continue  # P (at T1) must match qid2 and some qid1
            mine_buddies = (gens[:, :, mine] * in1[pi][None, :, None]).sum(1)  # (gens, |mine|)
            crack = (n2[mine][None, :] - mine_buddies).min(0).sum()
            worst = crack if worst is None else max(worst, crack)
        if worst is not None:
            ca = min(ca, size - worst)
    return {"FA": float(fa), "CA": float(ca), "BA": float(ba)}


def most_general(release: Release) -> Release:
    """The release with every QI at the root of its taxonomy (one class)."""
    n = len(release)
    lo = np.zeros_like(release.lo)
    hi = np.tile(np.array([a.domain_size - 1 for a in release.qi_attributes], dtype=release.hi.dtype), (n, 1))
    masks = {a.name: np.full(n, (1 << a.domain_size) - 1, dtype=np.uint64) for a in release.qi_attributes
             if a.name in release.masks}
    return Release(schema=release.schema, attributes=release.attributes, lo=lo, hi=hi, sensitive=release.sensitive,
                   masks=masks)


def bcf_ok(m: dict[str, float], k: int) -> bool:
    return all(m[x] >= k for x in ("FA", "CA", "BA"))


def target_cracks(r1: Release, r2: Release, point: dict[str, str], attack: str) -> dict[str, int]:
    """Crack size per sensitive value of the class of the target at ``point`` (F: its class in R1, C and B: in
    R2; Definitions 3.1, 3.3, 3.5), by the same enumeration of generators."""
    g1, g2 = _groups(r1), _groups(r2)
    gens = _generators(g1, g2)
    p = tuple(a.hierarchy.code(point[a.name]) for a in r1.qi_attributes)
    in1 = np.array([_holds(r, p) for (_, r, _, _) in g1], dtype=bool)
    in2 = np.array([_holds(r, p) for (_, r, _, _) in g2], dtype=bool)
    if attack == "F":
        return {v: int((gens[:, a, :] * ~in2).sum(1).min()) for a, (_, _, v, _) in enumerate(g1) if in1[a]}
    if attack == "C":
        return {v: int((n - (gens[:, :, b] * in1).sum(1)).min()) for b, (_, _, v, n) in enumerate(g2) if in2[b]}
    return {v: int(gens[:, :, b].sum(1).min()) for b, (_, _, v, _) in enumerate(g2) if in2[b]}


def _example_1_1() -> tuple[Release, Release]:
    """Tables 1 and 2 of Fung et al. (taxonomies as scenarios/fung_example_1_1.yaml reconstructs them)."""
    schema = Schema((Attribute("Birthplace", "quasi", Hierarchy.from_nested(
                         "Birthplace", {"Europe": ["UK", "France"], "America": ["Canada", "USA"]})),
                     Attribute("Job", "quasi", Hierarchy.from_nested(
                         "Job", {"Professional": ["Lawyer", "Doctor"], "Artist": ["Writer", "Dancer"]})),
                     Attribute("Disease", "sensitive", Hierarchy.from_nested("Disease", ["Flu", "HIV"]))))
    t1 = [("Europe", "Lawyer", "Flu")] * 3 + [("Europe", "Lawyer", "HIV")] * 2
    t2 = ([("UK", "Professional", "Flu")] * 3 + [("France", "Professional", "HIV")] * 3
          + [("France", "Professional", "Flu")] * 2 + [("UK", "Professional", "HIV")] * 2)
    cols = ["Birthplace", "Job", "Disease"]
    return (release_from_frame(schema, pd.DataFrame(t1, columns=cols, dtype=object)),
            release_from_frame(schema, pd.DataFrame(t2, columns=cols, dtype=object)))


def test_brute_force_reproduces_the_worked_examples():
    """Examples 3.2-3.4 (4.1-4.3): crack sizes 1/0 (F on [Europe, Lawyer] for Alice = [France, Lawyer]), 0/1
    (C on [France, Professional]) and 1/0 (B on [UK, Professional] for Alice = [UK, Lawyer] at T2); over all
    targets the releases allow, FA = CA = BA = 4 (as scenarios/fung_example_1_1.yaml expects of the engine)."""
    r1, r2 = _example_1_1()
    france = {"Birthplace": "France", "Job": "Lawyer"}
    assert target_cracks(r1, r2, france, "F") == {"Flu": 1, "HIV": 0}
    assert target_cracks(r1, r2, france, "C") == {"Flu": 0, "HIV": 1}
    assert target_cracks(r1, r2, {"Birthplace": "UK", "Job": "Lawyer"}, "B") == {"Flu": 1, "HIV": 0}
    assert brute_force_bcf(r1, r2) == {"FA": 4.0, "CA": 4.0, "BA": 4.0}
    assert brute_force_bcf(r1, most_general(r2)) == {"FA": 5.0, "CA": 5.0, "BA": 5.0}  # min |qid1|, |D2|


# ---------------------------------------------------------------------- random R1 of every kind
@st.composite
def local_recodings(draw, table: Table) -> Release:
    """A random local recoding of ``table`` (each cell generalized to its own random ancestor): classes may
    overlap, which is not a cut (what Procedures 2-3 assume)."""
    schema = table.schema
    quasi = list(schema.quasi)
    n = len(table)
    lo = np.zeros((n, len(quasi)), dtype=np.int32)
    hi = np.zeros_like(lo)
    masks = {}
    for j, name in enumerate(quasi):
        h = schema[name].hierarchy
        for i in range(n):
            code = int(table.qi_codes[i, j])
            nodes = [x for x in range(h.n_nodes) if h.node_lo[x] <= code <= h.node_hi[x]]
            # the lower of two draws: general nodes (k-anonymous R1s) more often than leaves
            node = nodes[min(draw(st.integers(0, len(nodes) - 1)), draw(st.integers(0, len(nodes) - 1)))]
            lo[i, j], hi[i, j] = h.node_lo[node], h.node_hi[node]
        if schema[name].is_subsets:
            masks[name] = np.array([((1 << (int(y) - int(x) + 1)) - 1) << int(x) for x, y in zip(lo[:, j], hi[:, j])],
                                   dtype=np.uint64)
    from multirelease.model.table import composite_sensitive

    sens = [x for x in schema.published if schema[x].is_sensitive]
    return Release(schema=schema, attributes=schema.restrict(quasi + sens), lo=lo, hi=hi,
                   sensitive=np.asarray(composite_sensitive(table.frame, sens), dtype=object), masks=masks)


def _r1(data, kind: str, d1: Table, k: int):
    """R1 of ``d1`` by ``kind`` and the state bcf gets for R2."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    if kind == "bcf":
        res = PUBLISHERS["bcf"](k=k).publish(d1, rng=rng)
        return res.release, res.state
    if kind == "tds":
        res = PUBLISHERS["tds"](k=data.draw(st.integers(2, min(k + 1, len(d1))), label="tds k")).publish(d1, rng=rng)
        release = res.release
    elif kind == "cut":
        release, _ = data.draw(cut_releases(d1))
    else:
        release = data.draw(local_recodings(d1))
    return release, state_from_releases([release], d1 if data.draw(st.booleans(), label="with snapshot") else None)


def _overlapping(release: Release) -> bool:
    """Do two classes' regions intersect (local recoding)?  Cuts and Mondrian regions never do."""
    regs = {r for _, r, _, _ in _groups(release)}
    return any(all(x & y for x, y in zip(a, b)) for a, b in itertools.combinations(regs, 2))


def _all_cut_releases(table: Table) -> list[Release]:
    """Every global recoding of ``table`` (one cut per QI taxonomy)."""
    schema = table.schema
    per_attr = []
    for name in schema.quasi:
        h = schema[name].hierarchy

        def cuts(node):
            own = [[node]]
            if h.is_leaf_node(node):
                return own
            parts = [cuts(c) for c in h.children[node]]
            return own + [sum(combo, []) for combo in itertools.product(*parts)]

        per_attr.append(cuts(0))
    out = []
    sens = [x for x in schema.published if schema[x].is_sensitive]
    from multirelease.model.table import composite_sensitive

    values = np.asarray(composite_sensitive(table.frame, sens), dtype=object)
    for combo in itertools.product(*per_attr):
        lo = np.zeros((len(table), len(combo)), dtype=np.int32)
        hi = np.zeros_like(lo)
        masks = {}
        for j, (name, cut) in enumerate(zip(schema.quasi, combo)):
            h = schema[name].hierarchy
            for node in cut:
                sel = (table.qi_codes[:, j] >= h.node_lo[node]) & (table.qi_codes[:, j] <= h.node_hi[node])
                lo[sel, j], hi[sel, j] = h.node_lo[node], h.node_hi[node]
            if schema[name].is_subsets:
                masks[name] = np.array([((1 << (int(y) - int(x) + 1)) - 1) << int(x) for x, y in
                                        zip(lo[:, j], hi[:, j])], dtype=np.uint64)
        out.append(Release(schema=schema, attributes=schema.restrict(list(schema.quasi) + sens), lo=lo, hi=hi,
                           sensitive=values, masks=masks))
    return out


def _tiny_tables(data, k: int, min_d1: int = 2) -> tuple[Table, Table]:
    """``(D1, D1 ∪ D2)``: 6-12 rows of a random schema (1-2 QIs of at most 4 leaves), D1 at least ``min_d1``
    rows and D2 at least ``k - 1`` (one short of k in some cases: bcf must refuse those)."""
    schema = data.draw(schemas(models=CUT_MODELS, max_quasi=2, max_leaves=4, max_sensitive=3), label="schema")
    table = data.draw(raw_tables(schema, min_size=6, max_size=12), label="table")
    m = data.draw(st.integers(min_d1, min(7, len(table) - k + 1)), label="|D1|")
    return Table(schema, table.frame.iloc[:m]), table


def _exact(r1: Release, r2: Release) -> dict[str, float]:
    from attacks import ATTACKS
    from multirelease.model.sequence import Adversary, ReleaseSequence

    seq = ReleaseSequence()
    seq.append(r1, None, None)
    seq.append(r2, None, None)
    res = ATTACKS["correspondence"](witness=False).run(seq.view(Adversary(correspondence=True), targets="regions"))
    assert res.exact
    return {m: float(res.summary.get(m, np.inf)) for m in ("FA", "CA", "BA")}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_brute_force_agrees_with_the_exact_engine(data):
    """The oracle and the engine bcf checks itself with agree on random pairs: R1 a cut or a local recoding of
    D1, R2 a cut of D1 ∪ D2 (two independent derivations of Definitions 3.1-3.6)."""
    d1, d12 = _tiny_tables(data, 2)
    r1 = data.draw(cut_releases(d1))[0] if data.draw(st.booleans()) else data.draw(local_recodings(d1))
    r2 = data.draw(cut_releases(d12))[0]
    assert brute_force_bcf(r1, r2) == _exact(r1, r2)


KINDS = ("tds", "cut", "local", "bcf")


def _check_r2(data, kind: str, k: int, counts: dict) -> None:
    d1, d12 = _tiny_tables(data, k, min_d1=k if kind in ("bcf", "tds") else 2)
    r1, state = _r1(data, kind, d1, k)
    top = brute_force_bcf(r1, most_general(PUBLISHERS["tds"](k=2).publish(d12, rng=np.random.default_rng(0)).release))
    try:
        res = PUBLISHERS["bcf"](k=k).publish(d12, state=state, rng=np.random.default_rng(1))
    except InputError as exc:
        counts[(kind, "refused")] = counts.get((kind, "refused"), 0) + 1
        assert "\n" not in str(exc)
        # a refusal only when the most general R2 fails by the brute force ...
        assert not bcf_ok(top, k), (str(exc), top)
        # ... and then, for classes that do not overlap, no global recoding of D1 ∪ D2 is valid either
        if not _overlapping(r1):
            for r2 in _all_cut_releases(d12):
                assert not bcf_ok(brute_force_bcf(r1, r2), k)
        return
    counts[(kind, "published")] = counts.get((kind, "published"), 0) + 1
    got = brute_force_bcf(r1, res.release)
    assert bcf_ok(got, k), (kind, got, top, res.stats)
    cert = res.state["certificate"]
    assert all(cert[m] == got[m] for m in ("FA", "CA", "BA") if np.isfinite(got[m])), (cert, got)
    # an R1 bcf did not make is measured exactly; its own is measured incrementally (or repaired exactly)
    if kind == "bcf":
        assert res.stats["measure"] in ("incremental", "exact (repair)")
        counts[(kind, res.stats["measure"])] = counts.get((kind, res.stats["measure"]), 0) + 1
    else:
        assert res.stats["measure"] == "exact"


@pytest.mark.parametrize("kind", KINDS)
def test_bcf_after_any_r1_is_bcf_anonymous_or_refuses(kind):
    """The property of issue 13 item 3 for each kind of R1; refusals are counted and printed, and a kind whose
    every case is refused fails."""
    counts: dict = {}

    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(data=st.data(), k=st.integers(2, 3))
    def run(data, k):
        _check_r2(data, kind, k, counts)

    run()
    published = counts.get((kind, "published"), 0)
    refused = counts.get((kind, "refused"), 0)
    repaired = counts.get((kind, "exact (repair)"), 0)
    print(f"bcf after an R1 by {kind}: {published} published ({repaired} repaired by the exact search), "
          f"{refused} refused")
    assert published > 0, f"bcf refused every case after an R1 by {kind}"


# ---------------------------------------------------------------------- the defect's counterexample
def _defect_tables() -> tuple[Table, Table]:
    """Issue 13's shape: D1 = 6 records, D2 = 2 (both HIV, Birthplace-like attribute a under A/B, z flat)."""
    a = Hierarchy.from_nested("a", {"A": ["a1", "a2"], "B": ["b1", "b2"]})
    schema = Schema((Attribute("id", "identifier"), Attribute("a", "quasi", a),
                     Attribute("z", "quasi", Hierarchy.from_nested("z", ["x", "y"])),
                     Attribute("d", "sensitive", Hierarchy.from_nested("d", ["flu", "hiv"]))))
    rows = [("a1", "x", "flu"), ("a2", "y", "flu"), ("b1", "x", "hiv"), ("a1", "y", "flu"), ("b2", "y", "flu"),
            ("b2", "y", "hiv"), ("a1", "x", "hiv"), ("a2", "x", "hiv")]
    frame = pd.DataFrame([(str(i), *r) for i, r in enumerate(rows)], columns=["id", "a", "z", "d"], dtype=object)
    table = Table.from_frame(schema, frame)
    return Table(schema, table.frame.iloc[:6]), table


def test_the_defect_counterexample_is_fixed():
    """R1 by tds ([A, *] = 3 flu; [B, *] = flu, 2 hiv).  An R2 made without R1 - what bcf published when it was
    not told about R1 (state None, as the pipeline calls it after another publisher) - is [*, x] = 3 hiv, flu;
    [*, y] = 3 flu, hiv: FA = CA = BA = 1 < k = 2, while the most general R2 has 3 / 3 / 2.  Told about R1
    (state_from_releases), bcf publishes an R2 with FA, CA, BA >= 2 by the brute force, measured exactly."""
    d1, d12 = _defect_tables()
    r1 = PUBLISHERS["tds"](k=2).publish(d1, rng=np.random.default_rng(0)).release
    blind = PUBLISHERS["bcf"](k=2).publish(d12, state=None, rng=np.random.default_rng(1)).release
    assert sorted(map(sorted, blind.to_frame().groupby(["a", "z"])["d"].apply(list))) == \
        [["flu", "flu", "flu", "hiv"], ["flu", "hiv", "hiv", "hiv"]]
    assert brute_force_bcf(r1, blind) == {"FA": 1.0, "CA": 1.0, "BA": 1.0}
    assert brute_force_bcf(r1, most_general(blind)) == {"FA": 3.0, "CA": 3.0, "BA": 2.0}
    for snapshot in (d1, None):
        res = PUBLISHERS["bcf"](k=2).publish(d12, state=state_from_releases([r1], snapshot),
                                             rng=np.random.default_rng(1))
        got = brute_force_bcf(r1, res.release)
        assert bcf_ok(got, 2), got
        assert res.stats["measure"] == "exact"
        assert res.state["certificate"] == got


def test_an_own_chain_whose_incremental_measure_fails_is_repaired(monkeypatch):
    """The repair: should the incremental measure accept an R2 the exact check rejects, the search is redone
    with the exact engine.  Simulated with a measure that accepts every step (the search then specializes to
    the leaves): the release returned is BCF-anonymous by the brute force, and the stats say why."""
    import publishers.bcf.anonymizer as bcf
    from publishers.bcf.tds import KAnonymity

    class AcceptAll(KAnonymity):
        crack = None
        pairs_examined = 0

    d1, d12 = _defect_tables()
    r1 = PUBLISHERS["bcf"](k=2).publish(d1, rng=np.random.default_rng(0))
    honest = PUBLISHERS["bcf"](k=2).publish(d12, state=r1.state, rng=np.random.default_rng(1))
    assert honest.stats["measure"] == "incremental"
    monkeypatch.setattr(bcf, "_incremental_constraint", lambda *a, **kw: AcceptAll(1))
    res = PUBLISHERS["bcf"](k=2).publish(d12, state=r1.state, rng=np.random.default_rng(1))
    assert res.stats["measure"] == "exact (repair)"
    assert "correspondence." in res.stats["incremental_failure"]
    assert bcf_ok(brute_force_bcf(r1.release, res.release), 2)
    assert res.state["chain"][-1]["measure"] == "exact"  # the next release will not trust x_B it never computed


def test_refusals_are_one_line_naming_requirement_and_witness():
    d1, d12 = _defect_tables()
    r1 = PUBLISHERS["tds"](k=2).publish(d1, rng=np.random.default_rng(0)).release
    frame = r1.to_frame().drop(columns="group")
    frame.loc[0, ["a", "z"]] = ["a1", "x"]  # a class of one record: FA <= 1 for any R2
    small = release_from_frame(d1.schema, frame)
    with pytest.raises(InputError, match=r"^bcf refuses release 2 \(even the most general one\): "
                                         r"correspondence\.FA >= 2 fails \(FA = 1\) for the target a=a1, z=x at T1"):
        PUBLISHERS["bcf"](k=2).publish(d12, state=state_from_releases([small]), rng=np.random.default_rng(1))
    with pytest.raises(InputError, match=r"correspondence\.BA >= 3 fails \(BA <= 2\)"):
        PUBLISHERS["bcf"](k=3).publish(d12, state=state_from_releases([r1]), rng=np.random.default_rng(1))


def test_a_hand_edited_own_state_is_measured_exactly():
    """An own entry whose content no longer matches its digest (edited, or written by hand in bcf's format) is
    not trusted: the chain is measured by the exact engine."""
    import copy

    d1, d12 = _defect_tables()
    r1 = PUBLISHERS["bcf"](k=2).publish(d1, rng=np.random.default_rng(0))
    state = copy.deepcopy(r1.state)
    state["chain"][0]["groups"][0][2] += 0  # same content: still trusted
    assert PUBLISHERS["bcf"](k=2).publish(d12, state=state, rng=np.random.default_rng(1)).stats["measure"] == \
        "incremental"
    state["chain"][0]["k"] = 3
    res = PUBLISHERS["bcf"](k=2).publish(d12, state=state, rng=np.random.default_rng(1))
    assert res.stats["measure"] == "exact" and "digest" in res.stats["why_exact"]


@pytest.mark.parametrize("name", ["tds", "bcf"])
def test_a_first_release_that_is_not_k_anonymous_is_refused(name, monkeypatch):
    """tds (and bcf's first release, which is TDS) check linking.k >= k before returning: with a broken validity
    test that accepts every specialization the release is refused, naming the class."""
    import publishers.bcf.anonymizer as bcf
    import publishers.bcf.tds as tds

    class AcceptAll(tds.KAnonymity):
        def check(self, step):
            return True

    monkeypatch.setattr(tds, "KAnonymity", AcceptAll)
    monkeypatch.setattr(bcf, "KAnonymity", AcceptAll)
    d1, _ = _defect_tables()
    with pytest.raises(InputError, match=rf"^{name} refuses the release: linking\.k >= 2 fails \(k = 1\) for the "
                                         r"class \d+ \(a=\w+, z=\w+\)$"):
        PUBLISHERS[name](k=2).publish(d1, rng=np.random.default_rng(0))
    assert PUBLISHERS[name].guarantee[0].format(k=2) == ("linking.k >= 2" if name == "tds"
                                                         else "correspondence.FA >= 2")


def test_state_for_sequence_keeps_an_own_chain_and_adopts_any_other():
    """What a runner hands bcf before publishing into a sequence: its own state when the chain is the
    sequence (then the incremental measure), the sequence as a foreign chain otherwise - R1 by tds with no bcf
    state (the defect's path), or a sequence where another release came between bcf's."""
    from publishers.bcf.anonymizer import state_for_sequence

    d1, d12 = _defect_tables()
    own = PUBLISHERS["bcf"](k=2).publish(d1, rng=np.random.default_rng(0))
    assert state_for_sequence([], None, None) is None
    assert state_for_sequence([own.release], d1, own.state) == own.state
    r2 = PUBLISHERS["bcf"](k=2).publish(d12, state=state_for_sequence([own.release], d1, own.state),
                                        rng=np.random.default_rng(1))
    assert r2.stats["measure"] == "incremental"
    tds = PUBLISHERS["tds"](k=2).publish(d1, rng=np.random.default_rng(3)).release
    for state in (None, own.state):  # the pipeline's state of bcf (none yet, or one that is not this sequence)
        if state is not None:
            tds = most_general(tds)  # a release bcf did not write, of the same records
        adopted = state_for_sequence([tds], d1, state)
        assert adopted["chain"][0]["made_by"] == "foreign"
        res = PUBLISHERS["bcf"](k=2).publish(d12, state=adopted, rng=np.random.default_rng(1))
        assert res.stats["measure"] == "exact"
        assert bcf_ok(brute_force_bcf(tds, res.release), 2)
