"""How much longer `duet --help` takes than starting Python at all.

The goal (issue 14): `duet --help` within 0.3 s of `python -c pass`. Both commands run
side by side in interleaved rounds (A B, B A, ...), so a drift of the machine's speed
hits both alike; the result is the median of the per-round differences, with the
medians of each command for scale.

    python3 benchmarks/cli_startup.py                 # 30 rounds
    python3 benchmarks/cli_startup.py --rounds 100 --command compare

``--command NAME`` measures `duet NAME --help` instead (the parser is the same; the
command's module is imported either way). Run it from the repository root with
``PYTHONPATH=src`` to measure the working tree rather than an installed duetbench.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def run_once(argv: list[str]) -> float:
    """Wall-clock seconds of one run of ``argv`` (output discarded; it must succeed)."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds (default 30)")
    ap.add_argument("--command", default=None, help="measure `duet COMMAND --help`")
    args = ap.parse_args()
    duet = [sys.executable, "-m", "duetbench", *([args.command] if args.command else []), "--help"]
    bare = [sys.executable, "-c", "pass"]
    for argv in (duet, bare):  # warm the file cache; a broken command fails here
        run_once(argv)
    t_duet, t_bare, diffs = [], [], []
    for i in range(args.rounds):
        if i % 2:
            b, d = run_once(bare), run_once(duet)
        else:
            d, b = run_once(duet), run_once(bare)
        t_duet.append(d)
        t_bare.append(b)
        diffs.append(d - b)
    q = statistics.quantiles(diffs, n=10)
    print(f"{' '.join(duet[1:])}  vs  {' '.join(bare[1:])}: {args.rounds} interleaved rounds")
    print(
        f"  median duet {statistics.median(t_duet):.3f} s, python {statistics.median(t_bare):.3f} s"
    )
    print(
        f"  difference: median {statistics.median(diffs):.3f} s "
        f"(10th-90th percentile {q[0]:.3f}-{q[-1]:.3f} s); goal < 0.300 s"
    )
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
