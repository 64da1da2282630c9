"""Interval engines against scipy, and reproducibility of the random streams."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from duetbench.analysis import (
    bootstrap_interval,
    compare,
    pair,
    t_interval,
    weighted_bootstrap_interval,
)
from duetbench.analysis._resample import resample_sums
from duetbench.analysis.simulate import simulate
from duetbench.errors import AnalysisError


def groups_of(samples: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    values = np.concatenate(samples)
    group = np.repeat(np.arange(len(samples)), [len(s) for s in samples])
    return values, group, [f"group={i}" for i in range(len(samples))]


def test_t_interval_equals_scipy() -> None:
    rng = np.random.default_rng(1)
    samples = [rng.normal(3.0, 2.0, n) for n in (2, 3, 10, 17, 40)]
    v, g, _ = groups_of(samples)
    res = t_interval(v[::-1], g[::-1], confidence=0.9)  # order of values must not matter
    for i, x in enumerate(samples):
        lo, hi = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert res.low[i] == pytest.approx(lo, rel=1e-12, abs=1e-12)
        assert res.high[i] == pytest.approx(hi, rel=1e-12, abs=1e-12)
        assert res.estimate[i] == pytest.approx(x.mean(), rel=1e-14)
    one = t_interval([1.0, 2.0, 5.0], [0, 1, 1], n_groups=3)
    assert np.isnan(one.low[0]) and np.isnan(one.low[2])  # 1 value / no value


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_bootstrap_matches_scipy_within_monte_carlo_error(method: str) -> None:
    """Same run means, 9999 resamples each: the bounds differ only by Monte Carlo noise."""
    rng = np.random.default_rng(7)
    samples = [rng.lognormal(0.0, 0.4, n) * 1e6 for n in [10] * 12 + [15] * 6 + [20] * 6]
    v, g, keys = groups_of(samples)
    ours = bootstrap_interval(v, g, keys, method=method, resamples=9999, seed=3)  # type: ignore[arg-type]
    errs = []
    for i, x in enumerate(samples):
        ref = stats.bootstrap(
            (x,), np.mean, method=method, n_resamples=9999, rng=rng
        ).confidence_interval
        se = x.std(ddof=1) / np.sqrt(len(x))
        errs += [(ours.low[i] - ref.low) / se, (ours.high[i] - ref.high) / se]
    errs = np.asarray(errs)
    # a bound's Monte Carlo SD is ~0.02-0.05 SE for 9999 resamples; two estimates differ
    # by ~sqrt(2) of that, and neither is biased against the other
    assert np.abs(errs).max() < 0.25
    assert np.abs(errs).mean() < 0.06
    assert abs(errs.mean()) < 0.03


def test_bca_is_asymmetric_like_scipys_on_skewed_data() -> None:
    x = np.r_[np.ones(12), 2.0, 3.0, 9.0]
    ours = bootstrap_interval(x, np.zeros(len(x), int), ["k"], method="bca", resamples=20000)
    ref = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=20000, rng=1).confidence_interval
    assert ours.high[0] - x.mean() > 2 * (x.mean() - ours.low[0])
    assert ours.low[0] == pytest.approx(ref.low, rel=0.03)
    assert ours.high[0] == pytest.approx(ref.high, rel=0.03)


def test_studentized_interval_covers_like_t_on_normal_data() -> None:
    rng = np.random.default_rng(11)
    samples = [rng.normal(0.0, 1.0, 12) for _ in range(300)]
    v, g, keys = groups_of(samples)
    st = bootstrap_interval(v, g, keys, method="studentized", resamples=999)
    tt = t_interval(v, g, n_groups=len(samples))
    cover = np.mean((st.low < 0) & (st.high > 0))
    assert 0.91 <= cover <= 0.99
    ratio = np.median((st.high - st.low) / (tt.high - tt.low))
    assert 0.85 < ratio < 1.25


@pytest.mark.parametrize("n", [2, 3, 4, 7, 21, 95, 300])
def test_bootstrap_of_any_group_size_spreads_like_the_standard_error(n: int) -> None:
    """Every table layout (k = 3, 2, 1 values per draw, with or without remainder)."""
    x = np.random.default_rng(n).normal(size=n)
    sums, _ = resample_sums((x - x.mean())[None, :], [np.random.default_rng(1)], 20000)
    sd_boot = (sums / n).std()
    assert sd_boot == pytest.approx(x.std() / np.sqrt(n), rel=0.03)
    ci = bootstrap_interval(x, np.zeros(n, int), ["k"], method="percentile", resamples=999)
    assert ci.low[0] < x.mean() < ci.high[0]


def test_resampling_draws_every_value_uniformly() -> None:
    """The k-sum tables and packed draws reproduce multinomial resampling."""
    n, b = 20, 200_000
    for k in (0, 7, 19):
        d = np.zeros((1, n))
        d[0, k] = 1.0  # the sum counts how often value k is drawn
        counts, _ = resample_sums(d, [np.random.default_rng(k)], b)
        mean, var = counts.mean(), counts.var()
        assert mean == pytest.approx(1.0, abs=4 * np.sqrt(0.95 / b))  # Binomial(20, 1/20)
        assert var == pytest.approx(0.95, rel=0.02)
        freq = np.bincount(counts[0].astype(int), minlength=4)[:4] / b
        assert freq == pytest.approx(stats.binom.pmf(np.arange(4), n, 1 / n), abs=0.004)


def test_same_seed_gives_bit_identical_and_other_seed_different_intervals() -> None:
    rng = np.random.default_rng(5)
    samples = [rng.normal(size=n) for n in (8, 12, 12, 30)]
    v, g, keys = groups_of(samples)
    for method in ("bca", "percentile", "studentized"):
        a = bootstrap_interval(v, g, keys, method=method, seed=42)  # type: ignore[arg-type]
        b = bootstrap_interval(v, g, keys, method=method, seed=42)  # type: ignore[arg-type]
        c = bootstrap_interval(v, g, keys, method=method, seed=43)  # type: ignore[arg-type]
        assert np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)
        assert np.all(a.low != c.low) and np.all(a.high != c.high)


def test_a_groups_interval_does_not_depend_on_the_other_groups() -> None:
    rng = np.random.default_rng(6)
    samples = [rng.normal(size=12) for _ in range(5)]
    v, g, keys = groups_of(samples)
    full = bootstrap_interval(v, g, keys, method="bca", seed=1)
    alone = bootstrap_interval(samples[3], np.zeros(12, int), [keys[3]], method="bca", seed=1)
    assert full.low[3] == alone.low[0] and full.high[3] == alone.high[0]


@pytest.mark.parametrize("method", ["bca", "percentile", "studentized"])
def test_intervals_are_bit_identical_whatever_the_thread_count(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of groups run on threads; 27 groups of two sizes span several blocks."""
    rng = np.random.default_rng(8)
    samples = [rng.lognormal(size=10 if i % 3 else 7) for i in range(27)]
    v, g, keys = groups_of(samples)
    results = []
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("DUETBENCH_THREADS", threads)
        results.append(bootstrap_interval(v, g, keys, method=method, resamples=999, seed=3))
    for r in results[1:]:
        assert np.array_equal(r.low, results[0].low) and np.array_equal(r.high, results[0].high)
    d = (v - v.mean())[:200].reshape(20, 10)
    gens = lambda: [np.random.default_rng(i) for i in range(20)]  # noqa: E731
    one, _ = resample_sums(d, gens(), 500, threads=1)
    many, _ = resample_sums(d, gens(), 500, threads=4)
    assert np.array_equal(one, many)


@pytest.mark.parametrize("n", [2, 5, 20, 31])
def test_the_scipy_kernel_and_the_numpy_path_resample_bit_identically(
    n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without scipy's CSR kernel the same gathers are added in the same order."""
    from duetbench.analysis import _resample

    assert _resample._csr_matvec is not None  # the fast path is the one users get
    d = np.random.default_rng(n).normal(size=(11, n)) * 1e6
    gens = lambda: [np.random.default_rng(100 + i) for i in range(11)]  # noqa: E731
    fast, fast_sq = resample_sums(d, gens(), 777, squares=True, threads=1)
    monkeypatch.setattr(_resample, "_csr_matvec", None)
    slow, slow_sq = resample_sums(d, gens(), 777, squares=True, threads=1)
    assert np.array_equal(fast, slow) and np.array_equal(fast_sq, slow_sq)


@pytest.mark.parametrize("value", ["0", "many", "-2"])
def test_a_bad_thread_count_says_what_to_set(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUETBENCH_THREADS", value)
    with pytest.raises(AnalysisError, match="DUETBENCH_THREADS.*whole number"):
        bootstrap_interval([1.0, 2.0, 4.0], [0, 0, 0], ["k"], method="bca", resamples=99)


def test_compare_is_reproducible_and_adding_a_benchmark_changes_nothing_else() -> None:
    df = simulate(benchmarks=4, runs=10, iterations=20, outlier_p=0.02, seed=9)
    kw = dict(test="diff", interval="bca", resamples=2000)
    a = compare(df, seed=7, **kw)
    b = compare(df, seed=7, **kw)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    c = compare(df, seed=8, **kw)
    assert (a["ci_low"] != c["ci_low"]).all() and (a["ci_high"] != c["ci_high"]).all()
    extra = simulate(benchmarks=["zzz-new"], runs=10, iterations=20, seed=10)
    bigger = compare(pd.concat([extra, df], ignore_index=True), seed=7, **kw)
    bigger = bigger[bigger["benchmark"] != "zzz-new"].reset_index(drop=True)
    pd.testing.assert_frame_equal(a, bigger, check_exact=True)


def test_weighted_bootstrap_reads_poisson_and_uniform_weights_alike() -> None:
    rng = np.random.default_rng(12)
    clusters = np.repeat(np.arange(6), 4)
    v = rng.normal(size=24) + np.repeat(rng.normal(size=6), 4)
    g = np.zeros(24, int)
    p = weighted_bootstrap_interval(v, g, clusters, ["x"], weights="poisson", resamples=20000)
    u = weighted_bootstrap_interval(v, g, clusters, ["x"], weights="uniform", resamples=20000)
    # the t reading is close to the cluster-robust (CR1) t interval
    means = np.array([v[clusters == c].mean() for c in range(6)])
    cr1 = stats.t.ppf(0.975, 5) * means.std(ddof=1) / np.sqrt(6)
    for r in (p, u):
        assert r.estimate[0] == pytest.approx(v.mean())
        assert (r.high[0] - r.low[0]) / 2 == pytest.approx(cr1, rel=0.06)
    pp = weighted_bootstrap_interval(v, g, clusters, ["x"], method="percentile", resamples=20000)
    assert pp.low[0] < v.mean() < pp.high[0]
    with pytest.raises(AnalysisError):
        weighted_bootstrap_interval(v, g, clusters, ["x"], method="studentized")  # type: ignore[arg-type]


def test_a_single_cluster_or_run_gives_no_interval() -> None:
    w = weighted_bootstrap_interval([1.0, 2.0, 3.0], [0, 0, 0], ["h", "h", "h"], ["x"])
    assert np.isnan(w.low[0])
    b = bootstrap_interval([1.0], [0], ["x"])
    assert np.isnan(b.low[0])
    flat = bootstrap_interval([2.0, 2.0, 2.0], [0, 0, 0], ["x"])
    assert flat.low[0] == flat.high[0] == 2.0


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_difference_test_matches_scipy_on_the_thesis_run_means(method: str) -> None:
    """End to end: compare(test="diff", run_stat="mean") against scipy on the run means."""
    df = simulate(
        benchmarks=8,
        methods=("sduet", "aduet"),
        runs=15,
        iterations=20,
        outlier_p=0.02,
        seed=13,
        categorical=True,
    )
    res = compare(df, test="diff", interval=method, run_stat="mean", resamples=9999, seed=2)
    p = pair(df)
    rng = np.random.default_rng(0)
    errs = []
    for _, r in res.iterrows():
        g = p[(p["benchmark"] == r["benchmark"]) & (p["method"] == r["method"])]
        run_means = (g["b_ns"] - g["a_ns"]).groupby(g["run"]).mean().to_numpy()
        scale = g.groupby("run")["a_ns"].mean().mean()  # mean d_A over runs
        ref = stats.bootstrap(
            (run_means,), np.mean, method=method, n_resamples=9999, rng=rng
        ).confidence_interval
        se = run_means.std(ddof=1) / np.sqrt(len(run_means))
        assert r["change"] * scale == pytest.approx(run_means.mean(), rel=1e-9)
        errs += [(r["ci_low"] * scale - ref.low) / se, (r["ci_high"] * scale - ref.high) / se]
    assert np.abs(errs).max() < 0.3
    assert np.abs(errs).mean() < 0.08


@pytest.mark.parametrize("m", [2, 7, 20, 400, 8000, 8192, 531441, 2**19])
def test_packed_draws_are_the_base_m_digits_of_the_uniform(m: int) -> None:
    """The digit split gives in-range indices that are, but for boundary
    rounding in 1 of 10**4 draws or fewer, the exact base-m digits of u."""
    from duetbench.analysis._resample import _Stream

    st = _Stream(50_000, m)
    u = np.random.default_rng(m).random((1, st.doubles))
    u[0, :4] = [0.0, np.nextafter(1.0, 0.0), 0.5, 1e-300]
    got = st.indices(u)[0]
    assert got.min() >= 0 and got.max() < m
    # exact digits of floor(u * m**per), with Python integers (u * 2**53 is whole)
    exact = np.empty((st.per, st.doubles), dtype=np.int64)
    for f, x in enumerate(u[0]):
        v = (int(x * 2.0**53) * m**st.per) >> 53
        for p in range(st.per - 1, -1, -1):
            v, exact[p, f] = divmod(v, m)
    exact_flat = exact.reshape(-1)[:50_000]
    assert (got != exact_flat).mean() <= 1e-4
    # the extremes: u = 0 gives zeros, the largest u below 1 gives m - 1 everywhere
    assert all(got[p * st.doubles] == 0 for p in range(st.per))
    assert all(
        got[p * st.doubles + 1] == m - 1 for p in range(st.per) if p * st.doubles + 1 < 50_000
    )


def test_a_groups_stream_is_the_same_through_every_path() -> None:
    """The reused per-thread generator draws exactly the group's own stream."""
    from duetbench.analysis._table import GroupStreams, group_generator

    streams = GroupStreams(7, ["host=a", "host=b", "host=c"], "interval")
    for i, key in enumerate(["host=a", "host=b", "host=c"]):
        out = np.empty(1000)
        streams.fill(i, out)
        assert np.array_equal(out, group_generator(7, key, "interval").random(1000))
        assert np.array_equal(out, streams[i].random(1000))
    other = np.empty(1000)
    GroupStreams(8, ["host=a"], "interval").fill(0, other)
    assert not np.array_equal(other, group_generator(7, "host=a", "interval").random(1000))


def test_a_huge_studentized_interval_of_three_runs_is_quiet() -> None:
    """With 3 runs many resamples have almost no spread: some bounds are huge (e**1000),
    mapped to an infinite relative change without numpy's overflow warning."""
    from duetbench.analysis import compare
    from duetbench.analysis.simulate import simulate

    df = simulate(benchmarks=100, methods=("sduet",), runs=3, iterations=10, outlier_p=0.01, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = compare(df, interval="studentized", resamples=999)
    assert np.isinf(res["ci_high"]).any()
