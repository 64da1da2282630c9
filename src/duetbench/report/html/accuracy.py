"""Variability and accuracy: CV, relative CI widths, every test, A/A, shuffle check."""

from __future__ import annotations

import numpy as np

from ...analysis.evaluate import Evaluation
from ..evaluation_tables import cv_table, shuffle_table, tests_table
from ..tables import sort_rows
from .page import Page, esc, html_table
from .plots import (
    METHOD_COLORS,
    SIDE_COLORS,
    TEST_NAMES,
    bars_layout,
    bench_name,
    grouped_bars,
    grouped_percent_bars,
    hline,
    methods_in,
    rounded,
)


def accuracy_section(page: Page, ev: Evaluation) -> None:
    page.section(
        "accuracy",
        "Variability and accuracy",
        "CV: standard deviation over mean of the iteration times of one side (thesis 4.3.1). "
        "Relative CI width: how narrow the interval of a test is -- for the ratio test the "
        "width of the interval of B/A, for the difference test the width divided by A's mean "
        '(docs/statistics.md, "The two CI tests"). Narrower is more accurate.',
    )
    multi = ev.tests["host"].nunique() > 1 if not ev.tests.empty else False
    if not ev.cv.empty:
        c = sort_rows(ev.cv, ["host", "suite", "benchmark", "method"])
        xcat = [
            [bench_name(h, b, multi) for h, b in zip(c["host"], c["benchmark"], strict=True)],
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
                    "y": rounded(c.loc[sel, "cv"].to_numpy(dtype=float) * 100, 2),
                    "marker": {"color": SIDE_COLORS[p]},
                    "hovertemplate": f"{p}: CV %{{y:.2f}} %<extra></extra>",
                }
            )
        page.figure(
            {
                "data": data,
                "layout": grouped_percent_bars(
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
        c = sort_rows(ci, ["host", "suite", "benchmark", "test", "method"])
        data = []
        for m in methods_in(c):
            g = c.loc[c["method"] == m]
            data.append(
                {
                    "type": "bar",
                    "name": m,
                    "x": [
                        [
                            bench_name(h, b, multi)
                            for h, b in zip(g["host"], g["benchmark"], strict=True)
                        ],
                        [TEST_NAMES[t].replace(" CI test", "") for t in g["test"]],
                    ],
                    "y": rounded(g["ci_width"].to_numpy(dtype=float) * 100, 3),
                    "marker": {"color": METHOD_COLORS.get(m, "#333")},
                    "hovertemplate": f"{m}: %{{y:.2f}} %<extra></extra>",
                }
            )
        page.figure(
            {
                "data": data,
                "layout": grouped_percent_bars(
                    f"Relative CI width ({ev.settings.compare.confidence * 100:g} % intervals)",
                    "benchmark / test",
                    "relative CI width (%)",
                    "method",
                ),
            },
            height=400,
            wide=False,
        )
    page.add("<h3>Every test, per host</h3>")
    page.add(html_table(cv_table(ev)))
    page.add(html_table(tests_table(ev)))
    _aa_part(page, ev)
    _shuffle_part(page, ev, multi)
    page.end_section()


def _aa_part(page: Page, ev: Evaluation) -> None:
    page.add("<h3>A/A accuracy</h3>")
    if not ev.aa_benchmarks or ev.aa.empty:
        page.add(
            '<p class="note">No A/A benchmarks. A benchmark without a B side in duet.yml is '
            "an A/A experiment; for an iterations table, pass <code>--aa</code>.</p>"
        )
        return
    page.add(
        f'<p class="note">Share of the A/A benchmarks ({esc(", ".join(ev.aa_benchmarks))}) '
        "judged <i>same</i>: the higher, the fewer false alarms (thesis fig. 5.6, 5.7).</p>"
    )
    a = ev.aa
    multi = a["host"].nunique() > 1 or a["suite"].nunique() > 1
    data = []
    for m in methods_in(a):
        g = a.loc[a["method"] == m]
        x = [TEST_NAMES[t] for t in g["test"]]
        if multi:
            x = [f"{t} ({h}, {s})" for t, h, s in zip(x, g["host"], g["suite"], strict=True)]
        data.append(
            {
                "type": "bar",
                "name": m,
                "x": x,
                "y": rounded(g["share_same"].to_numpy(dtype=float) * 100, 1),
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
            "layout": bars_layout(
                "A/A benchmarks judged neither slower nor faster",
                "test",
                [TEST_NAMES[t] for t in ("ratio", "diff", "utest")],
                {
                    "title": {"text": "judged same (% of A/A benchmarks)"},
                    "ticksuffix": " %",
                    "range": [0, 105],
                },
            ),
        },
        height=380,
        wide=False,
    )


def _shuffle_part(page: Page, ev: Evaluation, multi: bool) -> None:
    sh = ev.shuffle.loc[ev.shuffle["test"] == "ratio"] if not ev.shuffle.empty else ev.shuffle
    if sh.empty or sh["width_ratio"].isna().all():
        return
    page.add(
        '<h3>Shuffle check</h3><p class="note">The ratio test\'s CI width with the runs paired '
        "as measured and after re-pairing every B run with the A run of another repetition "
        f"(mean of {ev.settings.shuffles} shuffles; duet paper RQ2). A ratio above 1 means "
        "pairing A and B of the same run cancels interference they shared.</p>"
    )
    data, cats = grouped_bars(sh, "width_ratio", scale=1, digits=3, multi=multi, hover="%{y:.2f}")
    page.figure(
        {
            "data": data,
            "layout": bars_layout(
                "CI width shuffled / paired (dotted: no effect)",
                "benchmark",
                cats,
                {"title": {"text": "width ratio"}, "rangemode": "tozero"},
                shapes=[hline(1, "dot")],
            ),
        },
        height=380,
        wide=False,
    )
    page.add(html_table(shuffle_table(ev)))
