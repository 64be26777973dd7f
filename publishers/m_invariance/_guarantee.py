"""The self-check of m-invariance and m-Distinct: every release is checked against its guarantee before it is
returned (issue 13, items 1-2); a release that fails is refused with one line naming the requirement and the
record.

What is checked, on the release as published (counterfeit rows included, the adversary cannot tell them
apart) and the previous release (kept as private rows in the publisher state, :class:`PrivateRows`):

* **m-uniqueness** (Xiao & Tao, Definition 2 as Li & Zhou restate it, Definition 15 (1)): every QI-group has at
  least ``m`` rows, all with distinct sensitive values;
* **signature invariance** (m-invariance, Xiao & Tao Definition 4): a record that stays (its *lifespan*
  continues) has the same signature - the set of values of its QI-group - in both releases;
* **legal update instance** (m-Distinct, Li & Zhou Definitions 14-15 (2)): a record that stays has a new
  candidate set that is a legal update instance of its previous update set signature;
* **the update-graph attack** (``ATTACKS["update_graph"]``, Li & Zhou section III): run on the two releases
  linked by the records' private ids (the adversary who knows every record's QI-group), it must find no
  vulnerable value and no inconsistent record.  Every layer of a feasible sub-SUG keeps all its nodes iff every
  pair of neighbouring releases does (edges only join neighbouring layers), and Lemma 3 reduces that pair
  condition to Definition 14, so the check of the last two releases extends the guarantee of the earlier ones;
* with a published ``uid`` (**record tracking**, Barbosa et al. section 4): the *cohort invariant* - every
  QI-group's uids are either all new or exactly the uids of one QI-group of the previous release, and a group
  of the previous release reappears whole or not at all - and the intersection / difference attack
  (``ATTACKS["intersection"]``, principle: ``m`` records and ``m`` distinct values).  Under the invariant every
  uid's candidate set for every pair of releases is its whole cohort, so the pairwise check is enough.

Publishers may call attacks (DESIGN.md); attacks never import this module.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.transitions import TransitionModel

__all__ = ["PrivateRows", "refuse", "check_m_unique", "check_signature_invariance", "check_legal_instances",
           "is_legal_instance", "check_cohorts", "attack_checks"]


@dataclass(frozen=True, eq=False)
class PrivateRows:
    """The private side of one release, kept in the publisher state (never published): per row the person
    (``None`` for a counterfeit), the published group id, the sensitive value and the published uid (or
    ``None``)."""

    person: list
    group: list
    value: list
    uid: list | None

    @classmethod
    def of(cls, release: Release, truth: ReleaseTruth) -> "PrivateRows":
        return cls([None if p is None else str(p) for p in truth.person], [int(g) for g in release.group],
                   [str(v) for v in release.sensitive],
                   None if release.uid is None else [str(u) for u in release.uid])

    @classmethod
    def from_state(cls, state: Mapping | None) -> "PrivateRows | None":
        doc = (state or {}).get("rows")
        if not doc:
            return None
        return cls(list(doc["person"]), [int(g) for g in doc["group"]], list(doc["value"]),
                   None if doc.get("uid") is None else list(doc["uid"]))

    def state(self) -> dict:
        return {"person": self.person, "group": self.group, "value": self.value, "uid": self.uid}

    def groups(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for i, g in enumerate(self.group):
            out.setdefault(g, []).append(i)
        return out

    def group_of(self) -> dict[str, int]:
        """person -> group id (real rows only)."""
        return {p: g for p, g in zip(self.person, self.group) if p is not None}

    def group_values(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for g, v in zip(self.group, self.value):
            out.setdefault(g, []).append(v)
        return out


def refuse(publisher: str, requirement: str, who: str) -> None:
    """Raise the one-line refusal (exit 2 in the CLI): which requirement failed, and for whom."""
    raise InputError(f"{publisher} refuses the release: {requirement} fails for {who}")


def check_m_unique(publisher: str, rows: PrivateRows, m: int) -> None:
    """Every QI-group has at least ``m`` rows, with distinct sensitive values (m-uniqueness)."""
    for g, vals in rows.group_values().items():
        if len(vals) < m or len(set(vals)) != len(vals):
            refuse(publisher, f"{m}-uniqueness", f"QI-group {g} (values {sorted(vals)})")


def check_signature_invariance(publisher: str, prev: PrivateRows, cur: PrivateRows, continuing: Iterable[str]) -> None:
    """Xiao & Tao's signature invariance: every continuing record's QI-group has the same set of values."""
    pg, cg = prev.group_of(), cur.group_of()
    pv, cv = prev.group_values(), cur.group_values()
    same: dict[tuple, bool] = {}  # (previous group, group) -> same set of values: compared once per pair
    for p in continuing:
        if p not in pg or p not in cg:
            continue
        key = (pg[p], cg[p])
        if key not in same:
            same[key] = set(pv[key[0]]) == set(cv[key[1]])
        if not same[key]:
            refuse(publisher, "signature invariance",
                   f"record '{p}' (signature {sorted(set(pv[pg[p]]))}, now {sorted(set(cv[cg[p]]))})")


def is_legal_instance(values: Sequence[str], previous: Sequence[str], model: TransitionModel) -> bool:
    """Definition 14: ``values`` is a legal update instance of ``USS = {CUS(v) : v in previous}``: as many
    values as candidate update sets, every value in some CUS, every CUS holding some value."""
    if len(values) != len(previous):
        return False
    adj = model.adjacency
    a = model.indices(list(previous))
    b = model.indices(list(values))
    if (a < 0).any() or (b < 0).any():
        return False
    hit = adj[np.ix_(a, b)]  # hit[i, j]: values[j] in CUS(previous[i])
    return bool(hit.any(axis=0).all() and hit.any(axis=1).all())


def check_legal_instances(publisher: str, prev: PrivateRows, cur: PrivateRows, model: TransitionModel) -> None:
    """Definition 15 (2): every record in both releases has a legal update instance of its previous USS."""
    pg, cg = prev.group_of(), cur.group_of()
    pv, cv = prev.group_values(), cur.group_values()
    legal: dict[tuple, bool] = {}
    by_values: dict[tuple, bool] = {}  # Definition 14 depends on the two value lists only, not on the groups
    for p, g in cg.items():
        if p not in pg:
            continue
        if (g, pg[p]) not in legal:
            key = (tuple(sorted(cv[g])), tuple(sorted(pv[pg[p]])))
            if key not in by_values:
                by_values[key] = is_legal_instance(key[0], key[1], model)
            legal[g, pg[p]] = by_values[key]
        if not legal[g, pg[p]]:
            refuse(publisher, "the legal update instance of Definition 14",
                   f"record '{p}' (candidate set {sorted(cv[g])} after {sorted(pv[pg[p]])})")


def check_cohorts(publisher: str, prev: PrivateRows, cur: PrivateRows) -> None:
    """The cohort invariant of published uids: a group's uids are all new or exactly one previous group's, and
    a previous group reappears whole or not at all."""
    prev_of = {u: g for u, g in zip(prev.uid or [], prev.group)}
    prev_sets = {g: frozenset(prev.uid[i] for i in rows) for g, rows in prev.groups().items()}
    for g, rows in cur.groups().items():
        uids = frozenset(cur.uid[i] for i in rows)
        old = {prev_of[u] for u in uids if u in prev_of}
        if not old:
            continue
        if len(old) != 1 or prev_sets[next(iter(old))] != uids:
            refuse(publisher, "the uid cohort invariant (record tracking, Barbosa et al. section 4)",
                   f"QI-group {g} (uids {sorted(uids)})")
    # a previous group whose uids partly reappear fails above (its uids meet another set); whole disappearance
    # (a retired cohort) is allowed


def _minimal_release(schema, rows: PrivateRows, ids: Sequence[str]) -> Release:
    """The two columns the update-graph / intersection attacks read when records are linked by id: group and
    sensitive value (no quasi-identifier: the link is the id)."""
    sens = tuple(n for n in schema.published if schema[n].is_sensitive)
    n = len(rows.value)
    return Release(schema=schema, attributes=sens, lo=np.zeros((n, 0), np.int32), hi=np.zeros((n, 0), np.int32),
                   sensitive=np.asarray(rows.value, dtype=object), group=np.asarray(rows.group, dtype=np.int64),
                   uid=np.asarray(list(ids), dtype=object))


def _private_ids(rows: PrivateRows, tag: str, rename: Mapping[str, str] | None = None) -> list[str]:
    rename = rename or {}
    return [f"~counterfeit:{tag}:{i}" if p is None else rename.get(p, p) for i, p in enumerate(rows.person)]


def attack_checks(publisher: str, schema, prev: PrivateRows, cur: PrivateRows, model: TransitionModel, m: int, *,
                  rename: Mapping[str, str] | None = None, published_uid: bool = False) -> None:
    """Run the attacks that state the guarantee on the last two releases, through the registry.

    * ``update_graph`` (``linkage: uid``) on the records' private ids (``rename`` gives a record that starts a
      new lifespan a new id): no vulnerable value, no inconsistent record;
    * with ``published_uid``: ``update_graph`` on the published uids, and ``intersection`` with the principle
      ``k = m``, distinct ``l = m`` (Barbosa et al. section 4): no violation.
    """
    from attacks import ATTACKS  # publishers may call attacks, never the reverse

    views = [(_private_ids(prev, "prev"), _private_ids(cur, "cur", rename), "records linked by identity")]
    if published_uid:
        views.append((prev.uid, cur.uid, "records linked by the published uid"))
    for prev_ids, cur_ids, how in views:
        seq = ReleaseSequence()
        seq.append(_minimal_release(schema, prev, prev_ids), None, None)
        seq.append(_minimal_release(schema, cur, cur_ids), None, None)
        view = seq.view(Adversary(quasi_identifiers="none", sensitive="transitions"), model)
        res = ATTACKS["update_graph"](linkage="uid").run(view)
        s = res.summary
        if not res.exact or s["vulnerable_values"] or s["inconsistent"]:
            w = res.worst.get("vulnerable_values") or res.worst.get("max_risk") or {}
            refuse(publisher, f"the update-graph attack (Li & Zhou Lemma 3, {how}: {s['vulnerable_values']} "
                              f"vulnerable values, {s['inconsistent']} inconsistent records)",
                   f"record '{w.get('target', '?')}'")
        if published_uid and how.endswith("uid"):
            res = ATTACKS["intersection"](k=m, l=m).run(view)
            if res.summary["violations"]:
                t = res.targets[0] if res.targets else {}
                refuse(publisher, f"the uid-tracking intersection attack (Barbosa et al. section 4, "
                                  f"{res.summary['violations']} candidate sets below {m} distinct values)",
                       f"uid '{t.get('uid', '?')}'")



#: largest sequence (rows summed over its releases) whose releases and snapshots are kept (private state) for
#: the whole-sequence check
SEQUENCE_ROWS = 100_000


def extend_history(state: Mapping, release: Release, snapshot) -> list | None:
    """Every release so far in the CSV layout with its counterfeit statistics, and its snapshot's published
    columns (private state), or ``None`` once they exceed :data:`SEQUENCE_ROWS` rows."""
    history = state.get("history", [] if not state.get("releases") else None)
    if history is None or len(release) + sum(len(h["ids"]) for h in history) > SEQUENCE_ROWS:
        return None
    frame = release.to_frame()
    # Series.tolist(): the same values as iterating the column (pd.NA stays pd.NA), a tenth of the time on
    # pyarrow-backed text
    return [*history, {"release": {c: [str(v) for v in frame[c].tolist()] for c in frame.columns},
                       "counterfeits": {str(g): int(c) for g, c in (release.counterfeits or {}).items()},
                       "ids": [str(x) for x in snapshot.ids],
                       "columns": {c: [str(v) for v in snapshot.frame[c].tolist()] for c in snapshot.frame.columns}}]


#: the earlier releases :func:`sequence_check` rebuilt from history entries, in this process, keyed by the entry
#: object (held, so its id is not reused; a state read back from JSON is new objects and is rebuilt): the
#: publisher of each month and of each repair candidate (whose states share the entries) rebuild them once
_REBUILT: "OrderedDict[int, tuple]" = OrderedDict()
#: entries kept in :data:`_REBUILT` (the oldest dropped first)
REBUILT_ENTRIES = 32


def sequence_check(publisher: str, history: list | None, release: Release, snapshot, model: TransitionModel) -> bool:
    """The declared guarantee as the pipeline judges it: the update-graph attack (Li & Zhou section III,
    Lemma 3; population linkage, the public update ``model``, ``sensitive: transitions``) over the *whole*
    sequence, rebuilt from ``history``.  :func:`attack_checks` renames a record whose value changed (a new
    lifespan, persistent values) and looks at the last two releases; an adversary who links versions by
    quasi-identifiers and knows the model does neither, and an update outside the model can leave a value
    with no feasible edge (tests/publishers/test_guarantee_holes.py).  The releases rebuilt from history
    entries are kept in :data:`_REBUILT` (keyed by the entry object itself, so a state read back from JSON is
    rebuilt).  Returns whether the check ran."""
    import pandas as pd

    from attacks import ATTACKS
    from multirelease.formats.release_csv import release_from_frame
    from multirelease.model.table import Table

    if not history:  # None: not kept; []: a first release, one layer: every node of an m-unique group is feasible
        return False
    cache = _REBUILT
    seq = ReleaseSequence()
    for h in history:
        hit = cache.get(id(h))
        if hit is None or hit[0] is not h:
            frame = pd.DataFrame(h["columns"], index=pd.Index(h["ids"], name=snapshot.frame.index.name),
                                 dtype=object)
            hit = cache[id(h)] = (h, release_from_frame(
                snapshot.schema, pd.DataFrame(h["release"], dtype=object),
                counterfeits={int(g): c for g, c in h["counterfeits"].items()} or None), Table(snapshot.schema, frame))
        seq.append(hit[1], None, hit[2])
        cache.move_to_end(id(h))
        while len(cache) > REBUILT_ENTRIES:
            cache.popitem(last=False)
    seq.append(release, None, snapshot)
    res = ATTACKS["update_graph"](linkage="population").run(seq.view(Adversary(sensitive="transitions"), model))
    lo, hi = res.interval("vulnerable_values")
    if hi > 0:
        w = res.worst.get("vulnerable_values") or {}
        how = "" if lo > 0 else f" UNKNOWN: proved only [{lo:g}, {hi:g}]"
        refuse(publisher, f"the update-graph attack over all {len(seq)} releases (Li & Zhou Lemma 3, population "
                          f"linkage, the public update model: vulnerable_values = {hi:g}{how})",
               f"record '{w.get('target', '?')}'")
    return True
