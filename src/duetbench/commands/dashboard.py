"""`duet dashboard --repo perf.sqlite -o site/`: a static site of the results repository
(docs/history.md, "Dashboard")."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ExitCode
from ._flags import add_format_flag, add_repo_flag, repo_location

DESCRIPTION = (
    "Write a static site of the results repository: an index of benchmarks "
    "with trend lines and the latest verdicts, one page per benchmark with its series, "
    "changes and marks. It works from file:// and any static host."
)


def register(p: argparse.ArgumentParser) -> None:
    add_repo_flag(p)
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("site"),
        help="the site's directory (default: site/); an earlier dashboard there is replaced",
    )
    p.add_argument("--title", help="the site's title (default: duetbench dashboard: REPO's name)")
    add_format_flag(p, ("table", "json"))


def run(args: argparse.Namespace) -> int:
    from ..dashboard import build_dashboard
    from ..report.json_docs import dumps
    from ..report.terminal import make_console
    from ..text import visible
    from ..workflow.output import write_output

    summary = build_dashboard(repo_location(args), args.output, title=args.title)
    if args.format == "json":
        write_output(dumps(summary.to_json()), None)
        return ExitCode.OK
    make_console().print(
        f"{summary.benchmarks} benchmark page(s), {summary.series} series, "
        f"{summary.versions} version(s), {summary.changes} change(s) "
        f"({summary.regressions} regression(s)) -> {visible(str(summary.index))}",
        highlight=False,
        markup=False,
    )
    return ExitCode.OK
