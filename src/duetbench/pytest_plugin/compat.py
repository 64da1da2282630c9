"""pytest-benchmark's command-line options where pytest-benchmark is not installed
(docs/pytest.md, "The fixture").

A project's addopts often carry ``--benchmark-disable`` or ``--benchmark-skip``; in an
interpreter without pytest-benchmark (a side's ``--duet-a-python``, or a suite that
dropped it for this plugin's fixture) pytest would refuse them as unknown. Here they
are declared with pytest-benchmark's names and arities. In a duet's sides they do
nothing (the duet decides what is timed); a single side honours the ones that say which
tests run and for how long: ``--benchmark-skip``, ``--benchmark-only``,
``--benchmark-disable`` (each benchmarked function called once, untimed) unless
``--benchmark-enable``, ``--benchmark-max-time`` and ``--benchmark-min-rounds``.

Standard library and pytest only: loaded in every pytest session.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

#: pytest-benchmark's options: name -> (action, nargs) as pytest-benchmark 5 declares them
OPTIONS: dict[str, tuple[str, str | None]] = {
    "--benchmark-min-time": ("store", None),
    "--benchmark-max-time": ("store", None),
    "--benchmark-min-rounds": ("store", None),
    "--benchmark-timer": ("store", None),
    "--benchmark-calibration-precision": ("store", None),
    "--benchmark-warmup": ("store", "?"),
    "--benchmark-warmup-iterations": ("store", None),
    "--benchmark-disable-gc": ("store_true", None),
    "--benchmark-skip": ("store_true", None),
    "--benchmark-disable": ("store_true", None),
    "--benchmark-enable": ("store_true", None),
    "--benchmark-only": ("store_true", None),
    "--benchmark-save": ("store", None),
    "--benchmark-autosave": ("store_true", None),
    "--benchmark-save-data": ("store_true", None),
    "--benchmark-json": ("store", None),
    "--benchmark-compare": ("store", "?"),
    "--benchmark-compare-fail": ("store", "+"),
    "--benchmark-cprofile": ("store", None),
    "--benchmark-cprofile-loops": ("store", None),
    "--benchmark-cprofile-top": ("store", None),
    "--benchmark-cprofile-dump": ("append", "?"),
    "--benchmark-storage": ("store", None),
    "--benchmark-netrc": ("store", "?"),
    "--benchmark-verbose": ("store_true", None),
    "--benchmark-quiet": ("store_true", None),
    "--benchmark-sort": ("store", None),
    "--benchmark-group-by": ("store", None),
    "--benchmark-columns": ("store", None),
    "--benchmark-name": ("store", None),
    "--benchmark-time-unit": ("store", None),
    "--benchmark-histogram": ("append", "?"),
}


def pytest_benchmark_installed() -> bool:
    return importlib.util.find_spec("pytest_benchmark") is not None


def add_options(parser: pytest.Parser) -> None:
    """Declare :data:`OPTIONS` (call only where pytest-benchmark is not installed)."""
    group = parser.getgroup(
        "benchmark",
        "pytest-benchmark's options (pytest-benchmark is not installed: duetbench's fixture reads a few)",
    )
    for name, (action, nargs) in OPTIONS.items():
        kwargs: dict[str, Any] = {
            "action": action,
            "help": "as pytest-benchmark's (docs/pytest.md)",
        }
        if nargs is not None:
            kwargs["nargs"] = nargs
            if nargs == "?":
                kwargs["const"] = True
        group.addoption(name, **kwargs)


def single_settings(config: pytest.Config) -> dict[str, Any]:
    """What the options say to a single side: ``skip``, ``only``, ``disabled`` and the
    ``max_time``/``min_rounds`` given (None: the fixture's defaults)."""

    def get(name: str) -> Any:
        return config.getoption(name, default=None)

    def number(name: str, kind: type) -> Any:
        text = get(name)
        if text in (None, True):
            return None
        try:
            return kind(text)
        except ValueError:
            raise pytest.UsageError(f"{name} {text!r}: not a number") from None

    return {
        "skip": bool(get("--benchmark-skip")),
        "only": bool(get("--benchmark-only")),
        "disabled": bool(get("--benchmark-disable")) and not get("--benchmark-enable"),
        "max_time": number("--benchmark-max-time", float),
        "min_rounds": number("--benchmark-min-rounds", int),
    }
