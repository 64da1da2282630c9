"""Which settings kept their nominal false-alarm rate on the simulations.

``benchmarks/calibration_study.py`` measured every test x interval x run statistic x
method at 2, 3, 5, 10 and 20 runs under six noise models (docs/statistics.md,
"Calibration of every option"). A setting counts as calibrated at ``n`` runs when its
worst A/A false-alarm rate over the methods and noise models stayed at or below 7 %
at a nominal 5 % (1000 experiments per cell) at every measured run count from ``n``
up. Beyond 20 runs the 20-run result stands; the studentized interval, conservative
up to 5 runs and not from 10 on, counts as not calibrated.

* ``t``: worst 6.3-6.7 % at 3-20 runs; 8.6 % at 2 runs, where a per-process shift in
  one of the two runs decides the verdict.
* ``percentile``, ``bca``: worst 10.5-54 % up to 20 runs.
* ``studentized``: at most 0.2 % at 2-3 runs (unbounded intervals), 6.9 % at 5,
  10.1-12.5 % at 10 and 20.
* ``utest`` (signed-rank test of the run values): 3.4-6.8 % at 10 and 20 runs; it
  cannot reject at all with fewer than 6 runs at 95 %.
* ``utest-pooled``: 28-76 % for seqn, up to 62 % for the duets.

With clustering the resampled units are hosts: the clustered ``t`` reading kept
5.0-6.3 % with 8 hosts, the clustered percentile 8.8-10 % (tests/test_analysis_cluster.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from duetbench.options import CompareOptions

#: Fewest runs (or clusters) from which the Student-t interval was calibrated.
T_MIN_RUNS = 3


def calibrated(
    opts: CompareOptions, units: npt.ArrayLike, clustered: npt.ArrayLike | None = None
) -> np.ndarray:
    """True where the verdict's settings were calibrated at this many runs (clusters).

    ``units`` is the number of runs (of hosts, for clustered groups) per group.
    """
    n = np.asarray(units, dtype=np.int64)
    if opts.test == "utest-pooled":
        return np.zeros(n.shape, dtype=bool)
    if opts.test == "utest":
        return n >= 2
    if opts.interval == "t":
        return n >= T_MIN_RUNS
    return np.zeros(n.shape, dtype=bool)
