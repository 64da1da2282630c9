"""What `duet run` leaves behind and tells: processes it started die with it (SIGKILL,
SIGTERM, SIGINT at every stage), a timed-out run does not wait out `kill_grace` once its
sides are gone, binary output of its commands, the `-v` line and the exit status."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from tests.helpers import run_duet

from duetbench.config import loads_config
from duetbench.plan import make_plan
from duetbench.records import RunRecord, SideRecord
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
        sides = {n: SideRecord(n, status="ok", iterations=3) for n in spec.side_names}
        obs.run_started(spec)
        record = RunRecord(spec.run_id, spec.benchmark, spec.method, "ok", sides=sides)
        obs.run_finished(spec, record)
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


# ------------------------------------------------------------- nothing left behind

SPAWNER = """#!/bin/sh
# starts a child that would outlive us, then records both pids and waits
sleep 1000 &
echo $$ > "$1.tmp"
echo $! >> "$1.tmp"
mv "$1.tmp" "$1"
wait
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return ") Z " not in stat


def _lifecycle_config(tmp_path: Path, stage: str, pids: Path) -> Path:
    spawner = tmp_path / "spawn me.sh"  # a space: the commands quote their paths
    spawner.write_text(SPAWNER)
    spawner.chmod(0o755)
    call = f"sh '{spawner}' '{pids}'"
    experiment = {
        "setup": f"setup: {json.dumps(call)}",
        "artifact": f"artifacts: {{probe: {json.dumps(call)}}}",
        "background": f"background: {json.dumps(call)}",
    }[stage]
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment:\n"
        "  name: life\n"
        "  repetitions: {aduet: 1, seqn: 0}\n"
        "  default_artifacts: false\n"
        f"  {experiment}\n"
        "benchmarks:\n"
        "  waits: {command: sleep 120, iterations: 1}\n"
    )
    return cfg


@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name
)
@pytest.mark.parametrize("stage", ["setup", "artifact", "background"])
def test_commands_duet_starts_die_with_it(tmp_path, stage, sig):
    pids_file = tmp_path / "pids"
    cfg = _lifecycle_config(tmp_path, stage, pids_file)
    proc = subprocess.Popen(
        [sys.executable, "-m", "duetbench", "run", str(cfg), "-o", str(tmp_path / "res")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ, COLUMNS="200"),
    )
    try:
        deadline = time.monotonic() + 120
        while not pids_file.exists():
            assert proc.poll() is None, f"duet run ended early: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, f"the {stage} command never started"
            time.sleep(0.05)
        pids = [int(x) for x in pids_file.read_text().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        proc.send_signal(sig)
        rc = proc.wait(timeout=60)  # ends promptly, not after the command's 1000 s
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if sig != signal.SIGKILL:
        assert rc == 130 and "Traceback" not in err, err
    if sig != signal.SIGKILL and stage == "background":  # interrupted among the runs
        # the hint repeats the command as typed, config path included
        hint = shlex.join(["duet", "run", str(cfg), "-o", str(tmp_path / "res"), "--resume"])
        assert f"Continue with: {hint}" in " ".join(err.split()), err
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _alive(p)]
    for p in left:  # do not leave them to the next test
        os.kill(p, signal.SIGKILL)
    assert not left, f"the {stage} command's processes {left} outlived duet run ({sig!r})"


# ------------------------------------------------------------- binary output

BINARY = r"printf 'bin\377\376ary\n'"
BINARY_FAILS = BINARY + r"; printf 'err\377' >&2; exit 3"


def test_binary_and_huge_artifact_output_is_recorded_not_a_crash(tmp_path):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment:\n"
        "  name: art\n"
        "  repetitions: {aduet: 1, seqn: 0}\n"
        "  default_artifacts: false\n"
        "  artifacts:\n"
        f"    binary: {json.dumps(BINARY_FAILS)}\n"
        "    huge: head -c 30000000 /dev/zero\n"
        "benchmarks:\n"
        "  b: {command: 'true', iterations: 1}\n"
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    (host,) = (tmp_path / "res" / "art" / "hosts").glob("*.json")
    arts = json.loads(host.read_text())["artifacts"]
    assert arts["binary"]["exit_code"] == 3
    assert arts["binary"]["stdout"] == "bin\ufffd\ufffdary\n"
    assert arts["binary"]["stderr"] == "err\ufffd"
    assert arts["huge"]["exit_code"] == 0
    assert len(arts["huge"]["stdout"]) < 2_000_000  # kept bounded, the rest counted
    assert "more bytes not kept" in arts["huge"]["stdout"]


def test_binary_setup_output_neither_crashes_nor_hides_the_failure(tmp_path):
    def config(setup: str) -> Path:
        cfg = tmp_path / "duet.yml"
        cfg.write_text(
            "experiment:\n"
            "  name: su\n"
            "  repetitions: {aduet: 1, seqn: 0}\n"
            "  default_artifacts: false\n"
            f"  setup: {json.dumps(setup)}\n"
            "benchmarks:\n"
            "  b: {command: 'true', iterations: 1}\n"
        )
        return cfg

    r = run_duet("run", str(config(BINARY)), "-o", str(tmp_path / "ok"), "--no-compare")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert json.loads((tmp_path / "ok" / "su" / "journal.jsonl").read_text())["status"] == "ok"
    r = run_duet(
        "run", str(config(BINARY + "; echo last words; exit 5")), "-o", str(tmp_path / "bad")
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "exited with 5" in r.stderr and "last words" in r.stderr and "bin\ufffd" in r.stderr


# ------------------------------------------------------------- exit status


def test_run_with_failed_runs_exits_4_keeps_everything_and_says_where_to_look(tmp_path):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment: {name: ex, seed: 1, repetitions: {aduet: 2, seqn: 0}, default_artifacts: false}\n"
        "benchmarks:\n"
        "  fine: {command: 'true', iterations: 3}\n"
        "  breaks: {command: 'sh -c \"exit 3\"', iterations: 3}\n"
    )
    out = tmp_path / "res"
    r = run_duet("run", str(cfg), "-o", str(out))
    err = " ".join(r.stderr.split())
    assert r.returncode == 4, r.stderr
    assert "fine" in r.stdout and "verdict" in r.stdout  # the verdict table is still printed
    assert "2 run(s) did not end well (2 failed" in err
    assert str(out / "ex" / "runs" / "breaks.aduet.000" / "run.json") in err
    journal = (out / "ex" / "journal.jsonl").read_text().splitlines()
    assert len(journal) == 4  # every finished run kept
    # the experiment's state, not only this invocation's: a resume with nothing left says 4
    r = run_duet("run", str(cfg), "-o", str(out), "--resume", "--no-compare")
    assert r.returncode == 4, r.stderr
    # ... for the benchmarks asked for
    r = run_duet("run", str(cfg), "-o", str(out), "--resume", "--no-compare", "--only", "fine")
    assert r.returncode == 0, r.stderr
    # a cluster run reports the same
    r = run_duet(
        "run", str(cfg), "-o", str(tmp_path / "cl"), "--cluster", "local:1", "--no-compare"
    )
    assert r.returncode == 4, r.stderr
    assert "2 run(s) did not end well" in " ".join(r.stderr.split())
