"""The harness side of the handshake: :class:`SyncClient`, :func:`wait`, :func:`done`.

Standard library only, and light: every side of a sduet imports it (``from duetbench
import sync; sync.wait()``).
"""

from __future__ import annotations

import errno
import math
import os
import select
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from .protocol import (
    DEFAULT_TIMEOUT_S,
    DONE_WORD,
    ENV_DIR,
    ENV_PAIR,
    ENV_TIMEOUT,
    ENV_WAIT,
    GO_LINE,
    GO_PREFIX,
    READY_NAME,
    SyncError,
    SyncTimeout,
    check_pair,
    parse_wait,
)


def _parse_timeout(text: str | None) -> float | None:
    """Seconds from ``DUET_SYNC_TIMEOUT``; ``None`` means wait forever (value 0)."""
    if text is None or text.strip() == "":
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise SyncError(f"{ENV_TIMEOUT}={text!r} is not a number of seconds >= 0 (0 = no timeout)")
    return None if value == 0 else value


def _remaining_ms(deadline: float | None) -> int:
    """Milliseconds left until ``deadline`` (monotonic s) for poll(); -1 = forever."""
    if deadline is None:
        return -1
    return max(0, math.ceil((deadline - time.monotonic()) * 1000))


def _spin_poll(poller: select.poll, deadline: float | None) -> list[tuple[int, int]]:
    """poll() without sleeping: keep this CPU busy until an event or the deadline.

    A side that slept here would leave its CPU idle while the other side finishes
    its (longer) iteration, so the longer side's iterations would be timed half
    beside a busy CPU and half beside an idle one (docs/sync.md, "Waiting: fill, spin
    or block")."""
    while True:
        events = poller.poll(0)
        if events or (deadline is not None and time.monotonic() >= deadline):
            return events


@dataclass(frozen=True)
class SyncClient:
    """One side of a synchronous duet. Holds no open files between calls."""

    directory: Path
    pair: str
    timeout_s: float | None = DEFAULT_TIMEOUT_S  # None = wait forever
    spin: bool = True  # wait for go busy (DUET_SYNC_WAIT=spin) or asleep (block)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SyncClient | None:
        """The client configured by the environment, or ``None`` outside a sduet."""
        env = os.environ if environ is None else environ
        directory = env.get(ENV_DIR, "")
        if not directory:
            return None
        pair = check_pair(env.get(ENV_PAIR, ""))
        return cls(
            Path(directory),
            pair,
            _parse_timeout(env.get(ENV_TIMEOUT)),
            parse_wait(env.get(ENV_WAIT)),
        )

    @property
    def ready_path(self) -> Path:
        return self.directory / READY_NAME

    @property
    def go_path(self) -> Path:
        return self.directory / f"{GO_PREFIX}{self.pair}"

    def wait(self) -> None:
        """Signal *ready*, block until *go*. Raises :class:`SyncTimeout` / :class:`SyncError`."""
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        # Open go before sending ready: the coordinator holds its write end, so a later
        # hang-up (coordinator gone) is reported by poll() as POLLHUP instead of a hang.
        go_fd = self._open_fifo(self.go_path, os.O_RDONLY)
        try:
            self._send(f"{self.pair}\n".encode("ascii"), deadline)
            self._receive_go(go_fd, deadline)
        finally:
            os.close(go_fd)

    def done(self) -> None:
        """Tell the coordinator this side will not iterate any more."""
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        self._send(f"{self.pair} {DONE_WORD}\n".encode("ascii"), deadline)

    # -- internals

    def _open_fifo(self, path: Path, flags: int) -> int:
        try:
            fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            raise SyncError(
                f"{path} does not exist: {ENV_DIR} must name the sync directory of a running "
                "synchronous duet"
            ) from None
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise SyncError(
                    f"no coordinator is listening on {path} (the executor is gone or "
                    f"{ENV_DIR} is stale)"
                ) from None
            raise SyncError(f"cannot open {path}: {exc.strerror}") from None
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.close(fd)
            raise SyncError(f"{path} is not a named pipe (FIFO); is {ENV_DIR} right?")
        return fd

    def _send(self, line: bytes, deadline: float | None) -> None:
        # O_WRONLY|O_NONBLOCK fails with ENXIO when nobody holds the read end: no coordinator.
        fd = self._open_fifo(self.ready_path, os.O_WRONLY)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            while True:
                try:
                    written = os.write(fd, line)  # < PIPE_BUF: all or nothing
                except BlockingIOError:
                    if not poller.poll(_remaining_ms(deadline)):
                        raise SyncTimeout(
                            f"{self.ready_path} stayed full for {self.timeout_s} s "
                            f"({ENV_TIMEOUT}): is the coordinator stuck?"
                        ) from None
                    continue
                except BrokenPipeError:
                    raise SyncError(f"the coordinator closed {self.ready_path}") from None
                if written != len(line):  # cannot happen for a pipe and < PIPE_BUF bytes
                    raise SyncError(f"short write to {self.ready_path}")
                return
        finally:
            os.close(fd)

    def _receive_go(self, fd: int, deadline: float | None) -> None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        line = bytearray()
        while True:
            if self.spin:
                events = _spin_poll(poller, deadline)
            else:
                events = poller.poll(_remaining_ms(deadline))
            if not events:
                raise SyncTimeout(
                    f"side {self.pair}: no go from the coordinator within {self.timeout_s} s "
                    f"({ENV_TIMEOUT}); the coordinator or the other side is stuck"
                )
            try:
                byte = os.read(fd, 1)  # byte by byte: never consume beyond our line
            except BlockingIOError:
                continue
            if not byte:
                raise SyncError(
                    f"side {self.pair}: the coordinator closed {self.go_path} (executor gone)"
                )
            line += byte
            if byte == b"\n":
                if bytes(line) != GO_LINE:
                    raise SyncError(f"side {self.pair}: unexpected message {bytes(line)!r}")
                return
            if len(line) > len(GO_LINE):
                raise SyncError(f"side {self.pair}: unexpected message {bytes(line)!r}")


def wait(environ: Mapping[str, str] | None = None) -> bool:
    """Block until this iteration may start; ``True`` if synchronized, ``False`` if no sduet.

    Reads ``DUET_SYNC_DIR``, ``DUET_PAIR`` and ``DUET_SYNC_TIMEOUT`` from ``environ``
    (default: ``os.environ``). Without ``DUET_SYNC_DIR`` it returns ``False`` at once,
    so one harness serves every method.
    """
    client = SyncClient.from_env(environ)
    if client is None:
        return False
    client.wait()
    return True


def done(environ: Mapping[str, str] | None = None) -> bool:
    """Tell the coordinator this side is finished (no-op outside a sduet)."""
    client = SyncClient.from_env(environ)
    if client is None:
        return False
    client.done()
    return True


def helper_path(kind: Literal["sh", "h", "pyperf"]) -> Path:
    """Path of the shell (``sh``) or C (``h``) helper shipped with this package, or of the
    directory of the pyperf shim (``pyperf``: a ``sitecustomize.py`` to put first on the
    ``PYTHONPATH`` of pyperf scripts, docs/sync.md)."""
    names = {"sh": "duet_sync.sh", "h": "duet_sync.h", "pyperf": "pyperf_shim"}
    if kind not in names:
        raise ValueError(f"kind must be 'sh', 'h' or 'pyperf', not {kind!r}")
    return Path(str(resources.files(__package__ or "duetbench.sync").joinpath(names[kind])))
