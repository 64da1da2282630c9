"""How the shorter side of a sduet waits: running its own calls (fill) against polling (spin).

    python benchmarks/sduet_fill.py [--tries 4] [--runs 10] [--samples 30] [--json out.json]

Runs `duet micro --method sduet` on known-work functions of examples/micro (A/A, 1.10x
and 2x; 100 us and 5 ms a call) once with `DUET_SYNC_WAIT=fill` (the default,
docs/sync.md, "Waiting: fill, spin or block") and once with `DUET_SYNC_WAIT=spin`,
interleaved in every try so both see the same machine. The reference is measured in
the same try in one process (both versions imported apart, timed alternately:
benchmarks/pytest_accuracy.py's). Prints, per case and mode, the ratio duet micro
reported, its error against the reference, and the median sample time of each side
over the runs: what the waiting side's samples cost after each kind of wait. Nothing
is asserted: the figures go to docs/measurements/sduet-fill.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pytest_accuracy import EXAMPLE, parse_with_json, reference  # noqa: E402

CASES = ("aa_5ms", "p10_5ms", "x2_5ms", "x2_100us")
MODES = ("fill", "spin")


def side_ms(out: Path, side: str) -> float:
    """Median per-run median of one side's sample time (ms)."""
    medians = []
    for path in sorted(out.rglob(f"runs/*/{side}/**/micro-samples.csv")):
        rows = pd.read_csv(path)
        rows = rows[rows["phase"] == "sample"]
        medians.append(float(rows["total_ns"].median()) / 1e6)
    return statistics.median(medians) if medians else float("nan")


def one(case: str, mode: str, runs: int, samples: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sduet-fill-") as tmp:
        out = Path(tmp) / "out"
        argv = [sys.executable, "-m", "duetbench", "micro", f"knownver:{case}"]
        argv += ["--a-path", str(EXAMPLE / "v_a"), "--b-path", str(EXAMPLE / "v_b")]
        argv += ["--method", "sduet", "--runs", str(runs), "--samples", str(samples)]
        argv += ["--seed", str(seed), "--format", "json", "-o", str(out)]
        env = {**os.environ, "DUET_SYNC_WAIT": mode}
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        if done.returncode not in (0, 1):
            raise SystemExit(f"duet micro failed:\n{done.stderr[-2000:]}")
        row = json.loads(done.stdout)["rows"][0]
        fills = [
            json.loads(p.read_text()).get("fill", {}).get("calls", 0)
            for p in out.rglob("micro-meta.json")
        ]
        return {
            "ratio": 1.0 + float(row["change"]),
            "ci_low": 1.0 + float(row["ci_low"]),
            "ci_high": 1.0 + float(row["ci_high"]),
            "a_ms": side_ms(out, "A"),
            "b_ms": side_ms(out, "B"),
            "fill_calls": sum(fills),
        }


def summarize(records: list[dict[str, Any]]) -> None:
    print(
        "\n| case | wait | reference | measured (tries) | error (mean) | worst | "
        "A ms | B ms | fill calls a run |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for case in CASES:
        for mode in MODES:
            rs = [r for r in records if r["case"] == case and r["mode"] == mode]
            if not rs:
                continue
            errors = [r["ratio"] / r["reference"] - 1 for r in rs]
            print(
                f"| {case} | {mode} | {statistics.median(r['reference'] for r in rs):.3f} | "
                + ", ".join(f"{r['ratio']:.3f}" for r in rs)
                + f" | {statistics.mean(errors):+.1%} | {max(errors, key=abs):+.1%} | "
                f"{statistics.median(r['a_ms'] for r in rs):.3f} | "
                f"{statistics.median(r['b_ms'] for r in rs):.3f} | "
                f"{statistics.median(r['fill_calls'] / r['runs'] for r in rs):.0f} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tries", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--cases", default=",".join(CASES))
    args = parse_with_json(ap)
    if args.from_json:
        summarize(json.loads(args.from_json.read_text())["records"])
        return
    records: list[dict[str, Any]] = []
    for t in range(args.tries):
        ref = reference(pairs=100)
        for case in args.cases.split(","):
            variant, size = case.split("_")
            for mode in MODES if t % 2 == 0 else tuple(reversed(MODES)):
                got = one(case, mode, args.runs, args.samples, seed=t)
                got.update(case=case, mode=mode, tri=t, runs=args.runs)
                got["reference"] = ref[(variant, size)]
                records.append(got)
                print(
                    f"try {t} {case:9} {mode:5} reference {got['reference']:.3f} measured "
                    f"{got['ratio']:.3f} ({got['ratio'] / got['reference'] - 1:+.1%})  "
                    f"A {got['a_ms']:.3f} ms  B {got['b_ms']:.3f} ms  fill calls "
                    f"{got['fill_calls']}",
                    flush=True,
                )
    summarize(records)
    if args.json:
        doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
               "load": os.getloadavg(), "records": records}  # fmt: skip
        args.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
