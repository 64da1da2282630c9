"""How many threads the analysis may use, and a map over them (internal).

numpy and pyarrow release the GIL in their array loops, so independent pieces of
work (blocks of bootstrap groups, key columns of a table) run in parallel on
threads. Every piece computes the same numbers on any thread, so results do not
depend on the thread count.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from duetbench.errors import AnalysisError

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")

_MAX_THREADS = 8
THREADS_ENV = "DUETBENCH_THREADS"


def analysis_threads() -> int:
    """Threads for the analysis: ``$DUETBENCH_THREADS``, else the usable CPUs (at most 8)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            raise AnalysisError(
                f"{THREADS_ENV}={raw!r} is not a thread count: set it to a whole number "
                f">= 1 (1 = no threads), or unset it to use every usable CPU"
            )
        return n
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _MAX_THREADS))


def thread_map(fn: Callable[[T], R], items: Iterable[T], threads: int | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on up to ``threads`` (default
    :func:`analysis_threads`) threads."""
    todo = list(items)
    workers = min(threads if threads is not None else analysis_threads(), len(todo))
    if workers <= 1:
        return [fn(x) for x in todo]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="duet-analysis") as ex:
        return list(ex.map(fn, todo))


def side_by_side(first: Callable[[], R], second: Callable[[], S], parallel: bool) -> tuple[R, S]:
    """``(first(), second())``; with ``parallel`` and more than one analysis thread,
    ``second`` runs on another thread meanwhile."""
    if not parallel or analysis_threads() < 2:
        return first(), second()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="duet-analysis") as ex:
        other = ex.submit(second)
        return first(), other.result()
