"""`duet micro`: compare two versions of Python functions (or an asv suite), no duet.yml.

Builds an experiment in memory (docs/micro.md, "duet micro"), runs it like `duet run`
into a normal results directory, prints the verdict table.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from ..errors import ExitCode
from ..options import MEASURES, RUN_STATS, shared_flag
from ._flags import add_keep_unbalanced, parse_duration
from ._options import parse_threshold

if TYPE_CHECKING:
    from ..micro.api import MicroBenchmark

METHOD_CHOICES = ("sduet", "aduet", "seqn", "inproc")


DESCRIPTION = (
    "Time Python functions (module:function, a bench_*.py file, an asv "
    "suite) in two interpreters or source trees, in lockstep by default, and print "
    "the verdict table. The results directory works with duet compare/report/evaluate."
)
EPILOG = (
    "examples: duet micro 'mymod:parse' --a-python envA/bin/python --b-python "
    "envB/bin/python | duet micro bench_parse.py --a-path ./old-src --b-path ./src | "
    "duet micro --asv benchmarks/ -k parse | duet micro --a 'mymod:parse_v1' --b "
    "'mymod:parse_v2'. exit status: 0 ok; 1 a regression (or a suite module that fails to "
    "import) with --fail-on-regression; "
    "2 usage, import or setup error (before any run); 4 some runs failed; 130 "
    "interrupted (--resume continues)"
)


def shared(p: argparse.ArgumentParser, *names: str) -> None:
    """The flags `duet micro` shares with the pytest plugin (``options.SHARED_FLAGS``)."""
    for name in names:
        p.add_argument(f"--{name}", **shared_flag(name))


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "target",
        nargs="?",
        help="module:function, module:Class, file.py[:name], or a suite directory",
    )
    p.add_argument("--asv", metavar="DIR", help="an asv benchmark directory (benchmark_dir)")
    p.add_argument("--a", dest="a_target", metavar="TARGET", help="side A's target (with --b)")
    p.add_argument("--b", dest="b_target", metavar="TARGET", help="side B's target (with --a)")
    for side in "ab":
        shared(p, f"{side}-python")
        p.add_argument(
            f"--{side}-path",
            action="append",
            metavar="DIR",
            help=f"first on side {side.upper()}'s sys.path, repeatable (default: the "
            "current directory)",
        )
    p.add_argument(
        "-k",
        dest="pattern",
        metavar="PATTERN",
        help="only benchmarks whose name contains PATTERN (or matches it as a glob)",
    )
    p.add_argument(
        "--method",
        action="append",
        choices=list(METHOD_CHOICES),
        help="sduet (default: lockstep per sample), aduet, seqn, or inproc (both sides in "
        "one interpreter, samples alternating: the most precise when both can be imported "
        "side by side); repeatable",
    )
    p.add_argument(
        "--budget",
        default="30s",
        help="machine time per benchmark x method, as in duet run, e.g. 30s, 2m (default "
        "30s), split over its runs; the experiment takes about budget x benchmarks x methods",
    )
    p.add_argument(
        "--runs",
        type=int,
        default=10,
        help="runs (fresh interpreters) per "
        "benchmark and method (seqn: half of them per side; default 10)",
    )
    shared(p, "samples")
    p.add_argument(
        "--warmup-samples", type=int, default=1, help="warm-up samples per run (default 1)"
    )
    shared(p, "min-sample-time", "keep-gc", "no-cpu-swap")
    p.add_argument(
        "--cpus",
        choices=["pinned", "shared"],
        default="pinned",
        help="placement of duet sides: pinned (default: each side its own CPU, swapped "
        "every 50 samples) or shared (the scheduler's choice; docs/micro.md, 'Placement')",
    )
    p.add_argument("--name", default="micro", help="experiment name (default: micro)")
    shared(p, "seed")
    p.add_argument("-o", "--output", **shared_flag("output"))
    p.add_argument(
        "--resume", action="store_true", help="continue OUTPUT/<name>, reusing its calibration"
    )
    shared(p, "format")
    p.add_argument(
        "--run-stat",
        choices=list(RUN_STATS),
        default=None,
        help="how a run's samples are summarized (default for micro benchmarks: min, "
        "docs/micro.md, 'Statistics')",
    )
    p.add_argument(
        "--measure",
        choices=list(MEASURES),
        default="auto",
        help="what a sample's time is: wall, cpu, or auto (default): the samples' CPU time "
        "where other work time-sliced the sides (docs/statistics.md, 'Beside other work: "
        "CPU time')",
    )
    shared(p, "threshold")
    add_keep_unbalanced(p)
    shared(p, "fail-on-regression")
    p.add_argument("-v", "--verbose", action="store_true", help="a status line per run")


def run(args: argparse.Namespace) -> int:
    from ..micro.request import MicroRequest, build_experiment
    from ..report.progress import RichObserver
    from ..schedule.inline import run_experiment
    from ..store import ResultsStore
    from ..workflow.runs import runs_not_ok
    from ..workflow.verdicts import judge, render
    from ._output import resume_command

    threshold = parse_threshold(args.threshold)  # a bad one is refused before any run
    request = MicroRequest.create(
        target=args.target,
        asv=args.asv,
        a_target=args.a_target,
        b_target=args.b_target,
        a_python=args.a_python,
        b_python=args.b_python,
        a_paths=args.a_path,
        b_paths=args.b_path,
        pattern=args.pattern,
        methods=args.method,
        budget_s=parse_duration(args.budget, "--budget"),
        runs=args.runs,
        samples=args.samples,
        warmup=args.warmup_samples,
        min_sample_s=parse_duration(args.min_sample_time, "--min-sample-time"),
        keep_gc=args.keep_gc,
        cpu_swap=args.cpu_swap,
        cpus=args.cpus,
        name=args.name,
        seed=args.seed,
    )
    stored = None
    if args.resume:  # the calibration of the interrupted experiment, not a new one
        store = ResultsStore(args.output.resolve() / request.name)
        stored = store.micro_calibrations() if store.has_experiment() else None
    skipped: list[tuple[str, MicroBenchmark]] = []
    exp = build_experiment(request, stored=stored, skipped=skipped)
    # kept in experiment.json: `duet compare` of the directory later judges it alike
    exp = dataclasses.replace(exp, measure=args.measure, threshold=threshold)
    observer = RichObserver(verbose=args.verbose, resume=resume_command(args))
    summary = run_experiment(exp, args.output, resume=args.resume, observer=observer)
    if summary.interrupted:
        return ExitCode.INTERRUPTED
    table = judge(summary.root, run_stat=args.run_stat, keep_unbalanced=args.keep_unbalanced)
    render(table, args.format)
    regression = table.slower
    broken = print_skipped(skipped, verbose=args.verbose)
    bad = runs_not_ok(summary.root, exp, None)
    if bad:
        from ..report.progress import print_runs_not_ok

        print_runs_not_ok(observer.console, summary.root, bad)
        return ExitCode.RUNS_FAILED
    if args.fail_on_regression and (regression or broken):
        return ExitCode.REGRESSION
    return ExitCode.OK


def print_skipped(skipped: list[tuple[str, MicroBenchmark]], *, verbose: bool) -> int:
    """Say which benchmarks were left out and why, on stderr: modules of a suite that failed
    to import always (docs/micro.md: never silently dropped), the ones skipped by design
    (asv ``mem_*``, ...) with ``-v``. Returns how many failed."""
    from ..report.formatting import rich_text
    from ..report.terminal import make_console

    console = make_console(stderr=True)
    failed = [(p, b) for p, b in skipped if b.failed]
    for pair, b in skipped if verbose else failed:
        label = "problem:" if b.failed else "skipped:"
        console.print(
            f"[yellow]{label}[/] {rich_text(b.name)} (side {pair}) not measured: "
            f"{rich_text(b.skip_reason)}",
            highlight=False,
        )
    if failed:
        console.print(
            f"[yellow]problem:[/] {len(failed)} module(s) of the suite failed to import, so "
            "their benchmarks were not measured; with --fail-on-regression this fails (exit 1)",
            highlight=False,
        )
    return len(failed)
