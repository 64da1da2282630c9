"""`duet gate`: compare base and head of a git repository on this machine, measured
until sure; exit 0 / 1 / 3 for no regression / regression / inconclusive."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import ExitCode
from ._flags import add_format_flag
from ._trees import add_tree_options, build_timeout, repo_priors, tree_experiment_of

DESCRIPTION = (
    "Check out --base and --head as git worktrees, build each, and compare "
    "them on this machine with the stopping rules of docs/adaptive.md."
)
EPILOG = (
    "exit status: 0 no regression; 1 regression (a benchmark is slower by more "
    "than the threshold); 3 inconclusive (a limit ended a benchmark before its verdict); "
    "2 usage, config or build error; 130 interrupted"
)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", default="origin/main", help="the base revision (default: origin/main)")
    p.add_argument("--head", default="HEAD", help="the head revision (default: HEAD)")
    add_tree_options(p)
    add_format_flag(p, ("table", "markdown"))


def write_step_summary(markdown: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY when set (GitHub Actions' job summary)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(markdown)


def run(args: argparse.Namespace) -> int:
    from ..ci.gate import compare_trees, gate_name, tree_experiment
    from ..ci.trees import Trees, resolve
    from ..text import visible
    from ..workflow.repository import add_experiment, tree_versions

    exp = tree_experiment_of(args)
    timeout = build_timeout(args)
    priors = repo_priors(args)
    with Trees(args.git) as trees:
        base, head = resolve(trees.repo, args.base), resolve(trees.repo, args.head)
        changed = trees.uncommitted()
        if changed and head == resolve(trees.repo, "HEAD"):
            print(
                f"duet gate: note: {len(changed)} file(s) of {visible(str(trees.repo))} have "
                f"uncommitted changes (e.g. {visible(changed[0])}); the gate measures the "
                f"commit {head[:10]} without them. Commit them to have them measured.",
                file=sys.stderr,
            )
        base_tree, head_tree = trees.checkout(base, "base"), trees.checkout(head, "head")
        trees.build(base_tree, args.build, timeout=timeout)
        trees.build(head_tree, args.build, timeout=timeout)
        name = gate_name(exp.name, base, head)
        title = f"duet gate: {args.head} ({head[:10]}) against {args.base} ({base[:10]})"
        experiment = tree_experiment(exp, base_tree, head_tree, name)
        result = compare_trees(experiment, args.output, title, priors=priors)
        if result.interrupted:
            return ExitCode.INTERRUPTED
        versions = tree_versions(base_tree, head_tree) if args.repo else None
    if args.format == "markdown" or result.table is None:
        print(result.markdown, end="")
    else:
        print_summary(title, result)
    print(f"results: {visible(str(result.root))}", flush=True)
    write_step_summary(result.markdown)
    if versions is not None:  # after the verdict is out: an error here loses no answer
        info, location = add_experiment(args.repo, result.root, versions)
        print(
            f"duet gate: added to {visible(location)} as experiment #{info.id} "
            f"({visible(info.version_a)} vs {visible(info.version_b)}): the next gate on this "
            "runner starts from its spread",
            file=sys.stderr,
        )
    return result.exit_code


def print_summary(title: str, result: Any) -> None:
    """The gate's summary for a terminal: its outcome, the verdict table, the reasons
    (the Markdown goes to $GITHUB_STEP_SUMMARY and to --format markdown)."""
    from ..ci.gate import outcome, reasons
    from ..report.terminal import make_console, print_verdicts
    from ..text import visible

    console = make_console()
    console.print(visible(outcome(title, result.exit_code)), markup=False, highlight=False)
    print_verdicts(result.table, console)
    for bench, method, verdict, why in reasons(result.rows):
        line = f"  {visible(bench)} ({method}): {verdict} -- {visible(why)}"
        console.print(line, markup=False, highlight=False)
    for i, line in enumerate(result.priors):
        console.print(("  " if i else "") + visible(line), markup=False, highlight=False)
