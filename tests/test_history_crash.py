"""An add killed with SIGKILL at any moment leaves the repository as before or with the
experiment fully added; concurrent adds all land (SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.history_helpers import HOST, tables, wait_for
from tests.pg_server import fresh_database, postgres_server

from duetbench.history import Repository
from duetbench.history._writer import HOOK_DIR_ENV, HOOK_STEP_ENV

ADD = """
import json, sys
from duetbench.history import Repository
host = json.loads(sys.argv[4])
with Repository.open(sys.argv[1]) as repo:
    repo.add(sys.argv[2], sys.argv[3], host_records={"ci-1": host})
"""
STEPS = ("analysed", "table-written", "inserting", "before-commit")
DEADLINE_S = 120  # only catches hangs


@pytest.fixture(scope="module")
def pg_server():
    with postgres_server() as url:
        yield url


def start_add(url: str, table: Path, version: str, hooks: dict[str, str] | None = None):
    env = {**os.environ, **(hooks or {})}
    return subprocess.Popen(
        [sys.executable, "-c", ADD, url, str(table), version, __import__("json").dumps(HOST)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def snapshot(url: str) -> dict[str, int]:
    with Repository.open(url) as repo:
        counts = {
            t: repo.db.one(f"SELECT COUNT(*) FROM {t}")[0]
            for t in ("experiments", "versions", "results", "run_values", "stored_tables")
        }
        for e in repo.experiments():
            assert len(repo.iterations(e.id)) > 0  # every experiment is readable in full
    return counts


@pytest.mark.parametrize("step", STEPS)
def test_sigkill_at_each_step_leaves_the_repository_as_before(tmp_path: Path, step: str) -> None:
    url = str(tmp_path / "r.sqlite")
    first, second = tables(tmp_path, 2)
    done = start_add(url, first, "v1")
    assert done.wait(DEADLINE_S) == 0, done.stderr.read()
    before = snapshot(url)
    proc = start_add(url, second, "v2", {HOOK_STEP_ENV: step, HOOK_DIR_ENV: str(tmp_path)})
    wait_for(tmp_path / f"{step}.reached", proc, DEADLINE_S)
    proc.send_signal(signal.SIGKILL)
    proc.wait(DEADLINE_S)
    assert snapshot(url) == before
    with Repository.open(url) as repo:  # nothing half-added blocks the next add
        repo.collect_garbage(min_age_s=0)  # a table file the killed add wrote is removed
        files = sorted(p.name for p in (tmp_path / "r.sqlite-tables").rglob("*"))
        assert len([f for f in files if f.endswith(".parquet")]) == 1
        assert not [f for f in files if f.startswith(".tmp-")]
    again = start_add(url, second, "v2")
    assert again.wait(DEADLINE_S) == 0, again.stderr.read()
    after = snapshot(url)
    assert after["experiments"] == before["experiments"] + 1


def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    """Kills after random delays: each time the repository is as before or has it all."""
    url = str(tmp_path / "r.sqlite")
    paths = tables(tmp_path, 5)
    rng = random.Random(7)
    start = time.monotonic()
    proc = start_add(url, paths[0], "v0")
    assert proc.wait(DEADLINE_S) == 0, proc.stderr.read()
    typical = time.monotonic() - start  # this machine's speed sets the delays, not the verdict
    expected = snapshot(url)
    for i, path in enumerate(paths[1:], start=1):
        proc = start_add(url, path, f"v{i}")
        time.sleep(rng.uniform(0.2, 1.0) * typical)
        proc.send_signal(signal.SIGKILL)
        proc.wait(DEADLINE_S)
        now = snapshot(url)
        if now["experiments"] == expected["experiments"]:
            assert now["results"] == expected["results"]
            assert now["run_values"] == expected["run_values"]
        else:
            assert now["experiments"] == expected["experiments"] + 1
            assert now["results"] == expected["results"] + 2  # both benchmarks, complete
            assert now["run_values"] > expected["run_values"]
        expected = now


@pytest.fixture(params=["sqlite", "postgresql"])
def repo_url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "r.sqlite")
    return fresh_database(request.getfixturevalue("pg_server"), "c_" + uuid.uuid4().hex[:12])


def test_concurrent_adds_all_land(repo_url: str, tmp_path: Path) -> None:
    Repository.open(repo_url).close()
    paths = tables(tmp_path, 4)
    # the first add holds its open transaction while the others start and queue behind it
    hook = {HOOK_STEP_ENV: "inserting", HOOK_DIR_ENV: str(tmp_path)}
    holder = start_add(repo_url, paths[0], "v0", hook)
    wait_for(tmp_path / "inserting.reached", holder, DEADLINE_S)
    others = [start_add(repo_url, p, f"v{i}") for i, p in enumerate(paths[1:], start=1)]
    (tmp_path / "inserting.release").write_text("")
    for p in [holder, *others]:
        assert p.wait(DEADLINE_S) == 0, p.stderr.read()
    with Repository.open(repo_url) as repo:
        assert sorted(e.version_b for e in repo.experiments()) == ["v0", "v1", "v2", "v3"]
        assert len(repo.results()) == 8


def test_sigkill_inside_the_transaction_on_postgresql(pg_server: str, tmp_path: Path) -> None:
    url = fresh_database(pg_server, "k_" + uuid.uuid4().hex[:12])
    (path,) = tables(tmp_path, 1)
    Repository.open(url).close()
    before = snapshot(url)
    proc = start_add(url, path, "v1", {HOOK_STEP_ENV: "before-commit", HOOK_DIR_ENV: str(tmp_path)})
    wait_for(tmp_path / "before-commit.reached", proc, DEADLINE_S)
    proc.send_signal(signal.SIGKILL)
    proc.wait(DEADLINE_S)
    assert snapshot(url) == before  # the server dropped the dead connection's transaction
    again = start_add(url, path, "v1")
    assert again.wait(DEADLINE_S) == 0, again.stderr.read()
    assert snapshot(url)["experiments"] == 1
