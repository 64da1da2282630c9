"""The `duet` command: thin argument parsing over the packages."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .commands import noise as noise_command
from .errors import DuetError

if TYPE_CHECKING:
    from .config.limits import HostCpus
    from .config.model import Experiment

# Exit statuses of every `duet` command (README.md, "Exit status"; docs/results.md).
EXIT_OK = 0
EXIT_REGRESSION = 1  # `duet compare --fail-on-regression`: a verdict is "slower"
EXIT_USAGE = 2  # bad flags, config, input files (a DuetError)
EXIT_INCONCLUSIVE = 3  # reserved: a gate or stopping rule that cannot decide yet
EXIT_RUNS_FAILED = 4  # `duet run` finished, but some runs failed, timed out or hung
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM; `duet run --resume` continues


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run an experiment from a duet.yml",
        description="Run an experiment: every planned run of every benchmark and method.",
        epilog="exit status: 0 every run ok; 4 finished, but some runs failed, timed out or "
        "hung (all finished runs kept); 2 config or usage error; 130 interrupted (--resume "
        "continues)",
    )
    p.add_argument("config", type=Path, help="the duet.yml")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("results"),
        help="parent directory of the results (default: results/); the experiment goes to OUTPUT/<name>",
    )
    p.add_argument(
        "--resume", action="store_true", help="continue an interrupted experiment in OUTPUT/<name>"
    )
    p.add_argument(
        "--only", action="append", metavar="BENCH", help="run only this benchmark (repeatable)"
    )
    p.add_argument(
        "--executor", choices=["local", "docker", "podman"], help="override the config's executor"
    )
    p.add_argument(
        "--cluster", metavar="ADDRESS", help="run on a Dask cluster: tcp://host:8786 or local:N"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="a status line per run")
    p.add_argument(
        "--no-compare", action="store_true", help="do not print the verdict table at the end"
    )
    p.set_defaults(func=cmd_run)


def _add_plan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="print the plan of an experiment without running it")
    p.add_argument("config", type=Path)
    p.add_argument("--only", action="append", metavar="BENCH")
    p.add_argument("--executor", choices=["local", "docker", "podman"])
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument(
        "--no-cpu-check",
        action="store_true",
        help="do not check `cpus:` lists against this host's CPUs (for a plan of cluster runs)",
    )
    p.set_defaults(func=cmd_plan)


def _split_only(only: list[str] | None) -> list[str] | None:
    if not only:
        return None
    return [x for o in only for x in o.split(",") if x]


def _this_host_cpus(note: str = "") -> HostCpus:
    from .config.limits import HostCpus
    from .hosts import available_cpus, host_name

    return HostCpus(host_name(), available_cpus(), note)


def cmd_plan(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console
    from rich.table import Table

    from .config import load_config
    from .plan import make_plan
    from .report.formatting import rich_text

    note = (
        "(`duet plan` checks this host; `duet run --cluster` checks each host of the cluster "
        "instead, and `duet plan --no-cpu-check` plans such runs.)"
    )
    host_cpus = None if args.no_cpu_check else _this_host_cpus(note)
    exp = load_config(args.config, executor=args.executor, host_cpus=host_cpus)
    plan = make_plan(exp, _split_only(args.only))
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in plan], indent=2))
        return 0
    table = Table(
        title=f"{rich_text(exp.name)}: {len(plan)} runs, schedule {exp.schedule}, seed {exp.seed}, "
        f"executor {exp.executor}"
    )
    for col in ("#", "run", "benchmark", "method", "rep", "sides", "cpu slots", "harness"):
        table.add_column(col)
    for r in plan:
        # sides in launch order: "A" or "B" for a seqn run, "AB"/"BA" for a duet
        slots = " ".join(f"{s.pair}:{'-' if s.cpu_slot is None else s.cpu_slot}" for s in r.sides)
        table.add_row(
            str(r.index),
            rich_text(r.run_id),
            rich_text(r.benchmark),
            r.method,
            str(r.rep),
            "".join(r.pairs),
            slots,
            rich_text(r.harness),
        )
    Console().print(table)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .config import load_config
    from .report.progress import RichObserver

    # runs on a cluster are checked on each host (schedule/cluster.py), not here
    host_cpus = None if args.cluster else _this_host_cpus()
    exp = load_config(args.config, executor=args.executor, host_cpus=host_cpus)
    observer = RichObserver(verbose=args.verbose)
    only = _split_only(args.only)
    if args.cluster:
        from .schedule.cluster import run_experiment_cluster

        summary = run_experiment_cluster(
            exp, args.output, address=args.cluster, resume=args.resume, only=only, observer=observer
        )
    else:
        from .schedule.inline import run_experiment

        summary = run_experiment(exp, args.output, resume=args.resume, only=only, observer=observer)
    if summary.interrupted:
        return EXIT_INTERRUPTED
    if not args.no_compare:
        _compare_after_run(summary.root)
    bad = _runs_not_ok(summary.root, exp, only)
    if bad:
        from .report.progress import print_runs_not_ok

        print_runs_not_ok(observer.console, summary.root, bad)
        return EXIT_RUNS_FAILED
    return EXIT_OK


def _runs_not_ok(root: Path, exp: Experiment, only: list[str] | None) -> dict[str, str]:
    """The experiment's finished runs (this invocation's and earlier ones) that are not ok."""
    from .plan import make_plan
    from .schema import RunStatus
    from .store import ResultsStore

    ids = {r.run_id for r in make_plan(exp, only)}
    finished = ResultsStore.open(root).finished()
    return {
        rid: str(e.get("status"))
        for rid, e in sorted(finished.items())
        if rid in ids and e.get("status") != RunStatus.OK
    }


def _compare_after_run(root: Path) -> None:
    try:
        from .report.compare_cli import print_verdicts_after_run
    except ImportError:
        return
    print_verdicts_after_run(root)


REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_run,
    _add_plan,
    noise_command.register,
]


def _optional_registrars() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Subcommands that live in their own modules (each exposes register_cli)."""
    found = []
    for mod in (
        "duetbench.report.compare_cli",
        "duetbench.report.evaluate_cli",
        "duetbench.report.hosts_cli",
    ):
        try:
            module = __import__(mod, fromlist=["register_cli"])
        except ImportError:
            continue
        reg = getattr(module, "register_cli", None)
        if reg is not None:
            found.append(reg)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="duet", description="A/B performance comparison with duet benchmarking."
    )
    parser.add_argument("--version", action="version", version=f"duetbench {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for reg in REGISTRARS + _optional_registrars():
        reg(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DuetError as exc:
        if args.debug or os.environ.get("DUET_DEBUG"):
            raise
        print(f"duet: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("duet: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
