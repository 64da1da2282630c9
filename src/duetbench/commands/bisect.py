"""`duet bisect`: find the commit that made a benchmark slower, measured until sure."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ExitCode
from .gate import add_tree_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bisect",
        help="which commit made it slower (git history, each step measured until sure)",
        description="Binary search over the first-parent history from --good to --bad: each "
        "candidate is built and compared with the known-good build on this machine "
        "(docs/history.md, 'Bisect').",
        epilog="exit status: 0 the first bad commit was found; 3 skipped candidates "
        "(build failures, inconclusive comparisons) leave several commits; 2 usage, config or "
        "git error; 130 interrupted",
    )
    p.add_argument("--good", required=True, help="a revision known to be fast")
    p.add_argument("--bad", required=True, help="a later revision known to be slower")
    add_tree_options(p)


def run(args: argparse.Namespace) -> int:
    from ..ci.bisect import Step, bisect
    from ..config import load_config
    from ..text import visible
    from .gate import add_to_history, build_timeout, stopped_experiment
    from .plan import this_host_cpus

    exp = stopped_experiment(args, load_config(args.config, host_cpus=this_host_cpus()))

    def show(step: Step) -> None:
        iv = (
            f" {step.change * 100:+.2f} % [{step.low * 100:+.2f} %, {step.high * 100:+.2f} %]"
            if step.change is not None and step.low is not None and step.high is not None
            else ""
        )
        subject = visible(step.subject)  # a commit subject and a build's output: user text
        print(
            f"{step.commit[:10]} {step.outcome:4} {step.verdict}{iv} ({step.runs} runs) {subject}"
        )
        if step.outcome == "skip" and step.why:
            print(f"    skipped: {visible(step.why.splitlines()[0])}")

    def record(root: Path, a_tree: Path, b_tree: Path) -> None:
        if args.history:
            add_to_history(args.history, root, a_tree, b_tree)

    result = bisect(
        exp,
        good=args.good,
        bad=args.bad,
        build=args.build,
        out_dir=args.output,
        repo=args.git,
        build_timeout=build_timeout(args),
        on_step=show,
        record=record,
    )
    if result.first_bad is None:
        print("the first bad commit is one of (candidates skipped, never guessed):")
        for c in result.candidates:
            print(f"  {c}")
        return ExitCode.INCONCLUSIVE
    step = result.step_of(result.first_bad)
    print(f"first bad commit: {result.first_bad}")
    if step is not None:
        show(step)
    return ExitCode.OK
