"""Parser of the built-in harness's ``iterations.csv`` (harness: command)."""

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


def parse_command(ctx: SideContext) -> pd.DataFrame:
    path = ctx.side_dir / "iterations.csv"
    if not path.exists():
        raise ResultFileError(
            path, "missing: the built-in harness wrote no iterations file for this side"
        )
    try:
        rows = _rows(path)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ResultFileError(path, f"cannot read the file: {why}") from None
    arr = np.array(rows, dtype=np.int64).reshape(-1, len(COLUMNS))
    df = pd.DataFrame(arr, columns=list(COLUMNS))
    df["filler"] = df["filler"].astype(bool)
    return df


def _rows(path: Path) -> list[list[int]]:
    rows: list[list[int]] = []
    with io.TextIOWrapper(open_regular(path, RESULT_FILE_MAX), "utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ResultFileError(path, "empty file (no header)", line=1)
        if tuple(header[: len(COLUMNS)]) != COLUMNS:
            raise ResultFileError(
                path, f"unexpected header {header}; expected {','.join(COLUMNS)}", line=1
            )
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) < len(COLUMNS):
                raise ResultFileError(
                    path, f"truncated row ({len(row)} of {len(COLUMNS)} fields)", line=lineno
                )
            try:
                rows.append([int(x) for x in row[: len(COLUMNS)]])
            except ValueError:
                raise ResultFileError(path, f"non-integer value in {row}", line=lineno) from None
    return rows
