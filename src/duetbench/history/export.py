"""Export a repository to a directory of Parquet files partitioned hive-style.

    <out>/iterations/suite=<s>/benchmark=<b>/experiment-<id>-0.parquet
    <out>/results/suite=<s>/benchmark=<b>/part-0.parquet
    <out>/run_values/suite=<s>/benchmark=<b>/part-0.parquet
    <out>/versions/part-0.parquet  <out>/experiments/part-0.parquet  <out>/hosts/part-0.parquet

Partition values are percent-encoded (``parse%20large``), which DuckDB, Spark, Dask
and pyarrow decode. Every file of a table has the same columns and types, so the
directories read as they are, e.g. in DuckDB
``SELECT * FROM read_parquet('out/iterations/**/*.parquet', hive_partitioning = true)``.
The export is written to a temporary directory beside ``<out>`` and renamed into
place: ``<out>`` is either absent or complete.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from ._db import HistoryError
from .repository import Repository

PARTITION = pa.schema([("suite", pa.string()), ("benchmark", pa.string())])
#: iterations columns exported (the rest -- host_*, artifact_*, harness_* -- stay in the repository)
ITERATION_COLUMNS: dict[str, pa.DataType] = {
    "experiment_id": pa.int64(),
    "version_a": pa.string(),
    "version_b": pa.string(),
    "host_fingerprint": pa.string(),
    "experiment": pa.string(),
    "host": pa.string(),
    "suite": pa.string(),
    "benchmark": pa.string(),
    "method": pa.string(),
    "run": pa.int64(),
    "pair": pa.string(),
    "order": pa.string(),
    "iteration": pa.int64(),
    "start_ns": pa.int64(),
    "end_ns": pa.int64(),
    "duration_ns": pa.int64(),
    "warmup": pa.bool_(),
    "synthetic_ts": pa.bool_(),
    "run_id": pa.string(),
}


@dataclass(frozen=True)
class ExportSummary:
    directory: Path
    experiments: int
    iterations: int
    files: int


def _arrow(df: pd.DataFrame, schema: dict[str, pa.DataType]) -> pa.Table:
    cols = {}
    for name, typ in schema.items():
        if name in df.columns:
            s = df[name]
            if pa.types.is_string(typ):
                values = [None if pd.isna(v) else str(v) for v in s]
            elif pa.types.is_boolean(typ):
                values = [bool(v) if not pd.isna(v) else None for v in s]
            else:
                values = s
            cols[name] = pa.array(values, type=typ, from_pandas=True)
        else:
            cols[name] = pa.nulls(len(df), type=typ)
    return pa.table(cols)


def _write(table: pa.Table, root: Path, name: str, partitioned: bool = True) -> None:
    ds.write_dataset(
        table,
        root,
        format="parquet",
        partitioning=ds.partitioning(PARTITION, flavor="hive") if partitioned else None,
        basename_template=name + "-{i}.parquet",
        existing_data_behavior="overwrite_or_ignore",
    )


def _typed(df: pd.DataFrame) -> dict[str, pa.DataType]:
    out: dict[str, pa.DataType] = {}
    for c in df.columns:
        kind = df[c].dtype.kind
        if kind in "iu":
            out[c] = pa.int64()
        elif kind == "f":
            out[c] = pa.float64()
        elif kind == "b":
            out[c] = pa.bool_()
        else:
            out[c] = pa.string()
    return out


def export(repo: Repository, directory: str | Path) -> ExportSummary:
    """Write the repository as hive-partitioned Parquet to ``directory`` (new or empty)."""
    out = Path(directory)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise HistoryError(f"{out} exists and is not an empty directory; export to a new directory")
    if not out.parent.exists():
        raise HistoryError(f"cannot export to {out}: {out.parent} does not exist")
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        summary = _export_into(repo, tmp)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportSummary(out, *summary)


def _export_into(repo: Repository, tmp: Path) -> tuple[int, int, int]:
    experiments = repo.experiments()
    results = repo.results()
    # per benchmark: an A/A benchmark of an experiment measured A's version on both sides
    side_b = {
        (int(r.experiment_id), str(r.benchmark)): str(r.version_b)
        for r in results.itertuples(index=False)
    }
    rows = 0
    for e in experiments:
        df = repo.iterations(e.id)
        fps = dict(e.hosts)
        df = df.assign(
            experiment_id=e.id,
            version_a=e.version_a,
            version_b=[side_b.get((e.id, str(b)), e.version_b) for b in df["benchmark"]],
            host_fingerprint=df["host"].astype(str).map(fps),
        )
        _write(_arrow(df, ITERATION_COLUMNS), tmp / "iterations", f"experiment-{e.id}")
        rows += len(df)
    for name, df in (("results", results), ("run_values", repo.run_values())):
        if not df.empty:
            _write(_arrow(df, _typed(df)), tmp / name, "part")
    versions = pd.DataFrame(
        [(v.id, v.label, v.commit, v.commit_ns, v.first_seen_ns) for v in repo.versions()],
        columns=["id", "label", "commit", "commit_ns", "first_seen_ns"],
    )
    exps = pd.DataFrame(
        [
            (
                e.id,
                e.name,
                e.source,
                e.added_ns,
                e.started_ns,
                e.version_a,
                e.version_b,
                e.table_hash,
            )
            for e in experiments
        ],
        columns=[
            "id",
            "name",
            "source",
            "added_ns",
            "started_ns",
            "version_a",
            "version_b",
            "table_hash",
        ],
    )
    hosts = pd.DataFrame(
        [(h.id, h.fingerprint, json.dumps(dict(h.facts), default=str)) for h in repo.hosts()],
        columns=["id", "fingerprint", "facts"],
    )
    schemas = {
        "versions": {
            "id": pa.int64(),
            "label": pa.string(),
            "commit": pa.string(),
            "commit_ns": pa.int64(),
            "first_seen_ns": pa.int64(),
        },
        "experiments": {
            "id": pa.int64(),
            "name": pa.string(),
            "source": pa.string(),
            "added_ns": pa.int64(),
            "started_ns": pa.int64(),
            "version_a": pa.string(),
            "version_b": pa.string(),
            "table_hash": pa.string(),
        },
        "hosts": {"id": pa.int64(), "fingerprint": pa.string(), "facts": pa.string()},
    }
    for name, df in (("versions", versions), ("experiments", exps), ("hosts", hosts)):
        df = df.astype({c: "Int64" for c, t in schemas[name].items() if t == pa.int64()})
        _write(_arrow(df, schemas[name]), tmp / name, "part", partitioned=False)
    files = sum(1 for _ in tmp.rglob("*.parquet"))
    return len(experiments), rows, files


__all__ = ["ITERATION_COLUMNS", "ExportSummary", "export"]
