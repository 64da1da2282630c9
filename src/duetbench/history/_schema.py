"""The repository's tables, their versions and the migrations between them.

A new repository is made by applying schema 1 and then every migration in order,
so the path an old repository takes is the one every new repository has taken.
``schema_version`` holds one row per applied version; ``repository`` marks the
database as a duetbench results repository (so a foreign file is told apart).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from ._db import Database, HistoryError

FORMAT = "duetbench-history"
CURRENT_VERSION = 3
#: PostgreSQL advisory lock taken while creating or migrating (any constant unique to us)
_PG_LOCK = 0x6475_6574_6869

SCHEMA_1 = (
    "CREATE TABLE repository (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE schema_version (version INTEGER NOT NULL, applied_ns BIGINT NOT NULL)",
    """CREATE TABLE versions (
        id {pk}, label TEXT NOT NULL UNIQUE, commit_sha TEXT, commit_date TEXT,
        first_seen_ns BIGINT NOT NULL)""",
    """CREATE TABLE hosts (
        id {pk}, fingerprint TEXT NOT NULL UNIQUE, cpu_model TEXT, cores BIGINT,
        memory_bytes BIGINT, kernel TEXT, facts TEXT NOT NULL)""",
    """CREATE TABLE stored_tables (
        hash TEXT PRIMARY KEY, row_count BIGINT NOT NULL, byte_count BIGINT NOT NULL,
        stored_ns BIGINT NOT NULL)""",
    """CREATE TABLE table_data (
        hash TEXT PRIMARY KEY REFERENCES stored_tables(hash) ON DELETE CASCADE, data {blob} NOT NULL)""",
    """CREATE TABLE experiments (
        id {pk}, uid TEXT NOT NULL UNIQUE, name TEXT NOT NULL, source TEXT,
        started_ns BIGINT, added_ns BIGINT NOT NULL, seed BIGINT, tool_version TEXT,
        config TEXT, table_hash TEXT NOT NULL REFERENCES stored_tables(hash),
        settings TEXT NOT NULL, problems TEXT NOT NULL)""",
    """CREATE TABLE experiment_versions (
        experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        side TEXT NOT NULL, version_id BIGINT NOT NULL REFERENCES versions(id),
        PRIMARY KEY (experiment_id, side))""",
    """CREATE TABLE experiment_hosts (
        experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        host_name TEXT NOT NULL, host_id BIGINT NOT NULL REFERENCES hosts(id),
        PRIMARY KEY (experiment_id, host_name))""",
    """CREATE TABLE runs (
        experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        run_id TEXT NOT NULL, suite TEXT, benchmark TEXT, method TEXT, rep BIGINT,
        status TEXT, host_name TEXT, record TEXT NOT NULL, PRIMARY KEY (experiment_id, run_id))""",
    """CREATE TABLE results (
        id {pk}, experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        suite TEXT NOT NULL, benchmark TEXT NOT NULL, method TEXT NOT NULL,
        host_id BIGINT NOT NULL REFERENCES hosts(id),
        version_a BIGINT NOT NULL REFERENCES versions(id),
        version_b BIGINT NOT NULL REFERENCES versions(id),
        mean_a_ns DOUBLE PRECISION, mean_b_ns DOUBLE PRECISION, change DOUBLE PRECISION,
        ci_low DOUBLE PRECISION, ci_high DOUBLE PRECISION, p_value DOUBLE PRECISION,
        runs BIGINT NOT NULL, pairs BIGINT NOT NULL, verdict TEXT NOT NULL,
        level_a DOUBLE PRECISION, level_a_se DOUBLE PRECISION,
        level_b DOUBLE PRECISION, level_b_se DOUBLE PRECISION)""",
    """CREATE TABLE run_values (
        experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        suite TEXT NOT NULL, benchmark TEXT NOT NULL, method TEXT NOT NULL,
        host_id BIGINT NOT NULL REFERENCES hosts(id), host_name TEXT NOT NULL,
        run BIGINT NOT NULL, value DOUBLE PRECISION, pairs BIGINT NOT NULL,
        median_a_ns DOUBLE PRECISION, median_b_ns DOUBLE PRECISION)""",
    "CREATE INDEX results_series ON results (benchmark, suite, method, host_id)",
    "CREATE INDEX run_values_experiment ON run_values (experiment_id)",
)


def _migrate_1_to_2(db: Database) -> None:
    """Schema 2: commit dates as integer ns (not ISO text), and user marks."""
    db.execute("ALTER TABLE versions ADD COLUMN commit_ns BIGINT")
    for vid, text in db.all("SELECT id, commit_date FROM versions WHERE commit_date IS NOT NULL"):
        try:
            ns = int(datetime.fromisoformat(str(text)).timestamp() * 1e9)
        except ValueError:
            continue  # not a date: keep the text, leave commit_ns empty
        db.execute("UPDATE versions SET commit_ns = ? WHERE id = ?", (ns, vid))
    db.execute(
        """CREATE TABLE marks (
            id {pk}, benchmark TEXT NOT NULL, suite TEXT, method TEXT, host_fingerprint TEXT,
            version_id BIGINT NOT NULL REFERENCES versions(id), kind TEXT NOT NULL,
            note TEXT NOT NULL, created_ns BIGINT NOT NULL,
            CHECK (kind IN ('change', 'exclude')))"""
    )
    db.execute("CREATE INDEX marks_benchmark ON marks (benchmark)")


def _migrate_2_to_3(db: Database) -> None:
    """Schema 3: what a result's verdict rests on, so that change detection can accept a
    step on its own evidence (docs/history.md, "Change detection"): ``basis`` is ``rule``
    (an adaptive experiment's stopping rule: ``ci_low``/``ci_high`` are the interval it
    stopped on, ``stop_reason`` why it stopped) or ``fixed`` (a fixed-n verdict); ``confidence``
    and ``threshold`` are the verdict's. Rows added before stay NULL: they carry no
    evidence of their own and are re-tested from their runs, as before."""
    for column in (
        "basis TEXT",
        "stop_reason TEXT",
        "confidence DOUBLE PRECISION",
        "threshold DOUBLE PRECISION",
    ):
        db.execute(f"ALTER TABLE results ADD COLUMN {column}")


MIGRATIONS: dict[int, Callable[[Database], None]] = {2: _migrate_1_to_2, 3: _migrate_2_to_3}
OUR_TABLES = frozenset(
    {"repository", "schema_version", "versions", "hosts", "experiments", "results", "marks"}
)


def schema_version(db: Database) -> int | None:
    """The repository's schema version; None for an empty database; error for a foreign one."""
    tables = db.tables()
    if "repository" not in tables or "schema_version" not in tables:
        if tables:  # another program's database (PostgreSQL: its tables in our schema)
            raise _foreign(db, sorted(tables))
        return None
    row = db.one("SELECT value FROM repository WHERE key = 'format'")
    if row is None or row[0] != FORMAT:
        raise _foreign(db, sorted(tables))
    found = db.one("SELECT MAX(version) FROM schema_version")
    if found is None or found[0] is None:
        raise HistoryError(
            f"{db.location}: the repository has no schema version; it is damaged. "
            "Restore it from a copy"
        )
    return int(found[0])


def _foreign(db: Database, tables: list[str]) -> HistoryError:
    shown = ", ".join(tables[:6]) + (", ..." if len(tables) > 6 else "")
    where = (
        "Give a new file name (it is created)"
        if db.kind == "sqlite"
        else "Give an empty database, or a schema of its own (e.g. "
        "?options=-csearch_path%3Dduet in the URL, after CREATE SCHEMA duet),"
    )
    return HistoryError(
        f"{db.location} is not a duetbench results repository (it holds other tables: {shown}). "
        f"{where} or the repository `duet history add` made"
    )


def ensure_schema(db: Database, *, create: bool = True) -> int:
    """Create or migrate the schema to :data:`CURRENT_VERSION`; return the version found.

    ``create=False`` (the commands that only read): an empty database is refused, never
    made a repository."""
    found = schema_version(db)
    if found == CURRENT_VERSION:
        return found
    if found is None and not create:
        raise HistoryError(
            f"{db.location} holds no results repository yet (an empty database); "
            "`duet history add RESULTS --repo ...` creates one"
        )
    if found is not None and found > CURRENT_VERSION:
        raise _too_new(db, found)
    with db.transaction():
        if db.kind == "postgresql":
            db.execute("SELECT pg_advisory_xact_lock(?)", (_PG_LOCK,))
        found = schema_version(db)  # again, now that we hold the write lock
        if found is None:
            db.script(SCHEMA_1)
            db.execute("INSERT INTO repository (key, value) VALUES ('format', ?)", (FORMAT,))
            db.execute(
                "INSERT INTO repository (key, value) VALUES ('created_ns', ?)",
                (str(time.time_ns()),),
            )
            db.execute(
                "INSERT INTO schema_version (version, applied_ns) VALUES (1, ?)", (time.time_ns(),)
            )
            current = 1
        else:
            current = found
        if current > CURRENT_VERSION:
            raise _too_new(db, current)
        for version in range(current + 1, CURRENT_VERSION + 1):
            MIGRATIONS[version](db)
            db.execute(
                "INSERT INTO schema_version (version, applied_ns) VALUES (?, ?)",
                (version, time.time_ns()),
            )
    return 0 if found is None else found


def _too_new(db: Database, version: int) -> HistoryError:
    return HistoryError(
        f"{db.location} has schema version {version}, newer than this duetbench understands "
        f"({CURRENT_VERSION}); upgrade duetbench to use it"
    )
