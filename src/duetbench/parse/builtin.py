"""Parser of the built-in harness's ``iterations.csv`` (harness: command).

``iteration,start_ns,end_ns,duration_ns,filler,exit_code`` per iteration, and since
the CPU-time release ``cpu_ns,runq_ns`` (each empty where the driver could not measure
it: execute/driver.py). A file of an older release has only the first six columns.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ResultFileError
from ..files import RESULT_FILE_MAX, open_regular
from .registry import SideContext

COLUMNS = ("iteration", "start_ns", "end_ns", "duration_ns", "filler", "exit_code")
#: optional columns after COLUMNS: integers, empty where not measured
MEASURED = ("cpu_ns", "runq_ns")


def parse_command(ctx: SideContext) -> pd.DataFrame:
    path = ctx.side_dir / "iterations.csv"
    if not path.exists():
        raise ResultFileError(
            path, "missing: the built-in harness wrote no iterations file for this side"
        )
    try:
        rows, optional, extra = _rows(path)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ResultFileError(path, f"cannot read the file: {why}") from None
    arr = np.array(rows, dtype=np.int64).reshape(-1, len(COLUMNS))
    df = pd.DataFrame(arr, columns=list(COLUMNS))
    df["filler"] = df["filler"].astype(bool)
    if optional:
        values = np.array(extra, dtype=np.float64).reshape(-1, len(optional))
        for k, name in enumerate(optional):
            if not np.isnan(values[:, k]).all():
                df[name] = pd.array(values[:, k], dtype="Int64")
    return df


def _rows(path: Path) -> tuple[list[list[int]], list[str], list[list[float]]]:
    """The six integer columns of every row, the optional columns present, their values."""
    rows: list[list[int]] = []
    extra: list[list[float]] = []
    with io.TextIOWrapper(open_regular(path, RESULT_FILE_MAX), "utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ResultFileError(path, "empty file (no header)", line=1)
        if tuple(header[: len(COLUMNS)]) != COLUMNS:
            raise ResultFileError(
                path, f"unexpected header {header}; expected {','.join(COLUMNS)}", line=1
            )
        optional = [c for c in header[len(COLUMNS) :] if c in MEASURED]
        where = [header.index(c) for c in optional]
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) < len(COLUMNS):
                raise ResultFileError(
                    path, f"truncated row ({len(row)} of {len(COLUMNS)} fields)", line=lineno
                )
            try:
                rows.append([int(x) for x in row[: len(COLUMNS)]])
                extra.append([_measured(row, i) for i in where])
            except ValueError:
                raise ResultFileError(path, f"non-integer value in {row}", line=lineno) from None
    return rows, optional, extra


def _measured(row: list[str], i: int) -> float:
    """An optional measurement: its integer value, NaN where empty or absent (a row cut
    by a timeout keeps its timing); a negative value is refused."""
    text = row[i].strip() if i < len(row) else ""
    if not text:
        return float("nan")
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return float(value)
