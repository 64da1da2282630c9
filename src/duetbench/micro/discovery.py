"""Benchmarks in a target, found as their suites define them (docs/micro.md, "Targets").

A target is one of

* ``module:function``, ``module:Class.method``, ``module:Class``, ``module``;
* a file ``bench_x.py`` (optionally ``bench_x.py:function`` ...);
* a directory: an asv benchmark suite (``benchmark_dir`` of ``asv.conf.json``).

In a module, file or class, benchmarks are functions and methods named
``time_*`` (asv) or ``bench_*``; a function ``test_*(benchmark)`` is a
pytest-benchmark test. asv's ``mem_*``, ``peakmem_*``, ``track_*`` and
``timeraw_*`` are listed as *skipped* with the reason, never silently dropped.
asv's ``params`` / ``param_names`` expand into one benchmark per combination,
named as asv names them: ``module.Class.time_x(10, 'abc')``. ``setup``,
``teardown``, ``setup_cache`` and ``timeout`` are looked up on the function,
then its class, then its module (as asv does); ``number``, ``repeat``,
``rounds``, ``sample_time``, ``warmup_time``, ``min_run_count`` and
``processes`` are recorded as *hints* and otherwise ignored: the worker
calibrates its own evaluation count.

Standard library only, Python 3.8 syntax (loaded by path inside the worker).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

RUNNABLE_PREFIXES = (("time_", "time"), ("bench_", "bench"))
SKIPPED_PREFIXES = (
    ("mem_", "asv mem_* benchmarks measure an object's size, not time"),
    ("peakmem_", "asv peakmem_* benchmarks measure peak memory, not time"),
    ("track_", "asv track_* benchmarks record a value the function returns, not time"),
    ("timeraw_", "asv timeraw_* benchmarks time code in a fresh interpreter; not supported"),
)
HINT_NAMES = (
    "number",
    "repeat",
    "rounds",
    "sample_time",
    "warmup_time",
    "min_run_count",
    "processes",
    "pretty_name",
)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_ATTR_RE = re.compile(rf"{_IDENT}(\.{_IDENT})?")
_MODULE_RE = re.compile(rf"{_IDENT}(\.{_IDENT})*")


class TargetError(Exception):
    """The target or benchmark name is wrong (a usage error, not the user's code failing)."""


class UserCodeFailure(Exception):
    """The user's code raised: ``phase`` is import, setup_cache, setup, ... ; ``error`` the exception."""

    def __init__(self, phase: str, error: BaseException, skipped: bool = False) -> None:
        super().__init__(f"{phase} failed: {type(error).__name__}: {error}")
        self.phase = phase
        self.error = error
        self.skipped = skipped  # asv: a setup raising NotImplementedError skips the benchmark


@dataclass(frozen=True)
class Target:
    kind: str  # suite | file | module
    location: str  # directory, file path or module name
    attr: str | None = None  # function, Class or Class.method


@dataclass(frozen=True)
class Found:
    """One benchmark (one parameter combination) and what is needed to run it."""

    name: str
    kind: str  # time | bench | function | method | pytest-benchmark | skipped
    func: Any = None
    owner: Any = None  # the class of a method
    module: Any = None
    params: tuple[Any, ...] = ()
    param_names: tuple[str, ...] = ()
    timeout_s: float | None = None
    skip_reason: str | None = None
    hints: dict[str, Any] = field(default_factory=dict)
    failed: bool = False  # skipped because the user's code raised (a suite module's import)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "params": [repr(p) for p in self.params],
            "param_names": list(self.param_names),
            "timeout_s": self.timeout_s,
            "skip_reason": self.skip_reason,
            "hints": self.hints,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class Prepared:
    """A benchmark ready to time: ``fn()`` is one evaluation; ``teardown()`` after the last."""

    fn: Callable[[], Any]
    teardown: Callable[[], None]


# --------------------------------------------------------------------------- targets


def parse_target(text: str) -> Target:
    """What the user named; relative paths are taken from the working directory."""
    if not text.strip():
        raise TargetError("the target is empty")
    if os.path.isdir(text):
        return Target("suite", os.path.abspath(text))
    head, sep, tail = text.rpartition(":")
    location, attr = (head, tail) if sep and _ATTR_RE.fullmatch(tail) else (text, None)
    if location.endswith(".py") or "/" in location or os.sep in location:
        return Target("file", os.path.abspath(location), attr)
    if _MODULE_RE.fullmatch(location):
        return Target("module", location, attr)
    raise TargetError(
        f"cannot read the target {text!r}: give module:function, module:Class.method, "
        "a file bench_x.py[:function] or an asv benchmark directory"
    )


def search_path(target: Target) -> list[str]:
    """Directories the target itself needs on sys.path (after the side's ``--path``)."""
    if target.kind == "suite":
        return [os.path.dirname(target.location)]
    if target.kind == "file":
        return [os.path.dirname(target.location)]
    return []


def _import(phase_name: str, load: Callable[[], ModuleType]) -> ModuleType:
    try:
        return load()
    except BaseException as exc:  # the user's import: any error, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise UserCodeFailure(phase_name, exc) from exc


def _import_file(path: str) -> ModuleType:
    if not os.path.isfile(path):
        raise TargetError(f"{path}: no such file")
    stem = os.path.splitext(os.path.basename(path))[0]
    name = (
        stem
        if stem.isidentifier() and stem not in sys.modules
        else f"_duet_micro_{abs(hash(path))}"
    )
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"{path}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module

    def load() -> ModuleType:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    return _import("import", load)


def suite_modules(directory: str) -> list[str]:
    """Dotted names (relative to the suite) of the suite's modules, packages descended."""
    found: list[str] = []
    for root, dirs, files in os.walk(directory):
        rel = os.path.relpath(root, directory)
        parts = [] if rel == "." else rel.split(os.sep)
        dirs[:] = sorted(d for d in dirs if os.path.isfile(os.path.join(root, d, "__init__.py")))
        for f in sorted(files):
            if f.endswith(".py") and f != "__init__.py" and f[:-3].isidentifier():
                found.append(".".join(parts + [f[:-3]]))
    return found


def _suite_package(target: Target) -> str:
    package = os.path.basename(os.path.normpath(target.location))
    if not package.isidentifier():
        raise TargetError(
            f"{target.location}: an asv benchmark directory is imported as a package, so its "
            f"name must be a Python identifier (not {package!r})"
        )
    return package


def _suite_module_for(target: Target, name: str) -> str | None:
    """The module of the suite that can hold benchmark ``name`` (its longest module prefix)."""
    parts = name.split("(", 1)[0].split(".")
    for i in range(len(parts) - 1, 0, -1):
        path = os.path.join(target.location, *parts[:i])
        if os.path.isfile(path + ".py"):
            return ".".join(parts[:i])
    return None


def discover(target: Target, only: str | None = None) -> list[Found]:
    """Every benchmark of the target, skipped ones included, in a stable order.

    ``only``: the name of the one benchmark wanted; for a suite, only the module
    that can hold it is imported.
    """
    if target.kind == "module":
        module = _import("import", lambda: importlib.import_module(target.location))
        return discover_module(module, "", target.attr)
    if target.kind == "file":
        return discover_module(_import_file(target.location), "", target.attr)
    package = _suite_package(target)
    wanted = _suite_module_for(target, only) if only is not None else None
    names = [wanted] if wanted is not None else suite_modules(target.location)
    found: list[Found] = []
    for rel in names:
        try:
            module = _import("import", lambda r=rel: importlib.import_module(f"{package}.{r}"))
        except UserCodeFailure as failure:
            if only is not None:
                raise
            reason = f"import failed: {type(failure.error).__name__}: {failure.error}"
            found.append(Found(name=rel, kind="skipped", skip_reason=reason, failed=True))
            continue
        found.extend(discover_module(module, rel + ".", None))
    return found


# --------------------------------------------------------------------------- modules


def discover_module(module: ModuleType, prefix: str, attr: str | None) -> list[Found]:
    if attr is not None:
        return _explicit(module, prefix, attr)
    found: list[Found] = []
    for name, obj in list(vars(module).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            found.extend(_function(module, prefix, name, obj, None))
        elif inspect.isclass(obj) and not inspect.isabstract(obj):
            found.extend(_class(module, prefix, obj))
    return found


def _explicit(module: ModuleType, prefix: str, attr: str) -> list[Found]:
    head, _, tail = attr.partition(".")
    obj = getattr(module, head, None)
    if obj is None:
        raise TargetError(f"module {module.__name__!r} has no attribute {head!r}")
    if not tail:
        if inspect.isclass(obj):
            return _class(module, prefix, obj)
        if callable(obj):
            return _expand(module, prefix + head, "function", obj, None)
        raise TargetError(f"{module.__name__}:{head} is not a function or a class")
    if not inspect.isclass(obj):
        raise TargetError(f"{module.__name__}:{head} is not a class, so {attr!r} names nothing")
    method = getattr(obj, tail, None)
    if method is None or not callable(method):
        raise TargetError(f"class {head} of {module.__name__!r} has no method {tail!r}")
    return _expand(module, f"{prefix}{head}.{tail}", "method", method, obj)


def _class(module: ModuleType, prefix: str, cls: type) -> list[Found]:
    found: list[Found] = []
    for name in sorted(dir(cls)):
        obj = getattr(cls, name, None)
        if inspect.isfunction(obj):
            found.extend(_function(module, f"{prefix}{cls.__name__}.", name, obj, cls))
    return found


def _function(
    module: ModuleType, prefix: str, name: str, func: Any, owner: type | None
) -> list[Found]:
    for start, kind in RUNNABLE_PREFIXES:
        if name.startswith(start):
            return _expand(module, prefix + name, kind, func, owner)
    for start, reason in SKIPPED_PREFIXES:
        if name.startswith(start):
            return [Found(name=prefix + name, kind="skipped", skip_reason=reason)]
    if owner is None and name.startswith("test_") and _takes_benchmark(func):
        return _pytest_benchmark(module, prefix + name, func)
    return []


def _first(holders: Sequence[Any], attr: str, default: Any = None) -> Any:
    """``attr`` of the first holder that has it: a function's or module's own, a class's inherited."""
    for holder in holders:
        if holder is None:
            continue
        if inspect.isclass(holder):
            if hasattr(holder, attr):
                return getattr(holder, attr)
        elif attr in getattr(holder, "__dict__", {}):
            return getattr(holder, attr)
    return default


def _suite_style(name: str) -> bool:
    """Module-level hooks apply to benchmarks named as suites name them, not to any function."""
    last = name.split("(", 1)[0].rsplit(".", 1)[-1]
    return last.startswith(("time_", "bench_", "test_"))


def _expand(module: ModuleType, base: str, kind: str, func: Any, owner: Any) -> list[Found]:
    """One Found per parameter combination (asv's ``params`` / ``param_names``)."""
    params = _first([func, owner], "params", [])
    names = _first([func, owner], "param_names", None)
    if not isinstance(params, (list, tuple)):
        raise TargetError(f"{base}: params must be a list, not {type(params).__name__}")
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]  # asv: a flat list is the values of one parameter
    params = [list(p) for p in params]
    names = list(names) if names else [f"param{i + 1}" for i in range(len(params))]
    if len(names) != len(params):
        raise TargetError(f"{base}: {len(names)} param_names for {len(params)} parameter lists")
    scope = module if _suite_style(base) else None
    timeout = _first([func, owner, scope], "timeout", None)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
        raise TargetError(f"{base}: timeout must be a number of seconds, not {timeout!r}")
    hints = {}
    for h in HINT_NAMES:
        value = _first([func, owner], h, None)
        if value is not None:
            hints[h] = value if isinstance(value, (int, float, str)) else repr(value)
    combos = list(itertools.product(*params)) if params else [()]
    if not combos:
        return [Found(name=base, kind="skipped", skip_reason="a parameter has no values")]
    found = []
    seen: dict[str, int] = {}
    for combo in combos:
        name = f"{base}({', '.join(repr(v) for v in combo)})" if params else base
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:  # two values with the same repr: keep both apart
            name = f"{name}#{seen[name]}"
        found.append(
            Found(
                name=name,
                kind=kind,
                func=func,
                owner=owner,
                module=module,
                params=tuple(combo),
                param_names=tuple(names),
                timeout_s=None if timeout is None else float(timeout),
                hints=hints,
            )
        )
    return found


# --------------------------------------------------------------------------- running


def _call(phase: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except BaseException as exc:  # the user's code: any error, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        skipped = phase == "setup" and isinstance(exc, NotImplementedError)
        raise UserCodeFailure(phase, exc, skipped) from exc


def _hook(found: Found, instance: Any, attr: str) -> Callable[..., Any] | None:
    """setup / teardown / setup_cache: on the function, then the class, then the module."""
    if attr in getattr(found.func, "__dict__", {}):
        return getattr(found.func, attr)
    if found.owner is not None and hasattr(found.owner, attr):
        return getattr(instance, attr)
    if _suite_style(found.name) and callable(vars(found.module).get(attr)):
        return vars(found.module)[attr]
    return None


def prepare(found: Found) -> Prepared:
    """Run the benchmark's setup; raises :class:`UserCodeFailure` naming the phase."""
    if found.skip_reason is not None:
        raise TargetError(f"{found.name} is skipped: {found.skip_reason}")
    if found.kind == "pytest-benchmark":
        return _prepare_pytest(found)
    instance = _call("setup", found.owner) if found.owner is not None else None
    cache_hook = _hook(found, instance, "setup_cache")
    lead: tuple[Any, ...] = ()
    if cache_hook is not None:
        lead = (_call("setup_cache", cache_hook),)
    args = lead + found.params
    setup = _hook(found, instance, "setup")
    if setup is not None:
        _call("setup", setup, *args)
    target = getattr(instance, found.func.__name__) if instance is not None else found.func
    fn = functools.partial(target, *args) if args else target
    teardown = _hook(found, instance, "teardown")

    def run_teardown() -> None:
        if teardown is not None:
            _call("teardown", teardown, *args)

    return Prepared(fn=fn, teardown=run_teardown)


# --------------------------------------------------------------------- pytest-benchmark


def _takes_benchmark(func: Any) -> bool:
    try:
        return "benchmark" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _pytest_benchmark(module: ModuleType, name: str, func: Any) -> list[Found]:
    others = [p for p in inspect.signature(func).parameters if p != "benchmark"]
    if others:
        reason = f"needs pytest fixtures other than benchmark ({', '.join(others)})"
        return [Found(name=name, kind="skipped", skip_reason=reason)]
    if getattr(func, "pytestmark", None):
        reason = "pytest marks (parametrize, ...) need pytest itself; not supported"
        return [Found(name=name, kind="skipped", skip_reason=reason)]
    return [Found(name=name, kind="pytest-benchmark", func=func, module=module)]


class _BenchmarkFixture:
    """Stands in for pytest-benchmark's fixture: runs the call once and remembers it."""

    def __init__(self) -> None:
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []
        self.extra_info: dict[str, Any] = {}
        self.group: str | None = None

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.calls.append((fn, args, kwargs))
        return fn(*args, **kwargs)

    def pedantic(
        self,
        target: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        **_ignored: Any,
    ) -> Any:
        if setup is not None:
            raise TypeError("benchmark.pedantic(setup=...) is not supported by duet micro")
        return self(target, *args, **(kwargs or {}))


def _prepare_pytest(found: Found) -> Prepared:
    fixture = _BenchmarkFixture()
    _call("setup", found.func, fixture)
    if len(fixture.calls) != 1:
        error = TypeError(f"the test called benchmark {len(fixture.calls)} times; expected once")
        raise UserCodeFailure("setup", error)
    fn, args, kwargs = fixture.calls[0]
    return Prepared(fn=functools.partial(fn, *args, **kwargs), teardown=lambda: None)
