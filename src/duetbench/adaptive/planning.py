"""Multi-level planning: iterations per run and runs for a precision or a power.

With the variance of one run value ``s_r^2 + kappa s_i^2 / I`` and its cost
``c_r + I c_i`` (:class:`~duetbench.analysis.costs.CostModel`), the variance of the
mean per machine-second is ``(s_r^2 + kappa s_i^2 / I)(c_r + I c_i)``, smallest at
``I* = sqrt(c_r kappa s_i^2 / (c_i s_r^2))`` (Kalibera & Jones 2013). The runs are
then the fewest whose interval -- under the stopping rule's design -- reaches the
target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from duetbench.errors import AnalysisError

from ..analysis.costs import CostModel
from ..analysis.distributions import chi2_ppf
from ..schema import Verdict
from .rules import StopRule, first_stops, goal_first_look, runs_to_reach
from .sequential import Design

__all__ = [
    "Plan",
    "StopRuns",
    "best_iterations",
    "plan_for_power",
    "plan_for_precision",
    "precision_stop_runs",
]

#: simulated experiments behind a predicted stopping point (seeded: a plan is reproducible)
STOP_DRAWS = 500
#: longest simulated experiment; beyond it the prediction is the interval's own reach
STOP_HORIZON = 2000
#: simulated experiments behind the check of a power plan
POWER_DRAWS = 1000


@dataclass(frozen=True)
class Plan:
    """Predicted measurement plan for one benchmark and method.

    ``runs`` None: not reachable within 100,000 runs. ``seconds``: machine seconds
    of those runs (a seqn repetition counts both runs).
    """

    suite: str
    benchmark: str
    method: str
    iterations: int
    runs: int | None
    seconds: float | None
    half_width: float  # relative half-width predicted at `runs`
    goal: str  # e.g. "precision 1 %" or "80 % power for +2 %"


def best_iterations(model: CostModel, *, lowest: int = 1, highest: int = 10_000) -> int:
    """Iterations per run with the best precision per machine-second (clamped)."""
    if lowest < 1 or highest < lowest:
        raise AnalysisError(
            f"iterations bounds must satisfy 1 <= lowest <= highest, got {lowest}, {highest}"
        )
    num = model.seconds_fixed * model.stat_factor * model.within_runs
    den = model.seconds_per_iteration * model.between_runs
    if den <= 0:
        best = float(highest) if num > 0 else float(lowest)
    else:
        best = math.sqrt(num / den)
    # the optimum of a convex function over integers: check both neighbours
    cand = {min(max(c, lowest), highest) for c in (math.floor(best), math.ceil(best))}
    return min(cand, key=lambda i: model.value_var(i) * model.run_seconds(i))


def _iterations(model: CostModel, iterations: int | None) -> int:
    return best_iterations(model) if iterations is None else int(iterations)


def _half_width(rule: StopRule, runs: int, sd: float) -> float:
    mult = float(rule.multipliers(max(runs, 2))[runs - 1])
    return math.expm1(mult * sd / math.sqrt(runs)) if math.isfinite(mult) else math.inf


def plan_for_precision(
    model: CostModel, precision: float, rule: StopRule | None = None, iterations: int | None = None
) -> Plan:
    """Runs (and machine time) until the rule's interval has relative half-width ``precision``.

    ``iterations``: per run (None: :func:`best_iterations`). The prediction assumes the
    spread seen so far and a change near 0.
    """
    if not 0 < precision < 1:
        raise AnalysisError(f"precision must be > 0 and < 1 (0.01 for 1 %), got {precision!r}")
    rule = rule or StopRule.create(precision=precision)
    i = _iterations(model, iterations)
    sd = math.sqrt(model.value_var(i))
    runs = runs_to_reach(math.asinh(precision), sd, rule, 0)
    return _plan(model, rule, i, runs, sd, f"precision {precision * 100:g} %")


def plan_for_power(
    model: CostModel,
    change: float,
    *,
    power: float = 0.8,
    rule: StopRule | None = None,
    iterations: int | None = None,
) -> Plan:
    """Runs until the rule detects a true ``change`` (relative) with probability ``power``.

    Detection: the interval lies beyond the rule's threshold on the change's side.
    Solved at a single final look, ``(m(n) + z_power) sd / sqrt(n) <= |log(1 + change)| -
    log(1 + threshold)``, from the rule's first look on (``goal_first_look``). The guards
    widen the interval of independent run values too, by the serial correlation and
    skew their runs cannot yet rule out (docs/adaptive.md, "Assumptions, and how they
    are checked"), so that count is then checked in :data:`POWER_DRAWS` seeded simulated experiments of
    normal run values and raised by 5 % steps until they reach ``power`` (with two
    Monte Carlo standard errors to spare).
    """
    if not 0.5 <= power < 1:
        raise AnalysisError(f"power must be in [0.5, 1), got {power!r}")
    if not change > -1 or change == 0:
        raise AnalysisError(f"the change to detect must be non-zero and > -100 %, got {change!r}")
    rule = rule or StopRule.create(until="decided")
    i = _iterations(model, iterations)
    sd = math.sqrt(model.value_var(i))
    margin = abs(math.log1p(change)) - math.log1p(rule.threshold)
    z = float(special.ndtri(power))
    runs = None
    if margin > 0:
        n = np.arange(1, 100_001)
        mult = rule.multipliers(len(n))
        ok = ((mult + z) * sd / np.sqrt(n) <= margin) & (n >= goal_first_look(rule))
        hit = np.flatnonzero(ok)
        runs = int(n[hit[0]]) if len(hit) else None
    if runs is not None and sd > 0:
        runs = _simulated_power_runs(rule, sd, math.log1p(change), power, runs)
    return _plan(model, rule, i, runs, sd, f"{power * 100:g} % power for {change * 100:+g} %")


def _simulated_power_runs(rule: StopRule, sd: float, shift: float, power: float, runs: int) -> int:
    """The fewest of ``runs``, ``runs * 1.05``, ... (up to :data:`STOP_HORIZON`) at which
    the rule, stopped at that maximum, decides the ``shift`` (log) in ``power`` of
    :data:`POWER_DRAWS` seeded experiments, with two Monte Carlo standard errors to spare
    (``runs`` itself beyond the horizon)."""
    want = Verdict.SLOWER if shift > 0 else Verdict.FASTER
    rng = np.random.default_rng(0)
    n = runs
    while n <= STOP_HORIZON:
        z = rng.standard_normal((POWER_DRAWS, n))
        st = first_stops(shift + sd * z, replace(rule, max_runs=max(n, rule.min_runs)))
        # two Monte Carlo standard errors above the goal: the plan errs on the safe side
        if (st.verdict == want).mean() >= power + 2.0 * math.sqrt(
            power * (1 - power) / POWER_DRAWS
        ):
            return n
        n = max(n + 1, math.ceil(n * 1.05))
    return runs


def _plan(
    model: CostModel, rule: StopRule, iterations: int, runs: int | None, sd: float, goal: str
) -> Plan:
    """The plan of ``runs`` runs of ``iterations`` (None: out of reach) toward ``goal``."""
    return Plan(
        model.suite,
        model.benchmark,
        model.method,
        iterations,
        runs,
        None if runs is None else runs * model.run_seconds(iterations),
        _half_width(rule, runs, sd) if runs is not None else math.inf,
        goal,
    )


@dataclass(frozen=True)
class StopRuns:
    """Where a precision rule stops: the median run count and a ``level`` range (None:
    beyond reach, or beyond the simulated horizon), and whether it was simulated."""

    median: int | None
    low: int | None
    high: int | None
    simulated: bool


def precision_stop_runs(
    rule: StopRule,
    sd: float,
    *,
    df: int | None = None,
    level: float = 0.90,
    draws: int = STOP_DRAWS,
    seed: int = 0,
) -> StopRuns:
    """Runs at which the precision ``rule`` stops for normal run values of SD ``sd``.

    The rule stops at the first look whose interval is narrow enough: a first passage of
    the estimated spread, which comes earlier than where the interval at the spread
    ``sd`` itself reaches the goal (``runs_to_reach``) and differs from one experiment to
    the next (where that point is 27 runs, the stop was at 10-37 runs in 90 % of
    experiments). So the median and the ``level`` range come from ``draws`` seeded
    simulated experiments. ``df``: degrees of freedom of ``sd`` (earlier runs - 1); the
    range then also holds what so few runs leave open about the spread -- each
    experiment draws its spread as ``sd * sqrt(df / chi2(df))`` -- while the median is
    at ``sd``. Group-sequential rules, and points beyond ``STOP_HORIZON`` runs, are
    predicted from the interval's reach alone (``simulated`` False).
    """
    if rule.until != "precise" or rule.precision is None:
        raise AnalysisError("precision_stop_runs needs a rule with until 'precise'")
    target = math.asinh(rule.precision)
    tail = (1.0 - level) / 2.0
    reach = runs_to_reach(target, sd, rule, 0)
    wide = sd if df is None else sd * math.sqrt(df / float(chi2_ppf(tail, df)))
    far = runs_to_reach(target, wide, rule, 0)
    if rule.resolved_design is Design.GROUP or far is None or 2 * far > STOP_HORIZON or sd == 0:
        narrow = sd if df is None else sd * math.sqrt(df / float(chi2_ppf(1 - tail, df)))
        low = runs_to_reach(target, narrow, rule, 0)
        return StopRuns(reach, low, far, simulated=False)
    horizon = max(2 * far, rule.min_runs + 2, 10)
    sim = replace(rule, max_runs=horizon)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((draws, horizon))
    at_sd = first_stops(z * sd, sim)
    spread = sd
    if df is not None:
        spread = sd * np.sqrt(df / rng.chisquare(df, size=(draws, 1)))
    drawn = first_stops(z * spread, sim)

    def runs_of(st: object, q: float) -> int | None:
        n = np.where(st.reason == "max_runs", horizon + 1, st.runs)  # type: ignore[attr-defined]
        value = int(np.ceil(np.quantile(n, q)))
        return None if value > horizon else value

    return StopRuns(
        runs_of(at_sd, 0.5), runs_of(drawn, tail), runs_of(drawn, 1.0 - tail), simulated=True
    )
