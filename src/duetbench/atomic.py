"""Atomic file writes: a file duet writes is either the old one or the complete new one.

Every file duet writes (the results directory's JSON files, ``duet process -o``,
``duet compare -o``, ``duet evaluate -o``, ``duet report -o``) goes through
:func:`write_atomic`: the content goes to a temporary file next to the target,
is fsynced, and is renamed over the target; then the directory is fsynced. A
crash (SIGKILL, power loss) at any moment leaves the old file or the new one,
never a cut one. A crash can leave the temporary file (``.<name>.tmp-<pid>-<random>``)
behind; it is never read and safe to delete.

A directory written as a whole (``duet dashboard``'s site) is built beside its target and
put in place by :func:`replace_directory`: readers see the old one or the new one.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import DuetError

#: content for :func:`write_atomic`: bytes, text, or a function that writes the file at the
#: path it is given (e.g. ``lambda p: df.to_parquet(p)``)
Content = bytes | str | Callable[[Path], None]


def fsync_file(path: Path) -> None:
    """Flush one file's data to disk (best effort: some file systems refuse fsync)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename into it) to disk, best effort."""
    fsync_file(path)


def fsync_tree(root: Path) -> None:
    """fsync every regular file and directory under ``root`` (symlinks are not followed)."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            try:
                if not stat.S_ISREG(os.lstat(p).st_mode):
                    continue  # a FIFO would block open(); a symlink may point anywhere
            except OSError:
                continue
            fsync_file(Path(p))
        fsync_dir(Path(dirpath))


def _target(path: Path) -> Path:
    """Where the content really goes: a symlink's target (the link itself stays)."""
    try:
        if path.is_symlink():
            return Path(os.path.realpath(path))
    except OSError:
        pass
    return path


def write_atomic(path: str | Path, content: Content, *, encoding: str = "utf-8") -> Path:
    """Write ``content`` to ``path`` atomically: temporary file in the same directory, fsync,
    rename, fsync the directory. Returns ``path``.

    A target that exists and is not a regular file (``/dev/stdout``, a FIFO) cannot be replaced
    by a rename; it is written directly. Errors (no such directory, permission denied, disk
    full) are a :class:`DuetError` naming the file; the old file is then untouched.
    """
    path = Path(path)
    target = _target(path)
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise DuetError(f"cannot write {path}: it is a directory; give a file name")
        try:
            if callable(content):
                content(target)
            else:
                with open(target, "wb") as f:
                    f.write(content.encode(encoding) if isinstance(content, str) else content)
        except OSError as exc:
            raise DuetError(f"cannot write {path}: {exc.strerror or exc}") from None
        return path
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        if callable(content):
            content(tmp)
            fsync_file(tmp)
        else:
            data = content.encode(encoding) if isinstance(content, str) else content
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        if mode is not None:  # keep the permissions of the file we replace
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise DuetError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    fsync_dir(target.parent)
    return path


def write_json_atomic(path: str | Path, data: Any) -> Path:
    """Write ``data`` as indented JSON (one trailing newline), atomically."""
    text = json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"
    return write_atomic(path, text)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system or the file system cannot."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def replace_directory(new: str | Path, target: str | Path) -> Path:
    """Put the directory ``new`` (complete, beside ``target``) in the place of ``target``.

    Readers see the old directory or the new one, never a mix: on Linux the two are
    swapped by one ``renameat2(RENAME_EXCHANGE)`` and the old one is then deleted. Where
    that is not available the old one is renamed aside first, so for a moment ``target``
    is missing (never half-written). ``new`` is fsynced before the swap. Returns ``target``.
    """
    import shutil

    new, target = Path(new), _target(Path(target))
    fsync_tree(new)
    try:
        try:
            os.rename(new, target)  # no target yet (or an empty directory)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise
            if _exchange(new, target):
                shutil.rmtree(new)  # ``new`` now names the old directory
            else:
                old = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
                os.rename(target, old)
                os.rename(new, target)
                shutil.rmtree(old)
    except OSError as exc:
        raise DuetError(f"cannot replace {target}: {exc.strerror or exc}") from None
    fsync_dir(target.parent)
    return target
