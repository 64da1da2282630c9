"""What `duet micro` asks for, and the experiment that answers it (docs/micro.md, "duet micro").

:func:`build_experiment` finds the benchmarks in side A's interpreter, turns the budget
into runs and samples, and calibrates (or, on ``--resume``, reuses the stored
calibration), so the experiment it returns has finished worker commands and runs
through the normal scheduler into a normal results directory.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..config.fields import experiment_name_problem
from ..config.limits import MAX_NAME_LENGTH
from ..config.model import Benchmark, Experiment, MicroSide, MicroSpec, Side
from ..text import visible
from .api import DEFAULT_IDLE_S, MicroBenchmark, MicroError, discover
from .experiment import calibrate_experiment, sample_seconds

#: Seconds a run costs besides its samples (interpreter start, import, the worker's clock
#: and loop measurements); subtracted from each run's share of the budget.
RUN_OVERHEAD_S = 0.5
#: Sampling seconds per run at least, however small the budget.
MIN_RUN_TIME_S = 0.05
#: A listing or a calibration may take the budget, and at least this long (an
#: interpreter's start and a heavy import on a busy machine); then it is stopped.
SETUP_MIN_S = 60.0
#: the longest target taken (the longest path Linux opens)
MAX_TARGET_LENGTH = 4096
METHODS = ("sduet", "aduet", "seqn", "inproc")


@dataclass(frozen=True)
class MicroRequest:
    """`duet micro`'s arguments, checked: what to time on each side and for how long."""

    a_target: str
    b_target: str
    a_python: str
    b_python: str
    a_paths: tuple[str, ...]
    b_paths: tuple[str, ...]
    pattern: str | None = None
    methods: tuple[str, ...] = ("sduet",)
    budget_s: float = 30.0
    runs: int = 10
    samples: int | None = None
    warmup: int = 1
    min_sample_s: float = 0.001
    keep_gc: bool = False
    cpu_swap: bool = True
    #: placement of the duet sides: pinned (each its own CPU, swapped every 50 samples)
    #: or shared (the scheduler's choice); docs/micro.md, "Placement"
    cpus: str = "pinned"
    name: str = "micro"
    seed: int = 0

    @staticmethod
    def create(
        *,
        target: str | None,
        asv: str | None,
        a_target: str | None,
        b_target: str | None,
        a_python: str | None,
        b_python: str | None,
        a_paths: list[str] | None,
        b_paths: list[str] | None,
        **rest: object,
    ) -> MicroRequest:
        for flag, text in (
            ("target", target),
            ("--asv", asv),
            ("--a", a_target),
            ("--b", b_target),
        ):
            if text is not None and len(text) > MAX_TARGET_LENGTH:
                raise MicroError(
                    f"{flag} {visible(text[:40])}... is {len(text)} characters long; give "
                    "module:function, file.py[:name] or a suite directory"
                )
        if asv is not None and "/" not in asv:
            asv += "/"  # a directory, wherever it is found (side_target)
        given = [t for t in (target, asv) if t]
        if (a_target is None) != (b_target is None):
            raise MicroError("give both --a and --b (two targets), or one target for both sides")
        if a_target is not None and given:
            raise MicroError("give either one target (or --asv DIR) or --a and --b, not both")
        if a_target is None and len(given) != 1:
            raise MicroError(
                "what to time: a target (module:function, file.py, a suite directory), "
                "--asv DIR, or --a TARGET --b TARGET"
            )
        methods = tuple(dict.fromkeys(rest.pop("methods", None) or ("sduet",)))  # type: ignore[call-overload]
        for method in methods:
            if method not in METHODS:
                raise MicroError(f"--method {method}: use sduet, aduet, seqn or inproc")
        request = MicroRequest(
            a_target=a_target or given[0],
            b_target=b_target or given[0],
            a_python=a_python or sys.executable,
            b_python=b_python or sys.executable,
            a_paths=tuple(a_paths or (".",)),
            b_paths=tuple(b_paths or (".",)),
            methods=methods,
            **rest,  # type: ignore[arg-type]
        )
        if request.runs < 1 or (request.samples is not None and request.samples < 1):
            raise MicroError("--runs and --samples must be at least 1")
        if request.warmup < 0:
            raise MicroError("--warmup-samples must not be negative")
        if request.cpus not in ("pinned", "shared"):
            raise MicroError(f"--cpus {request.cpus}: use pinned or shared")
        problem = experiment_name_problem(request.name)
        if problem is not None:  # the rule of config names: it names the results directory
            raise MicroError(f"--name: {visible(problem)}".replace("`name: ", "`--name "))
        return request

    @property
    def setup_timeout_s(self) -> float:
        """How long one listing or calibration may take: the budget, at least a minute."""
        return max(SETUP_MIN_S, self.budget_s)

    def side(self, pair: str) -> tuple[str, str, tuple[str, ...]]:
        """(python, target, paths) of side ``pair``."""
        if pair == "A":
            return self.a_python, self.a_target, self.a_paths
        return self.b_python, self.b_target, self.b_paths


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long, a loop of links
        return False


def matches(name: str, pattern: str | None) -> bool:
    """``-k``: a substring of the name, or a glob matching it."""
    return pattern is None or pattern in name or fnmatch.fnmatchcase(name, pattern)


def bench_name(name: str, taken: set[str]) -> str:
    """A benchmark name that may name directories (asv's ``f(10, 'x')`` -> ``f-10-x``)."""
    text = re.sub(r"[^A-Za-z0-9_.+-]+", "-", name).strip("-_.+")
    text = re.sub(r"^[^A-Za-z0-9]+", "", text)[: MAX_NAME_LENGTH - 4] or "bench"
    out, i = text, 2
    while out in taken:
        out, i = f"{text}-{i}", i + 1
    taken.add(out)
    return out


def _location(target: str) -> tuple[str, str] | None:
    """(file or directory, ``:name`` or "") of a path target; None for ``module:function``."""
    if os.path.isdir(target):
        return target, ""
    head, sep, tail = target.rpartition(":")
    location, attr = (head, sep + tail) if sep and "/" not in tail else (target, "")
    if location.endswith(".py") or "/" in location:
        return location, attr
    return None


def side_target(request: MicroRequest, pair: str, cwd: Path | None = None) -> str:
    """Side ``pair``'s target, a file or directory target taken from where it exists: the
    working directory, else the side's source trees (``--a-path``/``--b-path``) in order,
    as projects keep their benchmark files inside the tree. Absolute when it is a path."""
    _, target, paths = request.side(pair)
    found = _location(target)
    if found is None:
        return target
    location, attr = found
    base = Path(cwd or os.getcwd())
    tried: list[Path] = []
    for root in (base, *(base / p for p in paths)):
        candidate = Path(os.path.abspath(root / location))
        if candidate not in tried:
            tried.append(candidate)
    for candidate in tried:
        if _exists(candidate):
            return str(candidate) + attr
    where = ", ".join(str(c) for c in tried)
    flag = "--a-path" if pair == "A" else "--b-path"
    raise MicroError(
        f"side {pair}: {location}: no such file or directory (tried {where}); give it "
        f"relative to the working directory or to a {flag} tree"
    )


def _found(
    request: MicroRequest, pair: str, target: str, skipped: list[tuple[str, MicroBenchmark]]
) -> list[MicroBenchmark]:
    python, _, paths = request.side(pair)
    env = {**os.environ, "DUET_PAIR": pair}  # the worker's messages name the side
    try:
        found = discover(
            python,
            target,
            paths=paths,
            env=env,
            timeout_s=request.setup_timeout_s,
            idle_s=DEFAULT_IDLE_S,
        )
    except MicroError as exc:
        text = str(exc)
        raise MicroError(
            text if text.startswith(f"side {pair}:") else f"side {pair}: {text}"
        ) from None
    runnable = [b for b in found if b.runnable and matches(b.name, request.pattern)]
    # a module that failed to import holds benchmarks of any name: always reported
    skipped += [
        (pair, b) for b in found if b.failed or not b.runnable and matches(b.name, request.pattern)
    ]
    if not runnable:
        known = ", ".join(b.name for b in found if b.runnable) or "none"
        skipped = "; ".join(f"{b.name}: {b.skip_reason}" for b in found if not b.runnable)
        raise MicroError(
            f"side {pair}: no benchmark to run in {target}"
            + (f" matching -k {request.pattern!r}" if request.pattern else "")
            + f" (runnable: {known}"
            + (f"; skipped: {skipped}" if skipped else "")
            + ")"
        )
    return runnable


def pairs_of(
    request: MicroRequest, skipped: list[tuple[str, MicroBenchmark]] | None = None
) -> list[tuple[MicroBenchmark, MicroBenchmark]]:
    """(A's benchmark, B's benchmark) pairs: one target found once for both sides; one
    target found in each side's tree, by name; --a/--b, in order. ``skipped`` gets
    (side, benchmark) of every one left out, with its reason."""
    skipped = [] if skipped is None else skipped
    a_target, b_target = side_target(request, "A"), side_target(request, "B")
    a = _found(request, "A", a_target, skipped)
    if request.a_target == request.b_target and a_target == b_target:
        return [(x, x) for x in a]
    b = _found(request, "B", b_target, skipped)
    if request.a_target == request.b_target:  # one file or suite, each side's own copy
        names_a, names_b = [x.name for x in a], [x.name for x in b]
        if names_a != names_b:
            only_a = sorted(set(names_a) - set(names_b)) or ["none"]
            only_b = sorted(set(names_b) - set(names_a)) or ["none"]
            raise MicroError(
                f"{request.a_target} has other benchmarks in the two trees (only side A: "
                f"{', '.join(only_a)}; only side B: {', '.join(only_b)}): pick the common "
                "ones with -k"
            )
        return list(zip(a, b, strict=True))
    if len(a) != len(b):
        raise MicroError(
            f"--a {request.a_target} has {len(a)} benchmark(s), --b {request.b_target} "
            f"{len(b)}: give two targets that match one to one"
        )
    return list(zip(a, b, strict=True))


def run_time_s(request: MicroRequest) -> float:
    """Seconds of sampling per run: the budget's share of one run, less its overhead.

    ``--budget`` is machine time per benchmark x method, as in `duet run` (docs/micro.md,
    "duet micro"). Machine time is wall-clock time. A duet run's sides run at once; seqn
    has half the runs per side, so every benchmark x method spends ``budget`` seconds in
    ``runs`` runs, and the whole experiment about ``budget x benchmarks x methods``.
    """
    share = request.budget_s / request.runs
    return max(MIN_RUN_TIME_S, share - RUN_OVERHEAD_S)


def build_experiment(
    request: MicroRequest,
    *,
    stored: dict[str, dict[str, str]] | None = None,
    base: Path | None = None,
    skipped: list[tuple[str, MicroBenchmark]] | None = None,
) -> Experiment:
    """The experiment of ``request``, calibrated (``stored``: the calibrations to reuse;
    ``skipped`` gets the benchmarks left out, as :func:`pairs_of`)."""
    pairs = pairs_of(request, skipped)
    per_run = run_time_s(request)
    reps = {m: (math.ceil(request.runs / 2) if m == "seqn" else request.runs) for m in METHODS}
    taken: set[str] = set()
    benchmarks = []
    for a, b in pairs:
        sides = tuple(
            (
                pair,
                MicroSide(
                    python=request.side(pair)[0],
                    target=bench.target,
                    benchmark=bench.name,
                    paths=request.side(pair)[2],
                ),
            )
            for pair, bench in (("A", a), ("B", b))
        )
        spec = MicroSpec(
            sides=sides,
            samples=request.samples,
            run_time_s=None if request.samples else per_run,
            warmup=request.warmup,
            keep_gc=request.keep_gc,
            min_sample_s=request.min_sample_s,
            cpu_swap=request.cpu_swap,
        )
        benchmarks.append(
            Benchmark(
                name=bench_name(a.name, taken),
                sides=(("A", Side(command="")), ("B", Side(command=""))),
                aa=sides[0][1] == sides[1][1],
                harness="micro",
                repetitions=tuple((m, reps[m] if m in request.methods else 0) for m in METHODS),
                iterations=None,
                micro=spec,
                cpus=request.cpus,  # docs/micro.md, "Placement"
            )
        )
    exp = Experiment(
        name=request.name, seed=request.seed, schedule="rmit", benchmarks=tuple(benchmarks)
    )
    exp = calibrate_experiment(exp, stored=stored, base=base, timeout_s=request.setup_timeout_s)
    if request.samples is not None:
        _refuse_samples_beyond_budget(request, exp)
    return exp


#: ``--samples`` may take up to this many times the budget (calibration rounds the time of
#: a sample up to whole evaluations)
SAMPLES_OVER_BUDGET = 2.0


def _refuse_samples_beyond_budget(request: MicroRequest, exp: Experiment) -> None:
    """``--samples`` sets the samples per run, not the experiment's time: sampling that
    would take far longer than ``--budget`` is refused before any run, never left to run
    for days."""
    samples = request.samples or 0
    total, slowest = 0.0, ("", 0.0)
    for b in exp.benchmarks:
        assert b.micro is not None
        per_sample = sample_seconds(b.micro)
        reps = dict(b.repetitions)
        sides = sum(reps.values()) + reps.get("inproc", 0)  # inproc: both sides, one process
        total += sides * samples * per_sample
        slowest = max(slowest, (b.name, per_sample), key=lambda x: x[1])
    if total <= SAMPLES_OVER_BUDGET * request.budget_s:
        return
    fits = int(SAMPLES_OVER_BUDGET * request.budget_s / total * samples)
    raise MicroError(
        f"--samples {samples}: the samples alone take about {_duration(total)} (one sample "
        f"of {slowest[0]}: {_duration(slowest[1])}), far beyond --budget "
        f"{_duration(request.budget_s)}; give at most --samples {max(fits, 1)}, or a larger "
        "--budget"
    )


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds * 1e3:.3g} ms"
