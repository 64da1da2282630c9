"""How long real commands take from start to exit, this tree against another, side by side.

Where cli_startup.py times `--help`, this times commands doing their work on small
inputs, where the imports dominate: `duet plan` of the quickstart config, `duet run
--no-compare` of six runs of `sleep 0.005`, `duet compare` and `duet history
list` of its results. Each command runs with this tree's ``src`` and with the other's
(``--old-src``, e.g. from `git archive COMMIT src | tar -x -C /tmp/old`) in interleaved
rounds (which goes first alternates), so a drift of the machine's speed hits both
alike; per command the medians and the median ratio new/old.

    git archive 4c1e2c8 src | tar -x -C /tmp/old
    python3 benchmarks/command_startup.py --old-src /tmp/old/src --rounds 9

Both start from compiled bytecode (one temporary ``PYTHONPYCACHEPREFIX`` per tree).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = """\
experiment: {name: tiny, seed: 1, repetitions: {seqn: 2, aduet: 2}}
benchmarks:
  t:
    harness: builtin
    iterations: 3
    A: {command: "sleep 0.005"}
    B: {command: "sleep 0.005"}
"""


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode not in (0, 1):  # 1: a verdict a CI would fail on; both fine here
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-500:]}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-src", type=Path, required=True, help="the other tree's src folder")
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9)")
    args = ap.parse_args()
    trees = {"new": ROOT / "src", "old": args.old_src.resolve()}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "duet.yml").write_text(CONFIG)
        envs = {}
        for name, src in trees.items():
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            envs[name] = {**env, "PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": str(tmp / name)}
        duet = [sys.executable, "-m", "duetbench"]
        results = tmp / "res"
        subprocess.run([*duet, "run", "duet.yml", "-o", str(results), "--no-compare"],
                       check=True, capture_output=True, env=envs["new"], cwd=tmp)  # fmt: skip
        subprocess.run([*duet, "history", "add", str(results / "tiny"), "--repo", "h.sqlite",
                        "--versions", "A=v1,B=v2"],
                       check=True, capture_output=True, env=envs["new"], cwd=tmp)  # fmt: skip
        commands = {
            "duet plan (quickstart)": [*duet, "plan", str(ROOT / "examples/quickstart/duet.yml")],
            "duet run --no-compare (6 runs of sleep 0.005)": None,  # a fresh output each time
            "duet compare": [*duet, "compare", str(results / "tiny")],
            "duet history list": [*duet, "history", "list", "--repo", str(tmp / "h.sqlite")],
        }
        times: dict[str, dict[str, list[float]]] = {c: {"new": [], "old": []} for c in commands}
        for r in range(args.rounds + 1):  # round 0 writes the bytecode and warms the caches
            for label, argv in commands.items():
                order = ("new", "old") if r % 2 else ("old", "new")
                for tree in order:
                    if argv is None:
                        out = tmp / f"run-{tree}-{r}"
                        line = [*duet, "run", "duet.yml", "-o", str(out), "--no-compare"]
                    else:
                        line = argv
                    t = run_once(line, envs[tree], tmp)
                    if argv is None:
                        shutil.rmtree(tmp / f"run-{tree}-{r}", ignore_errors=True)
                    if r:
                        times[label][tree].append(t)
    print(f"{args.rounds} interleaved rounds, from bytecode; new = {trees['new']}, "
          f"old = {trees['old']}")  # fmt: skip
    print("| command | old | new | median ratio new/old |")
    print("|---|---|---|---|")
    for label, t in times.items():
        ratio = statistics.median(n / o for n, o in zip(t["new"], t["old"], strict=True))
        print(f"| {label} | {statistics.median(t['old']):.2f} s | "
              f"{statistics.median(t['new']):.2f} s | {ratio:.2f}x |")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
