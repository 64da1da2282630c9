"""A deadline for in-process calls: a hang fails the test instead of holding CI.

The deadline only catches hangs; it is never a speed limit. It is an interval timer
(SIGALRM), which the kernel delivers even while the main thread holds the GIL in C
code, such as a regular-expression match (a watchdog *thread* would wait for the GIL);
the handler raises :class:`Hang`, as Python runs signal handlers between bytecodes and
inside long matches. pytest-timeout's own SIGALRM timer is saved and re-armed with
what is left of it. A hang in C code that never checks for signals is caught by
faulthandler, which prints every thread's stack and ends the process after twice the
deadline.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Hang(Exception):
    """The guarded call did not finish before its deadline."""


@contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread when the block outlives ``seconds``."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("deadline() guards the main thread only")

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"{what}: still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    if outer_delay and outer_delay < seconds:  # the outer timer (pytest-timeout) comes first
        signal.setitimer(signal.ITIMER_REAL, outer_delay)
    faulthandler.dump_traceback_later(2 * seconds, exit=True, file=sys.__stderr__)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)
        if outer_delay:
            left = outer_delay - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), outer_interval)
