"""Joint possible worlds of releases with internal updates (the ``update_graph: {joint: true}`` attack).

The per-record SUG of Li & Zhou (section III) prunes each record's candidate values alone.  A possible world
constrains all records at once: in every release, each QI-group's published multiset of sensitive values is
shared among its members (published counterfeit counts absorb values: at most ``|g| - c_g`` of the group's
values belong to real members), and the consecutive versions of each record follow the public model
``P_trans`` (``k``-step reachability across releases it skipped).  A version's *joint candidate set* is the set
of values it takes in some world; it is a subset of its feasible sub-SUG's candidate node set, since every
world traces a feasible path through every record's SUG.

CP-SAT model (one per connected component of the ``record - (release, group)`` graph; components are
independent)::

    x[i, t, g, s] in {0, 1}   record t's version at release i is in group g with value s
                              (s restricted to values of g that survive t's feasible sub-SUG)
    y[i, t, s] = sum_g x[i, t, g, s]
    sum_{g, s} x[i, t, g, s] = 1                     every version has one group and one value
    sum_t x[i, t, g, s] <= n_{i,g}(s)                 the group's multiset
    sum_{t, s} x[i, t, g, s] <= |g| - c_g             counterfeits take the rest (population linkage)
    y[j, t, s'] <= sum_{s : s -> s'} y[i, t, s]       consecutive versions i < j follow P_trans^(j-i)
    y[i, t, s]  <= sum_{s' : s -> s'} y[j, t, s']

The joint candidate sets are found as a *backbone*: ask for a world in which at least one still-unknown
literal ``y[i, t, s]`` is true (a constraint enforced by a fresh assumption literal each round, since CP-SAT
cannot drop constraints); every literal true in that world is possible; when no such world exists (status
INFEASIBLE, a proof), every unknown literal is impossible.  Each round settles at least one literal, and the
hints steer the search towards the unknown ones.  A component whose budget runs out leaves its unknown literals
unsettled: the result is then not exact and gives bounds.  A component stopped before its first world
(``without_world``) proves no version of it vulnerable, not even one the SUG pins: the releases might admit no
world at all there (then no value is possible), so the lower bound may fall below the SUG's count.  CP-SAT
runs with a fixed seed and the given number of workers, and branches on every status (``MODEL_INVALID`` is a
:class:`SolverError`, :mod:`solver.update.tasks`).  The components are
solved through the executor (:mod:`solver.executor`), in chunks made from the input alone; the chunks of a
call share one wall-clock deadline, ``time_limit`` seconds after the call.

With persistent linking columns (:mod:`multirelease.model.linking`) the values are linked values (sensitive value and
linking tuple) and ``P_trans`` is the product model of :func:`attacks.update_graph.version_links.linked_model` (a record
keeps its tuple): a world gives each version one linked value, each group's published multiset of linked values
is shared among its members.  ``codes`` maps each linked value to its sensitive value: a version is vulnerable
when its joint candidate set holds one *sensitive* value (:attr:`JointResult.vulnerable_low`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from multirelease.model.linking import Projection

__all__ = ["JointResult", "joint_feasible"]

#: components' total size (records + (record, group) pairs) per chunk (one task of the executor), the most
#: chunks, and the total from which local worker processes solve them (a Dask executor takes any input of
#: two chunks or more; below, one chunk in this process: the single-process loop)
#: (CP-SAT backbones cost about 10 ms of CPU per unit: a 1,000-record Adult stream of 3 releases, 71
#: components of 4,700 units in all, took 51 s of CPU in one process)
_CHUNK_WORK = 500
_MAX_CHUNKS = 64
_PARALLEL_WORK = 1_000


@dataclass(eq=False)
class JointResult:
    """Joint candidate sets: ``found[i]`` (values proved possible) and ``possible[i]`` (not proved impossible),
    ``(T, V)`` per release; ``exact`` when they coincide everywhere."""

    found: list
    possible: list
    present: list
    sug: list
    exact: bool
    status: str
    solves: int = 0
    components: int = 0
    without_world: int = 0  # components left unsettled before their first world was found (time limit)
    seconds: float = 0.0
    world: list = field(default_factory=list)  # per release, (T,) value index in one world (-1: none/absent)
    world_group: list = field(default_factory=list)  # per release, (T,) class index in that world
    #: per value of the model, the code of its sensitive value (linked values, :mod:`multirelease.model.linking`);
    #: None: the values are the sensitive values
    codes: Any = None

    def _sens(self, x: np.ndarray) -> np.ndarray:
        """``x`` (``(T, V)`` bool) read on the sensitive value: ``(T, S)``, true where some linked value of
        that sensitive value is; ``x`` itself without linking columns."""
        return x if self._projection is None else self._projection.any(x)

    @cached_property
    def _projection(self) -> Projection | None:
        if self.codes is None:
            return None
        codes = np.asarray(self.codes)
        return Projection(codes, np.arange(int(codes.max()) + 1 if len(codes) else 0))

    @property
    def vulnerable_low(self) -> int:
        """Versions proved to have exactly one possible value: one not proved impossible, and a world found
        for it (a component whose first world was not found may have none at all, and then no value)."""
        return int(sum(((self._sens(p).sum(axis=1) == 1) & (self._sens(f).sum(axis=1) == 1) & pr).sum()
                       for p, f, pr in zip(self.possible, self.found, self.present)))

    @property
    def vulnerable_high(self) -> int:
        """Versions that may have one possible value (at most one proved possible)."""
        return int(sum(((self._sens(f).sum(axis=1) <= 1) & pr).sum() for f, pr in zip(self.found, self.present)))

    def witness(self, links, model, linking=None) -> dict[str, Any]:
        """The worst case and the world that shows it: a version the joint attack pins to one value although its
        feasible sub-SUG keeps several (else any pinned version), its values in one possible world, and the
        values its group-mates take there.  With ``linking`` (:class:`multirelease.model.linking.Linking`, the values
        linked values) "one value" is one sensitive value, the values are labelled (``measles (bt=O+)``) and
        ``linked_by`` names the columns."""
        name = (lambda v: model.values[v]) if not linking else (lambda v: linking.label(model.values[v]))
        pick = None
        for prefer_extra in (True, False):
            for i, (p, s, pr) in enumerate(zip(self.possible, self.sug, self.present)):
                one = pr & (self._sens(p).sum(axis=1) == 1)
                if prefer_extra:
                    one &= self._sens(s).sum(axis=1) > 1
                hit = np.flatnonzero(one)
                if len(hit):
                    pick = (i, int(hit[0]))
                    break
            if pick is not None:
                break
        if pick is None or not self.world:
            return {"pinned": None}
        i, t = pick
        versions = []
        for j in range(len(self.world)):
            if not self.present[j][t]:
                continue
            v = int(self.world[j][t])
            versions.append({"release": j + 1,
                             "group": int(links.groups[j][self.world_group[j][t]]) if v >= 0 else None,
                             "world_value": name(v) if v >= 0 else None,
                             "sug_candidates": [name(x) for x in np.flatnonzero(self.sug[j][t])],
                             "joint_candidates": [name(x) for x in np.flatnonzero(self.possible[j][t])]})
        g = int(self.world_group[i][t])
        mates = np.flatnonzero((self.world_group[i] == g) & self.present[i] & (self.world[i] >= 0))
        group_world = {str(links.targets[m]): name(int(self.world[i][m])) for m in mates[:50]}
        value = model.values[int(np.flatnonzero(self.possible[i][t])[0])]
        out = {"pinned": {"target": str(links.targets[t]), "release": i + 1,
                          "value": value if not linking else linking.sensitive_of([value])[0],
                          "versions": versions,
                          "group": int(links.groups[i][g]),
                          "group_in_world": group_world,
                          "group_counterfeits": int(links.counterfeits[i][g])}}
        if linking:
            out["pinned"]["linked_by"] = list(linking.columns)
        return out


def _components(links, keep: np.ndarray, pairs: list) -> tuple[int, np.ndarray, list]:
    """Connected components of the bipartite graph record - (release, class); ``pairs`` per release."""
    T = len(links.targets)
    offsets = np.cumsum([0] + [len(c) for c in links.counts])
    rows, cols = [], []
    for i, (t, g) in enumerate(pairs):
        k = keep[t]
        rows.append(t[k])
        cols.append(T + offsets[i] + g[k])
    n = T + int(offsets[-1])
    r = np.concatenate(rows) if rows else np.zeros(0, int)
    c = np.concatenate(cols) if cols else np.zeros(0, int)
    adj = sparse.coo_matrix((np.ones(len(r)), (r, c)), shape=(n, n))
    n_comp, label = connected_components(adj, directed=False)
    return n_comp, label[:T], offsets


def joint_feasible(links, model, sug_feasible: list, *, time_limit: float = 60.0, workers: int = 1,
                   seed: int = 0, codes: np.ndarray | None = None) -> JointResult:
    """Joint candidate sets of every version (see the module docstring).

    Parameters
    ----------
    links : attacks.update_graph.attack.VersionLinks
    model : TransitionModel
    sug_feasible : list of (T, V) bool
        The feasible sub-SUGs after the last release (:func:`attacks.update_graph.attack.backward_risks`); only their
        values get variables.  Records whose SUG is empty (inconsistent with the model) are left out.
    codes : (V,) int, optional
        With linking columns, the sensitive value of each (linked) value of ``model``: the vulnerable versions
        are then counted on the sensitive value (:class:`JointResult`).
    """
    from solver.executor import InlineExecutor, plan_chunks
    from .tasks import UpdateChunk, solve_update_chunk

    t0 = time.perf_counter()
    N = links.n_releases
    T = len(links.targets)
    V = len(model)
    present = [links.present(i) for i in range(N)]
    consistent = np.ones(T, dtype=bool)
    for i in range(N):
        consistent &= ~(present[i] & (sug_feasible[i].sum(axis=1) == 0))
    found = [np.zeros((T, V), dtype=bool) for _ in range(N)]
    impossible = [~sug_feasible[i].copy() for i in range(N)]
    world = [np.full(T, -1, dtype=np.int64) for _ in range(N)]
    world_group = [np.full(T, -1, dtype=np.int64) for _ in range(N)]
    pairs = [links.pairs_of(i) for i in range(N)]
    n_comp, label, _ = _components(links, consistent, pairs)
    # per component and release, its (record, group) pairs in the order of the links
    comp_size = np.bincount(label[consistent], minlength=n_comp)
    by_comp = []
    for t_arr, g_arr in pairs:
        keep = consistent[t_arr]
        lab = label[t_arr[keep]]
        order = np.argsort(lab, kind="stable")
        cuts = np.searchsorted(lab[order], np.arange(n_comp + 1))
        by_comp.append((t_arr[keep][order], g_arr[keep][order], cuts))
    work = [c for c in sorted(range(n_comp), key=lambda c: comp_size[c]) if comp_size[c]]
    comp_pairs = {c: [(t[cuts[c]:cuts[c + 1]], g[cuts[c]:cuts[c + 1]]) for t, g, cuts in by_comp] for c in work}
    sizes = [int(comp_size[c]) + sum(len(t) for t, _ in comp_pairs[c]) for c in work]
    # chunks from the input alone (a chunk's time budget and its components' order depend on it); one chunk
    # for small inputs: exactly the single-process loop, smallest component first
    parts, ex = plan_chunks(sizes, chunk_work=_CHUNK_WORK, max_chunks=_MAX_CHUNKS, parallel_work=_PARALLEL_WORK)
    steps = {k: model.steps(k) for k in range(1, N)}
    # several chunks share one wall-clock deadline (time_limit for the call, as in one process)
    deadline = time.time() + time_limit if len(parts) > 1 else None
    tasks = []
    for part in parts:
        comps = [comp_pairs[work[p]] for p in part]  # chunks() keeps the positions ascending: smallest first
        if isinstance(ex, InlineExecutor):
            counts, cf, sug = links.counts, links.counterfeits, sug_feasible
        else:  # only the rows the chunk's models read
            counts, cf, sug = [], [], []
            for i in range(N):
                gs = sorted({int(g) for pr in comps for g in pr[i][1].tolist()})
                ts = sorted({int(t) for pr in comps for t in pr[i][0].tolist()})
                counts.append({g: links.counts[i][g] for g in gs})
                cf.append({g: links.counterfeits[i][g] for g in gs})
                sug.append({t: sug_feasible[i][t] for t in ts})
        tasks.append(UpdateChunk(comps, counts, cf, sug, steps, V, links.mode, time_limit, workers, seed, deadline))
    solves = 0
    without_world = 0
    status_all = "OPTIMAL"
    exact = True
    for answers in ex.map(solve_update_chunk, tasks):
        for ans in answers:
            solves += ans.solves
            without_world += int(ans.without_world)
            if ans.status == "UNKNOWN":
                exact = False
                status_all = "UNKNOWN"
            elif ans.status == "INFEASIBLE" and status_all == "OPTIMAL":
                status_all = "INFEASIBLE"
            for i, t, s in ans.found:
                found[i][t, s] = True
            for i, t, s in ans.impossible:
                impossible[i][t, s] = True
            for (i, t), (g, s) in ans.world.items():
                world[i][t] = s
                world_group[i][t] = g
    # records left out as inconsistent keep their SUG (empty) candidate sets
    possible = [~impossible[i] & present[i][:, None] for i in range(N)]
    for i in range(N):
        found[i] &= possible[i]
    if exact:
        for i in range(N):
            exact_here = np.array_equal(found[i][consistent], possible[i][consistent])
            if not exact_here:
                exact = False
                status_all = "UNKNOWN"
    return JointResult(found=found, possible=possible, present=present, sug=[f.copy() for f in sug_feasible],
                       exact=exact, status=status_all, solves=solves, components=n_comp,
                       without_world=without_world,
                       seconds=time.perf_counter() - t0, world=world, world_group=world_group,
                       codes=None if codes is None else np.asarray(codes, dtype=np.int64))
