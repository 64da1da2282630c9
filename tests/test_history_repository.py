"""The results repository on SQLite and on a real PostgreSQL server: round trips, duplicate
adds, one stored copy per table, versions from git, damaged and foreign files, migration,
and the export that DuckDB reads."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import uuid
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from tests.helpers import run_duet
from tests.history_helpers import HOST, assert_same_table, sim_experiment, tiny_config
from tests.pg_server import fresh_database, postgres_server

from duetbench.dataset import open_dataset
from duetbench.history import HistoryError, Repository, Version, parse_versions, version_from_git
from duetbench.history._schema import CURRENT_VERSION
from duetbench.history.export import export
from duetbench.options import CompareOptions
from duetbench.process import process
from duetbench.verdicts import verdicts


@pytest.fixture(scope="module")
def pg_server():
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def repo_url(request, tmp_path: Path) -> str:
    """A new, empty repository of each kind."""
    if request.param == "sqlite":
        return str(tmp_path / "perf repo.sqlite")  # a space, as users have them
    server = request.getfixturevalue("pg_server")
    return fresh_database(server, "t_" + uuid.uuid4().hex[:12])


#: every run of the tiny experiment (its CPU-bound sides may be unbalanced on a busy machine)
KEEP = CompareOptions(keep_unbalanced=True)


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory) -> Path:
    """A real `duet run` experiment: an A/A benchmark and an A/B one, 3 aduet runs each."""
    d = tmp_path_factory.mktemp("tiny")
    r = run_duet("run", str(tiny_config(d)), "-o", str(d / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    return d / "res" / "tiny"


def test_results_directory_round_trip(repo_url: str, tiny_results: Path) -> None:
    with Repository.open(repo_url) as repo:
        added = repo.add(tiny_results, parse_versions(["A=v1.3", "B=v1.4"]), options=KEEP)
    with Repository.open(repo_url, create=False) as repo:  # everything is read back, not cached
        (e,) = repo.experiments()
        assert (e.id, e.name, e.version_a, e.version_b) == (added.id, "tiny", "v1.3", "v1.4")
        assert e.source == str(tiny_results.resolve())
        assert [v.label for v in repo.versions()] == ["v1.3", "v1.4"]
        (host,) = repo.hosts()
        record = json.loads(next((tiny_results / "hosts").glob("*.json")).read_text())
        facts = dict(host.facts)
        assert facts["cpu_model"] == record["cpu_model"] and facts["cores"] == record["cores"]
        assert facts["kernel"] == record["kernel"]
        assert (
            "host" not in facts and "detected_ns" not in facts
        )  # stable across identical machines
        runs = repo.runs(e.id)
        assert sorted(r["run_id"] for r in runs) == sorted(
            p.name for p in (tiny_results / "runs").iterdir() if not p.name.startswith(".")
        )
        assert repo.config(e.id)["name"] == "tiny"
        res = repo.results().set_index("benchmark")
        assert res.loc["same", "version_b"] == "v1.3"  # A/A: both sides ran A's version
        assert res.loc["ab", "version_b"] == "v1.4"
        # the stored verdict is every command's (`duet compare --keep-unbalanced`'s)
        shown = verdicts(open_dataset(tiny_results), CompareOptions(seed=3, keep_unbalanced=True))
        want = shown.rows.set_index("benchmark").loc["ab"]
        for col in ("change", "ci_low", "ci_high", "p_value"):
            assert res.loc["ab", col] == pytest.approx(want[col], rel=1e-9), col
        assert res.loc["ab", "verdict"] == want["verdict"]
        values = repo.run_values(e.id)
        ab = values[values["benchmark"] == "ab"]
        assert len(ab) == 3  # one per run, and their mean is the estimate
        assert np.expm1(ab["value"].mean()) == pytest.approx(want["change"], rel=1e-9)
        assert_same_table(repo.iterations(e.id), process(tiny_results).table)


def test_adding_the_same_results_twice_is_refused(repo_url: str, tiny_results: Path) -> None:
    with Repository.open(repo_url) as repo:
        repo.add(tiny_results, "v1")
        with pytest.raises(HistoryError, match="already in the repository.*nothing was added"):
            repo.add(tiny_results, {"A": Version("v7"), "B": Version("v8")})
        table = sim_experiment(1)
        repo.add(table, "v2", host_records={"ci-1": HOST})
        with pytest.raises(HistoryError, match="already in the repository"):
            repo.add(table.copy(), "v3", host_records={"ci-1": HOST})
        assert len(repo.experiments()) == 2
        assert [v.label for v in repo.versions()] == ["v1", "v2"]


def test_the_same_table_is_stored_once(tmp_path: Path, tiny_results: Path) -> None:
    again = tmp_path / "again"
    shutil.copytree(tiny_results, again)
    meta = json.loads((again / "experiment.json").read_text())
    meta["started_ns"] += 1  # another experiment (as far as identity goes) with the same data
    (again / "experiment.json").write_text(json.dumps(meta))
    with Repository.open(tmp_path / "r.sqlite") as repo:
        a = repo.add(tiny_results, "v1")
        b = repo.add(again, "v2")
        assert a.table_hash == b.table_hash
        assert len(list((tmp_path / "r.sqlite-tables").rglob("*.parquet"))) == 1
        assert repo.db.one("SELECT COUNT(*) FROM stored_tables")[0] == 1


def test_versions_from_labels_and_git(tmp_path: Path) -> None:
    assert parse_versions(["v2"]) == {"A": Version("v2"), "B": Version("v2")}
    assert parse_versions(["A=v1", "B=v2"])["B"] == Version("v2")
    for bad in (["C=v1"], ["A=v1", "A=v2"], ["A=v1", "v2"], ["A="]):
        with pytest.raises(HistoryError):
            parse_versions(bad)
    src = tmp_path / "src tree"
    src.mkdir()
    env = {"GIT_AUTHOR_DATE": "2024-03-01T12:00:00Z", "GIT_COMMITTER_DATE": "2024-03-01T12:00:00Z"}

    def git(*a: str) -> str:
        full = {**__import__("os").environ, **env}
        return subprocess.run(
            ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t", *a],
            check=True,
            capture_output=True,
            text=True,
            env=full,
        ).stdout.strip()

    git("init", "-q")
    (src / "f").write_text("1")
    git("add", "f")
    git("commit", "-qm", "one")
    git("tag", "v1.0")
    v = version_from_git(src)
    assert v.label == "v1.0" and v.commit == git("rev-parse", "HEAD")
    assert v.commit_ns == 1709294400 * 10**9
    assert version_from_git(src, label="mine").label == "mine"
    with pytest.raises(HistoryError, match="cannot read the version"):
        version_from_git(tmp_path)  # not a checkout
    with Repository.open(tmp_path / "r.sqlite") as repo:
        repo.add(sim_experiment(1), v, host_records={"ci-1": HOST})
        stored = repo.versions()[0]
        assert (stored.commit, stored.commit_ns) == (v.commit, v.commit_ns)
        other = Version("v1.0", commit="f" * 40)
        with pytest.raises(HistoryError, match="is commit .* another label"):
            repo.add(sim_experiment(2), other, host_records={"ci-1": HOST})
        assert len(repo.experiments()) == 1  # the refused add left nothing


def test_damaged_and_foreign_files_give_clear_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database at all\n" * 100)
    with pytest.raises(HistoryError, match="not a duetbench results repository"):
        Repository.open(garbage)
    foreign = tmp_path / "other.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    with pytest.raises(HistoryError, match="holds other tables: customers"):
        Repository.open(foreign)
    with pytest.raises(HistoryError, match="does not exist"):
        Repository.open(tmp_path / "missing.sqlite", create=False)
    with pytest.raises(HistoryError, match="directory"):
        Repository.open(tmp_path)
    newer = tmp_path / "newer.sqlite"
    Repository.open(newer).close()
    with sqlite3.connect(newer) as conn:
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (CURRENT_VERSION + 1,))
    with pytest.raises(HistoryError, match="newer than this duetbench"):
        Repository.open(newer)
    # a repository whose pages were overwritten
    damaged = tmp_path / "damaged.sqlite"
    with Repository.open(damaged) as repo:
        repo.add(sim_experiment(1), "v1", host_records={"ci-1": HOST})
    with sqlite3.connect(damaged) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(damaged.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)
    damaged.write_bytes(bytes(data))
    with pytest.raises(HistoryError, match="damaged|not a duetbench results repository"):
        with Repository.open(damaged) as repo:
            repo.summary()
            repo.results()


def test_a_missing_or_altered_parquet_file_is_named(tmp_path: Path) -> None:
    with Repository.open(tmp_path / "r.sqlite") as repo:
        e = repo.add(sim_experiment(1), "v1", host_records={"ci-1": HOST})
        (path,) = (tmp_path / "r.sqlite-tables").rglob("*.parquet")
        path.write_bytes(path.read_bytes()[:-10] + b"0123456789")
        with pytest.raises(HistoryError, match="damaged: its content does not match"):
            repo.iterations(e.id)
        path.unlink()
        with pytest.raises(HistoryError, match="is missing"):
            repo.iterations(e.id)


SCHEMA_V1 = [
    "CREATE TABLE repository (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE schema_version (version INTEGER NOT NULL, applied_ns BIGINT NOT NULL)",
    "CREATE TABLE versions (id INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL UNIQUE, "
    "commit_sha TEXT, commit_date TEXT, first_seen_ns BIGINT NOT NULL)",
    "CREATE TABLE hosts (id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL UNIQUE, "
    "cpu_model TEXT, cores BIGINT, memory_bytes BIGINT, kernel TEXT, facts TEXT NOT NULL)",
    "CREATE TABLE stored_tables (hash TEXT PRIMARY KEY, row_count BIGINT NOT NULL, "
    "byte_count BIGINT NOT NULL, stored_ns BIGINT NOT NULL)",
    "CREATE TABLE table_data (hash TEXT PRIMARY KEY REFERENCES stored_tables(hash) "
    "ON DELETE CASCADE, data BLOB NOT NULL)",
    "CREATE TABLE experiments (id INTEGER PRIMARY KEY AUTOINCREMENT, uid TEXT NOT NULL UNIQUE, "
    "name TEXT NOT NULL, source TEXT, started_ns BIGINT, added_ns BIGINT NOT NULL, seed BIGINT, "
    "tool_version TEXT, config TEXT, table_hash TEXT NOT NULL REFERENCES stored_tables(hash), "
    "settings TEXT NOT NULL, problems TEXT NOT NULL)",
    "CREATE TABLE experiment_versions (experiment_id BIGINT NOT NULL REFERENCES experiments(id) "
    "ON DELETE CASCADE, side TEXT NOT NULL, version_id BIGINT NOT NULL REFERENCES versions(id), "
    "PRIMARY KEY (experiment_id, side))",
    "CREATE TABLE experiment_hosts (experiment_id BIGINT NOT NULL REFERENCES experiments(id) "
    "ON DELETE CASCADE, host_name TEXT NOT NULL, host_id BIGINT NOT NULL REFERENCES hosts(id), "
    "PRIMARY KEY (experiment_id, host_name))",
    "CREATE TABLE runs (experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE "
    "CASCADE, run_id TEXT NOT NULL, suite TEXT, benchmark TEXT, method TEXT, rep BIGINT, "
    "status TEXT, host_name TEXT, record TEXT NOT NULL, PRIMARY KEY (experiment_id, run_id))",
    "CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, experiment_id BIGINT NOT NULL "
    "REFERENCES experiments(id) ON DELETE CASCADE, suite TEXT NOT NULL, benchmark TEXT NOT NULL, "
    "method TEXT NOT NULL, host_id BIGINT NOT NULL REFERENCES hosts(id), version_a BIGINT NOT "
    "NULL REFERENCES versions(id), version_b BIGINT NOT NULL REFERENCES versions(id), mean_a_ns "
    "DOUBLE PRECISION, mean_b_ns DOUBLE PRECISION, change DOUBLE PRECISION, ci_low DOUBLE "
    "PRECISION, ci_high DOUBLE PRECISION, p_value DOUBLE PRECISION, runs BIGINT NOT NULL, pairs "
    "BIGINT NOT NULL, verdict TEXT NOT NULL, level_a DOUBLE PRECISION, level_a_se DOUBLE "
    "PRECISION, level_b DOUBLE PRECISION, level_b_se DOUBLE PRECISION)",
    "CREATE TABLE run_values (experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE "
    "CASCADE, suite TEXT NOT NULL, benchmark TEXT NOT NULL, method TEXT NOT NULL, host_id BIGINT "
    "NOT NULL REFERENCES hosts(id), host_name TEXT NOT NULL, run BIGINT NOT NULL, value DOUBLE "
    "PRECISION, pairs BIGINT NOT NULL, median_a_ns DOUBLE PRECISION, median_b_ns DOUBLE PRECISION)",
    "INSERT INTO repository VALUES ('format', 'duetbench-history')",
    "INSERT INTO schema_version VALUES (1, 1)",
    "INSERT INTO versions (label, commit_sha, commit_date, first_seen_ns) "
    "VALUES ('v1.0', 'abc123', '2024-03-01T12:00:00+00:00', 5)",
    "INSERT INTO versions (label, commit_sha, commit_date, first_seen_ns) "
    "VALUES ('v1.1', NULL, NULL, 6)",
]


def test_a_schema_1_repository_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        for statement in SCHEMA_V1:
            conn.execute(statement)
    with Repository.open(path) as repo:
        versions = {v.label: v for v in repo.versions()}
        assert versions["v1.0"].commit_ns == 1709294400 * 10**9  # ISO text became ns
        assert versions["v1.1"].commit_ns is None
        assert [r[0] for r in repo.db.all("SELECT version FROM schema_version ORDER BY 1")] == [
            1,
            2,
            3,
        ]
        repo.add(
            sim_experiment(1),
            {"A": Version("v1.0"), "B": Version("v1.1")},
            host_records={"ci-1": HOST},
        )
        mark = repo.mark("parse", "v1.1", "exclude", "flaky build")  # the table schema 2 added
        assert repo.marks() == [mark]
        # schema 3: what the verdict rests on (a table's: a fixed-n verdict at 95 %)
        (row,) = repo.results().to_dict("records")
        assert (row["basis"], row["stop_reason"], row["confidence"]) == ("fixed", None, 0.95)
    with Repository.open(path) as repo:  # opening again migrates nothing
        assert repo.db.one("SELECT COUNT(*) FROM schema_version")[0] == 3


def test_a_schema_2_repository_keeps_its_results_without_evidence(
    repo_url: str, tmp_path: Path
) -> None:
    """A repository of schema 2 (SQLite and PostgreSQL) gains the evidence columns; its
    rows keep them empty, so change detection re-tests them from their runs as before."""
    with Repository.open(repo_url) as repo:
        repo.add(sim_experiment(1), {"A": Version("v1"), "B": Version("v2")})
        with repo.db.transaction():  # back to schema 2, as an older duetbench left it
            for column in ("basis", "stop_reason", "confidence", "threshold"):
                repo.db.execute(f"ALTER TABLE results DROP COLUMN {column}")
            repo.db.execute("DELETE FROM schema_version WHERE version = 3")
    with Repository.open(repo_url) as repo:
        versions = repo.db.all("SELECT version FROM schema_version ORDER BY 1")
        assert [r[0] for r in versions] == [1, 2, 3]
        (old,) = repo.results().to_dict("records")
        assert old["basis"] is None and np.isnan(old["confidence"])
        assert old["verdict"] and np.isfinite(old["ci_low"])  # the rest is kept
        repo.add(sim_experiment(2, slowdown=0.05), {"A": Version("v2"), "B": Version("v3")})
        new = repo.results().set_index("version_b").loc["v3"]
        assert (new["basis"], new["verdict"], new["threshold"]) == ("fixed", "slower", 0.0)


def test_export_reads_back_in_duckdb(repo_url: str, tmp_path: Path) -> None:
    with Repository.open(repo_url) as repo:
        for i in range(3):
            repo.add(
                sim_experiment(i, benchmarks=("parse large", "json/dump:x")),
                {"A": Version(f"v{i}"), "B": Version(f"v{i + 1}")},
                host_records={"ci-1": HOST},
            )
        out = tmp_path / "export dir"
        summary = export(repo, out)
        with pytest.raises(HistoryError, match="not an empty directory"):
            export(repo, out)
        tables = pd.concat([repo.iterations(e.id) for e in repo.experiments()])
        results = repo.results()
    assert summary.experiments == 3 and summary.iterations == len(tables)
    assert not list(tmp_path.glob(".export dir.tmp-*"))
    got = duckdb.sql(
        f"SELECT benchmark, suite, version_b, COUNT(*) AS n, SUM(duration_ns) AS total "
        f"FROM read_parquet('{out}/iterations/**/*.parquet', hive_partitioning = true) "
        "GROUP BY ALL ORDER BY benchmark, version_b"
    ).df()
    want = (
        tables.assign(
            version_b=tables["experiment"]
            .str.replace("sim-", "v")
            .map(lambda s: f"v{int(s[1:]) + 1}")
        )
        .groupby(["benchmark", "suite", "version_b"], as_index=False)
        .agg(n=("duration_ns", "size"), total=("duration_ns", "sum"))
        .sort_values(["benchmark", "version_b"])
        .reset_index(drop=True)
    )
    assert got["benchmark"].tolist() == want["benchmark"].tolist()  # names survive encoding
    assert got["n"].tolist() == want["n"].tolist()
    assert got["total"].astype("int64").tolist() == want["total"].tolist()
    back = duckdb.sql(
        f"SELECT * FROM read_parquet('{out}/results/**/*.parquet', hive_partitioning = true) "
        "ORDER BY experiment_id, benchmark"
    ).df()
    results = results.sort_values(["experiment_id", "benchmark"]).reset_index(drop=True)
    for col in ("change", "ci_low", "ci_high", "verdict", "version_a", "version_b", "host"):
        assert back[col].tolist() == results[col].tolist(), col
    labels = duckdb.sql(f"SELECT label FROM read_parquet('{out}/versions/*.parquet') ORDER BY id")
    assert [r[0] for r in labels.fetchall()] == ["v0", "v1", "v2", "v3"]


def test_remove_and_collect_garbage(tmp_path: Path) -> None:
    with Repository.open(tmp_path / "r.sqlite") as repo:
        a = repo.add(sim_experiment(1), "v1", host_records={"ci-1": HOST})
        b = repo.add(sim_experiment(2), "v2", host_records={"ci-1": HOST})
        orphan = tmp_path / "r.sqlite-tables" / "00" / ("0" * 64 + ".parquet")
        orphan.parent.mkdir()
        orphan.write_bytes(b"left by a killed add")
        assert repo.collect_garbage(min_age_s=3600) == []  # young files are left alone
        repo.remove(a.id)
        removed = repo.collect_garbage(min_age_s=0)
        assert sorted(Path(p).name for p in removed) == sorted(
            [orphan.name, f"{a.table_hash}.parquet"]
        )
        assert [e.id for e in repo.experiments()] == [b.id]
        assert len(repo.iterations(b.id)) > 0
        with pytest.raises(HistoryError, match="no experiment #"):
            repo.remove(a.id)


@pytest.mark.parametrize(
    ("given", "shown", "secret"),
    [
        ("postgresql://u:Pw1@h:5432/db", "postgresql://u:***@h:5432/db", "Pw1"),
        ("postgres://u:p%40w@h/db?sslmode=require", "postgres://u:***@h/db?sslmode=require", "p@w"),
        (
            "postgresql://u@h/db?password=Pw1&host=/s",
            "postgresql://u@h/db?password=***&host=/s",
            "Pw1",
        ),
        ("postgresql://u@h/db?PassWord=Pw1", "postgresql://u@h/db?PassWord=***", "Pw1"),
        ("postgresql://u@h/db?pass%77ord=Pw1", "postgresql://u@h/db?pass%77ord=***", "Pw1"),
        ("postgresql://u@h/db?sslpassword=Pw1", "postgresql://u@h/db?sslpassword=***", "Pw1"),
        ("host=h dbname=db password=Pw1", "host=h dbname=db password=***", "Pw1"),
        ("host=h password = 'P w\\' x' dbname=db", "host=h password = *** dbname=db", "P w' x"),
        ("host=h dbname=db password='Pw1", "host=h dbname=db password=***", "Pw1"),
        ("host=h dbname=db password Pw1", "host=h dbname=db password***", "Pw1"),
    ],
)
def test_every_libpq_password_form_is_hidden(given: str, shown: str, secret: str) -> None:
    from duetbench.history._db import Location

    loc = Location.parse(given)
    assert loc.kind == "postgresql" and str(loc) == shown
    assert secret not in loc.scrub(f"cannot use {given!r}: bad value {secret!r}")


def test_a_file_named_like_a_setting_is_still_a_file() -> None:
    from duetbench.history._db import Location

    assert Location.parse("perf=1.sqlite").kind == "sqlite"
    assert Location.parse("sqlite:host=x").kind == "sqlite"
    assert Location.parse("host=db dbname=perf").name == "perf"
    assert Location.parse("postgresql://u@h/perf%20db?x=1").name == "perf db"
