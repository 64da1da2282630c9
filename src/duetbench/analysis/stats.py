"""Result types, verdicts and the Mann-Whitney U test (docs/statistics.md, "The U test", "Pipeline and defaults")."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from duetbench.errors import AnalysisError
from duetbench.options import check_threshold
from duetbench.schema import VERDICTS as VERDICTS  # re-exported by duetbench.analysis
from duetbench.schema import Verdict

from ._segments import sort_segments
from .ranks import GroupedSignedRank

# the verdict texts (schema.Verdict) as plain strings: they go into DataFrame columns
SLOWER = Verdict.SLOWER.value
FASTER = Verdict.FASTER.value
NO_CHANGE = Verdict.NO_CHANGE.value
EQUIVALENT = Verdict.EQUIVALENT.value
INCONCLUSIVE = Verdict.INCONCLUSIVE.value
NO_DATA = Verdict.NO_DATA.value
#: earlier releases' verdict for neither slower nor faster: the name of the count of such
#: verdicts (duet evaluate's tables, the JSON summary)
SAME = Verdict.SAME.value


@dataclass(frozen=True)
class ConfidenceInterval:
    """Bounds of a confidence interval (in units of the estimate)."""

    low: float
    high: float


@dataclass(frozen=True)
class ChangeResult:
    """Result of the difference CI test (5.1) or the ratio CI test (5.2) of one group.

    ``estimate`` is the relative change of B against A (positive: B slower):
    ``ggms - 1`` for the ratio test, ``mean delta / mean d_A`` for the difference
    test; ``confidence_interval`` is on the same scale. ``pvalue`` is the pooled
    Mann-Whitney U test's on the same durations (5.4, reported alongside, not
    calibrated); ``rank_pvalue`` the signed-rank test's of the run values.
    """

    test: str
    estimate: float
    confidence_interval: ConfidenceInterval
    pvalue: float
    verdict: str
    runs: int
    pairs: int
    confidence: float
    interval: str
    run_stat: str
    threshold: float
    clustered_by: str
    ci_width: float
    mean_a_ns: float
    mean_b_ns: float
    rank_pvalue: float = float("nan")
    runs_few_pairs: int = 0
    overlap_rate: str = "shorter"
    calibrated: bool = True


@dataclass(frozen=True)
class MannWhitneyResult:
    """Two-sided Mann-Whitney U test of A's durations against B's.

    ``statistic`` is U of A (as ``scipy.stats.mannwhitneyu(a, b).statistic``);
    ``estimate`` is ``P(B > A) + P(B = A) / 2`` (the U of B over ``n_a * n_b``);
    ``verdict`` is ``slower``/``faster`` when ``pvalue < alpha``, else ``no change detected``.
    """

    statistic: float
    pvalue: float
    estimate: float
    verdict: str
    n_a: int
    n_b: int


def interval_verdicts(
    low: npt.ArrayLike, high: npt.ArrayLike, threshold: float = 0.0
) -> np.ndarray:
    """Verdict of each interval of relative change (docs/statistics.md, "Verdicts").

    ``slower`` (``faster``) if it lies wholly above (below) 0 and beyond ``threshold``
    t. With t > 0: ``equivalent`` if it lies inside (-t, t), else ``inconclusive``
    (too wide to tell). With t = 0: ``no change detected`` if it holds 0 (the
    interval's bounds say how equal). ``inconclusive`` for an unbounded interval that
    is neither slower nor faster; ``no data`` when it is undefined. The stopping rules
    use the same words (adaptive.outcomes).
    """
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    t = check_threshold(threshold)
    out = np.full(lo.shape, NO_CHANGE if t == 0 else INCONCLUSIVE, dtype=object)
    if t > 0:
        out[(lo > -t) & (hi < t)] = EQUIVALENT
    with np.errstate(invalid="ignore"):
        out[np.isinf(lo) | np.isinf(hi)] = INCONCLUSIVE
    out[(lo > 0) & (lo > t)] = SLOWER
    out[(hi < 0) & (hi < -t)] = FASTER
    out[np.isnan(lo) | np.isnan(hi)] = NO_DATA
    return out


def rank_verdicts(
    rank: GroupedSignedRank,
    alpha: float,
    defined: np.ndarray,
    *,
    threshold: float = 0.0,
    above: GroupedSignedRank | None = None,
    below: GroupedSignedRank | None = None,
) -> np.ndarray:
    """Verdicts of the signed-rank test of run values (log ratios), as :func:`verdicts`.

    ``slower`` (``faster``) when the test rejects "centred on 0" at ``alpha`` with the
    positive (negative) values dominating and, with a ``threshold``, also rejects
    "centred on log(1 + threshold)" (``log(1 - threshold)``) in the same direction
    -- the test form of "the interval lies beyond the threshold". With a threshold:
    ``equivalent`` when both of those reject towards the inside (the two one-sided
    tests of equivalence), else ``inconclusive``; without one: ``no change detected``.
    ``no data`` where not ``defined``.
    """
    with_threshold = threshold > 0.0 and above is not None and below is not None
    out = np.full(len(rank.pvalue), INCONCLUSIVE if with_threshold else NO_CHANGE, dtype=object)
    sig = rank.pvalue < alpha
    up = sig & (rank.r_plus > rank.r_minus)
    down = sig & (rank.r_minus > rank.r_plus)
    if with_threshold:
        assert above is not None and below is not None
        beyond_up = (above.pvalue < alpha) & (above.r_plus > above.r_minus)
        beyond_down = (below.pvalue < alpha) & (below.r_minus > below.r_plus)
        inside = (above.pvalue < alpha) & (above.r_minus > above.r_plus)
        inside &= (below.pvalue < alpha) & (below.r_plus > below.r_minus)
        out[inside] = EQUIVALENT
        up &= beyond_up
        down &= beyond_down
    out[up] = SLOWER
    out[down] = FASTER
    out[~np.asarray(defined, dtype=bool)] = NO_DATA
    return out


def pooled_u_verdicts(pvalue: np.ndarray, estimate: np.ndarray, alpha: float) -> np.ndarray:
    """The thesis's U-test verdicts (5.4): ``p < alpha``, direction from ``P(B > A)``.

    Not calibrated: the pooled iterations of a run are not independent.
    """
    p = np.asarray(pvalue, dtype=np.float64)
    est = np.asarray(estimate, dtype=np.float64)
    out = np.full(p.shape, NO_CHANGE, dtype=object)
    sig = p < alpha
    out[sig & (est > 0.5)] = SLOWER
    out[sig & (est < 0.5)] = FASTER
    out[np.isnan(p)] = NO_DATA
    return out


@dataclass(frozen=True, eq=False)
class GroupedU:
    """Mann-Whitney U of many groups (arrays by group code)."""

    u_a: np.ndarray
    pvalue: np.ndarray
    n_a: np.ndarray
    n_b: np.ndarray

    @property
    def estimate(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return 1.0 - self.u_a / (self.n_a * self.n_b)


def mann_whitney_grouped(
    durations: np.ndarray,
    side: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    *,
    per_side: np.ndarray | None = None,
) -> GroupedU:
    """Two-sided Mann-Whitney U test of side 0 against side 1 in every group.

    Equal to ``scipy.stats.mannwhitneyu(a, b)`` (default ``method="auto"`` with the
    continuity correction): the normal approximation with the tie correction is
    computed for all groups at once with scipy's expression; groups where scipy
    would use the exact distribution (a side with at most 8 values and no ties)
    take it from :func:`exact_u_pvalue`. ``durations`` are non-negative integers (ns). ``per_side``,
    when the caller has it, is the number of rows of every (group, side) at
    ``2 * group + side``.
    """
    dur = np.asarray(durations, dtype=np.int64)
    sd = np.asarray(side, dtype=np.int64)
    g = np.asarray(group, dtype=np.int64)
    if per_side is None:
        per_side = np.bincount(g * 2 + sd, minlength=2 * n_groups).astype(np.int64)
    n_a, n_b = per_side[0::2], per_side[1::2]
    counts = n_a + n_b
    starts = np.cumsum(counts) - counts
    u_a = np.full(n_groups, np.nan)
    p = np.full(n_groups, np.nan)
    if len(dur) == 0:
        return GroupedU(u_a, p, n_a, n_b)
    if dur.min() < 0:
        raise AnalysisError("durations must not be negative")
    # one sort of (group, duration, side) keys puts every group's sample in order
    span = 2 * (int(dur.max()) + 1)
    if n_groups * span < 2**62:
        key = g * span
        key += dur * 2
        key += sd
        key.sort()
    else:  # pragma: no cover - durations beyond 2**62 / groups ns
        order = np.argsort(g, kind="stable")
        nz = counts > 0
        key = sort_segments((dur * 2 + sd)[order], starts[nz], counts[nz])
    n = len(key)
    is_a = (key & 1) == 0
    tied_key = key >> 1  # (group, duration): equal only within a group
    # rank sum of A with plain positions (1-based within the group), then tie fixes;
    # the A positions come in group order, so each group's are one integer sum
    pos_a = np.flatnonzero(is_a)
    has_a = n_a > 0
    r_a = np.zeros(n_groups)
    r_a[has_a] = np.add.reduceat(pos_a, (np.cumsum(n_a) - n_a)[has_a])
    r_a += n_a * (1 - starts)
    tie = tied_key[1:] == tied_key[:-1]
    if not n_groups * span < 2**62:  # pragma: no cover - keys without the group
        edge = np.zeros(n + 1, dtype=bool)
        edge[np.cumsum(counts)] = True
        tie &= ~edge[1:n]
    tie_term = np.zeros(n_groups)
    has_ties = np.zeros(n_groups, dtype=bool)
    if tie.any():
        in_tie = np.zeros(n, dtype=bool)
        in_tie[1:] |= tie
        in_tie[:-1] |= tie
        idx = np.flatnonzero(in_tie)
        tk, ta = tied_key[idx], is_a[idx]
        tg = np.searchsorted(np.cumsum(counts), idx, side="right")  # group of each position
        first = np.r_[True, tk[1:] != tk[:-1]]
        tid = np.cumsum(first) - 1
        size = np.bincount(tid).astype(np.float64)
        mean_pos = np.bincount(tid, weights=idx.astype(np.float64)) / size + 1.0
        corr = np.where(ta, mean_pos[tid] - (idx + 1.0), 0.0)
        r_a += np.bincount(tg, weights=corr, minlength=n_groups)
        tgrp = tg[first]
        tie_term = np.bincount(tgrp, weights=size**3 - size, minlength=n_groups)
        has_ties[tgrp] = True
    ok = (n_a > 0) & (n_b > 0)
    n1, n2 = n_a[ok], n_b[ok]
    u1 = r_a[ok] - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    u = np.maximum(u1, u2)
    mu = n1 * n2 / 2
    nn = n1 + n2
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sqrt(n1 * n2 / 12 * ((nn + 1) - tie_term[ok] / (nn * (nn - 1))))
        z = (u - mu - 0.5) / s
    pv = np.clip(special.ndtr(-z) * 2, 0.0, 1.0)
    u_a[ok] = u1
    p[ok] = pv
    exact = ok & ((n_a <= 8) | (n_b <= 8)) & ~has_ties
    for gi in np.flatnonzero(exact):
        p[gi] = exact_u_pvalue(round(u_a[gi]), int(n_a[gi]), int(n_b[gi]))
    return GroupedU(u_a, p, n_a, n_b)


@functools.lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) orders of m A and n B values give U = 0, 1, ..., m*n:
    the coefficients of the Gaussian binomial [m+n choose m]_q, built as the product of
    (1 - q^(n+i)) / (1 - q^i) for i = 1..m, in exact integers."""
    c = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        step = n + i
        for k in range(len(c) - 1, step - 1, -1):  # times (1 - q^(n+i))
            c[k] -= c[k - step]
        for k in range(i, len(c)):  # divided by (1 - q^i)
            c[k] += c[k - i]
    return tuple(c)


def exact_u_pvalue(u_a: int, n_a: int, n_b: int) -> float:
    """The two-sided p-value of U = ``u_a`` from U's exact distribution under no
    difference and no ties, as ``scipy.stats.mannwhitneyu`` gives it (twice the chance
    of a U at least as far from the middle, at most 1). Used where a side has at most 8
    values (scipy's rule); the counts are symmetric, so the upper tail is summed as the
    lower one."""
    m, n = min(n_a, n_b), max(n_a, n_b)
    counts = _u_counts(m, n)
    far = max(u_a, n_a * n_b - u_a)  # U at least this far up, or as far down
    tail = sum(counts[: m * n - far + 1])
    return min(1.0, 2.0 * tail / math.comb(m + n, m))


def _scipy_u_test(a: np.ndarray, b: np.ndarray):
    """scipy's U test (its exact distribution for small samples), imported when first
    needed: scipy.stats costs every command that imports the analysis about half a second."""
    from scipy.stats import mannwhitneyu

    return mannwhitneyu(a.astype(np.float64), b.astype(np.float64))


def mann_whitney_u(a: npt.ArrayLike, b: npt.ArrayLike, *, alpha: float = 0.05) -> MannWhitneyResult:
    """Mann-Whitney U test of durations ``a`` (A) against ``b`` (B), two-sided (5.4)."""
    av = np.asarray(a)
    bv = np.asarray(b)
    if av.ndim != 1 or bv.ndim != 1 or len(av) == 0 or len(bv) == 0:
        raise AnalysisError("the U test needs two non-empty 1-D samples")
    if np.issubdtype(av.dtype, np.integer) and np.issubdtype(bv.dtype, np.integer):
        res = mann_whitney_grouped(
            np.concatenate([av, bv]),
            np.r_[np.zeros(len(av), np.int64), np.ones(len(bv), np.int64)],
            np.zeros(len(av) + len(bv), np.int64),
            1,
        )
        u_a, pv = float(res.u_a[0]), float(res.pvalue[0])
    else:
        r = _scipy_u_test(av, bv)
        u_a, pv = float(r.statistic), float(r.pvalue)
    est = 1.0 - u_a / (len(av) * len(bv))
    if pv < alpha:
        verdict = SLOWER if est > 0.5 else FASTER if est < 0.5 else NO_CHANGE
    else:
        verdict = NO_CHANGE
    return MannWhitneyResult(u_a, pv, est, verdict, len(av), len(bv))
