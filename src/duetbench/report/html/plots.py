"""The figures' shared parts: colours, the Plotly layout template, trace helpers.

Colours are fixed for the whole report: side A blue, side B orange; seqn grey, aduet
green, sduet purple.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import formatting as fmt

SIDE_COLORS = {"A": "#1f77b4", "B": "#ff7f0e"}
METHOD_COLORS = {"seqn": "#6b6b6b", "aduet": "#2ca02c", "sduet": "#9467bd", "inproc": "#d62728"}
METHODS = ("seqn", "aduet", "sduet", "inproc")
METHOD_SYMBOLS = {"seqn": "circle", "aduet": "square", "sduet": "diamond", "inproc": "cross"}
TEST_DASH = {"ratio": "solid", "diff": "dash", "utest": "dot", "utest-pooled": "dashdot"}
TEST_NAMES = {
    "ratio": "ratio CI test",
    "diff": "difference CI test",
    "utest": "U test",
    "utest-pooled": "pooled U test (not calibrated)",
}
#: a small layout template instead of Plotly's default (which weighs ~7 kB per figure)
TEMPLATE = {
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
PLOT_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


def grouped_percent_bars(title: str, xtitle: str, ytitle: str, legend: str) -> dict[str, Any]:
    """The layout of a grouped bar chart of percentages starting at zero."""
    return {
        "title": {"text": title},
        "barmode": "group",
        "xaxis": {"title": {"text": xtitle}, "automargin": True},
        "yaxis": {"title": {"text": ytitle}, "ticksuffix": " %", "rangemode": "tozero"},
        "legend": {"title": {"text": legend}},
    }


def method_key(m: Any) -> int:
    return METHODS.index(m) if m in METHODS else 9


def methods_in(df: pd.DataFrame) -> list[str]:
    return sorted({str(m) for m in df["method"]}, key=method_key) if not df.empty else []


def rounded(x: Any, digits: int = 3) -> Any:
    """Round floats for compact JSON; None for NaN."""
    if isinstance(x, np.ndarray | list | tuple | pd.Series):
        arr = np.asarray(x, dtype=np.float64)
        return [None if np.isnan(v) else round(float(v), digits) for v in arr]
    v = fmt.num(x)
    return None if v is None else round(v, digits)


def label_margin(labels: Any) -> int:
    """A left margin wide enough for the longest category label (instead of automargin,
    which costs Plotly extra layout passes per plot)."""
    longest = max((len(str(x)) for x in labels), default=0)
    return int(min(max(70, 7.5 * longest + 24), 360))


def bench_name(host: Any, bench: Any, multi_host: bool) -> str:
    return f"{bench} @{host}" if multi_host else str(bench)


def line_trace(
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


def grouped_bars(
    df: pd.DataFrame, value: str, *, scale: float, digits: int, multi: bool, hover: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """One bar trace per method over the benchmarks (x)."""
    cats = sorted(
        {bench_name(h, b, multi) for h, b in zip(df["host"], df["benchmark"], strict=True)}
    )
    data = []
    for m in methods_in(df):
        g = df.loc[df["method"] == m]
        data.append(
            {
                "type": "bar",
                "name": m,
                "x": [
                    bench_name(h, b, multi) for h, b in zip(g["host"], g["benchmark"], strict=True)
                ],
                "y": rounded(g[value].to_numpy(dtype=float) * scale, digits),
                "marker": {"color": METHOD_COLORS.get(m, "#333")},
                "hovertemplate": f"%{{x}}, {m}: {hover}<extra></extra>",
            }
        )
    return data, cats


def hline(y: float, dash: str) -> dict[str, Any]:
    """A horizontal line across the plot at ``y`` (a reference: no change, a limit)."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": y,
        "y1": y,
        "line": {"dash": dash, "color": "#444", "width": 1},
    }


def bars_layout(
    title: str, xtitle: str, categories: list[str], yaxis: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """The layout of grouped bars per method over ``categories`` (benchmarks, tests)."""
    return {
        "title": {"text": title},
        "barmode": "group",
        "xaxis": {
            "title": {"text": xtitle},
            "categoryorder": "array",
            "categoryarray": categories,
            **({"automargin": True} if xtitle == "benchmark" else {}),
        },
        "yaxis": yaxis,
        **extra,
        "legend": {"title": {"text": "method"}},
    }
