"""The one signature every publisher shares, and its result type.

A publisher is built from its validated parameters (the papers' letters: ``k``, ``l``, ``m``, ``p``, ``d``)
and turns the current raw snapshot, plus the state it returned last time, into the next release::

    publisher = PUBLISHERS["mondrian"](k=10, l=5)
    result = publisher.publish(snapshot, attributes=None, state=None, rng=np.random.default_rng(0))
    result.release, result.truth, result.state   # what is published, who is behind it, what to keep

The state is plain JSON-serializable data, so release ``i+1`` can be made by another process later
(DESIGN.md, "Publisher state is data").
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from multirelease.errors import InputError
from multirelease.model.linking import LINKING_ROLES
from multirelease.params import Options, validate_params
from multirelease.model.release import Release, ReleaseTruth
from multirelease.model.table import Table

__all__ = ["Publisher", "PublishResult", "PublisherBase", "LINKING_CHOICES"]

#: what a publisher does with the linking columns (published columns that are neither quasi-identifier nor
#: sensitive, :mod:`multirelease.model.linking`): ``omit`` leaves them out of the release, ``keep`` publishes them
#: as they are (the publisher's own check and the certifying attacks then read them)
LINKING_CHOICES = ("omit", "keep")

_FRACTION = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+\.\d+)")


def _number_text(value: Any) -> Any:
    """An integral float as an integer (``5.0`` -> ``5``): requirement lines read as the papers write them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _fraction_text(match: "re.Match") -> str:
    """``a/b`` with a non-integral ``b`` (which :mod:`multirelease.expect` does not read) as a decimal."""
    return repr(float(match.group(1)) / float(match.group(2)))


def _holds(condition: str, config: Mapping) -> bool:
    """``"name"``: the parameter is true; ``"name > x"``: it exceeds ``x``."""
    name, _, bound = condition.partition(">")
    value = config.get(name.strip())
    if not bound:
        return bool(value)
    return value is not None and float(value) > float(bound)


@dataclass(frozen=True, eq=False)
class PublishResult:
    """One publication: the release (what recipients see), its truth (kept apart) and the next state.
    ``stats`` holds the publisher's own figures (seconds per phase...) for benchmarks: publishers keep no
    state of their own."""

    release: Release
    truth: ReleaseTruth
    state: dict = field(default_factory=dict)
    counterfeit_rows: int = 0
    stats: dict = field(default_factory=dict)

    def state_json(self) -> str:
        return json.dumps(self.state, sort_keys=True)


def _choosing_linking(publish):
    """Wrap a publisher's ``publish`` so that its ``attributes`` are those of the ``linking`` choice."""

    @functools.wraps(publish)
    def wrapper(self, snapshot, *args, attributes=None, **kwargs):
        return publish(self, snapshot, *args, attributes=self.linking_attributes(snapshot.schema, attributes),
                       **kwargs)

    return wrapper


@runtime_checkable
class Publisher(Protocol):
    name: ClassVar[str]

    def publish(self, snapshot: Table, *, attributes: Sequence[str] | None = None, state: Mapping | None = None,
                rng: np.random.Generator) -> PublishResult: ...


class PublisherBase:
    """Stores validated parameters; subclasses declare ``name``, ``params`` (name -> constraint),
    ``required`` and ``defaults``, and implement :meth:`publish`."""

    name: ClassVar[str] = ""
    params: ClassVar[dict] = {}
    required: ClassVar[tuple] = ()
    defaults: ClassVar[dict] = {}
    #: what every release is claimed to satisfy, as certification requirements (``<attack>.<metric> <op>
    #: <number>``, :mod:`multirelease.expect`) with the config's letters in braces (``"linking.k >= {k}"``);
    #: an entry ``(line, condition)`` applies only when ``condition`` holds on the config (``"uid"``: the
    #: parameter is true; ``"l > 1"``: it exceeds the number).  Read it through :meth:`guarantee_requirements`.
    guarantee: ClassVar[tuple] = ()
    #: the parameters ``release --repair`` may make stricter (issue 29, :mod:`multirelease.ledger.repair`):
    #: name -> ``"times"`` (multiplied by 1.5, 2, 3, 5) or ``"plus"`` (plus 1, 2).  Declared only by a publisher
    #: whose release depends on no state carried from release to release, so that a changed release of one month
    #: leaves the next month's as it would have been; empty: no repair.
    repair: ClassVar[dict] = {}
    #: ``release --repair`` may merge classes of this publisher's release after it made them (a coarser
    #: generalization of the classes the witnesses name, :mod:`multirelease.ledger.coarsen`): true only where the
    #: state it carries does not depend on its classes and a union of its classes keeps its principle
    merges_classes: ClassVar[bool] = False
    #: what the releases claim beyond :attr:`guarantee`, in the same form: figures a reader takes the
    #: parameters to promise against another paper's adversary, which the publisher does not prove (Mondrian's
    #: k read as Fung et al.'s crack sizes).  The attacks' baselines are raised to them (issue 30,
    #: :func:`multirelease.pipeline.release_claims`); the ledger's gate judges :attr:`guarantee` only.
    claims: ClassVar[tuple] = ()
    #: the default of the ``linking`` parameter every publisher takes (:data:`LINKING_CHOICES`): ``omit`` for a
    #: multi-release principle (Shmueli & Tassa, section 5.2: a persistent non-identifier links a person's rows
    #: across releases, which no principle's guarantee accounts for), ``keep`` for a single-release one
    linking_default: ClassVar[str] = "omit"
    #: the guarantee holds with the linking columns kept - a single-release guarantee (no class of one release
    #: changes with a column the adversary does not know), or a construction that covers them (Shmueli &
    #: Tassa's fake worlds): :meth:`check_kept_linking` has nothing to add
    linking_covered: ClassVar[bool] = False
    #: the words of the parameters every publisher takes (the reference reads them)
    shared_param_docs: ClassVar[dict] = {
        "linking": "what to do with the linking columns (roles non-identifier and insensitive: published as "
                   "they are, they link a person's rows across releases, Shmueli & Tassa section 5.2): `omit` "
                   "leaves them out of the release, `keep` publishes them and the publisher's own check and the "
                   "certifying attacks read them (a release that breaks the guarantee with them, or in which "
                   "Example 5.1's attacker pins someone through the persistent tuple, is refused). "
                   "Default `omit` for multi-release principles, `keep` for single-release ones (mondrian, "
                   "naive, tds), whose guarantee one unknown column cannot change, and for Shmueli & Tassa's "
                   "sequential principles, whose fake worlds carry them with the sensitive value (004 eq. 5)",
    }

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "linking" not in cls.params:
            cls.params = {**cls.params, "linking": Options(LINKING_CHOICES)}
        if cls.defaults.get("linking") != cls.linking_default:
            cls.defaults = {**cls.defaults, "linking": cls.linking_default}
        if "publish" in cls.__dict__:
            cls.publish = _choosing_linking(cls.__dict__["publish"])

    def linking_attributes(self, schema, attributes: Sequence[str] | None) -> Sequence[str] | None:
        """The attributes to publish once the ``linking`` choice is applied: with ``omit`` the linking columns
        (roles ``non-identifier`` and ``insensitive``) are left out; naming one in ``attributes`` is then an
        error that says how to publish it.  Unchanged when the schema has no linking column or with ``keep``."""
        linking = [a.name for a in schema.attributes if a.role in LINKING_ROLES]
        if not linking or self.config.get("linking", self.linking_default) == "keep":
            return attributes
        if attributes is not None:
            named = [n for n in attributes if n in linking]
            if named:
                raise InputError(f"{self.name} leaves linking column '{named[0]}' out of its releases (linking: "
                                 f"omit, its default: a persistent column links a person's rows across releases,"
                                 f" Shmueli & Tassa section 5.2); give linking: keep to publish it")
            return attributes
        return tuple(n for n in schema.published if n not in linking)

    def check_kept_linking(self, sequence, adversary=None, transitions=None) -> None:
        """With ``linking: keep``: the publisher's declared guarantee (:meth:`guarantee_requirements`) over the
        whole ``sequence`` so far (a :class:`multirelease.model.sequence.ReleaseSequence` whose last release is this
        publisher's), judged by the registry's attacks, which read the linking columns; raise a one-line
        :class:`InputError` (the publisher refuses its release) unless every requirement holds over its whole
        proven interval.  Nothing to check with ``omit``, or when no persistent linking column is published.

        The principles' own checks are written for quasi-identifiers and sensitive values (their papers know no
        other column, Shmueli & Tassa section 5.2): this is what makes a kept column safe to publish.  First,
        whatever the principle, Example 5.1's attacker (:func:`multirelease.model.linking.tuple_pins`): a
        persistent tuple also links rows across uids and classes, and an individual it pins to one sensitive value
        in any release refuses the release (a BPG release whose uids were all new, its kept ``lab`` column pinning
        two people through release 1, passed the intersection attack: the thorough property found it)."""
        from multirelease.expect import parse_expectation
        from multirelease.model.linking import tuple_pins
        from multirelease.model.sequence import Adversary

        if self.config.get("linking", self.linking_default) != "keep" or len(sequence) < 2 \
                or self.linking_covered:
            return
        view = sequence.view(adversary or Adversary(), transitions)
        if not view.linking:
            return
        k = len(sequence)
        # the principles' own attacks follow uids or classes; a persistent tuple also links rows across uids
        # (Example 5.1): a release the tuples alone disclose someone in is refused whatever those attacks say
        pins = tuple_pins(view.population, view.releases, view.linking)
        if pins:
            who, r, _ = pins[0]
            raise InputError(f"{self.name} refuses release {k} with linking: keep: the linking columns "
                             f"{', '.join(view.linking.columns)} pin individual '{who}' to one sensitive value in "
                             f"release {r + 1} ({len(pins)} such (individual, release) pairs; Shmueli & Tassa "
                             f"section 5.2, Example 5.1: a persistent tuple found in every class of an individual); "
                             f"give linking: omit")
        from attacks import ATTACKS

        results = {}
        for line in self.guarantee_requirements():
            e = parse_expectation(line)
            if e.subject not in results:
                # the attack judges the publisher's own principle: its letters (k, l, l_kind, values...)
                cls = ATTACKS[e.subject]
                attack = cls(**{name: value for name, value in self.config.items()
                                if name in cls.params and name != "linking"})
                if not attack.applies(view):
                    raise InputError(f"{self.name} refuses release {k} with linking: keep: {e.subject} does not "
                                     f"apply to this sequence, so '{line}' cannot be proven with the linking "
                                     f"columns {', '.join(view.linking.columns)}; give linking: omit")
                results[e.subject] = attack.run(view)
            res = results[e.subject]
            low, high = res.interval(e.metric)
            held = e.judge(low, high)
            if held:
                continue
            witness = res.witness(e.metric)
            who = witness.get("individual") or witness.get("target") or witness.get("record") \
                if isinstance(witness, dict) else None
            what = "fails" if held is False else f"is not proven ([{low:g}, {high:g}])"
            raise InputError(f"{self.name} refuses release {k} with linking: keep: '{line}' {what} over the "
                             f"{k} releases" + (f" (witness {who})" if who else "") + " once the linking columns "
                             f"{', '.join(view.linking.columns)} link rows across releases (Shmueli & Tassa "
                             f"section 5.2); give linking: omit")

    def __init__(self, *, _file: str | None = None, _key: str | None = None, **params: Any):
        self.config = validate_params(self.name, self.params, params, required=self.required,
                                      defaults=self.defaults, file=_file, key=_key)
        self.check_config(_file, _key)

    def published_attributes(self, snapshot: Table, attributes: Sequence[str] | None, *,
                             need_sensitive: bool = False, reason: str = "") -> tuple[str, ...]:
        """The attributes this release publishes (default: all but the identifier), in schema order,
        validated; with ``need_sensitive`` a sensitive attribute must be among them (``reason`` says why, in
        the error message: ``" with l = 5"``)."""
        schema = snapshot.schema
        chosen = schema.restrict(attributes if attributes is not None else schema.published)
        if need_sensitive and not any(schema[n].is_sensitive for n in chosen):
            raise InputError(f"{self.name}{reason} needs a published sensitive attribute")
        return chosen

    def guarantee_requirements(self, declared: tuple | None = None) -> tuple[str, ...]:
        """The requirement lines of :attr:`guarantee` (or of ``declared``) for this config: conditions applied,
        letters formatted (an integral number as an integer, ``1/{l}`` with a non-integral ``l`` as a
        decimal), each line parseable by :func:`multirelease.expect.parse_expectation`."""
        declared = self.guarantee if declared is None else declared
        values = {k: _number_text(v) for k, v in self.config.items()}
        lines = []
        for entry in declared:
            line, condition = (entry, None) if isinstance(entry, str) else entry
            if condition is not None and not _holds(condition, self.config):
                continue
            lines.append(_FRACTION.sub(_fraction_text, line.format(**values)))
        return tuple(lines)

    def claim_requirements(self) -> tuple[str, ...]:
        """What a release of this config claims: its guarantee and its :attr:`claims`, as requirement lines."""
        return self.guarantee_requirements() + self.guarantee_requirements(self.claims)

    def check_config(self, file: str | None, key: str | None) -> None:
        """Cross-parameter checks (one-line :class:`InputError`)."""

    def __getattr__(self, item: str) -> Any:
        config = self.__dict__.get("config", {})
        if item in config:
            return config[item]
        raise AttributeError(item)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.config.items()))
        return f"{type(self).__name__}({args})"
