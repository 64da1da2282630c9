"""`duet plan --precision / --detect`: predictions per benchmark x method of a config
from the runs of an earlier results directory (docs/adaptive.md, "Cost model and planning")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from ..analysis.costs import CostModel, estimate_costs
from ..analysis.distributions import chi2_ppf, f_cdf, f_ppf, t_ppf
from ..errors import AnalysisError
from .planning import Plan, plan_for_power, plan_for_precision, precision_stop_runs
from .prior import Prior
from .rules import StopRule

__all__ = ["RANGE_LEVEL", "FixedReach", "fixed_reach", "forecast"]

#: the probability with which a fixed-count plan's stated precision is reached
REACH_PROBABILITY = 0.95
#: coverage of the range given with each prediction (the uncertainty of the spread
#: estimated from the earlier runs: a chi-square interval on its variance)
RANGE_LEVEL = 0.90


def _rule(stop: Any, until: str, precision: float | None) -> StopRule:
    kw: dict[str, Any] = stop.rule_kwargs() if stop is not None else {}
    kw.pop("budget_s", None)  # a prediction is what it would take, without the budget
    kw["until"] = until
    if precision is not None:
        kw["precision"] = precision
    return StopRule.create(**kw)


def forecast(
    exp: Any,
    table: pd.DataFrame | None = None,
    *,
    precision: float | None = None,
    detect: float | None = None,
    only: list[str] | None = None,
    models: Mapping[tuple[str, str], CostModel] | None = None,
    evidence: Mapping[tuple[str, str], str] | None = None,
    missing: str = "no earlier runs: run a pilot, e.g. --max-runs 5",
    priors: Mapping[tuple[str, str], Prior] | None = None,
) -> list[dict[str, Any]]:
    """A row per benchmark x method the config runs: iterations per run, runs and machine
    nanoseconds predicted for ``precision`` (relative half-width) or for 80 % power to
    detect ``detect`` (relative change), from the earlier runs in ``table`` -- or from
    ``models`` per (benchmark, method) (a results repository's priors: their ``runs - 1``
    is the spread's degrees of freedom), with ``evidence`` saying where each came from.
    Without a goal, only the fixed-count rows below. A benchmark whose run count is fixed
    (no ``stop:``) also states the precision its runs reach: :func:`fixed_reach`.
    ``priors``: per (benchmark, method) the repository's :class:`~.prior.Prior` that `duet
    run --repo` stops with (its spread and shape) -- a precision goal's stop is then
    predicted for the rule with that prior, at the spread the prediction assumes."""
    if models is None:
        if table is None:
            raise AnalysisError("forecast needs earlier runs: a table or cost models")
        models = {(b, m): model for (_, b, m), model in estimate_costs(table).items()}
    by_name = models
    rows = []
    for bench in exp.benchmarks:
        if only and bench.name not in only:
            continue
        for method in ("seqn", "aduet", "sduet"):
            count = dict(bench.repetitions).get(method, 0)
            if count <= 0:
                continue
            model = by_name.get((bench.name, method))
            row: dict[str, Any] = {"benchmark": bench.name, "method": method}
            if model is None:
                rows.append({**row, "evidence": missing})
                continue
            if bench.stop is None:  # a fixed count: what it reaches, and how surely
                reach = fixed_reach(model, count, goal=precision)
                row.update(
                    fixed_runs=count,
                    fixed_time_ns=_ns(count * model.run_seconds()),
                    fixed_reach=reach.reach,
                    fixed_probability=reach.probability,
                )
            source = (evidence or {}).get((bench.name, method), f"{model.runs} runs")
            if precision is None and detect is None:
                rows.append({**row, "evidence": source})
                continue
            if precision is not None:
                rule = _rule(bench.stop, "precise", precision)

                def predict(m: CostModel, i: int | None, _r: StopRule = rule) -> Plan:
                    return plan_for_precision(m, precision, _r, iterations=i)
            else:
                rule = _rule(bench.stop, "decided", None)

                def predict(m: CostModel, i: int | None, _r: StopRule = rule) -> Plan:
                    return plan_for_power(m, float(detect), rule=_r, iterations=i)  # type: ignore[arg-type]

            # as the earlier runs were run (the config's iterations, as measured), and
            # with the iterations per run the cost model finds best
            as_run = max(1, round(model.iterations))
            plan = predict(model, as_run)
            best = predict(model, None)
            if precision is not None:  # where the rule stops: simulated (planning.py)
                sd = math.sqrt(model.value_var(as_run))
                df = max(model.runs - 1, 1)
                prior = (priors or {}).get((bench.name, method))
                used = rule if prior is None else replace(rule, prior=replace(prior, sd=sd))
                stop = precision_stop_runs(used, sd, df=df)
                low, high = stop.low, stop.high
                plan = _with_runs(plan, stop.median, model)
                sd_best = math.sqrt(model.value_var(best.iterations))
                used = rule if prior is None else replace(rule, prior=replace(prior, sd=sd_best))
                best = _with_runs(best, precision_stop_runs(used, sd_best).median, model)
            else:
                low, high = (
                    predict(_scaled(model, f), as_run).runs for f in _variance_range(model)
                )
            rows.append(
                {
                    **row,
                    "iterations": plan.iterations,
                    "runs": plan.runs,
                    "runs_low": low,
                    "runs_high": high,
                    "runs_range": _range_text(low, high),
                    "time_ns": _ns(plan.seconds),
                    "half_width": plan.half_width if math.isfinite(plan.half_width) else None,
                    "best_iterations": best.iterations,
                    "best_runs": best.runs,
                    "best_time_ns": _ns(best.seconds),
                    "evidence": source,
                }
            )
    return rows


def _with_runs(plan: Plan, runs: int | None, model: CostModel) -> Plan:
    seconds = None if runs is None else runs * model.run_seconds(plan.iterations)
    return replace(plan, runs=runs, seconds=seconds)


def _ns(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1e9)


def _variance_range(model: CostModel) -> tuple[float, float]:
    """Factors on the run values' variance giving a ``RANGE_LEVEL`` interval for it.

    With ``k = runs - 1`` degrees of freedom, ``k s^2 / sigma^2`` is chi-square: from 5
    runs the true variance lies anywhere from 0.42x to 5.6x the estimate (90 %), and the
    runs needed scale with it -- a pilot of 5 runs cannot predict within 1.5x."""
    k = max(model.runs - 1, 1)
    tail = (1 - RANGE_LEVEL) / 2
    return k / float(chi2_ppf(1 - tail, k)), k / float(chi2_ppf(tail, k))


def _scaled(model: CostModel, factor: float) -> CostModel:
    return replace(
        model,
        run_var=model.run_var * factor,
        between_runs=model.between_runs * factor,
        within_runs=model.within_runs * factor,
    )


def _range_text(low: int | None, high: int | None) -> str:
    if low is None:
        return "out of reach"
    return f"{low}-{high}" if high is not None else f"{low}-out of reach"


@dataclass(frozen=True)
class FixedReach:
    """What ``runs`` runs reach: the relative half-width ``reach`` that the interval is
    at most with probability ``level``, and the ``probability`` that it reaches the
    goal (None without one)."""

    runs: int
    reach: float | None
    probability: float | None
    level: float = REACH_PROBABILITY


def fixed_reach(
    model: CostModel,
    runs: int,
    *,
    goal: float | None = None,
    level: float = REACH_PROBABILITY,
    confidence: float = 0.95,
) -> FixedReach:
    """The precision a fixed count of ``runs`` reaches (docs/adaptive.md, "Cost model
    and planning").

    The interval of a fixed count is ``mean +- t(n-1) s / sqrt(n)`` (the default ``t``
    engine) with ``s`` the spread of its own runs. Its half-width on the log scale is
    at most ``h`` when ``s^2 <= h^2 n / t^2``. The spread is known only as an estimate
    ``s0`` with ``k = model.runs - 1`` degrees of freedom: under normal run values with
    the same sigma, ``s^2 / s0^2`` follows an F(n - 1, k) distribution (the ratio of the
    two chi-square variables ``(n-1) s^2 / sigma^2`` and ``k s0^2 / sigma^2``), so
    ``P(half-width <= h) = F.cdf(h^2 n / (t^2 s0^2); n - 1, k)``. As a relative
    half-width ``sinh(h)`` (the rule's ``asinh`` of the goal, inverted). Fewer than 2
    runs give no interval (None)."""
    if runs < 2:
        return FixedReach(runs, None, None if goal is None else 0.0, level)
    sd = math.sqrt(model.value_var(model.iterations))
    k = max(model.runs - 1, 1)
    t = float(t_ppf(0.5 + confidence / 2.0, runs - 1))
    if sd == 0:
        return FixedReach(runs, 0.0, None if goal is None else 1.0, level)
    reach = t * sd * math.sqrt(float(f_ppf(level, runs - 1, k)) / runs)
    probability = None
    if goal is not None:
        x = (math.asinh(goal) ** 2) * runs / (t * sd) ** 2
        probability = float(f_cdf(x, runs - 1, k))
    return FixedReach(runs, math.sinh(reach), probability, level)
