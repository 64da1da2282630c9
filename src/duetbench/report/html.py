"""`duet report`: one self-contained HTML file (and a Markdown variant) of an evaluation.

The HTML embeds Plotly's JavaScript from the installed ``plotly`` package
(:func:`plotly.offline.get_plotlyjs`), so it opens offline in any browser: no CDN,
no network. Colours are fixed for the whole report: side A blue, side B orange;
seqn grey, aduet green, sduet purple. When every plot has been drawn the page sets
``data-rendered-ms`` (milliseconds since navigation) and ``data-plots`` on ``<body>``.
"""

from __future__ import annotations

import html
import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..store import ResultsStore
from . import formatting as fmt
from .compare_cli import HEADERS as VERDICT_HEADERS
from .compare_cli import Loaded, verdict_p
from .evaluate import Evaluation

SIDE_COLORS = {"A": "#1f77b4", "B": "#ff7f0e"}
METHOD_COLORS = {"seqn": "#6b6b6b", "aduet": "#2ca02c", "sduet": "#9467bd"}
METHODS = ("seqn", "aduet", "sduet")
METHOD_SYMBOLS = {"seqn": "circle", "aduet": "square", "sduet": "diamond"}
TEST_DASH = {"ratio": "solid", "diff": "dash", "utest": "dot", "utest-pooled": "dashdot"}
TEST_NAMES = {
    "ratio": "ratio CI test",
    "diff": "difference CI test",
    "utest": "U test",
    "utest-pooled": "pooled U test (not calibrated)",
}
VERDICT_CLASS = {
    "slower": "v-slower",
    "faster": "v-faster",
    "same": "v-same",
    "same (below threshold)": "v-same",
    "no data": "v-nodata",
}
#: a small layout template instead of Plotly's default (which weighs ~7 kB per figure)
_TEMPLATE = {
    "layout": {
        "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 13},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "title": {"x": 0.0, "xanchor": "left", "font": {"size": 15}},
        "xaxis": {
            "gridcolor": "#e5e5e5",
            "linecolor": "#888",
            "zerolinecolor": "#bbb",
            "ticks": "outside",
        },
        "yaxis": {
            "gridcolor": "#e5e5e5",
            "linecolor": "#888",
            "zerolinecolor": "#bbb",
            "ticks": "outside",
        },
        "legend": {"bgcolor": "rgba(255,255,255,0.8)"},
        "margin": {"l": 70, "r": 30, "t": 60, "b": 60},
        "hoverlabel": {"namelength": -1},
    }
}
_PLOT_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


@dataclass(frozen=True)
class ReportOptions:
    #: duet runs per benchmark and method drawn in the timelines
    timeline_runs: int = 2
    #: at most this many iterations per side of a run in the timelines
    timeline_iterations: int = 100
    title: str | None = None


# ---------------------------------------------------------------------- helpers


def _grouped_percent_bars(title: str, xtitle: str, ytitle: str, legend: str) -> dict[str, Any]:
    """The layout of a grouped bar chart of percentages starting at zero."""
    return {
        "title": {"text": title},
        "barmode": "group",
        "xaxis": {"title": {"text": xtitle}, "automargin": True},
        "yaxis": {"title": {"text": ytitle}, "ticksuffix": " %", "rangemode": "tozero"},
        "legend": {"title": {"text": legend}},
    }


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _method_key(m: Any) -> int:
    return METHODS.index(m) if m in METHODS else 9


def _methods_in(df: pd.DataFrame) -> list[str]:
    return sorted({str(m) for m in df["method"]}, key=_method_key) if not df.empty else []


def _r(x: Any, digits: int = 3) -> Any:
    """Round floats for compact JSON; None for NaN."""
    if isinstance(x, np.ndarray | list | tuple | pd.Series):
        arr = np.asarray(x, dtype=np.float64)
        return [None if np.isnan(v) else round(float(v), digits) for v in arr]
    v = fmt.num(x)
    return None if v is None else round(v, digits)


class _Page:
    """Collects sections and figures; renders the HTML document."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.toc: list[tuple[str, str]] = []
        self.n_figs = 0

    def section(self, anchor: str, title: str, intro: str = "") -> None:
        self.toc.append((anchor, title))
        self.parts.append(f'<section id="{anchor}"><h2>{_esc(title)}</h2>')
        if intro:
            self.parts.append(f'<p class="intro">{intro}</p>')

    def end_section(self) -> None:
        self.parts.append("</section>")

    def add(self, raw_html: str) -> None:
        self.parts.append(raw_html)

    def figure(self, fig: dict[str, Any], *, height: int = 420, wide: bool = True) -> None:
        """A Plotly figure given as ``{"data": [...], "layout": {...}}``."""
        self.n_figs += 1
        fid = f"fig{self.n_figs}"
        layout = {"template": _TEMPLATE, "height": height, **fig.get("layout", {})}
        payload = json.dumps(
            {"data": fig["data"], "layout": layout}, separators=(",", ":"), allow_nan=False
        ).replace("</", "<\\/")
        cls = "plot wide" if wide else "plot"
        # drawn by the script at the end of <body>, once the page layout is final
        self.parts.append(
            f'<div class="{cls}"><div id="{fid}" style="height:{height}px"></div></div>'
            f'<script>window.__duetFigs.push(["{fid}",{payload}]);</script>'
        )


def _table(headers: list[str], rows: list[list[str]], *, cls: str = "", left: int = 2) -> str:
    """An HTML table; cells are already escaped HTML. The first ``left`` columns are text."""

    def a(i: int) -> str:
        return ' class="l"' if i < left else ""

    head = "".join(f"<th{a(i)}>{_esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{a(i)}>{c}</td>" for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return (
        f'<div class="tablewrap"><table class="{cls}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _verdict_html(v: Any) -> str:
    v = str(v)
    return f'<span class="verdict {VERDICT_CLASS.get(v, "v-nodata")}">{_esc(v)}</span>'


def _sorted(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    from .evaluate_commands import sort_rows

    return sort_rows(df, keys)


def _prepared_iterations(df: pd.DataFrame, warmup: Any) -> pd.DataFrame:
    """Iterations the analysis used: the config's warm-up or ``warmup`` per series dropped."""
    from ..analysis import drop_warmup

    if warmup == "config":
        if "warmup" in df.columns:
            return df.loc[~df["warmup"].fillna(False).astype(bool).to_numpy()]
        return df
    return drop_warmup(df, warmup) if warmup else df


def _label_margin(labels: Any) -> int:
    """A left margin wide enough for the longest category label (instead of automargin,
    which costs Plotly extra layout passes per plot)."""
    longest = max((len(str(x)) for x in labels), default=0)
    return int(min(max(70, 7.5 * longest + 24), 360))


def _bench_label(host: Any, bench: Any, multi_host: bool) -> str:
    return f"{bench} @{host}" if multi_host else str(bench)


# ---------------------------------------------------------------------- sections


def _verdicts_section(page: _Page, ev: Evaluation) -> None:
    st = ev.settings
    test = TEST_NAMES.get(st["test"], st["test"])
    page.section(
        "verdicts",
        "Verdicts",
        f"Is B slower or faster than A? {_esc(test)}, {st['confidence'] * 100:g} % "
        f"{_esc(st['interval'])} interval over runs; change = B against A, "
        "<b>+ means B is slower</b>. Same table as <code>duet compare</code>.",
    )
    rows = []
    for r in _sorted(ev.verdicts, ["suite", "benchmark", "method"]).to_dict("records"):
        rows.append(
            [
                _esc(r["benchmark"]),
                _esc(r["method"]),
                fmt.duration(r["mean_a_ns"]),
                fmt.duration(r["mean_b_ns"]),
                fmt.pct(r["change"], signed=True, digits=2),
                fmt.ci(r["ci_low"], r["ci_high"]),
                fmt.pvalue(verdict_p(r, st["test"])),
                str(r["runs"]),
                str(r["pairs"]),
                _verdict_html(r["verdict"]),
            ]
        )
    page.add(_table(list(VERDICT_HEADERS), rows, cls="verdicts"))
    counts = ev.verdicts["verdict"].value_counts().to_dict() if not ev.verdicts.empty else {}
    summary = ", ".join(f"{n} {_esc(v)}" for v, n in sorted(counts.items()))
    if summary:
        page.add(f'<p class="note">{summary}.</p>')
    page.end_section()


def _ci_section(page: _Page, ev: Evaluation) -> None:
    v = ev.verdicts
    if v.empty:
        return
    st = ev.settings
    page.section(
        "intervals",
        "Confidence intervals per benchmark",
        "Each point is the estimated change of B against A, the bar its confidence interval "
        "(thesis fig. 5.10). An interval that does not cross the dashed zero line is a "
        "detected change.",
    )
    benches = sorted({(str(s), str(b)) for s, b in zip(v["suite"], v["benchmark"], strict=True)})
    pos = {k: i for i, k in enumerate(benches)}
    methods = _methods_in(v)
    n_m = max(len(methods), 1)
    data = []
    for j, m in enumerate(methods):
        g = v.loc[v["method"] == m]
        off = (j - (n_m - 1) / 2) * (0.6 / n_m)
        y = [pos[(str(s), str(b))] + off for s, b in zip(g["suite"], g["benchmark"], strict=True)]
        ch = np.asarray(g["change"], dtype=float) * 100
        lo = np.asarray(g["ci_low"], dtype=float) * 100
        hi = np.asarray(g["ci_high"], dtype=float) * 100
        text = [
            f"{b} / {m}<br>change {fmt.pct(c, signed=True, digits=2)}<br>CI {fmt.ci(a, z)}<br>{vv}"
            for b, c, a, z, vv in zip(
                g["benchmark"], g["change"], g["ci_low"], g["ci_high"], g["verdict"], strict=True
            )
        ]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": m,
                "x": _r(ch),
                "y": _r(y),
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": _r(hi - ch),
                    "arrayminus": _r(ch - lo),
                    "thickness": 2,
                    "width": 4,
                    "color": METHOD_COLORS.get(m, "#333"),
                },
                "marker": {"color": METHOD_COLORS.get(m, "#333"), "size": 9},
                "text": text,
                "hovertemplate": "%{text}<extra></extra>",
            }
        )
    height = max(260, 70 * len(benches) + 140)
    page.figure(
        {
            "data": data,
            "layout": {
                "title": {
                    "text": f"Change of B against A with {st['confidence'] * 100:g} % CI "
                    f"({TEST_NAMES.get(st['test'], st['test'])})"
                },
                "xaxis": {
                    "title": {"text": "change of B against A (%)"},
                    "ticksuffix": " %",
                    "zeroline": False,
                },
                "yaxis": {
                    "tickvals": list(range(len(benches))),
                    "ticktext": [b for _, b in benches],
                    "autorange": "reversed",
                    "range": [len(benches) - 0.5, -0.5],
                    "gridcolor": "rgba(0,0,0,0)",
                    "zeroline": False,
                },
                "shapes": [
                    {
                        "type": "line",
                        "x0": 0,
                        "x1": 0,
                        "xref": "x",
                        "y0": 0,
                        "y1": 1,
                        "yref": "paper",
                        "line": {"dash": "dash", "color": "#444", "width": 1},
                    }
                ],
                "legend": {"title": {"text": "method"}},
                "margin": {"l": _label_margin(b for _, b in benches)},
            },
        },
        height=height,
    )
    page.end_section()


def _timeline_section(page: _Page, df: pd.DataFrame, opts: ReportOptions) -> None:
    duet = df.loc[df["method"].astype(str).isin(["aduet", "sduet"]).to_numpy()]
    if duet.empty:
        return
    page.section(
        "timelines",
        "Timelines of duet runs",
        f"The iterations of A (blue) and B (orange) of the first {opts.timeline_runs} run(s) "
        "of every duet method, as intervals on the run's clock. In an aduet run the sides "
        "iterate independently, so their iterations drift apart; in an sduet run every "
        "iteration starts together. Pale bars are warm-up iterations.",
    )
    multi = df["host"].nunique() > 1 if "host" in df.columns else False
    keys = ["host", "suite", "benchmark"] if "host" in duet.columns else ["suite", "benchmark"]
    for bkey, g in duet.groupby(keys, sort=True, dropna=False):
        bkey = bkey if isinstance(bkey, tuple) else (bkey,)
        labels: list[str] = []
        traces: dict[str, dict[str, list[Any]]] = {
            p: {"y": [], "base": [], "x": [], "custom": [], "opacity": []} for p in ("A", "B")
        }
        span_max = 0.0
        parts = []
        for m in ("aduet", "sduet"):
            gm = g.loc[g["method"].astype(str) == m]
            for run in sorted(gm["run"].unique())[: max(opts.timeline_runs, 0)]:
                gr = gm.loc[gm["run"] == run]
                t0 = int(gr["start_ns"].min())
                span_max = max(span_max, (int(gr["end_ns"].max()) - t0) / 1e6)
                parts.append((m, run, gr, t0))
        if not parts:
            continue
        unit, div = ("s", 1e9) if span_max > 20_000 else ("ms", 1e6)
        for m, run, gr, t0 in parts:
            order = str(gr["order"].iloc[0]) if "order" in gr.columns else ""
            for p in ("A", "B"):
                label = f"{m} run {run} {p}" + (f" ({order})" if order and p == "A" else "")
                labels.append(label)
                side = gr.loc[gr["pair"].astype(str) == p].sort_values("iteration")
                side = side.head(max(opts.timeline_iterations, 1))
                st = (side["start_ns"].to_numpy(dtype=np.int64) - t0) / div
                du = (
                    side["end_ns"].to_numpy(dtype=np.int64)
                    - side["start_ns"].to_numpy(dtype=np.int64)
                ) / div
                tr = traces[p]
                tr["y"] += [label] * len(side)
                tr["base"] += _r(st, 4)
                tr["x"] += _r(du, 4)
                tr["custom"] += [
                    [int(i), fmt.duration(d), f"{b:.1f} {unit}"]
                    for i, d, b in zip(side["iteration"], side["duration_ns"], st, strict=True)
                ]
                warm = (
                    side["warmup"].fillna(False).astype(bool).to_numpy()
                    if "warmup" in side.columns
                    else np.zeros(len(side), dtype=bool)
                )
                tr["opacity"] += [0.35 if w else 0.9 for w in warm]
        data = [
            {
                "type": "bar",
                "orientation": "h",
                "name": p,
                "y": traces[p]["y"],
                "base": traces[p]["base"],
                "x": traces[p]["x"],
                "customdata": traces[p]["custom"],
                "marker": {
                    "color": SIDE_COLORS[p],
                    "opacity": traces[p]["opacity"],
                    "line": {"color": "white", "width": 1},
                },
                "hovertemplate": f"{p} iteration %{{customdata[0]}}: %{{customdata[1]}}<br>"
                "starts at %{customdata[2]}<extra></extra>",
            }
            for p in ("A", "B")
        ]
        name = _bench_label(bkey[0], bkey[-1], multi)
        page.figure(
            {
                "data": data,
                "layout": {
                    "title": {"text": f"{name}: iterations of A and B over time"},
                    "barmode": "overlay",
                    "bargap": 0.25,
                    "xaxis": {"title": {"text": f"time since the run started ({unit})"}},
                    "yaxis": {
                        "categoryorder": "array",
                        "categoryarray": labels,
                        "autorange": "reversed",
                        "type": "category",
                    },
                    "legend": {"title": {"text": "side"}},
                    "margin": {"l": _label_margin(labels)},
                },
            },
            height=max(240, 34 * len(labels) + 130),
        )
    page.end_section()


def _box_stats(d: np.ndarray) -> dict[str, float]:
    q1, med, q3 = np.percentile(d, [25, 50, 75])
    iqr = q3 - q1
    lo_f = d[d >= q1 - 1.5 * iqr].min()
    hi_f = d[d <= q3 + 1.5 * iqr].max()
    return {
        "q1": q1,
        "median": med,
        "q3": q3,
        "lowerfence": lo_f,
        "upperfence": hi_f,
        "mean": float(d.mean()),
    }


def _distribution_section(page: _Page, df: pd.DataFrame, ev: Evaluation) -> None:
    page.section(
        "distributions",
        "Iteration times",
        "Distribution of the iteration times of A (blue) and B (orange) per method, as used by "
        "the tests (warm-up excluded). Box: quartiles and median; whiskers: the furthest "
        "iterations within 1.5 IQR of the box; dashed line: the mean.",
    )
    data_df = _prepared_iterations(df, ev.settings.get("warmup", "config"))
    multi = df["host"].nunique() > 1 if "host" in df.columns else False
    keys = ["host", "suite", "benchmark"] if "host" in data_df.columns else ["suite", "benchmark"]
    for bkey, g in data_df.groupby(keys, sort=True, dropna=False):
        bkey = bkey if isinstance(bkey, tuple) else (bkey,)
        methods = _methods_in(g)
        data = []
        for p in ("A", "B"):
            stats: dict[str, list[Any]] = {
                k: [] for k in ("x", "q1", "median", "q3", "lowerfence", "upperfence", "mean")
            }
            for m in methods:
                d = g.loc[
                    (g["method"].astype(str) == m) & (g["pair"].astype(str) == p), "duration_ns"
                ]
                if d.empty:
                    continue
                s = _box_stats(d.to_numpy(dtype=np.float64) / 1e6)
                stats["x"].append(m)
                for k, val in s.items():
                    stats[k].append(round(float(val), 4))
            data.append(
                {
                    "type": "box",
                    "name": p,
                    "x": stats["x"],
                    "q1": stats["q1"],
                    "median": stats["median"],
                    "q3": stats["q3"],
                    "lowerfence": stats["lowerfence"],
                    "upperfence": stats["upperfence"],
                    "mean": stats["mean"],
                    "boxmean": True,
                    "marker": {"color": SIDE_COLORS[p]},
                    "line": {"color": SIDE_COLORS[p]},
                    "fillcolor": SIDE_COLORS[p] + "55",
                    "offsetgroup": p,
                }
            )
        name = _bench_label(bkey[0], bkey[-1], multi)
        page.figure(
            {
                "data": data,
                "layout": {
                    "title": {"text": f"{name}: iteration times per method and side"},
                    "boxmode": "group",
                    "xaxis": {
                        "title": {"text": "method"},
                        "categoryorder": "array",
                        "categoryarray": methods,
                    },
                    "yaxis": {"title": {"text": "iteration time (ms)"}, "ticksuffix": " ms"},
                    "legend": {"title": {"text": "side"}},
                    "margin": {"l": 95},
                },
            },
            height=380,
            wide=False,
        )
    page.end_section()


def _line(
    x: list[Any], y: list[Any], name: str, color: str, dash: str = "solid", **kw: Any
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": x,
        "y": y,
        "line": {"color": color, "dash": dash, "width": 2},
        "marker": {"color": color, "size": 6},
        **kw,
    }


def _mds_section(page: _Page, ev: Evaluation) -> None:
    curve = ev.mds_curve
    if curve.empty:
        return
    aa_only = bool(ev.aa_benchmarks)
    who = "A/A benchmarks" if aa_only else "benchmarks"
    page.section(
        "mds",
        "Minimal detectable slowdown",
        f"Every B iteration made s slower, B's timestamps rebuilt keeping the gaps, overlaps, "
        f"pairs and tests recomputed (thesis 4.4). The curves show the share of {who} detected "
        "as <i>slower</i> at each s (thesis fig. 5.8 and 5.9 show the complement); a "
        "benchmark's MDS is the smallest s from which every larger s is detected.",
    )
    if aa_only:
        curve = curve.loc[curve["aa"].astype(bool)]
    multi_host = curve["host"].nunique() > 1
    multi_suite = curve["suite"].nunique() > 1
    tests = [t for t in ("ratio", "diff", "utest") if t in set(curve["test"])]
    for (host, suite), g in curve.groupby(["host", "suite"], sort=True):
        data = []
        annotations = []
        layout: dict[str, Any] = {}
        for i, t in enumerate(tests):
            ax = "" if i == 0 else str(i + 1)
            for m in _methods_in(g):
                gt = g.loc[(g["method"] == m) & (g["test"] == t)].sort_values("slowdown")
                if gt.empty:
                    continue
                data.append(
                    _line(
                        _r(gt["slowdown"].to_numpy(dtype=float) * 100, 2),
                        _r(gt["share_slower"].to_numpy(dtype=float) * 100, 1),
                        m,
                        METHOD_COLORS.get(m, "#333"),
                        xaxis=f"x{ax}",
                        yaxis=f"y{ax}",
                        legendgroup=m,
                        showlegend=i == 0,
                        marker={
                            "color": METHOD_COLORS.get(m, "#333"),
                            "size": 7,
                            "symbol": METHOD_SYMBOLS.get(m, "circle"),
                        },
                        customdata=[
                            [int(a), int(b)]
                            for a, b in zip(gt["slower"], gt["benchmarks"], strict=True)
                        ],
                        hovertemplate=f"{m}, {TEST_NAMES[t]}<br>s = %{{x}} %: %{{y:.0f}} % "
                        "(%{customdata[0]}/%{customdata[1]}) detected slower<extra></extra>",
                    )
                )
            layout[f"xaxis{ax}"] = {
                "title": {"text": "slowdown s of B (%)"},
                "ticksuffix": " %",
                "domain": [i / len(tests) + 0.03, (i + 1) / len(tests) - 0.03],
                "anchor": f"y{ax}",
            }
            layout[f"yaxis{ax}"] = {
                "ticksuffix": " %",
                "range": [-4, 104],
                "anchor": f"x{ax}",
                **({"title": {"text": "detected slower (% of benchmarks)"}} if i == 0 else {}),
                **({"matches": "y"} if i else {}),
            }
            annotations.append(
                {
                    "text": f"<b>{TEST_NAMES[t]}</b>",
                    "xref": "paper",
                    "yref": "paper",
                    "x": (i + 0.5) / len(tests),
                    "y": 1.0,
                    "yanchor": "bottom",
                    "showarrow": False,
                    "font": {"size": 13},
                }
            )
        where = (f" on {host}" if multi_host else "") + (f", suite {suite}" if multi_suite else "")
        page.figure(
            {
                "data": data,
                "layout": {
                    "title": {"text": f"Share of {who} detected slower when B is s slower{where}"},
                    **layout,
                    "annotations": annotations,
                    "legend": {"title": {"text": "method"}},
                    "margin": {"t": 80},
                },
            },
            height=420,
        )
    largest = max(ev.settings["slowdowns"])
    rows = []
    for k, g in _sorted(ev.mds, ["host", "suite", "benchmark", "method"]).groupby(
        ["host", "suite", "benchmark", "method"], sort=False
    ):
        recs = {r["test"]: r for r in g.to_dict("records")}
        first = next(iter(recs.values()))
        rows.append(
            [
                _esc(_bench_label(k[0], k[2], multi_host)),
                "yes" if first["aa"] else "",
                _esc(k[3]),
                *[
                    _esc(_mds_text(recs.get(t, {}).get("mds"), largest))
                    for t in ("ratio", "diff", "utest")
                ],
            ]
        )
    page.add("<h3>MDS per benchmark</h3>")
    page.add(
        _table(["benchmark", "A/A", "method", "ratio test", "diff test", "U test"], rows, left=3)
    )
    page.end_section()


def _mds_text(v: Any, largest: float) -> str:
    x = fmt.num(v)
    return f"> {largest * 100:g} %" if x is None else f"{x * 100:g} %"


def _overlap_section(page: _Page, ev: Evaluation) -> None:
    ov = ev.overlap
    if ov.empty:
        return
    m_pair = ev.settings["min_overlap"]
    page.section(
        "overlap",
        "Overlaps of aduet iterations",
        "Relative overlap time (thesis eq. 5.2): the share of A's and B's iteration time "
        "spent in pairs whose overlap ratio exceeds m. Only these pairs enter the tests of an "
        f"aduet run; the dotted line marks the m used for pairing ({m_pair:g}).",
    )
    multi = ov["host"].nunique() > 1
    benches = ov.groupby(["host", "suite", "benchmark"], sort=True)
    vline = {
        "type": "line",
        "x0": m_pair * 100,
        "x1": m_pair * 100,
        "y0": 0,
        "y1": 1,
        "yref": "paper",
        "line": {"dash": "dot", "color": "#444", "width": 1},
    }
    data = []
    palette = [
        "#17becf",
        "#bcbd22",
        "#8c564b",
        "#e377c2",
        "#7f7f7f",
        "#1a55a4",
        "#d62728",
        "#2ca02c",
        "#9467bd",
        "#ff9896",
    ]
    if benches.ngroups <= 10:
        for i, ((host, _suite, bench), g) in enumerate(benches):
            g = g.sort_values("min_overlap")
            data.append(
                _line(
                    _r(g["min_overlap"].to_numpy(dtype=float) * 100, 1),
                    _r(g["relative_overlap_time"].to_numpy(dtype=float) * 100, 2),
                    _bench_label(host, bench, multi),
                    palette[i % len(palette)],
                    hovertemplate="%{fullData.name}: m = %{x} %: %{y:.1f} %<extra></extra>",
                )
            )
    else:
        for m, g in ov.groupby("min_overlap", sort=True):
            y = _r(g["relative_overlap_time"].to_numpy(dtype=float) * 100, 2)
            data.append(
                {
                    "type": "box",
                    "name": f"m = {m * 100:g} %",
                    "x": [round(m * 100, 3)] * len(y),
                    "y": y,
                    "marker": {"color": METHOD_COLORS["aduet"]},
                    "showlegend": False,
                }
            )
    page.figure(
        {
            "data": data,
            "layout": {
                "title": {"text": "Relative overlap time of aduet runs by m"},
                "xaxis": {"title": {"text": "minimum overlap ratio m (%)"}, "ticksuffix": " %"},
                "yaxis": {
                    "title": {"text": "relative overlap time (%)"},
                    "ticksuffix": " %",
                    "range": [0, 102],
                },
                "shapes": [vline],
                "legend": {"title": {"text": "benchmark"}},
            },
        },
        height=420,
        wide=False,
    )
    ab = ev.aa_by_overlap
    if not ab.empty:
        data = []
        for (host, _suite, t), g in ab.groupby(["host", "suite", "test"], sort=True):
            g = g.sort_values("min_overlap")
            where = f" {host}" if multi else ""
            data.append(
                _line(
                    _r(g["min_overlap"].to_numpy(dtype=float) * 100, 1),
                    _r(g["share_same"].to_numpy(dtype=float) * 100, 1),
                    f"{TEST_NAMES[t]}{where}",
                    METHOD_COLORS["aduet"],
                    TEST_DASH[t],
                    customdata=[
                        [int(a), int(b)] for a, b in zip(g["same"], g["benchmarks"], strict=True)
                    ],
                    hovertemplate="m = %{x} %: %{y:.0f} % (%{customdata[0]}/%{customdata[1]}) "
                    "judged same<extra></extra>",
                )
            )
        page.figure(
            {
                "data": data,
                "layout": {
                    "title": {"text": "A/A, aduet: judged 'same' by m"},
                    "xaxis": {"title": {"text": "minimum overlap ratio m (%)"}, "ticksuffix": " %"},
                    "yaxis": {
                        "title": {"text": "judged same (% of A/A benchmarks)"},
                        "ticksuffix": " %",
                        "range": [-3, 103],
                    },
                    "shapes": [vline],
                    "legend": {"title": {"text": "test"}},
                },
            },
            height=420,
            wide=False,
        )
    page.end_section()


def _grouped_bars(
    df: pd.DataFrame, value: str, *, scale: float, digits: int, multi: bool, hover: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """One bar trace per method over the benchmarks (x)."""
    cats = sorted(
        {_bench_label(h, b, multi) for h, b in zip(df["host"], df["benchmark"], strict=True)}
    )
    data = []
    for m in _methods_in(df):
        g = df.loc[df["method"] == m]
        data.append(
            {
                "type": "bar",
                "name": m,
                "x": [
                    _bench_label(h, b, multi)
                    for h, b in zip(g["host"], g["benchmark"], strict=True)
                ],
                "y": _r(g[value].to_numpy(dtype=float) * scale, digits),
                "marker": {"color": METHOD_COLORS.get(m, "#333")},
                "hovertemplate": f"%{{x}}, {m}: {hover}<extra></extra>",
            }
        )
    return data, cats


def _speedup_section(page: _Page, ev: Evaluation) -> None:
    sp = ev.speedup
    if sp.empty:
        return
    multi = sp["host"].nunique() > 1
    span = "process lifetimes" if ev.settings["span"] == "process" else "iteration spans"
    page.section(
        "speedup",
        "Runtime speedup",
        "How much machine time a duet saves against running A and B one after the other "
        f"(thesis eq. 5.1, from the sides' {span}): mean seqn cost per repetition (A's run + "
        "B's run) over mean duet cost (first start to last end). 2x is the limit.",
    )
    data, cats = _grouped_bars(sp, "speedup", scale=1, digits=3, multi=multi, hover="%{y:.2f}x")
    lines = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "y0": y,
            "y1": y,
            "line": {"dash": d, "color": "#444", "width": 1},
        }
        for y, d in ((1.0, "dot"), (2.0, "dash"))
    ]
    page.figure(
        {
            "data": data,
            "layout": {
                "title": {"text": "Runtime speedup over seqn (dotted: none, dashed: the 2x limit)"},
                "barmode": "group",
                "xaxis": {
                    "title": {"text": "benchmark"},
                    "categoryorder": "array",
                    "categoryarray": cats,
                    "automargin": True,
                },
                "yaxis": {
                    "title": {"text": "speedup (x)"},
                    "ticksuffix": "x",
                    "rangemode": "tozero",
                    "range": [0, 2.1],
                },
                "shapes": lines,
                "legend": {"title": {"text": "method"}},
            },
        },
        height=400,
        wide=False,
    )
    rows = [
        [
            _esc(_bench_label(r["host"], r["benchmark"], multi)),
            _esc(r["method"]),
            fmt.duration(r["seqn_cost_ns"]),
            fmt.duration(r["duet_cost_ns"]),
            fmt.times(r["speedup"]),
            f"{r['seqn_runs']}/{r['duet_runs']}",
        ]
        for r in _sorted(sp, ["host", "suite", "benchmark", "method"]).to_dict("records")
    ]
    page.add(
        _table(["benchmark", "method", "seqn cost", "duet cost", "speedup", "runs seqn/duet"], rows)
    )
    page.end_section()


def _accuracy_section(page: _Page, ev: Evaluation) -> None:
    page.section(
        "accuracy",
        "Variability and accuracy",
        "CV: standard deviation over mean of the iteration times of one side (thesis 4.3.1). "
        "Relative CI width: how narrow the interval of a test is -- for the ratio test the "
        "width of the interval of B/A, for the difference test the width divided by A's mean "
        "(METHODS.md 5.1, 5.2). Narrower is more accurate.",
    )
    multi = ev.tests["host"].nunique() > 1 if not ev.tests.empty else False
    if not ev.cv.empty:
        c = _sorted(ev.cv, ["host", "suite", "benchmark", "method"])
        xcat = [
            [_bench_label(h, b, multi) for h, b in zip(c["host"], c["benchmark"], strict=True)],
            list(c["method"]),
        ]
        data = []
        for p in ("A", "B"):
            sel = (c["pair"] == p).to_numpy()
            data.append(
                {
                    "type": "bar",
                    "name": p,
                    "x": [list(np.asarray(xcat[0])[sel]), list(np.asarray(xcat[1])[sel])],
                    "y": _r(c.loc[sel, "cv"].to_numpy(dtype=float) * 100, 2),
                    "marker": {"color": SIDE_COLORS[p]},
                    "hovertemplate": f"{p}: CV %{{y:.2f}} %<extra></extra>",
                }
            )
        page.figure(
            {
                "data": data,
                "layout": _grouped_percent_bars(
                    "Coefficient of variation of iteration times",
                    "benchmark / method",
                    "CV (%)",
                    "side",
                ),
            },
            height=400,
            wide=False,
        )
    ci = ev.tests.loc[ev.tests["test"].isin(["ratio", "diff"])] if not ev.tests.empty else ev.tests
    if not ci.empty:
        c = _sorted(ci, ["host", "suite", "benchmark", "test", "method"])
        data = []
        for m in _methods_in(c):
            g = c.loc[c["method"] == m]
            data.append(
                {
                    "type": "bar",
                    "name": m,
                    "x": [
                        [
                            _bench_label(h, b, multi)
                            for h, b in zip(g["host"], g["benchmark"], strict=True)
                        ],
                        [TEST_NAMES[t].replace(" CI test", "") for t in g["test"]],
                    ],
                    "y": _r(g["ci_width"].to_numpy(dtype=float) * 100, 3),
                    "marker": {"color": METHOD_COLORS.get(m, "#333")},
                    "hovertemplate": f"{m}: %{{y:.2f}} %<extra></extra>",
                }
            )
        page.figure(
            {
                "data": data,
                "layout": _grouped_percent_bars(
                    f"Relative CI width ({ev.settings['confidence'] * 100:g} % intervals)",
                    "benchmark / test",
                    "relative CI width (%)",
                    "method",
                ),
            },
            height=400,
            wide=False,
        )
    # the tests table
    by = {t: g for t, g in ev.tests.groupby("test")} if not ev.tests.empty else {}
    key = ["host", "suite", "benchmark", "method"]
    idx = {t: {tuple(r[k] for k in key): r for r in g.to_dict("records")} for t, g in by.items()}
    cvw = {}
    for r in ev.cv.to_dict("records"):
        cvw[(r["host"], r["suite"], r["benchmark"], r["method"], r["pair"])] = r["cv"]
    rows = []
    for r in _sorted(by.get("ratio", pd.DataFrame(columns=key)), key).to_dict("records"):
        k = tuple(r[c] for c in key)
        d = idx.get("diff", {}).get(k, {})
        u = idx.get("utest", {}).get(k, {})
        rows.append(
            [
                _esc(_bench_label(r["host"], r["benchmark"], multi)),
                _esc(r["method"]),
                fmt.pct(cvw.get((*k, "A"))),
                fmt.pct(cvw.get((*k, "B"))),
                fmt.pct(r["change"], signed=True, digits=2),
                fmt.pct(r["ci_width"], digits=2),
                _verdict_html(r["verdict"]),
                fmt.pct(d.get("change"), signed=True, digits=2),
                fmt.pct(d.get("ci_width"), digits=2),
                _verdict_html(d.get("verdict", "no data")),
                fmt.pvalue(u.get("rank_p_value")),
                _verdict_html(u.get("verdict", "no data")),
            ]
        )
    page.add("<h3>Every test, per host</h3>")
    page.add(
        _table(
            [
                "benchmark",
                "method",
                "CV A",
                "CV B",
                "ratio: change",
                "width",
                "verdict",
                "diff: change",
                "width",
                "verdict",
                "U: p",
                "verdict",
            ],
            rows,
        )
    )
    _aa_part(page, ev)
    _shuffle_part(page, ev, multi)
    page.end_section()


def _aa_part(page: _Page, ev: Evaluation) -> None:
    page.add("<h3>A/A accuracy</h3>")
    if not ev.aa_benchmarks or ev.aa.empty:
        page.add(
            '<p class="note">No A/A benchmarks. A benchmark without a B side in duet.yml is '
            "an A/A experiment; for an iterations table, pass <code>--aa</code>.</p>"
        )
        return
    page.add(
        f'<p class="note">Share of the A/A benchmarks ({_esc(", ".join(ev.aa_benchmarks))}) '
        "judged <i>same</i>: the higher, the fewer false alarms (thesis fig. 5.6, 5.7).</p>"
    )
    a = ev.aa
    multi = a["host"].nunique() > 1 or a["suite"].nunique() > 1
    data = []
    for m in _methods_in(a):
        g = a.loc[a["method"] == m]
        x = [TEST_NAMES[t] for t in g["test"]]
        if multi:
            x = [f"{t} ({h}, {s})" for t, h, s in zip(x, g["host"], g["suite"], strict=True)]
        data.append(
            {
                "type": "bar",
                "name": m,
                "x": x,
                "y": _r(g["share_same"].to_numpy(dtype=float) * 100, 1),
                "customdata": [
                    [int(s), int(b)] for s, b in zip(g["same"], g["benchmarks"], strict=True)
                ],
                "marker": {"color": METHOD_COLORS.get(m, "#333")},
                "hovertemplate": f"{m}: %{{y:.0f}} % (%{{customdata[0]}}/%{{customdata[1]}})<extra></extra>",
            }
        )
    page.figure(
        {
            "data": data,
            "layout": {
                "title": {"text": "A/A benchmarks judged 'same'"},
                "barmode": "group",
                "xaxis": {
                    "title": {"text": "test"},
                    "categoryorder": "array",
                    "categoryarray": [TEST_NAMES[t] for t in ("ratio", "diff", "utest")],
                },
                "yaxis": {
                    "title": {"text": "judged same (% of A/A benchmarks)"},
                    "ticksuffix": " %",
                    "range": [0, 105],
                },
                "legend": {"title": {"text": "method"}},
            },
        },
        height=380,
        wide=False,
    )


def _shuffle_part(page: _Page, ev: Evaluation, multi: bool) -> None:
    sh = ev.shuffle.loc[ev.shuffle["test"] == "ratio"] if not ev.shuffle.empty else ev.shuffle
    if sh.empty or sh["width_ratio"].isna().all():
        return
    page.add(
        '<h3>Shuffle check</h3><p class="note">The ratio test\'s CI width with the runs paired '
        "as measured and after re-pairing every B run with the A run of another repetition "
        f"(mean of {ev.settings['shuffles']} shuffles; duet paper RQ2). A ratio above 1 means "
        "pairing A and B of the same run cancels interference they shared.</p>"
    )
    data, cats = _grouped_bars(sh, "width_ratio", scale=1, digits=3, multi=multi, hover="%{y:.2f}")
    page.figure(
        {
            "data": data,
            "layout": {
                "title": {"text": "CI width shuffled / paired (dotted: no effect)"},
                "barmode": "group",
                "xaxis": {
                    "title": {"text": "benchmark"},
                    "categoryorder": "array",
                    "categoryarray": cats,
                    "automargin": True,
                },
                "yaxis": {"title": {"text": "width ratio"}, "rangemode": "tozero"},
                "shapes": [
                    {
                        "type": "line",
                        "xref": "paper",
                        "x0": 0,
                        "x1": 1,
                        "y0": 1,
                        "y1": 1,
                        "line": {"dash": "dot", "color": "#444", "width": 1},
                    }
                ],
                "legend": {"title": {"text": "method"}},
            },
        },
        height=380,
        wide=False,
    )
    rows = [
        [
            _esc(_bench_label(r["host"], r["benchmark"], multi)),
            _esc(r["method"]),
            str(r["runs"]),
            fmt.pct(r["width_paired"], digits=2),
            fmt.pct(r["width_shuffled"], digits=2),
            fmt.ratio(r["width_ratio"]),
        ]
        for r in _sorted(sh, ["host", "suite", "benchmark", "method"]).to_dict("records")
    ]
    page.add(
        _table(["benchmark", "method", "runs", "width paired", "width shuffled", "ratio"], rows)
    )


HOST_FIELDS = (
    ("cpu_model", "CPU"),
    ("cores", "cores"),
    ("memory_bytes", "memory"),
    ("kernel", "kernel"),
    ("os", "OS"),
    ("virtualization", "virtualization"),
    ("cpu_governor", "governor"),
    ("python", "Python"),
    ("container_engines", "container engines"),
)


def _host_value(k: str, v: Any) -> str:
    if v is None or v == "":
        return "-"
    if k == "memory_bytes" and fmt.num(v) is not None:
        return f"{float(v) / 2**30:.1f} GiB"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) or "-"
    return str(v)


def _hosts_section(page: _Page, ev: Evaluation, loaded: Loaded) -> None:
    page.section("hosts", "Host configuration", "The machines the runs executed on, as detected.")
    infos: dict[str, dict[str, Any]] = {}
    root = Path(loaded.source)
    if root.is_dir():  # read (and checked) by `duet process` already
        infos = ResultsStore.open(root).hosts()
    if not infos and not ev.hosts.empty:
        for r in ev.hosts.to_dict("records"):
            infos[str(r["host"])] = {
                k.removeprefix("host_"): v for k, v in r.items() if k.startswith("host_")
            }
    if not infos:
        page.add('<p class="note">No host information in this table.</p>')
        page.end_section()
        return
    hosts = sorted(infos)
    rows = [
        [_esc(label)] + [_esc(_host_value(k, infos[h].get(k))) for h in hosts]
        for k, label in HOST_FIELDS
    ]
    page.add(_table(["", *hosts], rows, left=len(hosts) + 1))
    for h, info in sorted(infos.items()):
        arts = info.get("artifacts") or {}
        if not isinstance(arts, dict) or not arts:
            continue
        blocks = []
        for name, res in arts.items():
            text = res.get("stdout", "") if isinstance(res, dict) else str(res)
            text = text if len(text) <= 6000 else text[:6000] + "\n..."
            blocks.append(f"<h4>{_esc(name)}</h4><pre>{_esc(text)}</pre>")
        page.add(f"<details><summary>artifacts of {_esc(h)}</summary>{''.join(blocks)}</details>")
    page.end_section()


def _settings_section(page: _Page, ev: Evaluation, loaded: Loaded) -> None:
    page.section("settings", "Settings and notes")
    st = ev.settings
    rows = [
        [_esc(k), _esc(", ".join(f"{x:g}" for x in v) if isinstance(v, list) else v)]
        for k, v in st.items()
    ]
    page.add(_table(["setting", "value"], rows))
    notes = list(loaded.problems) + list(ev.problems)
    runs = loaded.excluded.get("runs") or {}
    its = loaded.excluded.get("iterations") or {}
    excl = [f"{n} {k} run(s)" for k, n in sorted(runs.items())] + [
        f"{n} {k} iteration(s)" for k, n in sorted(its.items())
    ]
    if excl:
        page.add(f'<p class="note">Excluded: {_esc(", ".join(excl))}.</p>')
    if notes:
        page.add('<ul class="problems">' + "".join(f"<li>{_esc(p)}</li>" for p in notes) + "</ul>")
    page.end_section()


_CSS = """
:root { --a: #1f77b4; --b: #ff7f0e; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #222; background: #f6f7f9; line-height: 1.45; }
header { background: #1d2330; color: #fff; padding: 18px 28px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header .meta { color: #c8cdd6; font-size: 13px; }
nav { background: #fff; border-bottom: 1px solid #ddd; padding: 8px 28px; position: sticky; top: 0;
      z-index: 10; font-size: 14px; }
nav a { margin-right: 16px; color: #1a55a4; text-decoration: none; }
main { max-width: 1400px; margin: 0 auto; padding: 12px 28px 40px; }
section { background: #fff; border: 1px solid #e1e4e8; border-radius: 6px; padding: 14px 20px;
          margin: 18px 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr));
          gap: 10px 24px; align-items: start; }
section > * { grid-column: 1 / -1; min-width: 0; }
section > .plot:not(.wide) { grid-column: auto; }
section h2 { margin: 4px 0; font-size: 19px; }
section h3 { margin: 10px 0 0; font-size: 16px; }
p.intro { margin: 0; color: #444; font-size: 14px; max-width: 1100px; }
p.note { margin: 2px 0; color: #555; font-size: 13px; }
.tablewrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e6e6e6; text-align: right; white-space: nowrap; }
th { background: #f0f2f5; font-weight: 600; }
th.l, td.l { text-align: left; }
.verdict { padding: 1px 8px; border-radius: 10px; font-weight: 600; font-size: 12.5px; }
.v-slower { background: #fde0e0; color: #b00020; }
.v-faster { background: #dff5e1; color: #116a2b; }
.v-same { background: #eceff3; color: #333; }
.v-nodata { background: #fff4d6; color: #7a5b00; }
table.verdicts td { font-size: 14px; }
pre { background: #f6f8fa; padding: 8px; font-size: 12px; overflow-x: auto; max-height: 300px; }
details summary { cursor: pointer; color: #1a55a4; }
.legend-key { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: middle; }
"""


def _count_runs(df: pd.DataFrame) -> int:
    """Runs as DESIGN.md counts them: a duet run holds both sides, a seqn run one."""
    if df.empty:
        return 0
    if "run_id" in df.columns:
        return int(df["run_id"].nunique())
    keys = [c for c in ("host", "suite", "benchmark", "method", "run") if c in df.columns]
    per = df.groupby(keys, observed=True)["pair"].nunique().reset_index()
    return int(np.where(per["method"].astype(str) == "seqn", per["pair"], 1).sum())


def render_html(ev: Evaluation, loaded: Loaded, opts: ReportOptions | None = None) -> str:
    """The complete, self-contained report (a string of HTML)."""
    from plotly.offline import get_plotlyjs

    opts = opts or ReportOptions()
    df = loaded.table
    page = _Page()
    _verdicts_section(page, ev)
    _ci_section(page, ev)
    _timeline_section(page, df, opts)
    _distribution_section(page, df, ev)
    _mds_section(page, ev)
    _overlap_section(page, ev)
    _speedup_section(page, ev)
    _accuracy_section(page, ev)
    _hosts_section(page, ev, loaded)
    _settings_section(page, ev, loaded)
    title = opts.title or f"duetbench report: {loaded.experiment or loaded.source}"
    methods = ", ".join(
        f'<span class="legend-key" style="background:{METHOD_COLORS[m]}"></span> {m}'
        for m in METHODS
    )
    sides = ", ".join(
        f'<span class="legend-key" style="background:{SIDE_COLORS[p]}"></span> {p}'
        for p in ("A", "B")
    )
    n_runs = _count_runs(df)
    meta = (
        f"source {_esc(loaded.source)} &middot; {df['benchmark'].nunique()} benchmark(s), "
        f"{n_runs} runs, {len(df)} iterations &middot; duetbench {_esc(__version__)} &middot; "
        f"generated {_esc(time.strftime('%Y-%m-%d %H:%M:%S %Z'))}"
    )
    nav = "".join(f'<a href="#{a}">{_esc(t)}</a>' for a, t in page.toc)
    plotly_js = get_plotlyjs()
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title>
<style>{_CSS}</style>
<script type="text/javascript">{plotly_js}</script>
<script>window.__duetFigs = []; window.__duetConfig = {json.dumps(_PLOT_CONFIG)};</script>
</head>
<body>
<header><h1>{_esc(title)}</h1><div class="meta">{meta}</div>
<div class="meta">colours: sides {sides} &middot; methods {methods}</div></header>
<nav>{nav}</nav>
<main>
{"".join(page.parts)}
</main>
<script>
(function () {{
  var figs = window.__duetFigs, drawn = [], failed = 0;
  figs.forEach(function (f) {{
    try {{
      drawn.push(Plotly.newPlot(f[0], f[1].data, f[1].layout, window.__duetConfig));
    }} catch (e) {{
      failed += 1;
      setTimeout(function () {{ throw e; }});
    }}
  }});
  Promise.all(drawn).then(function () {{
    document.body.setAttribute("data-plots", String(drawn.length));
    document.body.setAttribute("data-plot-errors", String(failed));
    document.body.setAttribute("data-rendered-ms", performance.now().toFixed(0));
  }});
}})();
</script>
</body>
</html>
"""


# ---------------------------------------------------------------------- Markdown


def _md_bench_label(host: Any, bench: Any, multi_host: bool) -> str:
    return fmt.md_text(_bench_label(host, bench, multi_host))


def _md_table(headers: list[str], rows: list[list[str]], left: int = 2) -> list[str]:
    def cell(c: str) -> str:
        return fmt.md_cell(c)  # user text in it is already fmt.md_text

    return [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|",
        *["| " + " | ".join(cell(c) for c in r) + " |" for r in rows],
    ]


def render_markdown(ev: Evaluation, loaded: Loaded) -> str:
    """The report's tables and verdicts in GitHub-flavoured Markdown ($GITHUB_STEP_SUMMARY)."""
    st = ev.settings
    multi = ev.tests["host"].nunique() > 1 if not ev.tests.empty else False
    icons = {"slower": "🔴 slower", "faster": "🟢 faster"}
    out = [
        f"## duetbench report: {fmt.md_text(loaded.experiment or loaded.source)}",
        "",
        f"{TEST_NAMES.get(st['test'], st['test'])}, {st['confidence'] * 100:g} % {st['interval']} "
        "interval over runs; change = B against A, **+ means B is slower**.",
        "",
    ]
    rows = [
        [
            fmt.md_text(r["benchmark"]),
            str(r["method"]),
            fmt.duration(r["mean_a_ns"]),
            fmt.duration(r["mean_b_ns"]),
            fmt.pct(r["change"], signed=True, digits=2),
            fmt.ci(r["ci_low"], r["ci_high"]),
            fmt.pvalue(verdict_p(r, st["test"])),
            str(r["runs"]),
            icons.get(str(r["verdict"]), str(r["verdict"])),
        ]
        for r in _sorted(ev.verdicts, ["suite", "benchmark", "method"]).to_dict("records")
    ]
    out += _md_table(
        ["benchmark", "method", "mean A", "mean B", "change", "CI", "p (rank)", "runs", "verdict"],
        rows,
    )
    if not ev.speedup.empty:
        out += ["", "### Runtime speedup over seqn (eq. 5.1, limit 2x)", ""]
        out += _md_table(
            ["benchmark", "method", "seqn cost", "duet cost", "speedup"],
            [
                [
                    _md_bench_label(r["host"], r["benchmark"], multi),
                    str(r["method"]),
                    fmt.duration(r["seqn_cost_ns"]),
                    fmt.duration(r["duet_cost_ns"]),
                    fmt.times(r["speedup"]),
                ]
                for r in _sorted(ev.speedup, ["host", "suite", "benchmark", "method"]).to_dict(
                    "records"
                )
            ],
        )
    # accuracy: relative CI widths and verdicts of every test
    by = {t: g for t, g in ev.tests.groupby("test")} if not ev.tests.empty else {}
    key = ["host", "suite", "benchmark", "method"]
    idx = {t: {tuple(r[k] for k in key): r for r in g.to_dict("records")} for t, g in by.items()}
    rows = []
    for r in _sorted(by.get("ratio", pd.DataFrame(columns=key)), key).to_dict("records"):
        k = tuple(r[c] for c in key)
        d = idx.get("diff", {}).get(k, {})
        u = idx.get("utest", {}).get(k, {})
        rows.append(
            [
                _md_bench_label(r["host"], r["benchmark"], multi),
                str(r["method"]),
                fmt.pct(r["ci_width"], digits=2),
                str(r["verdict"]),
                fmt.pct(d.get("ci_width"), digits=2),
                str(d.get("verdict", "-")),
                fmt.pvalue(u.get("rank_p_value")),
                str(u.get("verdict", "-")),
            ]
        )
    out += ["", "### Relative CI width and verdict of every test", ""]
    out += _md_table(
        ["benchmark", "method", "ratio width", "ratio", "diff width", "diff", "U p", "U"], rows
    )
    if ev.aa_benchmarks and not ev.aa.empty:
        aa = fmt.md_text(", ".join(ev.aa_benchmarks))
        out += ["", f"### A/A: benchmarks judged same ({aa})", ""]
        rows = []
        for k, g in _sorted(ev.aa, ["host", "suite", "method"]).groupby(
            ["host", "suite", "method"], sort=False
        ):
            cells = {r["test"]: fmt.share(r["same"], r["benchmarks"]) for r in g.to_dict("records")}
            rows.append(
                [*map(fmt.md_text, k), *(cells.get(t, "-") for t in ("ratio", "diff", "utest"))]
            )
        out += _md_table(["host", "suite", "method", "ratio", "diff", "U test"], rows)
    if not ev.mds.empty:
        largest = max(st["slowdowns"])
        out += ["", "### Minimal detectable slowdown", ""]
        rows = []
        for k, g in _sorted(ev.mds, key).groupby(key, sort=False):
            recs = {r["test"]: r for r in g.to_dict("records")}
            first = next(iter(recs.values()))
            rows.append(
                [
                    _md_bench_label(k[0], k[2], multi),
                    "yes" if first["aa"] else "",
                    str(k[3]),
                    *[
                        _mds_text(recs.get(t, {}).get("mds"), largest)
                        for t in ("ratio", "diff", "utest")
                    ],
                ]
            )
        out += _md_table(["benchmark", "A/A", "method", "ratio", "diff", "U test"], rows)
    if not ev.overlap.empty:
        grid = sorted({float(m) for m in ev.overlap["min_overlap"]})
        out += [
            "",
            "<details><summary>Relative overlap time of aduet runs by m (eq. 5.2)</summary>",
            "",
        ]
        rows = []
        for (h, _s, b), g in ev.overlap.groupby(["host", "suite", "benchmark"], sort=True):
            vals = dict(
                zip(g["min_overlap"].astype(float), g["relative_overlap_time"], strict=True)
            )
            rows.append(
                [_md_bench_label(h, b, multi), *[fmt.pct(vals.get(m), digits=0) for m in grid]]
            )
        out += _md_table(["benchmark", *[f"m={m * 100:g}%" for m in grid]], rows, left=1)
        out += ["", "</details>"]
    sh = ev.shuffle.loc[ev.shuffle["test"] == "ratio"] if not ev.shuffle.empty else ev.shuffle
    if not sh.empty:
        out += [
            "",
            "<details><summary>Shuffle check (ratio-test CI width, shuffled / paired)</summary>",
            "",
        ]
        out += _md_table(
            ["benchmark", "method", "width paired", "width shuffled", "ratio"],
            [
                [
                    _md_bench_label(r["host"], r["benchmark"], multi),
                    str(r["method"]),
                    fmt.pct(r["width_paired"], digits=2),
                    fmt.pct(r["width_shuffled"], digits=2),
                    fmt.ratio(r["width_ratio"]),
                ]
                for r in _sorted(sh, key).to_dict("records")
            ],
        )
        out += ["", "</details>"]
    notes = list(loaded.problems) + list(ev.problems)
    if notes:
        out += ["", "Problems:", *[f"- {fmt.md_text(p)}" for p in notes]]
    command = fmt.md_code(f"duet report {shlex.quote(str(loaded.source))}")
    out += ["", f"<sub>duetbench {__version__}; full report: {command}</sub>"]
    return "\n".join(out) + "\n"
