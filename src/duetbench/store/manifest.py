"""The list of a run's files that run.json records, and the check of a run directory against it.

``manifest(run_dir)`` is taken when a run is committed: every regular file (size and
SHA-256) and every symlink (its target) under the run directory but run.json itself.
``check(run_dir, files)`` says what differs now: a file missing, changed (size, or
content of the same size), replaced by something else, or one that was not there.
Readers refuse such a run; ``duet run --resume`` executes it again (docs/results.md,
"What duet guarantees").
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from ..files import open_regular
from .layout import RUN_FILE


def file_digest(path: Path) -> str:
    """SHA-256 of a file, hex."""
    h = hashlib.sha256()
    with open_regular(path) as f:  # a FIFO or a device would block or never end
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _entries(run_dir: Path) -> dict[str, os.stat_result]:
    """Regular files and symlinks under ``run_dir`` (relative POSIX paths) but run.json."""
    out = {}
    for dirpath, dirs, files in os.walk(run_dir):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            rel = Path(p).relative_to(run_dir).as_posix()
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if rel != RUN_FILE and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                out[rel] = st
    return out


def manifest(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every regular file (bytes, sha256) and symlink (link) of a run directory but run.json."""
    out: dict[str, dict[str, Any]] = {}
    for rel, st in _entries(run_dir).items():
        p = run_dir / rel
        try:
            if stat.S_ISLNK(st.st_mode):
                out[rel] = {"link": os.readlink(p)}
            else:
                out[rel] = {"bytes": st.st_size, "sha256": file_digest(p)}
        except OSError:
            continue
    return out


def check(run_dir: Path, files: Any, shown: str) -> str | None:
    """What differs between ``run_dir`` and its recorded ``files`` (None: nothing).
    ``shown`` is how messages name the run directory (e.g. ``runs/<run-id>``)."""
    if not isinstance(files, dict):
        return f"{shown}/{RUN_FILE} has a damaged file list"
    for name, meta in files.items():
        if not isinstance(meta, dict) or ".." in Path(name).parts or Path(name).is_absolute():
            return f"{shown}/{RUN_FILE} has a damaged file list"
        p = run_dir / name
        try:
            st = os.lstat(p)
            if "link" in meta:
                if not stat.S_ISLNK(st.st_mode) or os.readlink(p) != meta["link"]:
                    return f"{shown}/{name} was changed after the run was recorded"
                continue
            if not stat.S_ISREG(st.st_mode):
                return f"{shown}/{name} is not a regular file"
            if st.st_size != meta.get("bytes"):
                return (
                    f"{shown}/{name} has {st.st_size} bytes, {meta.get('bytes')} when the run "
                    "was recorded"
                )
            if file_digest(p) != meta.get("sha256"):
                return f"{shown}/{name} was changed after the run was recorded"
        except FileNotFoundError:
            return f"{shown}/{name} is missing"
        except OSError as exc:
            return f"{shown}/{name} cannot be read ({exc.strerror or exc})"
    extra = sorted(set(_entries(run_dir)) - set(files))
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        return f"{shown}/{extra[0]}{more} was not there when the run was recorded"
    return None
