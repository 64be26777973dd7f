"""Brute forces written from the papers, for the registry-wide property (tests/test_publisher_guarantees.py).

The team's other brute forces stay in their test modules and are imported from there (m-invariance /
m-Distinct: tests/test_m_publishers_guarantee.py; Wong et al.'s worlds: tests/test_global_guarantee.py;
Fung et al.'s FA / CA / BA: tests/test_bcf_any_r1.py).  Here, the ones no module had at the size of that
property:

* :func:`linking_failures` - k-anonymity and distinct l-diversity of every class of one published file;
* :func:`intersection_failures` - Barbosa et al. section 4 by its set algebra: for every uid and every subset
  of the releases (itertools), the candidate set the adversary builds from those releases alone (the
  intersection of the uid's classes where it is published, minus every release it is absent from) must
  satisfy the principle.  The permutation brute force of tests/test_intersection_all_releases.py enumerates
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

from test_global_guarantee import _distinct_assignments

__all__ = ["linking_failures", "intersection_failures", "sequence_worlds", "min_linkability"]


def _classes(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """The class of every row of a published file: equal group id and equal generalized quasi-identifiers."""
    return frame[columns].astype(str).agg("\x1f".join, axis=1)


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


def sequence_worlds(tables, releases) -> tuple[list[str], np.ndarray, list[str]]:
    """``(values, worlds, ids)``: the possible worlds of a sequence with insertions only (persistent values),
    as rows of value codes over the last table's individuals ``ids``.  A release is consistent with an
    assignment when its records can be matched one-to-one to the individuals of its table, each record's
    region containing the individual's point and its value being the individual's (Definition 3.1).  When every
    component of records and individuals has every record's region containing every individual, matching is
    counting: the values as multisets; otherwise a matching per distinct assignment of the component."""
    last = tables[-1]
    ids = [str(x) for x in last.ids]
    where = {p: i for i, p in enumerate(ids)}
    labels, worlds = _distinct_assignments(list(np.asarray(last.sensitive, dtype=object).astype(str)), len(ids))
    for table, release in zip(tables, releases):
        cols = [list(table.schema.quasi).index(n) for n in release.quasi]
        people = np.array([where[str(x)] for x in table.ids], dtype=np.int64)
        contain = release.contains_points(table.qi_codes[:, cols])  # (records, people)
        rows_v = np.searchsorted(labels, np.asarray(release.sensitive, dtype=object).astype(str))
        if len(release) != len(people):
            worlds = worlds[:0]
            break
        worlds = worlds[_consistent(worlds, people, contain, rows_v, len(labels))]  # the worlds still possible
    return list(labels), worlds, ids


def _consistent(worlds: np.ndarray, people: np.ndarray, contain: np.ndarray, rows_v: np.ndarray, n_values: int
                ) -> np.ndarray:
    """Which worlds one release is consistent with: per connected component of the containment graph
    (records and the individuals inside their regions), counting where every record of the component contains
    every individual of it (then a matching exists iff the value multisets agree), else a perfect matching for
    each distinct assignment of the component's individuals.  A record is matched only to an individual given
    its value, so the graph of an assignment is the disjoint union of one graph per value (the records of
    that value, the individuals it gives that value): a perfect matching exists iff the value multisets agree
    and each value's graph has one - matched once per distinct (value, individuals) pair of the component."""
    n_rows, n_people = contain.shape
    graph = csr_matrix(np.block([[np.zeros((n_rows, n_rows)), contain], [contain.T, np.zeros((n_people, n_people))]]))
    _, comp = connected_components(graph, directed=False)
    ok = np.ones(len(worlds), dtype=bool)
    for c in np.unique(comp).tolist():
        rows = np.flatnonzero(comp[:n_rows] == c)
        cols = np.flatnonzero(comp[n_rows:] == c)
        if len(rows) != len(cols):
            return np.zeros(len(worlds), dtype=bool)
        sub = worlds[:, people[cols]]
        block = contain[np.ix_(rows, cols)]
        if block.all():
            want = np.bincount(rows_v[rows], minlength=n_values)
            for v in range(n_values):
                ok &= (sub == v).sum(axis=1) == want[v]
            continue
        uniq, inv = np.unique(sub, axis=0, return_inverse=True)
        values = rows_v[rows]
        want = np.bincount(values, minlength=n_values)
        fits = (np.stack([(uniq == v).sum(axis=1) for v in range(n_values)], axis=1) == want).all(axis=1)
        by_value = {v: np.flatnonzero(values == v) for v in np.unique(values).tolist()}
        matched: dict[tuple[int, bytes], bool] = {}
        for i in np.flatnonzero(fits).tolist():
            for v, recs in by_value.items():
                members = np.flatnonzero(uniq[i] == v)
                key = (v, members.tobytes())
                if key not in matched:
                    graph_v = csr_matrix(block[np.ix_(recs, members)].astype(np.int8))
                    matched[key] = bool((maximum_bipartite_matching(graph_v, perm_type="column") >= 0).all())
                if not matched[key]:
                    fits[i] = False
                    break
        ok &= fits[inv.reshape(-1)]
    return ok


def min_linkability(worlds: np.ndarray) -> int:
    """The fewest distinct values an individual takes over the worlds (0 without a world)."""
    if not len(worlds):
        return 0
    return int(min(len(np.unique(worlds[:, j])) for j in range(worlds.shape[1])))
