"""What else ran on the host during a run: the CPU time nobody in the run used.

The duet's premise is that interference hits A and B alike; a busy process beside a
2-CPU duet breaks it (docs/performance.md, "Placement"), and so does a hypervisor that
gives the VM's CPUs to other guests (steal time). Neither shows in the run's own
timings. Around each local run the executor reads the host's busy CPU time
(``/proc/stat``: user, nice, system, irq, softirq; steal apart) and its own CPU time
(``getrusage``: this process and the children it reaped, i.e. every side's driver and
workload), and records the difference per second of the run as ``other_load`` in
run.json: ``processes`` (CPUs other processes kept busy) and ``steal`` (CPUs the
hypervisor took). ``duet compare`` notes a benchmark whose runs had much of either
(report/notes.py, docs/statistics.md, "Notes").

Container sides are not this process's children: the container executor subtracts
their containers' CPU time (their cgroups) as well.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from pathlib import Path

from .hang import CLK_TCK

PROC_STAT = Path("/proc/stat")
#: /proc/stat's first line: cpu user nice system idle iowait irq softirq steal guest guest_nice
_BUSY_FIELDS = (0, 1, 2, 5, 6)  # user nice system irq softirq (guest time is inside user)
_STEAL_FIELD = 7


def host_cpu_seconds(path: Path | None = None) -> tuple[float, float] | None:
    """(busy, steal) CPU seconds of the whole host since boot (``path``: a /proc/stat);
    None where unreadable."""
    try:
        with open(path or PROC_STAT, encoding="ascii") as f:
            first = f.readline().split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(first) < 5 or first[0] != "cpu":
        return None
    try:
        ticks = [int(x) for x in first[1:]]
    except ValueError:
        return None
    hz = float(CLK_TCK)
    busy = sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks))
    steal = ticks[_STEAL_FIELD] if len(ticks) > _STEAL_FIELD else 0
    return busy / hz, steal / hz


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of every child it has reaped."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


@dataclass(frozen=True)
class LoadWatch:
    """Started before a run's sides, finished after they are reaped."""

    host: tuple[float, float]
    own: float
    wall: float

    @classmethod
    def start(cls) -> LoadWatch | None:
        host = host_cpu_seconds()
        if host is None:
            return None
        return cls(host, own_cpu_seconds(), time.monotonic())

    def finish(self, foreign: float = 0.0) -> dict[str, float] | None:
        """``{"processes": CPUs, "steal": CPUs}`` averaged over the run (None: unknown);
        ``foreign``: CPU seconds of the run's own sides that are not this process's
        children (containers: their cgroups), which are not other work."""
        host = host_cpu_seconds()
        wall = time.monotonic() - self.wall
        if host is None or wall <= 0:
            return None
        busy = host[0] - self.host[0]
        others = max(0.0, busy - (own_cpu_seconds() - self.own) - foreign)
        steal = max(0.0, host[1] - self.host[1])
        return {"processes": round(others / wall, 3), "steal": round(steal / wall, 3)}
