"""What duetbench calls to run microbenchmarks through the worker (docs/micro.md, "API").

The worker (``worker.py`` next to this file) runs in each side's own
interpreter; this module builds its command lines and runs its ``--list`` and
``--calibrate-only`` modes, turning their JSON into typed values:

* :func:`discover` -- the benchmarks of a target, as the side's interpreter sees them;
* :func:`calibrate` -- the evaluation count, chosen in side A's interpreter, to be
  given to both sides (``worker_command(..., evaluations=cal.evaluations)``);
* :func:`worker_command` -- the argv of one side's external harness;
* :func:`evaluation_mismatches` -- sides of one run that did unequal work.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DuetError
from ..execute.hang import IDLE_CPU_SHARE, idle_tree
from ..proctools.guarded import run_captured
from .calibration import Calibration, Settings

if TYPE_CHECKING:
    import pandas as pd

WORKER = Path(__file__).with_name("worker.py")
#: Worker exit statuses (worker.py's docstring).
EXIT_FAILED, EXIT_USAGE, EXIT_HANDSHAKE, EXIT_SKIPPED = 1, 2, 3, 4
#: how long a listing or calibration may take (``duet micro``: its budget, at least
#: WORKER_MIN_S), and how long its worker may use no CPU before it is stopped as hung
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_IDLE_S = 30.0
#: bytes of a listing kept (an asv suite of thousands of parameter combinations fits)
_LISTING_LIMIT = 64 << 20
#: Variables that make a worker join a duet; never passed to --list / --calibrate-only.
_DUET_RUN_VARS = ("DUET_SYNC_DIR", "DUET_OUTPUT_DIR")


class MicroError(DuetError):
    """A worker could not list or calibrate: the message names the side, benchmark and cause
    (``side``: "A" or "B" when known)."""

    side: str | None = None


@dataclass(frozen=True)
class MicroBenchmark:
    """One benchmark (one parameter combination) of a target, as the worker found it."""

    name: str  # pass as worker_command(..., benchmark=name)
    target: str  # the target it was found in, absolute when it is a path
    kind: str  # time | bench | function | method | pytest-benchmark | skipped
    params: tuple[str, ...] = ()  # repr() of each parameter value
    param_names: tuple[str, ...] = ()
    timeout_s: float | None = None
    skip_reason: str | None = None  # why it is not run (asv mem_*, an import error, ...)
    hints: Mapping[str, Any] = field(default_factory=dict)  # asv's number, repeat, ... (unused)
    failed: bool = False  # skipped because the user's code raised (a suite module's import)

    @property
    def runnable(self) -> bool:
        return self.skip_reason is None


def worker_path() -> Path:
    """The worker script, to run with any Python >= 3.8 (no duetbench needed there)."""
    return WORKER


def _absolute(path: str | os.PathLike[str], cwd: Path | None) -> str:
    """``path`` from ``cwd`` (default: the current directory); symlinks kept (virtualenvs)."""
    return os.path.abspath(os.path.join(cwd or os.getcwd(), os.fspath(path)))


def resolve_target(target: str, cwd: Path | None = None) -> str:
    """The target with its file or directory part absolute, so the side may run anywhere."""
    base = Path(cwd or os.getcwd())
    try:
        is_dir = (base / target).is_dir()
    except OSError:  # a name too long for a path: not a directory, the worker says what it is
        is_dir = False
    if is_dir:
        return _absolute(target, cwd)
    head, sep, tail = target.rpartition(":")
    location, attr = (head, sep + tail) if sep and "/" not in tail else (target, "")
    if location.endswith(".py") or "/" in location:
        return _absolute(location, cwd) + attr
    return target


def _python(python: str | os.PathLike[str], cwd: Path | None) -> str:
    text = os.fspath(python)
    return _absolute(text, cwd) if "/" in text else text


def same_interpreter(
    a: str | os.PathLike[str], b: str | os.PathLike[str], cwd: Path | None = None
) -> bool:
    """Whether two sides' interpreters are one: the same path once made absolute (a bare
    name looked up on PATH). Symbolic links are not followed: a virtual environment's
    ``bin/python`` links to its base interpreter but has its own packages."""

    def where(python: str | os.PathLike[str]) -> str:
        text = _python(python, cwd)
        return os.path.normpath(text if "/" in text else (shutil.which(text) or text))

    return where(a) == where(b)


def worker_command(
    python: str | os.PathLike[str],
    target: str,
    *,
    benchmark: str | None = None,
    paths: Sequence[str | os.PathLike[str]] = (),
    evaluations: int | None = None,
    samples: int | None = None,
    budget_s: float | None = None,
    warmup: int | None = None,
    keep_gc: bool = False,
    settings: Settings | None = None,
    timeout_s: float | None = None,
    output: str | os.PathLike[str] | None = None,
    cwd: Path | None = None,
    pair: tuple[str, str | None, Sequence[str | os.PathLike[str]]] | None = None,
    swap_every_s: float | None = None,
) -> list[str]:
    """The argv that runs one side: ``[python, worker.py, target, options...]``;
    with ``pair`` = (B's target, benchmark, paths), the argv that times both sides in
    one process (method inproc). ``swap_every_s``: seconds on each CPU of a pinned
    pair (the worker's ``--swap-every``, docs/micro.md, "Placement").

    Relative ``python`` (with a ``/``), file or directory targets and ``paths``
    are made absolute from ``cwd``. Without ``output`` the worker writes to
    ``$DUET_OUTPUT_DIR`` (set by the executor). For the external-harness
    ``command`` string use ``shlex.join(worker_command(...))``.
    """
    argv = [_python(python, cwd), str(WORKER), resolve_target(target, cwd)]
    if benchmark is not None:
        argv += ["--benchmark", benchmark]
    for p in paths:
        argv += ["--path", _absolute(p, cwd)]
    options: list[tuple[str, Any]] = [
        ("--evaluations", evaluations),
        ("--samples", samples),
        ("--budget", budget_s),
        ("--warmup", warmup),
        ("--timeout", timeout_s),
        ("--swap-every", swap_every_s),
    ]
    if settings is not None:
        options += [
            ("--min-sample-time", settings.min_sample_ns / 1e9),
            ("--resolution-multiple", settings.resolution_multiple),
            ("--overhead-multiple", settings.overhead_multiple),
            ("--max-evaluations", settings.max_evaluations),
        ]
    for flag, value in options:
        if value is not None:
            argv += [flag, repr(value) if isinstance(value, float) else str(value)]
    if keep_gc:
        argv.append("--keep-gc")
    if output is not None:
        argv += ["--output", _absolute(output, cwd)]
    if pair is not None:
        b_target, b_benchmark, b_paths = pair
        argv += ["--pair-target", resolve_target(b_target, cwd)]
        if b_benchmark is not None:
            argv += ["--pair-benchmark", b_benchmark]
        for p in b_paths:
            argv += ["--pair-path", _absolute(p, cwd)]
    return argv


def _run_worker(
    argv: list[str],
    what: str,
    *,
    cwd: Path | None,
    env: Mapping[str, str] | None,
    timeout_s: float,
    idle_s: float | None = DEFAULT_IDLE_S,
) -> dict[str, Any]:
    """Run a listing/calibrating worker; its JSON, or a MicroError saying why not.

    The worker runs in its own process group, guarded (proctools/guarded.py): stopped with
    whatever it started when it takes longer than ``timeout_s``, when it uses no CPU for
    ``idle_s`` (a sleep, a deadlock, SIGSTOP: the hang detection of runs), and when duet
    ends however it ends (Ctrl-C, SIGTERM, SIGHUP, SIGKILL)."""
    environ = {k: v for k, v in (os.environ if env is None else env).items()}
    for var in _DUET_RUN_VARS:
        environ.pop(var, None)
    with tempfile.TemporaryDirectory(prefix="duet-micro-") as tmp:
        try:
            done = run_captured(
                [*argv, "--output", tmp],
                cwd=None if cwd is None else str(cwd),
                env=environ,
                timeout=timeout_s,
                idle=None if idle_s is None else idle_tree(idle_s),
                stdout_limit=_LISTING_LIMIT,
                stderr_limit=4000,
                grace=2.0,
            )
        except FileNotFoundError:
            raise MicroError(f"cannot {what}: {argv[0]} does not exist or is not on PATH") from None
        except PermissionError:
            raise MicroError(f"cannot {what}: {argv[0]} is not executable") from None
        from ..parse.micro import read_worker_error  # the parsers import pandas

        error = read_worker_error(Path(tmp))
    said = _last_lines(done.stderr)
    said = f"; its last output: {said}" if said else ""
    if done.idle:
        raise MicroError(
            f"cannot {what}: the worker used less than {IDLE_CPU_SHARE:.0%} of a CPU for "
            f"{idle_s:g} s (it sleeps, waits for something, or was stopped), so it was "
            f"stopped as hung{said}"
        )
    if done.returncode is None:
        raise MicroError(
            f"cannot {what}: the worker ({argv[0]}) did not finish within {timeout_s:g} s, "
            f"so it was stopped (a function that never returns? --budget sets the limit){said}"
        )
    if done.returncode != 0:
        detail = error or _last_lines(done.stderr) or f"exit status {done.returncode}"
        raise MicroError(f"cannot {what}: {detail}")
    try:
        doc = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise MicroError(
            f"cannot {what}: the worker printed no JSON (is {argv[0]} a Python >= 3.8?): "
            f"{_last_lines(done.stderr) or done.stdout[:200]!r}"
        ) from None
    if not isinstance(doc, dict):
        raise MicroError(f"cannot {what}: the worker printed {type(doc).__name__}, not an object")
    return doc


def _last_lines(text: str, n: int = 3) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-n:])


def discover(
    python: str | os.PathLike[str],
    target: str,
    *,
    paths: Sequence[str | os.PathLike[str]] = (),
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    idle_s: float | None = DEFAULT_IDLE_S,
) -> list[MicroBenchmark]:
    """The benchmarks of ``target`` as ``python`` imports them (with ``paths`` first).

    Skipped ones (asv ``mem_*``/``peakmem_*``/``track_*``, suite modules that
    fail to import) are included with their ``skip_reason``. ``timeout_s``, ``idle_s``:
    the worker is stopped when it takes longer, or uses no CPU that long (None: never).
    """
    argv = worker_command(python, target, paths=paths, cwd=cwd) + ["--list"]
    what = f"list the benchmarks of {target}"
    doc = _run_worker(argv, what, cwd=cwd, env=env, timeout_s=timeout_s, idle_s=idle_s)
    resolved = argv[2]
    try:
        return [
            MicroBenchmark(
                name=str(b["name"]),
                target=resolved,
                kind=str(b["kind"]),
                params=tuple(str(p) for p in b.get("params", ())),
                param_names=tuple(str(p) for p in b.get("param_names", ())),
                timeout_s=None if b.get("timeout_s") is None else float(b["timeout_s"]),
                skip_reason=b.get("skip_reason"),
                hints=dict(b.get("hints") or {}),
                failed=bool(b.get("failed", False)),
            )
            for b in doc["benchmarks"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise MicroError(
            f"cannot list the benchmarks of {target}: malformed listing ({exc})"
        ) from None


def calibrate(
    python: str | os.PathLike[str],
    target: str,
    benchmark: str | None = None,
    *,
    paths: Sequence[str | os.PathLike[str]] = (),
    settings: Settings | None = None,
    keep_gc: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    idle_s: float | None = DEFAULT_IDLE_S,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Calibration:
    """Calibrate ``benchmark`` in ``python`` (side A's); give ``.evaluations`` to both sides.

    Store ``calibration.to_json()`` with the experiment to reuse it on resume
    (``Calibration.from_json``).
    """
    argv = worker_command(
        python,
        target,
        benchmark=benchmark,
        paths=paths,
        settings=settings,
        keep_gc=keep_gc,
        cwd=cwd,
    )
    what = f"calibrate {benchmark or target}"
    doc = _run_worker(
        [*argv, "--calibrate-only"], what, cwd=cwd, env=env, timeout_s=timeout_s, idle_s=idle_s
    )
    try:
        return Calibration.from_json(doc.get("calibration"))
    except ValueError as exc:
        raise MicroError(f"cannot {what}: {exc}") from None


def evaluation_mismatches(table: pd.DataFrame) -> list[str]:
    """One message per run whose sides sampled with different evaluation counts.

    ``table``: iterations with the micro parser's ``evaluations`` column (rows
    without it are ignored). A ratio of unequal work is meaningless, so the
    lead's compare step should refuse such runs.
    """
    if "evaluations" not in table.columns or table.empty:
        return []
    rows = table.dropna(subset=["evaluations"])
    if "filler" in rows.columns:  # calibration trials and warm-ups vary by design
        rows = rows.loc[~rows["filler"].astype(bool)]
    keys = [c for c in ("benchmark", "method", "run", "run_id") if c in rows.columns]
    groups = rows.groupby(keys, sort=True, dropna=False) if keys else [((), rows)]
    messages = []
    for key, group in groups:
        counts = {
            str(pair): sorted({int(v) for v in g["evaluations"]})
            for pair, g in group.groupby("pair", sort=True)
        }
        if len({tuple(v) for v in counts.values()}) > 1 or any(len(v) > 1 for v in counts.values()):
            values = key if isinstance(key, tuple) else (key,)
            where = ", ".join(f"{k} {v}" for k, v in zip(keys, values, strict=True))
            said = "; ".join(f"side {p}: {', '.join(map(str, v))}" for p, v in counts.items())
            messages.append(f"{where}: unequal evaluations per sample ({said})")
    return messages


__all__ = [
    "Calibration",
    "MicroBenchmark",
    "MicroError",
    "Settings",
    "calibrate",
    "discover",
    "evaluation_mismatches",
    "resolve_target",
    "worker_command",
    "worker_path",
]
