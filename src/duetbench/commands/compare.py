"""`duet compare`: is B slower or faster than A, by how much -- the verdict table."""

from __future__ import annotations

import argparse

from ..errors import ExitCode
from ..options import shared_flag
from ._flags import refuse_unused
from ._options import add_compare_options, add_source_arguments, compare_options, with_recorded

DESCRIPTION = "Compare B against A per benchmark and method."


def register(p: argparse.ArgumentParser) -> None:
    add_source_arguments(
        p,
        formats=("table", "json", "markdown"),
        output="write JSON/Markdown here instead of stdout",
    )
    p.add_argument("--fail-on-regression", **shared_flag("fail-on-regression"))  # as micro's
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="under the table, every note in full (default: one line per kind of note)",
    )
    add_compare_options(p)


def run(args: argparse.Namespace) -> int:
    from ..dataset import open_dataset
    from ..verdicts import verdicts
    from ..workflow.verdicts import render

    refuse_unused(
        [
            ("-o/--output", args.output, args.format != "table", "--format json|markdown"),
            ("-v/--verbose", args.verbose, args.format == "table", "--format table (the default)"),
        ]
    )
    opts = compare_options(args)
    dataset = open_dataset(args.source)
    table = verdicts(dataset, with_recorded(opts, args, dataset))
    render(table, args.format, args.output, verbose=args.verbose)
    if args.fail_on_regression and table.slower:
        return ExitCode.REGRESSION
    return ExitCode.OK
