"""Measuring until sure: error rates and runs used by the stopping rules (seeded).

    python benchmarks/adaptive_study.py            # 2000 experiments per cell, ~1 min
    python benchmarks/adaptive_study.py --quick    # 500 per cell, ~15 s

Every experiment is a sequence of up to 50 runs whose values are the per-run median
of 20 pair log ratios (duetbench.adaptive.simulate: normal, heavy-tailed, run-level
shifts, slow drift); the rule looks after every run (the group-sequential design
analyses at 10, 20, ..., 50 runs unless "every run"). Prints Markdown tables:

1. A/A false alarms (verdict slower/faster) of each design, stopping at the first
   interval that excludes 0, beside naive peeking at a fixed-n t interval and the
   plug-in (asymptotic) normal mixture.
2. Coverage of the true change by the interval at the stop, and runs used, for
   `precise` rules (the width design, their default, beside the two anytime-valid
   ones) and `decided` rules; wrong `equivalent` verdicts at 1.5x the threshold.
3. Expected runs to a precision, per design.
4. `method: auto`: the pilot's choice, analysed with and without the pilot runs.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from duetbench.adaptive import Design, Goal, StopRule, first_stops
from duetbench.adaptive.method_choice import PILOT_RUNS, choose_method
from duetbench.adaptive.simulate import NOISE_MODELS, run_values

RUNS = 50
CHANGED = ("slower", "faster")


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _rule(design: str, **kw: object) -> StopRule:
    if design == "group, every run":
        return StopRule.create(design="group", groups=None, **kw)
    if design in ("sequence", "group", "width"):
        return StopRule.create(design=design, **kw)
    return StopRule(design=Design(design), **kw)  # type: ignore[arg-type]


def false_alarms(n: int, seed: int) -> list[list[str]]:
    rows = []
    for model in NOISE_MODELS:
        for method in ("seqn", "duet"):
            v = run_values(model, n, RUNS, seed=seed, method=method)
            row = [model, method]
            runs = []
            for design in ("sequence", "group", "group, every run", "naive", "asymptotic"):
                rule = _rule(design, until=Goal.DECIDED, threshold=0.0, min_runs=3, max_runs=RUNS)
                st = first_stops(v, rule, intersect=False if design == "naive" else None)
                row.append(_pct(np.isin(st.verdict, CHANGED).mean()))
                runs.append(f"{st.runs.mean():.1f}")
            row.append(" / ".join(runs))
            rows.append(row)
            seed += 1
    return rows


def small_samples(n: int, seed: int) -> list[list[str]]:
    """A/A false alarms by min_runs (normal noise): what an estimated SD costs."""
    v = run_values("normal", n, RUNS, seed=seed, method="duet")
    rows = []
    for min_runs in (2, 3, 5, 10, 20):
        row = [str(min_runs)]
        for design in ("sequence", "asymptotic", "naive"):
            rule = _rule(
                design, until=Goal.DECIDED, threshold=0.0, min_runs=min_runs, max_runs=RUNS
            )
            st = first_stops(v, rule, intersect=False if design == "naive" else None)
            row.append(_pct(np.isin(st.verdict, CHANGED).mean()))
        rows.append(row)
    return rows


def coverage(n: int, seed: int) -> list[list[str]]:
    """Duet-like noise (run values' SD about 1 %): precise 1 %, decided at 1 %."""
    rows = []
    cases = [
        ("precise 1 %", dict(until=Goal.PRECISE, precision=0.01), 0.0),
        ("precise 1 %", dict(until=Goal.PRECISE, precision=0.01), 0.02),
        ("precise 0.5 %", dict(until=Goal.PRECISE, precision=0.005), 0.0),
        ("precise 0.3 %", dict(until=Goal.PRECISE, precision=0.003), 0.0),
        ("decided, threshold 1 %", dict(until=Goal.DECIDED, threshold=0.01), 0.0),
        ("decided, threshold 1 %", dict(until=Goal.DECIDED, threshold=0.01), 0.015),
        ("decided, threshold 1 %", dict(until=Goal.DECIDED, threshold=0.01), 0.03),
    ]
    for label, kw, change in cases:
        precise = kw["until"] is Goal.PRECISE
        for design in ("width", "sequence", "group") if precise else ("sequence", "group"):
            cov, runs, wrong_eq, fa = [], [], [], []
            for model in NOISE_MODELS:
                v = run_values(model, n, RUNS, seed=seed, method="duet", change=change)
                seed += 1
                st = first_stops(v, _rule(design, max_runs=RUNS, **kw))
                cov.append(((st.low <= change) & (change <= st.high)).mean())
                runs.append(st.runs.mean())
                wrong_eq.append((st.verdict == "equivalent").mean())
                fa.append(np.isin(st.verdict, CHANGED).mean())
            eq = _pct(max(wrong_eq)) if change >= 0.015 else "-"
            alarms = _pct(max(fa)) if change == 0 else "-"
            rows.append(
                [label, f"{change * 100:+.1f} %", design, _pct(min(cov)), alarms, eq]
                + [f"{r:.1f}" for r in runs]
            )
    return rows


def expected_runs(n: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, RUNS)) * 0.01  # run values with SD 1 %
    rows = []
    for k in (2.5, 1.5, 1.0, 0.75, 0.6):
        row = [f"{k:g} SD"]
        for design in ("width", "sequence", "group", "naive"):
            st = first_stops(
                v,
                _rule(design, until=Goal.PRECISE, precision=0.01 * k, max_runs=RUNS),
                intersect=False if design == "naive" else None,
            )
            cov = ((st.low <= 0) & (0 <= st.high)).mean()
            row.append(f"{st.runs.mean():.1f} ({_pct(cov)})")
        rows.append(row)
    return rows


#: method auto's candidates in the simulation: (name, method model, run SD, cost of one
#: repetition). The run SDs give run values (simulate.run_values: a duet keeps a fifth of
#: the run SD per side) whose SD is, quiet, twice seqn's for the duets (seqn then scores
#: 2x better, its repetition costing two runs) and, noisy, a fifth. The two duets are
#: alike, the hardest case for the choice: it then picks whichever pilot looked tighter.
AUTO_CONDITIONS = {
    "quiet": (
        ("seqn", "seqn", 0.01, 2.0),
        ("aduet", "duet", 0.091, 1.0),
        ("sduet", "duet", 0.091, 1.0),
    ),
    "noisy": (
        ("seqn", "seqn", 0.03, 2.0),
        ("aduet", "duet", 0.0274, 1.0),
        ("sduet", "duet", 0.0274, 1.0),
    ),
}


def auto_choice(n: int, seed: int) -> list[list[str]]:
    """Three candidates (seqn, and two alike duets) under every noise model, for both goals.

    Each experiment: PILOT_RUNS runs of each method, the choice (on spread and cost only),
    then the chosen method until its rule stops it or its runs reach 50 -- `decided`
    (threshold 0, the sequence design) and `precise` (half-width 0.75 SD of the chosen
    method's run values, the width design). Analysed three ways: the pilot runs counted
    with the rule's first look at twice the pilot (what `method: auto` does), counted
    with a first look right after the pilot, and left out. A/A and +2 %.
    """
    rows = []
    for label, candidates in AUTO_CONDITIONS.items():
        for model in NOISE_MODELS:
            for change in (0.0, 0.02):
                vals = {}
                for name, kind, run_sd, _cost in candidates:
                    vals[name] = run_values(
                        model, n, RUNS, change=change, seed=seed, run_sd=run_sd,
                        iter_sd=run_sd / 3, method=kind,
                    )  # fmt: skip
                    seed += 1
                cost = {name: c for name, _k, _s, c in candidates}
                picks = np.empty(n, dtype=object)
                for e in range(n):
                    c = choose_method(
                        {m: v[e, :PILOT_RUNS] for m, v in vals.items()},
                        {m: cost[m] * PILOT_RUNS for m in vals},
                    )
                    picks[e] = c.method
                chosen = np.stack([vals[str(picks[e])][e] for e in range(n)])
                score = {m: float(np.var(v)) * cost[m] for m, v in vals.items()}
                best = min(score.values())
                # the alike duets' scores differ only by sampling: within 10 % counts as best
                right = np.mean([score[str(m)] <= best * 1.1 for m in picks])
                sd = float(np.std(chosen))
                ways = (
                    ("pilot counted, first look at 10 (default)", chosen, 2 * PILOT_RUNS),
                    ("pilot counted, first look at 5", chosen, PILOT_RUNS),
                    ("pilot left out", chosen[:, PILOT_RUNS:], 3),
                )
                for goal in ("decided", "precise"):
                    for how, v, first in ways:
                        rule = (
                            StopRule.create(
                                until=Goal.DECIDED, threshold=0.0, min_runs=first, max_runs=RUNS
                            )
                            if goal == "decided"
                            else StopRule.create(
                                until=Goal.PRECISE,
                                precision=0.75 * sd,
                                min_runs=first,
                                max_runs=RUNS,
                            )  # fmt: skip
                        )
                        st = first_stops(v, rule)
                        truth = np.log1p(change)
                        cov = ((np.log1p(st.low) <= truth) & (truth <= np.log1p(st.high))).mean()
                        alarms = np.isin(st.verdict, CHANGED).mean() if change == 0 else None
                        extra = st.runs - (0 if how == "pilot left out" else PILOT_RUNS)
                        rows.append(
                            [
                                label, model, goal, f"{change * 100:+.0f} %", how, _pct(right),
                                "-" if alarms is None else _pct(alarms), _pct(cov),
                                f"{float(np.mean(st.estimate) - change) * 100:+.3f} %",
                                f"{float(np.mean(np.maximum(extra, 0))):.1f}",
                            ]
                        )  # fmt: skip
    return rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=2000, help="experiments per cell")
    ap.add_argument("--quick", action="store_true", help="500 experiments per cell")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    n = 500 if args.quick else args.experiments
    warnings.simplefilter("ignore", RuntimeWarning)  # expm1 of an infinite bound
    t0 = time.perf_counter()
    print(
        f"## A/A false alarms, nominal 5 %, {n} experiments per cell, looks after every run to 50\n"
    )
    print(
        _table(
            [
                "noise",
                "values",
                "sequence",
                "group (5 analyses)",
                "group (every run)",
                "naive t peeking",
                "plug-in mixture",
                "mean runs (same order)",
            ],
            false_alarms(n, args.seed),
        )
    )
    print(f"\n## Small samples: A/A false alarms by min_runs (normal noise), {n} experiments\n")
    head = ["min_runs", "sequence (t-mixture)", "plug-in normal mixture", "naive t peeking"]
    print(_table(head, small_samples(n, args.seed + 50)))
    print(f"\n## Coverage at the stop (duet-like noise), {n} experiments per noise model\n")
    head = [
        "rule",
        "true change",
        "design",
        "coverage (min)",
        "false alarms (max)",
        "wrong equivalent (max)",
    ]
    print(_table(head + [f"runs: {m}" for m in NOISE_MODELS], coverage(n, args.seed + 100)))
    print(f"\n## Runs to a precision (normal run values), {n} experiments; coverage in brackets\n")
    print(
        _table(
            ["half-width target", "width", "sequence", "group", "naive t"],
            expected_runs(n, args.seed + 200),
        )
    )
    print(f"\n## method auto: choice on {PILOT_RUNS} pilot runs each, {n} experiments per row\n")
    head = [
        "condition",
        "noise",
        "goal",
        "true change",
        "analysed",
        "best method chosen",
        "false alarms",
        "coverage",
        "bias",
        "runs after the pilot",
    ]
    print(_table(head, auto_choice(n, args.seed + 300)))
    print(
        f"\n{time.perf_counter() - t0:.0f} s; command: python benchmarks/adaptive_study.py"
        + (" --quick" if args.quick else f" --experiments {n}")
        + f" --seed {args.seed}"
    )


if __name__ == "__main__":
    main()
