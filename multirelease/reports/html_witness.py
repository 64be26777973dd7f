"""What the HTML report (:mod:`multirelease.reports.html_page`) draws from one attack's JSON: its headline metric
per release, and its witness drawn as the attack's paper draws it.

* correspondence (Fung et al., EDBT 2008, section 3.1, Figure 2): a *generator* - the groups of every release
  as boxes, each buddy pair (or buddy chain, section 7.1) as a line with the number of records following it,
  the lines instantiated at the target's point in red; and the cracked class, group by group (Theorems
  4.2-4.4: crack size of each group, what is left is the anonymity);
* update_graph (Li & Zhou, Definitions 10-11, Figure 2): the target's sensitive-attribute update graph, one
  layer per version, its candidate values with their weights, the values pruned from the feasible sub-SUG
  struck through and the survivors' risks (eq. 2);
* possible_worlds (Wong et al., Definition 1 / Shmueli & Tassa, Definition 3.1): one possible world - every
  release's assignment of sensitive values to individuals - in which the target has the value;
* intersection (Barbosa et al., section 4): the releases that isolate the target - the groups it is
  published in (intersected), those it is absent from (subtracted) - and the candidates left;
* linking: the smallest (least diverse) class of one release.

Per-release series are read from the report's per-release or per-target rows (``targets``); an attack that
reports its metric over the whole sequence only is shown at the last release, an interval as an interval.
"""
from __future__ import annotations

import html
import json
import math
from typing import Any, Mapping

__all__ = ["release_series", "draw_witness", "targets_counted", "qi_items", "text_width"]

_DEFAULT = {"correspondence": ("FA", "CA", "BA"), "linking": ("k",), "update_graph": ("max_risk",),
            "intersection": ("violations",), "possible_worlds": ("max_breach",)}
_LABELS = {"k": "smallest class (k)", "l_distinct": "fewest distinct sensitive values (l)",
           "l_entropy": "entropy l", "alpha": "largest share of one value (alpha)",
           "prosecutor_max": "re-identification risk (1/k)", "prosecutor_avg": "mean re-identification risk",
           "max_risk": "largest disclosure risk", "vulnerable_values": "versions pinned to one value",
           "vulnerable_records": "records with a pinned version"}


def esc(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _whole(res: Mapping, metric: str) -> tuple[float, float] | None:
    """The whole-sequence value of a metric as ``(low, high)`` (a point when proven; open sides clipped)."""
    if metric in res.get("summary", {}) and _num(res["summary"][metric]) is not None:
        v = float(res["summary"][metric])
        return v, v
    b = res.get("bounds", {}).get(metric)
    if b and (b.get("lower") is not None or b.get("upper") is not None):
        lo, hi = b.get("lower"), b.get("upper")
        return float(lo if lo is not None else hi), float(hi if hi is not None else lo)
    return None


def targets_counted(res: Mapping) -> tuple[int, int]:
    """``(kept, judged)``: the target rows an attack's report keeps (its worst ones) and the targets it judged
    (its summary's ``targets`` when reported, else the rows kept).  The one count the page gives of an attack's
    targets, in the chart's caption and above the table alike (issue 25, item 6: "worst 560 of 24,890 target
    rows" stood beside a table of "worst targets of 6957")."""
    kept = len(res.get("targets", []))
    n_all = res.get("summary", {}).get("targets")
    judged = int(n_all) if isinstance(n_all, (int, float)) and not isinstance(n_all, bool) and n_all >= kept \
        else kept
    return kept, judged


def _correspondence(res: Mapping, metrics: list[str]) -> list[dict]:
    series = []
    for fam, metric in (("F", "FA"), ("C", "CA"), ("B", "BA")):
        if metric not in metrics:
            continue
        per: dict[int, list[float]] = {}
        for row in res.get("targets", []):
            cell = row.get(fam) if isinstance(row, Mapping) else None
            if not isinstance(cell, Mapping) or "release" not in cell:
                continue
            lo, hi = cell.get("anonymity_bounds") or [cell.get("anonymity"), cell.get("anonymity")]
            if lo is None or hi is None:
                continue
            cur = per.setdefault(int(cell["release"]), [math.inf, math.inf])
            cur[0], cur[1] = min(cur[0], lo), min(cur[1], hi)
        if per:
            series.append({"label": f"{metric} ({fam}-attack)", "metric": metric,
                           "points": [(r, v[0], v[1]) for r, v in sorted(per.items())]})
    if not series:
        return []
    caption = ("For each release, the smallest number of records a target is still hidden among after the attack "
               "rules out the records that cannot be the target's (Definitions 3.2, 3.4, 3.6; higher is safer). "
               "A shaded bar is a proven interval.")
    kept, judged = targets_counted(res)
    if judged > kept:
        caption += (f" The report keeps the {kept:,} worst of the {judged:,} targets judged: a release without a "
                    "point has none of them, and its figure is at least the largest one drawn.")
    return [{"title": "correspondence: anonymity left after cracking, per release cracked",
             "ylabel": "smallest class left", "metrics": metrics, "series": series, "caption": caption}]


def _per_release_rows(name: str, res: Mapping, metrics: list[str]) -> list[dict]:
    rows = [r for r in res.get("targets", []) if isinstance(r, Mapping) and "release" in r]
    charts = []
    for metric in metrics:
        pts = []
        for r in rows:
            b = r.get(f"{metric}_bounds")
            if b:
                pts.append((int(r["release"]), float(b[0]), float(b[1])))
            elif _num(r.get(metric)) is not None:
                pts.append((int(r["release"]), float(r[metric]), float(r[metric])))
        if pts:
            after = " after each release (over every release so far)" if name == "update_graph" else \
                " of each release alone"
            charts.append({"title": f"{name}: {metric} per release", "ylabel": _LABELS.get(metric, metric),
                           "metrics": [metric], "series": [{"label": metric, "metric": metric, "points": pts}],
                           "caption": f"{_LABELS.get(metric, metric)}{after}."})
    return charts


def _intersection(res: Mapping, n: int, metrics: list[str]) -> list[dict]:
    rows = [r for r in res.get("targets", []) if isinstance(r, Mapping) and "judged" in r]
    metric = next((m for m in metrics if m.endswith("violations")), "violations")
    kind = {"intersection_violations": "intersection", "difference_violations": "difference"}.get(metric)
    counted = [r for r in rows if kind is None or r.get("attack") == kind]
    pts = []
    for i in range(1, n + 1):
        v = float(sum(1 for r in counted if int(r["judged"]) <= i))
        pts.append((i, v, v))
    whole = _whole(res, metric)
    if whole and (whole[0] != whole[1] or whole[0] != pts[-1][1]):
        # an interval, or rows the report does not list: only the whole sequence's figure is known
        pts = [(n, whole[0], whole[1])]
    return [{"title": f"intersection: targets isolated, releases 1..i ({metric})", "ylabel": "targets below the "
             "principle", "metrics": [metric], "series": [{"label": metric, "metric": metric, "points": pts}],
             "caption": "How many targets the adversary has isolated (too few candidates or too few sensitive "
                        "values left) using the releases up to each one: the risk grows as releases accumulate."}]


def _possible_worlds(res: Mapping, n: int, metrics: list[str]) -> list[dict]:
    metric = next((m for m in metrics if m in ("max_breach", "max_linkage", "max_localized")), "max_breach")
    w = res.get("worst", {}).get("max_breach") or res.get("worst", {}).get(metric) or {}
    series = []
    loc = w.get("localized") if isinstance(w, Mapping) else None
    if loc:
        series.append({"label": f"{w.get('individual')} has {w.get('value')}: from release i alone",
                       "metric": "max_localized", "kind": "bar",
                       "points": [(int(k), float(v), float(v))
                                  for k, v in sorted(loc.items(), key=lambda x: int(x[0]))]})
    whole = _whole(res, metric)
    if whole:
        series.append({"label": f"{metric} over the whole sequence", "metric": metric,
                       "points": [(n, whole[0], whole[1])]})
    if not series:
        return []
    return [{"title": f"possible_worlds: breach probability ({metric})", "ylabel": "share of possible worlds",
             "metrics": [metric, "max_localized"], "series": series,
             "caption": "Bars: the share of possible worlds in which the worst-placed individual has the value, "
                        "reading each release alone (Wong et al.'s localized breach). Dot: the same individual "
                        "and value over all releases together (the global breach): the releases combined "
                        "reveal more than any one of them."}]


def release_series(name: str, res: Mapping, n: int, required: list[str]) -> list[dict]:
    """Charts of one attack's headline metric per release: ``[{"title", "ylabel", "metrics", "series":
    [{"label", "metric", "points": [(release, low, high)]}], "caption"}]``; the metrics named by requirements
    first, else the attack's default headline; at least one chart whenever the attack reports a number."""
    metrics = [m for m in required if m] or list(_DEFAULT.get(name, ()))
    if name == "correspondence":
        charts = _correspondence(res, [m for m in metrics if m in ("FA", "CA", "BA")] or ["FA", "CA", "BA"])
    elif name == "intersection":
        charts = _intersection(res, n, metrics)
    elif name == "possible_worlds":
        charts = _possible_worlds(res, n, metrics)
    else:
        rows = [r for r in res.get("targets", []) if isinstance(r, Mapping) and "release" in r]
        have = [m for m in dict.fromkeys(metrics) if any(m in r or f"{m}_bounds" in r for r in rows)]
        charts = _per_release_rows(name, res, have or list(_DEFAULT.get(name, ())))
    if charts:
        return charts
    # fallback: the whole-sequence figures at the last release
    series = []
    for m in (metrics or list(res.get("summary", {}))[:1]):
        whole = _whole(res, m)
        if whole:
            series.append({"label": f"{m} over the whole sequence", "metric": m, "points": [(n, *whole)]})
    if not series:
        return []
    return [{"title": f"{name}: whole-sequence figures", "ylabel": "value", "metrics": metrics, "series": series,
             "caption": "This attack reports its figures over the whole sequence only."}]


# ---------------------------------------------------------------------- witnesses
def _text(x: float, y: float, s: str, *, size: int = 12, anchor: str = "start", weight: str = "normal",
          fill: str = "#1d2330") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="{fill}">{esc(s)}</text>')


def text_width(s: str, size: float, bold: bool = False) -> float:
    """The width a label takes in an SVG, in px, over-estimated (issue 25, item 6: the figures are sized to
    their labels, never the labels cut by the figure): ``len * size * 0.6`` (0.66 bold), wider than the mean
    advance of the page's sans-serif fonts (DejaVu Sans, the widest of them, averages about 0.58 em on these
    labels)."""
    return len(str(s)) * size * (0.66 if bold else 0.6)


def _svg_open(width: float, height: float, label: str) -> str:
    """An ``<svg>`` of ``width`` x ``height`` px whose viewBox is the same box: the drawing is laid out to
    hold its labels, and the page scales it down (``max-width: 100%``) on a narrow screen."""
    w, h = math.ceil(width), math.ceil(height)
    return f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{esc(label)}">'


def qi_items(qi: Mapping | None) -> list[str]:
    """``["age=[30,40[", "country=Europe"]``: a witness's quasi-identifier values, each with its attribute's
    name (issue 25, item 6: a bare ``[30,40[, Europe`` names no column)."""
    return [f"{k}={v}" for k, v in (qi or {}).items()]


def _qi_text(qi: Mapping | None, limit: int | None = None) -> str:
    s = ", ".join(qi_items(qi))
    return s if limit is None or len(s) <= limit else s[:limit - 3] + "..."


def _qi_lines(qi: Mapping | None, width: int = 44) -> list[str]:
    """The labelled values of :func:`qi_items` in lines of about ``width`` characters (an item is never
    split): what a box of the generator shows, whole."""
    lines: list[str] = []
    for item in qi_items(qi):
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    return lines or [""]


def _group_text(group: Any) -> str:
    """A group as the page names it: ``17``, or ``281, 63, 656`` for a version spread over several groups."""
    return ", ".join(map(str, group)) if isinstance(group, (list, tuple)) else str(group)


def _class_bars(w: Mapping, max_groups: int = 40) -> str:
    """The cracked class group by group: cracked records red, the records left green (Theorems 4.2-4.4); the
    figure as wide as its longest value and count need (issue 25, item 6)."""
    groups = w.get("groups") or []
    if not groups:
        return ""
    shown = groups[:max_groups]
    total = max(1, max(int(g.get("size", 0)) for g in groups))
    bar, row = 460, 22
    title = (f"release {w.get('release')}, class {w.get('class')}: {w.get('size')} records, "
             f"{w.get('crack')} cracked, anonymity {w.get('anonymity')}")
    x0 = max(text_width(str(g.get("sensitive")), 11) for g in shown) + 14
    out, right = [], text_width(title, 12, True)
    for i, g in enumerate(shown):
        y = 24 + i * row
        size, crack = int(g.get("size", 0)), int(g.get("crack", 0) or 0)
        ws, wc = bar * size / total, bar * crack / total
        count = f"{crack} of {size} cracked"
        out.append(_text(x0 - 10, y + 14, str(g.get("sensitive")), anchor="end", size=11))
        out.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{ws:.1f}" height="15" fill="#7fc79a"/>')
        if wc:
            out.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{wc:.1f}" height="15" fill="#e07a6e"/>')
        out.append(_text(x0 + ws + 6, y + 14, count, size=11))
        right = max(right, x0 + ws + 6 + text_width(count, 11))
    h = 30 + row * len(shown)
    more = (f'<p class="note">{len(shown)} of {len(groups)} groups of the class drawn.</p>'
            if len(groups) > len(shown) else "")
    return (_svg_open(right + 10, h, "crack per group") + _text(0, 14, title, weight="bold") + "".join(out)
            + "</svg>" + more)


def _generator_svg(w: Mapping, max_nodes: int = 36) -> str:
    """Fung et al.'s generator: the groups of each release as boxes, buddy pairs / chains as lines; each box
    as wide as its labelled quasi-identifiers need (issue 25, item 6)."""
    gen = w.get("generator")
    if not isinstance(gen, Mapping) or not gen.get("nodes"):
        return ""
    nodes = {int(r): list(v) for r, v in gen["nodes"].items()}
    links = []  # (release a, node a, release b, node b, count, at_target)
    for b in gen.get("buddies", []):
        if "r1" in b:
            chain = [(1, int(b["r1"])), (2, int(b["r2"]))]
        else:
            chain = sorted((int(r), int(i)) for r, i in b.get("chain", {}).items())
        for (ra, ia), (rb, ib) in zip(chain, chain[1:]):
            links.append((ra, ia, rb, ib, int(b.get("count", 1)), bool(b.get("at_target"))))
    keep = {(r, n["id"]) for r, ns in nodes.items() for n in ns}
    note = ""
    if len(keep) > max_nodes:  # the cracked class, and the groups its buddies reach
        rel, cls = w.get("release"), w.get("class")
        core = {(r, n["id"]) for r, ns in nodes.items() for n in ns if r == rel and n.get("class") == cls}
        reach = set(core)
        for ra, ia, rb, ib, *_ in links:
            if (ra, ia) in core or (rb, ib) in core:
                reach |= {(ra, ia), (rb, ib)}
        keep = set(sorted(reach)[:max_nodes])
        note = f"{len(keep)} of {sum(len(v) for v in nodes.values())} groups shown: the cracked class and its buddies"
    new = {(int(s["release"]), int(s["node"])): int(s.get("count", 0)) for s in gen.get("start") or []}
    kept = [(r, n) for r, ns in nodes.items() for n in ns if (r, n["id"]) in keep]
    heads, qis, box_w = {}, {}, 230.0
    for r, n in kept:
        head = f"class {n.get('class')} - {n.get('sensitive')} x{n.get('count')}"
        qis[(r, n["id"])] = _qi_lines(n.get("qi"))
        heads[(r, n["id"])] = head
        extra = text_width(f"{new[(r, n['id'])]} new", 10) + 12 if new.get((r, n["id"])) else 0
        box_w = max(box_w, text_width(head, 11, True) + extra + 12,
                    *(text_width(line, 10) + 12 for line in qis[(r, n["id"])]))
    n_lines = max((len(v) for v in qis.values()), default=1)
    box_h = 26 + 13 * n_lines
    gap_x, gap_y = box_w + 100, box_h + 12
    pos = {}
    cols = sorted(nodes)
    height = 0
    for c, r in enumerate(cols):
        shown = [n for n in nodes[r] if (r, n["id"]) in keep]
        for i, n in enumerate(sorted(shown, key=lambda n: (n.get("class", 0), n["id"]))):
            pos[(r, n["id"])] = (10 + c * gap_x, 40 + i * gap_y, n)
            height = max(height, 40 + i * gap_y + box_h)
    width = 10 + (len(cols) - 1) * gap_x + box_w + 10
    out = [_svg_open(width, height + 14, "generator")]
    for c, r in enumerate(cols):
        out.append(_text(10 + c * gap_x + box_w / 2, 22, f"release R{r}", anchor="middle", weight="bold"))
    for ra, ia, rb, ib, cnt, hit in links:
        if (ra, ia) not in pos or (rb, ib) not in pos:
            continue
        xa, ya, _ = pos[(ra, ia)]
        xb, yb, _ = pos[(rb, ib)]
        colour = "#c0392b" if hit else "#5b7fb9"
        sw = 1.2 + 1.6 * math.log10(1 + cnt)
        out.append(f'<line x1="{xa + box_w:.1f}" y1="{ya + box_h / 2:.1f}" x2="{xb:.1f}" y2="{yb + box_h / 2:.1f}" '
                   f'stroke="{colour}" stroke-width="{sw:.1f}" opacity=".8"/>')
        out.append(_text((xa + box_w + xb) / 2, (ya + yb + box_h) / 2 - 3, f"{cnt}", size=11, anchor="middle",
                         fill=colour, weight="bold"))
    rel, cls = w.get("release"), w.get("class")
    for (r, i), (x, y, n) in pos.items():
        cracked = r == rel and n.get("class") == cls
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{box_w:.1f}" height="{box_h}" rx="5" fill="'
                   f'{"#fdecec" if cracked else "#f2f4f8"}" stroke="{"#c0392b" if cracked else "#8a93a6"}"/>')
        out.append(_text(x + 6, y + 16, heads[(r, i)], size=11, weight="bold"))
        for j, line in enumerate(qis[(r, i)]):
            out.append(_text(x + 6, y + 32 + 13 * j, line, size=10, fill="#4a5366"))
        if new.get((r, i)):
            out.append(_text(x + box_w - 6, y + 16, f"{new[(r, i)]} new", size=10, anchor="end", fill="#2e8b57"))
    out.append("</svg>")
    start = gen.get("start") or []
    extra = (f"<p class=\"note\">{sum(int(s.get('count', 0)) for s in start)} records of the last release start "
             "their chain there (no buddy in an earlier release).</p>") if start else ""
    return ('<p>A generator realizing the crack: each line is a buddy pair (a record of one release and the '
            'record it becomes in the next), labelled with how many records follow it; red lines are '
            'instantiated at the target\'s values. Boxes with a red border are the cracked class; each box '
            'names its group\'s class, sensitive value and count, then its quasi-identifiers.</p>'
            + "".join(out) + extra + (f'<p class="note">{esc(note)}</p>' if note else ""))


def _correspondence_witness(res: Mapping) -> str:
    parts = []
    for metric in ("FA", "CA", "BA"):
        w = res.get("worst", {}).get(metric)
        if not isinstance(w, Mapping):
            continue
        fam = {"FA": "F", "CA": "C", "BA": "B"}[metric]
        target = _qi_text(w.get("target"))
        parts.append(f"<h4>{metric}: the {fam}-attack on target [{esc(target)}] (arrived at T{esc(w.get('timestamp'))})"
                     f"</h4><p>In release R{esc(w.get('release'))} the target hides in class {esc(w.get('class'))} of "
                     f"{esc(w.get('size'))} records; the adversary rules out {esc(w.get('crack'))} of them, leaving "
                     f"{esc(w.get('anonymity'))}.</p>")
        parts.append(_class_bars(w))
        parts.append(_generator_svg(w))
    return "".join(parts)


def _sug_svg(w: Mapping) -> str:
    """The update graph of one record: a column per version, a pill per candidate value; the pills and the
    columns as wide as their labels need (issue 25, item 6: a fixed 150 px pill cut ``Machine-op-inspct
    w=0.25 risk 0.333`` and a one-version graph was 210 px wide)."""
    versions = w.get("versions") or []
    if not versions:
        return ""
    labels, heads = {}, []
    for c, v in enumerate(versions):
        heads.append(f"release {v.get('release')}, group {_group_text(v.get('group'))}")
        feas, risk = set(v.get("feasible", [])), v.get("risk", {})
        for value, weight in v.get("candidates", {}).items():
            ok, r = value in feas, risk.get(value)
            labels[(c, value)] = f"{value} w={weight:.3g}" + (f" risk {r:.3g}" if ok and r is not None else
                                                               " (pruned)")
    pill_w = max([150.0] + [text_width(s, 10) + 16 for s in labels.values()])
    slot_w = max([pill_w] + [text_width(h, 11, True) + 4 for h in heads])
    gap, row_h = 40, 30
    rows = max(len(v.get("candidates", {})) for v in versions)
    width, height = 20 + slot_w * len(versions) + gap * (len(versions) - 1), 40 + row_h * rows
    out = [_svg_open(width, height, "update graph")]
    pos = {}
    for c, v in enumerate(versions):
        x = 10 + c * (slot_w + gap) + (slot_w - pill_w) / 2
        out.append(_text(x + pill_w / 2, 18, heads[c], anchor="middle", weight="bold", size=11))
        feas = set(v.get("feasible", []))
        for i, value in enumerate(v.get("candidates", {})):
            pos[(c, value)] = (x, 30 + i * row_h, value in feas)
    for c in range(len(versions) - 1):
        for (cc, a), (xa, ya, fa) in pos.items():
            if cc != c or not fa:
                continue
            for (cb, b), (xb, yb, fb) in pos.items():
                if cb == c + 1 and fb:
                    out.append(f'<line x1="{xa + pill_w:.1f}" y1="{ya + 11}" x2="{xb:.1f}" y2="{yb + 11}" '
                               'stroke="#8a93a6" stroke-dasharray="4 3"/>')
    for c, v in enumerate(versions):
        risk = v.get("risk", {})
        for value in v.get("candidates", {}):
            x, y, ok = pos[(c, value)]
            r = risk.get(value)
            hot = ok and r is not None and r >= max(risk.values(), default=0) and r > 0
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{pill_w:.1f}" height="22" rx="11" '
                       f'fill="{"#fdecec" if hot else ("#f2f4f8" if ok else "#ffffff")}" '
                       f'stroke="{"#c0392b" if hot else ("#5b7fb9" if ok else "#c8ccd6")}"/>')
            out.append(_text(x + pill_w / 2, y + 15, labels[(c, value)], size=10, anchor="middle",
                             fill="#1d2330" if ok else "#9aa1b1"))
            if not ok:
                out.append(f'<line x1="{x + 8:.1f}" y1="{y + 11}" x2="{x + pill_w - 8:.1f}" y2="{y + 11}" '
                           'stroke="#9aa1b1"/>')
    out.append("</svg>")
    return "".join(out)


def _update_graph_witness(res: Mapping) -> str:
    worst = res.get("worst", {})
    parts = []
    for key, what in (("max_risk", "the largest disclosure risk"), ("vulnerable_values", "a version pinned to one "
                      "value"), ("target", "the given target")):
        w = worst.get(key)
        if not isinstance(w, Mapping) or not w.get("versions"):
            continue
        parts.append(f"<h4>{esc(key)}: record {esc(w.get('target'))} after release {esc(w.get('after_release'))} "
                     f"({what})</h4><p>Its update graph (one column per version of the record): each node is a "
                     "sensitive value the version's group allows, with its weight w; values on no complete "
                     "path are pruned (struck through); the survivors carry their risk (eq. 2). Dashed lines "
                     "join surviving values of consecutive versions; which of those updates the public model "
                     "allows is in the scenario's transitions.</p>")
        parts.append(_sug_svg(w))
    joint = worst.get("joint")
    if isinstance(joint, Mapping) and joint.get("versions"):
        rows = "".join(f"<tr><td>{esc(v.get('release'))}</td><td>{esc(_group_text(v.get('group')))}</td><td>"
                       f"{esc(', '.join(map(str, v.get('sug_candidates', []))))}</td><td>"
                       f"{esc(', '.join(map(str, v.get('joint_candidates', []))))}</td><td>{esc(v.get('world_value'))}"
                       "</td></tr>" for v in joint["versions"])
        parts.append("<h4>joint: a version the joint attack pins down</h4><table><tr><th>release</th><th>group</th>"
                     f"<th>values after pruning</th><th>values in some world</th><th>value in this world</th></tr>"
                     f"{rows}</table>")
    return "".join(parts)


def _world_tables(w: Mapping, max_rows: int = 30) -> str:
    world = w.get("world") or []
    if not world:
        return ""
    who = w.get("individual")
    parts = [f"<p>A possible world in which <b>{esc(who)}</b> has <b>{esc(w.get('value'))}</b> (breach "
             f"{esc(w.get('fraction', w.get('breach')))}: the share of all possible worlds in which this happens):"
             "</p><div style=\"display:flex;gap:1.5em;flex-wrap:wrap\">"]
    for table in world:
        assignment = table.get("assignment", {})
        items = list(assignment.items())
        if len(items) > max_rows:
            items = [(k, v) for k, v in items if k == who] + [(k, v) for k, v in items if k != who][:max_rows - 1]
        rows = "".join(f"<tr{' class=row-bad' if k == who else ''}><td>{esc(k)}</td><td>{esc(v.get('value'))}</td>"
                       f"<td class=num>{esc(v.get('row'))}</td></tr>" for k, v in items)
        more = (f"<tr><td colspan=3>... {len(assignment) - len(items)} more</td></tr>"
                if len(assignment) > len(items) else "")
        parts.append(f"<table><tr><th colspan=3>release {esc(table.get('release'))}</th></tr><tr><th>individual</th>"
                     f"<th>value</th><th>row</th></tr>{rows}{more}</table>")
    parts.append("</div>")
    return "".join(parts)


def _possible_worlds_witness(res: Mapping) -> str:
    worst = res.get("worst", {})
    parts = []
    w = worst.get("max_breach") or worst.get("max_linkage")
    if isinstance(w, Mapping):
        parts.append(f"<h4>max_breach: {esc(w.get('individual'))} has {esc(w.get('value'))}</h4>")
        if w.get("ci"):
            parts.append(f'<p class="note">Estimated by sampling; 95% interval of the estimate {esc(w["ci"])}.</p>')
        parts.append(_world_tables(w))
    m = worst.get("min_linkability")
    if isinstance(m, Mapping):
        parts.append(f"<h4>min_linkability: {esc(m.get('individual'))}</h4><p>can be linked to only "
                     f"{esc(', '.join(map(str, m.get('values', []))))} in every possible world.</p>")
    return "".join(parts)


def _intersection_svg(w: Mapping) -> str:
    """The releases that isolate a target, then its candidates; every box and the figure as wide as their
    labels need (issue 25, item 6: the candidates' values were cut at 26 characters)."""
    releases = sorted(set(w.get("releases", [])) | set(w.get("present_in", [])) | set(w.get("absent_from", [])))
    if not releases:
        return ""
    present = list(w.get("present_in", []))
    groups = dict(zip(present, w.get("groups", [])))
    inner = {r: f"in group {_group_text(groups[r])}" if r in groups else "absent (subtract)" for r in releases}
    box = max([140.0] + [max(text_width(f"release {r}", 12, True), text_width(inner[r], 11)) + 16
                         for r in releases])
    col = box + 30
    cands = w.get("candidates", [])
    head = f"{len(cands)} candidate{'s' if len(cands) != 1 else ''}"
    values = ", ".join(f"{k} x{v}" for k, v in (w.get("sensitive") or {}).items())
    last = max(150.0, text_width(head, 12, True) + 16, text_width(values, 11) + 16)
    bottom = (f"target {w.get('uid')}: {w.get('attack')} attack judged at release {w.get('judged')}; candidates: "
              f"{', '.join(map(str, cands[:8]))}{', ...' if len(cands) > 8 else ''}")
    x_last = 10 + len(releases) * col
    width = max(x_last + last + 10, 10 + text_width(bottom, 11) + 10)
    out = [_svg_open(width, 130, "isolating releases")]
    for i, r in enumerate(releases):
        x = 10 + i * col
        here = r in groups
        out.append(f'<rect x="{x:.1f}" y="20" width="{box:.1f}" height="60" rx="6" '
                   f'fill="{"#eef3fb" if here else "#fdecec"}" stroke="{"#5b7fb9" if here else "#c0392b"}"/>')
        out.append(_text(x + box / 2, 42, f"release {r}", anchor="middle", weight="bold"))
        out.append(_text(x + box / 2, 62, inner[r], anchor="middle", size=11))
        out.append(_text(x + box + 15, 54, "\u2229" if here else "\u2212", size=18, anchor="middle"))
    out.append(f'<rect x="{x_last:.1f}" y="20" width="{last:.1f}" height="60" rx="6" fill="#fdecec" '
               'stroke="#c0392b"/>')
    out.append(_text(x_last + last / 2, 42, head, anchor="middle", weight="bold"))
    out.append(_text(x_last + last / 2, 62, values, anchor="middle", size=11))
    out.append(_text(10, 110, bottom, size=11))
    out.append("</svg>")
    return "".join(out)


def _intersection_witness(res: Mapping) -> str:
    w = res.get("worst", {}).get("violations")
    if not isinstance(w, Mapping):
        return ""
    return ("<p>The releases that isolate the target: the groups it is published in are intersected, the "
            "releases it is absent from are subtracted; what is left is its candidate set and the sensitive "
            "values those candidates carry.</p>" + _intersection_svg(w))


def _linking_witness(res: Mapping) -> str:
    """The class attaining each minimum, one column per quasi-identifier under its attribute's name (issue 25,
    item 6: one cell of bare values named no attribute)."""
    rows = [(key, w) for key, w in res.get("worst", {}).items() if isinstance(w, Mapping)]
    if not rows:
        return ""
    attrs: list[str] = []
    for _, w in rows:
        attrs += [str(a) for a in (w.get("qi") or {}) if str(a) not in attrs]
    parts = []
    for key, w in rows:
        qi = {str(a): v for a, v in (w.get("qi") or {}).items()}
        sens = ", ".join(f"{k} x{v}" for k, v in (w.get("sensitive") or {}).items())
        parts.append(f"<tr><td>{esc(key)}</td><td>{esc(w.get('release'))}</td>"
                     f"<td>{esc(_group_text(w.get('group')))}</td><td class=num>{esc(w.get('size'))}</td>"
                     + "".join(f"<td>{esc(qi.get(a, '-'))}</td>" for a in attrs) + f"<td>{esc(sens)}</td></tr>")
    qi_head = "".join(f'<th class="qi">{esc(a)}</th>' for a in attrs)
    return ("<p>The class that attains each minimum (one release alone), with its quasi-identifiers as "
            "published:</p><table><tr><th>metric</th><th>release</th><th>group</th><th>size</th>"
            f"{qi_head}<th>sensitive values</th></tr>" + "".join(parts) + "</table>")


def draw_witness(name: str, res: Mapping) -> str:
    """The witness of one attack as HTML (inline SVG and tables); unknown attacks get their JSON, cut short."""
    drawer = {"correspondence": _correspondence_witness, "update_graph": _update_graph_witness,
              "possible_worlds": _possible_worlds_witness, "intersection": _intersection_witness,
              "linking": _linking_witness}.get(name)
    if drawer is not None:
        return drawer(res)
    worst = res.get("worst")
    if not worst:
        return ""
    text = json.dumps(worst, indent=1, default=str)
    return f"<pre>{esc(text[:5000])}{'...' if len(text) > 5000 else ''}</pre>"
