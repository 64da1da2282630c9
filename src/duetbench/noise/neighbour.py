"""The public class of the package: :class:`NoisyNeighbour` (docs/noise.md, "API").

It validates its arguments, starts the controller process (``controller.py``) in a new
process group of the caller's session, waits for its ``ready`` line, and stops the whole
group (SIGTERM, grace, SIGKILL) on :meth:`~NoisyNeighbour.stop`, at exit or on a signal
(``cleanup.REGISTRY``).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..errors import DuetError, ExecutorError
from ..proctools.groups import group_processes, kill_group
from .bursts import (
    DEFAULT_HORIZON_S,
    DEFAULT_OFF_RANGE,
    DEFAULT_ON_RANGE,
    Burst,
    check_pattern,
    check_range,
    draw_bursts,
)
from .cleanup import REGISTRY
from .controller import LAUNCH_CODE

_POLL_S = 0.05  # how often wait() looks whether the controller has ended
_READY_TIMEOUT_S = 30.0


class NoisyNeighbour:
    """A seeded on/off interference generator running in its own process group.

    ``pattern``: one of :func:`patterns`. ``seed``: seeds the schedule (same seed, same
    schedule). ``cpus``: CPUs to load (default: the CPUs this process may run on);
    a ``cpu`` burst runs one worker per CPU. ``intensity`` in (0, 1]: the CPU load per
    worker (``stress-ng --cpu-load``), or for ``memory`` the share of CPUs that get a
    streaming worker. ``duration``: stop by itself after that many seconds (None: until
    :meth:`stop`). ``backend``: ``auto`` (stress-ng if on PATH), ``stress-ng`` or
    ``python``. ``grace_s``: how long :meth:`stop` waits after SIGTERM before SIGKILL.
    """

    def __init__(
        self,
        pattern: str = "cpu",
        seed: int = 0,
        cpus: Iterable[int] | None = None,
        intensity: float = 1.0,
        *,
        duration: float | None = None,
        on_range: Sequence[float] = DEFAULT_ON_RANGE,
        off_range: Sequence[float] = DEFAULT_OFF_RANGE,
        backend: str = "auto",
        grace_s: float = 2.0,
    ) -> None:
        check_pattern(pattern)
        if not (0.0 < float(intensity) <= 1.0):
            raise DuetError(f"intensity must be in (0, 1], got {intensity!r}")
        if duration is not None and not (float(duration) > 0):
            raise DuetError(f"duration must be a positive number of seconds, got {duration!r}")
        if backend not in ("auto", "stress-ng", "python"):
            raise DuetError(f"backend must be auto, stress-ng or python, got {backend!r}")
        ncpu = os.cpu_count() or 1
        try:
            cpu_list = sorted({int(c) for c in cpus}) if cpus is not None else []
        except (TypeError, ValueError) as exc:
            raise ExecutorError(f"cpus must be CPU numbers in 0..{ncpu - 1}, got {cpus!r}") from exc
        if cpus is None:
            cpu_list = sorted(os.sched_getaffinity(0))
        if not cpu_list or any(not 0 <= c < ncpu for c in cpu_list):
            raise ExecutorError(f"cpus must be CPU numbers in 0..{ncpu - 1}, got {cpus!r}")
        self.pattern = pattern
        self.seed = int(seed)
        self.cpus: tuple[int, ...] = tuple(cpu_list)
        self.intensity = float(intensity)
        self.duration = float(duration) if duration is not None else None
        self.on_range = check_range("on_range", on_range)
        self.off_range = check_range("off_range", off_range)
        self.grace_s = float(grace_s)
        self._stress_ng = shutil.which("stress-ng") if backend != "python" else None
        if backend == "stress-ng" and self._stress_ng is None:
            raise ExecutorError("backend 'stress-ng' asked for, but stress-ng is not on PATH")
        self._proc: subprocess.Popen[bytes] | None = None
        self._pgid: int | None = None
        self._owner_pid = os.getpid()
        self.started_ns: int | None = None

    # -- schedule ---------------------------------------------------------------------

    def iter_bursts(self) -> Iterator[Burst]:
        """The endless burst sequence this neighbour follows (deterministic in the seed)."""
        return draw_bursts(self.pattern, self.seed, self.intensity, self.on_range, self.off_range)

    def bursts(self, horizon_s: float | None = None) -> list[Burst]:
        """Bursts starting before ``horizon_s`` (default: ``duration``, else one hour)."""
        horizon = horizon_s if horizon_s is not None else (self.duration or DEFAULT_HORIZON_S)
        out: list[Burst] = []
        t = 0.0
        for burst in self.iter_bursts():
            if t >= horizon:
                break
            out.append(burst)
            t += burst.on_s + burst.off_s
        return out

    @property
    def schedule(self) -> list[tuple[float, float]]:
        """``(on_s, off_s)`` periods from the seed, covering ``duration`` (or one hour).

        The noise starts with an on period when the neighbour is ready (``started_ns``).
        Quiet has an empty schedule.
        """
        return [(b.on_s, b.off_s) for b in self.bursts()]

    @property
    def backend(self) -> str:
        """``stress-ng`` or ``python``: what generates the load."""
        return "stress-ng" if self._stress_ng else "python"

    # -- lifecycle --------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """PID of the controller process (also the process group id), None when stopped."""
        return self._proc.pid if self._proc is not None else None

    @property
    def pgid(self) -> int | None:
        """The neighbour's process group id (every process of the neighbour is in it)."""
        return self._pgid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def processes(self) -> list[tuple[int, str]]:
        """The live processes of the neighbour: ``(pid, comm)``, controller included."""
        return group_processes(self._pgid) if self._pgid is not None else []

    def start(self) -> NoisyNeighbour:
        """Start the controller and wait until the first burst is running. Returns self."""
        if self._proc is not None:
            raise ExecutorError("this NoisyNeighbour is already started; stop() it first")
        spec = {
            "pattern": self.pattern,
            "seed": self.seed,
            "cpus": list(self.cpus),
            "intensity": self.intensity,
            "duration": self.duration,
            "on_range": list(self.on_range),
            "off_range": list(self.off_range),
            "stress_ng": self._stress_ng,
            "parent_pid": os.getpid(),
            # PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so it
            # is only armed when the main thread starts the neighbour; the controller
            # polls its parent pid in every case.
            "pdeathsig": threading.current_thread() is threading.main_thread(),
        }
        env = dict(os.environ)
        src_root = str(Path(__file__).resolve().parents[2])  # the directory holding duetbench/
        env["PYTHONPATH"] = src_root + (
            os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else ""
        )
        self._owner_pid = os.getpid()
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH_CODE, json.dumps(spec)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            process_group=0,  # own group, same session (sched_autogroup: see module doc)
            start_new_session=False,
        )
        self._proc, self._pgid = proc, proc.pid
        REGISTRY.add(self)
        try:
            line = self._read_status(proc)
        except BaseException:
            self.stop()
            raise
        if not line.startswith("ready"):
            self.stop()
            raise ExecutorError(f"noisy neighbour failed to start: {line or 'no answer'}")
        self.started_ns = int(line.split()[1])
        return self

    def _read_status(self, proc: subprocess.Popen[bytes]) -> str:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + _READY_TIMEOUT_S
        buf = b""
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.2))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                buf += chunk
        proc.stdout.close()
        return buf.decode("utf-8", "replace").strip()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the neighbour to end by itself (``duration``); True if it has ended."""
        proc = self._proc
        if proc is None:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while proc.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        return True

    def stop(self) -> None:
        """Stop every process of the neighbour: SIGTERM to the group, grace, SIGKILL.

        Idempotent; returns when no live process is left in the group.
        """
        proc, pgid = self._proc, self._pgid
        if proc is None or pgid is None:
            return
        if self._owner_pid != os.getpid():  # a forked child does not own the neighbour
            return
        kill_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline:
            proc.poll()
            if proc.returncode is not None and not group_processes(pgid):
                break
            time.sleep(0.01)
        if proc.poll() is None or group_processes(pgid):
            kill_group(pgid, signal.SIGKILL)
            end = time.monotonic() + 2.0
            while (proc.poll() is None or group_processes(pgid)) and time.monotonic() < end:
                time.sleep(0.01)
        if proc.stdout is not None and not proc.stdout.closed:
            proc.stdout.close()
        self._proc = None
        REGISTRY.remove(self)

    def __enter__(self) -> NoisyNeighbour:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running pgid={self._pgid}" if self._proc is not None else "stopped"
        return (
            f"NoisyNeighbour(pattern={self.pattern!r}, seed={self.seed}, cpus={list(self.cpus)}, "
            f"intensity={self.intensity}, backend={self.backend!r}, {state})"
        )
