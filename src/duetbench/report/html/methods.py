"""How the methods did: minimal detectable slowdown, aduet overlaps, runtime speedup."""

from __future__ import annotations

from typing import Any

from ...analysis.evaluate import Evaluation
from ..evaluation_tables import mds_table, speedup_table
from .page import Page, html_table
from .plots import (
    METHOD_COLORS,
    METHOD_SYMBOLS,
    TEST_DASH,
    TEST_NAMES,
    bars_layout,
    bench_name,
    grouped_bars,
    hline,
    line_trace,
    methods_in,
    rounded,
)


def mds_section(page: Page, ev: Evaluation) -> None:
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
            for m in methods_in(g):
                gt = g.loc[(g["method"] == m) & (g["test"] == t)].sort_values("slowdown")
                if gt.empty:
                    continue
                data.append(
                    line_trace(
                        rounded(gt["slowdown"].to_numpy(dtype=float) * 100, 2),
                        rounded(gt["share_slower"].to_numpy(dtype=float) * 100, 1),
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
    page.add("<h3>MDS per benchmark</h3>")
    page.add(html_table(mds_table(ev)))
    page.end_section()


def overlap_section(page: Page, ev: Evaluation) -> None:
    ov = ev.overlap
    if ov.empty:
        return
    m_pair = ev.settings.compare.min_overlap
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
                line_trace(
                    rounded(g["min_overlap"].to_numpy(dtype=float) * 100, 1),
                    rounded(g["relative_overlap_time"].to_numpy(dtype=float) * 100, 2),
                    bench_name(host, bench, multi),
                    palette[i % len(palette)],
                    hovertemplate="%{fullData.name}: m = %{x} %: %{y:.1f} %<extra></extra>",
                )
            )
    else:
        for m, g in ov.groupby("min_overlap", sort=True):
            y = rounded(g["relative_overlap_time"].to_numpy(dtype=float) * 100, 2)
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
            "layout": _by_m_layout(
                "Relative overlap time of aduet runs by m",
                "relative overlap time (%)",
                [0, 102],
                vline,
                "benchmark",
            ),
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
                line_trace(
                    rounded(g["min_overlap"].to_numpy(dtype=float) * 100, 1),
                    rounded(g["share_same"].to_numpy(dtype=float) * 100, 1),
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
                "layout": _by_m_layout(
                    "A/A, aduet: judged neither slower nor faster, by m",
                    "judged same (% of A/A benchmarks)",
                    [-3, 103],
                    vline,
                    "test",
                ),
            },
            height=420,
            wide=False,
        )
    page.end_section()


def _by_m_layout(
    title: str, ytitle: str, yrange: list[float], vline: dict[str, Any], legend: str
) -> dict[str, Any]:
    """The layout of a percentage by minimum overlap ratio m, the analysis's m marked."""
    return {
        "title": {"text": title},
        "xaxis": {"title": {"text": "minimum overlap ratio m (%)"}, "ticksuffix": " %"},
        "yaxis": {"title": {"text": ytitle}, "ticksuffix": " %", "range": yrange},
        "shapes": [vline],
        "legend": {"title": {"text": legend}},
    }


def speedup_section(page: Page, ev: Evaluation) -> None:
    sp = ev.speedup
    if sp.empty:
        return
    multi = sp["host"].nunique() > 1
    span = "process lifetimes" if ev.settings.span == "process" else "iteration spans"
    page.section(
        "speedup",
        "Runtime speedup",
        "How much machine time a duet saves against running A and B one after the other "
        f"(thesis eq. 5.1, from the sides' {span}): mean seqn cost per repetition (A's run + "
        "B's run) over mean duet cost (first start to last end). 2x is the limit.",
    )
    data, cats = grouped_bars(sp, "speedup", scale=1, digits=3, multi=multi, hover="%{y:.2f}x")
    page.figure(
        {
            "data": data,
            "layout": bars_layout(
                "Runtime speedup over seqn (dotted: none, dashed: the 2x limit)",
                "benchmark",
                cats,
                {
                    "title": {"text": "speedup (x)"},
                    "ticksuffix": "x",
                    "rangemode": "tozero",
                    "range": [0, 2.1],
                },
                shapes=[hline(1.0, "dot"), hline(2.0, "dash")],
            ),
        },
        height=400,
        wide=False,
    )
    page.add(html_table(speedup_table(ev)))
    page.end_section()
