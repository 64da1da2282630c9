"""Hang detection: a run whose sides stop using the processor is stopped as ``hung``.

A run that exceeds its ``timeout`` is stopped; so is a run in which every side still
running has used less than ``IDLE_CPU_SHARE`` of one CPU for ``hang_timeout`` seconds
(docs/config.md, "Hang detection"). A deadlocked benchmark (waiting on a lock, a pipe,
a peer that died) uses no CPU at all; without this it would hold the machine until the
timeout, or forever when there is none.

*Every* side still running must be idle, not just one: in an unsynchronized duet one
side may idle by design while the other computes. A deadlocked side in a duet is
therefore stopped when its peer is idle too or has finished. In a synchronized duet a
side that waits at the handshake for its *go* spins (docs/sync.md, "Waiting: fill, spin
or block"): it is busy but not working, so it is left out of the judgement while the
coordinator knows it waits, and a peer that deadlocked is stopped all the same.

A side's CPU time is read by a *probe* the executor chooses: for local sides the user
and system time of the side's driver and all its descendants (``/proc``), including the
time of children they have reaped; for container sides the container's cgroup. The
executor samples every side about once a second while the run goes on.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..proctools import procfs

#: A side counts as idle while it uses less than this share of one CPU.
IDLE_CPU_SHARE = 0.01
#: clock ticks per second of /proc CPU times (also used by loadwatch.py)
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class CpuProbe(Protocol):
    def cpu_seconds(self) -> float | None:
        """CPU seconds the side used since the probe's first reading; None: cannot tell."""
        ...


def process_tree(root: int) -> list[int]:
    """``root`` and every process descended from it."""
    return procfs.descendants(root)


class ProcessTreeCpu:
    """The CPU time of a process and its descendants (a local side: its driver's tree).

    Counted per process and only upwards, so a process that ends (its time then moves to
    its parent's reaped-children time, or vanishes with an orphan) never makes the total
    go back; a reaped child is counted twice, which only makes the side look busier.
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self.last: dict[int, int] | None = None
        self.total = 0

    def cpu_seconds(self) -> float | None:
        now: dict[int, int] = {}
        for pid in process_tree(self.root):
            t = procfs.ticks(pid)
            if t is not None:
                now[pid] = t
        if self.root not in now:  # the side has ended, or there is no /proc here
            return None
        if self.last is not None:
            self.total += sum(max(0, t - self.last.get(pid, 0)) for pid, t in now.items())
        self.last = now
        return self.total / CLK_TCK


def _cgroup_mounts(root_only: bool = False) -> tuple[str | None, str | None]:
    """Mount points of the v1 ``cpuacct`` hierarchy and of the v2 hierarchy (``root_only``:
    only where the mount shows the hierarchy's root, i.e. the whole host)."""
    v1 = v2 = None
    lines = procfs.mountinfo_lines()
    if lines is None:
        return None, None
    for line in lines:
        pre, _, post = line.partition(" - ")
        parts, fs = pre.split(), post.split()
        if len(parts) < 5 or len(fs) < 3 or (root_only and parts[3] != "/"):
            continue
        if fs[0] == "cgroup2" and v2 is None:
            v2 = parts[4]
        elif fs[0] == "cgroup" and "cpuacct" in fs[2].split(","):
            v1 = parts[4]
    return v1, v2


class CgroupCpu:
    """The CPU time of a control group (a container side: the container's cgroup)."""

    def __init__(self, usage_file: Path, scale: float, key: str | None = None) -> None:
        self.usage_file, self.scale, self.key = usage_file, scale, key
        self.first: float | None = None

    @classmethod
    def of_process(cls, pid: int) -> CgroupCpu | None:
        """The cgroup ``pid`` is in, if its CPU usage can be read here."""
        lines = procfs.cgroup_lines(pid)
        if lines is None:
            return None
        v1, v2 = _cgroup_mounts()
        for line in lines:
            _, controllers, path = line.split(":", 2)
            rel = path.lstrip("/")
            if v1 and "cpuacct" in controllers.split(","):
                probe = cls(Path(v1) / rel / "cpuacct.usage", 1e-9)
            elif v2 and controllers == "":
                probe = cls(Path(v2) / rel / "cpu.stat", 1e-6, "usage_usec")
            else:
                continue
            if probe._read() is not None:
                return probe
        return None

    @classmethod
    def of_host(cls) -> CgroupCpu | None:
        """The root group: every task's CPU time on the host, in ns (v1 ``cpuacct.usage``;
        v2: the root's ``cpu.stat``, where the kernel has it); None where the hierarchy's
        root is not mounted here (a nested namespace sees only its own)."""
        v1, v2 = _cgroup_mounts(root_only=True)
        for probe in (
            cls(Path(v1) / "cpuacct.usage", 1e-9) if v1 else None,
            cls(Path(v2) / "cpu.stat", 1e-6, "usage_usec") if v2 else None,
        ):
            if probe is not None and probe._read() is not None:
                return probe
        return None

    def usage_ns(self) -> int | None:
        """The group's CPU time since it was created, in ns (None: cannot be read)."""
        try:
            text = self.usage_file.read_text()
        except OSError:
            return None
        per_ns = round(self.scale * 1e9)
        try:
            if self.key is None:
                return int(text.split()[0]) * per_ns
            for line in text.splitlines():
                k, _, v = line.partition(" ")
                if k == self.key:
                    return int(v) * per_ns
        except (ValueError, IndexError):
            return None
        return None

    def _read(self) -> float | None:
        ns = self.usage_ns()
        return None if ns is None else ns / 1e9

    def rebase(self) -> None:
        """Count from now on (the go)."""
        self.first = None
        self.cpu_seconds()

    def cpu_seconds(self) -> float | None:
        value = self._read()
        if value is None:
            return None
        if self.first is None:
            self.first = value
        return value - self.first

    def threads(self) -> list[str]:
        """The thread ids in the group now (v1 ``tasks``, v2 ``cgroup.threads``)."""
        name = "tasks" if self.key is None else "cgroup.threads"
        try:
            return (self.usage_file.parent / name).read_text().split()
        except OSError:
            return []


class GroupDelay:
    """The scheduler run delay of a control group's threads, summed: every ``period``
    seconds (:meth:`tick`) each thread's ``/proc/<tid>/schedstat`` is read and the last
    value seen per thread counts (a thread that ends loses at most one period of it).
    The container executor's measure of a side's time waiting for a CPU (``runq_s``).

    The time each thread ran is kept beside its delay (:meth:`seen`): a thread that lives
    shorter than a period -- the built-in harness starts one per iteration -- is missed,
    but the delay per CPU second of those seen still describes the group
    (execute/container_cpu.py)."""

    def __init__(self, group: CgroupCpu, period: float = 0.1) -> None:
        self.group, self.period = group, period
        self.seen_ns: dict[str, tuple[int, int]] = {}  # tid -> (cpu, delay), last seen
        self.base: dict[str, tuple[int, int]] | None = None  # at the first look
        self.readable = False
        self._next = 0.0

    def tick(self, now: float | None = None, *, force: bool = False) -> None:
        now = time.monotonic() if now is None else now
        if now < self._next and not force:
            return
        self._next = now + self.period
        for tid in self.group.threads():
            both = procfs.schedstat_ns(tid)
            if both is None:
                continue
            self.readable = True
            self.seen_ns[tid] = both
        if self.base is None:
            self.base = dict(self.seen_ns)

    def rebase(self) -> None:
        """Count from now on (the go): what the threads did before is left out."""
        self.seen_ns, self.base, self.readable = {}, None, False
        self.tick(force=True)

    def seen(self) -> tuple[int, int] | None:
        """(CPU ns, run delay ns) of the threads seen since the first look; None: nothing
        could be read."""
        if not self.readable:
            return None
        base = self.base or {}
        cpu = delay = 0
        for tid, (c, d) in self.seen_ns.items():
            c0, d0 = base.get(tid, (0, 0))
            cpu += max(0, c - c0)
            delay += max(0, d - d0)
        return cpu, delay

    def seconds(self) -> float | None:
        """The summed run delay since the first look (None: nothing could be read)."""
        both = self.seen()
        return None if both is None else round(both[1] / 1e9, 6)


@dataclass(frozen=True)
class Idle:
    """A side that used ``cpu_s`` of CPU in the last ``window_s`` seconds."""

    pair: str
    window_s: float
    cpu_s: float


class HangWatch:
    """Samples the sides' CPU time; says when every running side has been idle too long."""

    def __init__(self, limit: float, probes: Mapping[str, CpuProbe | None], now: float) -> None:
        self.limit = limit
        self.probes = dict(probes)
        self.interval = min(1.0, max(0.1, limit / 5))
        self.samples: dict[str, deque[tuple[float, float]]] = {p: deque() for p in self.probes}
        self.next_at = now

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def _sample(self, pair: str, now: float) -> None:
        probe = self.probes.get(pair)
        value = probe.cpu_seconds() if probe is not None else None
        series = self.samples[pair]
        if value is None:  # cannot tell: never idle
            series.clear()
            return
        series.append((now, value))
        # keep the newest sample at or before now - limit, drop the older ones
        while len(series) >= 2 and series[1][0] <= now - self.limit:
            series.popleft()

    def _idle(self, pair: str, now: float) -> Idle | None:
        series = self.samples[pair]
        if len(series) < 2 or series[0][0] > now - self.limit:
            return None  # not watched long enough
        (t0, c0), (t1, c1) = series[0], series[-1]
        used = c1 - c0
        if used < IDLE_CPU_SHARE * (t1 - t0):
            return Idle(pair, t1 - t0, used)
        return None

    def check(
        self, now: float, running: Iterable[str], waiting: Iterable[str] = ()
    ) -> list[Idle] | None:
        """Sample the running sides; every one of them idle for ``limit`` s: their Idle.

        ``waiting``: running sides that wait at the sduet handshake now; sampled, but not
        judged (their CPU use is the spinning wait's)."""
        self.next_at = now + self.interval
        running = [p for p in running if p in self.probes]
        for pair in running:
            self._sample(pair, now)
        skip = set(waiting)
        judged = [p for p in running if p not in skip]
        idle = [self._idle(p, now) for p in judged]
        if not judged or any(i is None for i in idle):
            return None
        return [i for i in idle if i is not None]


def idle_tree(limit: float) -> Callable[[int], Callable[[float], bool]]:
    """For ``proctools.guarded.run_captured(idle=...)``: a command is idle once its process
    tree has used less than ``IDLE_CPU_SHARE`` of a CPU for ``limit`` seconds."""

    def watch(pid: int) -> Callable[[float], bool]:
        hang = HangWatch(limit, {"cmd": ProcessTreeCpu(pid)}, time.monotonic())
        return lambda now: hang.due(now) and hang.check(now, ["cmd"]) is not None

    return watch


def hung_message(idle: list[Idle], limit: float, finished: Iterable[str] = ()) -> str:
    """Why the run was stopped and what to change when the benchmark idles by design."""
    sides = "; ".join(
        f"side {i.pair} used {i.cpu_s:.2f} s of CPU in the last {i.window_s:.0f} s" for i in idle
    )
    done = list(finished)
    peers = f" (side {', '.join(done)} had finished)" if done else ""
    return (
        f"hung: {sides}{peers} -- less than {IDLE_CPU_SHARE:.0%} of a CPU for longer than "
        f"hang_timeout ({limit:g} s); stopped. If the benchmark idles by design (sleeps, waits "
        "on I/O or the network), set `hang_timeout: off` or a longer time for it "
        "(docs/config.md, Hang detection)"
    )
