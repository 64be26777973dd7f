"""What the ledger keeps of the possible-worlds attack between months (issue 24, item 3; :mod:`attacks.incremental`).

A month's gate must not read and match every earlier release against its population again, and must not decide
again what an earlier gate proved.  :class:`WorldsState` keeps, per release, the release as the engine sees it
(:class:`solver.worlds.problem.ReleaseGraph`: the individuals present, the record groups with their value and
count, the group of every row, and which groups' regions hold each individual), and, for the prefix, the
linkability its gate left possible (an upper set: every pair a world realizes, and every pair no proof
excluded).  Under persistent values (Shmueli & Tassa, 004, Definition 3.1) that upper set stays an upper set of
every longer sequence's linkability: a world of releases ``1 .. n + 1`` restricted to ``1 .. n`` is a world of
``1 .. n``.  The engine reads it as :attr:`solver.worlds.problem.WorldsProblem.allowed`.

Stored bytes (:func:`attacks.incremental.pack`, no pickle): one part per release (its graph, and the
identifiers of the individuals it brings in, which the private ledger store alone holds), and a summary (the
carried upper set, bit-packed, with the values its columns name).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy import sparse

from solver.worlds.problem import ReleaseGraph, WorldsProblem

from .incremental import extend_codes, from_strings, pack, strings, unpack

__all__ = ["WorldsState"]


@dataclass(eq=False)
class WorldsState:
    """The release graphs of releases ``1 .. n`` and the linkability carried from the last gate."""

    ids: list = field(default_factory=list)  # every individual, in order of first appearance
    graphs: list = field(default_factory=list)  # (ReleaseGraph with group values as indices into vals, vals)
    parts: list = field(default_factory=list)  # the stored bytes of every release
    carry: np.ndarray | None = None  # (n, V) bool: the upper set of the last gate, over carry_values
    carry_values: list = field(default_factory=list)

    def add(self, one: WorldsProblem, index: int) -> "WorldsState":
        """A new state with release ``index`` (the one release of ``one``) added; ``self`` is unchanged."""
        graph = one.releases[0]
        people, fresh = extend_codes(self.ids, [str(x) for x in one.individuals[graph.people]])
        ids = self.ids + fresh
        vals = [str(v) for v in one.values]
        graph = replace(graph, index=index, people=people)
        rows = np.concatenate(graph.group_rows) if graph.group_rows else np.zeros(0, np.int64)
        adj = graph.adjacency.tocsr()
        part = pack({"index": index, "values": vals, "shape": list(adj.shape)},
                    {"new_ids": strings(fresh), "people": people, "group_value": graph.group_value,
                     "group_count": graph.group_count, "rows": rows,
                     "indptr": adj.indptr, "indices": adj.indices})
        return WorldsState(ids, self.graphs + [(graph, vals)], self.parts + [part], self.carry, self.carry_values)

    def problem(self) -> WorldsProblem:
        """The possible-worlds problem of releases ``1 .. n`` (what :func:`solver.worlds.problem.build_problem`
        gives for the whole sequence, without linking columns), with the carried upper set as ``allowed``."""
        values = sorted({v for _, vals in self.graphs for v in vals})
        code = {v: j for j, v in enumerate(values)}
        graphs = []
        for graph, vals in self.graphs:
            remap = np.array([code[v] for v in vals], dtype=np.int64)
            graphs.append(replace(graph, group_value=remap[graph.group_value] if len(graph.group_value)
                                  else graph.group_value))
        allowed = None
        if self.carry is not None:
            # a value new since the carry was none of the values of any release an earlier individual was in
            allowed = np.ones((len(self.ids), len(values)), dtype=bool)
            n = self.carry.shape[0]
            allowed[:n] = False
            allowed[:n, [code[v] for v in self.carry_values]] = self.carry
        return WorldsProblem(individuals=np.asarray(self.ids, dtype=object), values=np.asarray(values, dtype=object),
                             releases=tuple(graphs), mode="persistent", allowed=allowed)

    def carried(self, analysis) -> "WorldsState":
        """This state with the gate's linkability (``analysis.linkable``, an upper set) carried."""
        return WorldsState(self.ids, self.graphs, self.parts, np.asarray(analysis.linkable, dtype=bool).copy(),
                           [str(v) for v in analysis.problem.values])

    def summary(self) -> bytes:
        if self.carry is None:
            return pack({"n": 0, "values": []}, {})
        return pack({"n": int(self.carry.shape[0]), "values": self.carry_values},
                    {"carry": np.packbits(self.carry, axis=None)})

    @classmethod
    def load(cls, parts: list, summary: bytes) -> "WorldsState":
        state = cls()
        for data in parts:
            meta, a = unpack(data)
            fresh = from_strings(a["new_ids"])
            state.ids.extend(fresh)
            count = a["group_count"].astype(np.int64)
            cuts = np.cumsum(count)[:-1] if len(count) else []
            rows = tuple(np.split(a["rows"].astype(np.int64), cuts)) if len(count) else ()
            shape = tuple(meta["shape"])
            adj = sparse.csr_matrix((np.ones(len(a["indices"]), dtype=bool), a["indices"], a["indptr"]), shape=shape)
            graph = ReleaseGraph(index=int(meta["index"]), people=a["people"].astype(np.int64),
                                 group_value=a["group_value"].astype(np.int64), group_count=count, group_rows=rows,
                                 adjacency=adj)
            state.graphs.append((graph, list(meta["values"])))
            state.parts.append(data)
        meta, a = unpack(summary)
        if meta["n"]:
            n, V = int(meta["n"]), len(meta["values"])
            state.carry = np.unpackbits(a["carry"], count=n * V).astype(bool).reshape(n, V)
            state.carry_values = list(meta["values"])
        return state
