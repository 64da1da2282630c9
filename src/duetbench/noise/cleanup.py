"""The neighbours' cleanup registry (docs/noise.md, "Processes and cleanup guarantees").

:data:`REGISTRY` stops every running neighbour of this process at exit and on
SIGINT/SIGTERM/SIGHUP (the only module-level state of the package). Process groups
and ``prctl`` are :mod:`duetbench.proctools.groups`.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from types import FrameType
from typing import Any, Protocol


class Stoppable(Protocol):
    """What the registry needs of a neighbour: a ``stop()`` that does nothing in a forked
    child of the process that started it."""

    def stop(self) -> None: ...


class CleanupRegistry:
    """Running neighbours of this process, stopped at exit and on SIGINT/SIGTERM/SIGHUP."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self._active: dict[int, Stoppable] = {}
        self._previous: dict[int, Any] = {}
        self._atexit = False

    def add(self, neighbour: Stoppable) -> None:
        self._active[id(neighbour)] = neighbour
        if not self._atexit:
            atexit.register(self.stop_all)
            self._atexit = True
        self._install()

    def remove(self, neighbour: Stoppable) -> None:
        self._active.pop(id(neighbour), None)
        if not self._active:
            self._uninstall()

    def stop_all(self) -> None:
        for neighbour in list(self._active.values()):
            neighbour.stop()  # a no-op in a forked child (see Stoppable)

    def _install(self) -> None:
        if self._previous or threading.current_thread() is not threading.main_thread():
            return
        for sig in self.SIGNALS:
            try:
                prev = signal.getsignal(sig)
                if prev == signal.SIG_IGN:
                    continue
                signal.signal(sig, self._on_signal)
                self._previous[sig] = prev
            except (ValueError, OSError):  # pragma: no cover - not the main interpreter
                continue

    def _uninstall(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, prev in list(self._previous.items()):
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        prev = self._previous.get(signum, signal.SIG_DFL)
        self.stop_all()
        self._uninstall()
        if callable(prev):
            prev(signum, frame)
        elif prev == signal.SIG_IGN:
            return
        else:  # default disposition: die of the same signal
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


REGISTRY = CleanupRegistry()
