"""Renaissance results: ``--json`` (preferred) or ``--csv``.

Two generations of the harness write different metrics per repetition:

* 0.11 and later (JSON ``format_version`` 5): ``duration_ns`` and ``uptime_ns``
  (JVM uptime when the repetition started), plus ``environment.vm.start_unix_ms``
  (the JVM start, wall clock, ms). An iteration starts at ``start_unix_ms * 1e6
  + uptime_ns`` and ends ``duration_ns`` later. The CSV has the same metrics and
  the JVM start in a ``vm_start_unix_ms`` column.
* 0.10 and earlier (JSON ``format_version`` 4): ``nanos`` (the duration),
  ``unixts.before`` and ``unixts.after`` (wall clock in ms, taken before the
  repetition's set-up and after its tear-down). An iteration starts at
  ``unixts.before`` and lasts ``nanos``; ``ts_max_error_ns`` bounds how far the
  real start can be from that.

Durations are exact (the harness' ``System.nanoTime``); see docs/parsers.md for
the placement error. A repetition that fails validation is not recorded by the
harness at all; its benchmark then has ``termination: failure``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._many import combined
from ._util import (
    NS_PER_MS,
    build_frame,
    coerce_text_columns,
    find_result_files,
    harness_column_name,
    nested,
    parse_json,
    plain_value,
    read_csv,
    read_text,
    scaled_ns,
)
from .registry import SideContext

_WHAT = "not a Renaissance --json result file"
_TIMING_KEYS = frozenset({"uptime_ns", "duration_ns", "nanos", "unixts.before", "unixts.after"})


def parse_renaissance(ctx: SideContext) -> pd.DataFrame:
    """One row per repetition of every benchmark in the side's Renaissance result file(s)."""
    try:
        files = find_result_files(ctx, ("*.json",), what="Renaissance JSON (--json)")
    except ResultFileError:
        # no JSON: the harness may have been run with --csv only
        files = find_result_files(
            ctx, ("*.csv",), what="Renaissance result (--json results.json or --csv)"
        )
    frames = [_parse_file(path) for path in files]
    return combined(frames, files, ctx)


def _parse_file(path: Path) -> pd.DataFrame:
    text = read_text(path)
    if not text.strip():
        raise ResultFileError(path, "the file is empty")
    if text.lstrip()[:1] in ("{", "["):
        return _parse_json(path, text)
    return _parse_csv(path, text)


def _parse_json(path: Path, text: str) -> pd.DataFrame:
    doc = parse_json(path, text)
    if not isinstance(doc, dict):
        raise ResultFileError(path, f"{_WHAT}: expected a JSON object")
    if "data" not in doc and isinstance(doc.get("results"), dict):
        raise ResultFileError(
            path,
            f"Renaissance JSON format_version {doc.get('format_version')!r} (before 0.10) is "
            "not supported: rerun with Renaissance 0.10 or later",
        )
    data = nested(doc, path, "data", what=_WHAT)
    if not isinstance(data, dict):
        raise ResultFileError(path, "'data' is not an object of benchmarks")
    vm = (
        doc.get("environment", {}).get("vm", {}) if isinstance(doc.get("environment"), dict) else {}
    )
    vm = vm if isinstance(vm, dict) else {}

    vm_start_ns: int | None = None
    if "start_unix_ms" in vm:
        vm_start_ns = scaled_ns(
            vm["start_unix_ms"], NS_PER_MS, path, None, "environment.vm.start_unix_ms"
        )

    rows: list[dict[str, Any]] = []
    for workload, bench in data.items():
        if not isinstance(bench, dict):
            raise ResultFileError(path, f"data.{workload} is not an object")
        results = nested(bench, path, "results", what=f"benchmark '{workload}' has no results")
        if not isinstance(results, list):
            raise ResultFileError(path, f"data.{workload}.results is not a list")
        for i, rep in enumerate(results):
            where = f"data.{workload}.results[{i}]"
            if not isinstance(rep, dict):
                raise ResultFileError(path, f"{where} is not an object")
            row = _timing(path, None, where, rep, vm_start_ns, json_file=True)
            row["workload"] = str(workload)
            for key, value in rep.items():
                if key not in _TIMING_KEYS and plain_value(value) is not None:
                    row[harness_column_name(key, row)] = plain_value(value)
            if isinstance(bench.get("termination"), str):
                row["termination"] = bench["termination"]
            if isinstance(vm.get("termination"), str):
                row["vm_termination"] = vm["termination"]
            rows.append(row)
    if not rows:
        raise ResultFileError(
            path,
            "no repetition in 'data': no benchmark finished a valid repetition "
            "(did the first one fail?)",
        )
    return build_frame(rows, path)


def _parse_csv(path: Path, text: str) -> pd.DataFrame:
    table = read_csv(path, text)
    header = table.header
    if "benchmark" not in header or not ("duration_ns" in header or "nanos" in header):
        raise ResultFileError(
            path,
            "not a Renaissance --csv result file: expected the columns 'benchmark' and "
            f"'duration_ns' (or 'nanos'), got {', '.join(header)}",
            line=1,
        )
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    for line, fields in table.rows:
        # "NA" marks a metric a repetition did not report
        rec = {k: v for k, v in zip(header, fields, strict=True) if v != "NA"}
        vm_start_ns = None
        if "vm_start_unix_ms" in rec:
            vm_start_ns = scaled_ns(
                rec["vm_start_unix_ms"], NS_PER_MS, path, line, "column 'vm_start_unix_ms'"
            )
        row = _timing(path, line, f"benchmark {rec['benchmark']}", rec, vm_start_ns, False)
        row["workload"] = rec["benchmark"]
        for key, value in rec.items():
            if key not in _TIMING_KEYS and key not in ("benchmark", "vm_start_unix_ms"):
                row[harness_column_name(key, row)] = value
        rows.append(row)
        lines.append(line)
    return coerce_text_columns(build_frame(rows, path, lines=lines))


def _timing(
    path: Path,
    line: int | None,
    where: str,
    rep: dict[str, Any],
    vm_start_ns: int | None,
    json_file: bool,
) -> dict[str, Any]:
    """start/end/duration of one repetition, from whichever metrics its harness wrote."""

    def ns(key: str, per_unit: int = 1) -> int:
        label = f"{where}.{key}" if json_file else f"column '{key}'"
        return scaled_ns(rep[key], per_unit, path, line, label)

    if "duration_ns" in rep and "uptime_ns" in rep:  # 0.11 and later
        if vm_start_ns is None:
            what = "environment.vm.start_unix_ms" if json_file else "column 'vm_start_unix_ms'"
            raise ResultFileError(
                path,
                f"missing {what}: the JVM start is needed to place the repetitions in time",
                line=line,
            )
        uptime, duration = ns("uptime_ns"), ns("duration_ns")
        if uptime < 0:
            raise ResultFileError(path, f"{where}: uptime_ns is negative ({uptime})", line=line)
        start = vm_start_ns + uptime
        return {"start_ns": start, "end_ns": start + duration, "duration_ns": duration}
    if "nanos" in rep and "unixts.before" in rep:  # 0.10 and earlier
        duration = ns("nanos")
        before = ns("unixts.before", NS_PER_MS)
        row: dict[str, Any] = {
            "start_ns": before,
            "end_ns": before + duration,
            "duration_ns": duration,
        }
        if "unixts.after" in rep:
            after = ns("unixts.after", NS_PER_MS)
            if after + NS_PER_MS < before + duration:
                raise ResultFileError(
                    path,
                    f"{where}: unixts.after is earlier than unixts.before + nanos",
                    line=line,
                )
            # the operation ran somewhere inside [before, after + 1 ms)
            row["ts_max_error_ns"] = after + NS_PER_MS - before - duration
        return row
    present = ", ".join(sorted(rep)) or "nothing"
    raise ResultFileError(
        path,
        f"{where} has neither 'duration_ns' and 'uptime_ns' (Renaissance 0.11+) nor 'nanos' "
        f"and 'unixts.before' (0.10): it has {present}",
        line=line,
    )
