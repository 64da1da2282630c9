"""How many evaluations of a function one sample times (docs/micro.md, "Calibration").

The algorithm, in three steps:

1. **The clock** (:func:`measure_clock`): read it back to back until at least
   ``CLOCK_READS`` readings and ``CLOCK_TICKS`` changes were seen. The
   *resolution* is the smallest positive step between two consecutive readings;
   the *timer overhead* is the mean time one reading takes (elapsed / readings).
2. **The target sample time**: ``max(min_sample_ns, resolution_multiple x
   resolution, overhead_multiple x timer overhead)`` -- by default at least
   1 ms and 1000x both, so the clock's quantisation and its reading cost are
   each at most 0.1 % of a sample.
3. **The count** (:func:`tune`): time trial samples of ``n = 1, ...``
   evaluations; after each trial that is shorter than the target, grow ``n``
   to the count the trial predicts for the target, at least 2x and at most 10x.
   Stop at the first trial that reaches the target. The time per evaluation is
   the *minimum*, over the trials at least a tenth of the target long, of
   ``(trial time - timer overhead) / n`` (timing noise only adds, as in
   Chen & Revels' protocol); the count is the smallest ``n`` whose predicted
   sample time reaches the target: ``ceil(target / time per evaluation)``,
   capped at ``max_evaluations``. Then more trials at that count, each updating
   the estimate and the count, at least ``CONFIRM_TRIALS`` (3) and until the
   last three were all at the final count (at most ``CONFIRM_MAX``, 10): one
   slow trial (typically the cold first call) does not decide alone. A confirming
   trial shorter than a tenth of the target shows that the count came from a slow
   trial which reached the target alone (a cold call, a preemption): the growth
   starts again from it (at most ``REGROWTHS``, 2, times).

A side that is *told* the count (side B is told side A's, so both do equal
work) still measures the clock and the loop overhead, but tunes nothing.

Standard library only, Python 3.8 syntax: the worker loads this file by path in
the side's own interpreter, where duetbench is not installed. The clock and the
sampler are injected, so the algorithm is tested against a fake clock.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from itertools import repeat
from time import perf_counter_ns
from typing import Any

#: Defaults (docs/micro.md, "Defaults").
DEFAULT_MIN_SAMPLE_NS = 1_000_000
DEFAULT_RESOLUTION_MULTIPLE = 1000
DEFAULT_OVERHEAD_MULTIPLE = 1000
DEFAULT_MAX_EVALUATIONS = 100_000_000
#: Clock measurement: at least this many readings and this many observed steps.
CLOCK_READS = 1000
CLOCK_TICKS = 5
CLOCK_MAX_READS = 10_000_000
#: Growth of the trial count per step, and which trials estimate the time per evaluation.
GROWTH_MIN = 2
GROWTH_MAX = 10
RELIABLE_FRACTION = 10
#: Trials at the predicted count after the growth, each refining the estimate: until
#: the last CONFIRM_TRIALS were all at the final count, at most CONFIRM_MAX.
CONFIRM_TRIALS = 3
CONFIRM_MAX = 10
#: Times the growth starts again when a confirming trial falls far short of the target
#: (the count came from one slow trial that reached it alone).
REGROWTHS = 2
#: Samples of the empty function taken to estimate the loop's cost per evaluation.
OVERHEAD_SAMPLES = 5
#: Warn when the loop's cost per evaluation exceeds this fraction of the function's.
OVERHEAD_WARN_FRACTION = 0.1


class CalibrationError(Exception):
    """The clock or the function cannot be calibrated (e.g. a clock that never advances)."""


@dataclass(frozen=True)
class Settings:
    """What a sample must be long against (docs/micro.md, "Defaults")."""

    min_sample_ns: int = DEFAULT_MIN_SAMPLE_NS
    resolution_multiple: int = DEFAULT_RESOLUTION_MULTIPLE
    overhead_multiple: int = DEFAULT_OVERHEAD_MULTIPLE
    max_evaluations: int = DEFAULT_MAX_EVALUATIONS

    def __post_init__(self) -> None:
        for name in ("min_sample_ns", "resolution_multiple", "overhead_multiple"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, not {value!r}")
        if not isinstance(self.max_evaluations, int) or self.max_evaluations < 1:
            raise ValueError(
                f"max_evaluations must be an integer >= 1, not {self.max_evaluations!r}"
            )

    def target_ns(self, clock: ClockInfo) -> int:
        """The shortest acceptable sample on this clock."""
        return max(
            self.min_sample_ns,
            self.resolution_multiple * clock.resolution_ns,
            math.ceil(self.overhead_multiple * clock.overhead_ns),
            1,
        )

    def to_json(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class ClockInfo:
    """The clock as measured: smallest step, mean cost of one reading."""

    resolution_ns: int
    overhead_ns: float
    reads: int


@dataclass(frozen=True)
class Trial:
    """One calibration sample: ``evaluations`` calls took ``elapsed_ns``."""

    evaluations: int
    elapsed_ns: int


@dataclass(frozen=True)
class Calibration:
    """The evaluation count of a benchmark and the evidence it was chosen on."""

    evaluations: int
    told: bool  # the count was given (side B), not tuned here
    target_ns: int
    per_evaluation_ns: float | None  # the tuning's estimate; None when told
    resolution_ns: int
    timer_overhead_ns: float
    call_overhead_ns: float  # the sampling loop's own cost per evaluation (empty function)
    settings: Settings = field(default_factory=Settings)
    trials: tuple[Trial, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Every field by name; a trial as ``[evaluations, elapsed_ns]``."""
        return {
            **asdict(self),
            "trials": [[t.evaluations, t.elapsed_ns] for t in self.trials],
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, doc: Any) -> Calibration:
        """The calibration written by :meth:`to_json`; ``ValueError`` saying what is wrong."""
        if not isinstance(doc, dict):
            raise ValueError("a calibration must be a JSON object")
        try:
            per = doc["per_evaluation_ns"]
            return cls(
                evaluations=_int(doc["evaluations"], "evaluations", 1),
                told=bool(doc["told"]),
                target_ns=_int(doc["target_ns"], "target_ns", 0),
                per_evaluation_ns=None if per is None else float(per),
                resolution_ns=_int(doc["resolution_ns"], "resolution_ns", 0),
                timer_overhead_ns=float(doc["timer_overhead_ns"]),
                call_overhead_ns=float(doc["call_overhead_ns"]),
                settings=Settings(**doc.get("settings", {})),
                trials=tuple(Trial(int(n), int(t)) for n, t in doc.get("trials", [])),
                warnings=tuple(str(w) for w in doc.get("warnings", [])),
            )
        except KeyError as exc:
            raise ValueError(f"the calibration has no {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the calibration is malformed: {exc}") from None


def _int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return value


# --------------------------------------------------------------------------- measuring


def measure_clock(
    clock: Callable[[], int] = perf_counter_ns,
    reads: int = CLOCK_READS,
    ticks: int = CLOCK_TICKS,
    max_reads: int = CLOCK_MAX_READS,
) -> ClockInfo:
    """Resolution (smallest positive step) and overhead (mean cost of one reading).

    A clock whose reading costs more than its tick shows the reading cost as its
    resolution: nothing finer can be timed with it anyway.
    """
    readings: list[int] = [clock()]
    steps = 0
    resolution = 0
    while len(readings) < reads or steps < ticks:
        if len(readings) >= max_reads:
            raise CalibrationError(
                f"the clock advanced only {steps} times in {len(readings)} readings"
            )
        value = clock()
        step = value - readings[-1]
        if step < 0:
            raise CalibrationError(f"the clock went backwards by {-step} ns")
        if step > 0:
            steps += 1
            resolution = step if resolution == 0 else min(resolution, step)
        readings.append(value)
    overhead = (readings[-1] - readings[0]) / (len(readings) - 1)
    return ClockInfo(resolution_ns=resolution, overhead_ns=overhead, reads=len(readings))


def time_sample(
    fn: Callable[[], Any],
    evaluations: int,
    clock: Callable[[], int] = perf_counter_ns,
    disable_gc: bool = True,
) -> int:
    """Nanoseconds that ``evaluations`` calls of ``fn`` take, the GC off unless told otherwise."""
    loop = repeat(None, evaluations)
    gc_was_enabled = gc.isenabled()
    if disable_gc:
        gc.disable()
    try:
        t0 = clock()
        for _ in loop:
            fn()
        t1 = clock()
    finally:
        if disable_gc and gc_was_enabled:
            gc.enable()
    return t1 - t0


def tune(
    run: Callable[[int], int], target_ns: int, timer_overhead_ns: float, max_evaluations: int
) -> tuple[int, float, tuple[Trial, ...]]:
    """(evaluations, estimated ns per evaluation, trials): step 3 of the module docstring."""
    trials: list[Trial] = []

    def grow(n: int) -> None:  # until a trial reaches the target
        while True:
            elapsed = run(n)
            trials.append(Trial(n, elapsed))
            if elapsed >= target_ns or n >= max_evaluations:
                return
            per = max(elapsed - timer_overhead_ns, 1.0) / n
            wanted = math.ceil(target_ns / per)
            n = min(max_evaluations, max(GROWTH_MIN * n, min(GROWTH_MAX * n, wanted)))

    grow(1)
    for regrowth in range(REGROWTHS + 1):
        count, per_eval = _count(trials, target_ns, timer_overhead_ns, max_evaluations)
        short = False
        for confirmed in range(1, CONFIRM_MAX + 1):  # one slow trial must not decide
            trials.append(Trial(count, run(count)))
            # a trial at the count far short of the target: the count came from a slow
            # trial (a cold first call, a preemption) that reached the target alone
            short = trials[-1].elapsed_ns * RELIABLE_FRACTION < target_ns
            if short and count < max_evaluations and regrowth < REGROWTHS:
                break
            count, per_eval = _count(trials, target_ns, timer_overhead_ns, max_evaluations)
            last = trials[-CONFIRM_TRIALS:]
            if confirmed >= CONFIRM_TRIALS and all(t.evaluations == count for t in last):
                short = False
                break
        if not short or count >= max_evaluations:
            break
        last_trial = trials[-1]
        per = max(last_trial.elapsed_ns - timer_overhead_ns, 1.0) / last_trial.evaluations
        grow(
            min(
                max_evaluations,
                max(GROWTH_MIN * count, min(GROWTH_MAX * count, math.ceil(target_ns / per))),
            )
        )
    return count, per_eval, tuple(trials)


def _count(
    trials: list[Trial], target_ns: int, timer_overhead_ns: float, max_evaluations: int
) -> tuple[int, float]:
    """The smallest count whose predicted sample reaches the target, from the fastest trial."""
    reliable = [t for t in trials if t.elapsed_ns * RELIABLE_FRACTION >= target_ns] or trials[-1:]
    per_eval = min(max(t.elapsed_ns - timer_overhead_ns, 0.0) / t.evaluations for t in reliable)
    if per_eval <= 0:
        return max_evaluations, per_eval
    return max(1, min(max_evaluations, math.ceil(target_ns / per_eval))), per_eval


def _empty() -> None:
    pass


def call_overhead(
    sampler: Callable[[Callable[[], Any], int], int], target_ns: int, clock: ClockInfo, cap: int
) -> float:
    """The sampling loop's cost per evaluation: an empty function, tuned like any other."""
    n, _, _ = tune(lambda k: sampler(_empty, k), target_ns, clock.overhead_ns, cap)
    return min(
        max(sampler(_empty, n) - clock.overhead_ns, 0.0) / n for _ in range(OVERHEAD_SAMPLES)
    )


def calibrate_callable(
    fn: Callable[[], Any],
    *,
    clock: Callable[[], int] = perf_counter_ns,
    settings: Settings | None = None,
    evaluations: int | None = None,
    disable_gc: bool = True,
    sampler: Callable[[Callable[[], Any], int], int] | None = None,
) -> Calibration:
    """Calibrate ``fn`` on ``clock``; with ``evaluations`` given, only measure the clock.

    ``sampler(f, n)`` times ``n`` calls of ``f`` (default: :func:`time_sample`
    on ``clock``); the worker passes one that also records each trial.
    """
    settings = settings or Settings()
    info = measure_clock(clock)
    target = settings.target_ns(info)
    if sampler is None:

        def sampler(f: Callable[[], Any], k: int) -> int:
            return time_sample(f, k, clock, disable_gc)

    loop_cost = call_overhead(sampler, target, info, settings.max_evaluations)
    measured = {  # what every calibration says of the clock and the loop
        "target_ns": target,
        "resolution_ns": info.resolution_ns,
        "timer_overhead_ns": info.overhead_ns,
        "call_overhead_ns": loop_cost,
        "settings": settings,
    }
    if evaluations is not None:
        if evaluations < 1:
            raise CalibrationError(f"the evaluation count must be >= 1, not {evaluations}")
        return Calibration(evaluations=evaluations, told=True, per_evaluation_ns=None, **measured)

    count, per_eval, trials = tune(
        lambda k: sampler(fn, k), target, info.overhead_ns, settings.max_evaluations
    )
    return Calibration(
        evaluations=count,
        told=False,
        per_evaluation_ns=per_eval,
        trials=trials,
        warnings=tuple(_warnings(count, per_eval, loop_cost, settings)),
        **measured,
    )


def _warnings(count: int, per_eval: float, loop_cost: float, settings: Settings) -> list[str]:
    found = []
    if per_eval > 0 and loop_cost > OVERHEAD_WARN_FRACTION * per_eval:
        found.append(
            f"the sampling loop's own cost ({loop_cost:.1f} ns per evaluation) is more than "
            f"{OVERHEAD_WARN_FRACTION:.0%} of the function's ({per_eval:.1f} ns): both sides pay "
            "it, which pulls the A/B ratio toward 1; benchmark a larger piece of work"
        )
    if count >= settings.max_evaluations:
        found.append(
            f"the evaluation count hit its cap ({settings.max_evaluations}); samples may be "
            "shorter than the target"
        )
    return found
