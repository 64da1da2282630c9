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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._util import (
    NS_PER_MS,
    build_frame,
    coerce_text_columns,
    concat_frames,
    epoch_ns_guess_unit,
    find_result_files,
    harness_column_name,
    parse_date_output,
    read_csv,
    renumber_iterations,
    scaled_ns,
)
from .registry import SideContext


def parse_dacapo(ctx: SideContext) -> pd.DataFrame:
    """Iterations from the modified DaCapo harness' results CSV."""
    return _parse(ctx, "DaCapo")


def parse_scalabench(ctx: SideContext) -> pd.DataFrame:
    """Iterations from the modified ScalaBench harness' results CSV (same format as DaCapo)."""
    return _parse(ctx, "ScalaBench")


def _parse(ctx: SideContext, suite: str) -> pd.DataFrame:
    files = find_result_files(ctx, ("*.csv",), what=f"{suite} harness CSV (-o results.csv)")
    frames = [_parse_file(path, ctx, suite) for path in files]
    df = concat_frames(frames, files, ctx)
    return renumber_iterations(df) if len(frames) > 1 else df


def _parse_file(path: Path, ctx: SideContext, suite: str) -> pd.DataFrame:
    table = read_csv(path, require_final_newline=True)
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

    rows: list[dict[str, Any]] = []
    for line, fields in table.rows:
        rec = dict(zip(header, fields, strict=True))
        duration = scaled_ns(rec[duration_col], per_unit, path, line, f"column '{duration_col}'")
        if duration < 0:
            raise ResultFileError(path, f"negative iteration time in '{duration_col}'", line=line)
        if has_start:
            start = epoch_ns_guess_unit(rec["start_unix"], path, line, "column 'start_unix'")
        else:
            assert cursor is not None
            start, cursor = cursor, cursor + duration
        row: dict[str, Any] = {
            "start_ns": start,
            "end_ns": start + duration,
            "duration_ns": duration,
            "synthetic_ts": not has_start,
        }
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


def _layout_origin(ctx: SideContext, path: Path) -> int:
    """Where an older build's first iteration is placed (ns since the epoch)."""
    if ctx.proc_start_ns is not None:
        return int(ctx.proc_start_ns)
    date = ctx.artifacts.get("date")
    if date is None:
        raise ResultFileError(
            path,
            "the CSV has no 'start_unix' column (an older harness build), and neither the "
            "side's process start (run.json) nor the host artifact 'date' is known, so the "
            "iterations cannot be placed in time. Add `date: date` under `artifacts:` in "
            "duet.yml, or use a harness build that writes start_unix.",
        )
    try:
        return parse_date_output(date)
    except ValueError as exc:
        raise ResultFileError(
            path,
            f"cannot place the iterations: the host artifact 'date' is unreadable ({exc}). "
            "Record it with `date -Ins` or `date +%s.%N`.",
        ) from None
