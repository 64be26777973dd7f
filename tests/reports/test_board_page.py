"""Issue 25, item 6: "A board page a review board can read" - the page ``ledger DIR --html`` (and ``certify
--ledger ... --html``) writes for a privacy board.

* no raw identifier: the snapshots' identifiers never appear on the page; persons are named by the ledger's
  keyed pseudonyms (HMAC-SHA-256 under the ledger's secret), the identifiers only with ``--raw-ids``;
* whole hashes (wrapped, never cut), labelled witness cells (each quasi-identifier under its attribute's name),
  SVGs sized to their labels, one count of an attack's targets, a one-line meaning beside every metric;
* laid out in headless Chromium at 900 and 1,400 px: no element reaches past the viewport, no cell or
  code cuts its content, no SVG label lies outside its figure (skipped only where Chromium is absent);
* ``Result._repr_html_`` is a fragment whose style is scoped to it (no ``<html>``, ``<body>`` or global rule).
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from multirelease.cli import main
from multirelease.reports.html_page import (FRAGMENT_CLASS, metric_meaning, pseudonymize, render_html,
                                            scoped_css)
from multirelease.reports.html_witness import draw_witness, release_series, text_width

from ledger_data import three_months

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (Debian package chromium) absent")
WIDTHS = (900, 1400)


def cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def months(tmp_path_factory):
    """Three months of m-invariance through the ledger (the clinic-like table of tests/ledger_data.py) and
    every identifier of its snapshots."""
    folder = tmp_path_factory.mktemp("board")
    spec, snaps, ledger, rel, codes = three_months(folder)
    assert codes == [0, 0, 0]
    ids = set()
    for s in snaps:
        ids |= set(pd.read_csv(s, dtype=str, usecols=[0]).iloc[:, 0])
    return spec, ledger, rel, ids


@pytest.fixture(scope="module")
def pages(months, tmp_path_factory):
    """``ledger DIR --html`` by default and with ``--raw-ids`` (and the JSON report of the same run)."""
    _, ledger, _, _ = months
    folder = tmp_path_factory.mktemp("pages")
    board, raw, report = folder / "board.html", folder / "raw.html", folder / "report.json"
    assert main(["ledger", str(ledger), "--html", str(board), "--json", str(report), "-q"]) == 0
    assert main(["ledger", str(ledger), "--html", str(raw), "--raw-ids", "-q"]) == 0
    return board, raw, json.loads(report.read_text(encoding="utf-8"))


def ids_in(text: str, ids: set[str]) -> set[str]:
    return {i for i in ids if i in text}


# ---------------------------------------------------------------------- no raw identifier
def test_board_page_names_no_snapshot_identifier(months, pages):
    _, ledger, _, ids = months
    board, raw, report = pages
    from multirelease.ledger.pseudonyms import ledger_pseudonyms

    names = ledger_pseudonyms(ledger)
    assert set(names) == ids  # every identifier of every month has its pseudonym
    worst = report["attacks"]["update_graph"]["worst"]["max_risk"]["target"]
    assert worst in ids  # the report (private, for the custodian) names the record; the page must not
    text = board.read_text(encoding="utf-8")
    assert ids_in(text, ids) == set()
    assert f"record {names[worst]} after release" in text and 'id="pseudonyms"' in text
    raw_text = raw.read_text(encoding="utf-8")
    assert worst in raw_text and f"record {worst} after release" in raw_text
    assert 'id="pseudonyms"' not in raw_text and names[worst] not in raw_text


def test_pseudonyms_are_keyed_stable_and_found_back(months):
    _, ledger, _, ids = months
    from multirelease.ledger.pseudonyms import find_person, ledger_pseudonyms, pseudonym

    names = ledger_pseudonyms(ledger)
    one = sorted(ids)[0]
    assert re.fullmatch(r"P-[0-9a-f]{10}", names[one])
    assert names == ledger_pseudonyms(ledger)  # the same on every page of the ledger
    assert pseudonym(b"another ledger's secret", one) != names[one]  # keyed: another secret, another name
    assert len(set(names.values())) == len(names)
    assert find_person(ledger, names[one]) == [one]


def test_changed_file_page_and_certify_ledger_page_name_no_identifier(months, capsys, tmp_path):
    """The integrity FAIL page (``_finish_integrity``) and ``certify --ledger --html`` are board pages too."""
    spec, ledger, rel, ids = months
    files = [rel / f"release_{i}.csv" for i in (1, 2, 3)]
    page = tmp_path / "certify.html"
    code, _, err = cli(capsys, "certify", spec, *files, "--ledger", ledger, "--html", page, "-q")
    assert code == 0, err
    assert ids_in(page.read_text(encoding="utf-8"), ids) == set()
    code, _, err = cli(capsys, "certify", spec, *files, "--ledger", ledger, "--html", page, "--raw-ids", "-q")
    assert code == 0, err
    assert ids_in(page.read_text(encoding="utf-8"), ids)
    # a copy of the ledger's release folder with one file touched: FAIL, first on the page, still no identifier
    moved = tmp_path / "copy"
    shutil.copytree(rel, moved)
    (moved / "release_2.csv").write_bytes((moved / "release_2.csv").read_bytes() + b"\n")
    fail = tmp_path / "fail.html"
    code, _, err = cli(capsys, "certify", spec, *[moved / f.name for f in files], "--ledger", ledger, "--html", fail,
                       "-q")
    assert code == 1, err
    text = fail.read_text(encoding="utf-8")
    assert 'id="integrity"' in text and ids_in(text, ids) == set()


def test_raw_ids_without_a_page_is_bad_input_before_anything_runs(months, capsys, tmp_path):
    spec, ledger, rel, _ = months
    code, out, err = cli(capsys, "ledger", ledger, "--raw-ids")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--raw-ids" in err and "--html" in err
    code, out, err = cli(capsys, "certify", spec, rel / "release_1.csv", "--ledger", ledger, "--raw-ids")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--html" in err


def test_pseudonymize_renames_persons_not_attribute_values():
    names = {"39": "P-aaaaaaaaaa", "p00794": "P-bbbbbbbbbb"}
    report = {"attacks": {"update_graph": {"worst": {"max_risk": {"target": "p00794", "versions": [
                  {"group": 3, "candidates": {"39": 0.5}, "feasible": ["39"], "risk": {"39": 1.0}}]}}},
              "linking": {"worst": {"k": {"qi": {"age": "39"}, "sensitive": {"39": 2}}}},
              "possible_worlds": {"worst": {"max_breach": {"individual": "39", "world": [
                  {"assignment": {"39": {"value": "39", "row": 1}, "p00794": {"value": "flu", "row": 2}}}]}}},
              "correspondence": {"worst": {"FA": {"target": {"age": "39"}}}},
              "intersection": {"worst": {"violations": {"candidates": ["p00794", "u1"]}}}},
              "notes": ["record p00794 stays, 39 records left"]}
    out = pseudonymize(report, names)
    ug = out["attacks"]["update_graph"]["worst"]["max_risk"]
    assert ug["target"] == "P-bbbbbbbbbb" and ug["versions"][0]["candidates"] == {"39": 0.5}
    assert ug["versions"][0]["feasible"] == ["39"] and ug["versions"][0]["risk"] == {"39": 1.0}
    assert out["attacks"]["linking"]["worst"]["k"] == {"qi": {"age": "39"}, "sensitive": {"39": 2}}
    pw = out["attacks"]["possible_worlds"]["worst"]["max_breach"]
    assert pw["individual"] == "P-aaaaaaaaaa"
    assert pw["world"][0]["assignment"] == {"P-aaaaaaaaaa": {"value": "39", "row": 1},
                                            "P-bbbbbbbbbb": {"value": "flu", "row": 2}}
    assert out["attacks"]["correspondence"]["worst"]["FA"]["target"] == {"age": "39"}
    assert out["attacks"]["intersection"]["worst"]["violations"]["candidates"] == ["P-bbbbbbbbbb", "u1"]
    assert out["notes"] == ["record P-bbbbbbbbbb stays, 39 records left"]  # a count is never taken for a name
    assert report["attacks"]["update_graph"]["worst"]["max_risk"]["target"] == "p00794"  # a copy


# ---------------------------------------------------------------------- hashes, labels, counts, metrics
def test_whole_hashes_copyable_in_the_history(months, pages):
    board, _, report = pages
    text = board.read_text(encoding="utf-8")
    history = text.split('id="ledger"', 1)[1]
    hashes = re.findall(r"sha256 ([0-9a-f]{64})", " ".join(re.sub(r"<[^>]+>", "", history).split()))
    assert len(hashes) == 3
    for h in hashes:
        assert f'<code class="hash">{h}</code>' in history
    assert "<pre" not in history  # a <pre> that scrolls cut them


def test_every_metric_has_its_meaning_beside_it(pages):
    board, _, report = pages
    text = board.read_text(encoding="utf-8")
    releases = text.split('id="releases"', 1)[1].split("</section>", 1)[0]
    rows = re.findall(r"<tr><th>(.*?)</th>", releases)[1:]  # the head row (metric, release 1, ...) first
    assert len(rows) == 2 + len({m for r in report["releases"] for m in r["metrics"]})
    for cell in rows:
        assert 'class="what">' in cell and not cell.endswith('class="what"></span>'), cell
    for metric in ("LM", "EM", "AIL", "FEM", "VEM"):
        assert metric_meaning(None, metric) and html.escape(metric_meaning(None, metric)) in releases
    for name, res in report["attacks"].items():
        for metric in res["summary"]:
            assert metric_meaning(name, metric), (name, metric)
    summaries = re.findall(r"<th>what it measures</th></tr>(.*?)</table>", text)
    assert len(summaries) == len(report["attacks"])
    for table in summaries:
        assert "<td></td></tr>" not in table
    assert metric_meaning("correspondence", "C_1")  # a described pattern ({F,C,B}_<n>)


def test_linking_witness_labels_each_quasi_identifier(pages):
    board, _, report = pages
    text = board.read_text(encoding="utf-8")
    witness = text.split('id="attack-linking"', 1)[1].split("</section>", 1)[0].split("<h3>Witness</h3>", 1)[1]
    qi = report["attacks"]["linking"]["worst"]["k"]["qi"]
    for attribute in qi:
        assert f'<th class="qi">{attribute}</th>' in witness


def test_one_count_of_an_attacks_targets():
    """The chart's caption and the table's note give the same number of targets judged, in the same words."""
    row = {"qid": {"age": "[20-30[", "country": "Europe"}, "timestamp": 1,
           "F": {"release": 1, "class": 0, "size": 5, "crack": 1, "anonymity": 4}}
    res = {"summary": {"FA": 4, "targets": 24890}, "targets": [dict(row) for _ in range(560)], "worst": {}}
    caption = release_series("correspondence", res, 2, [])[0]["caption"]
    page = render_html({"scenario": "s", "verdict": "none", "releases": [], "expectations": [],
                        "attacks": {"correspondence": res}})
    note = page.split("<h3>Worst targets</h3>", 1)[1].split("</p>", 1)[0]
    assert "of the 24,890 targets judged" in caption and "of the 24,890 targets judged" in note
    assert "keeps the 560 worst" in caption and "keeps the 560 worst" in note
    assert "age=[20-30[, country=Europe" in page  # the target's cells, labelled


def test_update_graph_svg_is_as_wide_as_its_labels():
    """A one-version update graph was 210 px wide and cut ``Machine-op-inspct w=0.25 risk 0.333``."""
    w = {"target": "P-0", "after_release": 1, "versions": [
        {"release": 1, "group": [281, 63, 656], "candidates": {"Machine-op-inspct": 0.25, "Protective-serv": 0.75},
         "feasible": ["Machine-op-inspct", "Protective-serv"], "risk": {"Machine-op-inspct": 0.333,
                                                                       "Protective-serv": 0.667}}]}
    svg = draw_witness("update_graph", {"worst": {"max_risk": w}})
    width = float(re.search(r'<svg viewBox="0 0 ([\d.]+) ', svg).group(1))
    assert f'width="{width:g}"' in svg
    for label in re.findall(r"<text [^>]*>([^<]*)</text>", svg):
        assert text_width(label, 10) + 20 <= width, label


# ---------------------------------------------------------------------- _repr_html_
def test_repr_html_is_a_fragment_with_scoped_styles(pages):
    from multirelease.api import Result

    _, _, report = pages
    fragment = Result("verify", report["verdict"], 0, json.dumps(report))._repr_html_()
    assert fragment.startswith(f'<div class="{FRAGMENT_CLASS}"><style>') and fragment.endswith("</div>")
    for tag in ("html", "body", "head", "!doctype", "title", "meta"):
        assert not re.search(rf"<{tag}[\s>]", fragment, re.I), tag
    css = fragment.split("<style>", 1)[1].split("</style>", 1)[0]
    selectors = [s.strip() for group in re.findall(r"([^{}]+)\{[^{}]*\}", css) for s in group.split(",")]
    assert selectors and all(s == f".{FRAGMENT_CLASS}" or s.startswith(f".{FRAGMENT_CLASS} ") for s in selectors)
    assert fragment.count("<style>") == 1
    assert scoped_css("body{margin:0}h1,h2{color:red}", ".x") == ".x{margin:0}\n.x h1,.x h2{color:red}"


# ---------------------------------------------------------------------- Chromium at 900 and 1,400 px
_MEASURE = """
(function () {
  var vw = document.documentElement.clientWidth, out = {width: vw, page: document.documentElement.scrollWidth,
      overflow: [], cut: [], clipped: []};
  function name(el) { return el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' +
      (el.textContent || '').replace(/\\s+/g, ' ').slice(0, 50); }
  document.querySelectorAll('body *').forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.width && r.right > vw + 1) out.overflow.push(name(el) + ' right ' + Math.round(r.right));
    if (['code', 'td', 'th', 'pre', 'li', 'p', 'div', 'table', 'h4'].indexOf(el.tagName.toLowerCase()) >= 0 &&
        el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
      out.cut.push(name(el) + ' ' + el.scrollWidth + ' > ' + el.clientWidth);
  });
  document.querySelectorAll('svg').forEach(function (svg) {
    var s = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();  /* on the screen: rotated labels (a chart's y label) as drawn */
      if (b.left < s.left - 1 || b.top < s.top - 1 || b.right > s.right + 1 || b.bottom > s.bottom + 1)
        out.clipped.push((svg.getAttribute('aria-label') || 'chart') + ': ' + t.textContent + ' [' +
          [b.left - s.left, b.right - s.right, b.top - s.top, b.bottom - s.bottom].map(Math.round) + ']');
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'measure-out';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def measure(page: Path, width: int, folder: Path) -> dict:
    """The page laid out by headless Chromium at ``width`` px: ``overflow`` (elements reaching past the
    viewport), ``cut`` (cells, code, lines whose content is wider than their box: a scroll bar or a cut),
    ``clipped`` (SVG labels outside their figure's viewBox), and ``page`` (the document's width)."""
    probe = folder / f"{page.stem}_{width}.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{_MEASURE}</script></body>"),
                     encoding="utf-8")
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={width},1000", "--dump-dom", probe.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="measure-out">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.slow  # a headless browser: .ci/run runs it, the README's quick run does not
@needs_chromium
@pytest.mark.parametrize("width", WIDTHS)
def test_board_pages_fit_900_and_1400_px(months, pages, tmp_path, width, capsys):
    """The PASS page and the integrity FAIL page (its table of both hashes): nothing wider than the viewport,
    nothing cut, no SVG label outside its figure."""
    spec, ledger, rel, ids = months
    board, _, _ = pages
    moved = tmp_path / "copy"
    shutil.copytree(rel, moved)
    (moved / "release_3.csv").write_bytes((moved / "release_3.csv").read_bytes() + b"\n")
    fail = tmp_path / "fail.html"
    files = [moved / f"release_{i}.csv" for i in (1, 2, 3)]
    code, _, err = cli(capsys, "certify", spec, *files, "--ledger", ledger, "--html", fail, "-q")
    assert code == 1, err
    for page in (board, fail):
        m = measure(page, width, tmp_path)
        assert m["width"] <= width and m["page"] <= m["width"], m
        assert m["overflow"] == [] and m["cut"] == [] and m["clipped"] == [], m
