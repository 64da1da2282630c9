"""Anytime-valid intervals over a growing sequence of run-level values.

Works on many sequences at once (rows of a 2-D array, one column per run in the order
the runs were done): the scheduler's single benchmark is a 1 x n array, the study's
thousands of simulated experiments are E x 50. Every function is vectorized over rows
and over looks, so the product's decision and the simulation use the same code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from duetbench.errors import AnalysisError

from ..analysis.distributions import t_ppf
from .boundaries import (
    group_sequential_multiplier,
    mixture_precision,
    normal_mixture_multiplier,
    t_mixture_multiplier,
)
from .guards import (
    SERIAL_FIRST_CHECK,
    Guard,
    ShapePrior,
    guard,
    lag1_autocorrelation,
    serial_threshold,
    skewed_bounds,
    strong_skew,
)

__all__ = [
    "SERIAL_FIRST_CHECK",
    "Design",
    "Intervals",
    "intersect_looks",
    "lag1_autocorrelation",
    "look_multipliers",
    "planned_looks",
    "running_intervals",
    "serial_threshold",
    "strong_skew",
]


class Design(StrEnum):
    """How the interval is kept valid under optional stopping."""

    SEQUENCE = "sequence"  # t-mixture confidence sequence: no maximum needed
    GROUP = "group"  # group-sequential, O'Brien-Fleming-type spending over max_runs
    # precision goals only: the stop depends on the spread, never on the estimate
    WIDTH = "width"  # Student-t interval widened by WIDTH_INFLATION, from WIDTH_FIRST_LOOK
    # comparisons for the study only (not valid or not anytime-valid):
    ASYMPTOTIC = "asymptotic"  # normal mixture with the estimated SD plugged in
    NAIVE = "naive"  # fixed-n Student-t interval looked at after every run

    @property
    def intersects(self) -> bool:
        """Whether the intervals of successive looks may be intersected: only where the
        coverage is simultaneous over all looks."""
        return self in (Design.SEQUENCE, Design.GROUP, Design.ASYMPTOTIC)


#: Design ``width``: the Student-t multiplier times this. A stop on the interval's width
#: comes when the spread happens to look small, so the plain t interval covers less than
#: its level there (89-92 % in the seeded simulation); 1.25 keeps every noise model at
#: 95 % or more with a look after every run (docs/adaptive.md, "The designs").
WIDTH_INFLATION = 1.25
#: ... and its first look, whatever ``min_runs`` says: from 3 runs the widened interval
#: still covered only 92-94 % under slow drift.
WIDTH_FIRST_LOOK = 5


@dataclass(frozen=True, eq=False)
class Intervals:
    """Interval of the mean run value after each run (arrays rows x runs, log scale).

    ``low``/``high`` are the running intersection of the intervals of all looks so far
    (valid because the coverage is simultaneous over looks); ``mean``/``sd`` the plain
    estimates from the first ``n`` runs; ``looked`` marks the looks.
    """

    mean: np.ndarray
    sd: np.ndarray
    low: np.ndarray
    high: np.ndarray
    looked: np.ndarray  # (runs,) bool
    #: lag-1 autocorrelation of the first n run values (NaN below SERIAL_FIRST_CHECK)
    serial_r: np.ndarray | None = None
    #: the variance factor the interval was widened by for serial correlation (1: none)
    inflation: np.ndarray | None = None
    #: the guards behind it (guards.guard; None: no guards, the study's comparisons)
    guard: Guard | None = None

    @property
    def runs(self) -> np.ndarray:
        return np.arange(1, self.mean.shape[1] + 1)


def planned_looks(max_runs: int, groups: int, min_runs: int = 2) -> list[int]:
    """Run counts of ``groups`` equally spaced analyses up to ``max_runs`` (from ``min_runs``)."""
    ends = {math.ceil(max_runs * k / groups) for k in range(1, groups + 1)}
    return sorted(n for n in ends if n >= max(min_runs, 2))


def look_multipliers(
    design: Design | str,
    runs: int,
    *,
    confidence: float = 0.95,
    min_runs: int = 2,
    max_runs: int | None = None,
    tuned_for: int = 10,
    groups: int | None = None,
    looks: Sequence[int] | None = None,
) -> np.ndarray:
    """Multiplier ``m`` of ``mean +- m s / sqrt(n)`` for ``n = 1..runs`` (inf: no look).

    ``looks``: the run counts at which the data were looked at (default: after every
    run from ``min_runs`` on). The group-sequential design needs ``max_runs``; with
    ``groups`` it analyses only at that many planned points (each taken at the first
    look at or after it), else at every look.
    """
    d = Design(design)
    n = np.arange(1, runs + 1)
    seen = n[n >= max(min_runs, 2)] if looks is None else np.asarray(sorted(set(looks)), np.int64)
    seen = seen[(seen >= 2) & (seen <= runs)]
    if d is Design.GROUP:
        if max_runs is None:
            raise AnalysisError("the group-sequential design needs a maximum number of runs")
        if groups is not None:
            planned = planned_looks(max_runs, groups, min_runs)
            taken = {int(seen[seen >= p][0]) for p in planned if (seen >= p).any()}
            seen = np.asarray(sorted(taken), dtype=np.int64)
        look_n = seen[seen <= max_runs]
        out = np.full(runs, np.inf)
        if len(look_n):
            out[look_n - 1] = group_sequential_multiplier(look_n.tolist(), max_runs, confidence)
        return out
    if d is Design.WIDTH:
        seen = seen[seen >= WIDTH_FIRST_LOOK]
    looked = np.isin(n, seen)
    if d in (Design.NAIVE, Design.WIDTH):
        mult = np.full(runs, np.inf)
        mult[1:] = t_ppf(0.5 + confidence / 2.0, n[1:] - 1.0)
        if d is Design.WIDTH:
            mult = mult * WIDTH_INFLATION
    else:
        phi = mixture_precision(tuned_for, confidence)
        fn = t_mixture_multiplier if d is Design.SEQUENCE else normal_mixture_multiplier
        mult = fn(n, confidence, phi)
    return np.where(looked, mult, np.inf)


def prefix_moments(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SD (ddof 1; NaN for n = 1) of the first n values of every row."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise AnalysisError("run values must be a 2-D array (sequences x runs)")
    if not np.isfinite(v).all():
        raise AnalysisError("run values must be finite numbers (log ratios of each run)")
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    centred = v - v[:, :1]  # shifting by the first value keeps the sums exact enough
    s1 = np.cumsum(centred, axis=1)
    s2 = np.cumsum(centred * centred, axis=1)
    mean = s1 / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(s2 - s1 * mean, 0.0) / (n - 1.0)
    var[:, 0] = np.nan
    return mean + v[:, :1], np.sqrt(var)


def running_intervals(
    values: np.ndarray,
    multipliers: np.ndarray,
    *,
    intersect: bool = True,
    serial: bool = True,
    history: ShapePrior | Sequence[ShapePrior] | None = None,
) -> Intervals:
    """Intervals after every run with the given per-``n`` multipliers.

    ``intersect``: keep the running intersection over looks (valid for simultaneous
    intervals; ``False`` only to show what naive peeking does). ``serial``: apply the
    guards (:func:`duetbench.adaptive.guards.guard`): the variance widened for serial
    correlation by what the runs (and ``history``, a repository's shape prior) say,
    the side toward a long tail widened for skew. ``False`` only to show what the guards
    change (the study's comparisons).
    """
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    mean, sd = prefix_moments(v)
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    mult = np.asarray(multipliers, dtype=np.float64)[: v.shape[1]]
    looked = np.isfinite(mult)
    g = guard(v, history) if serial else None
    factor = g.factor if g is not None else np.ones(v.shape)
    with np.errstate(invalid="ignore"):
        se = sd * np.sqrt(factor) / np.sqrt(n)
    se = np.where(np.isnan(se), np.inf, se)  # n = 1: no spread yet
    if g is not None:
        low, high = skewed_bounds(mean, se, mult, g.skew)
    else:
        with np.errstate(invalid="ignore"):
            half = np.where(looked, mult * se, np.inf)
        low, high = mean - half, mean + half
    low, high = intersect_looks(low, high, intersect)
    r = g.serial_r if g is not None else np.full(v.shape, np.nan)
    return Intervals(mean, sd, low, high, looked, r, factor, g)


def intersect_looks(
    low: np.ndarray, high: np.ndarray, intersect: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The running intersection of the intervals of all looks so far (``intersect``),
    kept a point where it becomes empty (a sequence badly off)."""
    if intersect:
        low = np.maximum.accumulate(low, axis=1)
        high = np.minimum.accumulate(high, axis=1)
    crossed = low > high
    if crossed.any():
        with np.errstate(invalid="ignore"):  # (-inf + inf) where no look yet: not crossed
            mid = (low + high) / 2.0
        low = np.where(crossed, mid, low)
        high = np.where(crossed, mid, high)
    return low, high
