"""Continuous benchmarking: a results repository across versions, series, change detection.

- :class:`Repository` -- experiments of many versions in one SQLite file or a
  PostgreSQL database (``Repository.open``, ``add``, ``summary``, ``mark``, ``export``).
- :func:`series` -- per (suite, benchmark, host fingerprint, method): the paired series
  (chained direct comparisons of adjacent versions) and the absolute series.
- :func:`detect_changes` -- change points with sizes, intervals and evidence.
- :func:`priors` -- per benchmark x method on a host: the spread, cost and warm-up of
  its last experiments, for planning the next one.

docs/history.md describes the schema, the series and the change detection.
"""

from __future__ import annotations

from ._db import HistoryError
from .changes import detect_changes, detect_series
from .export import ExportSummary, export
from .findings import Change, ChangeReport, DetectionSettings, Dismissed, EnvironmentChange, Spike
from .fingerprint import HostFingerprint, fingerprint
from .model import ExperimentInfo, HostInfo, Mark, StoredVersion, Summary
from .priors import Prior, priors
from .repository import Filters, Repository
from .series import Series, SeriesKey, series
from .versions import Version, parse_versions, version_from_git

__all__ = [
    "Change",
    "ChangeReport",
    "DetectionSettings",
    "Dismissed",
    "EnvironmentChange",
    "ExperimentInfo",
    "ExportSummary",
    "Filters",
    "Series",
    "SeriesKey",
    "Spike",
    "detect_changes",
    "detect_series",
    "export",
    "series",
    "HistoryError",
    "HostFingerprint",
    "HostInfo",
    "Mark",
    "Prior",
    "Repository",
    "StoredVersion",
    "Summary",
    "Version",
    "fingerprint",
    "parse_versions",
    "priors",
    "version_from_git",
]
