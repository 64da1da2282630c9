"""Run-level values and pair log ratios from an iterations table.

The same pipeline as :func:`duetbench.analysis.compare` (warm-up filter, pairing --
by iteration index for seqn and sduet, by overlap for aduet --, the run statistic of
each run's pair log ratios), returned per run instead of per group, so that the
stopping rule sees exactly the values the fixed analysis would average.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from duetbench.options import CompareOptions

from ._table import Iterations
from .compare import filtered, run_values
from .pairing import pair_rows

__all__ = ["PairedRuns", "paired_runs", "run_level_values"]

KEY = ("suite", "benchmark", "method")


@dataclass(frozen=True, eq=False)
class PairedRuns:
    """Per run: its key, value and pairs; per pair: its run's position and log ratio."""

    runs: pd.DataFrame  # suite, benchmark, method, host, run, value, pairs (canonical order)
    pair_run: np.ndarray  # index into ``runs`` of every pair
    log_ratio: np.ndarray  # log(d_B / d_A) of every pair


def _drop_marked_warmup(df: pd.DataFrame) -> pd.DataFrame:
    if "warmup" in df.columns:
        return df.loc[~df["warmup"].fillna(False).astype(bool).to_numpy()]
    return df


def paired_runs(
    df: pd.DataFrame,
    *,
    run_stat: str = "median",
    warmup: int | str = 0,
    min_overlap: float = 0.4,
    measure: str = "auto",
) -> PairedRuns:
    """Pairs and run values of every run (rows marked ``warmup`` in the table are dropped;
    ``measure``: wall or CPU time, docs/statistics.md, "Beside other work: CPU time")."""
    opts = CompareOptions.create(
        run_stat=run_stat, warmup=warmup, min_overlap=min_overlap, measure=measure
    )
    it = Iterations.from_frame(_drop_marked_warmup(df), extra_unit_columns=list(KEY))
    itf = filtered(it, opts)
    pairs = pair_rows(itf, opts.min_overlap)
    rv = run_values(itf, pairs, "ratio", opts.run_stat)
    keys = itf.units.iloc[rv.unit].reset_index(drop=True)
    cols = [c for c in ("suite", "benchmark", "method", "host", "run") if c in keys.columns]
    runs = keys[cols].copy()
    runs["value"] = rv.value
    runs["pairs"] = rv.pairs
    position = np.full(itf.n_units, -1, dtype=np.int64)
    position[rv.unit] = np.arange(len(rv.unit))
    a = itf.duration[pairs.a].astype(np.float64)
    b = itf.duration[pairs.b].astype(np.float64)
    return PairedRuns(runs, position[pairs.unit], np.log(b / a))


def run_level_values(
    df: pd.DataFrame,
    *,
    run_stat: str = "median",
    warmup: int | str = 0,
    min_overlap: float = 0.4,
    by: Sequence[str] = KEY,
    measure: str = "auto",
) -> dict[tuple[object, ...], np.ndarray]:
    """Run values (log ratios) of every ``by`` group, in run order (what :func:`decide` takes)."""
    runs = paired_runs(
        df, run_stat=run_stat, warmup=warmup, min_overlap=min_overlap, measure=measure
    ).runs
    runs = runs.sort_values([*by, "run"], kind="stable")
    return {
        (key if isinstance(key, tuple) else (key,)): grp["value"].to_numpy()
        for key, grp in runs.groupby(list(by), sort=True, observed=True)
    }
