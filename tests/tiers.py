"""Test tiers, applied automatically (DEVELOPERS.md, "Test tiers").

- ``e2e``: the test starts a process -- `duet` itself, a benchmark command, a compiler,
  git, a container engine, a browser, a database server -- directly or through a helper,
  a fixture or a duetbench function that does.
- ``slow``: it needs a container engine, a browser or a database server, or it is a
  study (a long seeded simulation, marked by hand with ``@pytest.mark.slow``).
- ``smoke("COMMAND")``: marked by hand, the one end-to-end test of a `duet` command that
  the fast tier keeps (``tests/test_tiers.py`` checks that every command has one).

:func:`classify` reads the source of the test, of the fixtures it uses and of the helper
functions those call (within tests/), and looks for what starts processes
(:data:`STARTS_PROCESSES`) or needs a slow resource (:data:`NEEDS_SLOW`). A rule that
reads source can miss a process started deep inside a library call, so
:class:`ProcessWatch` checks the rule while the tests run: a test that starts a process
and is not ``e2e``, or runs a container engine, browser or database server and is not
``slow``, fails and says which word to add here.
"""

from __future__ import annotations

import _posixsubprocess
import inspect
import io
import os
import re
import subprocess
import sys
import textwrap
import threading
import tokenize
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent

#: Names in a test's source (or its fixtures' and helpers') that make it end to end: the
#: standard library's ways of starting a process, the test helpers that run `duet`, and
#: the duetbench functions whose job is to start one (executors, schedulers, the micro
#: worker, git).
STARTS_PROCESSES = (
    "subprocess",
    "Popen",
    "os.fork",
    "os.system",
    "os.posix_spawn",
    "multiprocessing",
    "run_duet",
    "duet_in_process",  # a whole `duet` command, in this process: end to end all the same
    "run_experiment",
    "run_experiment_cluster",
    "local_cluster",
    "prepare_experiment",
    "pyperf_verdict",
    "LocalExecutor",
    "ContainerExecutor",
    "NoisyNeighbour",
    "noise_controller",
    "run_guarded",
    "discover",
    "calibrate",
    "build_experiment",
    "calibrate_experiment",
    "run_gate",
    "run_bisect",
    "LocalCluster",
    "pg_ctl",
)
#: Names that mean a container engine, a browser or a database server.
NEEDS_SLOW = ("podman", "docker", "Browser", "CHROMIUM", "postgres_server", "pg_server")
#: Fixtures that bring one (the container image, a browser, a database server).
SLOW_FIXTURES = frozenset({"image", "browser", "pg_server"})
#: Programs whose start makes a test slow (checked while it runs).
SLOW_PROGRAMS = frozenset(
    {"podman", "docker", "chromium", "chromium-browser", "postgres", "initdb", "pg_ctl"}
)
#: Parameter values of parametrized fixtures that bring a slow resource (repo_url).
SLOW_PARAMS = frozenset({"postgresql"})


def _words(names: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")


_STARTS = _words(STARTS_PROCESSES)
_SLOW = _words(NEEDS_SLOW)
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_source_cache: dict[Any, tuple[str, tuple[Any, ...]]] = {}


def _code_only(source: str) -> str:
    """``source`` without its strings and comments (a config text saying `executor:
    podman` starts nothing)."""
    kept = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(textwrap.dedent(source)).readline):
            if token.type not in (tokenize.STRING, tokenize.COMMENT) and not (
                sys.version_info >= (3, 12) and token.type == tokenize.FSTRING_MIDDLE
            ):
                kept.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    return " ".join(kept)


def _in_tests(obj: Any) -> bool:
    try:
        path = inspect.getsourcefile(obj)
    except TypeError:
        return False
    return path is not None and Path(path).resolve().is_relative_to(TESTS_DIR)


def _source_and_callees(obj: Any) -> tuple[str, tuple[Any, ...]]:
    """``obj``'s source, and the functions and classes of tests/ it calls by name."""
    if obj in _source_cache:
        return _source_cache[obj]
    try:
        text = _code_only(inspect.getsource(obj))
    except (OSError, TypeError):
        text = ""
    module = inspect.getmodule(obj)
    scope = vars(module) if module is not None else {}
    callees = []
    for name in dict.fromkeys(_CALLED.findall(text)):
        target = scope.get(name)
        if (inspect.isfunction(target) or inspect.isclass(target)) and _in_tests(target):
            callees.append(target)
    _source_cache[obj] = (text, tuple(callees))
    return _source_cache[obj]


def _reachable_source(roots: Iterable[Any]) -> str:
    seen: set[Any] = set()
    texts = []
    todo = list(roots)
    while todo:
        obj = todo.pop()
        if obj in seen:
            continue
        seen.add(obj)
        text, callees = _source_and_callees(obj)
        texts.append(text)
        todo.extend(callees)
    return "\n".join(texts)


def _roots(item: pytest.Item) -> list[Any]:
    """The test function and the functions of every fixture it uses."""
    roots: list[Any] = []
    function = getattr(item, "obj", None)
    if function is not None:
        roots.append(getattr(function, "__func__", function))
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in info.name2fixturedefs.get(name, ()) if info else ():
            if _in_tests(fixturedef.func):
                roots.append(fixturedef.func)
    return roots


def classify(item: pytest.Item) -> tuple[bool, bool]:
    """(starts processes, needs a slow resource) for ``item``, from its source."""
    text = _reachable_source(_roots(item))
    params = getattr(getattr(item, "callspec", None), "params", {})
    slow = (
        bool(_SLOW.search(text))
        or bool(SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())))
        or any(isinstance(v, str) and v in SLOW_PARAMS for v in params.values())
    )
    return bool(_STARTS.search(text)) or slow, slow


def mark_tiers(items: list[pytest.Item]) -> None:
    """Add the ``e2e`` and ``slow`` markers to every collected test that needs them."""
    for item in items:
        starts, slow = classify(item)
        if slow:
            item.add_marker(pytest.mark.slow)
        if starts or slow:
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("container"):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.e2e)


class ProcessWatch:
    """Records the processes each test starts (every way Python starts one goes through
    one of the wrapped functions), so a test can be checked against its markers."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.started: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._saved: list[tuple[Any, str, Any]] = []

    def _record(self, program: Any) -> None:
        with self._lock:
            if self.current is not None:
                text = os.fsdecode(program) if isinstance(program, bytes | str) else "?"
                self.started.setdefault(self.current, []).append(text)

    def _wrap(self, owner: Any, name: str, program_of: Callable[..., Any]) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return
        watch = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                watch._record(program_of(*args, **kwargs))
            except Exception:  # never let the watch break a start
                watch._record("?")
            return original(*args, **kwargs)

        self._saved.append((owner, name, original))
        setattr(owner, name, wrapper)

    def _forked(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held by another
        thread at the fork), and nothing recorded there."""
        self._lock = threading.Lock()
        self.current = None

    def install(self) -> None:
        os.register_at_fork(after_in_child=self._forked)

        def exec_program(*args: Any, **kwargs: Any) -> Any:
            argv = args[0] if args else kwargs.get("args")
            return argv[0] if argv else "?"

        self._wrap(subprocess, "_fork_exec", exec_program)
        self._wrap(_posixsubprocess, "fork_exec", exec_program)
        self._wrap(os, "posix_spawn", lambda path, *a, **k: path)
        self._wrap(os, "posix_spawnp", lambda path, *a, **k: path)
        self._wrap(os, "fork", lambda *a, **k: sys.executable + " (fork)")
        self._wrap(os, "forkpty", lambda *a, **k: sys.executable + " (forkpty)")
        self._wrap(os, "system", lambda command, *a, **k: str(command).split(" ")[0])

    def uninstall(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def problems(self, item: pytest.Item) -> list[str]:
        """What ``item`` started that its markers do not allow, in words."""
        started = self.started.pop(item.nodeid, [])
        if not started:
            return []
        programs = sorted({os.path.basename(p) for p in started})
        out = []
        if item.get_closest_marker("e2e") is None:
            out.append(
                f"it started {len(started)} process(es) ({', '.join(programs[:5])}) but is "
                "not marked e2e: add the name of the function that starts them to "
                "STARTS_PROCESSES in tests/tiers.py"
            )
        slow = sorted(SLOW_PROGRAMS.intersection(programs))
        if slow and item.get_closest_marker("slow") is None:
            out.append(
                f"it started {', '.join(slow)} but is not marked slow: add the name that "
                "leads to it to NEEDS_SLOW in tests/tiers.py"
            )
        return out
