"""duetbench's pytest plugin (entry point ``pytest11``; docs/pytest.md).

One plugin, three roles, chosen in ``pytest_configure``:

- **the duet** (``--duet-a PATH --duet-b PATH`` or ``--duet-against GIT_REF``): this
  pytest process runs no test itself. It calibrates every benchmark test in each side's
  own pytest process, then runs an experiment of them through duetbench's scheduler --
  each run two pytest processes, one per side, in lockstep through the micro worker's
  handshake -- and prints the verdict table at the end of the session (``duet.py``);
- **a side** (``$DUET_PYTEST`` set, by the duet): selects the tests it was told to run,
  puts its source tree first on ``sys.path``, and the ``benchmark`` fixture calibrates or
  samples (``fixture.py``);
- **single** (plain ``pytest``): when pytest-benchmark is installed it is left alone;
  without it the ``benchmark`` fixture times the one side as pytest-benchmark does, so a
  suite can switch without edits.

Importing this module costs nothing beyond pytest: it is loaded in every pytest session
where duetbench is installed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from .names import ENV, XDIST_OFF


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    from . import compat

    if pluginmanager.is_blocked("benchmark") or not compat.pytest_benchmark_installed():
        compat.add_options(parser)  # a project's addopts keep working without it
    g = parser.getgroup("duet", "duetbench: the benchmark tests of two versions, A against B")
    g.addoption("--duet-a", metavar="PATH", action="append", default=[],
                help="side A's source tree, first on its sys.path (repeatable)")  # fmt: skip
    g.addoption("--duet-b", metavar="PATH", action="append", default=[],
                help="side B's source tree, first on its sys.path (repeatable)")  # fmt: skip
    g.addoption("--duet-against", metavar="GIT_REF",
                help="side A: GIT_REF checked out as a git worktree; side B: this tree")  # fmt: skip
    g.addoption("--duet-path", metavar="REL",
                help="with --duet-against: the directory of each tree on sys.path "
                "(default: src when it exists, else the tree's root)")  # fmt: skip
    g.addoption("--duet-build", metavar="CMD", help="with --duet-against: build the worktree")
    shared(g, "a-python", "b-python")
    # not shared: no inproc here (each side is its own pytest process)
    g.addoption("--duet-method", action="append", default=[], choices=("sduet", "aduet", "seqn"),
                help="sduet (default: lockstep per sample), aduet, seqn; repeatable")  # fmt: skip
    # not shared: the whole session's budget (micro's is per benchmark x method), and the
    # runs that fit it
    g.addoption("--duet-budget", metavar="TIME", default="60s",
                help="the whole session's time, every process start included, e.g. 60s, 5m "
                "(default 60s)")  # fmt: skip
    g.addoption("--duet-runs", metavar="N", type=int,
                help="runs (a fresh pytest process per side, each running every test) per "
                "method (default: 10, more when the budget allows, fewer when it cannot)")  # fmt: skip
    shared(g, "samples", "min-sample-time", "keep-gc", "no-cpu-swap", "threshold", "format")
    g.addoption("--duet-report", metavar="FILE",
                help="write the verdict table there instead of the terminal")  # fmt: skip
    shared(g, "fail-on-regression", "output", "seed")


def shared(group: Any, *names: str) -> None:
    """``--duet-NAME``: the flags the plugin shares with `duet micro`, declared once in
    ``duetbench.options`` (pytest's addoption takes argparse's keywords)."""
    from ..options import shared_flag

    for name in names:
        group.addoption(f"--duet-{name}", **shared_flag(name, "duet-"))


def instruction() -> dict[str, Any] | None:
    """The side's instruction, or None outside a side process."""
    text = os.environ.get(ENV)
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        raise pytest.UsageError(
            f"${ENV} is not JSON: it is set by duetbench for its sides"
        ) from None
    if not isinstance(doc, dict) or doc.get("mode") not in ("calibrate", "run"):
        raise pytest.UsageError(f"${ENV} is not a duetbench side instruction")
    return doc


def duet_requested(config: pytest.Config) -> bool:
    return bool(
        config.getoption("--duet-a")
        or config.getoption("--duet-b")
        or config.getoption("--duet-against")
    )


def pytest_load_initial_conftests(early_config: pytest.Config, parser: Any, args: Any) -> None:
    """A side's source tree goes first on sys.path before any conftest or test imports; the
    duet's own process loads the conftests too (not the tests), with side B's tree.

    Neither tryfirst nor trylast: after pytest's ``pythonpath`` option has put its
    directories first (a tryfirst hook) -- the side's tree must come before them, or a
    ``pythonpath = src`` would give side A the current tree's code -- and before the
    conftests are loaded (a trylast hook)."""
    ins = instruction()
    if ins is not None or duet_requested_early(early_config):
        no_xdist(early_config, args)
    if ins is not None:
        paths = [os.path.abspath(p) for p in ins.get("paths") or []]
        # pytest-benchmark's hooks expect its own fixture object: in a side, this one is
        # the fixture and pytest-benchmark is left out (its --benchmark-* options still
        # parse, so a suite's addopts keep working)
        early_config.pluginmanager.set_blocked("benchmark")
    else:
        known = early_config.known_args_namespace
        trees = [getattr(known, f"duet_{s}", None) or [] for s in "ba"]
        given = next((t for t in trees if t and all(os.path.isdir(p) for p in t)), [])
        paths = [os.path.abspath(p) for p in given]
    sys.path[:0] = [p for p in paths if p not in sys.path[: len(paths)]]


def duet_requested_early(early_config: pytest.Config) -> bool:
    known = early_config.known_args_namespace
    return any(getattr(known, f"duet_{k}", None) for k in ("a", "b", "against"))


def no_xdist(early_config: pytest.Config, args: list[str]) -> None:
    """pytest-xdist's ``-n``/``--dist`` (often in a project's addopts) off for a duet's
    own process and its sides: each side is one process running its tests in lockstep
    with the other's. Appended to the arguments pytest is about to parse, so they win."""
    if not early_config.pluginmanager.hasplugin("xdist"):
        return
    known = early_config.known_args_namespace
    if getattr(known, "numprocesses", None) or getattr(known, "dist", "no") != "no":
        args[:] = [*args, "--numprocesses=0", "--dist=no"]
        XDIST_OFF.append(True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "benchmark(**options): pytest-benchmark's options; duetbench reads max_time and "
        "min_rounds when it times one side (docs/pytest.md)",
    )
    ins = instruction()
    if ins is not None:
        from . import fixture
        from .side import SidePlugin

        fixture.STATE.mode = ins["mode"]
        fixture.STATE.instruction = ins
        # registered after every plugin (pytest-benchmark too): this fixture wins
        config.pluginmanager.register(fixture, "duetbench-benchmark-fixture")
        config.pluginmanager.register(SidePlugin(ins), "duetbench-side")
    elif duet_requested(config):
        from .duet import Controller

        config.pluginmanager.register(Controller(config), "duetbench-duet")
    elif not config.pluginmanager.hasplugin("benchmark"):  # pytest-benchmark's name
        from . import fixture
        from .compat import single_settings
        from .side import SinglePlugin

        fixture.STATE.mode = "single"
        fixture.STATE.single = single_settings(config)
        config.pluginmanager.register(fixture, "duetbench-benchmark-fixture")
        config.pluginmanager.register(SinglePlugin(), "duetbench-single")
