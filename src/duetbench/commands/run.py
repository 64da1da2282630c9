"""`duet run`: run an experiment from a duet.yml, then print its verdict table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ExitCode
from ..options import shared_flag
from ._flags import (
    add_config_flags,
    add_run_repo_flags,
    last_experiments,
    refuse_unused,
    split_only,
)

if TYPE_CHECKING:
    from ..history import Version


DESCRIPTION = "Run an experiment: every planned run of every benchmark and method."
EPILOG = (
    "exit status: 0 every run ok; 4 finished, but some runs failed, timed out or "
    "hung (all finished runs kept); 2 config or usage error; 130 interrupted (--resume "
    "continues)"
)


def register(p: argparse.ArgumentParser) -> None:
    add_config_flags(p)
    p.add_argument("-o", "--output", **shared_flag("output"))  # as duet micro's
    p.add_argument(
        "--resume", action="store_true", help="continue an interrupted experiment in OUTPUT/<name>"
    )
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run on a Dask cluster: tcp://host:8786 or local:N (default: this machine)",
    )
    g = p.add_argument_group("measuring until sure (docs/adaptive.md)")
    g.add_argument(
        "--until",
        metavar="GOAL",
        help="stop each benchmark x method when its goal is reached: precise:P (interval "
        "within +-P, e.g. precise:1%%) or decided (slower/faster/equivalent at --threshold) "
        "(default: the config's stop:, else every planned run)",
    )
    g.add_argument(
        "--threshold",
        metavar="T",
        help="practical threshold of the verdicts, e.g. 2%% (default: the config's stop: "
        "threshold, else 0)",
    )
    g.add_argument(
        "--budget",
        metavar="TIME",
        help="machine time per benchmark x method (method auto: per benchmark), e.g. 20m "
        "(default: the config's stop: budget, else none)",
    )
    g.add_argument(
        "--max-runs",
        metavar="N",
        help="most repetitions per benchmark x method (default: the config's stop: "
        "max_runs, else 50)",
    )
    g.add_argument(
        "--method",
        choices=["auto"],
        help="auto: a pilot of every method, then the one with the best precision per "
        "machine-second for each benchmark; with --repo, no pilot of the methods the "
        "repository knows on this host (docs/adaptive.md)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="a status line per run")
    p.add_argument(
        "--no-compare", action="store_true", help="do not print the verdict table at the end"
    )
    add_run_repo_flags(p)


def repo_versions(args: argparse.Namespace, adaptive: bool) -> dict[str, Version] | None:
    """The versions to add the experiment as (None: it is not added): --versions/--git
    name them for --repo; with a stopping rule, --repo alone only gives priors."""
    from ..workflow.repository import versions_of

    if not args.repo or (adaptive and not args.versions and args.git is None):
        return None
    return versions_of(args.versions, args.git)


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..config.stop import with_auto, with_stop_overrides
    from ..micro.experiment import prepare_experiment
    from ..report.progress import RichObserver
    from ..workflow.host import this_host_cpus
    from ..workflow.repository import read_priors
    from ..workflow.runs import runs_not_ok
    from ..workflow.verdicts import print_after_run
    from ._output import resume_command

    refuse_unused(
        (flag, value, bool(args.repo), "--repo REPO")
        for flag, value in (
            ("--last", args.last),
            ("--versions", args.versions),
            ("--git", args.git),
        )
    )
    # runs on a cluster are checked on each host (schedule/cluster.py), not here
    host_cpus = None if args.cluster else this_host_cpus()
    exp = load_config(args.config, executor=args.executor, host_cpus=host_cpus)
    if args.method == "auto":
        exp = with_auto(exp)
    exp = with_stop_overrides(
        exp, until=args.until, threshold=args.threshold, budget=args.budget, max_runs=args.max_runs
    )
    adaptive = any(b.stop is not None for b in exp.benchmarks)
    refuse_unused([("--last", args.last, adaptive, "a stopping rule (--until, or stop:)")])
    # --repo with a stopping rule: its priors; without versions it is not added to
    versions = repo_versions(args, adaptive)  # checked before any run
    priors = read_priors(args.repo, last_experiments(args)) if args.repo and adaptive else None
    exp = prepare_experiment(exp, args.output, resume=args.resume)  # harness: python
    observer = RichObserver(verbose=args.verbose, resume=resume_command(args))
    only = split_only(args.only)
    if args.cluster:
        from ..schedule.cluster import run_experiment_cluster

        summary = run_experiment_cluster(
            exp,
            args.output,
            address=args.cluster,
            resume=args.resume,
            only=only,
            observer=observer,
            priors=priors,
        )
    else:
        from ..schedule.inline import run_experiment

        summary = run_experiment(
            exp, args.output, resume=args.resume, only=only, observer=observer, priors=priors
        )
    if summary.interrupted:
        return ExitCode.INTERRUPTED
    if not args.no_compare:
        print_after_run(summary.root)
    if versions is not None:
        add_to_repository(args.repo, summary.root, versions)
    bad = runs_not_ok(summary.root, exp, only)
    if bad:
        from ..report.progress import print_runs_not_ok

        print_runs_not_ok(observer.console, summary.root, bad)
        return ExitCode.RUNS_FAILED
    return ExitCode.OK


def add_to_repository(location: str, root: Path, versions: dict[str, Version]) -> None:
    """Add the finished experiment at ``root`` to the repository of `duet run --repo`, and
    say so."""
    from ..report.history_tables import added_table
    from ..workflow.output import print_tables
    from ..workflow.repository import add_experiment

    info, where = add_experiment(location, root, versions)
    print_tables([added_table(info, where)])
