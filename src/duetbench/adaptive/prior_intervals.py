"""Stopping with a prior spread from earlier experiments (docs/adaptive.md, "Stopping
with the repository's priors").

A results repository knows the spread of a benchmark x method's run values on this
host from its earlier experiments (:class:`.prior.Prior`, computed by
:func:`duetbench.history.priors`): ``s0`` with ``df0`` degrees of freedom, each
experiment's own mean removed. When the current runs are as
noisy as those were, the spread need not be learned afresh, and the interval after
``n`` runs pools both:

    s_p^2 = (w s0^2 + (n - 1) s_n^2) / (w + n - 1),   df = w + n - 1,
    w = min(df0, PRIOR_WEIGHT (n - 1))

- **precise** (design ``width``): ``mean +- t_df s_p / sqrt(n) * c_n`` with the widening
  ``c_n = 1 + (WIDTH_INFLATION - 1) (n - 1) / df``: the stop depends on the spread, and
  only on the current runs' share of it, so the widening that protects the no-prior
  rule (a stop comes when the spread happens to look small) shrinks with that share;
  looks from :data:`PRIOR_FIRST_LOOK` runs.
- **decided** (designs ``sequence``/``group``): the normal-mixture confidence sequence
  (the group design's normal boundary) with ``s_p`` in place of the unknown SD, times
  ``t_df / z`` for what ``s_p`` still does not know; intersected over looks.

**The check.** Every look from :data:`PRIOR_FIRST_CHECK` runs tests whether the current
runs are noisier than the prior said: ``F = s_n^2 / s0^2`` against the F distribution
with ``(n - 1, df0)`` degrees of freedom, one-sided at :data:`PRIOR_ALPHA`. From the
first look that rejects, the prior is dropped for good: the interval is the no-prior
rule's (its own looks, its own intersection), and the decision says so. A quieter
machine than before is not a reason to drop it (the pooled interval is then
conservative: coverage kept, runs spent). Before the check has the power to see a
noisier machine, the prior's weight is bounded (:data:`PRIOR_WEIGHT`), so the current
runs' spread always moves the pooled one. The guards for serial correlation and skew
widen the interval as they widen the no-prior rule's (``guards.guard``); the prior's
``shape`` (the earlier runs' serial correlation and skew) is the guards' prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.distributions import f_sf, norm_ppf, t_ppf
from .boundaries import mixture_precision, normal_mixture_multiplier
from .guards import Guard, ShapePrior, skewed_bounds
from .prior import Prior
from .sequential import WIDTH_INFLATION, Design, Intervals, prefix_moments

__all__ = [
    "PRIOR_ALPHA",
    "PRIOR_FIRST_CHECK",
    "PRIOR_FIRST_LOOK",
    "PriorIntervals",
    "prior_intervals",
    "prior_text",
]

#: one-sided level of the check "the current runs are noisier than the prior", at every
#: look
PRIOR_ALPHA = 0.05
#: the prior counts as at most this many times the current runs' degrees of freedom: a
#: machine noisier than before then still pulls the pooled spread up by a fifth of the
#: difference or more, before the check has the power to see it
PRIOR_WEIGHT = 4
#: ... made from this many current runs on (2 runs give a spread of 1 df)
PRIOR_FIRST_CHECK = 3
#: the first look of a precision goal with a prior (the spread is known: no need to
#: wait for 5 runs as the no-prior width design does; the check needs 3)
PRIOR_FIRST_LOOK = 3


@dataclass(frozen=True, eq=False)
class PriorIntervals:
    """The intervals with the prior where it held, the no-prior rule's from the look
    that dropped it. ``dropped``: per row and run, the prior is no longer used;
    ``check_p``: the check's p-value at each run (NaN before PRIOR_FIRST_CHECK);
    ``sd``: the spread the interval used (pooled, or the current runs' own)."""

    intervals: Intervals
    dropped: np.ndarray
    check_p: np.ndarray
    sd: np.ndarray


def prior_intervals(
    values: np.ndarray,
    prior: Prior,
    design: Design,
    plain: Intervals,
    *,
    confidence: float,
    first_look: int,
    tuned_for: int = 10,
    looks: np.ndarray | None = None,
    sd0: np.ndarray | None = None,
) -> PriorIntervals:
    """Intervals after every run of every row of ``values`` using ``prior`` (module doc).

    ``plain``: the no-prior rule's intervals of the same values (what a dropped prior
    falls back to); ``looks``: per run, whether the rule looks there (default: every
    run from ``first_look``); ``design``: the rule's resolved design; ``sd0``: per row, a
    prior SD in place of ``prior.sd`` (the simulation: each experiment its own prior).
    """
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    rows, runs = v.shape
    n = np.arange(1, runs + 1, dtype=np.float64)
    mean, sd = prefix_moments(v)
    s0 = np.full((rows, 1), float(prior.sd)) if sd0 is None else np.reshape(sd0, (rows, 1))
    df0 = float(prior.df)
    cur_var = np.nan_to_num(sd * sd, nan=0.0)
    w = np.minimum(df0, PRIOR_WEIGHT * np.maximum(n - 1.0, 1.0))  # the prior's weight (df)
    df = w + n - 1.0
    pooled = np.sqrt((w * s0 * s0 + (n - 1.0) * cur_var) / df)
    level = 0.5 + confidence / 2.0
    t = t_ppf(level, df)
    if design is Design.WIDTH:
        mult = t * (1.0 + (WIDTH_INFLATION - 1.0) * ((n - 1.0) / df) ** 2)
    else:
        z = float(norm_ppf(level))
        phi = mixture_precision(tuned_for, confidence)
        mult = normal_mixture_multiplier(n, confidence, phi) * t / z
    looked = n >= max(first_look, 1) if looks is None else np.asarray(looks, dtype=bool)
    # the guards: widened as the no-prior rule's interval is (guards.guard)
    factor = plain.inflation if plain.inflation is not None else np.ones_like(v)
    se = pooled * np.sqrt(factor) / np.sqrt(n)
    mult = np.where(looked, mult, np.inf)
    if plain.guard is not None:
        low, high = skewed_bounds(mean, se, mult, plain.guard.skew)
    else:
        low, high = mean - mult * se, mean + mult * se
    if design.intersects:
        low = np.maximum.accumulate(low, axis=1)
        high = np.minimum.accumulate(high, axis=1)

    # the check: noisier than the prior said (F test against the prior's full df)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = f_sf(cur_var / (s0 * s0), np.maximum(n - 1.0, 1.0), df0)
    p = np.where(np.isnan(p), np.where(cur_var > 0, 0.0, 1.0), p)  # a prior SD of 0
    p = np.where(n >= PRIOR_FIRST_CHECK, p, np.nan)
    bad = np.nan_to_num(p, nan=1.0) < PRIOR_ALPHA
    dropped = np.maximum.accumulate(bad, axis=1)
    low = np.where(dropped, plain.low, low)
    high = np.where(dropped, plain.high, high)
    crossed = low > high
    if crossed.any():
        with np.errstate(invalid="ignore"):  # (-inf + inf) where no look yet: not crossed
            mid = (low + high) / 2.0
        low, high = np.where(crossed, mid, low), np.where(crossed, mid, high)
    used_sd = np.where(dropped, sd, pooled)
    iv = Intervals(
        mean, used_sd, low, high, looked | plain.looked, plain.serial_r, factor, plain.guard
    )
    return PriorIntervals(iv, dropped, p, used_sd)


def prior_text(prior: Prior, pi: PriorIntervals) -> str:
    """What a decision's explanation says about the prior (the last run of row 0)."""
    if not pi.dropped[0, -1]:
        return (
            f"; with the spread of {prior.runs or prior.df} earlier runs on this host "
            f"(sd {float(prior.sd or 0.0) * 100:.2f} %, {prior.df} df)"
        )
    where = int(np.argmax(pi.dropped[0])) + 1
    p = pi.check_p[0, where - 1]
    return (
        f"; the prior spread was dropped after run {where}: these runs are noisier than "
        f"the earlier runs on this host (check p = {p:.3f}), so the interval is the "
        "no-prior rule's (docs/adaptive.md, 'Stopping with the repository's priors')"
    )


def order_text(history: ShapePrior | None, guard: Guard | None) -> str:
    """What a decision's explanation says about the repository's shape prior (the
    last run of row 0): nothing where the earlier runs were independent and these agree."""
    if history is None or guard is None:
        return ""
    if guard.dropped[0, -1]:
        where = int(np.argmax(guard.dropped[0])) + 1
        return (
            f"; these runs are more serially correlated than the {history.runs} earlier runs "
            f"on this host (from run {where}): the serial guard is the no-repository one "
            "(docs/adaptive.md, 'Assumptions, and how they are checked')"
        )
    if history.found:
        return (
            f"; widened for the serial correlation of {history.runs} earlier runs on this "
            f"host (lag-1 autocorrelation {history.r:+.2f})"
        )
    return ""
