"""Analysis of the iterations table: pure numpy/scipy/pandas, no printing, no files.

Filters, overlaps, pairing, interval engines, tests and evaluation helpers, each
defined in docs/statistics.md (by section). The entry point is :func:`compare`.
"""

from __future__ import annotations

from .compare import CompareOptions, compare, compare_tests, difference_test, ratio_test
from .evaluation_helpers import (
    cv,
    minimal_detectable_slowdown,
    runtime_speedup,
    shuffle_check,
    slow_down,
)
from .filters import drop_warmup, winsorize
from .intervals import (
    GroupIntervals,
    bootstrap_interval,
    group_generators,
    t_interval,
    weighted_bootstrap_interval,
)
from .overlaps import overlap_rate, overlap_time, overlaps, relative_overlap_time
from .pairing import pair
from .stats import (
    VERDICTS,
    ChangeResult,
    ConfidenceInterval,
    MannWhitneyResult,
    interval_verdicts,
    mann_whitney_u,
)

__all__ = [
    "VERDICTS",
    "ChangeResult",
    "CompareOptions",
    "ConfidenceInterval",
    "GroupIntervals",
    "MannWhitneyResult",
    "bootstrap_interval",
    "compare",
    "compare_tests",
    "cv",
    "difference_test",
    "drop_warmup",
    "group_generators",
    "mann_whitney_u",
    "minimal_detectable_slowdown",
    "overlap_rate",
    "overlap_time",
    "overlaps",
    "pair",
    "ratio_test",
    "relative_overlap_time",
    "runtime_speedup",
    "shuffle_check",
    "slow_down",
    "t_interval",
    "interval_verdicts",
    "weighted_bootstrap_interval",
    "winsorize",
]
