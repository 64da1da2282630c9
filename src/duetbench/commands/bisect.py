"""`duet bisect`: find the commit that made a benchmark slower, measured until sure."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..ci.defaults import MAX_LOOKS
from ..errors import ExitCode
from ._trees import add_tree_options, build_timeout, repo_priors, tree_experiment_of

if TYPE_CHECKING:
    from ..adaptive.prior import HostPriors


DESCRIPTION = (
    "Binary search over the first-parent history from --good to --bad: each "
    "candidate is built and compared with the known-good build on this machine "
    "(docs/history.md, 'Bisect')."
)
EPILOG = (
    "exit status: 0 the first bad commit was found; 3 the range left is printed "
    "with the evidence of every commit tested (--total-budget ended, or skipped candidates: "
    "build failures, comparisons still inconclusive after --max-looks); 2 usage, config or "
    "git error; 130 interrupted"
)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--good", required=True, help="a revision known to be fast")
    p.add_argument("--bad", required=True, help="a later revision known to be slower")
    p.add_argument(
        "--max-looks",
        metavar="N",
        type=int,
        default=MAX_LOOKS,
        help="comparisons of one candidate: an inconclusive one is measured again, judged on "
        f"all its runs, up to N times before it is skipped (default: {MAX_LOOKS})",
    )
    p.add_argument(
        "--total-budget",
        metavar="TIME",
        help="wall time the whole bisect may take, e.g. 1h (default: no limit); checked "
        "before every comparison, and when it ends the range left is printed with its evidence",
    )
    add_tree_options(p)


def run(args: argparse.Namespace) -> int:
    from ..ci.bisect import Step, bisect
    from ..errors import DuetError
    from ..text import visible
    from ..workflow.repository import add_experiment, tree_versions
    from ._flags import parse_duration

    budget = (
        None if args.total_budget is None else parse_duration(args.total_budget, "--total-budget")
    )
    if args.max_looks < 1:
        raise DuetError(f"--max-looks must be at least 1, got {args.max_looks}")
    exp = tree_experiment_of(args)
    # --repo: a repository that cannot be used is refused now, before any build
    first = repo_priors(args)
    pending = [] if first is None else [first]

    def priors() -> HostPriors:
        """This runner's priors before a candidate: the first read, then read again, so
        the comparisons this bisect added count for the next candidate."""
        again = pending.pop() if pending else repo_priors(args)
        assert again is not None  # only called with --repo
        return again

    def show(step: Step) -> None:
        iv = (
            f" {step.change * 100:+.2f} % [{step.low * 100:+.2f} %, {step.high * 100:+.2f} %]"
            if step.change is not None and step.low is not None and step.high is not None
            else f" {step.change * 100:+.2f} % (no interval yet)"
            if step.change is not None
            else ""
        )
        subject = visible(step.subject)  # a commit subject and a build's output: user text
        looks = f", {step.looks} comparisons" if step.looks > 1 else ""
        prior = f", priors {step.prior}" if step.prior and step.outcome != "skip" else ""
        print(
            f"{step.commit[:10]} {step.outcome:4} {step.verdict}{iv} ({step.runs} runs{looks}"
            f"{prior}) {subject}"
        )
        if step.outcome == "skip" and step.why:
            print(f"    skipped: {visible(step.why.splitlines()[0])}")

    def record(root: Path, a_tree: Path, b_tree: Path) -> None:
        if args.repo:
            add_experiment(args.repo, root, tree_versions(a_tree, b_tree))

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
        max_looks=args.max_looks,
        budget_s=budget,
        priors=priors if first is not None else None,
    )
    if result.first_bad is None:
        why = "the --total-budget ended" if result.budget_ended else "candidates skipped"
        print(
            f"the first bad commit is one of these {len(result.candidates)} ({why}; never guessed):"
        )
        for c in result.candidates:
            print(f"  {c}")
        print(f"evidence, against the good build {result.good[:10]}:")
        tested = result.evidence()
        for step in tested:
            show(step)
        if not any(s.commit == result.bad for s in tested):
            print(f"{result.bad[:10]} (--bad) not measured: known to be slower")
        return ExitCode.INCONCLUSIVE
    step = result.step_of(result.first_bad)
    print(f"first bad commit: {result.first_bad}")
    if step is not None:
        show(step)
    return ExitCode.OK
