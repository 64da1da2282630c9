"""`duet compare`: is B slower or faster than A, by how much -- the verdict table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ExitCode
from ..text import visible
from ._options import add_compare_options, add_source_command, compare_options, with_seed

if TYPE_CHECKING:
    from ..verdicts import VerdictTable


def register(sub: argparse._SubParsersAction) -> None:
    p = add_source_command(
        sub,
        "compare",
        help="verdicts: is B slower or faster than A, by how much",
        description="Compare B against A per benchmark and method.",
        formats=("table", "json", "markdown"),
        output="write JSON/Markdown here instead of stdout",
    )
    p.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when any verdict is 'slower'"
    )
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

    opts = compare_options(args)
    dataset = open_dataset(args.source)
    table = verdicts(dataset, with_seed(opts, args, dataset.seed, dataset.measure))
    render(table, args.format, args.output, verbose=args.verbose)
    if args.fail_on_regression and table.slower:
        return ExitCode.REGRESSION
    return ExitCode.OK


def render(
    table: VerdictTable, fmt: str, output: Path | None = None, *, verbose: bool = False
) -> None:
    """The verdict table in ``fmt`` (table, json, markdown): to ``output`` or stdout
    (``verbose``: every note in full under the terminal table)."""
    from ..report.json_docs import compare_doc, dumps
    from ..report.markdown import compare_markdown
    from ..report.tables import verdict_table
    from ..report.terminal import print_verdicts
    from ._output import write_output

    if fmt == "json":
        write_output(dumps(compare_doc(table)), output)
    elif fmt == "markdown":
        write_output(compare_markdown(verdict_table(table)), output)
    else:
        print_verdicts(verdict_table(table), verbose=verbose)


def render_verdicts(
    root: Path,
    fmt: str,
    run_stat: str | None,
    threshold: float = 0.0,
    *,
    keep_unbalanced: bool = False,
) -> bool:
    """Print the verdict table of results directory ``root`` in ``fmt`` (table, json,
    markdown) with `duet compare`'s defaults, ``run_stat`` (None: auto), ``threshold``
    and ``keep_unbalanced``; True when a verdict is 'slower'."""
    from ..dataset import open_dataset
    from ..options import CompareOptions
    from ..verdicts import default_options, verdicts

    dataset = open_dataset(root)
    opts = default_options(
        dataset,
        run_stat=run_stat or CompareOptions.run_stat,
        threshold=threshold,
        keep_unbalanced=keep_unbalanced,
    )
    table = verdicts(dataset, opts)
    render(table, fmt)
    return table.slower


def print_verdicts_after_run(root: Path) -> None:
    """The verdict table `duet compare` prints, at the end of `duet run` (its defaults)."""
    import sys

    from ..dataset import open_dataset
    from ..errors import DuetError
    from ..verdicts import verdicts

    try:
        dataset = open_dataset(root)
        if dataset.table.empty:
            return
        table = verdicts(dataset)
    except DuetError as exc:
        print(f"duet: cannot compare yet: {visible(str(exc), lines=True)}", file=sys.stderr)
        return
    render(table, "table")
