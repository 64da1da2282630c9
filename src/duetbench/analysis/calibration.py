"""Which settings kept their nominal false-alarm rate on the simulations (provisional)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .compare import CompareOptions


def calibrated(opts: CompareOptions, units: np.ndarray, clustered: np.ndarray) -> np.ndarray:
    """True where the verdict's settings were calibrated at this many runs (clusters)."""
    n = np.asarray(units)
    if opts.test == "utest-pooled":
        return np.zeros(len(n), dtype=bool)
    return np.ones(len(n), dtype=bool)
