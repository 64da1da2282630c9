"""Placement study: which `cpus:` placement keeps the duet's premise -- that
interference hits A and B alike -- under which kind of interference.

For every placement (pinned, shared, or a CPU list) x condition x harness x iteration
length it runs one duetbench experiment of the known-answer workload
(examples/workloads, `int`): B does exactly 1.0, 1.03, 1.1 and 2.0 times A's
operations, every method. It reports per placement x method x condition:

- bias: median of measured / true ratio - 1 over the non-A/A benchmarks and tries;
- worst: the largest |measured / true - 1|;
- width: median interval width (relative);
- A/A: share of A/A results whose verdict is not `same` (false alarms);
- wrong: results with true ratio > 1 whose verdict is not `slower` (2.0) or is `faster`;
- corr: mean per-run correlation of the slowdowns (duration / the run's median) of
  paired A and B iterations (duets; seqn pairs iterations of different runs).

Conditions: ``quiet``; ``noise`` (`duet noise`: CPU bursts on every core); ``memory``
(`duet noise --pattern memory`); ``intruder-session`` (one busy loop in the benchmark's
session, so the same autogroup under sched_autogroup); ``intruder-own`` (the busy loop
in its own session: its own autogroup, which the scheduler weighs like the whole duet).

    python benchmarks/placement_study.py --quick           # a few minutes: checks it works
    python benchmarks/placement_study.py --csv study.csv   # the full study (it prints its estimate; a quarter of it took 4 min)
    python benchmarks/placement_study.py --from-csv study.csv --markdown   # the doc's table
    python benchmarks/placement_study.py --keep runs/ ...  # keep every cell's results
    python benchmarks/placement_study.py --reanalyse runs/ # kept results: before / after

``--reanalyse`` reads kept results twice: as releases before the unbalanced-run
rule did (``--run-stat median``, unbalanced duet runs kept) and as `duet compare`
does now (``auto``: ``means`` for duets beside other work; unbalanced runs left out;
docs/statistics.md, "Run statistics beside other work"), and prints per condition x
method: results, confident wrong verdicts (`faster` for B > A, anything but `same` for
A/A), results within 5 % of the truth, the worst error, the median interval width,
and the results left with `no data`.

Run the full study on a quiet machine (nothing else running); it prints its expected
duration first. Results go to docs/performance.md, section Placement.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from duetbench.analysis import compare, pair
from duetbench.config import loads_config
from duetbench.execute.placement import resolve_placement
from duetbench.noise import NoisyNeighbour
from duetbench.process import process
from duetbench.schedule.inline import run_experiment

REPO = Path(__file__).resolve().parents[1]
WORKLOAD_DIR = REPO / "examples" / "workloads"
WORKLOAD = WORKLOAD_DIR / "workload"
#: `int` operations per iteration: ~15 ms (short) and ~150 ms (long) on the 2-vCPU VM
LENGTHS = {"short": 7_500_000, "long": 75_000_000}
ITERATIONS = {"short": 15, "long": 5}
RATIOS = (1.0, 1.03, 1.1, 2.0)
CONDITIONS = ("quiet", "noise", "memory", "intruder-session", "intruder-own")
PLACEMENTS = ("pinned", "shared")
HARNESSES = ("builtin", "generic")
METHODS = ("seqn", "aduet", "sduet")
#: seconds a run costs besides its iterations (drivers, process start), for the estimate
RUN_OVERHEAD_S = 0.4
BUSY_LOOP = "import time\nend = time.monotonic() + 7200\nwhile time.monotonic() < end:\n    pass\n"
FIELDS = (
    "try", "placement", "resolved", "cpus", "condition", "harness", "length", "method",
    "ratio", "measured", "ci_low", "ci_high", "verdict", "runs", "pairs", "corr", "warnings",
)  # fmt: skip


def _log(msg: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextmanager
def condition(name: str, seed: int) -> Iterator[None]:
    """The interference of ``name`` for the duration of the block; nothing left behind."""
    if name in ("noise", "memory"):
        with NoisyNeighbour("cpu" if name == "noise" else "memory", seed=seed):
            yield
        return
    if name.startswith("intruder"):
        own = name == "intruder-own"
        proc = subprocess.Popen(
            [sys.executable, "-c", BUSY_LOOP],
            start_new_session=own,
            process_group=None if own else 0,
        )
        try:
            yield
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
        return
    if name != "quiet":
        raise SystemExit(f"unknown condition {name!r}; choose from {', '.join(CONDITIONS)}")
    yield


def _side(harness: str, ops: int, n: int) -> str:
    if harness == "builtin":
        return f"{{command: {WORKLOAD} int {ops}}}"
    return f"{{command: {WORKLOAD} int {ops} {n} -o out.csv}}"


def config_text(placement: str, harness: str, length: str, reps: int, seed: int) -> str:
    ops, n = LENGTHS[length], ITERATIONS[length]
    extra = "    harness: generic\n    self_sync: true\n    results: [out.csv]\n"
    benches = []
    for r in RATIOS:
        b_ops = round(ops * r)
        benches.append(
            f"  r{r:g}:\n"
            + (extra if harness == "generic" else "")
            + f"    A: {_side(harness, ops, n)}\n    B: {_side(harness, b_ops, n)}\n"
        )
    return (
        f"experiment:\n  name: placement\n  seed: {seed}\n"
        f"  repetitions: {{seqn: {reps}, aduet: {reps}, sduet: {reps}}}\n"
        "  timeout: 600s\n  default_artifacts: false\n"
        f"defaults:\n  iterations: {n}\n  cpus: {placement}\n"
        "benchmarks:\n" + "".join(benches)
    )


def slowdown_correlation(df: pd.DataFrame) -> dict[tuple[str, str], float]:
    """Mean over runs of the correlation of paired A and B slowdowns, per benchmark x method."""
    p = pair(df)
    out: dict[tuple[str, str], float] = {}
    for (bench, method), g in p.groupby(["benchmark", "method"], observed=True):
        rs = []
        for _run, h in g.groupby("run", observed=True):
            if len(h) < 3:
                continue
            a = h["a_ns"] / h["a_ns"].median()
            b = h["b_ns"] / h["b_ns"].median()
            if a.std() > 0 and b.std() > 0:
                rs.append(float(np.corrcoef(a, b)[0, 1]))
        out[(str(bench), str(method))] = statistics.fmean(rs) if rs else math.nan
    return out


def run_cell(
    placement: str, cond: str, harness: str, length: str, reps: int, seed: int, tmp: Path
) -> list[dict[str, Any]]:
    from duetbench.dataset import open_dataset
    from duetbench.options import CompareOptions
    from duetbench.report.notes import warnings_by_row

    exp = loads_config(config_text(placement, harness, length, reps, seed), tmp / "duet.yml")
    with condition(cond, seed):
        summary = run_experiment(exp, tmp / f"res-{seed}")
    table = process(summary.root).table
    opts = CompareOptions.create()
    res = compare(table, opts)
    corr = slowdown_correlation(table)
    host = sorted(os.sched_getaffinity(0))
    resolved = resolve_placement(placement, host)
    ds = open_dataset(summary.root)
    rows = []
    for r, warnings in warnings_by_row(res, ds, opts.min_overlap):
        ratio = float(str(r["benchmark"])[1:])
        rows.append(
            {
                "placement": placement,
                "resolved": resolved.kind,
                "cpus": " ".join(map(str, resolved.cpus)),
                "condition": cond,
                "harness": harness,
                "length": length,
                "method": r["method"],
                "ratio": ratio,
                "measured": 1.0 + float(r["change"]),
                "ci_low": 1.0 + float(r["ci_low"]),
                "ci_high": 1.0 + float(r["ci_high"]),
                "verdict": r["verdict"],
                "runs": int(r["runs"]),
                "pairs": int(r["pairs"]),
                "corr": corr.get((str(r["benchmark"]), str(r["method"])), math.nan),
                "warnings": " ".join(c for c, _ in warnings),
            }
        )
    return rows


def expected_seconds(args: argparse.Namespace) -> float:
    per_try = 0.0
    for length in args.lengths:
        its = ITERATIONS[length] * LENGTHS[length] / LENGTHS["short"] * 0.015
        for r in RATIOS:
            # seqn: A and B runs; aduet/sduet: one run as long as the longer side
            per_run = [its + RUN_OVERHEAD_S, its * r + RUN_OVERHEAD_S] + [its * max(r, 1)] * 2
            per_try += args.reps * (sum(per_run) + 2 * RUN_OVERHEAD_S)
    cells = len(args.placements) * len(args.conditions) * len(args.harnesses)
    return per_try * cells * args.tries


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per placement x condition x method (over harnesses, lengths, tries)."""
    df = df.assign(err=df["measured"] / df["ratio"] - 1.0, width=df["ci_high"] - df["ci_low"])
    rows = []
    for (pl, cond, method), g in df.groupby(["placement", "condition", "method"], sort=False):
        ab, aa = g[g["ratio"] != 1.0], g[g["ratio"] == 1.0]
        x2 = g[g["ratio"] == 2.0]
        wrong = int((ab["verdict"] == "faster").sum()) + int((x2["verdict"] != "slower").sum())
        rows.append(
            {
                "placement": f"{pl} ({g['resolved'].iloc[0]})" if pl == "auto" else pl,
                "condition": cond,
                "method": method,
                "bias": float(ab["err"].median()),
                "worst": float(ab["err"].abs().max()),
                "x2 within 5 %": f"{int((x2['err'].abs() <= 0.05).sum())}/{len(x2)}",
                "width": float(g["width"].median()),
                "A/A alarms": f"{int(aa['verdict'].isin(('slower', 'faster')).sum())}/{len(aa)}",
                "wrong": wrong,
                "corr": float(g["corr"].mean()),
            }
        )
    return pd.DataFrame(rows)


def markdown(summary: pd.DataFrame) -> str:
    cols = list(summary.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in summary.to_dict("records"):
        cells = []
        for c in cols:
            v = r[c]
            if c in ("bias", "worst", "width"):
                cells.append(f"{v * 100:+.1f} %" if c == "bias" else f"{v * 100:.1f} %")
            elif c == "corr":
                cells.append("-" if v != v else f"{v:+.2f}")
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="a few minutes: one try, fewer cells")
    p.add_argument("--conditions", default=",".join(CONDITIONS), help="comma list")
    p.add_argument("--placements", default=",".join(PLACEMENTS),
                   help="comma list of cpus: values (pinned, shared, auto; a list as 0+1)")  # fmt: skip
    p.add_argument("--harnesses", default=",".join(HARNESSES), help="comma list")
    p.add_argument("--lengths", default="short,long", help="comma list of short,long")
    p.add_argument("--tries", type=int, default=2, help="experiments per cell (seeds)")
    p.add_argument("--reps", type=int, default=3, help="repetitions per method")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--csv", type=Path, default=None, help="write every result row here")
    p.add_argument("--from-csv", type=Path, default=None, help="only print the tables of a CSV")
    p.add_argument("--markdown", action="store_true", help="print the summary as Markdown")
    p.add_argument("--keep", type=Path, default=None, help="keep each cell's results here")
    p.add_argument("--reanalyse", type=Path, default=None,
                   help="only read the results kept with --keep: before / after")  # fmt: skip
    args = p.parse_args(argv)
    for key in ("conditions", "placements", "harnesses", "lengths"):
        setattr(args, key, [x for x in getattr(args, key).split(",") if x])
    args.placements = [
        "[" + x.replace("+", ", ") + "]" if x[0].isdigit() else x for x in args.placements
    ]
    if args.quick:
        args.tries, args.reps, args.lengths = 1, 2, ["short"]
        args.harnesses = args.harnesses[:1]
    return args


def reanalyse(kept: Path) -> pd.DataFrame:
    """Every kept cell analysed as before and as now (see the module doc)."""
    from duetbench.options import CompareOptions

    rows = []
    for root in sorted(kept.glob("*/res-*/placement")):
        cond, pl, _harness, _length, _try = root.parents[1].name.split("_")
        for analysis, keep, stat in (("before", True, "median"), ("after", False, "auto")):
            table = process(root, keep_unbalanced=keep).table
            res = compare(table, CompareOptions.create(run_stat=stat))
            have = set(zip(res["benchmark"].astype(str), res["method"].astype(str), strict=True))
            for r in res.to_dict("records"):
                truth = float(str(r["benchmark"])[1:])
                measured = 1.0 + float(r["change"])
                rows.append(
                    dict(condition=cond, placement=pl, method=r["method"], analysis=analysis,
                         ratio=truth, err=measured / truth - 1.0, width=r["ci_width"],
                         verdict=r["verdict"])
                )  # fmt: skip
            for bench in (f"r{x:g}" for x in RATIOS):  # every run left out: no data
                for method in METHODS:
                    if (bench, method) not in have:
                        rows.append(
                            dict(condition=cond, placement=pl, method=method, analysis=analysis,
                                 ratio=float(bench[1:]), err=math.nan, width=math.nan,
                                 verdict="no data")
                        )  # fmt: skip
    return pd.DataFrame(rows)


def reanalysis_table(df: pd.DataFrame) -> str:
    """Markdown: per condition x method x analysis (over placements and tries)."""
    wrong = np.where(
        df["ratio"] == 1.0, df["verdict"].isin(["slower", "faster"]), df["verdict"] == "faster"
    )
    df = df.assign(
        wrong=wrong,
        ok5=df["err"].abs() <= 0.05,
        nodata=(df["verdict"] == "no data") | df["err"].isna(),
    )
    out = [
        "| condition | method | analysis | results | wrong | within 5 % | worst | width | no data |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ["condition", "method", "analysis"]
    for (cond, method, analysis), g in df.groupby(keys, sort=False):
        out.append(
            f"| {cond} | {method} | {analysis} | {len(g)} | {int(g['wrong'].sum())} | "
            f"{int(g['ok5'].sum())} | {100 * g['err'].abs().max():.1f} % | "
            f"{100 * g['width'].median():.1f} % | {int(g['nodata'].sum())} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reanalyse:
        print(reanalysis_table(reanalyse(args.reanalyse)))
        return 0
    if args.from_csv:
        df = pd.read_csv(args.from_csv)
    else:
        subprocess.run(["sh", str(WORKLOAD_DIR / "setup.sh")], check=True, capture_output=True)
        _log(f"expected duration: ~{expected_seconds(args) / 60:.0f} min "
             f"(at the 2-vCPU VM's speed; {os.cpu_count()} CPUs here)")  # fmt: skip
        rows: list[dict[str, Any]] = []
        t0 = time.monotonic()
        done = 0
        cells = args.tries * len(args.conditions) * len(args.placements)
        cells *= len(args.harnesses) * len(args.lengths)
        for t in range(args.tries):
            for cond in args.conditions:
                for pl in args.placements:
                    for harness in args.harnesses:
                        for length in args.lengths:
                            seed = args.seed * 1000 + t
                            _log(f"try {t}: {pl} {cond} {harness} {length}")
                            if args.keep:
                                d = args.keep / f"{cond}_{pl}_{harness}_{length}_{t}"
                                d.mkdir(parents=True, exist_ok=True)
                                cell = run_cell(pl, cond, harness, length, args.reps, seed, d)
                            else:
                                with tempfile.TemporaryDirectory(prefix="placement-") as tmp:
                                    cell = run_cell(
                                        pl, cond, harness, length, args.reps, seed, Path(tmp)
                                    )
                            rows += [{"try": t, **r} for r in cell]
                            if args.csv:  # after every cell: a stop loses nothing
                                pd.DataFrame(rows, columns=FIELDS).to_csv(args.csv, index=False)
                            done += 1
                            left = (time.monotonic() - t0) / done * (cells - done)
                            _log(f"{done}/{cells} cells; ~{left / 60:.0f} min left")
        _log(f"took {(time.monotonic() - t0) / 60:.1f} min")
        df = pd.DataFrame(rows, columns=FIELDS)
    summary = summarize(df)
    if args.markdown:
        print(markdown(summary))
    else:
        with pd.option_context("display.width", 200, "display.max_rows", 500):
            print(summary.to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
