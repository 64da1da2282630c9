"""The sduet iteration barrier of docs/sync.md, for benchmark scripts run by pyperf.

Standard library only, so it works in any interpreter (including one without
duetbench installed, or inside a container). Outside a sduet run
(``DUET_SYNC_DIR`` unset or empty) ``wait()`` returns at once, so one script
serves seqn, aduet and sduet.

pyperf starts its worker processes with a filtered environment: pass
``--inherit-environ DUET_SYNC_DIR,DUET_PAIR,DUET_SYNC_TIMEOUT`` to the script,
otherwise the workers never see the sync directory and the run is not
synchronized (it still completes).

No ``done`` message is sent: pyperf runs the values in several worker
processes and none of them knows it is the last; the executor tells the
coordinator when the side's process exits.
"""

from __future__ import annotations

import errno
import os
import select
import time
from collections.abc import Mapping


class BarrierError(RuntimeError):
    """The coordinator is gone, never answered, or answered something else than ``go``."""


def _settings(environ: Mapping[str, str]) -> tuple[str, str, float] | None:
    directory = environ.get("DUET_SYNC_DIR", "")
    if not directory:
        return None
    pair = environ.get("DUET_PAIR", "")
    if not pair:
        raise BarrierError("DUET_SYNC_DIR is set but DUET_PAIR is not")
    timeout = float(environ.get("DUET_SYNC_TIMEOUT") or 600)
    return directory, pair, timeout


def _write_ready(directory: str, line: bytes) -> None:
    try:
        fd = os.open(os.path.join(directory, "ready"), os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise BarrierError(f"no coordinator reads {directory}/ready (duet gone?)") from None
        raise BarrierError(f"cannot open {directory}/ready: {exc.strerror}") from None
    try:
        os.write(fd, line)  # one write, shorter than PIPE_BUF: never interleaves
    finally:
        os.close(fd)


def wait(environ: Mapping[str, str] | None = None) -> bool:
    """Block until the coordinator says go; True if synchronized, False outside a sduet."""
    settings = _settings(os.environ if environ is None else environ)
    if settings is None:
        return False
    directory, pair, timeout = settings
    go_path = os.path.join(directory, f"go.{pair}")
    try:
        go = os.open(go_path, os.O_RDONLY | os.O_NONBLOCK)  # before ready: never miss the go
    except OSError as exc:
        raise BarrierError(f"cannot open {go_path}: {exc.strerror}") from None
    try:
        _write_ready(directory, f"{pair}\n".encode())
        deadline = None if timeout <= 0 else time.monotonic() + timeout
        data = b""
        poller = select.poll()
        poller.register(go, select.POLLIN)
        while not data.endswith(b"\n"):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise BarrierError(f"no go within {timeout:g} s (DUET_SYNC_TIMEOUT)")
            events = poller.poll(None if left is None else max(1, int(left * 1000)))
            if not events:
                continue
            try:
                chunk = os.read(go, 16)
            except BlockingIOError:
                continue
            if not chunk:
                raise BarrierError("the coordinator closed the barrier during a wait")
            data += chunk
        if data != b"go\n":
            raise BarrierError(f"expected 'go' from the coordinator, got {data!r}")
        return True
    finally:
        os.close(go)
