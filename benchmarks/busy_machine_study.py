"""A busy machine still gets an answer: known answers beside other busy
processes, compared by wall time (as before) and by CPU time where other work
time-sliced CPU-bound sides (``--measure auto``, docs/statistics.md, "Beside other work:
CPU time").

For every condition x try it runs, through the `duet` command line:

* ``duet``: one experiment of the known-answer workload (examples/workloads, `int`):
  B does exactly 2x A's operations, and an A/A pair; with the built-in harness (one
  process per iteration) and an external harness (the workload loops itself and writes
  the generic format); methods seqn, aduet and sduet, 5 runs each;
* ``micro``: `duet micro` on examples/micro's known pair (B does 1.10x A's work,
  `p10_100us`) and its A/A pair (`aa_100us`), methods sduet, aduet and seqn;

and analyses each results directory twice, from the same runs: ``before`` (the landed
analysis: wall time, unbalanced duet runs left out) and ``after`` (``--measure auto``).
It prints per condition x part x method x analysis: results, the median measured ratio
of the known pair, how many are within 3 % of the truth, how many said `slower` (the
right verdict), `no data`, and the A/A false alarms (anything but `same`).

Conditions: ``quiet``; ``one`` (one busy loop in the benchmark's session); ``two`` (two
busy loops). A busy loop is a Python ``while`` loop bounded in time; both are killed
when the condition ends.

    python benchmarks/busy_machine_study.py --tries 10 --json busy.json
    python benchmarks/busy_machine_study.py --tries 1 --conditions one --parts duet  # smoke
    python benchmarks/busy_machine_study.py --parts micro --micro-cpus pinned,shared
    python benchmarks/busy_machine_study.py --from-json busy.json --markdown

Run it on a machine with nothing else running; it prints its expected duration first.
Figures go to docs/measurements/busy-machine.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from busy_loops import busy_loops

REPO = Path(__file__).resolve().parents[1]
WORKLOAD_DIR = REPO / "examples" / "workloads"
WORKLOAD = WORKLOAD_DIR / "workload"
MICRO = REPO / "examples" / "micro"
OPS = 20_000_000  # `int` operations per iteration of A: ~40 ms on the project's 2-vCPU VM
CONDITIONS = ("quiet", "one", "two")
PARTS = ("duet", "micro")
METHODS = ("seqn", "aduet", "sduet")
#: (benchmark, true ratio B/A) of each part
CASES = {
    "duet": (("x2-builtin", 2.0), ("x2-external", 2.0), ("aa-builtin", 1.0), ("aa-external", 1.0)),
    "micro": (("p10_100us", 1.10), ("aa_100us", 1.0)),
}
#: minutes per try, measured quiet (duet, micro) for the estimate
MINUTES = {"duet": 1.2, "micro": 2.2}


def _log(msg: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _duet(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=3600,
    )


def duet_config(seed: int) -> str:
    w = WORKLOAD
    return f"""
experiment:
  name: busy
  seed: {seed}
  repetitions: {{seqn: 5, aduet: 5, sduet: 5}}
  timeout: 600s
  default_artifacts: false
defaults:
  iterations: 5
benchmarks:
  x2-builtin:
    A: {{command: {w} int {OPS}}}
    B: {{command: {w} int {2 * OPS}}}
  aa-builtin:
    A: {{command: {w} int {OPS}}}
  x2-external:
    harness: generic
    self_sync: true
    results: [out.csv]
    A: {{command: {w} int {OPS} 5 -o out.csv}}
    B: {{command: {w} int {2 * OPS} 5 -o out.csv}}
  aa-external:
    harness: generic
    self_sync: true
    results: [out.csv]
    A: {{command: {w} int {OPS} 5 -o out.csv}}
"""


def run_duet_part(work: Path, seed: int) -> Path:
    cfg = work / "duet.yml"
    cfg.write_text(duet_config(seed))
    done = _duet("run", str(cfg), "-o", str(work / "res"), "--no-compare")
    if done.returncode not in (0, 4):
        raise SystemExit(f"duet run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return work / "res" / "busy"


def run_micro_part(work: Path, seed: int, cpus: str = "pinned") -> Path:
    args = ["micro", str(MICRO / "bench_known_pairs.py"), "--cpus", cpus]
    args += ["--a-path", str(MICRO / "v_a"), "--b-path", str(MICRO / "v_b")]
    for m in METHODS:
        args += ["--method", m]
    args += ["--budget", "60s", "--seed", str(seed), "-o", str(work), "--format", "json"]
    done = _duet(*args)
    if done.returncode not in (0, 4):
        raise SystemExit(f"duet micro failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return work / "micro"


def analyse(root: Path) -> list[dict[str, Any]]:
    """The verdict rows of ``root``, before (wall, unbalanced left out) and after (auto)."""
    out = []
    for label, extra in (("before", ["--measure", "wall"]), ("after", ["--measure", "auto"])):
        done = _duet("compare", str(root), "--format", "json", *extra)
        if done.returncode != 0:
            raise SystemExit(f"duet compare failed:\n{done.stderr[-2000:]}")
        for r in json.loads(done.stdout)["rows"]:
            out.append(
                {
                    "analysis": label,
                    "benchmark": r["benchmark"].split(":")[-1].split(".")[-1],
                    "method": r["method"],
                    "change": r["change"],
                    "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"],
                    "verdict": r["verdict"],
                    "runs": r["runs"],
                    "measure": r.get("measure", "wall"),
                    "runs_unbalanced": r.get("runs_unbalanced", 0),
                }
            )
    return out


def study(args: argparse.Namespace) -> list[dict[str, Any]]:
    per_try = sum(MINUTES[p] * (len(args.micro_cpus) if p == "micro" else 1) for p in args.parts)
    minutes = per_try * args.tries * len(args.conditions)
    _log(f"expected duration: about {minutes:.0f} min on a quiet 2-CPU machine")
    rows: list[dict[str, Any]] = []
    for cond in args.conditions:
        for t in range(args.first_try, args.first_try + args.tries):
            for part in args.parts:
                for cpus in args.micro_cpus if part == "micro" else ["auto"]:
                    with tempfile.TemporaryDirectory(prefix=f"busy-{part}-") as tmp:
                        with busy_loops(cond):
                            if part == "duet":
                                root = run_duet_part(Path(tmp), seed=100 + t)
                            else:
                                root = run_micro_part(Path(tmp), seed=100 + t, cpus=cpus)
                        for r in analyse(root):
                            row = {"condition": cond, "try": t, "part": part, "cpus": cpus}
                            rows.append({**row, **r})
                    _log(f"{cond} try {t + 1}/{args.first_try + args.tries} {part} {cpus}: done")
    return rows


def truth(part: str, bench: str) -> float | None:
    for name, ratio in CASES[part]:
        if name in bench:
            return ratio
    return None


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        key = (r["condition"], r["part"], r.get("cpus", "auto"), r["method"], r["analysis"])
        groups.setdefault(key, []).append(r)
    out = []
    order = {c: i for i, c in enumerate(CONDITIONS)}
    for key in sorted(
        groups, key=lambda k: (order.get(k[0], 9), k[1], k[2], METHODS.index(k[3]), k[4])
    ):
        cond, part, cpus, method, label = key
        g = groups[key]
        known = [r for r in g if (truth(part, r["benchmark"]) or 1.0) > 1.0]
        aa = [r for r in g if truth(part, r["benchmark"]) == 1.0]
        ratios = [1 + r["change"] for r in known if r["change"] is not None]
        within = sum(
            1
            for r in known
            if r["change"] is not None
            and abs((1 + r["change"]) / truth(part, r["benchmark"]) - 1) <= 0.03  # type: ignore[operator]
        )
        out.append(
            {
                "condition": cond,
                "part": part,
                "cpus": cpus,
                "method": method,
                "analysis": label,
                "results": len(known),
                "median ratio": round(statistics.median(ratios), 3) if ratios else None,
                "within 3 %": within,
                "slower": sum(r["verdict"] == "slower" for r in known),
                "no data": sum(r["verdict"] == "no data" for r in g),
                "A/A": len(aa),
                "A/A alarms": sum(r["verdict"] in ("slower", "faster") for r in aa),
                "cpu rows": sum(r["measure"] == "cpu" for r in g),
                "left out": sum(int(r["runs_unbalanced"] or 0) for r in g),
            }
        )
    return out


def markdown(summary: list[dict[str, Any]]) -> str:
    if not summary:
        return "(no results)"
    cols = list(summary[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for s in summary:
        lines.append("| " + " | ".join("-" if s[c] is None else str(s[c]) for c in cols) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tries", type=int, default=10)
    p.add_argument(
        "--first-try",
        type=int,
        default=0,
        help="number of the first try (its seed is 100 + the number): a later call with "
        "--first-try N adds tries with new seeds to an earlier study's",
    )
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--parts", default=",".join(PARTS))
    p.add_argument(
        "--micro-cpus", default="pinned", help="placements of the micro part: pinned,shared"
    )
    p.add_argument("--json", type=Path, help="write every result row here")
    p.add_argument("--from-json", type=Path, help="summarize rows written by --json")
    p.add_argument("--markdown", action="store_true", help="the summary as a Markdown table")
    args = p.parse_args()
    args.conditions = [c for c in args.conditions.split(",") if c]
    args.parts = [x for x in args.parts.split(",") if x]
    args.micro_cpus = [x for x in args.micro_cpus.split(",") if x]
    if args.from_json:
        rows = json.loads(args.from_json.read_text())
    else:
        if not WORKLOAD.exists():
            subprocess.run(["make", "-C", str(WORKLOAD_DIR)], check=True, capture_output=True)
        rows = study(args)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
    summary = summarize(rows)
    if args.markdown:
        print(markdown(summary))
    else:
        for s in summary:
            print("  ".join(f"{k}={v}" for k, v in s.items()))


if __name__ == "__main__":
    main()
