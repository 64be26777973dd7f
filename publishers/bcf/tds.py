"""Top-down specialization (TDS) over hierarchy cuts: global recoding for k-anonymity.

Fung, Wang and Yu, "Top-down specialization for information and privacy preservation" (ICDE 2005), in the
form Fung, Wang, Fu and Pei use it in section 5.2 of "Anonymity for continuous data publishing"
(../shared/papers/002_26e2f2912f1b36d2.txt, Algorithm 1 without the BCF test):

* every quasi-identifier starts at the top of its taxonomy (``ANY_j``, Algorithm 1 lines 1-3); the
  generalization of attribute ``A_j`` is a *cut* ``Cut_j`` of its taxonomy, and every record's value is
  replaced by the cut node above it (global recoding: a leaf maps to the same node in every row);
* the candidates are the non-leaf nodes of the cuts; each iteration takes the candidate ``w`` of the highest
  *Score* (section 5.2: ``Score(w) = sum |qid_w|^2`` over the equivalence classes ``qid_w`` containing
  ``w``, the share of the discernibility cost the specialization attacks) and, if it is *valid*, specializes
  it: ``w`` is replaced by its children ``w_1..w_z`` in every record containing it (lines 5-10); an invalid
  candidate is dropped for good (line 12), which is sound because the requirement is anti-monotone
  (Theorem 5.1 for BCF-anonymity; plain for k-anonymity);
* ``Link[v]`` (section 5.2, "Line 6") links every cut value ``v`` to the records it generalizes, so a
  specialization touches only the records under ``w``; Score is recomputed from the links with one
  ``bincount`` per attribute (``Score(v) = sum_{r in Link[v]} |class(r)|``, which equals the sum of squared
  sizes of the classes containing ``v``).

Validity is pluggable (:class:`CutConstraint`): k-anonymity here (every new class has at least ``k``
records), BCF-anonymity in :mod:`publishers.bcf.anonymizer`.  Nodes of a taxonomy that cover the same leaves (unary
chains of ARX files) are one value: the deepest of them is used, so every candidate has at least two
children.  Cost: ``O(n q)`` numpy work per specialization, at most two iterations per taxonomy node.

The output is a :class:`Release` whose QI cells are taxonomy node labels (``[lo, hi]`` of a cut node; for
``{numeric: ...}`` hierarchies the band nodes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

import numpy as np

from multirelease.errors import InputError
from multirelease.params import Interval
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.schema import Attribute
from multirelease.model.table import Table, composite_sensitive

from publishers.base import PublisherBase, PublishResult

__all__ = ["TopDownSpecialization", "CutSpecializer", "CutConstraint", "Specialization", "CutSpace",
           "cut_release", "cut_cells", "published_quasi", "check_k_anonymous"]


# ---------------------------------------------------------------------- taxonomy helpers
@dataclass(frozen=True, eq=False)
class CutSpace:
    """The canonical nodes of each QI taxonomy (one node per distinct leaf range) and their children.

    ``canon[j][node]`` is the deepest node of attribute ``j`` with the same leaf range as ``node``;
    ``children[j][c]`` the canonical children of canonical node ``c`` (empty for a leaf) and ``child_lo[j][c]``
    their first leaf codes (for ``searchsorted``).
    """

    attributes: tuple[Attribute, ...]
    canon: tuple[np.ndarray, ...]
    children: tuple[dict, ...]
    child_lo: tuple[dict, ...]
    leaf_node: tuple[np.ndarray, ...]  # canonical node of every leaf code

    @classmethod
    def of(cls, attributes: Sequence[Attribute]) -> "CutSpace":
        canon, children, child_lo, leaf_node = [], [], [], []
        for a in attributes:
            h = a.hierarchy
            c = np.array([h._range_index[(int(h.node_lo[i]), int(h.node_hi[i]))] for i in range(h.n_nodes)],
                         dtype=np.int64)
            kids: dict[int, np.ndarray] = {}
            lows: dict[int, np.ndarray] = {}
            for node in np.unique(c):
                ks = sorted({int(c[x]) for x in h.children[int(node)]}, key=lambda x: int(h.node_lo[x]))
                if ks:
                    kids[int(node)] = np.asarray(ks, dtype=np.int64)
                    lows[int(node)] = h.node_lo[ks].astype(np.int64)
            leaves = np.zeros(h.n_leaves, dtype=np.int64)
            for node in np.unique(c):
                if h.node_lo[node] == h.node_hi[node]:
                    leaves[h.node_lo[node]] = node
            canon.append(c)
            children.append(kids)
            child_lo.append(lows)
            leaf_node.append(leaves)
        return cls(tuple(attributes), tuple(canon), tuple(children), tuple(child_lo), tuple(leaf_node))

    def root(self, j: int) -> int:
        return int(self.canon[j][0])

    def node_range(self, j: int, node: int) -> tuple[int, int]:
        h = self.attributes[j].hierarchy
        return int(h.node_lo[node]), int(h.node_hi[node])

    def node_of_range(self, j: int, lo: int, hi: int) -> int | None:
        """The canonical node covering exactly the leaves ``lo..hi`` (``None`` if no node does)."""
        h = self.attributes[j].hierarchy
        node = h._range_index.get((int(lo), int(hi)))
        return None if node is None else int(self.canon[j][node])


# ---------------------------------------------------------------------- one specialization step
@dataclass(frozen=True, eq=False)
class Specialization:
    """A tentative specialization of cut value ``w`` of attribute ``j`` into its children.

    ``new_nodes[c]`` are the cut nodes (one per QI) of new class ``c``, ``parent[c]`` the class it comes
    from, ``sizes[c]`` its record count; its sensitive groups are ``group_s[indptr[c]:indptr[c+1]]`` with
    counts ``group_n[...]`` (the groups ``g_w`` of Procedures 2 and 3).
    """

    j: int
    w: int
    children: np.ndarray
    records: np.ndarray
    record_class: np.ndarray  # index into the new classes, per record of ``records``
    record_child: np.ndarray  # index into ``children``, per record
    parent: np.ndarray
    new_nodes: np.ndarray
    sizes: np.ndarray
    indptr: np.ndarray
    group_s: np.ndarray
    group_n: np.ndarray

    def groups(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.indptr[c], self.indptr[c + 1]
        return self.group_s[a:b], self.group_n[a:b]


class CutConstraint(Protocol):
    """Validity of specializations (Algorithm 1, line 5).  The top class is checked with :meth:`check_top`;
    a tentative step with :meth:`check` (only its new classes can violate, since the measures of untouched
    classes do not change: section 5.2); :meth:`commit` is called when the step is applied."""

    def check_top(self, sizes: np.ndarray, group_s: np.ndarray, group_n: np.ndarray) -> bool: ...

    def check(self, step: Specialization) -> bool: ...

    def commit(self, step: Specialization) -> None: ...


class KAnonymity:
    """Every equivalence class has at least ``k`` records."""

    def __init__(self, k: int):
        self.k = k

    def check_top(self, sizes, group_s, group_n) -> bool:
        return bool(sizes.min() >= self.k) if len(sizes) else True

    def check(self, step: Specialization) -> bool:
        return bool(step.sizes.min() >= self.k)

    def commit(self, step: Specialization) -> None:
        pass


# ---------------------------------------------------------------------- the specializer
class CutSpecializer:
    """Algorithm 1 of Fung et al. over raw leaf codes, with a pluggable validity test.

    Parameters
    ----------
    codes : ndarray (n, q) of int
        Leaf codes of the quasi-identifiers.
    space : CutSpace
    sensitive : ndarray (n,) of int
        Sensitive codes ``0..S-1`` (the groups of each class).
    constraint : CutConstraint
    """

    def __init__(self, codes: np.ndarray, space: CutSpace, sensitive: np.ndarray, n_values: int,
                 constraint: CutConstraint):
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        self.space = space
        self.sens = np.asarray(sensitive, dtype=np.int64)
        self.S = max(int(n_values), 1)
        self.constraint = constraint
        n, q = self.codes.shape
        self.n, self.q = n, q
        self.node = np.array([[space.root(j) for j in range(q)]] * n, dtype=np.int64).reshape(n, q)
        self.cls = np.zeros(n, dtype=np.int64)
        self.class_size = np.array([n], dtype=np.int64)
        self.class_nodes = np.array([[space.root(j) for j in range(q)]], dtype=np.int64).reshape(1, q)
        self.link: dict[tuple[int, int], np.ndarray] = {(j, space.root(j)): np.arange(n) for j in range(q)}
        self.removed: set[tuple[int, int]] = set()
        self.iterations = 0
        self.specializations = 0

    # -------------------------------------------------------------- main loop
    def run(self) -> np.ndarray:
        """Specialize until no candidate is valid; returns the cut node of every record, ``(n, q)``."""
        if self.n == 0:
            return self.node
        counts = np.bincount(self.sens, minlength=self.S)
        s = np.flatnonzero(counts)
        if not self.constraint.check_top(np.array([self.n]), s, counts[s]):
            raise InputError("the requirement fails even with every quasi-identifier fully generalized")
        while True:
            cand = self._best_candidate()
            if cand is None:
                break
            self.iterations += 1
            j, w = cand
            step = self._tentative(j, w)
            if self.constraint.check(step):
                self.constraint.commit(step)
                self._apply(step)
                self.specializations += 1
            else:
                self.removed.add(cand)
        return self.node

    def _best_candidate(self) -> tuple[int, int] | None:
        """The candidate of the highest Score; ties (every root has Score ``n^2`` at the start) go to the
        larger discernibility reduction ``sum |qid_w|^2 - sum |qid_wi|^2``, then the first attribute and the
        lowest node id."""
        record_weight = self.class_size[self.cls].astype(np.float64)
        scored: list[tuple[float, int, int]] = []
        for j in range(self.q):
            kids = self.space.children[j]
            nodes = [w for (jj, w) in self.link if jj == j and w in kids and (j, w) not in self.removed]
            if not nodes:
                continue
            score = np.bincount(self.node[:, j], weights=record_weight)
            scored.extend((float(score[w]), j, w) for w in nodes)
        if not scored:
            return None
        top = max(sc for sc, _, _ in scored)
        tied = sorted((j, w) for sc, j, w in scored if sc == top)
        if len(tied) == 1:
            return tied[0]
        best, best_gain = None, -1.0
        for j, w in tied:
            gain = top - self._split_square_sum(j, w)
            if gain > best_gain:
                best, best_gain = (j, w), gain
        return best

    def _split_square_sum(self, j: int, w: int) -> float:
        """``sum |qid_wi|^2`` over the classes that specializing ``w`` would create."""
        records = self.link[(j, w)]
        child = np.searchsorted(self.space.child_lo[j][w], self.codes[records, j], side="right") - 1
        _, counts = np.unique(self.cls[records] * len(self.space.children[j][w]) + child, return_counts=True)
        return float((counts.astype(np.float64) ** 2).sum())

    def _tentative(self, j: int, w: int) -> Specialization:
        records = self.link[(j, w)]
        children = self.space.children[j][w]
        child = np.searchsorted(self.space.child_lo[j][w], self.codes[records, j], side="right") - 1
        nch = len(children)
        parent_of_record = self.cls[records]
        key = parent_of_record * nch + child
        uniq, inv = np.unique(key, return_inverse=True)
        inv = inv.reshape(-1)
        sizes = np.bincount(inv, minlength=len(uniq))
        parent = uniq // nch
        new_nodes = self.class_nodes[parent].copy()
        new_nodes[:, j] = children[uniq % nch]
        gkey = inv * self.S + self.sens[records]
        guniq, gcount = np.unique(gkey, return_counts=True)
        gclass = guniq // self.S
        indptr = np.concatenate([[0], np.cumsum(np.bincount(gclass, minlength=len(uniq)))])
        return Specialization(j=j, w=w, children=children, records=records, record_class=inv, record_child=child,
                              parent=parent, new_nodes=new_nodes, sizes=sizes, indptr=indptr,
                              group_s=guniq % self.S, group_n=gcount)

    def _apply(self, step: Specialization) -> None:
        j, w = step.j, step.w
        base = len(self.class_size)
        m = len(step.sizes)
        self.cls[step.records] = base + step.record_class
        self.class_size = np.concatenate([self.class_size, step.sizes])
        self.class_size[np.unique(step.parent)] = 0
        self.class_nodes = np.vstack([self.class_nodes, step.new_nodes])
        self.node[step.records, j] = step.children[step.record_child]
        del self.link[(j, w)]
        order = np.argsort(step.record_child, kind="stable")
        counts = np.bincount(step.record_child, minlength=len(step.children))
        for c, part in zip(step.children, np.split(step.records[order], np.cumsum(counts)[:-1])):
            if len(part):
                self.link[(j, int(c))] = part
        del m


# ---------------------------------------------------------------------- releases of a cut
def published_quasi(snapshot: Table, attributes: Sequence[str] | None) -> tuple[tuple[str, ...], list[str], list[int]]:
    """``(attributes, quasi, columns)``: the published attributes, their QIs and those QIs' columns in
    :attr:`Table.qi_codes`."""
    schema = snapshot.schema
    attributes = schema.restrict(attributes if attributes is not None else schema.published)
    quasi = [n for n in attributes if schema[n].is_quasi]
    all_q = list(schema.quasi)
    return attributes, quasi, [all_q.index(n) for n in quasi]


def cut_cells(space: CutSpace, node: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(lo, hi, masks)``: the leaf ranges of cut nodes ``node`` ``(n, q)``, and the leaf bitsets of the
    ``subsets`` attributes."""
    n, q = node.shape
    lo = np.zeros((n, q), dtype=np.int32)
    hi = np.zeros((n, q), dtype=np.int32)
    masks = {}
    for j, a in enumerate(space.attributes):
        h = a.hierarchy
        lo[:, j] = h.node_lo[node[:, j]]
        hi[:, j] = h.node_hi[node[:, j]]
        if a.is_subsets:
            width = (hi[:, j] - lo[:, j] + 1).astype(np.uint64)
            masks[a.name] = ((np.left_shift(np.uint64(1), width) - np.uint64(1)) << lo[:, j].astype(np.uint64))
    return lo, hi, masks


def cut_release(snapshot: Table, attributes: Sequence[str], space: CutSpace, node: np.ndarray,
                rng: np.random.Generator) -> tuple[Release, ReleaseTruth]:
    """Publish every record with its QI values replaced by its cut nodes (``node``, ``(n, q)``).

    Rows are grouped by equivalence class; class order and row order inside a class are random (``rng``).
    """
    schema = snapshot.schema
    n, q = node.shape
    if n:
        _, cls = np.unique(node, axis=0, return_inverse=True)
        cls = cls.reshape(-1)
        perm = rng.permutation(int(cls.max()) + 1)
        rank = perm[cls]
        rows = np.lexsort((rng.permutation(n), rank))
    else:
        rows = np.zeros(0, dtype=np.int64)
    lo, hi, masks = cut_cells(space, node[rows])
    frame = snapshot.frame.iloc[rows]
    sens_names = [x for x in attributes if schema[x].is_sensitive]
    sensitive = composite_sensitive(frame, sens_names)
    others = [x for x in attributes if not schema[x].is_quasi and not schema[x].is_sensitive]
    other = frame[others].reset_index(drop=True) if others else None
    release = Release(schema=schema, attributes=tuple(attributes), lo=lo, hi=hi, sensitive=sensitive, masks=masks,
                      other=other)
    return release, ReleaseTruth.of_people(snapshot.ids[rows])


def sensitive_codes(snapshot: Table, attributes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, values)`` of the published composite sensitive value of every record (sorted values)."""
    import pandas as pd

    schema = snapshot.schema
    names = [x for x in attributes if schema[x].is_sensitive]
    values = composite_sensitive(snapshot.frame, names)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), sort=True)
    return codes.astype(np.int64), np.asarray(uniq, dtype=object)


def check_k_anonymous(name: str, release: Release, k: int) -> None:
    """The release's own check: ``linking.k >= k`` by the single-release attack of the registry (publishers
    may call attacks, never the reverse); a release that fails is refused with one line naming the class."""
    from attacks import ATTACKS
    from multirelease.model.sequence import Adversary, ReleaseSequence

    seq = ReleaseSequence()
    seq.append(release, None, None)
    res = ATTACKS["linking"](k=int(k)).run(seq.view(Adversary(), targets="regions"))
    low, _ = res.interval("k")
    if not low >= k:
        w = res.witness("k")
        qi = ", ".join(f"{a}={v}" for a, v in dict(w.get("qi", {})).items())
        raise InputError(f"{name} refuses the release: linking.k >= {k} fails (k = {low:g}) for the class "
                         f"{w.get('group', '?')} ({qi})")


class TopDownSpecialization(PublisherBase):
    """k-anonymous release by top-down specialization over hierarchy cuts (global recoding).

    Parameters
    ----------
    k : int >= 2
        k-anonymity: every class of the release (a combination of the cut's taxonomy nodes) holds at least
        ``k`` records.

    Its guarantee is its principle, k-anonymity of the release it publishes (checked before it is returned by
    the ``linking`` attack: :func:`check_k_anonymous`).  It claims nothing about correspondence attacks: a
    sequence of TDS releases is not BCF-anonymous in general (section 1 of Fung et al.); ``bcf`` is the
    publisher for that, and takes a TDS release as a foreign first release
    (:func:`publishers.bcf.state.state_from_releases`).

    Examples
    --------
    ``releases: [{publisher: tds, k: 40}]``; the release's QI cells are taxonomy node labels.
    """

    name = "tds"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ('Fung, Wang, Yu, "Top-Down Specialization for Information and Privacy Preservation" (ICDE 2005), as Fung, '
             "Wang, Fu, Pei use it (papers/002, section 5.2, Algorithm 1 without the BCF test)")
    #: a month's release depends on its snapshot alone: ``release --repair`` may raise k
    repair = {"k": "times"}
    params = {"k": Interval(int, 2, None)}
    required = ("k",)
    #: what every release keeps, checked before it is returned (formatted with the config)
    guarantee = ("linking.k >= {k}",)
    #: k read as Fung et al.'s crack sizes, as for Mondrian
    claims = ("correspondence.FA >= {k}", "correspondence.CA >= {k}", "correspondence.BA >= {k}")
    #: a single-release guarantee: a linking column unknown to the adversary changes no class of one release
    linking_default = "keep"
    linking_covered = True

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        attributes, quasi, cols = published_quasi(snapshot, attributes)
        schema = snapshot.schema
        space = CutSpace.of([schema[x] for x in quasi])
        k = self.config["k"]
        if len(snapshot) < k:
            raise InputError(f"{self.name}: the table has {len(snapshot)} records, fewer than k = {k}")
        sens, values = sensitive_codes(snapshot, attributes)
        spec = CutSpecializer(snapshot.qi_codes[:, cols], space, sens, len(values), KAnonymity(k))
        node = spec.run()
        release, truth = cut_release(snapshot, attributes, space, node, rng)
        check_k_anonymous(self.name, release, k)
        prev = int((state or {}).get("releases", 0))
        return PublishResult(release=release, truth=truth, state={"releases": prev + 1})
