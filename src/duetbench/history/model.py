"""The values the repository hands out (frozen dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fingerprint import HostFingerprint


@dataclass(frozen=True)
class StoredVersion:
    id: int
    label: str
    commit: str | None
    commit_ns: int | None
    first_seen_ns: int


@dataclass(frozen=True)
class ExperimentInfo:
    id: int
    uid: str
    name: str
    source: str | None
    added_ns: int
    started_ns: int | None
    version_a: str
    version_b: str
    table_hash: str
    hosts: tuple[tuple[str, str], ...]  # (host name, fingerprint)


@dataclass(frozen=True)
class HostInfo:
    id: int
    fingerprint: str
    facts: tuple[tuple[str, Any], ...]

    def describe(self) -> str:
        return HostFingerprint(self.fingerprint, self.facts).describe()


@dataclass(frozen=True)
class Mark:
    id: int
    benchmark: str
    version: str
    kind: str  # change | exclude
    note: str
    suite: str | None = None
    method: str | None = None
    host: str | None = None  # fingerprint
    created_ns: int = 0

    def applies_to(self, suite: str, benchmark: str, method: str, host: str) -> bool:
        return (
            self.benchmark == benchmark
            and self.suite in (None, suite)
            and self.method in (None, method)
            and self.host in (None, host)
        )


@dataclass(frozen=True)
class Summary:
    """``duet history list``: what the repository holds."""

    versions: tuple[StoredVersion, ...]
    experiments: tuple[ExperimentInfo, ...]
    hosts: tuple[HostInfo, ...]
    benchmarks: tuple[tuple[str, str], ...]  # (suite, benchmark)
