"""The verdicts: the verdict table of `duet compare` and the figure of its intervals."""

from __future__ import annotations

import numpy as np

from ...analysis.evaluate import Evaluation
from ...verdicts import VerdictTable
from .. import formatting as fmt
from ..tables import verdict_table
from .page import Page, esc, html_table
from .plots import METHOD_COLORS, TEST_NAMES, label_margin, methods_in, rounded


def verdicts_section(page: Page, verdicts: VerdictTable) -> None:
    table = verdict_table(verdicts)
    page.section(
        "verdicts",
        "Verdicts",
        f"Is B slower or faster than A? {esc(table.caption)}. Intervals are over runs. "
        "Same table as <code>duet compare</code>.",
    )
    page.add(html_table(table, cls="verdicts"))
    rows = verdicts.rows
    counts = rows["verdict"].value_counts().to_dict() if not rows.empty else {}
    summary = ", ".join(f"{n} {esc(v)}" for v, n in sorted(counts.items()))
    if summary:
        page.add(f'<p class="note">{summary}.</p>')
    # one line per kind, as in the terminal; every sentence folded under them
    for note in table.notes:
        if note.kind in ("info", "note"):
            page.add(f'<p class="note">{esc(note.text)}</p>')
    extra = [n for n in table.details if n.kind in ("info", "note") and n not in table.notes]
    if extra:
        items = "".join(f"<li>{esc(n.text)}</li>" for n in extra)
        page.add(
            f'<details class="note"><summary>every note, benchmark by benchmark '
            f"({len(extra)})</summary><ul>{items}</ul></details>"
        )
    page.end_section()


def ci_section(page: Page, ev: Evaluation) -> None:
    v = ev.verdicts
    if v.empty:
        return
    c = ev.settings.compare
    page.section(
        "intervals",
        "Confidence intervals per benchmark",
        "Each point is the estimated change of B against A, the bar its confidence interval "
        "(thesis fig. 5.10). An interval that does not cross the dashed zero line is a "
        "detected change.",
    )
    benches = sorted({(str(s), str(b)) for s, b in zip(v["suite"], v["benchmark"], strict=True)})
    pos = {k: i for i, k in enumerate(benches)}
    methods = methods_in(v)
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
                "x": rounded(ch),
                "y": rounded(y),
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": rounded(hi - ch),
                    "arrayminus": rounded(ch - lo),
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
                    "text": f"Change of B against A with {c.confidence * 100:g} % CI "
                    f"({TEST_NAMES.get(c.test, c.test)})"
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
                "margin": {"l": label_margin(b for _, b in benches)},
            },
        },
        height=height,
    )
    page.end_section()
