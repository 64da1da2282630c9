"""duetbench: is B faster or slower than A, and by how much -- on noisy machines.

Public Python API (see docs/api.md):

- :func:`load` -- the iterations table of a results directory, Parquet or CSV file.
- :mod:`duetbench.analysis` -- ``compare`` and the tests, intervals, filters,
  pairing and evaluation measures behind it (DataFrames in, DataFrames or
  typed result objects out).
"""

from __future__ import annotations

from ._version import __version__

__all__ = ["__version__", "load"]


def load(path):  # noqa: ANN001, ANN201 - re-exported, documented in duetbench.process
    """Return the iterations table (pandas DataFrame) of a results dir, .parquet or .csv."""
    from .process import load as _load

    return _load(path)
