"""`duet report`: one self-contained HTML report (or Markdown for $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._options import add_report_options, add_source_arguments, given_recorded, report_options

DESCRIPTION = (
    "Write an HTML report that opens offline in any browser: verdicts, "
    "confidence intervals, run timelines, distributions, MDS, overlaps, speedups, hosts. "
    "See docs/report.md."
)


def register(p: argparse.ArgumentParser) -> None:
    add_source_arguments(
        p,
        formats=("html", "markdown"),
        output="output file (default: report.html; Markdown goes to stdout)",
    )
    add_report_options(p)


def run(args: argparse.Namespace) -> int:
    import sys
    from dataclasses import replace

    from ..atomic import write_atomic
    from ..report.html import render_html
    from ..report.markdown import report_markdown
    from ..text import visible
    from ..workflow.evaluation import evaluate_source
    from ..workflow.output import write_output

    opts = report_options(args)
    # the verdicts every command shows (an adaptive experiment's: its stopping rule's)
    ev, table = evaluate_source(args.source, opts.evaluate, given_recorded(args))
    if args.format == "markdown":
        write_output(report_markdown(ev, table), args.output)
        return 0
    html = render_html(ev, table, replace(opts, evaluate=ev.settings))
    out = Path(args.output) if args.output else Path("report.html")
    write_atomic(out, html)
    size = out.stat().st_size / 1e6
    print(f"report: {visible(str(out))} ({size:.1f} MB)", file=sys.stderr)
    return 0
