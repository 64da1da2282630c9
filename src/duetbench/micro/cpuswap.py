"""Both sides of a pinned duet take turns on each other's CPU (docs/micro.md, "Placement").

Loaded by duet micro's worker (``worker.py``) from its own directory, like its other
helpers: standard library only, Python >= 3.8.

A virtual CPU can run slower than its neighbour for seconds at a time (docs/performance.md,
"Unequal virtual CPUs"); with each side pinned to one CPU for a whole run, that reads as a
difference between A and B. The executor tells each side of a pinned two-CPU run its
own CPU and the other side's (``DUET_CPU_SWAP=own,other``). Before each sample the
worker moves itself to ``own`` in the even periods of the system's monotonic clock and
to ``other`` in the odd ones -- the same clock and period on both sides, so the two
move at the same boundary, each onto the CPU the other left, and every side spends
half its samples on each CPU. In a synchronous duet both sides start a sample at the
same moment, so they cross a boundary together; in an asynchronous one they may
disagree for at most one sample per period, which is why the period is many samples
long (``--swap-every``, chosen by duet micro from the calibration).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

ENV_SWAP = "DUET_CPU_SWAP"


class CpuSwap:
    """Moves this process between ``cpus[0]`` (even periods) and ``cpus[1]`` (odd ones)."""

    def __init__(
        self,
        cpus: tuple,
        period_s: float,
        setter: Callable[[int, set], None] | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.cpus = cpus
        self.period_ns = max(1, round(period_s * 1e9))
        self._set = setter if setter is not None else os.sched_setaffinity
        self._clock = clock
        self.slot: int | None = None
        self.moves = 0
        self.error: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str], period_s: float | None) -> CpuSwap | None:
        """The swap the executor asked for, or ``None``: no ``DUET_CPU_SWAP``, no period,
        a platform without ``sched_setaffinity``, or a value that is not two CPUs."""
        text = environ.get(ENV_SWAP, "").strip()
        if not text or not period_s or not hasattr(os, "sched_setaffinity"):
            return None
        try:
            own, other = (int(part) for part in text.split(","))
        except ValueError:
            return None
        if own == other or own < 0 or other < 0:
            return None
        return cls((own, other), period_s)

    def place(self) -> None:
        """Be on this period's CPU before the next sample (a failed move ends the swapping)."""
        if self.error is not None:
            return
        slot = (self._clock() // self.period_ns) % 2
        if slot == self.slot:
            return
        try:
            self._set(0, {self.cpus[slot]})
        except OSError as exc:  # e.g. a container's cpuset without the other CPU
            self.error = f"cannot move to CPU {self.cpus[slot]}: {exc.strerror or exc}"
            return
        self.moves += self.slot is not None
        self.slot = slot

    def to_json(self) -> dict:
        return {
            "cpus": list(self.cpus),
            "period_s": self.period_ns / 1e9,
            "moves": self.moves,
            "error": self.error,
        }
