"""The quantiles and tail probabilities the analysis needs (Student's t, normal,
chi-square, F), from ``scipy.special``.

Each equals the ``scipy.stats`` distribution method it is named after (tests/
test_distributions.py checks them against it). ``scipy.stats`` itself is not imported:
it costs every command that analyses anything about half a second of start-up
(docs/performance.md, "Command-line start-up"), and these are the functions it would
call. Arguments broadcast like numpy's; NaN gives NaN.
"""

from __future__ import annotations

from typing import Any

from scipy import special

__all__ = [
    "chi2_ppf",
    "f_cdf",
    "f_ppf",
    "f_sf",
    "norm_isf",
    "norm_ppf",
    "t_isf",
    "t_ppf",
]


def t_ppf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.ppf(q, df)``: the ``q`` quantile of Student's t with ``df``."""
    return special.stdtrit(df, q)


def t_isf(p: Any, df: Any) -> Any:
    """``scipy.stats.t.isf(p, df)``: the t value exceeded with probability ``p`` (by the
    distribution's symmetry, exact in the far tail too)."""
    return -special.stdtrit(df, p)


def norm_ppf(q: Any) -> Any:
    """``scipy.stats.norm.ppf(q)``."""
    return special.ndtri(q)


def norm_isf(p: Any) -> Any:
    """``scipy.stats.norm.isf(p)``: the standard normal value exceeded with probability ``p``."""
    return -special.ndtri(p)


def chi2_ppf(q: Any, df: Any) -> Any:
    """``scipy.stats.chi2.ppf(q, df)``."""
    return 2.0 * special.gammaincinv(0.5 * df, q)


def f_ppf(q: Any, dfn: Any, dfd: Any) -> Any:
    """``scipy.stats.f.ppf(q, dfn, dfd)``."""
    return special.fdtri(dfn, dfd, q)


def f_cdf(x: Any, dfn: Any, dfd: Any) -> Any:
    """``scipy.stats.f.cdf(x, dfn, dfd)``."""
    return special.fdtr(dfn, dfd, x)


def f_sf(x: Any, dfn: Any, dfd: Any) -> Any:
    """``scipy.stats.f.sf(x, dfn, dfd)``."""
    return special.fdtrc(dfn, dfd, x)
