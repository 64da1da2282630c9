"""What an importer read (history/importers.py): a run of another tool, one version on one
machine, and the helpers every importer uses (docs/history.md, "Importing other tools'
results"). :meth:`duetbench.history.Repository.add_imported` stores an
:class:`ImportedRun`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ..files import FileRefused, check_regular, read_bytes
from ._db import HistoryError
from ._ingest import ExperimentData
from .fingerprint import HostFingerprint
from .versions import Version

TOOLS = ("asv", "pytest-benchmark", "pyperf", "github-action-benchmark")
#: the largest file an importer reads (a saved run of thousands of tests is a few MiB)
MAX_FILE_BYTES = 256 << 20
#: the verdict of an imported row (it compares nothing)
IMPORTED = "imported"


class ImportFileError(HistoryError):
    """A file that is not what the importer expects (its message says what was expected)."""


@dataclass(frozen=True)
class ImportedResult:
    """One benchmark of an imported run."""

    benchmark: str
    value_ns: float  # per call: the tool's central value
    se_log: float | None  # standard error of log(value), where the tool's figures give one
    samples: int  # how many values the tool summarised
    values_ns: tuple[float, ...] = ()  # the raw values (per call), where the file has them


@dataclass(frozen=True)
class ImportedRun:
    """One version of the program on one machine, as another tool measured it."""

    tool: str
    source: str
    suite: str
    version: Version | None  # None: the file names no commit (give --version)
    host_name: str
    host: Mapping[str, Any]  # host record facts (history/fingerprint.py keys)
    results: tuple[ImportedResult, ...]
    started_ns: int | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def uid(self) -> str:
        """Equal for the same data imported again (under the same version)."""
        doc = {
            "tool": self.tool,
            "suite": self.suite,
            "version": None if self.version is None else self.version.label,
            "commit": None if self.version is None else self.version.commit,
            "host": sorted((k, str(v)) for k, v in self.host.items()),
            "results": [(r.benchmark, r.value_ns, r.samples) for r in self.results],
            "started": self.started_ns,
        }
        text = json.dumps(doc, sort_keys=True, default=str)
        return "import:" + hashlib.sha256(text.encode()).hexdigest()

    def table(self, name: str) -> pd.DataFrame:
        """An iterations table of the imported values (side A, one run): what
        `duet history export` writes and ``Repository.iterations`` returns."""
        rows = []
        for r in self.results:
            values = r.values_ns or (r.value_ns,)
            for i, v in enumerate(values):
                rows.append(
                    {
                        "experiment": name,
                        "host": self.host_name,
                        "suite": self.suite,
                        "benchmark": r.benchmark,
                        "method": self.tool,
                        "run": 0,
                        "pair": "A",
                        "iteration": i,
                        "duration_ns": int(round(v)),
                        "warmup": False,
                        "synthetic_ts": True,
                    }
                )
        return pd.DataFrame(rows)

    def version_of(self) -> Version:
        if self.version is None:
            raise HistoryError(f"{self.source}: the imported run has no version")
        return self.version

    def experiment_data(self, version: Version, host: HostFingerprint) -> ExperimentData:
        """The experiment the repository keeps: named ``<tool>:<version>``, its table of the
        imported values."""
        name = f"{self.tool}:{version.label}"
        return ExperimentData(
            uid=self.uid,
            name=name,
            source=self.source,
            table=self.table(name),
            hosts={self.host_name: host},
            host_records={self.host_name: dict(self.host)},
            started_ns=self.started_ns,
            tool_version=self.tool,
            problems=self.notes,
        )

    def result_rows(self) -> list[tuple[Any, ...]]:
        """Per benchmark: (suite, benchmark, method, mean_a_ns, runs, pairs, verdict,
        level_a, level_a_se) of the repository's results table: side A's level only."""
        return [
            (self.suite, r.benchmark, self.tool, r.value_ns, r.samples, 0, IMPORTED)
            + (math.log(r.value_ns), r.se_log)
            for r in self.results
        ]


# ---------------------------------------------------------------------- reading


def _read(path: Path, what: str) -> str:
    """A file's text, read as every command reads a user's file (``files.py``): a regular
    file only -- a FIFO would block, ``/dev/zero`` never end -- of at most
    :data:`MAX_FILE_BYTES`."""
    try:
        data = read_bytes(path, MAX_FILE_BYTES)
    except FileRefused as exc:
        raise ImportFileError(f"{path}: cannot read it as a {what} file: {exc.strerror}") from None
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{path}: not a {what} file (not UTF-8 text)") from None


def _regular(path: Path, what: str) -> None:
    """Refuse ``path`` unless it is a regular file (a FIFO, a device: named, never opened)."""
    try:
        check_regular(path, MAX_FILE_BYTES)
    except FileRefused as exc:
        raise ImportFileError(f"{path}: cannot read it as a {what} file: {exc.strerror}") from None
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _json(path: Path, what: str) -> Any:
    text = _read(path, what)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ImportFileError(f"{path}: not a {what} file (not JSON: {exc})") from None


def _need(cond: bool, path: Path | str, what: str, expected: str) -> None:
    if not cond:
        raise ImportFileError(f"{path}: not a {what} file: expected {expected}")


def _positive(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def _iso_ns(text: Any) -> int | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return None


def _memory(text: Any) -> int | None:
    """asv's ``ram``: bytes, or '16GB'-like text."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)i?B?\s*", str(text), re.I)
    if m is None:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def _int(x: Any) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def _python_version(text: Any) -> str | None:
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", str(text or ""))
    return m.group(1) if m else None


def _commit_version(commit: Any, when_ns: int | None, path: Path, what: str) -> Version | None:
    if commit in (None, ""):
        return None
    sha = str(commit)
    if not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha):  # pytest-benchmark: 'unversioned'
        return None
    return Version(sha[:12], commit=sha, commit_ns=when_ns)
