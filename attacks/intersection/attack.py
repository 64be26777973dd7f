"""Intersection and difference attacks on successive releases, over every release at once (Barbosa, Pinto,
Gomes, CIKM 2012, section 4; ``003_9c5f9a30c53bd642.txt``).  The engine is :mod:`attacks.intersection.core`.

**The adversary** (section 4, "Attacker model") sees every release, knows which individuals are published in
each release and the quasi-identifiers of her targets, "which permits finding the corresponding equivalence
class", and tracks records across releases by a stable ``uid`` (record tracking).  A release row carries a uid
and its sensitive value together, so the value of every uid in every release is public: what she does not
know is which uid is which individual.

**Consistent worlds.**  A world is a one-to-one map ``pi`` from individuals to published uids that reproduces
what she sees: for every individual ``I`` and release ``i``, ``pi(I)`` is published in ``i`` exactly when ``I``
is, and then in ``I``'s class ``E_i(I)``.  (Uids that are the image of nobody are counterfeits; a world may
only exchange them with real uids of the same classes.)

**Inference.**  The candidate set of a target ``t`` is ``C(t) = {pi(t) : pi consistent}``; what she learns of
``t``'s sensitive value in release ``i`` is the multiset of the values of ``C(t)`` in ``i`` (uniform over
``C(t)``).  Write ``sig(u) = (cls_1(u), ..., cls_R(u))`` (``cls_i(u)`` the class of ``u`` in release ``i``, or
"absent"): the presence pattern and the class in every release.

*Exactness.*  ``C(t) = {u : sig(u) = sig(t)} = n_{i in P(t)} E_i(t) - U_{j not in P(t)} R_j`` (``P(t)``:
the releases ``t`` is published in, ``R_j`` the uids of release ``j``).  ``<=``: a consistent ``pi`` maps
``t`` to a uid with ``t``'s presence and classes.  ``>=``: for ``u`` with ``sig(u) = sig(t)``, exchanging
the uids of ``t`` and of ``u``'s owner (or giving ``t`` the counterfeit ``u``) keeps every individual's
presence and classes: a consistent world.  So "``t`` may be ``u``" is an equivalence relation whose blocks
are the signature classes; every uid of a block is possible for every target of it, and no matching or flow
is needed (the feasibility question of each ``(target, uid)`` pair is answered by the exchange).  Every
candidate set the paper's set algebra builds from any releases (``E_a(t) n E_b(t)``, ``E_b(t) - R_a``, any
intersection and difference of them over any set of releases) contains ``C(t)``, and ``C(t)`` is one of them
(intersect over ``P(t)``, subtract every other release): ``C(t)`` is the fixpoint of the paper's procedure
iterated over all releases, and the strongest inference of its adversary.

**Verdict.**  ``t`` is a *violation* when ``C(t)`` breaks the protection principle (Definition 1: k-anonymity,
distinct or entropy l-diversity, an alpha bound; any :class:`~multirelease.model.principles.Principle`) on the
values of some release ``t`` is published in (with updates, a uid's value may differ between releases; every
one is published).  For a monotone principle (Definition 3: k-anonymity, distinct l-diversity) this is the
same as "some candidate set she can build breaks it", since each contains ``C(t)``; for a non-monotone one
(entropy l-diversity, alpha) the attack judges what she actually knows, ``C(t)``, not its supersets.
Assumption: she finds ``t``'s class in every release it is published in, as the paper grants; where
generalized regions overlap a real adversary may know less (larger candidate sets).

**Witness.**  For each violating uid, ``releases`` is an inclusion-minimal set of releases whose combination
alone already breaks the principle (dropping any one of them gives a set that passes), with ``present_in`` /
``absent_from`` splitting it, ``candidates`` the set built from those releases only (``{u : cls_i(u) =
cls_i(t)`` for ``i`` in ``releases}``), ``judged`` the release whose values break it.  A witness of three
releases is a breach that no pair of releases shows.

Presence is what the releases show: a record is in release ``i`` when its uid is published there (a record
the publisher suppressed is not in the release).  Counterfeit rows carry uids like real ones and count as
records (the adversary cannot tell them apart).

Without uids, the *insertion-only* difference attack of section 4 ("If the attacker did not know the unique
identifier..."): for releases ``a < b``, a class ``E1`` of ``a`` and the classes ``L`` of ``b`` whose regions
overlap ``E1``'s, a target inserted between ``a`` and ``b`` whose quasi-identifiers fall in ``E1`` and in
``E2 in L`` has the candidate set ``C = (L - E1) n E2``, computed on multisets of sensitive values (insertions
only, persistent values: ``Id(E1)`` is contained in ``Id(L)``).  Where ``L`` holds fewer copies of a value
than ``E1`` (a deletion happened), the assumption fails and the pair is skipped (listed in ``notes``).  With
the population of both releases (``view.population``), the targets are the individuals inserted between them
whose QI points fall in ``E1`` and ``E2``; otherwise each position ``(E1, E2)`` counts as one target.  This
variant stays pairwise: the paper defines it for two releases.

**Linking columns** (:mod:`multirelease.model.linking`; Shmueli & Tassa 004, section 5.2).  Published columns of role
``non-identifier`` or ``insensitive`` not declared changing are persistent: one value per individual for the
whole sequence, unknown to the adversary.  A row then carries a *linked value* (sensitive value and linking
tuple), and the candidate elements of section 4 are linked values: the target's true linked value lies in
every class it is in.  Without uids, ``C = (L - E1) n E2`` is computed on multisets of linked values (a record
of ``E1`` leaves ``L`` only with its own linking tuple), and the principle is then judged on the multiset of
the sensitive values the surviving linked values carry (Definition 1 is about sensitive values: ``(flu, O+)``
and ``(flu, A+)`` are one value).  With uids the uid already links the releases and the target's own tuple is
unknown, so the candidate sets are the signature blocks as above, except that a uid whose linking tuple
changes between releases is nobody's record (one individual, one tuple): it is set aside before the sets are
built (counted in ``stats["set_aside"]``, not a target; :func:`attacks.intersection.core.tracked`).  Witnesses
add ``linked_by`` (the columns) and ``linked`` (the labelled linked values of the candidate set, ``measles
(bt=O+)``, with their counts).  Without linking columns everything is as above, value for value.

Cost with uids: ``R`` hash factorizations of ``n`` keys for the signatures and one sort per release (``R``
releases of ``n`` tracked records); for the violating blocks, ``O(R m)`` over the ``m`` pairs (target, member
of its smallest class) for the intersection split; ``O(R^2 |U|)`` per listed witness (``U``: the uids sharing
a class with the target somewhere).  The 41 releases of 10,000 Adult records (30,000 uids): about 0.5 s on
BPG's output (no violation), about 4 s on naive Mondrian republication (every uid violated).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.linking import LINKING_ROLES, Linking
from multirelease.params import Anything, Interval, Options
from multirelease.model.principles import Principle
from multirelease.model.release import Release, comparable
from multirelease.model.sequence import SequenceView

from attacks.base import AttackBase, AttackResult, Progress
from .core import (Tracked, intersection_only_fails, judge_blocks, minimal_releases,
                                signature_blocks, tracked, tracked_candidate_sets)

__all__ = ["Intersection", "tracked_candidate_sets"]


class Intersection(AttackBase):
    """The intersection and difference attacks of Barbosa et al., section 4, over every release at once.

    Parameters
    ----------
    k : int in [1, inf), default 2 (1 when only ``l`` is given)
        A target's candidate set must hold at least ``k`` records.
    l : number in [1, inf), default 1
        A target's candidate set must hold at least ``l`` distinct sensitive values (distinct l-diversity
        unless ``l_kind: entropy``).
    l_kind : "distinct" | "entropy", default "distinct"
        Which l-diversity ``l`` means: ``distinct`` values, or ``entropy`` (at least ``log l``).
    alpha : number in (0, 1], optional
        No sensitive value may make up more than ``alpha`` of a candidate set.  Together they define the protection principle a candidate set must satisfy
        (:class:`~multirelease.model.principles.Principle`, Definition 1 of the paper).
    principle : Principle, optional
        Any principle object instead (from Python; overrides ``k``, ``l``, ``l_kind``, ``alpha``).
    max_listed : int, default 100
        At most this many violating targets are listed in ``targets`` (the count is always exact).

    Notes
    -----
    With uids (the module docstring defines the inference): ``violations`` (targets whose exact candidate
    set ``C(t)`` breaks the principle), split into ``intersection_violations`` (the intersection of ``t``'s
    classes over the releases it is published in already breaks it) and ``difference_violations`` (the breach
    needs the releases ``t`` is absent from); ``targets`` (tracked records), ``releases`` (releases combined),
    ``pairs`` (release pairs, ``R (R - 1) / 2``: every pair's sets are covered), ``min_candidates`` (the
    smallest ``C(t)``), ``min_l_distinct`` (the fewest distinct sensitive values of a ``C(t)`` in a release
    ``t`` is published in).  ``targets`` lists violating targets (uid order of first publication) with their
    witness (the releases that break them); ``worst["violations"]`` is the most severe one (fewest distinct
    values, then fewest records).  Without uids (insertion-only, pairwise): the same names, ``targets``
    counting target positions.  Exact: the candidate sets are computed, not estimated.
    """

    name = "intersection"
    params = {
        "k": Interval(int, 1, None),
        "l": Interval(float, 1, None),
        "l_kind": Options(("distinct", "entropy")),
        "alpha": Interval(float, 0, 1, closed="right"),
        "principle": Anything(),
        "max_listed": Interval(int, 0, None),
    }
    defaults = {"l_kind": "distinct", "max_listed": 100}
    metrics = ("violations", "intersection_violations", "difference_violations", "targets", "releases", "pairs",
               "min_candidates", "min_l_distinct")
    #: the paper and its sections (reference, ``multirelease describe``)
    paper = ("Barbosa, Pinto, Gomes, \"Generically Extending Anonymization Algorithms to Deal with Successive "
             "Queries\" (CIKM 2012; papers/003): attacker model and attacks section 4, protection principles "
             "Definitions 1 and 3")
    #: what each summary metric means
    metric_descriptions = {
        "violations": "targets whose exact candidate set C(t) breaks the principle (k, l, alpha) in a release "
                      "they are published in; 0 is safe",
        "intersection_violations": "violations already caused by intersecting the target's classes over the "
                                   "releases it is published in",
        "difference_violations": "violations that need the releases the target is absent from (the "
                                 "difference attack)",
        "targets": "tracked records (uids) judged; without uids, target positions",
        "releases": "releases combined",
        "pairs": "release pairs covered, R (R - 1) / 2",
        "min_candidates": "the smallest candidate set C(t) of any target",
        "min_l_distinct": "the fewest distinct sensitive values of a candidate set in a release its target is "
                          "published in",
    }

    def __init__(self, *, _file: str | None = None, _key: str | None = None, **params: Any):
        super().__init__(_file=_file, _key=_key, **params)
        p = self.config.get("principle")
        if p is not None and not isinstance(p, Principle):
            raise InputError(f"The 'principle' parameter of {self.name} must be a Principle. Got {p!r}.",
                             file=_file, key=f"{_key}.principle" if _key else "principle")

    @property
    def principle(self) -> Principle:
        c = self.config
        if c.get("principle") is not None:
            return c["principle"]
        k = c.get("k", 1 if ("l" in c or "alpha" in c) else 2)
        return Principle(k=int(k), l=float(c.get("l", 1.0)), l_kind=c["l_kind"], alpha=c.get("alpha"))

    def applies(self, view: SequenceView) -> bool:
        """True when there are two releases or more and every release carries uids."""
        return len(view.releases) >= 2 and all(r.uid is not None for r in view.releases)

    baseline = (("violations", "==", 0),)

    def run(self, view: SequenceView, progress: Progress | None = None) -> AttackResult:
        if not view.releases:
            raise InputError("the intersection attack needs at least one release")
        if all(r.uid is not None for r in view.releases):
            return self._run_tracked(view, progress)
        if any(r.uid is not None for r in view.releases):
            raise InputError("some releases carry uids and others do not: give uids in every release or none",
                             key="column uid")
        return self._run_untracked(view, progress)

    # ------------------------------------------------------------------ with record tracking
    def _run_tracked(self, view: SequenceView, progress: Progress | None) -> AttackResult:
        return self._judge_tracked(tracked(view.releases, view.linking), progress)

    def _judge_tracked(self, tr: Tracked, progress: Progress | None = None) -> AttackResult:
        """The attack on the releases in uid space (:func:`attacks.intersection.core.tracked`)."""
        principle = self.principle
        n_u = len(tr.uids)
        n_rel = tr.cls.shape[0]
        block, rep = signature_blocks(tr)
        verdicts = judge_blocks(tr, block, len(rep), principle, progress)
        bad_blocks = np.flatnonzero(~verdicts.ok)
        # the intersection over the releases published in, absences unused, judged once per violating block
        inter = np.zeros(len(rep), dtype=bool)
        inter[bad_blocks] = intersection_only_fails(tr, rep[bad_blocks], principle)
        if progress is not None:
            progress(n_rel, n_rel, "done")
        violated = ~verdicts.ok[block]
        n_viol = int(violated.sum())
        n_inter = int(inter[block].sum())
        listed = np.flatnonzero(violated)[: self.config["max_listed"]]
        cache: dict[int, dict] = {}
        targets = [self._witness(tr, int(u), int(block[u]), int(rep[block[u]]), verdicts, inter, principle,
                                 cache)
                   for u in listed.tolist()]
        worst_doc: dict[str, Any] = {}
        if len(bad_blocks):
            j = bad_blocks[np.lexsort((verdicts.size[bad_blocks], verdicts.distinct[bad_blocks]))[0]]
            worst_doc["violations"] = self._witness(tr, int(rep[j]), int(j), int(rep[j]), verdicts, inter,
                                                   principle, cache)
        summary = {
            "violations": n_viol,
            "intersection_violations": n_inter,
            "difference_violations": n_viol - n_inter,
            "targets": n_u,
            "releases": n_rel,
            "pairs": n_rel * (n_rel - 1) // 2,
            "min_candidates": int(verdicts.size.min()) if len(rep) else 0,
            "min_l_distinct": int(verdicts.distinct.min()) if len(rep) else 0,
        }
        notes = [f"principle: {principle.describe()}",
                 "record tracking by uid; presence from the published uids; candidate sets over all releases "
                 "(one per presence-and-class signature)"]
        if n_viol > len(targets):
            notes.append(f"{n_viol - len(targets)} more violating targets not listed (max_listed)")
        stats: dict[str, Any] = {"signatures": int(len(rep))}
        if tr.linking:
            notes.append("linking columns read as persistent (Shmueli & Tassa, section 5.2): "
                         + ", ".join(tr.linking))
            stats["set_aside"] = len(tr.set_aside)
            if tr.set_aside:
                shown = ", ".join(tr.set_aside[:5]) + (" ..." if len(tr.set_aside) > 5 else "")
                notes.append(f"{len(tr.set_aside)} uid(s) set aside: their linking tuple changes between releases, "
                             f"so they are no individual's record ({shown})")
        return AttackResult(attack=self.name, summary=summary, exact=True, worst=worst_doc, targets=tuple(targets),
                            notes=tuple(notes), stats=stats)

    @staticmethod
    def _witness(tr: Tracked, u: int, b: int, r: int, verdicts, inter: np.ndarray, principle: Principle,
                 cache: dict) -> dict:
        """One target's violation: its uid, an inclusion-minimal set of releases (from 1) whose combination
        breaks the principle, the candidate set those releases give (uids, and the sensitive-value counts of
        the release judged) and the size of the exact all-release set.  Computed once per signature block
        (``r``: its representative uid).  ``attack`` is "intersection" when the witness releases all publish
        ``u``; for an intersection violation (``inter[b]``) they are taken among those, so with a monotone
        principle ``attack`` agrees with the summary's split (with a non-monotone one, a difference violation
        may have a witness of releases publishing ``u`` whose larger set breaks the principle)."""
        if b not in cache:
            among = np.flatnonzero(tr.cls[:, r] >= 0) if inter[b] else None
            rels, members, judged = minimal_releases(tr, r, principle, among)
            on = [i for i in rels if tr.cls[i, r] >= 0]
            vals, cnt = np.unique(tr.sens[judged, members], return_counts=True)
            counts = {str(tr.values[v]): int(n) for v, n in zip(vals, cnt)}
            cache[b] = {
                "attack": "intersection" if len(on) == len(rels) else "difference",
                "releases": [i + 1 for i in rels],
                "present_in": [i + 1 for i in on],
                "absent_from": [i + 1 for i in rels if tr.cls[i, r] < 0],
                "groups": [int(tr.group_ids[i][tr.cls[i, r]]) for i in on],
                "candidates": sorted(str(x) for x in tr.uids[members]),
                "size": int(len(members)),
                "judged": judged + 1,
                "sensitive": counts,
                "l_distinct": len(counts),
                "exact_size": int(verdicts.size[b]),
            }
            if tr.linking:
                lv, lc = np.unique(tr.linked[judged, members], return_counts=True)
                cache[b]["linked_by"] = list(tr.linking)
                cache[b]["linked"] = {_label(tr.linking, tr.linked_values[v]): int(n) for v, n in zip(lv, lc)}
        return {"uid": str(tr.uids[u]), **cache[b]}

    # ------------------------------------------------------------------ one release at a time (attacks.incremental)
    def extend(self, state, view: SequenceView, index: int):
        """The attack over releases ``1 .. index``: the releases in uid space are kept (:mod:`attacks.
        intersection_inc`) and the new one added; the blocks and verdicts are then those of :meth:`run` on
        the same :class:`Tracked` (with uids; without them the insertion-only variant is run on the whole
        sequence and there is nothing to extend: ``NotImplemented``)."""
        from .incremental import TrackedState

        release = view.releases[0]
        if state is None and release.uid is None:
            return NotImplemented
        if any(release.schema[a].role in LINKING_ROLES and a not in view.adversary.changing
               for a in release.attributes if a in release.schema):
            # a persistent linking column links releases the kept state does not show: the whole sequence
            return NotImplemented
        if release.uid is None or (state is not None and not isinstance(state, TrackedState)):
            raise InputError("some releases carry uids and others do not: give uids in every release or none",
                             key="column uid")
        state = (state or TrackedState.empty()).extend(release, index)
        return self._judge_tracked(state.tracked()), state

    @staticmethod
    def state_parts(state) -> tuple[bytes, bytes]:
        return state.parts()

    @staticmethod
    def load_state(parts: list, summary: bytes):
        from .incremental import TrackedState

        return TrackedState.load(parts, summary)

    # ------------------------------------------------------------------ without uids (insertions only)
    def _run_untracked(self, view: SequenceView, progress: Progress | None) -> AttackResult:
        principle = self.principle
        rels = view.releases
        linking = view.linking
        # the candidate elements: linked values (the sensitive values themselves without linking columns)
        linked = [np.asarray(linking.values(r), dtype=object) for r in rels]
        vals = np.concatenate(linked).astype(str)
        vuniq = np.unique(vals)
        vindex = {v: i for i, v in enumerate(vuniq)}
        nv = len(vuniq)
        if linking:
            # linked value -> sensitive value: the principle is judged on the sensitive values
            proj, suniq = Linking.project(vuniq)
        else:
            proj, suniq = None, vuniq

        def class_counts(r: Release, values: np.ndarray) -> np.ndarray:
            codes = np.array([vindex[str(x)] for x in values], dtype=np.int64)
            out = np.zeros((r.n_classes, nv), dtype=np.int64)
            np.add.at(out, (r.classes, codes), 1)
            return out

        counts = [class_counts(r, v) for r, v in zip(rels, linked)]
        regions = [r.class_regions for r in rels]
        targets: list[dict] = []
        notes: list[str] = [f"principle: {principle.describe()}",
                            "no uids: insertion-only difference attack on multisets of sensitive values"
                            if not linking else
                            "no uids: insertion-only difference attack on multisets of linked values, judged on "
                            "their sensitive values"]
        if linking.note():
            notes.append(linking.note())
        violations = 0
        n_targets = 0
        n_pairs = 0
        min_size, min_distinct = None, None
        worst = None
        skipped = 0
        total = len(rels) * (len(rels) - 1) // 2
        for a in range(len(rels)):
            for b in range(a + 1, len(rels)):
                n_pairs += 1
                if progress is not None:
                    progress(n_pairs - 1, total, f"releases {a + 1} and {b + 1}")
                ra, rb = rels[a], rels[b]
                common = [n for n in ra.quasi if n in rb.quasi]
                ia = [ra.quasi.index(n) for n in common]
                ib = [rb.quasi.index(n) for n in common]
                lo_a, hi_a = regions[a]
                lo_b, hi_b = regions[b]
                overlap = comparable(lo_a[:, None, ia], hi_a[:, None, ia], lo_b[None, :, ib], hi_b[None, :, ib])
                pop_targets = self._inserted(view, a, b, common)
                for e1 in range(ra.n_classes):
                    lset = np.flatnonzero(overlap[e1])
                    if not len(lset):
                        continue
                    rest = counts[b][lset].sum(axis=0) - counts[a][e1]
                    if (rest < 0).any():
                        skipped += 1
                        continue
                    for e2 in lset:
                        cl = np.minimum(rest, counts[b][e2])
                        c = cl if proj is None else np.bincount(proj, weights=cl, minlength=len(suniq)).astype(
                            np.int64)
                        size = int(c.sum())
                        if size == 0:
                            continue  # no record of E2 can be new: no target is inserted there
                        distinct = int(np.count_nonzero(c))
                        if pop_targets is not None:
                            pts = pop_targets
                            inside = np.all((lo_a[e1, ia] <= pts) & (pts <= hi_a[e1, ia]), axis=1) & \
                                np.all((lo_b[e2, ib] <= pts) & (pts <= hi_b[e2, ib]), axis=1)
                            weight = int(inside.sum())
                        else:
                            weight = 1
                        if weight == 0:
                            continue
                        n_targets += weight
                        min_size = size if min_size is None else min(min_size, size)
                        min_distinct = distinct if min_distinct is None else min(min_distinct, distinct)
                        if principle.ok(c):
                            continue
                        violations += weight
                        doc = {"attack": "difference (insertions only)", "releases": [a + 1, b + 1],
                               "groups": [self._gid(ra, e1), self._gid(rb, int(e2))], "targets": weight,
                               "size": size, "l_distinct": distinct,
                               "sensitive": {str(suniq[v]): int(c[v]) for v in np.flatnonzero(c)}}
                        if linking:
                            doc["linked_by"] = list(linking.columns)
                            doc["linked"] = {linking.label(vuniq[v]): int(cl[v]) for v in np.flatnonzero(cl)}
                        if len(targets) < self.config["max_listed"]:
                            targets.append(doc)
                        if worst is None or (distinct, size) < worst[0]:
                            worst = ((distinct, size), doc)
        if progress is not None:
            progress(total, total, "done")
        if skipped:
            notes.append(f"{skipped} class(es) skipped: the later release lost some of their values "
                         "(a deletion breaks the insertion-only assumption)")
        summary = {"violations": violations, "intersection_violations": 0, "difference_violations": violations,
                   "targets": n_targets, "releases": len(rels), "pairs": n_pairs, "min_candidates": int(min_size or 0),
                   "min_l_distinct": int(min_distinct or 0)}
        worst_doc = {"violations": worst[1]} if worst is not None else {}
        return AttackResult(attack=self.name, summary=summary, exact=True, worst=worst_doc, targets=tuple(targets),
                            notes=tuple(notes))

    @staticmethod
    def _gid(r: Release, cls: int) -> int:
        if r.group is None:
            return cls + 1
        return int(r.group[int(np.flatnonzero(r.classes == cls)[0])])

    @staticmethod
    def _inserted(view: SequenceView, a: int, b: int, common: list[str]) -> np.ndarray | None:
        """QI codes (over ``common``) of the individuals of population ``b`` absent from population ``a``, or
        ``None`` when either population is unknown."""
        pops = view.population
        if len(pops) <= max(a, b) or pops[a] is None or pops[b] is None:
            return None
        pa, pb = pops[a], pops[b]
        new = ~pd.Index(pb.ids).isin(pd.Index(pa.ids))
        allq = list(pb.schema.quasi)
        return pb.qi_codes[new][:, [allq.index(n) for n in common]]


def _label(columns: tuple, value) -> str:
    """A linked value as a reader sees it (:meth:`multirelease.model.linking.Linking.label`)."""
    return Linking(tuple(columns)).label(value)
