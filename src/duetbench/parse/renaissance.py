"""Renaissance ``--json`` results.

The file holds ``environment.vm.start_unix_ms`` (the JVM start, wall clock,
milliseconds) and, per benchmark, ``data.<benchmark>.results[]`` with
``uptime_ns`` (JVM uptime when the repetition started) and ``duration_ns``.
An iteration starts at ``start_unix_ms * 1e6 + uptime_ns`` and ends
``duration_ns`` later. Durations are exact; the absolute position carries the
millisecond resolution of ``start_unix_ms`` (see docs/parsers.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._util import (
    NS_PER_MS,
    build_frame,
    concat_frames,
    find_result_files,
    harness_column_name,
    load_json,
    nested,
    plain_value,
    renumber_iterations,
    scaled_ns,
)
from .registry import SideContext

_WHAT = "not a Renaissance --json result file"


def parse_renaissance(ctx: SideContext) -> pd.DataFrame:
    """One row per repetition of every benchmark in the side's Renaissance JSON file(s)."""
    files = find_result_files(ctx, ("*.json",), what="Renaissance JSON (--json)")
    frames = [_parse_file(path) for path in files]
    df = concat_frames(frames, files, ctx)
    return renumber_iterations(df) if len(frames) > 1 else df


def _parse_file(path: Path) -> pd.DataFrame:
    doc = load_json(path)
    vm_start = nested(doc, path, "environment", "vm", "start_unix_ms", what=_WHAT)
    vm_start_ns = scaled_ns(vm_start, NS_PER_MS, path, None, "environment.vm.start_unix_ms")
    data = nested(doc, path, "data", what=_WHAT)
    if not isinstance(data, dict):
        raise ResultFileError(path, "'data' is not an object of benchmarks")

    rows: list[dict[str, Any]] = []
    for workload, bench in data.items():
        results = nested(bench, path, "results", what=f"benchmark '{workload}' has no results")
        if not isinstance(results, list):
            raise ResultFileError(path, f"data.{workload}.results is not a list")
        for i, rep in enumerate(results):
            where = f"data.{workload}.results[{i}]"
            if not isinstance(rep, dict):
                raise ResultFileError(path, f"{where} is not an object")
            for key in ("uptime_ns", "duration_ns"):
                if key not in rep:
                    raise ResultFileError(path, f"{where} has no '{key}'")
            uptime = scaled_ns(rep["uptime_ns"], 1, path, None, f"{where}.uptime_ns")
            duration = scaled_ns(rep["duration_ns"], 1, path, None, f"{where}.duration_ns")
            if uptime < 0:
                raise ResultFileError(path, f"{where}.uptime_ns is negative ({uptime})")
            start = vm_start_ns + uptime
            row: dict[str, Any] = {
                "workload": str(workload),
                "start_ns": start,
                "end_ns": start + duration,
                "duration_ns": duration,
            }
            for key, value in rep.items():
                if key not in ("uptime_ns", "duration_ns") and plain_value(value) is not None:
                    row[harness_column_name(key, row)] = plain_value(value)
            if isinstance(bench.get("termination"), str):
                row["termination"] = bench["termination"]
            rows.append(row)
    return build_frame(rows, path)
