"""Process groups and ``prctl``: a command and everything it starts share a group, so
one signal to the group reaches them all."""

from __future__ import annotations

import os
import sys
from typing import Any

from .procfs import PGRP, STATE, comm, pids, stat_fields

__all__ = [
    "PR_SET_NAME",
    "PR_SET_PDEATHSIG",
    "group_alive",
    "group_processes",
    "kill_group",
    "libc",
    "prctl",
]

PR_SET_NAME = 15
PR_SET_PDEATHSIG = 1


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` exists (a zombie leader counts: reap it first)."""
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def kill_group(pgid: int, sig: int) -> None:
    """Signal a process group that may already be gone."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_processes(pgid: int) -> list[tuple[int, str]]:
    """Live (non-zombie) processes whose process group is ``pgid``: ``(pid, comm)`` pairs."""
    found: list[tuple[int, str]] = []
    for pid in pids():
        fields = stat_fields(pid)
        try:
            if fields is None or fields[STATE] in (b"Z", b"X") or int(fields[PGRP]) != pgid:
                continue
        except (ValueError, IndexError):
            continue
        name = comm(pid)
        if name is not None:
            found.append((int(pid), name))
    return found


def libc() -> Any:
    """The C library (for prctl), or None where it cannot be loaded."""
    import ctypes  # only the processes that call prctl load it

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - not Linux/glibc
        return None


def prctl(lib: Any, option: int, arg: int | bytes) -> None:
    """``prctl(option, arg)`` through ``lib`` (from :func:`libc`); a no-op off Linux."""
    if lib is not None and sys.platform.startswith("linux"):
        lib.prctl(option, arg, 0, 0, 0)
