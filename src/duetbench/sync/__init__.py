"""The synchronous-duet handshake: every iteration of A and B starts together.

Language-neutral: the protocol only uses named pipes (FIFOs) in one *sync
directory*, so harnesses in any language (and in separate containers that
bind-mount the directory) can take part. See ``docs/sync.md`` for the protocol,
byte by byte.

Executor side (one coordinator per sduet run)::

    with SyncCoordinator.create(run_tmp / "sync") as coord:   # creates the FIFOs, starts the thread
        env_a = {**os.environ, **coord.env("A")}             # DUET_SYNC_DIR, DUET_PAIR
        ...start both sides..., and when a side's process exits:
        coord.side_finished("A")
    coord.go_events  # when each go was sent, and to which sides

Harness side (one call before each iteration; a no-op outside a sduet)::

    import duetbench.sync
    for i in range(n):
        duetbench.sync.wait()
        ...timed iteration...
    duetbench.sync.done()

Shell and C harnesses use ``duet_sync.sh`` and ``duet_sync.h`` from this
package (:func:`helper_path`); anything that can run a command can use
``python -m duetbench.sync wait``.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import select
import signal
import stat
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from ..errors import DuetError

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ENV_DIR",
    "ENV_PAIR",
    "ENV_TIMEOUT",
    "GoEvent",
    "SyncClient",
    "SyncCoordinator",
    "SyncError",
    "SyncTimeout",
    "done",
    "helper_path",
    "main",
    "wait",
]

#: Environment variable: the sync directory (unset or empty = not a sduet, wait() is a no-op).
ENV_DIR = "DUET_SYNC_DIR"
#: Environment variable: this side's name (``A`` or ``B``).
ENV_PAIR = "DUET_PAIR"
#: Environment variable: seconds a side waits for *go* before failing (``0`` = forever).
ENV_TIMEOUT = "DUET_SYNC_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0

READY_NAME = "ready"
GO_PREFIX = "go."
GO_LINE = b"go\n"
DONE_WORD = "done"

_PAIR_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")  # a line stays far below PIPE_BUF (atomic writes)
_READ_CHUNK = 4096


class SyncError(DuetError):
    """The handshake cannot proceed: bad environment, no coordinator, coordinator gone."""


class SyncTimeout(SyncError):
    """No *go* arrived within ``DUET_SYNC_TIMEOUT`` seconds."""


# --------------------------------------------------------------------------- client


def _check_pair(pair: str) -> str:
    if not _PAIR_RE.fullmatch(pair):
        raise SyncError(
            f"invalid side name {pair!r} (set {ENV_PAIR} to A or B; "
            "allowed: 1-32 of A-Z a-z 0-9 _ -)"
        )
    return pair


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


@dataclass(frozen=True)
class SyncClient:
    """One side of a synchronous duet. Holds no open files between calls."""

    directory: Path
    pair: str
    timeout_s: float | None = DEFAULT_TIMEOUT_S  # None = wait forever

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SyncClient | None:
        """The client configured by the environment, or ``None`` outside a sduet."""
        env = os.environ if environ is None else environ
        directory = env.get(ENV_DIR, "")
        if not directory:
            return None
        pair = _check_pair(env.get(ENV_PAIR, ""))
        return cls(Path(directory), pair, _parse_timeout(env.get(ENV_TIMEOUT)))

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
    return Path(str(resources.files(__name__).joinpath(names[kind])))


# --------------------------------------------------------------------------- coordinator


@dataclass(frozen=True)
class GoEvent:
    """One *go*: when it was sent and to which sides (in write order)."""

    index: int
    monotonic_ns: int
    epoch_ns: int
    pairs: tuple[str, ...]  # all sides = a synchronized start; fewer = the others had finished


class SyncCoordinator:
    """Sends *go* when every unfinished side is *ready*. Create with :meth:`create`.

    All methods are thread-safe. The background thread sleeps in ``poll()`` on the
    ready FIFO and a wake-up pipe: no busy waiting.
    """

    def __init__(
        self,
        directory: Path,
        pairs: tuple[str, ...],
        ready_fd: int,
        go_fds: dict[str, int],
        paths: list[Path],
        created_dir: bool,
    ) -> None:
        self._directory = directory
        self._pairs = pairs
        self._ready_fd = ready_fd
        self._go_fds = go_fds
        self._paths = paths
        self._created_dir = created_dir
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._waiting: dict[str, bool] = dict.fromkeys(pairs, False)
        self._finished: dict[str, bool] = dict.fromkeys(pairs, False)
        self._done_sent: dict[str, bool] = dict.fromkeys(pairs, False)
        self._ready_counts: dict[str, int] = dict.fromkeys(pairs, 0)
        self._events: list[GoEvent] = []
        self._errors: list[str] = []
        self._buffer = bytearray()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._thread: threading.Thread | None = None
        self._thread_error: BaseException | None = None
        self._closed = False

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        pairs: Sequence[str] = ("A", "B"),
        *,
        mode: int = 0o666,
    ) -> SyncCoordinator:
        """Create the FIFOs ``ready`` and ``go.<pair>`` in ``directory`` and open them.

        ``directory`` is created when missing (and then removed by :meth:`close`).
        ``mode`` is applied to the FIFOs regardless of the umask: the default lets a
        container running under another user id take part. Sides may connect as soon
        as this returns; their messages wait in the pipe until :meth:`start`.
        """
        pairs_t = tuple(_check_pair(p) for p in pairs)
        if len(set(pairs_t)) != len(pairs_t) or len(pairs_t) < 1:
            raise SyncError(f"pairs must be distinct, non-empty side names, not {pairs!r}")
        path = Path(directory)
        created_dir = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        names = [READY_NAME] + [f"{GO_PREFIX}{p}" for p in pairs_t]
        stale = [n for n in names if os.path.lexists(path / n)]
        if stale:
            raise SyncError(
                f"sync directory {path} already holds {', '.join(stale)}: another duet uses "
                "it or a crashed one left it behind; use a fresh directory"
            )
        made: list[Path] = []
        fds: list[int] = []
        try:
            for name in names:
                os.mkfifo(path / name, 0o600)
                made.append(path / name)
                os.chmod(path / name, mode)
            # O_RDWR on a FIFO (Linux): never blocks, never sees EOF/EPIPE, and data written
            # before a side opens (or after it closed) stays in the pipe.
            for p in made:
                fds.append(os.open(p, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))
        except BaseException:
            for fd in fds:
                os.close(fd)
            for p in made:
                p.unlink(missing_ok=True)
            if created_dir:
                _rmdir_quietly(path)
            raise
        go_fds = dict(zip(pairs_t, fds[1:], strict=True))
        return cls(path, pairs_t, fds[0], go_fds, made, created_dir)

    # -- properties

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def pairs(self) -> tuple[str, ...]:
        return self._pairs

    def env(self, pair: str, directory: str | None = None) -> dict[str, str]:
        """Environment variables to give side ``pair`` (merge into its environment).

        ``directory``: where the side sees the sync directory, when it differs
        (a container that bind-mounts it elsewhere); default: :attr:`directory`.
        """
        if pair not in self._pairs:
            raise SyncError(f"unknown side {pair!r}; this duet has {', '.join(self._pairs)}")
        return {ENV_DIR: directory or str(self._directory), ENV_PAIR: pair}

    @property
    def go_events(self) -> list[GoEvent]:
        with self._lock:
            return list(self._events)

    @property
    def go_times_ns(self) -> list[int]:
        """Epoch ns of each go, in order (synchronized and lone ones; see :attr:`go_events`)."""
        with self._lock:
            return [e.epoch_ns for e in self._events]

    @property
    def ready_counts(self) -> dict[str, int]:
        """How many *ready* messages each side sent."""
        with self._lock:
            return dict(self._ready_counts)

    @property
    def finished(self) -> frozenset[str]:
        with self._lock:
            return frozenset(p for p, f in self._finished.items() if f)

    @property
    def protocol_errors(self) -> list[str]:
        """Malformed or unexpected messages seen (ignored; for the run's log)."""
        with self._lock:
            return list(self._errors)

    # -- control

    def start(self) -> None:
        """Start the background thread (idempotent)."""
        with self._lock:
            if self._closed:
                raise SyncError("the sync coordinator is closed")
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._run, name=f"duet-sync {self._directory}", daemon=True
            )
            self._thread.start()

    def side_finished(self, pair: str) -> None:
        """Side ``pair`` will not send *ready* any more (e.g. its process exited).

        From now on the other sides get *go* as soon as they are ready.
        """
        if pair not in self._pairs:
            raise SyncError(f"unknown side {pair!r}; this duet has {', '.join(self._pairs)}")
        with self._lock:
            if self._closed:
                return
            self._finished[pair] = True
            self._waiting[pair] = False  # a ready it left behind: nobody will read the go
            self._release_locked()
            self._changed.notify_all()

    def wait_finished(self, timeout: float | None = None) -> bool:
        """Block until every side is finished (``done`` or :meth:`side_finished`)."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._closed or all(self._finished.values()), timeout
            )

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread, close and remove the FIFOs (idempotent).

        A side still waiting for *go* sees the coordinator hang up and fails at once.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._changed.notify_all()
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:  # already signalled
            pass
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        for fd in (self._ready_fd, *self._go_fds.values(), self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        for p in self._paths:
            p.unlink(missing_ok=True)
        if self._created_dir:
            _rmdir_quietly(self._directory)
        if self._thread_error is not None:
            raise SyncError(f"the sync coordinator failed: {self._thread_error!r}")

    def __enter__(self) -> SyncCoordinator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten coordinator must not leak fds
        if not getattr(self, "_closed", True):
            try:
                self.close(timeout=0)
            except Exception:
                pass

    # -- thread

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._ready_fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while True:
                events = poller.poll()
                with self._lock:
                    if self._closed:
                        return
                for fd, _ in events:
                    if fd == self._ready_fd:
                        self._drain_ready()
        except BaseException as exc:  # keep it for close(); make waiting sides fail fast
            with self._lock:
                self._thread_error = exc
                for fd in self._go_fds.values():
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                self._go_fds = {}

    def _drain_ready(self) -> None:
        while True:
            try:
                chunk = os.read(self._ready_fd, _READ_CHUNK)
            except BlockingIOError:
                return
            if not chunk:  # cannot happen while we hold the FIFO O_RDWR
                return
            with self._lock:
                if self._closed:
                    return
                self._buffer += chunk
                *lines, rest = self._buffer.split(b"\n")
                self._buffer = bytearray(rest)
                for raw in lines:
                    self._handle_locked(raw)
                self._release_locked()
                self._changed.notify_all()

    def _handle_locked(self, raw: bytes) -> None:
        words = raw.decode("ascii", "replace").split()
        pair = words[0] if words else ""
        if pair not in self._pairs or len(words) > 2 or (len(words) == 2 and words[1] != DONE_WORD):
            self._errors.append(f"unexpected message {raw!r}")
            return
        if len(words) == 2:
            self._finished[pair] = True
            self._done_sent[pair] = True
            return
        self._ready_counts[pair] += 1
        if self._finished[pair]:
            if self._done_sent[pair]:  # said done, then ready: answer, or it would hang
                self._errors.append(f"side {pair} sent ready after done")
                self._write_go_locked(pair)
            # else: reported exited by the executor; a ready it left in the pipe is moot
            return
        if self._waiting[pair]:
            self._errors.append(f"side {pair} sent ready twice without reading go")
        self._waiting[pair] = True

    def _write_go_locked(self, pair: str) -> None:
        fd = self._go_fds.get(pair)
        if fd is None:
            return
        try:
            os.write(fd, GO_LINE)
        except BlockingIOError:  # 20k unread go lines: that side is not reading
            self._errors.append(f"go.{pair} is full; side {pair} does not read its go")

    def _release_locked(self) -> None:
        live = [p for p in self._pairs if not self._finished[p]]
        waiting = [p for p in live if self._waiting[p]]
        if not waiting or len(waiting) != len(live):
            return
        index = len(self._events)
        shift = index % len(waiting)  # alternate who is woken first: no side always leads
        order = tuple(waiting[shift:] + waiting[:shift])
        mono, epoch = time.monotonic_ns(), time.time_ns()
        for p in order:
            self._write_go_locked(p)
            self._waiting[p] = False
        self._events.append(GoEvent(index, mono, epoch, order))


def _rmdir_quietly(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


# --------------------------------------------------------------------------- CLI


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m duetbench.sync {wait,done,path,coordinate}``.

    Exit status: 0 go (or no sduet), 1 timeout, 2 any other error.
    """
    parser = argparse.ArgumentParser(
        prog="python -m duetbench.sync",
        description="Synchronous-duet handshake (see docs/sync.md).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("wait", help="signal ready and block until go (no-op without DUET_SYNC_DIR)")
    sub.add_parser("done", help="tell the coordinator this side will not iterate any more")
    p_path = sub.add_parser(
        "path", help="print the path of the shell or C helper, or of the pyperf shim's directory"
    )
    p_path.add_argument("kind", choices=["sh", "h", "pyperf"])
    p_coord = sub.add_parser(
        "coordinate",
        help="run a coordinator in the foreground until every side is done "
        "(for trying a harness by hand, or in a helper container)",
    )
    p_coord.add_argument("directory", type=Path)
    p_coord.add_argument("--pairs", default="A,B", help="comma-separated side names (A,B)")
    args = parser.parse_args(argv)
    try:
        if args.command == "wait":
            wait()
        elif args.command == "done":
            done()
        elif args.command == "path":
            print(helper_path(args.kind))
        else:
            pairs = [p for p in args.pairs.split(",") if p]
            signal.signal(signal.SIGTERM, _interrupt)
            with SyncCoordinator.create(args.directory, pairs) as coord:
                try:
                    coord.wait_finished()
                except KeyboardInterrupt:
                    pass
                for event in coord.go_events:
                    print(event.index, event.epoch_ns, ",".join(event.pairs))
    except SyncTimeout as exc:
        print(f"duet-sync: {exc}", file=sys.stderr)
        return 1
    except SyncError as exc:
        print(f"duet-sync: {exc}", file=sys.stderr)
        return 2
    return 0
