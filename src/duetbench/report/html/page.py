"""The HTML page: sections and figures collected in order, tables, the document around
them (styles and the drawing script from ``assets/``, Plotly inline)."""

from __future__ import annotations

import html
import json
import math
from functools import cache
from importlib.resources import files
from typing import Any

from ...schema import Verdict
from ...text import visible
from ..formatting import verdict_word
from ..tables import Table
from .plots import PLOT_CONFIG, TEMPLATE

VERDICT_CLASS = {
    Verdict.SLOWER: "v-slower",
    Verdict.FASTER: "v-faster",
    Verdict.NO_CHANGE: "v-same",
    Verdict.EQUIVALENT: "v-same",
    Verdict.INCONCLUSIVE: "v-nodata",
    Verdict.NO_DATA: "v-nodata",
    Verdict.SAME: "v-same",  # results of earlier releases
    Verdict.BELOW_THRESHOLD: "v-same",
}


def esc(x: Any) -> str:
    """User text in HTML: markup escaped, control characters shown (``text.visible``)."""
    return html.escape(visible(str(x), lines=True), quote=True)


def _finite(obj: Any) -> Any:
    """JSON-safe: NaN and infinities as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def script_json(obj: Any) -> str:
    """JSON to put inside a ``<script>`` element (the report's and the dashboard's): no
    ``<``, ``>`` or ``&`` (as ``\\u003c`` ...), so no value -- a benchmark named
    ``</script>`` or ``<!--<script>`` -- can end the element, open a comment or start
    another script; ASCII only; NaN and infinities as null."""
    text = json.dumps(_finite(obj), separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@cache
def asset(name: str) -> str:
    """A file of ``report/html/assets`` (package data)."""
    return files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


class Page:
    """Collects sections and figures; :meth:`document` renders the HTML document."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.toc: list[tuple[str, str]] = []
        self.n_figs = 0

    def section(self, anchor: str, title: str, intro: str = "") -> None:
        """Open a section (``intro`` is HTML)."""
        self.toc.append((anchor, title))
        self.parts.append(f'<section id="{anchor}"><h2>{esc(title)}</h2>')
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
        layout = {"template": TEMPLATE, "height": height, **fig.get("layout", {})}
        payload = script_json({"data": fig["data"], "layout": layout})
        cls = "plot wide" if wide else "plot"
        # drawn by the script at the end of <body>, once the page layout is final
        self.parts.append(
            f'<div class="{cls}"><div id="{fid}" style="height:{height}px"></div></div>'
            f'<script>window.__duetFigs.push(["{fid}",{payload}]);</script>'
        )

    def document(self, title: str, header: str) -> str:
        """The complete, self-contained page (``header``: HTML under the title)."""
        from plotly.offline import get_plotlyjs

        nav = "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in self.toc)
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>
{asset("report.css")}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
<script>window.__duetFigs = []; window.__duetConfig = {json.dumps(PLOT_CONFIG)};</script>
</head>
<body>
<header><h1>{esc(title)}</h1>{header}</header>
<nav>{nav}</nav>
<main>
{"".join(self.parts)}
</main>
<script>
{asset("report.js")}</script>
</body>
</html>
"""


def verdict_html(v: Any) -> str:
    v = str(v)
    return f'<span class="verdict {VERDICT_CLASS.get(verdict_word(v), "v-nodata")}">{esc(v)}</span>'


def html_table(table: Table, *, cls: str = "") -> str:
    """A :class:`~duetbench.report.tables.Table` as an HTML table (every cell escaped)."""

    def a(left: bool) -> str:
        return ' class="l"' if left else ""

    head = "".join(f"<th{a(c.left)}>{esc(c.title)}</th>" for c in table.columns)
    rows = []
    for row in table.rows:
        cells = []
        for c, text in zip(table.columns, table.cells(row), strict=True):
            body = verdict_html(text) if c.kind == "verdict" and text != "-" else esc(text)
            cells.append(f"<td{a(c.left)}>{body}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="tablewrap"><table class="{cls}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
