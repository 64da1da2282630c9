"""Confidence intervals for the mean of run-level values, many groups at once.

Engines (docs/statistics.md, "Interval engines" and "Several hosts"):

* ``"t"`` -- Student-t on the run-level values (the default).
* ``"percentile"``, ``"bca"``, ``"studentized"`` -- bootstrap over runs.
* :func:`weighted_bootstrap_interval` -- clustered data (runs on several hosts):
  every replicate weights each cluster by one Poisson(1) or Uniform(0, 2) draw
  (Bakshy & Frachtenberg, sec. 5.1).

Inputs are flat: ``values`` with a group code per value (``0..G-1``); groups may
have different sizes. Each group resamples with its own generator, derived from
``seed`` and the group's key (see :func:`group_generators`), so the same seed gives
bit-identical intervals and adding a group leaves the others unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from duetbench.errors import AnalysisError
from duetbench.options import WEIGHTS, check_confidence, check_resamples, check_seed

from ._resample import resample_blocks
from ._table import GroupStreams, group_generator
from .distributions import t_ppf

_PURPOSE = "interval"
# Poisson(1) by inversion: P(W <= k) for k = 0..; beyond the last entry (k >= 19) the
# remaining probability is below 1e-17, under the resolution of a double.
_POISSON1_CDF = np.cumsum(np.exp(-1.0) / np.cumprod(np.r_[1.0, np.arange(1.0, 19.0)]))
_BUCKETS = 1 << 10  # small tables: the gathers stay in the L1 cache
# W at the start of each of 1024 equal buckets of [0, 1), and the one step of the
# distribution function inside the bucket (2.0 if none); only the last bucket holds
# several steps, and is inverted apart
_BUCKET_LOW = np.searchsorted(_POISSON1_CDF, np.arange(_BUCKETS) / _BUCKETS, side="right")
_BUCKET_STEP = np.r_[_POISSON1_CDF, 2.0][_BUCKET_LOW]
_BUCKET_LOW_F = _BUCKET_LOW.astype(np.float64)
_TAIL = (_BUCKETS - 1) / _BUCKETS
_steps_per_bucket = np.bincount((_POISSON1_CDF * _BUCKETS).astype(np.int64), minlength=_BUCKETS + 1)
assert _steps_per_bucket[: _BUCKETS - 1].max() <= 1  # the inversion below relies on it


class _Poisson1:
    """Poisson(1) variates from uniforms by exact inversion."""

    def __init__(self, size: int) -> None:
        self.scaled = np.empty(size)
        self.bucket = np.empty(size, dtype=np.intp)

    def __call__(self, u: np.ndarray) -> np.ndarray:
        np.multiply(u, float(_BUCKETS), out=self.scaled)
        np.copyto(self.bucket, self.scaled, casting="unsafe")
        out = _BUCKET_LOW_F[self.bucket]
        out += u >= _BUCKET_STEP[self.bucket]
        tail = np.flatnonzero(u >= _TAIL)
        if len(tail):
            out[tail] = np.searchsorted(_POISSON1_CDF, u[tail], side="right")
        return out


@dataclass(frozen=True, eq=False)
class GroupIntervals:
    """Intervals of many groups: arrays indexed by group code."""

    estimate: np.ndarray  # mean of the group's values
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray  # resampling units per group (values, or clusters)
    method: str
    confidence: float


def group_generators(
    keys: Sequence[str], seed: int, purpose: str = _PURPOSE
) -> list[np.random.Generator]:
    """One generator per group key (see ``_table.group_generator``)."""
    seed = check_seed(seed)
    return [group_generator(seed, k, purpose) for k in keys]


def _grouped(
    values: npt.ArrayLike, group: npt.ArrayLike, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Values sorted by group (stable), with each group's start and count."""
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(group, dtype=np.int64)
    if v.shape != g.shape or v.ndim != 1:
        raise AnalysisError("values and group codes must be 1-D arrays of the same length")
    if len(g) and (g.min() < 0 or g.max() >= n_groups):
        raise AnalysisError("group codes must lie in 0..n_groups-1")
    order = np.argsort(g, kind="stable")
    counts = np.bincount(g, minlength=n_groups).astype(np.int64)
    starts = np.cumsum(counts) - counts
    return v[order], g[order], starts, counts


def _group_means(v: np.ndarray, g: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(g, weights=v, minlength=len(counts)) / counts


def t_interval(
    values: npt.ArrayLike,
    group: npt.ArrayLike,
    *,
    n_groups: int | None = None,
    confidence: float = 0.95,
) -> GroupIntervals:
    """Student-t interval for each group's mean: ``mean +- t(n-1) * s / sqrt(n)``.

    Groups with fewer than 2 values get NaN bounds.
    """
    c = check_confidence(confidence)
    g_arr = np.asarray(group, dtype=np.int64)
    ng = int(n_groups if n_groups is not None else (g_arr.max() + 1 if len(g_arr) else 0))
    v, g, _, counts = _grouped(values, g_arr, ng)
    mean = _group_means(v, g, counts)
    dev = v - mean[g]
    ss = np.bincount(g, weights=dev * dev, minlength=ng)
    with np.errstate(invalid="ignore", divide="ignore"):
        sem = np.sqrt(ss / (counts - 1)) / np.sqrt(counts)
        q = t_ppf(0.5 + c / 2.0, np.where(counts > 1, counts - 1, np.nan))
    half = q * sem
    ok = counts > 1
    low = np.where(ok, mean - half, np.nan)
    high = np.where(ok, mean + half, np.nan)
    return GroupIntervals(mean, low, high, counts, "t", c)


def _sorted_quantiles(rows: np.ndarray, levels: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Linear-interpolation quantiles (numpy's default method) of sorted rows.

    ``levels`` is (G, L); ``valid`` (G,) is how many leading entries of a row count.
    """
    last = np.maximum(valid - 1, 0)[:, None]
    pos = levels * last
    bad = np.isnan(pos) | (valid[:, None] == 0)
    # ufuncs rather than clip / take_along_axis: called per block of 8 groups
    lo_f = np.minimum(np.maximum(np.floor(np.where(bad, 0.0, pos)), 0.0), last)
    lo = lo_f.astype(np.int64)
    hi = np.minimum(lo + 1, last)
    r = np.arange(len(rows))[:, None]
    a, b = rows[r, lo], rows[r, hi]
    with np.errstate(invalid="ignore"):
        out = np.where(a == b, a, a + (pos - lo_f) * (b - a))  # a == b: also +-inf
    out[bad] = np.nan
    return out


def _quantiles(rows: np.ndarray, levels: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """As :func:`_sorted_quantiles`; sorts the leading ``valid`` entries of each row
    in place first."""
    for i in range(len(rows)):
        rows[i, : int(valid[i])].sort()
    return _sorted_quantiles(rows, levels, valid)


def _bca_levels(z0: np.ndarray, accel: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    z_lo = special.ndtri(alpha)
    z_hi = -z_lo
    n1 = z0 + z_lo
    n2 = z0 + z_hi
    with np.errstate(invalid="ignore", divide="ignore"):
        a1 = special.ndtr(z0 + n1 / (1 - accel * n1))
        a2 = special.ndtr(z0 + n2 / (1 - accel * n2))
    return a1, a2


def _z0(reps: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Bias correction from the share of replicates below (and at) the estimate 0."""
    below = np.count_nonzero(reps < 0, axis=1) + np.count_nonzero(reps <= 0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return special.ndtri(below / (2.0 * valid))


def _acceleration(u: np.ndarray) -> np.ndarray:
    """BCa acceleration from jackknife influence values ``u`` (rows; NaN-padded)."""
    num = np.nansum(u**3, axis=1)
    den = np.nansum(u**2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = num / (6.0 * den**1.5)
    return np.where(den > 0, a, 0.0)


def _interval_ends(
    method: str,
    x: np.ndarray,
    mean: np.ndarray,
    target: np.ndarray,
    b: int,
    alpha: float,
    lo_dev: np.ndarray,
    hi_dev: np.ndarray,
) -> Callable[[int, int, np.ndarray, np.ndarray | None], None]:
    """The per-block step of :func:`bootstrap_interval` for groups of one size.

    ``x`` (G, n) are the groups' values, ``target`` the estimates as sums of the
    centered values. The returned function turns the replicate sums of groups
    ``g0:g1`` into the interval ends' deviations from the mean, written to
    ``lo_dev[g0:g1]`` and ``hi_dev[g0:g1]``.
    """
    n = x.shape[1]
    s_all = x.std(axis=1, ddof=1) / np.sqrt(n) if method == "studentized" else None
    accel = _acceleration(x - mean[:, None]) if method == "bca" else None

    def consume(g0: int, g1: int, sums: np.ndarray, sq: np.ndarray | None) -> None:
        tgt = target[g0:g1]
        full = np.full(g1 - g0, b)
        if method == "studentized":
            assert sq is not None and s_all is not None
            with np.errstate(invalid="ignore", divide="ignore"):
                var = (sq - sums * sums / n) / (n - 1)
                se_b = np.sqrt(np.maximum(var, 0.0) / n)
                diff = sums - tgt[:, None]  # n * (replicate - estimate)
                tstar = np.where((se_b == 0) & (diff == 0), 0.0, (diff / n) / se_b)
            tstar.sort(axis=1)
            levels = np.tile([alpha, 1.0 - alpha], (g1 - g0, 1))
            qt = _sorted_quantiles(tstar, levels, full)
            lo_dev[g0:g1] = -qt[:, 1] * s_all[g0:g1]
            hi_dev[g0:g1] = -qt[:, 0] * s_all[g0:g1]
            return
        # quantiles of the replicate sums, turned into deviations of the mean at the end
        sums.sort(axis=1)
        if accel is not None:
            below = np.array(
                [
                    np.searchsorted(row, t, side="left") + np.searchsorted(row, t, side="right")
                    for row, t in zip(sums, tgt, strict=True)
                ]
            )
            with np.errstate(divide="ignore", invalid="ignore"):
                z0 = special.ndtri(below / (2.0 * b))
            a1, a2 = _bca_levels(z0, accel[g0:g1], alpha)
            levels = np.stack([a1, a2], axis=1)
        else:
            levels = np.tile([alpha, 1.0 - alpha], (g1 - g0, 1))
        qv = (_sorted_quantiles(sums, levels, full) - tgt[:, None]) / n
        lo_dev[g0:g1] = qv[:, 0]
        hi_dev[g0:g1] = qv[:, 1]

    return consume


def bootstrap_interval(
    values: npt.ArrayLike,
    group: npt.ArrayLike,
    keys: Sequence[str],
    *,
    method: Literal["percentile", "bca", "studentized"] = "bca",
    confidence: float = 0.95,
    resamples: int = 9999,
    seed: int = 0,
) -> GroupIntervals:
    """Bootstrap interval of each group's mean, resampling its values (runs).

    ``keys[i]`` names group ``i`` and, with ``seed``, fixes its random stream.
    ``percentile`` and ``bca`` follow ``scipy.stats.bootstrap`` (BCa: bias
    correction from the share of replicates below the estimate, acceleration from
    the jackknife); ``studentized`` is the bootstrap-t interval
    ``[m - t*_(1-a/2) se, m - t*_(a/2) se]``. Groups with fewer than 2 values get
    NaN bounds; a group whose values are all equal gets a zero-width interval.
    """
    if method not in ("percentile", "bca", "studentized"):
        raise AnalysisError(
            f"bootstrap method must be percentile, bca or studentized, got {method!r}"
        )
    c = check_confidence(confidence)
    b = check_resamples(resamples)
    ng = len(keys)
    v, g, starts, counts = _grouped(values, group, ng)
    mean = _group_means(v, g, counts)
    low = np.full(ng, np.nan)
    high = np.full(ng, np.nan)
    alpha = (1.0 - c) / 2.0
    seed = check_seed(seed)
    for n in np.unique(counts[counts >= 2]):
        n = int(n)
        gi = np.flatnonzero(counts == n)
        idx = starts[gi][:, None] + np.arange(n)[None, :]
        x = v[idx]
        # Resample around a data value: differences of integer-valued run statistics
        # stay exact, so replicates equal to the estimate tie exactly (as in scipy).
        near = np.argmin(np.abs(x - mean[gi][:, None]), axis=1)
        center = x[np.arange(len(gi)), near]
        d = x - center[:, None]
        target = d.sum(axis=1)  # the estimate, as a sum of centered values
        gens = GroupStreams(seed, [keys[i] for i in gi], _PURPOSE)
        lo_dev = np.empty(len(gi))
        hi_dev = np.empty(len(gi))
        consume = _interval_ends(method, x, mean[gi], target, b, alpha, lo_dev, hi_dev)
        resample_blocks(d, gens, b, consume, squares=(method == "studentized"))
        flat = np.all(d == 0, axis=1)
        lo_dev = np.where(flat, 0.0, lo_dev)
        hi_dev = np.where(flat, 0.0, hi_dev)
        low[gi] = mean[gi] + lo_dev
        high[gi] = mean[gi] + hi_dev
    return GroupIntervals(mean, low, high, counts, method, c)


def weighted_bootstrap_interval(
    values: npt.ArrayLike,
    group: npt.ArrayLike,
    cluster: npt.ArrayLike,
    keys: Sequence[str],
    *,
    method: Literal["t", "percentile", "bca"] = "t",
    weights: Literal["poisson", "uniform"] = "poisson",
    confidence: float = 0.95,
    resamples: int = 9999,
    seed: int = 0,
) -> GroupIntervals:
    """Clustered (weighted) bootstrap of each group's mean (Bakshy & Frachtenberg 5.1).

    Every replicate draws one weight per cluster -- Poisson(1) (by inversion of its
    distribution function) or Uniform(0, 2) -- and computes the weighted mean ``sum w_c S_c / sum w_c N_c`` of the group's
    values (``S_c``, ``N_c``: sum and count of the values in cluster ``c``).
    Replicates whose weights are all zero are dropped. Replicate deviations are
    divided by the weights' standard deviation (1 for Poisson, 1/sqrt(3) for
    Uniform(0, 2)), so both weightings estimate the same spread.

    ``method``: ``"t"`` (default) -- ``mean +- t(C-1) * se`` with ``se`` the
    replicates' standard deviation and ``C`` the number of clusters. (The
    weighted replicates' spread exceeds the linearized cluster standard error by
    about the small-sample factor ``sqrt(C/(C-1))`` -- measured 1.12/1.10 at C = 6,
    1.06/1.05 at 10 -- so this is close to the cluster-robust CR1 t interval.)
    ``"percentile"``; ``"bca"`` (acceleration from the leave-one-cluster-out
    jackknife). Groups with fewer than 2 clusters get NaN bounds.
    """
    if method not in ("t", "percentile", "bca"):
        raise AnalysisError(
            f"the clustered bootstrap supports the t, percentile and bca intervals, not {method!r}"
        )
    if weights not in WEIGHTS:
        raise AnalysisError(f"weights must be poisson or uniform, got {weights!r}")
    c = check_confidence(confidence)
    b = check_resamples(resamples)
    seed = check_seed(seed)
    ng = len(keys)
    v_in = np.asarray(values, dtype=np.float64)
    g_in = np.asarray(group, dtype=np.int64)
    cl_in = np.asarray(cluster)
    if cl_in.shape != v_in.shape:
        raise AnalysisError("cluster labels must match the values one to one")
    # local cluster index within each group
    _, cl_codes = np.unique(cl_in, return_inverse=True)
    pair_code = g_in * (int(cl_codes.max()) + 1 if len(cl_codes) else 1) + cl_codes
    uniq, inv = np.unique(pair_code, return_inverse=True)
    cl_group = uniq // (int(cl_codes.max()) + 1 if len(cl_codes) else 1)
    n_clusters = np.bincount(cl_group, minlength=ng).astype(np.int64)
    v, g, _, counts = _grouped(v_in, g_in, ng)
    mean = _group_means(v, g, counts)
    dev_in = v_in - mean[g_in]
    csum = np.bincount(inv, weights=dev_in, minlength=len(uniq))
    ccount = np.bincount(inv, minlength=len(uniq)).astype(np.float64)
    cstart = np.cumsum(n_clusters) - n_clusters
    low = np.full(ng, np.nan)
    high = np.full(ng, np.nan)
    alpha = (1.0 - c) / 2.0
    w_sd = 1.0 if weights == "poisson" else 1.0 / np.sqrt(3.0)
    for h in np.unique(n_clusters[n_clusters >= 2]):
        h = int(h)
        gi = np.flatnonzero(n_clusters == h)
        idx = cstart[gi][:, None] + np.arange(h)[None, :]
        s_c, n_c = csum[idx], ccount[idx]
        lo_dev = np.full(len(gi), np.nan)
        hi_dev = np.full(len(gi), np.nan)
        u = np.empty(b * h)
        draw_poisson = _Poisson1(b * h)
        t_q = t_ppf(0.5 + c / 2.0, h - 1)
        if method == "bca":
            # leave-one-cluster-out jackknife of the mean
            tot_s, tot_n = s_c.sum(axis=1, keepdims=True), n_c.sum(axis=1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                jk = (tot_s - s_c) / (tot_n - n_c)
            accel = _acceleration((h - 1) * (np.nanmean(jk, axis=1, keepdims=True) - jk))
        streams = GroupStreams(seed, [keys[i] for i in gi], _PURPOSE)
        for row in range(len(gi)):
            streams.fill(row, u)
            w = (draw_poisson(u) if weights == "poisson" else u * 2.0).reshape(h, b)
            num = w[0] * s_c[row, 0]
            den = w[0] * n_c[row, 0]
            for j in range(1, h):
                num += w[j] * s_c[row, j]
                den += w[j] * n_c[row, j]
            ok = den > 0
            reps = num[ok] / den[ok] / w_sd
            if len(reps) < 2:
                continue
            if method == "t":
                half = t_q * reps.std(ddof=1)
                lo_dev[row], hi_dev[row] = -half, half
                continue
            if method == "bca":
                z0 = _z0(reps[None, :], np.array([len(reps)]))
                a1, a2 = _bca_levels(z0, accel[row : row + 1], alpha)
                levels = np.stack([a1, a2], axis=1)
            else:
                levels = np.array([[alpha, 1.0 - alpha]])
            qv = _quantiles(reps[None, :], levels, np.array([len(reps)]))[0]
            lo_dev[row], hi_dev[row] = qv[0], qv[1]
        low[gi] = mean[gi] + lo_dev
        high[gi] = mean[gi] + hi_dev
    return GroupIntervals(mean, low, high, n_clusters, f"clustered-{method}", c)
