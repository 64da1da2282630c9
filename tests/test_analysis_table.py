"""The iterations table as arrays: row order never matters, duplicates are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from duetbench.analysis import compare
from duetbench.analysis._table import Iterations
from duetbench.analysis.simulate import simulate
from duetbench.errors import AnalysisError


def _rows(it: Iterations) -> pd.DataFrame:
    """The converted rows by run key (unit codes follow the order of first appearance)."""
    key = it.units.iloc[it.unit].astype(str).agg("/".join, axis=1).to_numpy()
    out = pd.DataFrame(
        {"key": key, "side": it.side, "iteration": it.iteration, "duration": it.duration}
    )
    # within a unit the rows must already be in (side, iteration) order
    assert (
        out.groupby("key", sort=False)
        .apply(lambda g: g[["side", "iteration"]].apply(tuple, axis=1).is_monotonic_increasing)
        .all()
    )
    return out.sort_values(["key", "side", "iteration"], kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return simulate(benchmarks=3, runs=4, iterations=6, slowdown=0.05, seed=3)


@pytest.mark.parametrize(
    "reorder",
    [
        pytest.param(lambda df: df.sample(frac=1.0, random_state=1), id="shuffled"),
        pytest.param(lambda df: df.iloc[::-1], id="reversed"),
        pytest.param(
            lambda df: df.sort_values(
                ["benchmark", "method", "run", "pair"], ascending=[1, 1, 1, 0]
            ),
            id="B-series-first",
        ),
        pytest.param(
            lambda df: (
                df.sort_values(["benchmark", "method", "run", "pair", "iteration"])
                .groupby(["benchmark", "method", "run", "pair"], group_keys=False)[
                    df.columns.tolist()
                ]
                .apply(lambda g: g.iloc[::-1])
            ),
            id="iterations-descending",
        ),
    ],
)
def test_any_row_order_gives_the_same_table_and_verdicts(table: pd.DataFrame, reorder) -> None:
    base = Iterations.from_frame(table)
    other_df = reorder(table).reset_index(drop=True)
    other = Iterations.from_frame(other_df)
    pd.testing.assert_frame_equal(_rows(base), _rows(other))
    # every converted row points back at its source row
    for df, it in ((table, base), (other_df, other)):
        assert np.array_equal(df["duration_ns"].to_numpy()[it.row], it.duration)
        assert np.array_equal(df["iteration"].to_numpy()[it.row], it.iteration)
    opts = dict(test="diff", interval="bca", resamples=499, seed=5)
    pd.testing.assert_frame_equal(compare(table, **opts), compare(other_df, **opts))


def test_the_same_iteration_twice_is_refused(table: pd.DataFrame) -> None:
    dup = pd.concat([table, table.iloc[[7]]], ignore_index=True)
    with pytest.raises(AnalysisError, match="same iteration twice"):
        Iterations.from_frame(dup)
    # also when the duplicate is adjacent to its twin (an already-sorted looking table)
    adjacent = pd.concat([table.iloc[:8], table.iloc[[7]], table.iloc[8:]], ignore_index=True)
    with pytest.raises(AnalysisError, match="same iteration twice"):
        Iterations.from_frame(adjacent)


@pytest.mark.parametrize(
    "dtype", ["str", "string[pyarrow]", "object", "category", "large_string[pyarrow]"]
)
def test_change_rows_of_text_columns_in_every_storage(dtype: str) -> None:
    """Rows whose key differs from the row before (two missing values in a row may
    count as a change or not: either way the stretch gets one code)."""
    from duetbench.analysis._table import _change_rows

    values = ["a", "a", "b", None, None, "b", "b", "ab", "a", "a"]
    s = pd.Series(values, dtype=dtype)
    got = set(_change_rows(s).tolist())
    assert {2, 3, 5, 7, 8} <= got <= {2, 3, 4, 5, 7, 8}
    assert _change_rows(s.iloc[:1]).tolist() == []


@pytest.mark.parametrize("dtype", ["int64", "Int64", "float64", "int64[pyarrow]"])
def test_change_rows_of_numeric_columns(dtype: str) -> None:
    from duetbench.analysis._table import _change_rows

    s = pd.Series([0, 0, 1, 1, 1, 2, 0, 0], dtype=dtype)
    assert _change_rows(s).tolist() == [2, 5, 6]


def test_ratio_test_names_the_first_non_positive_duration() -> None:
    df = simulate(benchmarks=["fib", "json"], methods=("seqn", "aduet"), runs=3, seed=5)
    target = (df.benchmark == "json") & (df.method == "seqn") & (df.run == 2) & (df.pair == "B")
    df.loc[df.index[target][4], "duration_ns"] = 0
    with pytest.raises(AnalysisError) as err:
        compare(df)
    msg = str(err.value)
    assert "benchmark json, method seqn, run 2, pair B, iteration 4 (0 ns)" in msg
    assert "--test diff" in msg
    # the difference test takes it: every group judged (an A/A simulation: no change), the
    # 0 ns iteration counted in B's mean
    res = compare(df, test="diff").set_index(["benchmark", "method"])
    assert res["verdict"].tolist() == ["no change detected"] * 4
    assert (res["runs"] == 3).all() and (res["pairs"] == 90).all()
    b = df[(df.benchmark == "json") & (df.method == "seqn") & (df.pair == "B")]
    assert res.loc[("json", "seqn"), "mean_b_ns"] == pytest.approx(b["duration_ns"].mean())
