"""Boundaries for intervals that stay valid when a benchmark stops on its own data.

Two families, both on the run-level values ``y_1, y_2, ...`` (log ratios per run) with
unknown mean ``mu`` and unknown spread (docs/statistics.md, "Measuring until sure"):

* **Confidence sequence** (:func:`t_mixture_multiplier`): the interval
  ``mean_n +- m(n) s_n / sqrt(n)`` covers ``mu`` at *every* ``n`` at once with
  probability ``1 - alpha``. ``m(n)`` comes from the scale-invariant Bayes factor of
  ``mu`` with a normal mixture over the standardized effect (Lai 1976; the
  t-mixture of Lindon et al., Wang & Ramdas): under normal run values it is a
  nonnegative martingale in ``n`` and Ville's inequality guarantees the coverage
  at any number of runs, with the spread unknown -- no plug-in variance, so no
  small-sample correction is needed. :func:`normal_mixture_multiplier` is the
  known-variance form (Howard et al. 2021) into which an estimated ``s`` is plugged:
  asymptotically valid only, kept for the comparison in the study.
* **Group-sequential** (:func:`group_sequential_z`): Lan-DeMets spending with the
  O'Brien-Fleming-type function ``a(t) = 2 - 2 Phi(z_{1-a/2} / sqrt(t))`` for each side
  at ``a = alpha/2`` (the convention of ldbounds and gsDesign) over the planned maximum
  number of runs (information fraction ``t = n / max_runs``), boundaries by recursive numerical
  integration (Armitage, McPherson & Rowe; Jennison & Turnbull ch. 19), turned into
  Student-t multipliers at each look's degrees of freedom by keeping its nominal
  significance level (:func:`group_sequential_multiplier`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, special

from duetbench.errors import AnalysisError

from ..analysis.distributions import t_isf

__all__ = [
    "group_sequential_multiplier",
    "group_sequential_z",
    "mixture_precision",
    "normal_mixture_multiplier",
    "obf_spending",
    "t_mixture_multiplier",
]

#: Grid points per SD of one look's increment (Simpson): boundaries within 1e-6 of 32.
_GRID_PER_SD = 8
#: The one-sided boundary's continuation region is cut this many SDs below zero.
_LOWER_CUT = 10.0
#: A boundary beyond this many SDs leaves no mass worth integrating outside it.
_UPPER_CUT = 12.0
#: Boundaries are searched in [0, this] (beyond: no stopping at that look).
_SEARCH_MAX = 40.0


def _alpha(confidence: float) -> float:
    if not 0.5 <= confidence < 1.0:
        raise AnalysisError(f"confidence must be in [0.5, 1), got {confidence!r}")
    return 1.0 - confidence


def t_mixture_multiplier(n: object, confidence: float = 0.95, phi: float = 1.0) -> np.ndarray:
    """Confidence-sequence multiplier ``m(n)`` of ``mean +- m(n) s / sqrt(n)``.

    ``s`` is the sample SD (ddof 1). With ``nu = n - 1``, ``r = phi / (phi + n)`` and
    ``a = (r alpha^2)^(1/n)``: ``m(n) = sqrt(nu (1 - a) / (a - r))`` -- the ``|t|`` at
    which the Bayes factor ``sqrt(r) ((1 + t^2/nu) / (1 + r t^2/nu))^(n/2)`` (standardized
    effect ~ N(0, 1/phi), right-Haar prior on the scale) reaches ``1/alpha``.
    ``inf`` where no finite interval exists yet (``n < 2`` or ``a <= r``).
    """
    alpha = _alpha(confidence)
    if not phi > 0:
        raise AnalysisError(f"phi must be > 0, got {phi!r}")
    nn = np.asarray(n, dtype=np.float64)
    out = np.full(nn.shape, np.inf)
    ok = nn >= 2
    m = nn[ok]
    r = phi / (phi + m)
    a = np.exp((np.log(r) + 2.0 * math.log(alpha)) / m)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(a > r, np.sqrt((m - 1.0) * (1.0 - a) / (a - r)), np.inf)
    out[ok] = val
    return out


def normal_mixture_multiplier(n: object, confidence: float = 0.95, phi: float = 1.0) -> np.ndarray:
    """Known-variance normal-mixture multiplier (z scale): ``sqrt(log(1/(r alpha^2)) / (1 - r))``.

    With ``s`` plugged in for the unknown SD it is only asymptotically valid (Howard
    et al. 2021, Waudby-Smith et al.): too narrow with a handful of runs.
    """
    alpha = _alpha(confidence)
    nn = np.asarray(n, dtype=np.float64)
    out = np.full(nn.shape, np.inf)
    ok = nn >= 1
    r = phi / (phi + nn[ok])
    out[ok] = np.sqrt(-(np.log(r) + 2.0 * math.log(alpha)) / (1.0 - r))
    return out


@functools.lru_cache(maxsize=64)
def mixture_precision(tuned_for: int, confidence: float = 0.95) -> float:
    """The mixing precision ``phi`` whose confidence sequence is narrowest at ``tuned_for`` runs."""
    if tuned_for < 3:
        raise AnalysisError(f"the sequence must be tuned for at least 3 runs, got {tuned_for}")
    res = optimize.minimize_scalar(
        lambda lp: float(t_mixture_multiplier(tuned_for, confidence, math.exp(lp))),
        bounds=(-12.0, 8.0),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return float(math.exp(res.x))


def obf_spending(t: object, alpha: float) -> np.ndarray:
    """One-sided Lan-DeMets O'Brien-Fleming-type spending ``2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``.

    0 at ``t = 0``, ``alpha`` at ``t = 1``; a two-sided design spends it at ``alpha/2``
    on each side.
    """
    tt = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    z = special.ndtri(1.0 - alpha / 2.0)
    with np.errstate(divide="ignore"):
        return np.where(tt > 0, 2.0 * special.ndtr(-z / np.sqrt(tt)), 0.0)


def _pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))


def _simpson(lo: float, hi: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid points and Simpson weights over [lo, hi] (an odd number of points)."""
    k = max(2, int(math.ceil((hi - lo) / step / 2.0)) * 2)
    x = np.linspace(lo, hi, k + 1)
    w = np.full(k + 1, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    return x, w * (hi - lo) / (3.0 * k)


def _exit_probability(
    c: float, info: float, sd: float, u: np.ndarray, mass: np.ndarray, sides: int
) -> float:
    """P(continue so far, cross at this look) for boundary ``c`` on the z scale."""
    b = c * math.sqrt(info)
    up = special.ndtr((u - b) / sd)  # P(S_k >= b | S_{k-1} = u)
    if sides == 2:
        up = up + special.ndtr((-b - u) / sd)
    return float(mass @ up)


def _solve_boundary(
    target: float, info: float, sd: float, u: np.ndarray, mass: np.ndarray, sides: int
) -> float:
    """The boundary whose exit probability at this look is ``target``."""
    if not 0.0 < target < math.inf:
        return math.inf

    def gap(c: float) -> float:
        return _exit_probability(c, info, sd, u, mass, sides) - target

    if gap(0.0) <= 0.0:  # more to spend than is left to cross: stop at any value
        return 0.0
    if gap(_SEARCH_MAX) > 0.0:
        return math.inf
    return float(optimize.brentq(gap, 0.0, _SEARCH_MAX, xtol=1e-12))


@functools.lru_cache(maxsize=256)
def _gs_z(info: tuple[float, ...], alpha: float, sides: int) -> tuple[float, ...]:
    total = info[-1]
    # each side spends the one-sided function at alpha / sides (as ldbounds and gsDesign)
    spend = sides * obf_spending(np.asarray(info) / total, alpha / sides)
    inc = np.diff(np.concatenate(([0.0], spend)))
    bounds: list[float] = []
    u = w = dens = np.zeros(0)
    prev = 0.0
    for k, i_k in enumerate(info):
        sd = math.sqrt(i_k - prev)
        if k == 0:
            c = float(special.ndtri(1.0 - inc[0] / sides)) if inc[0] > 0 else math.inf
        else:
            c = _solve_boundary(float(inc[k]), i_k, sd, u, w * dens, sides)
        bounds.append(c)
        # density of S_k on the continuation region, for the next look
        b = min(c, _UPPER_CUT) * math.sqrt(i_k)
        lo = -b if sides == 2 else -_LOWER_CUT * math.sqrt(i_k)
        step = min(sd, math.sqrt(info[k + 1] - i_k) if k + 1 < len(info) else sd) / _GRID_PER_SD
        x, wx = _simpson(lo, b, step)
        if k == 0:
            new = _pdf(x / sd) / sd
        else:
            new = _pdf((x[:, None] - u[None, :]) / sd) @ (w * dens) / sd
        u, w, dens, prev = x, wx, new, i_k
    return tuple(bounds)


def group_sequential_z(
    looks: Sequence[float], max_info: float, confidence: float = 0.95, sides: int = 2
) -> np.ndarray:
    """Lan-DeMets O'Brien-Fleming-type z boundaries at the given looks.

    ``looks`` are the information levels (here: numbers of runs) at which the data were
    looked at, increasing; ``max_info`` the planned maximum (information fraction
    ``t = look / max_info``, capped at 1). ``sides=2`` for ``|Z| >= c`` (each side
    spends :func:`obf_spending` at ``alpha/2``), ``1`` for ``Z >= c``. A look that
    has nothing left to spend gets ``inf``.
    """
    alpha = _alpha(confidence)
    if sides not in (1, 2):
        raise AnalysisError(f"sides must be 1 or 2, got {sides!r}")
    arr = np.asarray(looks, dtype=np.float64)
    if arr.size == 0:
        return np.zeros(0)
    if not (arr > 0).all() or (np.diff(arr) <= 0).any():
        raise AnalysisError("looks must be positive and strictly increasing")
    if not max_info > 0:
        raise AnalysisError(f"the planned maximum must be > 0, got {max_info!r}")
    capped = np.minimum(arr, max_info)
    keep = np.concatenate(([True], np.diff(capped) > 0))  # looks past the maximum spend nothing
    info = tuple(float(v) for v in capped[keep])
    # the spending function needs t relative to max_info, not to the last look
    z = np.asarray(_gs_z_at(info, float(max_info), alpha, sides))
    out = np.full(arr.shape, np.inf)
    out[np.flatnonzero(keep)] = z
    return out


def _gs_z_at(
    info: tuple[float, ...], max_info: float, alpha: float, sides: int
) -> tuple[float, ...]:
    """Boundaries with spending at ``info / max_info``: add a virtual final look if needed."""
    if info[-1] >= max_info:
        return _gs_z(info, alpha, sides)
    # spending at t < 1 only: compute with a virtual look at max_info and drop it; the
    # boundaries of earlier looks do not depend on later looks
    return _gs_z((*info, max_info), alpha, sides)[:-1]


def group_sequential_multiplier(
    looks: Sequence[int], max_runs: int, confidence: float = 0.95
) -> np.ndarray:
    """Student-t multipliers ``c_t`` of ``mean +- c_t s / sqrt(n)`` at each look of ``n`` runs.

    Each look keeps the two-sided nominal level ``p_k = 2 (1 - Phi(c_k))`` of its z
    boundary and uses the t quantile with ``n - 1`` degrees of freedom (Jennison &
    Turnbull's significance-level approach for an unknown variance). The intervals are
    the repeated confidence intervals of the design.
    """
    z = group_sequential_z(looks, max_runs, confidence, sides=2)
    n = np.asarray(looks, dtype=np.float64)
    out = np.full(z.shape, np.inf)
    ok = np.isfinite(z) & (n >= 2)
    p_half = special.ndtr(-z[ok])
    out[ok] = t_isf(p_half, n[ok] - 1.0)
    return out
