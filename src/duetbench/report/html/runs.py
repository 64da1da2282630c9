"""The runs as measured: timelines of duet runs and the distributions of iteration times."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...analysis import drop_warmup
from ...analysis.evaluate import Evaluation
from ...options import ReportOptions
from .. import formatting as fmt
from .page import Page
from .plots import SIDE_COLORS, bench_name, label_margin, methods_in, rounded

#: the methods whose runs hold both sides on one clock
TIMELINE_METHODS = ("aduet", "sduet", "inproc")


def timeline_section(page: Page, df: pd.DataFrame, opts: ReportOptions) -> None:
    duet = df.loc[df["method"].astype(str).isin(TIMELINE_METHODS).to_numpy()]
    if duet.empty:
        return
    page.section(
        "timelines",
        "Timelines of duet runs",
        f"The iterations of A (blue) and B (orange) of the first {opts.timeline_runs} run(s) "
        "of every method whose runs hold both sides, as intervals on the run's clock. In an "
        "aduet run the sides "
        "iterate independently, so their iterations drift apart; in an sduet run every "
        "iteration starts together; in an inproc run one process times them in turn. "
        "Pale bars are warm-up iterations.",
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
        for m in TIMELINE_METHODS:
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
                tr["base"] += rounded(st, 4)
                tr["x"] += rounded(du, 4)
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
        name = bench_name(bkey[0], bkey[-1], multi)
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
                    "margin": {"l": label_margin(labels)},
                },
            },
            height=max(240, 34 * len(labels) + 130),
        )
    page.end_section()


def box_stats(d: np.ndarray) -> dict[str, float]:
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


def distribution_section(page: Page, df: pd.DataFrame, ev: Evaluation) -> None:
    page.section(
        "distributions",
        "Iteration times",
        "Distribution of the iteration times of A (blue) and B (orange) per method, as used by "
        "the tests (warm-up excluded). Box: quartiles and median; whiskers: the furthest "
        "iterations within 1.5 IQR of the box; dashed line: the mean.",
    )
    data_df = drop_warmup(df, ev.settings.compare.warmup)  # the iterations the tests used
    multi = df["host"].nunique() > 1 if "host" in df.columns else False
    keys = ["host", "suite", "benchmark"] if "host" in data_df.columns else ["suite", "benchmark"]
    for bkey, g in data_df.groupby(keys, sort=True, dropna=False):
        bkey = bkey if isinstance(bkey, tuple) else (bkey,)
        methods = methods_in(g)
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
                s = box_stats(d.to_numpy(dtype=np.float64) / 1e6)
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
        name = bench_name(bkey[0], bkey[-1], multi)
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
