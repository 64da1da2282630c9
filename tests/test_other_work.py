"""The run statistic of duets beside other work (docs/statistics.md, "Run statistics beside
other work"): ``means`` compares the sides' mean durations per run, and ``auto`` (the
default) uses it for the duet runs of a benchmark that ran beside other work."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from tests.helpers import run_rows

from duetbench.analysis import compare
from duetbench.analysis.simulate import simulate_interference


def _aduet(a: list[int], b: list[int], run: int) -> list[dict]:
    """Rows of one aduet run: A's and B's iterations back to back from the same start."""
    rows = []
    for side, durs in (("A", a), ("B", b)):
        t = 1_700_000_000_000_000_000 + run * 10**12
        for i, d in enumerate(durs):
            rows.append(
                dict(host="h", suite="s", benchmark="b", method="aduet", run=run, pair=side,
                     iteration=i, start_ns=t, end_ns=t + d, duration_ns=d)
            )  # fmt: skip
            t += d
    return rows


def test_means_is_the_log_ratio_of_the_sides_mean_durations_per_run():
    """Hand-worked: every iteration counts once, paired or not; t interval over runs."""
    runs = [
        ([10, 30, 20], [40, 44]),  # means 20 and 42
        ([12, 12, 12, 12], [25, 23, 24]),  # 12 and 24
        ([9, 11], [22, 20]),  # 10 and 21
    ]
    df = pd.DataFrame([r for k, (a, b) in enumerate(runs) for r in _aduet(a, b, k)])
    res = compare(df, run_stat="means")
    y = np.log([42 / 20, 24 / 12, 21 / 10])
    half = stats.t.ppf(0.975, 2) * y.std(ddof=1) / np.sqrt(3)
    row = res.iloc[0]
    assert row["change"] == pytest.approx(np.expm1(y.mean()), rel=1e-12)
    assert row["ci_low"] == pytest.approx(np.expm1(y.mean() - half), rel=1e-9)
    assert row["ci_high"] == pytest.approx(np.expm1(y.mean() + half), rel=1e-9)
    assert row["run_stat"] == "means" and row["runs"] == 3
    diff = compare(df, run_stat="means", test="diff").iloc[0]
    d = np.array([42 - 20, 24 - 12, 21 - 10], dtype=float)
    assert diff["change"] == pytest.approx(d.mean() / np.mean([20, 12, 10]), rel=1e-12)


def test_auto_is_the_median_unless_a_duet_ran_beside_other_work():
    a, b = [10, 10, 10, 40], [20, 20, 20, 20]  # median of log(b/a): log 2; means: log(80/70)
    rows = [r for k in range(3) for r in run_rows(a, b, run=k)]
    rows += [r for k in range(3) for r in run_rows(a, b, run=k, method="seqn")]
    df = pd.DataFrame(rows)
    plain = compare(df)  # no other_work column: a table from elsewhere
    assert list(plain["run_stat"]) == ["median", "median"]
    assert plain["change"].to_numpy() == pytest.approx([1.0, 1.0])
    busy = compare(df.assign(other_work=df["run"] == 1))  # one run beside other work
    by = busy.set_index("method")
    assert by.loc["sduet", "run_stat"] == "means"  # the whole benchmark's duet runs
    assert by.loc["sduet", "change"] == pytest.approx(80 / 70 - 1)
    assert by.loc["seqn", "run_stat"] == "median"  # seqn keeps the median
    assert by.loc["seqn", "change"] == pytest.approx(1.0)
    quiet = compare(df.assign(other_work=False))
    assert list(quiet["run_stat"]) == ["median", "median"]


@pytest.mark.parametrize("shared", [1.0, 0.0], ids=["shared", "one-sided"])
def test_means_does_not_drift_where_interference_is_as_short_as_a_time_slice(shared):
    """Slow periods of 5 ms against iterations of 10-30 ms (a CPU shared with a busy
    task): the median of the pairs' log ratios reads an aduet 3x high, `means` does not.
    Seeded; bias = geometric mean of estimate / truth - 1 over 30 experiments."""
    df = simulate_interference(
        ratio=3.0, benchmarks=30, methods=("aduet",), runs=10, iterations=30,
        shared=shared, period_ns=5e6, seed=11,
    )  # fmt: skip

    def bias(stat: str) -> float:
        res = compare(df, run_stat=stat)
        return float(np.expm1(np.mean(np.log1p(res["change"])) - np.log(3.0)))

    median, means = bias("median"), bias("means")
    print(
        f"\naduet 3x, 5 ms slow periods, shared={shared}: median {median:+.2%}, means {means:+.2%}"
    )
    assert median > 0.015  # the drift that `auto` avoids beside other work
    assert abs(means) < 0.01
