"""Pinned micro sides on unequal virtual CPUs: swapping CPUs every 50 samples against not.

    python benchmarks/micro_cpu_swap.py [--tries 5] [--runs 6] [--samples 300]

Runs `duet micro` on the known-answer functions of examples/micro (A/A and 2x, 100 us)
with sduet, aduet and seqn, once with the default (the two sides swap CPUs,
docs/micro.md, "Placement") and once with `--no-cpu-swap`, the two interleaved in every
try so both see the same machine. Prints per mode and method the measured ratios, how
far they are from the true one (2.0, 1.0), and the median interval width. Nothing is
asserted: the figures go to docs/performance.md ("Microbenchmarks", "Unequal CPUs").
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MICRO = ROOT / "examples" / "micro"
METHODS = ("sduet", "aduet", "seqn")
CASES = {"x2_100us": 2.0, "aa_100us": 1.0}
MODES = {"swap": [], "fixed": ["--no-cpu-swap"]}


def one(case: str, extra: list[str], runs: int, samples: int, seed: int) -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "duetbench", "micro", f"knownver:{case}"]
        argv += ["--a-path", str(MICRO / "v_a"), "--b-path", str(MICRO / "v_b")]
        for method in METHODS:
            argv += ["--method", method]
        argv += ["--runs", str(runs), "--samples", str(samples), "--seed", str(seed)]
        argv += ["--format", "json", "-o", out, *extra]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):
            raise SystemExit(f"duet micro failed:\n{done.stderr[-2000:]}")
        rows = json.loads(done.stdout)["rows"]
    return {r["method"]: r for r in rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tries", type=int, default=5)
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--samples", type=int, default=300)
    args = p.parse_args()
    got: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for t in range(args.tries):
        for case in CASES:
            modes = list(MODES) if t % 2 == 0 else list(reversed(MODES))
            for mode in modes:
                rows = one(case, MODES[mode], args.runs, args.samples, seed=t)
                for method, r in rows.items():
                    ratio = 1 + r["change"]  # a fraction: 1.0 is +100 %
                    got.setdefault((case, mode, method), []).append((ratio, 100 * r["ci_width"]))
                    print(f"try {t + 1} {case} {mode:5} {method:5} {ratio:.3f} "
                          f"width {100 * r['ci_width']:.2f} %", flush=True)  # fmt: skip
    print()
    print("| case | method | mode | ratios | worst error | sd of log ratio | median CI width |")
    print("|---|---|---|---|---:|---:|---:|")
    for (case, mode, method), vals in sorted(got.items()):
        truth = CASES[case]
        ratios = [v[0] for v in vals]
        worst = max(abs(r / truth - 1) for r in ratios)
        sd = statistics.stdev(math.log(r) for r in ratios) if len(ratios) > 1 else math.nan
        width = statistics.median(v[1] for v in vals)
        shown = " ".join(f"{r:.3f}" for r in ratios)
        print(f"| {case} | {method} | {mode} | {shown} | {worst:.1%} | {sd:.3f} | {width:.2f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
