"""m-invariance (Xiao & Tao, SIGMOD 2007; reference [4] of Li & Zhou): re-publication under insertions and
deletions with counterfeit records.

Every QI-group of every release is *m-unique* (at least ``m`` rows, all with distinct sensitive values), and a
record that stays keeps its *signature* - the set of sensitive values of its QI-group - in every release of
its lifespan.  One release is made in four phases:

1. **division** - the records of the previous release that stay are put into buckets by signature; new records
   wait;
2. **balancing** - each bucket must hold the same number of rows for every value of its signature: new
   records with a missing value fill the gaps first, counterfeit rows (published with the group's QI values;
   their number per group is published as counterfeit statistics) fill the rest;
3. **assignment** - the remaining new records are partitioned into QI-local m-eligible sets (Mondrian with
   "no value in more than ``1/m`` of the rows") and each set into groups of distinct values (one row of each
   of the ``m`` most frequent values at a time; the leftover rows join groups without their value); when the
   new records are not m-eligible at all, counterfeits make them so;
4. **split** - each balanced bucket is split recursively like Mondrian, each value's rows cut at the same rank
   of the attribute that scores best (the split score of Li & Zhou's eq. 4, a sum of normalized extents),
   until one row of each value is left: a QI-group with exactly the bucket's signature.

**Internal updates** (Li & Zhou, section I.A.2 and Figure 4): a record that stays but whose sensitive value
left its signature can no longer be placed in a group with its signature.  Such a record is *invalid*; it is
published as a new record (with a new signature) and counted in the state (``stats.invalid``, cumulative in
``stats.invalid_total``), which is Figure 4's count.

No ``uid`` column is published unless asked (``uid: true``); then the QI-groups are kept as *cohorts* with
random uids (:mod:`publishers.m_invariance._cohorts`), so that a record-tracking adversary (Barbosa et al.
section 4) meets every record's whole group in every release.  Counterfeit rows carry nothing that separates them
from real ones: random group numbers, rows shuffled across the release, uids drawn like the real ones.  Every release is
checked against the guarantee before it is returned, or refused (:mod:`publishers.m_invariance._guarantee`).  The
publisher state (JSON, private) holds the signatures and the last release's rows (person, group, value, uid).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.params import Boolean, Interval
from multirelease.model.principles import Principle
from multirelease.model.table import Table

from multirelease.model.transitions import TransitionModel

from ._cohorts import Cohorts, continue_cohorts, fresh_uids
from ._guarantee import (PrivateRows, attack_checks, check_cohorts, check_m_unique, check_signature_invariance,
                           extend_history, sequence_check)
from publishers.base import PublisherBase, PublishResult
from ._publish import publish_groups
from ._split import balanced_split, balanced_split_many
from publishers.mondrian import mondrian_partition

__all__ = ["MInvariance", "GroupSpec", "publish_groups", "unique_groups", "balanced_split", "balanced_split_many",
           "new_record_groups"]

#: a counterfeit member of a group: ``(-1, value index)``; a real member: ``(row, value index)``
GroupSpec = list


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=True)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def unique_groups(rows: np.ndarray, values: np.ndarray, m: int, rng: np.random.Generator) -> list[list[int]]:
    """Partition an m-eligible set of rows (no value on more than ``len/m`` rows) into groups of at least ``m``
    rows with distinct values: take one row of each of the ``m`` most frequent values while at least ``m``
    values remain, then add each leftover row to a group without its value.  Positions index ``rows``."""
    by_value: dict[int, list[int]] = {}
    for pos, v in enumerate(values):
        by_value.setdefault(int(v), []).append(pos)
    for lst in by_value.values():
        rng.shuffle(lst)
    groups: list[list[int]] = []
    while True:
        live = sorted((v for v in by_value if by_value[v]), key=lambda v: (-len(by_value[v]), v))
        if len(live) < m:
            break
        groups.append([by_value[v].pop() for v in live[:m]])
    leftover = [p for v in by_value for p in by_value[v]]
    for p in leftover:
        v = int(values[p])
        for g in groups:
            if all(int(values[q]) != v for q in g):
                g.append(p)
                break
        else:
            if groups:  # only when the set was not m-eligible: keep the row, the group is then not m-unique
                groups[-1].append(p)
            else:
                groups.append([p])
    return [[int(rows[p]) for p in g] for g in groups]


def eligible_counterfeits(values: np.ndarray, n_values: int, m: int, allowed: np.ndarray | None = None, *,
                          rng: np.random.Generator | None = None, weights: np.ndarray | None = None) -> list[int]:
    """Counterfeit values that make a multiset m-eligible (no value on more than ``1/m`` of the rows, at least
    ``m`` rows): with ``F`` the largest count, ``m * F - n`` counterfeits, each on a value below ``F``.  With
    ``rng`` each counterfeit takes a value below ``F`` at random, in proportion to ``weights`` (the values'
    frequencies in the table: counterfeit values then look like real ones, issue 13; any choice below ``F``
    keeps the multiset m-eligible); without it, fewest rows first, ties to the lowest value.  Raises
    :class:`InputError` when fewer than ``m`` values (among ``allowed``) exist."""
    counts = np.bincount(values, minlength=n_values).astype(np.int64) if len(values) else np.zeros(n_values, int)
    allowed = np.arange(n_values) if allowed is None else np.asarray(allowed)
    if len(allowed) < m:
        raise InputError(f"m-unique groups need at least m = {m} distinct sensitive values; the domain has "
                         f"{len(allowed)}")
    top = max(int(counts.max()) if len(counts) else 0, 1)
    need = m * top - int(counts.sum())
    out: list[int] = []
    if rng is not None:
        w = np.ones(n_values) if weights is None else np.maximum(np.asarray(weights, dtype=np.float64), 1e-12)
        while need > 0:  # room below F: len(allowed) * F - n >= m * F - n = need
            room = allowed[counts[allowed] < top]
            v = int(rng.choice(room, p=w[room] / w[room].sum()))
            counts[v] += 1
            out.append(v)
            need -= 1
        return out
    while need > 0:
        cand = allowed[np.argsort(counts[allowed], kind="stable")]
        for v in cand:
            if need <= 0 or counts[v] >= top:
                break
            counts[v] += 1
            out.append(int(v))
            need -= 1
    return out


def new_record_groups(codes: np.ndarray, attrs, rows: np.ndarray, values: np.ndarray, n_values: int, m: int,
                      rng: np.random.Generator, *, key: np.ndarray | None = None,
                      key_values: Mapping[int, Sequence[int]] | None = None,
                      weights: np.ndarray | None = None) -> list[GroupSpec]:
    """Phase 3 of m-invariance (and the new records of m-Distinct): QI-local m-unique groups of ``rows`` with
    counterfeits when the rows are not m-eligible.  ``key`` (default: the values) is what must be distinct in a
    group (m-Distinct* groups by candidate-update-set class, ``key_values`` giving the values of each class, for
    counterfeits).  Counterfeit values are drawn in proportion to ``weights`` (per value; default: the
    frequencies of ``values`` plus one), :func:`eligible_counterfeits`.  Returns group specs ``[(row, value),
    ...]`` (``row = -1``: counterfeit)."""
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return []
    values = np.asarray(values, dtype=np.int64)
    by_key = key is not None
    key = values if key is None else np.asarray(key, dtype=np.int64)
    n_keys = max(int(key.max()) + 1, n_values if not by_key else len(key_values or {}))
    w = (np.bincount(values, minlength=n_values) + 1.0) if weights is None else np.asarray(weights, np.float64)
    key_w = w[:n_keys] if not by_key else np.array([sum(w[v] for v in (key_values or {}).get(k, [k]))
                                                   for k in range(n_keys)], dtype=np.float64)
    fake_keys = eligible_counterfeits(key, n_keys, m, rng=rng, weights=key_w)
    fake_vals = []
    for k in fake_keys:
        if by_key:
            choices = np.asarray(list((key_values or {}).get(k, [k])), dtype=np.int64)
            fake_vals.append(int(rng.choice(choices, p=w[choices] / w[choices].sum())))
        else:
            fake_vals.append(int(k))
    fake_src = rng.integers(0, len(rows), size=len(fake_keys)) if fake_keys else np.zeros(0, np.int64)
    all_rows = np.concatenate([rows, np.full(len(fake_keys), -1, dtype=np.int64)])
    all_keys = np.concatenate([key, np.asarray(fake_keys, dtype=np.int64)])
    all_vals = np.concatenate([values, np.asarray(fake_vals, dtype=np.int64)])
    all_codes = np.concatenate([codes[rows], codes[rows[fake_src]]]) if len(fake_keys) else codes[rows]
    principle = Principle(k=m, alpha=1.0 / m)
    try:
        parts = mondrian_partition(all_codes, all_keys, attrs, principle) if attrs else [np.arange(len(all_rows))]
    except InputError:
        parts = [np.arange(len(all_rows))]
    out: list[GroupSpec] = []
    for part in parts:
        for g in unique_groups(part, all_keys[part], m, rng):
            out.append([(int(all_rows[p]), int(all_vals[p])) for p in g])
    return out


def _is_sorted(a: np.ndarray) -> bool:
    return bool(len(a) < 2 or (np.diff(a) > 0).all())


class MInvariance(PublisherBase):
    """m-invariant re-publication (Xiao & Tao), with the count of records internal updates make invalid.

    Parameters
    ----------
    m : int >= 2
        Every QI-group of every release is m-unique: at least ``m`` rows, all with distinct sensitive values
        (Xiao & Tao Definition 2), so that one group gives a record a chance of at most ``1/m`` for any value.
    uid : bool, default False
        Publish a ``uid`` column.  The QI-groups are then kept as cohorts (:mod:`publishers.m_invariance._cohorts`) so
        that m-invariance also holds against Barbosa et al.'s record-tracking adversary.

    Every release is checked before it is returned (:mod:`publishers.m_invariance._guarantee`): m-uniqueness, signature
    invariance of every record whose lifespan continues, the update-graph attack under persistent values on the
    records linked by identity (and by uid), and with ``uid`` the cohort invariant and the intersection attack.
    When the scenario has a public update model (bound by the pipeline, :meth:`bind_transitions`), the
    declared ``update_graph`` requirement is also checked as the pipeline judges it: population linkage, that
    model, the *whole* sequence so far (its releases and snapshots kept in the private state,
    :func:`publishers.m_invariance._guarantee.sequence_check`) - the pairwise identity check misses an update outside
    the model (tests/publishers/test_guarantee_holes.py).  A release that fails is refused (:class:`InputError`, one
    line).
    """

    name = "m_invariance"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ('Xiao & Tao, "m-Invariance" (SIGMOD 2007; reference [4] of Li & Zhou, papers/000): '
             "m-uniqueness Definition 2, "
             "m-invariance Definition 4; record tracking Barbosa et al. section 4 (papers/003)")
    params = {"m": Interval(int, 2, None), "uid": Boolean()}
    required = ("m",)
    defaults = {"uid": False}
    #: the requirement lines certification judges (:meth:`PublisherBase.guarantee_requirements`); the publisher
    #: itself checks each release as :attr:`guarantee_checks` lists, on the last two releases
    guarantee = ("update_graph.vulnerable_values == 0", ("intersection.violations == 0", "uid"))
    #: how the guarantee is checked: (check, source, requirement); ``definition`` checks are written from the
    #: paper's definition, the others are attacks of the registry run on the last two releases
    guarantee_checks = (
        ("m_unique", "definition", "every QI-group has >= m rows with distinct values (Xiao & Tao Def. 2)"),
        ("signature_invariance", "definition", "a continuing record keeps its signature (Xiao & Tao Def. 4)"),
        ("update_graph", "attack", "vulnerable_values == 0 and inconsistent == 0 (persistent values)"),
        ("cohorts", "definition", "uid: a group's uids are all new or one previous group's (Barbosa sec. 4)"),
        ("intersection", "attack", "uid: violations == 0 with k = m, l = m (Barbosa sec. 4)"),
    )

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = self.published_attributes(snapshot, attributes, need_sensitive=True)
        m = self.config["m"]
        state = dict(state or {})
        quasi = [n for n in attributes if schema[n].is_quasi]
        attrs = [schema[n] for n in quasi]
        codes = snapshot.qi_codes[:, [list(schema.quasi).index(n) for n in quasi]]
        # one value dictionary across releases: the signature's values plus this snapshot's
        known = list(state.get("values", []))
        for v in pd.unique(pd.Series(snapshot.sensitive, dtype=object)):
            if v not in known:
                known.append(v)
        sens = [n for n in attributes if schema[n].is_sensitive]
        # counterfeits may take the domain's other values (a sensitive attribute without a hierarchy has none)
        if len(known) < m and len(sens) == 1 and schema[sens[0]].hierarchy is not None:
            known += [v for v in schema[sens[0]].hierarchy.leaves if v not in known]
        vindex = {v: i for i, v in enumerate(known)}
        names = np.asarray(known, dtype=object)
        vals = np.fromiter((vindex[v] for v in snapshot.sensitive), dtype=np.int64, count=len(snapshot))
        signature: dict[str, list] = state.get("signature", {})
        ids = [str(i) for i in snapshot.ids]
        invalid = sum(1 for r, pid in enumerate(ids) if pid in signature and names[vals[r]] not in signature[pid])
        prev = PrivateRows.from_state(state)
        if prev is None and state.get("releases"):
            raise InputError(f"{self.name}: the publisher state has no rows of the previous release (an older "
                             f"version's state): the guarantee cannot be checked")
        if self.config["uid"]:
            groups, uids, continuing = self._cohort_groups(prev, ids, vals, vindex, codes, attrs, len(names), rng)
        else:
            groups, continuing = self._bucket_groups(signature, ids, vals, vindex, codes, attrs, len(names), rng)
            uids = None
        release, truth, cf = publish_groups(snapshot, attributes, groups, names, rng, uids)
        rows = PrivateRows.of(release, truth)
        self._check(schema, prev, rows, continuing, known, int(state.get("releases", 0)))
        history = extend_history(state, release, snapshot)
        if self.__dict__.get("_public_model") is not None:
            sequence_check(self.name, history[:-1] if history else None, release, snapshot, self._public_model)
        # next state: every published record's signature is its group's set of values
        new_sig = {}
        gvals: dict[int, set] = {}
        for g, v in zip(release.group, release.sensitive):
            gvals.setdefault(int(g), set()).add(v)
        for g, p in zip(release.group, truth.person):
            if p is not None:
                new_sig[p] = sorted(gvals[int(g)])
        prev_stats = state.get("stats", {})
        stats = {"invalid": invalid, "invalid_total": int(prev_stats.get("invalid_total", 0)) + invalid,
                 "counterfeits": int(sum(cf.values())), "groups": int(release.n_classes)}
        new_state = {"releases": int(state.get("releases", 0)) + 1, "values": known, "signature": new_sig,
                     "stats": stats, "rows": rows.state(), "history": history}
        return PublishResult(release=release, truth=truth, state=new_state, counterfeit_rows=int(sum(cf.values())))

    #: the scenario's public update model, bound by the pipeline (:meth:`bind_transitions`)
    uses_transitions = True

    def bind_transitions(self, model: TransitionModel | None) -> None:
        """The adversary's public update model (the scenario's ``transitions``): with it, every release is also
        checked by the update-graph attack over the whole sequence under that model
        (:func:`publishers.m_invariance._guarantee.sequence_check`); m-invariance itself does not use it."""
        self.__dict__["_public_model"] = model

    def _check(self, schema, prev: PrivateRows | None, rows: PrivateRows, continuing: set, known: list,
               release_no: int) -> None:
        """The guarantee of :attr:`guarantee_checks` on the release about to be returned, or a refusal."""
        m = self.config["m"]
        check_m_unique(self.name, rows, m)
        if prev is None:
            return
        check_signature_invariance(self.name, prev, rows, continuing)
        if self.config["uid"]:
            check_cohorts(self.name, prev, rows)
        before = {p for p in prev.person if p is not None}
        rename = {p: f"{p}~lifespan{release_no + 1}" for p in rows.person
                  if p is not None and p in before and p not in continuing}
        persistent = TransitionModel.from_candidates(known, {v: [v] for v in known})
        attack_checks(self.name, schema, prev, rows, persistent, m, rename=rename, published_uid=self.config["uid"])

    def _cohort_groups(self, prev, ids, vals, vindex, codes, attrs, n_values, rng):
        """``uid: true``: the previous groups continue as cohorts (a slot keeps its value: a record whose value
        changed, or that left, leaves a ghost); the other records form new cohorts with fresh uids."""
        m = self.config["m"]
        taken = set(prev.uid or []) if prev is not None else set()
        if prev is not None and prev.uid is None:
            raise InputError(f"{self.name} with uid: true cannot continue a sequence published without uids")
        if prev is not None:
            co = continue_cohorts(prev, ids, vals, vindex, lambda old, new: old == new, None, rng)
        else:
            co = Cohorts()
        rest = np.asarray(sorted(set(range(len(ids))) - co.placed), dtype=np.int64)
        new = new_record_groups(codes, attrs, rest, vals[rest], n_values, m, rng,
                                weights=np.bincount(vals, minlength=n_values) + 1.0)
        groups = co.groups + new
        uids = co.uids + [fresh_uids(len(g), rng, taken) for g in new]
        continuing = {ids[r] for r in co.placed}
        return groups, uids, continuing

    def _bucket_groups(self, signature, ids, vals, vindex, codes, attrs, n_values, rng):
        """The four phases of the module docstring; returns the group specs and the records whose lifespan
        continues (their value is in their signature)."""
        m = self.config["m"]
        # 1. division
        buckets: dict[tuple, dict[int, list[int]]] = {}
        new_rows: list[int] = []
        continuing = set()
        value_list = vals.tolist()
        sig_index: dict[tuple, tuple] = {}  # a signature's values -> its sorted value indices (once per signature)
        for r, pid in enumerate(ids):
            sig = signature.get(pid)
            if sig is None:
                new_rows.append(r)
                continue
            key = tuple(sig)
            sig_t = sig_index.get(key)
            if sig_t is None:
                sig_t = sig_index[key] = tuple(sorted(vindex[v] for v in sig))
            v = value_list[r]
            if v not in sig_t:
                new_rows.append(r)
                continue
            continuing.add(pid)
            buckets.setdefault(sig_t, {x: [] for x in sig_t})[v].append(r)
        # 2. balancing: new records fill the gaps, counterfeits the rest
        pool: dict[int, list[int]] = {}
        for r in rng.permutation(np.asarray(new_rows, dtype=np.int64)) if new_rows else []:
            pool.setdefault(int(vals[r]), []).append(int(r))
        entries_of: list[tuple[tuple, list[list[int]]]] = []
        fake_value: dict[int, int] = {}
        next_fake = -1
        for sig_t in sorted(buckets):
            b = buckets[sig_t]
            delta = max(len(x) for x in b.values())
            entries = []
            for v in sig_t:
                lst = b[v]
                while len(lst) < delta and pool.get(v):
                    lst.append(pool[v].pop())
                while len(lst) < delta:
                    lst.append(next_fake)
                    fake_value[next_fake] = v
                    next_fake -= 1
                entries.append(lst)
            entries_of.append((sig_t, entries))
        # 4. split (balanced buckets)
        groups: list[GroupSpec] = []
        # every bucket's splits at once (the same leaves as balanced_split, bucket by bucket)
        for leaves in balanced_split_many([entries for _, entries in entries_of], codes):
            for leaf in leaves:
                delta = len(leaf[0])
                for k in range(delta):
                    groups.append([(r, value_list[r]) if r >= 0 else (-1, fake_value[r]) for r in
                                   (e[k] for e in leaf)])
        # 3. assignment of the remaining new (and invalid) records
        rest = np.sort(np.asarray([r for lst in pool.values() for r in lst], dtype=np.int64))
        groups.extend(new_record_groups(codes, attrs, rest, vals[rest], n_values, m, rng,
                                        weights=np.bincount(vals, minlength=n_values) + 1.0))
        return groups, continuing
