"""SPEC CPU 2017 run logs (``CPU2017.<nnn>.log`` in the collected result dir).

For every benchmark iteration runcpu logs a "Benchmark Times" block::

    Benchmark Times:
      Run Start:    2022-06-01 14:04:52 (1654092292)
      Rate Start:   2022-06-01 14:04:52 (1654092292.28303)
      Rate End:     2022-06-01 14:12:37 (1654092757.17651)
      Run Stop:     2022-06-01 14:12:37 (1654092757)
      Run Elapsed:  00:07:45 (465)

An iteration spans ``Rate Start`` .. ``Rate End``: the epoch seconds in
parentheses (the date before them is local time and is not used). The
benchmark is the one named by the last ``Running ... 5xx.name_r ...`` line
before the block. Logs without such blocks (build logs) contribute nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._util import (
    NS_PER_S,
    build_frame,
    concat_frames,
    find_result_files,
    read_text,
    renumber_iterations,
    scaled_ns,
)
from .registry import SideContext

_LOG_RE = re.compile(r"CPU\d{4}\.\d+\.log")
_RATE_RE = re.compile(r"\bRate (Start|End):\s*(.*?)\(\s*([^()]*?)\s*\)\s*$")
_RUNNING_RE = re.compile(r"\bRunning\b.*?\b(\d{3}\.[A-Za-z0-9_]+)\b")


def parse_speccpu(ctx: SideContext) -> pd.DataFrame:
    """One row per Rate Start / Rate End pair in the side's SPEC CPU logs."""
    files = find_result_files(ctx, (), what="SPEC CPU log (CPU2017.*.log)", regex=_LOG_RE)
    parsed = [(path, _parse_log(path)) for path in files]
    used = [(path, rows) for path, rows in parsed if rows]
    if not used:
        raise ResultFileError(
            files[0],
            "no 'Rate Start:' / 'Rate End:' lines in "
            + ", ".join(str(p) for p in files)
            + ": no benchmark iteration finished (did runcpu run with --action onlyrun/run?)",
        )
    frames = [
        build_frame([row for row, _ in rows], path, lines=[line for _, line in rows])
        for path, rows in used
    ]
    df = concat_frames(frames, [path for path, _ in used], ctx)
    return renumber_iterations(df) if len(frames) > 1 else df


def _parse_log(path: Path) -> list[tuple[dict[str, Any], int]]:
    """(row, line of its Rate Start) per iteration in the log."""
    rows: list[tuple[dict[str, Any], int]] = []
    workload: str | None = None
    pending: tuple[int, int, str | None] | None = None  # (start ns, line, workload)
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        m = _RATE_RE.search(line)
        if m is None:
            running = _RUNNING_RE.search(line)
            if running:
                workload = running.group(1)
            continue
        ts = scaled_ns(m.group(3), NS_PER_S, path, number, f"Rate {m.group(1)} timestamp")
        if m.group(1) == "Start":
            if pending is not None:
                raise ResultFileError(
                    path, f"'Rate Start:' at line {pending[1]} has no 'Rate End:'", line=number
                )
            pending = (ts, number, workload)
            continue
        if pending is None:
            raise ResultFileError(
                path, "'Rate End:' without a preceding 'Rate Start:'", line=number
            )
        start, start_line, name = pending
        pending = None
        if ts < start:
            raise ResultFileError(
                path, f"'Rate End:' is before the 'Rate Start:' at line {start_line}", line=number
            )
        row: dict[str, Any] = {"start_ns": start, "end_ns": ts}
        if name is not None:
            row["workload"] = name
        rows.append((row, start_line))
    if pending is not None:
        raise ResultFileError(
            path,
            "'Rate Start:' without a 'Rate End:': the log is truncated (was runcpu killed, "
            "e.g. by the run timeout?)",
            line=pending[1],
        )
    return rows
