"""Questions and answers shared by the exact correspondence engines (:mod:`solver.correspondence.flows` for two
releases, :mod:`solver.correspondence.generators` for more).

One unified question covers the F-, C- and B-attack of Fung et al. and their extensions to ``n`` releases
(section 7.1): a :class:`CrackRequest` names a target (its *signature*: the published regions containing
its QID point ``p``; and its timestamp ``T_t``) and an equivalence class of a cracking release ``R_j``
(``j >= t``).  A record of that class *represents* the target in a generator when its instantiation
matches ``p`` and its timestamp is ``T_t`` (its chain of buddies starts in ``R_t``).  The answer is, per
sensitive value (group), the maximum over all generators of the number of the class's records that
represent the target; the crack size of the group is its size minus that maximum - Definitions 3.1
(``t = j = 1``, F), 3.3 (``t = 1 < j``, C) and 3.5 (``t = j = 2``, B), read for any number of releases.

For classes whose rows all contain ``p`` (every class of a release without a ``group`` column, since its
rows are identical) this is exactly the paper's crack size; rows of a class that cannot contain ``p``
(possible only with published ``group`` ids over differing rows) count as cracked.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CrackRequest", "CrackAnswer", "RequestTable", "expand_ranges"]


def expand_ranges(start: np.ndarray, end: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges ``[start[k], end[k])`` as one array, and beside every element its range's ``owner``."""
    lengths = (end - start).astype(np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    offsets = np.cumsum(lengths) - lengths
    idx = np.arange(total, dtype=np.int64) + np.repeat(start.astype(np.int64) - offsets, lengths)
    return idx, np.repeat(owner.astype(np.int64), lengths)


@dataclass(frozen=True)
class CrackRequest:
    """``t``: target timestamp, ``j``: cracking release (both 1-based, ``t <= j``), ``cls``: class of
    ``R_j``, ``signature``: per release, the frozenset of region indices containing the target point."""

    t: int
    j: int
    cls: int
    signature: tuple


@dataclass(frozen=True)
class CrackAnswer:
    """Per sensitive value code: ``low`` <= max number of representing records <= ``high``; ``exact`` when
    ``low == high`` everywhere and each value came from a proof (flow optimum or CP-SAT OPTIMAL)."""

    low: dict = field(default_factory=dict)
    high: dict = field(default_factory=dict)
    exact: bool = True

    @property
    def total_low(self) -> int:
        return int(sum(self.low.values()))

    @property
    def total_high(self) -> int:
        return int(sum(self.high.values()))


@dataclass(frozen=True, eq=False)
class RequestTable:
    """Many :class:`CrackRequest` as arrays (what an engine reads, and what a worker process is sent):
    ``t``, ``j``, ``cls`` per request, and per release ``l`` the signature's regions in CSR form - request
    ``i``'s regions of release ``l`` are ``regions[l][start[l][i]:start[l][i + 1]]``, ascending.  A sequence of
    requests: ``table[i]`` and iteration give :class:`CrackRequest` objects, made when asked for."""

    t: np.ndarray
    j: np.ndarray
    cls: np.ndarray
    start: tuple
    regions: tuple

    def __len__(self) -> int:
        return int(len(self.t))

    def __getitem__(self, i: int) -> CrackRequest:
        return self.request(int(i))

    def __iter__(self):
        return (self.request(i) for i in range(len(self)))

    def request(self, i: int) -> CrackRequest:
        """Request ``i`` as a :class:`CrackRequest`."""
        sig = tuple(frozenset(self.regions[l][self.start[l][i]:self.start[l][i + 1]].tolist())
                    for l in range(len(self.start)))
        return CrackRequest(t=int(self.t[i]), j=int(self.j[i]), cls=int(self.cls[i]), signature=sig)

    def take(self, idx: np.ndarray) -> "RequestTable":
        """The requests ``idx`` (in that order) as a table of their own: request ``k`` of it is request
        ``idx[k]`` of this one."""
        idx = np.asarray(idx, np.int64)
        starts, regions = [], []
        for start, reg in zip(self.start, self.regions):
            pos, _ = expand_ranges(start[idx], start[idx + 1], idx)
            starts.append(np.concatenate([[0], np.cumsum(start[idx + 1] - start[idx])]).astype(np.int64))
            regions.append(reg[pos])
        return RequestTable(t=self.t[idx], j=self.j[idx], cls=self.cls[idx], start=tuple(starts),
                            regions=tuple(regions))

    @classmethod
    def of(cls, requests) -> "RequestTable":
        if isinstance(requests, RequestTable):
            return requests
        requests = list(requests)
        m = len(requests)
        t = np.fromiter((r.t for r in requests), np.int64, m)
        j = np.fromiter((r.j for r in requests), np.int64, m)
        c = np.fromiter((r.cls for r in requests), np.int64, m)
        n = max((len(r.signature) for r in requests), default=0)
        starts, regions = [], []
        for l in range(n):
            sets = [sorted(r.signature[l]) if l < len(r.signature) else [] for r in requests]
            lengths = np.fromiter((len(s) for s in sets), np.int64, m)
            starts.append(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
            regions.append(np.fromiter((x for s in sets for x in s), np.int64, int(lengths.sum())))
        return cls(t=t, j=j, cls=c, start=tuple(starts), regions=tuple(regions))
