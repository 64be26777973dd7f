"""BPG: the post-processor of Barbosa, Pinto, Gomes (CIKM 2012, section 6, Listing 1;
``003_9c5f9a30c53bd642.txt``) that makes any monotone principle safe across successive releases.

Each release is a query answer (a subset of a dynamic table).  BPG anonymizes it with an ordinary single-release
generalizer (Mondrian by default, or any registered publisher) and post-processes the classes against the
history so that no intersection or difference attack (section 4, :mod:`attacks.intersection.attack`) breaks the
principle.  The history is the paper's *table of neighbourhoods*: every record ever seen and the neighbourhood
it belongs to, each neighbourhood with its quasi-identifier region and its *signature* (the releases its records
were published in).  It lives in an SQLite database (:mod:`publishers.bpg.store`; the state returned by
:meth:`BPG.publish` holds its path), so that release ``n + 1`` can be made by another process.

Invariant (section 6, "Analysis"): *each record is associated with only one neighbourhood, all records in
the same neighbourhood share the same signature and all neighbourhoods satisfy the protection principle.*
Here the neighbourhoods are the cells of the meet of every published class partition, split by signature, so
every candidate set of the intersection and difference attacks is a union of neighbourhoods, hence valid by
monotonicity (Definition 3).

One release (:meth:`BPG.publish`, one function per step):

1. :func:`_universe` - the records: every stored one, and the snapshot's first-time records and new versions (a
   record whose values changed is, as in section 4, a deletion and an insertion: a new record, with a new uid).
2. :meth:`BPG._classes` - the signature is a quasi-identifier that is never generalized ("our algorithm sees its
   signature as a quasi-identifier"): the snapshot is split by the records' signatures and the generalizer runs
   on each part, so first-time records form classes of their own.  A part that cannot satisfy the principle as
   a whole is not published.
3. :func:`publishers.bpg.listing1.listing1` - every record of a class is tentatively published (lines 5-6);
   for each class ``E1`` and each stored neighbourhood ``nu0`` of its records, with ``E0 = db[nu0]``:
   ``P(E1 - E0)`` else reject ``E1`` (line 12); ``P(E0 - E1)`` else add ``E0^-`` (the records of ``E0`` not
   published in this release) to ``E1`` (line 15); ``P(E0 n E1)`` else add ``E0^-`` if that makes it valid, or
   reject (line 20).  A rejected class's records are not published (lines 30-33).
4. :func:`publishers.bpg.listing1.settle_leftovers` - beyond the listing, the records of a neighbourhood left
   unpublished (``E0 - R1``) must form a valid set too (the invariant): an invalid remainder is added to a
   published class holding records of ``E0`` (dirty records), or, without dirty records, every class holding
   records of ``E0`` is rejected; repeated until nothing changes.
5. :meth:`BPG._publish_classes` - every accepted class published as the closure of its records; every new record
   gets its uid.
Before step 6, the guarantee (issue 13): :meth:`BPG._check` runs the all-release intersection and difference
   attacks of section 4 on every release so far as published, incrementally, and refuses the release
   (:class:`InputError`, one line naming the uid) if a uid's candidate set breaks the principle.
6. :func:`publishers.bpg.listing1.new_neighbourhoods` - every published record of ``E1 n E0`` moves to the new
   neighbourhood ``nu0 n nu1``
   (lines 34-35), first-time records to ``nu1``; the database is updated in one transaction.

Variants (section 6, "Variants"), parameter ``variant``:

* ``dirty`` (default): as above - records of ``E0^-`` omitted from the query may be published ("dirty");
* ``no_dirty``: every failing test rejects the class;
* ``counterfeits``: a part of first-time records that cannot satisfy the principle is completed with
  counterfeit records (as m-invariance does), published with counterfeit statistics
  (:attr:`Release.counterfeits`).  A counterfeit cannot complete a set of records with a history: its
  fresh uid would show it was never published before (see the notes of :class:`BPG`); there the default
  rules apply;
* ``one_at_a_time``: ``E0^-`` records are added to ``E1`` one at a time (nearest first) until ``E0 n E1`` is
  valid, so the rest may "save" other classes.

Every published row carries ``uid``, the record's stable record-tracking id (section 4: "a unique identifier for
each individual, that stays constant across distinct releases", independent of real-world data): drawn when the
record is first stored, from a stream keyed by the database's secret salt
(:func:`publishers.bpg.store.new_uids`), and kept in the database.

Size: about 650 lines, over the usual 500, because it holds the publisher, the six steps of one release and
its own check in the order they run, so that a release reads top to bottom; Listing 1's set tests are in
:mod:`publishers.bpg.listing1` and the database in :mod:`publishers.bpg.store`.
"""
from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.params import Interval, Options, Text
from multirelease.model.principles import Principle
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.table import Table, composite_sensitive

from publishers.base import PublisherBase, PublishResult
from .listing1 import Neighbourhoods, SetTest, listing1, new_neighbourhoods, settle_leftovers
from .store import (SCHEMA_VERSION, SEP, STORES, Joined, Mirror, Store, Update, check_invariant, clear_cache,
                        join_columns, new_uids, read_state, refine_blocks)
from publishers.mondrian import mondrian_partition, release_from_partition

__all__ = ["BPG", "VARIANTS", "read_state", "check_invariant", "clear_cache"]

VARIANTS = ("dirty", "no_dirty", "counterfeits", "one_at_a_time")


class BPG(PublisherBase):
    """BPG post-processing (Barbosa et al., Listing 1) over a single-release generalizer.

    Parameters
    ----------
    k : int >= 1, default 1
        k-anonymity: every class of every release, and every class's intersection with its history, holds at
        least ``k`` records (1 leaves it to ``l``).
    l : number >= 1, default 1
        l-diversity: at least ``l`` distinct sensitive values in every class (distinct l-diversity: BPG needs a
        monotone principle, Definition 3; 1 leaves it to ``k``).
    l_kind : "distinct" | "entropy", default "distinct"
        Which l-diversity ``l`` means (BPG's guarantee needs a monotone principle, Definition 3).
    variant : "dirty" | "no_dirty" | "counterfeits" | "one_at_a_time", default "dirty"
        The variants of section 6 (see the module docstring).
    generalizer : str, default "mondrian"
        The single-release anonymizer underneath: ``mondrian``, or any registered publisher that produces
        disjoint classes (run with the same ``k`` and ``l``).
    database : str, optional
        Where the SQLite state lives.  Default: a new temporary file at the first release, removed when the
        process exits (give ``database`` to continue the sequence in another process).  The first release
        (``state=None``) starts a new sequence and replaces an existing file at that path.

    Notes
    -----
    The returned state is ``{"database": path, "releases": n}``; giving it back (in this or another process)
    continues the sequence; giving a state whose ``releases`` is not the database's is refused.  The result's
    ``stats["seconds"]`` holds the seconds spent in the snapshot's encoding (``encoding``), the generalizer
    (``generalizer``), the database (``database``), the rest of the post-processing (``post_processing``) and in
    all (``total``).  With record tracking a counterfeit that appears for the first time is a new uid: it can
    complete a class of first-time records but not the intersection of a class with its history.
    """

    name = "bpg"
    #: the paper and its definitions (the reference, ``multirelease describe``)
    paper = ('Barbosa, Pinto, Gomes, "Generically Extending Anonymization Algorithms to Deal with Successive Queries" '
             "(CIKM 2012; papers/003): BPG section 6, Listing 1; monotone principles Definition 3")
    params = {
        "k": Interval(int, 1, None),
        "l": Interval(float, 1, None),
        "l_kind": Options(("distinct", "entropy")),
        "variant": Options(VARIANTS),
        "generalizer": Text(),
        "database": Text(),
    }
    defaults = {"k": 1, "l": 1.0, "l_kind": "distinct", "variant": "dirty", "generalizer": "mondrian"}
    guarantee = ("intersection.violations == 0",)

    def check_config(self, file, key):
        c = self.config
        if c["k"] <= 1 and c["l"] <= 1:
            raise InputError(f"{self.name} needs k >= 2 or l > 1", file=file, key=key)
        if c["l_kind"] != "distinct" and c["l"] > 1:
            raise InputError(f"{self.name} needs a monotone principle (Definition 3 of Barbosa et al.); "
                             f"entropy l-diversity is not", file=file, key=f"{key}.l_kind" if key else "l_kind")
        if c["generalizer"] != "mondrian":
            from publishers import PUBLISHERS

            if c["generalizer"] not in PUBLISHERS or c["generalizer"] == self.name:
                raise InputError(f"The 'generalizer' parameter of {self.name} must be a registered single-release "
                                 f"publisher. Got {c['generalizer']!r}.", file=file,
                                 key=f"{key}.generalizer" if key else "generalizer")

    @property
    def principle(self) -> Principle:
        return Principle(k=self.config["k"], l=self.config["l"], l_kind="distinct")

    # ------------------------------------------------------------------ publish
    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult:
        t_start = time.perf_counter()
        principle = self.principle
        attributes = self.published_attributes(snapshot, attributes, need_sensitive=principle.needs_sensitive,
                                               reason=f" with l = {principle.l:g}")
        vals_columns = _vals_columns(snapshot.schema, attributes)
        store = self._open(state, attributes, vals_columns, rng)
        try:
            mirror = store.mirror()
            t_load = time.perf_counter() - t_start
            token = rng.bytes(8).hex()
            result, seconds = self._release(store, mirror, snapshot, attributes, vals_columns, principle, rng,
                                            token)
        except BaseException:
            store.close()
            raise
        STORES.keep(store)
        seconds["database"] += t_load
        seconds["total"] = time.perf_counter() - t_start
        seconds["post_processing"] = seconds["total"] - seconds["generalizer"] - seconds["database"] - \
            seconds["encoding"]
        return replace(result, state={"database": str(store.path), "releases": store.release},
                       stats={"seconds": seconds, **result.stats})

    def _open(self, state: Mapping | None, attributes: Sequence[str], vals_columns: list[str],
              rng: np.random.Generator) -> Store:
        """The database that ``state`` continues, checked against this publisher's parameters, or a new one (at
        the first release, with a new secret salt)."""
        c = self.config
        fingerprint = {"schema_version": SCHEMA_VERSION, "attributes": json.dumps(list(attributes)),
                       "vals_columns": json.dumps(vals_columns),
                       "principle": json.dumps({"k": c["k"], "l": c["l"], "l_kind": "distinct"}, sort_keys=True),
                       "variant": c["variant"], "generalizer": c["generalizer"]}
        if state:
            return STORES.resume(dict(state), fingerprint)
        path = Path(c["database"]) if c.get("database") else None
        return STORES.create(path, {**fingerprint, "releases": "0", "salt": rng.bytes(16).hex()})

    def _release(self, store: Store, mirror: Mirror, snapshot: Table, attributes: Sequence[str],
                 vals_columns: list[str], principle: Principle, rng: np.random.Generator, token: str):
        """Release ``n = store.release + 1``: the steps of the module docstring.  Returns the result and the
        seconds spent in the encoding, the generalizer and the database (its writing)."""
        schema = snapshot.schema
        quasi = [n for n in attributes if schema[n].is_quasi]
        all_q = list(schema.quasi)
        qcols = [all_q.index(q) for q in quasi]
        k, l, variant = principle.k, principle.l, self.config["variant"]
        t0 = time.perf_counter()
        qi_snap = snapshot.qi_codes[:, qcols].astype(np.int32)  # the snapshot's encoding: any publisher's first step
        seconds = {"encoding": time.perf_counter() - t0, "generalizer": 0.0, "database": 0.0}

        # 1. the records: stored ones, then the snapshot's first-time records and new versions
        u = _universe(mirror, snapshot, attributes, vals_columns, qi_snap)
        # 2. the generalizer on every signature group (the signature: a quasi-identifier never generalized)
        classes = self._classes(u, mirror, snapshot, attributes, quasi, vals_columns, qi_snap, principle, rng,
                                seconds)
        # 3. Listing 1, lines 5-33: every class against the stored neighbourhoods of its records
        pub = np.zeros(len(u.key), dtype=bool)
        for c in classes:
            pub[c] = True  # lines 5-6: sigma(t) := sigma(t) || 1 for the records of R1
        nb = Neighbourhoods.of(u.nbh)
        accepted = listing1(classes, u.nbh, pub, nb, u.sens_codes, k, l, variant, u.codes)
        # 4. the invariant: what a neighbourhood leaves unpublished is valid or empty
        accepted = settle_leftovers(accepted, pub, nb, u.sens_codes, k, l, variant)
        # 5. the release, every new record with its uid
        n = store.release + 1
        uids, uid_set = new_uids(store.meta["salt"], n, len(u.key) - u.n_old, mirror.uid_set)
        u.uid = np.concatenate([mirror.uid, np.array(uids, dtype=object)])
        release, truth, pos_of_key = self._publish_classes(u, mirror, accepted, snapshot, attributes,
                                                           vals_columns, qcols, rng)
        # the guarantee, checked on every release as published before this one is stored and returned
        t0 = time.perf_counter()
        blocks = self._check(u, mirror, release, pos_of_key, n, principle)
        check_seconds = time.perf_counter() - t0  # counted in post_processing too
        # 6. lines 34-35: the new neighbourhoods, stored in one transaction (with the release as published)
        t0 = time.perf_counter()
        update, new_nbh = _update(u, mirror, accepted, release, pos_of_key, n, token)
        store.write(update)
        store.remember(_next_mirror(u, mirror, update, new_nbh, uid_set, blocks))
        seconds["database"] += time.perf_counter() - t0
        return PublishResult(release=release, truth=truth, counterfeit_rows=int(truth.counterfeit.sum()),
                             stats={"check_seconds": check_seconds}), seconds

    # ------------------------------------------------------------------ the guarantee (before step 6)
    def _check(self, u: "_Universe", mirror: Mirror, release: Release, pos_of_key: np.ndarray, n: int,
               principle: Principle) -> np.ndarray:
        """BPG's guarantee on the release about to be returned: no uid isolated by the all-release intersection
        and difference attacks of section 4 (record tracking, the principle's ``k`` and ``l``) on every release
        so far as published, else :class:`InputError` naming the uid, the releases it is published in and what
        its candidate set leaves.  Nothing is stored before it passes.  Returns every record's new signature
        block (for the next release).

        The attack's exact candidate set of a uid is its block of equal presence-and-class signatures over
        all releases (:mod:`attacks.intersection.attack`, "Exactness"); the blocks of the stored releases are kept
        (:attr:`Mirror.blocks`, rebuilt from the releases as published - table ``published`` - when the
        database is re-read) and refined by this release's classes (:func:`refine_blocks`), then judged by
        the attack's own :func:`attacks.intersection.core.judge`.  A BPG record never changes its sensitive
        value (an update is a new record with a new uid), so a block is judged once: the same verdict as
        ``ATTACKS["intersection"]`` on all the releases (tests/publishers/test_publisher_guarantees.py compares them),
        at the cost of one factorization and one sort of the records ever seen per release instead of ``n``
        of them (running the attack on every release at each release doubled BPG's share of the release
        time on benchmarks/bench_bpg.py).  The section 6 invariant implies the guarantee; this re-derives it
        from the published rows, independently of the neighbourhoods."""
        from attacks.intersection.core import judge

        size = len(u.key)
        prev = np.zeros(size, dtype=np.int64)
        if mirror.blocks is not None:
            prev[:len(mirror.blocks)] = mirror.blocks
        cls = np.full(size, -1, dtype=np.int64)
        cls[pos_of_key] = release.classes
        blocks = refine_blocks(prev, cls)
        seen = np.flatnonzero(blocks > 0)
        gkey, bsize, distinct, ok = judge(blocks[seen], u.sens_codes[seen], len(u.sens_values), principle)
        if not ok.all():
            bad = gkey[np.flatnonzero(~ok)]
            members = seen[np.isin(blocks[seen], bad)]
            first = int(members[0])
            j = int(np.flatnonzero(gkey == blocks[first])[0])
            key = int(u.key[first])
            present = [i + 1 for i, (keys, _) in enumerate(mirror.history) if key in set(keys.tolist())]
            present += [n] if cls[first] >= 0 else []
            raise InputError(
                f"{self.name} refuses release {n}: intersection.violations == 0 fails ({len(members)} uid(s)) "
                f"for uid {u.uid[first]}: published in releases {present}, its candidate set over releases "
                f"1..{n} holds {int(bsize[j])} record(s) with {int(distinct[j])} distinct value(s) "
                f"({principle.describe()})")
        return blocks

    # ------------------------------------------------------------------ step 2: classes per signature
    def _classes(self, u: "_Universe", mirror: Mirror, snapshot: Table, attrs: Sequence[str], quasi: list[str],
                 vals_columns: list[str], qi_snap: np.ndarray, principle: Principle, rng: np.random.Generator,
                 seconds: dict) -> list[np.ndarray]:
        """The classes (universe positions) the generalizer makes of every signature group of the snapshot; a
        group that cannot satisfy the principle is left out, or, in the ``counterfeits`` variant, a group of
        first-time records is completed with counterfeits (which then join the universe)."""
        ok = SetTest(u.sens_codes, principle.k, principle.l)
        classes: list[np.ndarray] = []
        fakes = _Counterfeits()
        for g, signature in _signature_groups(u, mirror.nbh_releases):
            pos = u.snap_pos[g]
            codes_g = qi_snap[g]
            if ok(pos):
                sc = u.sens_codes[pos]
            elif self.config["variant"] == "counterfeits" and signature == "":
                completed = self._complete(u, g, pos, codes_g, fakes, snapshot, attrs, vals_columns, principle, rng)
                if completed is None:
                    continue
                pos, codes_g, sc = completed
            else:
                continue  # the part cannot satisfy the principle: not published
            t0 = time.perf_counter()
            parts = self._generalize(snapshot, attrs, quasi, codes_g, sc, pos, g, principle, rng)
            seconds["generalizer"] += time.perf_counter() - t0
            classes.extend(pos[p] for p in parts)
        if fakes.sens:
            u.add_counterfeits(fakes)
        return classes

    def _complete(self, u: "_Universe", g: np.ndarray, pos: np.ndarray, codes_g: np.ndarray, fakes: "_Counterfeits",
                  snapshot: Table, attrs: Sequence[str], vals_columns: list[str], principle: Principle,
                  rng: np.random.Generator):
        """A group of first-time records completed with counterfeits (each a copy of a random record of the
        group with another sensitive value, :meth:`_counterfeit_values`): ``(positions, leaf codes, sensitive
        codes)`` of the completed group, the counterfeits recorded in ``fakes``; ``None`` when no counterfeits
        can make it valid."""
        schema = snapshot.schema
        sens_names = [a for a in attrs if schema[a].is_sensitive]
        domain = [str(v) for v in u.sens_values]
        if len(sens_names) == 1:  # every value of the sensitive attribute's hierarchy may be faked
            domain += [v for v in schema[sens_names[0]].hierarchy.leaves if v not in set(domain)]
        extra = self._counterfeit_values(pos, u.sens_codes, u.sens_values, domain, principle, rng)
        if extra is None:
            return None
        tmpl = rng.choice(len(g), size=len(extra), replace=True)
        first_fake = len(u.key) + len(fakes.sens)
        for t, v in zip(tmpl.tolist(), extra):
            row = [str(x) for x in snapshot.frame[list(attrs)].iloc[int(g[t])].tolist()]
            row = _with_sensitive(schema, attrs, row, v)
            fakes.vals.append([row[list(attrs).index(a)] for a in vals_columns])
            fakes.qi.append(codes_g[t])
            fakes.sens.append(v)
        group_values = [str(u.sens_values[c]) for c in u.sens_codes[pos]] + list(extra)
        sc = pd.factorize(np.asarray(group_values, dtype=object))[0].astype(np.int64)
        return (np.concatenate([pos, first_fake + np.arange(len(extra))]), np.vstack([codes_g, codes_g[tmpl]]),
                sc)

    def _generalize(self, snapshot: Table, attrs, quasi, codes: np.ndarray, sens_codes: np.ndarray,
                    pos: np.ndarray, g: np.ndarray, principle: Principle, rng) -> list[np.ndarray]:
        """Classes of one signature group, as index arrays into ``pos``."""
        schema = snapshot.schema
        name = self.config["generalizer"]
        _, sc = np.unique(sens_codes, return_inverse=True)
        if name == "mondrian" or len(pos) != len(g):
            return mondrian_partition(codes, sc.reshape(-1), [schema[q] for q in quasi], principle)
        from publishers import PUBLISHERS

        pub = PUBLISHERS[name](k=self.config["k"], **({"l": self.config["l"]} if self.config["l"] > 1 else {}))
        sub = Table(schema, snapshot.frame.iloc[g])
        res = pub.publish(sub, attributes=attrs, state=None, rng=rng)
        where = pd.Index(sub.ids.astype(str)).get_indexer(res.truth.person.astype(str))
        cls = res.release.classes
        return [where[cls == c] for c in range(res.release.n_classes)]

    @staticmethod
    def _counterfeit_values(pos, sens_codes, sens_values, domain: list[str], principle: Principle, rng
                            ) -> list[str] | None:
        """Sensitive values of the counterfeits that make a group of first-time records valid: values it lacks
        first (for l, from ``domain``), then copies of its own values (for k); ``None`` when the domain has too
        few values."""
        present = {str(sens_values[c]) for c in sens_codes[pos].tolist()}
        missing = [v for v in domain if v not in present]
        need_l = max(0, int(np.ceil(principle.l)) - len(present)) if principle.l > 1 else 0
        if need_l > len(missing):
            return None
        out = missing[:need_l]
        own = [str(sens_values[c]) for c in sens_codes[pos]]
        while len(pos) + len(out) < principle.k:
            out.append(own[int(rng.integers(len(own)))])
        return out

    # ------------------------------------------------------------------ step 5: the release
    def _publish_classes(self, u: "_Universe", mirror: Mirror, accepted: list[np.ndarray], snapshot: Table,
                         attributes: Sequence[str], vals_columns: list[str], qcols: list[int],
                         rng: np.random.Generator) -> tuple[Release, ReleaseTruth, np.ndarray]:
        """Every accepted class published as the closure of its records (as Mondrian publishes a partition),
        with every row's uid; returns the release, its truth and the universe position of every row."""
        schema = snapshot.schema
        published = np.concatenate(accepted) if accepted else np.zeros(0, dtype=np.int64)
        if vals_columns:  # raw columns only where the release publishes them as they are
            frame = _raw_columns(published, u, mirror, snapshot, vals_columns)
            frame.index = pd.Index(published, name="position")
            for name in schema.published:
                if name not in frame.columns:
                    frame[name] = None
            frame = frame[list(schema.published)]
        else:  # the release is made from the codes and sensitive values below: the rows need no columns
            frame = pd.DataFrame(index=pd.Index(published, name="position"))
        combined = Table(schema, frame)
        sizes = np.array([len(e) for e in accepted], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else sizes
        partitions = [np.arange(a0, a0 + n0) for a0, n0 in zip(starts.tolist(), sizes.tolist())]
        codes_all = np.zeros((len(published), len(schema.quasi)), dtype=np.int32)
        codes_all[:, qcols] = u.codes[published]
        combined.__dict__["qi_codes"] = codes_all
        combined.__dict__["sensitive"] = u.sens[published]
        release, truth = release_from_partition(combined, attributes, partitions, rng)
        pos_of_key = truth.person.astype(np.int64)
        uid = u.uid[pos_of_key].astype(object)
        fake = u.fake[pos_of_key]
        person = np.where(fake, None, u.rid[pos_of_key]).astype(object)
        counterfeits = None
        if fake.any():
            counts = pd.Series(release.group[fake]).value_counts().sort_index()
            counterfeits = {int(g): int(c) for g, c in counts.items()}
        release = replace(release, uid=uid, counterfeits=counterfeits)
        return release, ReleaseTruth(person=person, counterfeit=fake.copy()), pos_of_key


# ---------------------------------------------------------------------- step 1: the universe
@dataclass(eq=False)
class _Counterfeits:
    """The counterfeits of a release, in order: raw ``vals`` columns, leaf codes and sensitive values."""

    vals: list = field(default_factory=list)
    qi: list = field(default_factory=list)
    sens: list = field(default_factory=list)


@dataclass(eq=False)
class _Universe:
    """Every record of a release, by position: the stored ones (``0 .. n_old - 1``, in key order), then the
    snapshot's new records (first-time records and new versions), then counterfeits.

    ``snap_pos`` is the position of every snapshot row, ``new_rid`` the identifiers of the new records,
    ``texts`` the stored raw values of every new record (:func:`publishers.bpg.store.join_columns`) and
    ``vals_of_new`` those of the counterfeits by key; ``sens_codes`` / ``sens_values`` factorize the sensitive
    values (the principle only compares them)."""

    key: np.ndarray
    rid: np.ndarray
    version: np.ndarray
    nbh: np.ndarray
    current: np.ndarray
    fake: np.ndarray
    sens: np.ndarray
    codes: np.ndarray
    n_old: int
    snap_pos: np.ndarray
    new_rid: np.ndarray
    texts: list
    vals_of_new: dict
    sens_codes: np.ndarray = field(init=False)
    sens_values: pd.Index = field(init=False)
    uid: np.ndarray | None = None  # set at step 5, when the new records get their uids

    def __post_init__(self):
        self._factorize()

    def _factorize(self) -> None:
        codes, self.sens_values = pd.factorize(self.sens, sort=True)
        self.sens_codes = codes.astype(np.int64)

    def add_counterfeits(self, fakes: _Counterfeits) -> None:
        """Counterfeits join the universe, with keys after every stored key (new sensitive values get codes)."""
        n_f = len(fakes.sens)
        start = int(self.key.max()) + 1 if len(self.key) else 1
        fkeys = np.arange(start, start + n_f, dtype=np.int64)
        for kk, row in zip(fkeys.tolist(), fakes.vals):
            self.vals_of_new[kk] = row
        self.texts.extend(SEP.join(row) for row in fakes.vals)
        self.key = np.concatenate([self.key, fkeys])
        self.rid = np.concatenate([self.rid, np.full(n_f, None, dtype=object)])
        self.version = np.concatenate([self.version, np.ones(n_f, dtype=np.int64)])
        self.nbh = np.concatenate([self.nbh, np.full(n_f, -1, dtype=np.int64)])
        self.current = np.concatenate([self.current, np.zeros(n_f, dtype=bool)])
        self.fake = np.concatenate([self.fake, np.ones(n_f, dtype=bool)])
        self.sens = np.concatenate([self.sens, np.asarray(fakes.sens, dtype=object)])
        self.codes = np.vstack([self.codes, np.asarray(fakes.qi, dtype=np.int32).reshape(n_f, self.codes.shape[1])])
        self._factorize()


def _universe(mirror: Mirror, snapshot: Table, attrs: Sequence[str], vals_columns: list[str],
              qi_snap: np.ndarray) -> _Universe:
    """Step 1: the stored records, plus the snapshot's new records and new versions of changed ones (a snapshot
    row whose leaf codes, sensitive value or raw ``vals_columns`` differ from its identifier's current version:
    section 4, an update is a deletion and an insertion)."""
    schema = snapshot.schema
    q = qi_snap.shape[1]
    keys, rid = mirror.key, mirror.rid
    current = mirror.current.copy()
    n_old = len(keys)
    stored_codes = mirror.codes.reshape(-1, q)
    snap_ids = np.array([str(x) for x in snapshot.ids.tolist()], dtype=object)
    # the snapshot matched to the stored records: identifier -> position of its current (non-counterfeit)
    # version, a hash map kept with the in-memory copy of the database (no index rebuilt per release)
    where = np.fromiter(map(mirror.rid_pos.get, snap_ids.tolist(), itertools.repeat(-1)), dtype=np.int64,
                        count=len(snap_ids))
    known = where >= 0
    snap_pos = np.full(len(snap_ids), -1, dtype=np.int64)  # universe position of each snapshot row
    sens_names = [a for a in attrs if schema[a].is_sensitive]
    sens_snap = snapshot.sensitive if list(schema.sensitive) == sens_names \
        else composite_sensitive(snapshot.frame, sens_names)
    sens_snap = np.asarray(sens_snap, dtype=object)
    version_of = {}
    if known.any():
        kpos = where[known]
        # same QI leaf codes, same sensitive value, and the same raw values of the vals_columns
        same = (stored_codes[kpos] == qi_snap[known]).all(axis=1) & (mirror.sensitive[kpos] == sens_snap[known])
        if vals_columns:
            stored = mirror.vals.texts_at(kpos)
            mine = np.array(join_columns(snapshot.frame[vals_columns].to_numpy(dtype=object)[known]), dtype=object)
            same &= mine == stored
        idx_known = np.flatnonzero(known)
        snap_pos[idx_known[same]] = kpos[same]
        changed = kpos[~same]
        current[changed] = False  # a new version replaces them
        version_of = dict(zip(rid[changed].tolist(), (mirror.version[changed] + 1).tolist()))
    fresh = np.flatnonzero(snap_pos < 0)
    next_key = int(keys.max()) + 1 if len(keys) else 1
    new_rid = snap_ids[fresh]
    new_version = np.array([version_of.get(r, 1) for r in new_rid.tolist()] if version_of else
                           np.ones(len(fresh)), dtype=np.int64)
    snap_pos[fresh] = n_old + np.arange(len(fresh))
    texts = join_columns(snapshot.frame[vals_columns].to_numpy(dtype=object)[fresh]) if vals_columns \
        else [""] * len(fresh)
    return _Universe(
        key=np.concatenate([keys, np.arange(next_key, next_key + len(fresh), dtype=np.int64)]),
        rid=np.concatenate([rid, new_rid.astype(object)]),
        version=np.concatenate([mirror.version, new_version]),
        nbh=np.concatenate([mirror.nbh, np.full(len(fresh), -1, dtype=np.int64)]),
        current=np.concatenate([current, np.ones(len(fresh), dtype=bool)]),
        fake=np.concatenate([mirror.counterfeit, np.zeros(len(fresh), dtype=bool)]),
        sens=np.concatenate([mirror.sensitive, sens_snap[fresh]]),
        codes=np.vstack([stored_codes, qi_snap[fresh]]),
        n_old=n_old, snap_pos=snap_pos, new_rid=new_rid, texts=texts, vals_of_new={})


def _signature_groups(u: _Universe, nbh_releases: dict) -> list[tuple[np.ndarray, str]]:
    """The snapshot's rows grouped by signature (``""`` for first-time records): groups in signature (text)
    order, rows in snapshot order.  Signatures are ranked once per neighbourhood, then the rows sorted by
    rank."""
    snap_nbh = u.nbh[u.snap_pos]
    if not len(snap_nbh):
        return []
    nb_present, nb_inv = np.unique(snap_nbh, return_inverse=True)
    sig_of_nb = [nbh_releases.get(x, "") for x in nb_present.tolist()]
    sig_texts = sorted(set(sig_of_nb))
    rank = {t: i for i, t in enumerate(sig_texts)}
    sig_code = np.array([rank[t] for t in sig_of_nb], dtype=np.int64)[nb_inv.reshape(-1)]
    order = np.argsort(sig_code, kind="stable")
    code_sorted = sig_code[order]
    bounds = np.flatnonzero(np.r_[True, code_sorted[1:] != code_sorted[:-1]])
    return [(np.sort(g), sig_texts[sig_code[g[0]]]) for g in np.split(order, bounds[1:])]


# ---------------------------------------------------------------------- step 5: helpers
def _vals_columns(schema, attributes: Sequence[str]) -> list[str]:
    """The published attributes whose raw values a release takes from the rows: those neither quasi-identifier
    nor sensitive, and the sensitive ones too when the release's sensitive value is not the schema's composite
    (only some sensitive attributes are published).  The quasi-identifiers come from the leaf codes and the
    sensitive value from the composite, so the stored ``vals`` hold only these columns."""
    sens = [a for a in attributes if schema[a].is_sensitive]
    composite = sens == list(schema.sensitive)
    return [a for a in attributes if not schema[a].is_quasi and not (schema[a].is_sensitive and composite)]


def _with_sensitive(schema, attrs, row: list[str], value: str) -> list[str]:
    """A raw row with its sensitive attributes set from a composite sensitive ``value``."""
    sens = [a for a in attrs if schema[a].is_sensitive]
    parts = value.split(" | ") if len(sens) > 1 else [value]
    row = list(row)
    for a, v in zip(sens, parts):
        row[list(attrs).index(a)] = v
    return row


def _raw_columns(published: np.ndarray, u: _Universe, mirror: Mirror, snapshot: Table, columns: list
                 ) -> pd.DataFrame:
    """The raw ``columns`` (:func:`_vals_columns`) of the published positions (index: record keys as text):
    snapshot rows from the snapshot, the others (dirty records, counterfeits) from their stored values."""
    row_of_pos = np.full(len(u.key), -1, dtype=np.int64)
    row_of_pos[u.snap_pos] = np.arange(len(u.snap_pos))
    r = row_of_pos[published]
    in_snap = r >= 0
    parts = []
    if in_snap.any():
        f = snapshot.frame.iloc[r[in_snap]][columns].astype(object)
        f.index = pd.Index(u.key[published[in_snap]].astype(str), name="key")
        parts.append(f)
    other = published[~in_snap]
    if len(other):
        rows = [u.vals_of_new[int(u.key[p])] if p >= u.n_old else mirror.vals[p] for p in other.tolist()]
        parts.append(pd.DataFrame(rows, columns=columns, index=pd.Index(u.key[other].astype(str), name="key"),
                                  dtype=object))
    if not parts:
        return pd.DataFrame(columns=columns, dtype=object)
    frame = pd.concat(parts) if len(parts) > 1 else parts[0]
    return frame.loc[u.key[published].astype(str)]


# ---------------------------------------------------------------------- step 6: the database update
def _class_regions(release: Release, pos_of_key: np.ndarray, accepted: list[np.ndarray], size: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The published region ``nu1`` of every accepted class, in ``accepted`` order."""
    row_class = np.full(size, -1, dtype=np.int64)
    for ci, e in enumerate(accepted):
        row_class[e] = ci
    ci_of_row = row_class[pos_of_key]
    q = release.lo.shape[1]
    lo = np.zeros((len(accepted), q), dtype=np.int64)
    hi = np.zeros((len(accepted), q), dtype=np.int64)
    if len(ci_of_row):
        lo[ci_of_row] = release.lo
        hi[ci_of_row] = release.hi
    return lo, hi


def _update(u: _Universe, mirror: Mirror, accepted: list[np.ndarray], release: Release, pos_of_key: np.ndarray,
            n: int, token: str) -> tuple[Update, np.ndarray]:
    """Step 6: the database update of release ``n`` - the new records, the superseded versions and the new,
    shrunk and emptied neighbourhoods (:func:`publishers.bpg.listing1.new_neighbourhoods`) - and every
    position's new neighbourhood."""
    cls_lo, cls_hi = _class_regions(release, pos_of_key, accepted, len(u.key))
    inserts, gone, shrunk, new_nbh = new_neighbourhoods(u.nbh, u.key, u.n_old, accepted, cls_lo, cls_hi, mirror, n)
    new = slice(u.n_old, None)
    records = {"key": u.key[new], "rid": u.rid[new], "uid": u.uid[new], "sensitive": u.sens[new],
               "codes": u.codes[new], "version": u.version[new], "current": u.current[new],
               "counterfeit": u.fake[new]}
    superseded = u.key[np.flatnonzero(mirror.current & ~u.current[:u.n_old])].tolist()
    published = (u.key[pos_of_key], np.asarray(release.group, dtype=np.int64))
    return Update(release=n, token=token, records=records, texts=u.texts, superseded=superseded, new_nbh=inserts,
                  gone=gone, shrunk=shrunk, published=published), new_nbh


def _next_mirror(u: _Universe, mirror: Mirror, update: Update, new_nbh: np.ndarray, uid_set: set,
                 blocks: np.ndarray) -> Mirror:
    """The in-memory copy of the database after this release (the old copy is not used again: its dicts are
    updated in place)."""
    nbh_releases, nbh_lo, nbh_hi = mirror.nbh_releases, mirror.nbh_lo, mirror.nbh_hi
    for t in update.gone:
        del nbh_releases[t], nbh_lo[t], nbh_hi[t]
    for nid, rel, lo, hi, _, _ in update.new_nbh:
        nbh_releases[nid], nbh_lo[nid], nbh_hi[nid] = rel, lo, hi
    rid_pos = mirror.rid_pos
    rid_pos.update(zip(u.new_rid.tolist(), range(u.n_old, u.n_old + len(u.new_rid))))
    if mirror.uid_set:
        mirror.uid_set |= uid_set
        uid_set = mirror.uid_set
    return Mirror(key=u.key, rid=u.rid, version=u.version, uid=u.uid, current=u.current, counterfeit=u.fake,
                  sensitive=u.sens, vals=Joined(np.concatenate([mirror.vals.texts, np.array(u.texts, dtype=object)])),
                  codes=u.codes, nbh=new_nbh, rid_pos=rid_pos, uid_set=uid_set, nbh_releases=nbh_releases,
                  nbh_lo=nbh_lo, nbh_hi=nbh_hi, history=[*mirror.history, update.published], blocks=blocks)
