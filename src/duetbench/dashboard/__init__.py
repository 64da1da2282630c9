"""``duet dashboard``: a static site of a results repository (docs/history.md, "Dashboard").

:func:`build_dashboard` reads a repository through the history API and writes an
index of benchmarks (trend lines, latest verdicts, regressions, environment drift)
and one page per benchmark (its series with intervals, detected changes, user marks
and the experiments with links to their ``duet report``). The site works from
``file://`` and from any static host; plotly.js is written once, to
``assets/plotly.min.js``.
"""

from __future__ import annotations

from .site import DashboardError, DashboardSummary, build_dashboard

__all__ = ["DashboardError", "DashboardSummary", "build_dashboard"]
