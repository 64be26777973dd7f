"""Targets of the correspondence attack (Fung, Wang, Fu, Pei, EDBT 2008) and their crack questions.

A target is a QI point with a timestamp ``T_t`` (the release in which the individual first appears): given
ones (the ``targets`` parameter, Fung et al.'s examples), else every individual of the population with the
timestamp of its first snapshot (the certification case), else every target the published regions allow -
one per *signature* (the set of published regions containing the point, :func:`solver.regions.atoms`) and
timestamp.  :func:`requests_of` turns them into the crack questions of :mod:`solver.crack`: for every
``j >= t``, each class of ``R_j`` holding a region that contains the target.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.sequence import SequenceView

__all__ = ["Target", "base_targets", "given_targets", "parse_targets", "requests_of"]


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
    from solver.regions import point_signatures

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


def base_targets(view: SequenceView, nodes, notes: list[str]) -> list[Target]:
    """The population's targets (every distinct QI point with its timestamp) when the view has one for every
    release, else every target the published regions allow (an atom and a timestamp)."""
    from solver.regions import atoms, point_signatures

    releases = view.releases
    n = len(releases)
    quasi = releases[0].quasi
    pop = view.population
    if getattr(view, "targets", "population") == "population" and len(pop) == n and all(
            p is not None for p in pop):
        import pandas as pd

        cols = [list(view.schema.quasi).index(a) for a in quasi]
        frames = []
        for i, table in enumerate(pop, 1):
            f = pd.DataFrame(table.qi_codes[:, cols], columns=[f"q{x}" for x in range(len(cols))])
            f["id"] = table.ids
            f["t"] = i
            frames.append(f)
        allp = pd.concat(frames, ignore_index=True).drop_duplicates("id", keep="first")
        key = allp[[f"q{x}" for x in range(len(cols))] + ["t"]].to_numpy(dtype=np.int64)
        keys, counts = np.unique(key, axis=0, return_counts=True)
        sigs = point_signatures(nodes, keys[:, :-1])
        out = []
        skipped = 0
        for row, cnt, sig in zip(keys.tolist(), counts.tolist(), sigs):
            t = row[-1]
            row = tuple(row[:-1])
            if any(not sig[l] for l in range(t - 1, n)):
                skipped += cnt
                continue
            out.append(Target(point=row, leaves=tuple((c,) for c in row), t=t, signature=tuple(sig),
                               people=cnt))
        if skipped:
            notes.append(f"{skipped} individuals of the population lie outside every published region of a "
                         f"release they should appear in; they are not targets")
        return out
    sizes = [a.domain_size for a in releases[0].qi_attributes]
    out = []
    for atom in atoms(nodes, sizes):
        for t in range(1, n + 1):
            if all(atom.signature[l] for l in range(t - 1, n)):
                out.append(Target(point=atom.point, leaves=atom.leaves, t=t, signature=atom.signature))
    return out


def requests_of(targets: Sequence[Target], nodes, n: int):
    """All crack questions: for every target at ``T_t`` and every ``j >= t``, each class of ``R_j`` holding a
    region that contains the target.  Returns the unique requests and, per target, ``[(j, request index)]``."""
    from solver.crack import CrackRequest

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
