"""The release of m-invariance and m-Distinct from their QI-groups (:func:`publish_groups`): generalization to
the closure of each group's real rows, counterfeit rows that nothing but the counterfeit statistics tells from
real ones (issue 13, item 2; tests/publishers/test_counterfeit_indistinguishable.py), and the statistics.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.table import Table

__all__ = ["publish_groups"]

#: a QI-group: ``[(snapshot row | -1 for a counterfeit, value index)]``
GroupSpec = list


def publish_groups(snapshot: Table, attributes: Sequence[str], groups: list[GroupSpec], value_names: np.ndarray,
                   rng: np.random.Generator, uids: list[list[str]] | None = None
                   ) -> tuple[Release, ReleaseTruth, dict]:
    """A release of QI-groups with counterfeits: each group generalized to the closure of its real rows;
    counterfeit rows share the group's QI values (and the other published columns of a random member); counterfeit
    statistics ``{group: count}`` for the groups that have any.  ``uids`` (parallel to ``groups``) gives each
    row's published uid; ``None`` publishes no uid column.

    Nothing in the file separates a counterfeit row from a real one but the counts: the group ids are a random
    permutation of ``1..G``, the rows are shuffled across the whole release (with ``rng``), so neither a
    row's position in the file nor in its group says anything, and the statistics are listed in group-id order;
    a counterfeit's other published columns (neither quasi-identifier nor sensitive) are those of a random
    person of the snapshot inside the group's region who is not in the group (a copy of a member would give
    every counterfeit a twin, tests/publishers/test_counterfeit_indistinguishable.py), of anyone outside the group when
    nobody else is inside; groups without a real row are not published."""
    schema = snapshot.schema
    attributes = schema.restrict(attributes)
    quasi = [n for n in attributes if schema[n].is_quasi]
    all_q = list(schema.quasi)
    codes = snapshot.qi_codes[:, [all_q.index(n) for n in quasi]]
    keep = [i for i, spec in enumerate(groups) if any(r >= 0 for r, _ in spec)]
    gid_of = {gi: int(g) + 1 for gi, g in zip(keep, rng.permutation(len(keep)))}
    rows, sens, group_ids, fake, uid_list = [], [], [], [], []
    cf: dict[int, int] = {}
    for gi in keep:
        spec = list(groups[gi])
        gid = gid_of[gi]
        real = [r for r, _ in spec if r >= 0]
        for k, (r, v) in enumerate(spec):
            rows.append(r if r >= 0 else real[int(rng.integers(0, len(real)))])
            sens.append(value_names[v])
            group_ids.append(gid)
            fake.append(r < 0)
            if uids is not None:
                uid_list.append(uids[gi][k])
        n_fake = sum(1 for r, _ in spec if r < 0)
        if n_fake:
            cf[gid] = n_fake
    perm = rng.permutation(len(rows))
    rows = [rows[int(i)] for i in perm]
    sens = [sens[int(i)] for i in perm]
    group_ids = [group_ids[int(i)] for i in perm]
    fake = [fake[int(i)] for i in perm]
    uid_list = [uid_list[int(i)] for i in perm] if uids is not None else []
    rows_a = np.asarray(rows, dtype=np.int64)
    group_a = np.asarray(group_ids, dtype=np.int64)
    fake_a = np.asarray(fake, dtype=bool)
    n = len(rows_a)
    lo = np.zeros((n, len(quasi)), dtype=np.int32)
    hi = np.zeros_like(lo)
    masks = {}
    region: list[tuple] = []  # per quasi-identifier: (closure lo, closure hi, subset mask or None) per group id
    if n:
        sub = codes[rows_a]
        real_sub = np.where(fake_a[:, None], np.iinfo(np.int32).max, sub)
        gmin = np.full((int(group_a.max()) + 1, len(quasi)), np.iinfo(np.int32).max, dtype=np.int64)
        np.minimum.at(gmin, group_a, real_sub)
        real_sub2 = np.where(fake_a[:, None], -1, sub)
        gmax = np.full_like(gmin, -1)
        np.maximum.at(gmax, group_a, real_sub2)
        unused = gmax[:, 0] < 0 if len(quasi) else np.zeros(len(gmax), bool)
        gmin[unused] = 0
        gmax[unused] = 0
        for j, name in enumerate(quasi):
            a = schema[name]
            clo, chi = a.closure(gmin[:, j], gmax[:, j]) if len(gmin) else (gmin[:, j], gmax[:, j])
            lo[:, j] = np.asarray(clo)[group_a]
            hi[:, j] = np.asarray(chi)[group_a]
            gm = None
            if a.is_subsets:
                bits = np.where(fake_a, np.uint64(0), np.left_shift(np.uint64(1), sub[:, j].astype(np.uint64)))
                gm = np.zeros(len(gmin), dtype=np.uint64)
                np.bitwise_or.at(gm, group_a, bits)
                masks[name] = gm[group_a]
            region.append((np.asarray(clo), np.asarray(chi), gm))
    others = [x for x in attributes if not schema[x].is_quasi and not schema[x].is_sensitive]
    other = None
    if others:
        source = _other_sources(codes, rows_a, group_a, fake_a, region, rng) if fake_a.any() else rows_a
        other = snapshot.frame.iloc[source][others].reset_index(drop=True)
    cf = {g: cf[g] for g in sorted(cf)}
    ids = snapshot.ids[rows_a] if n else np.zeros(0, dtype=object)
    uid = np.asarray(uid_list, dtype=object) if uids is not None else None
    sensitive = np.asarray(sens, dtype=object)
    release = Release(schema=schema, attributes=tuple(attributes), lo=lo, hi=hi, sensitive=sensitive, masks=masks,
                      other=other, group=group_a, uid=uid, counterfeits=cf or None)
    person = np.array([None if f else str(i) for i, f in zip(ids, fake_a)], dtype=object)
    truth = ReleaseTruth(person=person, counterfeit=fake_a)
    return release, truth, cf


def _other_sources(codes: np.ndarray, rows: np.ndarray, group: np.ndarray, fake: np.ndarray, region: list,
                   rng: np.random.Generator) -> np.ndarray:
    """The snapshot row whose other columns each published row shows: its own for a real row; for a counterfeit,
    a random person inside its group's region (``region``: per quasi-identifier the closure's ``lo``, ``hi`` and
    subset mask per group id) who is not a member, else anyone who is not a member, else a member."""
    source = rows.copy()
    everyone = np.arange(len(codes))
    for g in np.unique(group[fake]):
        members = rows[(group == g) & ~fake]
        inside = np.ones(len(codes), dtype=bool)
        for j, (clo, chi, gm) in enumerate(region):
            if gm is not None:
                inside &= (np.right_shift(gm[g], codes[:, j].astype(np.uint64)) & np.uint64(1)).astype(bool)
            else:
                inside &= (codes[:, j] >= clo[g]) & (codes[:, j] <= chi[g])
        inside[members] = False
        pool = np.flatnonzero(inside)
        if not len(pool):
            pool = np.setdiff1d(everyone, members)
        if not len(pool):
            pool = members
        at = np.flatnonzero((group == g) & fake)
        source[at] = pool[rng.integers(0, len(pool), size=len(at))]
    return source
