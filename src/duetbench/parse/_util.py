"""Helpers shared by the parser plugins: finding result files, reading them with
errors that name file and line, exact unit conversion and building the frame.

Everything here raises :class:`~duetbench.errors.ResultFileError` for bad input;
nothing prints and nothing keeps state between calls.
"""

from __future__ import annotations

import csv
import fnmatch
import gzip
import json
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ..files import RESULT_FILE_MAX, open_regular, read_bytes, size_text
from ..schema import RESERVED_COLUMNS as SCHEMA_RESERVED
from .registry import SideContext

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
NS_PER_US = 1_000

#: Columns the processing step owns (the iterations table's reserved columns and the
#: benchmark's name, schema.py); a harness column with one of these names is renamed
#: (``benchmark`` -> ``workload``, anything else -> ``harness_<name>``).
RESERVED_COLUMNS = frozenset({*SCHEMA_RESERVED, "benchmark"})

_TIME_COLUMNS = ("start_ns", "end_ns", "duration_ns")


# --------------------------------------------------------------------------- files


def find_result_files(
    ctx: SideContext,
    patterns: Sequence[str],
    *,
    what: str,
    regex: re.Pattern[str] | None = None,
) -> list[Path]:
    """The files to parse for one side, in a deterministic order.

    Each entry of ``ctx.result_files`` (relative entries are taken relative to
    ``ctx.side_dir``) is either a file or a directory. A directory contributes
    its files (not recursive) whose name matches one of ``patterns`` (glob) or
    ``regex``, sorted by name. Listed files are taken when their name matches;
    when no listed file matches and the directories give nothing either, every
    listed file is taken (the user named them, so the parser sniffs them). With
    no ``results:`` at all, ``ctx.side_dir`` itself is searched.

    Raises ResultFileError when nothing is found.
    """

    def matches(p: Path) -> bool:
        if regex is not None:
            return regex.fullmatch(p.name) is not None
        return any(fnmatch.fnmatch(p.name, pat) for pat in patterns)

    entries = [_locate(p, ctx.side_dir) for p in ctx.result_files]
    if not entries:
        entries = [ctx.side_dir]

    listed_files: list[Path] = []
    found: list[Path] = []
    missing: list[Path] = []
    for entry in entries:
        if entry.is_dir():
            found.extend(sorted(p for p in entry.iterdir() if p.is_file() and matches(p)))
        elif entry.is_file():
            listed_files.append(entry)
            if matches(entry):
                found.append(entry)
        else:
            missing.append(entry)
    if not found:
        found = listed_files
    if not found:
        looked = ", ".join(str(p) for p in entries)
        wanted = regex.pattern if regex is not None else " / ".join(patterns)
        detail = f" ({', '.join(str(m) for m in missing)} does not exist)" if missing else ""
        raise ResultFileError(
            entries[0],
            f"no {what} result file found: looked for {wanted} in {looked}{detail}. "
            "Check `results:` in duet.yml and that the harness writes its results there.",
        )
    # keep order, drop duplicates (a file listed and inside a listed directory)
    unique: dict[Path, None] = {}
    for p in found:
        unique.setdefault(p, None)
    return list(unique)


def _locate(entry: Path, side_dir: Path) -> Path:
    """A ``results:`` entry inside the side directory.

    Relative entries are relative to ``side_dir`` (an entry that already starts with a
    relative ``side_dir`` is taken once, not twice). An absolute entry that does
    not exist (a path inside the container, like the thesis' ``/duet/results.csv``)
    is looked for by its name in ``side_dir``, where results are collected.
    """
    if not entry.is_absolute():
        inside = side_dir / entry
        if not inside.exists() and not side_dir.is_absolute() and entry.exists():
            try:
                if entry.resolve().is_relative_to(side_dir.resolve()):
                    return entry  # already prefixed with the (relative) side directory
            except OSError:
                pass
        return inside
    if not entry.exists() and (side_dir / entry.name).exists():
        return side_dir / entry.name
    return entry


def read_text(path: Path) -> str:
    """A text file's content; ``*.gz`` is decompressed. Errors name the file. Only a
    regular file is read, and at most ``files.RESULT_FILE_MAX`` bytes of it (also once
    decompressed)."""
    try:
        if path.name.endswith(".gz"):
            with open_regular(path, RESULT_FILE_MAX) as raw, gzip.open(raw, "rb") as fh:
                data = fh.read(RESULT_FILE_MAX + 1)
            if len(data) > RESULT_FILE_MAX:
                raise ResultFileError(
                    path, f"decompressed it holds more than {size_text(RESULT_FILE_MAX)}"
                )
        else:
            data = read_bytes(path, RESULT_FILE_MAX)
        return data.decode("utf-8")
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ResultFileError(path, f"corrupt or truncated gzip file ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ResultFileError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ResultFileError(path, f"cannot read the file: {exc.strerror or exc}") from None


def parse_json(path: Path, text: str, *, first_line: int = 1, strict: bool = True) -> Any:
    """``json.loads`` with floats kept exact (Decimal) and errors naming file and line.

    ``first_line`` is the file line of ``text``'s first line (for JSON lines);
    ``strict=False`` accepts control characters (raw line ends) inside strings.
    """
    try:
        return json.loads(text, parse_float=Decimal, strict=strict)
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(text.rstrip())
        hint = " -- the file looks truncated" if at_end else ""
        raise ResultFileError(
            path,
            f"invalid JSON: {exc.msg} (column {exc.colno}){hint}",
            line=first_line + exc.lineno - 1,
        ) from None


def load_json(path: Path, *, strict: bool = True) -> Any:
    """Read and decode one JSON file (``.gz`` allowed)."""
    text = read_text(path)
    if not text.strip():
        raise ResultFileError(path, "the file is empty")
    return parse_json(path, text, strict=strict)


@dataclass(frozen=True)
class CsvTable:
    """A CSV file read with the file line of every data row."""

    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]  # (line number, fields)


def read_csv(
    path: Path, text: str | None = None, *, require_final_newline: bool = False
) -> CsvTable:
    """Parse a CSV file strictly: every row must have as many fields as the header."""
    if text is None:
        text = read_text(path)
    lines = text.splitlines(keepends=True)
    if not text.strip():
        raise ResultFileError(path, "the file is empty (no CSV header)")
    if require_final_newline and not text.endswith(("\n", "\r")):
        raise ResultFileError(
            path,
            "the last line has no line end: the file is truncated "
            "(was the harness killed while writing it?)",
            line=len(lines),
        )
    reader = csv.reader(lines)
    header: tuple[str, ...] | None = None
    rows: list[tuple[int, tuple[str, ...]]] = []
    try:
        for fields in reader:
            line = reader.line_num
            if not fields or all(not f.strip() for f in fields):
                continue
            cleaned = tuple(f.strip() for f in fields)
            if header is None:
                header = cleaned
                dupes = sorted({c for c in header if header.count(c) > 1})
                if dupes:
                    raise ResultFileError(
                        path, f"duplicate CSV columns: {', '.join(dupes)}", line=line
                    )
                continue
            if len(cleaned) != len(header):
                raise ResultFileError(
                    path,
                    f"row has {len(cleaned)} fields but the header has {len(header)}"
                    + (" -- the file looks truncated" if line == len(lines) else ""),
                    line=line,
                )
            rows.append((line, cleaned))
    except csv.Error as exc:
        raise ResultFileError(path, f"malformed CSV: {exc}", line=reader.line_num) from None
    assert header is not None
    return CsvTable(header=header, rows=tuple(rows))


# --------------------------------------------------------------------- numbers


def to_decimal(value: Any, path: Path, line: int | None, what: str) -> Decimal:
    """A finite number from JSON/CSV (int, Decimal, float or numeric string)."""
    if isinstance(value, bool):
        raise ResultFileError(path, f"{what}: expected a number, got {value!r}", line=line)
    try:
        if isinstance(value, Decimal):
            d = value
        elif isinstance(value, int):
            d = Decimal(value)
        elif isinstance(value, float):
            d = Decimal(repr(value))
        elif isinstance(value, str) and value.strip():
            d = Decimal(value.strip())
        else:
            raise InvalidOperation
    except (InvalidOperation, ValueError):
        raise ResultFileError(
            path, f"{what}: expected a number, got {value!r}", line=line
        ) from None
    if not d.is_finite():
        raise ResultFileError(path, f"{what}: expected a finite number, got {value!r}", line=line)
    return d


def round_ns(d: Decimal) -> int:
    """Round a Decimal number of nanoseconds to an int (half to even)."""
    return int(d.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def scaled_ns(value: Any, ns_per_unit: int, path: Path, line: int | None, what: str) -> int:
    """``value`` (in some unit) as integer nanoseconds, computed exactly in decimal."""
    return round_ns(to_decimal(value, path, line, what) * ns_per_unit)


def parse_bool(value: Any, path: Path, line: int | None, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | Decimal) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in {"true", "t", "yes", "y", "1"}:
            return True
        if v in {"false", "f", "no", "n", "0", ""}:
            return False
    raise ResultFileError(path, f"{what}: expected true/false, got {value!r}", line=line)


def plain_value(value: Any) -> Any:
    """JSON scalar as a plain Python value (Decimal -> float); None for nested values."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict | list):
        return None
    return value


def epoch_ns_guess_unit(value: Any, path: Path, line: int | None, what: str) -> int:
    """An absolute epoch timestamp whose unit is told apart by magnitude.

    Epochs after 1973 are > 1e8 s; seconds < 1e11, milliseconds < 1e14,
    microseconds < 1e17, nanoseconds otherwise.
    """
    d = to_decimal(value, path, line, what)
    if d <= 0:
        raise ResultFileError(
            path, f"{what}: expected a positive epoch timestamp, got {value!r}", line=line
        )
    if d < Decimal("1e11"):
        return round_ns(d * NS_PER_S)
    if d < Decimal("1e14"):
        return round_ns(d * NS_PER_MS)
    if d < Decimal("1e17"):
        return round_ns(d * NS_PER_US)
    return round_ns(d)


# --------------------------------------------------------------------- columns


def harness_column_name(name: str, existing: Iterable[str] = ()) -> str:
    """The name under which a harness' own column is kept (see RESERVED_COLUMNS)."""
    if name not in RESERVED_COLUMNS:
        return name
    if name == "benchmark" and "workload" not in set(existing):
        return "workload"
    return f"harness_{name}"


def numeric_or_text(values: pd.Series) -> pd.Series:
    """A column of strings as int64 / float64 when every value parses, else unchanged."""
    non_empty = values[values.astype(str).str.len() > 0]
    if len(non_empty) == len(values):
        try:
            return pd.to_numeric(values)
        except (ValueError, TypeError):
            return values
    return values


# ----------------------------------------------------------------------- frame


def build_frame(
    rows: Sequence[Mapping[str, Any]],
    path: Path,
    *,
    lines: Sequence[int | None] | None = None,
    group: str | None = "workload",
) -> pd.DataFrame:
    """The parser result from one dict per iteration, validated and typed.

    Each row has ``start_ns``/``end_ns`` or ``duration_ns`` (or all three);
    missing ``duration_ns`` is end - start. ``iteration`` is assigned 0-based
    in row order (per ``group`` value when that column exists) unless every row
    has one. Timestamps/durations become int64, ``filler`` bool.
    ``lines`` gives each row's file line for error messages.
    """
    if not rows:
        raise ResultFileError(path, "the file holds no iterations")
    line_of = list(lines) if lines is not None else [None] * len(rows)
    has_ts = ["start_ns" in r for r in rows]
    if any(has_ts) and not all(has_ts):
        bad = has_ts.index(False)
        raise ResultFileError(
            path, "row without a start timestamp among rows with one", line=line_of[bad]
        )
    fixed: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        r = dict(row)
        if "start_ns" in r:
            start, end = int(r["start_ns"]), int(r["end_ns"])
            if end < start:
                raise ResultFileError(
                    path,
                    f"iteration ends before it starts (start {start} ns, end {end} ns)",
                    line=line_of[i],
                )
            r.setdefault("duration_ns", end - start)
        if "duration_ns" not in r:
            raise ResultFileError(path, "iteration without a duration", line=line_of[i])
        if int(r["duration_ns"]) < 0:
            raise ResultFileError(path, f"negative duration {r['duration_ns']} ns", line=line_of[i])
        fixed.append(r)

    df = pd.DataFrame(fixed)
    if "iteration" not in df.columns or df["iteration"].isna().any():
        if group is not None and group in df.columns:
            df["iteration"] = df.groupby(group, sort=False, dropna=False).cumcount()
        else:
            df["iteration"] = range(len(df))
    for col in ("iteration", *_TIME_COLUMNS):
        if col in df.columns:
            df[col] = df[col].astype("int64")
    for col in MEASURED_COLUMNS:
        if col in df.columns:
            df[col] = _measured_column(df[col].tolist(), col, path, line_of)
    _bool_columns(df)
    first = [c for c in ("iteration", *_TIME_COLUMNS, "workload", "filler") if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]].reset_index(drop=True)


#: per-iteration measurements a harness may report besides its timing, in ns, empty where
#: not measured: CPU time, and time ready to run but waiting for a CPU (docs/parsers.md)
MEASURED_COLUMNS = ("cpu_ns", "runq_ns")


def _measured_column(
    values: list[Any], name: str, path: Path, line_of: Sequence[int | None]
) -> pd.arrays.IntegerArray:
    """A ``cpu_ns``/``runq_ns`` column as nullable integers; anything but a
    non-negative integer (or an empty value) is an error naming the line."""
    out: list[int | None] = []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip()):
            out.append(None)
            continue
        try:
            number = int(v) if isinstance(v, int) and not isinstance(v, bool) else float(v)
        except (TypeError, ValueError):
            number = None
        if number is None or number != number or number < 0 or number != int(number):
            raise ResultFileError(
                path, f"{name} must be a non-negative integer (ns), got {v!r}", line=line_of[i]
            )
        out.append(int(number))
    return pd.array(out, dtype="Int64")


def concat_frames(
    frames: Sequence[pd.DataFrame], files: Sequence[Path], ctx: SideContext
) -> pd.DataFrame:
    """Several files' frames as one; adds ``source_file`` when there is more than one."""
    if len(frames) == 1:
        return frames[0]
    tagged = []
    with_codes = any("exit_code" in frame.columns for frame in frames)
    for frame, path in zip(frames, files, strict=True):
        f = frame.copy()
        if with_codes and "exit_code" not in f.columns:
            # a file without exit codes has no failed rows; a missing value would count as one
            f["exit_code"] = 0
        try:
            f["source_file"] = str(path.relative_to(ctx.side_dir))
        except ValueError:
            f["source_file"] = str(path)
        tagged.append(f)
    df = pd.concat(tagged, ignore_index=True)
    _bool_columns(df)
    return df


def _bool_columns(df: pd.DataFrame) -> None:
    """``filler`` / ``synthetic_ts`` as bool, missing values False (in place)."""
    for col in ("filler", "synthetic_ts"):
        if col in df.columns:
            df[col] = df[col].where(df[col].notna(), False).astype(bool)


def renumber_iterations(df: pd.DataFrame, group: str | None = "workload") -> pd.DataFrame:
    """Reassign ``iteration`` 0-based in row order (per ``group`` value when present)."""
    out = df.copy()
    if group is not None and group in out.columns:
        out["iteration"] = out.groupby(group, sort=False, dropna=False).cumcount().astype("int64")
    else:
        out["iteration"] = pd.RangeIndex(len(out)).astype("int64")
    return out


def nested(doc: Any, path: Path, *keys: str, what: str) -> Any:
    """``doc[k1][k2]...`` or a ResultFileError naming the missing key path."""
    cur = doc
    for i, key in enumerate(keys):
        if not isinstance(cur, dict) or key not in cur:
            dotted = ".".join(keys[: i + 1])
            raise ResultFileError(path, f"missing key '{dotted}': {what}")
        cur = cur[key]
    return cur


_CONTRACT_COLUMNS = frozenset(
    {"iteration", "start_ns", "end_ns", "duration_ns", "filler", "workload"}
)


def coerce_text_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Harness columns read from text (CSV) as numbers where every value is one."""
    out = df.copy()
    for col in out.columns:
        if col not in _CONTRACT_COLUMNS and pd.api.types.is_string_dtype(out[col]):
            out[col] = numeric_or_text(out[col])
    return out
