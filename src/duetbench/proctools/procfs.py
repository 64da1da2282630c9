"""What ``/proc`` says about processes (Linux; elsewhere every reader says "cannot tell").

A process is identified by its pid *and* its start time (:func:`start_time`): a pid
alone may belong to another process once the first has ended.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "PGRP",
    "age_s",
    "PPID",
    "PROCESSOR",
    "STATE",
    "boot_id",
    "comm",
    "cgroup_lines",
    "children",
    "cmdline",
    "descendants",
    "gone",
    "mountinfo_lines",
    "pids",
    "run_delay_ns",
    "start_time",
    "stat_fields",
    "ticks",
]

#: indices into :func:`stat_fields`: state, parent pid, process group, CPU last run on
STATE, PPID, PGRP, PROCESSOR = 0, 1, 2, 36
_START = 19  # start time, clock ticks after boot
_TIMES = slice(11, 15)  # utime, stime, cutime, cstime


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after ``(comm)`` (which may hold spaces and
    parentheses): :data:`STATE`, :data:`PPID`, :data:`PGRP`, utime [11], :data:`PROCESSOR`;
    None when the process is gone (or there is no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def comm(pid: int | str) -> str | None:
    """The process's name (``comm``), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode("utf-8", "replace")


def cmdline(pid: int | str = "self") -> list[str] | None:
    """The process's command line (its arguments; ``"self"``: this process), None when
    it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def start_time(pid: int) -> str:
    """The process's start time (clock ticks since boot, as text; "" when it is gone):
    with the pid, it identifies a process."""
    fields = stat_fields(pid)
    try:
        return fields[_START].decode() if fields is not None else ""
    except IndexError:
        return ""


def age_s(pid: int | str = "self") -> float | None:
    """Seconds since the process started (``"self"``: this one), None when it cannot be
    told."""
    fields = stat_fields(pid)
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        started = int(fields[_START]) / os.sysconf("SC_CLK_TCK") if fields is not None else None
    except (OSError, ValueError, IndexError):
        return None
    return None if started is None else max(0.0, uptime - started)


def gone(pid: int, start: str) -> bool:
    """The process ``pid`` that started at ``start`` has ended: no such process, the pid
    is another's now, or it is a zombie."""
    fields = stat_fields(pid)
    try:
        return fields is None or fields[_START].decode() != start or fields[STATE] in (b"Z", b"X")
    except IndexError:
        return True


def ticks(pid: int) -> int | None:
    """utime + stime + cutime + cstime of ``pid`` (clock ticks), None when it is gone."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    try:
        return sum(int(x) for x in fields[_TIMES])
    except (ValueError, IndexError):
        return None


def pids() -> list[str]:
    """Every process id in ``/proc`` (as listed: text), [] without ``/proc``."""
    try:
        return [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []


def children(pid: int) -> list[int] | None:
    """Children of ``pid`` (of all its threads); None when the kernel does not list them
    (no ``CONFIG_PROC_CHILDREN``: scan with :func:`descendants` instead)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            out.extend(int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
        except FileNotFoundError:
            if os.path.isdir(f"/proc/{pid}/task/{tid}"):
                return None
        except (OSError, ValueError):
            pass
    return out


def _descendants_by_scan(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for name in pids():
        fields = stat_fields(name)
        try:
            kids.setdefault(int(fields[PPID]), []).append(int(name))  # type: ignore[index]
        except (TypeError, ValueError, IndexError):
            continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def descendants(root: int) -> list[int]:
    """``root`` and every process descended from it."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        kids = children(pid)
        if kids is None:
            return _descendants_by_scan(root)
        todo.extend(kids)
    return out


def run_delay_ns(pid: int | str) -> int | None:
    """The time the process (or thread) was ready to run but waited for a CPU, in ns
    (``/proc/<pid>/schedstat``, its second field); None when gone or not kept."""
    both = schedstat_ns(pid)
    return None if both is None else both[1]


def schedstat_ns(pid: int | str) -> tuple[int, int] | None:
    """(time on a CPU, time ready to run but waiting for one) of the process (or thread),
    in ns (``/proc/<pid>/schedstat``, its first two fields); None when gone or not kept."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            fields = f.read(128).split()
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def cgroup_lines(pid: int) -> list[str] | None:
    """The lines of ``/proc/<pid>/cgroup`` (``id:controllers:path``), None when gone."""
    try:
        return Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None


def mountinfo_lines() -> list[str] | None:
    """The lines of ``/proc/self/mountinfo``, None without it."""
    try:
        return Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None


def boot_id() -> str:
    """This boot of the machine ("" when the kernel does not say): a pid and start time
    identify a process only within one boot."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
