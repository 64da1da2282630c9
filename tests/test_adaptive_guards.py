"""The stopping rules' guards against serially correlated and skewed run values
(adaptive/guards.py; docs/adaptive.md, "Assumptions, and how they are checked")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duetbench.adaptive import StopRule, decide, first_stops
from duetbench.adaptive.guards import (
    SERIAL_NOTE_ALPHA,
    ShapePrior,
    _hall_inverse,
    ar1_variance_factor,
    guard,
    lag1_autocorrelation,
    serial_threshold,
    skewed_bounds,
    strong_skew,
)
from duetbench.adaptive.prior import Prior
from duetbench.adaptive.sequential import running_intervals


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
    (n - 2) / (n sqrt(n - 1)); the note's threshold rejects about SERIAL_NOTE_ALPHA."""
    r = lag1_autocorrelation(np.random.default_rng(n).standard_normal((40_000, n)))[:, -1]
    assert r.mean() == pytest.approx(-1 / n, abs=0.004)
    assert r.std() == pytest.approx((n - 2) / (n * math.sqrt(n - 1)), rel=0.02)
    assert np.mean(r > serial_threshold(np.array(n))) == pytest.approx(SERIAL_NOTE_ALPHA, abs=0.02)


@pytest.mark.parametrize(("rho", "n"), [(0.5, 10), (0.3, 30), (0.8, 20)])
def test_the_ar1_variance_factor_is_the_direct_sum_and_what_a_simulation_shows(
    rho: float, n: int
) -> None:
    k = np.arange(1, n)
    direct = (1 + 2 * np.sum((1 - k / n) * rho**k)) / (
        1 - 2 / (n * (n - 1)) * np.sum((n - k) * rho**k)
    )
    assert ar1_variance_factor(rho, n) == pytest.approx(direct, rel=1e-12)
    x = ar1(40_000, n, rho, seed=int(rho * 100) + n, sd=1.0)
    simulated = x.mean(axis=1).var() / (x.var(axis=1, ddof=1).mean() / n)
    assert simulated == pytest.approx(direct, rel=0.04)
    assert ar1_variance_factor(0.0, n) == 1.0 and ar1_variance_factor(rho, 1) == 1.0


def test_independent_runs_are_widened_less_and_less_correlated_ones_more() -> None:
    """The default prior fears correlation early; as independent runs accumulate the
    widening fades, and with correlated runs it grows to what they show."""
    iid = guard(ar1(2000, 50, 0.0, seed=1)).factor
    assert (iid >= 1.0).all()
    assert np.median(iid[:, 4]) > np.median(iid[:, 19]) > np.median(iid[:, 49])
    assert np.median(iid[:, 49]) == 1.0  # most independent experiments: no widening at 50
    corr = guard(ar1(2000, 50, 0.5, seed=2)).factor
    assert np.median(corr[:, 49]) > 2.0  # the true factor at 50 runs is about 2.8
    assert np.median(corr[:, 49]) < 2.0 * ar1_variance_factor(0.5, 50)


def test_correlated_values_widen_the_interval_and_say_so_only_beyond_chance() -> None:
    x = ar1(1, 30, 0.8, seed=3)[0]
    rule = StopRule.create(until="decided", threshold=0.0, max_runs=50)
    d = decide(x, rule)
    assert d.serial_r is not None and d.serial_r > 0.4 and d.serial_found
    assert d.effective_runs is not None and d.effective_runs < 30 / 2
    assert "serially correlated" in d.explanation and "beyond chance" in d.explanation
    plain = running_intervals(x[None, :], rule.multipliers(30), serial=False)
    checked = running_intervals(x[None, :], rule.multipliers(30))
    assert checked.high[0, -1] - checked.low[0, -1] > plain.high[0, -1] - plain.low[0, -1]
    assert d.to_json()["effective_runs"] == pytest.approx(d.effective_runs)
    # the same values in another order are not correlated: no note
    shuffled = np.random.default_rng(4).permutation(x)
    s = decide(shuffled, rule)
    assert s.serial_r is not None and s.serial_r < serial_threshold(30)
    assert not s.serial_found and "serially" not in s.explanation


def test_independent_runs_get_the_note_at_its_level_only() -> None:
    """Of decisions on independent run values at most about SERIAL_NOTE_ALPHA carry the
    serial note; a lag-1 autocorrelation of +0.08 in 50 runs (a real aduet run) none."""
    rule = StopRule.create(until="decided", threshold=0.02, max_runs=50)
    st = first_stops(ar1(2000, 50, 0.0, seed=5), rule)
    g = st.intervals.guard
    assert g is not None
    noted = g.found[np.arange(2000), st.runs - 1] & (
        st.intervals.inflation[np.arange(2000), st.runs - 1] > 1.0  # type: ignore[index]
    )
    assert noted.mean() <= SERIAL_NOTE_ALPHA + 0.015
    x = ar1(1, 50, 0.0, seed=6)[0]
    r = float(lag1_autocorrelation(x[None, :])[0, -1])
    assert r < 0.1 and not decide(x, rule).serial_found


def test_a_repository_without_serial_correlation_starts_unwidened() -> None:
    """Earlier runs that rule out an autocorrelation of 0.3: no widening from the first
    look, so the first decision comes as early as without the guards; earlier runs
    that show one: widened from the first look."""
    x = np.log(1.05) + 0.005 * np.random.default_rng(7).standard_normal(5)
    independent = ShapePrior(r=-0.05, runs=200, experiments=10)
    assert independent.independent and not independent.found
    g = guard(x[None, :], independent)
    assert (g.factor == 1.0).all() and not g.dropped.any()
    prior = Prior(0.005, 190, runs=200, experiments=10, shape=independent)
    rule = StopRule.create(until="decided", threshold=0.02, max_runs=50, prior=prior)
    without = first_stops(x[None, :], rule, guards=False)
    with_guards = first_stops(x[None, :], rule)
    assert with_guards.runs[0] == without.runs[0] == 3  # the spread prior's first look
    assert with_guards.low[0] == pytest.approx(without.low[0], rel=0.01)
    correlated = ShapePrior(r=0.40, runs=200, experiments=10)
    assert correlated.found and not correlated.independent
    assert (guard(x[None, :], correlated).factor[0, 2:] > 1.5).all()
    # too few earlier runs to rule anything out: the default prior, updated with them
    short = ShapePrior(r=-0.1, runs=10, experiments=2)
    assert not short.independent and guard(x[None, :], short).factor[0, -1] > 1.0


def test_runs_more_correlated_than_the_repository_said_drop_it_and_say_so() -> None:
    x = ar1(1, 40, 0.8, seed=8)[0]
    independent = ShapePrior(r=-0.05, runs=200, experiments=10)
    g = guard(x[None, :], independent)
    assert g.dropped[0, -1] and not g.dropped[0, 4]
    at = int(np.argmax(g.dropped[0]))
    assert g.factor[0, at] > 1.0 and (g.factor[0, :at] == 1.0).all()
    prior = Prior(0.01, 190, runs=200, experiments=10, shape=independent)
    d = decide(x, StopRule.create(until="precise", precision=0.01, prior=prior))
    assert "more serially correlated than the 200 earlier runs" in d.explanation


def test_shape_priors_round_trip_and_refuse_nonsense() -> None:
    p = Prior(0.01, 20, runs=24, experiments=3, shape=ShapePrior(0.1, 24, 3, 0.5))
    assert Prior.from_stops_json(p.stops_json()) == p
    old = Prior.from_stops_json({"sd": 0.01, "df": 20, "experiments": 3, "runs": 24})
    assert old is not None and old.shape is None  # a stops.json of an older release
    for bad in (dict(r=1.5, runs=20, experiments=2), dict(r=0.1, runs=2, experiments=1),
                dict(r=0.1, runs=20, experiments=11), dict(r=0.1, runs=20, experiments=2, skew=math.nan)):  # fmt: skip
        with pytest.raises(ValueError, match="shape prior"):
            ShapePrior(**bad)  # type: ignore[arg-type]
    assert ShapePrior(0.0, 100, 5, 1.0).skew_found and not ShapePrior(0.0, 100, 5, 0.3).skew_found


@pytest.mark.parametrize("g", [-2.0, -0.3, 0.4, 1.5])
def test_the_skew_transformation_is_inverted_and_widens_the_long_side_only(g: float) -> None:
    n = np.array([12.0])
    for c in (-4.0, -1.0, 1.0, 4.0):
        t = float(_hall_inverse(np.array([c]), np.array([g]), n)[0])
        root = math.sqrt(12.0)
        forward = t + g * t * t / (3 * root) + g * g * t**3 / (27 * 12.0) + g / (6 * root)
        assert forward == pytest.approx(c, abs=1e-9)
    mean, se = np.zeros((1, 12)), np.full((1, 12), 0.01)
    low, high = skewed_bounds(mean, se, np.full(12, 3.0), np.full((1, 12), g))
    assert low[0, -1] <= -0.03 + 1e-12 and high[0, -1] >= 0.03 - 1e-12  # never narrower
    long_side = high[0, -1] - 0.03 if g > 0 else -0.03 - low[0, -1]
    assert long_side > 0.0  # the long tail's side is wider


def test_seeded_error_rates_of_the_guards() -> None:
    """AR(1) rho 0.5: A/A false alarms of `until decided` at most 8 % and `precise`
    coverage at least 93 % (without the guards 29 % and 79 %); log-normal run values
    (skewness 3.3): A/A false alarms at most 7 % (without 14 %); independent values keep
    the precision rule's coverage at 95 % (benchmarks/guard_cost_study.py)."""
    decided = StopRule.create(until="decided", max_runs=50)
    aa = first_stops(ar1(1500, 50, 0.5, seed=7), decided)
    assert np.isin(aa.verdict, ("slower", "faster")).mean() <= 0.08
    precise = StopRule.create(until="precise", precision=0.01, max_runs=50)
    pre = first_stops(ar1(1500, 50, 0.5, seed=9, sd=0.02), precise)
    assert ((pre.low <= 0) & (pre.high >= 0)).mean() >= 0.93
    rng = np.random.default_rng(10)
    s = 0.75
    ln = rng.lognormal(0.0, s, (1500, 50))
    ln = 0.02 * (ln - math.exp(s * s / 2)) / math.sqrt((math.exp(s * s) - 1) * math.exp(s * s))
    assert np.isin(first_stops(ln, decided).verdict, ("slower", "faster")).mean() <= 0.07
    iid = first_stops(ar1(1500, 50, 0.0, seed=8), StopRule.create(until="precise", precision=0.005))
    assert ((iid.low <= 0) & (iid.high >= 0)).mean() >= 0.95


def test_strong_skew_is_reported_and_widens_the_long_side() -> None:
    rng = np.random.default_rng(11)
    normal = rng.standard_normal((4000, 20))
    assert np.mean([strong_skew(r) is not None for r in normal]) < 0.025  # level 1 %
    skewed = 0.01 * (rng.exponential(size=40) - 1.0)
    g1 = strong_skew(skewed)
    assert g1 is not None and g1 > 1.0
    rule = StopRule.create(until="decided", threshold=0.01, max_runs=50)
    d = decide(skewed, rule)
    assert d.skewness == pytest.approx(g1) and "widened toward their long tail" in d.explanation
    assert strong_skew(skewed[:7]) is None  # too few runs to say
    plain = first_stops(skewed[None, :], rule, guards=False)
    assert d.high - d.estimate > plain.high[0] - plain.estimate[0]
