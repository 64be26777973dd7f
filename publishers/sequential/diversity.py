"""l-diverse sequential releases by possible worlds (Shmueli & Tassa, "Privacy by Diversity in Sequential
Releases of Databases", ../shared/papers/004_db68606f48036092.txt, sections 4-5 and appendix 8.2).

The data holder publishes vertical projections ``V_1, V_2, ...`` of one table ``T`` (each release carries the
attributes ``I_R`` of the scenario's ``attributes:``).  The adversary knows every individual's
quasi-identifiers (the background release ``V_0``).  The method:

**Algorithm 1 (preprocessing, once).**  ``T`` is cut into buckets of diversity at least ``l``
(Definition 2.3: ``|B| / (count of the most frequent sensitive value) >= l``) by Mondrian
(:func:`publishers.mondrian.mondrian_partition` with ``Principle(l=l, alpha=1/l)``: ``alpha = 1/l`` *is*
Definition 2.3; distinct l-diversity alone would not let step 4 order a bucket such as ``a,a,a,b,c`` for
``l = 3``).  In every bucket the sensitive values are put in a cycle where every ``l`` consecutive values
differ (:func:`cyclic_value_order`, Lemma 8.1), the tuples are ordered greedily along that cycle (eq. 7,
:func:`greedy_tuple_order`), and ``l - 1`` permutations ``sigma_1..sigma_{l-1}`` are drawn that satisfy the
range-limitation condition (``sigma_i(h) in {h+1, ..., h+l-1} mod |B|``) and the diversity condition (the
``sigma_i(h)`` and ``h`` pairwise distinct) (:func:`range_limited_permutations`).  Fake world ``T_i`` gives
individual ``h`` its own quasi-identifiers and the non-identifier and sensitive values of ``sigma_i(h)``
(eq. 5).  The worlds are kept as permutations of identifiers in the publisher state, so a later release
takes every attribute's current value through the permutation: an attribute revealed for the first time
later gets its value by eq. (8), for free.

**Algorithm 2 (every release).**  The worlds are visited in a random order (``psi``); the release starts as
the first world's projection on ``I_R`` and, world after world, is generalized to be consistent with it:
a minimum-cost perfect matching between the current records and the world's tuples that agree on the
published non-quasi-identifier attributes (condition 9; the graph is a disjoint union of complete bipartite
components, one per value of those attributes), the cost of an edge being the LM loss (eq. 1) added by
generalizing the record to the closure (Definition 2.2) of itself and the tuple.  A component larger than
``p`` is split as in section 4.4: its records are clustered into groups of at most ``p`` (median splits on
the regions' centres), and each group in turn takes the world tuples nearest to the group's closure
(eq. 10); each sub-component is solved exactly by ``scipy.optimize.linear_sum_assignment``.  The result
is consistent with all ``l`` worlds (Theorem 4.3) and its cost does not depend on the index of the release
or the releases before it (Theorem 4.4): the state holds only the worlds.

**Insertions (section 5.2).**  Individuals that were not in the table at preprocessing time get their own
``l`` worlds from Algorithm 1 run on them alone (the group must have diversity ``>= l``, as the paper
assumes), appended to the old worlds (true with true).  Removals and value updates are section 5.3's open
problem: they are refused with an :class:`~multirelease.errors.InputError`.

``non_sequential_diversity`` is the baseline of section 4.5: the same preprocessing, then one
non-homogeneous anonymization ``V`` of the whole table (Algorithm 2 with every attribute), and every release
is a projection of ``V`` (its rows shuffled).

Costs: Algorithm 1 is one Mondrian run plus ``O(N l^2 q)`` for the greedy ordering and ``l - 1`` sparse
matchings of ``N (l-1)`` edges; Algorithm 2 is ``O((l-1) (N p q + N p^2))`` plus the partition of eq. (12).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.params import Interval, ListOf, Text
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.schema import Schema
from multirelease.model.table import Table, composite_sensitive

from publishers.base import PublisherBase, PublishResult
from .algorithms import (  # noqa: F401  (re-exported: the method's parts live there)
    _Geometry, _Regions, algorithm1, algorithm2, cyclic_value_order, diversity, greedy_tuple_order,
    range_limited_permutations,
)
from .check import check_release

__all__ = [
    "SequentialDiversity", "NonSequentialDiversity", "PossibleWorlds",
    "cyclic_value_order", "greedy_tuple_order", "range_limited_permutations", "algorithm1", "algorithm2",
    "world_tables", "diversity",
]



# ---------------------------------------------------------------------- the worlds as data
@dataclass(frozen=True)
class PossibleWorlds:
    """The ``l - 1`` fake worlds of the publisher state: ``ids`` in state order and ``worlds[i][n]``, the index
    (into ``ids``) of the individual whose non-identifier and sensitive values ``ids[n]`` carries in fake
    world ``i + 1``.  The true world is the identity and is not stored."""

    ids: tuple
    worlds: tuple  # of tuples of int

    @classmethod
    def from_state(cls, state: Mapping) -> "PossibleWorlds":
        return cls(ids=tuple(state["ids"]), worlds=tuple(tuple(w) for w in state["worlds"]))

    def arrays(self, order: np.ndarray) -> np.ndarray:
        """``(l, N)`` worlds over snapshot rows: ``order[n]`` is the state index of snapshot row ``n``; the
        last world is the identity (true world)."""
        w = np.asarray(self.worlds, dtype=np.int64).reshape(len(self.worlds), len(self.ids))
        inv = np.empty(len(order), dtype=np.int64)
        inv[order] = np.arange(len(order))
        mapped = inv[w[:, order]] if len(w) else w
        return np.vstack([mapped, np.arange(len(order))[None, :]])


def world_tables(snapshot: Table, state: Mapping) -> list[Table]:
    """The ``l`` possible worlds of a publisher state as raw tables (eqs. 5 and 8), fake ones first and the
    true table last: world ``i`` keeps everyone's identifier and quasi-identifiers and takes the other
    attributes (non-identifiers, sensitive) of the individual its permutation names, with their current
    values."""
    pw = PossibleWorlds.from_state(state)
    order = _state_order(snapshot, pw.ids)
    schema = snapshot.schema
    suffix = [n for n in schema.published if not schema[n].is_quasi]
    out = []
    for w in pw.arrays(order):
        frame = snapshot.frame.copy()
        for name in suffix:
            frame[name] = snapshot.frame[name].to_numpy()[w]
        out.append(Table(schema, frame))
    return out


def _state_order(snapshot: Table, ids: Sequence) -> np.ndarray:
    """The state index of every snapshot row (the snapshot must hold exactly the state's individuals)."""
    idx = pd.Index(list(ids), dtype=object).get_indexer(pd.Index(snapshot.ids, dtype=object))
    if (idx < 0).any() or len(snapshot) != len(ids):
        raise InputError("the snapshot does not hold the individuals of the publisher state")
    return idx


def _digest(frame: pd.DataFrame) -> str:
    h = pd.util.hash_pandas_object(frame.sort_index(), index=True).to_numpy()
    return hashlib.sha256(h.tobytes()).hexdigest()


def _codes(values) -> np.ndarray:
    codes, _ = pd.factorize(pd.Series(np.asarray(values, dtype=object), dtype=object), sort=True)
    return codes.astype(np.int64)


def _keys(frame: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    """One int per row for the combination of the given columns' values (condition 9)."""
    key = np.zeros(len(frame), dtype=np.int64)
    for name in names:
        c = _codes(frame[name].to_numpy(dtype=object))
        key = key * (int(c.max()) + 1 if len(c) else 1) + c
        key = _codes(key)  # keep it small
    return key


# ---------------------------------------------------------------------- publishers
class _WorldsPublisher(PublisherBase):
    """Shared parts: parameters, Algorithm 1 on first use and on insertions, the release builder."""

    params = {"l": Interval(int, 2, None), "p": Interval(int, 2, None), "known": ListOf(Text())}
    required = ("l",)
    defaults = {"p": 100}
    #: l-linkability over the possible worlds of the whole sequence (Shmueli & Tassa, Definitions 3.1 and 3.3)
    guarantee = ("possible_worlds.min_linkability >= {l}",)
    #: 004 handles non-identifiers itself: its fake worlds permute them with the sensitive value (section 4,
    #: eq. 5) and every release is checked consistent with every world on them too (condition 9)
    linking_default = "keep"
    linking_covered = True

    def check_config(self, file, key):
        known = self.config.get("known")
        if known is not None and not known:
            raise InputError(f"The 'known' parameter of {self.name} must be a non-empty list", file=file, key=key)

    # -------------------------------------------------------------- preprocessing
    def _known_quasi(self, schema: Schema) -> list[str]:
        known = self.config.get("known")
        if known is None:
            return list(schema.quasi)
        try:
            names = schema.restrict(known)
        except InputError as exc:
            raise exc.located(key="known") from None
        return [n for n in names if schema[n].is_quasi]

    def _worlds(self, snapshot: Table, state: Mapping | None, rng: np.random.Generator) -> tuple[dict, np.ndarray]:
        """The state's worlds, extended to newly inserted individuals (section 5.2); the ``(l, N)`` worlds
        over snapshot rows."""
        schema = snapshot.schema
        if not schema.sensitive:
            raise InputError(f"{self.name} needs a sensitive attribute")
        l = int(self.config["l"])
        state = dict(state or {})
        ids = list(state.get("ids", []))
        worlds = [list(w) for w in state.get("worlds", [[] for _ in range(l - 1)])]
        if state and int(state.get("l", l)) != l:
            raise InputError(f"{self.name}: the state was built for l = {state.get('l')}, not l = {l}")
        snap_ids = pd.Index(snapshot.ids, dtype=object)
        old = pd.Index(ids, dtype=object)
        gone = old.difference(snap_ids)
        if len(gone):
            raise InputError(f"{self.name}: record '{gone[0]}' was removed; tuple removals are not supported "
                             "(Shmueli & Tassa, section 5.3)")
        if ids and state.get("digest") != _digest(snapshot.frame.loc[ids]):
            raise InputError(f"{self.name}: values of existing records changed; updates are not supported "
                             "(Shmueli & Tassa, section 5.3)")
        new = snap_ids.difference(old, sort=False) if len(old) else snap_ids
        if len(new):
            sub = snapshot.subset(list(new))
            quasi = self._known_quasi(schema)
            cols = [list(schema.quasi).index(n) for n in quasi]
            sens = _codes(sub.sensitive)
            try:
                fake, _ = algorithm1(sub.qi_codes[:, cols], sens, [schema[n] for n in quasi], l, rng)
            except InputError as exc:
                what = "the inserted records" if ids else "the table"
                raise InputError(f"{self.name}: {what}: {exc.problem}") from None
            base = len(ids)
            for i in range(l - 1):
                worlds[i].extend((fake[i] + base).tolist())
            ids.extend(new.tolist())
            state["digest"] = _digest(snapshot.frame.loc[ids])
            state["batches"] = list(state.get("batches", [])) + [len(new)]
        state.update({"l": l, "ids": ids, "worlds": worlds})
        order = _state_order(snapshot, ids)
        return state, PossibleWorlds.from_state(state).arrays(order)

    # -------------------------------------------------------------- output
    @staticmethod
    def _release(snapshot: Table, attributes: Sequence[str], regions: _Regions, person: np.ndarray,
                 rng: np.random.Generator, witness: np.ndarray | None = None) -> tuple:
        """``(release, truth)``; with ``witness`` (``(l, N)`` over records) also the witness over the
        release's rows."""
        schema = snapshot.schema
        quasi = [n for n in attributes if schema[n].is_quasi]
        rows = rng.permutation(len(person))
        src = person[rows]
        lo = np.ascontiguousarray(regions.lo[rows], dtype=np.int32).reshape(len(rows), len(quasi))
        hi = np.ascontiguousarray(regions.hi[rows], dtype=np.int32).reshape(len(rows), len(quasi))
        subsets = [n for n in quasi if schema[n].is_subsets]
        masks = {n: np.ascontiguousarray(regions.masks[rows, k]) for k, n in enumerate(subsets)}
        frame = snapshot.frame.iloc[src]
        sens = [n for n in attributes if schema[n].is_sensitive]
        sensitive = composite_sensitive(frame, sens)
        others = [n for n in attributes if not schema[n].is_quasi and not schema[n].is_sensitive]
        other = frame[others].reset_index(drop=True) if others else None
        release = Release(schema=schema, attributes=tuple(attributes), lo=lo, hi=hi, sensitive=sensitive,
                          masks=masks, other=other, group=None)
        if witness is not None:
            return release, ReleaseTruth.of_people(snapshot.ids[src]), witness[:, rows]
        return release, ReleaseTruth.of_people(snapshot.ids[src])

    def _checked(self, release: Release, truth: ReleaseTruth, snapshot: Table, worlds: np.ndarray,
                 witness: np.ndarray | None, state: dict) -> PublishResult:
        """The release after its own check (:mod:`publishers.sequential.check`: consistent with every world,
        l-linkable by the possible-worlds attack), else a one-line refusal."""
        k = int(state.get("releases", 0)) + 1
        check_release(self.name, release, truth, snapshot, worlds, witness, int(self.config["l"]), k)
        state["releases"] = k
        return PublishResult(release=release, truth=truth, state=state)

    @staticmethod
    def _geometry_and_codes(snapshot: Table, quasi: Sequence[str]) -> tuple[_Geometry, np.ndarray]:
        schema = snapshot.schema
        cols = [list(schema.quasi).index(n) for n in quasi]
        return _Geometry([schema[n] for n in quasi]), snapshot.qi_codes[:, cols]


class SequentialDiversity(_WorldsPublisher):
    """The sequential algorithm of Shmueli & Tassa (Algorithms 1 and 2): every release consistent with the
    same ``l`` possible worlds, so the sequence respects l-diversity in the sense of Theorem 4.1.

    Parameters
    ----------
    l : int >= 2
        The number of possible worlds (the table's diversity, Definition 2.3, must be at least ``l``).
    p : int >= 2, default 100
        Largest sub-component of the matching (section 4.4).
    known : list of attribute names, optional
        The attributes known at preprocessing time (default: every attribute of the schema); Algorithm 1
        buckets and orders on their quasi-identifiers only.  Other attributes may be released later (eq. 8).

    Notes
    -----
    The state (JSON) holds ``l``, ``ids``, ``worlds`` (``l - 1`` permutations of indices into ``ids``),
    ``digest`` (a hash of the records' values, to refuse updates), ``batches`` (sizes of the initial table
    and of each insertion) and ``releases``.  Releases carry no ``group`` column: the anonymization is
    non-homogeneous (section 4.5).
    """

    name = "sequential_diversity"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ('Shmueli & Tassa, "Privacy by Diversity in Sequential Releases of Databases" (papers/004): '
             "Algorithms 1 and 2 "
             "(sections 4-5), l-diversity of sequential releases Theorem 4.1, insertions section 5.2")

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = schema.restrict(attributes if attributes is not None else schema.published)
        state, worlds = self._worlds(snapshot, state, rng)
        quasi = [n for n in attributes if schema[n].is_quasi]
        suffix = [n for n in attributes if not schema[n].is_quasi]
        geometry, codes = self._geometry_and_codes(snapshot, quasi)
        regions, person, witness = algorithm2(codes, _keys(snapshot.frame, suffix), worlds, geometry,
                                              int(self.config["p"]), rng, with_witness=True)
        release, truth, witness = self._release(snapshot, attributes, regions, person, rng, witness)
        return self._checked(release, truth, snapshot, worlds, witness, state)


class NonSequentialDiversity(_WorldsPublisher):
    """The non-sequential baseline of section 4.5: one non-homogeneous l-diverse anonymization ``V`` of the
    whole table (Algorithm 1, then Algorithm 2 with every attribute), computed at the first release and kept
    in the state; every release is the projection of ``V`` on its attributes, rows shuffled.

    Parameters are those of ``sequential_diversity``; ``V`` covers the attributes of ``known`` (default
    every attribute), and a release of any other attribute is refused.  Individuals inserted later get their
    own worlds and their own ``V`` rows (section 5.2), computed when they first appear.
    """

    name = "non_sequential_diversity"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ("Shmueli & Tassa (papers/004): the non-sequential baseline of section 4.5")

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        schema = snapshot.schema
        attributes = schema.restrict(attributes if attributes is not None else schema.published)
        known = schema.restrict(self.config["known"]) if self.config.get("known") else schema.published
        outside = [n for n in attributes if n not in known]
        if outside:
            raise InputError(f"{self.name}: attribute '{outside[0]}' is not among the attributes known upfront "
                             f"(parameter 'known'); the non-sequential anonymization cannot release it")
        before = len((state or {}).get("ids", []))
        state, worlds = self._worlds(snapshot, state, rng)
        quasi = [n for n in known if schema[n].is_quasi]
        ids = state["ids"]
        v = dict(state.get("V", {"person": [], "lo": [], "hi": [], "masks": []}))
        if len(ids) > before:  # anonymize the individuals not covered by V yet, on every attribute
            order = _state_order(snapshot, ids)
            rows = order.argsort()[before:]  # snapshot rows of the new individuals (state order)
            new_worlds = worlds[:, rows]
            remap = np.full(len(snapshot), -1, dtype=np.int64)
            remap[rows] = np.arange(len(rows))
            new_worlds = remap[new_worlds]
            suffix = [n for n in known if not schema[n].is_quasi]
            geometry, codes = self._geometry_and_codes(snapshot, quasi)
            regions, person, witness = algorithm2(codes[rows], _keys(snapshot.frame.iloc[rows], suffix),
                                                  new_worlds, geometry, int(self.config["p"]), rng,
                                                  with_witness=True)
            v = {"person": v["person"] + [ids[order[rows[i]]] for i in person],
                 "lo": v["lo"] + regions.lo.tolist(), "hi": v["hi"] + regions.hi.tolist(),
                 "masks": v["masks"] + [[int(x) for x in m] for m in regions.masks],
                 "witness": [a + [ids[order[rows[i]]] for i in w]
                             for a, w in zip(v.get("witness") or [[] for _ in witness], witness.tolist())]}
            state["V"] = v
        pos = pd.Index(snapshot.ids, dtype=object).get_indexer(pd.Index(v["person"], dtype=object))
        q_all = len(quasi)
        cols = [quasi.index(n) for n in attributes if schema[n].is_quasi]
        subsets_all = [n for n in quasi if schema[n].is_subsets]
        subsets = [subsets_all.index(n) for n in attributes if schema[n].is_quasi and schema[n].is_subsets]
        lo = np.asarray(v["lo"], dtype=np.int32).reshape(len(pos), q_all)[:, cols]
        hi = np.asarray(v["hi"], dtype=np.int32).reshape(len(pos), q_all)[:, cols]
        masks = np.asarray(v["masks"], dtype=np.uint64).reshape(len(pos), len(subsets_all))[:, subsets]
        witness = None  # a state written before the witness was kept: the check matches from scratch
        if v.get("witness"):
            witness = pd.Index(snapshot.ids, dtype=object).get_indexer(
                pd.Index(np.concatenate(v["witness"]), dtype=object)).reshape(len(worlds), -1)
        out = self._release(snapshot, attributes, _Regions(lo, hi, masks), pos, rng, witness)
        release, truth, witness = out if witness is not None else (*out, None)
        return self._checked(release, truth, snapshot, worlds, witness, state)
