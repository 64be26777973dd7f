"""Single-class protection principles: k-anonymity, distinct / entropy l-diversity, (alpha, k)-anonymity.

A :class:`Principle` judges an equivalence class from the counts of each sensitive value in it.  The same
object serves Mondrian (is a split allowable?), the single-release checks of ``attacks.linking``, and the
candidate sets of the intersection attack (Barbosa et al., section 4).

* k-anonymity (Sweeney): at least ``k`` records per class.
* distinct l-diversity (Machanavajjhala et al.): at least ``l`` distinct sensitive values per class.
* entropy l-diversity: ``-sum p log p >= log l`` in every class.
* (alpha, k)-anonymity (Wong et al. 2006): at least ``k`` records and no sensitive value with relative
  frequency above ``alpha``.

k-anonymity, distinct l-diversity and their conjunction are *monotone* (Definition 3 of Barbosa et al.:
every superset of a valid class is valid); entropy l-diversity and (alpha, k)-anonymity are not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Principle", "entropy_l", "distinct_l"]


def distinct_l(counts: np.ndarray) -> np.ndarray:
    """Distinct sensitive values per class; ``counts`` is ``(n_classes, n_values)``."""
    return np.count_nonzero(counts, axis=-1)


def entropy_l(counts: np.ndarray) -> np.ndarray:
    """``exp(H)`` per class, the largest ``l`` for which the class is entropy l-diverse."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(counts > 0, counts / total, 1.0)
        h = -(np.where(counts > 0, p * np.log(p), 0.0)).sum(axis=-1)
    return np.exp(h)


@dataclass(frozen=True)
class Principle:
    """A conjunction of k-anonymity, l-diversity (``l_kind``: distinct or entropy) and an alpha bound."""

    k: int = 1
    l: float = 1.0
    l_kind: str = "distinct"
    alpha: float | None = None

    @property
    def needs_sensitive(self) -> bool:
        return self.l > 1 or self.alpha is not None

    @property
    def monotone(self) -> bool:
        """True when every superset of a valid class is valid (Definition 3 of Barbosa et al.)."""
        return self.alpha is None and (self.l <= 1 or self.l_kind == "distinct")

    def classes_ok(self, counts: np.ndarray) -> np.ndarray:
        """One bool per class, from its ``(n_classes, n_values)`` sensitive-value counts."""
        counts = np.atleast_2d(counts)
        size = counts.sum(axis=-1)
        ok = size >= self.k
        if self.l > 1:
            if self.l_kind == "entropy":
                # exp(H) >= l, with a relative tolerance for classes exactly at the bound
                ok &= entropy_l(counts) >= self.l * (1 - 1e-12)
            else:
                ok &= distinct_l(counts) >= self.l
        if self.alpha is not None:
            ok &= counts.max(axis=-1) <= self.alpha * size + 1e-12
        return ok

    def ok(self, counts: np.ndarray) -> bool:
        """Is one class (its vector of sensitive-value counts) valid?"""
        return bool(self.classes_ok(np.asarray(counts)[None, :])[0])

    def describe(self) -> str:
        parts = []
        if self.k > 1:
            parts.append(f"{self.k}-anonymity")
        if self.l > 1:
            lv = int(self.l) if float(self.l).is_integer() else self.l
            parts.append(f"{self.l_kind} {lv}-diversity")
        if self.alpha is not None:
            parts.append(f"alpha <= {self.alpha}")
        return " and ".join(parts) or "no constraint"

    @staticmethod
    def entropy_bound(l: float) -> float:
        return math.log(l)
