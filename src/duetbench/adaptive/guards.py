"""The stopping rules' guards against run values that are not independent and symmetric
(docs/adaptive.md, "Assumptions, and how they are checked").

Works on many sequences at once (rows x runs, in run order), like :mod:`.sequential`.

**Serial correlation.** The variance of the mean of ``n`` run values with lag-1
autocorrelation ``rho`` (AR(1)) is :func:`ar1_variance_factor` times what independent
values of the same spread give. The rule does not know ``rho``: it holds a distribution
over a grid of values (:data:`RHO_GRID`) -- without a repository the prior
:data:`SERIAL_PRIOR_DEPENDENT` on "some autocorrelation", spread evenly over the grid
above 0, the rest on 0 -- and updates it after every run with the likelihood of the
runs' lag-1 autocorrelation ``r`` (from :data:`SERIAL_FIRST_CHECK` runs on). The
interval's variance is widened by the posterior :data:`SERIAL_QUANTILE` quantile of the
factor: early, when ``r`` says little, by what the prior fears; as independent runs
accumulate, less and less; where ``r`` shows correlation, by what it shows. The cost
follows the evidence instead of a yes/no test.

A repository's earlier experiments on this host (:class:`ShapePrior`, their pooled
lag-1 autocorrelation) replace the default prior: when they show no autocorrelation
beyond chance the factor is 1 from the first run; when they do, the posterior of their
runs is the prior. Either is checked at every look against the current runs (their
``r`` beyond the prior's one-sided :data:`SERIAL_HISTORY_ALPHA` point): from the first
look that rejects, the default prior is used, as without a repository.

A decision notes serial correlation only where the current runs show it beyond chance
(their ``r`` above the one-sided :data:`SERIAL_NOTE_ALPHA` point for independent values).

**Skew.** The side of the interval toward the runs' long tail is widened by Hall's
(1992) monotone cubic transformation of the t statistic, with the runs' sample
skewness shrunk toward 0 by ``n / (n + SKEW_SHRINK)`` (its small-sample estimate is
noisy) -- with a repository, pooled with the earlier runs' skewness, each weighted by
its runs; the other side is never narrowed (:func:`skewed_bounds`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = [
    "RHO_GRID",
    "SERIAL_FIRST_CHECK",
    "SERIAL_HISTORY_ALPHA",
    "SERIAL_INDEPENDENT_BELOW",
    "SERIAL_NOTE_ALPHA",
    "SERIAL_PRIOR_DEPENDENT",
    "SERIAL_QUANTILE",
    "SKEW_SHRINK",
    "Guard",
    "ShapePrior",
    "ar1_variance_factor",
    "guard",
    "guard_notes",
    "lag1_autocorrelation",
    "serial_threshold",
    "skewed_bounds",
    "strong_skew",
]

#: the lag-1 autocorrelations the rule weighs (AR(1)); beyond 0.9 no run count is enough
RHO_GRID = np.round(np.arange(0.0, 0.901, 0.05), 2)
#: the default prior probability that the run values are autocorrelated (spread evenly
#: over the grid above 0); chosen by benchmarks/guard_cost_study.py (docs/measurements/
#: guard-cost.md): the least cost at which AR(1) 0.5 run values keep A/A false alarms at
#: most 8 % and `precise` coverage at least 93 %
SERIAL_PRIOR_DEPENDENT = 0.6
#: the interval's variance factor is this quantile of its posterior
SERIAL_QUANTILE = 0.8
#: the runs' lag-1 autocorrelation counts from this many runs on (fewer give none usable)
SERIAL_FIRST_CHECK = 5
#: a decision notes serial correlation where the runs' lag-1 autocorrelation is above
#: the one-sided point of this level for independent values
SERIAL_NOTE_ALPHA = 0.05
#: the repository's runs count as independent when their autocorrelation's one-sided
#: 95 % upper bound is below this (then the rule starts with none)
SERIAL_INDEPENDENT_BELOW = 0.3
#: the repository's autocorrelation is dropped when the current runs' exceeds its
#: one-sided point at this level (a look after every run: 5 % dropped a right prior in
#: about a quarter of independent experiments by 20 runs; benchmarks/guard_cost_study.py)
SERIAL_HISTORY_ALPHA = 0.01
#: skewness shrinkage: the sample skewness of n runs counts n / (n + this)
SKEW_SHRINK = 30.0
#: Skew note: run values whose sample skewness lies beyond this many of its standard
#: errors under normality (two-sided 1 %) from this many runs on
SKEW_Z = 2.5758293035489004
SKEW_FIRST_CHECK = 8


def _z(alpha: float) -> float:
    return float(special.ndtri(1.0 - alpha))


def ar1_variance_factor(rho: object, n: object) -> np.ndarray:
    """How much wider (in variance) the interval of the mean of ``n`` AR(1) run values
    with lag-1 autocorrelation ``rho`` must be than the one for independent values, both
    scaled by the sample spread: ``Var(mean) n / sigma^2`` over ``E s^2 / sigma^2``,
    ``(1 + 2 S / n) / (1 - 2 S / (n (n - 1)))`` with ``S = sum_{k<n} (n - k) rho^k``
    (broadcast over ``rho`` and ``n``; 1 for ``rho = 0`` or ``n < 2``)."""
    r = np.asarray(rho, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        s = (r ** (nn + 1.0) - nn * r * r + (nn - 1.0) * r) / (1.0 - r) ** 2
        f = (1.0 + 2.0 * s / nn) / (1.0 - 2.0 * s / (nn * (nn - 1.0)))
    return np.where((nn >= 2) & (r > 0), f, 1.0)


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


def _null_sd(n: np.ndarray) -> np.ndarray:
    """SD of the lag-1 autocorrelation of n independent values (Moran 1948)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (n - 2.0) / (n * np.sqrt(np.maximum(n - 1.0, 1.0)))


def serial_threshold(n: object, alpha: float = SERIAL_NOTE_ALPHA) -> np.ndarray:
    """The lag-1 autocorrelation above which independent run values are rejected
    (one-sided, level ``alpha``): under independence its mean is ``-1/n`` and its SD
    ``(n - 2) / (n sqrt(n - 1))`` (Moran 1948; both checked by simulation in
    tests/test_adaptive_serial.py), and it is close to normal."""
    n = np.asarray(n, dtype=np.float64)
    return -1.0 / n + _z(alpha) * _null_sd(n)


def _r_moments(rho: float, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SD of the lag-1 autocorrelation of n AR(1) values (normal approximation:
    mean ``rho - (1 + 3 rho) / n``, variance ``(1 - rho^2) / n``; Moran's at 0)."""
    n = np.maximum(n, 3.0)  # (fewer runs have no r; keeps the arithmetic finite)
    if rho == 0.0:
        return -1.0 / n, _null_sd(n)
    return rho - (1.0 + 3.0 * rho) / n, np.sqrt((1.0 - rho * rho) / n)


@dataclass(frozen=True)
class ShapePrior:
    """What earlier experiments on this host say about the shape of the run values:
    their lag-1 autocorrelation ``r`` and their skewness ``skew``, pooled over ``runs``
    run values of ``experiments`` experiments (each experiment's mean removed; products
    of successive runs within an experiment only; docs/history.md, "Priors")."""

    r: float
    runs: int
    experiments: int
    skew: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.r) and -1.0 <= self.r <= 1.0) or self.runs < 3:
            raise ValueError(f"a shape prior needs -1 <= r <= 1 and 3 runs, got {self}")
        if not 1 <= self.experiments <= self.runs / 2:
            raise ValueError(f"a shape prior needs 2 runs per experiment, got {self}")
        if not math.isfinite(self.skew):
            raise ValueError(f"a shape prior needs a finite skewness, got {self}")

    @property
    def z(self) -> float:
        """The pooled autocorrelation in standard errors above its mean for independent
        values (``-experiments / runs``; SD about ``1 / sqrt(runs)``)."""
        return (self.r + self.experiments / self.runs) * math.sqrt(self.runs)

    @property
    def found(self) -> bool:
        """Whether the earlier runs are serially correlated beyond chance (one-sided 5 %)."""
        return self.z > _z(0.05)

    @property
    def rho_upper(self) -> float:
        """The one-sided 95 % upper bound of their lag-1 autocorrelation (corrected for
        its small-sample bias ``-experiments (1 + 3 rho) / runs``)."""
        k, n = self.experiments, self.runs
        return (self.r + k / n) / (1.0 - 3.0 * k / n) + _z(0.05) / math.sqrt(n)

    @property
    def independent(self) -> bool:
        """Whether they rule out an autocorrelation of :data:`SERIAL_INDEPENDENT_BELOW`
        or more: the rule then starts with none."""
        return self.rho_upper < SERIAL_INDEPENDENT_BELOW

    @property
    def skew_found(self) -> bool:
        """Whether the earlier runs are skewed beyond chance (two-sided SKEW_Z standard
        errors under normality, ``sqrt(6 / runs)``); else they vouch for symmetry."""
        return abs(self.skew) > SKEW_Z * math.sqrt(6.0 / self.runs)

    def log_likelihood(self) -> np.ndarray:
        """Log-likelihood of every :data:`RHO_GRID` value given ``r``."""
        k, n = self.experiments, self.runs
        mean = RHO_GRID - k * (1.0 + 3.0 * RHO_GRID) / n
        sd = np.sqrt(np.maximum(1.0 - RHO_GRID**2, 1e-3) / n)
        return -0.5 * ((self.r - mean) / sd) ** 2 - np.log(sd)

    def weights(self) -> np.ndarray:
        """The distribution over :data:`RHO_GRID` the rule starts with: all on 0 when the
        earlier runs rule out a relevant autocorrelation (:attr:`independent`), else the
        default prior updated with their ``r``."""
        if self.independent:
            w = np.zeros(len(RHO_GRID))
            w[0] = 1.0
            return w
        ll = self.log_likelihood()
        w = default_weights() * np.exp(ll - ll.max())
        return w / w.sum()

    def to_json(self) -> dict[str, object]:
        return {
            "r": self.r,
            "runs": int(self.runs),
            "experiments": int(self.experiments),
            "skew": self.skew,
        }

    @classmethod
    def from_json(cls, d: object) -> ShapePrior | None:
        if not isinstance(d, dict) or d.get("r") is None:
            return None
        return cls(float(d["r"]), int(d["runs"]), int(d["experiments"]), float(d.get("skew") or 0))


def default_weights() -> np.ndarray:
    """The prior over :data:`RHO_GRID` without a repository."""
    w = np.full(len(RHO_GRID), SERIAL_PRIOR_DEPENDENT / (len(RHO_GRID) - 1))
    w[0] = 1.0 - SERIAL_PRIOR_DEPENDENT
    return w


@dataclass(frozen=True, eq=False)
class Guard:
    """The guards' state after every run of every row (arrays rows x runs).

    ``serial_r``: the runs' lag-1 autocorrelation (NaN below SERIAL_FIRST_CHECK);
    ``factor``: the variance factor the interval is widened by (1: none); ``found``:
    serial correlation beyond chance (the note); ``dropped``: the repository's
    shape prior no longer used (False without one); ``skew``: the shrunk sample
    skewness the interval's long side is widened with."""

    serial_r: np.ndarray
    factor: np.ndarray
    found: np.ndarray
    dropped: np.ndarray
    skew: np.ndarray


#: grid points x rows x runs evaluated at once (bounds the memory of a plan's simulation)
_CHUNK = 4_000_000


def _quantile_factor(
    r: np.ndarray, n: np.ndarray, usable: np.ndarray, prior: np.ndarray | None
) -> np.ndarray:
    """The posterior SERIAL_QUANTILE quantile of the variance factor at every run, from
    the prior weights ``prior`` (rows x grid; None: the default) and the runs' ``r``;
    rows a chunk at a time (a plan simulates thousands of runs of hundreds of rows)."""
    rows, runs = r.shape
    g = len(RHO_GRID)
    base = np.log(default_weights())[None, :] if prior is None else np.log(prior + 1e-300)
    base = np.broadcast_to(base, (rows, g))
    moments = [_r_moments(float(rho), n) for rho in RHO_GRID]
    mean = np.stack([m for m, _ in moments])[:, None, :]  # grid x 1 x runs
    sd = np.stack([s for _, s in moments])[:, None, :]
    looked = n >= SERIAL_FIRST_CHECK  # columns with a usable r (where a row has one)
    rr = np.nan_to_num(r).astype(np.float32)
    # -0.5 ((r - mean) / sd)^2 - log sd = add - (r inv - shift)^2; 0 where no r yet
    inv = np.where(looked, math.sqrt(0.5) / sd, 0.0).astype(np.float32)
    shift = np.where(looked, mean * math.sqrt(0.5) / sd, 0.0).astype(np.float32)
    add = np.where(looked, -np.log(sd), 0.0).astype(np.float32)
    base32 = base.T[:, :, None].astype(np.float32)  # grid x rows x 1
    idx = np.empty(r.shape, dtype=np.int64)
    step = max(1, _CHUNK // max(g * runs, 1))
    q = np.float32(SERIAL_QUANTILE - 1e-6)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        ll = rr[None, lo:hi, :] * inv  # grid x rows x runs, float32: a plan's size
        ll -= shift
        np.square(ll, out=ll)
        np.subtract(add, ll, out=ll)
        ll += base32[:, lo:hi]
        ll -= ll.max(axis=0, keepdims=True)
        np.exp(ll, out=ll)
        for j in range(1, g):  # the cumulative weights, grid point by grid point
            ll[j] += ll[j - 1]
        # the first grid point whose cumulative weight reaches the quantile
        idx[lo:hi] = np.sum(ll < q * ll[-1], axis=0)
    if not usable[:, looked].all():  # rows without spread: the prior alone there
        w = np.exp(base - base.max(axis=1, keepdims=True))
        cum = np.cumsum(w, axis=1)
        alone = np.sum(cum < (SERIAL_QUANTILE - 1e-6) * cum[:, -1:], axis=1)
        idx = np.where(usable, idx, alone[:, None])
    table = ar1_variance_factor(RHO_GRID[:, None], n[None, :])  # grid x runs
    return table[idx, np.arange(runs)]


def _history_check(r: np.ndarray, n: np.ndarray, usable: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row and run: the current runs' ``r`` lies above the one-sided
    SERIAL_HISTORY_ALPHA point of what the repository's weights ``w`` (rows x grid)
    predict."""
    p = np.zeros_like(r)
    rr = np.nan_to_num(r)
    for j, rho in enumerate(RHO_GRID):
        if (w[:, j] > 0).any():
            mean, sd = _r_moments(float(rho), n)
            p = p + w[:, j : j + 1] * special.ndtr(-(rr - mean) / sd)
    return usable & (p < SERIAL_HISTORY_ALPHA)


def skewness(values: np.ndarray) -> np.ndarray:
    """Adjusted sample skewness ``G1`` of the first n values of every row (0 below 3
    values or without spread)."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    c = v - v[:, :1]
    c2 = c * c
    s1 = np.cumsum(c, axis=1)
    s2 = np.cumsum(c2, axis=1)
    s3 = np.cumsum(c2 * c, axis=1)
    m = s1 / n
    m2 = s2 / n - m * m
    m3 = s3 / n - 3.0 * m * s2 / n + 2.0 * m * m * m
    with np.errstate(invalid="ignore", divide="ignore"):
        g1 = m3 / (m2 * np.sqrt(m2)) * (np.sqrt(n * (n - 1.0)) / (n - 2.0))
    scale = np.maximum(np.abs(c).max(axis=1, keepdims=True), 1e-300)
    flat = m2 <= (1e-12 * scale) ** 2
    return np.where((n >= 3) & ~flat & np.isfinite(g1), g1, 0.0)


def guard(values: np.ndarray, history: ShapePrior | Sequence[ShapePrior] | None = None) -> Guard:
    """The guards after every run of every row of ``values`` (module doc); ``history``:
    the repository's shape prior (or one per row: the studies)."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    rows, runs = v.shape
    n = np.arange(1, runs + 1, dtype=np.float64)
    r = lag1_autocorrelation(v)
    usable = (n >= SERIAL_FIRST_CHECK) & np.isfinite(r)
    plain = _quantile_factor(r, n, usable, None)
    dropped = np.zeros(v.shape, dtype=bool)
    if history is None:
        factor = plain
    else:
        each = [history] * rows if isinstance(history, ShapePrior) else list(history)
        if len(each) != rows:
            raise ValueError(f"{len(each)} shape priors for {rows} sequences")
        w = np.stack([h.weights() for h in each])
        dropped = np.maximum.accumulate(_history_check(r, n, usable, w), axis=1)
        independent = np.array([h.independent for h in each])[:, None]
        kept = np.ones(v.shape)
        if not independent.all():
            kept = np.where(independent, 1.0, _quantile_factor(r, n, usable, w))
        factor = np.where(dropped, plain, kept)
    found = usable & (np.nan_to_num(r, nan=-np.inf) > serial_threshold(n))
    g = _pooled_skew(skewness(v), n, history)
    return Guard(np.where(usable, r, np.nan), factor, found, dropped, np.clip(g, -4.0, 4.0))


def _pooled_skew(
    g1: np.ndarray, n: np.ndarray, history: ShapePrior | Sequence[ShapePrior] | None
) -> np.ndarray:
    """The skewness the interval is widened with: the runs' ``g1`` shrunk toward 0 by
    :data:`SKEW_SHRINK` runs' worth -- and by the repository's runs where they were not
    skewed beyond chance (their symmetry is known)."""
    n0 = np.zeros((1, 1))
    if history is not None:
        each = [history] if isinstance(history, ShapePrior) else list(history)
        n0 = np.array([[0.0 if h.skew_found else float(h.runs)] for h in each])
    return n * g1 / (n + n0 + SKEW_SHRINK)


def _hall_inverse(c: np.ndarray, g: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The ``t`` at which Hall's transformation ``t + g t^2 / (3 sqrt n) + g^2 t^3 /
    (27 n) + g / (6 sqrt n)`` of the t statistic equals ``c`` (it is monotone: the
    cubic ``b (t + K)^3`` plus a constant, ``K = 3 sqrt(n) / g``, ``b = g^2 / (27 n)``)."""
    small = np.abs(g) < 1e-3
    gg = np.where(small, 1e-3, g)
    root = np.sqrt(n)
    inv = 1.0 / gg
    k = (3.0 * root) * inv
    with np.errstate(invalid="ignore", over="ignore"):
        x = (c - gg * (1.0 / (6.0 * root))) * (27.0 * n) * inv * inv  # (c - g/(6 sqrt n)) / b
        x += k * k * k
        t = np.cbrt(x, out=x)
        t -= k
    return np.where(small, c - g / (6.0 * root), t)


def skewed_bounds(
    mean: np.ndarray, se: np.ndarray, mult: np.ndarray, skew: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``mean -+ mult se`` with the side toward the long tail widened for ``skew``
    (:func:`_hall_inverse`; never narrower than ``mult``), per row and run; infinite
    where ``mult`` or ``se`` is. Hall's transformation is odd in (t, skew), so only the
    long side moves: below the mean for a negative skewness, above it for a positive."""
    n = np.arange(1, mean.shape[1] + 1, dtype=np.float64)
    ok = np.isfinite(mult) & np.isfinite(se)
    m = np.where(ok, np.broadcast_to(mult, skew.shape), 1.0)
    up = skew > 0
    long_t = np.maximum(np.abs(_hall_inverse(np.where(up, -m, m), skew, n)), m)
    with np.errstate(invalid="ignore"):
        low = np.where(ok, mean - np.where(up, m, long_t) * se, -np.inf)
        high = np.where(ok, mean + np.where(up, long_t, m) * se, np.inf)
    return low, high


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


def guard_notes(skew: float | None, serial_r: float | None, effective_runs: float | None) -> str:
    """What a decision's explanation adds: strong skew (:func:`strong_skew`), and serial
    correlation found beyond chance (``serial_r``, counted as ``effective_runs``)."""
    text = ""
    where = "(docs/adaptive.md, 'Assumptions, and how they are checked')"
    if skew is not None:
        text += (
            f"; the run values are skewed (skewness {skew:+.2f}): the interval is widened "
            f"toward their long tail {where}"
        )
    if serial_r is not None and effective_runs is not None:
        text += (
            f"; the run values are serially correlated (lag-1 autocorrelation "
            f"{serial_r:+.2f}, beyond chance): the interval counts them as "
            f"{effective_runs:.1f} independent runs {where}"
        )
    return text
