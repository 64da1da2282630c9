"""What every benchmark script here shares: a pyperf Runner with fixed loops and the barrier.

Each script measures one workload with ``pyperf.Runner.bench_time_func``.
Defaults (overridable on the command line, e.g. ``--processes 8``): 4 worker
processes, each 1 warm-up and 3 values, and a **fixed** loop count per script
instead of pyperf's calibration. Fixed loops matter for A/B: duetbench's pyperf
parser takes one iteration = one value's raw time (value x loops), so A and B
must run the same number of loops to be comparable -- with calibration each
interpreter could pick another count.

Before every warm-up and value the worker waits at the sduet barrier
(``duet_barrier.wait``, a no-op outside sduet runs); the timer starts after it.
"""

from __future__ import annotations

from collections.abc import Callable

import duet_barrier
import pyperf


def run_benchmark(
    name: str, workload: Callable[[], object], *, loops: int, description: str
) -> None:
    """Measure ``workload()`` x ``loops`` per value, in pyperf worker processes."""

    def time_loops(n: int) -> float:
        duet_barrier.wait()
        start = pyperf.perf_counter()
        for _ in range(n):
            workload()
        return pyperf.perf_counter() - start

    runner = pyperf.Runner(processes=4, values=3, warmups=1, loops=loops)
    runner.metadata["description"] = description
    runner.bench_time_func(name, time_loops)
