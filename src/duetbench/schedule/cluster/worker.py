"""What runs on a Dask worker: the host probe, host commands, one run, the abort.

The worker-side functions run the executor synchronously in the Dask task
thread. That matters: the drivers ask for ``PR_SET_PDEATHSIG``, which fires
when the *thread* that forked them exits. A Dask worker thread only exits
between tasks (shutdown, or a seceded task rejoining), and the executor has
reaped every driver before the task returns, so the signal fires only when the
worker process itself dies -- exactly when the workload must go too. Never call
``secede()`` or move ``execute`` to a short-lived thread here.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ...execute.base import get_executor
from ...hosts import detect_host, host_name, run_artifacts
from ...plan import RunSpec
from ...proctools.groups import kill_group
from ...proctools.guarded import run_captured
from ...proctools.procfs import PPID, boot_id, cmdline, gone, pids, start_time, stat_fields

#: Environment variable naming the host a worker reports (default: its host name). Lets
#: several workers on one machine count as distinct hosts (``local:N``, tests).
HOST_ENV = "DUET_HOST_NAME"
#: Where a worker builds run directories before sending them back (default: the temp dir).
WORK_DIR_ENV = "DUET_WORK_DIR"

_INSTANCE = uuid.uuid4().hex  # identifies this worker process in results


def worker_host_name() -> str:
    """The host this process counts as: ``$DUET_HOST_NAME`` or the machine's host name."""
    return os.environ.get(HOST_ENV) or host_name()


def probe_worker(artifacts: list[tuple[str, str]]) -> dict[str, Any]:
    """On a worker: its host name and configuration (hosts/<host>.json), once per worker."""
    host = worker_host_name()
    info = detect_host()
    info["host"] = host
    info["artifacts"] = run_artifacts(artifacts)
    return {"host": host, "info": info, "pid": os.getpid(), "instance": _INSTANCE}


def host_command(command: str, base_dir: str) -> dict[str, Any]:
    """On a worker: the experiment's ``setup``/``teardown`` command (once per host), in its
    own process group that dies with the worker (proctools/guarded.py)."""
    cwd = base_dir if base_dir and os.path.isdir(base_dir) else None
    try:
        p = run_captured(["/bin/sh", "-c", command], cwd=cwd, timeout=3600, stdout_limit=0)
    except OSError as exc:
        return {"exit_code": None, "stderr": str(exc)}
    if p.timed_out:
        return {"exit_code": None, "stderr": f"timed out after 3600 s\n{p.stderr}"}
    return {"exit_code": p.returncode, "stderr": p.stderr}


def pack_dir(root: Path) -> list[tuple[str, str, int, bytes | str]]:
    """A directory's contents as ``(relative path, kind, mode, data)`` (see
    :meth:`ResultsStore.commit_run_contents`). FIFOs, sockets and devices are skipped."""
    out: list[tuple[str, str, int, bytes | str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in sorted(dirnames) + sorted(filenames):
            path = base / name
            rel = str(path.relative_to(root))
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "l", 0, os.readlink(path)))
            elif stat.S_ISDIR(st.st_mode):
                out.append((rel, "d", stat.S_IMODE(st.st_mode), b""))
            elif stat.S_ISREG(st.st_mode):
                try:
                    out.append((rel, "f", stat.S_IMODE(st.st_mode), path.read_bytes()))
                except OSError:
                    continue
        dirnames[:] = [d for d in dirnames if not os.path.islink(base / d)]
    return out


def dask_worker_environ() -> dict[str, str]:
    """What Dask's nanny puts in a worker's environment when the user did not set it."""
    try:
        import dask
    except ImportError:
        return {}
    cfg = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    env = {k: str(v) for k, v in cfg.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"  # distributed.nanny: a fixed hash seed for its workers
    return env


def strip_dask_environ() -> list[str]:
    """Remove the variables Dask's nanny sets in worker processes (``OMP_NUM_THREADS=1``,
    ``MALLOC_TRIM_THRESHOLD_``, ``PYTHONHASHSEED``...: :func:`dask_worker_environ`) where they
    still hold Dask's value, so a run sees the environment it would see without --cluster.
    Returns the names removed. Set such variables in the benchmark's ``env:`` instead."""
    removed = []
    for key, value in dask_worker_environ().items():
        if key in os.environ and os.environ[key] == value:
            del os.environ[key]
            removed.append(key)
    return removed


#: in every run directory a worker builds: who built it (:func:`sweep_dead_workers_dirs`)
OWNER_FILE = ".duet-owner"


def _owner(pid: int | None = None) -> str:
    """Who builds a run directory: this machine (host name, boot) and the worker process
    (pid and start time, as container_cleanup identifies a container's owner)."""
    pid = os.getpid() if pid is None else pid
    return f"{host_name()} {boot_id()} {pid} {start_time(pid)}"


def sweep_dead_workers_dirs(work: str | None) -> list[Path]:
    """Remove the run directories that killed workers of this machine left behind.

    A worker removes its run directory when the run ends, whatever happens -- unless the
    worker itself is killed (SIGKILL, out of memory). The next run on the machine removes
    such directories: those with an owner file naming this machine (host name and boot)
    and a process that is gone. Directories of other machines sharing ``work`` and of
    live workers are left alone. Returns the directories removed."""
    base = Path(work or tempfile.gettempdir())
    me = _owner().rsplit(" ", 2)[0]
    removed = []
    try:
        candidates = [d for d in base.iterdir() if d.name.startswith("duet-")]
    except OSError:
        return removed
    for d in candidates:
        try:
            owner = (d / OWNER_FILE).read_text().strip()
        except OSError:
            continue  # not a run directory of a worker (or not ours to read)
        parts = owner.rsplit(" ", 2)  # machine, pid, start
        if len(parts) != 3 or parts[0] != me or not parts[1].isdigit():
            continue
        if not gone(int(parts[1]), parts[2]):  # a zombie builds nothing either
            continue
        shutil.rmtree(d, ignore_errors=True)
        if not d.exists():
            removed.append(d)
    return removed


def execute_on_worker(payload: dict[str, Any]) -> dict[str, Any]:
    """On a worker (a Dask task holding ``duet=1``): execute one run, return its directory.

    Runs the executor in *this* thread (see the module docstring on PR_SET_PDEATHSIG).
    """
    spec = RunSpec.from_dict(payload["spec"])
    host = worker_host_name()
    strip_dask_environ()
    work = os.environ.get(WORK_DIR_ENV) or None
    sweep_dead_workers_dirs(work)
    root = Path(tempfile.mkdtemp(prefix=f"duet-{payload['token']}-{spec.run_id}-", dir=work))
    root = root.resolve()  # DUET_WORK_DIR may be relative: the sides run in other directories
    try:
        (root / OWNER_FILE).write_text(_owner() + "\n")
        setup = None
        if payload.get("setup"):
            setup = host_command(payload["setup"], spec.base_dir)
        executor = get_executor(payload["executor"], host=host, settings=payload.get("container"))
        run_dir = root / "run"
        run_dir.mkdir()
        t0 = time.monotonic()
        outcome = executor.execute(spec, run_dir)
        return {
            "record": outcome.record.to_json(),
            "run_dir": str(run_dir),  # where the record's paths point on the worker
            "files": pack_dir(run_dir),
            "error": None if outcome.exception is None else repr(outcome.exception),
            "host": host,
            "instance": _INSTANCE,
            "execute_s": time.monotonic() - t0,
            "setup": setup,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def abort_session(token: str) -> int:
    """On a worker (``client.run``): SIGTERM the driver process groups of one coordinator's runs.

    The executor then stops the rest and returns; the coordinator discards the result.
    """
    killed = 0
    me = os.getpid()
    for pid in pids():
        fields, args = stat_fields(pid), cmdline(pid)
        try:
            ppid = int(fields[PPID]) if fields is not None else None
        except (IndexError, ValueError):
            continue
        cmd = " ".join(args or ())
        if ppid == me and "duetbench.execute.driver" in cmd and f"duet-{token}-" in cmd:
            kill_group(int(pid), signal.SIGTERM)
            killed += 1
    return killed
