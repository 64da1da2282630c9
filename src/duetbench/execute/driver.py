"""The per-side driver: one process per side of a run, pinned with its workload.

Started by an executor as ``python -m duetbench.execute.driver SPEC.json``. It
keeps imports to the standard library so it starts fast. Protocol with the
executor: the driver prints ``ready`` on stdout when set up, waits for a line
on stdin (``go``), runs the side, writes ``driver-result.json`` into the side
directory and exits (0 ok, 1 the workload failed, 3 the parent is gone,
143 terminated).

Built-in harness (``harness == "command"``): runs the command once per
iteration and appends ``iteration,start_ns,end_ns,duration_ns,filler,exit_code``
to ``iterations.csv`` (flushed per row, so a timeout keeps what was measured).
start/end are ``time.time_ns()``; the duration is from ``time.perf_counter_ns()``.
Under sduet every iteration first passes the sync handshake (duetbench.sync).
External harness: runs the command once; the harness loops by itself.
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
from typing import Any

_SHELL_CHARS = re.compile(r"[|&;<>()$`\\\"'*?\[\]#~{}\n=%!]")
PR_SET_PDEATHSIG = 1


class _State:
    child: subprocess.Popen[bytes] | None = None
    stopping = False


def _die_with_parent(parent_pid: int) -> None:
    """Ask the kernel for SIGUSR1 when the executor dies; then take the whole group down."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        _kill_group()


def _kill_group(*_: Any) -> None:
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
    if _SHELL_CHARS.search(command):
        return ["/bin/sh", "-c", command]
    words = shlex.split(command)
    if not words:
        return ["/bin/sh", "-c", command]
    exe = shutil.which(words[0]) if "/" not in words[0] else words[0]
    return [exe or words[0], *words[1:]]


def _run_shell(command: str, cwd: str, env: dict[str, str], out: Any, err: Any) -> int:
    return subprocess.run(
        ["/bin/sh", "-c", command],
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
    signal.signal(signal.SIGUSR1, _kill_group)
    _die_with_parent(int(spec["parent_pid"]))
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
            rc = _run_shell(spec["setup"], cwd, env, out, err)
            if rc != 0:
                result.update(
                    status="failed", exit_code=rc, message=f"setup command exited with {rc}"
                )
                _finish(side_dir, result, spec)
                print("failed", flush=True)
                return 1
        print("ready", flush=True)
        if not sys.stdin.readline().strip():
            return 3
        result["start_ns"] = time.time_ns()
        if spec["harness"] == "command":
            _builtin(spec, state, cwd, env, prefix, out, err, result)
        else:
            _external(spec, state, cwd, env, prefix, out, err, result)
        result["end_ns"] = time.time_ns()
    except SystemExit:
        result.update(status="terminated", message="terminated by the executor")
        result.setdefault("end_ns", time.time_ns())
    finally:
        _mark_done(spec)
        if spec.get("teardown"):
            try:
                _run_shell(spec["teardown"], cwd, env, out, err)
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


def _builtin(
    spec: dict[str, Any],
    state: _State,
    cwd: str,
    env: dict[str, str],
    prefix: list[str],
    out: Any,
    err: Any,
    result: dict[str, Any],
) -> None:
    argv = prefix + argv_for(spec["command"])
    iterations = spec.get("iterations")
    budget_ns = int(spec["time_budget"] * 1e9) if spec.get("time_budget") else None
    sync_wait = None
    if spec.get("sync"):
        from duetbench import sync

        def sync_wait() -> None:
            sync.wait(env)

    peer_done = Path(spec["peer_done_file"]) if spec.get("peer_done_file") else None
    busy = bool(spec.get("busy_shorter_side")) and peer_done is not None
    csv = open(Path(spec["side_dir"]) / "iterations.csv", "a", buffering=1)
    csv.write("iteration,start_ns,end_ns,duration_ns,filler,exit_code\n")
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
            rc = _spawn(state, argv, cwd, env, out, err)
            t1 = time.perf_counter_ns()
            csv.write(f"{i},{start},{start + (t1 - t0)},{t1 - t0},{int(filler)},{rc}\n")
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


def _external(
    spec: dict[str, Any],
    state: _State,
    cwd: str,
    env: dict[str, str],
    prefix: list[str],
    out: Any,
    err: Any,
    result: dict[str, Any],
) -> None:
    command = spec["command"]
    if spec.get("sync_dir"):
        command = command.replace("$$", spec["sync_dir"])
    argv = prefix + ["/bin/sh", "-c", command]
    rc = _spawn(state, argv, cwd, env, out, err)
    if state.stopping:
        raise SystemExit(143)
    if rc != 0:
        result.update(status="failed", exit_code=rc, message=f"harness exited with {rc}")


if __name__ == "__main__":
    sys.exit(main())
