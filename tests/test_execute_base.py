"""Choosing an executor by name (execute/base.py)."""

from __future__ import annotations

import importlib
import sys

import pytest

from duetbench.errors import ExecutorError


def test_unknown_executor_is_a_user_error() -> None:
    from duetbench.execute.base import get_executor

    with pytest.raises(ExecutorError, match="unknown executor 'vm'"):
        get_executor("vm")


def test_a_broken_container_module_is_a_bug_not_a_missing_feature(monkeypatch) -> None:
    """An ImportError inside duetbench propagates: it is not turned into "this build of
    duetbench does not have the container executor" (which would send the user to
    --executor local instead of reporting the bug)."""
    monkeypatch.setitem(sys.modules, "duetbench.execute.container", None)  # import fails
    monkeypatch.delitem(sys.modules, "duetbench.execute.base", raising=False)
    base = importlib.import_module("duetbench.execute.base")
    with pytest.raises(ImportError):
        base.get_executor("podman")
