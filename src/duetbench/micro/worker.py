"""duet micro's worker: times one Python benchmark in the side's own interpreter.

    python worker.py TARGET --list                       # the benchmarks, as JSON on stdout
    python worker.py TARGET --benchmark NAME --calibrate-only   # the calibration, JSON on stdout
    python worker.py TARGET --benchmark NAME [--evaluations N] [--samples N | --budget S]
                     [--warmup N] [--keep-gc] [--path DIR]... [--output DIR]

Standard library only, Python >= 3.8: it runs under the interpreter of each
side (a virtual environment without duetbench), and loads its helpers
(``calibration.py``, ``discovery.py``, ``handshake.py``, ``apart.py``, ``cpuswap.py``) from its own directory
by path. The side's ``--path`` directories go first on ``sys.path``; the
worker's own directory is removed from it, so nothing here shadows user code.

A run: import the target, run the benchmark's setup, measure the clock and the
loop's overhead, calibrate the evaluations per sample (or take ``--evaluations``),
then warm-up samples and samples -- under a synchronous duet (``DUET_SYNC_DIR``
set) each after one handshake -- until ``--samples`` or ``--budget``; then the
teardown. Every sample is one row of ``micro-samples.csv`` in the output
directory (``--output``, default ``$DUET_OUTPUT_DIR``), flushed as it is
written: its wall time (``total_ns``, ``perf_counter_ns``), and around it the
process's CPU time (``cpu_ns``) and the time the worker was ready to run but
waited for a CPU (``runq_ns``, its scheduler run delay from
``/proc/thread-self/schedstat``; empty where there is none), so that the analysis
can take out what other work on the host did to the wall time; ``micro-meta.json``
holds the calibration and the interpreter.
Nothing is printed on stdout except the JSON of ``--list`` and
``--calibrate-only`` (the user's prints go to stderr).

Exit statuses: 0 done; 1 the user's code failed (import, setup, the function,
teardown; ``micro-error.json`` says which, with the traceback's last line);
2 usage (bad target, unknown benchmark, bad option); 3 the handshake failed;
4 skipped (asv: setup raised NotImplementedError). See docs/micro.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import signal
import sys
import time
import traceback
from typing import Any, TextIO

HERE = os.path.dirname(os.path.abspath(__file__))
FORMAT_VERSION = 1
SAMPLES_FILE = "micro-samples.csv"
META_FILE = "micro-meta.json"
ERROR_FILE = "micro-error.json"
COLUMNS = ("sample", "phase", "start_ns", "end_ns", "total_ns", "evaluations", "cpu_ns", "runq_ns")
#: in-process pairs (``--pair-target``): every row also names its side
PAIRED_COLUMNS = COLUMNS + ("side",)
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_HANDSHAKE, EXIT_SKIPPED = 0, 1, 2, 3, 4
DEFAULT_SAMPLES = 100
DEFAULT_WARMUP = 1
_HELPERS = ("calibration", "discovery", "handshake", "apart", "cpuswap")


def _load_helpers() -> dict[str, Any]:
    """The sibling modules, by path (never via sys.path: the user's code owns it)."""
    loaded = {}
    for name in _HELPERS:
        full = "_duetbench_micro_" + name
        module = sys.modules.get(full)
        if module is None:
            spec = importlib.util.spec_from_file_location(full, os.path.join(HERE, name + ".py"))
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[full] = module  # dataclasses look their module up while being built
            spec.loader.exec_module(module)
        loaded[name] = module
    return loaded


class Timeout(Exception):
    """A step ran longer than the benchmark's timeout."""


class Context:
    """Who is failing, for the error report."""

    def __init__(self, side: str, target: str, benchmark: str | None) -> None:
        self.side = side
        self.target = target
        self.benchmark = benchmark
        self.output: str | None = None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="worker.py", description="duet micro's benchmark worker")
    p.add_argument("target", help="module:function, module:Class.method, bench.py, or a suite dir")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="print the benchmarks as JSON")
    mode.add_argument("--calibrate-only", action="store_true", help="print the calibration")
    p.add_argument("--benchmark", help="the benchmark's name (as --list shows it)")
    p.add_argument("--path", action="append", default=[], help="put DIR first on sys.path")
    p.add_argument("--evaluations", type=int, help="evaluations per sample (no calibration)")
    p.add_argument("--samples", type=int, help=f"measured samples (default {DEFAULT_SAMPLES})")
    p.add_argument("--budget", type=float, help="stop after this many seconds of samples")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="warm-up samples")
    p.add_argument("--keep-gc", action="store_true", help="leave the GC on during samples")
    p.add_argument("--min-sample-time", type=float, default=0.001, help="seconds (default 1 ms)")
    p.add_argument("--resolution-multiple", type=int, default=1000)
    p.add_argument("--overhead-multiple", type=int, default=1000)
    p.add_argument("--max-evaluations", type=int, default=100_000_000)
    p.add_argument("--timeout", type=float, help="seconds for setup, one sample, teardown")
    p.add_argument("--output", help="directory for the result files (default $DUET_OUTPUT_DIR)")
    p.add_argument("--side", help="this side's name in messages (default $DUET_PAIR)")
    p.add_argument(
        "--swap-every",
        type=float,
        default=0.0,
        help="seconds on each CPU when $DUET_CPU_SWAP names two (default 0: never move)",
    )
    pair = p.add_argument_group(
        "in-process pairs (method inproc)",
        "time side B's benchmark in this process too, samples alternating A B, B A, ...",
    )
    pair.add_argument("--pair-target", help="side B's target")
    pair.add_argument("--pair-benchmark", help="side B's benchmark (as --list shows it)")
    pair.add_argument("--pair-path", action="append", default=[], help="side B's sys.path DIR")
    return p


def _check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    positive = ("evaluations", "samples", "max_evaluations")
    for name in positive:
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.swap_every < 0:
        p.error("--swap-every must be >= 0 seconds")
    for name in ("budget", "timeout"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            p.error(f"--{name} must be > 0 seconds")
    if args.warmup < 0 or args.min_sample_time < 0:
        p.error("--warmup and --min-sample-time must be >= 0")
    if args.resolution_multiple < 0 or args.overhead_multiple < 0:
        p.error("--resolution-multiple and --overhead-multiple must be >= 0")
    if args.pair_target is not None and (args.list or args.calibrate_only):
        p.error("--pair-target times two benchmarks; --list and --calibrate-only take one")


def _protocol_stdout() -> TextIO:
    """The real stdout for our JSON; file descriptor 1 (the user's prints) now goes to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(saved, "w")


def _set_path(paths: list[str], extra: list[str]) -> None:
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
    front = []
    for p in [os.path.abspath(p) for p in paths] + extra:
        if p not in front:
            front.append(p)
    sys.path[:0] = front


def _python_info() -> dict[str, Any]:
    clock = time.get_clock_info("perf_counter")
    return {
        "executable": sys.executable,
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "perf_counter": {"implementation": clock.implementation, "resolution": clock.resolution},
    }


def _write_json(directory: str, name: str, doc: dict[str, Any]) -> None:
    path = os.path.join(directory, name)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


class _Alarm:
    """``with _Alarm(seconds):`` raises :class:`Timeout` in the block after ``seconds``."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds if seconds and hasattr(signal, "setitimer") else None

    def __enter__(self) -> None:
        if self.seconds is not None:
            signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _fire(self, signum: int, frame: Any) -> None:
        raise Timeout(f"took longer than the benchmark's timeout of {self.seconds:g} s")


class CpuClock:
    """The process's CPU time and this thread's scheduler run delay, read around a sample
    (outside its timed part). The run delay comes from ``/proc/thread-self/schedstat``,
    kept open and re-read with ``pread`` (about 1 us); None where it does not exist."""

    def __init__(self) -> None:
        self.fd: int | None = None
        try:
            self.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except (OSError, AttributeError):
            self.fd = None

    def read(self) -> tuple[int, int | None]:
        """(CPU ns of the process, run delay ns of this thread or None)."""
        delay = None
        if self.fd is not None:
            try:
                delay = int(os.pread(self.fd, 128, 0).split()[1])
            except (OSError, ValueError, IndexError):
                delay = None
        return time.process_time_ns(), delay

    @staticmethod
    def spent(before: tuple[int, int | None], after: tuple[int, int | None]) -> tuple[int, Any]:
        """(CPU ns, run delay ns or None) between two reads."""
        delay = None
        if before[1] is not None and after[1] is not None:
            delay = max(0, after[1] - before[1])
        return max(0, after[0] - before[0]), delay

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Samples:
    """micro-samples.csv, one row per sample, flushed per row (``paired``: with the side)."""

    def __init__(self, directory: str, paired: bool = False) -> None:
        self.file = open(os.path.join(directory, SAMPLES_FILE), "w", encoding="utf-8", buffering=1)
        self.file.write(",".join(PAIRED_COLUMNS if paired else COLUMNS) + "\n")
        self.index: dict[str, int] = {}

    def row(
        self,
        phase: str,
        start_ns: int,
        total_ns: int,
        evaluations: int,
        side: str = "",
        spent: tuple[int, Any] | None = None,
    ) -> None:
        end_ns = start_ns + total_ns
        index = self.index.get(side, 0)
        self.index[side] = index + 1
        cpu, delay = spent if spent is not None else ("", None)
        text = f"{index},{phase},{start_ns},{end_ns},{total_ns},{evaluations},{cpu},"
        text += "" if delay is None else str(delay)
        self.file.write(text + (f",{side}\n" if side else "\n"))

    def close(self) -> None:
        self.file.close()


# --------------------------------------------------------------------------- errors


def _own_frame(filename: str) -> bool:
    """Frames of the worker and of importlib: noise in the user's traceback."""
    if filename.startswith("<frozen importlib"):
        return True
    return os.path.dirname(os.path.abspath(filename)) == HERE


def report_failure(ctx: Context, phase: str, error: BaseException, status: int) -> int:
    """Say what failed on stderr and in micro-error.json; return the exit status."""
    only = traceback.format_exception_only(type(error), error)
    last_line = only[-1].strip()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _own_frame(f.filename)]
    where = ""
    if frames:
        where = f'File "{frames[-1].filename}", line {frames[-1].lineno}, in {frames[-1].name}'
    elif isinstance(error, SyntaxError) and error.filename:
        where = f'File "{error.filename}", line {error.lineno}'
    text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    text += "".join(only)
    bench = ctx.benchmark or ctx.target
    verb = "skipped" if status == EXIT_SKIPPED else "failed"
    summary = f"side {ctx.side}, benchmark {bench!r}: {phase} {verb}: {last_line}"
    sys.stderr.write(f"duet micro worker: {summary}\n" + (f"  at {where}\n" if where else ""))
    sys.stderr.write(text if frames else "")
    sys.stderr.flush()
    if ctx.output:
        doc = {
            "format": FORMAT_VERSION,
            "side": ctx.side,
            "target": ctx.target,
            "benchmark": bench,
            "phase": phase,
            "status": verb,
            "exception": type(error).__name__,
            "last_line": last_line,
            "location": where,
            "summary": summary,
            "traceback": text,
        }
        try:
            _write_json(ctx.output, ERROR_FILE, doc)
        except OSError as exc:
            sys.stderr.write(f"duet micro worker: cannot write {ERROR_FILE}: {exc}\n")
    return status


def _usage(ctx: Context, message: str) -> int:
    sys.stderr.write(f"duet micro worker: side {ctx.side}: {message}\n")
    if ctx.output:
        try:
            doc = {"format": FORMAT_VERSION, "side": ctx.side, "target": ctx.target}
            doc.update(benchmark=ctx.benchmark, phase="usage", status="failed")
            doc.update(summary=f"side {ctx.side}: {message}", last_line=message)
            _write_json(ctx.output, ERROR_FILE, doc)
        except OSError:
            pass
    return EXIT_USAGE


# --------------------------------------------------------------------------- modes


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    out = _protocol_stdout()
    h = _load_helpers()
    side = args.side or os.environ.get("DUET_PAIR") or "?"
    ctx = Context(side, args.target, args.benchmark)
    ctx.output = args.output or os.environ.get("DUET_OUTPUT_DIR") or None
    if ctx.output:
        os.makedirs(ctx.output, exist_ok=True)
    discovery = h["discovery"]
    try:
        if args.pair_target is not None:
            return _measure_pair(args, h, ctx)
        target = discovery.parse_target(args.target)
        _set_path(args.path, discovery.search_path(target))
        if args.list:
            found = discovery.discover(target)
            doc = {"format": FORMAT_VERSION, "target": args.target, "python": _python_info()}
            doc["benchmarks"] = [f.to_json() for f in found]
            out.write(json.dumps(doc) + "\n")
            out.flush()
            return EXIT_OK
        return _measure(args, h, ctx, target, out)
    except discovery.TargetError as exc:
        return _usage(ctx, str(exc))
    except discovery.UserCodeFailure as failure:
        status = EXIT_SKIPPED if failure.skipped else EXIT_FAILED
        return report_failure(ctx, failure.phase, failure.error, status)
    except h["handshake"].HandshakeError as exc:
        return report_failure(ctx, "handshake", exc, EXIT_HANDSHAKE)
    except h["calibration"].CalibrationError as exc:
        return report_failure(ctx, "calibration", exc, EXIT_FAILED)


def _select(h: dict[str, Any], found: list[Any], name: str | None, target: str) -> Any:
    runnable = [f for f in found if f.skip_reason is None]
    if name is None:
        if len(runnable) == 1:
            return runnable[0]
        names = ", ".join(f.name for f in runnable[:20]) or "none"
        raise h["discovery"].TargetError(
            f"{target} has {len(runnable)} benchmarks ({names}); name one with --benchmark"
        )
    for f in found:
        if f.name == name:
            if f.skip_reason is not None:
                raise h["discovery"].TargetError(f"{name} is skipped: {f.skip_reason}")
            return f
    names = ", ".join(f.name for f in runnable[:20]) or "none"
    raise h["discovery"].TargetError(f"{target} has no benchmark {name!r}; it has: {names}")


def _measure(
    args: argparse.Namespace, h: dict[str, Any], ctx: Context, target: Any, out: TextIO
) -> int:
    cal_mod, discovery = h["calibration"], h["discovery"]
    handshake = h["handshake"].Handshake.from_env(os.environ)
    if not args.calibrate_only and not ctx.output:
        raise discovery.TargetError("no output directory: set DUET_OUTPUT_DIR or pass --output")
    bench = _select(h, discovery.discover(target, only=args.benchmark), args.benchmark, args.target)
    ctx.benchmark = bench.name
    timeout = args.timeout or bench.timeout_s
    with _Alarm(timeout):
        prepared = discovery.prepare(bench)
    settings = cal_mod.Settings(
        min_sample_ns=round(args.min_sample_time * 1e9),
        resolution_multiple=args.resolution_multiple,
        overhead_multiple=args.overhead_multiple,
        max_evaluations=args.max_evaluations,
    )
    disable_gc = not args.keep_gc
    samples = None if args.calibrate_only else _Samples(ctx.output)
    fn = prepared.fn

    clock = CpuClock()

    def sampler(f: Any, k: int) -> int:
        start = time.time_ns()
        before = clock.read()
        try:
            with _Alarm(timeout):
                elapsed = cal_mod.time_sample(f, k, time.perf_counter_ns, disable_gc)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt) or f is not fn:
                raise
            raise discovery.UserCodeFailure("calibration", exc) from exc
        if f is fn and samples is not None:
            samples.row("calibration", start, elapsed, k, spent=clock.spent(before, clock.read()))
        return elapsed

    calibration = cal_mod.calibrate_callable(
        fn,
        settings=settings,
        evaluations=args.evaluations,
        disable_gc=disable_gc,
        sampler=sampler,
    )
    info = {"format": FORMAT_VERSION, "side": ctx.side, "target": args.target}
    info.update(benchmark=bench.to_json(), python=_python_info())
    info["calibration"] = calibration.to_json()
    if args.calibrate_only:
        out.write(json.dumps(info) + "\n")
        out.flush()
        return EXIT_OK
    assert samples is not None and ctx.output is not None
    total = args.samples if args.samples is not None or args.budget else DEFAULT_SAMPLES
    info.update(gc_disabled=disable_gc, warmup=args.warmup, samples=total, budget_s=args.budget)
    info.update(paths=[os.path.abspath(p) for p in args.path], pid=os.getpid())
    info["handshake"] = handshake is not None
    info["start_ns"] = time.time_ns()
    swap = h["cpuswap"].CpuSwap.from_env(os.environ, args.swap_every)
    _write_json(ctx.output, META_FILE, info)
    try:
        fn, evaluations = prepared.fn, calibration.evaluations
        _sample_loop(args, h, samples, fn, evaluations, timeout, handshake, swap)
    finally:
        samples.close()
        if swap is not None:
            info["cpu_swap"] = swap.to_json()
            _write_json(ctx.output, META_FILE, info)
        if handshake is not None:
            try:
                handshake.done()  # release the other side now; the executor would tell it later
            except h["handshake"].HandshakeError:
                pass
    with _Alarm(timeout):
        prepared.teardown()
    return EXIT_OK


def _sample_loop(
    args: argparse.Namespace,
    h: dict[str, Any],
    samples: _Samples,
    fn: Any,
    evaluations: int,
    timeout: float | None,
    handshake: Any,
    swap: Any = None,
    prepare: Any = None,
) -> None:
    """``prepare``: called before each sample (before its handshake, untimed), returns the
    callable that sample times (pytest-benchmark's ``pedantic(setup=...)``)."""
    cpu_clock = CpuClock()
    try:
        _take_samples(
            args, h, samples, fn, evaluations, timeout, handshake, swap, prepare, cpu_clock
        )
    finally:
        cpu_clock.close()


def _take_samples(
    args: argparse.Namespace,
    h: dict[str, Any],
    samples: _Samples,
    fn: Any,
    evaluations: int,
    timeout: float | None,
    handshake: Any,
    swap: Any,
    prepare: Any,
    cpu_clock: CpuClock,
) -> None:
    time_sample = h["calibration"].time_sample
    failure = h["discovery"].UserCodeFailure
    limit = args.samples if args.samples is not None or args.budget else DEFAULT_SAMPLES
    budget_ns = None if args.budget is None else round(args.budget * 1e9)
    disable_gc = not args.keep_gc
    clock = time.perf_counter_ns
    begin = None
    measured = warmed = 0
    while True:
        warmup = warmed < args.warmup
        if not warmup:
            if limit is not None and measured >= limit:
                break
            if budget_ns is not None and begin is not None and clock() - begin >= budget_ns:
                break
        timed = fn
        if prepare is not None:
            try:
                with _Alarm(timeout):
                    timed = prepare()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise failure("setup", exc) from exc
        if handshake is not None:
            handshake.wait()
        if swap is not None:  # after the go: both sides of a sduet cross a period together
            swap.place()
        if not warmup and begin is None:
            begin = clock()
        start = time.time_ns()
        before = cpu_clock.read()
        try:
            with _Alarm(timeout):
                elapsed = time_sample(timed, evaluations, clock, disable_gc)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise failure("sample", exc) from exc
        spent = cpu_clock.spent(before, cpu_clock.read())
        samples.row("warmup" if warmup else "sample", start, elapsed, evaluations, spent=spent)
        if warmup:
            warmed += 1
        else:
            measured += 1


def sample_callable(
    fn: Any,
    evaluations: int,
    output: str,
    meta: dict[str, Any],
    *,
    samples: int | None = None,
    budget_s: float | None = None,
    warmup: int = DEFAULT_WARMUP,
    keep_gc: bool = False,
    timeout: float | None = None,
    swap_every: float = 0.0,
    prepare: Any = None,
    environ: Any = None,
    swap: Any = None,
    say_done: bool = True,
) -> None:
    """One run's samples of ``fn`` (``evaluations`` calls each) into ``output``, exactly as
    the worker takes them -- the handshake of a synchronous duet and the CPU swap from
    ``environ`` (default ``os.environ``), the CPU time and run delay of every sample --
    for code that times a callable in its own process (duetbench's pytest plugin).

    ``meta``: the benchmark's part of micro-meta.json (``side``, ``target``, ``benchmark``,
    ``calibration``); the interpreter and the sampling settings are added here. Raises
    the worker's ``UserCodeFailure`` (``_load_helpers()["discovery"]``) when ``fn`` or
    ``prepare`` raises, after telling the coordinator ``done``.

    A process that samples several callables one after the other (a pytest session of
    many benchmark tests) passes ``say_done=False`` to all but its last, and one ``swap``
    (:func:`cpu_swap`) to all of them: a side that says ``done`` takes no more samples in
    lockstep.
    """
    h = _load_helpers()
    env = os.environ if environ is None else environ
    handshake = h["handshake"].Handshake.from_env(env)
    if swap is None:
        swap = h["cpuswap"].CpuSwap.from_env(env, swap_every)
    total = samples if samples is not None or budget_s else DEFAULT_SAMPLES
    info = {"format": FORMAT_VERSION, **meta, "python": _python_info()}
    info.update(gc_disabled=not keep_gc, warmup=warmup, samples=total, budget_s=budget_s)
    info.update(pid=os.getpid(), handshake=handshake is not None, start_ns=time.time_ns())
    os.makedirs(output, exist_ok=True)
    _write_json(output, META_FILE, info)
    options = argparse.Namespace(samples=samples, budget=budget_s, warmup=warmup, keep_gc=keep_gc)
    rows = _Samples(output)
    try:
        _sample_loop(options, h, rows, fn, evaluations, timeout, handshake, swap, prepare)
    finally:
        rows.close()
        if swap is not None:
            info["cpu_swap"] = swap.to_json()
            _write_json(output, META_FILE, info)
        if handshake is not None and say_done:
            try:
                handshake.done()
            except h["handshake"].HandshakeError:
                pass


def cpu_swap(environ: Any, period_s: float) -> Any:
    """The CPU swap the executor asked for (``DUET_CPU_SWAP``), or None."""
    return _load_helpers()["cpuswap"].CpuSwap.from_env(environ, period_s)


def say_done(environ: Any) -> None:
    """Tell the coordinator of a synchronous duet that this side takes no more samples
    (nothing outside one)."""
    h = _load_helpers()
    handshake = h["handshake"].Handshake.from_env(environ)
    if handshake is not None:
        try:
            handshake.done()
        except h["handshake"].HandshakeError:
            pass


# --------------------------------------------------------------------------- in-process pairs


def _load_side(
    h: dict[str, Any], ctx: Context, side: str, text: str, name: str | None, paths: list[str]
) -> Any:
    discovery = h["discovery"]
    ctx.side, ctx.target, ctx.benchmark = side, text, name
    target = discovery.parse_target(text)
    own = discovery.search_path(target)
    _set_path(paths, own)
    roots = [os.path.abspath(p) for p in paths] + [os.path.abspath(p) for p in own]
    bench = _select(h, discovery.discover(target, only=name), name, text)
    ctx.benchmark = bench.name
    with _Alarm(bench.timeout_s):
        prepared = discovery.prepare(bench)
    return h["apart"].Loaded(side, bench, prepared, roots, list(sys.path))


def _measure_pair(args: argparse.Namespace, h: dict[str, Any], ctx: Context) -> int:
    """Method inproc: A's and B's benchmark in this one interpreter, samples alternating
    (A B, B A, A B, ...), so whatever makes this process fast or slow hits both alike
    (docs/micro.md, "In one process: inproc").

    With different ``--path`` lists the two sides are imported apart (``apart.py``):
    B's ``import mylib``, also inside the function, finds B's ``mylib``. With the same
    paths both sides share everything.
    """
    if not ctx.output:
        raise h["discovery"].TargetError(
            "no output directory: set DUET_OUTPUT_DIR or pass --output"
        )
    base = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
    sys.path[:] = base
    shared = set(sys.modules)
    a = _load_side(h, ctx, "A", args.target, args.benchmark, args.path)
    apart = [os.path.abspath(p) for p in args.path] != [os.path.abspath(p) for p in args.pair_path]
    if apart:
        a.collect(shared)
    sys.path[:] = base
    b = _load_side(h, ctx, "B", args.pair_target, args.pair_benchmark, args.pair_path)
    sides = (a, b)
    cal_mod = h["calibration"]
    disable_gc = not args.keep_gc

    current = [b]  # the side whose modules are in sys.modules

    def enter(side: Any) -> None:
        ctx.side, ctx.benchmark = side.name, side.bench.name
        ctx.target = args.target if side is a else args.pair_target
        if apart and current[0] is not side:
            side.enter(current[0], shared)
            current[0] = side

    evaluations = args.evaluations
    if evaluations is None:  # A calibrates, as in a duet (B is "told" the same count)
        enter(a)
        settings = cal_mod.Settings(
            min_sample_ns=round(args.min_sample_time * 1e9),
            resolution_multiple=args.resolution_multiple,
            overhead_multiple=args.overhead_multiple,
            max_evaluations=args.max_evaluations,
        )
        evaluations = cal_mod.calibrate_callable(
            a.prepared.fn, settings=settings, disable_gc=disable_gc
        ).evaluations
    samples = _Samples(ctx.output, paired=True)
    info: dict[str, Any] = {"format": FORMAT_VERSION, "side": "A+B", "target": args.target}
    info.update(benchmark=a.bench.to_json(), python=_python_info(), inproc=True)
    info["pair"] = {
        "target": args.pair_target,
        "benchmark": b.bench.to_json(),
        "paths": [os.path.abspath(p) for p in args.pair_path],
        "imported_apart": apart,
    }
    info["calibration"] = {"evaluations": evaluations}
    info.update(gc_disabled=disable_gc, warmup=args.warmup, budget_s=args.budget)
    info.update(paths=[os.path.abspath(p) for p in args.path], pid=os.getpid())
    info.update(samples=args.samples, handshake=False, start_ns=time.time_ns())
    _write_json(ctx.output, META_FILE, info)
    time_sample = cal_mod.time_sample
    failure = h["discovery"].UserCodeFailure
    limit = args.samples if args.samples is not None or args.budget else DEFAULT_SAMPLES
    budget_ns = None if args.budget is None else round(args.budget * 1e9)
    clock = time.perf_counter_ns
    cpu_clock = CpuClock()
    begin = None
    pairs = 0
    try:
        while True:
            warmup = pairs < args.warmup
            if not warmup:
                if limit is not None and pairs - args.warmup >= limit:
                    break
                if budget_ns is not None and begin is not None and clock() - begin >= budget_ns:
                    break
                if begin is None:
                    begin = clock()
            for side in sides if pairs % 2 == 0 else sides[::-1]:
                enter(side)
                timeout = args.timeout or side.bench.timeout_s
                start = time.time_ns()
                before = cpu_clock.read()
                try:
                    with _Alarm(timeout):
                        elapsed = time_sample(side.prepared.fn, evaluations, clock, disable_gc)
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    raise failure("sample", exc) from exc
                spent = cpu_clock.spent(before, cpu_clock.read())
                phase = "warmup" if warmup else "sample"
                samples.row(phase, start, elapsed, evaluations, side.name, spent)
            pairs += 1
    finally:
        samples.close()
    for side in sides:
        enter(side)
        with _Alarm(args.timeout or side.bench.timeout_s):
            side.prepared.teardown()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
