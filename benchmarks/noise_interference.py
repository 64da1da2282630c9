"""How much the noisy neighbour (duetbench.noise) slows a CPU-bound loop on its core.

A pure-Python loop pinned to one CPU is timed without a neighbour and with one pinned
to the same CPU (``intensity 1.0``, a long on period), in alternating rounds; each
round's ratio is the loaded loop's time over the time of the baseline next to it, and
the script prints the median and range of the rounds per pattern and backend.

The scheduler shares the core between the loop and a cpu worker about evenly, so
``cpu`` should give ~2x and ``quiet`` ~1x; other load on the machine moves single
rounds either way, which is why tests/test_noise.py judges the neighbour by CPU time
measured side by side instead (figures in docs/performance.md).

    python benchmarks/noise_interference.py                        # cpu, memory, quiet
    python benchmarks/noise_interference.py --patterns cpu --rounds 10
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from duetbench.noise import NoisyNeighbour


def spin(n: int) -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - t0


def one_round(pattern: str, backend: str, cpu: int, n_iter: int) -> float:
    base = min(spin(n_iter) for _ in range(3))
    with NoisyNeighbour(
        pattern, seed=0, cpus=[cpu], intensity=1.0, backend=backend, on_range=(600, 600)
    ):
        time.sleep(0.1)  # the workers are running (start() returns once they are)
        loaded = statistics.median(spin(n_iter) for _ in range(5))
    base = min(base, *(spin(n_iter) for _ in range(3)))
    return loaded / base


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--patterns", default="cpu,memory,quiet", help="patterns (cpu,memory,quiet)")
    ap.add_argument("--backends", default="stress-ng,python", help="backends (both)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per pattern and backend (5)")
    args = ap.parse_args(argv)
    cpu = max(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        n_iter = int(200_000 * 0.03 / min(spin(200_000) for _ in range(3)))  # ~30 ms
        print(
            f"# loop of {n_iter} additions (~30 ms) on CPU {cpu}; {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}"
        )
        print(f"{'pattern':>8} {'backend':>10} {'median':>7} {'min':>6} {'max':>6}")
        for pattern in [p for p in args.patterns.split(",") if p]:
            for backend in [b for b in args.backends.split(",") if b]:
                if pattern == "quiet" and backend == "stress-ng":
                    continue  # quiet runs nothing
                r = [one_round(pattern, backend, cpu, n_iter) for _ in range(args.rounds)]
                print(
                    f"{pattern:>8} {backend:>10} {statistics.median(r):>7.2f} "
                    f"{min(r):>6.2f} {max(r):>6.2f}"
                )
                sys.stdout.flush()
    finally:
        os.sched_setaffinity(0, saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
