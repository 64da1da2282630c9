"""The U tests of ``compare``: the signed-rank test of run values, and the pooled one."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from tests.helpers import run_rows

from duetbench.analysis import compare, compare_tests, pair
from duetbench.analysis.ranks import signed_rank
from duetbench.analysis.simulate import simulate


def test_signed_rank_equals_scipy_wilcoxon_on_every_group() -> None:
    rng = np.random.default_rng(0)
    vals, grp, expect = [], [], []
    for g in range(160):  # scipy's own permutation path is slow: keep the count modest
        n = int(rng.integers(1, 70))
        x = rng.normal(0.2 * rng.random() - 0.1, 1.0, n)
        if g % 4 == 1:
            x = np.round(x * 3) / 3  # ties and zeros
        elif g % 4 == 2:
            x = np.round(x * 10) / 10
        vals.append(x)
        grp.append(np.full(n, g))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expect.append(stats.wilcoxon(x).pvalue)
    perm = rng.permutation(sum(len(v) for v in vals))
    res = signed_rank(np.concatenate(vals)[perm], np.concatenate(grp)[perm], 160)
    assert res.pvalue == pytest.approx(np.array(expect), rel=1e-12, abs=1e-15)
    assert np.array_equal(res.n, [len(v) for v in vals])


def test_signed_rank_of_degenerate_groups() -> None:
    res = signed_rank([0.0, 0.0, np.nan, 1.0], [0, 0, 1, 2], 4)
    assert res.pvalue.tolist() == [1.0, 1.0, 1.0, 1.0]  # all zero, NaN, one value, empty
    assert signed_rank([0.0, 0.0], [0, 1], 2).pvalue.tolist() == [1.0, 1.0]  # no value != 0
    assert len(signed_rank([], [], 0).pvalue) == 0
    # the smallest exact two-sided p of n values all on one side is 2 / 2**n
    assert signed_rank(np.arange(1.0, 6.0), np.zeros(5, int), 1).pvalue[0] == 2 / 32
    assert signed_rank(np.arange(1.0, 7.0), np.zeros(6, int), 1).pvalue[0] == 2 / 64


def sduet_runs(factors: list[float], n_it: int = 15, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for run, f in enumerate(factors):
        a = rng.integers(10_000, 10_100, n_it)
        b = (a * f * rng.uniform(0.999, 1.001, n_it)).astype(int)
        rows += run_rows(a.tolist(), b.tolist(), run=run)
    return pd.DataFrame(rows)


def test_utest_is_the_signed_rank_test_of_the_run_values() -> None:
    df = sduet_runs([1.03, 1.02, 1.04, 1.03, 1.01, 1.025, 1.035, 1.03])
    res = compare(df, test="utest").iloc[0]
    p = pair(df).assign(q=lambda d: np.log(d.b_ns / d.a_ns))
    y = p.groupby("run")["q"].median().to_numpy()
    assert res.rank_p_value == pytest.approx(stats.wilcoxon(y).pvalue, rel=1e-12)
    assert res.verdict == "slower" and res.test == "utest" and res.calibrated
    ratio = compare(df).iloc[0]  # change and interval are the ratio test's
    assert (res.change, res.ci_low, res.ci_high) == (ratio.change, ratio.ci_low, ratio.ci_high)
    assert (
        compare(sduet_runs([1 / f for f in [1.03, 1.02, 1.04, 1.03, 1.01, 1.02]]), test="utest")[
            "verdict"
        ].item()
        == "faster"
    )


def test_utest_with_a_practical_threshold() -> None:
    df = sduet_runs([1.03, 1.02, 1.04, 1.03, 1.01, 1.025, 1.035, 1.03])
    assert compare(df, test="utest", threshold=0.005)["verdict"].item() == "slower"
    # every run inside +-5 %: the two one-sided rank tests call it equivalent
    assert compare(df, test="utest", threshold=0.05)["verdict"].item() == "equivalent"
    # runs on both sides of +3 %: neither beyond it nor inside it
    assert compare(df, test="utest", threshold=0.03)["verdict"].item() == "inconclusive"


def test_utest_needs_six_runs_at_95_percent() -> None:
    """All five runs slower is p = 1/16: no rank test of 5 runs can say slower at 95 %."""
    five = sduet_runs([1.05, 1.06, 1.05, 1.07, 1.05])
    assert compare(five, test="utest")["verdict"].item() == "no change detected"
    assert compare(five, test="utest", confidence=0.9)["verdict"].item() == "slower"
    six = sduet_runs([1.05, 1.06, 1.05, 1.07, 1.05, 1.06])
    assert compare(six, test="utest")["verdict"].item() == "slower"
    one = sduet_runs([1.05])
    assert compare(one, test="utest")["verdict"].item() == "no data"


def test_utest_ranks_host_means_when_runs_span_hosts() -> None:
    df = simulate(methods=("sduet",), hosts=8, runs=3, iterations=10, host_b_sd=0.01, seed=3)
    res = compare(df, test="utest").iloc[0]
    assert res.clustered_by == "host" and res.clusters == 8
    p = pair(df).assign(q=lambda d: np.log(d.b_ns / d.a_ns))
    host_means = p.groupby(["host", "run"])["q"].median().groupby("host").mean()
    assert res.rank_p_value == pytest.approx(stats.wilcoxon(host_means).pvalue, rel=1e-12)


def test_the_pooled_u_test_is_available_and_labelled_not_calibrated() -> None:
    aa = simulate(benchmarks=200, methods=("seqn",), runs=10, iterations=30, seed=8)
    pooled = compare(aa, test="utest-pooled")
    assert set(pooled["test"]) == {"utest-pooled"} and not pooled["calibrated"].any()
    # iterations of a run share its state: the pooled test cries wolf on A/A
    assert (pooled["verdict"] != "no change detected").mean() > 0.3
    alarms = pooled["verdict"] != "no change detected"
    assert (pooled["p_value"][alarms] < 0.05).all()
    assert compare(aa, test="utest-thesis")["verdict"].equals(pooled["verdict"])  # an alias
    ranked = compare(aa, test="utest")
    assert (ranked["verdict"] != "no change detected").mean() < 0.1


def test_compare_tests_equals_compare_of_each_test() -> None:
    df = simulate(benchmarks=4, hosts=2, runs=6, iterations=12, slowdown=0.01, seed=9)
    kw = dict(interval="bca", resamples=499, threshold=0.002, seed=3)
    both = compare_tests(df, ("utest", "diff", "utest-pooled", "ratio"), **kw)
    for t, rows in both.groupby("test", sort=False):
        alone = compare(df, test=t, **kw)
        pd.testing.assert_frame_equal(rows.reset_index(drop=True), alone)
    assert list(both["test"].unique()) == ["utest", "diff", "utest-pooled", "ratio"]
