"""`duet plan --precision / --detect`: predictions per benchmark x method of a config
from the runs of an earlier results directory (docs/adaptive.md, "Cost model and planning")."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .costs import estimate_costs
from .planning import plan_for_power, plan_for_precision
from .rules import StopRule

__all__ = ["forecast"]


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
                plan = plan_for_precision(model, precision, _rule(bench.stop, "precise", precision))
            else:
                threshold_rule = _rule(bench.stop, "decided", None)
                plan = plan_for_power(model, float(detect), rule=threshold_rule)  # type: ignore[arg-type]
            rows.append(
                {
                    **row,
                    "iterations": plan.iterations,
                    "runs": plan.runs,
                    "time_ns": None if plan.seconds is None else int(plan.seconds * 1e9),
                    "half_width": plan.half_width if math.isfinite(plan.half_width) else None,
                    "evidence": f"{model.runs} runs",
                }
            )
    return rows
