"""Pinned micro sides on unequal virtual CPUs: swapping CPUs every 50 samples against not.

    python benchmarks/micro_cpu_swap.py [--tries 5] [--runs 6] [--samples 300]
    python benchmarks/micro_cpu_swap.py --size 5ms --method sduet --against-src OLD/src

``--against-src`` compares this tree's swapping with another tree's (its ``src``
folder, e.g. from `git archive COMMIT src`) instead of swapping with not; ``--size``
picks the functions' size (``100us``, the default, or ``5ms``), ``--method`` the
methods (repeatable).

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
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MICRO = ROOT / "examples" / "micro"
METHODS = ("sduet", "aduet", "seqn")
TRUTH = {"x2": 2.0, "aa": 1.0}
MODES = {"swap": [], "fixed": ["--no-cpu-swap"]}


def one(
    case: str,
    extra: list[str],
    runs: int,
    samples: int,
    seed: int,
    methods: tuple[str, ...] = METHODS,
    src: Path | None = None,
) -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "duetbench", "micro", f"knownver:{case}"]
        argv += ["--a-path", str(MICRO / "v_a"), "--b-path", str(MICRO / "v_b")]
        for method in methods:
            argv += ["--method", method]
        argv += ["--runs", str(runs), "--samples", str(samples), "--seed", str(seed)]
        argv += ["--format", "json", "-o", out, *extra]
        env = None if src is None else {**os.environ, "PYTHONPATH": str(src)}
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        if done.returncode not in (0, 1):
            raise SystemExit(f"duet micro failed:\n{done.stderr[-2000:]}")
        rows = json.loads(done.stdout)["rows"]
    return {r["method"]: r for r in rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tries", type=int, default=5)
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--samples", type=int, default=300)
    p.add_argument("--size", choices=("100us", "5ms"), default="100us")
    p.add_argument("--method", action="append", choices=METHODS)
    p.add_argument("--against-src", type=Path, help="another tree's src folder")
    args = p.parse_args()
    methods = tuple(args.method or METHODS)
    cases = {f"{k}_{args.size}": v for k, v in TRUTH.items()}
    trees = {"swap": None, "fixed": None}
    if args.against_src is not None:  # both swap; this tree's rules against the other's
        trees = {"this": ROOT / "src", "other": args.against_src.resolve()}
    got: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for t in range(args.tries):
        for case in cases:
            modes = list(trees) if t % 2 == 0 else list(reversed(trees))
            for mode in modes:
                extra = MODES.get(mode, []) if args.against_src is None else []
                rows = one(case, extra, args.runs, args.samples, t, methods, trees[mode])
                for method, r in rows.items():
                    ratio = 1 + r["change"]  # a fraction: 1.0 is +100 %
                    got.setdefault((case, mode, method), []).append((ratio, 100 * r["ci_width"]))
                    print(f"try {t + 1} {case} {mode:5} {method:5} {ratio:.3f} "
                          f"width {100 * r['ci_width']:.2f} %", flush=True)  # fmt: skip
    print()
    print("| case | method | mode | ratios | worst error | sd of log ratio | median CI width |")
    print("|---|---|---|---|---:|---:|---:|")
    for (case, mode, method), vals in sorted(got.items()):
        truth = cases[case]
        ratios = [v[0] for v in vals]
        worst = max(abs(r / truth - 1) for r in ratios)
        sd = statistics.stdev(math.log(r) for r in ratios) if len(ratios) > 1 else math.nan
        width = statistics.median(v[1] for v in vals)
        shown = " ".join(f"{r:.3f}" for r in ratios)
        print(f"| {case} | {method} | {mode} | {shown} | {worst:.1%} | {sd:.3f} | {width:.2f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
