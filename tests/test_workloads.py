"""The known-answer workloads of examples/workloads: their CSV, build, arguments and sduet.

How their time scales with the operation count is measured by
benchmarks/workload_scaling.py (a speed, not a property to assert on a shared machine).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from tests.helpers import HANG_S, SETUP_HINT, require_tool

SRC_DIR = Path(__file__).resolve().parents[1] / "examples" / "workloads"

# ~30 ms per iteration on the project's 2-vCPU machine (README.md gives the ~150 ms counts)
OPS = {"int": 15_000_000, "float": 11_000_000, "linear": 12_000_000, "random": 200_000}


def run_csv(exe: Path, kind: str, ops: int, iterations: int, out: Path) -> list[dict[str, int]]:
    subprocess.run(
        [str(exe), kind, str(ops), str(iterations), "-o", str(out)], check=True, capture_output=True
    )
    return run_rows(out)


def run_rows(path: Path) -> list[dict[str, int]]:
    with path.open(newline="") as fh:
        return [{k: int(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def durations(rows: list[dict[str, int]]) -> list[int]:
    return [r["end_ns"] - r["start_ns"] for r in rows]


# That the time is proportional to OPS (2x the operations, 2x the time; +5 %, +5 % CPU
# time; whole commands too) is a measurement of this machine, not a property a test can
# check on a shared one: benchmarks/workload_scaling.py measures it side by side
# (figures in docs/performance.md). The tests check what holds at any speed.


def test_csv_rows_and_timestamps(workload: Path, tmp_path: Path) -> None:
    out = tmp_path / "it.csv"
    before = time.time_ns()
    rows = run_csv(workload, "int", 1_000_000, 7, out)
    after = time.time_ns()
    # each iteration's CPU time and run-queue delay too (docs/parsers.md, the generic format)
    assert out.read_text().splitlines()[0] == "iteration,start_ns,end_ns,cpu_ns,runq_ns"
    assert [r["iteration"] for r in rows] == list(range(7))
    for r in rows:  # CLOCK_REALTIME, inside the process's lifetime
        assert before <= r["start_ns"] < r["end_ns"] <= after
        # a CPU-bound loop: its CPU time is positive and not beyond its wall time plus the
        # clock's granularity; the run delay is never negative
        assert 0 < r["cpu_ns"] <= r["end_ns"] - r["start_ns"] + 10_000_000
        assert r["runq_ns"] >= 0
    for prev, nxt in zip(rows, rows[1:], strict=False):
        assert prev["end_ns"] <= nxt["start_ns"]


def test_setup_is_outside_the_timed_iterations(workload: Path, tmp_path: Path) -> None:
    """Iterations of 0 operations around the 64 MiB setup of `random`: if the setup were
    timed, the first iteration would hold most of the process's life."""
    t0 = time.perf_counter_ns()
    rows = run_csv(workload, "random", 0, 3, tmp_path / "r.csv")
    wall = time.perf_counter_ns() - t0
    assert len(rows) == 3
    assert sum(durations(rows)) < 0.5 * wall  # (a few clock reads against the setup)


def test_once_mode_without_output_file(workload: Path, tmp_path: Path) -> None:
    def once(kind: str, ops: int) -> str:
        res = subprocess.run(
            [str(workload), kind, str(ops)],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
        )
        return res.stdout

    out1 = once("float", 1000)
    assert "checksum=" in out1 and "iterations=1" in out1
    assert once("float", 1000) == out1  # deterministic
    assert once("float", 1001) != out1  # the result depends on the work done
    assert list(tmp_path.iterdir()) == []  # no CSV without -o


@pytest.mark.parametrize(
    "args", [[], ["int"], ["bogus", "10"], ["int", "ten"], ["int", "-5"], ["int", "10", "-o"]]
)
def test_bad_arguments_exit_2(workload: Path, args: list[str]) -> None:
    res = subprocess.run([str(workload), *args], capture_output=True, text=True)
    assert res.returncode == 2
    assert "usage" in res.stderr or "workload:" in res.stderr


def test_makefile_builds_with_gcc_O2(tmp_path: Path) -> None:
    require_tool("make", f"apt-get install make ({SETUP_HINT})")
    for name in ("workload.c", "Makefile"):
        shutil.copy(SRC_DIR / name, tmp_path / name)
    res = subprocess.run(["make", "-C", str(tmp_path)], check=True, capture_output=True, text=True)
    assert "gcc" in res.stdout and "-O2" in res.stdout
    assert (tmp_path / "workload").is_file()


def test_sduet_iterations_start_together(workload: Path, tmp_path: Path) -> None:
    """Built with duet_sync.h, iteration k of A and B start at the same go."""
    from duetbench.sync import SyncCoordinator

    ops, n = OPS["int"] // 3, 6  # A ~10 ms, B ~20 ms per iteration
    procs = {}
    with SyncCoordinator.create(tmp_path / "sync") as coord:
        for pair, factor in (("A", 1), ("B", 2)):
            env = {**os.environ, **coord.env(pair), "DUET_SYNC_TIMEOUT": str(HANG_S)}
            cmd = [str(workload), "int", str(factor * ops), str(n), "-o", str(tmp_path / pair)]
            procs[pair] = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        for pair, proc in procs.items():
            assert proc.wait(timeout=HANG_S) == 0
            coord.side_finished(pair)
        gos = coord.go_times_ns
    rows = {p: run_rows(tmp_path / p) for p in procs}
    a, b = rows["A"], rows["B"]
    assert len(gos) == n and len(a) == len(b) == n
    for k in range(n):  # each side starts iteration k after go k and before go k+1
        assert gos[k] <= a[k]["start_ns"] and gos[k] <= b[k]["start_ns"]
        if k + 1 < n:
            assert a[k]["start_ns"] < gos[k + 1] and b[k]["start_ns"] < gos[k + 1]
            # A (half B's work) waits for B: no iteration starts before both ended the last
            assert a[k + 1]["start_ns"] >= b[k]["end_ns"]
            assert b[k + 1]["start_ns"] >= a[k]["end_ns"]
