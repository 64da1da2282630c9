"""Continuous benchmarking: a results repository across versions, series, change detection.

- :class:`Repository` -- experiments of many versions in one SQLite file or a
  PostgreSQL database (``Repository.open``, ``add``, ``summary``, ``mark``, ``export``).
- :func:`series` -- per (suite, benchmark, host fingerprint, method): the paired series
  (chained direct comparisons of adjacent versions) and the absolute series.
- :func:`detect_changes` -- change points with sizes, intervals and evidence.

docs/history.md describes the schema, the series and the change detection.
"""

from __future__ import annotations

from ._db import HistoryError
from .fingerprint import HostFingerprint, fingerprint
from .repository import ExperimentInfo, HostInfo, Mark, Repository, StoredVersion, Summary
from .versions import Version, parse_versions, version_from_git

__all__ = [
    "ExperimentInfo",
    "HistoryError",
    "HostFingerprint",
    "HostInfo",
    "Mark",
    "Repository",
    "StoredVersion",
    "Summary",
    "Version",
    "fingerprint",
    "parse_versions",
    "version_from_git",
]
