"""The BCF-anonymizer: continuous publishing safe from correspondence attacks (Fung, Wang, Fu, Pei, EDBT 2008).

Paper: ../shared/papers/002_26e2f2912f1b36d2.txt.  The data holder published ``R1`` for ``D1`` and now
publishes ``R2`` for ``D1 ∪ D2``; a recipient who knows that every record of ``R1`` reappears in ``R2``
cross-examines the two.  The F-, C- and B-attacks (Definitions 3.1-3.6) exclude records that cannot be the
target's; BCF-anonymity asks ``FA, CA, BA >= k`` (section 3.2) for every target the published regions allow.

The publisher ``bcf`` is Algorithm 1: top-down specialization of ``R_n`` from the most general state
(:class:`publishers.bcf.tds.CutSpecializer`), a candidate being valid when the release it leads to keeps ``FA,
CA, BA >= k`` against every earlier release of the chain; the first release of a chain is plain TDS
k-anonymity.  The modules:

* :mod:`publishers.bcf.closed` - the closed forms of section 4 on two cut releases (Theorems 4.2-4.5);
* :mod:`publishers.bcf.measure` - the incremental validity test (Procedures 2 and 3, section 5.2, and the
  section 7.1 extension beyond two releases);
* :mod:`publishers.bcf.exact` - the exact correspondence engine as validity test and as the final check;
* :mod:`publishers.bcf.state` - the chain of earlier releases (own or foreign) and the records behind it.

Which measure the search uses.  The incremental formulas assume a chain this anonymizer made: cuts of the
same taxonomies, each BCF-anonymous for the same ``k``, with the ``x_B`` crack sizes it stored
(:func:`publishers.bcf.state.incremental_chain`).  Then the search is incremental and its result is checked
by the exact engine; should the check fail (the closed forms are exact for two releases only), the search is
redone with the exact engine as validity test (the repair).  A foreign chain - releases given as published
with :func:`state_from_releases` (by ``tds``, by hand, by anything), an edited state, another ``k`` - is
searched with the exact engine from the start.  In both cases the search moves only between valid releases,
so it ends at a valid ``R_n`` whenever the most general one is valid; when that one is not, ``bcf`` refuses
(:class:`InputError`, one line naming the requirement and the witness target).  For two releases a failing
most general ``R2`` means no ``R2`` is valid when the earlier classes do not overlap (cuts, Mondrian regions):
``FA <= min |qid1|``, ``CA <= min_p`` (records of ``R1`` whose region holds ``p``) and ``BA <= |D2|`` for
every ``R2``, and the most general one attains all three.

bcf knows the earlier releases from its state only.  A runner that lets several publishers write one sequence
gives it :func:`state_for_sequence` (its own state when its chain is the sequence, else the sequence as a
foreign chain); given no state after another publisher's release, bcf publishes a first release, blind to it.

Every release is checked before it is returned, by the attack that states the guarantee (:attr:`guarantee`):
``correspondence.FA, CA, BA >= k`` on the exact engine's proven intervals (a bound that does not settle it
counts as not met), and for the first release of a chain, which has no correspondence, ``linking.k >= k``.
"""
from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.params import Interval
from multirelease.model.release import Release
from multirelease.model.table import Table, composite_sensitive

from publishers.base import PublisherBase, PublishResult
from .closed import closed_form, closed_form_pairs, is_cut_release
from .exact import GUARANTEE, ExactBCF, ReleaseOfCut, exact_result, refusal, unmet
from .measure import BCFConstraint, CutFamily, chain_cells
from .state import (READABLE, STATE_FORMAT, b_prefix, check_growth, entry_release, family_of,
                        incremental_chain, own_entry, record_digests, state_for_sequence, state_from_releases)
from .tds import (CutSpace, CutSpecializer, KAnonymity, check_k_anonymous, cut_release, published_quasi,
                  sensitive_codes)

__all__ = ["BCFAnonymizer", "BCFConstraint", "CutFamily", "closed_form", "closed_form_pairs", "is_cut_release",
           "state_from_releases", "state_for_sequence", "STATE_FORMAT"]


class BCFAnonymizer(PublisherBase):
    """BCF-anonymized releases of a growing table (Algorithm 1 of Fung et al., and its section 7.1 extension).

    Parameters
    ----------
    k : int >= 2
        The BCF-anonymity threshold: FA, CA, BA >= k against every earlier release of the chain (and plain
        k-anonymity for the first release, published by top-down specialization).

    The state carries the chain (:mod:`publishers.bcf.state`); a chain published by something else is given
    with :func:`state_from_releases`.  ``state["certificate"]`` holds the exact engine's FA, CA, BA of the new
    release against the chain (``None`` where there is no target or no proven value; ``certificate_bounds``
    the proven intervals), ``PublishResult.stats`` the search figures (``measure``: ``incremental``, ``exact``
    or ``exact (repair)``; engine runs; seconds).
    """

    name = "bcf"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ('Fung, Wang, Fu, Pei, "Anonymity for Continuous Data Publishing" (EDBT 2008; papers/002): BCF-anonymity '
             "section 3.2, the BCF-anonymizer Algorithm 1 (section 5), n releases section 7.1")
    params = {"k": Interval(int, 2, None)}
    required = ("k",)
    #: what every release keeps, checked before it is returned (formatted with the config)
    guarantee = GUARANTEE
    #: the first release of a chain (no correspondence yet): B-anonymity is k-anonymity (section 3.2)
    guarantee_first = ("linking.k >= {k}",)

    @staticmethod
    def state_from_releases(releases: Sequence[Release], snapshot: Table | None = None) -> dict:
        """The state for a chain this anonymizer did not make (:func:`publishers.bcf.state.state_from_releases`)."""
        return state_from_releases(releases, snapshot)

    @staticmethod
    def state_for_sequence(releases: Sequence[Release], snapshot: Table | None, state: Mapping | None) -> dict | None:
        """The state to publish the next release of a sequence with: the own state if its chain is the sequence,
        else the sequence as a foreign chain (:func:`publishers.bcf.state.state_for_sequence`).  A runner that
        lets several publishers write one sequence calls it before :meth:`publish`."""
        return state_for_sequence(releases, snapshot, state)

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        t0 = time.perf_counter()
        attributes, quasi, cols = published_quasi(snapshot, attributes)
        schema = snapshot.schema
        space = CutSpace.of([schema[x] for x in quasi])
        k = self.config["k"]
        sens_names = [x for x in attributes if schema[x].is_sensitive]
        state = dict(state or {})
        if state.get("format") not in READABLE:
            raise InputError(f"{self.name}: unknown state format {state.get('format')!r}")
        chain = list(state.get("chain", []))
        if chain:
            if list(state.get("quasi", [])) != quasi or list(state.get("sensitive", [])) != sens_names:
                raise InputError(f"{self.name}: every release of a chain must publish the same quasi-identifiers "
                                 f"and sensitive attributes (earlier: {state.get('quasi')} / {state.get('sensitive')})")
            check_growth(snapshot, quasi, sens_names, state.get("records") or {}, self.name)
        if len(snapshot) < k:
            raise InputError(f"{self.name}: the table has {len(snapshot)} records, fewer than k = {k}")
        earlier = [entry_release(e, schema, quasi, sens_names) for e in chain]
        if chain:
            fresh = len(snapshot) - len(earlier[-1])
            if fresh < k:
                raise InputError(f"{self.name} refuses release {len(chain) + 1}: correspondence.BA >= {k} fails "
                                 f"(BA <= {fresh}) for every target at T{len(chain) + 1}, in any release: only "
                                 f"{fresh} new records since the previous release, and the B-attack cracks every "
                                 f"earlier one (Theorem 4.4)")
        # sensitive values: this snapshot's and the chain's, one code space
        _, values_now = sensitive_codes(snapshot, attributes)
        earlier_values = {str(v) for r in earlier for v in r.sensitive}
        values = pd.Index(sorted(set(map(str, values_now.tolist())) | earlier_values), dtype=object)
        raw_values = np.asarray(composite_sensitive(snapshot.frame, sens_names), dtype=object)
        sens = values.get_indexer(pd.Series(raw_values, dtype=object).astype(str))
        codes = snapshot.qi_codes[:, cols]
        stats: dict[str, Any] = {"exact_checks": 0}
        if not chain:
            spec = CutSpecializer(codes, space, sens, len(values), KAnonymity(k))
            spec.run()  # never refuses: the one class has len(snapshot) >= k records
            release, truth = cut_release(snapshot, attributes, space, spec.node, rng)
            check_k_anonymous(self.name, release, k)
            cert = {"FA": None, "CA": None, "BA": int(release.class_sizes.min())}
            bounds: dict = {}
            crack_of, stats["measure"] = None, "k-anonymity"
        else:
            spec, release, truth, result, crack_of = self._next_release(
                snapshot, attributes, space, codes, sens, raw_values, values, chain, earlier, rng, stats)
            cert = {m: (float(result.summary[m]) if result.is_proven(m) else None) for m in ("FA", "CA", "BA")}
            bounds = {m: list(result.interval(m)) for m in ("FA", "CA", "BA") if m in result.summary
                      or m in result.bounds}
        entry = own_entry(space, spec, sens, values, crack_of, k=k,
                          measure="incremental" if crack_of is not None or not chain else "exact", quasi=quasi,
                          sensitive=sens_names)
        stats.update(iterations=spec.iterations, specializations=spec.specializations,
                     seconds=round(time.perf_counter() - t0, 6))
        new_state = {
            "format": STATE_FORMAT,
            "quasi": quasi,
            "sensitive": sens_names,
            "chain": chain + [entry],
            "records": record_digests(snapshot, quasi, sens_names),
            "certificate": cert,
            "certificate_bounds": bounds,
            "stats": {x: stats.get(x, 0) for x in ("iterations", "specializations", "pairs_examined", "measure",
                                                   "exact_checks")},
        }
        return PublishResult(release=release, truth=truth, state=new_state, stats=stats)

    def _next_release(self, snapshot, attributes, space, codes, sens, raw_values, values, chain, earlier, rng, stats):
        """``R_n`` against the chain: ``(search, release, truth, exact result, x_B per class or None)``.

        Incremental search (then the exact check) on an own chain; the exact search on any other, and as the
        repair when the incremental result fails its check; a refusal when the most general ``R_n`` fails."""
        k = self.config["k"]
        n = len(chain) + 1
        quasi = [a.name for a in space.attributes]
        sens_names = [x for x in attributes if snapshot.schema[x].is_sensitive]
        why = incremental_chain(chain, space, k=k, quasi=quasi, sensitive=sens_names)
        stats["measure"] = "incremental" if why is None else "exact"
        if why is None:
            constraint = _incremental_constraint(chain, space, values, k, sens)
            spec = CutSpecializer(codes, space, sens, len(values), constraint)
            stats["pairs_examined"] = constraint.pairs_examined
            try:
                spec.run()
            except InputError:  # the closed forms reject the most general R_n: the exact search decides
                stats["measure"] = "exact (repair)"
                stats["incremental_failure"] = "the incremental measure rejects the most general release"
            else:
                stats["pairs_examined"] = constraint.pairs_examined
                release, truth = cut_release(snapshot, attributes, space, spec.node, rng)
                result = exact_result(earlier + [release], k)  # the release returned, checked as published
                stats["exact_checks"] += 1
                failure = unmet(result, k)
                if failure is None:
                    return spec, release, truth, result, constraint.crack
                stats["measure"] = "exact (repair)"
                stats["incremental_failure"] = refusal(self.name, k, failure, result).problem
        else:
            stats["why_exact"] = why
        exact = ExactBCF(k, earlier, ReleaseOfCut(snapshot.schema, space, quasi, sens_names, raw_values), len(snapshot))
        spec = CutSpecializer(codes, space, sens, len(values), exact)
        try:
            spec.run()
        except InputError:
            raise refusal(self.name, k, unmet(exact.top, k), exact.top,
                          what=f"release {n} (even the most general one)") from None
        stats["exact_checks"] += exact.checks + 1
        stats["skipped_by_size"] = exact.skipped
        release, truth = cut_release(snapshot, attributes, space, spec.node, rng)
        result = exact_result(earlier + [release], k)  # the release returned, checked as published
        failure = unmet(result, k)
        if failure is not None:  # pragma: no cover - the search accepted this very release
            raise refusal(self.name, k, failure, result, what=f"release {n}")
        return spec, release, truth, result, None


def _incremental_constraint(chain: Sequence[Mapping], space: CutSpace, values: pd.Index, k: int,
                            sens: np.ndarray) -> BCFConstraint:
    """Procedures 2-3 (and section 7.1) against an own chain: the F/C families of chain cells per target
    timestamp and the B families (the earlier releases)."""
    families = [family_of(rel, space, values) for rel in chain]
    n_leaves = [a.hierarchy.n_leaves for a in space.attributes]
    fc = []
    for t in range(len(chain)):
        # cells of R_t..R_{n-1}; every group loses the records forced older than T_t (B-attacks by
        # R_1..R_{t-1}): cap_s = min_j (|g_j,s| - max_{i<t} x_B(g_j,s; R_i))
        reduced = [CutFamily(f.lo, f.hi, np.maximum(0, f.weights - b_prefix(chain[j], f, values, t)),
                             label=f"R{j + 1}") for j, f in enumerate(families) if j >= t]
        fc.append(chain_cells(reduced[1:], reduced[0], n_leaves))
    return BCFConstraint(k, space, fc, families, np.bincount(sens, minlength=len(values)))
