"""Brute forces written from the papers, for the registry-wide property (tests/publishers/test_publisher_guarantees.py).

The team's other brute forces stay in their test modules and are imported from there by the tests of the same
folder (m-invariance / m-Distinct: tests/publishers/test_m_publishers_guarantee.py; Wong et al.'s worlds:
tests/publishers/test_global_guarantee.py; Fung et al.'s FA / CA / BA: tests/publishers/test_bcf_any_r1.py).
Here, the ones no module had at the size of that property, and those tests of several folders share:

* :func:`distinct_assignments` - every distinct arrangement of a multiset of values (the worlds of one table);
* :func:`linking_failures` - k-anonymity and distinct l-diversity of every class of one published file;
* :func:`intersection_failures` - Barbosa et al. section 4 by its set algebra: for every uid and every subset
  of the releases (itertools), the candidate set the adversary builds from those releases alone (the
  intersection of the uid's classes where it is published, minus every release it is absent from) must
  satisfy the principle.  The permutation brute force of tests/attacks/test_intersection_all_releases.py enumerates
  every one-to-one map of individuals to uids: exact but ``n!``, past reach at 10-20 uids;
* :func:`sequence_worlds` - Shmueli & Tassa's possible worlds (Definition 3.1) of a sequence with insertions:
  every distinct arrangement of the last table's sensitive multiset over its individuals that every release
  is consistent with (a perfect matching of each release's individuals to its records, region containing the
  point and value equal), and :func:`min_linkability` over them (Definition 3.3's l-linkability).
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

__all__ = ["linking_failures", "intersection_failures", "sequence_worlds", "min_linkability", "tuple_pins",
           "distinct_assignments"]


def distinct_assignments(values: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct arrangement of the multiset ``values`` over ``n`` positions, as rows of codes into the
    returned labels (Wong et al.'s worlds of one table, and Shmueli & Tassa's of a sequence's last table)."""
    labels, counts = np.unique(np.asarray(values, dtype=object).astype(str), return_counts=True)
    partial = np.zeros((1, 0), dtype=np.int8)
    left = counts[None, :].copy()
    for _ in range(n):
        grown, rest = [], []
        for v in range(len(labels)):
            ok = left[:, v] > 0
            grown.append(np.column_stack([partial[ok], np.full(int(ok.sum()), v, dtype=np.int8)]))
            r = left[ok].copy()
            r[:, v] -= 1
            rest.append(r)
        partial, left = np.concatenate(grown), np.concatenate(rest)
    return labels, partial


def _classes(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """The class of every row of a published file, numbered: equal group id and equal generalized
    quasi-identifiers (as text)."""
    text = frame[columns].astype(str)
    return text.groupby(list(text.columns), sort=False).ngroup()


def linking_failures(frame: pd.DataFrame, quasi: list[str], sens: str, k: int, l: float) -> list[str]:
    """The classes of one published file with fewer than ``k`` rows or fewer than ``l`` distinct values."""
    cols = (["group"] if "group" in frame.columns else []) + list(quasi)
    out = []
    for key, rows in frame.groupby(_classes(frame, cols)):
        if len(rows) < k or rows[sens].nunique() < l:
            out.append(f"class {key!r}: {len(rows)} rows, {rows[sens].nunique()} distinct")
    return out


def intersection_failures(frames: list[pd.DataFrame], quasi: list[str], sens: str, k: int, l: float
                          ) -> list[str]:
    """Barbosa et al. section 4 (Definition 1 on every candidate set) over every subset of releases: the uids
    whose candidate set, built from some releases by intersections and differences, has fewer than ``k`` uids
    or fewer than ``l`` distinct values in a release of the subset that publishes the uid."""
    cols = ["group"] + list(quasi)
    cls = [dict(zip(f["uid"], _classes(f, cols))) for f in frames]
    val = [dict(zip(f["uid"], f[sens])) for f in frames]
    uids = sorted(set().union(*[set(c) for c in cls]))
    out = []
    for t in uids:
        for size in range(1, len(frames) + 1):
            for subset in itertools.combinations(range(len(frames)), size):
                on = [i for i in subset if t in cls[i]]
                if not on:
                    continue
                cand = set.intersection(*[{u for u in cls[i] if cls[i][u] == cls[i][t]} for i in on])
                for j in subset:
                    if t not in cls[j]:
                        cand -= set(cls[j])
                for i in on:
                    if len(cand) < k or len({val[i][u] for u in cand}) < l:
                        out.append(f"uid {t}: releases {[s + 1 for s in subset]} leave {sorted(cand)}")
    return out


def _tuples(frame_values: list[np.ndarray]) -> np.ndarray:
    """One text per row: the sensitive value and the linking values, joined (a tuple of 004 Definition 3.1)."""
    out = np.asarray(frame_values[0], dtype=object).astype(str)
    for col in frame_values[1:]:
        out = np.char.add(np.char.add(out.astype(str), "\x1f"), np.asarray(col, dtype=object).astype(str))
    return np.asarray(out, dtype=object)


def sequence_worlds(tables, releases, linking: tuple = ()) -> tuple[list[str], np.ndarray, list[str]]:
    """``(values, worlds, ids)``: the possible worlds of a sequence with insertions only (persistent values),
    as rows of value codes over the last table's individuals ``ids``.  A release is consistent with an
    assignment when its records can be matched one-to-one to the individuals of its table, each record's
    region containing the individual's point and its value being the individual's (Definition 3.1).  When every
    component of records and individuals has every record's region containing every individual, matching is
    counting: the values as multisets; otherwise a matching per distinct assignment of the component.
    ``linking``: the linking columns every release publishes (Shmueli & Tassa section 5.2): a world then gives
    each individual a tuple of its sensitive and linking values, and a record's tuple must be the individual's;
    the labels are those tuples (:func:`sensitive_labels` reads their sensitive part)."""
    last = tables[-1]
    ids = [str(x) for x in last.ids]
    where = {p: i for i, p in enumerate(ids)}
    own = _tuples([last.sensitive] + [last.frame[c].to_numpy() for c in linking])
    labels, worlds = distinct_assignments(list(own), len(ids))
    for table, release in zip(tables, releases):
        cols = [list(table.schema.quasi).index(n) for n in release.quasi]
        people = np.array([where[str(x)] for x in table.ids], dtype=np.int64)
        contain = release.contains_points(table.qi_codes[:, cols])  # (records, people)
        published = _tuples([release.sensitive] + [release.other[c].to_numpy() for c in linking])
        rows_v = np.searchsorted(labels, published)
        if not np.array_equal(np.asarray(labels, dtype=object)[np.minimum(rows_v, len(labels) - 1)], published):
            return list(labels), worlds[:0], ids  # a record's tuple no individual has
        if len(release) != len(people):
            worlds = worlds[:0]
            break
        worlds = worlds[_consistent(worlds, people, contain, rows_v, len(labels))]  # the worlds still possible
    return list(labels), worlds, ids


def _consistent(worlds: np.ndarray, people: np.ndarray, contain: np.ndarray, rows_v: np.ndarray, n_values: int
                ) -> np.ndarray:
    """Which worlds one release is consistent with: per connected component of the containment graph
    (records and the individuals inside their regions), a perfect matching of the component's records to its
    individuals, each record matched to an individual inside its region and given its value.  A record is
    matched only to an individual given its value, so the graph of an assignment is the disjoint union of one
    graph per value (the records of that value, the individuals it gives that value): a perfect matching exists
    iff the value multisets agree and each value's graph has one.  Each value's graph depends only on which of
    the component's individuals the world gives that value: the distinct such sets among the worlds still
    possible are matched together (:func:`_perfect_each`), every world then answered by its sets (no loop over
    worlds)."""
    n_rows, n_people = contain.shape
    graph = csr_matrix(np.block([[np.zeros((n_rows, n_rows)), contain], [contain.T, np.zeros((n_people, n_people))]]))
    _, comp = connected_components(graph, directed=False)
    ok = np.ones(len(worlds), dtype=bool)
    for c in np.unique(comp).tolist():
        rows = np.flatnonzero(comp[:n_rows] == c)
        cols = np.flatnonzero(comp[n_rows:] == c)
        if len(rows) != len(cols):
            return np.zeros(len(worlds), dtype=bool)
        live = np.flatnonzero(ok)
        sub = worlds[np.ix_(live, people[cols])]
        values = rows_v[rows]
        want = np.bincount(values, minlength=n_values)
        fits = np.ones(len(live), dtype=bool)
        for v in range(n_values):  # the value multisets agree
            fits &= (sub == v).sum(axis=1) == want[v]
        block = contain[np.ix_(rows, cols)]
        if not block.all():  # (a complete component: counting suffices)
            assert len(cols) < 63, "a component of more than 62 individuals"
            bits = np.left_shift(np.int64(1), np.arange(len(cols), dtype=np.int64))
            for v in np.unique(values).tolist():
                at = np.flatnonzero(fits)
                if not len(at):
                    break
                keys, inv = np.unique((sub[at] == v) @ bits, return_inverse=True)  # a set of individuals a key
                masks = (keys[:, None] & bits) != 0
                fits[at] = _perfect_each(block[values == v], masks)[inv.reshape(-1)]
        ok[live] = fits
    return ok


def _perfect_each(graph: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """For each row of ``masks`` (which of ``graph``'s columns are kept, as many as it has rows): whether the
    kept columns and every row have a perfect matching in ``graph``.  One matching of the disjoint union of
    the subgraphs (scipy): a subgraph has a perfect matching iff all its rows are matched in the union's."""
    n, r = len(masks), graph.shape[0]
    kept = np.nonzero(masks)[1].reshape(n, r)  # the kept columns of each subgraph, in order
    sub = graph[:, kept].transpose(1, 0, 2)  # (subgraph, row, kept column)
    j, a, b = np.nonzero(sub)
    union = csr_matrix((np.ones(len(j), dtype=np.int8), (j * r + a, j * r + b)), shape=(n * r, n * r))
    matched = maximum_bipartite_matching(union, perm_type="column") >= 0
    return matched.reshape(n, r).all(axis=1)


def min_linkability(worlds: np.ndarray, labels: list[str] | None = None) -> int:
    """The fewest distinct values an individual takes over the worlds (0 without a world); with ``labels``
    (tuples of :func:`sequence_worlds` with linking columns), distinct *sensitive* values."""
    if not len(worlds):
        return 0
    if labels is not None:
        sens = np.array([str(x).split("\x1f", 1)[0] for x in labels], dtype=object)
        return int(min(len(set(sens[worlds[:, j]])) for j in range(worlds.shape[1])))
    return int(min(len(np.unique(worlds[:, j])) for j in range(worlds.shape[1])))


def tuple_pins(tables, releases, linking: tuple) -> list[str]:
    """Shmueli & Tassa's Example 5.1 attacker (section 5.2) on a sequence: a target of table ``r`` (its
    quasi-identifiers and presence known) can be in the classes of a release whose region holds its point; its
    linking tuple, one for the whole sequence, is among the tuples of those rows in every release it is in; its
    candidate sensitive values in a release are those of such rows whose tuple survives.  Returns the
    ``(target, release)`` pairs left with one candidate value (a value the releases pin) - none under any
    multi-release guarantee with l >= 2.  A release with fewer rows than its table's individuals withholds
    someone (BPG suppresses records): the attacker cannot tell who, so that release constrains no one."""
    feasible: dict = {}
    cands = []
    for r, (table, release) in enumerate(zip(tables, releases)):
        if len(release) < len(table):
            continue
        cols = [list(table.schema.quasi).index(n) for n in release.quasi]
        contain = release.contains_points(table.qi_codes[:, cols])  # (records, people)
        tuples = [tuple(str(release.other[c].iloc[i]) for c in linking) for i in range(len(release))]
        here = {}
        for p, pid in enumerate(table.ids):
            rows = np.flatnonzero(contain[:, p])
            here[str(pid)] = rows
            seen = {tuples[i] for i in rows}
            feasible[str(pid)] = seen if str(pid) not in feasible else feasible[str(pid)] & seen
        cands.append((r, release, tuples, here))
    out = []
    for r, release, tuples, here in cands:
        for pid, rows in here.items():
            values = {str(release.sensitive[i]) for i in rows if tuples[i] in feasible[pid]}
            if len(values) == 1:
                out.append(f"{pid} in release {r + 1}: {values.pop()}")
    return out
