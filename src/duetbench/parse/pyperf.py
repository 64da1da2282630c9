"""pyperf / pyperformance JSON (``-o file.json``, also gzip-compressed ``.json.gz``).

A file holds ``benchmarks[].runs[]``; a run is one worker process with
``warmups`` (``[loops, seconds per loop]`` pairs), ``values`` (seconds per
loop) and ``metadata`` (merged over the file's and the benchmark's common
metadata, as pyperf does). A row's ``duration_ns`` is pyperf's value, the time
per loop (per inner loop), as pyperf shows it; ``raw_ns`` is the whole
measurement, ``value * loops * inner_loops`` -- pyperf's "raw value" -- which the
timestamps use. Both exact in decimal, rounded once to the ns (half to even).
:func:`check_loops` finds benchmarks whose A and B ran different loop counts.

:func:`read_pyperf_file` is the one reader of the format: the parser here and `duet
history import` (``history/importers.py``) both read a file through it, so a file one
accepts the other reads alike, and both read it bounded (``files.py``).

pyperf records no per-value timestamps. Its worker takes the run's ``date``
(local wall clock, microseconds, no time zone) when collecting metadata *after*
the last value was measured (pyperf 2.10, ``_worker.py``: ``compute()``), and
``duration`` spans the whole run. So each run's warm-ups and values are laid
end to end *ending* at ``date``; the error of every reconstructed timestamp is
at most ``duration - sum(raw values)`` (plus the microsecond of ``date``),
given per row as ``ts_max_error_ns``. Warm-ups are kept as ``filler=True``
rows (excluded from analysis; they matter for what ran concurrently).

The naive ``date`` is converted to UTC with the UTC offset (a multiple of 15
minutes) that places the runs inside the side's process lifetime from run.json;
without one, the local time zone of the machine parsing the results is used.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._dates import parse_iso_datetime
from ._many import combined
from ._util import (
    NS_PER_S,
    build_frame,
    find_result_files,
    load_json,
    round_ns,
    to_decimal,
)
from .registry import SideContext

_QUARTER_HOUR_NS = 15 * 60 * NS_PER_S
_PROC_SLACK_NS = 2 * NS_PER_S  # run.json times vs. the worker's wall clock
_DATE_RESOLUTION_NS = 1_000


def parse_pyperf(ctx: SideContext) -> pd.DataFrame:
    """One row per warm-up (filler) and value of every run in the side's pyperf file(s)."""
    files = find_result_files(ctx, ("*.json", "*.json.gz"), what="pyperf JSON (--output / -o)")
    frames = []
    origin = ctx.proc_start_ns  # where undated runs are laid out from; files one after another
    for path in files:
        df, origin = _parse_file(path, ctx, origin)
        frames.append(df)
    return combined(frames, files, ctx)


# --------------------------------------------------------------------------- the file


@dataclass(frozen=True)
class PyperfRun:
    """One run of a benchmark (one pyperf worker process), as the file holds it."""

    values: tuple[Decimal, ...]  # seconds per loop (per inner loop), exact
    warmups: tuple[tuple[int, Decimal], ...]  # (loops, value as the format stores it)
    metadata: Mapping[str, Any]  # the file's, the benchmark's and the run's, merged


@dataclass(frozen=True)
class PyperfBenchmark:
    """One benchmark of a pyperf file."""

    index: int  # its place in the file
    name: str | None  # pyperf's 'name' metadata (None: the file has none)
    unit: str  # 'second' for times; 'byte' (--track-memory) or 'integer' otherwise
    metadata: Mapping[str, Any]  # the file's and the benchmark's, merged
    runs: tuple[PyperfRun, ...]


@dataclass(frozen=True)
class PyperfFile:
    """A pyperf / pyperformance JSON file, checked and read exactly (numbers as Decimal)."""

    path: Path
    #: format 1.0 stores warm-ups per loop; format 6 (pyperf 0.9.6 .. 0.9.x) the raw value
    warmups_per_loop: bool
    metadata: Mapping[str, Any]
    benchmarks: tuple[PyperfBenchmark, ...]


def read_pyperf_file(path: Path) -> PyperfFile:
    """The pyperf JSON file at ``path`` (``.json.gz`` too), read through the bounded
    reader (a regular file only, at most ``files.RESULT_FILE_MAX``); a file that is not
    one is a :class:`ResultFileError` saying why."""
    doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ResultFileError(path, "not a pyperf JSON file: no 'benchmarks' list")
    version = doc.get("version")
    if version not in ("1.0", 6):
        raise ResultFileError(
            path, f"unsupported pyperf file format version {version!r} (supported: '1.0' and 6)"
        )
    suite_meta = _object(doc.get("metadata"), path, "the file")
    benchmarks = []
    for b, bench in enumerate(doc["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list):
            raise ResultFileError(path, f"benchmarks[{b}] has no 'runs' list")
        bench_meta = {**suite_meta, **_object(bench.get("metadata"), path, f"benchmarks[{b}]")}
        first = bench["runs"][0] if bench["runs"] else {}
        first_meta = first.get("metadata") if isinstance(first, dict) else None
        # pyperf keeps 'name' and 'unit' equal across a benchmark's runs
        common = {**bench_meta, **(first_meta if isinstance(first_meta, dict) else {})}
        name = str(common["name"]) if common.get("name") else None
        label = name or f"benchmark_{b}"
        runs = tuple(
            _file_run(path, f"benchmarks[{b}].runs[{r}] ({label})", run, bench_meta)
            for r, run in enumerate(bench["runs"])
        )
        unit = str(common.get("unit", "second"))
        benchmarks.append(PyperfBenchmark(b, name, unit, bench_meta, runs))
    return PyperfFile(path, version == "1.0", suite_meta, tuple(benchmarks))


def _object(value: Any, path: Path, where: str) -> dict[str, Any]:
    """A metadata object (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ResultFileError(path, f"{where}: 'metadata' is not an object")
    return value


def _file_run(path: Path, where: str, run: Any, bench_meta: dict[str, Any]) -> PyperfRun:
    if not isinstance(run, dict):
        raise ResultFileError(path, f"{where} is not an object")
    meta = {**bench_meta, **_object(run.get("metadata"), path, where)}
    values = run.get("values") or []
    if not isinstance(values, list):
        raise ResultFileError(path, f"{where}.values is not a list")
    warmups = run.get("warmups") or []
    if not isinstance(warmups, list):
        raise ResultFileError(path, f"{where}.warmups is not a list")
    pairs = []
    for i, warmup in enumerate(warmups):
        if not isinstance(warmup, list) or len(warmup) != 2:
            raise ResultFileError(path, f"{where}.warmups[{i}] is not a [loops, value] pair")
        loops = _positive_int(warmup[0], path, f"{where}.warmups[{i}] loops")
        pairs.append((loops, to_decimal(warmup[1], path, None, f"{where}.warmups[{i}]")))
    return PyperfRun(
        tuple(to_decimal(v, path, None, f"{where}.values[{i}]") for i, v in enumerate(values)),
        tuple(pairs),
        meta,
    )


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class _Item:
    """One warm-up or value: its measurement's wall time and pyperf's time per loop."""

    raw_ns: int  # value x loops x inner_loops: what the timer measured
    per_loop_ns: int  # pyperf's value (seconds per loop, per inner loop if any), in ns
    warmup: bool
    loops: int


class _Run:
    """One pyperf run: its warm-ups and values, and where it ends."""

    def __init__(
        self,
        workload: str,
        worker: int,
        items: list[_Item],
        inner_loops: int,
        date_ns: int | None,
        utc_offset_ns: int | None,
        duration_ns: int | None,
    ) -> None:
        self.workload = workload
        self.worker = worker
        self.items = items
        self.inner_loops = inner_loops
        self.date_ns = date_ns  # as if the date were UTC; None: no date metadata
        self.utc_offset_ns = utc_offset_ns
        self.duration_ns = duration_ns

    @property
    def measured_ns(self) -> int:
        return sum(item.raw_ns for item in self.items)

    @property
    def calibration(self) -> bool:
        """A run that only calibrated loops: warm-ups and no value."""
        return all(item.warmup for item in self.items)


def _parse_file(
    path: Path, ctx: SideContext, origin: int | None
) -> tuple[pd.DataFrame, int | None]:
    file = read_pyperf_file(path)
    runs: list[_Run] = []
    not_time: dict[str, str] = {}  # benchmark -> unit, for benchmarks that measured no time
    for bench in file.benchmarks:
        workload = bench.name or f"benchmark_{bench.index}"
        if bench.unit != "second":  # --track-memory (byte), or a count (integer)
            not_time[workload] = bench.unit
            continue
        for r, run in enumerate(bench.runs):
            where = f"benchmarks[{bench.index}].runs[{r}] ({workload})"
            runs.append(_read_run(path, where, workload, r, run, file.warmups_per_loop))
    if not runs and not_time:
        listed = ", ".join(f"{name} ({unit})" for name, unit in not_time.items())
        raise ResultFileError(
            path,
            f"no timing benchmark: the values are not in seconds ({listed}) -- "
            "was it run with --track-memory?",
        )
    if not runs:
        raise ResultFileError(path, "the file holds no runs")
    if not any(run.items for run in runs):
        raise ResultFileError(path, "no run holds a warm-up or a value")

    placed = all(run.date_ns is not None for run in runs)
    naive = [run for run in runs if run.utc_offset_ns is None] if placed else []
    offset = _infer_utc_offset(naive, ctx, path) if naive else 0
    # without dates the runs are laid end to end from the process start (by their raw times:
    # the processing step would lay out the per-loop durations, a much too short timeline)
    synthetic = origin if not placed else None
    rows: list[dict[str, Any]] = []
    for run in runs:
        bound = None
        if run.duration_ns is not None:
            bound = max(run.duration_ns - run.measured_ns, 0) + _DATE_RESOLUTION_NS
        start = synthetic
        if placed:
            assert run.date_ns is not None
            end = run.date_ns - (offset if run.utc_offset_ns is None else run.utc_offset_ns)
            start = end - run.measured_ns
        for it in run.items:
            row: dict[str, Any] = {
                "workload": run.workload,
                "duration_ns": it.per_loop_ns,
                "raw_ns": it.raw_ns,
                "filler": it.warmup,
                "worker": run.worker,
                "loops": it.loops,
                "inner_loops": run.inner_loops,
                "calibration": run.calibration,
            }
            if start is not None:
                row.update(start_ns=start, end_ns=start + it.raw_ns)
                if placed:
                    row["ts_max_error_ns"] = bound
                else:
                    row["synthetic_ts"] = True
                start += it.raw_ns
            rows.append(row)
        if synthetic is not None:
            synthetic = start
    df = build_frame(rows, path)
    if "ts_max_error_ns" in df.columns:
        df["ts_max_error_ns"] = df["ts_max_error_ns"].astype("Int64")
    return df, (origin if placed else synthetic)


def _read_run(
    path: Path,
    where: str,
    workload: str,
    worker: int,
    run: PyperfRun,
    warmups_per_loop: bool,
) -> _Run:
    meta = run.metadata
    loops = _positive_int(meta.get("loops", 1), path, f"{where} metadata 'loops'")
    inner = _positive_int(meta.get("inner_loops", 1), path, f"{where} metadata 'inner_loops'")
    date = meta.get("date")
    date_ns: int | None = None
    utc_offset: int | None = None
    if date is not None:  # without it (metadata removed) the rows are duration-only
        if not isinstance(date, str):
            raise ResultFileError(path, f"{where}: metadata 'date' is not a string: {date!r}")
        try:
            date_ns, utc_offset = parse_iso_datetime(date)
        except ValueError as exc:
            raise ResultFileError(path, f"{where}: metadata 'date': {exc}") from None

    items: list[_Item] = []
    for w_loops, value in run.warmups:
        if not warmups_per_loop:  # format 6 stored the raw value
            value = value / (w_loops * inner)
        items.append(_item(value, w_loops, inner, warmup=True))
    items += [_item(value, loops, inner, warmup=False) for value in run.values]
    if any(item.raw_ns < 0 for item in items):
        raise ResultFileError(path, f"{where} has a negative value")

    duration = meta.get("duration")
    duration_ns = None
    if duration is not None:
        duration_ns = round_ns(
            to_decimal(duration, path, None, f"{where} metadata 'duration'") * NS_PER_S
        )
    return _Run(workload, worker, items, inner, date_ns, utc_offset, duration_ns)


def _item(value: Decimal, loops: int, inner: int, *, warmup: bool) -> _Item:
    """``value`` (seconds per loop) as a row: both times exact in decimal, each rounded to
    the nanosecond once (half to even)."""
    return _Item(
        raw_ns=round_ns(value * loops * inner * NS_PER_S),
        per_loop_ns=round_ns(value * NS_PER_S),
        warmup=warmup,
        loops=loops,
    )


def _positive_int(value: Any, path: Path, what: str) -> int:
    d = to_decimal(value, path, None, what)
    if d != d.to_integral_value() or d < 1:
        raise ResultFileError(path, f"{what}: expected a positive integer, got {value!r}")
    return int(d)


def _infer_utc_offset(runs: list[_Run], ctx: SideContext, path: Path) -> int:
    """The UTC offset (ns) of the naive local ``date`` values of ``runs``."""
    dated = [(run.date_ns, run) for run in runs if run.date_ns is not None]
    first = min(date - run.measured_ns for date, run in dated)
    last = max(date for date, _ in dated)
    local = _local_offset_ns(first)
    proc_start, proc_end = ctx.proc_start_ns, ctx.proc_end_ns
    if proc_start is None and proc_end is None:
        return local

    def fits(offset: int) -> bool:
        if proc_start is not None and first - offset < proc_start - _PROC_SLACK_NS:
            return False
        return proc_end is None or last - offset <= proc_end + _PROC_SLACK_NS

    candidates = [k * _QUARTER_HOUR_NS for k in range(-48, 57)]  # UTC-12:00 .. UTC+14:00
    fitting = [c for c in candidates if fits(c)]
    if not fitting:
        raise ResultFileError(
            path,
            f"the pyperf runs (local dates {_iso(first)} .. {_iso(last)}) fall outside the side's "
            f"process lifetime ({_iso(proc_start)} .. {_iso(proc_end)} UTC) for every UTC offset: "
            "is this result file left over from another run?",
        )
    for preferred in (local, 0):
        if preferred in fitting:
            return preferred
    anchor = proc_start if proc_start is not None else proc_end
    assert anchor is not None
    return min(fitting, key=lambda c: abs(first - c - anchor))


def _local_offset_ns(naive_ns: int) -> int:
    """UTC offset of this machine's local time zone around the naive time ``naive_ns``."""
    naive = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=naive_ns // 1000)
    offset = naive.astimezone().utcoffset()
    return 0 if offset is None else int(Decimal(offset.total_seconds()) * NS_PER_S)


def _iso(ns: int | None) -> str:
    if ns is None:
        return "?"
    return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=ns // 1000)).isoformat(" ")


# --------------------------------------------------------------------------- loop counts


def check_loops(table: pd.DataFrame) -> list[str]:
    """One message per benchmark whose A and B values ran different pyperf loop counts.

    pyperf calibrates ``loops`` per interpreter unless given ``--loops N``; values of
    different loop counts time different amounts of work per measurement, so A and B
    are not comparable. Checked per run (``benchmark``, ``method``, ``run``) on the rows
    the analysis sees; rows without ``loops`` (other harnesses) are ignored.
    """
    needed = ("benchmark", "method", "run", "pair", "loops")
    if any(c not in table.columns for c in needed):
        return []
    rows = table.loc[table["loops"].notna(), list(needed)]
    if rows.empty:
        return []
    seen: dict[tuple[Any, Any, Any], dict[str, tuple[int, ...]]] = {}
    for (bench, method, run, pair), group in rows.groupby(
        ["benchmark", "method", "run", "pair"], sort=False
    ):
        counts = tuple(sorted({int(x) for x in group["loops"]}))
        seen.setdefault((bench, method, run), {})[str(pair)] = counts
    bad: dict[str, list[tuple[str, Any, tuple[int, ...], tuple[int, ...]]]] = {}
    runs: dict[str, int] = {}
    for (bench, method, run), sides in seen.items():
        runs[bench] = runs.get(bench, 0) + 1
        a, b = sides.get("A"), sides.get("B")
        if a is not None and b is not None and a != b:
            bad.setdefault(bench, []).append((str(method), run, a, b))
    messages = []
    for bench, diffs in bad.items():
        method, run, a, b = diffs[0]
        messages.append(
            f"benchmark '{bench}': side A ran {_loops_text(a)} per value, side B "
            f"{_loops_text(b)} ({method} run {run}; {len(diffs)} of {runs[bench]} runs differ). "
            "pyperf calibrates the loop count per interpreter, so the two sides timed "
            "different amounts of work per value. Give both commands the same fixed count, "
            f"e.g. `--loops {max(a + b)}` (docs/parsers.md, pyperf: loop counts)"
        )
    return messages


def _loops_text(counts: tuple[int, ...]) -> str:
    words = " or ".join(str(c) for c in counts)
    return f"{words} loop{'s' if counts != (1,) else ''}"
