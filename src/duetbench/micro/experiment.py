"""Micro benchmarks inside an experiment: calibrate once, then build the side commands.

A benchmark with ``harness: micro`` holds a :class:`~duetbench.config.model.MicroSpec`
(its targets, interpreters and source trees) instead of finished side commands. Before
the first run, :func:`calibrate_experiment` calibrates each of them in side A's
interpreter (side B too, only to check that it imports, sets up and runs), tells both
sides A's evaluation count and either a number of samples or the seconds of sampling per
run (the worker's ``--budget``). The calibrations are kept in the benchmark's ``MicroSpec``, so they
land in experiment.json; ``--resume`` passes them back in (``stored``) and nothing is
calibrated again -- the side commands, and with them the plan, stay the same
(docs/micro.md, "Calibration and --resume").
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..config.model import Benchmark, Experiment, MicroSide, MicroSpec, Side
from ..schema import Method
from .api import (
    DEFAULT_IDLE_S,
    DEFAULT_TIMEOUT_S,
    MicroError,
    calibrate,
    same_interpreter,
    worker_command,
)
from .calibration import Calibration, Settings

#: Sampling time per run is at least this many samples of the slower side (its calibration).
MIN_SAMPLES_PER_RUN = 10
#: Seconds a run may take beyond its sampling before it is stopped as timed out.
RUN_TIMEOUT_SLACK_S = 120.0
#: Pinned sides swap CPUs every this many samples of the slower side, and at most every
#: SWAP_MIN_S seconds (docs/micro.md, "Placement"): an asynchronous duet's sides may
#: disagree about the period for one sample at each swap.
SWAP_SAMPLES = 50
SWAP_MIN_S = 0.1


def worker_limits(bench: Benchmark, timeout_s: float | None = None) -> tuple[float, float | None]:
    """How long a listing or calibration of ``bench`` may take (``timeout_s``, else the
    benchmark's ``timeout``, else 10 minutes) and may use no CPU (its ``hang_timeout``,
    at most 30 s; None when off)."""
    timeout = timeout_s or bench.timeout or DEFAULT_TIMEOUT_S
    hang = bench.hang_timeout
    return timeout, None if hang is None else min(hang, DEFAULT_IDLE_S, timeout)


def _calibrate_side(
    bench: Benchmark, spec: MicroSpec, pair: str, base: Path, timeout_s: float | None
) -> Calibration:
    side = spec.side(pair)
    env = {**os.environ, "DUET_PAIR": pair}  # the worker's messages name the side
    timeout, idle = worker_limits(bench, timeout_s)
    try:
        return calibrate(
            side.python,
            side.target,
            side.benchmark,
            paths=side.paths,
            settings=Settings(min_sample_ns=round(spec.min_sample_s * 1e9)),
            keep_gc=spec.keep_gc,
            timeout_s=timeout,
            idle_s=idle,
            cwd=base,
            env=env,
        )
    except MicroError as exc:
        error = MicroError(f"benchmark {bench.name}, side {pair}: {exc}")
        error.side = pair  # which side cannot run (`duet bisect` skips a candidate's)
        raise error from None


def _stored(bench: Benchmark, texts: Mapping[str, str]) -> dict[str, Calibration]:
    try:
        return {pair: Calibration.from_json(json.loads(text)) for pair, text in texts.items()}
    except ValueError as exc:
        raise MicroError(
            f"benchmark {bench.name}: the calibration stored in experiment.json is damaged "
            f"({exc}); write the experiment to another directory (-o) instead of --resume"
        ) from None


def sample_seconds(spec: MicroSpec, calibrations: Mapping[str, Calibration] | None = None) -> float:
    """Seconds of one sample of the slower side (from ``calibrations``, else the ones
    stored in ``spec``)."""
    if calibrations is None:
        calibrations = {p: Calibration.from_json(json.loads(t)) for p, t in spec.calibrations}
    evaluations = calibrations["A"].evaluations
    per_eval = max((c.per_evaluation_ns or 0.0) for c in calibrations.values())
    return max(evaluations * per_eval / 1e9, spec.min_sample_s)


def calibrate_benchmark(
    bench: Benchmark,
    base: Path,
    stored: Mapping[str, str] | None = None,
    *,
    timeout_s: float | None = None,
) -> Benchmark:
    """``bench`` with its side commands built from A's calibration (``stored``: reuse it;
    ``timeout_s``: how long each side's calibration may take, see :func:`worker_limits`)."""
    spec = bench.micro
    if spec is None:
        return bench
    if stored and "A" in stored:
        calibrations = _stored(bench, stored)
    else:
        calibrations = {p: _calibrate_side(bench, spec, p, base, timeout_s) for p, _ in spec.sides}
    evaluations = calibrations["A"].evaluations
    sample_s = sample_seconds(spec, calibrations)
    # a fixed number of samples, or as many as fit the run time (the worker's --budget),
    # but time for MIN_SAMPLES_PER_RUN of the slower side at least: a minimum needs a few
    budget_s = None
    if spec.samples is None:
        budget_s = max(spec.run_time_s or 0.0, MIN_SAMPLES_PER_RUN * sample_s)

    swap_s = max(SWAP_MIN_S, SWAP_SAMPLES * sample_s) if spec.cpu_swap else None

    def command_of(side: MicroSide, pair: MicroSide | None = None) -> str:
        argv = worker_command(
            side.python,
            side.target,
            benchmark=side.benchmark,
            paths=side.paths,
            evaluations=evaluations,
            samples=spec.samples,
            budget_s=budget_s,
            warmup=spec.warmup,
            keep_gc=spec.keep_gc,
            settings=Settings(min_sample_ns=round(spec.min_sample_s * 1e9)),
            timeout_s=spec.step_timeout_s,
            cwd=base,
            pair=None if pair is None else (pair.target, pair.benchmark, pair.paths),
            swap_every_s=swap_s if pair is None else None,
        )
        return shlex.join(argv)

    sides = []
    for pair, side in spec.sides:
        command = command_of(side)
        old = dict(bench.sides).get(pair) or Side(command="")
        sides.append((pair, replace(old, command=command, sync_command=command)))
    inproc_command = None
    if bench.reps(Method.INPROC):
        a, b = spec.side("A"), spec.side("B")
        if not same_interpreter(a.python, b.python, base):
            raise MicroError(
                f"benchmark {bench.name}: method inproc times both sides in one interpreter, "
                f"but side A runs {a.python} and side B {b.python}; use sduet, aduet or seqn "
                'to compare interpreters (docs/micro.md, "In one process: inproc")'
            )
        inproc_command = command_of(a, b)
    texts = tuple((p, json.dumps(c.to_json(), sort_keys=True)) for p, c in calibrations.items())
    timeout = bench.timeout
    if timeout is None:  # generous: catches a hang, never a slow machine
        sampling_s = budget_s if budget_s is not None else (spec.samples or 0) * sample_s
        timeout = RUN_TIMEOUT_SLACK_S + 10 * (sampling_s + (spec.warmup + 1) * sample_s)
    return replace(
        bench,
        sides=tuple(sides),
        timeout=timeout,
        micro=replace(
            spec, evaluations=evaluations, calibrations=texts, inproc_command=inproc_command
        ),
    )


def calibrate_experiment(
    exp: Experiment,
    *,
    stored: Mapping[str, Mapping[str, str]] | None = None,
    base: Path | None = None,
    timeout_s: float | None = None,
) -> Experiment:
    """``exp`` with every micro benchmark calibrated (or its ``stored`` calibration reused).

    ``base``: where relative interpreters, targets and paths start (default: the config
    file's directory, else the current directory). A side that cannot import, set up or
    run its benchmark raises :class:`MicroError` naming the benchmark, the side and the
    traceback's last line, before anything runs.
    """
    if not any(b.micro is not None for b in exp.benchmarks):
        return exp
    if base is None:
        base = Path(exp.source).resolve().parent if exp.source else Path.cwd()
    stored = stored or {}
    return replace(
        exp,
        benchmarks=tuple(
            calibrate_benchmark(b, base, stored.get(b.name), timeout_s=timeout_s)
            for b in exp.benchmarks
        ),
    )


def prepare_experiment(exp: Experiment, out_dir: Path, *, resume: bool) -> Experiment:
    """``exp`` ready to run into ``out_dir/<name>``: micro benchmarks calibrated, or, on
    ``resume``, given the calibration stored in that results directory."""
    if not any(b.micro is not None for b in exp.benchmarks):
        return exp
    from ..schedule.inline import results_root
    from ..store import ResultsStore

    store = ResultsStore(results_root(exp, out_dir))
    stored = store.micro_calibrations() if resume and store.has_experiment() else None
    return calibrate_experiment(exp, stored=stored)
