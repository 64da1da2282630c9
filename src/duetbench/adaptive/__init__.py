"""Measuring until sure: anytime-valid stopping, verdicts, costs and method choice.

Pure numpy/scipy like :mod:`duetbench.analysis`: no printing, no files. The scheduler
calls :func:`decide` after every completed run of a benchmark; :func:`estimate_costs`
and :mod:`.planning` predict runs and machine time; :func:`choose_method` is
``method: auto``. How it works and the evidence: docs/adaptive.md.
"""

from __future__ import annotations

from ..analysis.costs import CostModel, detect_warmup, estimate_costs, repetition_seconds
from ..analysis.paired_runs import paired_runs, run_level_values
from .method_choice import PILOT_RUNS, PILOT_SHARE, MethodChoice, choose_method
from .planning import (
    Plan,
    StopRuns,
    best_iterations,
    plan_for_power,
    plan_for_precision,
    precision_stop_runs,
)
from .prior import HostPriors, Prior
from .rules import (
    Decision,
    Goal,
    Outcome,
    StopReason,
    StopRule,
    Stops,
    decide,
    first_stops,
    outcomes,
    runs_to_reach,
    with_first_look,
)
from .sequential import Design, Intervals, look_multipliers, running_intervals

__all__ = [
    "PILOT_RUNS",
    "PILOT_SHARE",
    "CostModel",
    "Decision",
    "Design",
    "Goal",
    "HostPriors",
    "Intervals",
    "MethodChoice",
    "Outcome",
    "Plan",
    "Prior",
    "StopReason",
    "StopRule",
    "StopRuns",
    "Stops",
    "best_iterations",
    "choose_method",
    "decide",
    "detect_warmup",
    "estimate_costs",
    "first_stops",
    "look_multipliers",
    "outcomes",
    "paired_runs",
    "plan_for_power",
    "plan_for_precision",
    "precision_stop_runs",
    "repetition_seconds",
    "run_level_values",
    "with_first_look",
    "running_intervals",
    "runs_to_reach",
]
