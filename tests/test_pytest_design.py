"""How the pytest plugin spends its budget (docs/pytest.md, "Cost"): runs and samples per
test from what the calibration measured, worked by hand; and the scheduler's deadline,
which starts no run that would end after the budget."""

from __future__ import annotations

import time

import pytest

from duetbench.pytest_plugin.design import (
    DEFAULT_RUNS,
    MAX_RUNS,
    MAX_SAMPLES,
    MIN_RUNS,
    MIN_SAMPLES,
    MIN_SHARE,
    BudgetTooSmall,
    Design,
    TestCost,
    paced_samples,
    paced_share,
    plan_runs,
    run_seconds,
    share_samples,
)
from duetbench.schedule.inline import Deadline

FAST = TestCost("fast", 0.001)
SLOW = TestCost("slow", 0.1, prepare_s=0.02)


def test_every_test_gets_the_same_sampling_time() -> None:
    tests = [TestCost("a", 0.001), TestCost("b", 0.004)]
    assert share_samples(tests, 0.8) == {"a": 400, "b": 100}  # 0.4 s each


def test_a_test_whose_samples_are_long_gets_the_minimum_and_the_others_share_the_rest() -> None:
    # 1.0 s to share: slow's 5 samples cost 0.6 s (0.12 each) > its share of 0.5 s
    got = share_samples([FAST, SLOW], 1.0)
    assert got["slow"] == MIN_SAMPLES
    assert got["fast"] == 400  # (1.0 - 0.6) / 0.001
    assert share_samples([FAST], 1e6)["fast"] == MAX_SAMPLES


def test_a_run_costs_its_overhead_and_every_sample_with_its_setup() -> None:
    samples = {"fast": 100, "slow": 5}
    # 1.5 + (1 + 100) * 0.001 + (1 + 5) * 0.12
    assert run_seconds([FAST, SLOW], samples, 1.5, warmup=1) == pytest.approx(2.321)


def test_the_default_is_ten_runs_and_the_rest_of_the_budget_goes_to_samples() -> None:
    d = plan_runs([FAST], overhead_s=1.0, available_s=30.0)
    assert d.runs == DEFAULT_RUNS
    assert d.samples["fast"] == 1999  # 3 s a run: 1 s overhead, 1 warm-up sample, 1.999 s
    assert d.total_s == pytest.approx(30.0)
    assert d.notes == ()


def test_a_longer_budget_buys_more_runs_once_a_run_samples_twice_its_overhead() -> None:
    d = plan_runs([FAST], overhead_s=1.0, available_s=120.0)
    assert d.runs == 40  # runs of 3 s: 1 s of overhead and 2 s of samples
    assert plan_runs([FAST], overhead_s=1.0, available_s=1e5).runs == MAX_RUNS


def test_a_short_budget_gives_fewer_runs_and_says_so() -> None:
    d = plan_runs([FAST, SLOW], overhead_s=1.0, available_s=9.0)
    # the least run: 1 + 6 * 0.001 + 6 * 0.12 = 1.726 s; 9 s hold 5 of them
    assert d.runs == 5 and d.samples["slow"] == MIN_SAMPLES
    assert d.total_s <= 9.0
    assert "the budget affords 5 runs of 10" in d.notes[0]


def test_a_budget_below_three_runs_says_what_would_do() -> None:
    with pytest.raises(BudgetTooSmall) as caught:
        plan_runs([FAST, SLOW], overhead_s=1.0, available_s=4.0)
    assert caught.value.needed_s == pytest.approx(MIN_RUNS * 1.726)
    assert "fewer than 3 runs" in str(caught.value)


def test_what_the_user_asked_for_is_kept_when_it_fits() -> None:
    d = plan_runs([FAST], overhead_s=1.0, available_s=100.0, runs=4, samples=50)
    assert (d.runs, d.samples) == (4, {"fast": 50})
    fewer = plan_runs([FAST], overhead_s=1.0, available_s=5.0, runs=8, samples=50)
    assert fewer.runs == 4 and "4 runs of 8" in fewer.notes[0]


def test_the_deadline_starts_no_run_that_would_end_after_it() -> None:
    now = time.monotonic()
    assert Deadline(now + 10, first_run_s=5).allows([])
    assert not Deadline(now + 10, first_run_s=20).allows([])
    # once runs have finished, their mean is what the next one is expected to take
    assert not Deadline(now + 10, first_run_s=1).allows([12.0, 14.0])
    assert Deadline(now + 10, first_run_s=30).allows([2.0, 4.0])
    # ... the mean of the last three: a slow first run, then paced ones, ends nothing early
    assert Deadline(now + 10, first_run_s=1).allows([40.0, 8.0, 8.0, 8.0])
    assert not Deadline(now + 10, first_run_s=1).allows([8.0, 8.0, 8.0, 40.0])


def test_a_run_slower_than_planned_makes_the_next_take_fewer_samples_to_keep_the_pace() -> None:
    """Worked by hand: a run planned at 1 s of overhead and 3 s of sampling (4 s) took
    7 s: its samples took 6 s, twice the plan, so the next run takes half of them."""
    d = Design(runs=10, samples={"t": 300}, warmup=1, run_s=4.0, overhead_s=1.0)
    share = paced_share(7.0, 1.0, d)
    assert share == pytest.approx(0.5)
    assert paced_samples(300, share) == 150
    # that run's samples took 1.5 s * 2 = 3 s: it kept to 4 s, the share holds
    assert paced_share(4.0, share, d) == pytest.approx(share)
    # the machine is quiet again (1.5 s of samples in 0.75 s): back to the plan, not beyond
    assert paced_share(1.75, share, d) == 1.0
    # a machine so slow that a quarter of the samples would not fit: the least share
    assert paced_share(40.0, 1.0, d) == MIN_SHARE
    assert paced_samples(300, MIN_SHARE) == 75
    assert paced_samples(12, MIN_SHARE) == MIN_SAMPLES
    assert paced_samples(3, MIN_SHARE) == 3  # never more than planned
    # as fast as planned, or faster: every sample
    assert paced_share(4.0, 1.0, d) == 1.0 and paced_share(3.0, 1.0, d) == 1.0
    assert paced_samples(300, 1.0) == 300
    # a run that took less than its overhead says nothing of the samples: the share holds
    assert paced_share(0.5, 0.5, d) == 0.5
