"""Stopping with the repository's priors: coverage and cost in a seeded simulation.

Every simulated experiment has a true run-value spread ``sigma`` (log scale) and a prior
estimated from ``--prior-experiments`` earlier experiments of ``--prior-runs`` runs each
(df0 = experiments x (runs - 1); each experiment its own draw of the prior). The
current runs are as noisy as before, or ``--noisier`` (1.3x) noisier. For a precision
goal ``--until precise:P`` it prints, per ratio sigma / P:

- the runs of `--until precise` with the prior, and without it (the no-prior rule);
- coverage of the final interval (truth 0) with the prior, and the share of experiments
  whose prior the check dropped;
- the runs of three fixed plans sized *before* the run to reach P with 95 %
  probability (the fixed-n Student-t interval): from a 5-run pilot (its SD's 95 % upper
  bound taken as the spread: what one can promise without a repository; the pilot's runs
  count as the plan's first runs), from the repository's prior (its SD: what `duet plan
  --history --precision` assumes), and from the true sigma (an oracle); and how often
  each reached P;
- the ratios of the prior rule's machine time (runs: every run costs the same) to each.

``python benchmarks/prior_stopping_study.py`` (seeded, about 20 s; ``--quick`` 5 s).
Recorded in docs/measurements/prior-stopping.md.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from duetbench.adaptive import StopRule, first_stops
from duetbench.adaptive.prior import Prior
from duetbench.adaptive.prior_intervals import prior_intervals
from duetbench.adaptive.rules import goal_first_look
from duetbench.adaptive.sequential import Design, running_intervals

PILOT = 5


def fixed_runs(
    sigma: np.ndarray, precision: float, prob: float = 0.95, df: float | None = None
) -> np.ndarray:
    """Smallest n whose fixed-n t interval (log scale, half-width t s / sqrt(n)) is within
    ``precision`` with probability ``prob`` when the spread is ``sigma``: (n - 1) S^2 /
    sigma^2 is chi-square with n - 1 df. With ``df``, ``sigma`` is itself an estimate
    with that many degrees of freedom, and S^2 / sigma^2 is F(n - 1, df) (the plan a
    repository's prior gives, its uncertainty included). Bisection on n, every sigma at
    once."""
    half = math.asinh(precision)
    sigma = np.asarray(sigma, dtype=np.float64)

    def prob_ok(n: np.ndarray) -> np.ndarray:
        bound = (half * np.sqrt(n) / (stats.t.ppf(0.975, n - 1) * sigma)) ** 2
        if df is None:
            return stats.chi2.cdf((n - 1) * bound, n - 1)
        return stats.f.cdf(bound, n - 1, df)

    lo = np.full(sigma.shape, 2.0)  # prob_ok(lo) may be >= prob: checked below
    hi = np.full(sigma.shape, 2.0**20)
    for _ in range(21):
        mid = np.floor((lo + hi) / 2)
        ok = prob_ok(mid) >= prob
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return np.where(prob_ok(lo) >= prob, lo, hi).astype(np.int64)


def reached(sigma: float, n: np.ndarray, precision: float, rng: np.random.Generator) -> float:
    """Share of fixed plans of n runs whose t interval reached the precision (simulated)."""
    s = sigma * np.sqrt(rng.chisquare(np.maximum(n - 1, 1)) / np.maximum(n - 1, 1))
    half = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * s / np.sqrt(n)
    return float(np.mean(half <= math.asinh(precision)))


def one(
    ratio: float, precision: float, k: float, args: argparse.Namespace, rng: np.random.Generator
) -> dict[str, float]:
    e, n_max = args.experiments, args.max_runs
    sigma = ratio * precision
    df0 = args.prior_experiments * (args.prior_runs - 1)
    sd0 = sigma * np.sqrt(rng.chisquare(df0, size=e) / df0)
    v = rng.normal(0.0, sigma * k, size=(e, n_max))
    rule = StopRule.create(
        until="precise", precision=precision, max_runs=n_max, prior=Prior(sigma, df0)
    )
    plain_rule = StopRule.create(until="precise", precision=precision, max_runs=n_max)
    plain = running_intervals(v, plain_rule.multipliers(n_max))
    first = goal_first_look(rule)
    pi = prior_intervals(v, rule.prior, Design.WIDTH, plain, confidence=0.95, first_look=first,
                         sd0=sd0)  # type: ignore[arg-type]  # fmt: skip
    lo, hi = np.expm1(pi.intervals.low), np.expm1(pi.intervals.high)
    ok = ((hi - lo) / 2 <= precision) & (np.arange(1, n_max + 1) >= first)
    idx = np.where(ok.any(axis=1), ok.argmax(axis=1), n_max - 1)
    rows = np.arange(e)
    runs = idx + 1
    cover = np.mean((lo[rows, idx] <= 0) & (hi[rows, idx] >= 0))
    dropped = pi.dropped[rows, idx].mean()
    without = first_stops(v, plain_rule)
    cover0 = np.mean((without.low <= 0) & (without.high >= 0))
    # fixed plans sized before the run
    pilot_sd = np.std(v[:, :PILOT], axis=1, ddof=1)
    upper = pilot_sd * math.sqrt((PILOT - 1) / stats.chi2.ppf(0.05, PILOT - 1))
    f_pilot = np.maximum(fixed_runs(upper, precision), PILOT)
    f_prior = fixed_runs(sd0, precision, df=df0)
    f_true = fixed_runs(np.array([sigma * k]), precision)[0]
    return {
        "runs": runs.mean(),
        "no_prior": without.runs.mean(),
        "cover": cover,
        "cover0": cover0,
        "dropped": dropped,
        "f_pilot": f_pilot.mean(),
        "f_prior": f_prior.mean(),
        "f_true": float(f_true),
        "reach_prior": reached(sigma * k, f_prior, precision, rng),
        "capped": float(np.mean(runs >= n_max)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--precision", type=float, default=0.01)
    ap.add_argument("--ratios", default="0.5,1,2,4", help="sigma / precision")
    ap.add_argument("--experiments", type=int, default=4000)
    ap.add_argument("--max-runs", type=int, default=1000)
    ap.add_argument("--prior-experiments", type=int, default=5)
    ap.add_argument("--prior-runs", type=int, default=10)
    ap.add_argument("--noisier", type=float, default=1.3)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.experiments, args.ratios = 1000, "0.5,2"
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    df0 = args.prior_experiments * (args.prior_runs - 1)
    print(
        f"# --until precise:{args.precision * 100:g}% with a prior from "
        f"{args.prior_experiments} experiments x {args.prior_runs} runs (df {df0}); "
        f"{args.experiments} experiments per row, seed {args.seed}\n"
    )
    print(
        "| sigma/P | machine | runs, prior | runs, no prior | coverage, prior | (no prior) "
        "| prior dropped | fixed: pilot | fixed: prior (reached P) | fixed: true sigma "
        "| prior / pilot plan | prior / prior plan | prior / oracle plan | prior / no prior |"
    )
    print("|---" * 14 + "|")
    for ratio in (float(x) for x in args.ratios.split(",")):
        for k in (1.0, args.noisier):
            r = one(ratio, args.precision, k, args, rng)
            print(
                f"| {ratio:g} | {'same' if k == 1.0 else f'{k:g}x noisier'} "
                f"| {r['runs']:.1f} | {r['no_prior']:.1f} | {r['cover'] * 100:.1f} % "
                f"| {r['cover0'] * 100:.1f} % | {r['dropped'] * 100:.0f} % "
                f"| {r['f_pilot']:.1f} | {r['f_prior']:.1f} ({r['reach_prior'] * 100:.0f} %) "
                f"| {r['f_true']:.0f} | {r['runs'] / r['f_pilot']:.2f} "
                f"| {r['runs'] / r['f_prior']:.2f} | {r['runs'] / r['f_true']:.2f} "
                f"| {r['runs'] / r['no_prior']:.2f} |"
            )
    print(f"\n({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
