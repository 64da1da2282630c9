"""Example harness for a synchronous duet, in Python.

    python harness.py RESULT_CSV [--iterations N] [--work W]

Runs N iterations of a small CPU workload (W loop steps). Before each iteration
it waits for the other side (``duetbench.sync.wait()``; a no-op outside a
synchronous duet). Writes ``iteration,start_ns,end_ns`` (0-based, epoch ns) to
RESULT_CSV.
"""

from __future__ import annotations

import argparse
import sys
import time

import duetbench.sync


def workload(steps: int) -> int:
    x = 1
    for _ in range(steps):
        x = (x * 1103515245 + 12345) % 2147483648
    return x


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", help="CSV file to write")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--work", type=int, default=200_000)
    args = parser.parse_args(argv)

    rows: list[tuple[int, int, int]] = []
    try:
        for i in range(args.iterations):
            duetbench.sync.wait()
            start = time.time_ns()
            workload(args.work)
            rows.append((i, start, time.time_ns()))
        duetbench.sync.done()
    except duetbench.sync.SyncTimeout as exc:
        print(exc, file=sys.stderr)
        return 1
    except duetbench.sync.SyncError as exc:
        print(exc, file=sys.stderr)
        return 2
    with open(args.result, "w") as out:
        out.write("iteration,start_ns,end_ns\n")
        out.writelines(f"{i},{s},{e}\n" for i, s, e in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
