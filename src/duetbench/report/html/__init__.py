"""`duet report`: one self-contained HTML file of an evaluation.

The HTML embeds Plotly's JavaScript from the installed ``plotly`` package
(:func:`plotly.offline.get_plotlyjs`), so it opens offline in any browser: no CDN,
no network. Colours are fixed for the whole report: side A blue, side B orange;
seqn grey, aduet green, sduet purple, inproc red. When every plot has been drawn the page sets
``data-rendered-ms`` (milliseconds since navigation) and ``data-plots`` on ``<body>``.

One module per group of sections (``verdicts``, ``runs``, ``methods``, ``accuracy``,
``hosts``); ``page`` assembles the document from ``assets/report.css`` and
``assets/report.js``; ``plots`` holds the colours and the figures' shared parts.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..._version import __version__
from ...analysis.evaluate import Evaluation
from ...options import ReportOptions
from ...verdicts import VerdictTable
from ..markdown import report_markdown
from .accuracy import accuracy_section
from .hosts import hosts_section, settings_section
from .methods import mds_section, overlap_section, speedup_section
from .page import Page, esc
from .plots import METHOD_COLORS, METHODS, SIDE_COLORS
from .runs import distribution_section, timeline_section
from .verdicts import ci_section, verdicts_section

__all__ = ["ReportOptions", "render_html", "render_markdown"]


def count_runs(df: pd.DataFrame) -> int:
    """Runs as docs/architecture.md counts them: a duet run holds both sides, a seqn run
    one."""
    if df.empty:
        return 0
    if "run_id" in df.columns:
        return int(df["run_id"].nunique())
    keys = [c for c in ("host", "suite", "benchmark", "method", "run") if c in df.columns]
    per = df.groupby(keys, observed=True)["pair"].nunique().reset_index()
    return int(np.where(per["method"].astype(str) == "seqn", per["pair"], 1).sum())


def render_html(ev: Evaluation, verdicts: VerdictTable, opts: ReportOptions | None = None) -> str:
    """The complete, self-contained report (a string of HTML): ``verdicts`` are the ones
    every command shows, their dataset (as analysed) what the report draws."""
    opts = opts or ReportOptions(evaluate=ev.settings)
    dataset = verdicts.dataset
    df = dataset.table
    page = Page()
    verdicts_section(page, verdicts)
    ci_section(page, ev)
    timeline_section(page, df, opts)
    distribution_section(page, df, ev)
    mds_section(page, ev)
    overlap_section(page, ev)
    speedup_section(page, ev)
    accuracy_section(page, ev)
    hosts_section(page, ev, dataset)
    settings_section(page, ev, dataset)
    title = opts.title or f"duetbench report: {dataset.name}"
    methods = ", ".join(
        f'<span class="legend-key" style="background:{METHOD_COLORS[m]}"></span> {m}'
        for m in METHODS
    )
    sides = ", ".join(
        f'<span class="legend-key" style="background:{SIDE_COLORS[p]}"></span> {p}'
        for p in ("A", "B")
    )
    meta = (
        f"source {esc(dataset.source)} &middot; {df['benchmark'].nunique()} benchmark(s), "
        f"{count_runs(df)} runs, {len(df)} iterations &middot; duetbench {esc(__version__)} "
        f"&middot; generated {esc(time.strftime('%Y-%m-%d %H:%M:%S %Z'))}"
    )
    header = (
        f'<div class="meta">{meta}</div>\n'
        f'<div class="meta">colours: sides {sides} &middot; methods {methods}</div>'
    )
    return page.document(title, header)


def render_markdown(ev: Evaluation, verdicts: VerdictTable) -> str:
    """The report's tables and verdicts in Markdown (``duetbench.report.markdown``)."""
    return report_markdown(ev, verdicts)
