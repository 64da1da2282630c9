"""The neighbour's schedule: seeded on/off bursts (docs/noise.md, "Seeding").

Pure computation; no process is started here. numpy is imported when the first burst
is drawn, so that ``duet --help`` (which lists the patterns) does not load it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import DuetError

_PATTERNS: dict[str, str] = {
    "cpu": "CPU load on every chosen CPU during on periods",
    "memory": "memory-bandwidth load (streaming copies larger than the LLC) during on periods",
    "mixed": "each on period is cpu or memory (drawn from the seed) at a drawn load",
    "quiet": "no load at all (a do-nothing neighbour, for symmetric experiment designs)",
}

DEFAULT_ON_RANGE: tuple[float, float] = (0.5, 3.0)
DEFAULT_OFF_RANGE: tuple[float, float] = (0.5, 3.0)
DEFAULT_HORIZON_S = 3600.0
_BLOCK = 64  # periods drawn per generator call; fixed, so prefixes never depend on the horizon


def patterns() -> dict[str, str]:
    """The pattern names, each with a one-line description (iterate for the names)."""
    return dict(_PATTERNS)


def check_pattern(pattern: str) -> str:
    """``pattern`` if it is one of :func:`patterns`, else a :class:`DuetError` naming them."""
    if pattern not in _PATTERNS:
        raise DuetError(f"unknown noise pattern {pattern!r}; choose one of {', '.join(_PATTERNS)}")
    return pattern


@dataclass(frozen=True)
class Burst:
    """One on period followed by one off period.

    ``kind`` is the load of the on period (``cpu`` or ``memory``; ``none`` for quiet) and
    ``load`` its intensity in (0, 1].
    """

    on_s: float
    off_s: float
    kind: str
    load: float


def check_range(name: str, rng: Sequence[float]) -> tuple[float, float]:
    """``rng`` as ``(low, high)`` seconds with ``0 < low <= high``, else a DuetError."""
    try:
        lo, hi = (float(rng[0]), float(rng[1]))
    except (TypeError, ValueError, IndexError) as exc:
        raise DuetError(f"{name} must be a pair (low, high) of seconds, got {rng!r}") from exc
    if len(rng) != 2 or not (0 < lo <= hi) or not math.isfinite(hi):
        raise DuetError(f"{name} must satisfy 0 < low <= high (seconds), got {tuple(rng)!r}")
    return lo, hi


def draw_bursts(
    pattern: str,
    seed: int,
    intensity: float = 1.0,
    on_range: Sequence[float] = DEFAULT_ON_RANGE,
    off_range: Sequence[float] = DEFAULT_OFF_RANGE,
) -> Iterator[Burst]:
    """The endless, deterministic sequence of bursts of ``pattern`` for ``seed``.

    Durations come from one child generator of ``SeedSequence(seed)`` and the mixed
    pattern's kinds and loads from another, so ``cpu``, ``memory`` and ``mixed`` with the
    same seed share the same on/off timing. Durations are rounded to 1 ms.
    """
    check_pattern(pattern)
    on_lo, on_hi = check_range("on_range", on_range)
    off_lo, off_hi = check_range("off_range", off_range)
    if pattern == "quiet":
        return iter(())
    return _bursts(pattern, int(seed), float(intensity), on_lo, on_hi, off_lo, off_hi)


def _bursts(
    pattern: str,
    seed: int,
    intensity: float,
    on_lo: float,
    on_hi: float,
    off_lo: float,
    off_hi: float,
) -> Iterator[Burst]:
    import numpy as np  # here, not at the top: see the module doc

    timing_seq, kind_seq = np.random.SeedSequence(seed).spawn(2)
    timing = np.random.default_rng(timing_seq)
    kinds = np.random.default_rng(kind_seq)
    while True:
        u = timing.random((_BLOCK, 2))
        on = np.round(on_lo + u[:, 0] * (on_hi - on_lo), 3)
        off = np.round(off_lo + u[:, 1] * (off_hi - off_lo), 3)
        pick = kinds.integers(0, 2, _BLOCK)
        scale = kinds.uniform(0.5, 1.0, _BLOCK)
        for i in range(_BLOCK):
            if pattern == "mixed":
                kind = ("cpu", "memory")[int(pick[i])]
                load = round(float(scale[i]) * intensity, 3)
            else:
                kind, load = pattern, intensity
            yield Burst(float(on[i]), float(off[i]), kind, max(load, 0.01))
