"""`duet evaluate`: how well did each method do (RQ1-RQ4 tables, or JSON)."""

from __future__ import annotations

import argparse

from ._flags import refuse_unused
from ._options import add_evaluate_options, add_source_arguments, evaluate_options, given_recorded

DESCRIPTION = (
    "The evaluation of the thesis (ch. 5, RQ1-RQ4) and the duet paper's "
    "shuffle check, per host, benchmark and method. See docs/evaluate.md."
)


def register(p: argparse.ArgumentParser) -> None:
    add_source_arguments(
        p,
        formats=("table", "json"),
        output="write the JSON here instead of stdout",
    )
    add_evaluate_options(p)


def run(args: argparse.Namespace) -> int:
    from ..report.json_docs import dumps, evaluate_doc
    from ..report.terminal import print_evaluation
    from ..workflow.evaluation import evaluate_source
    from ..workflow.output import write_output

    refuse_unused([("-o/--output", args.output, args.format == "json", "--format json")])
    ev, table = evaluate_source(args.source, evaluate_options(args), given_recorded(args))
    if args.format == "json":
        write_output(dumps(evaluate_doc(ev, table.dataset)), args.output)
    else:
        print_evaluation(ev, table.dataset)
    return 0
