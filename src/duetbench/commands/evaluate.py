"""`duet evaluate`: how well did each method do (RQ1-RQ4 tables, or JSON)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING

from ._options import add_evaluate_options, add_source_command, evaluate_options, with_recorded

if TYPE_CHECKING:
    from ..analysis.evaluate import Evaluation
    from ..options import EvaluateOptions
    from ..verdicts import VerdictTable


def register(sub: argparse._SubParsersAction) -> None:
    p = add_source_command(
        sub,
        "evaluate",
        help="evaluate the methods: speedup, overlaps, CV, CI widths, A/A, MDS, shuffle check",
        description="The evaluation of the thesis (ch. 5, RQ1-RQ4) and the duet paper's "
        "shuffle check, per host, benchmark and method. See docs/evaluate.md.",
        formats=("table", "json"),
        output="write the JSON here instead of stdout",
    )
    add_evaluate_options(p)


def evaluate_source(
    args: argparse.Namespace, opts: EvaluateOptions
) -> tuple[Evaluation, VerdictTable]:
    """Open the command's source, ask its verdicts (the ones every command shows) and
    evaluate it (`duet evaluate`, `duet report`); the evaluation reads the dataset as the
    verdicts analysed it (``VerdictTable.dataset``)."""
    from ..analysis.evaluate import evaluate
    from ..dataset import open_dataset
    from ..errors import DuetError
    from ..verdicts import verdicts

    dataset = open_dataset(args.source)
    if dataset.table.empty:
        raise DuetError(f"{dataset.source}: no iterations to evaluate (did every run fail?)")
    opts = replace(opts, compare=with_recorded(opts.compare, args, dataset))
    table = verdicts(dataset, opts.compare)
    if table.dataset.table.empty:
        raise DuetError(f"{dataset.source}: no iterations to evaluate (every run left out)")
    return evaluate(dataset.table, opts, verdicts=table.rows), table


def run(args: argparse.Namespace) -> int:
    from ..report.json_docs import dumps, evaluate_doc
    from ..report.terminal import print_evaluation
    from ..workflow.output import write_output

    ev, table = evaluate_source(args, evaluate_options(args))
    if args.format == "json":
        write_output(dumps(evaluate_doc(ev, table.dataset)), args.output)
    else:
        print_evaluation(ev, table.dataset)
    return 0
