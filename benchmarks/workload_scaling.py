"""Known-answer workloads (examples/workloads): does time scale with the operation count?

For each kind, A runs OPS operations and B runs FACTOR x OPS, as adjacent processes in
alternating order (AB, BA, ...), and the script prints ratios measured side by side:

- ``csv``: min iteration of B / min iteration of A, from the workload's own timestamps
  (the external-harness mode, ``-o FILE``), median over the rounds;
- ``cpu``: CPU time of B's process / A's (``wait4``), median over the rounds -- other
  tenants' load changes wall time far more than CPU time;
- ``whole``: wall time of B's whole command / A's (the built-in harness's view: start-up
  and setup included), median over the rounds.

These were assertions of tests/test_workloads.py, with retries because the machine is
shared; a speed is not a property to assert there (docs/performance.md has the figures).

    python benchmarks/workload_scaling.py                       # 2x and +5 %, every kind
    python benchmarks/workload_scaling.py --kinds int --factors 2 --rounds 12
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "examples" / "workloads"
# ~30 ms per iteration on the project's 2-vCPU machine (examples/workloads/README.md
# gives the counts for ~150 ms)
OPS = {"int": 15_000_000, "float": 11_000_000, "linear": 12_000_000, "random": 200_000}


def build(directory: Path) -> Path:
    for name in ("workload.c", "Makefile", "setup.sh"):
        shutil.copy(SRC / name, directory / name)
    subprocess.run(["sh", str(directory / "setup.sh")], check=True, capture_output=True)
    return directory / "workload"


def min_iteration_ns(exe: Path, kind: str, ops: int, iterations: int, out: Path) -> int:
    subprocess.run(
        [str(exe), kind, str(ops), str(iterations), "-o", str(out)], check=True, capture_output=True
    )
    with out.open(newline="") as fh:
        return min(int(r["end_ns"]) - int(r["start_ns"]) for r in csv.DictReader(fh))


def cpu_seconds(exe: Path, kind: str, ops: int, iterations: int) -> float:
    proc = subprocess.Popen([str(exe), kind, str(ops), str(iterations)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{exe} {kind} {ops} failed")
    return usage.ru_utime + usage.ru_stime


def whole_seconds(exe: Path, kind: str, ops: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(exe), kind, str(ops)], check=True, capture_output=True)
    return time.perf_counter() - t0


def ratios(exe: Path, kind: str, factor: float, rounds: int, tmp: Path) -> dict[str, float]:
    """Median over ``rounds`` of B/A for each measure; A and B adjacent, order alternating."""
    a_ops, b_ops = OPS[kind], round(OPS[kind] * factor)
    got: dict[str, list[float]] = {"csv": [], "cpu": [], "whole": []}
    for r in range(rounds):
        order = (("a", a_ops), ("b", b_ops))[:: 1 if r % 2 == 0 else -1]
        v: dict[str, dict[str, float]] = {"csv": {}, "cpu": {}, "whole": {}}
        for side, ops in order:
            v["csv"][side] = min_iteration_ns(exe, kind, ops, 3, tmp / f"{side}.csv")
            v["cpu"][side] = cpu_seconds(exe, kind, ops, 3)
            v["whole"][side] = whole_seconds(exe, kind, ops)
        for m in got:
            got[m].append(v[m]["b"] / v[m]["a"])
    return {m: statistics.median(xs) for m, xs in got.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kinds", default=",".join(OPS), help="workload kinds (default: all four)")
    ap.add_argument("--factors", default="2,1.05", help="B's operations / A's (default 2,1.05)")
    ap.add_argument("--rounds", type=int, default=6, help="A/B process pairs per ratio (6)")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    factors = [float(f) for f in args.factors.split(",") if f]
    with tempfile.TemporaryDirectory(prefix="duet-workloads-") as d:
        exe = build(Path(d))
        print(
            f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
            f"Python {platform.python_version()}, {args.rounds} rounds; median of B/A"
        )
        print(f"{'kind':>7} {'factor':>7} {'csv (min it.)':>14} {'cpu time':>9} {'whole':>7}")
        for kind in kinds:
            for f in factors:
                r = ratios(exe, kind, f, args.rounds, Path(d))
                print(f"{kind:>7} {f:>7g} {r['csv']:>14.3f} {r['cpu']:>9.3f} {r['whole']:>7.3f}")
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
