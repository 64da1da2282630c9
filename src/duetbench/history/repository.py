"""The results repository: experiments across versions, in SQLite or PostgreSQL.

``Repository.open("perf.sqlite")`` (a file, created when missing) or
``Repository.open("postgresql://user@host/db")``. Schema and guarantees:
docs/history.md, "The repository".
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd

from ..analysis.compare import CompareOptions
from . import _writer
from ._blobs import BlobStore
from ._db import Database, HistoryError, Location, guard
from ._schema import ensure_schema
from .imported import ImportedRun
from .model import ExperimentInfo, HostInfo, Mark, StoredVersion, Summary
from .versions import Version, refuse_control_characters

MARK_KINDS = ("change", "exclude")


class Filters(TypedDict, total=False):
    """What :meth:`Repository.results` selects, and with it the series, changes and
    priors read from it: an exact ``benchmark``, ``suite`` and ``method``; ``host``: a
    fingerprint prefix. A filter left out (or None) selects all."""

    benchmark: str | None
    suite: str | None
    method: str | None
    host: str | None


class Repository:
    """A results repository (see the module doc). Use as a context manager or call close()."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.blobs = BlobStore(db)

    @classmethod
    def open(cls, location: str | Path, *, create: bool = True) -> Repository:
        """Open the repository at ``location``; ``create=False`` (a command that only
        reads): one that does not exist yet is an error, and nothing is written."""
        loc = Location.parse(location)
        if loc.kind == "sqlite" and not create and not _exists(loc.path):  # type: ignore[arg-type]
            raise HistoryError(
                f"{loc.path} does not exist; add an experiment to create it "
                "(duet history add RESULTS --repo FILE)"
            )
        db = Database(loc, create=create)
        try:
            with guard(db):
                ensure_schema(db, create=create)
        except BaseException:
            db.close()
            raise
        return cls(db)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def location(self) -> str:
        """Where the repository is, to show (a PostgreSQL password never appears)."""
        return str(self.db.location)

    @property
    def name(self) -> str:
        """The SQLite file's name or the PostgreSQL database's."""
        return self.db.location.name

    # ------------------------------------------------------------------ adding
    def add(
        self,
        source: str | Path | pd.DataFrame,
        versions: Mapping[str, Version] | Version | str,
        *,
        options: CompareOptions | None = None,
        name: str | None = None,
        host_records: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> ExperimentInfo:
        """Add a results directory (or an iterations table) as one experiment, in one
        transaction. ``versions``: the version of side A and of side B (one version: both).
        Refuses an experiment that is already in the repository (history/_writer.py)."""
        eid = _writer.add(
            self.db,
            self.blobs,
            source,
            versions,
            options=options,
            name=name,
            host_records=host_records,
        )
        return self.experiment(eid)

    def add_imported(self, run: ImportedRun) -> ExperimentInfo:
        """Add a run another tool measured (history/importers.py) as one experiment of one
        version (A = B) whose rows are points of the absolute series: no paired step, no
        run values (docs/history.md, "Importing other tools' results")."""
        return self.experiment(_writer.add_imported(self.db, self.blobs, run))

    def remove(self, experiment_id: int) -> None:
        """Remove an experiment (its Parquet table stays until :meth:`collect_garbage`)."""
        with guard(self.db), self.db.transaction():
            if self.db.one("SELECT id FROM experiments WHERE id = ?", (experiment_id,)) is None:
                raise HistoryError(f"there is no experiment #{experiment_id} in {self.location}")
            self.db.execute("DELETE FROM experiments WHERE id = ?", (experiment_id,))

    def collect_garbage(self, min_age_s: float = 3600.0) -> list[str]:
        """Drop tables no experiment uses and Parquet files no table row names (files younger
        than ``min_age_s`` are left: an add running now may be about to reference them).
        Returns the files removed (SQLite), or the hashes of the tables (PostgreSQL)."""
        unused = (
            "SELECT hash FROM stored_tables WHERE hash NOT IN (SELECT table_hash FROM experiments)"
        )
        with guard(self.db), self.db.transaction():
            dropped = [str(r[0]) for r in self.db.all(unused)]
            self.db.execute(f"DELETE FROM stored_tables WHERE hash IN ({unused})")
        with guard(self.db):
            referenced = {str(r[0]) for r in self.db.all("SELECT hash FROM stored_tables")}
        files = [str(p) for p in self.blobs.collect(referenced, min_age_s)]
        return files if self.db.kind == "sqlite" else dropped

    # ------------------------------------------------------------------ reading
    def versions(self) -> list[StoredVersion]:
        with guard(self.db):
            rows = self.db.all(
                "SELECT id, label, commit_sha, commit_ns, first_seen_ns FROM versions ORDER BY id"
            )
        return [StoredVersion(int(r[0]), r[1], r[2], r[3], int(r[4])) for r in rows]

    def hosts(self) -> list[HostInfo]:
        with guard(self.db):
            rows = self.db.all("SELECT id, fingerprint, facts FROM hosts ORDER BY id")
        return [HostInfo(int(r[0]), r[1], tuple(sorted(json.loads(r[2]).items()))) for r in rows]

    def experiments(self) -> list[ExperimentInfo]:
        with guard(self.db):
            rows = self.db.all(
                "SELECT e.id, e.uid, e.name, e.source, e.added_ns, e.started_ns, va.label, "
                "vb.label, e.table_hash FROM experiments e "
                "JOIN experiment_versions xa ON xa.experiment_id = e.id AND xa.side = 'A' "
                "JOIN versions va ON va.id = xa.version_id "
                "JOIN experiment_versions xb ON xb.experiment_id = e.id AND xb.side = 'B' "
                "JOIN versions vb ON vb.id = xb.version_id ORDER BY e.id"
            )
            hosts = self.db.all(
                "SELECT x.experiment_id, x.host_name, h.fingerprint FROM experiment_hosts x "
                "JOIN hosts h ON h.id = x.host_id ORDER BY x.experiment_id, x.host_name"
            )
        by_exp: dict[int, list[tuple[str, str]]] = {}
        for eid, name, fp in hosts:
            by_exp.setdefault(int(eid), []).append((name, fp))
        return [
            ExperimentInfo(
                int(r[0]),
                r[1],
                r[2],
                r[3],
                int(r[4]),
                r[5],
                r[6],
                r[7],
                r[8],
                tuple(by_exp.get(int(r[0]), ())),
            )
            for r in rows
        ]

    def experiment(self, experiment_id: int) -> ExperimentInfo:
        for e in self.experiments():
            if e.id == experiment_id:
                return e
        raise HistoryError(f"there is no experiment #{experiment_id} in {self.location}")

    def benchmarks(self) -> list[tuple[str, str]]:
        with guard(self.db):
            rows = self.db.all(
                "SELECT DISTINCT suite, benchmark FROM results ORDER BY suite, benchmark"
            )
        return [(str(r[0]), str(r[1])) for r in rows]

    def summary(self) -> Summary:
        return Summary(
            tuple(self.versions()),
            tuple(self.experiments()),
            tuple(self.hosts()),
            tuple(self.benchmarks()),
        )

    def results(
        self,
        *,
        benchmark: str | None = None,
        suite: str | None = None,
        method: str | None = None,
        host: str | None = None,
    ) -> pd.DataFrame:
        """The compare rows of every experiment, with version labels, commits and host
        fingerprints (filters: exact benchmark, suite, method; host = fingerprint prefix)."""
        where, params = _filters("r", benchmark=benchmark, suite=suite, method=method)
        if host:
            where.append("h.fingerprint LIKE ?")
            params.append(host + "%")
        sql = (
            "SELECT r.experiment_id, e.added_ns, r.suite, r.benchmark, r.method, "
            "h.fingerprint AS host, va.label AS version_a, vb.label AS version_b, "
            "r.mean_a_ns, r.mean_b_ns, r.change, r.ci_low, r.ci_high, r.p_value, r.runs, r.pairs, "
            "r.verdict, r.level_a, r.level_a_se, r.level_b, r.level_b_se, r.basis, r.stop_reason, "
            "r.confidence, r.threshold "
            "FROM results r JOIN experiments e ON e.id = r.experiment_id "
            "JOIN hosts h ON h.id = r.host_id "
            "JOIN versions va ON va.id = r.version_a JOIN versions vb ON vb.id = r.version_b"
            + _where(where)
            + " ORDER BY r.experiment_id, r.suite, r.benchmark, r.method, h.fingerprint"
        )
        out = self._frame(sql, params)
        for c in ("confidence", "threshold"):  # NULL before schema 3: still a number column
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        return out

    def run_values(self, experiment_id: int | None = None) -> pd.DataFrame:
        """The run-level values (log of B/A per run, pairs, each side's median) of the
        experiments (one experiment, or all)."""
        sql = (
            "SELECT v.experiment_id, v.suite, v.benchmark, v.method, h.fingerprint AS host, "
            "v.host_name, v.run, v.value, v.pairs, v.median_a_ns, v.median_b_ns "
            "FROM run_values v JOIN hosts h ON h.id = v.host_id"
        )
        where, params = _filters("v", experiment_id=experiment_id)
        sql += _where(where)
        sql += " ORDER BY v.experiment_id, v.suite, v.benchmark, v.method, h.fingerprint, v.run"
        return self._frame(sql, params)

    def _frame(self, sql: str, params: list[Any]) -> pd.DataFrame:
        """The rows of a query, a column per selected name."""
        with guard(self.db):
            cur = self.db.execute(sql, params)
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        return pd.DataFrame([tuple(r) for r in rows], columns=names)

    def runs(self, experiment_id: int) -> list[dict[str, Any]]:
        """The run records (run.json) of an experiment."""
        with guard(self.db):
            rows = self.db.all(
                "SELECT record FROM runs WHERE experiment_id = ? ORDER BY run_id", (experiment_id,)
            )
        return [json.loads(r[0]) for r in rows]

    def config(self, experiment_id: int) -> dict[str, Any] | None:
        with guard(self.db):
            row = self.db.one("SELECT config FROM experiments WHERE id = ?", (experiment_id,))
        if row is None:
            raise HistoryError(f"there is no experiment #{experiment_id} in {self.location}")
        return None if row[0] is None else json.loads(row[0])

    def iterations(self, experiment_id: int) -> pd.DataFrame:
        """The raw iterations table of an experiment, as it was added."""
        digest = self.experiment(experiment_id).table_hash
        with guard(self.db):
            return self.blobs.read(digest)

    # ------------------------------------------------------------------ marks
    def mark(
        self,
        benchmark: str,
        version: str,
        kind: str,
        note: str,
        *,
        suite: str | None = None,
        method: str | None = None,
        host: str | None = None,
    ) -> Mark:
        """Mark a version of a benchmark: ``change`` (a change starts here, whatever the
        detection says) or ``exclude`` (leave this version out of the series)."""
        if kind not in MARK_KINDS:
            raise HistoryError(f"mark kind must be 'change' or 'exclude', got {kind!r}")
        if not note.strip():
            raise HistoryError("a mark needs a note saying why (e.g. --note 'new compiler')")
        refuse_control_characters("the mark's note", note.replace("\n", " "))
        with guard(self.db), self.db.transaction():
            row = self.db.one("SELECT id FROM versions WHERE label = ?", (version,))
            if row is None:
                raise HistoryError(
                    f"version '{version}' is not in {self.location}; `duet history list` shows "
                    "the versions it has"
                )
            found = self.db.one("SELECT COUNT(*) FROM results WHERE benchmark = ?", (benchmark,))
            if not found or not found[0]:
                raise HistoryError(
                    f"benchmark '{benchmark}' is not in {self.location}; `duet history list` "
                    "shows the benchmarks it has"
                )
            created = time.time_ns()
            new = self.db.one(
                "INSERT INTO marks (benchmark, suite, method, host_fingerprint, version_id, kind, "
                "note, created_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (benchmark, suite, method, host, int(row[0]), kind, note, created),
            )
        assert new is not None
        return Mark(int(new[0]), benchmark, version, kind, note, suite, method, host, created)

    def marks(self, benchmark: str | None = None) -> list[Mark]:
        sql = (
            "SELECT m.id, m.benchmark, v.label, m.kind, m.note, m.suite, m.method, "
            "m.host_fingerprint, m.created_ns FROM marks m JOIN versions v ON v.id = m.version_id"
        )
        where, params = _filters("m", benchmark=benchmark)
        with guard(self.db):
            rows = self.db.all(sql + _where(where) + " ORDER BY m.id", params)
        return [Mark(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7], int(r[8])) for r in rows]

    def unmark(self, mark_id: int) -> None:
        with guard(self.db), self.db.transaction():
            if self.db.one("SELECT id FROM marks WHERE id = ?", (mark_id,)) is None:
                raise HistoryError(f"there is no mark #{mark_id} in {self.location}")
            self.db.execute("DELETE FROM marks WHERE id = ?", (mark_id,))


def _filters(alias: str, **kw: Any) -> tuple[list[str], list[Any]]:
    """The conditions ``alias.column = ?`` of the given (not None) values, and the values."""
    where, params = [], []
    for col, val in kw.items():
        if val is not None:
            where.append(f"{alias}.{col} = ?")
            params.append(val)
    return where, params


def _where(conditions: list[str]) -> str:
    return " WHERE " + " AND ".join(conditions) if conditions else ""


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError as exc:  # a name too long, a loop of links
        raise HistoryError(f"cannot use {path} as the repository: {exc.strerror or exc}") from None
