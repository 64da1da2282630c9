"""The stopping rules' check for serially correlated run values (adaptive/sequential.py,
serial_inflation; docs/adaptive.md, "Assumptions, and how they are checked")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duetbench.adaptive import StopRule, decide, first_stops
from duetbench.adaptive.rules import strong_skew
from duetbench.adaptive.sequential import (
    SERIAL_ALPHA,
    lag1_autocorrelation,
    running_intervals,
    serial_threshold,
)


def ar1(experiments: int, runs: int, rho: float, seed: int, sd: float = 0.01) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((experiments, runs)) * sd * math.sqrt(1 - rho**2)
    x = np.empty((experiments, runs))
    x[:, 0] = rng.standard_normal(experiments) * sd
    for t in range(1, runs):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return x


def test_lag1_autocorrelation_of_every_prefix_is_the_direct_one() -> None:
    v = np.random.default_rng(1).standard_normal((3, 12)) + 5.0
    r = lag1_autocorrelation(v)
    for row in range(3):
        for n in range(3, 13):
            x = v[row, :n] - v[row, :n].mean()
            assert r[row, n - 1] == pytest.approx(np.sum(x[1:] * x[:-1]) / np.sum(x * x))
    assert np.isnan(r[:, :2]).all()
    assert np.isnan(lag1_autocorrelation(np.ones((1, 6)))).all()  # no spread


@pytest.mark.parametrize("n", [6, 10, 30])
def test_the_threshold_rejects_independent_values_at_its_level(n: int) -> None:
    """Under independence the lag-1 autocorrelation has mean -1/n and SD
    (n - 2) / (n sqrt(n - 1)); the threshold rejects about SERIAL_ALPHA of them."""
    r = lag1_autocorrelation(np.random.default_rng(n).standard_normal((40_000, n)))[:, -1]
    assert r.mean() == pytest.approx(-1 / n, abs=0.004)
    assert r.std() == pytest.approx((n - 2) / (n * math.sqrt(n - 1)), rel=0.02)
    # the normal approximation rejects a little more at few runs (22 % at 6 for 20 %)
    assert np.mean(r > serial_threshold(np.array(n))) == pytest.approx(SERIAL_ALPHA, abs=0.03)


def test_correlated_values_widen_the_interval_and_say_so() -> None:
    x = ar1(1, 30, 0.8, seed=3)[0]
    rule = StopRule.create(until="decided", threshold=0.0, max_runs=50)
    d = decide(x, rule)
    assert d.serial_r is not None and d.serial_r > 0.4
    assert d.effective_runs is not None and d.effective_runs < 30 / 2
    assert "serially correlated" in d.explanation and "too narrow" in d.explanation
    plain = running_intervals(x[None, :], rule.multipliers(30), serial=False)
    checked = running_intervals(x[None, :], rule.multipliers(30))
    assert checked.high[0, -1] - checked.low[0, -1] > plain.high[0, -1] - plain.low[0, -1]
    assert d.to_json()["effective_runs"] == pytest.approx(d.effective_runs)
    # the same values in another order are not correlated: nothing changes
    shuffled = np.random.default_rng(4).permutation(x)
    s = decide(shuffled, rule)
    if s.serial_r is not None and s.serial_r <= serial_threshold(np.arange(5, 31)).min():
        assert s.effective_runs is None and "serially" not in s.explanation


def test_seeded_ar1_false_alarms_and_independent_coverage() -> None:
    """AR(1) rho 0.5: A/A false alarms of `until decided` at most 8 % (without the check
    about 29 %, benchmarks/serial_correlation_study.py); independent values: the
    precision rule's coverage stays at least 95 %."""
    aa = first_stops(ar1(1500, 50, 0.5, seed=7), StopRule.create(until="decided", max_runs=50))
    assert np.isin(aa.verdict, ("slower", "faster")).mean() <= 0.08
    iid = ar1(1500, 50, 0.0, seed=8)
    pre = first_stops(iid, StopRule.create(until="precise", precision=0.005, max_runs=50))
    assert ((pre.low <= 0) & (pre.high >= 0)).mean() >= 0.95


def test_strong_skew_is_reported_not_corrected() -> None:
    rng = np.random.default_rng(11)
    normal = rng.standard_normal((4000, 20))
    assert np.mean([strong_skew(r) is not None for r in normal]) < 0.025  # level 1 %
    skewed = 0.01 * (rng.exponential(size=40) - 1.0)
    g1 = strong_skew(skewed)
    assert g1 is not None and g1 > 1.0
    d = decide(skewed, StopRule.create(until="decided", threshold=0.01, max_runs=50))
    assert d.skewness == pytest.approx(g1) and "skewed" in d.explanation
    assert strong_skew(skewed[:7]) is None  # too few runs to say
