"""A stable fingerprint of the machine an experiment ran on.

Built from the host record of the results directory (``hosts/<host>.json``, see
docs/results.md): the facts that change how fast a program runs -- CPU model,
cores, memory, kernel, architecture, virtualization, frequency governor,
scheduler autogroup, Python version -- and nothing that differs between two
identical machines (host name, detection time, paths). Memory is rounded to whole
GiB, because virtual machines report a few MiB more or less from boot to boot.
Two experiments on machines with equal fingerprints belong to one series; a
different fingerprint starts another series and is shown as environment drift,
never as a regression.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: host record keys that make up the fingerprint
FINGERPRINT_KEYS = (
    "cpu_model",
    "cores",
    "cpus_available",
    "memory_gib",
    "kernel",
    "machine",
    "virtualization",
    "cpu_governor",
    "sched_autogroup",
    "python",
)
_GIB = 1 << 30


@dataclass(frozen=True)
class HostFingerprint:
    """``fingerprint``: 16 hex digits of SHA-256 over the canonical JSON of ``facts``."""

    fingerprint: str
    facts: tuple[tuple[str, Any], ...]

    @property
    def facts_dict(self) -> dict[str, Any]:
        return dict(self.facts)

    def describe(self) -> str:
        f = self.facts_dict
        parts = [str(f.get("cpu_model") or "unknown CPU")]
        if f.get("cores") is not None:
            parts.append(f"{f['cores']} cores")
        if f.get("memory_gib") is not None:
            parts.append(f"{f['memory_gib']} GiB")
        if f.get("kernel"):
            parts.append(f"kernel {f['kernel']}")
        return ", ".join(parts)


def facts_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fingerprint facts of a host record (missing ones are None)."""
    memory = record.get("memory_bytes")
    cpus = record.get("cpus_available")
    facts: dict[str, Any] = {k: record.get(k) for k in FINGERPRINT_KEYS}
    facts["memory_gib"] = round(memory / _GIB) if isinstance(memory, int | float) else None
    facts["cpus_available"] = len(cpus) if isinstance(cpus, list | tuple) else cpus
    return facts


def fingerprint(record: Mapping[str, Any]) -> HostFingerprint:
    """The fingerprint of a host record (``hosts/<host>.json``, or ``host_*`` table columns)."""
    facts = facts_of(record)
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return HostFingerprint(digest, tuple(sorted(facts.items())))


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The fingerprint facts that differ between two hosts: key -> (old, new)."""
    keys = sorted(set(old) | set(new))
    return {k: (old.get(k), new.get(k)) for k in keys if old.get(k) != new.get(k)}
