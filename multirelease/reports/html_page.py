"""The HTML report (issue 15): one self-contained offline page, built from the JSON report alone.

:func:`render_html` turns the report dict that ``run``, ``certify`` and ``ledger --verify`` produce
(:func:`multirelease.reports.document.build_report`, DESIGN.md "Reports") into a page a privacy board can read: the
verdict first, in plain words (what was checked, against which adversary, PASS / FAIL / UNKNOWN / nothing
checked, and for UNKNOWN the proven interval and why it is not a value); then, per attack, its headline
metric per release (matplotlib SVG, inline, with the requirement's threshold drawn), the worst targets, and
the witness drawn as its paper draws it (:mod:`multirelease.reports.html_witness`).  Because the page reads only the
report dict, ``run`` and ``certify`` of the same files give the same page.

A ledger's page (``ledger DIR --html``, ``certify --ledger ... --html``) is handed to a review board (issue 25,
item 6): it names persons by the ledger's keyed pseudonyms, never by the snapshots' identifiers (``names``,
:func:`pseudonymize`); shows every SHA-256 whole (wrapped, selected by one click), every quasi-identifier under
its attribute's name, one count of an attack's targets and the reference's one line beside every metric
(:func:`metric_meaning`); its figures are as wide as their labels.  ``fragment=True`` gives the page as one
element whose style applies to it alone (a notebook's ``_repr_html_``).  tests/reports/test_board_page.py lays
the pages out in headless Chromium at 900 and 1,400 px and finds nothing wider than the window, cut or clipped.

The page loads nothing: no script, no external style sheet, font or image; every figure is inline SVG.
A verdict never claims more than the report proves: an interval is shown as an interval, an estimate as an
estimate.
"""
from __future__ import annotations

import io
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Mapping

from multirelease.errors import InputError
from multirelease.expect import parse_expectation
from .html_witness import draw_witness, esc, qi_items, release_series, targets_counted

__all__ = ["render_html", "write_html", "pseudonymize", "metric_meaning", "scoped_css",
           "VERDICT_TITLES", "FRAGMENT_CLASS"]

#: how many target rows each attack's table shows (the worst first)
MAX_TARGET_ROWS = 20

#: the word the page opens with, per verdict
VERDICT_TITLES = {"pass": "PASS", "fail": "FAIL", "unknown": "UNKNOWN", "none": "NOTHING CHECKED"}

#: each attack's paper and its adversary, in plain words
ATTACK_WORDS = {
    "correspondence": ("Fung, Wang, Fu, Pei, Anonymity for Continuous Data Publishing (EDBT 2008), "
                       "Definitions 3.1-3.6",
                       "knows that every record of a release reappears in every later release, and cross-examines "
                       "the releases to rule out ('crack') the records that cannot be the target's; what is left "
                       "of the target's class is its anonymity"),
    "possible_worlds": ("Wong et al., Global Privacy Guarantee in Serial Data Publishing (Definition 2), and "
                        "Shmueli & Tassa, Privacy by Diversity in Sequential Releases (Definition 3.2)",
                        "knows everyone's quasi-identifiers and weighs every table consistent with all the releases "
                        "(every 'possible world'): the breach is the share of those worlds in which a person has "
                        "a given sensitive value"),
    "update_graph": ("Li & Zhou, Challenging More Updates (section III, Definitions 9-11)",
                     "follows each record through its versions in every release and prunes the sensitive values "
                     "no allowed update path explains; the risk is the weight of the surviving paths through a "
                     "value"),
    "intersection": ("Barbosa, Pinto, Gomes, Generically Extending Anonymization Algorithms to Deal with "
                     "Successive Queries (section 4)",
                     "tracks records across releases by their uid and intersects (or subtracts) the groups a "
                     "target falls in, until few candidates or a single sensitive value is left"),
    "linking": ("k-anonymity (Sweeney), l-diversity (Machanavajjhala et al.)",
                "looks at one release at a time and links a target to its class by its quasi-identifiers"),
}

_OP_WORDS = {"==": "equal", "!=": "differ from", "<": "be below", "<=": "be at most", ">": "exceed",
             ">=": "be at least"}

#: the class of the element :func:`render_html` returns with ``fragment=True`` (a notebook's ``_repr_html_``)
FRAGMENT_CLASS = "multirelease-report"

#: the page's style sheet: one rule a line-group, ``body`` the page itself (``fragment=True`` scopes every
#: selector to :data:`FRAGMENT_CLASS`: :func:`scoped_css`)
_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:0 auto;
max-width:1100px;padding:1.2em 1.6em;color:#1d2330;line-height:1.45;overflow-wrap:break-word}
h1{font-size:1.6em;margin:.2em 0}h2{border-bottom:2px solid #d7dbe3;padding-bottom:.2em;margin-top:1.8em}
h3{margin:1.2em 0 .4em}.desc{color:#4a5366;max-width:60em}
.verdict{border-radius:8px;padding:1em 1.3em;margin:1em 0;border:2px solid}
.v-pass{background:#eaf7ee;border-color:#2e8b57}.v-fail{background:#fdecec;border-color:#c0392b}
.v-unknown{background:#fff6e0;border-color:#d4a017}.v-none{background:#eef3fb;border-color:#5b7fb9}
.verdict-line{font-size:1.5em;margin:0}.verdict-line strong{letter-spacing:.04em}
.v-pass strong{color:#1f6b40}.v-fail strong{color:#a12a1f}.v-unknown strong{color:#8a6500}
.v-none strong{color:#33558c}
.v-sub{background:#f6f7f9;border-color:#9aa3b2;border-width:1px}.v-sub .verdict-line{font-size:1.15em}
.v-sub strong{color:#1d2330}
code.hash{font-size:.85em;word-break:break-all;overflow-wrap:anywhere;user-select:all}
code.path{overflow-wrap:anywhere}table.targets{font-size:.85em}table.targets th,table.targets td{padding:.2em .4em}
ol.history{padding-left:0;list-style:none;font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:.85em}
ol.history li{white-space:pre-wrap;overflow-wrap:anywhere;margin:.2em 0}ol.history code.hash{font-size:1em}
.v-waived{background:#fff6e0;border-color:#d4a017}.v-waived strong{color:#8a6500}
#reproduced strong{color:#1f2937}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}
th,td{border:1px solid #d7dbe3;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f2f4f8}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.what{display:block;font-weight:normal;color:#4a5366;font-size:.85em;min-width:14em;max-width:30em}
td.what{display:table-cell}dl.legend{font-size:.85em;color:#4a5366;margin:.2em 0 1em}
dl.legend dt{display:inline;font-weight:600}dl.legend dd{display:inline;margin:0}
dl.legend dd:after{content:"";display:block}.pseudonyms{font-size:.9em}
tr.row-bad td{background:#fdecec}tr.row-unk td{background:#fff6e0}
.yes{color:#1f6b40;font-weight:600}.no{color:#a12a1f;font-weight:600}.unk{color:#8a6500;font-weight:600}
.note{color:#4a5366;font-size:.9em}.chart svg,.witness svg{max-width:100%;height:auto}
.scroll{overflow-x:auto}code{background:#f2f4f8;padding:0 .25em;border-radius:3px;
font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
footer{margin-top:3em;color:#6b7385;font-size:.85em;border-top:1px solid #d7dbe3;padding-top:.6em}
"""


def fmt(v: Any) -> str:
    """A number as the terminal shows it (thousands separators, 4 significant digits)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isfinite(v) and v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:.4g}"
    return str(v)


def interval_words(metric: str, item: Mapping) -> str:
    """``between 3 and 7`` with why it is not a value (``the solver stopped: budget 2 s``)."""
    lo, hi = item.get("lower"), item.get("upper")
    if lo is not None and hi is not None:
        span = f"lies between {fmt(lo)} and {fmt(hi)}"
    elif lo is not None:
        span = f"is at least {fmt(lo)} (no upper bound was proven)"
    elif hi is not None:
        span = f"is at most {fmt(hi)} (no lower bound was proven)"
    else:
        span = "was not determined at all"
    reason = item.get("reason") or ""
    why = {"time_limit": "the solver reached its time limit", "budget": "the solver ran out of its budget",
           "sampled": "it was estimated by sampling (the interval is proven, the estimate is not)",
           "lp_bound": "only a linear-programming bound was proven",
           "not reported": "the attack did not report it"}.get(reason, reason)
    detail = item.get("detail")
    if detail and detail != reason:
        why = f"{why} ({detail})" if why else str(detail)
    return f"{metric} {span}" + (f": {why}" if why else "")


def requirement_words(text: str) -> str:
    """``correspondence.FA >= 5`` as a sentence: ``correspondence's FA must be at least 5``."""
    try:
        e = parse_expectation(text)
    except InputError:
        return text
    number = text.split(e.op, 1)[1].strip()
    subject = e.subject if e.subject != "release" else "the newest release" if e.index == -1 else \
        f"release {e.index}" if e.index > 0 else f"release {e.index} from the newest"
    return f"{subject}'s {e.metric} must {_OP_WORDS[e.op]} {number}"


def _adversary_words(adv: Mapping | None) -> list[str]:
    if not adv:
        return []
    out = []
    qi = adv.get("quasi_identifiers")
    out.append({"all": "knows every individual's quasi-identifiers",
                "targets": "knows the quasi-identifiers of the people it targets",
                "none": "knows no quasi-identifier values beyond what the releases show"}
               .get(qi, f"quasi-identifiers: {qi}"))
    if adv.get("presence"):
        out.append("knows who is in each release")
    if adv.get("record_tracking"):
        out.append("can follow a record from release to release by its record id (uid)")
    if adv.get("correspondence"):
        out.append("knows that every record of a release reappears in all later releases")
    out.append({"persistent": "assumes each person keeps one sensitive value over the whole sequence",
                "free": "allows sensitive values to change arbitrarily between releases",
                "transitions": "knows the public model of how sensitive values change between releases"}.get(
        adv.get("sensitive"), f"sensitive values: {adv.get('sensitive')}"))
    linking = adv.get("linking") or {}
    if linking.get("persistent"):
        out.append("reads the published columns " + ", ".join(linking["persistent"]) + " (neither quasi-identifier "
                   "nor sensitive) as one value per person across releases, linking a person's rows (Shmueli & "
                   "Tassa, section 5.2)")
    if linking.get("ignored"):
        out.append("finds no link in the published columns " + ", ".join(linking["ignored"]) + " (declared "
                   "changing, or published by one release only)")
    return out


def _requirement_lines(report: Mapping) -> list:
    """The lines the privacy verdict counts (the spec's requirements, ``--require`` and the baselines)."""
    return [x for x in report.get("expectations", []) if x.get("kind", "requirement") == "requirement"]


def _waiver_sentence(report: Mapping) -> str:
    """The baselines waived by name, and whether each holds: shown beside the verdict, never hidden."""
    waived = report.get("waived") or []
    if not waived:
        return ""
    words = {True: "holds", False: "is BROKEN", None: "is undecided"}
    items = "; ".join(f"<code>{esc(w['line'])}</code> {words[w['holds']]}" for w in waived)
    return (f"<p><strong>Waived by name</strong> (not counted in this verdict): {items}. A waived line that is "
            "broken means an attack disclosed someone.</p>")


def _reproduced_sentence(report: Mapping) -> str:
    """A research scenario's expectations (the paper's figures), answered apart from the privacy verdict."""
    if "reproduced" not in report:
        return ""
    lines = [x for x in report.get("expectations", []) if x.get("kind") == "expectation"]
    held = sum(1 for x in lines if x.get("holds") is True)
    word = {"pass": "reproduced", "fail": "NOT reproduced", "unknown": "undecided"}.get(report["reproduced"], "-")
    return (f"<p id=\"reproduced\">Research scenario: the paper's figures were <strong>{word}</strong> ({held} of "
            f"{len(lines)} expectations as the paper says). That answers the reproduction; the verdict above "
            "answers whether the releases are safe.</p>")


def _verdict_sentence(report: Mapping) -> str:
    exps = _requirement_lines(report)
    verdict = report["verdict"]
    n = len(exps)
    if verdict == "none":
        return ("No requirement was stated, so nothing was checked and this page proves nothing. "
                "The figures below are for information only.")
    if verdict == "pass":
        return (f"All {n} requirement{'s' if n != 1 else ''} below {'were' if n != 1 else 'was'} proven to hold "
                "against the adversary described here. This is a proof for the attacks that were run, "
                "not for attacks that were not.")
    if verdict == "fail":
        bad = [x for x in exps if x.get("holds") is False]
        if not bad:  # a FAIL that no requirement decided: a ledger's files are not the ones it recorded
            return "No requirement was proven broken by the attacks; the verdict is FAIL for the reason above."
        first = bad[0]
        shown = (f"its value is {fmt(first['value'])}" if first.get("value") is not None
                 else interval_words("the metric", first))
        return (f"{len(bad)} of {n} requirement{'s' if n != 1 else ''} {'was' if len(bad) == 1 else 'were'} "
                f"proven to be broken. The first: <code>{esc(first['expect'])}</code> "
                f"({esc(requirement_words(first['expect']))}), but {esc(shown)}.")
    unk = [x for x in exps if x.get("holds") is None]
    parts = []
    for x in unk[:5]:
        metric = x["expect"].split(" ")[0]
        parts.append(f"<li><code>{esc(x['expect'])}</code>: {esc(interval_words(metric, x))}; this interval "
                     f"holds values that meet the requirement and values that break it.</li>")
    return (f"No requirement was proven broken, but {len(unk)} of {n} could not be decided: the figure it needs "
            f"is known only to lie in an interval.</p><ul>{''.join(parts)}</ul><p>")


def _verdict_section(report: Mapping) -> str:
    verdict = report["verdict"]
    rel = report.get("releases", [])
    attacks = list(report.get("attacks", {}))
    checked = []
    if rel:
        sizes = ", ".join(fmt(r["records"]) for r in rel[:12]) + (", ..." if len(rel) > 12 else "")
        checked.append(f"{len(rel)} release{'s' if len(rel) != 1 else ''} ({esc(sizes)} records)")
    targets = report.get("targets")
    if targets:
        checked.append({"population": "every individual of the data was judged as a target",
                        "regions": "every combination of values the published tables allow was judged as a "
                                   "target (no list of individuals was given)"}.get(targets, f"targets: {targets}"))
    exps = _requirement_lines(report)
    if exps:
        words = "; ".join(esc(requirement_words(x["expect"])) for x in exps[:8])
        checked.append(f"{len(exps)} requirement{'s' if len(exps) != 1 else ''}: {words}"
                       f"{'; ...' if len(exps) > 8 else ''} (<a href=\"#requirements\">table</a>)")
    research = [x for x in report.get("expectations", []) if x.get("kind") == "expectation"]
    if research:
        words = "; ".join(esc(requirement_words(x["expect"])) for x in research[:8])
        checked.append(f"{len(research)} expectation{'s' if len(research) != 1 else ''} of the paper (not privacy "
                       f"claims): {words}{'; ...' if len(research) > 8 else ''}")
    if attacks:
        checked.append("attacks run: " + ", ".join(f"<a href=\"#attack-{esc(a)}\">{esc(a)}</a>" for a in attacks))
    else:
        checked.append("no attack was run")
    adv = _adversary_words(report.get("adversary"))
    adv_html = ("<h3>Against which adversary</h3><p>An attacker who " + esc("; who ".join(adv))
                + ".</p>") if adv else ""
    waived = report.get("waived") or []
    shown = "waived" if verdict == "pass" and any(w["holds"] is not True for w in waived) else verdict
    title = VERDICT_TITLES.get(verdict, verdict) + (" (waived: " + ", ".join(w["name"] for w in waived) + ")"
                                                    if waived else "")
    return (f'<section id="verdict" class="verdict v-{esc(shown)}">'
            f'<p class="verdict-line">Verdict: <strong id="verdict-word">{esc(title)}'
            f'</strong></p><div id="verdict-text"><p>{_verdict_sentence(report)}</p>{_waiver_sentence(report)}'
            f'{_reproduced_sentence(report)}</div>'
            f"<h3>What was checked</h3><ul>{''.join(f'<li>{c}</li>' for c in checked)}</ul>{adv_html}</section>")


_INTEGRITY_WORDS = {"changed": "changed since the ledger recorded it", "missing": "missing",
                    "foreign": "in a release folder, never recorded by the ledger",
                    "unrecorded": "not the file the ledger recorded for this release"}


def integrity_title(problems: list) -> str:
    """``release_2.csv changed``: what the page's first heading names."""
    words = {"changed": "changed", "missing": "missing", "foreign": "not recorded by the ledger",
             "unrecorded": "not the file the ledger recorded"}
    return ", ".join(f"{Path(p['file']).name} {words.get(p['problem'], p['problem'])}" for p in problems)


def _integrity_section(report: Mapping) -> str:
    """The verdict of a certification whose files are not all the ones the ledger recorded (``ledger --verify``,
    ``certify --ledger``; the report's ``integrity``): FAIL, first on the page, naming each file with the SHA-256
    the ledger recorded and the one found now."""
    problems = report["integrity"]
    rows = "".join(
        f"<tr class=\"row-bad\"><td><code class=\"path\">{esc(p['file'])}</code></td>"
        f"<td class=num>{esc(fmt(p.get('release')))}</td>"
        f"<td>{esc(_INTEGRITY_WORDS.get(p['problem'], p['problem']))}</td>"
        f"<td><code class=\"hash\">{esc(p.get('recorded_sha256') or 'none recorded')}</code></td>"
        f"<td><code class=\"hash\">{esc(p.get('found_sha256') or 'missing')}</code></td></tr>" for p in problems)
    certified = report.get("certified_verdict")
    after = (f"The attacks were still run on the files as they are now (below: "
             f"{VERDICT_TITLES.get(certified, certified)}). That does not make the verdict PASS: the files the "
             "public holds are not the ones the ledger certified." if certified else
             "The files were not certified: the sequence the ledger certified cannot be read from the release "
             "folder.")
    return (f'<section id="verdict" class="verdict v-fail"><h1 class="verdict-line">Verdict: '
            f'<strong id="verdict-word">FAIL</strong> - {esc(integrity_title(problems))}</h1>'
            f'<div id="verdict-text"><p>The published files are not the ones the ledger recorded: a file that '
            f'changed, went missing or was never recorded is covered by no certification, so the verdict is FAIL '
            f'whatever the attacks find.</p></div><div class="scroll"><table id="integrity"><tr><th>file</th>'
            f'<th>release</th><th>problem</th><th>SHA-256 recorded</th><th>SHA-256 found now</th></tr>{rows}'
            f'</table></div><p>{esc(after)}</p></section>')


def _recertified_section(report: Mapping) -> str:
    """Below an integrity FAIL: what the attacks found on the files as they are now, in a neutral box under its
    own title (never a second "Verdict")."""
    certified = report["certified_verdict"]
    judged = {**report, "verdict": certified}
    checked = _verdict_section(judged).split("<h3>What was checked</h3>", 1)
    rest = ("<h3>What was checked</h3>" + checked[1].rsplit("</section>", 1)[0]) if len(checked) == 2 else ""
    return (f'<section id="recertification" class="verdict v-sub"><p class="verdict-line">What the attacks found '
            f'on the files as they are now: <strong id="recertified-word">'
            f'{VERDICT_TITLES.get(certified, certified)}</strong> (not the verdict: see above)</p>'
            f'<div id="recertified-text"><p>{_verdict_sentence(judged)}</p></div>{rest}</section>')


def _requirements_section(report: Mapping) -> str:
    exps = report.get("expectations", [])
    if not exps:
        return ""
    rows = []
    order = {"requirement": 0, "waived": 1, "expectation": 2}
    for x in sorted(exps, key=lambda x: order.get(x.get("kind", "requirement"), 0)):
        holds = x.get("holds")
        mark = {True: '<span class="yes">holds</span>', False: '<span class="no">BROKEN</span>',
                None: '<span class="unk">undecided</span>'}[holds]
        metric = x["expect"].split(" ")[0]
        value = fmt(x["value"]) if x.get("value") is not None else interval_words(metric, x)
        cls = {False: ' class="row-bad"', None: ' class="row-unk"'}.get(holds, "")
        rows.append(f"<tr{cls}><td><code>{esc(x['expect'])}</code></td><td>{esc(requirement_words(x['expect']))}"
                    f"</td><td>{esc(value)}</td><td>{mark}</td><td>{esc(x.get('source', 'expect'))}</td>"
                    f"<td>{esc(_KIND_WORDS.get(x.get('kind', 'requirement'), ''))}</td></tr>")
    return ('<section id="requirements"><h2>Requirements and expectations</h2><table><tr><th>line</th>'
            "<th>in words</th><th>proven value</th><th>result</th><th>from</th><th>counts in</th></tr>"
            f"{''.join(rows)}</table></section>")


#: what each kind of judged line answers (issue 30)
_KIND_WORDS = {"requirement": "the verdict", "waived": "nothing (waived by name)",
               "expectation": "the reproduction (research)"}


def _releases_section(report: Mapping) -> str:
    rel = report.get("releases", [])
    if not rel:
        return ""
    names: list[str] = []
    for r in rel:
        names += [k for k in r["metrics"] if k not in names]
    head = "".join(f"<th>release {r['index']}</th>" for r in rel)
    rows = [("records", [r["records"] for r in rel]), ("classes", [r["classes"] for r in rel])]
    rows += [(k, [r["metrics"].get(k) for r in rel]) for k in names]
    body = ["<tr><th>" + esc(k) + _what(metric_meaning(None, k), "span") + "</th>"
            + "".join("<td class=num>" + esc(fmt(v)) + "</td>" for v in vals) + "</tr>" for k, vals in rows]
    return (f'<section id="releases"><h2>Releases</h2><div class="scroll"><table><tr><th>metric</th>{head}</tr>'
            f"{''.join(body)}</table></div></section>")


def metric_meaning(attack: str | None, metric: str) -> str:
    """The reference's one line on a metric (issue 25, item 6: LM, EM, FEM, VEM, AIL... were never explained):
    a release metric's (``attack`` None) from ``RELEASE_METRIC_TEXT``, an attack's from its class's
    ``metric_descriptions`` (a described pattern such as ``{F,C,B}_<n>`` matching ``C_1``), as
    ``multirelease describe`` prints them; ``""`` for a metric the reference does not describe."""
    if attack is None:
        from .reference_keys import RELEASE_METRIC_TEXT

        return RELEASE_METRIC_TEXT.get(metric, "")
    from attacks import ATTACKS

    try:
        desc = getattr(ATTACKS[attack], "metric_descriptions", {}) or {}
    except (KeyError, ImportError):
        return ""
    if metric in desc:
        return desc[metric]
    from .reference import metric_pattern

    return next((text for name, text in desc.items() if metric_pattern(name).match(metric)), "")


def _what(text: str, tag: str = "span") -> str:
    """A metric's one-line meaning beside its name (nothing when the reference has none)."""
    return f'<{tag} class="what">{esc(_plain_md(text))}</{tag}>' if text else ""


def _key_html(key: str) -> str:
    """A report key as a column head that may break after its underscores (``prosecutor_<wbr>max``): a
    table of ten such columns fits 900 px without cutting a word anywhere else (issue 25, item 6)."""
    return esc(key).replace("_", "_<wbr>")


def _plain_md(text: str) -> str:
    """The reference's Markdown (``code``) as plain text."""
    return text.replace("`", "")


def _summary_table(name: str, res: Mapping) -> str:
    rows = [f"<tr><td>{esc(m)}</td><td class=num>{esc(fmt(v))}</td><td>exact</td>"
            f"{_what(metric_meaning(name, m), 'td') or '<td></td>'}</tr>" for m, v in res.get("summary", {}).items()]
    for m, b in res.get("bounds", {}).items():
        est = res.get("estimates", {}).get(m)
        extra = f"; estimate {fmt(est)} (not proven)" if est is not None else ""
        rows.append(f'<tr class="row-unk"><td>{esc(m)}</td><td>{esc(interval_words(m, b) + extra)}</td>'
                    f"<td>interval</td>{_what(metric_meaning(name, m), 'td') or '<td></td>'}</tr>")
    return (f"<table><tr><th>metric</th><th>value</th><th></th><th>what it measures</th></tr>{''.join(rows)}"
            "</table>")


def _cell(v: Any) -> str:
    if isinstance(v, Mapping):
        inner = ", ".join(f"{k}: {_cell(x)}" for k, x in v.items())
        return inner if len(inner) <= 160 else inner[:157] + "..."
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_cell(x) for x in v[:12]) + (", ..." if len(v) > 12 else "")
        return inner
    return fmt(v)


def _correspondence_row(row: Mapping) -> dict:
    """A correspondence target row in words: the target's values, and per attack where it is cracked."""
    out = {"target": ", ".join(qi_items(row.get("qid"))), "arrives": row.get("timestamp")}
    if "individuals" in row:
        out["individuals"] = row["individuals"]
    for fam in ("F", "C", "B"):
        c = row.get(fam)
        if not isinstance(c, Mapping):
            out[f"{fam}-attack"] = "-"
            continue
        left = c.get("anonymity_bounds")
        left = f"{left[0]}..{left[1]}" if left and left[0] != left[1] else fmt(c.get("anonymity"))
        out[f"{fam}-attack"] = (f"R{c.get('release')} class {c.get('class')}: {left} left of {fmt(c.get('size'))} "
                                f"({fmt(c.get('crack'))} cracked)")
    return out


def _target_key(name: str):
    if name == "correspondence":
        def anonymity(row):
            vals = [(c.get("anonymity_bounds") or [c.get("anonymity", math.inf)])[0]
                    for f, c in row.items() if f in ("F", "C", "B") and isinstance(c, Mapping)]
            return min(vals, default=math.inf)
        return anonymity
    if name == "possible_worlds":
        return lambda row: -(row.get("breach") or 0)
    if name == "intersection":
        return lambda row: (row.get("size") or math.inf, row.get("l_distinct") or math.inf)
    return None


def _targets_section(name: str, res: Mapping) -> str:
    rows = list(res.get("targets", []))
    if not rows:
        return '<p class="note">The attack reported no target rows.</p>'
    per_release = all(isinstance(r, Mapping) and "release" in r and "qid" not in r for r in rows)
    key = None if per_release else _target_key(name)
    shown = sorted(rows, key=key)[:MAX_TARGET_ROWS] if key else rows[:MAX_TARGET_ROWS]
    if name == "correspondence":
        shown = [_correspondence_row(r) if isinstance(r, Mapping) and "qid" in r else r for r in shown]
    cols: list[str] = []
    for r in shown:
        if isinstance(r, Mapping):
            cols += [k for k in r if k not in cols]
    cols = cols[:12]
    head = "".join(f"<th>{_key_html(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{esc(_cell(r.get(c)))}</td>" for c in cols) + "</tr>"
                   for r in shown if isinstance(r, Mapping))
    title = "Per release" if per_release else "Worst targets"
    kept, judged = targets_counted(res)
    note = ""
    if judged > len(shown) and not per_release:  # the count of the chart's caption, in the same words
        note = (f'<p class="note">The {len(shown):,} worst of the {judged:,} targets judged'
                + (f" (the report keeps the {kept:,} worst)" if len(shown) < kept < judged else "") + ".</p>")
    explained = set(res.get("summary", {})) | set(res.get("bounds", {}))  # in the table above
    legend = [(c, metric_meaning(name, c)) for c in cols if c not in explained]
    legend = "".join(f"<dt>{esc(c)}</dt><dd>: {esc(_plain_md(t))}</dd>" for c, t in legend if t)
    legend = f'<dl class="legend">{legend}</dl>' if legend else ""
    return (f'<h3>{title}</h3>{note}<div class="scroll"><table class="targets"><tr>{head}</tr>{body}</table></div>'
            f"{legend}")


def _requirements_of(report: Mapping, name: str) -> list[tuple[str, str, float, Mapping]]:
    out = []
    for x in report.get("expectations", []):
        try:
            e = parse_expectation(x["expect"])
        except InputError:
            continue
        if e.subject == name:
            out.append((e.metric, e.op, e.number, x))
    return out


def _chart_svg(chart: Mapping, reqs: list, n_releases: int, uid: str) -> str:
    """One matplotlib figure (SVG, text kept as text) of a chart's series with its requirements' lines."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.2, 3.1), layout="constrained")
    ax = fig.subplots()
    colours = ["#2f6db5", "#d9822b", "#6a3d9a", "#2e8b57", "#c0392b"]
    for s, colour in zip(chart["series"], colours * 3):
        pts = s["points"]
        xs = [p[0] for p in pts]
        lo = [p[1] for p in pts]
        hi = [p[2] for p in pts]
        exact = [a == b for a, b in zip(lo, hi)]
        mid = [a if a == b else (a + b) / 2 for a, b in zip(lo, hi)]
        style = dict(marker="o", color=colour, label=s["label"], linestyle=s.get("linestyle", "-"))
        if s.get("kind") == "bar":
            ax.bar(xs, mid, color=colour, alpha=.55, label=s["label"], width=.5)
        else:
            ax.plot(xs, mid, **style)
        if not all(exact):
            ax.vlines([x for x, e in zip(xs, exact) if not e], [a for a, e in zip(lo, exact) if not e],
                      [b for b, e in zip(hi, exact) if not e], colors=colour, linewidth=6, alpha=.3,
                      label=f"{s['label']}: proven interval")
    lines: dict[tuple[str, float], list[str]] = {}
    for metric, op, number, item in reqs:
        if metric in chart["metrics"]:
            lines.setdefault((op, number), []).append(metric)
    for (op, number), names in lines.items():
        ax.axhline(number, color="#c0392b", linestyle="--", linewidth=1.2,
                   label=f"requirement {', '.join(names)} {op} {number:g}")
    values = [v for s in chart["series"] for p in s["points"] for v in p[1:]] + [n for _, n in lines]
    if values and min(values) >= 0:
        ax.set_ylim(0, max(values) * 1.12 if max(values) > 0 else 1)
    if values and all(float(v).is_integer() for v in values):
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("release")
    ax.set_ylabel(chart["ylabel"])
    ax.set_xticks(range(1, n_releases + 1))
    ax.set_xlim(.5, n_releases + .5)
    return _figure_svg(fig, ax, chart["title"], "best", uid)


def _figure_svg(fig, ax, title: str, legend: str, uid: str) -> str:
    """A figure's title, grid and legend (at ``legend``), saved as an inline SVG (text kept as text, ids prefixed
    with ``uid``: :func:`inline_svg`)."""
    import matplotlib

    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(alpha=.3)
    ax.legend(fontsize=8, loc=legend)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": uid, "font.size": 9}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return inline_svg(buf.getvalue(), uid)


def inline_svg(svg: str, uid: str) -> str:
    """An SVG document as an inline element of the page: no XML prologue, no metadata, no namespace URLs
    (an inline ``<svg>`` needs none), ids prefixed with ``uid`` so that figures never share one."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{uid}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{uid}-{m.group(1)})", svg)
    return re.sub(r'(xlink:)?href="#([^"]+)"', lambda m: f'href="#{uid}-{m.group(2)}"', svg)


def _attack_section(report: Mapping, name: str, res: Mapping, index: int) -> str:
    paper, adversary = ATTACK_WORDS.get(name, ("", ""))
    n = len(report.get("releases", [])) or 1
    parts = [f'<section class="attack" id="attack-{esc(name)}"><h2>Attack: {esc(name)}</h2>']
    if paper:
        parts.append(f'<p>{esc(paper)}. The adversary {esc(adversary)}.</p>')
    exact = res.get("exact", True) and not res.get("bounds")
    parts.append(f"<p>{'Every figure of this attack is exact.' if exact else 'Some figures are intervals: '}"
                 f"{'' if exact else 'the engine stopped before it could prove a value (see the table).'}</p>")
    parts.append(_summary_table(name, res))
    reqs = _requirements_of(report, name)
    charts = release_series(name, res, n, [m for m, *_ in reqs])
    for j, chart in enumerate(charts):
        parts.append(f'<div class="chart">{_chart_svg(chart, reqs, n, f"a{index}c{j}")}'
                     f'<p class="note">{esc(chart.get("caption", ""))}</p></div>')
    parts.append(_targets_section(name, res))
    witness = draw_witness(name, res)
    if witness:
        parts.append(f'<h3>Witness</h3><div class="witness">{witness}</div>')
    for note in res.get("notes", []):
        parts.append(f'<p class="note">Note: {esc(note)}</p>')
    parts.append("</section>")
    return "".join(parts)


#: a SHA-256 (or any 64-hex digest) in a line of text
_HASH = re.compile(r"\b[0-9a-f]{64}\b")


def _with_hashes(text: str) -> str:
    """``text`` escaped, each SHA-256 in it whole in a ``<code class="hash">``: wrapped anywhere on a narrow
    screen, never cut, and selected whole by one click (issue 25, item 6: the history's hashes were cut at 900
    and 1,400 px)."""
    return _HASH.sub(lambda m: f'<code class="hash">{m.group(0)}</code>', esc(text))


def _loss_bars(given: float | None, lm: float | None, loss: float | None) -> str:
    """Three horizontal bars on one scale: the month's LM as given, the proposal's LM over the records it
    publishes, and its loss over the month's records (a withheld record at 1) - issue 29's before/after."""
    bars = [("LM as given", given), ("LM of the proposal", lm), ("loss of the proposal (withheld at 1)", loss)]
    bars = [(label, float(v)) for label, v in bars if v is not None]
    if not bars:
        return ""
    top = max(v for _, v in bars) or 1.0
    label_w = max(len(label) for label, _ in bars) * 7 + 10
    width, bar_w = label_w + 320, 240
    rows = []
    for i, (label, v) in enumerate(bars):
        y = 8 + i * 26
        w = max(1.0, bar_w * v / top)
        rows.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end" font-size="12">{esc(label)}</text>'
                    f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="18" fill="{"#999" if i == 0 else "#3b7"}"/>'
                    f'<text x="{label_w + w + 6:.1f}" y="{y + 14}" font-size="12">{v:.4f}</text>')
    height = 16 + 26 * len(bars)
    return (f'<svg role="img" aria-label="loss before and after the repair" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">{"".join(rows)}</svg>')


def _repair_section(report: Mapping) -> str:
    """``release --repair --html`` (issue 29): the lines the month as given failed, every candidate gated (what
    changed, its cost, the gate's verdict), the proposal with its SHA-256, and the loss before and after.  The
    rest of the page is the proposal's gate (its witnesses are the proof that it passes)."""
    rep = report.get("repair")
    if not rep:
        return ""
    given = rep.get("as_given") or {}
    failed = "".join(f"<li><code>{esc(line)}</code></li>" for line in given.get("failed", []))
    rows = "".join(
        f"<tr><td>{esc(', '.join(c['changes']))}</td><td class=num>{c['withheld']:,}</td>"
        f"<td class=num>{esc(fmt(c['loss']))}</td><td class=num>{esc(fmt(c.get('LM')))}</td>"
        f"<td class=num>{esc(fmt(c.get('discernibility')))}</td>"
        f"<td>{esc(str(c.get('verdict') or '').upper())}</td></tr>"
        for c in rep.get("tried", []))
    prop = rep.get("proposal")
    if prop:
        what = (f'<p>Proposal: <b>{esc(", ".join(prop["changes"]))}</b>; the gate PASSes it. SHA-256 of the release '
                f'it writes: {_with_hashes(prop.get("sha256", ""))}.</p>'
                + _loss_bars(given.get("LM"), prop.get("LM"), prop.get("loss")))
    else:
        what = "<p class=no>No candidate passes the gate.</p>"
    accepted = "written (accepted)" if rep.get("accepted") else "not written until accepted (--repair --accept)"
    return (f'<section id="repair"><h2>Repair: the month as given FAILED; the verdict below is the proposal\'s, '
            f'{accepted}</h2><p>The month as given failed:</p><ul>{failed}</ul>'
            f'<p>{rep.get("gates", 0)} candidate(s) gated in {float(rep.get("seconds", 0)):.1f} s, cheapest first '
            "(loss: LM over the month's records, a withheld record counting 1):</p><div class=\"scroll\"><table><tr>"
            "<th>changes</th><th>withheld</th><th>loss</th><th>LM</th><th>discernibility</th><th>gate</th></tr>"
            f"{rows}</table></div>{what}</section>")


def _headroom_svg(forecast: Mapping, uid: str) -> str:
    """The share of futures whose gate still passes, by month ahead, with the 10-90% band of the first failing
    month shaded and its median marked (``ledger --html --headroom``, issue 26)."""
    from matplotlib.figure import Figure

    points = forecast.get("passing", [])
    xs = [p["month_ahead"] for p in points]
    band = forecast.get("headroom", {})
    months = int(forecast.get("months", len(xs)) or 1)
    fig = Figure(figsize=(7.2, 3.1), layout="constrained")
    ax = fig.subplots()
    low, median, high = (int(band.get(k, months)) + 1 for k in ("low", "median", "high"))
    if low <= months:
        ax.axvspan(low - .5, min(high, months) + .5, color="#d9822b", alpha=.18,
                   label="10-90% of the futures' first failing month")
    if median <= months:
        ax.axvline(median, color="#d9822b", linestyle="--", linewidth=1.2, label="median first failing month")
    ax.plot(xs, [p["share"] for p in points], marker="o", color="#2f6db5", drawstyle="steps-mid",
            label="share of futures whose gate still passes")
    ax.set_ylim(0, 1.05)
    ax.set_xlim(.5, months + .5)
    ax.set_xticks(range(1, months + 1))
    ax.set_xlabel(f"month ahead (release {int(forecast.get('releases', 0)) + 1} is +1)")
    ax.set_ylabel("share of futures passing")
    return _figure_svg(fig, ax, "Headroom: the gate in simulated futures", "best", uid)


def _headroom_section(report: Mapping) -> str:
    """``ledger --html --headroom`` (issue 26): the forecast's plot, its band, the line that fails first most
    often with its example in figures, and the assumptions (rates, futures, months, seed) beside it."""
    h = report.get("headroom")
    if not h:
        return ""
    band = h.get("headroom", {})
    months = int(h.get("months", 0))

    def words(m: int) -> str:
        return f"{m} or more" if m >= months else str(m)

    churn = h.get("churn", {})
    ups = ", ".join(f"{esc(a)} {r:.1%}" for a, r in churn.get("update_rates", {}).items() if r) or "none"
    first = h.get("first_failing") or []
    fails = (f"<p>Fails first most often: <code>{esc(first[0]['requirement'])}</code> ({first[0]['futures']} of "
             f"{h.get('futures')} futures).</p>" if first else f"<p>No future failed within {months} months.</p>")
    w = h.get("witness") or {}
    if w:
        figures = ", ".join(f"{esc(k)} {esc(fmt(v))}" for k, v in (w.get("figures") or {}).items())
        fails += (f"<p class=note>Example from a simulated month: future {w.get('future')}, month +"
                  f"{w.get('month_ahead')} (release {w.get('release')}): <code>{esc(w.get('requirement', ''))}"
                  f"</code>{' value ' + esc(fmt(w['value'])) if w.get('value') is not None else ''}"
                  f"{' (' + figures + ')' if figures else ''}{', names ' + esc(w['person']) if w.get('person') else ''}"
                  ".</p>")
    return (f'<section id="headroom"><h2>Headroom: median {esc(words(int(band.get("median", 0))))} more months '
            f'(10-90%: {esc(words(int(band.get("low", 0))))} to {esc(words(int(band.get("high", 0))))})</h2>'
            f'<div class="chart">{_headroom_svg(h, "headroom")}</div>{fails}'
            f"<p class=note>Assumptions: {h.get('futures')} futures of {months} months, seed {h.get('seed')}; churn "
            f"fitted on the ledger's last {churn.get('months_fitted')} months: deletions "
            f"{float(churn.get('deletion_rate', 0)):.1%} a month, insertions "
            f"{float(churn.get('insertion_rate', 0)):.1%}"
            f", updates {ups} ({esc(churn.get('sensitive_updates', ''))}); arrivals bootstrapped from "
            f"{int(churn.get('arrivals_bootstrapped', 0)):,} recent arrivals. Each simulated month is published by "
            "the ledger's publisher and judged by the same gate; nothing is stored in the ledger.</p></section>")


def _ledger_section(report: Mapping) -> str:
    lines = report.get("ledger_history")
    if not lines:
        return ""
    problems = report.get("ledger_problems") or []
    bad = "".join(f'<p class="no">{_with_hashes(p)}</p>' for p in problems)
    items = "".join(f"<li>{_with_hashes(line)}</li>" for line in lines)
    return (f'<section id="ledger"><h2>Ledger history</h2>{bad}<ol class="history">{items}</ol></section>'
            + _ledger_repairs_section(report))


def _ledger_repairs_section(report: Mapping) -> str:
    """``ledger DIR --html`` (issue 29, item 3): every repair the custodian accepted - the lines the month as
    given failed, what changed, the loss before and after (a plot each), the persons withheld by pseudonym."""
    repairs = report.get("ledger_repairs") or []
    if not repairs:
        return ""
    parts = []
    for r in repairs:
        if "changes" not in r:
            parts.append(f"<h3>Release {r['n']}</h3><p>{esc(r.get('detail', ''))}</p>")
            continue
        failed = "".join(f"<li><code>{esc(line)}</code></li>" for line in r["answered"])
        withheld = f"<p>Withheld (pseudonyms): {esc(r['withheld'])}</p>" if r.get("withheld") else ""
        parts.append(f"<h3>Release {r['n']} ({esc(r['created'])}): {esc(', '.join(r['changes']))}</h3>"
                     f"<p>The month as given failed:</p><ul>{failed}</ul>"
                     f"<p>{r['records']:,} records in the month; {r['gates']} candidate(s) gated in "
                     f"{r['seconds']:.1f} s; the release written: LM {r['LM']:.4f} (as given "
                     f"{r['LM_as_given']:.4f}), loss with the withheld at 1: {r['loss']:.4f}.</p>{withheld}"
                     + _loss_bars(r["LM_as_given"], r["LM"], r["loss"]))
    return (f'<section id="ledger-repairs"><h2>Repairs accepted ({len(repairs)})</h2>{"".join(parts)}'
            "</section>")


#: report keys whose values are attribute values (quasi-identifiers, sensitive values), never persons: left as
#: they are by :func:`pseudonymize` even where one equals an identifier (numeric identifiers and ages)
_VALUE_KEYS = frozenset({"qi", "qid", "sensitive", "value", "values", "world_value", "feasible", "risk",
                         "sug_candidates", "joint_candidates"})
#: keys holding a person as a string and attribute values as a mapping (update_graph's ``candidates`` are values
#: by weight, intersection's a list of uids; correspondence's ``target`` a QI tuple, update_graph's a record)
_MAPPING_VALUE_KEYS = frozenset({"candidates", "target"})
#: a word of free text (notes, reasons), as :func:`pseudonymize` looks for identifiers in it
_WORD = re.compile(r"[^\s,;:()\[\]{}'\"=<>]+")


def pseudonymize(report: Any, names: Mapping[str, str]) -> Any:
    """A copy of ``report`` in which every person is named by ``names[identifier]`` (the ledger's keyed
    pseudonyms, :func:`multirelease.ledger.pseudonyms.ledger_pseudonyms`; issue 25, item 6: a board page held the
    snapshot's identifiers): a string or a mapping key equal to an identifier, and a non-numeric word of free
    text equal to one.  Attribute values (:data:`_VALUE_KEYS`) are left alone.  Matching is exact, so nothing
    that is an identifier stays on the page whatever attack or key reported it; the price is that a value
    outside those keys that happens to equal an identifier is renamed too."""
    if not names:
        return report

    def word(m: "re.Match") -> str:
        w = m.group(0)
        return w if w.isdigit() else names.get(w, w)

    def walk(x: Any, values: bool) -> Any:
        kind = type(x)
        if kind is str or isinstance(x, str):
            if values:
                return x
            if x in names:
                return names[x]
            return _WORD.sub(word, x) if " " in x else x
        if isinstance(x, Mapping):
            return {(k if values or not isinstance(k, str) else names.get(k, k)):
                    walk(v, values or k in _VALUE_KEYS or (k in _MAPPING_VALUE_KEYS and isinstance(v, Mapping)))
                    for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [walk(v, values) for v in x]
        return x

    return walk(report, False)


_PSEUDONYM_NOTE = ('<p class="note pseudonyms" id="pseudonyms">Persons are named by the ledger\'s keyed pseudonyms '
                   '(<code>P-</code> and 10 hex digits: an HMAC-SHA-256 of the snapshot\'s identifier under the '
                   'ledger\'s secret), never by their identifiers: the same person has the same pseudonym on '
                   'every page of this ledger, and only the custodian, who holds the ledger, can find the person '
                   'behind one. <code>--raw-ids</code> shows the identifiers instead.</p>')


def scoped_css(css: str, scope: str) -> str:
    """``css`` with every rule confined to the elements under ``scope`` (``body`` becomes ``scope`` itself): the
    style of a page fragment that restyles nothing around it (issue 25, item 6: a notebook's ``_repr_html_``)."""
    out = []
    for selectors, block in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        scoped = []
        for sel in (x.strip() for x in selectors.split(",")):
            if sel in ("body", "html", ":root"):
                scoped.append(scope)
            else:
                scoped.append(f"{scope} {sel}")
        out.append(f"{','.join(scoped)}{{{block.strip()}}}")
    return "\n".join(out)



def render_html(report: Mapping, *, names: Mapping[str, str] | None = None, fragment: bool = False) -> str:
    """The whole page (a ``str``) of one JSON report dict (:func:`multirelease.reports.document.build_report`).

    ``names``: ``{identifier: pseudonym}`` - the page names persons by these (:func:`pseudonymize`) and says so
    (a ledger's board page, issue 25 item 6); ``None``: as the report names them.  ``fragment``: one ``<div
    class="multirelease-report">`` with its style scoped to it, no document around it (a notebook's
    ``_repr_html_``: the page's global style restyled the notebook)."""
    from importlib.metadata import PackageNotFoundError, version

    if names is not None:
        report = pseudonymize(report, names)

    try:
        ver = version("multirelease")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree that was never installed
        ver = "unknown"
    name = report.get("scenario", "report")
    integrity = report.get("integrity")
    body = [_integrity_section(report)] if integrity else []  # a file not as recorded: FAIL, before anything
    body.append(f"<header><h1>{esc(name)}</h1>")
    if report.get("description"):
        body.append(f'<p class="desc">{esc(report["description"])}</p>')
    if names is not None:
        body.append(_PSEUDONYM_NOTE)
    body.append("</header>")
    body.append(_repair_section(report))  # first: the verdict below is the proposal's, not the month's
    if not integrity:
        body.append(_verdict_section(report))
    elif report.get("certified_verdict"):
        body.append(_recertified_section(report))
    body.append(_requirements_section(report))
    for i, (attack, res) in enumerate(report.get("attacks", {}).items()):
        body.append(_attack_section(report, attack, res, i))
    body.append(_releases_section(report))
    body.append(_headroom_section(report))
    body.append(_ledger_section(report))
    body.append(f"<footer>multirelease {esc(ver)}. Every figure on this page comes from the JSON report of the "
                "same run (<code>--json</code>); the page loads nothing from the network.</footer>")
    if fragment:
        return (f'<div class="{FRAGMENT_CLASS}"><style>{scoped_css(_CSS, "." + FRAGMENT_CLASS)}</style>'
                f"{''.join(body)}</div>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>multirelease: {esc(name)} - {VERDICT_TITLES.get(report.get('verdict'), '')}</title>"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")


def write_html(report: Mapping, path: Path | str, *, names: Mapping[str, str] | None = None) -> Path:
    """Render the page (``names``: as :func:`render_html`'s) and write it to ``path`` through a temporary name,
    renamed only on success."""
    p = Path(path)
    text = render_html(report, names=names)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
