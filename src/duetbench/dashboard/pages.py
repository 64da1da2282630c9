"""The HTML of the dashboard: the index and one page per benchmark.

Pages load ``assets/dashboard.css`` and ``assets/dashboard.js`` (and the benchmark
pages ``assets/plotly.min.js``) by relative links, so the site works from ``file://``
and from any static host. Figures travel as JSON in a ``<script type="application/json">``
block that the page's script draws; every user string (benchmark, suite, version,
host, note, path) is escaped for HTML, and the JSON for its ``<script>`` element.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from typing import Any

from .._version import __version__
from ..history import Change, EnvironmentChange
from ..history.imported import IMPORTED
from ..report import formatting as fmt
from ..report.html.page import VERDICT_CLASS, esc, script_json
from ..schema import Verdict
from .figures import series_figure, sparkline, when
from .model import BenchmarkView, Latest, SeriesView, SiteData

#: at most this many regressions are listed at the top of the index
ATTENTION_LIMIT = 20
#: the experiments of a benchmark page are listed open up to this many, else folded
EXPERIMENTS_OPEN = 25


def _document(
    title: str, body: str, *, depth: int, plotly: bool = False, figs: list[Any] | None = None
) -> str:
    up = "../" * depth
    scripts = f'<script src="{up}assets/plotly.min.js"></script>\n' if plotly else ""
    data = (
        f'<script type="application/json" id="duet-figs">{script_json(figs)}</script>\n'
        if figs is not None
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="duetbench {esc(__version__)}">
<title>{esc(title)}</title>
<link rel="stylesheet" href="{up}assets/dashboard.css">
</head>
<body>
{body}
{data}{scripts}<script src="{up}assets/dashboard.js"></script>
</body>
</html>
"""


def _footer(site: SiteData) -> str:
    return (
        f"<footer>duetbench {esc(__version__)} &middot; generated "
        f"{esc(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))} from "
        f"<code>{esc(site.location)}</code> &middot; the series and the change detection are "
        "explained in docs/history.md of duetbench</footer>"
    )


def _filters(hosts: Iterable[tuple[str, str]], methods: Iterable[str], total: int) -> str:
    host_opts = "".join(f'<option value="{esc(fp)}">{esc(label)}</option>' for fp, label in hosts)
    method_opts = "".join(f'<option value="{esc(m)}">{esc(m)}</option>' for m in methods)
    return (
        '<form class="filters">'
        '<label>host <select data-filter="host"><option value="">all hosts</option>'
        f"{host_opts}</select></label> "
        '<label>method <select data-filter="method"><option value="">all methods</option>'
        f"{method_opts}</select></label> "
        '<label>benchmark <input type="search" data-filter="q" placeholder="name contains">'
        f'</label> <span class="shown" data-total="{total}"></span></form>'
    )


def _series_attrs(v: SeriesView, name: str) -> str:
    return (
        f'data-series data-host="{esc(v.key.host)}" data-method="{esc(v.key.method)}" '
        f'data-name="{esc(name.lower())}"'
    )


def _verdict(verdict: str) -> str:
    return f'<span class="verdict {VERDICT_CLASS.get(verdict, "")}">{esc(verdict)}</span>'


def _latest(latest: Latest | None) -> str:
    if latest is None:
        return '<span class="muted">-</span>'
    if latest.verdict == IMPORTED:  # a point of the absolute series, no comparison
        return f"{esc(latest.version_b)}: {_verdict(latest.verdict)}"
    if latest.version_a == latest.version_b:
        what = f"A/A at {esc(latest.version_b)}"
    else:
        what = f"{esc(latest.version_a)} &rarr; {esc(latest.version_b)}"
    return (
        f"{what}: {esc(fmt.pct(latest.change, signed=True))} "
        f'<span class="ci">{esc(fmt.ci(latest.ci_low, latest.ci_high, 1))}</span> '
        f"{_verdict(latest.verdict)}"
    )


def _change_badge(c: Change) -> str:
    if c.source == "marked":
        cls = "mark"
    else:
        cls = Verdict.SLOWER if c.change > 0 else Verdict.FASTER
    arrow = "&#9650;" if c.change > 0 else "&#9660;"
    size = fmt.pct(c.change, signed=True) if math.isfinite(c.change) else "marked"
    tail = "" if c.final else ' <span class="tag">provisional</span>'
    return f'<span class="badge {cls}">{arrow} {esc(c.first_bad)} {esc(size)}</span>{tail}'


def _changes_cell(v: SeriesView) -> str:
    if not v.changes:
        return '<span class="muted">none</span>'
    more = f' <span class="muted">({len(v.changes)} in all)</span>' if len(v.changes) > 1 else ""
    return _change_badge(v.changes[-1]) + more


def _drift_badge(e: EnvironmentChange, host: str) -> str:
    where = "from" if e.after == host else "until"
    return f'<span class="badge drift">new machine {where} {esc(e.version)}</span>'


def _machine_cell(v: SeriesView) -> str:
    parts = [_drift_badge(e, v.key.host) for e in v.environment]
    if v.dismissed:
        parts.append(f'<span class="muted">{len(v.dismissed)} drift move(s) dismissed</span>')
    return " ".join(parts) or '<span class="muted">-</span>'


def _host_choices(site: SiteData, views: Sequence[SeriesView]) -> list[tuple[str, str]]:
    fps = sorted({v.key.host for v in views})
    return [(fp, f"{', '.join(site.host_names.get(fp, ())) or 'host'} ({fp[:8]})") for fp in fps]


def _methods(views: Sequence[SeriesView]) -> list[str]:
    order = {"seqn": 0, "aduet": 1, "sduet": 2, "inproc": 3}
    return sorted({v.key.method for v in views}, key=lambda m: (order.get(m, 9), m))


# ---------------------------------------------------------------------- index
def index_page(site: SiteData, title: str) -> str:
    s = site.summary
    meta = (
        f"repository <code>{esc(site.location)}</code> &middot; {len(s.versions)} version(s), "
        f"{len(s.experiments)} experiment(s), {len(s.hosts)} host fingerprint(s), "
        f"{len(site.benchmarks)} benchmark(s)"
    )
    head = f'<header><h1>{esc(title)}</h1><div class="meta">{meta}</div></header>'
    if site.empty:
        body = (
            f'{head}<main><section id="empty"><h2>No results yet</h2>'
            f"<p>The repository <code>{esc(site.location)}</code> holds no experiments. Add one "
            "and build the dashboard again:</p>"
            f"<pre>duet history add results/EXPERIMENT --repo {esc(site.location)}</pre>"
            f"</section></main>{_footer(site)}"
        )
        return _document(title, body, depth=0)
    views = site.all_series()
    rows = []
    for b in site.benchmarks:
        for v in b.series:
            svg, kind = sparkline(v)
            n = len(v.series.versions)
            span = (
                f"{esc(v.series.versions[0])} &hellip; {esc(v.series.versions[-1])}"
                if n > 1
                else esc(v.series.versions[0] if n else "-")
            )
            rows.append(
                f'<tr class="row" {_series_attrs(v, b.title)}>'
                f'<td class="name"><a class="keep-filter" href="{esc(b.page)}">{esc(b.title)}</a></td>'
                f"<td>{esc(v.key.method)}</td>"
                f'<td class="host" title="{esc(v.key.host)}">{esc(v.host_label)}</td>'
                f'<td class="num">{n}<div class="muted small">{span}</div></td>'
                f'<td class="trend">{svg}<div class="muted small">{kind}</div></td>'
                f"<td>{_latest(v.latest)}</td>"
                f"<td>{_changes_cell(v)}</td>"
                f"<td>{_machine_cell(v)}</td></tr>"
            )
    table = (
        '<table class="series"><thead><tr><th>benchmark</th><th>method</th><th>host</th>'
        "<th>versions</th><th>trend</th><th>latest comparison (95 % interval)</th>"
        "<th>detected changes</th><th>machine</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + '<p class="none-shown" hidden>No series match the filter.</p>'
    )
    body = (
        f"{head}<main>{_attention(site)}"
        f'<section id="series"><h2>Benchmarks</h2>'
        f"{_filters(_host_choices(site, views), _methods(views), len(views))}{table}"
        '<p class="muted small">Trend: the paired series (direct comparisons of adjacent '
        "versions, chained) where there is one, else the absolute series (separate "
        "experiments: it carries the machine's drift). Dots: detected changes (red slower, "
        "green faster, orange marked by a user).</p></section>"
        f"{_hosts_section(site)}</main>{_footer(site)}"
    )
    return _document(title, body, depth=0)


def _attention(site: SiteData) -> str:
    page = {(b.suite, b.benchmark): b for b in site.benchmarks}
    order = site.version_order
    regressions = sorted(
        (c for c in site.report.changes if c.regression),
        key=lambda c: (-order.get(c.first_bad, -1), c.key),
    )
    items = []
    for c in regressions[:ATTENTION_LIMIT]:
        b = page[(c.key.suite, c.key.benchmark)]
        items.append(
            f'<li data-series data-host="{esc(c.key.host)}" data-method="{esc(c.key.method)}" '
            f'data-name="{esc(b.title.lower())}"><a class="keep-filter" href="{esc(b.page)}">'
            f"{esc(b.title)}</a> ({esc(c.key.method)}, host {esc(c.key.host[:8])}): "
            f"{_change_badge(c)} {esc(fmt.ci(c.ci_low, c.ci_high, 1))}, last good "
            f"{esc(c.last_good or '-')}</li>"
        )
    more = len(regressions) - ATTENTION_LIMIT
    out = '<section id="attention"><h2>Regressions</h2>'
    if items:
        out += f'<ul class="attention">{"".join(items)}</ul>'
        if more > 0:
            out += f'<p class="muted">and {more} more (newest first above).</p>'
    else:
        out += '<p class="muted">No series got slower.</p>'
    if site.report.environment:
        drift = []
        for e in site.report.environment:
            b = page.get((e.suite, e.benchmark))
            link = (
                f'<a class="keep-filter" href="{esc(b.page)}">{esc(b.title)}</a>'
                if b
                else esc(e.benchmark)
            )
            drift.append(
                f'<li data-series data-host="{esc(e.after)}" data-method="{esc(e.method)}" '
                f'data-name="{esc((b.title if b else e.benchmark).lower())}">{link} '
                f"({esc(e.method)}) moved to another machine at {esc(e.version)}: "
                f"{esc(_differences(e))}</li>"
            )
        out += (
            '<div class="drift-box"><h3>Environment drift (not regressions)</h3>'
            '<p class="small">A benchmark that moves to a machine with another host '
            "fingerprint starts a new series; its times are not compared across the move.</p>"
            f'<ul class="drift">{"".join(drift)}</ul></div>'
        )
    return out + "</section>"


def _differences(e: EnvironmentChange) -> str:
    if not e.differences:
        return f"host {e.before[:8]} -> {e.after[:8]}"
    return "; ".join(f"{k} {a} -> {b}" for k, a, b in e.differences)


def _hosts_section(site: SiteData) -> str:
    rows = []
    for fp, h in sorted(site.hosts.items()):
        facts = dict(h.facts)
        rows.append(
            f"<tr><td><code>{esc(fp)}</code></td>"
            f"<td>{esc(', '.join(site.host_names.get(fp, ())) or '-')}</td>"
            f"<td>{esc(h.describe())}</td>"
            f"<td>{esc(facts.get('machine') or '-')}</td>"
            f"<td>{esc(facts.get('virtualization') or '-')}</td>"
            f"<td>{esc(facts.get('cpu_governor') or '-')}</td></tr>"
        )
    return (
        '<section id="hosts"><h2>Host fingerprints</h2><table class="hosts"><thead><tr>'
        "<th>fingerprint</th><th>host names</th><th>machine</th><th>arch</th>"
        "<th>virtualization</th><th>governor</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


# ---------------------------------------------------------------------- benchmark pages
def benchmark_page(site: SiteData, b: BenchmarkView, title: str) -> tuple[str, int]:
    """The page of one benchmark, and how many figures it draws."""
    figs = []
    blocks = []
    for i, v in enumerate(b.series):
        fid = f"fig{i + 1}"
        fig = series_figure(site, v)
        figs.append({"id": fid, "data": fig["data"], "layout": fig["layout"]})
        blocks.append(_series_block(site, b, v, fid, fig["layout"]["height"]))
    views = list(b.series)
    head = (
        '<header><a class="keep-filter back" href="../index.html">&larr; all benchmarks</a>'
        f"<h1>{esc(b.title)}</h1>"
        f'<div class="meta">{esc(title)} &middot; suite <code>{esc(b.suite)}</code> &middot; '
        f"{len(views)} series &middot; {len(b.experiments)} experiment(s)</div></header>"
    )
    env = [e for v in views for e in v.environment]
    drift = ""
    if env:
        seen, items = set(), []
        for e in env:
            if (e.method, e.version, e.before, e.after) in seen:
                continue
            seen.add((e.method, e.version, e.before, e.after))
            items.append(
                f'<li data-series data-host="{esc(e.after)}" data-method="{esc(e.method)}" '
                f'data-name="{esc(b.title.lower())}">{esc(e.method)}: moved from host '
                f"<code>{esc(e.before[:8])}</code> to <code>{esc(e.after[:8])}</code> at "
                f"{esc(e.version)} ({esc(_differences(e))})</li>"
            )
        drift = (
            '<section id="drift" class="drift-box"><h2>Environment drift (not a regression)</h2>'
            "<p>The benchmark moved to a machine with another fingerprint; a new series starts "
            f'there (purple lines).</p><ul class="drift">{"".join(items)}</ul></section>'
        )
    body = (
        f"{head}<main>"
        f"{_filters(_host_choices(site, views), _methods(views), len(views))}"
        f'{drift}{"".join(blocks)}<p class="none-shown" hidden>No series match the filter.</p>'
        f"{_experiments_section(site, b)}</main>{_footer(site)}"
    )
    return _document(f"{b.title} - {title}", body, depth=1, plotly=True, figs=figs), len(figs)


def _series_block(site: SiteData, b: BenchmarkView, v: SeriesView, fid: str, height: int) -> str:
    s = v.series
    n = len(s.versions)
    status = (
        f"{n} version(s), {len(s.steps)} direct comparison(s) of adjacent versions &middot; "
        f"latest: {_latest(v.latest)}"
    )
    one = ""
    if n == 1:
        one = (
            '<p class="note">Only one version so far: the series starts here; changes are '
            "found once later versions are added.</p>"
        )
    return (
        f'<section class="series-block row" {_series_attrs(v, b.title)}>'
        f"<h2>{esc(v.key.method)} on {esc(v.host_label)}</h2>"
        f'<p class="meta">{status}</p>{one}'
        f'<div class="plot"><div id="{fid}" style="height:{height}px"></div></div>'
        f"{_changes_table(site, v)}{_notes(v)}</section>"
    )


def _changes_table(site: SiteData, v: SeriesView) -> str:
    if not v.changes:
        return '<p class="muted">No change detected in this series.</p>'
    rows = []
    for c in v.changes:
        commit = site.versions.get(c.first_bad)
        sha = commit.commit[:12] if commit is not None and commit.commit else "-"
        rows.append(
            f"<tr><td>{_change_badge(c)}</td><td>{esc(c.last_good or '-')}</td>"
            f"<td><code>{esc(sha)}</code></td>"
            f'<td class="num">{esc(fmt.pct(c.change, signed=True, digits=2))}</td>'
            f'<td class="num">{esc(fmt.ci(c.ci_low, c.ci_high))}</td>'
            f"<td>{esc(c.source)}{'' if c.final else ' (provisional)'}</td>"
            f'<td class="evidence">{esc(c.evidence)}</td></tr>'
        )
    return (
        '<table class="changes"><thead><tr><th>first bad</th><th>last good</th><th>commit</th>'
        "<th>change</th><th>95 % interval</th><th>found in</th><th>evidence</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _notes(v: SeriesView) -> str:
    items = []
    for x in v.spikes:
        items.append(f"<li>spike at {esc(x.version)} (not a change): {esc(x.evidence)}</li>")
    for d in v.dismissed:
        items.append(f'<li class="drift-item">{esc(d.reason)}</li>')
    for m in v.marks:
        what = "excluded" if m.kind == "exclude" else "marked as a change"
        items.append(
            f'<li class="mark-item">{esc(m.version)} {what} by a user (mark #{m.id}): '
            f"{esc(m.note)}</li>"
        )
    return f'<ul class="notes">{"".join(items)}</ul>' if items else ""


def _experiments_section(site: SiteData, b: BenchmarkView) -> str:
    rows = []
    for eid in sorted(b.experiments, reverse=True):
        e = site.experiments.get(eid)
        if e is None:
            continue
        i = e.info
        versions = (
            esc(i.version_a)
            if i.version_a == i.version_b
            else f"{esc(i.version_a)} &rarr; {esc(i.version_b)}"
        )
        hosts = ", ".join(f"{name} ({fp[:8]})" for name, fp in i.hosts)
        if e.report.href:
            report = f'<a href="{esc(e.report.href)}">report</a>'
        else:
            report = f'<span class="muted small">{esc(e.report.hint)}</span>'
        rows.append(
            f'<tr><td class="num">#{i.id}</td><td>{esc(i.name)}</td><td>{versions}</td>'
            f"<td>{esc(hosts)}</td><td>{esc(when(e.when_ns))}</td><td>{report}</td></tr>"
        )
    table = (
        '<table class="experiments"><thead><tr>'
        "<th>#</th><th>name</th><th>versions (A &rarr; B)</th><th>hosts</th><th>ran</th>"
        "<th>duet report</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    shown = " open" if len(rows) <= EXPERIMENTS_OPEN else ""
    return (
        f'<section id="experiments"><h2>Experiments</h2><details{shown}><summary>'
        f"{len(rows)} experiment(s), newest first</summary>{table}</details></section>"
    )
