"""duet micro's calibration against a fake clock: resolution, overhead, evaluation count.

The fake clock is quantised to ``resolution`` ns and costs ``read_cost`` ns per
reading; the fake sampler advances it by ``n x cost(function)``. Expected values
are computed by hand from those numbers (docs/micro.md, "Calibration").
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable

import pytest

from duetbench.micro.calibration import (
    Calibration,
    CalibrationError,
    ClockInfo,
    Settings,
    calibrate_callable,
    measure_clock,
    time_sample,
    tune,
)

START = 10**12  # a multiple of every resolution used here


class FakeClock:
    def __init__(self, resolution: int, read_cost: int, start: int = START) -> None:
        self.now = start
        self.resolution = resolution
        self.read_cost = read_cost

    def __call__(self) -> int:
        value = self.now - self.now % self.resolution
        self.now += self.read_cost
        return value

    def advance(self, ns: int) -> None:
        self.now += ns


def fake_sampler(
    clock: FakeClock, costs: Callable[[Callable[[], object]], int], calls: list | None = None
):
    """Times n evaluations without running them: the clock moves n x cost(f).

    Each sample starts on a tick (as if it waited for one), so quantisation is the
    same in every sample and the expected values are exact.
    """

    def sampler(f: Callable[[], object], n: int) -> int:
        if calls is not None:
            calls.append((f, n))
        clock.advance(-clock.now % clock.resolution)
        t0 = clock()
        clock.advance(n * costs(f))
        return clock() - t0

    return sampler


def target_fn() -> None:
    raise AssertionError("the fake sampler never calls the function")


def test_clock_resolution_and_overhead_recovered_when_a_reading_is_cheaper_than_a_tick() -> None:
    info = measure_clock(FakeClock(resolution=1000, read_cost=250), reads=2000)
    assert info.resolution_ns == 1000
    # mean cost of a reading: exact up to one tick over all readings
    assert info.overhead_ns == pytest.approx(250, abs=1000 / (info.reads - 1))


def test_clock_overhead_exact_when_a_reading_costs_whole_ticks() -> None:
    info = measure_clock(FakeClock(resolution=1000, read_cost=3000))
    assert info.resolution_ns == 3000  # consecutive readings are never closer than one reading
    assert info.overhead_ns == 3000


def test_coarse_clock_is_read_until_enough_ticks_were_seen() -> None:
    info = measure_clock(FakeClock(resolution=1_000_000, read_cost=100), reads=10, ticks=5)
    assert info.resolution_ns == 1_000_000
    assert info.reads >= 5 * 1_000_000 // 100  # five ticks of 10,000 readings each
    assert info.overhead_ns == pytest.approx(100, rel=0.25)


def test_a_clock_that_never_advances_or_goes_back_is_an_error() -> None:
    with pytest.raises(CalibrationError, match="advanced only 0 times"):
        measure_clock(lambda: 5, max_reads=10_000)
    values = iter([100, 200, 150])
    with pytest.raises(CalibrationError, match="backwards by 50 ns"):
        measure_clock(lambda: next(values))


@pytest.mark.parametrize(
    ("settings", "clock", "expected"),
    [
        (Settings(), ClockInfo(resolution_ns=1, overhead_ns=40.0, reads=1000), 1_000_000),
        (Settings(), ClockInfo(resolution_ns=10_000, overhead_ns=40.0, reads=1000), 10_000_000),
        (Settings(), ClockInfo(resolution_ns=1, overhead_ns=5000.4, reads=1000), 5_000_400),
        (
            Settings(min_sample_ns=0, resolution_multiple=10, overhead_multiple=0),
            ClockInfo(resolution_ns=7, overhead_ns=1.0, reads=1000),
            70,
        ),
    ],
)
def test_target_is_the_largest_of_the_three_rules(
    settings: Settings, clock: ClockInfo, expected: int
) -> None:
    assert settings.target_ns(clock) == expected


def test_evaluation_count_is_the_smallest_reaching_the_target() -> None:
    clock = FakeClock(resolution=1000, read_cost=1000)
    costs = {target_fn: 2500}
    cal = calibrate_callable(
        target_fn, clock=clock, sampler=fake_sampler(clock, lambda f: costs.get(f, 100))
    )
    assert cal.resolution_ns == 1000
    assert cal.timer_overhead_ns == 1000
    assert cal.target_ns == 1_000_000  # max(1 ms, 1000 x 1 us, 1000 x 1 us)
    assert cal.per_evaluation_ns == 2500
    assert cal.evaluations == 400  # 400 x 2.5 us = 1 ms; 399 would be short
    assert not cal.told
    # the empty function costs 100 ns; its samples are quantised to 1 us over ~10^4 calls
    assert cal.call_overhead_ns == pytest.approx(100, abs=1)
    assert cal.warnings == ()


def test_a_coarse_clock_sets_the_target() -> None:
    clock = FakeClock(resolution=10_000, read_cost=10_000)
    cal = calibrate_callable(
        target_fn,
        clock=clock,
        sampler=fake_sampler(clock, lambda f: 20_000 if f is target_fn else 10_000),
    )
    assert cal.target_ns == 10_000_000  # 1000 x the 10 us resolution
    assert cal.evaluations == 500  # 500 x 20 us = 10 ms


def test_a_function_longer_than_the_target_gets_one_evaluation() -> None:
    clock = FakeClock(resolution=1, read_cost=50)
    cal = calibrate_callable(
        target_fn,
        clock=clock,
        sampler=fake_sampler(clock, lambda f: 5_000_000 if f is target_fn else 60),
    )
    assert cal.evaluations == 1
    assert cal.per_evaluation_ns == 5_000_000


def test_trials_grow_at_most_tenfold_then_confirm() -> None:
    elapsed = {}

    def run(n: int) -> int:
        elapsed[n] = n * 1000
        return n * 1000

    count, per_eval, trials = tune(
        run, target_ns=1_000_000, timer_overhead_ns=0, max_evaluations=10**8
    )
    assert [t.evaluations for t in trials] == [1, 10, 100, 1000, 1000, 1000, 1000]
    assert (count, per_eval) == (1000, 1000)


def test_a_slow_first_call_does_not_decide_the_count() -> None:
    first = [True]

    def run(n: int) -> int:
        cold = 50_000_000 if first[0] else 0  # the cold first call: 50 ms
        first[0] = False
        return n * 100_000 + cold

    count, per_eval, _ = tune(run, target_ns=1_000_000, timer_overhead_ns=0, max_evaluations=10**8)
    assert per_eval == 100_000
    assert count == 10


def test_confirmation_goes_on_until_the_count_settles() -> None:
    """The machine was busy for the first five trials: the count must follow the fast ones."""
    per_call = iter([10_000] * 5 + [2_000] + [1_000] * 10)

    def run(n: int) -> int:
        return n * next(per_call)

    count, per_eval, trials = tune(
        run, target_ns=1_000_000, timer_overhead_ns=0, max_evaluations=10**8
    )
    assert [t.evaluations for t in trials] == [1, 10, 100, 100, 100, 100, 500, 1000, 1000, 1000]
    assert (count, per_eval) == (1000, 1000)


def test_told_count_is_used_and_the_function_is_not_tuned() -> None:
    clock = FakeClock(resolution=1000, read_cost=1000)
    calls: list = []
    cal = calibrate_callable(
        target_fn,
        clock=clock,
        evaluations=1234,
        sampler=fake_sampler(clock, lambda f: 100, calls),
    )
    assert cal.told and cal.evaluations == 1234
    assert cal.per_evaluation_ns is None and cal.trials == ()
    assert cal.resolution_ns == 1000 and cal.timer_overhead_ns == 1000
    assert calls and all(f is not target_fn for f, _ in calls)  # only the empty function
    with pytest.raises(CalibrationError, match=">= 1"):
        calibrate_callable(
            target_fn, clock=clock, evaluations=0, sampler=fake_sampler(clock, lambda f: 100)
        )


def test_warnings_for_a_function_close_to_the_loop_cost_and_for_the_cap() -> None:
    clock = FakeClock(resolution=1, read_cost=1000)
    cal = calibrate_callable(
        target_fn,
        clock=clock,
        sampler=fake_sampler(clock, lambda f: 200 if f is target_fn else 40),
        settings=Settings(max_evaluations=10**6),
    )
    assert cal.evaluations == 5000
    assert len(cal.warnings) == 1 and "pulls the A/B ratio toward 1" in cal.warnings[0]

    capped = calibrate_callable(
        target_fn,
        clock=clock,
        sampler=fake_sampler(clock, lambda f: 0),
        settings=Settings(max_evaluations=1000),
    )
    assert capped.evaluations == 1000
    assert any("hit its cap (1000)" in w for w in capped.warnings)


def test_time_sample_times_the_calls_with_the_gc_off() -> None:
    clock = FakeClock(resolution=1, read_cost=7)
    seen: list[bool] = []

    def fn() -> None:
        seen.append(gc.isenabled())
        clock.advance(300)

    assert gc.isenabled()
    assert time_sample(fn, 25, clock) == 7 + 25 * 300  # the first reading's cost, then the calls
    assert seen == [False] * 25 and gc.isenabled()
    seen.clear()
    time_sample(fn, 3, clock, disable_gc=False)
    assert seen == [True] * 3
    gc.disable()
    try:
        seen.clear()
        time_sample(fn, 2, clock)
        assert seen == [False, False] and not gc.isenabled()  # left as it was
    finally:
        gc.enable()


def test_calibration_round_trips_through_json() -> None:
    clock = FakeClock(resolution=1000, read_cost=1000)
    cal = calibrate_callable(
        target_fn,
        clock=clock,
        sampler=fake_sampler(clock, lambda f: 2500 if f is target_fn else 100),
    )
    again = Calibration.from_json(cal.to_json())
    assert again == cal
    assert math.isclose(again.call_overhead_ns, cal.call_overhead_ns)
    for bad, match in [
        ([], "JSON object"),
        ({**cal.to_json(), "evaluations": 0}, "evaluations must be an integer >= 1"),
        ({k: v for k, v in cal.to_json().items() if k != "target_ns"}, "no 'target_ns'"),
        ({**cal.to_json(), "settings": {"min_sample_ns": -1}}, "min_sample_ns"),
    ]:
        with pytest.raises(ValueError, match=match):
            Calibration.from_json(bad)


@pytest.mark.parametrize(
    ("per_call", "cold", "count"), [(80_000, 3_000_000, 13), (150, 2_000_000, 6667)]
)
def test_a_slow_first_call_that_reaches_the_target_alone_does_not_decide_the_count(
    per_call: int, cold: int, count: int
) -> None:
    """An 80 us function whose first call takes 3 ms (a 150 ns one, 2 ms): the first trial
    reaches the 1 ms target with one evaluation; the confirming trials, far shorter,
    show the count came from that one slow trial, and the growth starts again."""
    first = [True]

    def run(n: int) -> int:
        extra = cold if first[0] else 0
        first[0] = False
        return n * per_call + extra

    got, per_eval, trials = tune(
        run, target_ns=1_000_000, timer_overhead_ns=0, max_evaluations=10**8
    )
    assert (got, per_eval) == (count, per_call)
    assert trials[-1].evaluations == count
