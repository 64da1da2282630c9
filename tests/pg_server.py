"""A throw-away PostgreSQL server for tests: initdb + pg_ctl in a temporary directory.

The server listens only on a unix socket inside that directory (no TCP port to
collide with), runs as the ``postgres`` OS user when the tests run as root (the
server refuses root), and is stopped and deleted at teardown. Without PostgreSQL
installed the tests skip locally and FAIL in CI (``CI`` set), naming the install
command (scripts/setup-system.sh installs it).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

INSTALL = "scripts/setup-system.sh (apt-get install postgresql)"


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _unavailable(why: str) -> None:
    message = f"PostgreSQL server tests need {why}; install it with {INSTALL}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield a libpq URL of its ``postgres`` database; stop it."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        _unavailable("the PostgreSQL server programs (initdb, pg_ctl)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("the psycopg package (pip install -e '.[test]')")
    root = Path(tempfile.mkdtemp(prefix="duet-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root)
            _unavailable("the 'postgres' OS user (created by the postgresql package)")
        for p in (root, sock):
            os.chown(p, user.pw_uid, user.pw_gid)
    log = root / "server.log"
    try:
        subprocess.run(
            _as_server_user(
                [initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
            timeout=300,
        )
        opts = f"-k {sock} -c listen_addresses='' -c fsync=off"
        subprocess.run(
            _as_server_user(
                [pg_ctl, "-D", str(data), "-o", opts, "-l", str(log), "-w", "-t", "120", "start"]
            ),
            check=True,
            capture_output=True,
            timeout=180,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        text = log.read_text() if log.exists() else ""
        out = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(
            f"could not start PostgreSQL: {exc}\n{out.decode(errors='replace')}\n{text}"
        ) from None
    try:
        yield f"postgresql://postgres@/postgres?host={sock}"
    finally:
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(server_url: str, name: str) -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.replace("/postgres?", f"/{name}?", 1)
