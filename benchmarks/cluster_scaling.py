"""Cluster scaling: throughput of `duet run --cluster` with 1, 2 and 4 workers, and the
scheduling overhead per run against an inline run of the same plan.

The runs are sleep-bound (each iteration is ``sleep S``), so the workers do not compete
for CPU and throughput should scale with the number of workers; what does not scale is
the coordinator's cost per run (dispatch, result transfer, the atomic commit) and the
fixed cost of starting a cluster and probing its hosts, which are reported separately.

    python benchmarks/cluster_scaling.py                  # 1, 2, 4 workers; 24 runs
    python benchmarks/cluster_scaling.py --workers 1,2 --reps 2 --sleep 0.05
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from duetbench.config import load_config
from duetbench.schedule.cluster import local_cluster, run_experiment_cluster
from duetbench.schedule.inline import run_experiment


def write_config(directory: Path, reps: int, iterations: int, sleep: float) -> Path:
    cfg = directory / "duet.yml"
    cfg.write_text(
        f"""experiment:
  name: scaling
  seed: 1
  repetitions: {{seqn: {reps}, aduet: {reps}}}
defaults:
  iterations: {iterations}
  cpus: none
benchmarks:
  a: {{command: "sleep {sleep}"}}
  b: {{command: "sleep {sleep}"}}
"""
    )
    return cfg


def run_times(root: Path) -> list[float]:
    """Seconds each run took inside its executor (run.json end_ns - start_ns)."""
    out = []
    for p in (root / "runs").iterdir():
        if p.name.startswith("."):
            continue
        r = json.loads((p / "run.json").read_text())
        out.append((r["end_ns"] - r["start_ns"]) / 1e9)
    return out


def measure_inline(cfg: Path, out: Path) -> dict[str, Any]:
    exp = load_config(cfg)
    t0 = time.monotonic()
    s = run_experiment(exp, out)
    wall = time.monotonic() - t0
    n = sum(s.statuses.values())
    execute = sum(run_times(s.root))
    return {"workers": "inline", "runs": n, "wall_s": wall, "execute_s": execute, "startup_s": 0.0}


def measure_cluster(cfg: Path, out: Path, n_workers: int) -> dict[str, Any]:
    from distributed import Client

    exp = load_config(cfg)
    t0 = time.monotonic()
    cluster = local_cluster(n_workers, host_prefix=f"bench{n_workers}")
    try:
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(n_workers, timeout=120)
            startup = time.monotonic() - t0
            t1 = time.monotonic()
            s = run_experiment_cluster(exp, out, address=cluster.scheduler_address)
            wall = time.monotonic() - t1
    finally:
        cluster.close()
    events = [json.loads(x) for x in (s.root / "cluster.jsonl").read_text().splitlines()]
    session = next(e["ns"] for e in events if e["event"] == "session")
    first = min(e["ns"] for e in events if e["event"] == "dispatched")
    n = sum(s.statuses.values())
    done = [e for e in events if e["event"] == "done"]
    per_run = sorted(e["roundtrip_s"] - e["execute_s"] for e in done)
    return {
        "workers": n_workers,
        "sched_ms": 1000 * statistics.median(per_run),
        "sched_p90_ms": 1000 * per_run[int(0.9 * (len(per_run) - 1))],
        "runs": n,
        "wall_s": wall,
        "execute_s": sum(run_times(s.root)),
        "startup_s": startup,
        "probe_s": (first - session) / 1e9,
        "hosts": len(
            {json.loads(p.read_text())["host"] for p in (s.root / "hosts").glob("*.json")}
        ),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workers", default="1,2,4", help="worker counts to try (default 1,2,4)")
    ap.add_argument(
        "--reps", type=int, default=4, help="repetitions per method (default 4: 24 runs)"
    )
    ap.add_argument("--iterations", type=int, default=4, help="iterations per run (default 4)")
    ap.add_argument("--sleep", type=float, default=0.25, help="seconds per iteration (0.25)")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.workers.split(",") if x]
    with tempfile.TemporaryDirectory(prefix="duet-scaling-") as tmp:
        d = Path(tmp)
        cfg = write_config(d, args.reps, args.iterations, args.sleep)
        rows = [measure_inline(cfg, d / "inline")]
        for n in counts:
            rows.append(measure_cluster(cfg, d / f"cluster{n}", n))
    base = rows[0]
    one = next((r for r in rows if r["workers"] == 1), base)
    print(
        f"# {base['runs']} sleep-bound runs ({args.iterations} x sleep {args.sleep:g} s per "
        f"side; seqn and aduet), {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}"
    )
    print(
        f"{'workers':>8} {'wall s':>7} {'runs/min':>9} {'vs 1 wkr':>9} {'exec/run ms':>12} "
        f"{'idle/run ms':>12} {'sched/run ms (p90)':>19} {'start s':>8} {'probe s':>8}"
    )
    for r in rows:
        slots = 1 if r["workers"] == "inline" else r["workers"]
        # idle: worker-slot time not spent executing runs (dispatch, transfer, commit, tail)
        idle = (r["wall_s"] * slots - r["execute_s"]) / r["runs"] * 1000
        sched = "-" if "sched_ms" not in r else f"{r['sched_ms']:.1f} ({r['sched_p90_ms']:.1f})"
        print(
            f"{r['workers']!s:>8} {r['wall_s']:>7.2f} {60.0 * r['runs'] / r['wall_s']:>9.1f} "
            f"{one['wall_s'] / r['wall_s']:>9.2f} {1000 * r['execute_s'] / r['runs']:>12.1f} "
            f"{idle:>12.1f} {sched:>19} {r['startup_s']:>8.2f} {r.get('probe_s', 0.0):>8.2f}"
        )
    extra = (one["wall_s"] - base["wall_s"]) / base["runs"] * 1000
    print(
        f"# 1 worker vs inline: {extra:+.1f} ms wall per run; sched = submit-to-commit time "
        "minus the worker's execute time, per run (median, p90)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
