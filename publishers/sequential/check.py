"""The own check of the possible-worlds publishers (:mod:`publishers.sequential.diversity`, Shmueli & Tassa,
../shared/papers/004_db68606f48036092.txt): a release is returned only when it is consistent with every one
of the publisher's ``l`` worlds, and the possible-worlds attack finds it l-linkable.

* **Consistency** (Definition 3.1 restricted to the new release; Theorem 4.3): for every world ``T_i`` there
  is a bijection between the release's rows and the world's tuples in which each row generalizes its tuple's
  quasi-identifiers and carries its non-quasi-identifier values (sensitive ones included).  Algorithm 2
  hands over the bijections it built (``witness``) and :func:`witness_violation` verifies them (one
  permutation per world, containment, equal values: ``O(l N q)`` numpy); a release of at most
  ``attack_rows`` rows is also matched from scratch (:func:`inconsistent_world`, a maximum bipartite
  matching per value of those attributes), independently of Algorithm 2's bookkeeping.  Every release of
  the sequence is consistent with the same ``l`` worlds, and they link every individual to ``l`` distinct
  values (Theorem 4.2): the *whole sequence* is l-linkable (section 4.1, "the case of l-linkability is
  easier").
* **The attack** (``ATTACKS["possible_worlds"]``, persistent values, the release as published):
  ``min_linkability >= l`` over its whole proven interval (:meth:`~attacks.base.AttackResult.interval`),
  else a refusal that says FAIL or UNKNOWN (linkability is exact in the attack whether or not its breach
  probabilities are; they are not read, so the attack runs with the smallest counting budget).
  ``max_breach <= 1/l`` is *not* required: it is Definition 3.3's plain fraction over every possible world,
  which Algorithm 2 does not bound (Example 4.2 of the paper reaches 2/3 for l = 2;
  ``tests/publishers/test_sequential_diversity.py`` keeps it); Theorem 4.1 bounds the belief of an adversary who looks
  for the algorithm's l-diverse sets of worlds instead.  The attack runs when the release has at most
  ``attack_rows`` rows (default 5,000; on Adult's 30,162 rows the engine's sampler finds no start world
  within its time limit); above it the consistency proof alone stands.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from multirelease.errors import InputError, SolverError
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.sequence import Adversary, ReleaseSequence
from multirelease.model.table import Table, composite_sensitive

__all__ = ["WorldsRefusal", "check_release", "inconsistent_world", "witness_violation"]

#: largest release the possible-worlds attack checks inside the publisher
ATTACK_ROWS = 5000


class WorldsRefusal(InputError):
    """A release the publisher does not write; ``kind``: ``check`` (it fails) or ``unknown``."""

    def __init__(self, problem: str, kind: str, individual: str | None = None):
        super().__init__(problem)
        self.kind = kind
        self.individual = individual


def _suffix_keys(frame: pd.DataFrame, sensitive: np.ndarray, others: list[str]) -> np.ndarray:
    key = pd.Series(np.asarray(sensitive, dtype=object), dtype=object).astype(str)
    for name in others:
        key = key + "\x1f" + frame[name].astype(str).to_numpy(dtype=object)
    return key.to_numpy(dtype=object)


def _sides(release: Release, snapshot: Table):
    """The population's QI points over the release's quasi-identifiers, the published non-QI key of every
    release row, and ``tuple_keys(w)``: the key of every tuple of the world ``w``."""
    schema = snapshot.schema
    sens = list(release.sensitive_attributes)
    others = [n for n in release.attributes if not schema[n].is_quasi and not schema[n].is_sensitive]
    cols = [list(schema.quasi).index(n) for n in release.quasi]
    other = release.other if release.other is not None else pd.DataFrame(index=range(len(release)))

    def tuple_keys(w: np.ndarray) -> np.ndarray:
        frame = snapshot.frame.iloc[w]
        return _suffix_keys(frame.reset_index(drop=True), composite_sensitive(frame, sens), others)

    return snapshot.qi_codes[:, cols], _suffix_keys(other, release.sensitive, others), tuple_keys


def inconsistent_world(release: Release, snapshot: Table, worlds: np.ndarray) -> tuple[int, str] | None:
    """``(world, individual)`` of the first world the release is not consistent with (Definition 3.1), the
    individual being one left unmatched; ``None`` when it is consistent with all.  ``worlds`` is ``(l, N)``:
    world ``i`` gives snapshot row ``n`` the non-quasi-identifier values of row ``worlds[i, n]``."""
    points, row_key, tuple_keys = _sides(release, snapshot)
    for i, w in enumerate(np.asarray(worlds)):
        tuple_key = tuple_keys(w)
        for key in pd.unique(np.concatenate([row_key, tuple_key])):
            rows = np.flatnonzero(row_key == key)
            people = np.flatnonzero(tuple_key == key)
            if len(rows) != len(people):
                return i, str(snapshot.ids[people[0] if len(people) else 0])
            inside = release.contains_points(points[people], rows)
            match = maximum_bipartite_matching(csr_matrix(inside), perm_type="column")
            if (match < 0).any():
                return i, str(snapshot.ids[people[int(np.flatnonzero(
                    ~np.isin(np.arange(len(people)), match[match >= 0]))[0])]])
    return None


def witness_violation(release: Release, snapshot: Table, worlds: np.ndarray, witness: np.ndarray
                      ) -> tuple[int, str] | None:
    """``(world, individual)`` where the bijections ``witness`` (``witness[i, r]``: the snapshot row whose
    tuple of world ``i`` release row ``r`` generalizes) break Definition 3.1, else ``None``."""
    points, row_key, tuple_keys = _sides(release, snapshot)
    n = len(snapshot)
    for i, (w, perm) in enumerate(zip(np.asarray(worlds), np.asarray(witness))):
        if len(perm) != len(release) or len(release) != n or (perm < 0).any() or \
                np.bincount(perm, minlength=n).max(initial=0) > 1:
            return i, "?"
        tuple_key = tuple_keys(w)
        pts = points[perm]
        ok = np.all((release.lo <= pts) & (pts <= release.hi), axis=1) & (row_key == tuple_key[perm])
        for j, name in enumerate(release.quasi):
            if name in release.masks:
                bit = np.left_shift(np.uint64(1), pts[:, j].astype(np.uint64))
                ok &= (release.masks[name] & bit) != 0
        if not ok.all():
            return i, str(snapshot.ids[perm[int(np.argmin(ok))]])
    return None


def check_release(name: str, release: Release, truth: ReleaseTruth, snapshot: Table, worlds: np.ndarray,
                  witness: np.ndarray | None, l: int, k: int, attack_rows: int | None = None) -> bool:
    """Raise :class:`WorldsRefusal` unless release ``k`` passes the checks (module docstring); return whether
    the attack ran.  Without ``witness`` the release is matched from scratch whatever its size."""
    attack_rows = ATTACK_ROWS if attack_rows is None else attack_rows
    bad = witness_violation(release, snapshot, worlds, witness) if witness is not None else None
    if bad is None and (witness is None or len(release) <= attack_rows):
        bad = inconsistent_world(release, snapshot, worlds)
    if bad is not None:
        world, who = bad
        raise WorldsRefusal(f"{name}: release {k} fails its own check: it is not consistent with possible world "
                            f"{world + 1} of {len(worlds)} (Theorem 4.3), individual '{who}'", "check", who)
    if len(release) > attack_rows:
        return False
    from attacks import ATTACKS

    seq = ReleaseSequence()
    seq.append(release, truth, snapshot)
    view = seq.view(Adversary(sensitive="persistent"))
    # linkability is what is read: no world counting (the breach probabilities are not computed)
    attack = ATTACKS["possible_worlds"]().reading({"min_linkability"})
    if not attack.applies(view):  # a release without the sensitive attribute links nobody to a value
        return False
    try:
        result = attack.run(view)
    except SolverError as exc:
        raise WorldsRefusal(f"{name}: release {k}: UNKNOWN whether min_linkability >= {l}: the possible-worlds "
                            f"attack stopped ({exc})", "unknown") from None
    lo, hi = result.interval("min_linkability")
    if lo >= l:
        return True
    who = result.witness("min_linkability").get("individual", "?")
    if hi >= l:
        raise WorldsRefusal(f"{name}: release {k}: UNKNOWN whether min_linkability >= {l} (individual '{who}'): "
                            f"the possible-worlds attack proved only [{lo:g}, {hi:g}] "
                            f"({result.bound('min_linkability').reason})", "unknown", who)
    raise WorldsRefusal(f"{name}: release {k} fails its own check min_linkability >= {l}: individual '{who}' is "
                        f"linkable to {hi:g} value(s)", "check", who)
