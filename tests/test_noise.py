"""The noisy neighbour: seeded schedules, cleanup guarantees, and that it really interferes.

Interference is judged by CPU time measured side by side (the neighbour's worker and a
loop pinned to the same core share it about evenly, whatever else loads the machine),
never by how much slower the loop ran: that depends on the machine's other load and is
measured by benchmarks/noise_interference.py. Waits have deadlines that only catch hangs.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from tests.helpers import HANG_S, SETUP_HINT, require_tool

from duetbench.commands import add_command
from duetbench.errors import DuetError
from duetbench.noise import NoisyNeighbour, patterns

BACKENDS = ["stress-ng", "python"]
# the load processes of each backend (a stress-ng test must not pass on the Python
# fallback: its own test is test_failing_stress_ng_falls_back_to_python_workers)
WORKER_NAMES = {
    "stress-ng": ("stress-ng-cpu", "stress-ng-strea"),
    "python": ("duet-noise-cpu", "duet-noise-mem"),
}
SRC = str(Path(__file__).resolve().parents[1] / "src")


# -- independent /proc helpers (not the library's) ---------------------------------------


def _stat(pid: int) -> tuple[str, str, int, int] | None:
    """(comm, state, ppid, pgrp) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1 : text.rindex(")")]
    state, ppid, pgrp = text[text.rindex(")") + 2 :].split()[:3]
    return comm, state, int(ppid), int(pgrp)


def _live(pred: Callable[[tuple[str, str, int, int]], bool]) -> list[tuple[int, str]]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st and st[1] not in ("Z", "X") and pred(st):
                out.append((int(name), st[0]))
    return out


def members(pgid: int) -> list[tuple[int, str]]:
    return _live(lambda st: st[3] == pgid)


def my_children() -> list[tuple[int, str]]:
    me = os.getpid()
    return _live(lambda st: st[2] == me)


def wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return bool(cond())


def kill_leftovers(proc: subprocess.Popen[str] | None, pgid: int | None) -> None:
    """After a failed assertion, do not leave load running on a shared machine."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
    if pgid is not None and members(pgid):
        os.killpg(pgid, signal.SIGKILL)


def has_workers(pgid: int, backend: str = "stress-ng") -> bool:
    """Load processes of ``backend`` run in the group, and none of the other backend."""
    comms = [comm for _, comm in members(pgid)]
    other = "python" if backend == "stress-ng" else "stress-ng"
    assert not any(c.startswith(WORKER_NAMES[other]) for c in comms), (backend, comms)
    return any(c.startswith(WORKER_NAMES[backend]) for c in comms)


def backend_ready(backend: str) -> str:
    """The backend to test; stress-ng missing is a failure with how to install it."""
    if backend == "stress-ng":
        require_tool("stress-ng", f"apt-get install stress-ng ({SETUP_HINT})")
    return backend


def _run_python(code: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


# -- schedules ---------------------------------------------------------------------------


def test_patterns_listed() -> None:
    assert set(patterns()) == {"cpu", "memory", "mixed", "quiet"}


def test_same_seed_same_schedule_different_seed_different() -> None:
    a = NoisyNeighbour("cpu", seed=7).schedule
    b = NoisyNeighbour("cpu", seed=7).schedule
    c = NoisyNeighbour("cpu", seed=8).schedule
    assert a == b
    assert a != c
    assert all(isinstance(p, tuple) and len(p) == 2 for p in a)
    # covers the default horizon (one hour) and no more than one period beyond it
    total = sum(on + off for on, off in a)
    assert total >= 3600 and total - sum(a[-1]) < 3600


def test_schedule_values_follow_ranges() -> None:
    sched = NoisyNeighbour("cpu", seed=1).schedule
    on = [p[0] for p in sched]
    off = [p[1] for p in sched]
    assert min(on) >= 0.5 and max(on) <= 3.0 and min(off) >= 0.5 and max(off) <= 3.0
    # uniform on [0.5, 3]: mean 1.75, sd 0.72; over > 1000 periods the mean is within 0.1
    assert len(on) > 1000
    assert abs(statistics.mean(on) - 1.75) < 0.1 and abs(statistics.mean(off) - 1.75) < 0.1
    assert len(set(on)) > 500  # actually random, not a constant
    custom = NoisyNeighbour("cpu", seed=1, on_range=(2, 2), off_range=(1, 4), duration=30)
    assert {p[0] for p in custom.schedule} == {2.0}
    assert sum(map(sum, custom.schedule[:-1])) < 30 <= sum(map(sum, custom.schedule))


def test_schedule_prefix_stable_and_shared_between_patterns() -> None:
    n = NoisyNeighbour("memory", seed=3)
    assert n.bursts(20) == n.bursts(500)[: len(n.bursts(20))]
    cpu = NoisyNeighbour("cpu", seed=3, duration=60).schedule
    mixed = NoisyNeighbour("mixed", seed=3, duration=60)
    assert mixed.schedule == cpu
    kinds = {b.kind for b in mixed.bursts(300)}
    assert kinds == {"cpu", "memory"}
    assert all(0.5 <= b.load <= 1.0 for b in mixed.bursts(300))
    assert [b.kind for b in mixed.bursts(300)] == [
        b.kind for b in NoisyNeighbour("mixed", seed=3).bursts(300)
    ]
    assert NoisyNeighbour("quiet", seed=3).schedule == []


def test_bad_arguments_are_user_errors() -> None:
    with pytest.raises(DuetError):
        NoisyNeighbour("thunder")
    with pytest.raises(DuetError):
        NoisyNeighbour("cpu", intensity=0)
    with pytest.raises(DuetError):
        NoisyNeighbour("cpu", on_range=(3, 1))
    with pytest.raises(DuetError):
        NoisyNeighbour("cpu", cpus=[os.cpu_count() or 1])


def test_print_schedule_cli() -> None:
    parser = argparse.ArgumentParser(prog="duet")
    add_command(parser.add_subparsers(), "noise")
    args = parser.parse_args(
        ["noise", "--pattern", "mixed", "--seed", "5", "--duration", "20", "--print-schedule"]
    )
    out = io.StringIO()
    with redirect_stdout(out):
        assert args.func(args) == 0
    rows = [line.split(",") for line in out.getvalue().splitlines()[2:]]
    expected = NoisyNeighbour("mixed", seed=5, duration=20).bursts()
    assert [(float(r[2]), float(r[3]), r[4]) for r in rows] == [
        (b.on_s, b.off_s, b.kind) for b in expected
    ]
    assert float(rows[0][1]) == 0.0


# -- lifecycle and cleanup ------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_start_stop_leaves_no_process(backend: str) -> None:
    before = set(my_children())
    n = NoisyNeighbour(
        "cpu", seed=0, cpus=[0], intensity=0.2, backend=backend_ready(backend), on_range=(60, 60)
    )
    n.start()
    try:
        assert n.backend == backend
        pgid = n.pgid
        assert pgid == n.pid and pgid != os.getpgrp()
        assert os.getsid(pgid) == os.getsid(0)  # same session: autogroup (docs/noise.md)
        assert wait_for(lambda: has_workers(pgid, backend), HANG_S), members(pgid)
    finally:
        n.stop()
    assert members(pgid) == []
    assert set(my_children()) <= before
    assert not n.running


def test_context_manager_memory_and_duration() -> None:
    backend = backend_ready("stress-ng")
    with NoisyNeighbour(
        "memory", seed=2, cpus=[0], intensity=0.5, on_range=(60, 60), backend=backend
    ) as n:
        pgid = n.pgid
        assert wait_for(lambda: has_workers(pgid, backend), HANG_S), members(pgid)
    assert members(pgid) == []
    # duration: ends by itself, through an on and an off period
    n = NoisyNeighbour(
        "cpu", seed=2, cpus=[0], intensity=0.2, duration=0.8, on_range=(0.3, 0.3),
        off_range=(0.2, 0.2),
    )  # fmt: skip
    n.start()
    pgid = n.pgid
    assert n.wait(timeout=HANG_S)  # it ends by itself (a hang fails here)
    assert wait_for(lambda: members(pgid) == [], HANG_S)
    n.stop()


@pytest.mark.parametrize("backend", BACKENDS)
def test_controller_sigkill_leaves_nothing(backend: str) -> None:
    n = NoisyNeighbour(
        "cpu", seed=0, cpus=[0], intensity=0.2, backend=backend_ready(backend), on_range=(60, 60)
    )
    n.start()
    pgid = n.pgid
    try:
        assert wait_for(lambda: has_workers(pgid, backend), HANG_S), members(pgid)
        os.kill(n.pid, signal.SIGKILL)  # the load processes' own parent-death signal
        # (the on period lasts a minute: only the death signal can have ended them)
        assert wait_for(lambda: members(pgid) == [], HANG_S), members(pgid)
    finally:
        n.stop()


def test_failing_stress_ng_falls_back_to_python_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "stress-ng"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with NoisyNeighbour("cpu", seed=0, cpus=[0], intensity=0.2, on_range=(60, 60)) as n:
        assert n.backend == "stress-ng"
        pgid = n.pgid
        assert wait_for(lambda: has_workers(pgid, "python"), HANG_S), members(pgid)
    assert members(pgid) == []


_PARENT = """
    import sys, time
    from duetbench.noise import NoisyNeighbour
    n = NoisyNeighbour("cpu", seed=1, cpus=[0], intensity=0.2, backend=sys.argv[1],
                       on_range=(600, 600))
    n.start()
    print(n.pgid, flush=True)
    try:
        time.sleep(3600)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(3)
"""


def _start_parent(backend: str) -> tuple[subprocess.Popen[str], int]:
    code = _PARENT.replace("sys.argv[1]", repr(backend_ready(backend)))
    proc = _run_python(code)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        kill_leftovers(proc, None)
        pytest.fail(f"parent did not start a neighbour: {line!r} {proc.stderr.read()!r}")
    pgid = int(line)
    if not wait_for(lambda: has_workers(pgid, backend), HANG_S):
        kill_leftovers(proc, pgid)
        pytest.fail(f"no load processes in the neighbour's group: {members(pgid)}")
    return proc, pgid


@pytest.mark.parametrize("backend", BACKENDS)
def test_parent_sigkill_leaves_nothing(backend: str) -> None:
    proc, pgid = _start_parent(backend)
    try:
        proc.kill()
        proc.wait()
        assert wait_for(lambda: members(pgid) == [], HANG_S), members(pgid)
    finally:
        kill_leftovers(proc, pgid)


@pytest.mark.parametrize(("sig", "rc"), [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 3)])
def test_parent_signal_stops_neighbour(sig: int, rc: int) -> None:
    proc, pgid = _start_parent("stress-ng")
    try:
        proc.send_signal(sig)
        assert proc.wait(timeout=HANG_S) == rc  # the previous handler still runs (chained)
        # stopped by the handler, before the parent exits
        assert members(pgid) == []
    finally:
        kill_leftovers(proc, pgid)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cli_runs_until_signal_and_cleans_up(sig: int) -> None:
    code = """
        import argparse, sys
        from duetbench.commands import add_command
        p = argparse.ArgumentParser(prog="duet")
        add_command(p.add_subparsers(), "noise")
        a = p.parse_args(["noise", "--pattern", "cpu", "--seed", "4", "--intensity", "0.2",
                          "--cpus", "0", "--on", "600:600"])
        sys.exit(a.func(a))
    """
    proc = _run_python(code)
    pgid = None
    try:
        assert proc.stderr is not None
        header = proc.stderr.readline()
        m = re.search(r"process group (\d+)", header)
        assert m, header
        pgid = int(m.group(1))
        assert wait_for(lambda: has_workers(pgid, backend_ready("stress-ng")), HANG_S)
        proc.send_signal(sig)
        assert proc.wait(timeout=HANG_S) == 0
        assert members(pgid) == []
    finally:
        kill_leftovers(proc, pgid)


# -- interference ---------------------------------------------------------------------


def group_cpu_seconds(pgid: int) -> float:
    """CPU time used so far by the group's live processes and the children they reaped."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid, _ in members(pgid):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / tick


LOOP_CPU_S = 0.5  # the window: until the loop has had this much CPU time


def _affinities(pgid: int) -> set[frozenset[int]]:
    out = set()
    for pid, _ in members(pgid):
        try:
            out.add(frozenset(os.sched_getaffinity(pid)))
        except OSError:  # gone in between
            pass
    return out


def _side_by_side(pattern: str, backend: str) -> dict:
    """A CPU-bound loop and the neighbour on the same core, until the loop had LOOP_CPU_S
    of CPU: the loop's and the neighbour's CPU s, the wall s, the core, the group's
    process names and CPU sets."""
    cpu = max(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    names: set[str] = set()
    cpusets: set[frozenset[int]] = set()
    try:
        with NoisyNeighbour(
            pattern, seed=0, cpus=[cpu], intensity=1.0, backend=backend, on_range=(600, 600)
        ) as n:
            if pattern != "quiet":
                assert wait_for(lambda: has_workers(n.pgid, backend), HANG_S), members(n.pgid)
            c0, t0, w0 = group_cpu_seconds(n.pgid), time.thread_time(), time.monotonic()
            x = 0
            while time.thread_time() - t0 < LOOP_CPU_S:
                for i in range(20_000):
                    x += i
                names |= {comm for _, comm in members(n.pgid)}
                cpusets |= _affinities(n.pgid)
                assert time.monotonic() - w0 < HANG_S, "the loop got no CPU"
            loop, wall = time.thread_time() - t0, time.monotonic() - w0
            neighbour = group_cpu_seconds(n.pgid) - c0
    finally:
        os.sched_setaffinity(0, saved)
    print(
        f"\n{pattern}/{backend}: loop {loop:.2f} s CPU, neighbour {neighbour:.2f} s, {wall:.2f} s wall"
    )
    return dict(loop=loop, neighbour=neighbour, wall=wall, cpu=cpu, names=names, cpusets=cpusets)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cpu_pattern_slows_a_loop_on_the_same_core(backend: str) -> None:
    """The cpu worker runs on the loop's core and takes about half of it: the scheduler
    shares the core between the two (same session, docs/noise.md), whatever else runs."""
    r = _side_by_side("cpu", backend_ready(backend))
    assert r["cpusets"] == {frozenset({r["cpu"]})}  # every process of it on that core
    assert r["neighbour"] > 0.5 * r["loop"], r  # ~1.0 x the loop's


def test_quiet_pattern_does_not_slow() -> None:
    """quiet runs no load: its controller (polling every 50 ms) takes next to nothing of
    the core beside the loop (CPU time is read in 10 ms ticks: 0.1 covers that)."""
    r = _side_by_side("quiet", "python")
    assert r["neighbour"] < 0.1 * r["loop"], r
    assert r["names"] == {"duet-noise"}  # the controller only, never a load process


@pytest.mark.parametrize(("pattern", "backend"), [("quiet", "python"), ("cpu", "stress-ng")])
def test_neighbour_cpu_use_matches_pattern(pattern: str, backend: str) -> None:
    """The loop and the neighbour share one core: together they never get more CPU
    seconds than wall seconds (plus 10 ms ticks on the two reads of each process)."""
    r = _side_by_side(pattern, backend_ready(backend))
    assert r["loop"] + r["neighbour"] <= r["wall"] + 2 * 0.01 * (len(r["names"]) + 1), r
    assert r["cpusets"] == {frozenset({r["cpu"]})}
    if pattern == "quiet":
        assert r["names"] == {"duet-noise"}
