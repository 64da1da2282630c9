"""Reading the files users point duet at: regular files only, bounded in size.

A results directory, a config or a result file may hold anything: a symlink to
``/dev/zero`` (endless), a FIFO (``open()`` blocks until a writer comes), a socket, or
2 GB where a kilobyte JSON document belongs (reading it exhausts memory). Every reader
of such files goes through :func:`open_regular` / :func:`read_bytes`: the file is opened
without blocking, refused unless it is a regular file, and read up to a bound for its
kind. A refusal is a :class:`FileRefused`, an ``OSError`` whose message says what the
file is, so each reader's handling of an unreadable file (naming the file and what to
do) covers it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

MIB = 1 << 20
GIB = 1 << 30
#: bounds by kind of file: a record of one run or host (run.json, hosts/<host>.json,
#: stops.json, a lock); a document that grows with the plan (experiment.json,
#: journal.jsonl, cluster.jsonl); a harness's result file; a config (config/limits.py)
RECORD_MAX = 64 * MIB
DOCUMENT_MAX = 1 * GIB
RESULT_FILE_MAX = 4 * GIB

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class FileRefused(OSError):
    """A file duet does not read: not a regular file, or larger than its kind may be."""


def size_text(n: float) -> str:
    """Bytes for people: ``2 GiB``, ``64 MiB``, ``512 bytes``."""
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def _refuse_special(path: str | Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
    raise FileRefused(errno.EINVAL, f"it is {kind}, not a regular file", str(path))


def check_regular(path: str | Path, limit: int | None = None) -> os.stat_result:
    """``stat`` of ``path`` (symlinks followed): a :class:`FileRefused` unless it is a
    regular file of at most ``limit`` bytes; ``FileNotFoundError`` when missing."""
    st = os.stat(path)
    _refuse_special(path, st.st_mode)
    _refuse_size(path, st.st_size, limit)
    return st


def _refuse_size(path: str | Path, size: int, limit: int | None) -> None:
    if limit is not None and size > limit:
        raise FileRefused(
            errno.EFBIG,
            f"it holds {size_text(size)}, more than the {size_text(limit)} such a file may "
            "have (is it the right file?)",
            str(path),
        )


def open_regular(path: str | Path, limit: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary, without blocking on a FIFO: a
    :class:`FileRefused` unless it is a regular file of at most ``limit`` bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        _refuse_special(path, st.st_mode)
        _refuse_size(path, st.st_size, limit)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, limit: int) -> bytes:
    """The content of a regular file of at most ``limit`` bytes (see :func:`open_regular`);
    a file that grows past ``limit`` while it is read is refused too."""
    with open_regular(path, limit) as f:
        data = f.read(limit + 1)
    _refuse_size(path, len(data), limit)
    return data
