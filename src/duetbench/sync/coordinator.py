"""The executor side of the handshake: :class:`SyncCoordinator` sends *go* when every
unfinished side is *ready* (docs/sync.md)."""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .protocol import (
    DONE_WORD,
    ENV_DIR,
    ENV_PAIR,
    GO_LINE,
    GO_PREFIX,
    READY_NAME,
    SyncError,
    check_pair,
)

_READ_CHUNK = 4096


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
        #: called (on the coordinator's thread) with ("ready", (pair,)) when a side says
        #: ready and with ("go", pairs) just before their go is written: the container
        #: executor reads the sides' CPU time there (execute/container_cpu.py)
        self.observer: Callable[[str, tuple[str, ...]], None] | None = None

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
        pairs_t = tuple(check_pair(p) for p in pairs)
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
    def waiting(self) -> frozenset[str]:
        """The sides that said *ready* and wait for their *go* (spinning, by default)."""
        with self._lock:
            return frozenset(p for p, w in self._waiting.items() if w)

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
        self._observe("ready", (pair,))

    def _observe(self, what: str, pairs: tuple[str, ...]) -> None:
        if self.observer is not None:
            try:
                self.observer(what, pairs)
            except Exception:  # a measurement must never stop the handshake
                self.observer = None

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
        self._observe("go", order)
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
