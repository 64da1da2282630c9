"""`duet plan --history --precision` against the stops of `duet run --history --until
precise`: are its ranges and medians right?

Two parts:

- ``--part sim`` (seeded, about 3 minutes): per try a true run-value spread, a repository of
  ``--prior-experiments`` earlier experiments of ``--prior-runs`` runs drawn from it,
  the prediction `duet plan --history` makes from their pooled spread
  (``adaptive.planning.precision_stop_runs`` with the rule's prior, as
  ``adaptive.forecast`` calls it), and one experiment of the rule with that prior run
  afterwards. It prints how often the 90 % range held the stop, the median prediction
  against the median stop, and how often one prediction was within 1.5x of its stop;
  with the machine as noisy as before and 1.3x noisier.
- ``--part machine`` (real runs, about 5-10 minutes on a quiet 2-CPU machine): the
  same with real `duet` commands on this machine -- a repository of earlier
  experiments of examples/workloads' CPU workload (built if missing), `duet plan
  --history --precision P --format json`, then ``--tries`` experiments of `duet run
  --history --until precise:P`; prints each stop against the prediction and the same
  summary.

Recorded in docs/measurements/plan-history.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from duetbench.adaptive import StopRule, first_stops
from duetbench.adaptive.planning import precision_stop_runs
from duetbench.adaptive.prior import Prior

ROOT = Path(__file__).resolve().parent.parent


def summary(pred_median: list[int], low: list[int], high: list[int], stops: list[int]) -> str:
    p, lo, hi, s = (np.asarray(x, dtype=np.float64) for x in (pred_median, low, high, stops))
    inside = np.mean((s >= lo) & (s <= hi))
    ratio = np.median(p) / np.median(s)
    within = np.mean(np.maximum(p / s, s / p) <= 1.5)
    return (
        f"tries {len(s)}: stop inside the 90 % range {inside * 100:.0f} %; median prediction "
        f"{np.median(p):.1f} vs median stop {np.median(s):.1f} (ratio {ratio:.2f}); single "
        f"prediction within 1.5x of its stop {within * 100:.0f} %"
    )


def part_sim(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    df0 = args.prior_experiments * (args.prior_runs - 1)
    print(
        f"## simulation: {args.tries} tries per row, prior from {args.prior_experiments} x "
        f"{args.prior_runs} runs (df {df0}), --until precise:{args.precision * 100:g}%\n"
    )
    for ratio in (0.5, 1.0, 2.0, 4.0):
        for k in (1.0, 1.3):
            sigma = ratio * args.precision
            med, lo, hi, stops = [], [], [], []
            for t in range(args.tries):
                earlier = rng.normal(0, sigma, size=(args.prior_experiments, args.prior_runs))
                s0 = float(np.sqrt(np.var(earlier, axis=1, ddof=1).mean()))
                rule = StopRule.create(
                    until="precise",
                    precision=args.precision,
                    max_runs=2000,
                    prior=Prior(s0, df0),
                )
                pred = precision_stop_runs(rule, s0, df=df0, seed=t)
                run = first_stops(rng.normal(0, sigma * k, size=(1, 2000)), rule)
                med.append(pred.median or 0)
                lo.append(pred.low or 0)
                hi.append(pred.high or 10**9)
                stops.append(int(run.runs[0]))
            label = "same" if k == 1.0 else f"{k:g}x noisier"
            print(f"- sigma/P {ratio:g}, {label}: {summary(med, lo, hi, stops)}")


def _duet(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def _config(name: str, workload: Path, ops: int, stop: str = "", reps: int = 8) -> str:
    return f"""experiment:
  name: {name}
  seed: {abs(hash(name)) % 10000}
  repetitions: {{aduet: {reps}}}
{stop}benchmarks:
  int:
    iterations: 5
    A: {{command: "'{workload}' int {ops}"}}
    B: {{command: "'{workload}' int {int(ops * 1.03)}"}}
"""


def part_machine(args: argparse.Namespace) -> None:
    workload = ROOT / "examples" / "workloads" / "workload"
    if not workload.exists():
        subprocess.run(["make", "-C", str(workload.parent)], check=True, capture_output=True)
    work = Path(tempfile.mkdtemp(prefix="plan history "))
    try:
        repo = work / "perf.sqlite"
        t0 = time.monotonic()
        for i in range(args.prior_experiments):
            (work / f"e{i}.yml").write_text(_config(f"e{i}", workload, args.ops))
            p = _duet("run", f"e{i}.yml", "-o", "res", "--no-compare", "--history", repo,
                      "--versions", "A=v1,B=v2", cwd=work)  # fmt: skip
            if p.returncode not in (0, 4):
                raise SystemExit(p.stderr[-2000:])
        stop = f"  stop: {{until: precise, precision: {args.precision * 100:g}%, max_runs: 400}}\n"
        (work / "new.yml").write_text(_config("new", workload, args.ops, stop, reps=400))
        p = _duet("plan", "new.yml", "--history", repo, "--precision",
                  f"{args.precision * 100:g}%", "--format", "json", cwd=work)  # fmt: skip
        if p.returncode:
            raise SystemExit(p.stderr[-2000:])
        (row,) = json.loads(p.stdout)["rows"]
        print(f"## machine: duet plan --history: {row['runs']} runs, range {row['runs_range']}")
        print(f"   ({row['evidence']}; {time.monotonic() - t0:.0f} s for the repository)\n")
        stops = []
        for t in range(args.tries):
            out = work / f"try{t}"
            p = _duet("run", "new.yml", "-o", out, "--no-compare", "--history", repo, cwd=work)
            if p.returncode not in (0, 4):
                raise SystemExit(p.stderr[-2000:])
            doc = json.loads((out / "new" / "stops.json").read_text())
            entry = doc["stops"]["int/aduet"]
            d = entry["decisions"]["int"]
            stops.append(int(entry["runs"]))
            print(
                f"- try {t}: {entry['runs']} runs, {entry['stopped']}, prior used "
                f"{d.get('prior_used')}, {d['estimate'] * 100:+.2f} % "
                f"[{d['low'] * 100:+.2f}, {d['high'] * 100:+.2f}]"
            )
        n = len(stops)
        print("\n" + summary([row["runs"]] * n, [row["runs_low"]] * n,
                             [row["runs_high"] or 10**9] * n, stops))  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["sim", "machine", "both"], default="sim")
    ap.add_argument("--precision", type=float, default=0.01)
    ap.add_argument("--tries", type=int, default=100)
    ap.add_argument("--prior-experiments", type=int, default=5)
    ap.add_argument("--prior-runs", type=int, default=10)
    ap.add_argument("--ops", type=int, default=3_000_000, help="machine part: work per iteration")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.part in ("sim", "both"):
        part_sim(args)
    if args.part in ("machine", "both"):
        if args.part == "both":
            args.tries = min(args.tries, 20)
        part_machine(args)


if __name__ == "__main__":
    main()
