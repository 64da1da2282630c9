"""`duet compare`: is B slower or faster than A, by how much -- the verdict table."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ExitCode
from ..text import visible

if TYPE_CHECKING:
    import pandas as pd

    from ..dataset import Dataset
    from ..options import CompareOptions

from ._options import add_compare_options, add_source_command, compare_options, with_seed

if TYPE_CHECKING:
    import pandas as pd

    from ..options import CompareOptions


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
    from ..report.json_docs import compare_doc, dumps
    from ..report.markdown import compare_markdown
    from ..report.tables import verdict_table
    from ..report.terminal import print_verdicts
    from ._output import write_output

    opts = compare_options(args)
    dataset = open_dataset(args.source)
    opts = with_seed(opts, args, dataset.seed, dataset.measure)
    rows, opts = compare_rows(dataset.table, opts, run_stat_given=args.run_stat is not None)
    rows = with_adaptive(rows, dataset, opts)
    if args.format == "json":
        write_output(dumps(compare_doc(rows, dataset, opts)), args.output)
    elif args.format == "markdown":
        write_output(compare_markdown(verdict_table(rows, dataset, opts)), args.output)
    else:
        print_verdicts(verdict_table(rows, dataset, opts), verbose=args.verbose)
    if args.fail_on_regression and (rows["verdict"] == "slower").any():
        return ExitCode.REGRESSION
    return ExitCode.OK


def compare_rows(
    table: pd.DataFrame, opts: CompareOptions, *, run_stat_given: bool
) -> tuple[pd.DataFrame, CompareOptions]:
    """The verdict rows, and the options they were computed with.

    Without ``--run-stat``, micro benchmarks (rows from duet micro's worker: an
    ``evaluations`` column) use ``MICRO_RUN_STAT``, their inproc runs
    ``INPROC_RUN_STAT``, the others ``opts.run_stat``; when every row has one of them
    the returned options say so (the JSON ``settings``).
    """
    import pandas as pd

    from ..analysis import compare
    from ..micro.api import micro_benchmarks
    from ..options import INPROC_RUN_STAT, MICRO_RUN_STAT
    from ..schema import Method

    micro = set() if run_stat_given else micro_benchmarks(table)
    if not micro:
        return compare(table, opts), opts
    is_micro = table["benchmark"].astype(str).isin(micro).to_numpy()
    inproc = is_micro & (table["method"].astype(str) == Method.INPROC.value).to_numpy()
    groups = [
        (~is_micro, opts),
        (is_micro & ~inproc, replace(opts, run_stat=MICRO_RUN_STAT)),
        (inproc, replace(opts, run_stat=INPROC_RUN_STAT)),
    ]
    groups = [(mask, o) for mask, o in groups if mask.any()]
    if len(groups) == 1:
        return compare(table, groups[0][1]), groups[0][1]
    rows = pd.concat([compare(table.loc[mask], o) for mask, o in groups], ignore_index=True)
    return rows.sort_values(["benchmark", "method"], kind="stable", ignore_index=True), opts


def render_verdicts(root: Path, fmt: str, run_stat: str | None, threshold: float = 0.0) -> bool:
    """Print the verdict table of results directory ``root`` in ``fmt`` (table, json,
    markdown) with `duet compare`'s defaults and ``threshold``; True when a verdict is
    'slower'."""
    from ..dataset import open_dataset
    from ..options import CompareOptions
    from ..report.json_docs import compare_doc, dumps
    from ..report.markdown import compare_markdown
    from ..report.tables import verdict_table
    from ..report.terminal import print_verdicts
    from ._output import write_output

    dataset = open_dataset(root)
    opts = CompareOptions.create(
        seed=dataset.seed,
        run_stat=run_stat or CompareOptions.run_stat,
        threshold=threshold,
        measure=dataset.measure,
    )
    rows, opts = compare_rows(dataset.table, opts, run_stat_given=run_stat is not None)
    rows = with_adaptive(rows, dataset, opts)
    if fmt == "json":
        write_output(dumps(compare_doc(rows, dataset, opts)), None)
    elif fmt == "markdown":
        write_output(compare_markdown(verdict_table(rows, dataset, opts)), None)
    else:
        print_verdicts(verdict_table(rows, dataset, opts))
    return bool((rows["verdict"] == "slower").any())


def with_adaptive(rows: pd.DataFrame, dataset: Dataset, opts: CompareOptions) -> pd.DataFrame:
    """The rows with one ``no data`` row for every benchmark and method whose runs were all
    left out as unbalanced (so its note has a row to stand under). An adaptive experiment's
    rows use the interval its stopping rule used (docs/adaptive.md, "Analysing an adaptive
    experiment"); a fixed plan's are unchanged."""
    from ..dataset import with_unbalanced_rows

    rows = with_unbalanced_rows(rows, dataset, opts)
    if not dataset.stops:
        return rows
    from ..adaptive.results import adaptive_rows

    return adaptive_rows(rows, dataset.table, dataset.stops, run_stat=opts.run_stat)


def print_verdicts_after_run(root: Path) -> None:
    """The verdict table `duet compare` prints, at the end of `duet run` (its defaults)."""
    import sys

    from ..dataset import open_dataset
    from ..errors import DuetError
    from ..options import CompareOptions
    from ..report.tables import verdict_table
    from ..report.terminal import print_verdicts

    try:
        dataset = open_dataset(root)
        if dataset.table.empty:
            return
        opts = CompareOptions(seed=dataset.seed, measure=dataset.measure).checked()
        rows, opts = compare_rows(dataset.table, opts, run_stat_given=False)
        rows = with_adaptive(rows, dataset, opts)
    except DuetError as exc:
        print(f"duet: cannot compare yet: {visible(str(exc), lines=True)}", file=sys.stderr)
        return
    print_verdicts(verdict_table(rows, dataset, opts))
