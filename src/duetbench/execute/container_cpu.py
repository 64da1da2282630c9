"""CPU time of container sides over their iterations' own window (docs/containers.md,
"CPU time").

A run in containers is more than its iterations: between a side's go and its end lie
the harness's own start (a JVM's), and after its last iteration the end of the
``exec`` that ran it (10-100 ms); before the go, the ``exec`` that armed it, counted
in its container's control group too. The engine's own processes (conmon, runc) run
beside the sides, owned by nobody in the run. Judged over the whole run, a quiet host
looked busy, the sides' shares of a CPU differed by their ``exec``s' ends, and their
CPU time was the iterations' plus a constant.

So while a run goes, :class:`CpuSampler` records, about every 10 ms (later every 0.2 %
of the time since the go): the wall clock, each side's group's CPU time, the CPU time
and run delay of the group's threads seen so far (:class:`~.hang.GroupDelay`), the
host's busy and steal time and this process's own CPU time; in a sduet also each
side's group's CPU time at every *ready* and *go* of the handshake. After the run,
:func:`side_window` and :func:`run_window` read them over what the harness measured:

- a side's window (run.json ``sides.<X>.window``): from its first iteration's start to
  its last one's end as its parser reads them, with the group's CPU time in it, its
  run delay (the threads' delay per CPU second, times that CPU time: a process that
  lives shorter than the sampling period is missed, the ratio of those seen is not),
  the time it waited at the handshake and the CPU time it spent there (a side that
  spins for its go);
- the run's window (run.json ``window``): the overlap of the sides' windows (a seqn
  run: its side's), the sides' CPU time in it and the other work beside them (the
  host's busy time less the sides' groups and this process).

Pure functions over a :class:`Samples` table; the sampler is the only part that reads
the system.
"""

from __future__ import annotations

import bisect
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..plan import RunSpec, SideSpec
from ..records import RunRecord, fill_note
from .hang import CgroupCpu, CpuProbe, GroupDelay
from .loadwatch import host_cpu_seconds

#: the shortest sampling period, s (the executor's wait loop turns every 10 ms)
PERIOD_MIN = 0.01
#: ... and the period as a share of the time since the go: the error of a window's end
#: stays about this share of its length, and a long run keeps a few thousand samples
PERIOD_SHARE = 0.002
#: the threads' schedstat is read every this many seconds per thread (a JVM's dozens of
#: threads are read less often than a shell's few)
THREAD_PERIOD = 0.0025
#: the run delay per CPU second is taken from at least this share of the window's CPU
#: time seen on threads; less: unknown
SEEN_MIN = 0.1


@dataclass
class Samples:
    """The time series of one run: per sample its wall-clock time (``t``, ns) and the
    cumulative counters, ns (None: unreadable); per side the handshake's waits."""

    sides: tuple[str, ...]
    t: list[int] = field(default_factory=list)
    host: list[int | None] = field(default_factory=list)  # busy CPU time of the host
    steal: list[int | None] = field(default_factory=list)
    own: list[int | None] = field(default_factory=list)  # this process's CPU time
    usage: dict[str, list[int | None]] = field(default_factory=dict)  # side -> group CPU
    seen_cpu: dict[str, list[int | None]] = field(default_factory=dict)
    seen_delay: dict[str, list[int | None]] = field(default_factory=dict)
    #: side -> [(ready t, group CPU at ready, go t, group CPU at go)]
    waits: dict[str, list[tuple[int, int, int, int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for table in (self.usage, self.seen_cpu, self.seen_delay):
            for side in self.sides:
                table.setdefault(side, [])
        for side in self.sides:
            self.waits.setdefault(side, [])


class Curve:
    """A cumulative counter read at some times (ns): its value at any time, linear between
    the readings around it, the nearest reading outside them."""

    def __init__(self, points: Sequence[tuple[int, int | None]]) -> None:
        pts = sorted((t, v) for t, v in points if v is not None)
        self.t = [p[0] for p in pts]
        self.v = [p[1] for p in pts]

    def __bool__(self) -> bool:
        return bool(self.t)

    def at(self, when: int) -> float:
        i = bisect.bisect_right(self.t, when)
        if i == 0:
            return float(self.v[0])
        if i == len(self.t):
            return float(self.v[-1])
        t0, t1, v0, v1 = self.t[i - 1], self.t[i], self.v[i - 1], self.v[i]
        return float(v1) if t1 == t0 else v0 + (v1 - v0) * (when - t0) / (t1 - t0)

    def delta(self, start: int, end: int) -> float:
        return max(0.0, self.at(end) - self.at(start))


def _curve(
    s: Samples, series: Sequence[int | None], extra: Sequence[tuple[int, int]] = ()
) -> Curve:
    return Curve([*zip(s.t, series, strict=True), *extra])


def _usage(s: Samples, side: str) -> Curve:
    """The side's group's CPU time: the samples and the readings at the handshake."""
    events = [(t, u) for w in s.waits[side] for t, u in ((w[0], w[1]), (w[2], w[3]))]
    return _curve(s, s.usage[side], events)


@dataclass(frozen=True)
class Iterations:
    """What a side's parser read: each iteration's (start, end) and their durations'
    sum (ns)."""

    spans: tuple[tuple[int, int], ...]
    busy_ns: int

    @property
    def start_ns(self) -> int:
        return min(a for a, _ in self.spans)

    @property
    def end_ns(self) -> int:
        return max(b for _, b in self.spans)


def read_iterations(
    harness: str, side_dir: Path, files: Sequence[str], **ctx: Any
) -> Iterations | str:
    """The iterations a side's parser reads from its results (filler and failed ones left
    out, as `duet process` does), or why there are none to measure over."""
    from ..parse.registry import SideContext, get_parser

    try:
        parser = get_parser(harness)
        df = parser(
            SideContext(side_dir=side_dir, result_files=tuple(side_dir / f for f in files), **ctx)
        )
    except Exception as exc:  # a result that cannot be read here is said so, never fatal
        return f"its results could not be read: {str(exc).strip()[:300] or type(exc).__name__}"
    for col, bad in (("filler", lambda v: bool(v)), ("exit_code", lambda v: v != 0)):
        if col in df.columns:
            df = df.loc[[not bad(v) for v in df[col].tolist()]]
    if df.empty:
        return "no iteration was recorded"
    if "start_ns" not in df.columns or "end_ns" not in df.columns:
        return "its harness gives durations only, not when its iterations ran"
    starts, ends = df["start_ns"].astype("int64"), df["end_ns"].astype("int64")
    busy = df["duration_ns"] if "duration_ns" in df.columns else ends - starts
    spans = tuple(zip(starts.tolist(), ends.tolist(), strict=True))
    return Iterations(spans, int(busy.astype("int64").sum()))


def _starts(s: Samples, side: str, it: Iterations, usage: Curve) -> list[float]:
    """The side's group's CPU time at each iteration's start. After a go of the handshake
    (sduet) that is its reading at the go: a side that waits for its go (asleep, or
    spinning and seeing it within microseconds) starts late only when it was not running,
    so its CPU time stands still from its go to its start -- where a line to the next
    sample would rise."""
    gos = sorted((w[2], w[3]) for w in s.waits[side])
    times = [g[0] for g in gos]
    out, before = [], None
    for a, b in it.spans:
        i = bisect.bisect_right(times, a) - 1
        if i >= 0 and (before is None or times[i] >= before):
            out.append(float(gos[i][1]))
        else:
            out.append(usage.at(a))
        before = b
    return out


def side_window(s: Samples, side: str, it: Iterations) -> dict[str, Any]:
    """run.json ``sides.<X>.window``: the side's CPU time over its iterations' own window
    and within the iterations themselves, its run delay there and its handshake waits
    (see the module doc)."""
    start, end = it.start_ns, it.end_ns
    out: dict[str, Any] = {
        "start_ns": start,
        "end_ns": end,
        "iterations": len(it.spans),
        "busy_s": round(it.busy_ns / 1e9, 6),
    }
    usage = _usage(s, side)
    if not usage:
        return {**out, "why": "the container's CPU time could not be read"}
    spans = sorted(it.spans)
    starts = _starts(s, side, Iterations(tuple(spans), it.busy_ns), usage)
    cpu = max(0.0, usage.at(end) - starts[0])
    own = sum(max(0.0, usage.at(b) - u) for (_, b), u in zip(spans, starts, strict=True))
    wait_s = wait_cpu = 0
    for ready_t, ready_u, go_t, go_u in s.waits[side]:
        if start <= ready_t and go_t <= end:
            wait_s += go_t - ready_t
            wait_cpu += max(0, go_u - ready_u)
    # the run delay: what the threads seen waited, per CPU second they were seen to run
    seen_c, seen_d = _curve(s, s.seen_cpu[side]), _curve(s, s.seen_delay[side])
    runq = runq_own = None
    seen = seen_c.delta(start, end) if seen_c and seen_d else 0.0
    if cpu > 0 and seen >= SEEN_MIN * cpu:
        scale = cpu / seen
        runq = seen_d.delta(start, end) * scale
        runq_own = sum(seen_d.delta(a, b) for a, b in spans) * scale
    out.update(
        {
            "cpu_s": round(cpu / 1e9, 6),
            "iterations_cpu_s": round(min(own, cpu) / 1e9, 6),
            "runq_s": None if runq is None else round(runq / 1e9, 6),
            "iterations_runq_s": None if runq_own is None else round(runq_own / 1e9, 6),
            "wait_s": round(wait_s / 1e9, 6),
            "wait_cpu_s": round(min(wait_cpu, cpu) / 1e9, 6),
        }
    )
    return out


def run_window(
    s: Samples, windows: Mapping[str, Mapping[str, Any]], duet: bool
) -> dict[str, Any] | None:
    """run.json ``window``: the overlap of the sides' windows (a seqn run: its side's),
    the sides' CPU time in it and the other work beside them; None when a side has no
    window or a duet's sides did not overlap."""
    spans = [(w.get("start_ns"), w.get("end_ns")) for w in windows.values() if "cpu_s" in w]
    if not spans or len(spans) != len(s.sides) or (duet and len(spans) < 2):
        return None
    start, end = max(a for a, _ in spans), min(b for _, b in spans)
    if not end > start:
        return None
    cpu: dict[str, float] = {}
    for side in s.sides:
        usage = _usage(s, side)
        if not usage:
            return None
        cpu[side] = usage.delta(start, end)
    out: dict[str, Any] = {
        "start_ns": start,
        "end_ns": end,
        "cpu_s": {side: round(v / 1e9, 6) for side, v in cpu.items()},
    }
    busy, steal, own = _curve(s, s.host), _curve(s, s.steal), _curve(s, s.own)
    if busy and steal:
        wall = end - start
        others = busy.delta(start, end) - sum(cpu.values())
        others -= own.delta(start, end) if own else 0.0
        out["other_load"] = {
            "processes": round(max(0.0, others) / wall, 3),
            "steal": round(steal.delta(start, end) / wall, 3),
        }
    return out


class CpuSampler:
    """Reads the sides' groups, their threads and the host while a run goes (module doc).
    Thread-safe: the handshake's coordinator reports *ready* and *go* from its thread."""

    def __init__(self, groups: Mapping[str, CgroupCpu]) -> None:
        self.groups = dict(groups)
        self.threads = {side: GroupDelay(g, period=PERIOD_MIN) for side, g in self.groups.items()}
        self.host = CgroupCpu.of_host()  # None: the host's busy time from /proc/stat
        self.samples = Samples(tuple(self.groups))
        self._lock = threading.Lock()
        self._go: float | None = None
        self._next = 0.0
        self._ready: dict[str, tuple[int, int]] = {}

    def start(self) -> None:
        """The go: every counter from here, a first sample."""
        now = time.monotonic()
        with self._lock:
            for delay in self.threads.values():
                delay.rebase()
            self._go = now
            self._sample(now)

    def tick(self, *, force: bool = False) -> None:
        """A sample when one is due (``force``: now)."""
        now = time.monotonic()
        if self._go is None or (now < self._next and not force):
            return
        with self._lock:
            self._sample(now)

    def _sample(self, now: float) -> None:
        s = self.samples
        s.t.append(time.time_ns())
        host = host_cpu_seconds()
        if self.host is not None:
            s.host.append(self.host.usage_ns())
        else:
            s.host.append(None if host is None else round(host[0] * 1e9))
        s.steal.append(None if host is None else round(host[1] * 1e9))
        s.own.append(time.process_time_ns())
        for side, group in self.groups.items():
            s.usage[side].append(group.usage_ns())
            delay = self.threads[side]
            delay.tick(now)
            delay.period = max(PERIOD_MIN, THREAD_PERIOD * len(delay.seen_ns))
            seen = delay.seen()
            s.seen_cpu[side].append(None if seen is None else seen[0])
            s.seen_delay[side].append(None if seen is None else seen[1])
        self._next = now + max(PERIOD_MIN, PERIOD_SHARE * (now - (self._go or now)))

    def handshake(self, what: str, pairs: tuple[str, ...]) -> None:
        """The coordinator's report (sync/coordinator.py ``observer``): a side said ready,
        or these sides get their go now."""
        with self._lock:
            for side in pairs:
                group = self.groups.get(side)
                t = time.time_ns()
                used = group.usage_ns() if group is not None else None
                if used is None:
                    continue
                if what == "ready":
                    self._ready[side] = (t, used)
                elif what == "go" and side in self._ready:
                    ready_t, ready_u = self._ready.pop(side)
                    self.samples.waits[side].append((ready_t, ready_u, t, used))

    def delay_seconds(self, side: str) -> float | None:
        """The run delay of the side's threads since the go (run.json ``runq_s``)."""
        delay = self.threads.get(side)
        return delay.seconds() if delay is not None else None


def with_windows(record: RunRecord, harness: str, run_dir: Path, samples: Samples) -> RunRecord:
    """``record`` with every side's window and the run's (run.json ``sides.<X>.window``,
    ``window``), each side's read as its parser reads it; a side whose iterations cannot
    be placed in time gets ``{"why": ...}`` instead (docs/containers.md, "CPU time")."""
    run_json = record.to_json()
    sides = {}
    windows: dict[str, dict[str, Any]] = {}
    for name, side in record.sides.items():
        if name not in samples.sides:
            sides[name] = side
            continue
        found = read_iterations(
            harness,
            run_dir / name,
            side.result_files,
            pair=name,
            benchmark=record.benchmark,
            method=record.method,
            run=run_json,
        )
        if isinstance(found, str):
            window: dict[str, Any] = {"why": found}
        else:
            window = side_window(samples, name, found)
            times = replace(side, window=window).window_times()
            note = fill_note(times.busy / times.span) if times is not None else ""
            if note:
                window["why"] = note
        windows[name] = window
        sides[name] = replace(side, window=window)
    measured = {k: w for k, w in windows.items() if "cpu_s" in w}
    overall = run_window(samples, measured, duet=len(samples.sides) > 1)
    return replace(record, sides=sides, window=overall)


class ContainerCpu:
    """The container executor's CPU-time hooks of the local executor (execute/local.py):
    a side's CPU time is its container's group's, not its driver's (the driver's children
    are the engine's client). Mixed into ContainerExecutor, whose ``_runs`` (run id ->
    state with ``usage``, ``up_ns``, ``init_pids``, ``sampler``) and ``_active`` it reads."""

    _runs: dict[str, Any]
    _active: Any

    def side_cpu(
        self, spec: RunSpec, name: str, res: dict[str, Any], key: str = "cpu_s"
    ) -> float | None:
        """The CPU seconds of the side's container (its cgroup) since the go, or
        (``runq_s``) its threads' run delay, sampled while it ran (docs/containers.md,
        "CPU time")."""
        st = self._runs.get(spec.run_id)
        if st is None:
            return None
        if key == "runq_s":
            return st.sampler.delay_seconds(name) if st.sampler is not None else None
        probe = st.usage.get(name)
        value = probe.cpu_seconds() if probe is not None else None
        return None if value is None else round(max(0.0, value), 6)

    def before_go(self, spec: RunSpec) -> None:
        """Every side armed: count the containers' CPU time from here (the ``exec`` that
        armed them is not the sides' work)."""
        st = self._runs.get(spec.run_id)
        if st is not None:
            for probe in st.usage.values():
                probe.rebase()
            if st.sampler is not None:
                st.sampler.start()

    def watch_sync(self, spec: RunSpec, coordinator: Any) -> None:
        """sduet: read the sides' CPU time at every ready and go (their waits)."""
        st = self._runs.get(spec.run_id)
        if st is not None and st.sampler is not None:
            coordinator.observer = st.sampler.handshake

    def tick(self, spec: RunSpec) -> None:
        """While the sides run: a sample of their containers' CPU time and run delay."""
        st = self._runs.get(spec.run_id)
        if st is not None and st.sampler is not None:
            st.sampler.tick()

    def _wait(self, *args: Any, **kwargs: Any) -> str | None:
        """The local executor's wait, and a last sample once every side has ended."""
        try:
            return super()._wait(*args, **kwargs)  # type: ignore[misc]
        finally:
            if self._active is not None and self._active.sampler is not None:
                self._active.sampler.tick(force=True)

    def foreign_cpu(self, spec: RunSpec) -> float:
        """The sides' containers' CPU seconds since they were all up: they run under the
        engine's conmon, not as this process's children, and are not other work."""
        st = self._runs.get(spec.run_id)
        if st is None:
            return 0.0
        total = 0
        for pair, probe in st.usage.items():
            now = probe.usage_ns()
            total += max(0, now - st.up_ns.get(pair, now)) if now is not None else 0
        return total / 1e9

    def cpu_probe(
        self, spec: RunSpec, side: SideSpec, driver: subprocess.Popen[bytes]
    ) -> CpuProbe | None:
        """The side's container's cgroup; None (never idle) when it cannot be read."""
        st = self._runs.get(spec.run_id)
        pid = st.init_pids.get(side.pair) if st is not None else None
        return CgroupCpu.of_process(pid) if pid else None
