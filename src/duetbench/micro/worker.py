"""duet micro's worker: times one Python benchmark in the side's own interpreter.

    python worker.py TARGET --list                       # the benchmarks, as JSON on stdout
    python worker.py TARGET --benchmark NAME --calibrate-only   # the calibration, JSON on stdout
    python worker.py TARGET --benchmark NAME [--evaluations N] [--samples N | --budget S]
                     [--warmup N] [--keep-gc] [--path DIR]... [--output DIR]

Standard library only, Python >= 3.8: it runs under the interpreter of each
side (a virtual environment without duetbench), and loads its helpers
(``calibration.py``, ``discovery.py``, ``handshake.py``, ``apart.py``, ``cpuswap.py``,
``sampling.py``) from its own directory
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
import sys
import time
import traceback
from typing import Any, TextIO

HERE = os.path.dirname(os.path.abspath(__file__))
ERROR_FILE = "micro-error.json"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_HANDSHAKE, EXIT_SKIPPED = 0, 1, 2, 3, 4
_HELPERS = ("calibration", "discovery", "handshake", "apart", "cpuswap", "sampling")


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


#: the sampling loop and its files, shared with the pytest plugin's sides (``sampling.py``)
sampling = _load_helpers()["sampling"]


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
    p.add_argument(
        "--samples", type=int, help=f"measured samples (default {sampling.DEFAULT_SAMPLES})"
    )
    p.add_argument("--budget", type=float, help="stop after this many seconds of samples")
    p.add_argument("--warmup", type=int, default=sampling.DEFAULT_WARMUP, help="warm-up samples")
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
            "format": sampling.FORMAT_VERSION,
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
            sampling.write_json(ctx.output, ERROR_FILE, doc)
        except OSError as exc:
            sys.stderr.write(f"duet micro worker: cannot write {ERROR_FILE}: {exc}\n")
    return status


def _usage(ctx: Context, message: str) -> int:
    sys.stderr.write(f"duet micro worker: side {ctx.side}: {message}\n")
    if ctx.output:
        try:
            doc = {"format": sampling.FORMAT_VERSION, "side": ctx.side, "target": ctx.target}
            doc.update(benchmark=ctx.benchmark, phase="usage", status="failed")
            doc.update(summary=f"side {ctx.side}: {message}", last_line=message)
            sampling.write_json(ctx.output, ERROR_FILE, doc)
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
            doc = {
                "format": sampling.FORMAT_VERSION,
                "target": args.target,
                "python": sampling.python_info(),
            }
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
    with sampling.Alarm(timeout):
        prepared = discovery.prepare(bench)
    settings = cal_mod.Settings(
        min_sample_ns=round(args.min_sample_time * 1e9),
        resolution_multiple=args.resolution_multiple,
        overhead_multiple=args.overhead_multiple,
        max_evaluations=args.max_evaluations,
    )
    disable_gc = not args.keep_gc
    samples = None if args.calibrate_only else sampling.Samples(ctx.output)
    fn = prepared.fn

    clock = sampling.CpuClock()

    def sampler(f: Any, k: int) -> int:
        start = time.time_ns()
        before = clock.read()
        try:
            with sampling.Alarm(timeout):
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
    info = {"format": sampling.FORMAT_VERSION, "side": ctx.side, "target": args.target}
    info.update(benchmark=bench.to_json(), python=sampling.python_info())
    info["calibration"] = calibration.to_json()
    if args.calibrate_only:
        out.write(json.dumps(info) + "\n")
        out.flush()
        return EXIT_OK
    assert samples is not None and ctx.output is not None
    total = args.samples if args.samples is not None or args.budget else sampling.DEFAULT_SAMPLES
    info.update(gc_disabled=disable_gc, warmup=args.warmup, samples=total, budget_s=args.budget)
    info.update(paths=[os.path.abspath(p) for p in args.path], pid=os.getpid())
    info["handshake"] = handshake is not None
    info["start_ns"] = time.time_ns()
    swap = h["cpuswap"].CpuSwap.from_env(os.environ, args.swap_every)
    sampling.write_json(ctx.output, sampling.META_FILE, info)
    try:
        fn, evaluations = prepared.fn, calibration.evaluations
        sampling.sample_loop(args, h, samples, fn, evaluations, timeout, handshake, swap, meta=info)
    finally:
        samples.close()
        if handshake is not None:
            try:
                handshake.done()  # release the other side now; the executor would tell it later
            except h["handshake"].HandshakeError:
                pass
    with sampling.Alarm(timeout):
        prepared.teardown()
    return EXIT_OK


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
    with sampling.Alarm(bench.timeout_s):
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
    samples = sampling.Samples(ctx.output, paired=True)
    info: dict[str, Any] = {"format": sampling.FORMAT_VERSION, "side": "A+B", "target": args.target}
    info.update(benchmark=a.bench.to_json(), python=sampling.python_info(), inproc=True)
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
    sampling.write_json(ctx.output, sampling.META_FILE, info)
    time_sample = cal_mod.time_sample
    failure = h["discovery"].UserCodeFailure
    limit = args.samples if args.samples is not None or args.budget else sampling.DEFAULT_SAMPLES
    budget_ns = None if args.budget is None else round(args.budget * 1e9)
    clock = time.perf_counter_ns
    cpu_clock = sampling.CpuClock()
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
                    with sampling.Alarm(timeout):
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
        with sampling.Alarm(args.timeout or side.bench.timeout_s):
            side.prepared.teardown()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
