"""Choosing an executor by name."""

from __future__ import annotations

from typing import Any

from ..errors import ExecutorError
from .local import LocalExecutor


def get_executor(
    name: str, *, host: str | None = None, settings: dict[str, Any] | None = None
) -> LocalExecutor:
    """``local`` or a container engine (``docker`` / ``podman``)."""
    if name == "local":
        return LocalExecutor(host=host)
    if name in ("docker", "podman", "container"):
        from .container import ContainerExecutor

        return ContainerExecutor(engine=name, host=host, settings=settings or {})
    raise ExecutorError(f"unknown executor '{name}'; use local, docker or podman")
