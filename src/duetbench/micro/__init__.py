"""Microbenchmarks: Python functions and asv / pytest-benchmark suites, timed by a
worker in each side's own interpreter (docs/micro.md).

``worker.py``, ``calibration.py``, ``discovery.py`` and ``handshake.py`` are
standard-library only and Python 3.8 compatible (they run where duetbench is
not installed); ``api.py`` is what duetbench itself calls.
"""

from __future__ import annotations

from .api import *  # noqa: F403 - the package's API is api.py's
from .api import __all__ as __all__
