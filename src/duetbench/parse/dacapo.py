"""DaCapo and ScalaBench: the CSV of the duet-modified harness (``-o results.csv``).

The thesis ran DaCapo 9.12 and ScalaBench 0.1.0 with harnesses modified at
D3S (``dacapo-9.12-d3s.jar``, ``scala-benchmark-suite-...-d3s.jar``) that
write one CSV row per iteration (warm-up iterations included, in execution
order). What the thesis' parser relies on, and so do we:

* ``iteration_time_ns`` -- the iteration's wall time in nanoseconds;
* ``start_unix`` -- newer builds only: the iteration's start, wall clock,
  milliseconds since the epoch (the unit is told apart by magnitude, so
  seconds / microseconds / nanoseconds work too);
* ``total_ms`` -- present in every build; kept as a column. Builds with no
  ``iteration_time_ns`` use it as the iteration's duration in milliseconds.

Other columns are kept (a ``benchmark`` column becomes ``workload``).

With ``start_unix`` an iteration spans ``[start_unix, start_unix +
iteration_time_ns]``. Without it (older builds) the iterations are laid end to
end from an origin: the side's process start from run.json when known, else
the host's ``date`` artifact, as the thesis did. Such rows are marked
``synthetic_ts`` -- their durations are exact, their placement is not (see
docs/parsers.md for the error).

Without such a CSV, the harness' own progress lines (printed to stderr, so found
in the side's ``stderr.log`` or a log named in ``results:``) are read instead,
in every harness generation's wording::

    ===== DaCapo 9.12 avrora completed warmup 1 in 3372 msec =====
    ===== DaCapo 23.11-chopin avrora PASSED in 2178 msec =====
    ===== DaCapo antlr completed warmup in 1850 msec =====      (2006-10)
    ===== DaCapo 9.12 avrora FAILED warmup =====

Each completed warm-up or PASSED line is an iteration of ``msec`` milliseconds
(``harness_warmup`` tells which kind); a FAILED line is kept as a row with
``exit_code`` 1 and no duration, which the processing step excludes and counts.
These iterations are laid end to end like an older CSV's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._dates import parse_date_output
from ._many import combined
from ._util import (
    NS_PER_MS,
    build_frame,
    coerce_text_columns,
    epoch_ns_guess_unit,
    find_result_files,
    harness_column_name,
    read_csv,
    read_text,
    scaled_ns,
)
from .registry import SideContext


def parse_dacapo(ctx: SideContext) -> pd.DataFrame:
    """Iterations from the modified DaCapo harness' results CSV."""
    return _parse(ctx, "DaCapo")


def parse_scalabench(ctx: SideContext) -> pd.DataFrame:
    """Iterations from the modified ScalaBench harness' results CSV (same format as DaCapo)."""
    return _parse(ctx, "ScalaBench")


#: a harness progress line; the text between the ===== markers is matched below
_LINE_RE = re.compile(r"===== DaCapo (.*?) =====")
_VERSION_BENCH = r"(?:(?P<version>\S+) )?(?P<bench>\S+)"
_DONE_RE = re.compile(
    _VERSION_BENCH + r" (?:(?P<warmup>completed warmup)(?: (?P<n>\d+))?|PASSED) in (?P<ms>\d+) msec"
)
_FAILED_RE = re.compile(_VERSION_BENCH + r" FAILED(?P<warmup> warmup)?")
_LOG_PATTERNS = ("*.log", "*.txt", "*.out", "*.err")


def _parse(ctx: SideContext, suite: str) -> pd.DataFrame:
    try:
        files = find_result_files(ctx, ("*.csv",), what=f"{suite} harness CSV (-o results.csv)")
    except ResultFileError as no_csv:
        # no CSV: read the harness' "===== DaCapo ... PASSED in N msec =====" lines instead
        try:
            files = find_result_files(ctx, _LOG_PATTERNS, what=f"{suite} log")
        except ResultFileError:
            raise no_csv from None
    parsed: list[tuple[Path, pd.DataFrame | None]] = []
    for path in files:
        text = read_text(path)
        first = text.lstrip().split("\n", 1)[0]
        if _LINE_RE.search(text) is not None:
            parsed.append((path, _parse_log(path, text, ctx)))
        elif (
            path.name.lower().endswith(".csv")
            or "iteration_time_ns" in first
            or ("total_ms" in first)
        ):
            parsed.append((path, _parse_file(path, ctx, suite, text)))
        else:
            parsed.append((path, None))  # a log without harness lines (stdout.log, ...)
    used = [(path, frame) for path, frame in parsed if frame is not None]
    if not used:
        raise ResultFileError(
            files[0],
            f"no {suite} iterations in " + ", ".join(str(p) for p in files) + ": no "
            "'===== DaCapo ... PASSED in N msec =====' line (the harness prints them to "
            "stderr) and no harness CSV. Did the benchmark start?",
        )
    frames = [frame for _, frame in used]
    return combined(frames, [path for path, _ in used], ctx)


def _parse_log(path: Path, text: str, ctx: SideContext) -> pd.DataFrame:
    """Iterations from the harness' progress lines (durations in whole ms)."""
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for m in _LINE_RE.finditer(line):
            inner = m.group(1)
            done = _DONE_RE.fullmatch(inner)
            failed = _FAILED_RE.fullmatch(inner) if done is None else None
            if done is None and failed is None:
                continue  # "starting ..." lines, tail latency reports, ...
            match = done or failed
            assert match is not None
            row: dict[str, Any] = {
                "workload": match.group("bench"),
                "duration_ns": int(done.group("ms")) * NS_PER_MS if done else 0,
                "harness_warmup": match.group("warmup") is not None,
                "exit_code": 0 if done else 1,
            }
            if match.group("version"):
                row["dacapo_version"] = match.group("version")
            rows.append(row)
            lines.append(number)
    if not rows:
        raise ResultFileError(
            path,
            "no '===== DaCapo <benchmark> PASSED in N msec =====' or 'completed warmup' line",
        )
    origin = _layout_origin(ctx, path)
    if origin is not None:
        cursor = origin
        for row in rows:
            row["start_ns"], row["end_ns"] = cursor, cursor + row["duration_ns"]
            row["synthetic_ts"] = True
            cursor += row["duration_ns"]
    return build_frame(rows, path, lines=lines)


def _parse_file(path: Path, ctx: SideContext, suite: str, text: str) -> pd.DataFrame:
    table = read_csv(path, text, require_final_newline=True)
    header = table.header
    if "iteration_time_ns" in header:
        duration_col, per_unit = "iteration_time_ns", 1
    elif "total_ms" in header:
        duration_col, per_unit = "total_ms", NS_PER_MS
    else:
        raise ResultFileError(
            path,
            f"no 'iteration_time_ns' (or 'total_ms') column: not a {suite} duet-harness CSV "
            f"(columns: {', '.join(header)})",
            line=1,
        )
    has_start = "start_unix" in header
    cursor = None if has_start else _layout_origin(ctx, path)
    laid_out = has_start or cursor is not None

    rows: list[dict[str, Any]] = []
    for line, fields in table.rows:
        rec = dict(zip(header, fields, strict=True))
        duration = scaled_ns(rec[duration_col], per_unit, path, line, f"column '{duration_col}'")
        if duration < 0:
            raise ResultFileError(path, f"negative iteration time in '{duration_col}'", line=line)
        row: dict[str, Any] = {"duration_ns": duration}
        if laid_out:
            if has_start:
                start = epoch_ns_guess_unit(rec["start_unix"], path, line, "column 'start_unix'")
            else:
                assert cursor is not None
                start, cursor = cursor, cursor + duration
            row.update(start_ns=start, end_ns=start + duration, synthetic_ts=not has_start)
        for key, value in rec.items():
            if key not in (duration_col, "start_unix"):
                row[harness_column_name(key, rec)] = value
        rows.append(row)
    lines = [line for line, _ in table.rows]
    # the harness' own iteration numbers (if any) are kept; ours count rows from 0
    for row in rows:
        if "iteration" in row:
            row["harness_iteration"] = row.pop("iteration")
    return coerce_text_columns(build_frame(rows, path, lines=lines))


def _layout_origin(ctx: SideContext, path: Path) -> int | None:
    """Where iterations without timestamps start (ns since the epoch).

    None when neither the side's process start nor a ``date`` artifact is known:
    the rows are then duration-only, and the processing step lays them out.
    """
    if ctx.proc_start_ns is not None:
        return int(ctx.proc_start_ns)
    date = ctx.artifacts.get("date")
    if date is None:
        return None
    try:
        return parse_date_output(date)
    except ValueError as exc:
        raise ResultFileError(
            path,
            f"cannot place the iterations: the host artifact 'date' is unreadable ({exc}). "
            "Record it with `date -Ins` or `date +%s.%N`.",
        ) from None
