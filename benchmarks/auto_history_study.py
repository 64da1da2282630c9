"""`method: auto` with a results repository against a pilot and each fixed method, at
equal machine time, in a seeded simulation driven through the scheduler's own code.

    python benchmarks/auto_history_study.py                 # 200 tries x quiet, bursty, changed
    python benchmarks/auto_history_study.py --tries 20      # a quicker look

Each try is one interleaved experiment of a benchmark measured by seqn, aduet and sduet
in RMIT rounds (the plan `duet run` makes for `methods: auto`), on a simulated machine:
every run takes its method's machine seconds (a seqn repetition is two runs) and its run
value is drawn from its method's noise. Under the **bursty** neighbour the machine
alternates between quiet stretches (exponential, mean 9 s) and bursts (mean 4 s); a run
that starts in a burst gets extra noise -- much for seqn, whose A and B run at different
times, little for the duets, whose sides share the burst. The **repository** holds 5
earlier experiments of 20 repetitions of each method on the same machine (their pooled
spread, each experiment's mean removed, and the machine seconds per repetition: what
`duet run --history` reads); **changed**: the repository's experiments were quiet, this
one is bursty.

The finished runs are fed in plan order to the scheduler's StopTracker (what a live run
and `--resume` do) as:

- `--method auto --budget T --history REPO` (the choice from the repository, no pilot;
  the stopping rules with the repository's spread),
- `--method auto --budget T` without a repository (a 5-run pilot of every method),
- each fixed method with `--budget T`, with and without the repository's spread,

all with `until: precise` at an unreachable precision, so each spends the budget. The
width is that of the chosen method's interval at the stop (`duet compare`'s). Auto is
compared with the fixed method best on average, in the same try and with the same
information (the repository's spread, or none): the goal, with a repository, is
<= 1.10x on average, the worst bursty try <= 1.5x, and no pilot run.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from duetbench.adaptive import HostPriors, Prior  # noqa: E402
from duetbench.config import load_config  # noqa: E402
from duetbench.config.stop import StopSettings  # noqa: E402
from duetbench.plan import make_plan  # noqa: E402
from duetbench.records import RunRecord  # noqa: E402
from duetbench.schedule.adaptive import StopTracker, stop_key  # noqa: E402

METHODS = ("seqn", "aduet", "sduet")
#: machine seconds of one run (a seqn repetition is two), as on the project VM's
#: examples/adaptive suite (docs/measurements/auto-replay-study.md)
RUN_SECONDS = {"seqn": 0.36, "aduet": 0.36, "sduet": 0.38}
#: run-value SD on a quiet machine: seqn the tightest per machine-second, the duets alike
QUIET_SD = {"seqn": 0.005, "aduet": 0.009, "sduet": 0.008}
#: extra SD of a run (per side for seqn) that starts in a burst
BURST_SD = {"seqn": 0.06, "aduet": 0.02, "sduet": 0.008}
BURST_MEAN_S, QUIET_MEAN_S = 4.0, 9.0
UNREACHABLE = 0.0001
EARLIER, EARLIER_REPS = 5, 20


def bursts(rng: np.random.Generator, horizon: float) -> list[tuple[float, float]]:
    """(start, end) of the bursts over ``horizon`` machine seconds."""
    out, t = [], float(rng.exponential(QUIET_MEAN_S))
    while t < horizon:
        d = float(rng.exponential(BURST_MEAN_S))
        out.append((t, t + d))
        t += d + float(rng.exponential(QUIET_MEAN_S))
    return out


def in_burst(spans: list[tuple[float, float]], t: float) -> bool:
    return any(a <= t < b for a, b in spans)


def simulate(plan: list[Any], rng: np.random.Generator, bursty: bool) -> dict[tuple, float]:
    """Run value of every (method, rep) of the plan laid out on one machine timeline."""
    horizon = sum(RUN_SECONDS[s.method] for s in plan)
    spans = bursts(rng, horizon) if bursty else []
    t = 0.0
    burst: dict[tuple, bool] = {}
    for s in plan:
        burst[(s.method, s.rep, s.run_id)] = in_burst(spans, t)
        t += RUN_SECONDS[s.method]
    values: dict[tuple, float] = {}
    for s in plan:
        key = (s.method, s.rep)
        if key in values:
            continue
        v = float(rng.normal(0.0, QUIET_SD[s.method]))
        if s.method == "seqn":
            sides = [b for (m, r, _), b in burst.items() if m == "seqn" and r == s.rep]
            v += sum(float(rng.normal(0.0, BURST_SD["seqn"])) for b in sides if b)
        elif burst[(s.method, s.rep, s.run_id)]:
            v += float(rng.normal(0.0, BURST_SD[s.method]))
        values[key] = v
    return values


def repository(rng: np.random.Generator, plan: list[Any], bursty: bool) -> HostPriors:
    """The priors of EARLIER experiments of EARLIER_REPS repetitions: the spread pooled
    with each experiment's mean removed, and the machine seconds per repetition."""
    ss = dict.fromkeys(METHODS, 0.0)
    df = dict.fromkeys(METHODS, 0)
    short = [s for s in plan if s.rep < EARLIER_REPS]
    for _ in range(EARLIER):
        vals = simulate(short, rng, bursty)
        for m in METHODS:
            y = np.array([v for (mm, _r), v in vals.items() if mm == m])
            ss[m] += float(np.sum((y - y.mean()) ** 2))
            df[m] += len(y) - 1
    runs = EARLIER * EARLIER_REPS
    return HostPriors(
        {
            ("b", m): Prior(
                math.sqrt(ss[m] / df[m]),
                df[m],
                runs=runs,
                experiments=EARLIER,
                seconds_per_run=RUN_SECONDS[m] * (2 if m == "seqn" else 1),
            )
            for m in METHODS
        },
        "simulated",
    )


class Replay(StopTracker):
    """The scheduler's tracker with the simulated run values (no results directory)."""

    values: dict[tuple, float]

    def _values(self, records: list[RunRecord]) -> dict[str, float]:
        spec = records[0].spec["_spec"]
        return {"b": self.values[(spec.method, spec.rep)]}


def run(
    plan: list[Any],
    values: dict[tuple, float],
    methods: tuple[str, ...],
    budget: float,
    priors: HostPriors | None,
) -> dict[str, Any]:
    """Feed the plan's runs as a live run does; the stop of ``methods`` (auto if several)."""
    settings = StopSettings(
        until="precise", precision=UNREACHABLE, budget_s=budget, max_runs=10_000
    )
    tracker = Replay(None, plan, {stop_key("b", m): settings for m in methods})  # type: ignore[arg-type]
    tracker.values = values
    if len(methods) > 1:
        tracker.pilot.add("b", methods)
    if priors is not None:
        tracker.use_priors(priors)
    for spec in plan:
        if tracker.skips(spec):
            continue
        record = RunRecord(
            run_id=spec.run_id, benchmark="b", method=spec.method, status="ok",
            start_ns=0, end_ns=int(RUN_SECONDS[spec.method] * 1e9), spec={"_spec": spec},
        )  # fmt: skip
        tracker.observe(spec, record)
    doc = tracker.document()["stops"]
    auto = tracker.autos.get("b")
    method = auto.chosen if auto is not None else methods[0]
    d = doc[stop_key("b", method)]["decisions"].get("b", {})
    lo, hi = d.get("low"), d.get("high")
    return {
        "method": method,
        "width": hi - lo if lo is not None and hi is not None else math.inf,
        "pilot_runs": sum(doc[stop_key("b", m)]["runs"] for m in methods if m != method),
        "seconds": sum(doc[stop_key("b", m)]["seconds"] for m in methods),
        "sources": sorted(set(auto.choice.source.values())) if auto and auto.choice else [],
        "again": bool(auto and auto.stale),
    }


def one_try(plan: list[Any], seed: int, cond: str, budget: float) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    values = simulate(plan, rng, bursty=cond != "quiet")
    priors = repository(rng, plan, bursty=cond == "bursty")
    return {
        "repo": run(plan, values, METHODS, budget, priors),
        "pilot": run(plan, values, METHODS, budget, None),
        **{f"{m}+repo": run(plan, values, (m,), budget, priors) for m in METHODS},
        **{m: run(plan, values, (m,), budget, None) for m in METHODS},
    }


def summarize(rows: list[dict[str, Any]], cond: str, budget: float) -> None:
    def table(auto: str, suffix: str) -> str:
        fixed = {m: [r[m + suffix]["width"] for r in rows] for m in METHODS}
        mean = {m: statistics.fmean(v) for m, v in fixed.items()}
        best = min(METHODS, key=mean.__getitem__)
        widths = [r[auto]["width"] for r in rows]
        per_try = sorted(w / r[best + suffix]["width"] for w, r in zip(widths, rows, strict=True))
        hind = sorted(
            w / min(r[m + suffix]["width"] for m in METHODS)
            for w, r in zip(widths, rows, strict=True)
        )
        chose = sum(r[auto]["method"] == best for r in rows)
        pilots = sum(r[auto]["pilot_runs"] for r in rows) / len(rows)
        again = sum(r[auto]["again"] for r in rows)
        cells = " | ".join(f"{100 * mean[m]:.2f} %" for m in METHODS)
        return (
            f"| {cond} | {budget:g} s | {auto} | {100 * statistics.fmean(widths):.2f} % | {cells} "
            f"| {statistics.fmean(widths) / mean[best]:.3f} ({best}) "
            f"| {per_try[len(per_try) // 2]:.2f} / {per_try[int(0.9 * len(per_try))]:.2f} / {per_try[-1]:.2f} "
            f"| {hind[len(hind) // 2]:.2f} / {hind[-1]:.2f} | {chose} of {len(rows)} | {pilots:.1f} | {again} |"
        )

    print(table("repo", "+repo"))
    print(table("pilot", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=200)
    ap.add_argument("--budget", type=float, default=30.0, help="machine seconds per benchmark")
    ap.add_argument("--conditions", default="quiet,bursty,changed")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.monotonic()
    reps = math.ceil(args.budget / 0.3)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "auto.yml"
        cfg.write_text(
            "experiment:\n  name: auto\n  methods: auto\n  seed: 5\n"
            f"  stop: {{until: precise, precision: 0.01%, max_runs: {reps}}}\n"
            "benchmarks:\n  b: {command: 'true'}\n"
        )
        plan = make_plan(load_config(cfg))
    print(
        f"## method auto with and without a repository, {args.tries} tries per condition, "
        f"budget {args.budget:g} s, seed {args.seed}\n"
    )
    print(
        "| condition | budget | auto | mean width: auto | seqn | aduet | sduet "
        "| auto / best fixed method on average | per try vs it: median / 90th pct / worst "
        "| per try vs the try's best: median / worst | chose the best-on-average method "
        "| pilot runs per try | piloted again |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---|---|---:|---:|")
    for c, cond in enumerate(args.conditions.split(",")):
        rows = [
            one_try(plan, args.seed + 100_000 * c + t, cond, args.budget) for t in range(args.tries)
        ]
        summarize(rows, cond, args.budget)
        print(f"({cond}: {time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
    print(
        "\nrepo: auto with the repository against the fixed methods with the repository's "
        "spread in their stopping rule; pilot: auto without one against the fixed methods "
        f"without. (took {time.monotonic() - t0:.0f} s)"
    )


if __name__ == "__main__":
    main()
