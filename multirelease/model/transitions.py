"""The public update model of sensitive values (the scenario's ``transitions`` key).

Li & Zhou, section II.B (Definition 7, implicit background knowledge): "the probability of any attribute value
``a_i`` update to be ``a_j``, represented as ``P_trans(a_i, a_j)``, is known to public".  Definition 12: the
*candidate update set* ``CUS(a)`` of a value ``a`` is the set of values ``a`` updates to with non-zero
probability.  Section VI.A: the *internal-update diameter* ``d`` is the size of a value's candidate set.

A :class:`TransitionModel` holds the sensitive domain (composite sensitive values when several attributes are
sensitive) and the row-stochastic matrix ``P[a, b] = P_trans(a, b)``; ``CUS(a) = {b : P[a, b] > 0}``.

YAML forms (exactly one of ``candidates``, ``probabilities``, ``diameter``, ``free``)::

    transitions:
      candidates:                     # candidate update sets; each update equally likely
        Pneumonia: [Pneumonia, Flu, Lung Cancer]
        Flu: [Flu, Pneumonia]
      unlisted: stay                  # values not listed: stay (CUS = {a}, the default), free, or error

    transitions:
      probabilities:                  # P_trans; each row must sum to 1
        Pneumonia: {Pneumonia: 0.5, Lung Cancer: 0.5}

    transitions: {diameter: 5, shape: window}   # generated: |CUS(a)| = d for every a (section VI.A)
    transitions: {free: true}                   # every value to every value (Lemma 1)

``shape: window`` (default) puts the ``d`` values nearest to ``a`` in the leaf order of the sensitive hierarchy
(circularly, ``a`` itself included) into ``CUS(a)`` - "a person's occupation may stay the same or change to be
nine other similar jobs with equal probabilities" (section VI.A, d = 10).  ``shape: blocks`` cuts the leaf
order into consecutive blocks of ``d`` values and sets ``CUS(a)`` to ``a``'s block: the candidate update sets
are then *transitive* (``b in CUS(a)`` implies ``CUS(b) <= CUS(a)``, footnote 8 of section IV.A), which
m-Distinct* (section IV.B, Lemma 4) needs.  ``values`` may list the domain explicitly (default: the leaves
of the sensitive attribute's hierarchy, or the values named in the model).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from multirelease.errors import InputError
from .hierarchy import _scalar

__all__ = ["TransitionModel", "load_transitions", "check_updates", "FORMS_HINT"]

_FORMS = ("candidates", "probabilities", "diameter", "free")
_KEYS = set(_FORMS) | {"unlisted", "shape", "values", "stay"}


@dataclass(frozen=True, eq=False)
class TransitionModel:
    """``P_trans`` over a finite sensitive domain.

    Attributes
    ----------
    values : tuple of str
        The sensitive domain, in a fixed order (indices ``0..V-1``).
    prob : ndarray (V, V)
        ``prob[a, b] = P_trans(values[a], values[b])``; every row sums to 1.
    """

    values: tuple[str, ...]
    prob: np.ndarray
    description: str = ""
    _index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", {v: i for i, v in enumerate(self.values)})
        p = np.asarray(self.prob, dtype=np.float64)
        object.__setattr__(self, "prob", p)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_candidates(cls, values: Sequence[str], candidates: Mapping[str, Sequence[str]],
                        unlisted: str = "stay", description: str = "candidates") -> "TransitionModel":
        """Equally likely updates within each candidate update set (the random-world assumption of Example 3)."""
        values = tuple(values)
        idx = {v: i for i, v in enumerate(values)}
        adj = np.zeros((len(values), len(values)), dtype=bool)
        for a in values:
            if a in candidates:
                for b in candidates[a]:
                    adj[idx[a], idx[b]] = True
            elif unlisted == "free":
                adj[idx[a], :] = True
            else:
                adj[idx[a], idx[a]] = True
        return cls(values, adj / adj.sum(axis=1, keepdims=True), description)

    @classmethod
    def free(cls, values: Sequence[str]) -> "TransitionModel":
        """Every value may update to every value (Lemma 1)."""
        n = len(values)
        return cls(tuple(values), np.full((n, n), 1.0 / n), "free")

    @classmethod
    def with_diameter(cls, values: Sequence[str], d: int, shape: str = "window") -> "TransitionModel":
        """|CUS(a)| = d for every value (section VI.A): a circular ``window`` around ``a`` in the domain's order,
        or ``blocks`` of ``d`` consecutive values (transitive; the last block may be smaller)."""
        values = tuple(values)
        n = len(values)
        d = min(int(d), n)
        adj = np.zeros((n, n), dtype=bool)
        for a in range(n):
            if shape == "blocks":
                start = (a // d) * d
                adj[a, start:min(start + d, n)] = True
            else:
                for k in range(d):  # a, a+1, a-1, a+2, a-2, ... circularly
                    off = (k + 1) // 2 * (1 if k % 2 else -1)
                    adj[a, (a + off) % n] = True
        return cls(values, adj / adj.sum(axis=1, keepdims=True), f"diameter {d} ({shape})")

    # ------------------------------------------------------------------ facts
    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"TransitionModel({len(self.values)} values, {self.description}, diameter {self.diameter})"

    def index(self, value: str) -> int:
        return self._index[value]

    def indices(self, values: Sequence[Any]) -> np.ndarray:
        """Indices of many values (``-1`` for a value outside the domain)."""
        return np.fromiter((self._index.get(v, -1) for v in values), dtype=np.int64, count=len(values))

    @property
    def adjacency(self) -> np.ndarray:
        """``adj[a, b]``: ``b in CUS(a)`` (a feasible update, section III.A)."""
        return self.prob > 0

    def cus(self, value: str) -> frozenset[str]:
        """The candidate update set of a value (Definition 12)."""
        row = self.adjacency[self._index[value]]
        return frozenset(self.values[j] for j in np.flatnonzero(row))

    @property
    def diameter(self) -> int:
        """The largest candidate update set (the internal-update diameter d of section VI.A)."""
        return int(self.adjacency.sum(axis=1).max()) if len(self.values) else 0

    @property
    def is_free(self) -> bool:
        return bool(self.adjacency.all())

    @property
    def is_transitive(self) -> bool:
        """``b in CUS(a)`` implies ``CUS(b) <= CUS(a)`` (footnote 8 of section IV.A)."""
        adj = self.adjacency.astype(np.int64)
        return bool(((adj @ adj > 0) <= (adj > 0)).all())

    def steps(self, k: int) -> np.ndarray:
        """``reach[a, b]``: ``b`` is reachable from ``a`` in exactly ``k >= 1`` updates (versions of a record that
        skip releases)."""
        adj = self.adjacency
        out = adj.copy()
        for _ in range(max(k, 1) - 1):
            out = (out.astype(np.int64) @ adj.astype(np.int64)) > 0
        return out

    def step_prob(self, k: int) -> np.ndarray:
        """``P_trans`` over ``k >= 1`` updates (``P^k``)."""
        return np.linalg.matrix_power(self.prob, max(k, 1))

    def sample(self, current: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One update of every value index in ``current``, drawn from ``P_trans`` (inverse-CDF, vectorized)."""
        current = np.asarray(current, dtype=np.int64)
        cdf = np.cumsum(self.prob[current], axis=1)
        u = rng.random(len(current))[:, None]
        return np.minimum((u >= cdf).sum(axis=1), len(self.values) - 1)

    def to_mapping(self) -> dict:
        """A ``probabilities`` mapping that :func:`load_transitions` reads back."""
        return {"values": list(self.values), "probabilities": {
            a: {self.values[j]: float(self.prob[i, j]) for j in np.flatnonzero(self.prob[i] > 0)}
            for i, a in enumerate(self.values)}}


def _domain(schema, spec: Mapping, source, key) -> list[str] | None:
    if "values" in spec:
        vals = spec["values"]
        if not isinstance(vals, list) or not vals:
            raise InputError("values must be a non-empty list", file=source, key=f"{key}.values")
        out = [_scalar(v) for v in vals]
        if len(set(out)) != len(out):
            raise InputError("a value appears twice", file=source, key=f"{key}.values")
        return out
    if schema is not None and len(schema.sensitive) == 1:
        h = schema[schema.sensitive[0]].hierarchy
        if h is not None:
            return list(h.leaves)
    return None


def load_transitions(spec: Any, schema=None, *, source: str | None = None,
                     key: str = "transitions") -> TransitionModel | None:
    """Validate a ``transitions`` mapping (see the module docstring) into a :class:`TransitionModel`.

    Every value named must belong to the sensitive domain (the leaves of the sensitive attribute's hierarchy
    when it has one); probabilities must be in ``[0, 1]`` and each row must sum to 1.
    """
    if spec is None:
        return None
    if isinstance(spec, TransitionModel):
        return spec
    if not isinstance(spec, Mapping):
        raise InputError(f"must be a mapping with one of {', '.join(_FORMS)}", file=source, key=key)
    unknown = set(spec) - _KEYS
    if unknown:
        raise InputError(f"unknown key '{sorted(unknown)[0]}' (known: {', '.join(sorted(_KEYS))})", file=source,
                         key=key)
    forms = [f for f in _FORMS if f in spec]
    if len(forms) != 1:
        raise InputError(f"give exactly one of {', '.join(_FORMS)}", file=source, key=key)
    form = forms[0]
    unlisted = spec.get("unlisted", "stay")
    if unlisted not in ("stay", "free", "error"):
        raise InputError(f"unlisted must be one of stay, free, error; got {unlisted!r}", file=source,
                         key=f"{key}.unlisted")
    domain = _domain(schema, spec, source, key)

    def check_value(v: Any, where: str) -> str:
        v = _scalar(v)
        if domain is not None and v not in domain:
            raise InputError(f"'{v}' is not a sensitive value", file=source, key=where)
        return v

    if form == "free":
        if spec["free"] is not True:
            raise InputError("free must be true", file=source, key=f"{key}.free")
        if domain is None:
            raise InputError("a free model needs the sensitive domain: give 'values'", file=source, key=key)
        return TransitionModel.free(domain)
    if form == "diameter":
        d = spec["diameter"]
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise InputError(f"The 'diameter' parameter of transitions must be an int in [1, inf). Got {d!r}.",
                             file=source, key=f"{key}.diameter")
        shape = spec.get("shape", "window")
        if shape not in ("window", "blocks"):
            raise InputError(f"shape must be window or blocks; got {shape!r}", file=source, key=f"{key}.shape")
        if domain is None:
            raise InputError("a generated model needs the sensitive domain: give 'values'", file=source, key=key)
        return TransitionModel.with_diameter(domain, d, shape)
    if "shape" in spec:
        raise InputError("shape goes with diameter", file=source, key=f"{key}.shape")
    body = spec[form]
    if not isinstance(body, Mapping) or not body:
        raise InputError(f"{form} must map each value to its updates", file=source, key=f"{key}.{form}")
    rows: dict[str, dict[str, float]] = {}
    for a, targets in body.items():
        where = f"{key}.{form}.{a}"
        a = check_value(a, where)
        if form == "candidates":
            if not isinstance(targets, list) or not targets:
                raise InputError("must be a non-empty list of values", file=source, key=where)
            bs = [check_value(b, where) for b in targets]
            rows[a] = {b: 1.0 / len(set(bs)) for b in bs}
        else:
            if not isinstance(targets, Mapping) or not targets:
                raise InputError("must map values to probabilities", file=source, key=where)
            row: dict[str, float] = {}
            for b, p in targets.items():
                b = check_value(b, where)
                if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
                    raise InputError(f"probability of '{b}' must be a number in [0, 1]; got {p!r}", file=source,
                                     key=where)
                row[b] = float(p)
            if abs(sum(row.values()) - 1.0) > 1e-9:
                raise InputError(f"probabilities sum to {sum(row.values()):g}, not 1", file=source, key=where)
            rows[a] = row
    if domain is None:
        seen: list[str] = []
        for a, row in rows.items():
            for v in (a, *row):
                if v not in seen:
                    seen.append(v)
        domain = seen
    missing = [v for v in domain if v not in rows]
    if missing and unlisted == "error":
        raise InputError(f"value '{missing[0]}' has no entry (unlisted: error)", file=source, key=f"{key}.{form}")
    idx = {v: i for i, v in enumerate(domain)}
    n = len(domain)
    prob = np.zeros((n, n))
    for a in domain:
        i = idx[a]
        if a in rows:
            for b, p in rows[a].items():
                prob[i, idx[b]] = p
        elif unlisted == "free":
            prob[i, :] = 1.0 / n
        else:
            prob[i, i] = 1.0
    if (prob.sum(axis=1) <= 0).any():
        bad = domain[int(np.flatnonzero(prob.sum(axis=1) <= 0)[0])]
        raise InputError(f"value '{bad}' has no update with a positive probability", file=source, key=key)
    prob = prob / prob.sum(axis=1, keepdims=True)
    return TransitionModel(tuple(domain), prob, form)


#: the forms of ``transitions`` a message offers when the model is missing or too narrow (module docstring)
FORMS_HINT = ("{free: true} when a value may change to any other; {diameter: D, shape: window} when a value "
              "changes only to one of the D values nearest it in the sensitive hierarchy's order (shape: blocks: "
              "within blocks of D values); {candidates: {VALUE: [VALUE, ...]}} listing the values each one may "
              "change to")
#: how many records outside the model one error line names (all of them are counted)
SHOWN_RECORDS = 3


def _shown_set(values: Sequence[str], limit: int = 8) -> str:
    values = sorted(values)
    return "{" + ", ".join(values[:limit]) + (f", ... {len(values) - limit} more" if len(values) > limit else "") + "}"


def check_updates(model: TransitionModel | None, before, after, *, source: str | None = None,
                  key: str | None = None) -> None:
    """Refuse (:class:`InputError`) a change of snapshot ``before`` -> ``after`` (two
    :class:`~multirelease.model.table.Table`) whose sensitive updates leave the public update model: every record
    present in both whose composite sensitive value changed from ``a`` to ``b`` needs ``b in CUS(a)``
    (Definition 12 of Li & Zhou; the attacks and the publishers' guarantees, e.g. m-Distinct's Lemma 3, assume
    the data follows the model the adversary knows).  A record that keeps its value is not checked: ``CUS(a)``
    need not contain ``a``.  Vectorized over the common records.

    The one line counts every record outside the model, names the first :data:`SHOWN_RECORDS` (identifier,
    old -> new value, and the candidate update set of the old value, spelled out) and the forms of
    ``transitions`` that would admit them (:data:`FORMS_HINT`)."""
    if model is None or before is None or after is None or not before.schema.sensitive:
        return
    import pandas as pd

    old = pd.Series(before.sensitive, index=before.frame.index)
    new = pd.Series(after.sensitive, index=after.frame.index)
    common = old.index.intersection(new.index)
    if not len(common):
        return
    a = old.loc[common].to_numpy(dtype=object)
    b = new.loc[common].to_numpy(dtype=object)
    changed = np.flatnonzero(a != b)
    if not len(changed):
        return
    ia, ib = model.indices(a[changed]), model.indices(b[changed])
    outside = np.flatnonzero((ia < 0) | (ib < 0))
    if len(outside):
        shown = "; ".join(f"record {common[changed[i]]}: '{a[changed[i]] if ia[i] < 0 else b[changed[i]]}'"
                          for i in outside[:SHOWN_RECORDS])
        more = f"; ... (the first {SHOWN_RECORDS} shown)" if len(outside) > SHOWN_RECORDS else ""
        raise InputError(f"{_count(len(outside))} change to or from a sensitive value that is not in the domain of "
                         f"the declared transitions ({shown}{more}); give the value in 'transitions' (its "
                         f"'values', or the sensitive attribute's hierarchy)", file=source, key=key)
    bad = np.flatnonzero(~model.adjacency[ia, ib])
    if not len(bad):
        return
    shown = "; ".join(f"record {common[changed[i]]}: '{a[changed[i]]}' -> '{b[changed[i]]}' "
                      f"(CUS('{a[changed[i]]}') = {_shown_set(model.cus(str(a[changed[i]])))})"
                      for i in bad[:SHOWN_RECORDS])
    more = f"; ... (the first {SHOWN_RECORDS} shown)" if len(bad) > SHOWN_RECORDS else ""
    n, m = len(bad), len(changed)
    updates = (f"{n:,} of the {m:,} updates of a sensitive value {'is' if n == 1 else 'are'}" if n < m else
               "the update of a sensitive value is" if n == 1 else f"all {n:,} updates of a sensitive value are")
    raise InputError(f"{updates} outside the declared transitions ({model.description}), which let a value change "
                     f"only within its candidate update set CUS(value), the values the model lets it become: "
                     f"{shown}{more}; if these changes are real, widen 'transitions': {FORMS_HINT}",
                     file=source, key=key)


def _count(n: int) -> str:
    return f"{n:,} record" + ("s" if n != 1 else "")
