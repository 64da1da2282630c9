"""Parser of duet micro's worker files (``harness: micro``; docs/parsers.md, "micro").

The worker (``duetbench/micro/worker.py``) writes into the side directory:

* ``micro-samples.csv`` -- ``sample,phase,start_ns,end_ns,total_ns,evaluations,
  cpu_ns,runq_ns`` (the last two: the process's CPU time and the worker thread's run
  delay around the sample, empty where not measured; absent in files of older
  releases), one row per sample, flushed per row; ``phase`` is ``calibration`` (a tuning
  trial), ``warmup`` or ``sample``; start/end are wall-clock epoch ns of the
  whole sample, ``total_ns`` its exact ``perf_counter_ns`` duration;
  with a last column ``side`` (A or B) when one worker timed both sides in one
  process (method ``inproc``);
* ``micro-meta.json`` -- the benchmark, the interpreter, the calibration;
* ``micro-error.json`` -- only when the worker failed: what failed, with the
  traceback's last line.

One row per sample. ``duration_ns`` is the time of **one evaluation**:
``total_ns / evaluations`` rounded to the nearest ns, half to even (integer
arithmetic, so at most 0.5 ns off); the exact values stay in ``total_ns`` and
``evaluations`` and the unrounded quotient in ``ns_per_evaluation``. ``cpu_ns`` and
``runq_ns`` are per evaluation too (docs/statistics.md, "Beside other work: CPU time").
``start_ns``/``end_ns`` span the whole sample (for overlaps and alignment).
Calibration and warm-up rows are ``filler`` (kept, not analysed), marked by
``calibration`` and ``harness_warmup``. An in-process file's rows carry
``inproc_side``; `duet process` splits them into the run's two sides.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._util import build_frame, concat_frames, find_result_files, read_csv, read_text
from .registry import SideContext

SAMPLES_FILE = "micro-samples.csv"
META_FILE = "micro-meta.json"
ERROR_FILE = "micro-error.json"
#: the header of a worker before the CPU-time release (still read)
FORMER_COLUMNS = ("sample", "phase", "start_ns", "end_ns", "total_ns", "evaluations")
#: the worker's CPU time and run delay around each sample
MEASURED = ("cpu_ns", "runq_ns")
COLUMNS = FORMER_COLUMNS + MEASURED
PAIRED_COLUMNS = COLUMNS + ("side",)
HEADERS = (COLUMNS, PAIRED_COLUMNS, FORMER_COLUMNS, FORMER_COLUMNS + ("side",))
PHASES = ("calibration", "warmup", "sample")
FORMAT_VERSION = 1


def read_worker_error(directory: Path) -> str | None:
    """The one-line summary of a failed worker (``micro-error.json``), or None."""
    path = Path(directory) / ERROR_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(read_text(path))
    except (ResultFileError, json.JSONDecodeError):
        return f"the worker failed and left an unreadable {path.name}"
    if not isinstance(doc, dict):
        return f"the worker failed and left a malformed {path.name}"
    summary = str(doc.get("summary") or doc.get("last_line") or "the worker failed")
    where = doc.get("location")
    return f"{summary} ({where})" if where else summary


def per_evaluation_ns(total_ns: int, evaluations: int) -> int:
    """``total_ns / evaluations`` rounded to the nearest integer, half to even, exactly."""
    quotient, remainder = divmod(total_ns, evaluations)
    twice = 2 * remainder
    if twice > evaluations or (twice == evaluations and quotient % 2 == 1):
        return quotient + 1
    return quotient


def parse_micro(ctx: SideContext) -> pd.DataFrame:
    """Iterations (one per sample) from the worker's files of one side."""
    for directory in {ctx.side_dir, *(_dir_of(p, ctx) for p in ctx.result_files)}:
        message = read_worker_error(directory)
        if message is not None:
            raise ResultFileError(directory / ERROR_FILE, message)
    files = find_result_files(ctx, (SAMPLES_FILE,), what="duet micro worker")
    frames = [_parse_samples(path) for path in files]
    return concat_frames(frames, files, ctx)


def _dir_of(entry: Path, ctx: SideContext) -> Path:
    path = entry if entry.is_absolute() else ctx.side_dir / entry
    return path if path.is_dir() else path.parent


def _meta(path: Path) -> dict[str, Any]:
    meta_path = path.with_name(META_FILE)
    if not meta_path.is_file():
        raise ResultFileError(
            meta_path, f"missing: the worker writes it next to {path.name} before sampling"
        )
    try:
        doc = json.loads(read_text(meta_path))
    except json.JSONDecodeError as exc:
        raise ResultFileError(meta_path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_VERSION:
        raise ResultFileError(meta_path, f"not a duet micro worker file of format {FORMAT_VERSION}")
    return doc


def _parse_samples(path: Path) -> pd.DataFrame:
    meta = _meta(path)
    text = read_text(path)
    if text and not text.endswith("\n"):  # killed while writing a row: that sample is lost
        text = text[: text.rfind("\n") + 1]
    table = read_csv(path, text)
    if table.header not in HEADERS:
        raise ResultFileError(
            path,
            f"unexpected header {','.join(table.header)}; expected {','.join(COLUMNS)} "
            "(and ',side' when both sides ran in one process; a worker of an older release "
            f"wrote no ',{','.join(MEASURED)}')",
            line=1,
        )
    paired = table.header[-1] == "side"
    bench = meta.get("benchmark") if isinstance(meta.get("benchmark"), dict) else {}
    python = meta.get("python") if isinstance(meta.get("python"), dict) else {}
    calibration = meta.get("calibration") if isinstance(meta.get("calibration"), dict) else {}
    workload = str(bench.get("name", ""))
    interpreter = f"{python.get('implementation', '')} {python.get('version', '')}".strip()
    names = {"A": workload}
    if paired:
        pair = meta.get("pair") if isinstance(meta.get("pair"), dict) else {}
        other = pair.get("benchmark") if isinstance(pair.get("benchmark"), dict) else {}
        names["B"] = str(other.get("name", ""))
    rows: list[dict[str, Any]] = []
    for line, fields in table.rows:
        row = _row(dict(zip(table.header, fields, strict=True)), path, line)
        if paired:
            side = fields[-1]
            if side not in names:
                raise ResultFileError(path, f"unknown side {side!r}; expected A or B", line=line)
            row["inproc_side"] = side
            row["workload"] = names[side]
        rows.append(row)
    if not rows:
        raise ResultFileError(path, "no samples: the worker stopped before its first sample")
    frame = build_frame(rows, path, lines=[line for line, _ in table.rows], group=None)
    if not paired:
        frame["workload"] = workload
    frame["python"] = interpreter
    frame["call_overhead_ns"] = float(calibration.get("call_overhead_ns", float("nan")))
    return frame


def _row(fields: dict[str, str], path: Path, line: int) -> dict[str, Any]:
    phase = fields["phase"]
    if phase not in PHASES:
        raise ResultFileError(
            path, f"unknown phase {phase!r}; expected one of {', '.join(PHASES)}", line=line
        )
    try:
        sample, start, end, total, evaluations = (
            int(fields[k]) for k in ("sample", "start_ns", "end_ns", "total_ns", "evaluations")
        )
    except ValueError:
        raise ResultFileError(path, f"non-integer value in {fields}", line=line) from None
    if evaluations < 1 or total < 0 or end != start + total:
        raise ResultFileError(
            path,
            f"inconsistent sample (evaluations {evaluations}, total {total} ns, "
            f"start {start}, end {end}): expected evaluations >= 1 and end = start + total",
            line=line,
        )
    row = {
        "iteration": sample,
        "start_ns": start,
        "end_ns": end,
        "duration_ns": per_evaluation_ns(total, evaluations),
        "filler": phase != "sample",
        "calibration": phase == "calibration",
        "harness_warmup": phase == "warmup",
        "evaluations": evaluations,
        "total_ns": total,
        "ns_per_evaluation": total / evaluations,
    }
    for name in MEASURED:  # per evaluation, like duration_ns; None where not measured
        text = fields.get(name, "")
        if not text:
            row[name] = None
            continue
        try:
            value = int(text)
        except ValueError:
            raise ResultFileError(path, f"non-integer {name} {text!r}", line=line) from None
        if value < 0:
            raise ResultFileError(path, f"negative {name} {value}", line=line)
        row[name] = per_evaluation_ns(value, evaluations)
    return row
