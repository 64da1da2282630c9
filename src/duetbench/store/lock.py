"""One `duet run` per results directory: an exclusive lock on ``<experiment>/.lock``
(layout.LOCK_FILE).

Two `duet run` (with or without ``--resume``, inline or ``--cluster``) on one
experiment directory would execute runs twice and delete each other's in-flight
run directories. The first takes an exclusive ``flock`` on ``.lock`` before it
does anything else (even before the experiment's ``setup:``) and holds it until
it ends; a second one finds it held and refuses at once, naming the holder
(pid, host, command line, start time) that the first wrote into the file.

The kernel releases a ``flock`` when its holder dies, however it dies (SIGKILL,
a crash): a dead holder never leaves the directory stuck, and the stale holder
information in ``.lock`` is simply overwritten by the next `duet run`. Readers
(``duet process``, ``compare``, ``report``...) never take the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ..errors import ResultsDirError
from ..files import RECORD_MAX, read_bytes
from ..proctools.procfs import cmdline
from .layout import EXPERIMENT_FILE, LOCK_FILE


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) an experiment directory's lock."""

    pid: int | None = None
    host: str | None = None
    command: str | None = None
    started_ns: int | None = None

    def describe(self) -> str:
        parts = []
        if self.pid is not None:
            parts.append(f"pid {self.pid}")
        if self.host:
            parts.append(f"on {self.host}")
        if self.started_ns:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_ns / 1e9))
            parts.append(f"started {when}")
        text = ", ".join(parts) or "another process (it has not written its details yet)"
        if self.command:
            text += f", command: {self.command}"
        return text


def _command_line() -> str:
    return shlex.join(cmdline() or sys.argv)


def read_holder(path: Path) -> Holder | None:
    """The holder information written into a lock file, or None if there is none."""
    try:
        data = json.loads(read_bytes(path, RECORD_MAX) or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None

    def get(key: str, kind: type) -> object:
        v = data.get(key)
        return v if isinstance(v, kind) and not isinstance(v, bool) else None

    return Holder(
        pid=get("pid", int),  # type: ignore[arg-type]
        host=get("host", str),  # type: ignore[arg-type]
        command=get("command", str),  # type: ignore[arg-type]
        started_ns=get("started_ns", int),  # type: ignore[arg-type]
    )


def _wait_for_holder(path: Path, wait_s: float = 2.0) -> Holder:
    """The holder's information; a holder that has just taken the lock writes it within
    microseconds, so an empty file is read again for a moment."""
    end = time.monotonic() + wait_s
    while (holder := read_holder(path)) is None and time.monotonic() < end:
        time.sleep(0.05)
    return holder or Holder()


def _foreign(root: Path) -> bool:
    """A directory with content but neither a lock nor an experiment.json: not ours to touch."""
    try:
        names = set(os.listdir(root))
    except OSError:
        return False
    return bool(names - {LOCK_FILE}) and LOCK_FILE not in names and EXPERIMENT_FILE not in names


class ExperimentLock:
    """The held lock of one experiment directory; :meth:`release` (or ``with``) gives it up."""

    def __init__(self, root: Path, fd: int | None, created: list[Path]) -> None:
        self.root = root
        self.path = root / LOCK_FILE
        self._fd = fd
        self._created = created  # directories this lock created (removed again if left empty)

    @property
    def held(self) -> bool:
        return self._fd is not None

    @classmethod
    def acquire(cls, root: str | Path) -> ExperimentLock:
        """Lock ``root`` (created if missing) or raise :class:`ResultsDirError` naming the holder.

        A directory that holds other things but neither ``experiment.json`` nor ``.lock`` is
        not a results directory: nothing is written into it, and the returned lock is not held
        (opening the store then refuses the directory)."""
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise ResultsDirError(
                f"{root} exists and is not a directory; choose another output directory with -o"
            )
        created = []
        for parent in [root, *root.parents]:
            if parent.exists():
                break
            created.append(parent)
        for _attempt in range(20):
            try:
                root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ResultsDirError(f"cannot create {root}: {exc.strerror or exc}") from None
            if _foreign(root):
                return cls(root, None, [])
            path = root / LOCK_FILE
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise ResultsDirError(
                    f"cannot create the lock file {path}: {exc.strerror or exc}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                holder = _wait_for_holder(path)
                raise ResultsDirError(
                    f"{root} is in use by another `duet run` ({holder.describe()}). Two runs on "
                    "one results directory would execute runs twice and remove each other's "
                    "work, so this one stopped without touching anything. Wait for that one to "
                    "finish, or stop it and continue with --resume (a `duet run` that died holds "
                    "no lock)."
                ) from None
            except OSError as exc:
                os.close(fd)
                raise ResultsDirError(f"cannot lock {path}: {exc.strerror or exc}") from None
            # the previous holder may have removed the file (an empty directory it created)
            # between our open() and flock(): then we hold a lock nobody else can see
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": _command_line(),
                "started_ns": time.time_ns(),
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            return cls(root, fd, created)
        raise ResultsDirError(f"cannot lock {root / LOCK_FILE}: it keeps disappearing")

    def release(self) -> None:
        """Give the lock up. An experiment directory that holds nothing but the lock (the
        experiment stopped before writing anything, e.g. its setup failed) is removed again,
        with the parent directories the lock created."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if set(os.listdir(self.root)) == {LOCK_FILE}:
                os.unlink(self.path)  # still locked: a waiting acquirer sees the file is gone
                for d in self._created:
                    try:
                        d.rmdir()
                    except OSError:
                        break
        except OSError:
            pass
        finally:
            os.close(fd)

    def __enter__(self) -> ExperimentLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
