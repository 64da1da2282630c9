"""What an importer read (history/importers.py): a run of another tool, one version on one
machine (docs/history.md, "Importing other tools' results"); how the importers read a
tool's file is history/import_files.py. :meth:`duetbench.history.Repository.add_imported` stores an
:class:`ImportedRun`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ._db import HistoryError
from ._ingest import ExperimentData
from .fingerprint import HostFingerprint
from .versions import Version

TOOLS = ("asv", "pytest-benchmark", "pyperf", "github-action-benchmark")
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
