"""`duet evaluate`: how well did each method do (RQ1-RQ4 tables, or JSON)."""

from __future__ import annotations

import argparse

from . import SUMMARY
from ._flags import refuse_unused
from ._options import add_evaluate_options, add_source_command, evaluate_options, given_recorded


def register(sub: argparse._SubParsersAction) -> None:
    p = add_source_command(
        sub,
        "evaluate",
        help=SUMMARY["evaluate"],
        description="The evaluation of the thesis (ch. 5, RQ1-RQ4) and the duet paper's "
        "shuffle check, per host, benchmark and method. See docs/evaluate.md.",
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
