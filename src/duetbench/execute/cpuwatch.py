"""Which CPU each side of a shared duet ran on (run.json ``sides.<X>.ran_on``).

With `cpus: shared` the scheduler places the sides, and with two busy sides on two CPUs
it leaves each where it started. Virtual CPUs can differ in speed by tens of percent for
seconds at a time (docs/performance.md, section Placement, "Unequal virtual CPUs"); if
A ran on one CPU and B on the other in every run, such a difference cannot be told
apart from one between A and B, and the verdict notes say so (docs/statistics.md,
section Notes, `same_cpus`). The executor's wait loop calls :meth:`CpuWatch.tick`; every
``period`` seconds it counts, per side, the CPU of each of its running (state R)
processes -- the processes of the side's process group, found by scanning ``/proc``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ..proctools.procfs import PGRP as _PGRP
from ..proctools.procfs import PROCESSOR as _PROCESSOR
from ..proctools.procfs import STATE as _STATE
from ..proctools.procfs import pids as proc_pids
from ..proctools.procfs import stat_fields

#: seconds between two looks at where the sides' known processes run (a few stat reads)
WATCH_PERIOD = 0.2
#: seconds between two scans of /proc for the sides' processes (one scan: ~1 ms per 60
#: processes here, so the watch costs well under 0.1 % of a CPU)
SCAN_PERIOD = 2.0


class CpuWatch:
    """Samples of the CPUs each side's running processes were on, per side.

    /proc is scanned for the sides' processes at the first look, then after 0.2, 0.4,
    0.8 ... seconds and at most every ``scan`` seconds; in between only the processes
    found are looked at. A long-lived workload (an external harness, a JVM) is followed
    all along; the built-in harness's process per iteration is seen when a scan finds
    it, and until it ends."""

    def __init__(
        self, groups: Mapping[str, int], period: float = WATCH_PERIOD, scan: float = SCAN_PERIOD
    ) -> None:
        self._side_of = {pgid: side for side, pgid in groups.items()}
        self.counts: dict[str, dict[int, int]] = {side: {} for side in groups}
        self.period, self.scan = period, scan
        self._next = self._next_scan = 0.0
        self._gap = period  # between scans: doubles up to ``scan`` (workloads start late)
        self._members: dict[str, str] = {}  # pid -> side

    def tick(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if now < self._next:
            return
        self._next = now + self.period
        if now >= self._next_scan:
            self._next_scan = now + self._gap
            self._gap = min(self.scan, 2 * self._gap)
            pids = proc_pids()
            self._members = {}
        else:
            pids = list(self._members)
        for pid in pids:
            fields = stat_fields(pid)
            if fields is None:
                self._members.pop(pid, None)  # gone
                continue
            try:
                side = self._side_of.get(int(fields[_PGRP]))
                running = fields[_STATE] == b"R"
                cpu = int(fields[_PROCESSOR])
            except (ValueError, IndexError):
                continue
            if side is None:
                self._members.pop(pid, None)
                continue
            self._members[pid] = side
            if running:
                seen = self.counts[side]
                seen[cpu] = seen.get(cpu, 0) + 1

    def ran_on(self, side: str) -> dict[int, int] | None:
        """CPU -> samples for ``side``; None when it was never seen running."""
        seen = self.counts.get(side)
        return dict(sorted(seen.items())) if seen else None
