"""The 2x known answer under a busy intruder (issue 15): every method, the built-in and an
external harness, the default placement (`cpus: auto`) and pairing.

A CPU-bound workload whose B does exactly twice A's operations (examples/workloads) runs
while one busy loop, started by the test in the benchmark's own session and killed in a
`finally`, competes for the CPUs for the whole experiment. That is the situation of issue
15: with each side pinned to its own CPU on a 2-CPU host the intruder slowed one side
only, and aduet read 2x as 0.7x ("faster"). What a busy shared host can promise is
asserted -- for seqn and aduet the verdict `slower` and the ratio within 15 % of 2; for
sduet, whose handshake makes iterations of different length meet different
interference (the comment below), no verdict the wrong way -- and the figures are
printed; the 5 % goal in 4 of 5 tries is measured by benchmarks/placement_study.py on a
quiet machine (docs/performance.md, section Placement).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.test_workloads import workload  # noqa: F401  (the fixture: builds the workload)

from duetbench.analysis import compare
from duetbench.config import loads_config
from duetbench.execute.placement import resolve_placement
from duetbench.process import process
from duetbench.schedule.inline import run_experiment

OPS = 60_000_000  # A's operations per iteration (int: ~120 ms on the project's 2-vCPU VM)
#: the intruder: one busy loop, bounded in time even if the finally never ran
INTRUDER = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass\n"


def start_intruder() -> subprocess.Popen[bytes]:
    """A busy loop in this (the benchmark's) session, in its own process group."""
    return subprocess.Popen([sys.executable, "-c", INTRUDER], process_group=0)


def stop_intruder(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


@pytest.mark.timeout(600)
def test_2x_work_measures_2_with_every_method_under_a_busy_intruder(
    tmp_path: Path,
    workload: Path,  # noqa: F811
) -> None:
    text = f"""
experiment:
  name: intruder
  seed: 5
  repetitions: {{seqn: 3, aduet: 3, sduet: 3}}
  timeout: 300s
  default_artifacts: false
defaults:
  iterations: 6
benchmarks:
  builtin:
    A: {{command: {workload} int {OPS}}}
    B: {{command: {workload} int {2 * OPS}}}
  external:
    harness: generic
    self_sync: true
    results: [out.csv]
    A: {{command: {workload} int {OPS} 6 -o out.csv}}
    B: {{command: {workload} int {2 * OPS} 6 -o out.csv}}
"""
    exp = loads_config(text, tmp_path / "duet.yml")
    intruder = start_intruder()
    try:
        summary = run_experiment(exp, tmp_path / "res")
        assert intruder.poll() is None, "the intruder ended before the experiment did"
    finally:
        stop_intruder(intruder)
    assert summary.statuses == {"ok": 2 * (3 * 2 + 3 + 3)}, summary.statuses
    expected = resolve_placement("auto", sorted(os.sched_getaffinity(0))).kind
    for run_json in (summary.root / "runs").glob("*/run.json"):
        assert json.loads(run_json.read_text())["placement"] == expected
    res = compare(process(summary.root).table, test="ratio")
    figures = {
        (row.benchmark, row.method): (1.0 + float(row.change), str(row.verdict), int(row.runs))
        for row in res.itertuples(index=False)
    }
    print(f"\nplacement {expected}; B/A, verdict, runs under a busy intruder:")
    for key, fig in sorted(figures.items()):
        print(f"  {key[0]:8} {key[1]:6} {fig[0]:.3f} {fig[1]} ({fig[2]} runs)")
    assert set(figures) == {
        (b, m) for b in ("builtin", "external") for m in ("seqn", "aduet", "sduet")
    }
    for key, (ratio, verdict, runs) in figures.items():
        assert runs >= 2, (key, figures)
        if key[1] == "sduet":
            # sduet's own limit, not the placement's: in every iteration the shorter side
            # (A) ends first and waits at the handshake, so B's second half runs beside the
            # intruder alone, faster than its first half ran beside A and the intruder.
            # With one intruder on 2 CPUs and A's work taking 1 time unit alone: A runs at
            # 2/3 speed and takes 1.5; B does 1 unit by then and its second unit at full
            # speed: 2.5, so B/A reads 5/3 ~ 1.67, and varies with where the intruder runs
            # (measured here: 1.43-1.77, verdict `slower` or `same`). Never the wrong way:
            assert verdict in ("slower", "same") and ratio > 1.2, (key, figures)
        else:
            assert verdict == "slower", (key, figures)
            assert abs(ratio / 2.0 - 1.0) <= 0.15, (key, figures)
