"""Stopping rules with serially correlated run values: before and after the check (seeded).

    python benchmarks/serial_correlation_study.py            # 4000 experiments per cell, ~1 min
    python benchmarks/serial_correlation_study.py --quick    # 1000 per cell

Every experiment is a sequence of up to 50 run values (log ratios, sd 1 %) in run
order: independent normal (rho 0) or AR(1) with lag-1 autocorrelation rho (0.3, 0.5),
the marginal sd the same. Each row measures the rules as they are now (the guards of
adaptive/guards.py: docs/adaptive.md, "Assumptions, and how they are checked") beside
the same rules without them ("before": ``first_stops(..., guards=False)``), on the
same sequences. (Written for the earlier yes/no serial check; the guards that
replaced it are measured in benchmarks/guard_cost_study.py.)

- A/A false alarms of `--until decided` (threshold 0: a verdict slower/faster with no
  change), and of them the share whose stop carries the note (the explanation says the
  run values are serially correlated);
- runs to decide a 3 % change at a 1 % threshold;
- coverage of the true change (0) by the interval at the stop of `--until precise:0.5%`
  (the width design), and its runs;
- with skewed run values (exponential) and the truth on the threshold: wrong
  `equivalent` verdicts, and the share of them whose stop carries the skew note
  (rules.strong_skew; "before" counts the note as if it had been there).

Prints a Markdown table (docs/measurements/serial-correlation.md).
"""

from __future__ import annotations

import argparse
import math
import platform
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from duetbench.adaptive import StopRule
from duetbench.adaptive import first_stops as _first_stops
from duetbench.adaptive.rules import strong_skew

RUNS = 50
SD = 0.01


def ar1(experiments: int, rho: float, seed: int) -> np.ndarray:
    """AR(1) run values with marginal sd :data:`SD` (rho 0: independent)."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((experiments, RUNS)) * SD * math.sqrt(1 - rho**2)
    x = np.empty((experiments, RUNS))
    x[:, 0] = rng.standard_normal(experiments) * SD
    for t in range(1, RUNS):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return x


GUARDS = True


@contextmanager
def without_the_check() -> Iterator[None]:
    """The rules without the guards (``first_stops(..., guards=False)``)."""
    global GUARDS
    GUARDS = False
    try:
        yield
    finally:
        GUARDS = True


def first_stops(v: np.ndarray, rule: StopRule) -> object:
    return _first_stops(v, rule, guards=GUARDS)


def cell(v: np.ndarray) -> list[str]:
    n = len(v)
    aa = first_stops(v, StopRule.create(until="decided", threshold=0.0, max_runs=RUNS))
    alarm = np.isin(aa.verdict, ("slower", "faster"))
    g = aa.intervals.guard
    noted = (
        g.found[np.arange(n), aa.runs - 1] & (g.factor[np.arange(n), aa.runs - 1] > 1.0)
        if g is not None
        else np.zeros(n, dtype=bool)
    )
    dec = first_stops(
        v + math.log(1.03), StopRule.create(until="decided", threshold=0.01, max_runs=RUNS)
    )
    pre = first_stops(v, StopRule.create(until="precise", precision=0.005, max_runs=RUNS))
    covered = (pre.low <= 0) & (pre.high >= 0)
    return [
        f"{alarm.mean() * 100:.1f} %",
        f"{(alarm & ~noted).mean() * 100:.1f} %",
        f"{dec.runs.mean():.1f}",
        f"{covered.mean() * 100:.1f} %",
        f"{pre.runs.mean():.1f}",
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1000 experiments per cell")
    p.add_argument("--seed", type=int, default=26)
    args = p.parse_args()
    n = 1000 if args.quick else 4000
    warnings.simplefilter("ignore", RuntimeWarning)
    started = time.time()
    print(
        f"{n} seeded experiments per cell (seed {args.seed}), up to {RUNS} runs, "
        f"run-value sd {SD * 100:g} %; {platform.machine()}, Python {platform.python_version()}"
    )
    print()
    print(
        "| run values | rules | A/A false alarms (decided) | false alarms without the note | "
        "runs to decide 3 % at 1 % | coverage (precise 0.5 %) | runs (precise) |"
    )
    print("|---|---|---|---|---|---|---|")
    for i, rho in enumerate((0.0, 0.3, 0.5)):
        v = ar1(n, rho, args.seed + i)
        name = "independent" if rho == 0 else f"AR(1), rho {rho:g}"
        with without_the_check():
            before = cell(v)
        after = cell(v)
        print(f"| {name} | before | " + " | ".join(before) + " |")
        print(f"| {name} | after | " + " | ".join(after) + " |")
    print()
    print(
        "Skewed run values (exponential, sd 1 %) with the true change on the 1 % "
        "threshold, `--until decided --threshold 1%`:"
    )
    print()
    print("| rules | wrong `equivalent` | of them with the skew note | runs |")
    print("|---|---|---|---|")
    rng = np.random.default_rng(args.seed + 10)
    skewed = math.log(1.01) + SD * (rng.exponential(size=(n, RUNS)) - 1.0)
    for name in ("before", "after"):
        rule = StopRule.create(until="decided", threshold=0.01, max_runs=RUNS)
        if name == "before":
            with without_the_check():
                st = first_stops(skewed, rule)
        else:
            st = first_stops(skewed, rule)
        wrong = st.verdict == "equivalent"
        noted = np.array(
            [strong_skew(skewed[i, : st.runs[i]]) is not None for i in range(n)], dtype=bool
        )
        share = (wrong & noted).sum() / max(wrong.sum(), 1)
        print(
            f"| {name} | {wrong.mean() * 100:.1f} % | {share * 100:.0f} % | {st.runs.mean():.1f} |"
        )
    print()
    print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
