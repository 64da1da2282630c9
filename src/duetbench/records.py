"""Run records: what ``runs/<run-id>/run.json`` holds, as frozen dataclasses.

An executor builds one :class:`RunRecord` per run (execute/local.py; the container
executor adds its ``container`` facts with :func:`dataclasses.replace`; the cluster
coordinator relocates a worker's record); the store writes it (``to_json``) and reads it
back (``from_json``); `duet process` and `duet hosts` read the fields. run.json on disk is
unchanged by this module: ``to_json`` writes the keys in the order duetbench always wrote
them, and keys it does not know (a newer version's, another executor's) are kept in
``extra`` and written back. A record that is not a usable run record is a
:class:`~duetbench.errors.ResultsDirError` in :meth:`RunRecord.from_json`, so damaged
run.json files are recognised in one place (docs/results.md, "run.json" and "Damage").
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ResultsDirError
from .schema import FINISHED_STATUSES, RunStatus, SideStatus

_MISSING: Any = object()


class _WrongType(Exception):
    pass


def _take(d: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], default: Any) -> Any:
    """``d[key]`` if it has one of ``kinds`` (or is None when ``default`` is None)."""
    value = d.get(key, _MISSING)
    if value is _MISSING:
        return default
    if value is None and default is None:
        return None
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise _WrongType(key)
    if not isinstance(value, kinds):
        raise _WrongType(key)
    return value


def _strings(d: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = _take(d, key, list, [])
    if not all(isinstance(v, str) for v in value):
        raise _WrongType(key)
    return tuple(value)


def _ints(d: Mapping[str, Any], key: str) -> tuple[int, ...]:
    value = _take(d, key, list, [])
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise _WrongType(key)
    return tuple(value)


@dataclass(frozen=True)
class SideRecord:
    """One side of a run (run.json ``sides.<A|B>``). ``name`` is written as ``pair``."""

    name: str  # "A" | "B" (schema.SideName)
    cpus: tuple[int, ...] = ()
    cwd: str = ""
    status: str = SideStatus.FAILED  # schema.SideStatus
    start_ns: int | None = None  # the side's work, from its go to its end
    end_ns: int | None = None
    exit_code: int | None = None
    driver_exit: int | None = None
    iterations: int | None = None  # built-in harness: iterations run
    filler: int = 0  # busy_shorter_side: filler iterations after the side's own
    message: str = ""
    result_files: tuple[str, ...] = ()  # relative to the side's directory
    missing_results: tuple[str, ...] = ()
    stderr_tail: str = ""
    container: Mapping[str, Any] | None = None  # container executor: name, image, image_id...
    clock: str | None = None  # container executor, built-in harness: the clock it used
    #: local executor: CPU seconds of the side's workload from its go to its end
    cpu_s: float | None = None
    #: local executor, external harness: seconds the side's processes were ready to run
    #: but waited for a CPU (their scheduler run delay, execute/driver.py); None: unknown
    runq_s: float | None = None
    #: local executor, shared duets: CPU -> samples of the side's running processes
    #: there (execute/cpuwatch.py); None when not watched
    ran_on: Mapping[int, int] | None = None
    #: container executor: the side's iterations' own window and its CPU time, run delay
    #: and handshake waits in it, or why there is none (execute/container_cpu.py)
    window: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this version does not know

    _KEYS = (
        "pair",
        "cpus",
        "cwd",
        "status",
        "start_ns",
        "end_ns",
        "exit_code",
        "driver_exit",
        "iterations",
        "filler",
        "message",
        "result_files",
        "missing_results",
        "stderr_tail",
        "container",
        "clock",
        "cpu_s",
        "runq_s",
        "ran_on",
        "window",
    )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pair": self.name,
            "cpus": list(self.cpus),
            "cwd": self.cwd,
            "status": self.status,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "exit_code": self.exit_code,
            "driver_exit": self.driver_exit,
            "iterations": self.iterations,
            "filler": self.filler,
            "message": self.message,
            "result_files": list(self.result_files),
            "missing_results": list(self.missing_results),
            "stderr_tail": self.stderr_tail,
        }
        if self.container is not None:
            out["container"] = dict(self.container)
        if self.clock is not None:
            out["clock"] = self.clock
        if self.cpu_s is not None:
            out["cpu_s"] = self.cpu_s
        if self.runq_s is not None:
            out["runq_s"] = self.runq_s
        if self.ran_on is not None:
            out["ran_on"] = {str(cpu): n for cpu, n in self.ran_on.items()}
        if self.window is not None:
            out["window"] = dict(self.window)
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> SideRecord:
        """Raises ``_WrongType`` for a value of the wrong type (RunRecord.from_json says where)."""
        return cls(
            name=name,
            cpus=_ints(d, "cpus"),
            cwd=_take(d, "cwd", str, ""),
            status=_take(d, "status", str, SideStatus.FAILED),
            start_ns=_take(d, "start_ns", int, None),
            end_ns=_take(d, "end_ns", int, None),
            exit_code=_take(d, "exit_code", int, None),
            driver_exit=_take(d, "driver_exit", int, None),
            iterations=_take(d, "iterations", int, None),
            filler=_take(d, "filler", int, 0),
            message=_take(d, "message", str, ""),
            result_files=_strings(d, "result_files"),
            missing_results=_strings(d, "missing_results"),
            stderr_tail=_take(d, "stderr_tail", str, ""),
            container=_optional_mapping(d, "container"),
            clock=_take(d, "clock", str, None),
            cpu_s=cpu_seconds(d),
            runq_s=cpu_seconds(d, "runq_s"),
            ran_on=_cpu_counts(d.get("ran_on")),
            window=_optional_mapping(d, "window"),
            extra={k: v for k, v in d.items() if k not in cls._KEYS},
        )

    def window_times(self) -> WindowTimes | None:
        """The side's CPU time within its iterations and what it was measured over
        (run.json ``window``, containers: execute/container_cpu.py); None where not
        measured."""
        w = self.window
        if not isinstance(w, Mapping) or "cpu_s" not in w:
            return None
        try:
            span = (int(w["end_ns"]) - int(w["start_ns"])) / 1e9 - float(w.get("wait_s") or 0.0)
            whole = float(w["cpu_s"])
            own = w.get("iterations_cpu_s")
            cpu = whole - float(w.get("wait_cpu_s") or 0.0) if own is None else float(own)
            runq = w.get("iterations_runq_s", w.get("runq_s"))
            if runq is not None and "iterations_runq_s" not in w:
                runq = float(runq) * cpu / whole if whole > 0 else None
            runq = None if runq is None else float(runq)
            busy = float(w.get("busy_s") or 0.0)
        except (KeyError, TypeError, ValueError):
            return None
        if not (span > 0 and cpu >= 0 and math.isfinite(span + cpu + busy)):
            return None
        return WindowTimes(cpu, runq, span, busy)


@dataclass(frozen=True)
class WindowTimes:
    """A container side's times over its iterations (seconds, :meth:`SideRecord.window_times`)."""

    #: CPU time within the iterations themselves
    cpu: float
    #: run delay within them (its threads' delay per CPU second times ``cpu``); None: unknown
    runq: float | None
    #: the iterations' window less the side's waits at the sduet handshake
    span: float
    #: the iterations' own wall times, summed
    busy: float


def main_cpu(ran_on: Mapping[int, int] | None) -> int | None:
    """The CPU a side was seen on in most samples (None: not seen, or no single one)."""
    if not ran_on:
        return None
    most = max(ran_on.values())
    top = [cpu for cpu, n in ran_on.items() if n == most]
    return top[0] if len(top) == 1 else None


def _cpu_counts(v: Any) -> dict[int, int] | None:
    """A side's ``ran_on`` ({"0": samples, ...}); None when absent or not of that shape
    (it only feeds a note, so a damaged one is ignored, never an error)."""
    if not isinstance(v, Mapping):
        return None
    out: dict[int, int] = {}
    for cpu, n in v.items():
        if not (isinstance(cpu, str) and cpu.isdigit()) or type(n) is not int or n < 0:
            return None
        out[int(cpu)] = n
    return out or None


def cpu_seconds(d: Mapping[str, Any], key: str = "cpu_s") -> float | None:
    """A side's ``cpu_s`` (or ``runq_s``: ``key``) of run.json or of a driver's result;
    None when absent (containers, older results) or not a number."""
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not v == v or v < 0:
        return None
    return float(v)


def _optional_mapping(d: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """An object value that is written only when present (None: absent)."""
    if key not in d:
        return None
    value = d[key]
    if not isinstance(value, dict):
        raise _WrongType(key)
    return value


#: run.json `message` of a sduet run whose sides never reached the handshake
UNSYNCHRONISED = (
    "unsynchronised: no side ever reached the sduet handshake (sync go_count 0), so this "
    "run ran as an unsynchronized duet; give the benchmark a `sync_command` that waits at "
    "the handshake (docs/sync.md)"
)


def unsynchronised(sync: Mapping[str, Any], sides: Iterable[SideRecord]) -> bool:
    """Whether a sduet run's sides did their work without a single handshake (``sync``:
    run.json's ``sync``; built-in harness: iterations run, external: result files)."""
    if sync.get("unsynchronised"):
        return True
    worked = any((s.iterations or 0) > 0 or s.result_files for s in sides)
    return sync.get("go_count") == 0 and worked


#: other work beside a run, in CPUs (run.json ``other_load``, processes + steal), from
#: which `duet compare` notes it and duets use the run statistic ``means`` under
#: ``--run-stat auto`` (docs/statistics.md, "Run statistics beside other work"); a busy
#: process beside the duet takes 0.5-1, a quiet VM 0.01-0.05
OTHER_WORK = 0.25
#: a duet run is unbalanced when other work kept at least this many CPUs busy during it
#: (run.json ``other_load``; a quiet VM reads 0.00-0.05) ...
UNBALANCED_LOAD = 0.1
#: ... and its sides' CPU shares differ by more than this (``|log(share A / share B)|``):
#: beside a busy process on 2 CPUs that log ratio predicted each run's error in B/A with
#: a correlation of 0.92-0.999 (docs/statistics.md, section Notes)
UNBALANCED_SHARE = 0.05
#: ... in a run of at least this many seconds: /proc/stat counts in ticks of 10 ms, so in a
#: shorter run one tick of the kernel's own work reads as 0.1 CPU or more of other work
UNBALANCED_MIN_S = 0.3
#: ... and whose sides both kept at least this share of a CPU busy: a side that mostly
#: sleeps or waits is not slowed by a busy CPU, and its share says nothing about one
UNBALANCED_MIN_SHARE = 0.2

#: a side's CPU time over a window is credited to its iterations only when their wall
#: times fill FILL_MIN to FILL_MAX of it (less: a start-up or work between them would pull
#: the ratio towards 1; more: they are not its process's -- values per inner loop, or
#: computed -- and its CPU time is not theirs; analysis/measure_choice.py)
FILL_MIN, FILL_MAX = 0.5, 1.05


def fill_note(fill: float) -> str:
    """Why a side's CPU time over its window is not its iterations' ("" when it is)."""
    if fill > FILL_MAX:
        why = "the harness did not measure them in its own process (values per inner loop, or computed)"
        return f"the iterations' times add up to {fill:.0%} of the time they span: {why}"
    if fill < FILL_MIN:
        return f"the iterations fill only {fill:.0%} of the time they span: the harness works between them"
    return ""


#: run.json keys :class:`RunRecord` knows, in the order they are written.
RUN_KEYS = (
    "run_id",
    "benchmark",
    "suite",
    "method",
    "rep",
    "order",
    "host",
    "executor",
    "status",
    "message",
    "spec",
    "sides",
    "all_cores_busy",
    "placement",
    "other_load",
    "window",
    "start_ns",
    "sync",
    "end_ns",
    "container",
    "files",
)
#: run.json keys without which a record is not a run record (docs/results.md, "Damage").
REQUIRED_KEYS = ("run_id", "status", "benchmark", "method", "sides")


@dataclass(frozen=True)
class RunRecord:
    """One run (run.json). ``status`` and ``method`` hold schema.RunStatus / schema.Method
    values (plain strings when read back, so an unknown value of another version is kept)."""

    run_id: str
    benchmark: str
    method: str  # schema.Method
    status: str  # schema.RunStatus
    suite: str = ""
    rep: int | None = None  # repetition index (None: not recorded; spec["rep"] then)
    order: str | None = None  # "AB" | "BA" for duet runs, None for seqn
    host: str = ""
    executor: str = ""
    message: str = ""  # why, for anything but ok
    spec: Mapping[str, Any] = field(default_factory=dict)  # plan.RunSpec.to_dict()
    sides: Mapping[str, SideRecord] = field(default_factory=dict)  # in launch order
    all_cores_busy: bool = False
    placement: str = ""  # "pinned" | "shared" (execute/placement.py); "" in older records
    #: CPUs busy with other processes / taken by the hypervisor during the run, averaged
    #: (execute/loadwatch.py); None: not measured (containers, older records)
    other_load: Mapping[str, float] | None = None
    #: container executor: the overlap of the sides' iterations' windows (a seqn run: its
    #: side's), the sides' CPU time in it and the other work beside them
    #: (execute/container_cpu.py); None: not measured
    window: Mapping[str, Any] | None = None
    start_ns: int | None = None
    sync: Mapping[str, Any] | None = None  # sduet: {"go_count": n}
    end_ns: int | None = None
    container: Mapping[str, Any] | None = None  # container executor: engine, timings...
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this version does not know
    files: Mapping[str, Any] | None = None  # the run's files (store.manifest), set on commit

    @property
    def side_names(self) -> tuple[str, ...]:
        return tuple(self.sides)

    def to_json(self) -> dict[str, Any]:
        """The run.json object, keys in the order duetbench writes them."""
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "benchmark": self.benchmark,
            "suite": self.suite,
            "method": self.method,
            "rep": self.rep,
            "order": self.order,
            "host": self.host,
            "executor": self.executor,
            "status": self.status,
            "message": self.message,
            "spec": dict(self.spec),
            "sides": {name: s.to_json() for name, s in self.sides.items()},
            "all_cores_busy": self.all_cores_busy,
        }
        if self.placement:
            out["placement"] = self.placement
        if self.other_load is not None:
            out["other_load"] = dict(self.other_load)
        if self.window is not None:
            out["window"] = dict(self.window)
        out["start_ns"] = self.start_ns
        if self.sync is not None:
            out["sync"] = dict(self.sync)
        out["end_ns"] = self.end_ns
        if self.container is not None:
            out["container"] = dict(self.container)
        out.update(self.extra)
        if self.files is not None:
            out["files"] = dict(self.files)
        return out

    @classmethod
    def from_json(cls, d: Any, where: str = "run.json") -> RunRecord:
        """The record of a run.json object; :class:`ResultsDirError` ("``where`` lacks
        'status'", "... has values of the wrong type") for one that is not a run record."""
        if not isinstance(d, dict):
            raise ResultsDirError(f"{where} is not a JSON object")
        missing = [k for k in REQUIRED_KEYS if k not in d]
        if missing:
            raise ResultsDirError(f"{where} lacks {', '.join(repr(k) for k in missing)}")
        try:
            sides = _take(d, "sides", dict, {})
            if not all(isinstance(s, dict) for s in sides.values()):
                raise _WrongType("sides")
            return cls(
                run_id=_take(d, "run_id", str, ""),
                benchmark=_take(d, "benchmark", str, ""),
                method=_take(d, "method", str, ""),
                status=_take(d, "status", str, ""),
                suite=_take(d, "suite", str, ""),
                rep=_take(d, "rep", int, None),
                order=_take(d, "order", str, None),
                host=_take(d, "host", str, ""),
                executor=_take(d, "executor", str, ""),
                message=_take(d, "message", str, ""),
                spec=_take(d, "spec", dict, {}),
                sides={str(n): SideRecord.from_json(str(n), s) for n, s in sides.items()},
                all_cores_busy=_take(d, "all_cores_busy", bool, False),
                placement=_take(d, "placement", str, ""),
                other_load=_optional_mapping(d, "other_load"),
                window=_optional_mapping(d, "window"),
                start_ns=_take(d, "start_ns", int, None),
                sync=_optional_mapping(d, "sync"),
                end_ns=_take(d, "end_ns", int, None),
                container=_optional_mapping(d, "container"),
                extra={k: v for k, v in d.items() if k not in RUN_KEYS},
                files=_optional_mapping(d, "files"),
            )
        except _WrongType as exc:
            raise ResultsDirError(
                f"{where} has values of the wrong type (key {exc.args[0]!r})"
            ) from None

    @property
    def unsynchronised(self) -> bool:
        """A sduet run that never reached the handshake (run.json ``sync``)."""
        return self.sync is not None and unsynchronised(self.sync, self.sides.values())

    @property
    def window_span(self) -> tuple[int, int] | None:
        """(start_ns, end_ns) of the run's ``window`` (containers), None without one."""
        w = self.window
        if not isinstance(w, Mapping):
            return None
        start, end = w.get("start_ns"), w.get("end_ns")
        if type(start) is not int or type(end) is not int or not end > start:
            return None
        return start, end

    @property
    def cpu_shares(self) -> dict[str, float]:
        """Per side that measured it: the share of a CPU it got from its go to its end
        (``cpu_s``), or over the run's ``window`` where the executor measured one (the
        overlap of the sides' iterations: containers)."""
        span = self.window_span
        if span is not None:
            cpu = self.window.get("cpu_s") if self.window is not None else None
            if isinstance(cpu, Mapping):
                wall = (span[1] - span[0]) / 1e9
                return {
                    str(k): float(v) / wall
                    for k, v in cpu.items()
                    if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
                }
        out = {}
        for name, s in self.sides.items():
            if s.cpu_s is None or s.start_ns is None or s.end_ns is None:
                continue
            if s.end_ns > s.start_ns:
                out[name] = s.cpu_s / ((s.end_ns - s.start_ns) / 1e9)
        return out

    @property
    def other_load_cpus(self) -> tuple[float, float] | None:
        """(processes, steal) of ``other_load`` -- over the run's ``window`` where the
        executor measured one (containers: the engine's own processes around the
        iterations are no other work); None when absent or not numbers."""
        load = self.other_load
        if self.window_span is not None and self.window is not None:
            load = self.window.get("other_load", load)
        if not isinstance(load, Mapping):
            return None
        try:
            out = (float(load.get("processes", 0.0)), float(load.get("steal", 0.0)))
        except (TypeError, ValueError):
            return None
        return out if all(math.isfinite(x) and x >= 0 for x in out) else None

    @property
    def other_cpus(self) -> float | None:
        """CPUs other processes and the hypervisor took during the run (``other_load``)."""
        load = self.other_load_cpus
        return None if load is None else load[0] + load[1]

    @property
    def beside_other_work(self) -> bool:
        """Other work kept at least ``OTHER_WORK`` CPUs busy during the run."""
        load = self.other_cpus
        return load is not None and load >= OTHER_WORK

    @property
    def imbalance(self) -> float | None:
        """``log(share A / share B)`` of a duet run beside other work, the bias other work
        put into the run's ratio B/A when both sides are CPU-bound (None: not a duet, no
        shares, less other work than ``UNBALANCED_LOAD``, a run -- or its ``window`` --
        shorter than ``UNBALANCED_MIN_S``, or a side below ``UNBALANCED_MIN_SHARE``)."""
        load = self.other_cpus
        if load is None or load < UNBALANCED_LOAD:
            return None
        span = self.window_span or (self.start_ns, self.end_ns)
        if span[0] is None or span[1] is None:
            return None
        if (span[1] - span[0]) / 1e9 < UNBALANCED_MIN_S:
            return None
        shares = self.cpu_shares
        a, b = shares.get("A"), shares.get("B")
        if a is None or b is None or min(a, b) < UNBALANCED_MIN_SHARE:
            return None
        return math.log(a / b)

    @property
    def unbalanced(self) -> bool:
        """A duet run whose sides got unequal shares of the CPU while other work ran: its
        timings are left out of the analysis (docs/statistics.md, section Notes)."""
        imb = self.imbalance
        return imb is not None and abs(imb) > UNBALANCED_SHARE

    @property
    def main_cpus(self) -> tuple[int, int] | None:
        """(A's CPU, B's CPU): where each side of a shared duet ran most, when they ran
        apart (``ran_on``, execute/cpuwatch.py); None otherwise."""
        a, b = self.sides.get("A"), self.sides.get("B")
        if a is None or b is None:
            return None
        ca, cb = main_cpu(a.ran_on), main_cpu(b.ran_on)
        return (ca, cb) if ca is not None and cb is not None and ca != cb else None

    @property
    def finished(self) -> bool:
        """Ended by itself (schema.FINISHED_STATUSES): journaled, never executed again."""
        return self.status in FINISHED_STATUSES

    def with_status(self, status: RunStatus | str, message: str) -> RunRecord:
        return dataclasses.replace(self, status=status, message=message)

    def with_files(self, files: Mapping[str, Any]) -> RunRecord:
        """The record with the list of the run's files (store/manifest.py), as committed."""
        return dataclasses.replace(self, files=files)

    def relocated(self, old: str | Path, new: str | Path) -> RunRecord:
        """The record with the directory ``old`` replaced by ``new`` in every path it holds.

        A run is built under a temporary name (``runs/.tmp-<run>-<pid>``, or a worker's own
        directory on a cluster) and renamed into place; its record must name where its files
        are. What a command printed (``stderr_tail``) is kept as it was."""
        return RunRecord.from_json(relocate_paths(self.to_json(), old, new))


#: run.json keys copied verbatim from what a command printed: never rewritten
_VERBATIM_KEYS = frozenset({"stderr_tail"})


def relocate_paths(record: Any, old: str | Path, new: str | Path) -> Any:
    """``record`` (JSON data) with the directory ``old`` replaced by ``new`` in every path."""
    old_s, new_s = str(old), str(new)

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            if value == old_s:
                return new_s
            return value.replace(old_s + os.sep, new_s + os.sep)
        if isinstance(value, dict):
            return {k: v if k in _VERBATIM_KEYS else fix(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(fix(v) for v in value)
        return value

    return fix(record)
