"""The container executor: every side of a run in its own container (thesis ch. 3.1, fig. 3.1).

It is the local executor (same drivers, timeouts, statuses, Ctrl-C and resume
handling) with these hooks filled in; docs/containers.md has the user's view.

One run:

1. ``before_launch``: one container per side from the side's ``image``, both
   started at once with ``<engine> run -d``; pid 1 is a keep-alive shell. The
   run directory is bind-mounted at its host path (so the side directories,
   the sduet sync directory and the drivers' done files have the same path
   inside and out), the package's harness and ``duet_sync.sh`` read-only at
   ``/.duetbench/``, plus the side's ``mounts``. Pinned with ``--cpuset-cpus``.
2. The drivers start (``driver_spec``): each runs
   ``<engine> exec NAME sh /.duetbench/harness.sh ...`` *before* ``ready``; the
   harness arms and blocks on a gate FIFO in its side directory, so the
   100-300 ms an ``exec`` costs are paid before the go. Built-in harness: the
   harness loops in the container and writes ``iterations.csv``; external: it
   execs the benchmark's command.
3. ``go`` in the drawn order opens the gates. Timeout or Ctrl-C
   (``_terminate``): ``<engine> stop`` (the keep-alive passes SIGTERM to every
   process in the container, waits up to ``kill_grace``, then SIGKILL).
4. ``collect``: ``<engine> cp`` copies each ``results:`` path out into the side
   directory (also after a timeout; the container is only stopped).
5. ``after_run``: ``<engine> rm -f`` (``remove_containers: false``: stop only).

No container outlives ``duet run``: every container is labelled with this
executor's session; the drivers remove their container when ``duet run`` dies
(parent-death signal, ``cleanup``); a guard process (``container_guard.sh``)
removes whatever is left when its pipe from ``duet run`` closes, however
``duet run`` ended; and ``start_experiment`` reaps containers of dead owners.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ExecutorError
from ..hosts import run_artifacts
from ..plan import RunSpec, SideSpec
from ..proctools.procfs import start_time
from ..schema import USABLE_STATUSES, RunStatus, SideStatus
from ..sync.protocol import ENV_WAIT
from .container_cleanup import ContainerGuard, Owner, labels, reap_dead_owners
from .container_cpu import ContainerCpu, CpuSampler, with_windows
from .container_engine import (
    ENGINE_TIMEOUT,
    KEEPALIVE,
    Engine,
    check_images,
    communicate,
    container_argv,
    engine_hint,
    engine_run,
    make_engine,
    option_words,
    spawn,
    tail,
)
from .driver import substitute_sync_dir
from .hang import CgroupCpu
from .local import (
    Drivers,
    LocalExecutor,
    ReadyTimeout,
    RunOutcome,
    SideInfo,
    expand_results,
    wants_pyperf_shim,
)
from .placement import resolve_placement

MOUNT_DIR = "/.duetbench"
HARNESS_IN = f"{MOUNT_DIR}/harness.sh"
SYNC_SH_IN = f"{MOUNT_DIR}/duet_sync.sh"
#: the pyperf shim and the handshake client it loads, in the package's own layout
PYPERF_SHIM_IN = f"{MOUNT_DIR}/sync/pyperf_shim"
HANDSHAKE_IN = f"{MOUNT_DIR}/micro/handshake.py"

_NAME_BAD = re.compile(r"[^a-zA-Z0-9_.-]+")
_NOT_FOUND = ("no such file", "could not be found", "not found")


#: harnesses that read their own CPU clock around every iteration or sample (the built-in
#: one in the container with shell builtins, whose handshake helper always blocks; duet
#: micro's worker): their sduet sides keep the default spinning wait
OWN_CPU_CLOCK = ("command", "python", "micro")


@dataclass
class _RunState:
    engine: Engine
    remove: bool
    run_options: list[str]
    names: dict[str, str] = field(default_factory=dict)  # pair -> container name
    images: dict[str, str] = field(default_factory=dict)  # pair -> image
    workdirs: dict[str, str] = field(default_factory=dict)  # pair -> working dir inside
    start_errors: dict[str, str] = field(default_factory=dict)
    init_pids: dict[str, int] = field(default_factory=dict)  # pair -> host pid of pid 1
    #: pair -> the CPU time of the container's cgroup, counted from the go
    usage: dict[str, CgroupCpu] = field(default_factory=dict)
    #: pair -> its CPU time (ns) once every container was up (other work is counted from there)
    up_ns: dict[str, int] = field(default_factory=dict)
    #: the containers' CPU time, run delay and handshake waits while the run goes
    sampler: CpuSampler | None = None
    cleanup_error: str = ""
    timings: dict[str, float] = field(default_factory=dict)


def _selinux_enforcing() -> bool:
    try:
        return Path("/sys/fs/selinux/enforce").read_text().strip() == "1"
    except OSError:
        return False


def _package_file(name: str, package: str = __package__ or "duetbench.execute") -> str:
    return str(resources.files(package).joinpath(name))


class ContainerExecutor(ContainerCpu, LocalExecutor):
    """Runs each side of a RunSpec in its own docker/podman container (see the module doc)."""

    def __init__(
        self,
        engine: str = "podman",
        host: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(host=host)
        self.settings = dict(settings or {})
        self.default_kind = engine if engine in ("podman", "docker") else "podman"
        self.engine = make_engine(self.settings, self.default_kind)
        self.name = self.engine.kind
        self.session = uuid.uuid4().hex[:12]
        self.owner = os.getpid()
        self.owner_start = start_time(self.owner)
        self.harness_path = _package_file("container_harness.sh")
        self.guard_path = _package_file("container_guard.sh")
        self.sync_sh_path = _package_file("duet_sync.sh", "duetbench.sync")
        self.images: dict[str, dict[str, str]] = {}  # image -> {"id", "workdir"}
        self.reaped: list[str] = []
        self.experiment = ""  # for the labels of the artifact containers
        self._runs: dict[str, _RunState] = {}
        self._active: _RunState | None = None
        self._guard: ContainerGuard | None = None
        self._started = False
        self._per_run = False  # no start/end_experiment around the runs: guard per run
        self._count = 0

    # ------------------------------------------------------------------ experiment
    def start_experiment(self, plan: list[RunSpec]) -> None:
        """Check the engine and every run's image (pulling missing ones); reap leftovers of
        dead owners. Raises ExecutorError before anything runs. Starts no process: the
        guard starts with the first container."""
        if plan and not self.experiment:
            self.experiment = plan[0].experiment
        if not self._started:
            if shutil.which(self.engine.argv[0]) is None:
                raise ExecutorError(
                    f"the {self.engine.kind} executor needs `{self.engine.argv[0]}`, which is not "
                    "installed here (set `engine:` to the engine's command, or pass --executor local)"
                )
            self._check_images(plan)
            self._started = True
            self.reaped = self.reap_dead_owners()
        else:
            self._check_images(plan)

    def end_experiment(self) -> None:
        """Close the guard's pipe: it sweeps this session's containers (normally none) and exits."""
        guard, self._guard = self._guard, None
        if guard is not None:
            guard.close()

    def _ensure_guard(self) -> None:
        """Start the guard before the session's first container (see container_guard.sh)."""
        if self._guard is None:
            self._guard = ContainerGuard(self.guard_path, self.session, self.engine)

    def _tell_guard(self, pid: int) -> None:
        if self._guard is not None:
            self._guard.watch(pid)

    def reap_dead_owners(self) -> list[str]:
        """Remove containers of this host whose ``duet run`` is gone; return their names.

        Containers kept on purpose (``remove_containers: false``) are only stopped.
        """
        return reap_dead_owners(self.engine, self.host)

    def _check_images(self, plan: list[RunSpec]) -> None:
        check_images(self.engine, plan, self.images)

    def host_info(self, artifacts: Any) -> dict[str, Any]:
        """The engine, and per image its id and the artifact commands' output inside it."""
        version = engine_run(self.engine("--version"), shield=False)
        images: dict[str, Any] = {}
        for image, meta in self.images.items():
            entry: dict[str, Any] = {"id": meta["id"], "workdir": meta["workdir"]}
            if artifacts:
                entry["artifacts"] = self._image_artifacts(image, list(artifacts))
            images[image] = entry
        return {
            "container": {
                "engine": list(self.engine.argv),
                "kind": self.engine.kind,
                "version": version.stdout.strip(),
                "run_options": option_words(self.settings.get("run_options")),
                "images": images,
            }
        }

    def _image_artifacts(self, image: str, artifacts: list[Any]) -> dict[str, Any]:
        self._ensure_guard()
        name = self._container_name("artifacts", self.experiment, "")
        argv = self.engine(
            "run", "-d", "--name", name, *self._labels(self.experiment, "", "", remove=True),
            "--entrypoint", "/bin/sh", *option_words(self.settings.get("run_options")),
            image, "-c", KEEPALIVE,
        )  # fmt: skip
        started = engine_run(argv)
        try:
            if started.returncode != 0:
                msg = tail(started.stderr, 400) + engine_hint(started.stderr)
                return {"error": f"the container did not start: {msg}"}
            return run_artifacts(artifacts, prefix=self.engine("exec", name))
        finally:
            engine_run(self.engine.rm(name))

    # ------------------------------------------------------------------ one run
    def _state(self, spec: RunSpec) -> _RunState:
        st = self._runs.get(spec.run_id)
        if st is None:
            settings = {**self.settings, **(spec.container or {})}
            st = _RunState(
                engine=make_engine(settings, self.default_kind),
                remove=bool(settings.get("remove_containers", True)),
                run_options=option_words(settings.get("run_options")),
            )
            self._runs[spec.run_id] = st
        return st

    def _container_name(self, run_id: str, experiment: str, pair: str) -> str:
        """``duet-<experiment>-<run>-<pair>-<session><n>``: unique, and findable by name."""
        self._count += 1
        parts = [_NAME_BAD.sub("_", p)[:60] for p in (experiment, run_id, pair) if p]
        return "-".join(["duet", *parts, f"{self.session}{self._count}"])

    def _labels(self, experiment: str, run_id: str, pair: str, *, remove: bool) -> list[str]:
        owner = Owner(self.owner, self.owner_start, self.host, self.session)
        return labels(owner, experiment, run_id, pair, remove=remove)

    def _mounts(self, spec: RunSpec, side: SideSpec, run_dir: Path) -> list[str]:
        z = ",z" if _selinux_enforcing() else ""
        out = [
            "-v", f"{run_dir.resolve()}:{os.path.abspath(run_dir)}:rw{z}",
            "-v", f"{self.harness_path}:{HARNESS_IN}:ro{z}",
            "-v", f"{self.sync_sh_path}:{SYNC_SH_IN}:ro{z}",
        ]  # fmt: skip
        if wants_pyperf_shim(spec, side):
            out += [
                "-v", f"{_package_file('pyperf_shim', 'duetbench.sync')}:{PYPERF_SHIM_IN}:ro{z}",
                "-v", f"{_package_file('handshake.py', 'duetbench.micro')}:{HANDSHAKE_IN}:ro{z}",
            ]  # fmt: skip
        for m in side.mounts:
            src, sep, rest = m.partition(":")
            if sep and src.startswith((".", "~")):  # a host path relative to the config file
                p = Path(src).expanduser()
                if not p.is_absolute() and spec.base_dir:
                    p = Path(spec.base_dir) / p
                m = f"{p.resolve()}:{rest}"
            out += ["-v", m]
        return out

    def _side_env(self, spec: RunSpec, side: SideSpec, run_dir: Path) -> dict[str, str]:
        env = dict(side.env)
        env.update(
            {
                "DUET_PAIR": side.pair,
                "DUET_RUN": spec.run_id,
                "DUET_METHOD": spec.method,
                "DUET_OUTPUT_DIR": os.path.join(os.path.abspath(run_dir), side.pair),
                "DUET_BENCHMARK": spec.benchmark,
                "DUET_REP": str(spec.rep),
                "DUET_SYNC_SH": SYNC_SH_IN,
            }
        )
        return env

    def before_launch(self, spec: RunSpec, run_dir: Path) -> None:
        """Start one container per side, all at once, and wait until every one is up."""
        if not self._started:  # an executor used without run_experiment (e.g. a cluster worker)
            self.start_experiment([spec])
            self._per_run = True
        else:
            self._check_images([spec])
        st = self._state(spec)
        self._active = st
        self._ensure_guard()
        placement = resolve_placement(spec.cpus, self.host_cpus)
        t0 = time.monotonic()
        procs: dict[str, subprocess.Popen[str]] = {}
        try:
            for side in spec.sides:
                name = self._container_name(spec.run_id, spec.experiment, side.pair)
                image = side.image or ""
                st.names[side.pair] = name
                st.images[side.pair] = image
                st.workdirs[side.pair] = side.workdir or self.images.get(image, {}).get(
                    "workdir", "/"
                )
                argv = self.engine(
                    "run", "-d", "--name", name,
                    *self._labels(spec.experiment, spec.run_id, side.pair, remove=st.remove),
                    "--entrypoint", "/bin/sh",
                )  # fmt: skip
                my_cpus = placement.side_cpus(side)
                if my_cpus and placement.restricts(self.host_cpus):
                    argv += ["--cpuset-cpus", ",".join(map(str, my_cpus))]
                for k, v in self._side_env(spec, side, run_dir).items():
                    argv += ["-e", f"{k}={v}"]
                argv += self._mounts(spec, side, run_dir)
                if side.workdir:
                    argv += ["-w", side.workdir]
                argv += [*st.run_options, image, "-c", KEEPALIVE]
                procs[side.pair] = spawn(argv)
                self._tell_guard(procs[side.pair].pid)
        finally:  # even on Ctrl-C: let every `run` finish, so that after_run can remove it
            for pair, proc in procs.items():
                res = communicate(proc, ReadyTimeout)
                if res.returncode != 0:
                    st.start_errors[pair] = tail(res.stderr, 800) + engine_hint(res.stderr)
            st.timings["start_s"] = round(time.monotonic() - t0, 3)
        self._find_init_pids(st)
        for pair, pid in st.init_pids.items():  # counted from the go (before_go)
            probe = CgroupCpu.of_process(pid)
            used = probe.usage_ns() if probe is not None else None
            if probe is not None and used is not None:
                st.usage[pair], st.up_ns[pair] = probe, used
        if st.usage:
            st.sampler = CpuSampler(st.usage)

    def _find_init_pids(self, st: _RunState) -> None:
        """The host pid of every started container's pid 1: hang detection and the sides'
        CPU time read its cgroup (execute/hang.py). Asked once, before the go."""
        pairs = [p for p in st.names if p not in st.start_errors]
        if not pairs:
            return
        p = engine_run(
            st.engine("inspect", "--format", "{{.State.Pid}}", *(st.names[x] for x in pairs))
        )
        values = p.stdout.split()
        if p.returncode == 0 and len(values) == len(pairs):
            st.init_pids = {
                pair: int(v) for pair, v in zip(pairs, values, strict=True) if v.isdigit()
            }

    def side_cwd(self, spec: RunSpec, side: SideSpec, side_dir: Path) -> str:
        """Where the driver runs the engine client: the side directory on the host."""
        return str(side_dir)

    def exec_prefix(self, spec: RunSpec, side: SideSpec, side_dir: Path) -> list[str]:
        st = self._state(spec)
        return st.engine("exec", st.names.get(side.pair, ""))

    def driver_spec(
        self, spec: RunSpec, side: SideSpec, side_dir: Path, driver_spec: dict[str, Any]
    ) -> dict[str, Any]:
        """Run the side through the in-container harness behind a start gate (module doc, 2.)."""
        st = self._state(spec)
        name = st.names[side.pair]
        d = dict(driver_spec)
        # every path the container sees must be absolute (the run directory is mounted there)
        side_dir = Path(os.path.abspath(side_dir))
        for key in ("side_dir", "own_done_file", "peer_done_file", "sync_dir"):
            if d.get(key):
                d[key] = os.path.abspath(d[key])
        env = dict(d.get("env") or {})
        for key in ("DUET_OUTPUT_DIR", "DUET_SYNC_DIR"):
            if env.get(key):
                env[key] = os.path.abspath(env[key])
        env["DUET_SYNC_SH"] = SYNC_SH_IN
        env.pop("DUET_CPU_SWAP", None)  # a pinned container's cpuset holds its own CPU only
        if spec.method == "sduet" and spec.harness not in OWN_CPU_CLOCK:
            # its CPU time is the group's, read at every handshake: a side spinning for its
            # go is read up to a scheduler tick late, an asleep one exactly
            # (docs/containers.md, "CPU time"); the config's `env:` may still ask for spin
            env.setdefault(ENV_WAIT, "block")
        d["env"] = env
        prefix = st.engine("exec")
        for k, v in env.items():
            prefix += ["-e", f"{k}={v}"]
        d["exec_prefix"] = [*prefix, name]
        gate = {
            "fifo": str(side_dir / ".gate"),
            "armed": str(side_dir / ".armed"),
            "timeout": ReadyTimeout,
        }
        if spec.harness == "command":
            args = ["-o", str(side_dir)]
            if d.get("iterations") is not None:
                args += ["-n", str(int(d["iterations"]))]
            if d.get("time_budget"):
                args += ["-t", str(int(float(d["time_budget"]) * 1e9))]
            if d.get("busy_shorter_side") and d.get("peer_done_file"):
                args += ["-B", "-p", d["peer_done_file"]]
            if d.get("own_done_file"):
                args += ["-d", d["own_done_file"]]
            if d.get("sync"):
                args.append("-s")
            argv = container_argv(side.command)
            d["harness"] = "container-loop"
            d["count_iterations"] = True
        else:
            command = side.command
            if d.get("sync_dir"):
                command = substitute_sync_dir(command, d["sync_dir"])
            if d.get("pyperf_shim"):  # first on the container's own PYTHONPATH (docs/sync.md)
                command = (
                    f"PYTHONPATH={PYPERF_SHIM_IN}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                    f"export PYTHONPATH\n{command}"
                )
            args = ["-1"]
            argv = ["/bin/sh", "-c", command]
        d["command"] = shlex.join(
            ["/bin/sh", HARNESS_IN, *args, "-g", gate["fifo"], "-a", gate["armed"], "--", *argv]
        )
        d["sync_dir"] = None  # `$$` is already replaced
        d["pyperf_shim"] = None  # the command above sets it inside the container
        d["gate"] = gate
        d["cleanup"] = [st.engine.rm(name) if st.remove else st.engine.stop(1, name)]
        return d

    def _terminate(self, drivers: Drivers, grace: float, side_info: SideInfo) -> None:
        """Timeout or Ctrl-C: stop the live sides' containers (SIGTERM inside, grace, SIGKILL)."""
        st = self._active
        live = [p for p, d in drivers.items() if d.poll() is None]
        stopper = None
        if st is not None and live:
            for pair in live:
                side_info[pair]["terminated"] = True
            names = [st.names[p] for p in live if p in st.names]
            stopper = subprocess.Popen(
                st.engine.stop(grace, *names),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                process_group=0,
            )
        try:
            super()._terminate(drivers, grace, side_info)
        finally:
            if stopper is not None:
                communicate(stopper, grace + ENGINE_TIMEOUT)

    def collect(
        self, spec: RunSpec, side: SideSpec, side_dir: Path, cwd: str
    ) -> tuple[list[str], list[str]]:
        """``<engine> cp`` every ``results:`` path (relative = to the working dir inside)."""
        st = self._state(spec)
        name = st.names.get(side.pair, "")
        workdir = st.workdirs.get(side.pair, "/")
        host_side = os.path.abspath(side_dir)
        collected: list[str] = []
        missing: list[str] = []
        for res in expand_results(side.results, Path(host_side)):
            inner = posixpath.normpath(posixpath.join(workdir, res))
            if inner == host_side or inner.startswith(host_side + "/"):  # written to the mount
                if Path(inner).exists():
                    collected.append(str(Path(inner).relative_to(host_side)))
                else:
                    missing.append(res)
                continue
            dst = side_dir / "results"
            dst.mkdir(exist_ok=True)
            p = engine_run(st.engine("cp", f"{name}:{inner}", f"{dst}/"))
            if p.returncode == 0:
                collected.append(f"results/{posixpath.basename(inner)}")
            elif any(s in p.stderr.lower() for s in _NOT_FOUND):
                missing.append(res)
            else:
                missing.append(f"{res} ({tail(p.stderr, 200)})")
        return collected, missing

    def after_run(self, spec: RunSpec, run_dir: Path) -> None:
        """Remove the run's containers (or stop them: ``remove_containers: false``)."""
        st = self._runs.get(spec.run_id)
        self._active = None
        for side in spec.sides:  # a FIFO left behind would block whoever reads the run
            for leftover in (".gate", ".armed"):
                try:
                    (run_dir / side.pair / leftover).unlink()
                except OSError:
                    pass
        if st is None or not st.names:
            return
        t0 = time.monotonic()
        names = list(st.names.values())
        argv = st.engine.rm(*names) if st.remove else st.engine.stop(spec.kill_grace, *names)
        for _attempt in range(3):
            p = engine_run(argv)
            errors = [
                line
                for line in p.stderr.splitlines()
                if line.strip() and "no such container" not in line.lower()
            ]
            if p.returncode == 0 or not errors:
                st.cleanup_error = ""
                break
            st.cleanup_error = tail("\n".join(errors), 500)
            time.sleep(0.5)
        st.timings["cleanup_s"] = round(time.monotonic() - t0, 3)

    def execute(self, spec: RunSpec, run_dir: Path, **kwargs: Any) -> RunOutcome:
        """The local executor's run, plus what the containers were and why one failed to start."""
        try:
            outcome = super().execute(spec, run_dir, **kwargs)
        finally:
            st = self._runs.pop(spec.run_id, None)
            if self._per_run:
                self.end_experiment()
        if st is None:
            return outcome
        record = outcome.record
        container: dict[str, Any] = {
            "engine": list(st.engine.argv),
            "removed": st.remove,
            "run_options": st.run_options,
            **st.timings,
        }
        if st.cleanup_error:
            container["cleanup_error"] = st.cleanup_error
        problems = []
        sides = {}
        for name, side in record.sides.items():
            image = st.images.get(name, "")
            side = replace(
                side,
                container={
                    "name": st.names.get(name),
                    "image": image,
                    "image_id": self.images.get(image, {}).get("id"),
                    "workdir": st.workdirs.get(name),
                },
            )
            clock = run_dir / name / "harness.txt"
            if spec.harness == "command" and clock.exists():
                said = dict(ln.partition("=")[::2] for ln in clock.read_text().splitlines())
                side = replace(side, clock=said.get("clock", ""))
            if name in st.start_errors:
                message = f"the container did not start: {st.start_errors[name]}"
                side = replace(side, status=SideStatus.FAILED, message=message)
                problems.append(f"side {name}: {message}")
            sides[name] = side
        record = replace(record, container=container, sides=sides)
        if st.sampler is not None and record.status in USABLE_STATUSES:
            try:
                record = with_windows(record, spec.harness, run_dir, st.sampler.samples)
            except Exception:  # a measurement must never lose the run (run.json: no window)
                pass
        if problems and record.status in (RunStatus.OK, RunStatus.FAILED):
            record = record.with_status(RunStatus.FAILED, "; ".join(problems))
        return replace(outcome, record=record)
