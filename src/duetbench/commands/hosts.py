"""`duet hosts RESULTS`: which hosts ran what, their configuration, their health."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._flags import add_format_flag

DESCRIPTION = (
    "List the hosts that ran an experiment (or were excluded by its `hosts:` "
    "requirements) with their detected configuration, the runs they executed per "
    "status, attempts lost to dead workers, and a health verdict."
)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=Path, help="the experiment's results directory (results/NAME)")
    add_format_flag(p, ("table", "json"))


def run(args: argparse.Namespace) -> int:
    from ..host_report import hosts_report
    from ..report.json_docs import dumps
    from ..report.tables import hosts_table
    from ..report.terminal import make_console, print_titled
    from ..workflow.output import write_output

    report = hosts_report(args.results)
    if args.format == "json":
        write_output(dumps(report), None)
        return 0
    print_titled(hosts_table(report), make_console())
    return 0
