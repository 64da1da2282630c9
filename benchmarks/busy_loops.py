"""Busy loops beside a benchmark, for the studies that measure what other work does.

A busy loop is a Python ``while`` loop bounded in time (2 hours), started in the
caller's session (so the same autogroup as the benchmark under sched_autogroup) and in
its own process group; the loops are killed when the block ends, however it ends
(SIGTERM, as `kill` or `pkill` send it, ends the study as Ctrl-C does, so the loops go
with it instead of running on for their 2 hours).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

BUSY_LOOP = "import time\nend = time.monotonic() + 7200\nwhile time.monotonic() < end:\n    pass\n"
#: condition name -> busy loops beside the benchmark
CONDITIONS = {"quiet": 0, "one": 1, "two": 2}


@contextmanager
def busy_loops(condition: str) -> Iterator[None]:
    """The busy loops of ``condition`` (quiet, one, two) for the duration of the block."""
    if condition not in CONDITIONS:
        raise SystemExit(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    previous = signal.signal(signal.SIGTERM, _terminated)
    procs = [
        subprocess.Popen([sys.executable, "-c", BUSY_LOOP], process_group=0)
        for _ in range(CONDITIONS[condition])
    ]
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=30)


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
