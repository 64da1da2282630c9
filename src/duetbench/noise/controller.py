"""The controller process of a noisy neighbour: it runs the bursts of one neighbour.

:meth:`duetbench.noise.NoisyNeighbour.start` starts it as
``python -c "...; sys.exit(main(sys.argv[1:]))" SPEC_JSON`` (:data:`LAUNCH_CODE`) in a
new process group of the caller's session; it leads that group. For each on period it
starts the load processes (stress-ng, or the Python workers of :data:`_WORKER_CODE`),
which stay in its group, and ends them when the period ends. It prints one line,
``ready <epoch ns>``, once the first burst runs (or ``error: ...``). It stops on
SIGTERM/SIGINT/SIGHUP, on its parent's death (``PR_SET_PDEATHSIG``) and when its
parent changes (polled every 50 ms); docs/noise.md, "Processes and cleanup guarantees".
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from ..proctools.groups import PR_SET_NAME, PR_SET_PDEATHSIG, group_processes, libc, prctl
from .bursts import Burst, draw_bursts

#: what the parent runs with ``python -c``; the spec (JSON) is the first argument
LAUNCH_CODE = (
    "import sys; from duetbench.noise.controller import main; sys.exit(main(sys.argv[1:]))"
)
_POLL_S = 0.05  # how often the controller checks its parent, its load and the clock
_BURST_GRACE_S = 0.1


_WORKER_CODE = r"""
import ctypes, sys, time
libc = ctypes.CDLL(None)
libc.prctl(15, sys.argv[1].encode(), 0, 0, 0)
kind, load = sys.argv[2], float(sys.argv[3])
slice_s = 0.05
busy_s = slice_s * load
if kind == "memory":
    n = 64 << 20
    src = memoryview(bytearray(b"\x5a" * n))
    dst = memoryview(bytearray(n))
    while True:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < busy_s:
            dst[:] = src
            src, dst = dst, src
        if load < 1.0:
            time.sleep(slice_s - busy_s)
else:
    x = 1
    while True:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < busy_s:
            for _ in range(2000):
                x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        if load < 1.0:
            time.sleep(slice_s - busy_s)
"""


class _Controller:
    """Runs the bursts of one neighbour; lives in (and leads) the neighbour's process group."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.cpus: list[int] = list(spec["cpus"])
        self.stress_ng: str | None = spec["stress_ng"]
        self.parent_pid = int(spec["parent_pid"])
        self.stopping = False
        self.children: list[subprocess.Popen[bytes]] = []
        self.current: Burst | None = None
        self.libc = libc()

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def orphaned(self) -> bool:
        return os.getppid() != self.parent_pid

    def _preexec(self, deathsig: int) -> Callable[[], None]:
        libc, me = self.libc, os.getpid()

        def preexec() -> None:  # runs in the forked child; the controller is single-threaded
            prctl(libc, PR_SET_PDEATHSIG, deathsig)
            if os.getppid() != me:
                os._exit(1)

        return preexec

    def spawn(self, burst: Burst) -> None:
        n = len(self.cpus)
        if self.stress_ng:
            timeout = f"{math.ceil(burst.on_s) + 5}s"  # a backstop; the controller stops it first
            if burst.kind == "cpu":
                pct = min(100, max(1, round(burst.load * 100)))
                args = ["--cpu", str(n), "--cpu-load", str(pct), "--cpu-method", "int64"]
            else:
                args = ["--stream", str(max(1, round(burst.load * n)))]
            cmd = [self.stress_ng, *args, "--timeout", timeout, "--quiet"]
            deathsig = signal.SIGTERM  # stress-ng stops its own workers on SIGTERM
        else:
            cmd = []
            deathsig = signal.SIGKILL
        if cmd:
            self.children.append(self._popen(cmd, deathsig))
            return
        workers = n if burst.kind == "cpu" else max(1, round(burst.load * n))
        load = burst.load if burst.kind == "cpu" else 1.0
        name = "duet-noise-cpu" if burst.kind == "cpu" else "duet-noise-mem"
        for _ in range(workers):
            cmd = [sys.executable, "-S", "-E", "-c", _WORKER_CODE, name, burst.kind, str(load)]
            self.children.append(self._popen(cmd, deathsig))

    def _popen(self, cmd: list[str], deathsig: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            preexec_fn=self._preexec(deathsig),
        )

    def check_children(self) -> None:
        """If stress-ng failed (exited non-zero), switch to the Python workers for good."""
        if self.stress_ng and self.children and self.current is not None:
            codes = [c.poll() for c in self.children]
            if all(code is not None and code != 0 for code in codes):
                self.stress_ng = None
                self.children = []
                self.spawn(self.current)

    def kill_children(self) -> None:
        """End the current burst: SIGTERM, a short grace, then SIGKILL the whole group.

        The grace is short because the off period starts now: stress-ng's stream workers
        finish a whole pass over their buffers (~0.6 s here) before honouring SIGTERM.
        """
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + _BURST_GRACE_S
        while time.monotonic() < deadline and self.others():
            time.sleep(0.005)
        self.sweep(signal.SIGKILL)
        for child in self.children:
            try:
                child.wait(timeout=1.0)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
                pass
        self.children = []

    def others(self) -> list[int]:
        """Live processes of our group other than the controller itself."""
        me = os.getpid()
        if os.getpgrp() != me:
            return [c.pid for c in self.children if c.poll() is None]
        return [pid for pid, _ in group_processes(me) if pid != me]

    def sweep(self, sig: int) -> None:
        """Signal whatever else is left in our process group (stress-ng workers)."""
        for pid in self.others():
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def sleep_until(self, t: float) -> bool:
        """Sleep until monotonic time ``t``; False when asked to stop or orphaned."""
        while True:
            if self.stopping or self.orphaned():
                return False
            self.check_children()
            remaining = t - time.monotonic()
            if remaining <= 0:
                return True
            time.sleep(min(_POLL_S, remaining))

    def run(self) -> int:
        spec = self.spec
        t = time.monotonic()
        end = t + spec["duration"] if spec["duration"] is not None else math.inf
        bursts = draw_bursts(
            spec["pattern"], spec["seed"], spec["intensity"], spec["on_range"], spec["off_range"]
        )
        try:
            if spec["pattern"] == "quiet":
                _announce_ready()
                self.sleep_until(end)
                return 0
            for i, burst in enumerate(bursts):
                self.current = burst
                self.spawn(burst)
                if i == 0:
                    _announce_ready()
                # planned times accumulate from t0, so the schedule never drifts
                on_end, off_end = t + burst.on_s, t + burst.on_s + burst.off_s
                ok = self.sleep_until(min(on_end, end))
                self.current = None
                self.kill_children()
                if not ok or on_end >= end:
                    break
                if not self.sleep_until(min(off_end, end)) or off_end >= end:
                    break
                t = off_end
        finally:
            self.current = None
            self.kill_children()
            self.sweep(signal.SIGKILL)
        return 0


def _announce_ready() -> None:
    os.write(1, f"ready {time.time_ns()}\n".encode())
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the parent reads one line only; never block on a full pipe
    os.close(devnull)


def main(argv: Sequence[str]) -> int:
    """Entry point of the controller process: ``argv[0]`` is the spec as JSON."""
    spec = json.loads(argv[0])
    ctl = _Controller(spec)
    prctl(ctl.libc, PR_SET_NAME, b"duet-noise")
    if spec.get("pdeathsig"):
        prctl(ctl.libc, PR_SET_PDEATHSIG, signal.SIGTERM)
    if ctl.orphaned():  # the parent died before the death signal was armed
        return 0
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, ctl.on_signal)
    try:
        os.sched_setaffinity(0, ctl.cpus)  # inherited by every load process
    except OSError as exc:
        os.write(1, f"error: cannot run on CPUs {ctl.cpus}: {exc}\n".encode())
        return 1
    return ctl.run()
