"""What the stopping rule pays for computing its run values as every command does.

The scheduler's StopTracker used to keep one value per run, computed from that run
alone; since the verdicts have one engine it computes the values of all the runs it
took at every decision (`adaptive.results.analysed_values`), so the run statistic
`auto` and the few-pairs rule see the same runs as `duet compare`. That is
quadratic in the runs. This prints, per number of runs taken, the seconds of one
decision's values (all runs so far) and of one run's value alone, measured side by
side in one process, and their ratio.

    python3 benchmarks/stopping_rule_cost.py
    python3 benchmarks/stopping_rule_cost.py --iterations 200 --runs 10 50 200
"""

from __future__ import annotations

import argparse
import statistics
import time

from duetbench.adaptive.results import analysed_values
from duetbench.analysis.simulate import simulate
from duetbench.options import CompareOptions


def seconds(fn: object, repeat: int) -> float:
    """The median wall time of ``repeat`` calls of ``fn``."""
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, nargs="+", default=[10, 50, 100, 200])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--method", default="sduet", choices=("seqn", "aduet", "sduet"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    opts = CompareOptions()
    print(f"{args.method}, {args.iterations} iterations per run; median of {args.repeat}")
    print(
        f"{'runs':>6} {'all runs (s)':>13} {'one run (s)':>12} {'ratio':>7} {'run total (s)':>14}"
    )
    for n in args.runs:
        t_all, t_one = measure(n, args.iterations, args.method, args.repeat, opts)
        # what a whole experiment of n runs spends on decisions: about n / 2 times t_all
        print(f"{n:>6} {t_all:>13.4f} {t_one:>12.4f} {t_all / t_one:>7.1f} {n * t_all / 2:>14.2f}")


def measure(
    n: int, iterations: int, method: str, repeat: int, opts: CompareOptions
) -> tuple[float, float]:
    """Seconds of the values of all ``n`` runs, and of the last run's alone."""
    df = simulate(benchmarks=1, methods=(method,), runs=n, iterations=iterations, seed=1)
    bench = str(df["benchmark"].iloc[0])
    one = df.loc[df["run"] == n - 1]
    t_all = seconds(lambda: analysed_values(df, bench, method, list(range(n)), opts), repeat)
    t_one = seconds(lambda: analysed_values(one, bench, method, [n - 1], opts), repeat)
    return t_all, t_one


if __name__ == "__main__":
    main()
