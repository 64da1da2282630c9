"""What every benchmark script here shares: a pyperf Runner with fixed loops.

Each script measures one workload with ``pyperf.Runner.bench_time_func``.
Defaults (overridable on the command line, e.g. ``--processes 8``): 4 worker
processes, each 1 warm-up and 3 values, and a **fixed** loop count per script
instead of pyperf's calibration. Fixed loops matter for A/B: with calibration
each interpreter could pick another count, and duetbench refuses to compare
values of different loop counts (docs/parsers.md, pyperf).

These are plain pyperf scripts: nothing here knows about duetbench. In a sduet
run duet puts its pyperf shim on the workers' import path, which makes every
warm-up and value wait for the other side (docs/sync.md).
"""

from __future__ import annotations

from collections.abc import Callable

import pyperf


def run_benchmark(
    name: str, workload: Callable[[], object], *, loops: int, description: str
) -> None:
    """Measure ``workload()`` x ``loops`` per value, in pyperf worker processes."""

    def time_loops(n: int) -> float:
        start = pyperf.perf_counter()
        for _ in range(n):
            workload()
        return pyperf.perf_counter() - start

    runner = pyperf.Runner(processes=4, values=3, warmups=1, loops=loops)
    runner.metadata["description"] = description
    runner.bench_time_func(name, time_loops)
