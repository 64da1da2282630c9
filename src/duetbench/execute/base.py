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
        try:
            from .container import ContainerExecutor
        except ImportError:
            raise ExecutorError(
                "this experiment needs the container executor (its benchmarks set `image:`), which this "
                "build of duetbench does not have yet. Pass --executor local to run the commands as local "
                "processes instead (`image:` is then ignored)."
            ) from None
        return ContainerExecutor(engine=name, host=host, settings=settings or {})
    raise ExecutorError(f"unknown executor '{name}'; use local, docker or podman")
