"""``pytest --duet-a PATH --duet-b PATH`` (or ``--duet-against GIT_REF``): the benchmark
tests of two versions, each side in its own pytest processes, in lockstep
(docs/pytest.md, "A against B").

1. **Calibrate**: one pytest process per side runs every test that uses the
   ``benchmark`` fixture (the user's command line, all fixtures); each call is calibrated
   as duet micro's worker calibrates (docs/micro.md, "Calibration"). A test failing on a
   side stops everything before any run (exit status 2); a test skipped on a side, or
   not on both, is left out and said so.
2. **Run**: an experiment of one benchmark per test goes through duetbench's scheduler
   into a results directory (``--duet-output``/``pytest-<time>``), like `duet micro`'s:
   every run starts one pytest process per side that runs that one test; under sduet
   (the default) each sample starts after the micro worker's handshake, and each side is
   told A's evaluation count, so both do equal work per sample.
3. **Verdicts**: the table `duet compare` prints (:func:`verdicts`, the one call into
   the verdict code), at the end of the session.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .names import ENV, FLAGS, PLUGIN

#: seconds a side's pytest process costs besides its samples (interpreter, pytest,
#: collection, fixtures); subtracted from each run's share of the budget
PYTEST_RUN_OVERHEAD_S = 1.0
#: bytes of a side's output kept to show why it failed
_OUTPUT_TAIL = 3000


def _error(message: str) -> Exception:
    """An error of the session (after the options were read): exit status 2, no traceback."""
    from ..errors import DuetError

    return DuetError(message)


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
    runs: int
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
        from ..commands._options import parse_threshold
        from ..units import duration

        def seconds(flag: str) -> float:
            text = str(config.getoption(flag))
            try:
                return duration(text)
            except ValueError as exc:
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
        if runs < 1 or (samples is not None and samples < 1):
            raise pytest.UsageError("--duet-runs and --duet-samples must be at least 1")
        for flag in ("--duet-a", "--duet-b"):
            for p in config.getoption(flag):
                if not Path(p).is_dir():
                    raise pytest.UsageError(f"{flag} {p}: not a directory (a source tree)")
        try:
            threshold = parse_threshold(config.getoption("--duet-threshold"))
        except Exception as exc:  # a DuetError saying what to write
            raise pytest.UsageError(str(exc)) from None
        return DuetOptions(
            a_paths=tuple(os.path.abspath(p) for p in a),
            b_paths=tuple(os.path.abspath(p) for p in b),
            against=against,
            tree_path=config.getoption("--duet-path"),
            build=config.getoption("--duet-build"),
            a_python=config.getoption("--duet-a-python") or sys.executable,
            b_python=config.getoption("--duet-b-python") or sys.executable,
            methods=tuple(dict.fromkeys(config.getoption("--duet-method") or ["sduet"])),
            budget_s=seconds("--duet-budget"),
            runs=runs,
            samples=samples,
            min_sample_s=seconds("--duet-min-sample-time"),
            keep_gc=config.getoption("--duet-keep-gc"),
            cpu_swap=not config.getoption("--duet-no-cpu-swap"),
            threshold=threshold,
            fmt=config.getoption("--duet-format"),
            report=config.getoption("--duet-report"),
            fail_on_regression=config.getoption("--duet-fail-on-regression"),
            output=Path(config.getoption("--duet-output")),
            seed=config.getoption("--duet-seed"),
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


@dataclass(frozen=True)
class Side:
    name: str  # A or B
    python: str
    paths: tuple[str, ...]


@dataclass
class Found:
    """What the calibration passes found."""

    tests: list[str]  # on both sides, in A's order
    calibrations: dict[str, dict[str, dict[str, Any]]]  # nodeid -> side -> record
    notes: list[str] = field(default_factory=list)


def _env() -> dict[str, str]:
    """This process's environment without duetbench's run variables (a calibration is
    never part of a duet)."""
    drop = ("DUET_SYNC_DIR", "DUET_OUTPUT_DIR", "DUET_PAIR", "DUET_CPU_SWAP", ENV)
    return {k: v for k, v in os.environ.items() if k not in drop}


def pytest_argv(python: str, args: list[str]) -> list[str]:
    return [python, "-m", "pytest", *args, "-p", PLUGIN, "-p", "no:cacheprovider", "-q"]


def calibrate_side(side: Side, args: list[str], cwd: Path, opts: DuetOptions) -> dict[str, Any]:
    """One pytest process of ``side`` over every benchmark test: what it calibrated and
    each test's outcome."""
    with tempfile.TemporaryDirectory(prefix="duet-pytest-") as tmp:
        out = Path(tmp) / "calibration.json"
        ins = {
            "mode": "calibrate",
            "out": str(out),
            "paths": list(side.paths),
            "min_sample_s": opts.min_sample_s,
            "keep_gc": opts.keep_gc,
            "side": side.name,
        }
        env = {**_env(), ENV: json.dumps(ins), "DUET_PAIR": side.name}
        try:
            done = subprocess.run(
                pytest_argv(side.python, args), cwd=cwd, env=env, capture_output=True, text=True
            )
        except OSError as exc:
            raise _error(f"side {side.name}: cannot run {side.python}: {exc}") from None
        if not out.is_file():
            tail = (done.stdout + done.stderr)[-_OUTPUT_TAIL:]
            raise _error(
                f"side {side.name}: pytest ended (exit status {done.returncode}) before "
                f"calibrating; is duetbench installed in {side.python}? Its output:\n{tail}"
            )
        return json.loads(out.read_text(encoding="utf-8"))


def calibrate(sides: tuple[Side, Side], args: list[str], cwd: Path, opts: DuetOptions) -> Found:
    docs = {s.name: calibrate_side(s, args, cwd, opts) for s in sides}
    failed = [
        f"{nodeid} (side {name}): {o['message']}"
        for name, doc in docs.items()
        for nodeid, o in doc["outcomes"].items()
        if o["outcome"] == "failed"
    ]
    if failed:
        raise _error(
            "benchmark tests failed before any run, fix them first:\n  " + "\n  ".join(failed)
        )
    notes = []
    skipped: dict[str, list[str]] = {}
    for name, doc in docs.items():
        for nodeid, o in doc["outcomes"].items():
            if o["outcome"] == "skipped":
                skipped.setdefault(nodeid, []).append(name)
    for nodeid, names in skipped.items():
        where = "both sides" if len(names) == 2 else f"side {names[0]}"
        reason = docs[names[0]]["outcomes"][nodeid]["message"].removeprefix("Skipped: ")
        notes.append(f"{nodeid}: skipped on {where} ({reason}); left out")
    a, b = docs["A"]["records"], docs["B"]["records"]
    for nodeid in docs["A"]["selected"]:
        if nodeid in a and nodeid not in b and nodeid not in docs["B"]["selected"]:
            notes.append(f"{nodeid}: side B has no such test; left out")
    for nodeid in docs["B"]["selected"]:
        if nodeid in b and nodeid not in docs["A"]["selected"]:
            notes.append(f"{nodeid}: side A has no such test; left out")
    tests = [n for n in a if n in b]
    if not tests:
        raise _error(
            "no benchmark test ran on both sides: no test uses the benchmark fixture "
            "(pytest-benchmark's) in what this command line selects"
            + ("; " + "; ".join(notes) if notes else "")
        )
    return Found(tests, {n: {"A": a[n], "B": b[n]} for n in tests}, notes)


def short_name(nodeid: str) -> str:
    """A test's name in the verdict table: its file's stem, class and name
    (``tests/bench/test_parse.py::TestX::test_y[10]`` -> ``test_parse.TestX.test_y[10]``)."""
    path, _, rest = nodeid.partition("::")
    stem = Path(path).stem
    return f"{stem}.{rest.replace('::', '.')}" if rest else stem


def _node_arg(nodeid: str, rootdir: Path) -> str:
    """The node id as a command-line argument from any directory (its file absolute)."""
    path, sep, rest = nodeid.partition("::")
    return str(rootdir / path) + sep + rest


def build_experiment(
    found: Found,
    sides: tuple[Side, Side],
    args: list[str],
    positional: list[str],
    cwd: Path,
    rootdir: Path,
    opts: DuetOptions,
    name: str,
) -> Any:
    """One micro benchmark per test (harness ``micro``: the worker's files), each side a
    pytest command running that test; sampling time per run from the budget, as
    `duet micro` shares it (docs/micro.md, "duet micro")."""
    from ..config.model import Benchmark, Experiment
    from ..config.model import Side as ConfigSide
    from ..micro.experiment import (
        MIN_SAMPLES_PER_RUN,
        RUN_TIMEOUT_SLACK_S,
        SWAP_MIN_S,
        SWAP_SAMPLES,
    )
    from ..micro.request import MIN_RUN_TIME_S, bench_name

    share = opts.budget_s / (len(found.tests) * len(opts.methods) * opts.runs)
    run_time = max(MIN_RUN_TIME_S, share - PYTEST_RUN_OVERHEAD_S)
    reps = {m: (math.ceil(opts.runs / 2) if m == "seqn" else opts.runs) for m in opts.methods}
    base_args = [a for a in args if a not in set(positional)]
    aa = sides[0].python == sides[1].python and sides[0].paths == sides[1].paths
    taken: set[str] = set()
    benchmarks = []
    for nodeid in found.tests:
        cal = found.calibrations[nodeid]
        setup = bool(cal["A"].get("setup"))
        evaluations = 1 if setup else int(cal["A"]["calibration"]["evaluations"])
        per_eval = max(
            float(c["calibration"].get("per_evaluation_ns") or 0.0) for c in cal.values()
        )
        sample_s = max(evaluations * per_eval / 1e9, opts.min_sample_s if not setup else 0.0)
        budget_s = None
        if opts.samples is None:
            budget_s = max(run_time, MIN_SAMPLES_PER_RUN * sample_s)
        swap_s = max(SWAP_MIN_S, SWAP_SAMPLES * sample_s) if opts.cpu_swap else 0.0
        sampling = budget_s if budget_s is not None else (opts.samples or 0) * sample_s
        config_sides = []
        for side in sides:
            ins = {
                "mode": "run",
                "nodeid": nodeid,
                "evaluations": evaluations,
                "samples": opts.samples,
                "budget_s": budget_s,
                "warmup": 1,
                "keep_gc": opts.keep_gc,
                "swap_every": swap_s,
                "paths": list(side.paths),
                "side": side.name,
            }
            command = shlex.join(pytest_argv(side.python, [*base_args, _node_arg(nodeid, rootdir)]))
            config_sides.append(
                (
                    side.name,
                    ConfigSide(
                        command=command,
                        sync_command=command,
                        env=((ENV, json.dumps(ins, sort_keys=True)),),
                        workdir=str(cwd),
                    ),
                )
            )
        benchmarks.append(
            Benchmark(
                name=bench_name(short_name(nodeid), taken),
                sides=tuple(config_sides),
                aa=aa,
                harness="micro",
                repetitions=tuple((m, reps.get(m, 0)) for m in ("seqn", "aduet", "sduet")),
                iterations=None,
                timeout=RUN_TIMEOUT_SLACK_S
                + 10 * (sampling + 2 * sample_s + PYTEST_RUN_OVERHEAD_S),
                cpus="pinned",  # docs/micro.md, "Placement"
                suite=nodeid,
            )
        )
    return Experiment(name=name, seed=opts.seed, schedule="rmit", benchmarks=tuple(benchmarks))


def verdicts(root: Path, opts: DuetOptions) -> tuple[str | None, bool]:
    """The verdict table of results directory ``root`` -- `duet compare`'s, by its one
    function -- printed (``None``) or as text for ``--duet-report``; True when a verdict
    is 'slower'."""
    from ..commands.compare import render_verdicts

    if opts.report is None:
        return None, render_verdicts(root, opts.fmt, None, opts.threshold)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        regression = render_verdicts(root, opts.fmt, None, opts.threshold)
    return buf.getvalue(), regression


@dataclass
class Outcome:
    root: Path | None = None
    notes: list[str] = field(default_factory=list)
    regression: bool = False
    runs_failed: bool = False
    interrupted: bool = False


def _git_toplevel(cwd: Path) -> Path:
    done = subprocess.run(
        ["git", "-C", str(cwd), "rev-parse", "--show-toplevel"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise _error(f"--duet-against needs a git repository: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def run_duet(config: pytest.Config, opts: DuetOptions, write: Any) -> Outcome:
    """Calibrate, run and judge (see the module doc)."""
    from ..ci.trees import Trees, resolve

    cwd = Path(config.invocation_params.dir)
    args = side_args(list(config.invocation_params.args))
    positional = [str(a) for a in config.args]
    with contextlib.ExitStack() as stack:
        if opts.against:
            top = _git_toplevel(cwd)
            trees = stack.enter_context(Trees(top))
            tree = trees.checkout(resolve(top, opts.against), "against")
            if opts.build:
                trees.build(tree, opts.build)
            rel = opts.tree_path or ("src" if (top / "src").is_dir() else ".")
            a_paths = (str((tree / rel).resolve()),)
            b_paths = (str((top / rel).resolve()),)
            write(f"duet: side A is {opts.against} (a worktree), side B this tree ({rel})")
        else:
            a_paths, b_paths = opts.a_paths, opts.b_paths
        sides = (Side("A", opts.a_python, a_paths), Side("B", opts.b_python, b_paths))
        write("duet: calibrating the benchmark tests in each side's pytest")
        found = calibrate(sides, args, cwd, opts)
        for note in found.notes:
            write(f"duet: {note}")
        name = "pytest-" + time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        exp = build_experiment(
            found, sides, args, positional, cwd, Path(config.rootpath), opts, name
        )
        return _run(exp, opts, found.notes)
    raise AssertionError("unreachable")  # pragma: no cover


def _run(exp: Any, opts: DuetOptions, notes: list[str]) -> Outcome:
    from ..commands.run import runs_not_ok
    from ..report.progress import RichObserver
    from ..schedule.inline import run_experiment

    summary = run_experiment(exp, opts.output, observer=RichObserver())
    out = Outcome(root=summary.root, notes=notes, interrupted=summary.interrupted)
    if not summary.interrupted:
        out.runs_failed = bool(runs_not_ok(summary.root, exp, None))
    return out


class Controller:
    """The duet's hooks: no collection, the experiment instead of the test loop, the
    verdict table in the terminal summary, the exit status."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.opts = DuetOptions.from_config(config)  # bad options: a UsageError, exit 4
        self.outcome: Outcome | None = None
        self.report: str | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool:
        session.items = []
        return True

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return ["duet: the benchmark tests run in each side's own pytest processes"]

    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from ..errors import DuetError

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")

        def write(line: str, **markup: bool) -> None:
            if reporter is not None:
                reporter.write_line(line, **markup)

        try:
            out = run_duet(self.config, self.opts, write)
            self.outcome = out
            if out.root is None or out.interrupted:
                return True
            if reporter is not None:
                reporter.section("duet: B against A")
            text, out.regression = verdicts(out.root, self.opts)
        except DuetError as exc:
            pytest.exit(f"duet: {exc}", returncode=2)
        if text is not None and self.opts.report:
            from ..atomic import write_atomic

            write_atomic(Path(self.opts.report), text)
            write(f"verdicts: {self.opts.report}")
        write(f"results: {out.root}")
        for note in out.notes:
            write(f"note: {note}")
        if out.runs_failed:
            write(f"some runs failed: `duet process {out.root}` says why", red=True)
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """0; 1 for failed runs, or a 'slower' verdict with --duet-fail-on-regression;
        2 interrupted (as pytest)."""
        out = self.outcome
        if out is None:
            return
        if out.interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif out.runs_failed or (out.regression and self.opts.fail_on_regression):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            session.exitstatus = pytest.ExitCode.OK
