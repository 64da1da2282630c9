"""The local executor: each side in its own driver process and process group."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..hosts import available_cpus, host_name
from ..plan import RunSpec, SideSpec
from ..proctools.groups import group_alive, kill_group
from ..records import UNSYNCHRONISED, RunRecord, SideRecord, cpu_seconds, unsynchronised
from ..schema import Method, RunStatus, SideStatus
from .cpuwatch import CpuWatch
from .hang import CpuProbe, HangWatch, ProcessTreeCpu, hung_message
from .placement import SHARED, Placement, resolve_placement

ReadyTimeout = 120.0
#: harnesses whose sides get the pyperf shim in a sduet (docs/sync.md, "pyperf scripts as they are")
PYPERF_HARNESSES = frozenset({"pyperf", "pyperformance"})
#: a side's `env:` setting this to "0" keeps the shim away (a script doing its own handshake)
PYPERF_SHIM_ENV = "DUET_PYPERF_SHIM"


#: the drivers of a run's sides, by side name
Drivers = dict[str, subprocess.Popen[bytes]]
#: what each side's driver reported, by side name
SideInfo = dict[str, dict[str, Any]]


def wants_pyperf_shim(spec: RunSpec, side: SideSpec) -> bool:
    """Whether ``side`` runs pyperf scripts in a sduet and so needs the pyperf shim."""
    return (
        spec.method == "sduet"
        and spec.harness in PYPERF_HARNESSES
        and dict(side.env).get(PYPERF_SHIM_ENV, "") != "0"
    )


@dataclass(frozen=True)
class RunOutcome:
    """The run record (run.json) and, if the run was cut short by Ctrl-C/SIGTERM/a bug, why."""

    record: RunRecord
    exception: BaseException | None = None


def expand_results(results: tuple[str, ...], side_dir: Path) -> list[str]:
    """`results:` paths with ``$DUET_OUTPUT_DIR`` (the side's own directory) expanded."""
    out = []
    for res in results:
        for var in ("${DUET_OUTPUT_DIR}", "$DUET_OUTPUT_DIR"):
            res = res.replace(var, str(side_dir))
        out.append(res)
    return out


#: what duet micro's worker (and the pytest plugin's side) leaves when it failed
MICRO_ERROR_FILE = "micro-error.json"


def micro_error(side_dir: Path, collected: list[str]) -> str:
    """The summary of a failed micro worker's ``micro-error.json`` in the side's directory
    or one of its result folders ("" when there is none)."""
    for folder in (side_dir, *(side_dir / c for c in collected)):
        try:
            doc = json.loads((folder / MICRO_ERROR_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("summary"):
            return str(doc["summary"])[:500]
    return ""


def stderr_tail(path: Path, limit: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _group_left(proc: subprocess.Popen[bytes]) -> bool:
    """Whether anything of the driver's process group still lives. The driver is reaped
    first: an unreaped driver is a zombie that keeps its group "alive" for ``killpg``."""
    proc.poll()
    return group_alive(proc.pid)


class LocalExecutor:
    """Runs a RunSpec with local processes. ``exec_prefix`` lets the container executor reuse it."""

    name = "local"
    #: whether the run's sides are this process's descendants, so that the CPU time of
    #: everything else on the host can be told apart (run.json `other_load`)
    measures_other_load = True

    def __init__(self, host: str | None = None) -> None:
        self.host = host or host_name()
        self.host_cpus = available_cpus()

    # hooks for subclasses (the container executor)
    def side_cwd(self, spec: RunSpec, side: SideSpec, side_dir: Path) -> str:
        if side.workdir:
            wd = Path(side.workdir).expanduser()
            if not wd.is_absolute() and spec.base_dir:
                wd = Path(spec.base_dir) / wd
            return str(wd)
        return str(side_dir)

    def exec_prefix(self, spec: RunSpec, side: SideSpec, side_dir: Path) -> list[str]:
        return []

    def before_launch(self, spec: RunSpec, run_dir: Path) -> None:
        """Called before drivers start (containers: start them)."""

    def collect(
        self, spec: RunSpec, side: SideSpec, side_dir: Path, cwd: str
    ) -> tuple[list[str], list[str]]:
        """Copy the side's `results:` into its directory; return (collected, missing) relative paths."""
        collected, missing = [], []
        for res in expand_results(side.results, side_dir):
            src = Path(res) if os.path.isabs(res) else Path(cwd) / res
            try:
                inside = src.resolve().is_relative_to(side_dir.resolve())
            except OSError:
                inside = False
            if inside:
                if src.exists():
                    collected.append(str(src.resolve().relative_to(side_dir.resolve())))
                else:
                    missing.append(res)
                continue
            dst = side_dir / "results" / src.name
            dst.parent.mkdir(exist_ok=True)
            try:
                if src.is_dir():
                    shutil.copytree(src, dst, dirs_exist_ok=True)
                else:
                    shutil.copy2(src, dst)
                collected.append(str(dst.relative_to(side_dir)))
            except FileNotFoundError:
                missing.append(res)
            except OSError as exc:
                missing.append(f"{res} ({exc.strerror})")
        return collected, missing

    def after_run(self, spec: RunSpec, run_dir: Path) -> None:
        """Called after the run, whatever happened (containers: stop and remove)."""

    def driver_spec(
        self, spec: RunSpec, side: SideSpec, side_dir: Path, driver_spec: dict[str, Any]
    ) -> dict[str, Any]:
        """The driver's spec (``.driver.json``) for one side; subclasses may change it."""
        return driver_spec

    def start_experiment(self, plan: list[RunSpec]) -> None:
        """Called once before the first run of an experiment, also on --resume
        (containers: reap leftovers of dead experiments, check the images)."""

    def end_experiment(self) -> None:
        """Called once when the experiment ends, however it ends."""

    def host_info(self, artifacts: Any) -> dict[str, Any]:
        """Extra entries for ``hosts/<host>.json`` (containers: engine, images, their artifacts)."""
        return {}

    # ------------------------------------------------------------------ the run
    def execute(
        self,
        spec: RunSpec,
        run_dir: Path,
        *,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> RunOutcome:
        """Execute ``spec`` with its files under ``run_dir``; return the run record (run.json)."""
        # every path a side gets ($DUET_OUTPUT_DIR, $DUET_SYNC_DIR, `$$`) must be absolute: it
        # runs in its own working directory (schedulers pass absolute paths already)
        run_dir = Path(os.path.abspath(run_dir))
        placement = resolve_placement(spec.cpus, self.host_cpus)
        start_ns = time.time_ns()
        status, message = RunStatus.OK, ""
        sync: dict[str, Any] | None = None
        coordinator = None
        drivers: Drivers = {}
        side_info: SideInfo = {}
        interrupted: BaseException | None = None
        load = None
        cpu_watch: CpuWatch | None = None
        try:
            self.before_launch(spec, run_dir)
            if self.measures_other_load:
                from .loadwatch import LoadWatch

                load = LoadWatch.start()
            sync_dir = None
            if spec.method == Method.SDUET:
                from ..sync import SyncCoordinator

                sync_dir = run_dir / ".sync"
                coordinator = SyncCoordinator.create(sync_dir, pairs=spec.side_names)
                self.watch_sync(spec, coordinator)
                coordinator.start()
            self._launch(spec, run_dir, placement, sync_dir, drivers, side_info)
            if on_event:
                on_event("started", {"run_id": spec.run_id})
            # wait, with the timeout
            deadline = time.monotonic() + spec.timeout if spec.timeout else None
            watch = self._hang_watch(spec, drivers)
            if spec.is_duet and placement.kind == SHARED:
                cpu_watch = CpuWatch({name: proc.pid for name, proc in drivers.items()})
            stopped = self._wait(
                drivers, deadline, coordinator, side_info, watch, cpu_watch, lambda: self.tick(spec)
            )
            if stopped == RunStatus.TIMEOUT:
                status = RunStatus.TIMEOUT
                message = f"timeout after {spec.timeout:g} s; both sides stopped"
                self._terminate(drivers, spec.kill_grace, side_info)
            elif stopped is not None:
                status, message = RunStatus.HUNG, stopped
                self._terminate(drivers, spec.kill_grace, side_info)
        except BaseException as exc:  # Ctrl-C, SIGTERM of duet run, or a bug: never leave processes
            interrupted = exc
            status = RunStatus.INTERRUPTED
            message = (
                "interrupted"
                if isinstance(exc, KeyboardInterrupt | SystemExit)
                else f"error: {exc!r}"
            )
            self._terminate(drivers, min(spec.kill_grace, 2.0), side_info)
        finally:
            for proc in drivers.values():  # reap stragglers a workload left in its group
                kill_group(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
                _close_pipes(proc)  # a pipe left to the GC is a ResourceWarning in the caller
            other_load = None
            if load is not None:
                try:
                    other_load = load.finish(self.foreign_cpu(spec))
                except Exception:  # a measurement must never lose the run
                    other_load = None
            if coordinator is not None:
                sync = {"go_count": len(coordinator.go_times_ns)}
                coordinator.close()
            if cpu_watch is not None:
                for name, info in side_info.items():
                    info["ran_on"] = cpu_watch.ran_on(name)
            try:
                sides, problems = self._finish_sides(spec, side_info, drivers)
            finally:
                self.after_run(spec, run_dir)
        if status == RunStatus.OK and problems:
            status, message = RunStatus.FAILED, "; ".join(problems)
        if status == RunStatus.OK and sync is not None and unsynchronised(sync, sides.values()):
            sync["unsynchronised"] = True
            message = UNSYNCHRONISED
        record = RunRecord(
            **spec.record_fields(),
            host=self.host,
            executor=self.name,
            status=status,
            message=message,
            sides=sides,
            all_cores_busy=spec.is_duet and placement.every_core,
            placement=placement.kind,
            other_load=other_load,
            start_ns=start_ns,
            sync=sync,
            end_ns=time.time_ns(),
        )
        return RunOutcome(record, interrupted)

    def _launch(
        self,
        spec: RunSpec,
        run_dir: Path,
        placement: Placement,
        sync_dir: Path | None,
        drivers: Drivers,
        side_info: SideInfo,
    ) -> None:
        """Start every side's driver and give them the go, filling ``drivers`` and
        ``side_info`` as it goes (so that a Ctrl-C halfway stops the drivers started).

        1. every driver starts, sets up, pins itself and says "ready" (a side that does
           not is marked ``setup_failed``);
        2. go, in the drawn order."""
        for side in spec.sides:
            side_dir = run_dir / side.name
            side_dir.mkdir(parents=True, exist_ok=True)
            cwd = self.side_cwd(spec, side, side_dir)
            info = {"cpus": placement.side_cpus(side), "cwd": cwd, "side_dir": side_dir}
            side_info[side.name] = info
            drivers[side.name] = self._start_driver(
                spec, side, side_dir, cwd, placement, run_dir, sync_dir
            )
        for name, proc in drivers.items():
            line = _readline(proc, ReadyTimeout)
            if line != "ready":
                side_info[name]["setup_failed"] = True
        self.before_go(spec)
        for name, proc in drivers.items():
            side_info[name]["go_ns"] = time.time_ns()
            try:
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
                proc.stdin.flush()
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

    def _start_driver(
        self,
        spec: RunSpec,
        side: SideSpec,
        side_dir: Path,
        cwd: str,
        placement: Placement,
        run_dir: Path,
        sync_dir: Path | None,
    ) -> subprocess.Popen[bytes]:
        cpus = placement.side_cpus(side)
        cpu_swap = placement.swap_env(spec.sides).get(side.name)
        env = dict(side.env)
        env.update(
            {
                "DUET_PAIR": side.name,
                "DUET_RUN": spec.run_id,
                "DUET_METHOD": spec.method,
                "DUET_OUTPUT_DIR": str(side_dir),
                "DUET_BENCHMARK": spec.benchmark,
                "DUET_REP": str(spec.rep),
            }
        )
        if sync_dir is not None:
            env["DUET_SYNC_DIR"] = str(sync_dir)
        if cpu_swap is not None:
            env["DUET_CPU_SWAP"] = cpu_swap
        peer = [s.name for s in spec.sides if s.name != side.name]
        driver_spec = {
            "pair": side.name,
            "run_id": spec.run_id,
            "method": spec.method,
            "harness": spec.harness,
            "command": side.command,
            "env": env,
            "cwd": cwd,
            "side_dir": str(side_dir),
            "cpus": cpus,
            "iterations": spec.iterations,
            "time_budget": spec.time_budget,
            "busy_shorter_side": spec.busy_shorter_side and spec.is_duet,
            "own_done_file": str(run_dir / f".done.{side.name}"),
            "peer_done_file": str(run_dir / f".done.{peer[0]}") if peer else None,
            "sync": sync_dir is not None,
            "sync_dir": str(sync_dir) if sync_dir else None,
            "parent_pid": os.getpid(),
            "setup": side.setup,
            "teardown": side.teardown,
            "exec_prefix": self.exec_prefix(spec, side, side_dir),
            "pyperf_shim": None,
        }
        if sync_dir is not None and wants_pyperf_shim(spec, side):
            from ..sync import helper_path

            driver_spec["pyperf_shim"] = str(helper_path("pyperf"))
        driver_spec = self.driver_spec(spec, side, side_dir, driver_spec)
        spec_path = side_dir / ".driver.json"
        spec_path.write_text(json.dumps(driver_spec))
        driver_err = open(side_dir / ".driver.log", "ab")
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "duetbench.execute.driver", str(spec_path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=driver_err,
                process_group=0,
                close_fds=True,
            )
        finally:
            driver_err.close()

    def side_cpu(
        self, spec: RunSpec, name: str, res: dict[str, Any], key: str = "cpu_s"
    ) -> float | None:
        """Side ``name``'s CPU seconds (``runq_s``: seconds waiting for a CPU) from its
        driver's result (None: not measured)."""
        return cpu_seconds(res, key)

    def before_go(self, spec: RunSpec) -> None:
        """Called when every side is ready, just before the go (the container executor
        counts its containers' CPU time from here); nothing for local sides."""

    def watch_sync(self, spec: RunSpec, coordinator: Any) -> None:
        """Called with a sduet run's handshake coordinator before it starts (the container
        executor reads its sides' CPU time at every ready and go); nothing for local sides."""

    def tick(self, spec: RunSpec) -> None:
        """Called every 10 ms while the sides run (the container executor samples its
        containers' CPU time and run delay here); nothing for local sides: each driver
        follows its own."""

    def foreign_cpu(self, spec: RunSpec) -> float:
        """CPU seconds of the run's sides that are not this process's children (and so
        would count as other work, execute/loadwatch.py): none for local sides."""
        return 0.0

    def cpu_probe(
        self, spec: RunSpec, side: SideSpec, driver: subprocess.Popen[bytes]
    ) -> CpuProbe | None:
        """What measures a side's CPU time for hang detection (None: it cannot be measured,
        the side never counts as idle). Local sides: the driver and its descendants."""
        return ProcessTreeCpu(driver.pid)

    def _hang_watch(
        self, spec: RunSpec, drivers: dict[str, subprocess.Popen[bytes]]
    ) -> HangWatch | None:
        if not spec.hang_timeout:
            return None
        probes = {s.name: self.cpu_probe(spec, s, drivers[s.name]) for s in spec.sides}
        return HangWatch(spec.hang_timeout, probes, time.monotonic())

    def _wait(
        self,
        drivers: dict[str, subprocess.Popen[bytes]],
        deadline: float | None,
        coordinator: Any,
        side_info: dict[str, dict[str, Any]],
        watch: HangWatch | None = None,
        cpu_watch: CpuWatch | None = None,
        tick: Callable[[], None] | None = None,
    ) -> str | None:
        """Wait for every side to end; RunStatus.TIMEOUT or the hung message when stopped early."""
        pending = dict(drivers)
        while pending:
            if cpu_watch is not None:
                cpu_watch.tick()
            if tick is not None:
                tick()
            for name, proc in list(pending.items()):
                if proc.poll() is not None:
                    side_info[name]["exit_ns"] = time.time_ns()
                    del pending[name]
                    if coordinator is not None:
                        coordinator.side_finished(name)
            if not pending:
                return None
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return RunStatus.TIMEOUT
            if watch is not None and watch.due(now):
                waiting = coordinator.waiting if coordinator is not None else ()
                idle = watch.check(now, pending, waiting)
                if idle:
                    finished = [p for p in drivers if p not in pending]
                    return hung_message(idle, watch.limit, finished)
            time.sleep(0.01)
        return None

    def _terminate(self, drivers: Drivers, grace: float, side_info: SideInfo) -> None:
        live = {n: d for n, d in drivers.items() if d.poll() is None}
        for name, proc in live.items():
            side_info[name]["terminated"] = True
            kill_group(proc.pid, signal.SIGTERM)
        end = time.monotonic() + grace
        while time.monotonic() < end and any(_group_left(d) for d in live.values()):
            time.sleep(0.02)
        for name, proc in live.items():
            kill_group(proc.pid, signal.SIGKILL)
            side_info[name].setdefault("exit_ns", time.time_ns())

    def _finish_sides(
        self,
        spec: RunSpec,
        side_info: dict[str, dict[str, Any]],
        drivers: dict[str, subprocess.Popen[bytes]],
    ) -> tuple[dict[str, SideRecord], list[str]]:
        """Each side's record (in launch order) from its driver's result, and the problems
        that fail the run."""
        sides: dict[str, SideRecord] = {}
        problems = []
        for side in spec.sides:
            info = side_info.get(side.name)
            if info is None:
                continue
            side_dir: Path = info["side_dir"]
            res_path = side_dir / "driver-result.json"
            try:
                res = json.loads(res_path.read_text())
                res_path.unlink()
            except (OSError, json.JSONDecodeError):
                res = {}
            proc = drivers.get(side.name)
            rc = proc.returncode if proc is not None else None
            collected, missing = ([], [])
            if spec.harness != "command":
                collected, missing = self.collect(spec, side, side_dir, info["cwd"])
            terminated = bool(info.get("terminated"))
            status = res.get("status") or (
                SideStatus.TERMINATED if terminated else SideStatus.FAILED
            )
            if terminated:
                status = SideStatus.TERMINATED
            message = res.get("message", "")
            if info.get("setup_failed") and status == SideStatus.OK:
                status, message = SideStatus.FAILED, "the driver did not start (see .driver.log)"
            if status == SideStatus.OK and missing:
                status = SideStatus.FAILED
                message = f"result file(s) not found: {', '.join(missing)}"
            if not res and not terminated:
                message = message or f"driver exited with {rc} (see {side.name}/.driver.log)"
            sides[side.name] = SideRecord(
                name=side.name,
                cpus=tuple(info["cpus"]),
                cwd=info["cwd"],
                status=status,
                start_ns=res.get("start_ns", info.get("go_ns")),
                end_ns=res.get("end_ns", info.get("exit_ns")),
                exit_code=res.get("exit_code", rc),
                driver_exit=rc,
                iterations=res.get("iterations"),
                filler=res.get("filler", 0),
                cpu_s=self.side_cpu(spec, side.name, res),
                runq_s=self.side_cpu(spec, side.name, res, "runq_s"),
                ran_on=info.get("ran_on"),
                message=message,
                result_files=tuple(collected),
                missing_results=tuple(missing),
                stderr_tail=stderr_tail(side_dir / "stderr.log"),
            )
            if status == SideStatus.FAILED and spec.harness == "micro":
                said = micro_error(side_dir, collected)
                message = f"{message}: {said}" if said and message else said or message
            if status == SideStatus.FAILED:
                problems.append(f"side {side.name}: {message}")
            # the driver's spec and its done flag (the handshake of busy_shorter_side) are
            # only needed while the run runs
            for tmp in (side_dir / ".driver.json", side_dir.parent / f".done.{side.name}"):
                try:
                    tmp.unlink()
                except OSError:
                    pass
        return sides, problems


def _readline(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """One line from the driver's stdout, or '' on EOF/timeout."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    end = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        left = end - time.monotonic()
        if left <= 0:
            return ""
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            return ""
        chunk = os.read(fd, 1)
        if not chunk:
            return ""
        buf += chunk
    return buf.decode().strip()


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    """Close the driver's stdin and stdout (the run no longer talks to it)."""
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:  # a broken stdin: nothing left to flush
                pass
