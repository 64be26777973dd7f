"""Single-release checks: what one release alone lets an adversary link (the ``linking`` attack).

For every release of the sequence, from that release alone (its equivalence classes and the sensitive
values published in them):

* ``k`` - the smallest class (k-anonymity, Sweeney);
* ``l_distinct`` - the fewest distinct sensitive values in a class (distinct l-diversity, Machanavajjhala
  et al.);
* ``l_entropy`` - the smallest ``exp(H)`` of a class, ``H`` the entropy (natural log) of its sensitive
  values (entropy l-diversity: a class is entropy l-diverse iff ``exp(H) >= l``);
* ``alpha`` - the largest relative frequency of one sensitive value in a class ((alpha, k)-anonymity, Wong
  et al. 2006);
* ``prosecutor_max`` - ``1 / k``, the highest re-identification probability of a prosecutor who knows the
  target is in the release and its QI values;
* ``prosecutor_avg`` - the mean over records of ``1 / |class|`` (``= n_classes / n_records``).

The summary is the worst over all releases.  Counterfeit rows count as records: the adversary cannot tell
them apart.  Everything is computed exactly (``exact = True``) with ``O(n log n)`` numpy work per release.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from multirelease.params import Interval, Options
from multirelease.model.principles import Principle, distinct_l, entropy_l
from multirelease.model.release import Release
from multirelease.model.sequence import SequenceView

from .base import AttackBase, AttackResult, Progress

__all__ = ["Linking", "release_class_stats"]

#: largest dense block of (classes x sensitive values) counts built at once
_BLOCK_CELLS = 2_000_000


def _class_counts_sparse(release: Release) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(cls, value, count, n_values)``: the non-zero sensitive-value counts of every class, sorted by
    class."""
    codes, values = release.sensitive_codes
    n_values = max(len(values), 1)
    key = release.classes * n_values + codes
    uniq, cnt = np.unique(key, return_counts=True)
    return uniq // n_values, uniq % n_values, cnt, n_values


def _dense_blocks(release: Release):
    """Yield ``(start, counts)``: dense ``(block, n_values)`` sensitive-value counts of consecutive classes."""
    cls, val, cnt, n_values = _class_counts_sparse(release)
    nc = release.n_classes
    step = max(1, _BLOCK_CELLS // n_values)
    for start in range(0, nc, step):
        stop = min(nc, start + step)
        a, b = np.searchsorted(cls, [start, stop])
        counts = np.zeros((stop - start, n_values), dtype=np.int64)
        counts[cls[a:b] - start, val[a:b]] = cnt[a:b]
        yield start, counts


def release_class_stats(release: Release, principle: Principle | None = None) -> dict[str, np.ndarray]:
    """Per-class figures of one release.

    Returns
    -------
    dict of str -> ndarray, one entry per class (:attr:`Release.classes` order)
        ``size``, ``l_distinct``, ``l_entropy`` (``exp(H)``), ``alpha`` (max relative frequency of a value)
        and, when ``principle`` is given, ``ok`` (the class satisfies it).
    """
    nc = release.n_classes
    out = {
        "size": np.asarray(release.class_sizes, dtype=np.int64),
        "l_distinct": np.zeros(nc, dtype=np.int64),
        "l_entropy": np.zeros(nc, dtype=np.float64),
        "alpha": np.zeros(nc, dtype=np.float64),
    }
    if principle is not None:
        out["ok"] = np.zeros(nc, dtype=bool)
    for start, counts in _dense_blocks(release):
        sl = slice(start, start + len(counts))
        out["l_distinct"][sl] = distinct_l(counts)
        out["l_entropy"][sl] = entropy_l(counts)
        out["alpha"][sl] = counts.max(axis=1) / counts.sum(axis=1)
        if principle is not None:
            out["ok"][sl] = principle.classes_ok(counts)
    return out


def _witness(release: Release, index: int, cls: int, stats: dict[str, np.ndarray]) -> dict[str, Any]:
    """The published facts of one class: release index (from 1), group id, size, sensitive-value counts and
    the generalized QI labels of one of its rows."""
    row = int(np.flatnonzero(release.classes == cls)[0])
    group = int(release.group[row]) if release.group is not None else cls + 1
    codes, values = release.sensitive_codes
    in_class = codes[release.classes == cls]
    counts = np.bincount(in_class, minlength=len(values))
    sensitive = {str(values[v]): int(counts[v]) for v in np.flatnonzero(counts)}
    qi = {}
    for j, a in enumerate(release.qi_attributes):
        mask = release.masks.get(a.name)
        qi[a.name] = a.format_cell(int(release.lo[row, j]), int(release.hi[row, j]),
                                   int(mask[row]) if mask is not None else 0)
    return {"release": index, "group": group, "size": int(stats["size"][cls]),
            "l_distinct": int(stats["l_distinct"][cls]), "l_entropy": float(stats["l_entropy"][cls]),
            "sensitive": sensitive, "qi": qi}


class Linking(AttackBase):
    """The single-release checks: k, distinct and entropy l, alpha and prosecutor risk of every release.

    Parameters
    ----------
    k : int in [2, inf), optional
        Required k-anonymity: every class of every release holds at least ``k`` records (``certify`` then
        requires ``linking.k >= k``).
    l : number in [1, inf), optional
        Required l-diversity: at least ``l`` distinct sensitive values in every class (of ``l_kind``;
        ``certify`` then requires ``linking.l_distinct >= l``).
    l_kind : "distinct" | "entropy", default "distinct"
        Which l-diversity ``l`` means: ``distinct`` values, or ``entropy`` (a class's entropy at least
        ``log l``).
    alpha : number in (0, 1], optional
        Required (alpha, k)-anonymity: no sensitive value makes up more than ``alpha`` of a class.  When any of
        ``k``, ``l``, ``alpha`` is given, ``violations`` counts the classes (over all releases) that break the
        :class:`~multirelease.model.principles.Principle` they define, and ``worst["violation"]`` shows the
        first one.

    Notes
    -----
    ``summary`` holds the worst over releases: ``k``, ``l_distinct``, ``l_entropy`` (minima), ``alpha``,
    ``prosecutor_max``, ``prosecutor_avg`` (maxima) and ``violations``.  ``worst["k"]`` and ``worst["l"]``
    are the classes attaining the minimum ``k`` and the minimum ``l`` (of ``l_kind``), first in release
    order; ``targets`` has one row per release.  Empty releases are skipped.

    Examples
    --------
    >>> Linking(k=5, l=2).run(view).summary["k"]    # doctest: +SKIP
    5
    """

    name = "linking"
    params = {
        "k": Interval(int, 2, None),
        "l": Interval(float, 1, None),
        "l_kind": Options(("distinct", "entropy")),
        "alpha": Interval(float, 0, 1, closed="right"),
    }
    defaults = {"l_kind": "distinct"}
    metrics = ("k", "l_distinct", "l_entropy", "alpha", "prosecutor_max", "prosecutor_avg", "violations")
    #: where the checks come from (the single-release baselines every paper compares against)
    paper = ("k-anonymity (Sweeney 2002), distinct and entropy l-diversity (Machanavajjhala et al. 2006), "
             "(alpha, k)-anonymity (Wong et al. 2006): the single-release baselines of Fung et al. section 6, "
             "Li & Zhou section VI, Barbosa et al. section 7")
    #: what each summary metric means (the reference, ``multirelease describe``)
    metric_descriptions = {
        "k": "the smallest equivalence class over every release (k-anonymity); higher is safer",
        "l_distinct": "the fewest distinct sensitive values in one class, over every release (distinct "
                      "l-diversity)",
        "l_entropy": "the smallest exp(H) of a class, H the natural-log entropy of its sensitive values (a class "
                     "is entropy l-diverse iff exp(H) >= l)",
        "alpha": "the largest relative frequency of one sensitive value in a class ((alpha, k)-anonymity); lower "
                 "is safer",
        "prosecutor_max": "1 / k: the highest probability a prosecutor who knows the target is in the release "
                          "re-identifies its record",
        "prosecutor_avg": "the mean over records of 1 / |class| (= classes / records)",
        "violations": "classes, over every release, that break the principle the parameters k, l, alpha define "
                      "(0 when none is given)",
    }

    baseline = (("k", ">=", 2), ("l_distinct", ">=", 2))

    def default_requirements(self) -> list[str]:
        """What ``certify`` checks when no requirement is given: the bounds of this attack's parameters."""
        c = self.config
        out = []
        if "k" in c:
            out.append(f"linking.k >= {c['k']}")
        if "l" in c:
            metric = "l_entropy" if c["l_kind"] == "entropy" else "l_distinct"
            out.append(f"linking.{metric} >= {c['l']:g}")
        if "alpha" in c:
            out.append(f"linking.alpha <= {c['alpha']:g}")
        return out

    @property
    def principle(self) -> Principle | None:
        """The principle the ``violations`` count checks, or ``None`` when no bound was given."""
        c = self.config
        if not any(x in c for x in ("k", "l", "alpha")):
            return None
        return Principle(k=int(c.get("k", 1)), l=float(c.get("l", 1.0)), l_kind=c["l_kind"],
                         alpha=c.get("alpha"))

    def run(self, view: SequenceView, progress: Progress | None = None) -> AttackResult:
        principle = self.principle
        l_key = "l_entropy" if self.config["l_kind"] == "entropy" else "l_distinct"
        targets = []
        best: dict[str, tuple] = {}
        violations = 0
        first_violation = None
        total = len(view.releases)
        for i, release in enumerate(view.releases, 1):
            if progress is not None:
                progress(i - 1, total, f"release {i}")
            n = len(release)
            if n == 0:
                targets.append({"release": i, "records": 0, "classes": 0})
                continue
            stats = release_class_stats(release, principle)
            nc = release.n_classes
            row = {
                "release": i, "records": n, "classes": nc,
                "k": int(stats["size"].min()),
                "l_distinct": int(stats["l_distinct"].min()),
                "l_entropy": float(stats["l_entropy"].min()),
                "alpha": float(stats["alpha"].max()),
                "prosecutor_max": 1.0 / float(stats["size"].min()),
                "prosecutor_avg": nc / n,
            }
            if principle is not None:
                bad = np.flatnonzero(~stats["ok"])
                row["violations"] = int(len(bad))
                violations += len(bad)
                if len(bad) and first_violation is None:
                    first_violation = _witness(release, i, int(bad[0]), stats)
            targets.append(row)
            for key, metric in (("k", "size"), ("l", l_key)):
                c = int(np.argmin(stats[metric]))
                value = stats[metric][c]
                if key not in best or value < best[key][0]:
                    best[key] = (value, release, i, c, stats)
        if progress is not None:
            progress(total, total, "done")

        worst: dict[str, Any] = {key: _witness(rel, i, c, st) for key, (_, rel, i, c, st) in best.items()}
        return self._result(targets, worst, violations, first_violation)

    def _result(self, targets: list, worst: dict, violations: int, first_violation: dict | None) -> AttackResult:
        """The result from the per-release rows, the witnesses of the smallest ``k`` and ``l`` and the
        violations (``run`` and ``extend`` alike)."""
        rows = [t for t in targets if t["records"] > 0]
        if rows:
            summary: dict[str, float] = {
                "k": min(t["k"] for t in rows),
                "l_distinct": min(t["l_distinct"] for t in rows),
                "l_entropy": min(t["l_entropy"] for t in rows),
                "alpha": max(t["alpha"] for t in rows),
                "prosecutor_max": max(t["prosecutor_max"] for t in rows),
                "prosecutor_avg": max(t["prosecutor_avg"] for t in rows),
            }
        else:
            summary = {"k": 0, "l_distinct": 0, "l_entropy": 0.0, "alpha": 0.0, "prosecutor_max": 0.0,
                       "prosecutor_avg": 0.0}
        notes = () if rows else ("every release is empty",)
        if self.principle is not None:
            summary["violations"] = int(violations)
        worst = dict(worst)
        if first_violation is not None:
            worst["violation"] = first_violation
        return AttackResult(attack=self.name, summary=summary, exact=True, worst=worst, targets=tuple(targets),
                            notes=notes)

    # ------------------------------------------------------------------ one release at a time (attacks.incremental)
    def extend(self, state: dict | None, view: SequenceView, index: int) -> tuple[AttackResult, dict]:
        """The result over releases ``1 .. index`` from the state of ``1 .. index - 1`` and the new release
        (``view``): the checks are per release, so the new one is checked alone and merged - the smallest
        ``k`` and ``l`` keep the first release attaining them, as :meth:`run` does."""
        state = state or {"targets": [], "best": {}, "violations": 0, "first_violation": None}
        one = self.run(view)
        row = dict(one.targets[0], release=index)
        l_key = "l_entropy" if self.config["l_kind"] == "entropy" else "l_distinct"
        best = {k: list(v) for k, v in state["best"].items()}
        for key, metric in (("k", "k"), ("l", l_key)):
            if key in one.worst and (key not in best or row[metric] < best[key][0]):
                best[key] = [row[metric], dict(one.worst[key], release=index)]
        first = state["first_violation"]
        if first is None and "violation" in one.worst:
            first = dict(one.worst["violation"], release=index)
        new = {"targets": state["targets"] + [row], "best": best,
               "violations": int(state["violations"]) + int(one.summary.get("violations", 0)),
               "first_violation": first}
        worst = {key: doc for key, (_, doc) in best.items()}
        return self._result(new["targets"], worst, new["violations"], first), new

    @staticmethod
    def state_parts(state: dict) -> tuple[bytes, bytes]:
        return b"", json.dumps(state, sort_keys=True).encode("utf-8")

    @staticmethod
    def load_state(parts: list, summary: bytes) -> dict:
        return json.loads(summary)
