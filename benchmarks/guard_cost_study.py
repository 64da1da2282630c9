"""What the stopping rules' guards cost and what they buy (seeded; docs/measurements/guard-cost.md).

    python benchmarks/guard_cost_study.py            # 4000 experiments per cell, ~4 min
    python benchmarks/guard_cost_study.py --quick    # 400 per cell, ~30 s

Every experiment is a sequence of up to 50 run values (log ratios) in run order, with a
spread (SD) of 0.5 % or 2 % and one of these noise models, each scaled to that SD:
normal; Student-t with 3 df; log-normal (``exp(0.75 Z)``, skewness 3.3); bimodal (80 %
in one mode, 20 % in another 5 within-mode SDs above, skewness 1.1); AR(1) with lag-1
autocorrelation 0.5 (normal). Three rules on the same sequences:

- **then**: the rules of two turns ago (before the serial check, commit 634d7c7): the
  t-mixture confidence sequence (`decided`) and the widened t interval (`precise`)
  from ``min_runs`` on, no guards -- ``first_stops(..., guards=False)``, checked equal to
  that commit's code on these seeds (docs/measurements/guard-cost.md);
- **last turn**: the serial check of the last release, re-implemented here from its
  code (commit 754ee2d, ``_last_turn``): the lag-1 autocorrelation tested at 20 % at
  every look from 5 runs, the interval widened by the estimate plus one standard error
  once any look rejected, a verdict from 10 runs;
- **now**: the rules as they are (adaptive/guards.py): a prior on the autocorrelation
  updated by the runs, the 0.8 quantile of the variance factor; the long side widened
  for skew; a verdict from ``min_runs``.

Cases (`decided` at a 2 % threshold, `precise` at 1 %, at most 50 runs): +5 %, A/A,
+3 % (runs and the share decided within 50), `precise`; A/A at threshold 0 and at 2 %
(false alarms: slower or faster); `precise` coverage; with a repository (earlier
experiments of the same noise) the rule with and without the guards; the alternatives
measured (the frontier between cost and protection); the lag-1 test's power.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import platform
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from duetbench.adaptive import StopRule, first_stops, guards
from duetbench.adaptive.guards import ShapePrior, lag1_autocorrelation
from duetbench.adaptive.prior import Prior
from duetbench.adaptive.prior_intervals import prior_intervals
from duetbench.adaptive.rules import _goal_reached, goal_first_look, outcomes
from duetbench.adaptive.sequential import prefix_moments, running_intervals

RUNS = 50
CHANGED = ("slower", "faster")
LOGNORMAL_SIGMA = 0.75
MODELS = ("normal", "t3", "lognormal", "bimodal", "ar1")
INDEPENDENT = ("normal", "t3", "lognormal")
#: the issue's cases: (label, goal, change, spread)
CASES = (
    ("`decided`, +5 %, spread 0.5 %", "decided", 0.05, 0.005),
    ("`decided`, +5 %, spread 2 %", "decided", 0.05, 0.02),
    ("`decided`, A/A, spread 2 %", "decided", 0.0, 0.02),
    ("`decided`, +3 %, spread 2 %", "decided", 0.03, 0.02),
    ("`precise:1%`, spread 2 %", "precise", 0.0, 0.02),
    ("`decided`, A/A, spread 0.5 %", "decided", 0.0, 0.005),
    ("`decided`, +3 %, spread 0.5 %", "decided", 0.03, 0.005),
    ("`precise:1%`, spread 0.5 %", "precise", 0.0, 0.005),
)


def noise(model: str, experiments: int, sd: float, seed: int, runs: int = RUNS) -> np.ndarray:
    """``experiments x runs`` run values of ``model`` with SD ``sd`` and mean 0."""
    rng = np.random.default_rng(seed)
    shape = (experiments, runs)
    if model == "normal":
        z = rng.standard_normal(shape)
    elif model == "t3":
        z = rng.standard_t(3, shape) / math.sqrt(3.0)
    elif model == "lognormal":
        s = LOGNORMAL_SIGMA
        x = rng.lognormal(0.0, s, shape)
        z = (x - math.exp(s * s / 2)) / math.sqrt((math.exp(s * s) - 1) * math.exp(s * s))
    elif model == "bimodal":
        p, w = 0.2, 0.2
        z = ((rng.random(shape) < p) + w * rng.standard_normal(shape) - p) / math.sqrt(
            p * (1 - p) + w * w
        )
    elif model == "ar1":
        rho = 0.5
        e = rng.standard_normal(shape) * math.sqrt(1 - rho * rho)
        z = np.empty(shape)
        z[:, 0] = rng.standard_normal(experiments)
        for t in range(1, runs):
            z[:, t] = rho * z[:, t - 1] + e[:, t]
    else:
        raise ValueError(model)
    return z * sd


def seed_of(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode()) + ARGS.seed


def rule_for(goal: str, threshold: float = 0.02) -> StopRule:
    if goal == "precise":
        return StopRule.create(until="precise", precision=0.01, max_runs=RUNS)
    return StopRule.create(until="decided", threshold=threshold, max_runs=RUNS)


@dataclass
class Stop:
    runs: np.ndarray
    decided: np.ndarray  # reached the goal (not max_runs)
    verdict: np.ndarray
    low: np.ndarray
    high: np.ndarray
    noted: np.ndarray  # the serial note at the stop


def _stop(v: np.ndarray, rule: StopRule, low: np.ndarray, high: np.ndarray, first: int) -> Stop:
    lo, hi = np.expm1(low), np.expm1(high)
    ok = _goal_reached(lo, hi, rule) & (np.arange(1, v.shape[1] + 1) >= first)
    hit = ok.any(axis=1)
    idx = np.where(hit, ok.argmax(axis=1), v.shape[1] - 1)
    rows = np.arange(len(v))
    return Stop(
        idx + 1,
        hit,
        outcomes(lo[rows, idx], hi[rows, idx], rule.threshold),
        lo[rows, idx],
        hi[rows, idx],
        np.zeros(len(v), bool),
    )


def now(v: np.ndarray, rule: StopRule) -> Stop:
    st = first_stops(v, rule)
    g = st.intervals.guard
    rows, idx = np.arange(len(v)), st.runs - 1
    noted = g.found[rows, idx] & (g.factor[rows, idx] > 1.0) if g is not None else idx < 0
    return Stop(st.runs, st.reason != "max_runs", st.verdict, st.low, st.high, noted)


def then(v: np.ndarray, rule: StopRule) -> Stop:
    st = first_stops(v, rule, guards=False)
    return Stop(st.runs, st.reason != "max_runs", st.verdict, st.low, st.high, st.runs < 0)


def _last_turn_inflation(v: np.ndarray, alpha: float, c: float) -> np.ndarray:
    """The serial check of commit 754ee2d (sequential.serial_inflation): found at any
    look from 5 runs whose r exceeds the one-sided alpha point; from then on the variance
    factor (1 + rho) / (1 - rho), rho = bias-corrected r + c standard errors, in [0, 0.8]."""
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    r = lag1_autocorrelation(v)
    checked = n >= 5
    found = checked & (np.nan_to_num(r, nan=-np.inf) > guards.serial_threshold(n, alpha))
    ever = np.maximum.accumulate(found, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (r + 1.0 / n) / (1.0 - 3.0 / n)
        rho = rho + c * np.sqrt(np.maximum(1.0 - rho * rho, 0.0) / n)
    rho = np.clip(np.where(checked & np.isfinite(rho), rho, 0.0), 0.0, 0.8)
    return np.where(ever, (1.0 + rho) / (1.0 - rho), 1.0)


def last_turn(
    v: np.ndarray, rule: StopRule, *, alpha: float = 0.2, c: float = 1.0, first: int = 10
) -> Stop:
    """The rule of the last release (or a variant: the check's level, the standard
    errors added, the first verdict look)."""
    mean, sd = prefix_moments(v)
    n = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    mult = rule.multipliers(v.shape[1])
    factor = _last_turn_inflation(v, alpha, c)
    with np.errstate(invalid="ignore"):
        half = np.where(np.isfinite(mult), mult * sd * np.sqrt(factor) / np.sqrt(n), np.inf)
    half = np.where(np.isnan(half), np.inf, half)
    low, high = mean - half, mean + half
    if rule.resolved_design.intersects:  # restarted at the look that found it
        widened = np.maximum.accumulate(factor > 1.0, axis=1)
        low = np.where(
            widened,
            np.maximum.accumulate(np.where(widened, low, -np.inf), axis=1),
            np.maximum.accumulate(low, axis=1),
        )
        high = np.where(
            widened,
            np.minimum.accumulate(np.where(widened, high, np.inf), axis=1),
            np.minimum.accumulate(high, axis=1),
        )
        crossed = low > high
        with np.errstate(invalid="ignore"):  # (-inf + inf) where no look yet: not crossed
            mid = np.where(crossed, (low + high) / 2.0, 0.0)
        low, high = np.where(crossed, mid, low), np.where(crossed, mid, high)
    look = rule.min_runs if rule.until == "precise" else max(rule.min_runs, first)
    return _stop(v, rule, low, high, look)


@contextlib.contextmanager
def guard_settings(**kw: float) -> Iterator[None]:
    """The guards with other constants (the alternatives of the frontier)."""
    old = {k: getattr(guards, k) for k in kw}
    for k, x in kw.items():
        setattr(guards, k, x)
    try:
        yield
    finally:
        for k, x in old.items():
            setattr(guards, k, x)


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _cell(rule: Callable[[np.ndarray, StopRule], Stop], model: str, case: tuple) -> Stop:
    label, goal, change, sd = case
    v = noise(model, ARGS.experiments, sd, seed_of(model, sd)) + math.log1p(change)
    return rule(v, rule_for(goal))


def _value(st: Stop, case: tuple) -> float:
    """Runs, or for +3 % at 2 % the share decided within 50 runs."""
    return float(st.decided.mean()) if case[2] == 0.03 else float(st.runs.mean())


def cost_table() -> None:
    print("## Runs to a decision or to the precision, on independent noise\n")
    print("Same sequences in every column; `+3 %, spread 2 %`: share decided within 50 runs.\n")
    print("| noise | case | then | last turn | now | now / then |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for model in INDEPENDENT:
        for case in CASES:
            vals = [_value(_cell(r, model, case), case) for r in (then, last_turn, now)]
            share = case[2] == 0.03
            fmt = _pct if share else (lambda x: f"{x:.1f}")
            ratio = vals[2] / vals[0]
            if not share:
                worst = max(worst, ratio)
            print(
                f"| {model} | {case[0]} | {fmt(vals[0])} | {fmt(vals[1])} | {fmt(vals[2])} | "
                f"{'' if share else f'{ratio:.2f}x'} |"
            )
    print(f"\nWorst ratio now / then: {worst:.2f}x (goal: at most 1.05x).\n")


def safety_table() -> None:
    print("## A/A false alarms, coverage and notes (spread 2 %)\n")
    print(
        "| noise | A/A at threshold 0: then | last turn | now | A/A at 2 %: now | "
        "`precise` coverage: then | last turn | now | serial note at the stop: now |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for model in MODELS:
        v = noise(model, ARGS.experiments, 0.02, seed_of("safety", model))
        aa = [np.isin(r(v, rule_for("decided", 0.0)).verdict, CHANGED).mean() for r in RULES]
        a2 = now(v, rule_for("decided"))
        fa2 = np.isin(a2.verdict, CHANGED).mean()
        pre = [r(v, rule_for("precise")) for r in RULES]
        cov = [((p.low <= 0) & (p.high >= 0)).mean() for p in pre]
        notes = np.concatenate([a2.noted, pre[2].noted]).mean()
        print(
            f"| {model} | {' | '.join(map(_pct, aa))} | {_pct(fa2)} | "
            f"{' | '.join(map(_pct, cov))} | {_pct(notes)} |"
        )
    print(
        "\nGoals: AR(1) A/A at threshold 0 at most 8 %, `precise` coverage at least 93 %; "
        "log-normal and bimodal A/A at threshold 0 at most 7 %; every A/A at 2 % at most 1 %.\n"
    )


def history(
    model: str, sd: float, seed: int, k: int, m: int
) -> tuple[list[ShapePrior], np.ndarray]:
    """Per experiment, the shape prior and spread of ``k`` earlier experiments of ``m``
    runs of the same noise (history/priors.py's pooling)."""
    e = ARGS.experiments
    h = noise(model, e * k, sd, seed, runs=m).reshape(e, k, m)
    c = h - h.mean(axis=2, keepdims=True)
    sq = (c * c).sum(axis=(1, 2))
    r0 = (c[:, :, 1:] * c[:, :, :-1]).sum(axis=(1, 2)) / sq
    g0 = (c**3).sum(axis=(1, 2)) / (k * m) / (sq / (k * m)) ** 1.5
    shapes = [ShapePrior(float(a), k * m, k, float(b)) for a, b in zip(r0, g0, strict=True)]
    return shapes, np.sqrt(sq / (k * (m - 1)))


def with_history(v: np.ndarray, rule: StopRule, shapes: list, sd0: np.ndarray, on: bool) -> Stop:
    """The rule with a repository's priors (each experiment its own), guards on or off."""
    df0 = shapes[0].runs - shapes[0].experiments
    prior = Prior(float(np.median(sd0)), df0)
    r = StopRule.create(
        until=rule.until, precision=rule.precision, threshold=rule.threshold, max_runs=RUNS,
        prior=prior,
    )  # fmt: skip
    plain = running_intervals(
        v, r.multipliers(RUNS), intersect=r.resolved_design.intersects, serial=on,
        history=shapes if on else None,
    )  # fmt: skip
    first = goal_first_look(r)
    pi = prior_intervals(
        v, prior, r.resolved_design, plain, confidence=0.95, first_look=first, sd0=sd0
    )
    return _stop(v, r, pi.intervals.low, pi.intervals.high, first)


def history_table() -> None:
    print("## With a repository: the same rule with and without the guards\n")
    for k in (5, 10):
        print(
            f"Earlier experiments: {k} x 20 runs of the same noise (their spread pooled, "
            "their shape the guards' prior).\n"
        )
        print(
            "| noise | case | runs without guards | with | ratio | first decision without "
            "/ with | decided by 5 runs without / with |"
        )
        print("|---|---|---|---|---|---|---|")
        for model in INDEPENDENT:
            for case in CASES[:5]:
                _, goal, change, sd = case
                v = noise(model, ARGS.experiments, sd, seed_of(model, sd)) + math.log1p(change)
                shapes, sd0 = history(model, sd, seed_of("history", model, sd, k), k, 20)
                off, on = (with_history(v, rule_for(goal), shapes, sd0, g) for g in (False, True))
                if change == 0.03:
                    a, b = f"{_pct(off.decided.mean())}", f"{_pct(on.decided.mean())}"
                    ratio = ""
                else:
                    a, b = f"{off.runs.mean():.1f}", f"{on.runs.mean():.1f}"
                    ratio = f"{on.runs.mean() / off.runs.mean():.2f}x"
                print(
                    f"| {model} | {case[0]} | {a} | {b} | {ratio} | {off.runs.min()} / "
                    f"{on.runs.min()} | {_pct((off.runs <= 5).mean())} / "
                    f"{_pct((on.runs <= 5).mean())} |"
                )
        print()
    print("Wrong or changed repositories (spread 2 %, 5 x 20 earlier runs):\n")
    print("| current runs | repository's runs | A/A at threshold 0 | `precise` coverage |")
    print("|---|---|---|---|")
    for cur, hist in (("ar1", "ar1"), ("ar1", "normal"), ("lognormal", "lognormal"),
                      ("bimodal", "bimodal"), ("normal", "ar1")):  # fmt: skip
        v = noise(cur, ARGS.experiments, 0.02, seed_of("changed", cur))
        shapes, sd0 = history(hist, 0.02, seed_of("changed-h", hist), 5, 20)
        aa = with_history(v, rule_for("decided", 0.0), shapes, sd0, True)
        pre = with_history(v, rule_for("precise"), shapes, sd0, True)
        print(
            f"| {cur} | {hist} | {_pct(np.isin(aa.verdict, CHANGED).mean())} | "
            f"{_pct(((pre.low <= 0) & (pre.high >= 0)).mean())} |"
        )
    print()


def frontier_table() -> None:
    print("## The alternatives measured: cost against protection\n")
    print(
        "Cost: the worst and the mean ratio of runs to `then` over the cases above "
        "(normal, t3, log-normal; both spreads), and the least share of `+3 %` decided "
        "within 50 runs (then: its own). Protection: A/A at threshold 0 under AR(1) 0.5 "
        "and log-normal noise, `precise` coverage under AR(1) 0.5 (spread 2 %).\n"
    )
    print(
        "| rule | worst | mean | +3 % decided (2 %) | AR(1) A/A | AR(1) coverage | "
        "log-normal A/A | bimodal A/A |"
    )
    print("|---|---|---|---|---|---|---|---|")
    alts: list[tuple[str, Callable[[np.ndarray, StopRule], Stop], dict[str, float]]] = [
        ("then (no guards)", then, {}),
        ("last turn: test 20 %, + 1 SE, verdict from 10 runs", last_turn, {}),
        ("test 20 %, + 1 SE, verdict from 5 runs", lambda v, r: last_turn(v, r, first=5), {}),
        (
            "test 5 %, estimate only, from 5 runs",
            lambda v, r: last_turn(v, r, alpha=0.05, c=0.0, first=5),
            {},
        ),  # fmt: skip
        (
            "test 50 %, + 1 SE, from 5 runs",
            lambda v, r: last_turn(v, r, alpha=0.5, first=5),
            {},
        ),  # fmt: skip
        ("prior 0.3, quantile 0.8", now, {"SERIAL_PRIOR_DEPENDENT": 0.3}),
        ("prior 0.5, quantile 0.8", now, {"SERIAL_PRIOR_DEPENDENT": 0.5}),
        ("**prior 0.6, quantile 0.8 (now)**", now, {}),
        ("prior 0.6, quantile 0.85", now, {"SERIAL_QUANTILE": 0.85}),
        ("prior 0.6, quantile 0.8, no skew guard", now, {"SKEW_SHRINK": 1e12}),
    ]
    base: dict[tuple, float] = {}
    for name, rule, settings in alts:
        with guard_settings(**settings):
            ratios, shares = [], []
            for model in INDEPENDENT:
                for case in CASES:
                    st = _cell(rule, model, case)
                    key = (model, case)
                    if rule is then:
                        base[key] = _value(st, case)
                    if case[2] == 0.03:
                        if case[3] == 0.02:
                            shares.append(_value(st, case))
                    else:
                        ratios.append(_value(st, case) / base[key])
            prot = []
            for model in ("ar1", "lognormal", "bimodal"):
                v = noise(model, ARGS.experiments, 0.02, seed_of("safety", model))
                prot.append(np.isin(rule(v, rule_for("decided", 0.0)).verdict, CHANGED).mean())
            v = noise("ar1", ARGS.experiments, 0.02, seed_of("safety", "ar1"))
            p = rule(v, rule_for("precise"))
            cov = ((p.low <= 0) & (p.high >= 0)).mean()
        print(
            f"| {name} | {max(ratios):.2f}x | {np.mean(ratios):.2f}x | {_pct(min(shares))} | "
            f"{_pct(prot[0])} | {_pct(cov)} | {_pct(prot[1])} | {_pct(prot[2])} |"
        )
    print()


def power_table() -> None:
    print("## Why: what a few runs can tell about serial correlation\n")
    e = ARGS.experiments * 5
    ar = noise("ar1", e, 1.0, seed_of("power", "ar1"))
    iid = noise("normal", e, 1.0, seed_of("power", "normal"))
    st = then(noise("ar1", ARGS.experiments, 0.02, seed_of("safety", "ar1")),
              rule_for("decided", 0.0))  # fmt: skip
    fa = np.isin(st.verdict, CHANGED)
    print(
        "Under AR(1) 0.5 the rule of two turns ago raised "
        f"{_pct(fa.mean())} A/A false alarms, {_pct((fa & (st.runs <= 9)).mean())} of "
        f"experiments at 5-9 runs and {_pct((fa & (st.runs <= 12)).mean())} by 12 runs. "
        "The share of AR(1) 0.5 sequences whose lag-1 autocorrelation exceeds the test's "
        "point (the test's power), beside the share of independent ones (its level):\n"
    )
    print("| runs | level 5 %: AR(1) 0.5 | independent | level 20 %: AR(1) 0.5 | independent |")
    print("|---|---|---|---|---|")
    for n in (5, 7, 9, 12, 17, 24):
        ra = lag1_autocorrelation(ar[:, :n])[:, -1]
        ri = lag1_autocorrelation(iid[:, :n])[:, -1]
        cells = []
        for alpha in (0.05, 0.2):
            t = float(guards.serial_threshold(n, alpha))
            cells += [_pct((ra > t).mean()), _pct((ri > t).mean())]
        print(f"| {n} | {' | '.join(cells)} |")
    print()


RULES = (then, last_turn, now)
ARGS = argparse.Namespace(seed=35, experiments=4000)


def main() -> None:
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="400 experiments per cell")
    p.add_argument("--experiments", type=int, default=4000)
    p.add_argument("--seed", type=int, default=35)
    p.add_argument("--only", default="cost,safety,history,frontier,power", help="tables to print")
    ARGS = p.parse_args()
    if ARGS.quick:
        ARGS.experiments = 400
    warnings.simplefilter("ignore", RuntimeWarning)
    started = time.time()
    print(
        f"# The guards' cost and protection: {ARGS.experiments} seeded experiments per cell "
        f"(seed {ARGS.seed}), up to {RUNS} runs; {platform.machine()}, Python "
        f"{platform.python_version()}\n"
    )
    tables = {
        "cost": cost_table,
        "safety": safety_table,
        "history": history_table,
        "frontier": frontier_table,
        "power": power_table,
    }
    for name in ARGS.only.split(","):
        tables[name.strip()]()
    print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
