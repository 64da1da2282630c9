"""Host requirements (``experiment.hosts``) and `cpus:` lists checked against a worker's host
(docs/cluster.md, "Host requirements")."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ...config.limits import HostCpus, cpus_message, unusable_cpus
from ...config.model import Experiment

#: ``experiment.hosts`` keys -> meaning (docs/cluster.md). Regex keys are searched, case-
#: insensitively, in the detected value; a list means "any of these".
HOST_REQUIREMENTS: dict[str, str] = {
    "host": "regex on the host name",
    "cpu_model": "regex on the CPU model",
    "kernel": "regex on the kernel release",
    "os": "regex on the OS (platform string)",
    "machine": "regex on the architecture (x86_64, aarch64)",
    "virtualization": "regex on the virtualization (none, kvm, docker, ...)",
    "container_engine": "regex on an installed container engine (docker, podman)",
    "min_cores": "at least this many CPUs available to the worker",
    "max_cores": "at most this many CPUs available to the worker",
    "min_memory_gb": "at least this much memory (GB = 10^9 bytes)",
    "max_memory_gb": "at most this much memory (GB = 10^9 bytes)",
}
_REGEX_FIELDS = {
    "host": "host",
    "cpu_model": "cpu_model",
    "kernel": "kernel",
    "os": "os",
    "machine": "machine",
    "virtualization": "virtualization",
    "container_engine": "container_engines",
}


def _cores(info: Mapping[str, Any]) -> int:
    return len(info.get("cpus_available") or []) or int(info.get("cores") or 0)


def check_host(
    requirements: Mapping[str, Any] | Iterable[tuple[str, Any]], info: Mapping[str, Any]
) -> list[str]:
    """Why the host described by ``info`` (hosts/<host>.json) misses ``requirements``; [] = fits."""
    reqs = dict(requirements)
    problems: list[str] = []
    for key, want in sorted(reqs.items()):
        if key in _REGEX_FIELDS:
            value = info.get(_REGEX_FIELDS[key])
            values = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
            if value is None:
                values = []
            pats = [want] if isinstance(want, str) else list(want)
            if not any(re.search(p, v, re.IGNORECASE) for p in pats for v in values):
                shown = ", ".join(values) or "none"
                problems.append(f"{key} is {shown!r}, wanted {' or '.join(map(repr, pats))}")
        elif key in ("min_cores", "max_cores"):
            cores = _cores(info)
            if (key == "min_cores" and cores < want) or (key == "max_cores" and cores > want):
                problems.append(f"{cores} CPUs available, wanted {key.split('_')[0]} {want}")
        elif key in ("min_memory_gb", "max_memory_gb"):
            mem = info.get("memory_bytes")
            gb = mem / 1e9 if mem else None
            if gb is None:
                problems.append(f"memory unknown, wanted {key.split('_')[0]} {want} GB")
            elif (key == "min_memory_gb" and gb < want) or (key == "max_memory_gb" and gb > want):
                problems.append(f"{gb:.1f} GB memory, wanted {key.split('_')[0]} {want} GB")
        else:
            problems.append(
                f"unknown host requirement '{key}' (known: {', '.join(HOST_REQUIREMENTS)})"
            )
    return problems


def cpu_reasons(exp: Experiment, host: str, info: Mapping[str, Any]) -> list[str]:
    """Why ``host`` cannot run a benchmark whose `cpus:` list names CPUs it lacks ([] = it can).

    `duet plan` and `duet run` check the `cpus:` lists against their own host; on a cluster
    each host is checked when its first worker joins.
    """
    usable = info.get("cpus_available")
    if not usable:  # not known: the run itself will tell
        return []
    here = HostCpus(host, usable)
    problems = []
    for bench in exp.benchmarks:
        missing = unusable_cpus(bench.cpus, usable)
        if missing:
            problems.append(cpus_message(bench.name, missing, here))
    return problems
