"""The correspondence attack's report from the engines' answers: rows, summary and witnesses (Fung et al., EDBT
2008: F-, C-, B-anonymity, Definitions 3.2, 3.4, 3.6), computed with numpy over every request and target at once.

A request's crack interval is the sum over the groups (sensitive values) of its class; a target's anonymity
for an attack family is the minimum over its candidate classes (:func:`attacks.intervals.min_of_intervals`
read over arrays).  A census certified with every individual a target has 10^5 target rows and as many
questions: one pass of array operations instead of a Python loop per row and per group.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from multirelease.model.release import Release
from solver.correspondence.crack import RequestTable, expand_ranges

from .targets import TargetTable, class_id

__all__ = ["RequestFigures", "TargetRows", "family_cells", "qid_label", "qid_labels", "request_groups"]


def request_groups(nodes, requests, n_values: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The groups of every request's class - ``(owner request, value, records)``, by request then value - and
    every request's class size: what :class:`RequestFigures` reads of the releases, not of the answers (the
    attack computes it while the workers answer)."""
    tab = RequestTable.of(requests)
    m = len(tab)
    t_j, cls = tab.j, tab.cls
    owners, vals, sizes = [], [], []
    size = np.zeros(m, np.int64)
    for l, nd in enumerate(nodes):
        mine = np.flatnonzero(t_j == l + 1)
        if not len(mine):
            continue
        key = nd.cls * n_values + nd.value
        uniq, inv = np.unique(key, return_inverse=True)
        counts = np.bincount(inv.reshape(-1), weights=nd.count, minlength=len(uniq)).astype(np.int64)
        c_of = uniq // n_values
        n_cls = len(nd.class_sizes)
        starts = np.searchsorted(c_of, np.arange(n_cls + 1))
        ok = mine[cls[mine] < n_cls]
        idx, own = expand_ranges(starts[cls[ok]], starts[cls[ok] + 1], ok)
        owners.append(own)
        vals.append(uniq[idx] % n_values)
        sizes.append(counts[idx])
        size[ok] = np.asarray(nd.class_sizes, np.int64)[cls[ok]]
    own = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    val = np.concatenate(vals) if vals else np.zeros(0, np.int64)
    s = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    return own, val, s, size


class RequestFigures:
    """Per request (a class of ``R_j`` against a target's signature): its size, the crack interval summed over
    its groups, the anonymity interval, its number of groups and of groups cracked entirely.

    A group of value ``v`` and ``s`` records whose answer says at most ``high`` (at least ``low``) of them can
    represent the target has crack ``[s - min(s, high), s - min(s, high, low)]``; values without an answer
    count as ``0`` records (cracked entirely).  ``answers``: a list of
    :class:`~solver.correspondence.crack.CrackAnswer`, or exact answers as the arrays ``(request, value,
    best)`` of :meth:`solver.correspondence.flows.TwoReleaseEngine.answer_arrays`."""

    def __init__(self, nodes, requests, answers, n_values: int, groups: tuple | None = None):
        tab = RequestTable.of(requests)
        m = len(tab)
        self.values = n_values
        self.j, self.cls = tab.j, tab.cls
        # answers as arrays sorted by (request, value)
        if isinstance(answers, tuple):
            a_req, a_val, a_high = answers
            a_low = a_high
        else:
            lengths = np.fromiter((len(a.high) for a in answers), np.int64, m)
            a_req = np.repeat(np.arange(m, dtype=np.int64), lengths)
            a_val = np.fromiter((v for a in answers for v in a.high), np.int64, int(lengths.sum()))
            a_high = np.fromiter((x for a in answers for x in a.high.values()), np.int64, len(a_val))
            a_low = np.fromiter((a.low.get(v, 0) for a in answers for v in a.high), np.int64, len(a_val))
        key_a = a_req * n_values + a_val
        if not bool((key_a[1:] >= key_a[:-1]).all()):  # the engines' arrays come sorted
            order = np.argsort(key_a, kind="stable")
            key_a, a_high, a_low = key_a[order], a_high[order], a_low[order]
        own, val, s, self.size = groups if groups is not None else request_groups(nodes, requests, n_values)
        key = own * n_values + val
        pos = np.searchsorted(key_a, key)
        found = pos < len(key_a)
        found[found] = key_a[pos[found]] == key[found]
        high = np.where(found, a_high[np.minimum(pos, max(len(key_a) - 1, 0))] if len(key_a) else 0, 0)
        low = np.where(found, a_low[np.minimum(pos, max(len(key_a) - 1, 0))] if len(key_a) else 0, 0)
        hi = np.minimum(s, high)
        lo = np.minimum(hi, low)
        self.g_owner, self.g_value, self.g_size = own, val, s
        self.g_crack = s - hi  # the group's crack, low end
        self.g_crack_hi = s - lo
        self.crack_lo = np.bincount(own, weights=self.g_crack, minlength=m).astype(np.int64)
        self.crack_hi = np.bincount(own, weights=self.g_crack_hi, minlength=m).astype(np.int64)
        self.anon_lo = self.size - self.crack_hi
        self.anon_hi = self.size - self.crack_lo
        self.n_groups = np.bincount(own, minlength=m).astype(np.int64)
        self.n_cracked = np.bincount(own[self.g_crack >= s], minlength=m).astype(np.int64)

    def groups(self, r: int, values) -> list[tuple[int, int, int, int]]:
        """Request ``r``'s groups ``(value, records, crack low, crack high)``, by the value's text."""
        at = np.flatnonzero(self.g_owner == r)
        out = [(int(self.g_value[i]), int(self.g_size[i]), int(self.g_crack[i]), int(self.g_crack_hi[i]))
               for i in at]
        return sorted(out, key=lambda g: str(values[g[0]]))


def family_cells(fig: RequestFigures, tgt: np.ndarray, req: np.ndarray, rel: np.ndarray, pos: np.ndarray,
                 n_targets: int) -> dict[str, np.ndarray]:
    """Per target with candidates (entries ``(tgt, req, rel)`` of one attack family, ``pos`` their order in the
    target's list): the class attaining the minimal anonymity (ties: the earliest release, then the list
    order), the anonymity interval ``[min low, min high]``, and the crack interval - of that class when every
    class that may attain the minimum is settled, else from the smallest low to the largest high end over
    those classes.  Returns arrays indexed by target (``has`` marks targets with a candidate)."""
    a_lo, a_hi = fig.anon_lo[req], fig.anon_hi[req]
    order = np.lexsort((pos, rel, a_lo, a_hi, tgt))
    first = np.ones(len(order), bool)
    first[1:] = tgt[order][1:] != tgt[order][:-1]
    chosen = order[first]
    who = tgt[chosen]
    has = np.zeros(n_targets, bool)
    has[who] = True
    min_lo = np.full(n_targets, np.iinfo(np.int64).max, np.int64)
    min_hi = np.full(n_targets, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(min_lo, tgt, a_lo)
    np.minimum.at(min_hi, tgt, a_hi)
    possible = a_lo <= min_hi[tgt]
    unsettled = np.zeros(n_targets, bool)
    unsettled[tgt[possible & (a_lo != a_hi)]] = True
    c_lo = np.full(n_targets, np.iinfo(np.int64).max, np.int64)
    c_hi = np.full(n_targets, -1, np.int64)
    np.minimum.at(c_lo, tgt[possible], fig.crack_lo[req[possible]])
    np.maximum.at(c_hi, tgt[possible], fig.crack_hi[req[possible]])
    pick = np.full(n_targets, -1, np.int64)
    pick[who] = req[chosen]
    settled = has & ~unsettled
    c_lo[settled] = fig.crack_lo[pick[settled]]
    c_hi[settled] = fig.crack_hi[pick[settled]]
    return {"has": has, "req": pick, "a_lo": min_lo, "a_hi": min_hi, "c_lo": c_lo, "c_hi": c_hi,
            "possible": possible}


def qid_label(release: Release, leaves) -> dict[str, str]:
    """One target's QI labels (``leaves``: its leaf codes per attribute), as :func:`qid_labels` gives them."""
    if all(len(x) == 1 for x in leaves):
        return {a.name: a.hierarchy.leaves[x[0]] for a, x in zip(release.qi_attributes, leaves)}
    from solver.correspondence.regions import leaf_labels

    return leaf_labels(release, leaves)


def qid_labels(release: Release, targets) -> list[dict[str, str]]:
    """Every target's QI labels: a leaf per attribute (population and given targets), else the cell's label
    (:func:`solver.correspondence.regions.leaf_labels`)."""
    from solver.correspondence.regions import leaf_labels

    attrs = release.qi_attributes
    names = [a.name for a in attrs]
    out: list[Any] = [None] * len(targets)
    if isinstance(targets, TargetTable):  # the population's points, then the given targets
        single = list(range(targets.rows))
        more = [i for i, tg in enumerate(targets.extra, targets.rows) if all(len(x) == 1 for x in tg.leaves)]
        codes = np.concatenate([targets.point.reshape(targets.rows, len(attrs)),
                                np.asarray([[x[0] for x in targets[i].leaves] for i in more],
                                           np.int64).reshape(len(more), len(attrs))]).astype(np.int64)
        single += more
    else:
        single = [i for i, tg in enumerate(targets) if all(len(x) == 1 for x in tg.leaves)]
        codes = np.asarray([[x[0] for x in targets[i].leaves] for i in single], np.int64).reshape(len(single),
                                                                                                     len(attrs))
    if single:
        columns = [np.asarray(a.hierarchy.leaves, dtype=object)[codes[:, k]].tolist() for k, a in enumerate(attrs)]
        for i, labels in zip(single, zip(*columns)):
            out[i] = dict(zip(names, labels))
    for i in range(len(targets)):
        if out[i] is None:
            out[i] = leaf_labels(release, targets[i].leaves)
    return out


def class_ids(releases, rel: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """The published id of class ``cls[k]`` of release ``rel[k]`` (1-based)."""
    out = np.zeros(len(rel), np.int64)
    for l, r in enumerate(releases):
        at = np.flatnonzero(rel == l + 1)
        if len(at):
            class_id(r, 0)  # caches the release's ids
            out[at] = r.__dict__["_correspondence_class_ids"][cls[at]]
    return out


#: rows whose QI labels :class:`TargetRows` computes one by one before it computes every row's
_LABELS_ONE_BY_ONE = 4096


class TargetRows(Sequence):
    """Every target's report row (``qid``, ``timestamp``, individuals, and per attack family its release,
    class, size, crack, anonymity, bounds when open, groups), each built when it is read: a census has 10^5
    targets and its report lists the worst thousand (:func:`~attacks.correspondence.targets.shown_rows`), the
    rest going to ``--targets-file`` only - building them all took 0.4 s of the main process (issue 28).  Row
    ``i`` is the same dict whenever it is built; a sequence of rows equals another with the same rows.

    ``cells[fam]``: the family's per-target arrays ``has``, ``req``, ``id``, ``a_lo``, ``a_hi``, ``c_lo``,
    ``c_hi``, ``open`` (:func:`family_cells`); ``arrays``: the targets' ``t``, ``people``, ``weight``,
    ``given``; ``fig``: the requests' figures; ``release``: the first release (its QI attributes name the
    targets' points)."""

    def __init__(self, release: Release, targets, arrays: dict, cells: dict, fig: RequestFigures,
                 families: Sequence[str]):
        self._release, self._targets = release, targets  # the QI labels: of each row read, then of all at once
        self._labels: list | None = None
        self._read = 0
        self._arrays = arrays
        self._cells = {fam: cells[fam] for fam in families}
        self._fig = fig
        self._n = len(arrays["t"])

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        i = int(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        a = self._arrays
        row: dict[str, Any] = {"qid": self._label(i), "timestamp": int(a["t"][i])}
        if a["people"][i]:
            row["individuals"] = int(a["people"][i])
            row["points"] = int(a["weight"][i])
        if a["given"][i]:
            row["target"] = int(a["given"][i])
        fig = self._fig
        for fam, c in self._cells.items():
            if not c["has"][i]:
                continue
            r = int(c["req"][i])
            c_lo, a_hi = int(c["c_lo"][i]), int(c["a_hi"][i])
            cell = {"release": int(fig.j[r]), "class": int(c["id"][i]), "size": int(fig.size[r]), "crack": c_lo,
                    "anonymity": a_hi}
            if c["open"][i]:
                cell["crack_bounds"] = [c_lo, int(c["c_hi"][i])]
                cell["anonymity_bounds"] = [int(c["a_lo"][i]), a_hi]
            # counts only: a class of composite sensitive values has up to thousands of groups, and listing
            # them in every row made the Adult Sen3 report 750 MB (``worst`` lists them for its class)
            cell["groups"] = int(fig.n_groups[r])
            cell["groups_cracked"] = int(fig.n_cracked[r])
            row[fam] = cell
        return row

    def _label(self, i: int) -> dict[str, str]:
        """Row ``i``'s QI labels: one by one for the rows a report shows (the census's 10^5 targets' labels
        took 0.1 s of the main process to show a thousand), every row's at once when more are read (the
        ``--targets-file``)."""
        if self._labels is None:
            self._read += 1
            if self._read <= _LABELS_ONE_BY_ONE:
                return qid_label(self._release, self._targets[i].leaves)
            self._labels = qid_labels(self._release, self._targets)
        return self._labels[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(x == y for x, y in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TargetRows({self._n} rows)"
