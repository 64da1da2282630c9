"""The cost model (machine time per run and per iteration): its home is
:mod:`duetbench.analysis.costs` (`duet evaluate`'s precision table needs it, and
analysis/ may not import adaptive/); kept here for the API of docs/adaptive.md."""

from ..analysis.costs import (
    CostModel,
    detect_warmup,
    estimate_costs,
    precision_per_second,
    repetition_seconds,
)

__all__ = [
    "CostModel",
    "detect_warmup",
    "estimate_costs",
    "precision_per_second",
    "repetition_seconds",
]
