"""The update-graph attack on releases with internal updates (Li & Zhou, section III).

An adversary knows, for every version ``t'_1 .. t'_I`` of a record, the QI-group it was published in
(Definition 6: the external knowledge tables ``E_i``) and the public update model ``P_trans`` (Definition 7,
the scenario's ``transitions``).  For every record this module builds

* the **Sensitive-attribute Update Graph** (SUG, Definition 10): one layer per version; node ``v_{i,j}`` is a
  candidate value ``s_{i,j}`` of the version's QI-group, weighted by the probability of linking the version to
  it from that release alone; an edge ``(v_{i,j}, v_{i+1,k})`` is a feasible update (``P_trans > 0``),
  weighted by ``P_trans``;
* its **feasible sub-SUG** (Definition 11): nodes of the first layer without outgoing edges, of the last layer
  without incoming edges and of middle layers without either are deleted, repeatedly until nothing changes.
  (The paper's text swaps ``deg^-`` and ``deg^+`` for the two end layers; read literally it would delete every
  end node.)  The fixed point is exactly the set of nodes on a complete path from the first layer to the last,
  which :func:`sug_dp` finds with one forward and one backward reachability sweep instead of repeated
  deletions;
* the **disclosure risk** of every version (eqs. 1-2): the weight portion of the feasible paths crossing a
  node, where a path weighs the product of its nodes and edges (eq. 1).  The sum over all paths through a node
  is ``alpha_i(v) * beta_i(v)`` with the forward sums ``alpha_1(v) = w(v)``,
  ``alpha_{i+1}(v') = w(v') sum_v alpha_i(v) w(v, v')`` and the backward sums ``beta_I(v) = 1``,
  ``beta_i(v) = sum_{v'} w(v, v') w(v') beta_{i+1}(v')``, so eq. 2 is ``alpha_i(v) beta_i(v) / Z`` with
  ``Z = sum_v alpha_i(v) beta_i(v)`` (the same for every layer): ``O(I V^2)`` per record, never enumerating
  paths; the forward sweep also carries boolean reachability, the backward one reads it off the positive sums
  (:func:`enumerate_paths` is the enumeration oracle of the tests).

Summary (contract names): ``vulnerable_values`` - record versions whose candidate node set is pruned to one
value (Lemma 2: exactly the versions with risk 1), after the last release; ``max_risk`` - the re-publication
risk of Definition 9, the largest ``r_n(t'_i)`` over every prefix ``n`` of the sequence, every record and
version, and every value the version may hold (the adversary does not know which value is the actual one, so
the certified bound is over all of them).  Per release ``n`` (``targets``): the same figures after ``n``
releases (Figure 3 counts the vulnerable values this way).

**Linking versions.**  ``linkage: uid`` follows the releases' ``uid`` column (a stable record id): a uid's
version at release ``i`` is in the QI-group of its row.  ``linkage: population`` follows the population
(``view.population``: identifiers and QI values of every snapshot, Definition 6): a person's version is in
the QI-group(s) whose region contains the person's QI point; when several do (overlapping regions), the node
weights average the groups and the candidate set is their union.  ``auto`` (default) takes ``uid`` when every
release carries one, else the population.  In uid mode the attack uses the uid only to locate the group, as
Li & Zhou's adversary locates it from the QI values; it never reads the uid row's own sensitive value (that
adversary - Barbosa et al.'s record tracking - is the ``intersection`` attack).  Linking lives in
:mod:`attacks.update_graph.version_links`.

**Node weights.**  ``weights: frequency`` (default): a value's share of its group's rows (counterfeits
included - the adversary cannot tell them apart); ``uniform``: ``1/|C_i|`` for every distinct value, the
random-world assumption of Example 3.  Both agree on groups of distinct values.  Versions that skip releases
(a record absent in between) are linked by the ``k``-step model ``P_trans^k``.

**Joint attack** (``joint: true``): the per-record SUG treats every record alone; the joint attack looks for a
*possible world* of all records at once with CP-SAT (:mod:`solver.update.worlds`): every version gets one
value of its group, each group's published multiset is shared among its members (published counterfeit counts
absorb values), consecutive versions follow ``P_trans``.  A value that no world gives a version is pruned; the
joint candidate sets are subsets of the feasible sub-SUG's (every world is a feasible path of every record),
so the joint attack finds at least as many vulnerable values.  With ``joint``, ``vulnerable_values`` is the
joint count, ``sug_vulnerable_values`` the per-record one, ``joint_extra`` the difference, and
``joint_max_risk`` the eq. 2 risk on the SUGs restricted to jointly possible values; ``max_risk`` stays the
per-record risk of eqs. 1-2.  When the solver stops early (``time_limit``) the three joint figures come
with proven bounds (reason ``time_limit``) and ``exact`` is false; every per-record figure stays exact.  The
joint lower bound counts only versions of components where a world was found (``stats``:
``joint_components_without_world``): elsewhere the releases might admit no world, and no value at all.

**Linking columns** (:mod:`multirelease.model.linking`; Shmueli & Tassa, section 5.2).  When the releases publish
persistent linking columns (``view.linking``), a version's value is its linked value (sensitive value and
linking tuple), and a record keeps its tuple across its versions: the SUG (Definition 10) is built on linked
values with the product model :func:`attacks.update_graph.version_links.linked_model` (``P_trans`` on the sensitive
part, zero between different tuples), over the linked values the releases publish only.  The engine (eqs. 1-2,
Definition 11, the joint worlds) runs unchanged on it; every disclosure figure is then read on the sensitive
value: a version's candidate set is the set of sensitive values of its feasible linked nodes
(``vulnerable_values``: one sensitive value, Lemma 2 read on sensitive values - its risk is 1), the risk of
``(version, s)`` is the sum of the eq. 2 risks of its linked values ``(s, t)`` (the paths through them are
disjoint), and so are ``max_risk``, ``target_risk_<i>``, ``target_candidates_<i>`` and the joint figures;
``inconsistent`` stays per record (no feasible path at all).  Witnesses name the columns (``linked_by``) and
show the linked values as ``measles (bt=O+)``.  Without linking columns everything is as above, number for
number.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.model.hierarchy import _scalar
from multirelease.model.linking import Linking, Projection
from multirelease.params import Anything, Boolean, Interval, Options
from multirelease.model.sequence import SequenceView
from multirelease.model.transitions import FORMS_HINT, TransitionModel, load_transitions

from attacks.base import AttackBase, AttackResult, Progress
from attacks.intervals import settle
from .version_links import LinkedTransitions, VersionLinks, link_versions, linked_model, node_weights

__all__ = ["UpdateGraph", "VersionLinks", "link_versions", "node_weights", "sug_dp", "enumerate_paths",
           "record_sug"]

#: the refusal without a public update model (the forms of ``transitions`` to write)
NO_MODEL = f"update_graph needs the public update model of the sensitive values: give 'transitions': {FORMS_HINT}"


# ---------------------------------------------------------------------- the DP over layered graphs
#: multiply-adds of one block of :func:`_rows_matmul` (OpenBLAS computes a product of at most 2^18 on one thread)
_BLOCK = 1 << 18


def _rows_matmul(x: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``x @ P`` for a tall ``x`` (targets x values), in blocks of rows for one BLAS thread: a threaded call
    costs ten times the CPU on a busy machine (its second thread spins), each row the same sums either way."""
    rows = max(1, _BLOCK // max(1, P.shape[0] * P.shape[1]))
    out = np.empty((len(x), P.shape[1]), dtype=np.result_type(x, P))
    for s in range(0, len(x), rows):
        np.matmul(x[s:s + rows], P, out=out[s:s + rows])
    return out


@dataclass(frozen=True, eq=False)
class SugPass:
    """The forward sweep of every target: normalized forward sums and forward reachability per release."""

    alpha: list
    fwd: list
    weights: list
    present: list
    #: per release, the present targets' rows (``layer``): the same for every prefix's backward sweep
    _layers: dict = field(default_factory=dict, repr=False)

    def layer(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(targets present in release i, their weights, forward-reachable nodes of positive weight, their
        forward sums)``."""
        out = self._layers.get(i)
        if out is None:
            idx = np.flatnonzero(self.present[i])
            w = self.weights[i][idx]
            out = self._layers[i] = (idx, w, self.fwd[i][idx] & (w > 0), self.alpha[i][idx])
        return out


def forward_pass(weights: Sequence[np.ndarray], present: Sequence[np.ndarray], model: TransitionModel,
                 prior: tuple[list, list] | None = None) -> SugPass:
    """Forward sums ``alpha_i`` (each row rescaled to sum 1; the scale cancels in eq. 2) and forward
    reachability from the first layer, for every target at once.  ``prior``: the ``(alpha, fwd)`` of the first
    releases, already swept (a layer depends on the earlier ones only): the sweep goes on from there, each
    target carrying its last layer, as if it had run from the first release."""
    T, V = weights[0].shape
    cur_a = np.zeros((T, V))
    cur_f = np.zeros((T, V), dtype=bool)
    last = np.full(T, -1, dtype=np.int64)
    alphas, fwds = ([], []) if prior is None else (list(prior[0]), list(prior[1]))
    for i in range(len(alphas)):
        p = present[i]
        cur_a[p], cur_f[p], last[p] = alphas[i][p], fwds[i][p], i
    for i, (w, p) in enumerate(zip(weights, present)):
        if i < len(alphas):
            continue
        a = np.zeros((T, V))
        f = np.zeros((T, V), dtype=bool)
        first = p & (last < 0)
        a[first] = w[first]
        f[first] = w[first] > 0
        cont = p & (last >= 0)
        gap = i - last
        for k in np.unique(gap[cont]):
            sel = np.flatnonzero(cont & (gap == k))
            a[sel] = w[sel] * _rows_matmul(cur_a[sel], model.step_prob(int(k)))
            f[sel] = (w[sel] > 0) & (_rows_matmul(cur_f[sel].astype(np.float64),
                                                  model.steps(int(k)).astype(np.float64)) > 0)
        a = np.where(f, a, 0.0)
        s = a.sum(axis=1, keepdims=True)
        a = np.divide(a, s, out=np.zeros_like(a), where=s > 0)
        cur_a[p] = a[p]
        cur_f[p] = f[p]
        last[p] = i
        alphas.append(a)
        fwds.append(f)
    return SugPass(alphas, fwds, list(weights), list(present))


def backward_risks(sp: SugPass, model: TransitionModel, n: int, compact: bool = False) -> tuple[list, list]:
    """The feasible sub-SUG and the risks of eq. 2 after the first ``n`` releases.

    Returns ``(feasible, risk)``: per release ``i < n``, ``(T, V)`` arrays - ``feasible[i][t, v]`` (the node
    survives the pruning of Definition 11) and ``risk[i][t, v] = r_n(t'_i = v)``.  With ``compact`` the rows
    of the targets present in release ``i`` only (the others are zero): ``feasible[i]`` is ``(targets,
    their rows)`` (targets ascending) and ``risk[i]`` their rows.
    """
    T, V = sp.weights[0].shape
    cur_wb = np.zeros((T, V))
    nxt = np.full(T, -1, dtype=np.int64)
    feas: list = [None] * n
    risk: list = [None] * n
    for i in range(n - 1, -1, -1):
        # the targets present in release i only (an absent target's row is zero throughout): row by row the
        # same numbers as over every target, the products taken on the same rows in the same order
        idx, w, reach, alpha = sp.layer(i)
        # backward sums; a node reaches the last layer iff its backward sum is positive (every weight and
        # P_trans entry on a path is positive, and the per-layer rescaling keeps the sums far from underflow)
        b = np.zeros((len(idx), V))
        nx = nxt[idx]
        b[nx < 0] = 1.0
        cont = nx >= 0
        gap = nx - i
        for k in np.unique(gap[cont]):
            sel = np.flatnonzero(cont & (gap == k))
            b[sel] = _rows_matmul(cur_wb[idx[sel]], model.step_prob(int(k)).T)
        s = b.sum(axis=1, keepdims=True)
        b /= np.where(s > 0, s, 1.0)
        f = reach & (b > 0)
        ab = np.where(f, alpha * b, 0.0)
        z = ab.sum(axis=1, keepdims=True)
        if compact:
            risk[i] = ab / np.where(z > 0, z, 1.0)
            feas[i] = (idx, f)
        else:
            risk[i] = np.zeros((T, V))
            risk[i][idx] = ab / np.where(z > 0, z, 1.0)
            feas[i] = np.zeros((T, V), dtype=bool)
            feas[i][idx] = f
        cur_wb[idx] = w * b
        nxt[idx] = i
    return feas, risk


def sug_dp(weights: Sequence[np.ndarray], present: Sequence[np.ndarray], model: TransitionModel,
           n: int | None = None) -> tuple[list, list]:
    """Feasible sub-SUGs (Definition 11) and risks (eqs. 1-2) of every target after ``n`` releases (all by
    default).  ``weights[i]`` is the ``(T, V)`` node weights of release ``i`` (0 off the candidate set),
    ``present[i]`` the targets with a version there."""
    sp = forward_pass(weights, present, model)
    return backward_risks(sp, model, len(weights) if n is None else n)


def enumerate_paths(layers: Sequence[dict], model: TransitionModel, gaps: Sequence[int] | None = None) -> list[dict]:
    """The oracle of eqs. 1-2 by brute force: ``layers`` is one record's node weights per version
    (``{value: weight}``); every complete path is enumerated and weighed by eq. 1 (a product of its nodes and
    edges); returns each version's ``{value: risk}`` over the feasible values (exponential: tests only)."""
    gaps = list(gaps) if gaps is not None else [1] * (len(layers) - 1)
    totals = [dict() for _ in layers]
    z = 0.0
    for path in itertools.product(*[sorted(l) for l in layers]):
        w = 1.0
        for i, v in enumerate(path):
            w *= layers[i][v]
            if i + 1 < len(path):
                w *= model.step_prob(gaps[i])[model.index(v), model.index(path[i + 1])]
        if w <= 0:
            continue
        z += w
        for i, v in enumerate(path):
            totals[i][v] = totals[i].get(v, 0.0) + w
    return [{v: x / z for v, x in t.items()} for t in totals] if z > 0 else [{} for _ in layers]


def record_sug(links: VersionLinks, model: TransitionModel, target: int, n: int, weights: str = "frequency",
               linking: Linking | None = None) -> dict:
    """One target's SUG after ``n`` releases, as data (the witness of the report): per version its release,
    group(s), candidate nodes with weights, the feasible values and their risks.  With ``linking`` the nodes
    are labelled linked values (``measles (bt=O+)``), each version also lists its candidate sensitive values
    with their risks (``sensitive_risk``: the sums over the linked values), and ``linked_by`` names the
    columns."""
    sub = links.subset(np.array([target]))
    w = [node_weights(sub, i, weights) for i in range(n)]
    pres = [sub.present(i) for i in range(n)]
    feas, risk = sug_dp(w, pres, model)
    name = (lambda v: model.values[v]) if not linking else (lambda v: linking.label(model.values[v]))
    proj = _Projection.of_model(model) if linking else None
    layers = []
    for i in range(n):
        if not pres[i][0]:
            continue
        cls = sub.classes_of(i, 0)
        layer = {
            "release": i + 1,
            "group": [int(links.groups[i][c]) for c in cls] if len(cls) != 1 else int(links.groups[i][cls[0]]),
            "candidates": {name(v): float(w[i][0, v]) for v in np.flatnonzero(w[i][0] > 0)},
            "feasible": [name(v) for v in np.flatnonzero(feas[i][0])],
            "risk": {name(v): float(risk[i][0, v]) for v in np.flatnonzero(feas[i][0])},
        }
        if proj is not None:
            sr = proj.risk(risk[i][:1])[0]
            layer["sensitive_risk"] = {str(proj.values[s]): float(sr[s])
                                       for s in np.flatnonzero(proj.feasible(feas[i][:1])[0])}
        layers.append(layer)
    out = {"target": str(links.targets[target]), "after_release": n, "versions": layers}
    if linking:
        out["linked_by"] = list(linking.columns)
    return out


class _Projection(Projection):
    """Linked values read on their sensitive value (:class:`multirelease.model.linking.Projection`): a version's
    candidate sensitive values are those of its feasible linked nodes, the risk of ``(version, s)`` the sum of
    the risks of its linked values ``(s, t)`` (disjoint sets of paths, eq. 2)."""

    @classmethod
    def of_model(cls, model: TransitionModel) -> "_Projection":
        return cls.of(model.values)

    def feasible(self, f: np.ndarray) -> np.ndarray:
        """``(rows, S)``: the sensitive values of the true entries of each row of ``f`` (``(rows, V)`` bool)."""
        return self.any(f)

    def risk(self, r: np.ndarray) -> np.ndarray:
        """``(rows, S)``: each row's risks summed per sensitive value."""
        return np.minimum(self.sum(r), 1.0)


# ---------------------------------------------------------------------- the attack
class UpdateGraph(AttackBase):
    """The SUG attack of Li & Zhou (section III) and its joint exact strengthening.

    Parameters
    ----------
    linkage : "auto" | "uid" | "population", default "auto"
        How the adversary links a record's versions across releases: ``uid`` by the published ``uid`` column,
        ``population`` by the records' quasi-identifier values he knows (the population behind each release),
        ``auto`` by uid when every release has one, else by the population.
    weights : "frequency" | "uniform", default "frequency"
        Node weights (Definition 10).
    joint : bool, default False
        Also run the joint possible-worlds attack with CP-SAT.
    time_limit : number > 0, default 60
        Seconds for the joint attack (all components together, whichever executor solves them).
    workers : int >= 1, default 1
        CP-SAT search workers.
    alpha : number in (0, 1], optional
        A bound on the re-publication risk (Definition 9): ``certify`` then requires ``max_risk <= alpha``.
    target : str, optional
        One record (person id, or uid) to report on: ``target_risk_<i>`` (the largest risk ``r_N(t'_i)`` over
        its feasible values at release ``i``, after the last release) and ``target_candidates_<i>``
        (``|V'_i|``), and its SUG in ``worst["target"]`` - Example 3 written as expect lines.

    Notes
    -----
    Cost of the per-record attack: ``O(N^2 T V^2)`` numpy work for ``N`` releases, ``T`` records and ``V``
    sensitive values (one forward sweep, one backward sweep per prefix for the per-release figures).

    Examples
    --------
    >>> UpdateGraph().run(view).summary["vulnerable_values"]   # doctest: +SKIP
    3
    """

    name = "update_graph"
    params = {
        "linkage": Options(("auto", "uid", "population")),
        "weights": Options(("frequency", "uniform")),
        "joint": Boolean(),
        "time_limit": Interval(float, 0, None, closed="neither"),
        "workers": Interval(int, 1, None),
        "alpha": Interval(float, 0, 1, closed="right"),
        "target": Anything(),
    }
    defaults = {"linkage": "auto", "weights": "frequency", "joint": False, "time_limit": 60.0, "workers": 1}
    metrics = ("vulnerable_values", "max_risk", "records", "versions", "inconsistent", "vulnerable_records",
               "sug_vulnerable_values", "joint_extra", "joint_max_risk")
    #: the paper and its definitions (reference, ``multirelease describe``)
    paper = ("Li & Zhou, \"Challenging More Updates: Towards Anonymous Re-publication of Fully Dynamic "
             "Datasets\" (papers/000): section III, SUG Definition 10, feasible sub-SUG Definition 11, "
             "risk eqs. 1-2, re-publication risk Definition 9, Lemma 2")
    #: what each summary metric means (``<i>``: a release index, with the ``target`` parameter)
    metric_descriptions = {
        "vulnerable_values": "record versions whose candidate value set is pruned to one value after the last "
                             "release (risk 1, Lemma 2); with joint: true, the joint attack's count; 0 is safe",
        "max_risk": "the largest re-publication risk r_n(t'_i) (Definition 9, eqs. 1-2) over every prefix of "
                    "the sequence, record, version and value the version may hold",
        "records": "records (people, or uids) followed across the releases",
        "versions": "record versions (a record in one release) judged",
        "inconsistent": "records with no feasible path: their releases contradict the update model",
        "vulnerable_records": "records with at least one vulnerable version",
        "sug_vulnerable_values": "with joint: true, the per-record SUG's count of vulnerable values",
        "joint_extra": "with joint: true, vulnerable values only the joint possible-world attack finds",
        "joint_max_risk": "with joint: true, the eq. 2 risk on the SUGs restricted to jointly possible values",
        "target_risk_<i>": "with target: the largest risk r_N(t'_i) of the target's version i over its feasible "
                           "values, after the last release",
        "target_candidates_<i>": "with target: |V'_i|, the target's candidate values at release i",
    }

    #: releases for which ``target_risk_<i>`` / ``target_candidates_<i>`` are declared metrics
    MAX_TARGET_RELEASES = 100

    def __init__(self, **params: Any):
        super().__init__(**params)
        if "target" in self.config:
            self.config["target"] = _scalar(self.config["target"])
            extra = tuple(f"target_{kind}_{i}" for i in range(1, self.MAX_TARGET_RELEASES + 1)
                          for kind in ("risk", "candidates"))
            self.metrics = type(self).metrics + extra

    baseline = (("vulnerable_values", "==", 0),)

    def default_requirements(self) -> list[str]:
        out = []
        if "alpha" in self.config:
            out.append(f"update_graph.max_risk <= {self.config['alpha']:g}")
        return out

    def applies(self, view: SequenceView) -> bool:
        return len(view.releases) > 0 and view.transitions is not None

    def run(self, view: SequenceView, progress: Progress | None = None) -> AttackResult:
        model = view.transitions
        if model is None:
            raise InputError(NO_MODEL)
        if not isinstance(model, TransitionModel):
            model = load_transitions(model, view.schema)
        linking = view.linking
        if linking:  # linked values: the product model over the published linking tuples
            model = linked_model(model, np.concatenate([view.linked_values(r) for r in range(len(view.releases))]))
        links = link_versions(view, model, self.config["linkage"])
        return self._run_links(links, model, progress, linking=linking)[0]

    def _run_links(self, links: VersionLinks, model: TransitionModel, progress: Progress | None = None,
                   prior: tuple[list, tuple] | None = None, layers: tuple[list, list, list] | None = None,
                   linking: Linking | None = None) -> tuple[AttackResult, tuple[list, tuple], SugPass]:
        """The attack on linked versions.  ``prior`` is ``(rows, best)`` of the first ``len(rows)`` prefixes
        (:meth:`extend`): a prefix's row depends on its releases only, so those are not computed again;
        ``layers`` the ``(weights, alpha, fwd)`` of the first releases (the forward sweep goes on from them).
        ``linking``: the view's linking columns, when ``model`` is their :class:`LinkedTransitions` (the
        figures are then read on the sensitive value, see the module docstring).
        Returns the result, the ``(rows, best)`` of every prefix and the forward sweep."""
        c = self.config
        proj = _Projection.of_model(model) if linking else None
        if linking and not isinstance(model, LinkedTransitions):
            raise TypeError("linking columns need the linked model (attacks.update_graph.version_links.linked_model)")
        N = links.n_releases
        done = len(layers[0]) if layers else 0
        weights = (list(layers[0]) if layers else []) + [node_weights(links, i, c["weights"]) for i in range(done, N)]
        present = [links.present(i) for i in range(N)]
        sp = forward_pass(weights, present, model, prior=layers[1:] if layers else None)
        rows = list(prior[0]) if prior else []
        best = tuple(prior[1]) if prior else (-1.0, None, None)  # (risk, target, n)
        feas = risk = None
        for n in range(len(rows) + 1, N + 1):
            if progress is not None:
                progress(n - 1, N + 1, f"release {n}")
            # each prefix's row from the present targets' rows alone (an absent target's row is zero: the same
            # counts, and the same first target of highest risk - target 0 when every risk is 0)
            feas, risk = backward_risks(sp, model, n, compact=n < N)
            vul = 0
            vul_rec = np.zeros(len(links.targets), dtype=bool)
            versions = 0
            m = 0.0
            for i in range(n):
                if n < N:
                    idx, f = feas[i]
                    rr = risk[i]
                else:
                    idx = np.flatnonzero(present[i])
                    f, rr = feas[i][idx], risk[i][idx]
                if proj is not None:  # read on the sensitive value
                    f, rr = proj.feasible(f), proj.risk(rr)
                one = f.sum(axis=1) == 1
                versions += len(idx)
                vul += int(one.sum())
                vul_rec[idx[one]] = True
                r = rr.max(axis=1) if len(idx) else np.zeros(1)
                k = int(np.argmax(r))
                t, top = (int(idx[k]), float(r[k])) if r[k] > 0 else (0, 0.0)
                if top > m + 1e-12:
                    m = float(top)
                if top > best[0] + 1e-12:
                    best = (float(top), t, n)
            rows.append({"release": n, "records": int(present[n - 1].sum()), "versions": versions,
                         "vulnerable_values": vul, "vulnerable_records": int(vul_rec.sum()), "max_risk": m})
        inconsistent = np.zeros(len(links.targets), dtype=bool)
        for i in range(N):
            inconsistent |= present[i] & (feas[i].sum(axis=1) == 0)
        final = rows[-1]
        summary: dict[str, float] = {
            "vulnerable_values": final["vulnerable_values"],
            "max_risk": max(r["max_risk"] for r in rows),
            "records": int(len(links.targets)),
            "versions": final["versions"],
            "vulnerable_records": final["vulnerable_records"],
            "inconsistent": int(inconsistent.sum()),
        }
        worst: dict[str, Any] = {"linkage": links.mode}
        if linking:
            worst["linked_by"] = list(linking.columns)
        if best[1] is not None:
            worst["max_risk"] = record_sug(links, model, best[1], best[2], c["weights"], linking)
        first_vul = None
        for i in range(N):
            one = (feas[i] if proj is None else proj.feasible(feas[i])).sum(axis=1) == 1
            hit = np.flatnonzero(present[i] & one)
            if len(hit):
                first_vul = int(hit[0])
                break
        if first_vul is not None:
            worst["vulnerable_values"] = record_sug(links, model, first_vul, N, c["weights"], linking)
            # every record vulnerable after the last release (the first 1,000): what a repair withholds (issue 29)
            last = np.flatnonzero(vul_rec)
            worst["vulnerable_values"]["all_targets"] = [str(t) for t in links.targets[last[:1000]]]
            worst["vulnerable_values"]["count"] = int(len(last))
        if "target" in c:
            hit = np.flatnonzero(links.targets.astype(str) == c["target"])
            if not len(hit):
                raise InputError(f"target '{c['target']}' is in no release", key="target")
            t = int(hit[0])
            for i in range(N):
                if present[i][t]:
                    rt, ft = risk[i][t:t + 1], feas[i][t:t + 1]
                    if proj is not None:
                        rt, ft = proj.risk(rt), proj.feasible(ft)
                    summary[f"target_risk_{i + 1}"] = float(rt.max())
                    summary[f"target_candidates_{i + 1}"] = int(ft.sum())
            worst["target"] = record_sug(links, model, t, N, c["weights"], linking)
        notes = []
        if linking is not None and linking.note():
            notes.append(linking.note())
        if summary["inconsistent"]:
            notes.append(f"{summary['inconsistent']} records have no feasible path: their releases contradict "
                         f"the transition model (or the linkage)")
        exact = True
        bounds: dict = {}
        proven: tuple = ()
        stats: dict = {}
        if c["joint"]:
            from solver.update.worlds import joint_feasible

            if progress is not None:
                progress(N, N + 1, "joint possible worlds")
            jr = joint_feasible(links, model, feas, time_limit=c["time_limit"], workers=c["workers"],
                                codes=None if proj is None else proj.codes)
            sug_vul = summary["vulnerable_values"]
            summary["sug_vulnerable_values"] = sug_vul
            summary["vulnerable_values"] = jr.vulnerable_low
            summary["joint_extra"] = jr.vulnerable_low - sug_vul
            jw = [np.where(jr.possible[i], weights[i], 0.0) for i in range(N)]
            _, jrisk = sug_dp(jw, present, model)
            if proj is not None:
                jrisk = [proj.risk(x) for x in jrisk]
            summary["joint_max_risk"] = float(max((x.max() for x in jrisk if x.size), default=0.0))
            exact = jr.exact
            if not jr.exact:
                low, high = jr.vulnerable_low, jr.vulnerable_high
                intervals = {"vulnerable_values": (low, high), "joint_extra": (low - sug_vul, high - sug_vul),
                             # a version pinned to one value has risk 1 for it in the SUG of the jointly
                             # possible values; the estimate uses the values not yet proved impossible
                             "joint_max_risk": (1.0 if low else 0.0, 1.0)}
                summary["vulnerable_values"] = low
                summary["joint_extra"] = low - sug_vul
                bounds, proven = settle(summary, intervals, "time_limit",
                                        f"CP-SAT time limit {c['time_limit']:g} s (joint attack)")
                notes.append(f"joint attack stopped early ({jr.status}): vulnerable_values in [{low}, {high}]")
            worst["joint"] = jr.witness(links, model, linking)
            worst["joint"]["solver"] = {"status": jr.status, "solves": jr.solves, "components": jr.components}
            stats = {"joint_solves": jr.solves, "joint_components": jr.components,
                     "joint_components_without_world": jr.without_world, "joint_seconds": jr.seconds}
        if progress is not None:
            progress(N + 1, N + 1, "done")
        return AttackResult(attack=self.name, summary=summary, exact=exact, worst=worst, targets=tuple(rows),
                            bounds=bounds, notes=tuple(notes), proven=proven, reason="time_limit",
                            stats=stats), (rows, best), sp

    # ------------------------------------------------------------------ one release at a time (attacks.incremental)
    def extend(self, state, view: SequenceView, index: int):
        """The attack over releases ``1 .. index``: the links of the earlier releases are kept
        (:mod:`attacks.update_graph.incremental`), the new release is linked alone, and :meth:`_run_links` computes the
        new prefix's row from the same arrays ``run`` builds (the rows of earlier prefixes are kept).
        ``NotImplemented`` when ``linkage: auto`` would now link otherwise (a release without uids after
        releases with them), or when the release publishes a linking column not declared changing
        (:mod:`multirelease.model.linking`: whether it links the sequence depends on every release, and the linked
        domain grows with the releases): the whole sequence is then attacked by :meth:`run`."""
        from .incremental import LinkState

        linking = view.linking  # one release: every published linking column is set aside here
        if set(linking.ignored) - set(view.adversary.changing):
            return NotImplemented

        model = view.transitions
        if model is None:
            raise InputError(NO_MODEL)
        if not isinstance(model, TransitionModel):
            model = load_transitions(model, view.schema)
        state = state or LinkState.empty()
        new = state.extend(view.releases[0], view.population[0] if view.population else None, index, model,
                           self.config["linkage"])
        if new is NotImplemented:
            return NotImplemented
        result, (rows, best), sp = self._run_links(new.links(), model, prior=(new.rows, new.best),
                                                   layers=new.layers(), linking=linking)
        return result, new.with_prefix(rows, best, sp)

    @staticmethod
    def state_parts(state) -> tuple[bytes, bytes]:
        return state.parts()

    @staticmethod
    def load_state(parts: list, summary: bytes):
        from .incremental import LinkState

        return LinkState.load(parts, summary)
