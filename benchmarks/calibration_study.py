"""Calibration study: false alarms and coverage of every option of ``compare``.

Every test (ratio, diff, utest, utest-pooled) x interval (t, percentile, bca,
studentized) x run statistic (median, mean, trimmed, min, means) x method (seqn, aduet,
sduet), at 5, 10 and 20 runs of 30 iterations, on seeded simulations under several
noise models -- including ones the methods do not assume:

* ``base``: run effect 3 % (shared by a duet's sides), iteration noise 1 %, 1 % of
  iterations 1.5x slower on one side (the base model of docs/statistics.md, "Calibration of every option").
* ``heavy tails``: Student-t(3) iteration noise (scale 2 %), run effect 2 %.
* ``run shifts``: a side's whole run is 10 % slower in 20 % of runs (one process's
  layout or CPU; no method cancels it), run effect 1 %.
* ``drift``: the machine slows down 10 % over the experiment, runs in random order.
* ``one-sided outliers``: 10 % of iterations 2x slower, on one side at a time.
* ``slow periods``: iterations of 10 ms on a timeline where slow periods (2x, 30 %
  of the time, mean 50 ms) hit both sides of a duet at once; per-process shifts 0.5 %.

For each cell: the share of A/A experiments not judged ``same`` (false alarms, at a
nominal 5 %), and with B 2 % slower the share whose interval covers +2 %
(coverage; CI tests only) and the share judged ``slower`` (power). Bootstrap
intervals use ``--resamples`` (default 1999).

    python benchmarks/calibration_study.py                 # 1000 per cell, ~15 min on 2 busy vCPUs
    python benchmarks/calibration_study.py --quick         # 200 per cell, ~3 min
    python benchmarks/calibration_study.py --csv cells.csv # every cell, not only the summary
    python benchmarks/calibration_study.py --from-csv cells.csv   # re-print saved cells
    python benchmarks/calibration_study.py --intervals t --run-stats means   # some options only
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from duetbench.analysis import compare_tests
from duetbench.analysis.simulate import simulate, simulate_interference

CHANGE = 0.02
METHODS = ("seqn", "aduet", "sduet")
ITERATIONS = 30
#: what is measured (--intervals, --run-stats choose some)
INTERVALS: list[str] = ["t", "percentile", "bca", "studentized"]
RUN_STATS: list[str] = ["median", "mean", "trimmed", "min", "means"]


def _plain(**kw: object) -> Callable[..., pd.DataFrame]:
    def make(n: int, runs: int, change: float, seed: int) -> pd.DataFrame:
        return simulate(
            benchmarks=n, runs=runs, iterations=ITERATIONS, slowdown=change, seed=seed,
            categorical=True, **kw,
        )  # fmt: skip

    return make


def _periods(n: int, runs: int, change: float, seed: int) -> pd.DataFrame:
    return simulate_interference(
        ratio=1.0 + change, benchmarks=n, methods=METHODS, runs=runs, iterations=ITERATIONS,
        side_run_sd=0.005, shared=1.0, seed=seed, categorical=True,
    )  # fmt: skip


MODELS: dict[str, Callable[..., pd.DataFrame]] = {
    "base": _plain(run_sd=0.03, iter_sd=0.01, outlier_p=0.01),
    "heavy tails": _plain(run_sd=0.02, iter_sd=0.02, iter_df=3.0),
    "run shifts": _plain(run_sd=0.01, iter_sd=0.01, shift_p=0.2, shift=0.1),
    "drift": _plain(run_sd=0.01, iter_sd=0.01, drift=0.1),
    "one-sided outliers": _plain(run_sd=0.01, iter_sd=0.01, outlier_p=0.1, outlier_factor=2.0),
    "slow periods": _periods,
}


def verdict_rows(df: pd.DataFrame, resamples: int, seed: int) -> pd.DataFrame:
    """Every configuration's rows for one simulated table."""
    frames = []
    for interval in INTERVALS:
        for run_stat in RUN_STATS:
            tests: tuple[str, ...] = ("ratio", "diff")
            if interval == "t":  # the U tests have no interval; the pooled one no run value
                tests += ("utest",) + (("utest-pooled",) if run_stat == "median" else ())
            r = compare_tests(
                df, tests, interval=interval, run_stat=run_stat, resamples=resamples, seed=seed
            )
            frames.append(
                r[
                    [
                        "benchmark",
                        "method",
                        "test",
                        "interval",
                        "run_stat",
                        "verdict",
                        "ci_low",
                        "ci_high",
                    ]
                ]
            )
    out = pd.concat(frames, ignore_index=True)
    out.loc[out["test"].str.startswith("utest"), "interval"] = "-"
    out.loc[out["test"] == "utest-pooled", "run_stat"] = "-"
    return out


def cells(
    n: int, runs_list: tuple[int, ...], models: list[str], resamples: int, seed: int
) -> pd.DataFrame:
    """One row per (model, runs, test, interval, run_stat, method)."""
    keys = ["test", "interval", "run_stat", "method"]
    rows = []
    for mi, model in enumerate(models):
        for runs in runs_list:
            per = max(20, 1_000_000 // (len(METHODS) * runs * 2 * ITERATIONS))  # ~1 M rows
            stats = {}
            for ci, change in enumerate((0.0, CHANGE)):
                parts = []
                for chunk, lo in enumerate(range(0, n, per)):
                    s = seed * 100_003 + mi * 1009 + runs * 31 + ci * 7 + chunk * 100_019
                    df = MODELS[model](min(per, n - lo), runs, change, s)
                    parts.append(verdict_rows(df, resamples, seed))
                v = pd.concat(parts, ignore_index=True)
                if change == 0.0:
                    stats["false_alarms"] = (
                        v["verdict"].isin(("slower", "faster")).groupby([v[k] for k in keys]).mean()
                    )
                else:
                    cover = ((v["ci_low"] <= CHANGE) & (CHANGE <= v["ci_high"])).astype(float)
                    cover[v["test"].str.startswith("utest").to_numpy()] = np.nan
                    g = [v[k] for k in keys]
                    stats["coverage"] = cover.groupby(g).mean()
                    stats["power"] = (v["verdict"] == "slower").groupby(g).mean()
            t = pd.DataFrame(stats).reset_index()
            t.insert(0, "runs", runs)
            t.insert(0, "model", model)
            rows.append(t)
            print(f"  {model}, {runs} runs done", flush=True)
    return pd.concat(rows, ignore_index=True)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and run count: worst false-alarm rate and coverage over methods
    and noise models, and the median power."""
    g = c.groupby(["test", "interval", "run_stat", "runs"], sort=False)
    s = g.agg(
        fa_worst=("false_alarms", "max"),
        fa_median=("false_alarms", "median"),
        coverage_worst=("coverage", "min"),
        power=("power", "median"),
    ).reset_index()
    return s


def _pct(x: float) -> str:
    return "-" if pd.isna(x) else f"{100 * x:.1f}"


def print_summary(s: pd.DataFrame, runs_list: tuple[int, ...]) -> None:
    """False alarms: worst (median) over methods and models; coverage: worst."""
    print(
        "| test | interval | run_stat | false alarms at "
        + " / ".join(f"{r}" for r in runs_list)
        + " runs: worst (median) % | coverage of +2 %, worst % | power at 10 runs |"
    )
    print("|---|---|---|---|---|---|")
    for (test, interval, run_stat), d in s.groupby(["test", "interval", "run_stat"], sort=False):
        d = d.set_index("runs")
        fa = " / ".join(
            f"{_pct(d.loc[r, 'fa_worst'])} ({_pct(d.loc[r, 'fa_median'])})" for r in runs_list
        )
        cv = " / ".join(_pct(d.loc[r, "coverage_worst"]) for r in runs_list)
        pw = _pct(d.loc[10, "power"]) if 10 in d.index else "-"
        print(f"| {test} | {interval} | {run_stat} | {fa} | {cv} | {pw} |")


def print_models(c: pd.DataFrame, test: str, interval: str, run_stat: str) -> None:
    d = c[(c["test"] == test) & (c["interval"] == interval) & (c["run_stat"] == run_stat)]
    print(f"\n{test}, {interval}, {run_stat}: false alarms (coverage) per model, method and runs\n")
    runs = sorted(d["runs"].unique())
    print("| model | " + " | ".join(f"{m}, {r} runs" for r in runs for m in METHODS) + " |")
    print("|---|" + "---|" * (len(runs) * len(METHODS)))
    for model, g in d.groupby("model", sort=False):
        g = g.set_index(["runs", "method"])
        cells_ = []
        for r in runs:
            for m in METHODS:
                row = g.loc[(r, m)]
                cov = "" if pd.isna(row["coverage"]) else f" ({_pct(row['coverage'])})"
                cells_.append(f"{_pct(row['false_alarms'])}{cov}")
        print(f"| {model} | " + " | ".join(cells_) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 experiments per cell")
    ap.add_argument("--experiments", type=int, default=None, help="per cell (default 1000)")
    ap.add_argument("--runs", default="5,10,20", help="run counts, e.g. 5,10,20")
    ap.add_argument("--models", default=",".join(MODELS), help="noise models to simulate")
    ap.add_argument("--resamples", type=int, default=1999)
    ap.add_argument("--intervals", default=",".join(INTERVALS), help="e.g. t,bca")
    ap.add_argument("--run-stats", default=",".join(RUN_STATS), help="e.g. median,means")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", help="write every cell to this CSV file")
    ap.add_argument("--from-csv", nargs="+", help="print the tables of saved cells instead")
    args = ap.parse_args()
    INTERVALS[:] = [x.strip() for x in args.intervals.split(",")]
    RUN_STATS[:] = [x.strip() for x in args.run_stats.split(",")]
    n = args.experiments or (200 if args.quick else 1000)
    runs_list = tuple(int(x) for x in args.runs.split(","))
    models = [m.strip() for m in args.models.split(",")]
    t0 = time.perf_counter()
    if args.from_csv:
        c = pd.concat([pd.read_csv(f) for f in args.from_csv], ignore_index=True)
        runs_list = tuple(sorted(c["runs"].unique()))
        models = list(c["model"].unique())
    else:
        c = cells(n, runs_list, models, args.resamples, args.seed)
    if args.csv:
        c.to_csv(args.csv, index=False)
    print(
        f"\n## Calibration: {n} experiments per cell and method, models {', '.join(models)}, "
        f"seed {args.seed}, {args.resamples} resamples; nominal 5 %; B +{CHANGE:.0%} for coverage\n"
    )
    print_summary(summary(c), runs_list)
    for cfg in (
        ("ratio", "t", "median"),
        ("ratio", "t", "means"),
        ("utest", "-", "median"),
        ("utest-pooled", "-", "-"),
    ):
        have = (c["test"] == cfg[0]) & (c["interval"] == cfg[1]) & (c["run_stat"] == cfg[2])
        if have.any():
            print_models(c, *cfg)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
