"""How unequal are this machine's CPUs? Two identical CPU loops, timed in CPU time.

A duet assumes that A and B, running at once, are slowed alike. On a cloud VM two
virtual CPUs need not run alike: a vCPU whose host core's other hyperthread is busy, or
which the hypervisor schedules less, runs the same loop in more CPU time, for seconds at
a time, and no counter inside the guest shows it. This script measures that, side by
side in one run, with the same loop as A and as B (an A/A pair):

- ``apart``: A and B at once, each pinned to its own CPU (what a pinned duet does; a
  shared duet on two CPUs ends up the same way, the scheduler leaving each on one CPU);
- ``one-cpu``: A and B at once, both pinned to the first CPU, taking turns on it
  (`cpus: [n]` for a harness that reports CPU time, docs/config.md, `cpus`);
- ``swapped``: two ``apart`` trials with the CPUs swapped, their ratios' geometric mean
  (what the balanced slot draw of `cpus: pinned` does across runs).

For each it prints the spread (standard deviation of log(B/A) over the trials) and the
largest |B/A - 1|. An A/A pair reads 1.0 on a machine whose CPUs are alike.

    python benchmarks/vcpu_asymmetry.py                # 16 trials per way, ~2 min
    python benchmarks/vcpu_asymmetry.py --trials 40 --work 20000000
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys

LOOP = (
    "import time\nt = time.process_time()\nx = 0\nfor i in range({work}): x += i * i\n"
    "print(time.process_time() - t)"
)


def pair(work: int, cpus: tuple[int, int]) -> float:
    """log(B/A) of two identical loops started at once, A on cpus[0], B on cpus[1]."""
    code = LOOP.format(work=work)
    procs = []
    for cpu in cpus:
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        os.sched_setaffinity(p.pid, {cpu})
        procs.append(p)
    a, b = (float(p.communicate()[0]) for p in procs)
    if any(p.returncode for p in procs):
        raise SystemExit("a loop failed")
    return math.log(b / a)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=16, help="trials per way (default 16)")
    p.add_argument("--work", type=int, default=8_000_000, help="loop steps (~0.5 s here)")
    args = p.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("needs two usable CPUs")
    c0, c1 = cpus[0], cpus[1]
    logs: dict[str, list[float]] = {"apart": [], "one-cpu": [], "swapped": []}
    for k in range(args.trials):  # interleaved, so each way sees the same machine states
        first = pair(args.work, (c0, c1))
        logs["apart"].append(first)
        logs["one-cpu"].append(pair(args.work, (c0, c0)))
        logs["swapped"].append((first + pair(args.work, (c1, c0))) / 2)
        print(f"trial {k + 1}/{args.trials}", file=sys.stderr, flush=True)
    print(f"CPUs {c0} and {c1}, {args.trials} trials per way, A/A (true ratio 1.0)")
    print(f"{'way':>8} {'sd log(B/A)':>12} {'largest |B/A-1|':>16} {'mean B/A':>9}")
    for way, v in logs.items():
        worst = max(abs(math.exp(x) - 1) for x in v)
        print(
            f"{way:>8} {statistics.stdev(v):>12.3f} {worst:>15.1%} "
            f"{math.exp(statistics.fmean(v)):>9.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
