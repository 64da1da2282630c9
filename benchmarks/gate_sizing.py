"""How many runs `duet gate` needs for a given change, threshold and run-level spread.

Sizes `examples/ci/duet.yml` (docs/measurements/gate-sizing.md). Two steps, both with
duetbench's own stopping rule on seeded normal run values (log ratios):

1. the spread: the run-level standard deviation whose median stop under `--until
   precise:P` matches a measured one (default: the `noisy` benchmark of
   examples/adaptive/, which stopped at ±3 % after a median of 28 runs over 12 tries,
   22-37, in docs/measurements/adaptive-machine-study.md);
2. the gate: with that spread (and a few around it), the runs `--until decided` takes
   for a true change C at threshold T -- median, 80th and 90th percentile -- and the
   share of gates a given max_runs lets decide.

    python3 benchmarks/gate_sizing.py
    python3 benchmarks/gate_sizing.py --change 4 --threshold 2 --measured-runs 28
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from duetbench.adaptive.rules import StopRule, first_stops


def stops(sd: float, mean: float, rule: StopRule, tries: int, seed: int) -> np.ndarray:
    values = np.random.default_rng(seed).normal(mean, sd, (tries, rule.max_runs))
    return first_stops(values, rule).runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--change", type=float, default=4.0, help="true change, %% (default 4)")
    ap.add_argument("--threshold", type=float, default=2.0, help="gate threshold, %% (2)")
    ap.add_argument("--precision", type=float, default=3.0, help="measured goal, %% (3)")
    ap.add_argument("--measured-runs", type=float, default=28.0, help="its median stop (28)")
    ap.add_argument("--tries", type=int, default=4000)
    ap.add_argument("--horizon", type=int, default=600)
    ap.add_argument("--max-runs", type=int, nargs="+", default=[20, 50, 100, 200])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    precise = StopRule.create(until="precise", precision=a.precision / 100, max_runs=a.horizon)
    print(f"1. spread: median stop at +-{a.precision:g} % (measured: {a.measured_runs:g} runs)")
    print("| run-level sd | median stop | 10-90 % |")
    print("|---:|---:|---|")
    fitted, best = 0.0, math.inf
    for sd in np.arange(0.03, 0.0801, 0.005):
        r = stops(sd, 0.0, precise, a.tries, a.seed)
        med = float(np.median(r))
        lo, hi = np.percentile(r, [10, 90])
        print(f"| {sd * 100:.1f} % | {med:g} | {lo:g}-{hi:g} |")
        if abs(med - a.measured_runs) < best:
            fitted, best = float(sd), abs(med - a.measured_runs)
    print(f"\nfitted run-level sd: {fitted * 100:.1f} %\n")

    decided = StopRule.create(until="decided", threshold=a.threshold / 100, max_runs=a.horizon)
    mean = math.log1p(a.change / 100)
    print(f"2. gate: +{a.change:g} % at threshold {a.threshold:g} % (until decided)")
    head = " | ".join(f"decided by {m}" for m in a.max_runs)
    print(f"| run-level sd | median runs | 80 % | 90 % | slower | {head} |")
    print("|---:|---:|---:|---:|---:|" + "---:|" * len(a.max_runs))
    for sd in sorted({0.02, 0.03, round(fitted - 0.005, 4), fitted, round(fitted + 0.005, 4)}):
        values = np.random.default_rng(a.seed + 1).normal(mean, sd, (a.tries, a.horizon))
        s = first_stops(values, decided)
        r = s.runs
        med, p80, p90 = np.percentile(r, [50, 80, 90])
        slower = float(np.mean(s.verdict == "slower"))
        shares = " | ".join(f"{np.mean(r <= m) * 100:.0f} %" for m in a.max_runs)
        print(
            f"| {sd * 100:.1f} % | {med:g} | {p80:g} | {p90:g} | {slower * 100:.1f} % | {shares} |"
        )


if __name__ == "__main__":
    main()
