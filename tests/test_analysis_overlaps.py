"""Overlaps, relative overlap time and pairing (docs/statistics.md, "Overlaps, pairing, filters: details"), hand-worked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from duetbench.analysis import overlap_rate, overlap_time, overlaps, pair, relative_overlap_time
from duetbench.analysis.simulate import simulate
from duetbench.errors import AnalysisError

T0 = 1_700_000_000_000_000_000


def side(
    spans: list[tuple[int, int]],
    pair_: str,
    *,
    method: str = "aduet",
    run: int = 0,
    host: str = "h",
    benchmark: str = "b",
) -> list[dict]:
    return [
        dict(
            experiment="e",
            host=host,
            suite="s",
            benchmark=benchmark,
            method=method,
            run=run,
            pair=pair_,
            order="AB",
            iteration=i,
            start_ns=T0 + s,
            end_ns=T0 + e,
            duration_ns=e - s,
        )
        for i, (s, e) in enumerate(spans)
    ]


def drifting_run(run: int = 0, host: str = "h") -> list[dict]:
    """A: 4 iterations of 10 ns; B: 4 of 12 ns -- B drifts behind A."""
    a = side([(0, 10), (10, 20), (20, 30), (30, 40)], "A", run=run, host=host)
    b = side([(0, 12), (12, 24), (24, 36), (36, 48)], "B", run=run, host=host)
    return a + b


# every overlapping pair of the drifting run: (a, b, overlap, thesis rate); the
# default rate divides by the shorter iteration, A's 10 ns
DRIFT_PAIRS = [
    (0, 0, 10, 10 / 12),
    (1, 0, 2, 2 / 12),
    (1, 1, 8, 8 / 12),
    (2, 1, 4, 4 / 12),
    (2, 2, 6, 6 / 12),
    (3, 2, 6, 6 / 12),
    (3, 3, 4, 4 / 12),
]


def test_overlap_time_and_rate_of_single_intervals() -> None:
    assert overlap_time(0, 10, 5, 20) == 5
    assert overlap_time(0, 10, 10, 20) == 0  # touching intervals do not overlap
    assert overlap_time(0, 10, 12, 20) == 0
    # default: overlap relative to the shorter iteration
    assert overlap_rate(0, 10, 5, 25) == pytest.approx(5 / 10)
    assert overlap_rate(0, 10, 2, 8) == pytest.approx(6 / 6)
    assert overlap_rate(0, 10, 0, 30) == pytest.approx(1.0)  # A wholly inside a 3x longer B
    # the thesis's eq. 3.1 can never exceed shorter/longer
    thesis = dict(definition="thesis")
    assert overlap_rate(0, 10, 5, 25, **thesis) == pytest.approx(min(5 / 10, 5 / 20))
    assert overlap_rate(0, 10, 2, 8, **thesis) == pytest.approx(min(6 / 10, 6 / 6))
    assert overlap_rate(0, 10, 0, 30, **thesis) == pytest.approx(1 / 3)
    with pytest.raises(AnalysisError, match="overlap rate"):
        overlap_rate(0, 10, 0, 30, definition="longer")


def test_all_overlaps_of_a_drifting_aduet_run() -> None:
    shorter = overlaps(pd.DataFrame(drifting_run()))
    assert np.allclose(shorter["overlap_rate"], [p[2] / 10 for p in DRIFT_PAIRS])
    ov = overlaps(pd.DataFrame(drifting_run()), overlap_rate="thesis")
    got = list(
        zip(ov["a_iteration"], ov["b_iteration"], ov["overlap_ns"], ov["overlap_rate"], strict=True)
    )
    assert [g[:3] for g in got] == [p[:3] for p in DRIFT_PAIRS]
    assert np.allclose([g[3] for g in got], [p[3] for p in DRIFT_PAIRS])
    # O_0.4: B2 pairs with both A2 and A3, B3 with nobody (the same set by both rates)
    om = overlaps(pd.DataFrame(drifting_run()), min_rate=0.4, overlap_rate="thesis")
    assert om[["a_iteration", "b_iteration"]].equals(
        overlaps(pd.DataFrame(drifting_run()), min_rate=0.4)[["a_iteration", "b_iteration"]]
    )
    assert list(zip(om["a_iteration"], om["b_iteration"], strict=True)) == [
        (0, 0),
        (1, 1),
        (2, 2),
        (3, 2),
    ]


def test_relative_overlap_time_of_the_drifting_run() -> None:
    df = pd.DataFrame(drifting_run())
    thesis = dict(overlap_rate="thesis")
    # O_0.4 overlaps 10 + 8 + 6 + 6; all iterations last 40 (A) + 48 (B)
    r = relative_overlap_time(df, 0.4, **thesis)
    assert r["relative_overlap_time"].item() == pytest.approx(2 * 30 / 88)
    assert r["pairs"].item() == 4
    # rate must exceed m: at m = 0.5 the two pairs of thesis rate exactly 0.5 drop out
    assert relative_overlap_time(df, 0.5, **thesis)["relative_overlap_time"].item() == (
        pytest.approx(2 * 18 / 88)
    )
    # relative to the shorter iteration they cover 6 of A's 10 ns: kept
    assert relative_overlap_time(df, 0.5)["relative_overlap_time"].item() == pytest.approx(
        2 * 30 / 88
    )
    # two runs: sums over both
    two = pd.DataFrame(drifting_run(0) + drifting_run(1))
    assert relative_overlap_time(two, 0.4)["relative_overlap_time"].item() == pytest.approx(
        120 / 176
    )


def test_overlaps_never_cross_runs_hosts_or_methods() -> None:
    rows = drifting_run(0, host="h1") + drifting_run(0, host="h2") + drifting_run(1, host="h1")
    ov = overlaps(pd.DataFrame(rows))
    assert len(ov) == 3 * len(DRIFT_PAIRS)
    assert set(ov.groupby(["host", "run"]).size()) == {len(DRIFT_PAIRS)}
    seq = side([(0, 10), (10, 20)], "A", method="seqn") + side(
        [(0, 10), (10, 20)], "B", method="seqn"
    )
    assert len(overlaps(pd.DataFrame(seq))) == 0  # only aduet runs are swept


def brute_force(df: pd.DataFrame) -> set[tuple]:
    """Eq. 3.1 literally: every (A, B) iteration pair of a run, as an n x m matrix."""
    out = set()
    for (host, run), g in df[df["method"] == "aduet"].groupby(["host", "run"]):
        a, b = g[g["pair"] == "A"], g[g["pair"] == "B"]
        ot = np.minimum.outer(a["end_ns"].to_numpy(), b["end_ns"].to_numpy()) - np.maximum.outer(
            a["start_ns"].to_numpy(), b["start_ns"].to_numpy()
        )
        for i, j in zip(*np.nonzero(ot > 0), strict=True):
            out.add((host, run, a["iteration"].iloc[i], b["iteration"].iloc[j], ot[i, j]))
    return out


def test_sweep_equals_the_n_by_m_definition_on_random_runs() -> None:
    df = simulate(
        hosts=2,
        methods=("aduet",),
        runs=6,
        iterations=25,
        iter_sd=0.2,
        gap_ns=30e6,
        slowdown=0.1,
        seed=4,
    )
    ov = overlaps(df)
    got = set(
        zip(
            ov["host"],
            ov["run"],
            ov["a_iteration"],
            ov["b_iteration"],
            ov["overlap_ns"],
            strict=True,
        )
    )
    assert got == brute_force(df)
    assert len(got) > 200


def test_aduet_refuses_reconstructed_timestamps() -> None:
    df = pd.DataFrame(drifting_run())
    df["synthetic_ts"] = True
    with pytest.raises(AnalysisError, match="timestamps"):
        overlaps(df)
    with pytest.raises(AnalysisError, match="timestamps"):
        pair(df)
    seq = pd.DataFrame(side([(0, 10)], "A", method="sduet") + side([(0, 11)], "B", method="sduet"))
    seq["synthetic_ts"] = True
    assert len(pair(seq)) == 1  # index pairing does not need timestamps


def test_backwards_timestamps_are_refused() -> None:
    rows = side([(0, 10), (5, 20)], "A") + side([(0, 10), (10, 20)], "B")
    rows[1]["end_ns"] = T0 + 8  # the second iteration ends before the first
    with pytest.raises(AnalysisError, match="backwards"):
        overlaps(pd.DataFrame(rows))


def test_seqn_and_sduet_pair_iterations_by_index_within_the_run() -> None:
    rows = (
        side([(0, 10), (10, 20), (20, 30), (30, 40)], "A", method="seqn")
        + side([(100, 111), (111, 122), (122, 133)], "B", method="seqn")  # iteration 3 missing
        + side([(0, 10), (10, 20)], "A", method="seqn", run=1)
        + side([(0, 13), (13, 26)], "B", method="seqn", run=1, host="other")  # other host
        + side([(0, 10), (12, 22)], "A", method="sduet")
        + side([(0, 11), (12, 25)], "B", method="sduet")
    )
    p = pair(pd.DataFrame(rows))
    seqn = p[p["method"] == "seqn"]
    assert list(zip(seqn["run"], seqn["a_iteration"], seqn["b_iteration"], strict=True)) == [
        (0, 0, 0),
        (0, 1, 1),
        (0, 2, 2),
    ]
    assert seqn["b_ns"].tolist() == [11, 11, 11]
    sduet = p[p["method"] == "sduet"]
    assert sduet["a_ns"].tolist() == [10, 10]
    assert sduet["b_ns"].tolist() == [11, 13]


def test_aduet_pairs_are_o_m_of_the_same_run() -> None:
    df = pd.DataFrame(drifting_run(0) + drifting_run(1))
    p = pair(df, min_overlap=0.4)
    assert len(p) == 8
    assert list(zip(p["a_iteration"], p["b_iteration"], strict=True))[:4] == [
        (0, 0),
        (1, 1),
        (2, 2),
        (3, 2),
    ]
    assert (p["overlap_rate"] > 0.4).all()
    assert len(pair(df, min_overlap=0.0)) == 14
    with pytest.raises(AnalysisError):
        pair(df, min_overlap=1.0)


def test_pairing_is_vectorized_over_many_runs() -> None:
    df = simulate(benchmarks=5, hosts=3, runs=8, iterations=40, seed=2)
    p = pair(df)
    idx = p[p["method"] != "aduet"]
    assert (idx["a_iteration"] == idx["b_iteration"]).all()
    assert len(idx) == 5 * 3 * 2 * 8 * 40
    ad = p[p["method"] == "aduet"]
    assert len(ad) >= 5 * 3 * 8 * 30
    assert (ad.groupby(["benchmark", "host", "run"]).size() > 0).all()
