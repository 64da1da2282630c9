"""Iterations tables as Parquet, stored once per content hash.

SQLite repository: files beside the database, ``<repository>-tables/<hh>/<sha256>.parquet``,
written to a temporary name, fsynced and renamed, before the transaction that
references them; a file left by a killed add is referenced by nothing and removed
by :meth:`Repository.collect_garbage`. PostgreSQL repository: the same bytes in the
``table_data`` table, inside the add's transaction, so that everyone who shares the
server can read them.
"""

from __future__ import annotations

import hashlib
import io
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..files import RESULT_FILE_MAX, read_bytes
from ..store import fsync_dir
from ._db import Database, HistoryError


@dataclass(frozen=True, eq=False)
class Blob:
    hash: str
    data: bytes
    rows: int


def encode(table: pd.DataFrame) -> Blob:
    """The table's Parquet bytes (zstd) and their SHA-256."""
    buf = io.BytesIO()
    table.reset_index(drop=True).to_parquet(buf, index=False, compression="zstd")
    data = buf.getvalue()
    return Blob(hashlib.sha256(data).hexdigest(), data, len(table))


class BlobStore:
    """Where a repository's Parquet files live (see the module doc)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.root: Path | None = None
        if db.kind == "sqlite" and db.location.path is not None:
            path = db.location.path
            self.root = path.with_name(path.name + "-tables")

    def path(self, digest: str) -> Path:
        assert self.root is not None
        return self.root / digest[:2] / f"{digest}.parquet"

    def put_file(self, blob: Blob) -> None:
        """Before the transaction (SQLite): write the file if it is not there, atomically."""
        if self.root is None:
            return
        try:
            self._put_file(blob)
        except OSError as exc:
            raise HistoryError(
                f"cannot store the iterations table in {self.root}: {exc.strerror or exc}"
                f" ({exc.filename}). The repository keeps its tables beside the database: "
                f"that directory must be a writable directory"
            ) from None

    def _put_file(self, blob: Blob) -> None:
        final = self.path(blob.hash)
        if final.exists():
            os.utime(final)  # fresh: garbage collection leaves young files alone
            return
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".tmp-{blob.hash}-{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(blob.data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
        fsync_dir(final.parent)

    def put_row(self, blob: Blob) -> None:
        """Inside the add's transaction: the table's row (and its bytes on PostgreSQL)."""
        self.db.execute(
            "INSERT INTO stored_tables (hash, row_count, byte_count, stored_ns) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (hash) DO NOTHING",
            (blob.hash, blob.rows, len(blob.data), time.time_ns()),
        )
        if self.root is None:
            self.db.execute(
                "INSERT INTO table_data (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING",
                (blob.hash, blob.data),
            )

    def read(self, digest: str) -> pd.DataFrame:
        if self.root is None:
            row = self.db.one("SELECT data FROM table_data WHERE hash = ?", (digest,))
            if row is None:
                raise HistoryError(f"{self.db.location}: the table {digest} is missing")
            data = bytes(row[0])
            where = f"{self.db.location} (table {digest[:12]})"
        else:
            path = self.path(digest)
            try:
                data = read_bytes(path, RESULT_FILE_MAX)
            except FileNotFoundError:
                raise HistoryError(
                    f"{path} is missing: the repository's Parquet files must stay beside it "
                    f"(copy {self.root} along with the database)"
                ) from None
            except OSError as exc:
                raise HistoryError(f"cannot read {path}: {exc.strerror or exc}") from None
            where = str(path)
        if hashlib.sha256(data).hexdigest() != digest:
            raise HistoryError(f"{where} is damaged: its content does not match its hash")
        return pd.read_parquet(io.BytesIO(data))

    def files(self) -> Iterator[Path]:
        if self.root is None or not self.root.exists():
            return iter(())
        return (p for p in self.root.glob("*/*") if p.is_file())

    def collect(self, referenced: set[str], min_age_s: float) -> list[Path]:
        """Remove files no table row references (or temporary leftovers) older than ``min_age_s``."""
        removed = []
        now = time.time()
        for p in self.files():
            digest = p.name.removesuffix(".parquet")
            if digest in referenced:
                continue
            try:
                if now - p.stat().st_mtime < min_age_s:
                    continue
                p.unlink()
            except FileNotFoundError:
                continue
            removed.append(p)
        return removed
