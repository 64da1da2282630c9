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
from scipy import stats

from duetbench.errors import AnalysisError

from .boundaries import (
    group_sequential_multiplier,
    mixture_precision,
    normal_mixture_multiplier,
    t_mixture_multiplier,
)

__all__ = [
    "SERIAL_ALPHA",
    "SERIAL_FIRST_CHECK",
    "Design",
    "Intervals",
    "lag1_autocorrelation",
    "look_multipliers",
    "planned_looks",
    "running_intervals",
    "serial_inflation",
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
#: Serial correlation (docs/adaptive.md, "Assumptions, and how they are checked"): the
#: one-sided level at which each look tests the run values' lag-1 autocorrelation
#: against its null distribution at that n. A false detection only widens the interval
#: (coverage goes up, runs too); a missed one lets it be too narrow, so the level is
#: generous: A/A false alarms under AR(1) 0.5 were 9 % at 0.10, 8.3 % at 0.15 and
#: 7.3 % at 0.20 (docs/measurements/serial-correlation.md).
SERIAL_ALPHA = 0.20
#: ... from this many runs on (fewer give no usable autocorrelation)
SERIAL_FIRST_CHECK = 5
#: ... the autocorrelation used to widen is at most this (the variance of the mean 9x)
SERIAL_MAX_RHO = 0.8
#: Skew: run values whose sample skewness lies beyond this many of its standard errors
#: under normality (two-sided 1 %) from this many runs on get a note (no correction).
SKEW_Z = 2.5758293035489004
SKEW_FIRST_CHECK = 8


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
    #: the variance factor ``(1 + rho) / (1 - rho)`` the interval was widened by (1: none)
    inflation: np.ndarray | None = None

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
        mult[1:] = stats.t.ppf(0.5 + confidence / 2.0, n[1:] - 1.0)
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


def lag1_autocorrelation(values: np.ndarray) -> np.ndarray:
    """Lag-1 autocorrelation of the first n values of every row, in run order:
    ``sum_{t=2..n} (x_t - m)(x_{t-1} - m) / sum_{t=1..n} (x_t - m)^2`` with ``m`` the
    mean of the n values (NaN for n < 3 and for values without spread)."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    c = v - v[:, :1]
    s1 = np.cumsum(c, axis=1)
    s2 = np.cumsum(c * c, axis=1)
    prod = np.zeros_like(c)
    prod[:, 1:] = c[:, 1:] * c[:, :-1]
    sp = np.cumsum(prod, axis=1)
    m = s1 / n
    # sum over t = 2..n of (c_t - m)(c_{t-1} - m), from the running sums
    num = sp - m * (s1 - c[:, :1]) - m * (s1 - c) + (n - 1.0) * m * m
    den = s2 - s1 * m
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 1e-300, num / den, np.nan)
    r[:, : min(2, r.shape[1])] = np.nan
    return r


def serial_threshold(n: np.ndarray, alpha: float = SERIAL_ALPHA) -> np.ndarray:
    """The lag-1 autocorrelation above which independent run values are rejected
    (one-sided, level ``alpha``): under independence its mean is ``-1/n`` and its SD
    ``(n - 2) / (n sqrt(n - 1))`` (Moran 1948; both checked by simulation in
    tests/test_adaptive_serial.py), and it is close to normal."""
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = (n - 2.0) / (n * np.sqrt(np.maximum(n - 1.0, 1.0)))
    return -1.0 / n + float(stats.norm.ppf(1.0 - alpha)) * sd


def serial_inflation(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lag-1 autocorrelation, variance factor) after every run of every row.

    From :data:`SERIAL_FIRST_CHECK` runs on, each look tests the autocorrelation
    ``r`` (:func:`serial_threshold`). Once a look has found it, the run values count as
    ``n_eff = n (1 - rho) / (1 + rho)`` independent ones: the variance factor is
    ``(1 + rho) / (1 - rho)``, with ``rho`` the estimate corrected for its small-sample
    bias (``E r = rho - (1 + 3 rho) / n``) plus one standard error ``sqrt((1 - rho^2) /
    n)``, between 0 and :data:`SERIAL_MAX_RHO`. Before that (and never found) it is 1."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    r = lag1_autocorrelation(v)
    checked = n >= SERIAL_FIRST_CHECK
    found = checked & (np.nan_to_num(r, nan=-np.inf) > serial_threshold(n))
    ever = np.maximum.accumulate(found, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (r + 1.0 / n) / (1.0 - 3.0 / n)
        rho = rho + np.sqrt(np.maximum(1.0 - rho * rho, 0.0) / n)
    rho = np.clip(np.where(checked & np.isfinite(rho), rho, 0.0), 0.0, SERIAL_MAX_RHO)
    factor = np.where(ever, (1.0 + rho) / (1.0 - rho), 1.0)
    r = np.where(checked, r, np.nan)
    return r, factor


def running_intervals(
    values: np.ndarray, multipliers: np.ndarray, *, intersect: bool = True, serial: bool = True
) -> Intervals:
    """Intervals after every run with the given per-``n`` multipliers.

    ``intersect``: keep the running intersection over looks (valid for simultaneous
    intervals; ``False`` only to show what naive peeking does). ``serial``: check the run
    values for serial correlation and, where found, widen the interval to their
    effective number (:func:`serial_inflation`); the intersection then starts afresh at
    the look that found it, since the narrower intervals before assumed independence.
    ``False`` only to show what the check changes.
    """
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    mean, sd = prefix_moments(v)
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    mult = np.asarray(multipliers, dtype=np.float64)[: v.shape[1]]
    looked = np.isfinite(mult)
    if serial:
        r, factor = serial_inflation(v)
    else:
        r, factor = np.full(v.shape, np.nan), np.ones(v.shape)
    with np.errstate(invalid="ignore"):
        half = np.where(looked, mult * sd * np.sqrt(factor) / np.sqrt(n), np.inf)
    half = np.where(np.isnan(half), np.inf, half)  # n = 1: no spread yet
    low, high = mean - half, mean + half
    if intersect:
        widened = np.maximum.accumulate(factor > 1.0, axis=1)  # from the look that found it
        low = np.where(
            widened,
            np.maximum.accumulate(np.where(widened, low, -np.inf), axis=1),
            np.maximum.accumulate(low, axis=1),
        )
        high = np.where(
            widened,
            np.minimum.accumulate(np.where(widened, high, np.inf), axis=1),
            np.minimum.accumulate(high, axis=1),
        )
    # an intersection can become empty when a sequence is badly off; keep it a point
    crossed = low > high
    if crossed.any():
        with np.errstate(invalid="ignore"):  # (-inf + inf) where no look yet: not crossed
            mid = (low + high) / 2.0
        low = np.where(crossed, mid, low)
        high = np.where(crossed, mid, high)
    return Intervals(mean, sd, low, high, looked, r, factor)


def strong_skew(values: np.ndarray) -> float | None:
    """The sample skewness ``g1`` of ``values`` when it is strong: from
    :data:`SKEW_FIRST_CHECK` values on, beyond :data:`SKEW_Z` of its standard error under
    normality, ``sqrt(6 (n - 2) / ((n + 1) (n + 3)))``; else None."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n < SKEW_FIRST_CHECK:
        return None
    d = x - x.mean()
    m2 = float(np.mean(d * d))
    if not m2 > 0:
        return None
    g1 = float(np.mean(d**3)) / m2**1.5
    se = math.sqrt(6.0 * (n - 2) / ((n + 1) * (n + 3)))
    return g1 if abs(g1) > SKEW_Z * se else None
