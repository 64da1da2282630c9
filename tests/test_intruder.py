"""The 2x known answer under a busy intruder, the load a shared CI runner has: every method,
the built-in and an external harness, the default placement (`cpus: auto`) and pairing.

A CPU-bound workload whose B does exactly twice A's operations (examples/workloads) runs
while one busy loop, started by the test in the benchmark's own session and killed in a
`finally`, competes for the CPUs for the whole experiment. With wall time the intruder
took one side's CPU more than the other's: aduet once read 2x as 0.7x ("faster"), and
once runs of unequal CPU shares were left out, often all of them were (`no data`). Each iteration's
CPU time is not stretched by the intruder's turns, so every row now compares CPU time,
keeps every run and reads 2x with the verdict `slower` at any load
(docs/statistics.md, "Beside other work: CPU time"); the figures are printed, and the
3 % goal in 9 of 10 tries is measured by benchmarks/busy_machine_study.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.conftest import run_duet

from duetbench.analysis import compare, pair
from duetbench.config import loads_config
from duetbench.execute.placement import resolve_placement
from duetbench.process import process
from duetbench.schedule.inline import run_experiment

# A's operations per iteration (int: ~90 ms on the project's 2-vCPU VM): many scheduler
# time slices per iteration, so the intruder's share averages out within one (60 M cost
# 40 s more of the suite's time; 30 M read an aduet 2x as 1.35 beside other suites)
OPS = 45_000_000
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
  repetitions: {{seqn: 5, aduet: 5, sduet: 5}}
  timeout: 300s
  default_artifacts: false
defaults:
  iterations: 5
benchmarks:
  builtin:
    A: {{command: {workload} int {OPS}}}
    B: {{command: {workload} int {2 * OPS}}}
  external:
    harness: generic
    self_sync: true
    results: [out.csv]
    A: {{command: {workload} int {OPS} 5 -o out.csv}}
    B: {{command: {workload} int {2 * OPS} 5 -o out.csv}}
"""
    exp = loads_config(text, tmp_path / "duet.yml")
    intruder = start_intruder()
    try:
        summary = run_experiment(exp, tmp_path / "res")
        assert intruder.poll() is None, "the intruder ended before the experiment did"
    finally:
        stop_intruder(intruder)
    assert summary.statuses == {"ok": 2 * (5 * 2 + 5 + 5)}, summary.statuses
    expected = resolve_placement("auto", sorted(os.sched_getaffinity(0))).kind
    for run_json in (summary.root / "runs").glob("*/run.json"):
        assert json.loads(run_json.read_text())["placement"] == expected
    rep = process(summary.root)
    table = rep.table
    res = compare(table, test="ratio")
    left_out = int(res["runs_unbalanced"].sum())
    figures = {
        (row.benchmark, row.method): (1.0 + float(row.change), str(row.verdict), int(row.runs))
        for row in res.itertuples(index=False)
    }
    measures = {(r.benchmark, r.method): r.measure for r in res.itertuples(index=False)}
    corr = aduet_slowdown_correlation(table)
    print(f"\nplacement {expected}; B/A, verdict, runs under a busy intruder:")
    for key, fig in sorted(figures.items()):
        print(f"  {key[0]:8} {key[1]:6} {fig[0]:.3f} {fig[1]} ({fig[2]} runs)")
    print(f"  aduet: correlation of paired A and B slowdowns {corr}")
    print(f"  duet runs left out as unbalanced: {left_out} of {2 * 2 * 5}")
    # the intruder time-sliced sides that compute: every row compares CPU time, which the
    # intruder's turns do not stretch, keeps every run and reads 2x (docs/statistics.md,
    # "Beside other work: CPU time"); the built-in harness measures each iteration's
    # process, the external one reports its CPU time per iteration (the generic format)
    assert measures == {k: "cpu" for k in figures}, (measures, figures)
    for key, (ratio, verdict, runs) in figures.items():
        assert runs == 5 and verdict == "slower", (key, figures)
        assert 1.9 < ratio < 2.1, (key, figures)
    # and the interference is named under every verdict: the runs measured the CPU the
    # intruder took (run.json `other_load`), and `duet compare` says CPU time was compared
    shown = run_duet("compare", str(summary.root), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)["rows"]
    assert {(r["benchmark"], r["method"]) for r in rows} == {
        (b, m) for b in ("builtin", "external") for m in ("seqn", "aduet", "sduet")
    }
    for row in rows:
        assert "cpu_time" in row["warnings"] and "unbalanced" not in row["warnings"], row
        assert row["measure"] == "cpu" and row["runs"] == 5, row
    # the duet's premise under the intruder: it slows A and B together. Pinned on 2 CPUs
    # it shared a CPU with one side only and the slowdowns anti-correlated (measured:
    # -0.47 to -0.99; aduet then read 2x as 0.7x). With 5 runs the correlation itself is
    # too noisy to assert (shared placement gave -0.16 to +0.17 on a quiet 2-CPU host);
    # it is printed here and measured by benchmarks/placement_study.py; what must hold is
    # that the anti-correlated failure, a 2x read as faster or barely slower, is gone.
    # sduet: in every iteration the shorter side (A) ends first and waits at the
    # handshake. Asleep, it would leave B's second half beside the intruder alone (B/A
    # ~ 5/3); it spins by default (docs/sync.md, "Waiting: fill, spin or block"), but three
    # busy processes on 2 unpinned CPUs are not shared evenly either, so sduet still
    # read 1.56-2.08 here (docs/performance.md, "sduet with iterations of different
    # length"). On a machine with only the intruder,
    # seqn and aduet measured 1.91-2.12 with the verdict `slower`; with several other
    # test suites running besides, 1.58-2.31 and sometimes `same` (5 runs).


def aduet_slowdown_correlation(table: pd.DataFrame) -> dict[str, float]:
    """Per benchmark, the mean over aduet runs of the correlation of paired A and B
    slowdowns (each iteration's duration over its side's median in the run)."""
    p = pair(table)
    out = {}
    for bench, g in p[p["method"] == "aduet"].groupby("benchmark", observed=True):
        rs = []
        for _run, h in g.groupby("run", observed=True):
            a, b = h["a_ns"] / h["a_ns"].median(), h["b_ns"] / h["b_ns"].median()
            if len(h) >= 3 and a.std() > 0 and b.std() > 0:
                rs.append(float(np.corrcoef(a, b)[0, 1]))
        out[str(bench)] = float(np.mean(rs)) if rs else float("nan")
    return out
