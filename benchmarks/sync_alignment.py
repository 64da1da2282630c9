"""How closely the synchronous-duet handshake (duetbench.sync) aligns iteration starts.

For each example harness (examples/sync: Python, POSIX sh, busybox sh, C) two sides
run 12 iterations where B does 4x A's work, once with a coordinator (sduet) and once
without (the control), back to back; the script prints |start_A - start_B| per
iteration (median, upper quartile, max) for both and the ratio of the medians. It also
times the handshake itself: a ready/go round trip (Python client, both sides in this
process's threads), a no-op ``wait()`` outside a sduet, and how long a side takes to
fail when no coordinator is left.

These figures depend on the machine's load (a woken side waits for a free CPU), so
the tests judge synchronization by the order of events instead; docs/performance.md
has the figures.

    python benchmarks/sync_alignment.py
    python benchmarks/sync_alignment.py --harnesses python,c --repeat 3
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duetbench.sync as sync
from duetbench.sync import SyncClient, SyncCoordinator, SyncError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "sync"
ITERATIONS = 12


def commands(tmp: Path) -> dict[str, object]:
    """harness name -> make(out, work units) -> argv."""
    out: dict[str, object] = {
        "python": lambda o, w: [
            sys.executable, str(EXAMPLES / "harness.py"), str(o),
            "--iterations", str(ITERATIONS), "--work", str(w * 60_000),
        ],
        "sh": lambda o, w: ["/bin/sh", str(EXAMPLES / "harness.sh"), str(o), str(ITERATIONS), str(w * 2500)],
    }  # fmt: skip
    busybox = shutil.which("busybox")
    if busybox:
        out["busybox-sh"] = lambda o, w: [
            busybox, "sh", str(EXAMPLES / "harness.sh"), str(o), str(ITERATIONS), str(w * 2500),
        ]  # fmt: skip
    if shutil.which("gcc"):
        binary = tmp / "harness-c"
        subprocess.run(
            ["gcc", "-O2", "-I", str(ROOT / "src" / "duetbench" / "sync"), "-o", str(binary),
             str(EXAMPLES / "harness.c")],
            check=True, capture_output=True,
        )  # fmt: skip
        out["c"] = lambda o, w: [str(binary), str(o), str(ITERATIONS), str(w * 5_000_000)]
    return out


def duet(make, tmp: Path, synchronized: bool) -> list[int]:
    """start_B - start_A per iteration, in ns."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DUET_")}
    files = {p: tmp / f"{p}.csv" for p in "AB"}
    for f in files.values():
        f.unlink(missing_ok=True)
    work = {"A": 1, "B": 4}
    coord = SyncCoordinator.create(tmp / "sync") if synchronized else None
    try:
        if coord is not None:
            coord.start()
        procs = {
            p: subprocess.Popen(
                make(files[p], work[p]), env={**base, **(coord.env(p) if coord else {})}
            )
            for p in "AB"
        }
        for p, proc in procs.items():
            if proc.wait() != 0:
                raise RuntimeError(f"side {p} failed")
            if coord is not None:
                coord.side_finished(p)
    finally:
        if coord is not None:
            coord.close()
    starts = {
        p: [int(line.split(",")[1]) for line in f.read_text().splitlines()[1:]]
        for p, f in files.items()
    }
    return [b - a for a, b in zip(starts["A"], starts["B"], strict=True)]


def summary(gaps: list[int]) -> tuple[float, float, float]:
    d = sorted(abs(g) / 1e6 for g in gaps)
    return statistics.median(d), statistics.quantiles(d, n=4, method="inclusive")[2], d[-1]


def round_trip_us(tmp: Path, n: int = 200) -> float:
    """Median ready->go round trip with both sides as threads of this process."""
    times: list[float] = []
    with SyncCoordinator.create(tmp / "rt") as coord:
        clients = {p: SyncClient(coord.directory, p, 30.0) for p in "AB"}

        def side(p: str) -> None:
            for _ in range(n):
                t0 = time.perf_counter()
                clients[p].wait()
                if p == "A":
                    times.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=side, args=(p,)) for p in "AB"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return statistics.median(times) * 1e6


def noop_wait_us(n: int = 10_000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        sync.wait(environ={})
    return (time.perf_counter() - t0) / n * 1e6


def fail_fast_ms(tmp: Path) -> float:
    d = tmp / "stale"
    d.mkdir()
    os.mkfifo(d / "ready")
    os.mkfifo(d / "go.A")
    t0 = time.perf_counter()
    try:
        sync.wait(environ={"DUET_SYNC_DIR": str(d), "DUET_PAIR": "A", "DUET_SYNC_TIMEOUT": "0"})
    except SyncError:
        pass
    return (time.perf_counter() - t0) * 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--harnesses", default="python,sh,busybox-sh,c", help="which (all four)")
    ap.add_argument("--repeat", type=int, default=1, help="sduet/control pairs per harness (1)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="duet-sync-") as d:
        tmp = Path(d)
        makers = commands(tmp)
        print(
            f"# {ITERATIONS} iterations, B 4x A's work; {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}"
        )
        print(
            f"{'harness':>11} {'sduet |gap| ms: median':>23} {'p75':>6} {'max':>6}   "
            f"{'control: median':>15} {'p75':>6} {'max':>6}   {'control/sduet':>13}"
        )
        for name in [h for h in args.harnesses.split(",") if h]:
            if name not in makers:
                print(f"{name:>11} (not installed)")
                continue
            for _ in range(args.repeat):
                s = summary(duet(makers[name], tmp, True))
                c = summary(duet(makers[name], tmp, False))
                print(
                    f"{name:>11} {s[0]:>23.2f} {s[1]:>6.2f} {s[2]:>6.2f}   {c[0]:>15.1f} "
                    f"{c[1]:>6.1f} {c[2]:>6.1f}   {c[0] / max(s[0], 1e-3):>12.0f}x"
                )
                sys.stdout.flush()
        print(
            f"ready/go round trip (threads) {round_trip_us(tmp):.0f} us; no-op wait() "
            f"{noop_wait_us():.2f} us; failing without a coordinator {fail_fast_ms(tmp):.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
