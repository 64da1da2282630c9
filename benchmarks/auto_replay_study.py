"""`method: auto` against each fixed method at equal budget, on the same runs.

    python benchmarks/auto_replay_study.py                     # 5 tries x quiet, noisy: ~60 min
    python benchmarks/auto_replay_study.py --quick             # 1 try, small budgets (a check)
    python benchmarks/auto_replay_study.py --keep kept/        # keep the results directories
    python benchmarks/auto_replay_study.py --reanalyse kept/   # the tables again, from kept runs

Separate experiments for auto and for each fixed method meet different stretches of the
machine's noise (a fixed method's width moved 24x between tries under `duet noise` in
benchmarks/adaptive_machine_study.py (c)), so their widths compare the stretches as
much as the methods. Here every try is ONE experiment of the mixed suite of
examples/adaptive/ in which seqn, aduet and sduet run interleaved in RMIT rounds,
enough runs of each for the largest budget, and its finished runs are then fed, in plan
order, to the scheduler's own stopping code (`StopTracker.replay`, what `--resume`
does) as if the experiment had been:

- `--method auto --budget T` (pilot of every method, the choice, re-checks, the budget
  shared by the benchmark: the chosen method gets what the pilots left), and
- each fixed method alone with `--budget T`,

all with `until: precise` at an unreachable precision, so each spends its budget. Auto
sees exactly the runs it would have seen live (the runs of the methods it did not
choose are skipped from its choice on), at the same moments as the fixed methods. The
printed width is that of the rule's interval at the stop (design `width`), as `duet
compare` shows it.

Prints per condition, benchmark and budget: the widths, auto / the best fixed method of
that try (hindsight, an optimistic comparator), auto / the method best on average over
the tries, and what auto chose. Goal: auto within 1.15x of the best fixed
method.
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from duetbench.config.stop import StopSettings  # noqa: E402
from duetbench.plan import RunSpec  # noqa: E402
from duetbench.schedule.adaptive import StopTracker, stop_key  # noqa: E402
from duetbench.store import ResultsStore  # noqa: E402

CONFIG = ROOT / "examples" / "adaptive" / "duet.yml"
METHODS = ("seqn", "aduet", "sduet")
UNREACHABLE = 0.0001  # precision 0.01 %: every variant runs until its budget


def run_interleaved(out: Path, reps: dict[str, int], noisy: bool, seed: int) -> Path:
    """One experiment of the suite: every method interleaved in RMIT rounds, no stop."""
    text = CONFIG.read_text()
    lines = []
    for line in text.splitlines():
        key = line.strip().split(":", 1)[0]
        if key == "repetitions":
            line = "  repetitions: {" + ", ".join(f"{m}: {n}" for m, n in reps.items()) + "}"
        elif key == "stop":  # a stop that never fires keeps the plan in RMIT rounds
            line = f"  stop: {{until: precise, precision: 0.01%, max_runs: {max(reps.values())}}}"
        elif key == "seed":
            line = f"  seed: {seed}"
        lines.append(line)
        if noisy and key == "seed":
            lines.append(f"  background: python3 -m duetbench noise --pattern mixed --seed {seed}")
    cfg = CONFIG.parent / f".replay-{os.getpid()}.yml"  # beside the original: paths hold
    cfg.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        p = subprocess.run(
            [sys.executable, "-m", "duetbench", "run", str(cfg), "-o", str(out), "--no-compare"],
            capture_output=True,
            text=True,
            env=env,
        )
    finally:
        cfg.unlink()
    if p.returncode not in (0, 4):
        raise SystemExit(f"duet run failed:\n{p.stderr[-3000:]}")
    return out / "adaptive"


def replay(root: Path, methods: tuple[str, ...], budget: float, auto: bool) -> dict[str, dict]:
    """Per benchmark: the stop of ``methods`` (auto: the chosen one's) replayed at ``budget``."""
    store = ResultsStore.open(root)
    plan = [RunSpec.from_dict(d) for d in store.plan()]
    benches = sorted({s.benchmark for s in plan})
    settings = StopSettings(
        until="precise", precision=UNREACHABLE, budget_s=budget, max_runs=10_000
    )
    stops = {stop_key(b, m): settings for b in benches for m in methods}
    tracker = StopTracker(store, plan, stops)
    if auto:
        for b in benches:
            tracker.pilot.add(b, methods)
    tracker.replay(set(store.finished()))
    doc = tracker.document()["stops"]
    out: dict[str, dict] = {}
    for b in benches:
        if auto:
            chosen = doc[stop_key(b, methods[0])]["auto"]["chosen"]
            method = chosen
        else:
            (method,) = methods
        v = doc[stop_key(b, method)]
        d = v["decisions"].get(b) or next(iter(v["decisions"].values()), {})
        lo, hi = d.get("low"), d.get("high")
        spent = sum(doc[stop_key(b, m)]["seconds"] for m in methods)
        out[b] = {
            "method": method,
            "width": (hi - lo) if lo is not None and hi is not None else math.inf,
            "runs": v["runs"],
            "analysed_from": v.get("analyse_from", 0),
            "seconds": spent,
            "stopped": v["stopped"],
        }
    return out


def analyse(roots: dict[str, list[Path]], budgets: list[float]) -> list[dict]:
    rows = []
    for cond, paths in roots.items():
        for t, root in enumerate(paths):
            for budget in budgets:
                fixed = {m: replay(root, (m,), budget, auto=False) for m in METHODS}
                auto = replay(root, METHODS, budget, auto=True)
                for b in sorted(auto):
                    rows.append(
                        {
                            "condition": cond,
                            "try": t + 1,
                            "budget": budget,
                            "benchmark": b,
                            "auto": auto[b],
                            **{m: fixed[m][b] for m in METHODS},
                        }
                    )
    return rows


def report(rows: list[dict]) -> None:
    print(
        "| condition | budget | try | benchmark | auto | seqn | aduet | sduet | auto / best of the try | auto chose (runs, s) |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        best = min(r[m]["width"] for m in METHODS)
        a = r["auto"]
        cells = " | ".join(f"{100 * r[m]['width']:.2f} %" for m in ("auto", *METHODS))
        print(
            f"| {r['condition']} | {r['budget']:g} s | {r['try']} | {r['benchmark']} | {cells} "
            f"| {a['width'] / best:.2f} | {a['method']} ({a['runs']}, {a['seconds']:.1f} s"
            f"{', after a switch' if a['analysed_from'] else ''}) |"
        )
    print()
    print(
        "| condition | budget | benchmark | mean width: auto | seqn | aduet | sduet | auto / best method on average | auto / best of each try: median (max) | auto chose the best-on-average method | switched |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---|---:|")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["condition"], r["budget"], r["benchmark"]), []).append(r)
    overall: dict[tuple, list[float]] = {}
    for (cond, budget, b), rs in groups.items():
        mean = {m: statistics.fmean(r[m]["width"] for r in rs) for m in METHODS}
        auto_mean = statistics.fmean(r["auto"]["width"] for r in rs)
        best_m = min(METHODS, key=mean.__getitem__)
        per_try = [r["auto"]["width"] / min(r[m]["width"] for m in METHODS) for r in rs]
        chose = sum(r["auto"]["method"] == best_m for r in rs)
        switched = sum(bool(r["auto"]["analysed_from"]) for r in rs)
        ratio = auto_mean / mean[best_m]
        overall.setdefault((cond, budget), []).append(ratio)
        cells = " | ".join(f"{100 * mean[m]:.2f} %" for m in METHODS)
        print(
            f"| {cond} | {budget:g} s | {b} | {100 * auto_mean:.2f} % | {cells} | {ratio:.2f} "
            f"| {statistics.median(per_try):.2f} ({max(per_try):.2f}) | {chose} of {len(rs)} ({best_m}) "
            f"| {switched} |"
        )
    print()
    for (cond, budget), ratios in overall.items():
        print(
            f"- {cond}, budget {budget:g} s: auto / best method on average, worst benchmark "
            f"{max(ratios):.2f} (goal <= 1.15)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=None)
    ap.add_argument("--budgets", default=None, help="seconds per benchmark, e.g. 10,20,30")
    ap.add_argument("--quick", action="store_true", help="1 try, budgets 4,8 s (a check)")
    ap.add_argument("--conditions", default="quiet,noisy")
    ap.add_argument("--seed", type=int, default=100, help="seed of the first try (then +1)")
    ap.add_argument("--keep", type=Path, help="keep every try's results directory here")
    ap.add_argument("--reanalyse", type=Path, help="analyse kept results (no new runs)")
    ap.add_argument("--json", type=Path, help="write the rows as JSON")
    args = ap.parse_args()
    tries = args.tries or (1 if args.quick else 5)
    budgets = [float(x) for x in (args.budgets or ("4,8" if args.quick else "10,20,30")).split(",")]
    t0 = time.monotonic()
    roots: dict[str, list[Path]] = {}
    if args.reanalyse:
        for cond_dir in sorted(p for p in args.reanalyse.iterdir() if p.is_dir()):
            roots[cond_dir.name] = sorted(
                (d / "adaptive" for d in cond_dir.iterdir() if (d / "adaptive").is_dir()),
                key=lambda p: int(p.parent.name.rsplit("-", 1)[-1]),  # try-<seed>
            )
        print(f"## auto replayed on kept runs ({args.reanalyse})\n")
        report(analyse(roots, budgets))
        return
    # enough runs of every method for the largest budget: about 0.36 s a duet run and
    # 0.72 s a seqn repetition here (its two runs), with some to spare
    most = max(budgets)
    reps = {
        "seqn": math.ceil(most / 0.6),
        "aduet": math.ceil(most / 0.3),
        "sduet": math.ceil(most / 0.3),
    }
    base = args.keep or Path(tempfile.mkdtemp(prefix="duet-auto-replay-"))
    for cond in args.conditions.split(","):
        for t in range(tries):
            out = base / cond / f"try-{args.seed + t}"
            roots.setdefault(cond, []).append(
                run_interleaved(out, reps, cond == "noisy", seed=args.seed + t)
            )
            print(
                f"{cond} try {t + 1} done after {time.monotonic() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    print(
        f"## auto replayed on one interleaved experiment per try ({tries} tries, reps {json.dumps(reps)})\n"
    )
    rows = analyse(roots, budgets)
    report(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"\n(took {time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
