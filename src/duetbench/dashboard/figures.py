"""Plotly figures of a series and the index's sparklines (inline SVG, no JavaScript).

A series figure has three panels on one axis of versions (in series order):

1. the **paired** series: each version's level relative to the first version of its
   chain of direct comparisons, with the 95 % band of the chained standard errors;
2. each **direct comparison** of adjacent versions: its change with a 95 % interval;
3. the **absolute** series: each version's median iteration time over separate
   experiments (it carries the machine's drift), with 95 % error bars.

Detected changes are vertical lines (red slower, green faster; dotted while
provisional), user marks orange, a move to another machine (environment drift)
purple; spikes and moves dismissed as machine drift are grey markers. Every user
string that reaches Plotly (which reads a subset of HTML in its texts) is escaped.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..report import formatting as fmt
from ..report.html.plots import TEMPLATE as REPORT_TEMPLATE
from ..schema import Verdict
from .model import SeriesView, SiteData

Z95 = 1.959963984540054
COLORS = {
    "paired": "#1f77b4",
    "absolute": "#555555",
    Verdict.SLOWER: "#d62728",
    Verdict.FASTER: "#2ca02c",
    "mark": "#ff7f0e",
    "drift": "#9467bd",
    "muted": "#999999",
}
_REPORT = REPORT_TEMPLATE["layout"]
#: the report's Plotly template (report/html/plots.py), a little denser
TEMPLATE = {
    "layout": {
        **_REPORT,
        "font": {**_REPORT["font"], "size": 12},
        "xaxis": {**_REPORT["xaxis"], "zeroline": False},
        "margin": {"l": 70, "r": 20, "t": 40, "b": 70},
        "hoverlabel": {"namelength": -1, "align": "left"},
    }
}


def text(value: Any) -> str:
    """A user string for Plotly's texts (titles, names, hover, ticks): HTML-escaped, since
    Plotly reads tags in them and shows entities as the characters they stand for."""
    return html.escape(str(value), quote=False)


def when(ns: int | None) -> str:
    if ns is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ns / 1e9))


def version_lines(site: SiteData, view: SeriesView, version: str) -> list[str]:
    """Hover lines of a version: label, commit and date, host."""
    v = site.versions.get(version)
    out = [f"<b>{text(version)}</b>"]
    date = site.version_dates.get(version)
    commit = f"commit {text(v.commit[:12])}" if v is not None and v.commit else "commit unknown"
    if date is not None:
        kind = "committed" if date[1] else "measured"
        commit += f" · {kind} {when(date[0])}"
    out.append(commit)
    out.append(f"host {text(view.host_label)}")
    return out


def _ticks(versions: tuple[str, ...]) -> dict[str, Any]:
    n = len(versions)
    step = max(1, math.ceil(n / 16))
    idx = list(range(0, n, step))
    return {
        "tickmode": "array",
        "tickvals": idx,
        "ticktext": [text(versions[i][:18]) for i in idx],
        "range": [-0.6, n - 0.4],
        "tickangle": -30 if n > 6 else 0,
    }


def _exps(ids: tuple[int, ...]) -> str:
    return "experiment(s) " + ", ".join(f"#{i}" for i in ids) if ids else ""


def series_figure(site: SiteData, view: SeriesView) -> dict[str, Any]:
    """The Plotly figure (``{"data": [...], "layout": {...}}``) of one series: three panels,
    or the absolute series alone when no adjacent versions were compared directly."""
    s = view.series
    pos = {v: i for i, v in enumerate(s.versions)}
    shapes, notes = _lines(view, pos)
    layout: dict[str, Any] = {
        "template": TEMPLATE,
        "showlegend": True,
        "hovermode": "closest",
        "shapes": shapes,
    }
    if not s.steps:
        data = _absolute_traces(site, view, pos, "y")
        titles = [(1.0, ABSOLUTE_TITLE + "; no adjacent versions were compared directly")]
        layout |= {
            "height": 340,
            "legend": {"orientation": "h", "y": -0.35, "x": 0},
            "xaxis": {**_ticks(s.versions), "title": {"text": "version"}},
            "yaxis": {"domain": [0.0, 0.9], "title": {"text": "absolute (ms)"}},
            "annotations": notes + _panel_titles(titles),
        }
        return {"data": data, "layout": layout}
    first = text(s.versions[0])
    data = _chain_traces(site, view, pos) + _step_traces(site, view, pos)
    data += _absolute_traces(site, view, pos, "y3")
    titles = [
        (1.0, f"paired series: level relative to the start of its chain ({first}), 95 % band"),
        (0.56, "direct comparisons of adjacent versions: change, 95 % interval"),
        (0.28, ABSOLUTE_TITLE),
    ]
    layout |= {
        "height": 560,
        "legend": {"orientation": "h", "y": -0.16, "x": 0},
        "xaxis": {**_ticks(s.versions), "anchor": "y3", "title": {"text": "version"}},
        "yaxis": {
            "domain": [0.62, 1.0],
            "title": {"text": "paired level"},
            "ticksuffix": " %",
            "zeroline": True,
        },
        "yaxis2": {
            "domain": [0.34, 0.56],
            "title": {"text": "step"},
            "ticksuffix": " %",
            "zeroline": True,
        },
        "yaxis3": {"domain": [0.0, 0.28], "title": {"text": "absolute (ms)"}},
        "annotations": notes + _panel_titles(titles),
    }
    return {"data": data, "layout": layout}


ABSOLUTE_TITLE = "absolute series: median time over separate experiments (carries machine drift)"


def _panel_titles(titles: list[tuple[float, str]]) -> list[dict[str, Any]]:
    return [
        {
            "text": t,
            "xref": "paper",
            "yref": "paper",
            "x": 0,
            "y": y,
            "xanchor": "left",
            "yanchor": "bottom",
            "showarrow": False,
            "font": {"size": 12, "color": "#333"},
        }
        for y, t in titles
    ]


def _chain_traces(site: SiteData, view: SeriesView, pos: dict[str, int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    chain = view.series.chain()
    chains = sorted({p.chain for p in chain})
    for n, c in enumerate(chains):
        pts = [p for p in chain if p.chain == c]
        x = [pos[p.version] for p in pts]
        lo = [float(np.expm1(p.log_level - Z95 * p.se)) * 100 for p in pts]
        hi = [float(np.expm1(p.log_level + Z95 * p.se)) * 100 for p in pts]
        y = [p.relative * 100 for p in pts]
        band = {"x": x, "mode": "lines", "line": {"width": 0}, "hoverinfo": "skip"}
        band.update({"showlegend": False, "legendgroup": "paired"})
        out.append({**band, "y": lo, "type": "scatter"})
        out.append(
            {**band, "y": hi, "type": "scatter", "fill": "tonexty"}
            | {"fillcolor": "rgba(31,119,180,0.18)"}
        )
        start = text(pts[0].version)
        hover = [
            "<br>".join(
                version_lines(site, view, p.version)
                + [
                    f"level {fmt.pct(p.relative, signed=True)} vs {start} "
                    f"(95 %: {fmt.pct(np.expm1(p.log_level - Z95 * p.se), signed=True)} "
                    f"to {fmt.pct(np.expm1(p.log_level + Z95 * p.se), signed=True)})"
                ]
            )
            for p in pts
        ]
        out.append(
            {
                "type": "scatter",
                "x": x,
                "y": y,
                "mode": "lines+markers",
                "name": "paired series (chained direct comparisons)",
                "legendgroup": "paired",
                "showlegend": n == 0,
                "line": {"color": COLORS["paired"], "width": 2},
                "marker": {"size": 5},
                "hovertext": hover,
                "hoverinfo": "text",
            }
        )
    return out


def _step_traces(site: SiteData, view: SeriesView, pos: dict[str, int]) -> list[dict[str, Any]]:
    steps = view.series.steps
    if not steps:
        return []
    x = [pos[s.after] for s in steps]
    y = [s.change * 100 for s in steps]
    up = [float(np.expm1(s.log_ratio + Z95 * s.se)) * 100 - s.change * 100 for s in steps]
    down = [s.change * 100 - float(np.expm1(s.log_ratio - Z95 * s.se)) * 100 for s in steps]
    hover = []
    for s in steps:
        lo, hi = np.expm1(s.log_ratio - Z95 * s.se), np.expm1(s.log_ratio + Z95 * s.se)
        verdicts = ", ".join(sorted(set(s.verdicts))) or "-"
        hover.append(
            "<br>".join(
                version_lines(site, view, s.after)
                + [
                    f"{text(s.before)} → {text(s.after)}: {fmt.pct(s.change, signed=True, digits=2)} "
                    f"{fmt.ci(lo, hi)}",
                    f"{s.runs} runs, verdict {text(verdicts)}, {_exps(s.experiments)}",
                ]
            )
        )
    out: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": x,
            "y": y,
            "yaxis": "y2",
            "mode": "markers",
            "name": "direct comparison (95 % interval)",
            "marker": {"color": COLORS["paired"], "size": 5},
            "error_y": _error_bars(up, down, "rgba(31,119,180,0.6)"),
            "hovertext": hover,
            "hoverinfo": "text",
        }
    ]
    at = {s.after: s for s in steps}
    for label, items, symbol, color in (
        ("detected change", [c for c in view.changes if c.first_bad in at], None, None),
        ("spike (not a change)", [x for x in view.spikes if x.version in at], "x", "muted"),
    ):
        if not items:
            continue
        xs, ys, hv, sym, col = [], [], [], [], []
        for it in items:
            v = getattr(it, "first_bad", None) or it.version
            xs.append(pos[v])
            ys.append(at[v].change * 100)
            hv.append(_finding_hover(it))
            up_ = it.change > 0
            sym.append(symbol or ("triangle-up" if up_ else "triangle-down"))
            kind = "mark" if getattr(it, "source", "") == "marked" else None
            col.append(COLORS[color or kind or (Verdict.SLOWER if up_ else Verdict.FASTER)])
        out.append(
            {
                "type": "scatter",
                "x": xs,
                "y": ys,
                "yaxis": "y2",
                "mode": "markers",
                "name": label,
                "marker": {"symbol": sym, "color": col, "size": 12, "line": {"width": 1}},
                "hovertext": hv,
                "hoverinfo": "text",
            }
        )
    return out


def _finding_hover(it: Any) -> str:
    if hasattr(it, "first_bad"):
        head = (
            f"<b>{Verdict.SLOWER if it.change > 0 else Verdict.FASTER} from {text(it.first_bad)}</b> "
            f"(last good {text(it.last_good or '-')}): {fmt.pct(it.change, signed=True)} "
            f"{fmt.ci(it.ci_low, it.ci_high)}"
        )
        status = f"found in the {it.source} series, {'final' if it.final else 'provisional'}"
        return "<br>".join([head, status, *_wrap(text(it.evidence))])
    return "<br>".join([f"<b>spike at {text(it.version)}</b>", *_wrap(text(it.evidence))])


def _wrap(s: str, width: int = 90) -> list[str]:
    words, lines, line = s.split(" "), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return [*lines, line] if line else lines


def _absolute_traces(
    site: SiteData, view: SeriesView, pos: dict[str, int], axis: str
) -> list[dict[str, Any]]:
    levels = [lv for lv in view.series.levels if lv.version in pos]
    if not levels:
        return []
    x = [pos[lv.version] for lv in levels]
    y = [lv.ns / 1e6 for lv in levels]
    se = [lv.se if math.isfinite(lv.se) else 0.0 for lv in levels]
    up = [
        float(np.exp(lv.log_ns + Z95 * e)) / 1e6 - lv.ns / 1e6
        for lv, e in zip(levels, se, strict=True)
    ]
    down = [
        lv.ns / 1e6 - float(np.exp(lv.log_ns - Z95 * e)) / 1e6
        for lv, e in zip(levels, se, strict=True)
    ]
    hover = [
        "<br>".join(
            version_lines(site, view, lv.version)
            + [f"median time {fmt.duration(lv.ns)} (absolute), {_exps(lv.experiments)}"]
        )
        for lv in levels
    ]
    out: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": x,
            "y": y,
            "yaxis": axis,
            "mode": "lines+markers",
            "name": "absolute series (separate experiments; carries machine drift)",
            "line": {"color": COLORS["absolute"], "width": 1, "dash": "dot"},
            "marker": {"size": 4 if len(levels) > 30 else 6},
            "error_y": _error_bars(up, down, "rgba(85,85,85,0.5)"),
            "hovertext": hover,
            "hoverinfo": "text",
        }
    ]
    ys = dict(zip([lv.version for lv in levels], y, strict=True))
    stepped = {st.after for st in view.series.steps}
    found = [c for c in view.changes if c.first_bad in ys and c.first_bad not in stepped]
    if found:  # changes with no direct comparison: shown on the absolute series
        marker = {
            "symbol": ["triangle-up" if c.change > 0 else "triangle-down" for c in found],
            "color": [COLORS[Verdict.SLOWER if c.change > 0 else Verdict.FASTER] for c in found],
            "size": 12,
        }
        hover = [_finding_hover(c) for c in found]
        versions = [c.first_bad for c in found]
        out.append(
            _markers(versions, pos, ys, axis, "detected change (absolute series)", marker, hover)
        )
    gone = [d for d in view.dismissed if d.version in ys]
    if gone:
        marker = {"symbol": "diamond-open", "color": COLORS["drift"], "size": 11}
        hover = ["<br>".join(_wrap(text(d.reason))) for d in gone]
        versions = [d.version for d in gone]
        out.append(
            _markers(versions, pos, ys, axis, "move explained as machine drift", marker, hover)
        )
    return out


def _error_bars(up: Any, down: Any, color: str) -> dict[str, Any]:
    """Asymmetric error bars: ``up`` above each point, ``down`` below it."""
    return {
        "type": "data",
        "symmetric": False,
        "array": up,
        "arrayminus": down,
        "thickness": 1,
        "width": 0,
        "color": color,
    }


def _markers(
    versions: list[str],
    pos: Mapping[str, Any],
    ys: Mapping[str, Any],
    axis: str,
    name: str,
    marker: dict[str, Any],
    hover: list[str],
) -> dict[str, Any]:
    """A trace of markers at ``versions`` on the absolute series (its y values ``ys``)."""
    return {
        "type": "scatter",
        "x": [pos[v] for v in versions],
        "y": [ys[v] for v in versions],
        "yaxis": axis,
        "mode": "markers",
        "name": name,
        "marker": marker,
        "hovertext": hover,
        "hoverinfo": "text",
    }


def _vline(x: float, color: str, dash: str) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": {"color": color, "width": 2, "dash": dash},
    }


def _note(x: float, label: str, color: str, y: float, right: bool = False) -> dict[str, Any]:
    return {
        "text": label,
        "x": x,
        "xref": "x",
        "y": y,
        "yref": "paper",
        "showarrow": False,
        "xanchor": "right" if right else "left",
        "font": {"size": 11, "color": color},
        "bgcolor": "rgba(255,255,255,0.85)",
    }


def _lines(view: SeriesView, pos: dict[str, int]) -> tuple[list[dict], list[dict]]:
    """Vertical lines between the last good and the first bad version: changes, marks,
    moves to another machine."""
    shapes, notes = [], []
    n = len(view.series.versions)
    for c in view.changes:
        if c.first_bad not in pos:
            continue
        x = pos[c.first_bad] - 0.5
        color = COLORS[Verdict.SLOWER if c.change > 0 else Verdict.FASTER]
        if c.source == "marked":
            color = COLORS["mark"]
        shapes.append(_vline(x, color, "solid" if c.final else "dot"))
        label = fmt.pct(c.change, signed=True) if math.isfinite(c.change) else "mark"
        notes.append(_note(x, ("▲ " if c.change > 0 else "▼ ") + label, color, 0.985, x > n - 2))
    for m in view.marks:
        if (
            m.kind == "change"
            and m.version in pos
            and not any(c.first_bad == m.version for c in view.changes)
        ):
            x = pos[m.version] - 0.5
            shapes.append(_vline(x, COLORS["mark"], "dash"))
            notes.append(_note(x, "mark", COLORS["mark"], 0.93, x > n - 2))
    for version, how in view.moves:
        if version in pos:
            x = pos[version] - 0.5
        else:
            x = -0.5 if how == "arrived" else n - 0.5
        label = "new machine" if how == "arrived" else "moved to another machine"
        shapes.append(_vline(x, COLORS["drift"], "dashdot"))
        notes.append(_note(x, label, COLORS["drift"], 0.6, x > n - 2))
    return shapes, notes


# ---------------------------------------------------------------------- sparklines
SPARK_W, SPARK_H = 150, 30


def sparkline(view: SeriesView) -> tuple[str, str]:
    """(inline SVG, which series it shows): the paired chain when it has two or more
    versions, else the absolute series relative to its first version."""
    s = view.series
    pos = {v: i for i, v in enumerate(s.versions)}
    chain = s.chain()
    if len(chain) >= 2:
        pts = [(pos[p.version], p.log_level, p.chain) for p in chain]
        kind = "paired"
    else:
        base = s.levels[0].log_ns if s.levels else 0.0
        pts = [(pos[lv.version], lv.log_ns - base, 0) for lv in s.levels if lv.version in pos]
        kind = "absolute"
    n = max(len(s.versions) - 1, 1)
    ys = [p[1] for p in pts] or [0.0]
    lo, hi = min(ys), max(ys)
    span = max(hi - lo, 0.01)  # a series within 1 % stays flat, not stretched noise
    mid = (hi + lo) / 2

    def xy(i: float, y: float) -> tuple[float, float]:
        return (
            2 + (SPARK_W - 4) * i / n,
            SPARK_H / 2 - (SPARK_H - 6) * (y - mid) / span,
        )

    parts = []
    for c in sorted({p[2] for p in pts}):
        seg = [xy(i, y) for i, y, cc in pts if cc == c]
        if len(seg) == 1:
            parts.append(f'<circle cx="{seg[0][0]:.1f}" cy="{seg[0][1]:.1f}" r="2" class="pt"/>')
        else:
            d = " ".join(f"{a:.1f},{b:.1f}" for a, b in seg)
            parts.append(f'<polyline points="{d}" class="line {kind}"/>')
    ylook = {i: y for i, y, _ in pts}
    for ch in view.changes:
        i = pos.get(ch.first_bad)
        if i is None or i not in ylook:
            continue
        cx, cy = xy(i, ylook[i])
        cls = (
            "mark"
            if ch.source == "marked"
            else (Verdict.SLOWER if ch.change > 0 else Verdict.FASTER)
        )
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" class="chg {cls}"/>')
    if pts:
        cx, cy = xy(pts[-1][0], pts[-1][1])
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="2" class="pt"/>')
    total = float(np.expm1(pts[-1][1] - pts[0][1])) if len(pts) > 1 else 0.0
    label = (
        f"{kind} series, {len(s.versions)} version(s): "
        f"{fmt.pct(total, signed=True)} from {s.versions[0]} to {s.versions[-1]}"
        if s.versions
        else "no versions"
    )
    svg = (
        f'<svg class="spark" width="{SPARK_W}" height="{SPARK_H}" '
        f'viewBox="0 0 {SPARK_W} {SPARK_H}" role="img" aria-label="{html.escape(label)}">'
        f"<title>{html.escape(label)}</title>{''.join(parts)}</svg>"
    )
    return svg, kind
