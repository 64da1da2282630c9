"""A run's samples of one callable, as duet micro's worker and the pytest plugin's sides
take them (docs/micro.md): the handshake of a synchronous duet before each sample, the
CPU swap, and around each sample its wall time, the process's CPU time and this thread's
run delay, one row of ``micro-samples.csv`` each, flushed as written.

Loaded by the worker (``worker.py``) from its own directory, like its other helpers:
standard library only, Python >= 3.8. The sibling helpers it uses (calibration,
discovery, handshake, cpuswap) come in as ``h``/``helpers``: the worker's
``_load_helpers()``.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import sys
import time
from types import SimpleNamespace
from typing import Any

FORMAT_VERSION = 1
SAMPLES_FILE = "micro-samples.csv"
META_FILE = "micro-meta.json"
COLUMNS = ("sample", "phase", "start_ns", "end_ns", "total_ns", "evaluations", "cpu_ns", "runq_ns")
#: the columns of a file of both sides (method inproc)
PAIRED_COLUMNS = COLUMNS + ("side",)
DEFAULT_SAMPLES = 100
DEFAULT_WARMUP = 1


class Timeout(Exception):
    """A step ran longer than the benchmark's timeout."""


def python_info() -> dict[str, Any]:
    clock = time.get_clock_info("perf_counter")
    return {
        "executable": sys.executable,
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "perf_counter": {"implementation": clock.implementation, "resolution": clock.resolution},
    }


def write_json(directory: str, name: str, doc: dict[str, Any]) -> None:
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


class Alarm:
    """``with Alarm(seconds):`` raises :class:`Timeout` in the block after ``seconds``."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds if seconds and hasattr(signal, "setitimer") else None

    def __enter__(self) -> None:
        if self.seconds is not None:
            signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _fire(self, signum: int, frame: Any) -> None:
        raise Timeout(f"took longer than the benchmark's timeout of {self.seconds:g} s")


class CpuClock:
    """The process's CPU time and this thread's scheduler run delay, read around a sample
    (outside its timed part). The run delay comes from ``/proc/thread-self/schedstat``,
    kept open and re-read with ``pread`` (about 1 us); None where it does not exist."""

    def __init__(self) -> None:
        self.fd: int | None = None
        try:
            self.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except (OSError, AttributeError):
            self.fd = None

    def read(self) -> tuple[int, int | None]:
        """(CPU ns of the process, run delay ns of this thread or None)."""
        delay = None
        if self.fd is not None:
            try:
                delay = int(os.pread(self.fd, 128, 0).split()[1])
            except (OSError, ValueError, IndexError):
                delay = None
        return time.process_time_ns(), delay

    @staticmethod
    def spent(before: tuple[int, int | None], after: tuple[int, int | None]) -> tuple[int, Any]:
        """(CPU ns, run delay ns or None) between two reads."""
        delay = None
        if before[1] is not None and after[1] is not None:
            delay = max(0, after[1] - before[1])
        return max(0, after[0] - before[0]), delay

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Samples:
    """micro-samples.csv, one row per sample, flushed per row (``paired``: with the side)."""

    def __init__(self, directory: str, paired: bool = False) -> None:
        self.directory = directory
        self.file = open(os.path.join(directory, SAMPLES_FILE), "w", encoding="utf-8", buffering=1)
        self.file.write(",".join(PAIRED_COLUMNS if paired else COLUMNS) + "\n")
        self.index: dict[str, int] = {}

    def row(
        self,
        phase: str,
        start_ns: int,
        total_ns: int,
        evaluations: int,
        side: str = "",
        spent: tuple[int, Any] | None = None,
    ) -> None:
        end_ns = start_ns + total_ns
        index = self.index.get(side, 0)
        self.index[side] = index + 1
        cpu, delay = spent if spent is not None else ("", None)
        text = f"{index},{phase},{start_ns},{end_ns},{total_ns},{evaluations},{cpu},"
        text += "" if delay is None else str(delay)
        self.file.write(text + (f",{side}\n" if side else "\n"))

    def close(self) -> None:
        self.file.close()


class Filler:
    """The benchmark's own calls while a side of a synchronous duet waits for its go
    (``DUET_SYNC_WAIT=fill``, the default; docs/sync.md, "Waiting: fill, spin or block").

    The shorter side of a sduet waits at every handshake while the longer one finishes.
    Code that waited in anything else (a poll loop, a sleep, a C loop) ran its next sample
    slower than code that ran on: on the project's VM the shorter side of a known 2x
    read 8.0-8.4 ms a sample against 7.3-7.8 ms when it ran its own calls while waiting,
    and the ratio read 4-8 % low (docs/measurements/sduet-fill.md). So while the wait is
    expected to last, the side runs the benchmark's own calls, untimed (with the
    ``prepare`` of a setup, where there is one) and the GC as the user left it.

    The expected wait is the median of the last :attr:`MEMORY` waits -- one long wait (the
    other side preempted once) does not start the filling. A wait is known exactly when
    it ended in polling; when the go came during a call, it ended somewhere in that call,
    and the expectation is kept where it fits there (moved to the call's nearer end where
    not). Only a wait expected to last at least half of this side's sample is filled:
    sides that take about as long never fill (their waits are jitter, and a call run into
    one would make the other side wait in turn), nor does the overrun of the other side's
    last call start this side's filling. A call starts only while it should end within a
    quarter of a call after the expected go: a side runs on at most about one call into
    the other's next sample. After
    :attr:`PROBE` waits in a row that ended during a call, one wait is polled to measure
    it exactly (a wait that shrank is seen). A call that raises ends the filling for the
    run (``error``); the samples go on."""

    MEMORY = 5
    PROBE = 8

    def __init__(self, fn: Any, prepare: Any = None, clock: Any = time.perf_counter_ns) -> None:
        self.fn, self.prepare, self.clock = fn, prepare, clock
        self.call_ns = 0  # one call's duration; 0 until a sample was taken
        self.sample_ns = 0  # this side's last sample
        self.waits: list[int] = []  # the last MEMORY waits, oldest first
        self.expected_ns = 0  # how long the next wait should last
        self.calls = 0
        self.error: str | None = None
        self.start = 0
        self.last: tuple[int, int] | None = None  # the last call, ns since arm()
        self.declined = False
        self.inexact = 0  # waits in a row that ended during a call

    def arm(self, sample_ns: int | None = None, evaluations: int = 1) -> None:
        """Before a handshake; ``sample_ns``: the sample just taken (``evaluations`` calls)."""
        if sample_ns is not None:
            self.sample_ns = sample_ns
            self.call_ns = max(1, sample_ns // max(1, evaluations))
        self.start, self.last, self.declined = self.clock(), None, False

    def __call__(self) -> bool:
        now = self.clock()
        waited = now - self.start
        if (
            self.error is not None
            or not self.call_ns
            or self.inexact >= self.PROBE
            or 2 * self.expected_ns < self.sample_ns
            or waited + self.call_ns > self.expected_ns + self.call_ns // 4
        ):
            self.declined = True
            return False
        try:
            (self.prepare() if self.prepare is not None else self.fn)()
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"[:300]
            self.declined = True
            return False
        self.last = (waited, self.clock() - self.start)
        self.calls += 1
        return True

    def settle(self) -> None:
        """After the go: learn how long this wait lasted."""
        waited = self.clock() - self.start
        if self.last is not None and not self.declined:
            # the go came during the last call: keep the expectation if it fits there
            waited = min(max(self.expected_ns, self.last[0]), self.last[1])
            self.inexact += 1
        else:
            self.inexact = 0
        self.waits = [*self.waits[1 - self.MEMORY :], waited]
        self.expected_ns = sorted(self.waits)[len(self.waits) // 2]

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "error": self.error}


def sample_loop(
    args: Any,
    h: dict[str, Any],
    samples: Samples,
    fn: Any,
    evaluations: int,
    timeout: float | None,
    handshake: Any,
    swap: Any = None,
    prepare: Any = None,
    meta: dict[str, Any] | None = None,
) -> None:
    """``prepare``: called before each sample (before its handshake, untimed), returns the
    callable that sample times (pytest-benchmark's ``pedantic(setup=...)``). ``meta``:
    micro-meta.json's document, written again at the end with the CPU swap's moves
    (``cpu_swap``) and the calls run while waiting (``fill``, :class:`Filler`)."""
    cpu_clock = CpuClock()
    filler = Filler(fn, prepare) if handshake is not None and handshake.fill else None
    elapsed: int | None = None
    try:
        time_sample = h["calibration"].time_sample
        failure = h["discovery"].UserCodeFailure
        limit = args.samples if args.samples is not None or args.budget else DEFAULT_SAMPLES
        budget_ns = None if args.budget is None else round(args.budget * 1e9)
        disable_gc = not args.keep_gc
        clock = time.perf_counter_ns
        begin = None
        measured = warmed = 0
        while True:
            warmup = warmed < args.warmup
            if not warmup:
                if limit is not None and measured >= limit:
                    break
                if budget_ns is not None and begin is not None and clock() - begin >= budget_ns:
                    break
            timed = fn
            if prepare is not None:
                try:
                    with Alarm(timeout):
                        timed = prepare()
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    raise failure("setup", exc) from exc
            if filler is not None:
                filler.arm(elapsed, evaluations)
                handshake.wait(filler)
                filler.settle()
            elif handshake is not None:
                handshake.wait()
            if swap is not None:  # after the go: both sides of a sduet cross a period together
                swap.place()
            if not warmup and begin is None:
                begin = clock()
            start = time.time_ns()
            before = cpu_clock.read()
            try:
                with Alarm(timeout):
                    elapsed = time_sample(timed, evaluations, clock, disable_gc)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise failure("sample", exc) from exc
            spent = cpu_clock.spent(before, cpu_clock.read())
            samples.row("warmup" if warmup else "sample", start, elapsed, evaluations, spent=spent)
            if warmup:
                warmed += 1
            else:
                measured += 1
    finally:
        cpu_clock.close()
        if meta is not None and (swap is not None or filler is not None):
            if swap is not None:
                meta["cpu_swap"] = swap.to_json()
            if filler is not None:
                meta["fill"] = filler.to_json()
            write_json(samples.directory, META_FILE, meta)


def sample_callable(
    h: dict[str, Any],
    fn: Any,
    evaluations: int,
    output: str,
    meta: dict[str, Any],
    *,
    samples: int | None = None,
    budget_s: float | None = None,
    warmup: int = DEFAULT_WARMUP,
    keep_gc: bool = False,
    timeout: float | None = None,
    swap_every: float = 0.0,
    prepare: Any = None,
    environ: Any = None,
    swap: Any = None,
    last: bool = True,
) -> None:
    """One run's samples of ``fn`` (``evaluations`` calls each) into ``output``, exactly as
    the worker takes them -- the handshake of a synchronous duet and the CPU swap from
    ``environ`` (default ``os.environ``), the CPU time and run delay of every sample --
    for code that times a callable in its own process (duetbench's pytest plugin).

    ``meta``: the benchmark's part of micro-meta.json (``side``, ``target``, ``benchmark``,
    ``calibration``); the interpreter and the sampling settings are added here. Raises
    the worker's ``UserCodeFailure`` (``h["discovery"]``) when ``fn`` or
    ``prepare`` raises, after telling the coordinator ``done``. ``h``: the worker's helpers.

    A process that samples several callables one after the other (a pytest session of
    many benchmark tests) passes ``last=False`` (do not say ``done``) and one ``swap``
    (:func:`cpu_swap`) to all of them, and says ``done`` after its last
    (:func:`say_done`): a side that said ``done`` takes no more samples in lockstep.
    """
    env = os.environ if environ is None else environ
    handshake = h["handshake"].Handshake.from_env(env)
    if swap is None:
        swap = h["cpuswap"].CpuSwap.from_env(env, swap_every)
    total = samples if samples is not None or budget_s else DEFAULT_SAMPLES
    info = {"format": FORMAT_VERSION, **meta, "python": python_info()}
    info.update(gc_disabled=not keep_gc, warmup=warmup, samples=total, budget_s=budget_s)
    info.update(pid=os.getpid(), handshake=handshake is not None, start_ns=time.time_ns())
    os.makedirs(output, exist_ok=True)
    write_json(output, META_FILE, info)
    options = SimpleNamespace(samples=samples, budget=budget_s, warmup=warmup, keep_gc=keep_gc)
    rows = Samples(output)
    try:
        sample_loop(options, h, rows, fn, evaluations, timeout, handshake, swap, prepare, info)
    finally:
        rows.close()
        if handshake is not None and last:
            try:
                handshake.done()
            except h["handshake"].HandshakeError:
                pass


def cpu_swap(helpers: dict[str, Any], environ: Any, period_s: float) -> Any:
    """The CPU swap the executor asked for (``DUET_CPU_SWAP``), or None."""
    return helpers["cpuswap"].CpuSwap.from_env(environ, period_s)


def say_done(h: dict[str, Any], environ: Any) -> None:
    """Tell the coordinator of a synchronous duet that this side takes no more samples
    (nothing outside one)."""
    handshake = h["handshake"].Handshake.from_env(environ)
    if handshake is not None:
        try:
            handshake.done()
        except h["handshake"].HandshakeError:
            pass
