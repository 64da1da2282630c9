"""Run-level values: every run summarized by one value of its pairs (docs/statistics.md, "The two CI tests").

A run's value is its run statistic (median, mean, 10 % trimmed mean) of the pairs'
log ratios (ratio test) or differences (difference test), the comparison of the two
sides' minima (``min``), or of their paired iterations' totals (``means``: the log of
the ratio of the mean durations, weighted by time; docs/statistics.md, "Run
statistics beside other work"). ``auto`` (the default of `duet compare`) is the
median, and ``means`` for the duet runs of a benchmark that ran beside other work (the
table's ``other_work`` column). Runs are then the unit of every interval and test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duetbench.errors import AnalysisError

from ._segments import (
    bounds_from_codes,
    segment_mean,
    segment_median,
    segment_trimmed_mean,
    sort_segments,
)
from ._table import SIDE_A, SIDE_B, Iterations
from .pairing import Pairs

TRIM = 0.1  # the trimmed mean cuts 10 % at each end


@dataclass(frozen=True, eq=False)
class RunValues:
    """Run-level values: one per unit with at least one pair."""

    unit: np.ndarray  # unit code
    value: np.ndarray  # statistic of the run's log ratios or differences
    a_level: np.ndarray  # statistic of the run's paired A durations (for diff scaling)
    pairs: np.ndarray  # pairs per run
    #: run_stat ``auto``: True where the run's value is ``means`` (else the median)
    by_means: np.ndarray | None = None

    def subset(self, mask: np.ndarray) -> RunValues:
        by_means = None if self.by_means is None else self.by_means[mask]
        return RunValues(
            self.unit[mask], self.value[mask], self.a_level[mask], self.pairs[mask], by_means
        )


def _run_stat(x: np.ndarray, starts: np.ndarray, lens: np.ndarray, how: str) -> np.ndarray:
    if how == "mean":
        return segment_mean(x, starts, lens, tiles=True)
    srt = sort_segments(x, starts, lens)
    if how == "median":
        return segment_median(srt, starts, lens)
    return segment_trimmed_mean(srt, starts, lens, TRIM)


def run_values(it: Iterations, p: Pairs, test: str, run_stat: str) -> RunValues:
    """Summarize the pairs of every run (docs/statistics.md, "Pipeline and defaults", step 5)."""
    if run_stat == "auto":
        med = run_values(it, p, test, "median")
        by_means = beside_other_work(it, med.unit)
        if it.measure is not None and len(med.unit):  # CPU time is not time-sliced
            by_means &= ~it.measure.unit_cpu[med.unit]
        if not by_means.any():
            return RunValues(med.unit, med.value, med.a_level, med.pairs, by_means)
        means = run_values(it, p, test, "means")  # the same units, in the same order
        return RunValues(
            med.unit,
            np.where(by_means, means.value, med.value),
            np.where(by_means, means.a_level, med.a_level),
            med.pairs,
            by_means,
        )
    a = it.duration[p.a].astype(np.float64)
    b = it.duration[p.b].astype(np.float64)
    if test == "ratio" and len(a) and (a.min() <= 0 or b.min() <= 0):
        raise AnalysisError(_non_positive_message(it, p, a, b))
    starts, lens = bounds_from_codes(p.unit)
    units = p.unit[starts] if len(starts) else np.zeros(0, dtype=np.int64)
    if run_stat == "min":
        # Chen & Revels' minimum is a location of each side's times, not of the
        # pairs' ratios: the run value compares the two sides' minima.
        a_min = np.minimum.reduceat(a, starts) if len(starts) else np.zeros(0)
        b_min = np.minimum.reduceat(b, starts) if len(starts) else np.zeros(0)
        value = np.log(b_min / a_min) if test == "ratio" else b_min - a_min
    elif run_stat == "means":
        # each side's mean over all its iterations in the run, not only the paired ones:
        # interference that slows whichever side runs beside it for part of the run
        # averages out by time, where each pair's log ratio weighs a short, much-slowed
        # iteration like a long one, and the overlap filter keeps pairs by their lengths
        a_mean = _side_mean(it, SIDE_A, units)
        b_mean = _side_mean(it, SIDE_B, units)
        value = np.log(b_mean / a_mean) if test == "ratio" else b_mean - a_mean
    else:
        value = _run_stat(np.log(b / a) if test == "ratio" else b - a, starts, lens, run_stat)
    if test == "ratio":
        a_level = np.ones(len(units))  # the ratio is relative already
    elif run_stat == "min":
        a_level = a_min
    elif run_stat == "means":
        a_level = a_mean
    else:
        a_level = _run_stat(a, starts, lens, run_stat)
    # canonical order (by run key), so resampling does not depend on the row order
    order = np.argsort(it.unit_rank[units], kind="stable")
    return RunValues(units[order], value[order], a_level[order], lens[order])


def beside_other_work(it: Iterations, units: np.ndarray) -> np.ndarray:
    """Per unit of ``units``: a duet run of a benchmark (suite, benchmark, method) some of
    whose runs had other work beside them (``other_work``), which ``auto`` summarizes
    by ``means`` (docs/statistics.md, "Run statistics beside other work")."""
    if it.other_work is None or not len(units) or not it.other_work.any():
        return np.zeros(len(units), dtype=bool)
    busy_unit = np.bincount(it.unit[it.other_work], minlength=it.n_units) > 0
    keys = [c for c in ("suite", "benchmark", "method") if c in it.units.columns]
    group = it.units.groupby(keys, sort=False, observed=True).ngroup().to_numpy()
    busy_group = np.bincount(group[busy_unit], minlength=int(group.max()) + 1) > 0
    duet = it.units["method"].astype(str).isin(("aduet", "sduet")).to_numpy()
    return (busy_group[group] & duet)[units]


def _side_mean(it: Iterations, side: int, units: np.ndarray) -> np.ndarray:
    """Per unit of ``units``: the mean duration of one side's iterations."""
    if not len(units):
        return np.zeros(0)
    mask = it.side == side
    u = it.unit[mask]
    size = int(max(u.max(initial=0), units.max())) + 1
    total = np.bincount(u, weights=it.duration[mask].astype(np.float64), minlength=size)
    count = np.bincount(u, minlength=size)
    return total[units] / np.maximum(count[units], 1)


def _non_positive_message(it: Iterations, p: Pairs, a: np.ndarray, b: np.ndarray) -> str:
    """Where the first zero or negative duration of a ratio test is, and what to do."""
    bad = np.flatnonzero((a <= 0) | (b <= 0))
    first = int(bad[0])
    row = p.a[first] if a[first] <= 0 else p.b[first]
    key = it.units.iloc[int(it.unit[row])]
    where = ", ".join(f"{c} {key[c]}" for c in it.unit_columns if str(key[c]) != "")
    side = "A" if a[first] <= 0 else "B"
    return (
        f"the ratio test needs positive durations, but {len(bad)} pair(s) have "
        f"duration_ns <= 0, first {where}, pair {side}, iteration {it.iteration[row]} "
        f"({it.duration[row]} ns); drop those iterations or use the difference test "
        "(--test diff)"
    )


def sparse_runs(pairs: np.ndarray, group: np.ndarray, n_groups: int, share: float) -> np.ndarray:
    """Runs that carry far less information than the other runs of their group.

    True where a run has fewer pairs than ``share`` times the median pairs per run
    of its group (``share = 0``: none). A run value from 2 pairs is much noisier
    than one from 30, yet the interval over runs counts every run once; leaving such
    runs out kept the false-alarm rate at its nominal level and cut the error of
    the estimate by a third where a side of some runs stopped early
    (docs/statistics.md, "Runs with few pairs").
    """
    if share <= 0.0 or len(pairs) == 0:
        return np.zeros(len(pairs), dtype=bool)
    order = np.lexsort((pairs, group))
    starts, lens = bounds_from_codes(group[order])
    med = np.full(n_groups, np.nan)
    med[group[order][starts]] = segment_median(pairs[order].astype(np.float64), starts, lens)
    return pairs < share * med[group]
