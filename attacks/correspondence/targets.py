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
from typing import Any, Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.model.release import Release
from multirelease.model.sequence import SequenceView

from attacks.base import AttackResult

__all__ = ["CorrespondenceResult", "Target", "base_targets", "class_id", "given_targets",
           "parse_targets", "requests_of", "shown_rows"]


@dataclass(frozen=True)
class CorrespondenceResult(AttackResult):
    """An :class:`~attacks.base.AttackResult` holding every target's row (``targets``, written whole by
    ``--targets-file``: :mod:`multirelease.reports.targets_file`) whose report lists the rows ``shown`` only (the
    worst ones of a large population: a report does not grow with the table)."""

    shown: tuple | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict:
        out = super().to_json()
        if self.shown is not None:
            out["targets"] = [self.targets[i] for i in self.shown]
        return out


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


def base_targets(view: SequenceView, nodes, notes: list[str], *, aggregate: bool = True) -> list[Target]:
    """The population's targets when the view has one for every release, else every target the published
    regions allow (an atom and a timestamp).

    Population targets are aggregated: every distinct QI point of an individual, with its timestamp (the
    first snapshot holding the individual), is a target of Fung et al.; what the adversary can say about it
    depends only on its signature and timestamp (:mod:`solver.correspondence.crack`), so the points sharing both
    make one :class:`Target` with ``weight`` = their number and ``people`` = their individuals.  Its ``point`` is the
    first of them in lexicographic order of ``(point, timestamp)``, and targets are in that order, so the
    first target attaining a minimum is the one the per-point computation picks.  ``aggregate=False``: one
    target per point (the tests' reference)."""
    from solver.correspondence.regions import atoms

    releases = view.releases
    n = len(releases)
    quasi = releases[0].quasi
    pop = view.population
    if getattr(view, "targets", "population") == "population" and len(pop) == n and all(
            p is not None for p in pop):
        return _population_targets(view, nodes, notes, aggregate)
    sizes = [a.domain_size for a in releases[0].qi_attributes]
    out = []
    for atom in atoms(nodes, sizes):
        for t in range(1, n + 1):
            if all(atom.signature[l] for l in range(t - 1, n)):
                out.append(Target(point=atom.point, leaves=atom.leaves, t=t, signature=atom.signature))
    return out


def _population_targets(view: SequenceView, nodes, notes: list[str], aggregate: bool = True) -> list[Target]:
    import pandas as pd

    from solver.correspondence.regions import signature_ids, unique_rows

    releases = view.releases
    n = len(releases)
    quasi = releases[0].quasi
    cols = [list(view.schema.quasi).index(a) for a in quasi]
    q = len(cols)
    frames = []
    for i, table in enumerate(view.population, 1):
        f = pd.DataFrame(table.qi_codes[:, cols], columns=[f"q{x}" for x in range(q)])
        f["id"] = table.ids
        f["t"] = i
        frames.append(f)
    allp = pd.concat(frames, ignore_index=True).drop_duplicates("id", keep="first")
    key = allp[[f"q{x}" for x in range(q)] + ["t"]].to_numpy(dtype=np.int64)
    del allp, frames
    keys, _, _, counts = unique_rows(key)  # sorted by (point, t)
    del key
    pts, _, inv, _ = unique_rows(keys[:, :-1])
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
    out = []
    for g in order.tolist():
        r = int(first[g])
        point = tuple(int(c) for c in keys[r, :-1])
        out.append(Target(point=point, leaves=tuple((c,) for c in point), t=int(t[r]),
                          signature=tuple(sets[int(x)] for x in sig[r]), people=int(people[g]),
                          weight=int(weight[g])))
    if skipped:
        notes.append(f"{skipped} individuals of the population lie outside every published region of a "
                     f"release they should appear in; they are not targets")
    return out


def requests_of(targets: Sequence[Target], nodes, n: int):
    """All crack questions: for every target at ``T_t`` and every ``j >= t``, each class of ``R_j`` holding a
    region that contains the target.  Returns the unique requests and, per target, ``[(j, request index)]``."""
    from solver.correspondence.crack import CrackRequest

    region_classes = []
    for nd in nodes:
        m: dict[int, set] = {}
        for r, c in zip(nd.region.tolist(), nd.cls.tolist()):
            m.setdefault(r, set()).add(c)
        region_classes.append(m)
    index: dict = {}
    requests = []
    where = []
    for tg in targets:
        mine = []
        for j in range(tg.t, n + 1):
            classes = set()
            for r in tg.signature[j - 1]:
                classes |= region_classes[j - 1].get(r, set())
            for c in sorted(classes):
                req = CrackRequest(t=tg.t, j=j, cls=c, signature=tg.signature)
                if req not in index:
                    index[req] = len(requests)
                    requests.append(req)
                mine.append((j, index[req]))
        where.append(mine)
    return requests, where


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
    keep = {i for i, tg in enumerate(targets) if tg.given is not None}
    per = max(1, limit // len(families))
    for fam in families:
        keep.update(ti for _, _, ti in sorted(ranked[fam])[:per])
    return sorted(keep)
