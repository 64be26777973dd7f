"""Targets of the correspondence attack (Fung, Wang, Fu, Pei, EDBT 2008) and their crack questions.

A target is a QI point with a timestamp ``T_t`` (the release in which the individual first appears): given
ones (the ``targets`` parameter, Fung et al.'s examples), else every individual of the population with the
timestamp of its first snapshot (the certification case), else every target the published regions allow -
one per *signature* (the set of published regions containing the point, :func:`solver.correspondence.regions.atoms`) and
timestamp.  :func:`requests_of` turns them into the crack questions of :mod:`solver.correspondence.crack`: for every
``j >= t``, each class of ``R_j`` holding a region that contains the target.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence as SequenceABC
from typing import Any, Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.model.release import Release, first_appearances
from multirelease.model.sequence import SequenceView

from attacks.base import AttackResult

__all__ = ["CorrespondenceResult", "Entries", "Target", "TargetTable", "base_targets", "class_id", "given_targets",
           "has_population", "parse_targets", "population_points", "requests_of", "shown_rows", "target_arrays"]


@dataclass(frozen=True)
class CorrespondenceResult(AttackResult):
    """An :class:`~attacks.base.AttackResult` holding every target's row (``targets``, written whole by
    ``--targets-file``: :mod:`multirelease.reports.targets_file`) whose report lists the rows ``shown`` only (the
    worst ones of a large population: a report does not grow with the table)."""

    shown: tuple | None = field(default=None, compare=False, repr=False)

    def shown_targets(self) -> list:
        if self.shown is None:
            return list(self.targets)
        return [self.targets[i] for i in self.shown]  # only these rows are built


@dataclass
class Target:
    """A target: its QI point (leaf codes), the leaves it stands for, its timestamp and its signature (per
    release, the regions containing it)."""

    point: tuple[int, ...]
    leaves: tuple[tuple[int, ...], ...]
    t: int
    signature: tuple
    given: int | None = None  # 1-based position in the ``targets`` parameter
    people: int = 0  # individuals of the population behind this target
    weight: int = 1  # distinct (point, timestamp) targets of the population this one stands for


class TargetTable(SequenceABC):
    """The population's targets as arrays (issue 28: a census has 10^5 of them): target ``i`` has QI point
    ``point[i]`` (a leaf code per attribute, so its leaves are single), timestamp ``t[i]``, signature
    ``tuple(sets[x] for x in sig[i])``, ``people[i]`` individuals and weight ``weight[i]``; the ``extra``
    targets (given ones, as :class:`Target`) follow.  A sequence of :class:`Target`, each made when asked for;
    :func:`requests_of` and the report read the arrays."""

    def __init__(self, point: np.ndarray, t: np.ndarray, sig: np.ndarray, sets: Sequence[frozenset],
                 people: np.ndarray, weight: np.ndarray, extra: Sequence[Target] = ()):
        self.point, self.t, self.sig, self.sets = point, t, sig, list(sets)
        self.people, self.weight, self.extra = people, weight, list(extra)
        self.rows = int(len(t))

    def __len__(self) -> int:
        return self.rows + len(self.extra)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        if i >= self.rows:
            return self.extra[i - self.rows]
        point = tuple(self.point[i].tolist())
        return Target(point=point, leaves=tuple((c,) for c in point), t=int(self.t[i]),
                      signature=tuple(self.sets[x] for x in self.sig[i].tolist()), people=int(self.people[i]),
                      weight=int(self.weight[i]))

    def __add__(self, other: Sequence[Target]) -> "TargetTable":
        return TargetTable(self.point, self.t, self.sig, self.sets, self.people, self.weight,
                           [*self.extra, *other])


def target_arrays(targets: Sequence[Target]) -> dict[str, np.ndarray]:
    """``t``, ``weight``, ``people`` and ``given`` (0 for the population's) of every target, as arrays."""
    m = len(targets)
    if isinstance(targets, TargetTable):
        extra = targets.extra
        return {"t": np.concatenate([targets.t, [tg.t for tg in extra]]).astype(np.int64),
                "weight": np.concatenate([targets.weight, [tg.weight for tg in extra]]).astype(np.int64),
                "people": np.concatenate([targets.people, [tg.people for tg in extra]]).astype(np.int64),
                "given": np.concatenate([np.zeros(targets.rows, np.int64),
                                         [tg.given or 0 for tg in extra]]).astype(np.int64)}
    return {"t": np.fromiter((tg.t for tg in targets), np.int64, m),
            "weight": np.fromiter((tg.weight for tg in targets), np.int64, m),
            "people": np.fromiter((tg.people for tg in targets), np.int64, m),
            "given": np.fromiter((tg.given or 0 for tg in targets), np.int64, m)}


def parse_targets(spec: Any, *, file: str | None, key: str) -> list[tuple[dict, int]]:
    """The ``targets`` parameter as ``[(qid, timestamp)]`` (empty when absent); bad input names its key."""
    if spec is None:
        return []
    if not isinstance(spec, list) or not spec:
        raise InputError("targets must be a non-empty list of {qid: {attribute: value}, timestamp: i}", file=file,
                         key=key)
    out = []
    for i, item in enumerate(spec):
        k = f"{key}[{i}]"
        if not isinstance(item, Mapping) or set(item) - {"qid", "timestamp"} or "qid" not in item:
            raise InputError("each target is {qid: {attribute: value}, timestamp: i}", file=file, key=k)
        qid = item["qid"]
        if not isinstance(qid, Mapping) or not qid:
            raise InputError("qid must map quasi-identifiers to raw values", file=file, key=f"{k}.qid")
        t = item.get("timestamp", 1)
        if not isinstance(t, int) or isinstance(t, bool) or t < 1:
            raise InputError(f"timestamp must be an integer >= 1, got {t!r}", file=file, key=f"{k}.timestamp")
        out.append(({str(a): v for a, v in qid.items()}, t))
    return out


def given_targets(view: SequenceView, nodes, given: list[tuple[dict, int]]) -> list[Target]:
    """The targets of the ``targets`` parameter (parsed by :func:`parse_targets`), with their signatures."""
    from solver.correspondence.regions import point_signatures

    releases = view.releases
    n = len(releases)
    quasi = releases[0].quasi
    if given:
        pts, ts = [], []
        for idx, (qid, t) in enumerate(given, 1):
            missing = [a for a in quasi if a not in qid]
            unknown = [a for a in qid if a not in quasi]
            if unknown or missing:
                bad = unknown[0] if unknown else missing[0]
                raise InputError(f"target {idx}: attribute '{bad}' " + ("is not a published quasi-identifier"
                                 if unknown else "is missing (give every quasi-identifier)"),
                                 key=f"targets[{idx - 1}].qid")
            if not 1 <= t <= n:
                raise InputError(f"target {idx}: timestamp must be in 1..{n}, got {t}",
                                 key=f"targets[{idx - 1}].timestamp")
            try:
                pts.append([view.schema[a].hierarchy.code(qid[a]) for a in quasi])
            except InputError as exc:
                raise InputError(f"target {idx}: {exc.problem}", key=f"targets[{idx - 1}].qid") from None
            ts.append(t)
        sigs = point_signatures(nodes, np.asarray(pts))
        return [Target(point=tuple(p), leaves=tuple((c,) for c in p), t=t, signature=tuple(s), given=i)
                for i, (p, t, s) in enumerate(zip(pts, ts, sigs), 1)]
    return []


def has_population(view: SequenceView) -> bool:
    """The view's targets are its population's individuals: it has a snapshot for every release."""
    pop = view.population
    return getattr(view, "targets", "population") == "population" and len(pop) == len(view.releases) and all(
        p is not None for p in pop)


def base_targets(view: SequenceView, nodes, notes: list[str], *, aggregate: bool = True,
                 points: tuple | None = None) -> list[Target]:
    """The population's targets when the view has one for every release, else every target the published
    regions allow (an atom and a timestamp).

    Population targets are aggregated: every distinct QI point of an individual, with its timestamp (the
    first snapshot holding the individual), is a target of Fung et al.; what the adversary can say about it
    depends only on its signature and timestamp (:mod:`solver.correspondence.crack`), so the points sharing both
    make one :class:`Target` with ``weight`` = their number and ``people`` = their individuals.  Its ``point`` is the
    first of them in lexicographic order of ``(point, timestamp)``, and targets are in that order, so the
    first target attaining a minimum is the one the per-point computation picks.  ``aggregate=False``: one
    target per point (the tests' reference).  ``points``: the view's :func:`population_points`, when they were
    computed already."""
    from solver.correspondence.regions import atoms

    releases = view.releases
    n = len(releases)
    if has_population(view):
        return _population_targets(view, nodes, notes, aggregate, points)
    sizes = [a.domain_size for a in releases[0].qi_attributes]
    out = []
    for atom in atoms(nodes, sizes):
        for t in range(1, n + 1):
            if all(atom.signature[l] for l in range(t - 1, n)):
                out.append(Target(point=atom.point, leaves=atom.leaves, t=t, signature=atom.signature))
    return out


def _arrow_integers(texts: Sequence) -> np.ndarray | None:
    """The identifiers of ``texts`` (pyarrow text arrays, one after the other) as int64 when every one is an
    integer written as pyarrow writes it (the records of a file without an identifier column are numbered
    so): cast, then written back, the integers give the very text - no two identifiers (``1``, ``01``) read
    as one number; else ``None``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pa.concat_arrays(texts)
    try:
        numbers = pc.cast(joined, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return numbers.to_numpy() if pc.cast(numbers, joined.type).equals(joined) else None


def _id_codes(indexes: Sequence) -> np.ndarray:
    """The identifiers of all ``indexes`` (one after the other) numbered ``0..`` in order of first appearance:
    one pyarrow dictionary encoding where they hold text in pyarrow (pandas' ``str`` dtype) - or, when every
    identifier is an integer written as pyarrow writes it (:func:`_arrow_integers`), one factorization of
    those integers, a third of the time on the census of issue 28 - else one pandas factorization."""
    import pandas as pd

    from multirelease.model.table import arrow_text

    texts = [arrow_text(ix) for ix in indexes]
    if all(t is not None for t in texts):
        import pyarrow as pa
        import pyarrow.compute as pc

        numbers = _arrow_integers(texts)
        if numbers is not None:
            return pd.factorize(numbers)[0].astype(np.int64, copy=False)
        return pc.dictionary_encode(pa.concat_arrays(texts)).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return pd.factorize(np.concatenate([np.asarray(ix, dtype=object) for ix in indexes]))[0]


def _first_of_numbers(parts: Sequence[np.ndarray]) -> np.ndarray | None:
    """Per integer identifier of the snapshots ``parts`` (one after the other), whether it appears for the first
    time: one pass over a table of the identifiers' span marking those seen, no hashing - or ``None`` when the
    span is more than four times the identifiers (sparse ones), or a snapshot holds an identifier twice."""
    total = sum(len(p) for p in parts)
    if not total:
        return np.ones(0, dtype=bool)
    lo = min(int(p.min()) for p in parts if len(p))
    span = max(int(p.max()) for p in parts if len(p)) - lo + 1
    if span > 4 * total + 1024:
        return None
    seen = np.zeros(span, dtype=bool)
    out, new = [], 0
    for p in parts:
        at = p - lo
        keep = ~seen[at]
        seen[at] = True
        new += int(keep.sum())
        out.append(keep)
    if int(np.count_nonzero(seen)) != new:  # an identifier twice within one snapshot: marked new twice
        return None
    return np.concatenate(out)


def first_seen(tables: Sequence) -> np.ndarray:
    """Per record of the snapshots ``tables`` (one after the other), whether its identifier appears for the
    first time: from the integers the identifiers are known to be (:attr:`Table.id_runs`: records numbered
    by the tool, no identifier read) or read as (:func:`_arrow_integers`) when :func:`_first_of_numbers`
    applies (else those integers factorized), else from :func:`_id_codes`."""
    import pandas as pd

    from multirelease.model.table import arrow_text

    runs = [getattr(t, "id_runs", None) for t in tables]
    numbers = None
    if all(r is not None for r in runs):
        numbers = [np.concatenate([np.arange(a, a + c, dtype=np.int64) for a, c in r] or [np.zeros(0, np.int64)])
                   for r in runs]
    else:
        texts = [arrow_text(t.frame.index) for t in tables]
        if texts and all(x is not None for x in texts):
            joined = _arrow_integers(texts)
            if joined is not None:
                numbers = np.split(joined, np.cumsum([len(t) for t in tables])[:-1])
    if numbers is None:
        return first_appearances(_id_codes([t.frame.index for t in tables]))
    first = _first_of_numbers(numbers)
    if first is None:  # sparse integers, or one twice in a snapshot: factorized, as _id_codes would
        first = first_appearances(pd.factorize(np.concatenate(numbers))[0])
    return first


def population_points(view: SequenceView) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the population's targets are made of before any release is read (so that ``Correspondence.run``
    computes it while the releases are aggregated, issue 28): every individual once, at the first snapshot
    holding it, as ``keys`` (its QI leaf codes and that timestamp; distinct, sorted by point then timestamp)
    with their ``counts`` of individuals, and the distinct points ``pts`` with each key's point ``inv``.

    Each record's leaf codes and timestamp are packed into one int64 by their known ranges (the leaves of each
    quasi-identifier, the snapshots), so that one sort of integers finds the distinct keys and their counts,
    and the points are read off the sorted keys (on the census of issue 28: 0.15 s instead of 0.55 s, run
    beside the metrics' tasks); a schema too wide to pack takes the sort of rows."""
    quasi = view.releases[0].quasi
    cols = [list(view.schema.quasi).index(a) for a in quasi]
    q = len(cols)
    radices = [view.schema[a].hierarchy.n_leaves for a in quasi] + [len(view.population) + 1]
    # the ids of all snapshots numbered in order of first appearance (one hash factorization), a row kept
    # where its number is new
    first = first_seen(view.population)
    if int(np.prod(np.array(radices, dtype=float))) >= _PACK_LIMIT:
        return _points_by_rows(view, first, cols)
    parts = []
    for t, codes, keep in _new_records(view, first):
        every = bool(keep.all())
        key = np.zeros(int(keep.sum()), dtype=np.int64)
        for radix, c in zip(radices, cols):
            key *= radix
            key += codes[:, c] if every else codes[keep, c]
        key *= radices[-1]
        key += t
        parts.append(key)
    packed, counts = np.unique(np.concatenate(parts) if parts else np.zeros(0, np.int64), return_counts=True)
    del parts, first
    keys = np.empty((len(packed), q + 1), dtype=np.int64)
    rest = packed.copy()
    for j in range(q, -1, -1):  # the packed key read back, last column first
        keys[:, j] = rest % radices[j]
        rest //= radices[j]
    point = packed // radices[-1]  # sorted: a key's point starts where it differs from the key before
    starts = np.flatnonzero(np.concatenate([[len(point) > 0], point[1:] != point[:-1]]))
    inv = np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, len(point))))
    return keys, counts.astype(np.int64), keys[starts, :-1].copy(), inv


def _new_records(view: SequenceView, first: np.ndarray):
    """Per snapshot: its timestamp, its QI leaf codes and which of its records are seen first there (``first``,
    the snapshots' records one after the other)."""
    at = 0
    for t, table in enumerate(view.population, 1):
        yield t, table.qi_codes, first[at:at + len(table)]
        at += len(table)


#: the packed keys of :func:`population_points` stay below this (products of the ranges at or above it take
#: the sort of rows)
_PACK_LIMIT = 1 << 62


def _points_by_rows(view: SequenceView, first: np.ndarray, cols: list[int]) -> tuple:
    """:func:`population_points` by a sort of ``(n, q + 1)`` rows, for ranges whose product packs in no
    int64."""
    from solver.correspondence.regions import unique_rows

    q = len(cols)
    parts = []
    for t, codes, keep in _new_records(view, first):
        part = np.empty((int(keep.sum()), q + 1), dtype=np.int64)
        part[:, :q] = codes[keep][:, cols]
        part[:, q] = t
        parts.append(part)
    key = np.concatenate(parts) if parts else np.zeros((0, q + 1), np.int64)
    del parts
    keys, _, _, counts = unique_rows(key)  # sorted by (point, t)
    del key
    pts, _, inv, _ = unique_rows(keys[:, :-1])
    return keys, counts, pts, inv


def _population_targets(view: SequenceView, nodes, notes: list[str], aggregate: bool = True,
                        points: tuple | None = None) -> TargetTable:
    from solver.correspondence.regions import signature_ids, unique_rows

    n = len(view.releases)
    keys, counts, pts, inv = points if points is not None else population_points(view)
    ids, sets = signature_ids(nodes, pts)
    sig = ids[inv]
    t = keys[:, -1]
    # a target must lie in some region of every release from its timestamp on
    present = np.ones(len(keys), dtype=bool)
    for l in range(n):
        present &= (sig[:, l] != 0) | (t > l + 1)
    skipped = int(counts[~present].sum())
    keys, counts, sig, t = keys[present], counts[present], sig[present], t[present]
    group_key = np.column_stack([t, sig]) if aggregate else keys
    _, first, ginv, weight = unique_rows(group_key)
    people = np.bincount(ginv, weights=counts, minlength=len(first)).astype(np.int64)
    order = np.argsort(first, kind="stable")  # targets in the order of their first (point, t)
    r = first[order]
    if skipped:
        notes.append(f"{skipped} individuals of the population lie outside every published region of a "
                     f"release they should appear in; they are not targets")
    return TargetTable(point=keys[r, :-1], t=t[r], sig=sig[r], sets=sets, people=people[order],
                       weight=weight[order].astype(np.int64))


@dataclass(frozen=True, eq=False)
class Entries:
    """Every target's candidate requests as arrays, target by target in the targets' order (then by cracking
    release, then by class): entry ``k`` is request ``req[k]``, a class of release ``rel[k]`` (1-based), asked
    for target ``tgt[k]``."""

    tgt: np.ndarray
    rel: np.ndarray
    req: np.ndarray

    def __len__(self) -> int:
        return int(len(self.tgt))

    def of(self, target: int) -> list[tuple[int, int]]:
        """Target ``target``'s ``[(j, request index)]``."""
        at = np.flatnonzero(self.tgt == target)
        return list(zip(self.rel[at].tolist(), self.req[at].tolist()))


def requests_of(targets: Sequence[Target], nodes, n: int):
    """All crack questions: for every target at ``T_t`` and every ``j >= t``, each class of ``R_j`` holding a
    region that contains the target (Fung et al., section 4: the classes the adversary may read the target
    in).  Returns the distinct requests as a :class:`~solver.correspondence.crack.RequestTable` (numbered in
    the order they are first asked) and every target's :class:`Entries`.

    Computed over arrays (issue 28: a census has 10^5 targets and as many questions): the distinct region sets
    of the signatures are numbered, each one's classes per release found once (a join of its regions with the
    release's (region, class) pairs), and the (target, release, class) entries expanded from them; two
    targets with the same timestamp and signature ask the same requests."""
    from solver.correspondence.crack import RequestTable
    from solver.correspondence.crack import expand_ranges
    from solver.correspondence.regions import unique_rows

    m = len(targets)
    population = isinstance(targets, TargetTable)  # its region sets numbered already; the given ones follow
    index: dict[frozenset, int] = {x: i for i, x in enumerate(targets.sets)} if population else {}
    others = targets.extra if population else targets
    sig = np.array([[index.setdefault(s, len(index)) for s in tg.signature] for tg in others],
                   np.int64).reshape(len(others), n)
    t = target_arrays(targets)["t"]
    if population:
        sig = np.concatenate([targets.sig.astype(np.int64).reshape(targets.rows, n), sig])
    sets = list(index)
    n_sets = len(sets)
    s_len = np.fromiter((len(x) for x in sets), np.int64, n_sets)
    s_start = np.concatenate([[0], np.cumsum(s_len)]).astype(np.int64)
    s_reg = np.fromiter((r for x in sets for r in sorted(x)), np.int64, int(s_len.sum()))
    reg_owner = np.repeat(np.arange(n_sets, dtype=np.int64), s_len)
    # per release l, the classes of each region set used there (CSR over l * n_sets + set)
    starts, classes = [np.zeros(1, np.int64)], []
    offset = 0
    for l in range(n):
        nd = nodes[l]
        used = np.zeros(n_sets, bool)
        used[sig[t <= l + 1, l]] = True
        pairs = unique_rows(np.column_stack([nd.region, nd.cls]).astype(np.int64))[0]
        keep = used[reg_owner]
        lo = np.searchsorted(pairs[:, 0], s_reg[keep], "left")
        hi = np.searchsorted(pairs[:, 0], s_reg[keep], "right")
        idx, owner = expand_ranges(lo, hi, reg_owner[keep])
        got = unique_rows(np.column_stack([owner, pairs[idx, 1]]))[0] if len(idx) else np.zeros((0, 2), np.int64)
        starts.append(np.searchsorted(got[:, 0], np.arange(1, n_sets + 1)) + offset)
        classes.append(got[:, 1])
        offset += len(got)
    c_start = np.concatenate(starts)
    c_cls = np.concatenate(classes) if classes else np.zeros(0, np.int64)
    # the entries: every (target, j >= t), then each class of its set at j
    g, jl = np.nonzero(np.arange(n)[None, :] >= t[:, None] - 1)
    key = jl * n_sets + sig[g, jl]
    idx, owner = expand_ranges(c_start[key], c_start[key + 1], np.arange(len(g), dtype=np.int64))
    e_tgt, e_rel, e_cls = g[owner].astype(np.int64), jl[owner].astype(np.int64) + 1, c_cls[idx]
    # distinct requests (timestamp, release, class, signature), numbered by first asking
    sig_id = unique_rows(sig)[2] if m else np.zeros(0, np.int64)
    if len(e_tgt):
        _, first, inv, _ = unique_rows(np.column_stack([t[e_tgt], e_rel, e_cls, sig_id[e_tgt]]))
        rank = np.empty(len(first), np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        e_req = rank[inv]
        first = np.sort(first)
    else:
        first = e_req = np.zeros(0, np.int64)
    who = e_tgt[first]
    r_start, r_regions = [], []
    for l in range(n):
        s = sig[who, l]
        lengths = s_len[s]
        r_start.append(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
        r_regions.append(s_reg[expand_ranges(s_start[s], s_start[s + 1], s)[0]])
    table = RequestTable(t=t[who], j=e_rel[first], cls=e_cls[first], start=tuple(r_start), regions=tuple(r_regions))
    return table, Entries(tgt=e_tgt, rel=e_rel, req=e_req)


# ---------------------------------------------------------------------- rows of the report
def _class_ids(release: Release) -> np.ndarray:
    """The published id of every class (the ``group`` column, else the class index from 1)."""
    if release.group is None:
        return np.arange(1, release.n_classes + 1)
    out = np.zeros(release.n_classes, dtype=np.int64)
    out[release.classes] = release.group
    return out


def class_id(release: Release, cls: int) -> int:
    """The published id of class ``cls`` (cached on the release)."""
    ids = release.__dict__.get("_correspondence_class_ids")
    if ids is None:
        ids = _class_ids(release)
        release.__dict__["_correspondence_class_ids"] = ids
    return int(ids[cls])


def shown_rows(targets, ranked: dict, limit: int, families: Sequence[str]) -> list[int]:
    """The rows a report lists: all of them when there are at most ``limit``, else every given target's and,
    per attack family, the ``limit // len(families)`` smallest anonymities (upper end, lower end, then target order) -
    in target order.  A report does not grow with the table."""
    if len(targets) <= limit:
        return list(range(len(targets)))
    keep = set(np.flatnonzero(target_arrays(targets)["given"]).tolist())
    per = max(1, limit // len(families))
    for fam in families:
        keep.update(ti for _, _, ti in sorted(ranked[fam])[:per])
    return sorted(keep)
