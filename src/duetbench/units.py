"""Values written as text, one parser and one range per kind (docs/config.md, "Limits").

A **duration** (``30``, ``2.5``, ``"90s"``, ``"500ms"``, ``"5m"``, ``"1h"``: seconds)
lies between 1 ms and 30 days; a **percentage** (``"1%"``, ``"0.5 %"``, or a bare
fraction ``0.01``) between 0 % and 100 % (100 % excluded). The config (both formats)
and every command-line flag that takes such a value parse it here, so ``duet run
--threshold X`` and ``duet compare --threshold X`` accept and refuse the same values,
and the error says the range.

:class:`ValueTextError` is a :class:`~duetbench.errors.DuetError` (exit status 2 on
the command line) and a :class:`ValueError` (so the config's pydantic validators turn
it into an error with the file, line and key). Pure Python, base layer.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .errors import DuetError

__all__ = [
    "DURATION_RANGE",
    "MAX_DURATION_S",
    "MIN_DURATION_S",
    "PERCENTAGE_RANGE",
    "ValueTextError",
    "duration",
    "percentage",
]

#: the shortest and the longest duration anything takes (timeouts, budgets, samples)
MIN_DURATION_S = 0.001
MAX_DURATION_S = 30 * 24 * 3600.0
DURATION_RANGE = "from 1 ms to 30 days ('720h')"
PERCENTAGE_RANGE = "from 0 % to below 100 % (e.g. 1% or 0.01)"

# the length bound below keeps the pattern's matching short on hostile input
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "sec": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}
_MAX_TEXT = 40


class ValueTextError(DuetError, ValueError):
    """A duration or percentage that cannot be read, or lies outside its range."""


def _shown(value: Any) -> str:
    text = str(value)
    return repr(text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "...")


def _prefix(what: str) -> str:
    return f"{what}: " if what else ""


def duration(value: Any, what: str = "") -> float:
    """Seconds of ``value`` (a number of seconds, or text with a unit ms, s, m, h),
    within :data:`DURATION_RANGE`; ``what`` names the key or flag in the error."""
    if isinstance(value, bool):
        raise ValueTextError(
            f"{_prefix(what)}expected a duration such as 30, '90s' or '5m', not a boolean"
        )
    if not isinstance(value, int | float | str):
        raise ValueTextError(
            f"{_prefix(what)}expected a duration such as 30, '90s', '500ms' or '5m', "
            f"got {_shown(value)}"
        )
    if isinstance(value, str):
        m = _DURATION.match(value) if len(value) <= _MAX_TEXT else None
        if not m:
            raise ValueTextError(
                f"{_prefix(what)}{_shown(value)} is not a duration; write e.g. 30, '90s', "
                f"'500ms' or '5m' ({DURATION_RANGE})"
            )
        seconds: float = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        seconds = value
    # compared before float(): float() of an int like 10**400 overflows
    problem = ""
    if seconds != seconds:
        problem = "must be a number of seconds, not NaN"
    elif seconds <= 0:
        problem = "must be positive"
    elif seconds < MIN_DURATION_S:
        problem = "must be at least 1 ms"
    elif seconds > MAX_DURATION_S:
        problem = "can be at most 30 days ('720h')"
    if problem:
        raise ValueTextError(
            f"{_prefix(what)}a duration {problem} ({DURATION_RANGE}; docs/config.md, "
            f"section Limits), got {_shown(value)}"
        )
    return float(seconds)


def percentage(value: Any, what: str = "") -> float:
    """The fraction of ``value`` (``"1%"`` -> 0.01; a bare number is a fraction, ``0.01``),
    within :data:`PERCENTAGE_RANGE`; ``what`` names the key or flag in the error."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueTextError(
            f"{_prefix(what)}expected a percentage such as 1% or 0.01, got {_shown(value)}"
        )
    if isinstance(value, str):
        text = value.strip()
        try:
            v = float(text[:-1].strip()) / 100.0 if text.endswith("%") else float(text)
        except ValueError:
            raise ValueTextError(
                f"{_prefix(what)}{_shown(value)} is not a percentage; write e.g. 1% or 0.01 "
                f"({PERCENTAGE_RANGE})"
            ) from None
    else:
        try:
            v = float(value)
        except OverflowError:  # an int like 10**400
            v = math.inf
    if not (math.isfinite(v) and 0.0 <= v < 1.0):
        raise ValueTextError(
            f"{_prefix(what)}a percentage must lie {PERCENTAGE_RANGE}, got {_shown(value)}"
        )
    return v
