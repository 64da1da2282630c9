"""The per-side driver: one process per side of a run, pinned with its workload.

Started by an executor as ``python -m duetbench.execute.driver SPEC.json``. It
keeps imports to the standard library and ``driver_cpu.py`` (what the side's processes
cost: CPU time and run delay) so it starts fast. Protocol with the
executor: the driver prints ``ready`` on stdout when set up, waits for a line
on stdin (``go``), runs the side, writes ``driver-result.json`` into the side
directory and exits (0 ok, 1 the workload failed, 3 the parent is gone,
143 terminated).

Built-in harness (``harness == "command"``): runs the command once per
iteration and appends ``iteration,start_ns,end_ns,duration_ns,filler,exit_code,
cpu_ns,runq_ns`` to ``iterations.csv`` (flushed per row, so a timeout keeps what was
measured). start/end are ``time.time_ns()``; the duration is from
``time.perf_counter_ns()``. ``cpu_ns`` is the CPU time (user + system) of the
iteration's process and of every process it waited for (``wait4``'s resource usage),
and the driver's own while it started and reaped it;
``runq_ns`` the time the iteration was ready to run but waited for a CPU: the
process's scheduler run delay (``/proc/<pid>/schedstat``, read before it is reaped)
plus the driver's own while it started and reaped it (both empty where not measured:
a command run through ``exec_prefix`` -- containers --, or no ``/proc``). With them
the analysis can take out what other work on the host did to the wall time
(docs/statistics.md, "Beside other work: CPU time").
Under sduet every iteration first passes the sync handshake (duetbench.sync).
External harness: runs the command once; the harness loops by itself. The driver
then follows the run delay of the harness's processes (``runq_s`` in the result,
sampled every ``driver_cpu.RUNQ_PERIOD`` seconds from ``/proc``), which says with ``cpu_s``
whether the side was CPU-bound.

Optional keys, used by the container executor (absent for local runs):
- ``exec_prefix`` is also put before ``setup`` and ``teardown`` (they run where
  the workload runs);
- ``cleanup``: commands (argv lists) run when the executor dies (parent-death
  signal) before the driver takes its process group down, e.g. removing the
  side's container;
- ``gate`` (``{"fifo": ..., "armed": ...}``): the command is started *before*
  ``ready``; it creates the ``armed`` file and blocks reading the FIFO, which
  the driver creates and holds open; on ``go`` the driver writes ``go\n`` to
  it. The launch latency (e.g. ``podman exec``) is paid before the go;
- ``count_iterations``: the command runs the built-in harness loop itself and
  writes ``iterations.csv``; the driver counts its rows for the result.

The result's ``cpu_s`` is the CPU time (user + system) the side used from its go to
its end: the driver's own and every child's it reaped in that window. A gated command
(containers) counts from its start, and the container executor does not record it:
the driver's children there are the engine's client, not the workload. With the
window's length it says what share of a CPU the side got; a side that shares its CPU with another task gets less than its peer
(docs/statistics.md, section Notes, `unbalanced`).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from .driver_cpu import OWN_SCHEDSTAT, TreeDelay, reap_measured, reaped_cpu, schedstat

#: characters that make a command need a shell (else it is split and run directly)
SHELL_CHARS = re.compile(r"[|&;<>()$`\\\"'*?\[\]#~{}\n=%!]")
PR_SET_PDEATHSIG = 1


class _State:
    child: subprocess.Popen[bytes] | None = None
    stopping = False


def _die_with_parent(parent_pid: int, cleanup: list[list[str]] | None = None) -> None:
    """Ask the kernel for SIGUSR1 when the executor dies; then take the whole group down."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        _kill_group(cleanup)


def _kill_group(cleanup: list[list[str]] | None = None) -> None:
    """Run the cleanup commands (each in its own session, at most 30 s), then SIGKILL our group."""
    try:
        for argv in cleanup or []:
            try:
                subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    timeout=30,
                )
            except (OSError, subprocess.SubprocessError):
                pass
    finally:
        try:
            os.killpg(os.getpgid(0), signal.SIGKILL)
        finally:
            os._exit(3)


def _on_term(state: _State) -> Any:
    def handler(signum: int, _frame: Any) -> None:
        state.stopping = True
        if state.child is None:
            raise SystemExit(143)
        # the child got the same signal (same process group); let it finish writing

    return handler


def argv_for(command: str) -> list[str]:
    """Exec directly when the command is plain words; through /bin/sh when it uses shell syntax."""
    if SHELL_CHARS.search(command):
        return ["/bin/sh", "-c", command]
    words = shlex.split(command)
    if not words:
        return ["/bin/sh", "-c", command]
    exe = shutil.which(words[0]) if "/" not in words[0] else words[0]
    return [exe or words[0], *words[1:]]


def substitute_sync_dir(command: str, path: str) -> str:
    """``command`` with every ``$$`` replaced by ``path`` as one shell word (docs/sync.md).

    Outside quotes ``$$`` becomes the shell-quoted path; inside ``"..."`` the path with
    ``\\ $ ` "`` escaped; inside ``'...'`` the quote is closed around the quoted path.
    So shell syntax in the experiment name or the ``-o`` path is never run, and a space
    does not split the path. A backslash-escaped ``$`` is left alone.
    """
    out: list[str] = []
    state = ""  # "" outside quotes, "'" or '"' inside
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c == "\\" and state != "'" and i + 1 < n:
            out.append(command[i : i + 2])
            i += 2
            continue
        if command.startswith("$$", i):
            if state == '"':
                out.append(re.sub(r'([\\$`"])', r"\\\1", path))
            elif state == "'":
                out.append("'" + shlex.quote(path) + "'")
            else:
                out.append(shlex.quote(path))
            i += 2
            continue
        if state == "" and c in "'\"":
            state = c
        elif c == state:
            state = ""
        out.append(c)
        i += 1
    return "".join(out)


def _run_shell(
    command: str, cwd: str, env: dict[str, str], out: Any, err: Any, prefix: list[str] | None = None
) -> int:
    return subprocess.run(
        [*(prefix or []), "/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        stdout=out,
        stderr=err,
        stdin=subprocess.DEVNULL,
    ).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec: dict[str, Any] = json.loads(Path(argv[0]).read_text())
    state = _State()
    cleanup: list[list[str]] = [list(c) for c in spec.get("cleanup") or []]
    signal.signal(signal.SIGUSR1, lambda *_: _kill_group(cleanup))
    _die_with_parent(int(spec["parent_pid"]), cleanup)
    signal.signal(signal.SIGTERM, _on_term(state))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the executor decides; Ctrl-C reaches it, not us

    side_dir = Path(spec["side_dir"])
    cwd = spec.get("cwd") or str(side_dir)
    env = dict(os.environ)
    env.update(spec.get("env", {}))
    cpus = spec.get("cpus") or []
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
    prefix: list[str] = list(spec.get("exec_prefix") or [])

    result: dict[str, Any] = {
        "pair": spec["pair"],
        "status": "ok",
        "exit_code": 0,
        "iterations": 0,
        "filler": 0,
        "message": "",
    }
    out = open(side_dir / "stdout.log", "ab")
    err = open(side_dir / "stderr.log", "ab")
    try:
        if spec.get("setup"):
            rc = _run_shell(spec["setup"], cwd, env, out, err, prefix)
            if rc != 0:
                result.update(
                    status="failed", exit_code=rc, message=f"setup command exited with {rc}"
                )
                _finish(side_dir, result, spec)
                print("failed", flush=True)
                return 1
        gated = None
        if spec.get("gate"):
            gated = _start_gated(spec, cwd, env, prefix, out, err)
            if isinstance(gated, str):
                result.update(status="failed", exit_code=None, message=gated)
                _finish(side_dir, result, spec)
                print("failed", flush=True)
                return 1
        print("ready", flush=True)
        if not sys.stdin.readline().strip():
            return 3
        result["start_ns"] = time.time_ns()
        cpu_before = reaped_cpu()
        if gated is not None:
            _run_gated(spec, state, gated, result)
        else:
            side = _Side(spec, state, cwd, env, prefix, out, err, result)
            (_builtin if spec["harness"] == "command" else _external)(side)
        result["end_ns"] = time.time_ns()
        result["cpu_s"] = round(max(0.0, reaped_cpu() - cpu_before), 6)
    except SystemExit:
        result.update(status="terminated", message="terminated by the executor")
        result.setdefault("end_ns", time.time_ns())
    finally:
        if spec.get("gate"):  # a FIFO left in the side directory would block readers of the run
            for key in ("fifo", "armed"):
                Path(spec["gate"][key]).unlink(missing_ok=True)
        if spec.get("count_iterations") and "start_ns" in result:
            _count_iterations(side_dir, result)
        _mark_done(spec)
        if spec.get("teardown"):
            try:
                _run_shell(spec["teardown"], cwd, env, out, err, prefix)
            except OSError:
                pass
        out.close()
        err.close()
    _finish(side_dir, result, spec)
    if result["status"] == "terminated":
        return 143
    return 0 if result["status"] == "ok" else 1


def _mark_done(spec: dict[str, Any]) -> None:
    done = spec.get("own_done_file")
    if done:
        try:
            Path(done).touch()
        except OSError:
            pass
    if spec.get("sync"):
        try:
            from duetbench import sync

            sync.done(spec.get("env", {}))
        except Exception:  # the coordinator also learns it from our exit
            pass


def _finish(side_dir: Path, result: dict[str, Any], spec: dict[str, Any]) -> None:
    tmp = side_dir / ".driver-result.json.tmp"
    tmp.write_text(json.dumps(result))
    os.replace(tmp, side_dir / "driver-result.json")


def _spawn(
    state: _State, argv: list[str], cwd: str, env: dict[str, str], out: Any, err: Any
) -> int:
    state.child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL
    )
    try:
        return state.child.wait()
    finally:
        state.child = None


def _spawn_measured(
    state: _State, argv: list[str], cwd: str, env: dict[str, str], out: Any, err: Any
) -> tuple[int, int | None, int | None]:
    """Run one iteration's command: (exit status, CPU ns, run delay ns), measured by
    ``driver_cpu.reap_measured`` (the driver's own share while it started and reaped
    the child included)."""
    own_before = schedstat(OWN_SCHEDSTAT)
    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL
    )
    state.child = child
    try:
        return reap_measured(child, own_before)
    finally:
        state.child = None


class _Side(NamedTuple):
    """What a harness run needs: the spec, the driver's state, where and how to run the
    command, and the result to fill."""

    spec: dict[str, Any]
    state: _State
    cwd: str
    env: dict[str, str]
    prefix: list[str]
    out: Any
    err: Any
    result: dict[str, Any]


def _command(spec: dict[str, Any]) -> str:
    """The harness's command, with a sduet's sync directory in it."""
    command = spec["command"]
    if spec.get("sync_dir"):
        command = substitute_sync_dir(command, spec["sync_dir"])
    return command


def _builtin(side: _Side) -> None:
    """The built-in harness: the command once per iteration, timed here."""
    spec, state, cwd, env, prefix, out, err, result = side
    argv = prefix + argv_for(spec["command"])
    iterations = spec.get("iterations")
    budget_ns = int(spec["time_budget"] * 1e9) if spec.get("time_budget") else None
    sync_wait = None
    if spec.get("sync"):
        from duetbench import sync

        sync_env = dict(env)

        def sync_wait() -> None:
            sync.wait(sync_env)

        # the built-in harness does the handshake itself: a command that would sync too
        # (e.g. examples/workloads/workload) must not see the sync directory
        env = {k: v for k, v in env.items() if k != "DUET_SYNC_DIR"}

    peer_done = Path(spec["peer_done_file"]) if spec.get("peer_done_file") else None
    busy = bool(spec.get("busy_shorter_side")) and peer_done is not None
    # through a prefix (a container engine's client) the child is not the workload
    measured = not prefix
    csv = open(Path(spec["side_dir"]) / "iterations.csv", "a", buffering=1)
    csv.write("iteration,start_ns,end_ns,duration_ns,filler,exit_code,cpu_ns,runq_ns\n")
    t_begin = time.perf_counter_ns()
    i = 0
    try:
        while not state.stopping:
            filler = False
            if (
                iterations is not None
                and i >= iterations
                or budget_ns is not None
                and i > 0
                and time.perf_counter_ns() - t_begin >= budget_ns
            ):
                if not busy or peer_done.exists():  # type: ignore[union-attr]
                    break
                if i == result["iterations"]:
                    _mark_done(spec)  # our real iterations are over: release the peer's handshake
                filler = True
            elif sync_wait is not None:
                sync_wait()
            env["DUET_ITERATION"] = str(i)
            start = time.time_ns()
            t0 = time.perf_counter_ns()
            if measured:
                rc, cpu, delay = _spawn_measured(state, argv, cwd, env, out, err)
            else:
                rc, cpu, delay = _spawn(state, argv, cwd, env, out, err), None, None
            t1 = time.perf_counter_ns()
            extra = f"{'' if cpu is None else cpu},{'' if delay is None else delay}"
            csv.write(f"{i},{start},{start + (t1 - t0)},{t1 - t0},{int(filler)},{rc},{extra}\n")
            if rc != 0:
                if state.stopping:
                    break
                result.update(
                    status="failed",
                    exit_code=rc,
                    message=f"iteration {i}: command exited with {rc}",
                )
                break
            if filler:
                result["filler"] += 1
            else:
                result["iterations"] += 1
            i += 1
    finally:
        csv.close()
    if state.stopping:
        raise SystemExit(143)


def _external(side: _Side) -> None:
    """An external harness: the command once, looping by itself."""
    spec, state, cwd, env, prefix, out, err, result = side
    command = _command(spec)
    if spec.get("pyperf_shim"):  # its sitecustomize syncs pyperf's workers (docs/sync.md)
        path = env.get("PYTHONPATH")
        env = {**env, "PYTHONPATH": spec["pyperf_shim"] + (os.pathsep + path if path else "")}
    argv = prefix + ["/bin/sh", "-c", command]
    watch = None if prefix else TreeDelay(os.getpid())
    if watch is not None:
        watch.start()
    try:
        rc = _spawn(state, argv, cwd, env, out, err)
    finally:
        if watch is not None:
            result["runq_s"] = watch.finish()
    if state.stopping:
        raise SystemExit(143)
    if rc != 0:
        result.update(status="failed", exit_code=rc, message=f"harness exited with {rc}")


class _Gated:
    """A command started before the go, waiting on its gate FIFO (held open read-write here)."""

    def __init__(self, child: subprocess.Popen[bytes], fd: int, paths: list[Path]) -> None:
        self.child = child
        self.fd = fd
        self.paths = paths

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
        for p in self.paths:
            try:
                p.unlink()
            except OSError:
                pass


def _start_gated(
    spec: dict[str, Any],
    cwd: str,
    env: dict[str, str],
    prefix: list[str],
    out: Any,
    err: Any,
) -> _Gated | str:
    """Start the command; return once it is armed, or a message saying why it is not."""
    gate = spec["gate"]
    fifo, armed = Path(gate["fifo"]), Path(gate["armed"])
    for p in (fifo, armed):
        p.unlink(missing_ok=True)
    os.mkfifo(fifo, 0o600)
    os.chmod(fifo, 0o666)  # a container may run the command under another user id
    # O_RDWR: the command's open for reading never blocks; our exit is its end-of-file
    fd = os.open(fifo, os.O_RDWR | os.O_CLOEXEC)
    command = _command(spec)
    child = subprocess.Popen(
        prefix + ["/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        stdout=out,
        stderr=err,
        stdin=subprocess.DEVNULL,
    )
    gated = _Gated(child, fd, [fifo, armed])
    deadline = time.monotonic() + float(gate.get("timeout", 120))
    while not armed.exists():
        rc = child.poll()
        if rc is not None:
            gated.close()
            return f"the harness exited with {rc} before it started (see stderr.log)"
        if time.monotonic() >= deadline:
            child.kill()
            child.wait()
            gated.close()
            return "the harness did not get ready in time (see stderr.log)"
        time.sleep(0.002)
    return gated


def _run_gated(spec: dict[str, Any], state: _State, gated: _Gated, result: dict[str, Any]) -> None:
    state.child = gated.child
    try:
        os.write(gated.fd, b"go\n")
        rc = gated.child.wait()
    finally:
        state.child = None
        gated.close()
    if state.stopping:
        raise SystemExit(143)
    if rc != 0:
        result.update(status="failed", exit_code=rc, message=f"harness exited with {rc}")


def _count_iterations(side_dir: Path, result: dict[str, Any]) -> None:
    """Fill the result from an ``iterations.csv`` written by a harness loop in the command."""
    real = filler = 0
    last: list[str] | None = None
    try:
        with open(side_dir / "iterations.csv", encoding="utf-8") as f:
            for line in f:
                row = line.strip().split(",")
                if len(row) < 6 or not row[0].isdigit():
                    continue
                last = row
                if row[5] == "0":
                    if row[4] == "0":
                        real += 1
                    else:
                        filler += 1
    except OSError:
        pass
    result["iterations"], result["filler"] = real, filler
    if result["status"] == "failed" and last is not None and last[5] != "0":
        result.update(
            exit_code=int(last[5]), message=f"iteration {last[0]}: command exited with {last[5]}"
        )
    elif result["status"] == "failed":
        result["message"] = (
            f"the built-in harness exited with {result.get('exit_code')} (see stderr.log)"
        )


if __name__ == "__main__":
    sys.exit(main())
