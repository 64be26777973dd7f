"""Headroom (issue 26): how many more months can the ledger's sequence be published before its gate fails?

``multirelease ledger DIR --headroom [--months N] [--futures R] [--seed S]`` (and
:func:`multirelease.api.ledger_headroom`) forecasts it from what the ledger holds, and writes nothing:

1. **The churn is fitted** on the ledger's history (:func:`fit_churn`, the snapshots of the last
   :data:`WINDOW` months): the monthly deletion rate (records of a snapshot absent from the next, over the
   first's records), the insertion rate (new identifiers, over the same), and for every attribute the update
   rate (records present in both months whose value changed, over those records).  The sensitive attributes
   are one attribute there (their composite value, as the update model reads it); when the spec declares
   ``transitions`` (:mod:`multirelease.model.transitions`, Li & Zhou's ``P_trans``), an updated sensitive
   value is drawn from ``P_trans`` of the old one conditioned on a change (the rate counts changes), among the
   records whose value can change; any other attribute's new value is drawn from the values updated records
   took in the window.  Arrivals are a bootstrap of the arrivals of the last :data:`ARRIVAL_MONTHS` months
   (their values, never their identifiers).
2. **A future** (:func:`_future`) starts from the last snapshot and the publisher's state as the ledger holds
   them and, month after month, draws the month's churn (binomial counts of the fitted rates), publishes the
   month with the ledger's publisher from a copy of its state (:func:`multirelease.ledger.operations._state_copy`,
   seeded from the ledger's secret as ``release`` is) and judges it with the same gate
   (:func:`multirelease.pipeline.ledger_plan` and :func:`~multirelease.pipeline.run_ledger_step`: the spec's
   requirements, the attacks' baselines, the publisher's guarantee, utility requirements such as
   ``release[-1].counterfeit_share <= 0.05``).  The gate's resume (:class:`ForecastResume`) starts from what the
   ledger kept (:class:`~multirelease.ledger.gate.GateResume`) and advances in memory with each simulated month's
   states, so a simulated month costs one month's gate.  A future stops at its first month that does not pass
   (FAIL, UNKNOWN, or the publisher refusing the month): its *headroom* is the number of months before it.
3. **Futures run in parallel** through the project's executor (:mod:`solver.executor`, local processes by
   default), each future's draws from ``numpy.random.default_rng([seed, future])``: the same ledger and seed give
   the same forecast whichever executor ran it.
4. **The answer** (:class:`Headroom`) is aggregate only: per month ahead the share of futures whose gate still
   passes, the median months of headroom with the 10-90% band (quantiles over the futures; a future that never
   failed counts as the horizon, "N or more"), the requirement that fails first most often, and an example
   witness from a simulated month reduced to figures (a person it names is said to be "a real person of the
   ledger" or "a simulated arrival", never named; no attribute value).  Simulated arrivals get identifiers that
   no identifier of the ledger's snapshots starts with (:func:`_arrival_prefix`).

**Read-only.**  The ledger is opened as ``ledger DIR`` opens it (a reader, no lock) with SQLite's
``query_only``; nothing is recorded: the forecast is computed on request, its bytes are never changed (a test
compares every file of the folder before and after).  BPG keeps its state in its own database and is not
forecast yet (exit 2, as ``--repair``).
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from multirelease.errors import InputError
from multirelease.model.table import Table

__all__ = ["Churn", "Headroom", "ForecastResume", "fit_churn", "forecast", "WINDOW", "ARRIVAL_MONTHS",
           "DEFAULT_MONTHS", "DEFAULT_FUTURES", "DEFAULT_SEED"]

#: months of history the rates are fitted on (the most recent ones)
WINDOW = 12
#: months whose arrivals are bootstrapped
ARRIVAL_MONTHS = 3
DEFAULT_MONTHS, DEFAULT_FUTURES, DEFAULT_SEED = 12, 20, 0
#: the most months / futures one forecast takes (each simulated month costs a month's gate)
MAX_MONTHS, MAX_FUTURES = 120, 1000
#: keys of a witness that name a person (:mod:`multirelease.ledger.repair`'s)
_WHO = ("target", "individual", "person")
#: the composite sensitive value's separator (:func:`multirelease.model.table.composite_sensitive`)
_JOIN = " | "


# ---------------------------------------------------------------------- the churn
@dataclass
class Churn:
    """The churn fitted on the ledger's history (module docstring, 1).  ``updates``: attribute (the sensitive
    attributes joined by `` | ``) -> monthly update rate; ``model``: the spec's update model, followed by the
    sensitive updates (``None``: none declared); ``arrivals`` and ``updated``: the values bootstrapped
    (private: never shown)."""

    deletion: float
    insertion: float
    updates: dict
    months: int
    sensitive: str | None
    model: Any = None
    arrivals: pd.DataFrame | None = field(default=None, repr=False)
    updated: dict = field(default_factory=dict, repr=False)

    def to_json(self) -> dict:
        """The assumptions, aggregate: rates, months fitted, arrivals in the bootstrap, the update model."""
        return {"months_fitted": self.months, "deletion_rate": self.deletion, "insertion_rate": self.insertion,
                "update_rates": dict(self.updates), "arrivals_bootstrapped": 0 if self.arrivals is None
                else len(self.arrivals), "sensitive_updates": (f"transitions: {self.model.description}"
                                                               if self.model is not None else "observed values")}

    def words(self) -> str:
        """One line of the assumptions (rates in percent a month)."""
        ups = ", ".join(f"{a} {r:.1%}" for a, r in self.updates.items() if r > 0) or "none"
        how = f" (sensitive values drawn from transitions: {self.model.description})" if self.model is not None \
            and self.updates.get(self.sensitive or "", 0) > 0 else ""
        return (f"churn fitted on {self.months} month{'s' if self.months != 1 else ''}: deletions {self.deletion:.1%} "
                f"a month, insertions {self.insertion:.1%}, updates {ups}{how}; arrivals bootstrapped from "
                f"{0 if self.arrivals is None else len(self.arrivals):,} recent arrivals")

    # ------------------------------------------------------------------ one simulated month
    def step(self, frame: pd.DataFrame, rng: np.random.Generator, prefix: str) -> pd.DataFrame:
        """The next month of ``frame`` (a snapshot's frame, indexed by identifier): departures, updates of the
        staying records, arrivals named ``prefix`` and a number."""
        n = len(frame)
        leave = int(rng.binomial(n, min(self.deletion, 1.0)))
        if leave:
            keep = np.ones(n, dtype=bool)
            keep[rng.choice(n, leave, replace=False)] = False
            frame = frame[keep]
        frame = frame.copy()
        for attr, rate in self.updates.items():
            if rate <= 0 or not len(frame):
                continue
            if attr == self.sensitive and self.model is not None:
                self._update_sensitive(frame, rng, rate)
                continue
            pool = self.updated.get(attr)
            if pool is None or not len(pool):
                continue
            who = rng.choice(len(frame), int(rng.binomial(len(frame), min(rate, 1.0))), replace=False)
            frame.iloc[who, frame.columns.get_loc(attr)] = pool[rng.integers(len(pool), size=len(who))]
        arrive = 0
        if self.arrivals is not None and len(self.arrivals):  # a population that more than doubled: Poisson
            p = self.insertion
            arrive = int(rng.binomial(n, p)) if p <= 1 else int(rng.poisson(n * p))
        if arrive:
            new = self.arrivals.iloc[rng.integers(len(self.arrivals), size=arrive)].copy()
            new.index = pd.Index([f"{prefix}{i}" for i in range(arrive)], name=frame.index.name)
            frame = pd.concat([frame, new[frame.columns]])
        return frame

    def _update_sensitive(self, frame: pd.DataFrame, rng: np.random.Generator, rate: float) -> None:
        """Updates of the composite sensitive value drawn from ``P_trans`` conditioned on a change, among the
        records whose value can change (Li & Zhou's candidate update sets less the value itself)."""
        names = self.sensitive.split(_JOIN)
        model = self.model
        current = frame[names[0]].astype(str).to_numpy(dtype=object)
        for name in names[1:]:
            current = current + _JOIN + frame[name].astype(str).to_numpy(dtype=object)
        idx = model.indices(current)
        moved = model.prob.copy()
        np.fill_diagonal(moved, 0.0)
        can = np.flatnonzero((idx >= 0) & (moved.sum(axis=1)[np.maximum(idx, 0)] > 0))
        count = min(int(rng.binomial(len(frame), min(rate, 1.0))), len(can))
        if not count:
            return
        who = np.sort(rng.choice(can, count, replace=False))
        rows = moved[idx[who]]
        cdf = np.cumsum(rows / rows.sum(axis=1, keepdims=True), axis=1)
        new = np.minimum((rng.random(count)[:, None] >= cdf).sum(axis=1), len(model.values) - 1)
        values = np.asarray(model.values, dtype=object)[new]
        parts = [v.split(_JOIN) for v in values] if len(names) > 1 else [[v] for v in values]
        for j, name in enumerate(names):
            frame.iloc[who, frame.columns.get_loc(name)] = [p[j] for p in parts]


def _composite(frame: pd.DataFrame, names: Sequence[str]) -> pd.Series:
    out = frame[names[0]].astype(str)
    for name in names[1:]:
        out = out + _JOIN + frame[name].astype(str)
    return out


def fit_churn(snapshots: Sequence[Table], model: Any = None) -> Churn:
    """The churn of consecutive ``snapshots`` (at least two; module docstring, 1): pooled rates over the months
    (the events of all months over the records they apply to), the values updated records took, and the
    arrivals of the last :data:`ARRIVAL_MONTHS` months.  ``model``: the spec's update model
    (:class:`~multirelease.model.transitions.TransitionModel`) or ``None``."""
    schema = snapshots[-1].schema
    columns = list(snapshots[-1].frame.columns)
    # with an update model the sensitive attributes change together (their composite value, as P_trans reads it)
    sens = [c for c in schema.sensitive if c in columns] if model is not None else []
    label = _JOIN.join(sens) if sens else None
    attrs = ([label] if label else []) + [c for c in columns if c not in sens]
    before = deleted = inserted = common_total = 0
    changed = dict.fromkeys(attrs, 0)
    updated: dict[str, list] = {a: [] for a in attrs if a != label}
    arrivals = []
    pairs = list(zip(snapshots[:-1], snapshots[1:]))
    for m, (a, b) in enumerate(pairs):
        fa, fb = a.frame, b.frame
        before += len(fa)
        deleted += int((~fa.index.isin(fb.index)).sum())
        fresh = ~fb.index.isin(fa.index)
        inserted += int(fresh.sum())
        if m >= len(pairs) - ARRIVAL_MONTHS:
            arrivals.append(fb.loc[fresh, columns])
        common = fa.index.intersection(fb.index)
        common_total += len(common)
        if not len(common):
            continue
        xa, xb = fa.loc[common], fb.loc[common]
        for attr in attrs:
            if attr == label:
                diff = _composite(xa, sens).to_numpy() != _composite(xb, sens).to_numpy()
            else:
                diff = xa[attr].astype(str).to_numpy() != xb[attr].astype(str).to_numpy()
            changed[attr] += int(diff.sum())
            if attr in updated and diff.any():
                updated[attr].append(xb[attr].to_numpy(dtype=object)[diff])
    pools = {attr: np.concatenate(chunks) for attr, chunks in updated.items() if chunks}
    pool = pd.concat(arrivals) if arrivals else None
    return Churn(deletion=deleted / before if before else 0.0, insertion=inserted / before if before else 0.0,
                 updates={a: (changed[a] / common_total if common_total else 0.0) for a in attrs},
                 months=len(pairs), sensitive=label, model=model if label else None,
                 arrivals=pool.reset_index(drop=True) if pool is not None and len(pool) else None, updated=pools)


# ---------------------------------------------------------------------- the gate's resume, in memory
class ForecastResume:
    """The ``resume`` of :func:`multirelease.pipeline.run_ledger_step` for a simulated future: the interface of
    :class:`~multirelease.ledger.gate.GateResume` (``metrics()``, ``state(name, attack)``, ``earlier()``,
    ``used``, ``keys``, ``kept_metrics``), started from what the real ledger kept (``kept``: state key ->
    ``(parts, summary)`` as stored; ``metrics``: the release metrics of its releases) and advanced in memory by
    :meth:`advance` with each simulated month's ``run.gate`` parts / summary and metrics."""

    def __init__(self, context: Mapping, kept: Mapping[str, tuple], metrics: Sequence[Mapping], real_earlier):
        self.context = dict(context)
        self._kept = {k: (list(parts), summary) for k, (parts, summary) in kept.items()}
        self._metrics = list(metrics)
        self._real_earlier = real_earlier  # () -> the ledger's releases as published, with their snapshots
        self._real: list | None = None
        self._simulated: list = []
        self.used: dict[str, bool] = {}
        self.keys: dict[str, str] = {}
        self.kept_metrics = True

    @property
    def n(self) -> int:
        """Releases so far (the ledger's and the simulated ones)."""
        return len(self._metrics)

    def metrics(self) -> list:
        return list(self._metrics)

    def earlier(self) -> list:
        if self._real is None:
            self._real = list(self._real_earlier())
        return self._real + self._simulated

    def state(self, name: str, attack: Any) -> Any:
        from .gate import state_key

        key = self.keys[name] = state_key(self.context, name, attack)
        self.used[name] = False
        kept = self._kept.get(key)
        if kept is None or len(kept[0]) != self.n:
            return None
        self.used[name] = True
        return attack.load_state(list(kept[0]), kept[1])

    def advance(self, run: Any) -> None:
        """The simulated month ``run`` (passed) becomes the last release: its attacks' parts and summaries, its
        metrics, the release and its snapshot (as :func:`multirelease.ledger.gate.record` keeps them)."""
        for name, kept in run.gate.items():
            key = self.keys.get(name)
            if key is None:
                continue
            if kept is None:
                self._kept.pop(key, None)
                continue
            parts, summary = kept
            old = self._kept.get(key) if self.used.get(name) and len(parts) == 1 else None
            self._kept[key] = ((old[0] if old is not None else []) + list(parts), summary)
        self._metrics = list(run.release_metrics)
        self._simulated.append((run.sequence.releases[-1], run.sequence.snapshots[-1]))


# ---------------------------------------------------------------------- one future
@dataclass
class _Context:
    """Everything a future needs (picklable: sent to the executor's workers)."""

    ledger_dir: str
    doc: dict
    spec_path: str
    schema: Any
    publisher: str
    publisher_seed: int
    state: dict | None
    last: pd.DataFrame
    churn: Churn
    kept: dict
    gate_context: dict
    metrics: list
    releases: int
    months: int
    seed: int
    prefix: str
    attributes: tuple


@dataclass
class _FutureOutcome:
    future: int
    headroom: int
    failing: list
    witness: dict | None
    seconds: float


def _real_earlier(ledger_dir: str, schema: Any, releases: int):
    def read() -> list:
        from .store import Ledger

        with Ledger(ledger_dir, write=False) as led:
            led.con.execute("PRAGMA query_only = ON")
            return [led.release(n, schema) for n in range(1, releases + 1)]
    return read


def _future(task: tuple) -> _FutureOutcome:
    """One simulated future (module docstring, 2); module-level so that an executor's worker can run it."""
    from solver.executor import InlineExecutor, use_executor
    from multirelease import pipeline
    from .operations import _state_copy

    ctx, f = task
    t0 = time.perf_counter()
    rng = np.random.default_rng([ctx.seed, f])
    resume = ForecastResume(ctx.gate_context, ctx.kept, ctx.metrics, _real_earlier(ctx.ledger_dir, ctx.schema,
                                                                                   ctx.releases))
    state, frame = ctx.state, ctx.last
    path = Path(ctx.spec_path)
    with use_executor(InlineExecutor()):  # the futures are the parallel work: no pool inside a worker
        for k in range(1, ctx.months + 1):
            frame = ctx.churn.step(frame, rng, f"{ctx.prefix}{f + 1}-{k}-")
            table = Table(ctx.schema, frame)
            try:
                sc = pipeline.ledger_plan(ctx.doc, path=path, base=path.parent, earlier=[(None, None)] * resume.n,
                                          snapshot=table, seed=ctx.publisher_seed)
                run = pipeline.run_ledger_step(sc, resume, None, states=_state_copy(ctx.publisher, state))
            except InputError as exc:  # the publisher (or an attack) refuses the month: the sequence stops here
                line = f"refused: {exc.one_line()}"
                return _FutureOutcome(f, k - 1, [line], {"future": f + 1, "month_ahead": k,
                                                         "release": ctx.releases + k, "requirement": line},
                                      time.perf_counter() - t0)
            if run.verdict != "pass":
                bad = [j for j in run.judged if j.kind == "requirement" and j.holds is not True]
                return _FutureOutcome(f, k - 1, [j.expectation.text for j in bad] or [f"verdict {run.verdict}"],
                                      _witness(run, bad[0], f, k, ctx) if bad else None, time.perf_counter() - t0)
            resume.advance(run)
            state = run.states[-1]
    return _FutureOutcome(f, ctx.months, [], None, time.perf_counter() - t0)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _witness(run: Any, j: Any, f: int, k: int, ctx: _Context) -> dict:
    """The failing line of a simulated month reduced to figures (module docstring, 4): its value, the month's
    figures a release metric is made of, or the attack witness's numbers; the person it names only as real or
    simulated."""
    e = j.expectation
    out: dict = {"future": f + 1, "month_ahead": k, "release": ctx.releases + k, "requirement": e.text,
                 "value": j.value, "lower": j.lower, "upper": j.upper}
    if e.subject == "release":
        m = run.release_metrics[e.release_index(len(run.release_metrics)) - 1]
        out["figures"] = {x: m[x] for x in ("records", "counterfeits", "counterfeit_share", "withheld_share", "LM",
                                            "classes") if x in m}
        return out
    res = run.results.get(e.subject)
    w = res.witness(e.metric) if res is not None else None
    if isinstance(w, Mapping):
        out["figures"] = {str(key): v for key, v in w.items() if _number(v) and key not in ctx.attributes}
        who = next((w[key] for key in _WHO if isinstance(w.get(key), (str, int))), None)
        if who is not None:
            out["person"] = "a simulated arrival" if str(who).startswith(ctx.prefix) else \
                "a real person of the ledger (not named)"
    return out


# ---------------------------------------------------------------------- the forecast
@dataclass(frozen=True)
class Headroom:
    """The forecast (module docstring, 4).  ``passing[k - 1]``: the share of futures whose gate passes every
    month up to ``k`` ahead; ``headroom``: each future's months before its first failing month (``months``
    when none failed within the horizon: "``months`` or more"); ``low`` / ``median`` / ``high``: its 10%,
    50% and 90% quantiles (``inverted_cdf``: months some future had); ``first_failing``: ``(line, futures)``
    - how many futures' first failing month failed each line, most first; ``witness``: an example of the
    line that fails first most often, from a simulated month, in figures only; ``churn``: the assumptions."""

    ledger: str
    releases: int
    months: int
    futures: int
    seed: int
    churn: dict
    churn_words: str
    passing: tuple
    headroom: tuple
    low: int
    median: int
    high: int
    first_failing: tuple
    witness: dict | None
    seconds: float = 0.0

    @property
    def censored(self) -> int:
        """Futures that passed every month of the horizon."""
        return sum(1 for h in self.headroom if h >= self.months)

    def months_words(self, h: int) -> str:
        return f"{h} or more" if h >= self.months else str(h)

    def _release_words(self, n: int) -> str:
        """Release ``n`` as the first to fail; beyond the horizon, "after release LAST"."""
        last = self.releases + self.months
        return f"release {n}" if n <= last else f"none up to release {last}"

    def band_words(self) -> str:
        return (f"median {self.months_words(self.median)} month{'s' if self.median != 1 else ''} of headroom "
                f"(10-90%: {self.months_words(self.low)} to {self.months_words(self.high)})")

    def to_json(self) -> dict:
        """The forecast as the ``headroom`` key of ``ledger DIR --headroom --json`` (aggregate only)."""
        return {"ledger": self.ledger, "releases": self.releases, "months": self.months, "futures": self.futures,
                "seed": self.seed, "churn": self.churn,
                "passing": [{"month_ahead": k, "release": self.releases + k, "share": s}
                            for k, s in enumerate(self.passing, 1)],
                "headroom": {"median": self.median, "low": self.low, "high": self.high, "quantiles": [0.1, 0.5, 0.9],
                             "censored": self.censored, "per_future": list(self.headroom),
                             "first_failing_release": {"median": self.releases + self.median + 1,
                                                       "low": self.releases + self.low + 1,
                                                       "high": self.releases + self.high + 1}},
                "first_failing": [{"requirement": r, "futures": c} for r, c in self.first_failing],
                "witness": self.witness, "seconds": round(self.seconds, 3)}

    def lines(self) -> list[str]:
        """What ``ledger DIR --headroom`` prints: the assumptions, one line per month ahead, the band, the line
        that fails first most often with its example."""
        out = [f"headroom: {self.futures} futures x {self.months} months from the ledger's {self.releases} "
               f"releases, seed {self.seed}; {self.churn_words} (computed now, nothing stored in the ledger)"]
        for k, s in enumerate(self.passing, 1):
            out.append(f"headroom: month +{k} (release {self.releases + k}): the gate passes in {s:.0%} of "
                       "futures")
        first = self.releases + 1
        out.append(f"headroom: {self.band_words()}; the first release to fail: "
                   f"{self._release_words(first + self.median)}"
                   f" (10-90%: {self._release_words(first + self.low)} to {self._release_words(first + self.high)})")
        if self.first_failing:
            line, count = self.first_failing[0]
            w = self.witness or {}
            figures = ", ".join(f"{k} {_shown(v)}" for k, v in (w.get("figures") or {}).items())
            example = (f"; e.g. future {w.get('future')}, month +{w.get('month_ahead')} (release {w.get('release')})"
                       + (f": value {_shown(w['value'])}" if w.get("value") is not None else "")
                       + (f" ({figures})" if figures else "") + (f", names {w['person']}" if w.get("person") else ""))
            out.append(f"headroom: fails first most often: {line} ({count} of {self.futures} futures){example}")
        else:
            out.append(f"headroom: no future failed within {self.months} months")
        return out


def _shown(v: Any) -> str:
    if isinstance(v, float) and not float(v).is_integer():
        return f"{v:.4g}"
    return f"{int(v):,}" if _number(v) else str(v)


def _arrival_prefix(ids: Sequence[str]) -> str:
    """A prefix no identifier of the ledger starts with: simulated arrivals cannot be taken for real persons."""
    prefix = "sim~"
    while any(str(i).startswith(prefix) for i in ids):
        prefix = "~" + prefix
    return prefix


def _scrub(text: str, ids: set, prefix: str) -> str:
    """``text`` with every word that is an identifier of the ledger, or a simulated one, replaced."""
    def word(m: "re.Match") -> str:
        w = m.group(0)
        return "<a real person>" if w in ids else "<a simulated arrival>" if w.startswith(prefix) else w
    return re.sub(r"[^\s,;:()\[\]{}'\"=<>]+", word, text)


def check_request(months: int, futures: int, seed: int) -> None:
    """Bad input of a forecast: one line naming the flag."""
    for flag, v, low, high in (("--months", months, 1, MAX_MONTHS), ("--futures", futures, 1, MAX_FUTURES),
                               ("--seed", seed, 0, 2**63 - 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not low <= v <= high:
            raise InputError(f"must be a whole number from {low:,} to {high:,}; got {v!r}", key=flag)


def forecast(ledger_dir: str | Path, *, months: int = DEFAULT_MONTHS, futures: int = DEFAULT_FUTURES,
             seed: int = DEFAULT_SEED, executor: Any = None) -> Headroom:
    """The headroom of the ledger's sequence (module docstring).  ``executor`` (:mod:`solver.executor`) runs
    the futures (default: local processes); the answer is the same whichever runs them."""
    from multirelease import pipeline
    from multirelease.model.schema import Schema
    from multirelease.model.transitions import load_transitions
    from solver.executor import LocalExecutor
    from .gate import GateResume
    from .operations import _seed, _state_from_store
    from .store import Ledger, table_from_bytes

    check_request(months, futures, seed)
    t0 = time.perf_counter()
    with Ledger(ledger_dir, write=False) as led:
        led.con.execute("PRAGMA query_only = ON")  # a reader: nothing of the ledger changes
        history = led.history()
        if not history:
            raise InputError("the ledger holds no release: nothing to forecast from", file=str(ledger_dir),
                             key="--headroom")
        if len(history) < 2:
            raise InputError("the ledger holds one release: the churn is fitted on at least two months",
                             file=str(ledger_dir), key="--headroom")
        last = history[-1]
        doc = json.loads(last.spec)
        spec_path = Path(last.spec_path)
        name = doc["publisher"]["publisher"]
        if name == "bpg":
            raise InputError("bpg continues its state in its own database: its headroom is not forecast yet",
                             file=str(ledger_dir), key="--headroom")
        schema = Schema.from_mapping(doc["schema"], base=spec_path.parent, source=str(spec_path))
        snapshots = [table_from_bytes(schema, led.blob(r.n, "snapshot")) for r in history]
        model = load_transitions(doc.get("transitions"), schema, source=str(spec_path))
        churn = fit_churn(snapshots[-(WINDOW + 1):], model)
        ids = set().union(*(set(s.frame.index.astype(str)) for s in snapshots))
        state = _state_from_store(name, led.state(last.n), snapshots[-1]) if last.publisher == name else None
        publisher_seed = _seed(bytes.fromhex(led.meta()["secret"]))
        resume = GateResume(led, history, schema, doc)
        metrics = resume.metrics()
        sc = pipeline.ledger_plan(doc, path=spec_path, base=spec_path.parent, earlier=[(None, None)] * len(history),
                                  snapshot=snapshots[-1], seed=publisher_seed)
        kept = {}
        for attack_name, attack in sc.attacks:
            attack = pipeline.reads(sc, attack_name, attack)
            if getattr(attack, "extend", None) is None:
                continue
            key = resume.key(attack_name, attack)
            found = resume.kept(key)
            if found is not None:
                kept[key] = found
        gate_context = dict(resume.context)
    prefix = _arrival_prefix(ids)
    ctx = _Context(str(ledger_dir), doc, str(spec_path), schema, name, publisher_seed, state, snapshots[-1].frame,
                   churn, kept, gate_context, metrics, len(history), months, seed, prefix,
                   tuple(schema.attributes))
    ex = executor if executor is not None else LocalExecutor()
    outcomes = ex.map(_future, [(ctx, f) for f in range(futures)])
    return _summarize(ledger_dir, history, churn, months, futures, seed, outcomes, ids, prefix,
                      time.perf_counter() - t0)


def _summarize(ledger_dir, history, churn: Churn, months: int, futures: int, seed: int,
               outcomes: Sequence[_FutureOutcome], ids: set, prefix: str, seconds: float) -> Headroom:
    heads = np.asarray([o.headroom for o in outcomes], dtype=np.int64)
    passing = tuple(float((heads >= k).mean()) for k in range(1, months + 1))
    low, median, high = (int(np.quantile(heads, q, method="inverted_cdf")) for q in (0.1, 0.5, 0.9))
    counts: dict[str, int] = {}
    for o in outcomes:
        for line in dict.fromkeys(_scrub(x, ids, prefix) for x in o.failing):
            counts[line] = counts.get(line, 0) + 1
    first = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    witness = None
    if first:
        top = first[0][0]
        o = next(o for o in outcomes if top in (_scrub(x, ids, prefix) for x in o.failing))
        witness = dict(o.witness or {})
        if witness.get("requirement"):
            witness["requirement"] = _scrub(str(witness["requirement"]), ids, prefix)
    name = str(json.loads(history[-1].spec).get("name") or Path(history[-1].spec_path).stem)
    return Headroom(ledger=name, releases=len(history), months=months, futures=futures, seed=seed,
                    churn=churn.to_json(), churn_words=churn.words(), passing=passing,
                    headroom=tuple(int(h) for h in heads), low=low, median=median, high=high, first_failing=first,
                    witness=witness, seconds=seconds)
