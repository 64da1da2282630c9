"""How much longer `duet --help` and every `duet COMMAND --help` take than starting Python.

The goal: each within 6x `python -c pass` (a look at the flags or a typo must not cost
the second that importing pandas, pydantic and yaml takes). Each help runs beside a
bare interpreter in interleaved rounds (duet first in even rounds, python first in odd
ones), so a drift of the machine's speed hits both alike; per help the median over the
rounds of duet's time / python's, with the medians of each for scale.

Both start from compiled bytecode as an installed duetbench does (a temporary
``PYTHONPYCACHEPREFIX``, even where ``PYTHONDONTWRITEBYTECODE`` is set);
``--no-bytecode`` measures a start that compiles every module instead (a checkout run
with ``PYTHONDONTWRITEBYTECODE=1``).

    python3 benchmarks/cli_startup.py                  # 15 rounds, every help
    python3 benchmarks/cli_startup.py --rounds 30 --command compare --command run
    python3 benchmarks/cli_startup.py --no-bytecode

Run it from the repository root with ``PYTHONPATH=src`` (or in a virtual environment
with the checkout installed) to measure the working tree. tests/test_startup.py checks
the same goal on fewer rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

GOAL = 6.0


def run_once(argv: list[str], env: dict[str, str]) -> float:
    """Wall-clock seconds of one run of ``argv`` (output discarded; it must succeed)."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def measure(helps: list[list[str]], rounds: int, env: dict[str, str]) -> list[tuple[str, ...]]:
    """Per help: its name, median seconds, python's median beside it, the median ratio and
    its 10th-90th percentile."""
    bare = [sys.executable, "-c", "pass"]
    argvs = [[sys.executable, "-m", "duetbench", *words, "--help"] for words in helps]
    for argv in [*argvs, bare]:  # bytecode written, the file cache warm; a broken help fails
        run_once(argv, env)
    times: dict[int, tuple[list[float], list[float]]] = {i: ([], []) for i in range(len(helps))}
    for r in range(rounds):
        for i, argv in enumerate(argvs):
            if r % 2:
                b, d = run_once(bare, env), run_once(argv, env)
            else:
                d, b = run_once(argv, env), run_once(bare, env)
            times[i][0].append(d)
            times[i][1].append(b)
    rows = []
    for i, words in enumerate(helps):
        d, b = times[i]
        ratios = [x / y for x, y in zip(d, b, strict=True)]
        q = statistics.quantiles(ratios, n=10)
        rows.append(
            (
                " ".join(["duet", *words, "--help"]),
                f"{statistics.median(d):.3f} s",
                f"{statistics.median(b):.3f} s",
                f"{statistics.median(ratios):.1f}x",
                f"{q[0]:.1f}-{q[-1]:.1f}x",
            )
        )
    return rows


def main() -> int:
    from duetbench.commands import COMMANDS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    ap.add_argument(
        "--command",
        action="append",
        choices=COMMANDS,
        help="measure `duet COMMAND --help` (repeatable; default: `duet --help` and every command)",
    )
    ap.add_argument(
        "--no-bytecode", action="store_true", help="compile every module at every start"
    )
    args = ap.parse_args()
    helps = [[c] for c in args.command] if args.command else [[], *([c] for c in COMMANDS)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as cache:
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env["PYTHONPYCACHEPREFIX"] = cache
        rows = measure(helps, args.rounds, env)
    start = "every module compiled" if args.no_bytecode else "from bytecode"
    print(f"{args.rounds} interleaved rounds beside `python -c pass`, {start}; goal <= {GOAL:g}x")
    print("| command | duet | python | median ratio | 10th-90th percentile |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| `" + row[0] + "` | " + " | ".join(row[1:]) + " |")
    worst = max(float(r[3].rstrip("x")) for r in rows)
    print(f"worst median ratio {worst:.1f}x; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
