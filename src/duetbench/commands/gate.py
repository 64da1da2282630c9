"""`duet gate`: compare base and head of a git repository on this machine, measured
until sure; exit 0 / 1 / 3 for no regression / regression / inconclusive."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ExitCode
from ._options import add_format_flag


def add_tree_options(p: argparse.ArgumentParser) -> None:
    """The options `duet gate` and `duet bisect` share."""
    p.add_argument("config", type=Path, help="the duet.yml (docs/history.md, 'Gate': {tree})")
    p.add_argument(
        "--build",
        metavar="CMD",
        help="build command run in each checked-out tree (default: none, the trees as checked out)",
    )
    p.add_argument(
        "--build-timeout",
        metavar="TIME",
        help="how long one build may take, e.g. 600 or 20m (default: no limit); a build "
        "still running then is stopped (gate: exit 2; bisect: the commit is skipped)",
    )
    p.add_argument(
        "--git",
        metavar="CHECKOUT",
        type=Path,
        default=Path("."),
        help="the git checkout whose revisions are compared (default: .)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("results"),
        help="parent directory of the comparisons' results (default: results/)",
    )
    p.add_argument(
        "--until",
        metavar="GOAL",
        help="stopping goal: decided (default) or precise:P (docs/adaptive.md)",
    )
    p.add_argument(
        "--threshold",
        metavar="T",
        help="practical threshold of the verdicts, e.g. 2%% (default: the config's stop: "
        "threshold, else 2%%, so that `equivalent` can be decided)",
    )
    p.add_argument(
        "--budget",
        metavar="TIME",
        help="machine time per benchmark x method, e.g. 10m (default: the config's stop: "
        "budget, else none)",
    )
    p.add_argument(
        "--max-runs",
        metavar="N",
        help="most repetitions per benchmark x method (default: the config's stop: max_runs, "
        "else 50)",
    )
    p.add_argument(
        "--history",
        metavar="REPO",
        help="a results repository (a file, created when missing, or a postgresql:// URL): "
        "the stopping rule starts from the spread of this runner's earlier experiments in it, "
        "and every comparison is added to it afterwards (docs/history.md, 'Gates feed the "
        "repository')",
    )
    p.add_argument(
        "--last",
        type=int,
        default=10,
        metavar="N",
        help="with --history: the priors from the last N experiments of each benchmark on "
        "this runner (default 10)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate",
        help="CI gate: is head slower than base? (git worktrees, built, measured until sure)",
        description="Check out --base and --head as git worktrees, build each, and compare "
        "them on this machine with the stopping rules of docs/adaptive.md.",
        epilog="exit status: 0 no regression; 1 regression (a benchmark is slower by more "
        "than the threshold); 3 inconclusive (a limit ended a benchmark before its verdict); "
        "2 usage, config or build error; 130 interrupted",
    )
    p.add_argument("--base", default="origin/main", help="the base revision (default: origin/main)")
    p.add_argument("--head", default="HEAD", help="the head revision (default: HEAD)")
    add_tree_options(p)
    add_format_flag(p, ("table", "markdown"))


def stopped_experiment(args: argparse.Namespace, exp: Any) -> Any:
    """The config with the command line's stopping rule: --until decided (default) at
    --threshold, else the config's `stop: threshold`, else 2 %."""
    from ..config.stop import with_stop_overrides

    has_threshold = any(b.stop is not None and b.stop.threshold > 0 for b in exp.benchmarks)
    return with_stop_overrides(
        exp,
        until=args.until or "decided",
        threshold=args.threshold or (None if has_threshold else "2%"),
        budget=args.budget,
        max_runs=args.max_runs,
    )


def build_timeout(args: argparse.Namespace) -> float | None:
    """--build-timeout in seconds (None: no limit); a bad value is refused before anything
    is checked out."""
    from ._options import parse_duration

    text = args.build_timeout
    return None if text is None else parse_duration(text, "--build-timeout")


def gate_priors(args: argparse.Namespace) -> tuple[Any, ...] | None:
    """--history REPO: this runner's priors for the stopping rules, read before anything is
    checked out or measured (a repository that cannot be used: exit 2 now, not after the
    gate). A missing repository file is created: a first gate has no priors, and says so."""
    from .history import history_priors

    if not args.history:
        return None
    return history_priors(args, None, create=True)


def tree_versions(a_tree: Path, b_tree: Path) -> dict[str, Any]:
    """The versions a comparison measured: A the commit checked out in ``a_tree``, B in
    ``b_tree`` (labelled by `git describe --tags --always`)."""
    from ..history.versions import version_from_git

    return {"A": version_from_git(a_tree), "B": version_from_git(b_tree)}


def add_to_history(url: str, root: Path, versions: dict[str, Any]) -> tuple[Any, str]:
    """Add the comparison at ``root`` to the repository at ``url``: its ExperimentInfo and
    the repository's location (to show)."""
    from ..history import Repository

    with Repository.open(url) as repo:
        return repo.add(root, versions), repo.location


def write_step_summary(markdown: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY when set (GitHub Actions' job summary)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(markdown)


def run(args: argparse.Namespace) -> int:
    from ..ci.gate import compare_trees, gate_name, tree_experiment
    from ..ci.trees import Trees, resolve
    from ..config import load_config
    from ..text import visible
    from .plan import this_host_cpus

    exp = stopped_experiment(args, load_config(args.config, host_cpus=this_host_cpus()))
    timeout = build_timeout(args)
    priors = gate_priors(args)
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
        versions = tree_versions(base_tree, head_tree) if args.history else None
    if args.format == "markdown" or result.table is None:
        print(result.markdown, end="")
    else:
        print_summary(title, result)
    print(f"results: {visible(str(result.root))}", flush=True)
    write_step_summary(result.markdown)
    if versions is not None:  # after the verdict is out: an error here loses no answer
        info, location = add_to_history(args.history, result.root, versions)
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
