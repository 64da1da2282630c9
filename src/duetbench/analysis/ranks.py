"""The Wilcoxon signed-rank test of many groups at once (the verdict of ``test="utest"``).

The U test of ``duet compare`` ranks run-level values, not iterations: iterations of
one run share that run's state, so a rank test that treats them as independent
(the thesis's pooled Mann-Whitney U) raises false alarms far above its nominal
level (docs/statistics.md, "The U test"). Under "no change" the A and B sides of a
run are exchangeable, so each run value (the run statistic of the pairs' log
ratios) is symmetric about 0, and the signed-rank test of the run values is exact.

:func:`signed_rank` equals ``scipy.stats.wilcoxon(x)`` with its defaults (two-sided,
zeros dropped, no continuity correction, ``method="auto"``): the exact null
distribution when a group has at most 50 values and neither ties nor zeros; the
exact permutation distribution when it has ties or zeros and at most 13 values;
the normal approximation with the tie correction otherwise. A group without a
non-zero value gets p = 1 (scipy: 1 or NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import special

_EXACT_MAX = 50  # scipy's limit for the exact distribution
_PERMUTATION_MAX = 13  # 2**13 sign patterns: scipy enumerates them all
_RELATIVE_EPS = np.finfo(np.float64).eps * 100  # scipy's tolerance for equal statistics


@dataclass(frozen=True, eq=False)
class GroupedSignedRank:
    """Signed-rank tests of many groups (arrays by group code)."""

    r_plus: np.ndarray  # sum of the ranks of the positive values
    r_minus: np.ndarray  # sum of the ranks of the negative values
    n: np.ndarray  # values of the group (zeros included)
    nonzero: np.ndarray  # values that are not zero
    pvalue: np.ndarray  # two-sided

    @property
    def upward(self) -> np.ndarray:
        """True where the positive values dominate (B slower, for log ratios)."""
        return self.r_plus > self.r_minus


@lru_cache(maxsize=64)
def _null_cdf(n: int) -> np.ndarray:
    """P(R+ <= k) for k = 0 .. n(n+1)/2 under the null, exactly (integer counts)."""
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1, dtype=np.int64)
    counts[0] = 1
    for r in range(1, n + 1):  # subsets of {1..n} by their sum
        counts[r:] = counts[r:] + counts[:-r].copy()
    return np.cumsum(counts) / float(2**n)


def _exact_p(r_plus: np.ndarray, n: int) -> np.ndarray:
    cdf = _null_cdf(n)
    lo = np.ceil(r_plus).astype(np.int64)
    hi = np.floor(r_plus).astype(np.int64)
    p_low = cdf[lo]
    p_high = 1.0 - np.where(hi >= 1, cdf[np.maximum(hi - 1, 0)], 0.0)  # P(R+ >= hi)
    return np.clip(2.0 * np.minimum(p_low, p_high), 0.0, 1.0)


def _permutation_p(ranks: np.ndarray, positive: np.ndarray) -> float:
    """Two-sided p of R+ over all sign patterns of the non-zero values (as scipy)."""
    m = len(ranks)
    signs = (np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1
    null = signs @ ranks
    observed = float(ranks[positive].sum())
    gamma = abs(_RELATIVE_EPS * observed)
    less = np.count_nonzero(null <= observed + gamma) / len(null)
    greater = np.count_nonzero(null >= observed - gamma) / len(null)
    return float(np.clip(2.0 * min(less, greater), 0.0, 1.0))


def signed_rank(values: npt.ArrayLike, group: npt.ArrayLike, n_groups: int) -> GroupedSignedRank:
    """Two-sided Wilcoxon signed-rank test of "centred on 0" in every group.

    ``values`` (float) with a group code ``0..n_groups-1`` each; NaN values are
    ignored. Groups may have any size; the ranks, sums and p-values of a group
    depend only on its own values.
    """
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(group, dtype=np.int64)
    ok = ~np.isnan(v)
    v, g = v[ok], g[ok]
    n = np.bincount(g, minlength=n_groups).astype(np.int64)
    nz = v != 0.0
    vz, gz = v[nz], g[nz]
    m = np.bincount(gz, minlength=n_groups).astype(np.int64)
    # ranks of |v| within each group, ties averaged
    a = np.abs(vz)
    order = np.lexsort((a, gz))
    a_s, g_s, pos_s = a[order], gz[order], vz[order] > 0
    starts = np.cumsum(m) - m
    rank = np.arange(len(a_s), dtype=np.float64) - starts[g_s] + 1.0
    new_block = np.ones(len(a_s), dtype=bool)
    new_block[1:] = (a_s[1:] != a_s[:-1]) | (g_s[1:] != g_s[:-1])
    block = np.cumsum(new_block) - 1
    size = np.bincount(block).astype(np.float64)
    avg = np.bincount(block, weights=rank) / size
    rank = avg[block]
    tie_groups = g_s[new_block][size > 1]
    tie_term = np.bincount(g_s[new_block], weights=size**3 - size, minlength=n_groups)
    has_ties = np.zeros(n_groups, dtype=bool)
    has_ties[tie_groups] = True
    r_plus = np.bincount(g_s, weights=np.where(pos_s, rank, 0.0), minlength=n_groups)
    r_minus = np.bincount(g_s, weights=np.where(pos_s, 0.0, rank), minlength=n_groups)
    p = np.ones(n_groups)
    exact = (m > 0) & ~has_ties & (m == n) & (n <= _EXACT_MAX)
    permute = (m > 0) & ~exact & (n <= _PERMUTATION_MAX)
    normal = (m > 0) & ~exact & ~permute
    for size_n in np.unique(n[exact]):
        gi = np.flatnonzero(exact & (n == size_n))
        p[gi] = _exact_p(r_plus[gi], int(size_n))
    for gi in np.flatnonzero(permute):
        sel = slice(starts[gi], starts[gi] + m[gi])
        p[gi] = _permutation_p(rank[sel], pos_s[sel])
    if normal.any():
        mm = m[normal].astype(np.float64)
        mean = mm * (mm + 1.0) / 4.0
        se = np.sqrt((mm * (mm + 1.0) * (2.0 * mm + 1.0) - tie_term[normal] / 2.0) / 24.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (r_plus[normal] - mean) / se
        p[normal] = np.clip(2.0 * special.ndtr(-np.abs(z)), 0.0, 1.0)
    return GroupedSignedRank(r_plus, r_minus, n, m, p)
