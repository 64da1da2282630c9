"""The tests of A against B (docs/statistics.md, "The two CI tests", "The U test") and their measured error rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from tests.helpers import run_rows

from duetbench.analysis import (
    compare,
    difference_test,
    drop_warmup,
    interval_verdicts,
    mann_whitney_u,
    ratio_test,
)
from duetbench.analysis.simulate import simulate
from duetbench.analysis.stats import _u_counts, exact_u_pvalue, mann_whitney_grouped
from duetbench.errors import AnalysisError

COLUMNS = [
    "suite",
    "benchmark",
    "method",
    "mean_a_ns",
    "mean_b_ns",
    "change",
    "ci_low",
    "ci_high",
    "ci_width",
    "p_value",
    "runs",
    "pairs",
    "verdict",
    "test",
    "interval",
    "confidence",
    "threshold",
    "run_stat",
    "clustered_by",
]


# -- Mann-Whitney U ---------------------------------------------------------------


def test_u_test_equals_scipy_with_ties_and_small_samples() -> None:
    rng = np.random.default_rng(0)
    for n_a, n_b, hi in [
        (30, 40, 10**9),
        (30, 40, 20),
        (5, 30, 10**9),
        (3, 4, 10**6),
        (8, 8, 5),
        (1, 1, 9),
    ]:
        a = rng.integers(0, hi, n_a)
        b = rng.integers(0, hi, n_b)
        ref = stats.mannwhitneyu(a, b)
        ours = mann_whitney_u(a, b)
        assert ours.statistic == ref.statistic
        # the exact distribution (a side of at most 8, no ties) is our own count: equal to
        # the last bits of a double
        assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-12, abs=0)


def test_exact_u_distribution_by_hand_and_against_scipy() -> None:
    """Two values a side: of the 6 orders, U = 0, 1, 2, 3, 4 in 1, 1, 2, 1, 1 of them, so
    U = 0 is twice 1/6 from the middle. Lopsided sizes (8 against 300) as scipy has them."""
    assert _u_counts(2, 2) == (1, 1, 2, 1, 1)
    assert exact_u_pvalue(0, 2, 2) == pytest.approx(1 / 3) and exact_u_pvalue(2, 2, 2) == 1.0
    rng = np.random.default_rng(4)
    for n_a, n_b in [(1, 1), (1, 9), (3, 8), (8, 8), (8, 300), (300, 5), (9, 8)]:
        for _ in range(5):
            x = rng.permutation(n_a + n_b)
            ref = stats.mannwhitneyu(x[:n_a], x[n_a:], method="exact")
            assert exact_u_pvalue(int(ref.statistic), n_a, n_b) == pytest.approx(
                ref.pvalue, rel=1e-12, abs=0
            )


def test_grouped_u_test_equals_scipy_on_every_group() -> None:
    rng = np.random.default_rng(1)
    vals, side, grp, expect = [], [], [], []
    for g in range(200):
        n_a, n_b = rng.integers(1, 50, 2)
        hi = [30, 10**9, 500][g % 3]
        a, b = rng.integers(0, hi, n_a), rng.integers(0, hi, n_b)
        expect.append(stats.mannwhitneyu(a, b))
        vals += [a, b]
        side += [np.zeros(n_a, int), np.ones(n_b, int)]
        grp.append(np.full(n_a + n_b, g))
    perm = rng.permutation(sum(len(v) for v in vals))
    res = mann_whitney_grouped(
        np.concatenate(vals)[perm], np.concatenate(side)[perm], np.concatenate(grp)[perm], 200
    )
    assert np.array_equal(res.u_a, [e.statistic for e in expect])
    np.testing.assert_allclose(res.pvalue, [e.pvalue for e in expect], rtol=1e-12, atol=0)


def test_compare_reports_the_u_test_of_all_filtered_durations() -> None:
    df = simulate(benchmarks=2, runs=4, iterations=12, slowdown=0.01, seed=3)
    res = compare(df, warmup=3)
    kept = drop_warmup(df, 3)
    for _, r in res.iterrows():
        g = kept[(kept["benchmark"] == r["benchmark"]) & (kept["method"] == r["method"])]
        ref = stats.mannwhitneyu(
            g.loc[g["pair"] == "A", "duration_ns"], g.loc[g["pair"] == "B", "duration_ns"]
        )
        assert r["p_value"] == ref.pvalue
        assert r["u_statistic"] == ref.statistic


def test_u_test_verdict_and_direction() -> None:
    a = np.arange(100, 140)
    assert mann_whitney_u(a, a + 30).verdict == "slower"
    assert mann_whitney_u(a + 30, a).verdict == "faster"
    assert mann_whitney_u(a, a).verdict == "no change detected"
    assert mann_whitney_u(a, a + 30).estimate > 0.5


# -- verdicts and the tests on hand-made data --------------------------------------


def test_verdicts_with_and_without_a_practical_threshold() -> None:
    lo = [-0.01, 0.002, 0.02, -0.03, -0.008, np.nan]
    hi = [0.01, 0.008, 0.04, -0.02, -0.001, 0.1]
    assert list(interval_verdicts(lo, hi)) == [
        "no change detected",  # the interval holds 0: equal within +-1 %
        "slower",
        "slower",
        "faster",
        "faster",
        "no data",
    ]
    assert list(interval_verdicts(lo, hi, threshold=0.01)) == [
        "inconclusive",  # reaches the threshold: cannot tell whether it is inside
        "equivalent",  # a change, but inside +-1 %
        "slower",
        "faster",
        "equivalent",
        "no data",
    ]
    # an unbounded interval (2 runs) cannot say equal; with a threshold, too wide to tell
    assert list(interval_verdicts([-np.inf, 0.01], [np.inf, np.inf], threshold=0.0)) == [
        "inconclusive",
        "slower",
    ]
    with pytest.raises(AnalysisError):
        interval_verdicts(lo, hi, threshold=-0.1)


def test_ratio_and_difference_of_a_constant_change() -> None:
    a = [100, 120, 110, 130]
    rows = []
    for run in range(5):
        rows += run_rows([x + run for x in a], [2 * (x + run) for x in a], run=run)
    r = ratio_test(pd.DataFrame(rows))
    assert r.estimate == pytest.approx(1.0)  # B takes twice as long: ggms - 1 = 1
    assert r.confidence_interval.low == pytest.approx(1.0)
    assert r.verdict == "slower"
    assert (r.runs, r.pairs) == (5, 20)
    rows = []
    for run in range(5):
        rows += run_rows([x + run for x in a], [x + run - 11 for x in a], run=run)
    d = difference_test(pd.DataFrame(rows), run_stat="mean")
    mean_a = np.mean([x + run for run in range(5) for x in a])
    assert d.estimate == pytest.approx(-11 / mean_a)
    assert d.verdict == "faster"


@pytest.mark.parametrize("run_stat", ["median", "mean", "trimmed"])
def test_run_level_statistics(run_stat: str) -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(1000, 1100, 21)
    b = (a * rng.uniform(0.9, 1.3, 21)).astype(int)
    b[3] = a[3] * 5  # an outlier on one side
    res = compare(pd.DataFrame(run_rows(a.tolist(), b.tolist())), run_stat=run_stat)
    q = np.log(b / a)
    expected = {"median": np.median(q), "mean": q.mean(), "trimmed": stats.trim_mean(q, 0.1)}
    assert res["change"].item() == pytest.approx(np.expm1(expected[run_stat]), rel=1e-12)
    assert res["verdict"].item() == "no data"  # one run: no interval
    assert np.isnan(res["ci_low"].item())


@pytest.mark.parametrize("test", ["ratio", "diff"])
def test_minimum_compares_the_sides_minima_against_a_scipy_t_interval(test: str) -> None:
    """Chen & Revels (docs/statistics.md, "Microbenchmarks"): per run min(d_B) vs min(d_A), then the usual interval."""
    rng = np.random.default_rng(8)
    rows, mins = [], []
    for run in range(6):
        a = rng.integers(1000, 1400, 15)
        b = (a * rng.uniform(1.02, 1.5, 15)).astype(int)  # noise only ever adds time
        rows += run_rows(a.tolist(), b.tolist(), run=run)
        mins.append((a.min(), b.min()))
    a_min, b_min = np.array(mins, dtype=float).T
    res = compare(pd.DataFrame(rows), run_stat="min", test=test).iloc[0]
    x = np.log(b_min / a_min) if test == "ratio" else b_min - a_min
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    if test == "ratio":
        expected = np.expm1([x.mean(), lo, hi])
    else:
        expected = np.array([x.mean(), lo, hi]) / a_min.mean()
    assert [res.change, res.ci_low, res.ci_high] == pytest.approx(expected, rel=1e-9)
    assert res.run_stat == "min" and res.runs == 6


def test_minimum_sees_a_slowdown_under_one_sided_noise() -> None:
    """Noise that only adds time (Chen & Revels): the minima recover the true 2 %."""
    rng = np.random.default_rng(9)
    rows = []
    for run in range(10):
        base = rng.integers(10_000, 10_050, 40)
        extra = lambda: rng.exponential(800, 40) * (rng.random(40) < 0.7)  # noqa: E731
        a = (base + extra()).astype(int)
        b = (base * 1.02 + extra()).astype(int)
        rows += run_rows(a.tolist(), b.tolist(), run=run)
    res = compare(pd.DataFrame(rows), run_stat="min").iloc[0]
    assert res.verdict == "slower"
    assert res.ci_low < 0.02 < res.ci_high
    assert res.ci_width < 0.01


def test_compare_output_and_groups_without_pairs() -> None:
    df = simulate(benchmarks=2, runs=5, iterations=10, seed=5)
    only_a = df[(df["benchmark"] == "bench001") & (df["method"] == "seqn") & (df["pair"] == "A")]
    df = pd.concat([df[~((df["benchmark"] == "bench001") & (df["method"] == "seqn"))], only_a])
    res = compare(df)
    assert set(COLUMNS) <= set(res.columns)
    assert len(res) == 6
    row = res[(res["benchmark"] == "bench001") & (res["method"] == "seqn")].iloc[0]
    assert row["verdict"] == "no data" and row["pairs"] == 0 and np.isnan(row["change"])
    assert set(res["verdict"]) <= {"no change detected", "slower", "faster", "no data"}
    per_host = compare(df, by=("host", "suite", "benchmark", "method"))
    assert "host" in per_host.columns and len(per_host) == 6
    with pytest.raises(AnalysisError):
        compare(df, test="anova")
    with pytest.raises(AnalysisError):
        compare(df, interval="jackknife")
    with pytest.raises(AnalysisError):
        compare(df, confidence=95)


def test_practical_threshold_on_a_small_change() -> None:
    df = simulate(benchmarks=3, methods=("sduet",), runs=10, iterations=30, slowdown=0.03, seed=6)
    assert set(compare(df)["verdict"]) == {"slower"}
    assert set(compare(df, threshold=0.05)["verdict"]) <= {"equivalent", "inconclusive"}
    assert set(compare(df, threshold=0.2)["verdict"]) == {"equivalent"}
    assert set(compare(df, threshold=0.01)["verdict"]) == {"slower"}


# -- error rates on seeded simulations (docs/statistics.md, "Calibration of every option") -------------------------------


SIM = dict(
    benchmarks=400,
    runs=10,
    iterations=30,
    run_sd=0.03,
    iter_sd=0.01,
    outlier_p=0.01,
    categorical=True,
)


@pytest.fixture(scope="module")
def aa() -> pd.DataFrame:
    """400 seeded A/A experiments per method, one group each."""
    return simulate(seed=1, **SIM)  # type: ignore[arg-type]


@pytest.mark.parametrize("test", ["ratio", "diff"])
def test_aa_default_intervals_say_same_at_nominal_rate(aa: pd.DataFrame, test: str) -> None:
    res = compare(aa, test=test)
    same = (res["verdict"] == "no change detected").groupby(res["method"]).mean()
    assert set(same.index) == {"seqn", "aduet", "sduet"}
    for method, rate in same.items():
        assert 0.93 <= rate <= 0.98, (method, rate)


def test_aa_bca_has_a_higher_false_alarm_rate(aa: pd.DataFrame) -> None:
    """Documented (docs/statistics.md, "Calibration of every option"): BCa over 10 runs is anti-conservative.

    Measured here: 9-11 % false alarms at a nominal 5 %, against 3.5-5 % for the t interval.
    """
    t = compare(aa, test="ratio")
    bca = compare(aa, test="ratio", interval="bca", resamples=2999)
    fa_t = (t["verdict"] != "no change detected").groupby(t["method"]).mean()
    fa_bca = (bca["verdict"] != "no change detected").groupby(bca["method"]).mean()
    assert (fa_bca > fa_t).all()
    assert (fa_bca > 0.07).all()


def test_three_percent_slowdown_is_detected_by_the_duets() -> None:
    res = compare(simulate(seed=2, slowdown=0.03, **SIM))  # type: ignore[arg-type]
    slower = (res["verdict"] == "slower").groupby(res["method"]).mean()
    assert slower["aduet"] >= 0.99
    assert slower["sduet"] >= 0.99
    assert res.loc[res["method"] != "seqn", "change"].median() == pytest.approx(0.03, abs=0.003)
