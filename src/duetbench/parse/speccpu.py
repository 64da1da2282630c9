"""SPEC CPU 2017 run logs (``CPU2017.<nnn>.log`` in the collected result dir).

(Speed runs and blocks without ``Rate`` lines use ``Run Start`` and the
``Run Reported`` time; a `` Error <benchmark> ...`` status line after a block
makes that iteration a failed row, ``exit_code`` 1.)

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
from ._many import combined
from ._util import (
    NS_PER_S,
    build_frame,
    find_result_files,
    read_text,
    scaled_ns,
)
from .registry import SideContext

_LOG_RE = re.compile(r"CPU\d{4}\.\d+\.log")
_TIME_RE = re.compile(
    r"^\s*(Run Start|Rate Start|Rate End|Run Stop|Run Elapsed|Run Reported):\s*(.*?)\s*$"
)
_EPOCH_RE = re.compile(r"\(\s*([^()]*?)\s*\)\s*$")
_RUNNING_RE = re.compile(r"\bRunning\b.*?\b(\d{3}\.[A-Za-z0-9_]+)\b")
_STATUS_RE = re.compile(r"^\s*(Success|Error|Failure|Failed)\s+(\d{3}\.[A-Za-z0-9_]+)\b")


def parse_speccpu(ctx: SideContext) -> pd.DataFrame:
    """One row per benchmark iteration ("Benchmark Times" block) in the side's SPEC CPU logs."""
    files = find_result_files(ctx, (), what="SPEC CPU log (CPU2017.*.log)", regex=_LOG_RE)
    parsed = [(path, _parse_log(path)) for path in files]
    used = [(path, rows) for path, rows in parsed if rows]
    if not used:
        raise ResultFileError(
            files[0],
            "no 'Benchmark Times:' block ('Rate Start:' / 'Rate End:', 'Run Start:' / "
            "'Run Stop:') in "
            + ", ".join(str(p) for p in files)
            + ": no benchmark iteration finished (did runcpu run with --action onlyrun/run?)",
        )
    frames = [
        build_frame([row for row, _ in rows], path, lines=[line for _, line in rows])
        for path, rows in used
    ]
    return combined(frames, [path for path, _ in used], ctx)


class _Block:
    """The lines of one "Benchmark Times:" block: key -> (value text, line)."""

    def __init__(self, workload: str | None) -> None:
        self.workload = workload
        self.fields: dict[str, tuple[str, int]] = {}

    def epoch_ns(self, path: Path, key: str) -> int:
        text, line = self.fields[key]
        m = _EPOCH_RE.search(text)
        if m is None:
            raise ResultFileError(
                path, f"'{key}:' has no '(<epoch seconds>)' at its end: {text!r}", line=line
            )
        return scaled_ns(m.group(1), NS_PER_S, path, line, f"{key} timestamp")

    def complete(self) -> bool:
        f = self.fields
        return ("Rate Start" in f and "Rate End" in f) or (
            "Run Start" in f and ("Run Stop" in f or "Run Reported" in f)
        )

    def first_line(self) -> int:
        return min(line for _, line in self.fields.values())


def _parse_log(path: Path) -> list[tuple[dict[str, Any], int]]:
    """(row, line of its block's start) per iteration in the log."""
    rows: list[tuple[dict[str, Any], int]] = []
    workload: str | None = None
    block: _Block | None = None
    lines = read_text(path).splitlines()
    for number, line in enumerate(lines, start=1):
        m = _TIME_RE.match(line)
        if m is not None:
            key = m.group(1)
            if block is None or key in block.fields:
                if block is not None:
                    rows.append(_row(path, block, eof=False))
                block = _Block(workload)
            block.fields[key] = (m.group(2), number)
            continue
        if block is not None:
            rest_blank = block.complete() or all(not x.strip() for x in lines[number - 1 :])
            rows.append(_row(path, block, eof=rest_blank))
            block = None
        status = _STATUS_RE.match(line)
        if status is not None and rows and rows[-1][0].get("workload") in (None, status.group(2)):
            ok = status.group(1) == "Success"
            rows[-1][0]["status"] = status.group(1)
            rows[-1][0]["exit_code"] = 0 if ok else 1
            continue
        running = _RUNNING_RE.search(line)
        if running:
            workload = running.group(1)
    if block is not None:
        rows.append(_row(path, block, eof=True))
    for row, _ in rows:
        row.setdefault("exit_code", 0)
    return rows


def _row(path: Path, block: _Block, *, eof: bool) -> tuple[dict[str, Any], int]:
    f = block.fields
    line = block.first_line()
    if not block.complete():
        if "Rate Start" in f and "Rate End" not in f:
            what = "'Rate Start:' without a 'Rate End:'"
            line = f["Rate Start"][1]
        else:
            what = "a 'Benchmark Times:' block without its end ('Rate End:' / 'Run Stop:')"
        if eof:
            what += ": the log is truncated (was runcpu killed, e.g. by the run timeout?)"
        raise ResultFileError(path, what, line=line)
    row: dict[str, Any] = {}
    if "Rate Start" in f and "Rate End" in f:
        start, end = block.epoch_ns(path, "Rate Start"), block.epoch_ns(path, "Rate End")
        if end < start:
            raise ResultFileError(
                path,
                f"'Rate End:' is before the 'Rate Start:' at line {f['Rate Start'][1]}",
                line=f["Rate End"][1],
            )
        row.update(start_ns=start, end_ns=end, ts_source="rate")
    else:
        # no Rate lines: whole-second Run Start, and the reported run time as the duration
        start = block.epoch_ns(path, "Run Start")
        reported = _reported_ns(path, block)
        if reported is not None:
            end = start + reported
        else:
            end = block.epoch_ns(path, "Run Stop")
            if end < start:
                raise ResultFileError(
                    path, "'Run Stop:' is before 'Run Start:'", line=f["Run Stop"][1]
                )
        row.update(start_ns=start, end_ns=end, ts_source="run")
    reported = _reported_ns(path, block)
    if reported is not None:
        row["reported_ns"] = reported
    if block.workload is not None:
        row["workload"] = block.workload
    return row, line


def _reported_ns(path: Path, block: _Block) -> int | None:
    """The run time runcpu reports ("Run Reported: 00:07:45 (464 893480000 464.893480)")."""
    if "Run Reported" not in block.fields:
        return None
    text, line = block.fields["Run Reported"]
    m = _EPOCH_RE.search(text)
    if m is None or not m.group(1).split():
        return None
    return scaled_ns(m.group(1).split()[-1], NS_PER_S, path, line, "Run Reported time")
