"""Calibration of the verdicts on seeded simulations (docs/statistics.md, "Calibration").

A smaller, seeded version of benchmarks/calibration_study.py: many A/A experiments
in one table (one benchmark each), every method, analysed at once. An option is
*calibrated* when its share of A/A experiments not judged ``same`` stays near the
nominal 5 %; ``compare`` reports that as the ``calibrated`` column.
"""

from __future__ import annotations

import pandas as pd
import pytest

from duetbench.analysis import compare, compare_tests
from duetbench.analysis.simulate import simulate, simulate_interference

N = 1200  # experiments per method: the standard error of a 5 % rate is 0.63 %
BASE = dict(run_sd=0.03, iter_sd=0.01, outlier_p=0.01, iterations=30, categorical=True)


def alarms(res: pd.DataFrame) -> pd.Series:
    """Share of experiments not judged ``same``, per test and method."""
    return (res["verdict"] != "no change detected").groupby([res["test"], res["method"]]).mean()


@pytest.fixture(scope="module")
def aa10() -> pd.DataFrame:
    return simulate(benchmarks=N, runs=10, seed=31, **BASE)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def periods10() -> pd.DataFrame:
    """Iterations on a timeline with slow periods that hit both sides of a duet."""
    return simulate_interference(
        benchmarks=N // 2, methods=("seqn", "aduet", "sduet"), runs=10, side_run_sd=0.005,
        seed=32, categorical=True,
    )  # fmt: skip


def test_the_default_u_test_keeps_its_level_for_every_method(aa10, periods10) -> None:
    """Done-when of the issue: 3-7 % A/A false alarms at a nominal 5 %, every method."""
    for df in (aa10, periods10):
        rate = alarms(compare(df, test="utest")).loc["utest"]
        assert set(rate.index) == {"seqn", "aduet", "sduet"}
        assert rate.between(0.03, 0.07).all(), rate


def test_the_pooled_u_test_is_far_above_its_level_and_says_so(aa10) -> None:
    res = compare(aa10, test="utest-pooled")
    assert alarms(res).loc[("utest-pooled", "seqn")] > 0.5
    assert not res["calibrated"].any()


def test_student_t_intervals_keep_their_level_at_5_and_10_runs(aa10) -> None:
    five = simulate(benchmarks=N, runs=5, seed=33, **BASE)  # type: ignore[arg-type]
    for df in (five, aa10):
        res = compare_tests(df, ("ratio", "diff"))
        rate = alarms(res)
        assert (rate <= 0.07).all() and (rate >= 0.02).all(), rate
        assert res["calibrated"].all()


def test_bootstrap_percentile_and_bca_are_anti_conservative_and_flagged(aa10) -> None:
    for interval in ("percentile", "bca"):
        res = compare(aa10, interval=interval, resamples=999)
        rate = alarms(res).loc["ratio"]
        assert (rate > 0.07).all(), (interval, rate)
        assert not res["calibrated"].any()  # at 10 runs


def test_coverage_of_a_known_two_percent_change() -> None:
    df = simulate(benchmarks=N // 2, runs=10, slowdown=0.02, seed=34, **BASE)  # type: ignore[arg-type]
    res = compare(df)
    covered = (res["ci_low"] <= 0.02) & (res["ci_high"] >= 0.02)
    assert covered.groupby(res["method"]).mean().min() >= 0.92
    slower = (compare(df, test="utest")["verdict"] == "slower").groupby(res["method"]).mean()
    assert slower[["aduet", "sduet"]].min() >= 0.99  # the duets cancel the run effect


def test_the_calibrated_column_follows_the_measured_run_counts() -> None:
    two = simulate(benchmarks=3, methods=("sduet",), runs=2, iterations=10, seed=35)
    three = simulate(benchmarks=3, methods=("sduet",), runs=3, iterations=10, seed=35)
    assert not compare(two)["calibrated"].any()  # t: 8.6 % with 2 runs
    assert compare(three)["calibrated"].all()
    assert compare(three, test="utest")["calibrated"].all()  # cannot reject: no false alarm
    for interval in ("percentile", "bca", "studentized"):
        assert not compare(three, interval=interval, resamples=99)["calibrated"].any()
