"""Warm-up removal and winsorization (docs/statistics.md, "Overlaps, pairing, filters: details"), hand-worked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from duetbench.analysis import drop_warmup, winsorize
from duetbench.errors import AnalysisError

T0 = 1_700_000_000_000_000_000


def series(
    durations: list[int], *, pair: str = "A", run: int = 0, method: str = "seqn"
) -> list[dict]:
    rows, t = [], T0 + run * 10**12
    for i, d in enumerate(durations):
        rows.append(
            dict(
                experiment="e",
                host="h",
                suite="s",
                benchmark="b",
                method=method,
                run=run,
                pair=pair,
                order=pair,
                iteration=i,
                start_ns=t,
                end_ns=t + d,
                duration_ns=d,
            )
        )
        t += d + 5
    return rows


def table(*parts: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([r for p in parts for r in p])


def winsorized(durations: list[int]) -> list[int]:
    out = winsorize(table(series(durations)))
    return out.sort_values("iteration")["duration_ns"].tolist()


def test_winsorize_replaces_a_far_maximum_with_its_neighbour() -> None:
    # others span 100..103 (range 3); 110 lies 7 beyond it > 20 % of 3
    assert winsorized([100, 102, 101, 103, 110]) == [100, 102, 101, 103, 103]


def test_winsorize_keeps_a_maximum_within_twenty_percent() -> None:
    # the minimum lies only 4 out; 1035 lies 5 beyond 1000..1030, not more than 6
    assert winsorized([1004, 1000, 1010, 1020, 1030, 1035]) == [1004, 1000, 1010, 1020, 1030, 1035]


def test_winsorize_exactly_twenty_percent_is_kept_and_just_above_is_replaced() -> None:
    base = list(range(100, 111))  # range 10 once the last value is left out
    assert winsorized([*base, 112]) == [*base, 112]  # 2 beyond: exactly 20 %, kept
    assert winsorized([*base, 113]) == [*base, 110]  # 3 beyond: replaced by 110


def test_winsorize_replaces_a_far_minimum() -> None:
    assert winsorized([50, 100, 101, 102, 103]) == [100, 100, 101, 102, 103]


def test_winsorize_replaces_at_most_one_value_the_farthest() -> None:
    # 200 lies 98 beyond 50..102, 50 lies 50 below 100..200: only 200 goes
    out = winsorize(table(series([50, 100, 101, 102, 200])))
    assert out["duration_ns"].tolist() == [50, 100, 101, 102, 102]
    assert out["winsorized"].tolist() == [False, False, False, False, True]


def test_winsorize_works_per_run_and_side_and_leaves_short_series() -> None:
    df = table(
        series([10, 11, 12, 30], pair="A"),
        series([1004, 1000, 1010, 1020, 1030, 1035], pair="B"),
        series([10, 30], pair="A", run=1),
    )
    out = winsorize(df)
    assert out["duration_ns"].tolist() == [
        10,
        11,
        12,
        12,
        1004,
        1000,
        1010,
        1020,
        1030,
        1035,
        10,
        30,
    ]
    assert out["start_ns"].tolist() == df["start_ns"].tolist()  # timestamps untouched


def test_warmup_drops_the_first_iterations_of_every_series() -> None:
    df = table(series([1, 2, 3, 4, 5], pair="A"), series([6, 7, 8, 9], pair="B"))
    df = df.sample(frac=1.0, random_state=1)  # order of rows must not matter
    kept = drop_warmup(df, 2)
    assert sorted(kept["duration_ns"]) == [3, 4, 5, 8, 9]
    half = drop_warmup(df, "half")  # floor(5 / 2) = 2 and 4 / 2 = 2 dropped
    assert sorted(half["duration_ns"]) == [3, 4, 5, 8, 9]
    assert len(drop_warmup(df, 0)) == 9
    assert len(drop_warmup(df, 10)) == 0


def test_warmup_half_keeps_the_larger_half_of_odd_series() -> None:
    kept = drop_warmup(table(series([1, 2, 3])), "half")
    assert kept["duration_ns"].tolist() == [2, 3]


@pytest.mark.parametrize("bad", [-1, "third", 1.5, True])
def test_warmup_rejects_nonsense(bad: object) -> None:
    with pytest.raises(AnalysisError):
        drop_warmup(table(series([1, 2, 3])), bad)  # type: ignore[arg-type]


def test_warmup_none_drops_the_rows_the_table_marks() -> None:
    """``None`` ("config") is the config's warm-up: the rows of the ``warmup`` column."""
    df = table(series([1, 2, 3, 4]))
    assert drop_warmup(df, None).equals(df)  # nothing marked: nothing dropped
    df["warmup"] = [True, True, False, False]
    assert drop_warmup(df, None)["duration_ns"].tolist() == [3, 4]


def test_compare_drops_the_marked_warmup_unless_told_otherwise() -> None:
    """`duet compare`'s default (the config's warm-up) is the library's: ``warmup=None``."""
    from duetbench.analysis import compare
    from duetbench.analysis.simulate import simulate

    df = simulate(benchmarks=1, methods=("seqn", "sduet"), runs=5, iterations=8, seed=3)
    df["warmup"] = df["iteration"] < 3
    dropped = df.loc[~df["warmup"]].drop(columns="warmup")
    assert compare(df).equals(compare(dropped, warmup=0))
    assert compare(df, warmup=2).equals(compare(df.drop(columns="warmup"), warmup=2))


def test_winsorize_vectorized_matches_a_plain_reading_of_the_rule() -> None:
    rng = np.random.default_rng(3)
    parts, expected = [], []
    for run in range(60):
        n = int(rng.integers(1, 12))
        d = (rng.integers(100, 130, n) + (rng.random(n) < 0.2) * rng.integers(0, 60, n)).tolist()
        parts.append(series(d, run=run))
        x = list(d)
        if n >= 3:
            s = sorted(x)
            hi_ex, hi_rng = s[-1] - s[-2], s[-2] - s[0]
            lo_ex, lo_rng = s[1] - s[0], s[-1] - s[1]
            if hi_ex >= lo_ex:
                if hi_ex > 0.2 * hi_rng:
                    x[x.index(s[-1])] = s[-2]
            elif lo_ex > 0.2 * lo_rng:
                x[x.index(s[0])] = s[1]
        expected.extend(x)
    out = winsorize(table(*parts))
    assert out["duration_ns"].tolist() == expected
