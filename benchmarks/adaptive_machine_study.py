"""Measuring until sure on this machine: adaptive against the smallest fixed plan.

    python benchmarks/adaptive_machine_study.py            # precision 1 %, up to 40 runs: ~60-75 min quiet
    python benchmarks/adaptive_machine_study.py --quick    # precision 5 %, up to 6 runs: ~2-4 min (a check only)
    python benchmarks/adaptive_machine_study.py --only-methods --tries 3   # (c) only: ~40 min

Runs the mixed suite of examples/adaptive/ (benchmarks precise after a few runs and one
needing 20+) on this machine, on a quiet machine for real figures, and prints the
Markdown tables for docs/performance.md ("Measuring until sure"):

(a) `duet run --until precise:X%`: runs and machine seconds per benchmark;
(b) the smallest fixed plan that reaches X % for every benchmark, found on a fixed run
    of --max-runs repetitions analysed with the fixed-n t interval after its first n
    runs (machine time measured: the first n runs' seconds). Goal: (a) <= 60 % of (b);
(d) `duet plan --precision X%` from the fixed run's first 5 repetitions against the
    runs (a) actually needed. Goal: within a factor of 1.5.

(c) `--method auto` against each fixed method at equal budget (--budget per benchmark),
    quiet and under `duet noise --pattern mixed` (the config's `background:`): the final
    interval's width of auto / of the best fixed method. Goal: never above 1.15. Since
    2026-11-26 auto's budget is the benchmark's (the pilots are paid from it; before, the
    chosen method got all of it on top of the other methods' pilots). Each variant is a
    separate experiment, so each meets another stretch of the machine's noise:
    benchmarks/auto_replay_study.py compares them on the same runs.
Each condition is repeated --tries times (default 5).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "examples" / "adaptive" / "duet.yml"


def duet(*args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
    )


def run_adaptive(out: Path, precision: float, max_runs: int) -> dict[str, dict[str, float]]:
    p = duet(
        "run",
        CONFIG,
        "-o",
        out,
        "--until",
        f"precise:{precision * 100:g}%",
        "--max-runs",
        max_runs,
        "--no-compare",
    )
    if p.returncode not in (0, 4):
        raise SystemExit(f"duet run failed:\n{p.stderr}")
    stops = json.loads((out / "adaptive" / "stops.json").read_text())["stops"]
    return {
        v["benchmark"]: {"runs": v["runs"], "seconds": v["seconds"], "stopped": v["stopped"]}
        for v in stops.values()
    }


def _variant(out: Path, replace: dict[str, str], background: str | None = None) -> Path:
    """Run a variant of the suite's config (lines replaced by key) and return its root."""
    lines = []
    for line in CONFIG.read_text().splitlines():
        key = line.strip().split(":", 1)[0]
        if key in replace:
            line = f"  {key}: {replace[key]}" if replace[key] else ""
        lines.append(line)
        if background and line.startswith("  seed:"):
            lines.append(f"  background: {background}")
    cfg = CONFIG.parent / f".variant-{os.getpid()}.yml"
    cfg.write_text("\n".join(lines) + "\n")
    try:
        p = duet("run", cfg, "-o", out, "--no-compare")
    finally:
        cfg.unlink()
    if p.returncode not in (0, 4):
        raise SystemExit(f"duet run failed:\n{p.stderr}")
    return out / "adaptive"


def widths(root: Path) -> dict[str, float]:
    p = duet("compare", root, "--format", "json")
    if p.returncode != 0:
        raise SystemExit(f"duet compare failed:\n{p.stderr}")
    out = {}
    for r in json.loads(p.stdout)["rows"]:
        lo, hi = r.get("ci_low"), r.get("ci_high")
        out[r["benchmark"]] = (hi - lo) if lo is not None and hi is not None else math.inf
    return out


def method_study(tmp: Path, budget: float, noisy: bool, seed: int) -> dict[str, dict[str, float]]:
    """Final interval width per benchmark: auto and each fixed method at equal budget."""
    stop = f"{{until: precise, precision: 0.1%, budget: {budget:g}s, max_runs: 200}}"
    bg = f"python3 -m duetbench noise --pattern mixed --seed {seed}" if noisy else None
    out: dict[str, dict[str, float]] = {}
    variants = {"auto": {"stop": stop, "repetitions": "{aduet: 1}", "methods": "auto"}}
    for m in ("seqn", "aduet", "sduet"):
        variants[m] = {"stop": stop, "repetitions": f"{{{m}: 1}}"}
    for label, rep in variants.items():
        if "methods" in rep:  # not a key of the original: add it after repetitions
            rep = {**rep, "repetitions": f"{rep['repetitions']}\n  methods: auto"}
            rep.pop("methods")
        root = _variant(tmp / label, rep, bg)
        for b, w in widths(root).items():
            out.setdefault(b, {})[label] = w
        entries = json.loads((root / "stops.json").read_text())["stops"].values()
        for v in entries:
            key = f"{label} s"
            out.setdefault(v["benchmark"], {})[key] = (
                out[v["benchmark"]].get(key, 0.0) + v["seconds"]
            )
        if label == "auto":  # the final choice, and its runs (of them left out: a switch)
            runs = {(v["benchmark"], v["method"]): v for v in entries}
            for v in entries:
                chosen = (v.get("auto") or {}).get("chosen")
                if chosen and (v["benchmark"], chosen) in runs:
                    c = runs[(v["benchmark"], chosen)]
                    out[v["benchmark"]]["auto chose"] = (
                        f"{chosen}, {c['runs']} runs ({c.get('analyse_from') or 0} left out)"
                    )
    return out


def run_fixed(out: Path, max_runs: int) -> Path:
    """The suite with a fixed plan of ``max_runs`` repetitions (no stopping rule)."""
    text = CONFIG.read_text()
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("stop:"))
    text = text.replace("repetitions: {aduet: 1}", f"repetitions: {{aduet: {max_runs}}}")
    cfg = CONFIG.parent / f".fixed-{os.getpid()}.yml"  # beside the original: relative paths hold
    cfg.write_text(text)
    try:
        p = duet("run", cfg, "-o", out, "--no-compare")
    finally:
        cfg.unlink()
    if p.returncode not in (0, 4):
        raise SystemExit(f"duet run (fixed) failed:\n{p.stderr}")
    return out / "adaptive"


def fixed_values(root: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per benchmark: run values (log ratios) and machine seconds, in repetition order."""
    sys.path.insert(0, str(ROOT / "src"))
    from duetbench.adaptive import run_level_values
    from duetbench.dataset import open_dataset
    from duetbench.store import ResultsStore

    ds = open_dataset(root)
    values = run_level_values(ds.table, by=("benchmark",))
    secs: dict[str, dict[int, float]] = {}
    for _, rec in ResultsStore.open(root).usable_runs():
        if rec.start_ns and rec.end_ns:
            secs.setdefault(rec.benchmark, {})[int(rec.rep or 0)] = (
                rec.end_ns - rec.start_ns
            ) / 1e9
    return {
        b[0]: (v, np.array([secs.get(b[0], {}).get(i, 0.0) for i in range(len(v))]))
        for b, v in values.items()
    }


def t_half_width(v: np.ndarray) -> float:
    n = len(v)
    if n < 2:
        return math.inf
    hw = stats.t.ppf(0.975, n - 1) * np.std(v, ddof=1) / math.sqrt(n)
    return math.expm1(hw)


def smallest_fixed(vals: dict[str, tuple[np.ndarray, np.ndarray]], precision: float) -> int | None:
    longest = min(len(v) for v, _ in vals.values())
    for n in range(3, longest + 1):
        if all(t_half_width(v[:n]) <= precision for v, _ in vals.values()):
            return n
    return None


def predictions(root: Path, precision: float, pilot: int) -> dict[str, dict]:
    from duetbench.adaptive.forecast import forecast
    from duetbench.config import load_config
    from duetbench.dataset import open_dataset

    ds = open_dataset(root)
    table = ds.table[ds.table["run"] < pilot]
    exp = load_config(CONFIG)
    return {r["benchmark"]: r for r in forecast(exp, table, precision=precision)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="a check that the study works (figures meaningless)"
    )
    ap.add_argument("--precision", type=float, default=None, help="relative, e.g. 0.01")
    ap.add_argument("--max-runs", type=int, default=None)
    ap.add_argument("--tries", type=int, default=None)
    ap.add_argument("--budget", type=float, default=None, help="(c): machine seconds per benchmark")
    ap.add_argument("--skip-methods", action="store_true", help="leave out (c)")
    ap.add_argument("--only-methods", action="store_true", help="only (c)")
    args = ap.parse_args()
    if args.skip_methods and args.only_methods:
        ap.error("--skip-methods and --only-methods leave nothing to run")
    precision = args.precision or (0.05 if args.quick else 0.01)
    max_runs = args.max_runs or (6 if args.quick else 40)
    tries = args.tries or (1 if args.quick else 5)
    t0 = time.monotonic()
    print(
        f"## Measuring until sure on this machine (precision {precision * 100:g} %, max {max_runs} runs, {tries} tries)\n"
    )
    print(
        "| try | benchmark | adaptive runs | adaptive s | stop | fixed n (all precise) | fixed s | predicted runs (pilot 5) | 90 % range | pilot 20 | 90 % range |"
    )
    print("|---|---|---:|---:|---|---:|---:|---:|---|---:|---|")
    ratios, run_ratio, pred_ratio, auto_ratio = [], [], [], []
    pred20_ratio: list[float] = []
    in_range20: list[bool] = []
    needed: dict[str, list[int]] = {}  # per benchmark: runs each try's adaptive run needed
    predicted20: dict[str, list[int]] = {}
    in_range: list[bool] = []
    per_try: list[tuple[float, dict, int | None, float]] = []  # adaptive s, values, n, runs
    for t in range(0 if args.only_methods else tries):
        with tempfile.TemporaryDirectory(prefix="duet-adaptive-study-") as tmp:
            a = run_adaptive(Path(tmp) / "a", precision, max_runs)
            fixed_root = run_fixed(Path(tmp) / "f", max_runs)
            vals = fixed_values(fixed_root)
            n = smallest_fixed(vals, precision)
            pred = predictions(fixed_root, precision, min(5, max_runs))
            pred20 = predictions(fixed_root, precision, min(20, max_runs))
        a_s = sum(x["seconds"] for x in a.values())
        f_s = sum(float(s[:n].sum()) for _, s in vals.values()) if n else math.nan
        for b in sorted(a):
            fs = float(vals[b][1][:n].sum()) if n and b in vals else math.nan
            p, p20 = pred.get(b, {}), pred20.get(b, {})
            print(
                f"| {t + 1} | {b} | {a[b]['runs']} | {a[b]['seconds']:.1f} | {a[b]['stopped']} | "
                f"{n if n else f'> {max_runs}'} | {fs:.1f} | {p.get('runs')} | {p.get('runs_range')} "
                f"| {p20.get('runs')} | {p20.get('runs_range')} |"
            )
            if a[b]["stopped"] == "precise" and p20.get("runs"):
                pred20_ratio.append(p20["runs"] / a[b]["runs"])
                if p20.get("runs_low") is not None:
                    in_range20.append(
                        p20["runs_low"] <= a[b]["runs"] <= (p20.get("runs_high") or math.inf)
                    )
            if a[b]["stopped"] == "precise":
                needed.setdefault(b, []).append(a[b]["runs"])
                if p20.get("runs"):
                    predicted20.setdefault(b, []).append(p20["runs"])
            if a[b]["stopped"] == "precise" and p.get("runs"):
                pred_ratio.append(p["runs"] / a[b]["runs"])
                if p.get("runs_low") is not None:
                    high = p.get("runs_high") or math.inf
                    in_range.append(p["runs_low"] <= a[b]["runs"] <= high)
        per_try.append((a_s, vals, n, float(np.mean([x["runs"] for x in a.values()]))))
        if n:
            ratios.append(a_s / f_s)
            run_ratio.append(np.mean([x["runs"] for x in a.values()]) / n)
    if not args.skip_methods:
        print("\n### (c) method auto against each fixed method at equal budget\n")
        print(
            "| condition | try | benchmark | auto width | seqn | aduet | sduet | auto / best fixed "
            "| auto chose |"
        )
        print("|---|---|---|---:|---:|---:|---:|---:|---|")
        for noisy in (False, True):
            for t in range(tries):
                with tempfile.TemporaryDirectory(prefix="duet-auto-study-") as tmp:
                    res = method_study(
                        Path(tmp), args.budget or (5 if args.quick else 15), noisy, t
                    )
                for b, w in sorted(res.items()):
                    best_m = min(("seqn", "aduet", "sduet"), key=lambda m: w.get(m, math.inf))
                    best = w.get(best_m, math.inf)
                    ratio = w.get("auto", math.inf) / best if best > 0 else math.nan
                    auto_ratio.append(ratio)
                    cells = " | ".join(
                        f"{w.get(m, math.nan) * 100:.2f} %"
                        for m in ("auto", "seqn", "aduet", "sduet")
                    )
                    print(
                        f"| {'noisy' if noisy else 'quiet'} | {t + 1} | {b} | {cells} | {ratio:.2f} "
                        f"| {w.get('auto chose', '?')} |",
                        flush=True,
                    )
    print("\n| figure | value | goal |\n|---|---:|---|")
    if ratios:
        print(
            f"| adaptive machine time / smallest fixed plan's | {np.mean(ratios):.2f} (max {max(ratios):.2f}) | <= 0.60 |"
        )
        print(f"| adaptive average runs / fixed plan's runs | {np.mean(run_ratio):.2f} | |")
    ns = [n for _, _, n, _ in per_try]
    if ns and all(ns):
        # the smallest fixed plan that reached the precision for every benchmark in every
        # try: the plan a user could have chosen in advance, knowing the noise
        n_all = max(ns)  # type: ignore[type-var]
        r_all = [
            a_s / sum(float(s[:n_all].sum()) for _, s in vals.values())
            for a_s, vals, _, _ in per_try
        ]
        print(
            f"| adaptive machine time / the fixed plan precise in every try ({n_all} runs) "
            f"| {np.mean(r_all):.2f} (max {max(r_all):.2f}) | <= 0.60 |"
        )
        print(
            f"| adaptive average runs / {n_all} | "
            f"{np.mean([r for *_, r in per_try]) / n_all:.2f} | |"
        )
    elif not args.only_methods:
        print(
            f"| adaptive / fixed machine time | no fixed plan of <= {max_runs} runs reached the precision | <= 0.60 |"
        )
    if pred_ratio:
        worst = max(max(pred_ratio), 1 / min(pred_ratio))
        print(
            f"| duet plan predicted / needed runs | {min(pred_ratio):.2f} .. {max(pred_ratio):.2f} (worst factor {worst:.2f}) | within 1.5x |"
        )
    if pred20_ratio:
        worst = max(max(pred20_ratio), 1 / min(pred20_ratio))
        print(
            f"| duet plan from 20 earlier runs: predicted / needed | {min(pred20_ratio):.2f} .. {max(pred20_ratio):.2f} (worst factor {worst:.2f}) | within 1.5x |"
        )
    if in_range:
        print(
            f"| needed runs inside the predicted 90 % range | {sum(in_range)} of {len(in_range)} | |"
        )
    if in_range20:
        print(
            f"| needed runs inside the 90 % range predicted from 20 runs | {sum(in_range20)} of "
            f"{len(in_range20)} | |"
        )
    # a single adaptive run's stop scatters around its median even at a known spread
    # (docs/adaptive.md, "Cost model and planning"): the prediction against the median
    # stop over the tries
    med = [
        p / float(np.median(needed[b]))
        for b, preds in predicted20.items()
        for p in preds
        if len(needed.get(b, [])) >= 3
    ]
    if med:
        worst = max(max(med), 1 / min(med))
        print(
            f"| duet plan from 20 earlier runs / median runs needed over the tries | "
            f"{min(med):.2f} .. {max(med):.2f} (worst factor {worst:.2f}) | within 1.5x |"
        )
    if auto_ratio:
        within = sum(r <= 1.15 for r in auto_ratio)
        print(
            f"| auto interval / best fixed method's | max {max(auto_ratio):.2f}, median "
            f"{np.median(auto_ratio):.2f}, within 1.15x in {within} of {len(auto_ratio)} "
            "| <= 1.15 |"
        )
    print(f"\n(took {time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
