"""aduet pairing without the ceiling, and runs with few pairs (docs/statistics.md).

Seeded timeline simulations: B does r times A's work; slow periods hit both sides
at once (shared interference) or one side at a time (one-sided interference).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.helpers import run_rows

from duetbench.analysis import compare, overlaps
from duetbench.analysis.simulate import _Speed, simulate_interference
from duetbench.errors import AnalysisError

RATIOS = (1.0, 1.5, 2.0, 2.5, 3.0)
N = 40  # experiments per ratio


def bias(df: pd.DataFrame, **kw: object) -> pd.Series:
    """Geometric-mean bias of the default ratio estimate per true ratio."""
    res = compare(df, **kw).set_index("benchmark")
    truth = pd.Series(np.repeat(RATIOS, N), index=[f"bench{i:04d}" for i in range(len(RATIOS) * N)])
    err = np.log1p(res["change"]) - np.log(truth.reindex(res.index))
    return np.expm1(err.groupby(truth.reindex(res.index)).mean())


@pytest.fixture(scope="module")
def shared() -> pd.DataFrame:
    return simulate_interference(ratio=RATIOS, benchmarks=N, shared=1.0, seed=21, categorical=True)


def test_the_default_pairing_is_unbiased_up_to_three_times_longer_iterations(shared) -> None:
    new = bias(shared)
    assert (new.abs() < 0.01).all(), new
    # the thesis's rate never exceeds shorter/longer: at 3x it keeps a biased few pairs
    old = bias(shared, overlap_rate="thesis")
    assert old[3.0] < -0.10 and old[2.5] < -0.02, old
    assert (old.loc[:2.0].abs() < 0.01).all()


def test_every_run_keeps_its_pairs_when_b_is_three_times_longer(shared) -> None:
    three = shared[shared["benchmark"].astype(str) >= f"bench{4 * N:04d}"]  # r = 3
    new = compare(three)
    old = compare(three, overlap_rate="thesis", min_run_pairs=0)
    # ~30 A iterations overlap the first B iterations, each wholly inside one of them
    assert (new["pairs"] / new["runs"]).min() >= 25
    assert (old["pairs"] / old["runs"]).median() < 5


def test_one_sided_interference_biases_the_thesis_rate_towards_one() -> None:
    df = simulate_interference(ratio=RATIOS, benchmarks=N, shared=0.0, seed=22, categorical=True)
    new, old = bias(df), bias(df, overlap_rate="thesis")
    assert old[3.0] < -0.25 and old[2.5] < -0.05
    assert new.abs()[[2.5, 3.0]].max() < 0.1  # not unbiased (one side slowed), but bounded
    assert (new.abs() < old.abs())[[2.5, 3.0]].all()


def test_overlap_rate_is_validated() -> None:
    df = simulate_interference(runs=2, iterations=4, seed=1)
    with pytest.raises(AnalysisError, match="overlap rate"):
        compare(df, overlap_rate="longer")
    with pytest.raises(AnalysisError, match="min_run_pairs"):
        compare(df, min_run_pairs=2)
    assert set(compare(df, overlap_rate="thesis")["overlap_rate"]) == {"thesis"}


# -- runs with few pairs -----------------------------------------------------------


def few_pair_table() -> pd.DataFrame:
    """6 sduet runs of 20 pairs with B 10 % slower, 2 runs of 2 pairs with B 50 % faster."""
    rng = np.random.default_rng(3)
    rows = []
    for run in range(8):
        n = 20 if run < 6 else 2
        a = rng.integers(1000, 1010, n)
        b = (a * (1.1 if run < 6 else 0.5) * rng.uniform(0.99, 1.01, n)).astype(int)
        rows += run_rows(a.tolist(), b.tolist(), run=run)
    return pd.DataFrame(rows)


def test_runs_with_far_fewer_pairs_are_left_out_and_counted() -> None:
    df = few_pair_table()
    r = compare(df).iloc[0]
    assert (r.runs, r.runs_few_pairs, r.pairs) == (6, 2, 120)
    assert r.change == pytest.approx(0.1, abs=0.01)
    assert r.verdict == "slower"
    every = compare(df, min_run_pairs=0).iloc[0]  # each run counted once, as before
    assert (every.runs, every.runs_few_pairs, every.pairs) == (8, 0, 124)
    assert every.change < 0.0  # two runs of 2 pairs outweigh six of 20


def test_runs_of_similar_size_are_all_kept() -> None:
    df = simulate_interference(runs=6, iterations=12, seed=5)  # 12-14 pairs in every run
    r = compare(df).iloc[0]
    assert r.runs == 6 and r.runs_few_pairs == 0


# -- the timeline generator ---------------------------------------------------------


def test_speed_of_lanes_is_inverted_exactly() -> None:
    # lane 0: full speed to t = 10, half speed to 20, full to 30; lane 1: 3x slow to 5
    edge = np.array([[0.0, 10.0, 20.0, 30.0], [0.0, 5.0, 6.0, 7.0]])
    speed = _Speed(edge, np.array([[1.0, 2.0, 1.0], [3.0, 1.0, 3.0]]))
    t = speed.time_of_work(np.zeros(5, dtype=np.int64), np.array([5.0, 10.0, 12.5, 15.0, 30.0]))
    assert t == pytest.approx([5, 10, 15, 20, 35])
    w = speed.work_at(np.array([0, 0, 1, 1, 1]), np.array([15.0, 40.0, 5.0, 6.5, 10.0]))
    assert w == pytest.approx([12.5, 35, 5 / 3, 5 / 3 + 1 + 1 / 6, 5 / 3 + 1 + 1 / 3 + 3])


def test_timeline_runs_are_seeded_and_shaped_like_measured_runs() -> None:
    kw = dict(ratio=[1.0, 2.0], benchmarks=2, methods=("seqn", "aduet", "sduet"), runs=3)
    a, b = simulate_interference(seed=4, **kw), simulate_interference(seed=4, **kw)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(simulate_interference(seed=5, **kw))
    assert (a["end_ns"] - a["start_ns"] == a["duration_ns"]).all()
    sd = a[a["method"] == "sduet"].pivot_table(
        index=["benchmark", "run", "iteration"], columns="pair", values="start_ns"
    )
    assert (sd["A"] == sd["B"]).all()  # synchronized iterations start together
    assert len(overlaps(a[a["method"] == "seqn"])) == 0


def test_without_interference_durations_are_the_work() -> None:
    df = simulate_interference(ratio=2.0, iter_sd=0.0, slow_share=0.0, runs=2, iterations=5)
    d = df.groupby("pair")["duration_ns"].agg(["min", "max"])
    assert d.loc["A"].tolist() == [10_000_000, 10_000_000]
    assert d.loc["B"].tolist() == [20_000_000, 20_000_000]
    slow = simulate_interference(iter_sd=0.0, slow_share=0.999, slow_factor=3.0, period_ns=1e12)
    assert slow["duration_ns"].median() == pytest.approx(30e6, rel=1e-9)
