"""`duet history add | list | show | changes | mark | unmark | marks`, `duet dashboard` and
`duet run --repo` as users call them: SQLite files (relative, absolute, with spaces,
from $DUET_HISTORY) and PostgreSQL URLs; errors exit 2 with a clear message; a killed
`duet history add` leaves the repository as before or complete; concurrent adds land.

The history and dashboard commands run through `duetbench.cli.main` in this process
(`duet`, the same parser and code, without an interpreter start per call); `duet run`
and the adds that are killed or run concurrently run as processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import run_duet
from tests.helpers import duet_in_process
from tests.history_helpers import (
    HOST,
    build_history,
    levels_with_steps,
    tables,
    tiny_config,
    wait_for,
)
from tests.pg_server import fresh_database, postgres_server

from duetbench.history import Repository
from duetbench.history._writer import HOOK_DIR_ENV, HOOK_STEP_ENV
from duetbench.report.history_tables import strict_json

DEADLINE_S = 300  # only catches hangs
STEPS = ("analysed", "table-written", "inserting", "before-commit")


@pytest.fixture(scope="module")
def pg_server():
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory) -> Path:
    """A real `duet run` experiment: an A/A benchmark 'same' and an A/B one 'ab'."""
    d = tmp_path_factory.mktemp("tiny")
    r = run_duet("run", str(tiny_config(d)), "-o", str(d / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    return d / "res" / "tiny"


#: the tiny experiment's every run: its CPU-bound sides beside a busy machine's other work
#: may be unbalanced, which would change what these tests of the repository check
KEEP = ("--keep-unbalanced",)


def duet_ok(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    r = duet_in_process(*args, **kw)
    assert r.returncode == 0, f"duet {' '.join(args)}: {r.stdout}\n{r.stderr}"
    return r


def no_nan(name: str) -> None:
    raise AssertionError(f"{name} in a JSON document (JSON has no NaN)")


def history_json(*args: str, **kw) -> dict:
    text = duet_ok("history", *args, "--format", "json", **kw).stdout
    return json.loads(text, parse_constant=no_nan)


def test_json_documents_have_no_nan() -> None:
    doc = {"se": float("nan"), "x": np.float64(1.5), "n": [np.int64(3), float("inf")], "s": "a"}
    assert strict_json(doc) == {"se": None, "x": 1.5, "n": [3, None], "s": "a"}
    assert type(strict_json(doc)["n"][0]) is int


def test_add_list_show_and_the_three_formats_agree(tmp_path: Path, tiny_results: Path) -> None:
    work = tmp_path / "a dir"
    work.mkdir()
    # a relative repository path from another working directory, with a space
    r = duet_ok(
        "history", "add", str(tiny_results), "--repo", "perf repo.sqlite",
        "--versions", "A=v1.3,B=v1.4", "--keep-unbalanced", cwd=work,
    )  # fmt: skip
    assert "added experiment #1 'tiny'" in r.stdout
    assert (work / "perf repo.sqlite").is_file()
    repo = str(work / "perf repo.sqlite")
    doc = history_json("list", "--repo", repo)
    assert [v["label"] for v in doc["versions"]] == ["v1.3", "v1.4"]
    (e,) = doc["experiments"]
    assert (e["name"], e["version_a"], e["version_b"]) == ("tiny", "v1.3", "v1.4")
    assert e["source"] == str(tiny_results.resolve())
    assert {b["benchmark"] for b in doc["benchmarks"]} == {"ab", "same"}
    table = duet_ok("history", "list", "--repo", repo).stdout
    markdown = duet_ok("history", "list", "--repo", repo, "--format", "markdown").stdout
    for text in (table, markdown):
        for word in ("v1.3", "v1.4", "tiny", "ab", "same", doc["hosts"][0]["fingerprint"]):
            assert word in text, (word, text)
    assert markdown.startswith("## results repository") and "| version |" in markdown

    show = history_json("show", "--repo", repo, "--benchmark", "ab")
    (s,) = show["series"]
    assert s["versions"] == ["v1.3", "v1.4"]
    (step,) = s["paired"]
    assert (step["before"], step["after"], step["runs"]) == ("v1.3", "v1.4", 3)
    shown = duet_ok("history", "show", "--repo", repo, "--benchmark", "ab").stdout
    assert f"{step['change'] * 100:+.2f} %" in shown  # the same number in the table
    md = duet_ok("history", "show", "--repo", repo, "--benchmark", "ab", "--format", "markdown")
    assert f"{step['change'] * 100:+.2f} %" in md.stdout

    # $DUET_HISTORY names the repository when --repo is not given
    env_doc = history_json("list", env={"DUET_HISTORY": repo})
    assert env_doc["experiments"] == doc["experiments"]


def test_add_versions_from_git_and_one_label(tmp_path: Path, tiny_results: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
    }
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    for cmd in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "x"], ["tag", "v2.0"]):
        subprocess.run(["git", "-C", str(src), *cmd], check=True, env=env)
    repo = str(tmp_path / "r.sqlite")
    duet_ok("history", "add", str(tiny_results), "--repo", repo, "--git", str(src), *KEEP)
    (v,) = history_json("list", "--repo", repo)["versions"]
    sha = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    assert (v["label"], v["commit"]) == ("v2.0", sha.stdout.strip())
    assert v["commit_ns"] is not None
    # one label for both sides; the same results again is refused, exit 2
    other = str(tmp_path / "o.sqlite")
    duet_ok("history", "add", str(tiny_results), "--repo", other, "--versions", "nightly-42", *KEEP)
    (e,) = history_json("list", "--repo", other)["experiments"]
    assert (e["version_a"], e["version_b"]) == ("nightly-42", "nightly-42")
    r = duet_in_process(
        "history", "add", str(tiny_results), "--repo", other, "--versions", "nightly-43"
    )
    assert r.returncode == 2 and "already in the repository" in r.stderr
    assert "Traceback" not in r.stderr
    # the hint is a command that works: remove it, and the add goes through
    hint = f"duet history remove {e['id']} --repo {other}"
    assert hint in " ".join(r.stderr.split()), r.stderr
    removed = duet_ok(*hint.split()[1:])
    assert f"removed experiment #{e['id']} 'tiny'" in " ".join(removed.stdout.split())
    assert history_json("list", "--repo", other)["experiments"] == []
    duet_ok("history", "add", str(tiny_results), "--repo", other, "--versions", "nightly-43")
    r = duet_in_process("history", "remove", "99", "--repo", other)
    assert r.returncode == 2 and "no experiment #99" in r.stderr


def test_errors_are_clear_and_exit_2(tmp_path: Path, tiny_results: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    r = duet_in_process("history", "list", "--repo", str(missing))
    assert r.returncode == 2 and "does not exist" in r.stderr
    assert not missing.exists()  # reading never creates a repository
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    foreign = tmp_path / "shop.db"
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    for path, words in ((garbage, "not a duetbench results repository"), (foreign, "customers")):
        for cmd in (["list"], ["changes"], ["add", str(tiny_results), "--versions", "v1"]):
            r = duet_in_process("history", *cmd, "--repo", str(path))
            assert r.returncode == 2 and words in r.stderr, (cmd, r.stderr)
            assert "Traceback" not in r.stderr
        r = duet_in_process("dashboard", "--repo", str(path), "-o", str(tmp_path / "site"))
        assert r.returncode == 2 and words in r.stderr, r.stderr
    assert garbage.read_bytes() == b"not a database at all" * 100  # left as it was
    r = duet_in_process("history", "list", env={"DUET_HISTORY": ""})
    assert r.returncode == 2 and "--repo" in r.stderr and "DUET_HISTORY" in r.stderr
    new = tmp_path / "new.sqlite"
    r = duet_in_process("history", "add", str(tiny_results), "--repo", str(new))
    assert r.returncode == 2 and "--versions" in r.stderr
    r = duet_in_process(
        "history", "add", str(tmp_path / "nope"), "--repo", str(new), "--versions", "v1"
    )
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = duet_in_process(
        "history", "add", str(tiny_results), "--repo", str(new), "--versions", "A=v1"
    )
    assert r.returncode == 2 and "side B is missing" in r.stderr
    assert not new.exists()  # bad flags create no repository


def test_changes_marks_and_fail_on_regression(tmp_path: Path) -> None:
    repo = str(tmp_path / "r.sqlite")
    with Repository.open(repo) as r:
        build_history(r, levels_with_steps(30, {12: 0.08}), host_records={"ci-1": HOST})
    doc = history_json("changes", "--repo", repo)
    (c,) = doc["changes"]
    assert (c["first_bad"], c["last_good"], c["direction"]) == ("v012", "v011", "slower")
    assert c["ci_low"] <= 0.08 <= c["ci_high"]
    out = tmp_path / "changes.md"
    r = duet_in_process("history", "changes", "--repo", repo, "--format", "markdown", "-o", str(out),
                 "--fail-on-regression")  # fmt: skip
    assert r.returncode == 1, r.stderr
    md = out.read_text()
    assert "v012" in md and f"{c['change'] * 100:+.2f} %" in md and "🔴 slower" in md
    table = duet_in_process("history", "changes", "--repo", repo).stdout
    assert "v012" in table and f"{c['change'] * 100:+.2f} %" in table
    assert duet_in_process("history", "changes", "--repo", repo, "--since", "v013",
                    "--fail-on-regression").returncode == 0  # fmt: skip
    r = duet_in_process("history", "changes", "--repo", repo, "--since", "v99")
    assert r.returncode == 2 and "v99" in r.stderr

    # marking v012 as excluded joins the steps around it; the change moves to v013
    duet_ok("history", "mark", "--repo", repo, "--benchmark", "parse", "--at", "v012",
            "--exclude", "--note", "built without -O2")  # fmt: skip
    (m,) = history_json("marks", "--repo", repo)["marks"]
    assert (m["version"], m["kind"], m["note"]) == ("v012", "exclude", "built without -O2")
    (c2,) = history_json("changes", "--repo", repo)["changes"]
    assert c2["first_bad"] == "v013"
    duet_ok("history", "unmark", str(m["id"]), "--repo", repo)
    assert history_json("marks", "--repo", repo)["marks"] == []
    # a change marked by hand is reported whatever the detection says
    duet_ok("history", "mark", "--repo", repo, "--benchmark", "parse", "--at", "v020",
            "--change", "--note", "new allocator")  # fmt: skip
    found = {c["first_bad"]: c for c in history_json("changes", "--repo", repo)["changes"]}
    assert set(found) == {"v012", "v020"} and found["v020"]["source"] == "marked"
    for bad in (["--at", "v99"], ["--benchmark", "nope"]):
        args = {"--benchmark": "parse", "--at": "v010"}
        args[bad[0]] = bad[1]
        r = duet_in_process("history", "mark", "--repo", repo, *[x for kv in args.items() for x in kv],
                     "--exclude", "--note", "x")  # fmt: skip
        assert r.returncode == 2 and bad[1] in r.stderr, r.stderr
    r = duet_in_process("history", "unmark", "99", "--repo", repo)
    assert r.returncode == 2 and "#99" in r.stderr


def test_dashboard_command(tmp_path: Path) -> None:
    repo = str(tmp_path / "r.sqlite")
    with Repository.open(repo) as r:
        build_history(r, levels_with_steps(8, {4: 0.1}), host_records={"ci-1": HOST})
    site = tmp_path / "my site"
    doc = json.loads(
        duet_ok("dashboard", "--repo", repo, "-o", str(site), "--format", "json").stdout
    )
    assert doc["benchmarks"] == 1 and doc["versions"] == 8
    assert (site / "index.html").is_file() and (site / "assets" / "plotly.min.js").is_file()
    r = duet_ok("dashboard", "--repo", repo, "-o", str(site))  # an earlier dashboard: replaced
    assert "index.html" in r.stdout
    other = tmp_path / "docs"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    r = duet_in_process("dashboard", "--repo", repo, "-o", str(other))
    assert r.returncode == 2 and "not written by `duet dashboard`" in r.stderr
    assert (other / "keep.txt").read_text() == "mine"


def test_run_with_history_adds_the_experiment(tmp_path: Path) -> None:
    cfg = tiny_config(tmp_path)
    repo = tmp_path / "perf.sqlite"
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare",
                 "--repo", str(repo), "--versions", "A=v1,B=v2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "added experiment #1 'tiny'" in r.stdout
    (e,) = history_json("list", "--repo", str(repo))["experiments"]
    assert (e["version_a"], e["version_b"]) == ("v1", "v2")
    # --repo without versions is refused before anything runs
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res2"), "--repo", str(repo))
    assert r.returncode == 2 and "--versions" in r.stderr
    assert not (tmp_path / "res2").exists()


# ---------------------------------------------------------------------- crashes, concurrency


def start_add(repo: str, table: Path, version: str, hooks: dict[str, str] | None = None):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "duetbench",
            "history",
            "add",
            str(table),
            "--repo",
            repo,
            "--versions",
            version,
        ],  # fmt: skip
        env={**os.environ, **(hooks or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def counts(repo: str) -> tuple[int, ...]:
    doc = history_json("list", "--repo", repo)
    with Repository.open(repo, create=False) as r:
        rows = tuple(
            r.db.one(f"SELECT COUNT(*) FROM {t}")[0] for t in ("results", "run_values", "runs")
        )
        for e in r.experiments():
            assert len(r.iterations(e.id)) > 0  # every experiment readable in full
    return (len(doc["experiments"]), len(doc["versions"]), *rows)


def test_sigkill_of_the_cli_add_at_each_step(tmp_path: Path) -> None:
    repo = str(tmp_path / "r.sqlite")
    paths = tables(tmp_path, len(STEPS) + 1)
    first = start_add(repo, paths[0], "v0")
    assert first.wait(DEADLINE_S) == 0, first.stderr.read()
    before = counts(repo)
    for i, step in enumerate(STEPS, start=1):
        hooks = {HOOK_STEP_ENV: step, HOOK_DIR_ENV: str(tmp_path)}
        proc = start_add(repo, paths[i], f"v{i}", hooks)
        wait_for(tmp_path / f"{step}.reached", proc, DEADLINE_S)
        proc.send_signal(signal.SIGKILL)
        proc.wait(DEADLINE_S)
        assert counts(repo) == before, step
    again = start_add(repo, paths[1], "v1")  # nothing half-added blocks the next add
    assert again.wait(DEADLINE_S) == 0, again.stderr.read()
    after = counts(repo)
    assert after[0] == before[0] + 1 and after[2] == before[2] + 2  # both benchmarks


@pytest.fixture(params=["sqlite", "postgresql"])
def repo_url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "r r.sqlite")
    return fresh_database(request.getfixturevalue("pg_server"), "cli_" + uuid.uuid4().hex[:12])


def test_concurrent_cli_adds_all_land(repo_url: str, tmp_path: Path) -> None:
    paths = tables(tmp_path, 3)
    hook = {HOOK_STEP_ENV: "inserting", HOOK_DIR_ENV: str(tmp_path)}
    holder = start_add(repo_url, paths[0], "v0", hook)  # holds its open transaction
    wait_for(tmp_path / "inserting.reached", holder, DEADLINE_S)
    others = [start_add(repo_url, p, f"v{i}") for i, p in enumerate(paths[1:], start=1)]
    (tmp_path / "inserting.release").write_text("")
    for p in [holder, *others]:
        assert p.wait(DEADLINE_S) == 0, p.stderr.read()
    doc = history_json("list", "--repo", repo_url)
    assert sorted(e["version_b"] for e in doc["experiments"]) == ["v0", "v1", "v2"]


def test_postgresql_url_everywhere(pg_server: str, tmp_path: Path, tiny_results: Path) -> None:
    url = fresh_database(pg_server, "cli_" + uuid.uuid4().hex[:12])
    duet_ok("history", "add", str(tiny_results), "--repo", url, "--versions", "A=v1,B=v2", *KEEP)
    r = duet_in_process(
        "history", "add", str(tiny_results), "--repo", url, "--versions", "A=v1,B=v2"
    )
    assert r.returncode == 2 and "already in the repository" in r.stderr
    doc = history_json("list", "--repo", url)
    assert [e["name"] for e in doc["experiments"]] == ["tiny"]
    assert history_json("show", "--repo", url, "--benchmark", "ab")["series"]
    assert history_json("changes", "--repo", url)["changes"] == []
    duet_ok("history", "mark", "--repo", url, "--benchmark", "ab", "--at", "v2",
            "--change", "--note", "compiler update")  # fmt: skip
    (c,) = history_json("changes", "--repo", url)["changes"]
    assert (c["first_bad"], c["source"]) == ("v2", "marked")
    doc = json.loads(
        duet_ok("dashboard", "--repo", url, "-o", str(tmp_path / "site"), "--format", "json").stdout
    )
    assert doc["benchmarks"] == 2
    with_env = history_json("list", env={"DUET_HISTORY": url})
    assert [e["name"] for e in with_env["experiments"]] == ["tiny"]


SECRET = "S3cr3t-pw%41"  # percent-encoded in a URI, a literal in a key=value string


def _with_password(url: str, form: str) -> str:
    """``url`` (postgresql://postgres@/DB?host=SOCK) with a password, in one libpq form."""
    rest = url.split("@/", 1)[1]
    db, _, host = rest.partition("?host=")
    return {
        "query": f"{url}&password={SECRET}",
        "userinfo": f"postgresql://postgres:{SECRET}@/{db}?host={host}",
        "keyvalue": f"host={host} dbname={db} user=postgres password='{SECRET} x'",
    }[form]


@pytest.mark.parametrize("form", ["query", "userinfo", "keyvalue"])
def test_a_postgresql_password_appears_in_no_output(
    pg_server: str, tmp_path: Path, tiny_results: Path, form: str
) -> None:
    """The password of every libpq form (the server trusts, so any password connects) is in
    no command's output, no error and no file of a built dashboard."""
    url = _with_password(fresh_database(pg_server, "pw_" + uuid.uuid4().hex[:12]), form)
    secrets = (SECRET, SECRET.replace("%41", "A"))
    outputs = [duet_ok("history", "add", str(tiny_results), "--repo", url, "--versions", "v1")]
    # every format of every reading command once (they share the location's text); the
    # other forms through the table and the dashboard
    formats = ("table", "json", "markdown") if form == "query" else ("table",)
    for fmt in formats:
        outputs.append(duet_ok("history", "list", "--repo", url, "--format", fmt))
    if form == "query":
        for fmt in formats:
            outputs.append(duet_ok("history", "changes", "--repo", url, "--format", fmt))
        outputs.append(duet_ok("history", "show", "--repo", url, "--benchmark", "ab"))
    outputs.append(duet_ok("dashboard", "--repo", url, "-o", str(tmp_path / "site")))
    # errors: a duplicate add, a database that does not exist, an unknown connection option
    outputs.append(run_duet("history", "add", str(tiny_results), "--repo", url, "--versions", "v1"))
    missing = url.replace("pw_", "nope_")
    outputs.append(run_duet("history", "list", "--repo", missing))
    outputs.append(
        run_duet(
            "history", "list", "--repo", url + ("&bogus=1" if form != "keyvalue" else " bogus=1")
        )
    )
    # libpq cannot parse it and quotes the password: a bad %-escape, an unterminated quote
    bad = url.replace(SECRET, SECRET + "%zz") if form != "keyvalue" else url.rstrip("'")
    outputs.append(run_duet("history", "list", "--repo", bad))
    assert [o.returncode for o in outputs[-4:]] == [2, 2, 2, 2], [o.stderr for o in outputs[-4:]]
    for o in outputs:
        assert "Traceback" not in o.stderr
        for s in secrets:
            assert s not in o.stdout + o.stderr, (o.args, o.stdout, o.stderr)
    assert "***" in outputs[1].stdout  # the location is shown, its password hidden
    files = [p for p in (tmp_path / "site").rglob("*") if p.is_file()]
    assert any(p.name == ".duet-dashboard.json" for p in files) and len(files) > 4
    for p in files:
        data = p.read_bytes()
        for s in secrets:
            assert s.encode() not in data, p


def _pg_tables(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
    return {r[0] for r in rows}


READ_ONLY = (
    ("history", "list"),
    ("history", "changes"),
    ("history", "show", "--benchmark", "ab"),
    ("history", "marks"),
    ("dashboard", "-o", "SITE"),
)


def test_reading_commands_never_create_a_repository(
    pg_server: str, tmp_path: Path, tiny_results: Path
) -> None:
    """`list`, `changes`, `show`, `marks` and `dashboard` on an empty database (PostgreSQL
    or a 0-byte SQLite file) exit 2 and write nothing; a database holding another
    program's tables is refused by every command, `add` included."""
    import psycopg

    empty_pg = fresh_database(pg_server, "ro_" + uuid.uuid4().hex[:12])
    empty_file = tmp_path / "empty.sqlite"
    empty_file.write_bytes(b"")
    foreign = fresh_database(pg_server, "fo_" + uuid.uuid4().hex[:12])
    with psycopg.connect(foreign, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id integer PRIMARY KEY, name text)")
    site = str(tmp_path / "site")
    for repo in (empty_pg, str(empty_file), foreign):
        for cmd in READ_ONLY:
            r = run_duet(*[site if a == "SITE" else a for a in cmd], "--repo", repo)
            assert r.returncode == 2 and "Traceback" not in r.stderr, (cmd, r.stderr)
            assert ("holds no results repository" if repo != foreign else "customers") in r.stderr
    assert _pg_tables(empty_pg) == set() and empty_file.stat().st_size == 0
    assert not (tmp_path / "site").exists()
    r = run_duet("history", "add", str(tiny_results), "--repo", foreign, "--versions", "v1")
    assert r.returncode == 2 and "not a duetbench results repository" in r.stderr, r.stderr
    assert _pg_tables(foreign) == {"customers"}


def test_gc_removes_what_a_killed_add_left(tmp_path: Path) -> None:
    repo = str(tmp_path / "r.sqlite")
    paths = tables(tmp_path, 2)
    first = start_add(repo, paths[0], "v0")
    assert first.wait(DEADLINE_S) == 0, first.stderr.read()
    hooks = {HOOK_STEP_ENV: "table-written", HOOK_DIR_ENV: str(tmp_path)}
    killed = start_add(repo, paths[1], "v1", hooks)
    wait_for(tmp_path / "table-written.reached", killed, DEADLINE_S)
    killed.send_signal(signal.SIGKILL)
    killed.wait(DEADLINE_S)
    stored = sorted((tmp_path / "r.sqlite-tables").rglob("*.parquet"))
    assert len(stored) == 2  # the first add's table, and the orphan
    young = duet_ok("history", "gc", "--repo", repo)  # an add may be about to use it
    assert "removed 0 unused" in young.stdout
    old = duet_ok("history", "gc", "--repo", repo, "--min-age", "0")
    assert "removed 1 unused stored files" in old.stdout
    assert len(list((tmp_path / "r.sqlite-tables").rglob("*.parquet"))) == 1
    assert [e["version_b"] for e in history_json("list", "--repo", repo)["experiments"]] == ["v0"]
    assert len(history_json("show", "--repo", repo, "--benchmark", "parse")["series"]) >= 1


STOPPED = """\
experiment:
  name: stopped
  seed: 3
  repetitions: {seqn: 1}
  stop: {until: decided, threshold: 2%, max_runs: 20}
benchmarks:
  ab: {iterations: 4, A: {command: "sleep 0.01"}, B: {command: "sleep 0.02"}}
"""


def test_a_step_a_stopping_rule_decided_is_a_change_with_its_interval(tmp_path: Path) -> None:
    """An adaptive experiment added to the repository keeps its rule's interval and
    verdict (schema 3), and `duet history changes` reports the step on that evidence --
    one experiment of a few runs is enough, as the rule decided."""
    (tmp_path / "duet.yml").write_text(STOPPED)
    r = run_duet("run", str(tmp_path / "duet.yml"), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    results = tmp_path / "res" / "stopped"
    stops = json.loads((results / "stops.json").read_text())["stops"]["ab/seqn"]
    decision = stops["decisions"]["ab"]
    # 10 against 20 ms sleeps, one after the other (sleeps hardly feel the load; no
    # duet run to be left out as unbalanced): decided on a busy machine too
    assert decision["verdict"] == "slower", stops
    repo = str(tmp_path / "perf.sqlite")
    duet_ok("history", "add", str(results), "--repo", repo, "--versions", "A=v1,B=v2")
    with Repository.open(repo, create=False) as opened:
        (row,) = opened.results().to_dict("records")
    assert (row["basis"], row["verdict"], row["stop_reason"]) == (
        "rule",
        "slower",
        stops["stopped"],
    )
    assert (row["confidence"], row["threshold"]) == (0.95, 0.02)
    assert row["ci_low"] == pytest.approx(decision["low"], rel=1e-9)
    assert row["ci_high"] == pytest.approx(decision["high"], rel=1e-9)
    doc = history_json("changes", "--repo", repo)
    (change,) = doc["changes"]
    assert (change["first_bad"], change["direction"], change["source"]) == (
        "v2",
        "slower",
        "paired",
    )
    for mine, rules in (("change", "estimate"), ("ci_low", "low"), ("ci_high", "high")):
        assert change[mine] == pytest.approx(decision[rules], abs=1e-9), mine  # the gate's
    assert "slower by its stopping rule, 95 % interval" in change["evidence"]
    shown = history_json("show", "--repo", repo, "--benchmark", "ab")
    evidence = shown["series"][0]["paired"][0]["evidence"]
    assert (evidence["basis"], evidence["verdict"]) == ("rule", "slower")
