"""Detect the host's configuration and collect the artifact commands' output."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .proctools.guarded import run_captured


def host_name() -> str:
    return socket.gethostname() or "localhost"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _virtualization() -> str:
    tool = shutil.which("systemd-detect-virt")
    if tool:
        try:
            out = subprocess.run([tool], capture_output=True, text=True, timeout=5)
            return out.stdout.strip() or "none"
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        if "hypervisor" in Path("/proc/cpuinfo").read_text():
            return "vm"
    except OSError:
        pass
    return "unknown"


def _container_engines() -> list[str]:
    return [e for e in ("podman", "docker") if shutil.which(e)]


def available_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def detect_host() -> dict[str, Any]:
    """The host configuration recorded with every experiment (hosts/<host>.json)."""
    return {
        "host": host_name(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "cpus_available": available_cpus(),
        "memory_bytes": _mem_total(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "virtualization": _virtualization(),
        "container_engines": _container_engines(),
        "sched_autogroup": _read("/proc/sys/kernel/sched_autogroup_enabled"),
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "detected_ns": time.time_ns(),
    }


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


#: Bytes of an artifact command's output kept in hosts/<host>.json (the rest is counted).
ARTIFACT_OUTPUT_LIMIT = 1 << 20


def run_artifacts(
    artifacts: Iterable[tuple[str, str]], *, prefix: list[str] | None = None, timeout: float = 30.0
) -> dict[str, dict[str, Any]]:
    """Run each artifact command (through ``sh -c``; ``prefix`` e.g. a container exec).

    A failing command is recorded with its exit code and stderr, never raised. Each runs in
    its own process group that dies with duet run (proctools/guarded.py); its output is kept
    up to ``ARTIFACT_OUTPUT_LIMIT`` bytes, non-UTF-8 bytes as replacement characters.
    """
    out: dict[str, dict[str, Any]] = {}
    for name, command in artifacts:
        argv = [*(prefix or []), "sh", "-c", command]
        try:
            p = run_captured(argv, timeout=timeout, stdout_limit=ARTIFACT_OUTPUT_LIMIT, grace=1.0)
        except OSError as exc:
            out[name] = {"command": command, "exit_code": None, "stdout": "", "stderr": str(exc)}
            continue
        out[name] = {
            "command": command,
            "exit_code": p.returncode,
            "stdout": p.stdout,
            "stderr": f"timed out after {timeout}s" if p.timed_out else p.stderr,
        }
    return out
