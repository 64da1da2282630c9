"""Raw runs -> the iterations table (docs/results.md), and loading tables back.

``process(root)`` reads every finished run of a results directory with the
parser its benchmark names, adds the identifying columns, joins host facts,
and drops what the analysis must not see: iterations of failed/timed-out runs,
filler iterations (busy shorter side) and iterations whose command failed --
counting each. A malformed result file is reported (file, line, what) and
that side skipped; the rest of the experiment still processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .atomic import write_atomic
from .errors import DuetError, ResultFileError, ResultsDirError
from .files import check_regular
from .parse.registry import SideContext, get_parser
from .records import RunRecord, SideRecord
from .schema import (
    COLUMN,
    CORE_COLUMNS,
    METHODS,
    REQUIRED_COLUMNS,
    RESERVED_COLUMNS,
    SIDES,
    USABLE_STATUSES,
    Method,
    RunStatus,
)
from .store import ResultsStore

HOST_FIELDS = ("cpu_model", "cores", "kernel", "virtualization")


@dataclass
class ProcessReport:
    table: pd.DataFrame
    problems: list[str] = field(default_factory=list)  # malformed files etc., one line each
    runs_used: int = 0
    runs_partial: int = 0  # timed-out runs whose finished iterations are used
    runs_excluded: dict[str, int] = field(default_factory=dict)  # status -> count
    iterations_excluded: dict[str, int] = field(default_factory=dict)  # why -> count


def _warmup_count(warmup: Any, n: int) -> int:
    if warmup == "half":
        return n // 2
    try:
        return max(0, int(warmup))
    except (TypeError, ValueError):
        return 0


def _host_columns(hosts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, info in hosts.items():
        cols: dict[str, Any] = {f"host_{k}": info.get(k) for k in HOST_FIELDS}
        for art, res in (info.get("artifacts") or {}).items():
            text = (res.get("stdout") or "").strip() if isinstance(res, dict) else str(res).strip()
            cols[f"artifact_{art}"] = text.splitlines()[0][:200] if text else ""
        out[name] = cols
    return out


def _artifacts_text(info: dict[str, Any]) -> dict[str, str]:
    arts = info.get("artifacts") or {}
    return {k: (v.get("stdout", "") if isinstance(v, dict) else str(v)) for k, v in arts.items()}


def process(root: str | Path) -> ProcessReport:
    """The iterations table of a results directory, and what was left out and why.

    Every usable run is in the table. Duet runs whose sides got unequal CPU shares beside
    other work are marked (column ``unbalanced``) with what corrects them (``cpu_ns``,
    ``runq_ns``, ``cpu_share``, ``busy_share``, ``other_cpus``): the analysis corrects
    them where it compares CPU time and leaves them out where it compares wall time
    (docs/statistics.md, "Beside other work: CPU time")."""
    store = ResultsStore.open(Path(root))
    exp = store.experiment()
    name = exp.get("name", store.root.name)
    hosts = store.hosts()
    host_cols = _host_columns(hosts)
    report = ProcessReport(table=pd.DataFrame())
    frames: list[pd.DataFrame] = []
    parsers: dict[str, Any] = {}
    for _run_id, run in store.usable_runs():  # damage is an error, never a skipped run
        if run.status not in USABLE_STATUSES:
            report.runs_excluded[run.status] = report.runs_excluded.get(run.status, 0) + 1
            continue
        got = _run_frames(_RunContext(store, name, run, hosts, host_cols), parsers, report)
        if run.status == RunStatus.TIMEOUT:  # its finished iterations are kept (as the thesis did)
            report.runs_partial += 1
        frames.extend(got)
        report.runs_used += int(bool(got))
    if frames:
        table = pd.concat(frames, ignore_index=True)
    else:
        table = pd.DataFrame(
            {
                c: pd.Series(dtype="int64" if COLUMN[c].dtype == "int64" else "object")
                for c in CORE_COLUMNS
            }
        )
    report.table = order_columns(table)
    _check_loops(report.table, store.root)
    return report


def _run_frames(
    context: _RunContext, parsers: dict[str, Any], report: ProcessReport
) -> list[pd.DataFrame]:
    """The iterations of one run's sides (parsers: cache by harness)."""
    run = context.run
    harness = run.spec.get("harness", "command")
    try:
        parser = parsers.get(harness) or get_parser(harness)
    except DuetError as exc:
        report.problems.append(f"{run.run_id}: {exc}")
        return []
    parsers[harness] = parser
    frames = []
    for side in run.sides.values():
        frames.extend(_side_tables(context, side, parser, harness, report))
    return frames


def run_table(store: ResultsStore, run: RunRecord) -> pd.DataFrame | None:
    """The iterations of one finished run, as `duet process` reads them (None: nothing
    usable). The adaptive scheduler parses each run once, as it finishes."""
    if run.status not in USABLE_STATUSES:
        return None
    exp = store.experiment()
    hosts = store.hosts()
    context = _RunContext(store, exp.get("name", store.root.name), run, hosts, _host_columns(hosts))
    frames = _run_frames(context, {}, ProcessReport(table=pd.DataFrame()))
    return pd.concat(frames, ignore_index=True) if frames else None


def _check_loops(table: pd.DataFrame, path: str | Path) -> None:
    """A and B of a pyperf benchmark must time the same loops per value (parse/pyperf.py)."""
    from .parse.pyperf import check_loops

    problems = check_loops(table)
    if problems:
        raise ResultFileError(path, "\n".join(problems))


@dataclass(frozen=True)
class _RunContext:
    store: ResultsStore
    experiment: str
    run: RunRecord
    hosts: dict[str, dict[str, Any]]
    host_cols: dict[str, dict[str, Any]]


def _side_tables(
    c: _RunContext, side: SideRecord, parser: Any, harness: str, report: ProcessReport
) -> list[pd.DataFrame]:
    """The iterations of one side's process with the identifying columns: one table, or
    for an inproc run (both sides timed in one process, rows marked ``inproc_side``)
    one per side; none when nothing is usable."""
    run, run_id = c.run, c.run.run_id
    # absolute: result_files are relative to the side directory, and a parser must find
    # them whatever the working directory and however the results dir was named
    side_dir = (c.store.run_dir(run_id) / side.name).absolute()
    ctx = SideContext(
        side_dir=side_dir,
        result_files=tuple(side_dir / p for p in side.result_files),
        pair=side.name,
        benchmark=run.benchmark,
        method=run.method,
        run=run.to_json(),
        artifacts=_artifacts_text(c.hosts.get(run.host, {})),
    )
    try:
        df = parser(ctx)
    except ResultFileError as exc:
        report.problems.append(f"{exc} (run {run_id}, side {side.name} skipped)")
        return []
    except DuetError as exc:
        report.problems.append(f"{run_id} side {side.name}: {exc}")
        return []
    except Exception as exc:  # a third-party parser's bug must not lose the experiment
        report.problems.append(f"{run_id} side {side.name}: parser '{harness}' failed: {exc!r}")
        return []
    paired = "inproc_side" in df.columns
    if paired != (run.method == Method.INPROC):
        what = "both sides' samples" if paired else "one side's samples"
        report.problems.append(
            f"{run_id} side {side.name}: the result file holds {what}, which a "
            f"{run.method} run does not produce (run skipped; docs/micro.md, "
            '"In one process: inproc")'
        )
        return []
    if not paired:
        one = _finish_side(c, side, side.name, df, ctx, report)
        return [] if one is None else [one]
    out = []
    for name in SIDES:
        part = df.loc[df["inproc_side"].to_numpy() == name].drop(columns=["inproc_side"])
        one = _finish_side(c, side, name, part.reset_index(drop=True), ctx, report)
        if one is not None:
            out.append(one)
    return out


def _finish_side(
    c: _RunContext,
    side: SideRecord,
    name: str,
    df: pd.DataFrame,
    ctx: SideContext,
    report: ProcessReport,
) -> pd.DataFrame | None:
    """Side ``name``'s parsed iterations (from ``side``'s process) with the identifying
    columns (None: nothing usable)."""
    run, run_id = c.run, c.run.run_id
    df = _normalize(df, ctx, side, report)
    if df.empty:
        return None
    spec = run.spec
    df["warmup"] = _warmup_mask(df, spec.get("warmup", 0))
    if "workload" in df.columns and spec.get("workload_benchmarks"):
        df["benchmark"] = df["workload"].astype(str)
    elif "workload" in df.columns and df["workload"].nunique() > 1:
        df["benchmark"] = run.benchmark + ":" + df["workload"].astype(str)
    else:
        df["benchmark"] = run.benchmark
    df["experiment"] = c.experiment
    df["host"] = run.host
    df["suite"] = run.suite or spec.get("suite") or spec.get("harness", "command")
    df["method"] = str(run.method)
    df["run"] = np.int64(run.rep if run.rep is not None else spec.get("rep", 0))
    df["pair"] = name
    df["order"] = run.order or ""
    df["run_id"] = run_id
    df["proc_start_ns"] = side.start_ns
    df["proc_end_ns"] = side.end_ns
    df["cpu"] = ",".join(map(str, side.cpus))
    df["other_work"] = run.beside_other_work
    other = run.other_cpus
    df["other_cpus"] = np.nan if other is None else other
    df["unbalanced"] = run.unbalanced
    df["cpu_share"], df["busy_share"], df["cpu_window_ns"] = side_shares(side)
    for col, val in c.host_cols.get(run.host, {}).items():
        df[col] = val
    return df


def side_shares(side: SideRecord) -> tuple[float, float, float]:
    """(CPU time, CPU time + run delay) of a side over its wall time, and that wall time
    in ns where it is not the side's process's lifetime (NaN): in containers (run.json
    ``sides.<X>.window``) the CPU time within its iterations over their window less its
    waits at the handshake, and with the run delay over the iterations' own wall time;
    NaN where not measured (older results, a run without a duration)."""
    times = side.window_times()
    if times is not None:
        busy = np.nan
        if times.runq is not None and times.busy > 0:
            busy = (times.cpu + times.runq) / times.busy
        return times.cpu / times.span, busy, times.span * 1e9
    if side.cpu_s is None or side.start_ns is None or side.end_ns is None:
        return np.nan, np.nan, np.nan
    wall = (side.end_ns - side.start_ns) / 1e9
    if not wall > 0:
        return np.nan, np.nan, np.nan
    busy = np.nan if side.runq_s is None else (side.cpu_s + side.runq_s) / wall
    return side.cpu_s / wall, busy, np.nan


def _warmup_mask(df: pd.DataFrame, warmup: Any) -> np.ndarray:
    """The config's warm-up: the first k iterations of every series (per workload in multi-workload files)."""
    if "workload" in df.columns:
        sizes = df.groupby("workload", sort=False)["iteration"].transform("size").to_numpy()
    else:
        sizes = np.full(len(df), len(df))
    if warmup == "half":
        k = sizes // 2
    else:
        k = np.full(len(df), _warmup_count(warmup, len(df)))
    return df["iteration"].to_numpy() < k


def _normalize(
    df: pd.DataFrame, ctx: SideContext, side: SideRecord, report: ProcessReport
) -> pd.DataFrame:
    df = df.rename(
        columns={
            c: f"harness_{c}" for c in RESERVED_COLUMNS if c in df.columns and c != "synthetic_ts"
        }
    )
    if "filler" in df.columns:
        fill = df["filler"].astype(bool).to_numpy()
        if fill.any():
            report.iterations_excluded["filler"] = report.iterations_excluded.get(
                "filler", 0
            ) + int(fill.sum())
        df = df.loc[~fill].drop(columns=["filler"])
    if "exit_code" in df.columns:
        bad = df["exit_code"].to_numpy() != 0
        if bad.any():
            report.iterations_excluded["failed"] = report.iterations_excluded.get(
                "failed", 0
            ) + int(bad.sum())
        df = df.loc[~bad].drop(columns=["exit_code"])
    if df.empty:
        return df
    if "start_ns" not in df.columns or "end_ns" not in df.columns:
        if "duration_ns" not in df.columns:
            raise ResultsDirError(
                f"parser for {ctx.side_dir} returned neither timestamps nor durations"
            )
        dur = df["duration_ns"].to_numpy(dtype=np.int64)
        origin = side.start_ns or 0
        ends = origin + np.cumsum(dur)
        df["start_ns"] = ends - dur
        df["end_ns"] = ends
        df["synthetic_ts"] = True
    elif "synthetic_ts" not in df.columns:
        df["synthetic_ts"] = False
    for col in ("start_ns", "end_ns"):
        df[col] = df[col].astype(np.int64)
    if "duration_ns" not in df.columns:
        df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["duration_ns"] = df["duration_ns"].astype(np.int64)
    df = df.reset_index(drop=True)
    # iterations are numbered 0.. over what the analysis sees (after filler/failed rows are gone),
    # per workload, in the harness's order: sduet pairs iteration k of A with iteration k of B
    if "iteration" in df.columns:
        keys = ["workload"] if "workload" in df.columns else []
        df = df.sort_values(keys + ["iteration"], kind="stable").reset_index(drop=True)
    if "workload" in df.columns:
        df["iteration"] = df.groupby("workload", sort=False).cumcount().astype(np.int64)
    else:
        df["iteration"] = np.arange(len(df), dtype=np.int64)
    return df


def order_columns(df: pd.DataFrame) -> pd.DataFrame:
    core = [c for c in CORE_COLUMNS if c in df.columns]
    rest = [c for c in df.columns if c not in core]
    return df[core + rest]


def save(df: pd.DataFrame, path: str | Path) -> Path:
    """Write the table atomically: a crash leaves the old file or the new one, never a cut one."""
    path = Path(path)
    if path.suffix == ".csv":
        writer = partial(df.to_csv, index=False)
    elif path.suffix in (".parquet", ".pq"):
        writer = partial(df.to_parquet, index=False)
    else:
        raise DuetError(f"cannot write {path}: use a .parquet or .csv file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DuetError(f"cannot write {path}: {exc.strerror or exc}") from None
    return write_atomic(path, writer)


def load(path: str | Path) -> pd.DataFrame:
    """The iterations table of a results directory, a .parquet or a .csv file."""
    path = Path(path)
    if path.is_dir():
        return process(path).table
    if not path.exists():
        raise DuetError(
            f"{path} does not exist; give a results directory (results/<experiment>), "
            "or an iterations table (.parquet / .csv)"
        )
    try:
        check_regular(path)  # a FIFO would block, /dev/zero never end
        if path.suffix in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        elif path.suffix in (".csv", ".tsv"):
            df = pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",")
        else:
            raise DuetError(f"{path}: unknown table format; use .parquet or .csv")
    except DuetError:
        raise
    except Exception as exc:
        why = getattr(exc, "strerror", None) or str(exc).strip() or type(exc).__name__
        raise ResultFileError(path, f"cannot read the table: {why}") from None
    return validate_table(df, path)


def validate_table(df: pd.DataFrame, path: str | Path = "<table>") -> pd.DataFrame:
    """Check and complete a table from another tool: required columns, defaults for the rest."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if "duration_ns" in df.columns:
        missing = [c for c in missing if c not in ("start_ns", "end_ns")]
    if missing:
        raise ResultFileError(
            path,
            f"missing column(s) {', '.join(missing)}; an iterations table needs "
            f"{', '.join(c for c in REQUIRED_COLUMNS if c not in ('start_ns', 'end_ns'))} "
            "and either start_ns, end_ns or "
            "duration_ns, all times in integer nanoseconds (see docs/results.md, "
            "'The iterations table')",
        )
    df = df.copy()
    defaults = {"experiment": Path(str(path)).stem, "host": "", "suite": "", "order": ""}
    for col, val in defaults.items():
        if col not in df.columns:
            df[col] = val
    bad_method = set(df["method"].astype(str).unique()) - set(METHODS)
    if bad_method:
        raise ResultFileError(
            path, f"column 'method' has {sorted(bad_method)}; allowed: {', '.join(METHODS)}"
        )
    bad_side = set(df["pair"].astype(str).unique()) - set(SIDES)
    if bad_side:
        raise ResultFileError(
            path, f"column 'pair' has {sorted(bad_side)}; allowed: {', '.join(SIDES)}"
        )
    if "duration_ns" in df.columns:
        df["duration_ns"] = _integer_column(df, "duration_ns", path)
    if "start_ns" not in df.columns:
        df["synthetic_ts"] = True
        dur = df["duration_ns"]
        ends = dur.groupby([df["benchmark"], df["method"], df["run"], df["pair"]]).cumsum()
        df["end_ns"] = ends
        df["start_ns"] = ends - dur
    for col in (c for c in REQUIRED_COLUMNS if COLUMN[c].dtype == "int64"):
        df[col] = _integer_column(df, col, path)
    if "duration_ns" not in df.columns:
        df["duration_ns"] = df["end_ns"] - df["start_ns"]
    negative = np.flatnonzero(df["duration_ns"].to_numpy() < 0)
    if len(negative):
        raise ResultFileError(
            path,
            f"{_where(df, negative[0], path)} has a negative duration "
            f"({df['duration_ns'].iat[negative[0]]} ns); {len(negative)} row(s) like it. "
            "Durations (end_ns - start_ns, or duration_ns) must be >= 0",
        )
    _check_loops(df, path)
    return order_columns(df)


def _where(df: pd.DataFrame, pos: int, path: str | Path) -> str:
    """A row of a loaded table as the user can find it: the CSV line, else the row number."""
    if Path(str(path)).suffix in (".csv", ".tsv"):
        return f"line {pos + 2}"  # the header is line 1
    return f"row {pos}"


def _integer_column(df: pd.DataFrame, col: str, path: str | Path) -> pd.Series:
    """``df[col]`` as int64, or an error naming the first cell that is not an integer."""
    s = df[col]
    if pd.api.types.is_integer_dtype(s.dtype) and not s.isna().any():
        return s.astype(np.int64)
    num = pd.to_numeric(s, errors="coerce")
    if pd.api.types.is_bool_dtype(s.dtype):
        num = pd.Series(np.nan, index=s.index)
    values = num.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        cell = s.iat[first]
        shown = "an empty cell" if pd.isna(cell) else f"'{cell}'"
        hint = ""
        if col.endswith("_ns"):
            hint = "; times are integer nanoseconds (seconds x 1e9)"
        raise ResultFileError(
            path,
            f"column '{col}' must hold integers, but {_where(df, first, path)} has {shown} "
            f"({int(bad.sum())} row(s) like it){hint}",
        )
    return num.astype(np.int64)
