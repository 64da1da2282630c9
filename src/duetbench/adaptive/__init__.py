"""Measuring until sure: anytime-valid stopping, verdicts, costs and method choice.

Pure numpy/scipy like :mod:`duetbench.analysis`: no printing, no files. The scheduler
calls :func:`decide` after every completed run of a benchmark; :func:`estimate_costs`
and :mod:`.planning` predict runs and machine time; :func:`choose_method` is
``method: auto``. How it works and the evidence: docs/adaptive.md.
"""

from __future__ import annotations

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
)
from .sequential import Design, Intervals, look_multipliers, running_intervals

__all__ = [
    "Decision",
    "Design",
    "Goal",
    "Intervals",
    "Outcome",
    "StopReason",
    "StopRule",
    "Stops",
    "decide",
    "first_stops",
    "look_multipliers",
    "outcomes",
    "running_intervals",
    "runs_to_reach",
]
