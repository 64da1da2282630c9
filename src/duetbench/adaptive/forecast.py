"""`duet plan --precision / --detect`: predictions per benchmark x method of a config
from the runs of an earlier results directory (docs/adaptive.md, "Cost model and planning")."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pandas as pd
from scipy import stats

from ..analysis.costs import CostModel, estimate_costs
from .planning import Plan, plan_for_power, plan_for_precision, precision_stop_runs
from .rules import StopRule

__all__ = ["RANGE_LEVEL", "forecast"]

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
    table: pd.DataFrame,
    *,
    precision: float | None = None,
    detect: float | None = None,
    only: list[str] | None = None,
) -> list[dict[str, Any]]:
    """A row per benchmark x method the config runs: iterations per run, runs and machine
    nanoseconds predicted for ``precision`` (relative half-width) or for 80 % power to
    detect ``detect`` (relative change), from the earlier runs in ``table``."""
    models = estimate_costs(table)
    by_name = {(b, m): model for (_, b, m), model in models.items()}
    rows = []
    for bench in exp.benchmarks:
        if only and bench.name not in only:
            continue
        for method in ("seqn", "aduet", "sduet"):
            if dict(bench.repetitions).get(method, 0) <= 0:
                continue
            model = by_name.get((bench.name, method))
            row: dict[str, Any] = {"benchmark": bench.name, "method": method}
            if model is None:
                rows.append({**row, "evidence": "no earlier runs: run a pilot, e.g. --max-runs 5"})
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
                stop = precision_stop_runs(rule, sd, df=max(model.runs - 1, 1))
                low, high = stop.low, stop.high
                plan = _with_runs(plan, stop.median, model)
                sd_best = math.sqrt(model.value_var(best.iterations))
                best = _with_runs(best, precision_stop_runs(rule, sd_best).median, model)
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
                    "evidence": f"{model.runs} runs",
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
    return k / float(stats.chi2.ppf(1 - tail, k)), k / float(stats.chi2.ppf(tail, k))


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
