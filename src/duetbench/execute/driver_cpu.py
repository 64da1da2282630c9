"""What a side's processes cost, measured by its driver: CPU time and run delay.

Part of the per-side driver (``execute/driver.py``), and like it standard library only
and Python 3.8 (docs/architecture.md, "Code that runs without duetbench"): the driver
imports it when it starts, so it loads nothing else.

- :func:`reaped_cpu`: the CPU time of the driver and of every child it reaped, the
  side's ``cpu_s`` from its go to its end;
- :func:`reap_measured`: one iteration of the built-in harness: its process's CPU time
  (``wait4``'s resource usage) and scheduler run delay (``/proc/<pid>/schedstat``, read
  before it is reaped), each with the driver's own while it started and reaped it;
- :class:`TreeDelay`: the run delay of an external harness's processes, sampled every
  :data:`RUNQ_PERIOD` seconds (the result's ``runq_s``).

With them the analysis can take out what other work on the host did to the wall time
(docs/statistics.md, "Beside other work: CPU time").
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading

#: the scheduler statistics of the driver's own thread
OWN_SCHEDSTAT = "/proc/thread-self/schedstat"
#: seconds between two looks at the run delay of an external harness's processes
RUNQ_PERIOD = 0.1


def reaped_cpu() -> float:
    """CPU seconds of this process (which waits at the sduet handshake of the built-in
    harness) and of every child it has reaped (and of theirs)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


def schedstat(path: str) -> tuple[int, int] | None:
    """(CPU ns, run delay ns) of a task from its ``schedstat`` file (None: unreadable)."""
    try:
        with open(path, "rb") as f:
            fields = f.read(128).split()
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def reap_measured(
    child: subprocess.Popen[bytes], own_before: tuple[int, int] | None
) -> tuple[int, int, int | None]:
    """Wait for ``child`` and reap it: (exit status, CPU ns, run delay ns).

    The child is waited for without being reaped first (``waitid(WNOWAIT)``), so its
    ``/proc/<pid>/schedstat`` can still be read; ``wait4`` then reaps it with its
    resource usage. Both counts include the driver's own CPU time and run delay since
    ``own_before`` (:data:`OWN_SCHEDSTAT` read before the child was started): they are
    part of the iteration's wall time, so for a CPU-bound command CPU time + run delay
    is the wall time."""
    delay: int | None = None
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        got = schedstat(f"/proc/{child.pid}/schedstat")
        delay = None if got is None else got[1]
    except (OSError, AttributeError):  # no waitid (not Linux): no run delay
        pass
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = round((usage.ru_utime + usage.ru_stime) * 1e9)
    own_after = schedstat(OWN_SCHEDSTAT)
    if own_before is not None and own_after is not None:
        cpu += max(0, own_after[0] - own_before[0])
        if delay is not None:
            delay += max(0, own_after[1] - own_before[1])
    return child.returncode, cpu, delay


class TreeDelay(threading.Thread):
    """The scheduler run delay of every task of the driver's descendants, summed.

    Every ``period`` seconds the descendants are found through
    ``/proc/<pid>/task/<tid>/children`` and each of their tasks' ``schedstat`` is read;
    the last value seen per task counts, so a task that ends loses at most one
    period of its delay. :meth:`finish` returns the seconds (None where ``/proc`` has
    no such files)."""

    def __init__(self, root: int, period: float = RUNQ_PERIOD) -> None:
        super().__init__(daemon=True)
        self.root, self.period = root, period
        self.seen: dict[tuple[int, str], int] = {}
        self.readable = False
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.period):
            self.sample()

    def finish(self) -> float | None:
        self._stop_event.set()
        self.join(timeout=5)
        return round(sum(self.seen.values()) / 1e9, 6) if self.readable else None

    def sample(self) -> None:
        for pid in self._descendants():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                got = schedstat(f"/proc/{pid}/task/{tid}/schedstat")
                if got is not None:
                    self.readable = True
                    self.seen[(pid, tid)] = got[1]

    def _descendants(self) -> list[int]:
        out: list[int] = []
        todo = [self.root]
        while todo:
            pid = todo.pop()
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                        kids = [int(x) for x in f.read().split()]
                except (OSError, ValueError):
                    continue
                out.extend(kids)
                todo.extend(kids)
        return out
