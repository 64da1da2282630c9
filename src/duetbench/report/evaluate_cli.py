"""`duet evaluate` and `duet report`: argument parsing only.

The work lives in :mod:`duetbench.report.evaluate_commands`, imported when the
command runs, so that `duet --help` and every other command start fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .compare_cli import add_compare_options


def _lazy(name: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        from . import evaluate_commands

        return getattr(evaluate_commands, name)(args)

    return run


def add_evaluate_options(p: argparse.ArgumentParser) -> None:
    """The options of `duet compare` plus the evaluation's grids (parser: conflict 'resolve')."""
    add_compare_options(p)
    p.add_argument(
        "--min-overlap",
        action="append",
        metavar="M|START:STOP:STEP",
        help="a single m (e.g. 0.4) sets the aduet pairing of every test (default 0.4); a "
        "range or list (0.1:0.9:0.1, or 0.2,0.4,0.6) sets the m of the overlap and A/A-vs-m "
        "tables (default 0:0.9:0.1); repeat to give both",
    )
    p.add_argument(
        "--slowdowns",
        default="0:15:1",
        metavar="START:STOP:STEP",
        help="slowdowns s of the MDS in percent, stop included, or a list 0,1,2,5 (default 0:15:1)",
    )
    p.add_argument(
        "--aa",
        nargs="?",
        const="*",
        default=None,
        metavar="BENCH[,BENCH]",
        help="treat these benchmarks as A/A experiments ('all', or no value after the "
        "source: every benchmark); a results directory knows its A/A benchmarks (no B side "
        "in duet.yml)",
    )
    p.add_argument(
        "--shuffles",
        type=int,
        default=10,
        help="random re-pairings averaged by the shuffle check (default 10)",
    )
    p.add_argument(
        "--span",
        choices=["process", "iterations"],
        default="process",
        help="runtime speedup from process lifetimes (default) or the span of the iterations",
    )


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="evaluate the methods: speedup, overlaps, CV, CI widths, A/A, MDS, shuffle check",
        description=(
            "The evaluation of the thesis (ch. 5, RQ1-RQ4) and the duet paper's shuffle check, "
            "per host, benchmark and method. See docs/evaluate.md."
        ),
        conflict_handler="resolve",
    )
    p.add_argument(
        "source", type=Path, help="results directory, or an iterations table (.parquet/.csv)"
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("-o", "--output", type=Path, help="write the JSON here instead of stdout")
    add_evaluate_options(p)
    p.set_defaults(func=_lazy("cmd_evaluate"))

    q = sub.add_parser(
        "report",
        help="one self-contained HTML report (or Markdown for $GITHUB_STEP_SUMMARY)",
        description=(
            "Write an HTML report that opens offline in any browser: verdicts, confidence "
            "intervals, run timelines, distributions, MDS, overlaps, speedups, hosts. "
            "See docs/report.md."
        ),
        conflict_handler="resolve",
    )
    q.add_argument(
        "source", type=Path, help="results directory, or an iterations table (.parquet/.csv)"
    )
    q.add_argument("--format", choices=["html", "markdown"], default="html")
    q.add_argument(
        "-o",
        "--output",
        type=Path,
        help="output file (default: report.html; Markdown goes to stdout)",
    )
    q.add_argument(
        "--timeline-runs",
        type=int,
        default=2,
        help="duet runs per benchmark and method drawn in the timelines (default 2)",
    )
    q.add_argument(
        "--timeline-iterations",
        type=int,
        default=100,
        help="at most this many iterations per side of a run in the timelines (default 100)",
    )
    add_evaluate_options(q)
    q.set_defaults(func=_lazy("cmd_report"))
