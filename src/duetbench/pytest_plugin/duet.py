"""``pytest --duet-a PATH --duet-b PATH`` (or ``--duet-against GIT_REF``): the benchmark
tests of two versions, each side in its own pytest processes, in lockstep
(docs/pytest.md, "A against B").

1. **Calibrate** (``calibrate.py``): one pytest process per side, the two at once, runs
   every test that uses the ``benchmark`` fixture (the user's command line, all
   fixtures); each call is calibrated as duet micro's worker calibrates. A test failing
   on a side stops everything before any run (exit status 2); a test skipped on a side,
   or not on both, is left out and said so.
2. **Design** (``design.py``): what is left of ``--duet-budget`` after the calibration
   becomes runs and samples per test per run, from what the calibration measured.
3. **Run**: an experiment through duetbench's scheduler into a results directory
   (``--duet-output``/``pytest-<time>``): every run starts one pytest process per side
   that runs *every* selected test, each test's call taking its samples; under sduet
   (the default) each sample starts after the handshake, each side told A's evaluation
   count. No run starts that would end after the budget.
4. **Verdicts**: the table `duet compare` prints, through the workflow layer, with the
   threshold kept in the results directory (so `duet compare` of it later agrees).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..errors import DuetError
from ..options import SHARED_FLAGS
from .calibrate import Found, Side, calibrate, pytest_argv
from .design import MIN_RUNS, Design, plan_runs
from .names import ENV, XDIST_OFF
from .pace import Pacer

#: seconds kept from the budget for the verdicts at the end: the analysis's modules
#: (pandas, scipy) load after the last run, not beside the calibration, which would
#: read the sides' costs high
VERDICT_RESERVE_S = 2.5
#: the --duet-* options that take no value (every other one takes one)
FLAGS = tuple(
    f"--duet-{name}"
    for name, kw in SHARED_FLAGS.items()
    if kw.get("action") in ("store_true", "store_false")
)
#: how far past --duet-budget a session may end: only to reach the fewest runs that give
#: an interval (docs/pytest.md, "Cost")
BUDGET_TOLERANCE = 0.25
#: swap CPUs after about this many samples of the slowest test (docs/micro.md, "Placement")
SWAP_EVERY_S = 0.1
#: the suite label of the results (the benchmarks are the tests)
SUITE = "pytest"


@dataclass(frozen=True)
class DuetOptions:
    """The ``--duet-*`` options, checked."""

    a_paths: tuple[str, ...]
    b_paths: tuple[str, ...]
    against: str | None
    tree_path: str | None
    build: str | None
    a_python: str
    b_python: str
    methods: tuple[str, ...]
    budget_s: float
    runs: int | None
    samples: int | None
    min_sample_s: float
    keep_gc: bool
    cpu_swap: bool
    threshold: float
    fmt: str
    report: str | None
    fail_on_regression: bool
    output: Path
    seed: int

    @staticmethod
    def from_config(config: pytest.Config) -> DuetOptions:
        from ..units import ValueTextError, duration, percentage

        def value(flag: str, parse: Any) -> Any:
            text = str(config.getoption(flag))
            try:
                return parse(text)
            except ValueTextError as exc:
                raise pytest.UsageError(f"{flag} {text!r}: {exc}") from None

        a, b, against = (config.getoption(f) for f in ("--duet-a", "--duet-b", "--duet-against"))
        if against and (a or b):
            raise pytest.UsageError(
                "give --duet-against GIT_REF, or --duet-a and --duet-b, not both"
            )
        if not against and not (a and b):
            raise pytest.UsageError(
                "give both --duet-a PATH and --duet-b PATH (the two source trees), or "
                "--duet-against GIT_REF"
            )
        for flag in ("--duet-path", "--duet-build"):
            if config.getoption(flag) and not against:
                raise pytest.UsageError(f"{flag} goes with --duet-against")
        runs, samples = config.getoption("--duet-runs"), config.getoption("--duet-samples")
        if (runs is not None and runs < 2) or (samples is not None and samples < 1):
            raise pytest.UsageError(
                "--duet-runs must be at least 2 (an interval needs two runs) and "
                "--duet-samples at least 1"
            )
        for flag in ("--duet-a", "--duet-b"):
            for p in config.getoption(flag):
                if not Path(p).is_dir():
                    raise pytest.UsageError(f"{flag} {p}: not a directory (a source tree)")
        for flag in ("--duet-a-python", "--duet-b-python"):
            python = config.getoption(flag)
            if python and not _executable(python):
                raise pytest.UsageError(f"{flag} {python}: no such interpreter")
        return DuetOptions(
            a_paths=tuple(os.path.abspath(p) for p in a),
            b_paths=tuple(os.path.abspath(p) for p in b),
            against=against,
            tree_path=config.getoption("--duet-path"),
            build=config.getoption("--duet-build"),
            a_python=config.getoption("--duet-a-python") or sys.executable,
            b_python=config.getoption("--duet-b-python") or sys.executable,
            methods=tuple(dict.fromkeys(config.getoption("--duet-method") or ["sduet"])),
            budget_s=value("--duet-budget", lambda t: duration(t, "--duet-budget")),
            runs=runs,
            samples=samples,
            min_sample_s=value(
                "--duet-min-sample-time", lambda t: duration(t, "--duet-min-sample-time")
            ),
            keep_gc=config.getoption("--duet-keep-gc"),
            cpu_swap=config.getoption("duet_cpu_swap"),  # --duet-no-cpu-swap
            threshold=value("--duet-threshold", lambda t: percentage(t, "--duet-threshold")),
            fmt=config.getoption("--duet-format"),
            report=config.getoption("--duet-report"),
            fail_on_regression=config.getoption("--duet-fail-on-regression"),
            output=Path(config.getoption("--duet-output")),
            seed=config.getoption("--duet-seed"),
        )


def _executable(python: str) -> bool:
    import shutil

    return shutil.which(python) is not None or (
        os.path.isfile(python) and os.access(python, os.X_OK)
    )


def side_args(args: list[str] | tuple[str, ...]) -> list[str]:
    """The user's command line without the ``--duet-*`` options (and their values)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("--duet-"):
            skip = "=" not in arg and arg not in FLAGS
            continue
        out.append(arg)
    return out


def short_name(nodeid: str) -> str:
    """A test's name in the verdict table: its file's stem, class and name
    (``tests/bench/test_parse.py::TestX::test_y[10]`` -> ``test_parse.TestX.test_y[10]``)."""
    path, _, rest = nodeid.partition("::")
    stem = Path(path).stem
    return f"{stem}.{rest.replace('::', '.')}" if rest else stem


def _env() -> dict[str, str]:
    """This process's environment without duetbench's run variables (a calibration is
    never part of a duet)."""
    drop = ("DUET_SYNC_DIR", "DUET_OUTPUT_DIR", "DUET_PAIR", "DUET_CPU_SWAP", ENV)
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_names(found: Found) -> dict[str, str]:
    """node id -> the benchmark's name: :func:`short_name` with the brackets of a
    parameter id as a dash (``test_parse.test_y-10``), whole (no directory is named
    after it: a test's samples are in ``t000/``, ...), unique."""
    import re

    taken: set[str] = set()
    out = {}
    for nodeid in found.tests:
        text = re.sub(r"[\[\]]+", "-", short_name(nodeid)).strip("-") or "test"
        name, i = text, 2
        while name in taken:
            name, i = f"{text}-{i}", i + 1
        taken.add(name)
        out[nodeid] = name
    return out


def build_experiment(
    found: Found,
    design: Design,
    names: dict[str, str],
    sides: tuple[Side, Side],
    args: list[str],
    cwd: Path,
    opts: DuetOptions,
    name: str,
    pace: Path | None = None,
) -> Any:
    """One benchmark whose every run samples every test: each side a pytest command over
    the user's arguments, told the plan (node ids, samples, folders) and where the share
    of the samples a run takes is kept (``pace``, :class:`Pacer`); each test's samples
    become the benchmark of its name (``workload_benchmarks``)."""
    from ..config.model import Benchmark, Experiment
    from ..config.model import Side as ConfigSide
    from ..micro.experiment import RUN_TIMEOUT_SLACK_S

    tests = [
        {
            "nodeid": nodeid,
            "name": names[nodeid],
            "dir": f"t{i:03d}",
            "samples": design.samples[names[nodeid]],
            "evaluations": found.evaluations(nodeid),
        }
        for i, nodeid in enumerate(found.tests)
    ]
    reps = {m: (math.ceil(design.runs / 2) if m == "seqn" else design.runs) for m in opts.methods}
    aa = sides[0].python == sides[1].python and sides[0].paths == sides[1].paths
    config_sides = []
    for side in sides:
        ins = {
            "mode": "run",
            "tests": tests,
            "warmup": design.warmup,
            "keep_gc": opts.keep_gc,
            "swap_every": SWAP_EVERY_S if opts.cpu_swap else 0.0,
            "paths": list(side.paths),
            "side": side.name,
        }
        if pace is not None:
            ins["pace"] = str(pace)
        command = shlex.join(pytest_argv(side.python, args))
        config_sides.append(
            (
                side.name,
                ConfigSide(
                    command=command,
                    sync_command=command,
                    env=((ENV, json.dumps(ins, sort_keys=True)),),
                    workdir=str(cwd),
                    results=tuple(f"$DUET_OUTPUT_DIR/{t['dir']}" for t in tests),
                ),
            )
        )
    bench = Benchmark(
        name="tests",
        sides=tuple(config_sides),
        aa=aa,
        harness="micro",
        suite=SUITE,
        repetitions=tuple((m, reps.get(m, 0)) for m in ("seqn", "aduet", "sduet")),
        iterations=None,
        timeout=RUN_TIMEOUT_SLACK_S + 10 * design.run_s,
        cpus="pinned",  # docs/micro.md, "Placement"
        workload_benchmarks=True,
    )
    return Experiment(
        name=name,
        seed=opts.seed,
        schedule="rmit",
        benchmarks=(bench,),
        threshold=opts.threshold,  # kept: `duet compare` of the directory gives this table
    )


@dataclass
class Outcome:
    root: Path | None = None
    notes: list[str] = field(default_factory=list)
    regression: bool = False
    runs_failed: bool = False
    interrupted: bool = False
    text: str | None = None  # the verdict table for --duet-report
    error: bool = False  # the session stopped with a message (exit status 2)
    no_answer: bool = False  # fewer than two usable runs of every test: no interval


def _git_toplevel(cwd: Path) -> Path:
    done = subprocess.run(
        ["git", "-C", str(cwd), "rev-parse", "--show-toplevel"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise DuetError(f"--duet-against needs a git repository: {done.stderr.strip()}")
    return Path(done.stdout.strip())


class Session:
    """One duet session: its clock (the budget counts from this process's start), what
    it writes to the terminal, and the steps of the module doc."""

    def __init__(
        self, config: pytest.Config, opts: DuetOptions, write: Any, section: Any = None
    ) -> None:
        from ..proctools.procfs import age_s

        self.config = config
        self.opts = opts
        self.write = write
        self.section = section or (lambda title: None)
        self.started = time.monotonic() - (age_s() or 0.0)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def sides(self, stack: Any) -> tuple[Side, Side]:
        opts = self.opts
        if not opts.against:
            return (Side("A", opts.a_python, opts.a_paths), Side("B", opts.b_python, opts.b_paths))
        from ..ci.trees import Trees, resolve

        top = _git_toplevel(Path(self.config.invocation_params.dir))
        trees = stack.enter_context(Trees(top))
        tree = trees.checkout(resolve(top, opts.against), "against")
        if opts.build:
            trees.build(tree, opts.build)
        rel = opts.tree_path or ("src" if (top / "src").is_dir() else ".")
        self.write(f"duet: side A is {opts.against} (a worktree), side B this tree ({rel})")
        return (
            Side("A", opts.a_python, (str((tree / rel).resolve()),)),
            Side("B", opts.b_python, (str((top / rel).resolve()),)),
        )

    def calibrate(self, sides: tuple[Side, Side], args: list[str]) -> Found:
        cwd = Path(self.config.invocation_params.dir)
        settings = {"min_sample_s": self.opts.min_sample_s, "keep_gc": self.opts.keep_gc}
        self.write("duet: calibrating the benchmark tests in each side's pytest")
        found = calibrate(sides, args, cwd, _env(), settings)
        for name, conf in sorted(found.config.items()):
            ini = conf["inifile"] or "none"
            self.write(f"duet: side {name}'s pytest: rootdir {conf['rootdir']}, inifile {ini}")
        for note in found.notes:
            self.write(f"duet: {note}")
        return found

    def design(self, found: Found, names: dict[str, str]) -> Design:
        from .design import BudgetTooSmall

        opts = self.opts
        costs = [found.cost(nodeid, names[nodeid], opts.min_sample_s) for nodeid in found.tests]
        # every method runs the design once (seqn: half the repetitions, two runs each)
        per_method = len(opts.methods)
        available = (opts.budget_s - self.elapsed() - VERDICT_RESERVE_S) / per_method
        try:
            design = plan_runs(
                costs, found.overhead_s, available, runs=opts.runs, samples=opts.samples
            )
        except BudgetTooSmall as exc:
            raise DuetError(
                f"--duet-budget {opts.budget_s:g}s is too short: {exc}. Give --duet-budget "
                f"{math.ceil(exc.needed_s * per_method + self.elapsed() + VERDICT_RESERVE_S)}s "
                "or more, or select fewer tests (-k)"
            ) from None
        samples = sorted(set(design.samples.values()))
        spread = f"{samples[0]}" if len(samples) == 1 else f"{samples[0]}-{samples[-1]}"
        self.write(
            f"duet: {len(found.tests)} tests, {design.runs} runs of about {design.run_s:.1f} s "
            f"({found.overhead_s:.1f} s of it pytest, collection and fixtures); "
            f'{spread} samples per test per run (docs/pytest.md, "Cost")'
        )
        for note in design.notes:
            self.write(f"duet: {note}")
        return design

    def run(self, exp: Any, design: Design, pace: Path | None = None) -> Outcome:
        from ..report.progress import RichObserver
        from ..schedule.inline import Deadline, run_experiment
        from ..workflow.runs import runs_not_ok

        observer: Any = RichObserver()
        pacer = Pacer(observer, pace, design) if pace is not None else None
        left = self.opts.budget_s - self.elapsed() - VERDICT_RESERVE_S
        now = time.monotonic()
        deadline = Deadline(
            now + left,
            design.run_s,
            floor_runs=MIN_RUNS,  # the fewest that give an interval may use the tolerance
            late_at=now + left + BUDGET_TOLERANCE * self.opts.budget_s,
            predict=pacer.predict if pacer is not None else None,
        )
        summary = run_experiment(
            exp, self.opts.output, observer=pacer or observer, deadline=deadline
        )
        out = Outcome(root=summary.root, interrupted=summary.interrupted)
        said = pacer.note() if pacer is not None else None
        if said:
            out.notes.append(said)
        ran = sum(summary.statuses.values())
        if summary.out_of_time:
            took = summary.elapsed_s / ran if ran else 0.0
            out.notes.append(
                f"{summary.out_of_time} planned runs were not started: they would have "
                f"ended after --duet-budget (a run took {took:.1f} s, {design.run_s:.1f} s "
                "were planned: the machine was slower than during the calibration)"
            )
        if not summary.interrupted:
            out.runs_failed = bool(runs_not_ok(summary.root, exp, None))
        return out

    def judge(self, out: Outcome) -> None:
        from ..workflow.verdicts import judge, render, render_text

        assert out.root is not None
        table = judge(out.root)
        out.regression = table.slower
        if not table.rows["runs"].fillna(0).ge(2).any():  # no interval anywhere: say so
            out.no_answer = True
        self.section("duet: B against A")
        if self.opts.report is None:
            render(table, self.opts.fmt)
        else:
            out.text = render_text(table, self.opts.fmt)


def run_duet(config: pytest.Config, opts: DuetOptions, write: Any, section: Any = None) -> Outcome:
    """Calibrate, design, run and judge (see the module doc)."""
    import contextlib
    import tempfile

    session = Session(config, opts, write, section)
    args = side_args(list(config.invocation_params.args))
    with contextlib.ExitStack() as stack:
        sides = session.sides(stack)
        found = session.calibrate(sides, args)
        names = test_names(found)
        design = session.design(found, names)
        name = "pytest-" + time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        cwd = Path(config.invocation_params.dir)
        # the runs keep their pace on a busier machine, unless the samples were asked for
        pace = None
        if opts.samples is None:
            pace = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duet-pace-")))
            pace = pace / "pace.json"
        exp = build_experiment(found, design, names, sides, args, cwd, opts, name, pace)
        out = session.run(exp, design, pace)
        out.notes[:0] = found.notes
        if out.root is not None and not out.interrupted:
            session.judge(out)
        return out
    raise AssertionError("unreachable")  # pragma: no cover


class Controller:
    """The duet's hooks: no collection, the experiment instead of the test loop, the
    verdict table in the terminal summary, the exit status."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.opts = DuetOptions.from_config(config)  # bad options: a UsageError, exit 4
        self.outcome: Outcome | None = None
        if not config.option.pyargs:  # pytest's own message for a path that is not there
            here = Path(config.invocation_params.dir)
            for arg in config.args:
                path = str(arg).partition("::")[0]
                if not (here / path).exists():
                    raise pytest.UsageError(f"file or directory not found: {arg}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool:
        session.items = []
        return True

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        lines = ["duet: the benchmark tests run in each side's own pytest processes"]
        if XDIST_OFF:
            lines.append(
                "duet: pytest-xdist's -n/--dist is off for this session and its sides (each "
                "side runs its tests in one process, in lockstep with the other's)"
            )
        return lines

    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")

        def write(line: str, **markup: bool) -> None:
            if reporter is not None:
                reporter.write_line(line, **markup)

        def section(title: str) -> None:
            if reporter is not None:
                reporter.section(title)

        try:
            out = run_duet(self.config, self.opts, write, section)
        except DuetError as exc:  # one clear message, no traceback; exit status 2
            from ..text import visible

            self.outcome = Outcome(error=True)
            for i, line in enumerate(visible(str(exc), lines=True).splitlines()):
                write(("duet: error: " if i == 0 else "  ") + line, red=True, bold=i == 0)
            return True
        self.outcome = out
        if out.root is None or out.interrupted:
            return True
        if out.text is not None and self.opts.report:
            from ..atomic import write_atomic

            write_atomic(Path(self.opts.report), out.text)
            write(f"verdicts: {self.opts.report}")
        write(f"results: {out.root}")
        for note in out.notes:
            write(f"note: {note}")
        if out.runs_failed:
            write(f"some runs failed: `duet process {out.root}` says why", red=True)
        if out.no_answer:
            write(
                "duet: error: no test has the two usable runs an interval needs: no verdict "
                "(see the notes above; a longer --duet-budget, or fewer tests with -k)",
                red=True,
                bold=True,
            )
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """0; 1 for failed runs, or a 'slower' verdict with --duet-fail-on-regression;
        2 interrupted (as pytest) or stopped with a message."""
        out = self.outcome
        if out is None:
            return
        if out.error or out.no_answer:
            session.exitstatus = 2
        elif out.interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif out.runs_failed or (out.regression and self.opts.fail_on_regression):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            session.exitstatus = pytest.ExitCode.OK
