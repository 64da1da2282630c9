"""Run-level values of an experiment: their home is :mod:`duetbench.analysis.run_values`
(the evaluation needs them too, and analysis/ may not import adaptive/); kept here for
the API of docs/adaptive.md."""

from ..analysis.run_values import KEY, PairedRuns, paired_runs, run_level_values

__all__ = ["KEY", "PairedRuns", "paired_runs", "run_level_values"]
