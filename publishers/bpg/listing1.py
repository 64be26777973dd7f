"""The tests of Listing 1 of Barbosa, Pinto, Gomes (CIKM 2012, section 6; ``003_9c5f9a30c53bd642.txt``): every
class ``E1`` of a release against every stored neighbourhood ``E0 = db[nu0]`` of its records, and the
invariant's repair of what a neighbourhood leaves unpublished.  :mod:`publishers.bpg.postprocessor` calls them in order:

* :func:`listing1` - lines 7-33: ``P(E1 - E0)`` else reject ``E1`` (line 12); ``P(E0 - E1)`` else add
  ``E0^-`` (the records of ``E0`` not published so far) to ``E1`` (line 15); ``P(E0 n E1)`` else add ``E0^-`` if
  that makes it valid, or reject (lines 20-22); a rejected class's records are not published (lines 30-33).
  The tests of every pair are computed at once from counts (:func:`pair_tests`); a class is looked at only
  when one fails, from sizes and value bitmasks (:func:`_listing1_counts`), or on its records
  (:func:`_listing1_records`, for the ``one_at_a_time`` variant, which needs the records' regions);
* :func:`settle_leftovers` - the invariant (section 6, "Analysis"): a neighbourhood's unpublished remainder
  must be valid or empty;
* :func:`new_neighbourhoods` - lines 34-35: the published records of ``E1 n E0`` move to ``nu0 n nu1``.

Positions are those of the publisher's *universe* (every stored record, then the release's new records and
counterfeits).  ``P`` is k-anonymity and distinct l-diversity, monotone (Definition 3).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["SetTest", "Neighbourhoods", "listing1", "pair_tests", "settle_leftovers", "new_neighbourhoods"]


class SetTest:
    """``P(X)`` of a set of universe positions: empty (nothing is exposed), or at least ``k`` records holding at
    least ``l`` distinct sensitive values (``codes``: the universe's sensitive value codes)."""

    def __init__(self, codes: np.ndarray, k: int, l: float):
        self.codes, self.k, self.l = codes, k, l

    def __call__(self, idx: np.ndarray) -> bool:
        if len(idx) == 0:
            return True
        if len(idx) < self.k:
            return False
        return self.l <= 1 or len(set(self.codes[idx].tolist())) >= self.l


@dataclass(eq=False)
class Neighbourhoods:
    """The stored neighbourhoods of the universe's records: ``ids`` ascending, ``sizes``, ``members`` (id ->
    positions) and ``index`` (per position, the index in ``ids`` of its neighbourhood, ``-1`` for none)."""

    ids: np.ndarray
    sizes: np.ndarray
    members: dict
    index: np.ndarray

    @classmethod
    def of(cls, nbh: np.ndarray) -> "Neighbourhoods":
        """From every position's neighbourhood id (``-1``: none)."""
        has = np.flatnonzero(nbh >= 0)
        nb_sorted = has[np.argsort(nbh[has], kind="stable")]
        nb_ids, nb_start = np.unique(nbh[nb_sorted], return_index=True)
        members = dict(zip(nb_ids.tolist(), np.split(nb_sorted, nb_start[1:]) if len(nb_start) else []))
        sizes = np.diff(np.r_[nb_start, len(nb_sorted)]).astype(np.int64)
        index = np.full(len(nbh), -1, dtype=np.int64)
        index[nb_sorted] = np.repeat(np.arange(len(nb_ids), dtype=np.int64), sizes)
        return cls(nb_ids, sizes, members, index)


def _value_counts(group: np.ndarray, value: np.ndarray, n_groups: int, n_values: int):
    """``(count, distinct)``: ``count(g, v)`` the number of rows with group ``g`` and value ``v`` (arrays),
    ``distinct`` the number of distinct values of every group (a dense table when small, else sorted keys)."""
    keys = group.astype(np.int64) * n_values + value
    if n_groups * n_values <= 1 << 22:
        dense = np.bincount(keys, minlength=n_groups * n_values)
        distinct = np.count_nonzero(dense.reshape(n_groups, n_values), axis=1)
        return (lambda g, v: dense[g * n_values + v]), distinct
    uniq, cnt = np.unique(keys, return_counts=True)
    distinct = np.bincount(uniq // n_values, minlength=n_groups)
    return (lambda g, v: cnt[np.searchsorted(uniq, g * n_values + v)]), distinct


def listing1(classes: list[np.ndarray], nbh: np.ndarray, pub: np.ndarray, nb: Neighbourhoods,
                 sens_codes: np.ndarray, k: int, l: float, variant: str, qi: np.ndarray) -> list[np.ndarray]:
    """Lines 7-33 of Listing 1 for every class in order; returns the accepted classes (with the records added to
    them) and updates ``pub``, the published flags of the universe (lines 5-6 set them for every class)."""
    pairs = pair_tests(classes, nb, sens_codes, k, l)
    if pairs["masks"] and variant != "one_at_a_time":
        return _listing1_counts(classes, pairs, nb.members, pub, sens_codes, k, l, variant)
    return _listing1_records(classes, pairs["passes"], nbh, nb.members, pub, SetTest(sens_codes, k, l), variant, qi)


def pair_tests(classes: list[np.ndarray], nb: Neighbourhoods, sens_codes: np.ndarray, k: int, l: float) -> dict:
    """The tests of Listing 1 for every class ``E1`` and every stored neighbourhood ``E0`` of its records
    (a *pair*), on ``E1`` as the generalizer made it, all at once from counts.

    Returns ``passes`` (one bool per class: every test of lines 12, 15 and 20 holds for every pair, so the class
    is published unchanged and changes nothing) and, per pair in class order then neighbourhood order: the
    class ``c``, the neighbourhood id ``nb``, ``|E0 n E1|`` (``cnt``), the tests ``t12``, ``t15``, ``t20`` and,
    when there are at most 62 sensitive values (``masks``), the value bitmasks of ``E0 n E1`` (``mask_a``) and
    of ``E1 - E0`` (``mask_e1``)."""
    v_idx, nb_ids, nb_sizes = nb.index, nb.ids, nb.sizes
    n_cls = len(classes)
    out = {"passes": np.ones(n_cls, dtype=bool), "masks": False, "first": np.zeros(n_cls, dtype=np.int64),
           "last": np.zeros(n_cls, dtype=np.int64), "sizes": [len(c) for c in classes]}
    if not n_cls or not len(nb_ids):
        out["masks"] = True
        return out
    n_s = int(sens_codes.max()) + 1 if len(sens_codes) else 1
    if float(n_cls) * len(nb_ids) * n_s >= 2.0 ** 62:  # keys would overflow: the loop tests every class
        out["passes"][:] = False
        return out
    sizes = np.asarray(out["sizes"], dtype=np.int64)
    rec = np.concatenate(classes).astype(np.int64)
    cid = np.repeat(np.arange(n_cls, dtype=np.int64), sizes)
    s = sens_codes[rec]

    def valid(size, distinct):
        return (size == 0) | ((size >= k) & ((l <= 1) | (distinct >= l)))

    # (class, value) counts; (neighbourhood, value) counts over the whole universe
    cs_count, d1 = _value_counts(cid, s, n_cls, n_s)
    n_v = len(nb_ids)
    has = np.flatnonzero(v_idx >= 0)
    ns_count, d0 = _value_counts(v_idx[has], sens_codes[has], n_v, n_s)
    # (class, neighbourhood, value) counts of the classes' records that have a neighbourhood
    v_rec = v_idx[rec]
    inb = v_rec >= 0
    if not inb.any():
        out["masks"] = True
        return out
    t_keys, t_cnt = np.unique((cid[inb] * n_v + v_rec[inb]) * n_s + s[inb], return_counts=True)
    t_cv, t_s = t_keys // n_s, t_keys % n_s
    t_c, t_v = t_cv // n_v, t_cv % n_v
    # a value is missing from E1 - E0 (E0 - E1) when all its records of E1 (E0) are in E0 n E1
    all_of_c = t_cnt == cs_count(t_c, t_s)
    all_of_v = t_cnt == ns_count(t_v, t_s)
    p_keys, p_start = np.unique(t_cv, return_index=True)
    p_cnt = np.add.reduceat(t_cnt, p_start)          # |E0 n E1|
    p_dist = np.diff(np.r_[p_start, len(t_cv)])       # its distinct values
    p_c, p_v = p_keys // n_v, p_keys % n_v
    t12 = valid(sizes[p_c] - p_cnt, d1[p_c] - np.add.reduceat(all_of_c.astype(np.int64), p_start))
    t15 = valid(nb_sizes[p_v] - p_cnt, d0[p_v] - np.add.reduceat(all_of_v.astype(np.int64), p_start))
    t20 = valid(p_cnt, p_dist)
    out["passes"][p_c[~(t12 & t15 & t20)]] = False
    out["first"] = np.searchsorted(p_c, np.arange(n_cls))
    out["last"] = np.searchsorted(p_c, np.arange(n_cls), side="right")
    out.update(c=p_c, nb=nb_ids[p_v].tolist(), cnt=p_cnt.tolist(), t12=t12.tolist(), t15=t15.tolist(),
               t20=t20.tolist())
    if n_s <= 62:
        bit = np.left_shift(np.int64(1), t_s)
        present = np.zeros((n_cls, n_s), dtype=np.int64)
        present[cid, s] = 1
        cls_mask = present @ np.left_shift(np.int64(1), np.arange(n_s, dtype=np.int64))
        gone_c = np.bitwise_or.reduceat(np.where(all_of_c, bit, 0), p_start)
        out.update(masks=True, mask_a=np.bitwise_or.reduceat(bit, p_start).tolist(),
                   mask_e1=(cls_mask[p_c] & ~gone_c).tolist())
    return out


def _listing1_counts(classes: list[np.ndarray], pairs: dict, nb_members: dict, pub: np.ndarray,
                     sens_codes: np.ndarray, k: int, l: float, variant: str) -> list[np.ndarray]:
    """Lines 7-33 of Listing 1 (variants ``dirty``, ``no_dirty``, ``counterfeits``) from the pair tests of
    :func:`pair_tests`: a test is recomputed (from sizes and value bitmasks) only where the sets changed.

    Within a class the records added so far come from other neighbourhoods than the current ``E0``, so
    ``E0 n E1`` and ``E0 - E1`` are those of the class as generalized, and ``E1 - E0`` is that set plus the
    added records; ``E0^-`` (``E0``'s records not published so far) depends on the classes before."""
    first, last, sizes = pairs["first"].tolist(), pairs["last"].tolist(), pairs["sizes"]
    passes = pairs["passes"].tolist()
    bits = None if all(passes) else np.left_shift(np.int64(1), sens_codes)  # masks: at most 62 values
    nb, cnt, t12, t15, t20 = (pairs.get(x) for x in ("nb", "cnt", "t12", "t15", "t20"))
    mask_a, mask_e1 = pairs.get("mask_a"), pairs.get("mask_e1")
    no_dirty = variant == "no_dirty"

    def valid(size: int, mask: int) -> bool:
        return size == 0 or (size >= k and (l <= 1 or mask.bit_count() >= l))

    accepted = []
    for ci, c in enumerate(classes):
        e1 = np.sort(c)
        if passes[ci]:
            accepted.append(e1)
            continue
        added: list[np.ndarray] = []  # records added to E1 (from E0^- of its neighbourhoods)
        add_size, add_mask = 0, 0
        reject = False
        for j in range(first[ci], last[ci]):
            # line 12: P(E1 - E0)
            if not (valid(sizes[ci] - cnt[j] + add_size, mask_e1[j] | add_mask) if add_size else t12[j]):
                reject = True
                break
            a_size, a_mask = cnt[j], mask_a[j]  # E0 n E1
            if t15[j]:
                ok20 = t20[j]
            else:  # line 15: P(E0 - E1) fails: add E0^- to E1
                if no_dirty:
                    reject = True
                    break
                e0 = nb_members[nb[j]]
                e0m = e0[~pub[e0]]
                if len(e0m):
                    pub[e0m] = True
                    m = int(np.bitwise_or.reduce(bits[e0m]))
                    added.append(e0m)
                    add_size += len(e0m)
                    add_mask |= m
                    a_size += len(e0m)
                    a_mask |= m
                ok20 = valid(a_size, a_mask)
            if not ok20:  # line 20: P(E0 n E1) fails
                if no_dirty:
                    reject = True
                    break
                e0 = nb_members[nb[j]]
                e0m = e0[~pub[e0]]
                m = int(np.bitwise_or.reduce(bits[e0m])) if len(e0m) else 0
                if not valid(a_size + len(e0m), a_mask | m):  # line 22
                    reject = True
                    break
                if len(e0m):
                    pub[e0m] = True
                    added.append(e0m)
                    add_size += len(e0m)
                    add_mask |= m
        if added:
            e1 = np.sort(np.concatenate([e1] + added))
        if reject:  # lines 30-33: sigma' || 1 := sigma(t); sigma(t) := sigma' || 0
            pub[e1] = False
            continue
        accepted.append(e1)
    return accepted


def _listing1_records(classes: list[np.ndarray], passes: np.ndarray, nbh: np.ndarray, nb_members: dict,
                      pub: np.ndarray, ok: SetTest, variant: str, qi: np.ndarray) -> list[np.ndarray]:
    """Lines 7-33 of Listing 1 on the records themselves: every variant (``one_at_a_time`` adds ``E0^-``
    nearest first, :func:`_nearest_prefix`), and every class when the counts of :func:`pair_tests` do not fit
    (more than 62 sensitive values)."""
    accepted = []
    mark = np.zeros(len(pub), dtype=bool)  # scratch membership mask (cheaper than np.isin on small sets)
    for ci, c in enumerate(classes):
        e1 = np.sort(c)
        if passes[ci]:  # every test of lines 12, 15 and 20 holds: nothing to change
            accepted.append(e1)
            continue
        reject = False
        for v0 in np.unique(nbh[e1]).tolist():
            if v0 < 0:
                continue
            e0 = nb_members[v0]
            mark[e0] = True
            in_e0 = mark[e1]
            mark[e0] = False
            if not ok(e1[~in_e0]):  # line 12: P(E1 - E0)
                reject = True
                break
            mark[e1] = True
            in_e1 = mark[e0]
            mark[e1] = False
            if not ok(e0[~in_e1]):  # line 15: P(E0 - E1)
                if variant == "no_dirty":
                    reject = True
                    break
                notpub = ~pub[e0]
                e0m = e0[notpub]
                e1 = np.union1d(e1, e0m)
                pub[e0m] = True
                in_e1 = in_e1 | notpub
            if not ok(e0[in_e1]):  # line 20: P(E0 n E1)
                if variant == "no_dirty":
                    reject = True
                    break
                e0m = e0[~pub[e0]]
                if not ok(np.concatenate([e0[in_e1], e0m])):  # line 22
                    reject = True
                    break
                if variant == "one_at_a_time":
                    e0m = _nearest_prefix(e0[in_e1], e0m, e1, qi, ok)
                e1 = np.union1d(e1, e0m)
                pub[e0m] = True
        if reject:  # lines 30-33: sigma' || 1 := sigma(t); sigma(t) := sigma' || 0
            pub[e1] = False
            continue
        accepted.append(e1)
    return accepted


def _nearest_prefix(cell: np.ndarray, candidates: np.ndarray, e1: np.ndarray, qi: np.ndarray,
                    ok: Callable[[np.ndarray], bool]) -> np.ndarray:
    """The fewest records of ``candidates`` (nearest to ``E1``'s region first) that make ``cell`` valid and
    leave a valid (or empty) remainder (the ``one_at_a_time`` variant of section 6)."""
    if not len(candidates):
        return candidates
    box = qi[e1]
    lo, hi = box.min(axis=0), box.max(axis=0)
    pts = qi[candidates]
    dist = (np.maximum(lo - pts, 0) + np.maximum(pts - hi, 0)).sum(axis=1)
    order = candidates[np.argsort(dist, kind="stable")]
    for m in range(1, len(order) + 1):
        if ok(np.concatenate([cell, order[:m]])) and ok(order[m:]):
            return order[:m]
    return order


def settle_leftovers(accepted: list[np.ndarray], pub: np.ndarray, nb: Neighbourhoods, sens_codes: np.ndarray,
                     k: int, l: float, variant: str) -> list[np.ndarray]:
    """Make every neighbourhood's unpublished remainder valid or empty: add it to a published class that
    holds records of the neighbourhood (dirty records), or reject every such class (``no_dirty``).

    The neighbourhoods are visited in id order, as in a loop over all of them, but only those whose
    remainder is invalid (found for all at once from counts) are looked at.  Adding a remainder changes
    only its own neighbourhood; rejecting classes (``no_dirty``) can change any, so the list is then made
    again for the neighbourhoods after the current one."""
    ok = SetTest(sens_codes, k, l)
    alive = [True] * len(accepted)
    owner = np.full(len(pub), -1, dtype=np.int64)
    for ci, e in enumerate(accepted):
        owner[e] = ci
    has = np.flatnonzero(nb.index >= 0)
    v_has = nb.index[has]
    n_v = len(nb.ids)
    n_s = int(sens_codes.max()) + 1 if len(sens_codes) else 1

    def invalid_remainders() -> list[int]:
        un = ~pub[has]
        v = v_has[un]
        size = np.bincount(v, minlength=n_v)
        bad = (size > 0) & (size < k)
        if l > 1:
            distinct = _value_counts(v, sens_codes[has[un]], n_v, n_s)[1]
            bad |= (size > 0) & (distinct < l)
        return nb.ids[bad].tolist()

    changed = True
    while changed:
        changed = False
        todo = invalid_remainders()
        i = 0
        while i < len(todo):
            v0 = todo[i]
            i += 1
            e0 = nb.members[v0]
            rest = e0[~pub[e0]]
            if not len(rest) or ok(rest):
                continue
            holders = [int(x) for x in np.unique(owner[e0]) if x >= 0 and alive[int(x)]]
            if not holders:
                continue  # the whole neighbourhood is unpublished: valid by the invariant
            if variant == "no_dirty":
                for ci in holders:
                    alive[ci] = False
                    pub[accepted[ci]] = False
                    owner[accepted[ci]] = -1
                todo, i = [x for x in invalid_remainders() if x > v0], 0
            else:
                ci = holders[0]
                accepted[ci] = np.union1d(accepted[ci], rest)
                pub[rest] = True
                owner[rest] = ci
            changed = True
    return [e for e, a in zip(accepted, alive) if a]


def new_neighbourhoods(nbh: np.ndarray, key: np.ndarray, n_old: int, accepted: list[np.ndarray], cls_lo: np.ndarray,
                       cls_hi: np.ndarray, stored, n: int) -> tuple[list, list, list, np.ndarray]:
    """Lines 34-35: one new neighbourhood ``nu0 n nu1`` per (accepted class, old neighbourhood ``nu0`` of its
    records; ``-1``: first-time records, ``nu1``), with the signature of ``nu0`` followed by release ``n``:
    classes in order, old neighbourhoods ascending, records in class order.

    ``nbh`` / ``key``: every position's neighbourhood and record key (positions ``< n_old`` are stored);
    ``cls_lo`` / ``cls_hi``: the published region of every accepted class; ``stored``: the stored
    neighbourhoods' signatures and regions (``nbh_releases``, ``nbh_lo``, ``nbh_hi``).  Returns the new
    neighbourhoods ``(id, signature, lo, hi, size, member keys)``, the ids of the old ones left empty, the old
    ones that lost records ``(size, member keys, id)`` and every position's new neighbourhood."""
    new_nbh = nbh.copy()
    next_id = (max(stored.nbh_releases) + 1) if stored.nbh_releases else 1
    inserts = []
    if accepted:
        sizes_acc = np.fromiter((len(e) for e in accepted), dtype=np.int64, count=len(accepted))
        rec = np.concatenate(accepted).astype(np.int64)
        cid = np.repeat(np.arange(len(accepted), dtype=np.int64), sizes_acc)
        olds = nbh[rec]
        span = int(olds.max()) + 2 if len(olds) else 1
        pair = cid * span + (olds + 1)
        order = np.argsort(pair, kind="stable")
        rec_o, pair_o = rec[order], pair[order]
        starts = np.flatnonzero(np.r_[True, pair_o[1:] != pair_o[:-1]]) if len(pair_o) else np.zeros(0, int)
        counts = np.diff(np.r_[starts, len(pair_o)])
        p_c, p_v = pair_o[starts] // span, pair_o[starts] % span - 1
        ids = next_id + np.arange(len(starts), dtype=np.int64)
        new_nbh[rec_o] = np.repeat(ids, counts)
        lo, hi = cls_lo[p_c].astype(np.int64), cls_hi[p_c].astype(np.int64)
        was = p_v >= 0
        if was.any():  # nu0 n nu1
            q = lo.shape[1]
            w_v = p_v[was].tolist()
            lo[was] = np.maximum(np.array([stored.nbh_lo[v] for v in w_v], dtype=np.int64).reshape(len(w_v), q),
                                 lo[was])
            hi[was] = np.minimum(np.array([stored.nbh_hi[v] for v in w_v], dtype=np.int64).reshape(len(w_v), q),
                                 hi[was])
        blob = key[rec_o].astype("<i8").tobytes()  # the members of every new neighbourhood
        bounds_b = (np.r_[starts, len(pair_o)] * 8).tolist()
        for j, (nid, v0, l_row, h_row) in enumerate(zip(ids.tolist(), p_v.tolist(), lo.tolist(), hi.tolist())):
            rel = stored.nbh_releases[v0] + f",{n}" if v0 >= 0 else str(n)
            inserts.append((nid, rel, l_row, h_row, int(counts[j]), blob[bounds_b[j]:bounds_b[j + 1]]))
    # the old neighbourhoods that lost records: shrunk (new member list) or emptied (deleted)
    moved = np.flatnonzero(new_nbh[:n_old] != nbh[:n_old])
    touched = np.unique(nbh[moved]) if len(moved) else np.zeros(0, dtype=np.int64)
    touched = touched[touched >= 0]
    gone: list[int] = []
    shrunk: list[tuple] = []
    if len(touched):
        left = np.flatnonzero(np.isin(new_nbh, touched))
        left = left[np.argsort(new_nbh[left], kind="stable")]
        k_ids, k_start = np.unique(new_nbh[left], return_index=True)
        kept = dict(zip(k_ids.tolist(), np.split(left, k_start[1:]) if len(k_start) else []))
        gone = [int(t) for t in touched.tolist() if t not in kept]
        shrunk = [(len(kept[t]), key[kept[t]].astype("<i8").tobytes(), int(t)) for t in touched.tolist()
                  if t in kept]
    return inserts, gone, shrunk, new_nbh
