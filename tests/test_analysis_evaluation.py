"""Evaluation helpers (docs/statistics.md, "Evaluation helpers"): CV, runtime speedup, MDS, shuffle check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from duetbench.analysis import (
    compare,
    cv,
    minimal_detectable_slowdown,
    runtime_speedup,
    shuffle_check,
    slow_down,
)
from duetbench.analysis.simulate import simulate
from duetbench.errors import AnalysisError

T0 = 1_700_000_000_000_000_000


def side(
    method: str, run: int, pair_: str, spans: list[tuple[int, int]], proc: tuple[int, int]
) -> list[dict]:
    return [
        dict(
            experiment="e",
            host="h",
            suite="s",
            benchmark="b",
            method=method,
            run=run,
            pair=pair_,
            order="AB",
            iteration=i,
            start_ns=T0 + s,
            end_ns=T0 + e,
            duration_ns=e - s,
            proc_start_ns=T0 + proc[0],
            proc_end_ns=T0 + proc[1],
        )
        for i, (s, e) in enumerate(spans)
    ]


def speedup_table() -> pd.DataFrame:
    rows = (
        # seqn repetition 0: A process 0..100, B process 200..310 -> cost 210
        side("seqn", 0, "A", [(10, 50), (50, 90)], (0, 100))
        + side("seqn", 0, "B", [(210, 250), (250, 300)], (200, 310))
        # seqn repetition 1: 120 + 130 = 250
        + side("seqn", 1, "A", [(1010, 1060), (1060, 1110)], (1000, 1120))
        + side("seqn", 1, "B", [(1210, 1260), (1260, 1330)], (1200, 1330))
        # aduet repetition 0: latest end - earliest start = 1120 - 1000 = 120
        + side("aduet", 0, "A", [(2010, 2050), (2050, 2090)], (2000, 2100))
        + side("aduet", 0, "B", [(2015, 2060), (2060, 2110)], (2005, 2120))
        # aduet repetition 1: 3150 - 3000 = 150
        + side("aduet", 1, "A", [(3010, 3070), (3070, 3140)], (3000, 3150))
        + side("aduet", 1, "B", [(3005, 3060), (3060, 3130)], (3001, 3140))
    )
    return pd.DataFrame(rows)


def test_runtime_speedup_from_process_lifetimes() -> None:
    r = runtime_speedup(speedup_table())
    assert r["method"].tolist() == ["aduet"]
    assert r["seqn_cost_ns"].item() == pytest.approx((210 + 250) / 2)
    assert r["duet_cost_ns"].item() == pytest.approx((120 + 150) / 2)
    assert r["speedup"].item() == pytest.approx(230 / 135)
    assert (r["seqn_runs"].item(), r["duet_runs"].item()) == (2, 2)


def test_runtime_speedup_from_iteration_spans() -> None:
    df = speedup_table()
    r = runtime_speedup(df, span="iterations")
    seqn = ((90 - 10) + (300 - 210) + (1110 - 1010) + (1330 - 1210)) / 2
    duet = ((2110 - 2010) + (3140 - 3005)) / 2
    assert r["speedup"].item() == pytest.approx(seqn / duet)
    # without process columns the iteration span is used
    same = runtime_speedup(df.drop(columns=["proc_start_ns", "proc_end_ns"]))
    assert same["speedup"].item() == pytest.approx(seqn / duet)


def test_runtime_speedup_of_a_simulated_duet_is_below_two() -> None:
    df = simulate(benchmarks=2, hosts=2, runs=4, iterations=10, run_sd=0.0, seed=1)
    r = runtime_speedup(df)
    assert set(r["method"]) == {"aduet", "sduet"}
    assert ((r["speedup"] > 1.5) & (r["speedup"] < 2.05)).all()  # 2.0 up to noise


def test_slow_down_rebuilds_b_timestamps_keeping_the_gaps() -> None:
    a = side("aduet", 0, "A", [(0, 10), (10, 20), (20, 30)], (0, 40))
    b = side("aduet", 0, "B", [(0, 10), (12, 22), (30, 38)], (0, 40))
    out = slow_down(pd.DataFrame(a + b), 0.5)
    got_b = out[out["pair"] == "B"]
    # s'1 = s1; e'k = s'k + 1.5 dk; s'(k+1) = e'k + (s(k+1) - ek)
    assert (got_b["start_ns"] - T0).tolist() == [0, 17, 40]
    assert (got_b["end_ns"] - T0).tolist() == [15, 32, 52]
    assert got_b["duration_ns"].tolist() == [15, 15, 12]
    pd.testing.assert_frame_equal(
        out[out["pair"] == "A"], pd.DataFrame(a + b)[lambda d: d["pair"] == "A"]
    )
    assert slow_down(pd.DataFrame(a + b), 0.0).equals(pd.DataFrame(a + b))


def test_slow_down_is_seen_by_compare() -> None:
    df = simulate(benchmarks=2, methods=("aduet", "sduet"), runs=10, iterations=20, seed=3)
    res = compare(slow_down(df, 0.05))
    assert res["change"].to_numpy() == pytest.approx(0.05, abs=0.005)


def test_minimal_detectable_slowdown() -> None:
    df = simulate(
        benchmarks=3, runs=10, iterations=20, run_sd=0.03, iter_sd=0.005, seed=4, categorical=True
    )
    s = np.round(np.arange(0.0, 0.11, 0.01), 2)
    mds = minimal_detectable_slowdown(df, s)
    details = minimal_detectable_slowdown(df, s, details=True)
    assert len(details) == len(s) * len(mds)
    for _, row in mds.iterrows():
        d = details[
            (details["benchmark"] == row["benchmark"]) & (details["method"] == row["method"])
        ]
        slower = (d.sort_values("slowdown")["verdict"] == "slower").to_numpy()
        # smallest s from which every larger s is detected as slower
        ok = [i for i in range(len(s)) if slower[i:].all()]
        expected = s[ok[0]] if ok else np.nan
        assert row["mds"] == expected or (np.isnan(row["mds"]) and np.isnan(expected))
    duets = mds[mds["method"] != "seqn"]["mds"]
    assert (duets <= 0.02).all()  # duets see 1-2 % through 3 % run noise
    assert mds[mds["method"] == "seqn"]["mds"].fillna(1.0).median() > duets.median()


def test_shuffle_check_shows_the_duets_cancelling_shared_interference() -> None:
    df = simulate(
        benchmarks=3, runs=10, iterations=20, run_sd=0.03, shared_sd=0.03, seed=5, categorical=True
    )
    r = shuffle_check(df, shuffles=5)
    duet = r[r["method"] != "seqn"]
    seqn = r[r["method"] == "seqn"]
    assert (duet["width_ratio"] > 3).all()  # pairing as measured removes the shared noise
    assert (seqn["width_ratio"].between(0.5, 2.0)).all()  # nothing to cancel
    assert (r["runs"] == 10).all()


def test_cv_of_filtered_durations() -> None:
    df = simulate(benchmarks=2, hosts=2, runs=3, iterations=10, seed=6)
    res = cv(df, warmup=2)
    kept = df[df["iteration"] >= 2]
    ref = kept.groupby(["host", "suite", "benchmark", "method", "pair"])["duration_ns"].agg(
        ["std", "mean"]
    )
    ref = (ref["std"] / ref["mean"]).reset_index(name="cv")
    merged = res.merge(ref, on=["host", "suite", "benchmark", "method", "pair"])
    assert len(merged) == len(res) == 2 * 2 * 3 * 2
    assert np.allclose(merged["cv_x"], merged["cv_y"], rtol=1e-12)


def test_bad_arguments_are_analysis_errors() -> None:
    df = speedup_table()
    with pytest.raises(AnalysisError):
        slow_down(df, "fast")  # type: ignore[arg-type]
    with pytest.raises(AnalysisError):
        runtime_speedup(df, span="wall")  # type: ignore[arg-type]
    with pytest.raises(AnalysisError):
        shuffle_check(df, shuffles=0)
    with pytest.raises(AnalysisError):
        minimal_detectable_slowdown(df, [])
