"""The reference of multirelease, generated from the code: every entry, :func:`describe` and what is missing.

Every entry of ``docs/reference/`` is written from what the program itself reads, so it cannot say something
the code does not do:

* publishers and attacks from the registries (``publishers.PUBLISHERS``, ``attacks.ATTACKS``): each class's
  ``paper``, its docstring (summary, numpydoc ``Parameters`` and ``Notes``), the first paragraph of its
  module's docstring after the title (the definition), its parameter constraints (``params``: the type and
  range :mod:`multirelease.params` checks), ``required`` and ``defaults``, a publisher's declared
  ``guarantee`` and an attack's ``metrics`` with ``metric_descriptions``;
* the release metrics, the exit codes and the scenario / ledger-spec keys from the names the parsers accept
  (``scenario.TOP_KEYS``, ``sequence.ADVERSARY_KEYS``, ``ledger_release.SPEC_KEYS``...) with the words of
  :mod:`multirelease.reports.reference_keys`.

``multirelease describe NAME`` prints one entry (:func:`describe`); :func:`missing_entries` lists what the
reference cannot say (tests/reports/test_reference.py asserts there is nothing).  The pages themselves, with the
commands read from the CLI's click tree and the Python API, are written by :mod:`multirelease.reports.reference_pages`
(``python -m multirelease.reports.reference_pages docs/``), which imports this module and the CLI: the CLI's
``describe`` imports this one, so neither imports the other back.  Like the CLI, this module reads the
registries (imports inside functions).
"""
from __future__ import annotations

import inspect
import re
import sys
from typing import Any, Iterable

__all__ = ["missing_entries", "describe", "names", "publisher_entry", "attack_entry", "metric_pattern"]

_SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}$", re.M)


# ---------------------------------------------------------------------- docstrings to Markdown
def _md(text: str) -> str:
    """reStructuredText roles and literals as Markdown (``x`` -> `x`, :class:`~a.B` -> `B`)."""
    text = re.sub(r":\w+:`~?([^`]+)`", lambda m: "`" + (m.group(1).rsplit(".", 1)[-1] if m.group(0).find("~") > 0
                                                         else m.group(1)) + "`", text)
    return text.replace("``", "`")


def _paragraphs(text: str) -> list[str]:
    return [" ".join(line.strip() for line in p.splitlines()) for p in re.split(r"\n\s*\n", text.strip()) if
            p.strip()]


def _sections(doc: str | None) -> dict[str, str]:
    """A numpydoc docstring cut into ``{"": intro, "Parameters": ..., "Notes": ...}``."""
    doc = inspect.cleandoc(doc or "")
    out: dict[str, str] = {}
    parts = _SECTION.split(doc)
    out[""] = parts[0].strip()
    for title, body in zip(parts[1::2], parts[2::2]):
        out[title.strip()] = body.strip("\n")
    return out


def _param_docs(text: str) -> dict[str, str]:
    """``name : type, default\n    description`` entries of a Parameters section: name -> its description,
    else the remark in parentheses on its type line (the type and range shown come from the code)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"^(\w+)\s*:(.*)\n?((?:[ \t]+.*\n?|\n)*)", text, re.M):
        remark = re.search(r"\((.*)\)\s*$", m.group(2))
        out[m.group(1)] = " ".join(m.group(3).split()) or (remark.group(1) if remark else "")
    return out


def _notes(cls: type) -> str:
    """What a docstring says beside its parameter list: the paragraphs after the list inside its Parameters
    section (at the margin, not ``name : type``) and its Notes section, as one Markdown paragraph."""
    sec = _sections(cls.__doc__)
    tail = [p for p in re.split(r"\n\s*\n", sec.get("Parameters", "")) if p.strip()
            and not re.match(r"^(\w+\s*:|\s)", p)]
    text = " ".join(_paragraphs("\n\n".join(tail + [sec.get("Notes", "")])))
    return f"**Notes.** {_md(text)}\n" if text else ""


def _docstring_params(cls: type, family: Iterable[type]) -> dict[str, str]:
    """Parameter descriptions of ``cls``: its own Parameters section, else its bases', else that of another
    class of the registry declaring the same ``params`` (``non_sequential_diversity``)."""
    shared = dict(getattr(cls, "shared_param_docs", {}) or {})  # parameters every class of a family takes
    for klass in list(cls.__mro__) + [c for c in family if c.params is cls.params]:
        text = _sections(klass.__dict__.get("__doc__")).get("Parameters")
        if text:
            return {**shared, **_param_docs(text)}
    return shared


def _paper(cls: type) -> str:
    return str(getattr(cls, "paper", "") or "")


def _cell(text: Any) -> str:
    return _md(" ".join(str(text).split())).replace("|", "\\|")


def _table(head: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = list(head)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _definition(cls: type) -> str:
    """The first paragraph of the class's module docstring after its title paragraph."""
    paras = _paragraphs(sys.modules[cls.__module__].__doc__ or "")
    body = [p for p in paras[1:] if not p.startswith(("Paper:", "Over 500 lines"))]
    text = body[0] if body else ""
    if text.endswith(":") and ". " in text:  # "... Splits:" introduces a list the reference does not show
        text = text[:text.rindex(". ") + 1]
    return _md(text)


def _title(cls: type) -> str:
    paras = _paragraphs(sys.modules[cls.__module__].__doc__ or "")
    return _md(paras[0]) if paras else ""


def _default_text(cls: type, name: str) -> str:
    if name in cls.required:
        return "required"
    if name in cls.defaults:
        v = cls.defaults[name]
        return "`" + (str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, str) else str(v)) + "`"
    return "optional"


def _params_table(cls: type, family: Iterable[type]) -> str:
    docs = _docstring_params(cls, family)
    rows = [(f"`{n}`", c.describe(), _default_text(cls, n), docs.get(n, "")) for n, c in cls.params.items()]
    if not rows:
        return "No parameters.\n"
    return _table(("parameter", "type and range", "default", "meaning"), rows)


# ---------------------------------------------------------------------- entries
def _registries():
    from attacks import ATTACKS
    from publishers import PUBLISHERS

    return PUBLISHERS, ATTACKS


def _guarantee_lines(cls: type) -> list[str]:
    declared = cls.guarantee if isinstance(cls.guarantee, tuple) else ()
    out = []
    for entry in declared:
        line, cond = (entry, None) if isinstance(entry, str) else entry
        out.append(f"`{line}`" + (f" (when `{cond}`)" if cond else ""))
    if getattr(cls, "guarantee_first", None):
        out.append("first release of a chain: " + ", ".join(f"`{g}`" for g in cls.guarantee_first))
    return out


def _head(cls: type, name: str, registry) -> list[str]:
    """Name, paper, class summary, definition and parameters: what publishers and attacks share."""
    summary = _md(" ".join(_paragraphs(_sections(cls.__doc__)[""])))
    return [f"## `{name}`\n", f"**Paper.** {_paper(cls)}\n",
            f"**Class** `{cls.__module__}.{cls.__name__}`: {summary}\n",
            f"**Definition.** {_title(cls)} {_definition(cls)}\n",
            "**Parameters** (checked when a scenario is loaded; a bad value exits 2):\n",
            _params_table(cls, (registry[n] for n in registry))]


def publisher_entry(name: str) -> str:
    """The reference entry of one registered publisher (Markdown)."""
    pubs, _ = _registries()
    cls = pubs[name]
    out = _head(cls, name, pubs)
    lines = _guarantee_lines(cls)
    if lines:
        out.append("**Guarantee** (what every release is claimed to satisfy; the ledger's gate and "
                   "`certify` judge it with the attacks, letters in braces are the parameters):\n")
        out.append("".join(f"- {line}\n" for line in lines))
    checks = getattr(cls, "guarantee_checks", ())
    if checks:
        out.append("**Checks** each release passes before it is returned (else it is refused, exit 2):\n")
        out.append(_table(("check", "how", "what"), ((f"`{c}`", how, what) for c, how, what in checks)))
    out += [n for n in (_notes(cls),) if n]
    return "\n".join(out + [f"Scenario: `releases: [{{publisher: {name}, ...}}]`.\n"])


def metric_pattern(name: str) -> "re.Pattern":
    """A described metric name as a pattern of reported names: ``{F,C,B}_<n>`` matches ``C_1``."""
    rx = re.sub(r"\\{([^}]*)\\}", lambda m: "(?:" + "|".join(m.group(1).split(",")) + ")", re.escape(name))
    return re.compile("^" + rx.replace("<n>", r"\d+").replace("<i>", r"\d+").replace("<value>", r"\w+") + "$")


def _metric_rows(cls: type) -> list[tuple[str, str]]:
    desc = getattr(cls, "metric_descriptions", {})
    return [(m, desc.get(m, "")) for m in list(cls.metrics) + [m for m in desc if m not in tuple(cls.metrics)]]


def attack_entry(name: str) -> str:
    """The reference entry of one registered attack (Markdown)."""
    _, attacks = _registries()
    cls = attacks[name]
    out = _head(cls, name, attacks) + [
        f"**Metrics** (requirement lines name them as `{name}.<metric>`):\n",
        _table(("metric", "meaning"), ((f"`{m}`", d) for m, d in _metric_rows(cls)))]
    out += [n for n in (_notes(cls),) if n]
    return "\n".join(out + [f"Scenario: `attacks: [{{{name}: {{...}}}}]`.\n"])


def _exit_table() -> str:
    from .reference_keys import EXIT_TEXT

    return _table(("code", "meaning"), ((f"`{c}`", t) for c, t in sorted(EXIT_TEXT.items())))


def _adversary_rows():
    from dataclasses import fields

    from .reference_keys import ADVERSARY_TEXT
    from multirelease.model.sequence import ADVERSARY_KEYS, Adversary

    defaults = {f.name: f.default for f in fields(Adversary)}
    for key, rule in ADVERSARY_KEYS.items():
        values = ("true or false" if rule is bool else "a list of attribute names" if rule is list
                  else " | ".join(f"`{v}`" for v in rule))
        d = defaults.get(key)
        yield f"`{key}`", values, f"`{str(d).lower() if isinstance(d, bool) else d}`", ADVERSARY_TEXT.get(key, "")


def _scenario_sections() -> list[tuple[str, str, str]]:
    """``(anchor, title, markdown)`` of every group of keys, for the page and for :func:`describe`."""
    from . import reference_keys as K
    from multirelease.model.dynamics import STREAM_KEYS
    from multirelease.ledger.operations import SPEC_KEYS
    from multirelease.model.schema import _ATTRIBUTE_KEYS, GENERALIZATIONS, ROLES
    from multirelease.formats.scenario import TARGETS, TOP_KEYS
    from multirelease.model.transitions import _KEYS as TRANSITION_KEYS

    def keyed(keys, text):
        return _table(("key", "meaning"), ((f"`{k}`", text.get(k, "")) for k in keys))

    def ordered(keys, text):  # a set of the code, in the order of the text (keys without text last)
        known = list(text)
        return sorted(keys, key=lambda k: (known.index(k) if k in known else len(known), k))

    attr = (keyed(ordered(_ATTRIBUTE_KEYS, K.ATTRIBUTE_KEY_TEXT), K.ATTRIBUTE_KEY_TEXT)
            + "\nRoles:\n\n" + keyed(ROLES, K.ROLE_TEXT) + "\nGeneralizations:\n\n"
            + keyed(GENERALIZATIONS, K.GENERALIZATION_TEXT))
    return [
        ("scenario", "Scenario files: top-level keys", keyed(TOP_KEYS, K.TOP_KEY_TEXT)
         + "\nPaths are relative to the scenario file.\n"),
        ("releases", "`releases`: one item", keyed(K.RELEASE_ITEM_KEYS, K.RELEASE_ITEM_TEXT)),
        ("schema", "`schema.attributes.<name>`", attr),
        ("adversary", "`adversary`", _table(("key", "values", "default", "meaning"), _adversary_rows())),
        ("dynamics", "`dynamics.<release index>`", keyed(K.DYNAMICS_KEYS, K.DYNAMICS_TEXT)),
        ("stream", "`dynamics.stream`", keyed(STREAM_KEYS, K.STREAM_TEXT)),
        ("transitions", "`transitions`", keyed(ordered(TRANSITION_KEYS, K.TRANSITIONS_TEXT),
                                                K.TRANSITIONS_TEXT)),
        ("targets", "`targets`", keyed(TARGETS, K.TARGETS_TEXT)),
        ("spec", "Ledger specs (`multirelease release SPEC ...`): top-level keys", keyed(SPEC_KEYS, K.SPEC_KEY_TEXT)
         + "\nA ledger spec is a scenario without `data`, `dynamics` and `releases`, with `publisher` and "
           "`snapshot` instead.\n"),
    ]


def _release_metric_table() -> str:
    from .reference_keys import RELEASE_METRIC_TEXT
    from .document import RELEASE_METRICS

    return _table(("metric", "meaning"), ((f"`{m}`", RELEASE_METRIC_TEXT.get(m, "")) for m in RELEASE_METRICS))


# ---------------------------------------------------------------------- describe
def _index() -> dict[str, list[str]]:
    """name -> entries (Markdown) for :func:`describe`."""
    from .reference_keys import RELEASE_METRIC_TEXT
    from .document import RELEASE_METRICS

    pubs, attacks = _registries()
    idx: dict[str, list[str]] = {}

    def add(key: str, text: str) -> None:
        idx.setdefault(key, []).append(text)

    for n in pubs:
        add(n, publisher_entry(n))
    for n in attacks:
        add(n, attack_entry(n))
        for m, d in _metric_rows(attacks[n]):
            text = f"## `{n}.{m}`\n\n{_md(d)}\n\nReported by the attack `{n}` ({_paper(attacks[n])}).\n"
            add(f"{n}.{m}", text)
            add(m, text)
    for m in RELEASE_METRICS:
        text = f"## `release[<i>].{m}`\n\n{_md(RELEASE_METRIC_TEXT.get(m, ''))}\n\nA release metric of every report.\n"
        add(f"release.{m}", text)
        add(m, text)
    for anchor, title, body in _scenario_sections():
        add(anchor, f"## {title}\n\n{body}")
        head = body.split("\n")[:2]
        for row in body.split("\n"):  # one key: adversary.sensitive, spec.publisher, stream.qi...
            m = re.match(r"^\| `([\w-]+)` \|", row)
            if m and row not in head:
                add(f"{anchor}.{m.group(1)}", f"## {title}: `{m.group(1)}`\n\n" + "\n".join(head + [row]) + "\n")
    add("exit-codes", "## Exit codes\n\n" + _exit_table())
    return idx


def names() -> list[str]:
    """Every name :func:`describe` knows."""
    return sorted(_index())


def describe(name: str) -> str:
    """The reference entry (Markdown) of a publisher, an attack, a metric (``FA``, ``correspondence.FA``,
    ``release.LM``), a group of scenario keys (``adversary``, ``spec``...) or ``exit-codes``.  Raises
    :class:`~multirelease.errors.InputError` for an unknown name."""
    from multirelease.errors import InputError

    idx = _index()
    key = name.strip()
    if key.startswith("release[") and "]." in key:
        key = "release." + key.split("].", 1)[1]
    if key not in idx and "." in key:  # a reported name of a described pattern: correspondence.C_1
        key = next((k for k in idx if "<" in k and metric_pattern(k).match(key)), key)
    if key not in idx:
        lowered = {k.lower(): k for k in idx}
        if key.lower() not in lowered:
            close = [k for k in sorted(idx) if key.lower() in k.lower()][:8]
            hint = f" (close: {', '.join(close)})" if close else " (see `multirelease describe --list`)"
            raise InputError(f"no reference entry named '{name}'{hint}", key="NAME")
        key = lowered[key.lower()]
    return "\n".join(idx[key])


# ---------------------------------------------------------------------- what the reference cannot say
def missing_entries() -> list[str]:
    """What the reference cannot say, one line each: a registered publisher or attack without ``paper``,
    docstring or a parameter's description, an attack metric without a meaning, a key of a parser, a release
    metric or an exit code without words (tests/reports/test_reference.py asserts there is none)."""
    from . import reference_keys as K
    from multirelease.model.dynamics import STREAM_KEYS
    from multirelease.expect import EXIT_CODES
    from multirelease.ledger.operations import SPEC_KEYS
    from .document import RELEASE_METRICS
    from multirelease.model.schema import _ATTRIBUTE_KEYS, GENERALIZATIONS, ROLES
    from multirelease.formats.scenario import TARGETS, TOP_KEYS
    from multirelease.model.sequence import ADVERSARY_KEYS
    from multirelease.model.transitions import _KEYS as TRANSITION_KEYS

    out = []
    pubs, attacks = _registries()
    for kind, registry in (("publisher", pubs), ("attack", attacks)):
        family = [registry[n] for n in registry]
        for name in registry:
            cls = registry[name]
            if not _paper(cls).strip():
                out.append(f"{kind} {name}: no paper")
            if not _sections(cls.__doc__)[""]:
                out.append(f"{kind} {name}: no docstring")
            docs = _docstring_params(cls, family)
            out += [f"{kind} {name}: parameter '{p}' not in its docstring's Parameters" if p not in docs else
                    f"{kind} {name}: parameter '{p}' has no description in its docstring's Parameters"
                    for p in cls.params if not str(docs.get(p, "")).strip()]
            if kind == "attack":
                desc = getattr(cls, "metric_descriptions", {})
                out += [f"attack {name}: metric '{m}' has no description" for m in cls.metrics
                        if not str(desc.get(m, "")).strip()]
                out += [f"attack {name}: described metric '{m}' is not reported" for m in desc
                        if "<" not in m and m not in tuple(cls.metrics)]
    for what, keys, text in (("scenario key", TOP_KEYS, K.TOP_KEY_TEXT), ("spec key", SPEC_KEYS, K.SPEC_KEY_TEXT),
                             ("attribute key", _ATTRIBUTE_KEYS, K.ATTRIBUTE_KEY_TEXT), ("role", ROLES, K.ROLE_TEXT),
                             ("generalization", GENERALIZATIONS, K.GENERALIZATION_TEXT),
                             ("adversary key", ADVERSARY_KEYS, K.ADVERSARY_TEXT),
                             ("stream key", STREAM_KEYS, K.STREAM_TEXT),
                             ("transitions key", TRANSITION_KEYS, K.TRANSITIONS_TEXT),
                             ("targets value", TARGETS, K.TARGETS_TEXT),
                             ("release metric", RELEASE_METRICS, K.RELEASE_METRIC_TEXT),
                             ("exit code", set(EXIT_CODES.values()) | {2}, K.EXIT_TEXT)):
        out += [f"{what} '{k}' has no words in multirelease/reports/reference_keys.py" for k in keys if k not in text]
        out += [f"{what} '{k}' of multirelease/reports/reference_keys.py is not in the code"
                for k in text if k not in keys]
    return out
