"""Preprocessing filters (docs/statistics.md, "Overlaps, pairing, filters: details"): warm-up removal and winsorization."""

from __future__ import annotations

import numpy as np
import pandas as pd

from duetbench.options import Warmup, check_warmup

from ._segments import sort_segments
from ._table import Iterations

#: The winsorization rule of the duet paper (appendix 7.1): 20 % of the range.
WINSOR_FRACTION = 0.2


def drop_marked_warmup(df: pd.DataFrame) -> pd.DataFrame:
    """The rows the table does not mark as warm-up (its ``warmup`` column: the config's
    ``warmup:``, set by `duet process`); the table itself when it has no such column."""
    if "warmup" not in df.columns:
        return df
    return df.loc[~df["warmup"].fillna(False).astype(bool).to_numpy()]


def warmup_mask(it: Iterations, warmup: Warmup) -> np.ndarray:
    """True for the rows kept after dropping the first ``warmup`` iterations per series
    (``None``: the rows the table marks as warm-up)."""
    warmup = check_warmup(warmup)
    if warmup is None:
        if it.warmup is None:
            return np.ones(len(it.unit), dtype=bool)
        return ~it.warmup
    if warmup == 0:
        return np.ones(len(it.unit), dtype=bool)
    pos, length = it.position_in_series()
    if warmup == "half":
        return pos >= length // 2
    return pos >= warmup


def winsorized_durations(it: Iterations) -> tuple[np.ndarray, np.ndarray]:
    """Winsorized durations (int64) and a mask of the replaced rows.

    Per (run, side) series of at least 3 values: of the minimum and the maximum, take
    the one lying farther outside the range of the other values (the maximum on a
    tie); if it lies more than 20 % of that range beyond it, replace it with its
    nearest neighbour (the second smallest / largest value). At most one replacement
    per series.
    """
    dur = it.duration
    replaced = np.zeros(len(dur), dtype=bool)
    starts, lengths = it.series_bounds()
    ok = lengths >= 3
    if not np.any(ok):
        return dur.copy(), replaced
    srt = sort_segments(dur, starts, lengths)
    s, n = starts[ok], lengths[ok]
    x0, x1 = srt[s], srt[s + 1]
    xl, xl2 = srt[s + n - 1], srt[s + n - 2]
    excess_hi, range_hi = xl - xl2, xl2 - x0
    excess_lo, range_lo = x1 - x0, xl - x1
    use_hi = excess_hi >= excess_lo
    excess = np.where(use_hi, excess_hi, excess_lo).astype(np.float64)
    rng = np.where(use_hi, range_hi, range_lo).astype(np.float64)
    hit = excess > WINSOR_FRACTION * rng
    if not np.any(hit):
        return dur.copy(), replaced
    target = np.where(use_hi, xl, x0)[hit]  # the value to replace (unique: excess > 0)
    repl = np.where(use_hi, xl2, x1)[hit]
    seg_of_row = np.repeat(np.arange(len(starts)), lengths)
    series_idx = np.flatnonzero(ok)[hit]
    tgt_full = np.full(len(starts), -1, dtype=dur.dtype)
    rep_full = np.zeros(len(starts), dtype=dur.dtype)
    has = np.zeros(len(starts), dtype=bool)
    tgt_full[series_idx] = target
    rep_full[series_idx] = repl
    has[series_idx] = True
    rows = has[seg_of_row] & (dur == tgt_full[seg_of_row])
    out = dur.copy()
    out[rows] = rep_full[seg_of_row][rows]
    replaced[rows] = True
    return out, replaced


def drop_warmup(df: pd.DataFrame, warmup: Warmup) -> pd.DataFrame:
    """Drop the first ``warmup`` iterations of every (run, pair) series.

    ``warmup`` is a number of iterations, ``"half"`` (the first half, rounded down,
    as the thesis does for JVM suites), 0 (keep everything) or ``None`` (the rows the
    table marks as warm-up, :func:`drop_marked_warmup`). Iterations are ordered by
    their ``iteration`` index; the original row order is kept.
    """
    warmup = check_warmup(warmup)
    if warmup is None:
        return drop_marked_warmup(df).copy()
    if warmup == 0:
        return df.copy()
    it = Iterations.from_frame(df)
    keep = np.sort(it.row[warmup_mask(it, warmup)])
    return df.iloc[keep].copy()


def winsorize(df: pd.DataFrame) -> pd.DataFrame:
    """Winsorize ``duration_ns`` per (run, pair) series (duet paper, appendix 7.1).

    Returns a copy with at most one duration per series replaced by its nearest
    neighbour (rule in :func:`winsorized_durations`) and a boolean column
    ``winsorized`` marking the replaced rows. Timestamps are left as they were.
    """
    it = Iterations.from_frame(df)
    new, replaced = winsorized_durations(it)
    out = df.copy()
    dur = out["duration_ns"].to_numpy(dtype=np.int64).copy()
    dur[it.row] = new
    flag = np.zeros(len(df), dtype=bool)
    flag[it.row] = replaced
    out["duration_ns"] = dur
    out["winsorized"] = flag
    return out
