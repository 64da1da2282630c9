"""The side's half of the sduet handshake (docs/sync.md, "Protocol"), for the micro worker.

The same bytes as ``duetbench.sync.SyncClient``, re-implemented with the standard
library only because the worker runs in the side's own interpreter, where
duetbench is not installed (and ``duetbench/sync`` imports the rest of the
package). Python 3.8 syntax. Before each sample: open ``go.<PAIR>`` read-only
and non-blocking, write ``<PAIR>\\n`` to ``ready``, wait (poll) for ``go\\n`` --
busy unless ``DUET_SYNC_WAIT=block``: running the benchmark's own calls while the
wait is expected to last (``fill``, the default here), then polling (``spin``).
After the last sample: ``<PAIR> done\\n``. No file stays open between calls.
"""

from __future__ import annotations

import errno
import math
import os
import re
import select
import time
from collections.abc import Callable, Mapping

ENV_DIR = "DUET_SYNC_DIR"
ENV_PAIR = "DUET_PAIR"
ENV_TIMEOUT = "DUET_SYNC_TIMEOUT"
#: fill (the default here), spin or block: docs/sync.md, "Waiting: fill, spin or block"
ENV_WAIT = "DUET_SYNC_WAIT"
WAIT_MODES = ("fill", "spin", "block")
DEFAULT_TIMEOUT_S = 600.0
GO_LINE = b"go\n"
_PAIR_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")


def _before(deadline: float | None) -> bool:
    return deadline is None or time.monotonic() < deadline


class HandshakeError(Exception):
    """No coordinator, a coordinator that left, or no go within the timeout."""


class Handshake:
    """Ready/go with the coordinator of a synchronous duet; see the module docstring."""

    def __init__(
        self, directory: str, pair: str, timeout_s: float | None, wait: str = "fill"
    ) -> None:
        self.directory = directory
        self.pair = pair
        self.timeout_s = timeout_s  # None: wait forever
        self.spin = wait != "block"  # keep the CPU busy while waiting for go
        self.fill = wait == "fill"  # ... with the benchmark's own calls where they fit

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Handshake | None:
        """The handshake configured by the environment, or ``None`` outside a sduet."""
        directory = environ.get(ENV_DIR, "")
        if not directory:
            return None
        pair = environ.get(ENV_PAIR, "")
        if not _PAIR_RE.fullmatch(pair):
            raise HandshakeError(f"{ENV_DIR} is set but {ENV_PAIR}={pair!r} is not a side name")
        text = environ.get(ENV_TIMEOUT, "").strip()
        try:
            timeout = float(text) if text else DEFAULT_TIMEOUT_S
        except ValueError:
            timeout = math.nan
        if not math.isfinite(timeout) or timeout < 0:
            raise HandshakeError(f"{ENV_TIMEOUT}={text!r} is not a number of seconds >= 0")
        wait = environ.get(ENV_WAIT, "").strip() or "fill"
        if wait not in WAIT_MODES:
            raise HandshakeError(f"{ENV_WAIT}={wait!r} must be 'fill', 'spin' or 'block'")
        return cls(directory, pair, None if timeout == 0 else timeout, wait)

    def wait(self, fill: Callable[[], bool] | None = None) -> None:
        """Say ready; return when the coordinator says go. ``fill`` (a busy wait only):
        called while go has not come; it runs one of the benchmark's own calls and
        returns True, or returns False to poll for the rest of this wait."""
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        go_path = os.path.join(self.directory, "go." + self.pair)
        go_fd = self._open(go_path, os.O_RDONLY)  # before ready: a gone coordinator is a hang-up
        try:
            self._send((self.pair + "\n").encode("ascii"))
            self._receive(go_fd, go_path, deadline, fill if self.spin else None)
        finally:
            os.close(go_fd)

    def done(self) -> None:
        """Tell the coordinator this side takes no more samples."""
        self._send((self.pair + " done\n").encode("ascii"))

    def _open(self, path: str, flags: int) -> int:
        try:
            return os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise HandshakeError(
                f"{path} does not exist: {ENV_DIR} must name the sync directory of a running "
                "synchronous duet"
            ) from None
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise HandshakeError(
                    f"no coordinator is listening on {path} (the executor is gone)"
                ) from None
            raise HandshakeError(f"cannot open {path}: {exc.strerror}") from None

    def _send(self, line: bytes) -> None:
        path = os.path.join(self.directory, "ready")
        fd = self._open(path, os.O_WRONLY)
        try:
            os.write(fd, line)  # shorter than PIPE_BUF: all or nothing, never interleaved
        except BlockingIOError:
            raise HandshakeError(f"{path} is full: is the coordinator stuck?") from None
        except BrokenPipeError:
            raise HandshakeError(f"the coordinator closed {path}") from None
        finally:
            os.close(fd)

    def _receive(
        self, fd: int, path: str, deadline: float | None, fill: Callable[[], bool] | None
    ) -> None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        line = b""
        while True:
            if deadline is None:
                wait_ms = -1
            else:
                wait_ms = max(0, math.ceil((deadline - time.monotonic()) * 1000))
            if self.spin:  # busy until go: the other side is never timed beside an idle CPU
                ready = poller.poll(0)
                while not ready and fill is not None and _before(deadline) and fill():
                    ready = poller.poll(0)
                fill = None  # a line's later bytes come at once
                while not ready and _before(deadline):
                    ready = poller.poll(0)
            else:
                ready = poller.poll(wait_ms)
            if not ready:
                raise HandshakeError(
                    f"side {self.pair}: no go within {self.timeout_s} s ({ENV_TIMEOUT}); "
                    "the coordinator or the other side is stuck"
                )
            try:
                byte = os.read(fd, 1)  # byte by byte: never consume beyond our line
            except BlockingIOError:
                continue
            if not byte:
                raise HandshakeError(f"side {self.pair}: the coordinator closed {path}")
            line += byte
            if byte == b"\n" or len(line) > len(GO_LINE):
                if line != GO_LINE:
                    raise HandshakeError(f"side {self.pair}: unexpected message {line!r}")
                return
