"""What `duet run` leaves behind and tells: processes it started die with it (SIGKILL,
SIGTERM, SIGINT at every stage), a timed-out run does not wait out `kill_grace` once its
sides are gone, binary output of its commands, the `-v` line and the exit status."""

from __future__ import annotations

import io
import json
import time

from rich.console import Console
from tests.conftest import run_duet

from duetbench.config import loads_config
from duetbench.plan import make_plan
from duetbench.report.progress import RichObserver


def _plan(text: str):
    return make_plan(loads_config(text))


def test_verbose_line_names_iterations_once():
    plan = _plan(
        """
experiment: {name: v, repetitions: {aduet: 1, seqn: 0}}
benchmarks:
  b: {command: "true", iterations: 3}
  g: {command: "true", harness: generic, results: [out.csv]}
"""
    )
    buf = io.StringIO()
    obs = RichObserver(Console(file=buf, width=200, force_terminal=False), verbose=True)
    by_bench = {s.benchmark: s for s in plan}
    for spec in by_bench.values():
        sides = {p: {"iterations": 3} for p in spec.pairs}
        obs.run_started(spec)
        obs.run_finished(spec, {"status": "ok", "sides": sides, "message": ""})
    lines = [line for line in buf.getvalue().splitlines() if line.strip()]
    builtin = next(line for line in lines if "b.aduet.000" in line)
    external = next(line for line in lines if "g.aduet.000" in line)
    assert "iterations 3/3" in builtin and builtin.count("iterations") == 1, builtin
    assert "harness generic" in external and "iterations" not in external, external


def test_timed_out_run_does_not_wait_out_kill_grace_once_its_sides_are_gone(tmp_path):
    # `sleep` exits at once on SIGTERM: the run must end right after the timeout, not
    # after the 60 s grace meant for commands that ignore SIGTERM
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment: {name: g, repetitions: {aduet: 1, seqn: 0}, kill_grace: 60s}\n"
        "benchmarks:\n"
        "  sleeps: {command: sleep 300, timeout: 1s, iterations: 1}\n"
    )
    t0 = time.monotonic()
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare", timeout=180)
    elapsed = time.monotonic() - t0
    run = json.loads(
        (tmp_path / "res" / "g" / "runs" / "sleeps.aduet.000" / "run.json").read_text()
    )
    assert run["status"] == "timeout", r.stderr
    assert elapsed < 45, f"the run waited {elapsed:.0f} s: the 60 s kill_grace was waited out"
