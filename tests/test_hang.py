"""Hang detection (docs/config.md, "Hang detection"): a run whose running sides all stay
below 1 % of a CPU for `hang_timeout` is stopped as `hung`, long before its timeout; a
busy side, or one waiting at the sduet handshake for a busy peer, is never stopped."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.helpers import assert_nothing_left, container_config, pids_with, run_duet, unique

from duetbench.config import loads_config
from duetbench.errors import ConfigError
from duetbench.execute.hang import HangWatch, ProcessTreeCpu, hung_message
from duetbench.plan import make_plan

# ---------------------------------------------------------------- the rule, on given numbers


class FakeCpu:
    def __init__(self) -> None:
        self.value = 0.0

    def cpu_seconds(self) -> float | None:
        return self.value


def _drive(watch: HangWatch, probes: dict[str, FakeCpu], rates: dict[str, float], until: float):
    """Sample once a second from t=0 to ``until``; each probe gains ``rates[pair]`` CPU-s/s."""
    t = 0.0
    while t <= until:
        if watch.due(t):
            idle = watch.check(t, list(rates))
            if idle:
                return t, idle
        t += 0.5
        for pair, rate in rates.items():
            probes[pair].value += rate * 0.5
    return None


def test_idle_side_is_hung_after_the_limit_busy_side_never():
    probes = {"A": FakeCpu()}
    found = _drive(HangWatch(10, probes, 0.0), probes, {"A": 0.001}, 60)
    assert found is not None
    t, idle = found
    assert 10 <= t <= 12 and [i.pair for i in idle] == ["A"]
    assert idle[0].cpu_s < 0.01 * idle[0].window_s
    probes = {"A": FakeCpu()}
    assert _drive(HangWatch(10, probes, 0.0), probes, {"A": 0.05}, 120) is None


def test_a_side_waiting_for_a_busy_peer_is_not_hung_until_the_peer_ends():
    probes = {"A": FakeCpu(), "B": FakeCpu()}
    watch = HangWatch(5, probes, 0.0)
    assert _drive(watch, probes, {"A": 0.0, "B": 1.0}, 40) is None  # B computes, A waits
    # B ends (no longer running): A alone has been idle for far more than the limit
    idle = watch.check(41.0, ["A"])
    assert idle and [i.pair for i in idle] == ["A"] and idle[0].window_s >= 5


def test_a_side_spinning_at_the_handshake_is_not_judged_and_its_deadlocked_peer_is_hung():
    """sduet: A waits for its go spinning (busy, docs/sync.md) while B deadlocked (idle):
    A is left out while the coordinator knows it waits, so B's idling is a hang."""
    probes = {"A": FakeCpu(), "B": FakeCpu()}
    watch = HangWatch(5, probes, 0.0)
    t, found = 0.0, None
    while t <= 30 and found is None:
        found = watch.check(t, ["A", "B"], waiting=["A"])
        probes["A"].value += 1.0 * 0.5  # spinning
        t += 0.5
    assert found is not None and [i.pair for i in found] == ["B"] and 5 <= t <= 7
    # the same without the coordinator's word: A's spinning looks like work, no hang
    probes = {"A": FakeCpu(), "B": FakeCpu()}
    assert _drive(HangWatch(5, probes, 0.0), probes, {"A": 1.0, "B": 0.0}, 30) is None


def test_a_side_whose_cpu_cannot_be_measured_is_never_idle():
    watch = HangWatch(2, {"A": None}, 0.0)
    assert all(watch.check(float(t), ["A"]) is None for t in range(0, 30))


def test_hung_message_says_which_side_how_long_and_how_to_configure():
    probes = {"A": FakeCpu()}
    _, idle = _drive(HangWatch(4, probes, 0.0), probes, {"A": 0.0}, 20)
    msg = hung_message(idle, 4, finished=["B"])
    assert "side A used 0.00 s of CPU in the last 4 s" in msg
    assert "side B had finished" in msg
    assert "hang_timeout: off" in msg and "docs/config.md" in msg


# ---------------------------------------------------------------- measuring a process tree

SPIN = "import time\nwhile time.process_time() < {cpu}: pass\n"


def test_process_tree_cpu_counts_running_and_reaped_descendants():
    # a shell (the root) whose child spins for 0.4 s of CPU and exits (reaped by the shell),
    # then sleeps: the tree's CPU time grows by the child's, then stays
    root = subprocess.Popen(
        ["/bin/sh", "-c", f'"{sys.executable}" -c "$SPIN"; exec sleep 30'],
        env={"SPIN": SPIN.format(cpu=0.4), "PATH": "/usr/bin:/bin"},
    )
    try:
        probe = ProcessTreeCpu(root.pid)
        assert probe.cpu_seconds() == 0.0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any("sleep" in _comm(p) for p in _kids(root.pid)) or _comm(root.pid) == "sleep":
                break
            probe.cpu_seconds()
            time.sleep(0.05)
        used = probe.cpu_seconds()
        assert used is not None and used >= 0.3
        time.sleep(0.5)
        assert probe.cpu_seconds() - used < 0.05  # sleeping: (almost) nothing more
    finally:
        root.kill()
        root.wait()


def test_process_tree_cpu_of_a_process_that_is_gone_cannot_tell():
    # never "0 s of CPU": a side that cannot be measured (ended, no /proc) is never idle
    p = subprocess.Popen(["true"])
    p.wait()
    assert ProcessTreeCpu(p.pid).cpu_seconds() is None


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _kids(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


# ---------------------------------------------------------------- the key in duet.yml


def _hang_of(text: str) -> dict[str, float | None]:
    return {r.benchmark: r.hang_timeout for r in make_plan(loads_config(text))}


def test_hang_timeout_defaults_on_overrides_and_off():
    text = """
experiment: {name: h, repetitions: {aduet: 1, seqn: 0}%s}
defaults: {iterations: 1}
benchmarks:
  plain: {command: "true"}
  own: {command: "true", hang_timeout: 30s}
  idles: {command: "sleep 1", hang_timeout: off}
  quoted_off: {command: "true", hang_timeout: "off"}
"""
    assert _hang_of(text % "") == {"plain": 120.0, "own": 30.0, "idles": None, "quoted_off": None}
    assert _hang_of(text % ", hang_timeout: 5m")["plain"] == 300.0
    assert _hang_of(text % ", hang_timeout: off")["plain"] is None
    assert _hang_of(text % ", hang_timeout: off")["own"] == 30.0


@pytest.mark.parametrize("value", ["true", "-5", "soon", "[1]"])
def test_bad_hang_timeout_says_what_to_write(value):
    with pytest.raises(ConfigError) as exc:
        loads_config(
            f"experiment: {{name: h}}\nbenchmarks:\n  b: {{command: 'true', hang_timeout: {value}}}\n"
        )
    assert "hang_timeout" in str(exc.value)


def test_thesis_format_takes_hang_timeout_too():
    exp = loads_config(
        "duetbench: {name: t, duets: [a], hang_timeout: 10s}\na: {A: {run: 'true'}, hang_timeout: off}\n"
    )
    (bench,) = exp.benchmarks
    assert bench.hang_timeout is None
    exp = loads_config(
        "duetbench: {name: t, duets: [a], hang_timeout: 10s}\na: {A: {run: 'true'}}\n"
    )
    assert exp.benchmarks[0].hang_timeout == 10.0


# ---------------------------------------------------------------- duet run


def test_deadlocked_side_is_stopped_as_hung_and_the_experiment_goes_on(tmp_path):
    token = f"hang-{uuid.uuid4().hex[:8]}"
    fifo = tmp_path / "never written"
    subprocess.run(["mkfifo", str(fifo)], check=True)
    spin = f"python3 -c 'import time\nwhile time.process_time() < {{cpu}}: pass' {token}"
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        json.dumps(
            {
                "experiment": {
                    "name": "hang",
                    "schedule": "sequential",
                    "repetitions": {"seqn": 1, "aduet": 1, "sduet": 0},
                    "timeout": "10m",
                    "hang_timeout": "2s",
                },
                "defaults": {"iterations": 1},
                "benchmarks": {
                    # A deadlocks reading a FIFO nobody writes; B works for 1 CPU-s and ends
                    "stuck": {
                        "A": {"command": f"sh -c 'read x < \"{fifo}\"; echo {token}'"},
                        "B": {"command": spin.format(cpu=1)},
                    },
                    # busy for 3 CPU-s per side: never idle, whatever the machine's speed
                    "busy": {"command": spin.format(cpu=3)},
                    # sduet: A ends its first iteration at once and waits at the handshake
                    # (spinning) while B deadlocks in its first: a hang all the same
                    "stuck-sync": {
                        "iterations": 2,
                        "repetitions": {"seqn": 0, "aduet": 0, "sduet": 1},
                        "A": {"command": "true"},
                        "B": {"command": f"sh -c 'read x < \"{fifo}\"; echo {token}'"},
                    },
                    # sduet: B waits at the handshake while A computes; that is not a hang
                    "uneven": {
                        "iterations": 2,
                        "repetitions": {"seqn": 0, "aduet": 0, "sduet": 1},
                        "A": {"command": spin.format(cpu=2)},
                        "B": {"command": "true"},
                    },
                },
            }
        )
    )
    out = tmp_path / "res"
    r = run_duet("run", str(cfg), "-o", str(out), "--no-compare", timeout=400)
    root = out / "hang"
    journal = [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]
    status = {e["run_id"]: e["status"] for e in journal}
    assert status == {
        "stuck.seqn.000.A": "hung",
        "stuck.seqn.000.B": "ok",
        "stuck.aduet.000": "hung",
        "busy.seqn.000.A": "ok",
        "busy.seqn.000.B": "ok",
        "busy.aduet.000": "ok",
        "stuck-sync.sduet.000": "hung",
        "uneven.sduet.000": "ok",
    }, r.stderr
    assert r.returncode == 4, r.stderr  # finished, with runs that did not end well
    duet = json.loads((root / "runs" / "stuck.aduet.000" / "run.json").read_text())
    assert "side A used" in duet["message"] and "side B had finished" in duet["message"]
    assert "hang_timeout (2 s)" in duet["message"] and "hang_timeout: off" in duet["message"]
    assert duet["sides"]["A"]["status"] == "terminated"
    assert duet["sides"]["B"]["status"] == "ok"
    synced = json.loads((root / "runs" / "stuck-sync.sduet.000" / "run.json").read_text())
    assert "side B used" in synced["message"] and "side A used" not in synced["message"]
    assert "hung" in r.stderr
    deadline = time.monotonic() + 20
    while pids_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_with(token) == []
    # hung runs are finished runs: --resume keeps them (as timeouts), the analysis drops them
    r = run_duet("run", str(cfg), "-o", str(out), "--resume", "--no-compare", timeout=120)
    assert r.returncode == 4, r.stderr  # the experiment still has runs that did not end well
    assert len((root / "journal.jsonl").read_text().splitlines()) == len(journal)
    r = run_duet("process", str(root), "-o", str(tmp_path / "it.csv"))
    assert r.returncode == 0, r.stderr
    assert "hung" in r.stdout + r.stderr


def test_deadlocked_container_side_is_hung_busy_one_is_not(tmp_path, image):  # noqa: F811
    # the container's cgroup is measured: `podman exec` processes are not our descendants
    name = unique("chang")
    cfg = container_config(
        tmp_path,
        name,
        image,
        {
            "stuck": {"A": {"command": "sleep 1000"}, "B": {"command": "true"}},
            "busy": {"command": "i=0; while [ $i -lt 1500000 ]; do i=$((i+1)); done"},
        },
        {"iterations": 1},
        schedule="sequential",
        repetitions={"aduet": 1},
        hang_timeout="2s",
        timeout="10m",
        kill_grace="1s",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare", timeout=400)
    root = tmp_path / "res" / name
    status = {
        e["run_id"]: e["status"]
        for e in map(json.loads, (root / "journal.jsonl").read_text().splitlines())
    }
    assert status == {"stuck.aduet.000": "hung", "busy.aduet.000": "ok"}, r.stderr
    assert r.returncode == 4
    stuck = json.loads((root / "runs" / "stuck.aduet.000" / "run.json").read_text())
    # B (`true`) has usually finished by then; on a busy host its `podman exec` may still be
    # starting, idle too -- either way A is named as idle
    assert "side A used" in stuck["message"], stuck["message"]
    assert "side B had finished" in stuck["message"] or "side B used" in stuck["message"]
    assert_nothing_left(name)
