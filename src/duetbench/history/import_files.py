"""How the importers (history/importers.py) read another tool's file: its text, read
bounded as every user file is (``files.py``), its JSON, the check that it holds what the
tool writes (else :class:`~.imported.ImportFileError` saying what was expected), and the
fields every tool writes alike -- times, sizes, versions (docs/history.md, "Importing
other tools' results")."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ..files import FileRefused, check_regular, read_bytes
from .imported import ImportFileError
from .versions import Version

__all__ = [
    "MAX_FILE_BYTES",
    "check_file",
    "commit_version",
    "iso_ns",
    "memory_bytes",
    "need",
    "positive",
    "python_version",
    "read_json",
    "read_text",
    "whole_number",
]

#: the largest file an importer reads (a saved run of thousands of tests is a few MiB)
MAX_FILE_BYTES = 256 << 20


def read_text(path: Path, what: str) -> str:
    """A file's text, read as every command reads a user's file (``files.py``): a regular
    file only -- a FIFO would block, ``/dev/zero`` never end -- of at most
    :data:`MAX_FILE_BYTES`."""
    try:
        data = read_bytes(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise _refused(path, what, exc) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{path}: not a {what} file (not UTF-8 text)") from None


def check_file(path: Path, what: str) -> None:
    """Refuse ``path`` unless it is a regular file (a FIFO, a device: named, never opened)."""
    try:
        check_regular(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise _refused(path, what, exc) from None


def _refused(path: Path, what: str, exc: OSError) -> ImportFileError:
    """Why ``path`` cannot be read: not a regular file or too large (``files.py``), or
    the system's reason."""
    if isinstance(exc, FileRefused):
        return ImportFileError(f"{path}: cannot read it as a {what} file: {exc.strerror}")
    return ImportFileError(f"{path}: cannot read it ({exc.strerror or exc})")


def read_json(path: Path, what: str) -> Any:
    """The JSON document of a ``what`` file (refused when it is not JSON)."""
    text = read_text(path, what)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ImportFileError(f"{path}: not a {what} file (not JSON: {exc})") from None


def need(cond: bool, path: Path | str, what: str, expected: str) -> None:
    """Refuse ``path`` as a ``what`` file unless ``cond``, saying what was ``expected``."""
    if not cond:
        raise ImportFileError(f"{path}: not a {what} file: expected {expected}")


def positive(x: Any) -> float | None:
    """``x`` as a finite number above 0 (None: anything else)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def iso_ns(text: Any) -> int | None:
    """An ISO 8601 time (``Z`` for UTC) in ns since the epoch (None: not one)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return None


def memory_bytes(text: Any) -> int | None:
    """asv's ``ram``: bytes, or '16GB'-like text."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)i?B?\s*", str(text), re.I)
    if m is None:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def whole_number(x: Any) -> int | None:
    """``x`` as an int (None: not a number)."""
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def python_version(text: Any) -> str | None:
    """The ``3.11.4`` at the start of a Python version text (None: none there)."""
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", str(text or ""))
    return m.group(1) if m else None


def commit_version(commit: Any, when_ns: int | None, path: Path, what: str) -> Version | None:
    """The version of a commit hash a tool recorded, labelled by its first 12 digits
    (None: no hash, or not one -- pytest-benchmark writes 'unversioned')."""
    if commit in (None, ""):
        return None
    sha = str(commit)
    if not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha):  # pytest-benchmark: 'unversioned'
        return None
    return Version(sha[:12], commit=sha, commit_ns=when_ns)
