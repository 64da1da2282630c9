"""Commands duet starts besides the sides -- `setup:`, `teardown:`, `background:`, the
artifact commands -- each in its own process group that dies with ``duet run``.

Every such command is the leader of a new process group, so one ``killpg`` reaches the
children it starts too. Two mechanisms end that group:

- ``duet run`` itself, when the command ends, on an error, on Ctrl-C (SIGINT) and on
  SIGTERM (both arrive as ``KeyboardInterrupt``): :meth:`Guarded.stop` sends SIGTERM to
  the group, waits up to a grace period until the group is gone, then SIGKILLs it. A
  command's leftovers (children still running when the command exited) are stopped the
  same way;
- a *guard* for the case ``duet run`` cannot act (SIGKILL, a crash, the OOM killer): a
  tiny ``sh`` in its own session that reads a pipe from ``duet run``. The kernel closes
  the pipe when ``duet run`` dies, however it dies; the guard then does the same
  SIGTERM / grace / SIGKILL to the group. When the group is stopped normally ``duet run``
  writes ``done`` and the guard exits without touching anything.

The guard does not depend on which thread started the command (unlike
``PR_SET_PDEATHSIG``, which fires when the forking *thread* ends), so it also holds for
commands a Dask worker thread runs. Output is read with a bound on the bytes kept and
decoded with replacement characters: a command printing binary data or gigabytes cannot
crash or exhaust ``duet run``.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from .groups import group_alive, kill_group

#: The guard: the first line is the process group, the second ``done`` (stop guarding);
#: end-of-file before ``done`` means duet run is gone: stop the group. Own session, so
#: Ctrl-C at the terminal and hang-ups never reach it. ``$1``: polls of 50 ms before SIGKILL.
GUARD_SCRIPT = r"""trap '' INT HUP
IFS= read -r pgid || exit 0
case $pgid in ''|*[!0-9]*) exit 0 ;; esac
IFS= read -r line
[ "$line" = done ] && exit 0
kill -TERM -"$pgid" 2>/dev/null || exit 0
n=0
while kill -0 -"$pgid" 2>/dev/null && [ "$n" -lt "$1" ]; do
    sleep 0.05
    n=$((n + 1))
done
kill -KILL -"$pgid" 2>/dev/null
exit 0
"""

#: Seconds between SIGTERM and SIGKILL when the guard stops a group (duet run is gone).
GUARD_GRACE = 5.0


class Guarded:
    """A command in its own process group, guarded so that it never outlives duet run."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdout: int | IO[Any] | None = subprocess.DEVNULL,
        stderr: int | IO[Any] | None = subprocess.DEVNULL,
    ) -> None:
        read_end, self._pipe = os.pipe()  # both non-inheritable: only the guard gets read_end
        try:
            self._guard: subprocess.Popen[bytes] | None = subprocess.Popen(
                ["/bin/sh", "-c", GUARD_SCRIPT, "duet-guard", str(int(GUARD_GRACE / 0.05))],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            self._guard = None  # no /bin/sh: the command cannot run either; Popen below says so
        finally:
            os.close(read_end)
        try:
            self.proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                process_group=0,
            )
        except BaseException:
            self._release()
            raise
        self._tell(f"{self.proc.pid}\n")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _tell(self, text: str) -> None:
        if self._pipe < 0:
            return
        try:
            os.write(self._pipe, text.encode())
        except OSError:  # the guard died (someone killed it): duet run still stops the group
            pass

    def _release(self) -> None:
        """The group is stopped: tell the guard to exit without acting, and reap it."""
        if self._pipe >= 0:
            self._tell("done\n")
            os.close(self._pipe)
            self._pipe = -1
        if self._guard is not None:
            try:
                self._guard.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._guard.kill()
                self._guard.wait()
            self._guard = None

    def alive(self) -> bool:
        """Whether anything of the group still runs (the leader is reaped first: a zombie
        leader would keep the group answering)."""
        self.proc.poll()
        return group_alive(self.proc.pid)

    def stop(self, grace: float = GUARD_GRACE) -> int | None:
        """SIGTERM to the group, up to ``grace`` s for it to go, then SIGKILL; the leader's
        exit status (``None`` if it could not be reaped)."""
        try:
            if self.alive():
                kill_group(self.proc.pid, signal.SIGTERM)
                end = time.monotonic() + grace
                while time.monotonic() < end and self.alive():
                    time.sleep(0.02)
                kill_group(self.proc.pid, signal.SIGKILL)
            try:
                return self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                return None
        finally:
            self._release()


class _Kept:
    """At most ``limit`` bytes of a stream: its first (``keep == "head"``) or last bytes."""

    def __init__(self, limit: int, keep: str) -> None:
        self.limit, self.keep = limit, keep
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        if self.keep == "head":
            room = max(0, self.limit - len(self.data))
            self.data += chunk[:room]
            self.dropped += len(chunk) - min(room, len(chunk))
        else:
            self.data += chunk
            if len(self.data) > self.limit:
                cut = len(self.data) - self.limit
                del self.data[:cut]
                self.dropped += cut

    def text(self) -> str:
        s = self.data.decode("utf-8", "replace")
        if not self.dropped:
            return s
        note = f"[... {self.dropped} more bytes not kept]"
        return f"{s}\n{note}" if self.keep == "head" else f"{note}\n{s}"


@dataclass(frozen=True)
class Captured:
    """What a command printed (decoded, bounded) and how it ended."""

    returncode: int | None  # None: stopped (the timeout, or found idle)
    stdout: str
    stderr: str
    idle: bool = False  # stopped because the ``idle`` check said so

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_captured(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    merge_stderr: bool = False,
    stdout_limit: int = 1 << 20,
    stderr_limit: int = 2000,
    keep_stdout: str = "head",
    grace: float = GUARD_GRACE,
    idle: Callable[[int], Callable[[float], bool]] | None = None,
) -> Captured:
    """Run a guarded command to its end (or ``timeout``); stop whatever it left running.

    ``idle``: given the command's process id, a check of the monotonic time that says
    when it is idle and must be stopped (``execute.hang.idle_tree``: less than 1 % of a
    CPU for some seconds, the hang detection of runs: a sleep, a deadlock, a stopped
    process); ``Captured.idle`` then says so. Any exception while it runs (Ctrl-C,
    SIGTERM of duet) stops its process group and is raised again.
    """
    g = Guarded(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
    )
    out = _Kept(stdout_limit, keep_stdout)
    err = _Kept(stderr_limit, "tail")
    streams = {g.proc.stdout.fileno(): out} if g.proc.stdout else {}
    if g.proc.stderr is not None:
        streams[g.proc.stderr.fileno()] = err
    deadline = None if timeout is None else time.monotonic() + timeout
    is_idle = None if idle is None else idle(g.pid)
    rc: int | None = None
    stopped_idle = False
    try:
        drain_until = None
        while streams:
            now = time.monotonic()
            if rc is None:
                rc = g.proc.poll()
                if rc is not None:  # leftovers may hold the pipes open: read a little more
                    drain_until = now + 0.5
            if deadline is not None and rc is None and now >= deadline:
                break
            if is_idle is not None and rc is None and is_idle(now):
                stopped_idle = True
                break
            if drain_until is not None and now >= drain_until:
                break
            ready, _, _ = select.select(list(streams), [], [], 0.05)
            for fd in ready:
                chunk = os.read(fd, 65536)
                if chunk:
                    streams[fd].add(chunk)
                else:
                    del streams[fd]
        if rc is None and not stopped_idle:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                rc = g.proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                rc = None
    finally:
        g.stop(grace)
        for f in (g.proc.stdout, g.proc.stderr):
            if f is not None:
                f.close()
    return Captured(rc, out.text(), err.text(), stopped_idle)
