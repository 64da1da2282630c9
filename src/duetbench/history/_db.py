"""A small DB-API layer over SQLite (``sqlite3``) and PostgreSQL (psycopg 3).

The repository's SQL is written once, in the subset both servers understand
(``INSERT ... ON CONFLICT DO NOTHING``, ``RETURNING``, ``BIGINT``, ``DOUBLE
PRECISION``); :class:`Database` turns ``?`` placeholders into psycopg's ``%s`` and
fills the few type names that differ (the auto-numbered key, binary data).

SQLite: WAL journal (readers do not block the writer, parallel CI jobs can
append), a busy timeout, and ``BEGIN IMMEDIATE`` for every write transaction, so
two writers queue instead of failing half-way. PostgreSQL: one transaction per
:meth:`Database.transaction`, READ COMMITTED; statements outside
one run on their own (autocommit), so a reader holds no locks between them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..errors import DuetError

#: how long a SQLite writer waits for another one before giving up (ms)
BUSY_TIMEOUT_MS = 120_000
PG_SCHEMES = ("postgresql://", "postgres://")


class HistoryError(DuetError):
    """A results repository that cannot be used as asked (damaged, foreign, duplicate add...)."""


#: libpq connection parameters that hold a secret (never shown, docs/history.md, "The
#: repository")
SECRET_KEYS = frozenset({"password", "sslpassword"})
#: libpq's connection keywords: a ``key=value`` string naming one of them is a PostgreSQL
#: connection string, not a file name
LIBPQ_KEYWORDS = frozenset(
    """host hostaddr port dbname user password passfile require_auth channel_binding
    connect_timeout client_encoding options application_name fallback_application_name
    keepalives keepalives_idle keepalives_interval keepalives_count tcp_user_timeout
    replication gssencmode sslmode sslnegotiation sslcompression sslcert sslkey sslcertmode
    sslpassword sslrootcert sslcrl sslcrldir sslsni requirepeer ssl_min_protocol_version
    ssl_max_protocol_version krbsrvname gsslib gssdelegation service target_session_attrs
    load_balance_hosts""".split()
)
HIDDEN = "***"
#: one ``key = value`` of a libpq key=value string: the value quoted ('...', backslash
#: escapes) or up to the next blank
_PAIR = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^'\\]|\\.)*'?|(?:[^\s'\\]|\\.)*)")


@dataclass(frozen=True)
class Location:
    """Where a repository lives: a SQLite file, or a PostgreSQL URL or key=value string.

    ``str()`` never shows a password: every message and output uses it."""

    kind: str  # "sqlite" | "postgresql"
    path: Path | None = None  # sqlite
    url: str | None = None  # postgresql: as given (a URI or a key=value string)

    @classmethod
    def parse(cls, where: str | Path) -> Location:
        text = str(where)
        if text.startswith(PG_SCHEMES) or is_conninfo(text):
            return cls("postgresql", url=text)
        if text.startswith("sqlite:///"):
            text = text[len("sqlite://") :]
        elif text.startswith("sqlite:"):
            text = text[len("sqlite:") :]
        if not text:
            raise HistoryError("the repository location is empty; give a file, e.g. perf.sqlite")
        return cls("sqlite", path=Path(text))

    def __str__(self) -> str:
        if self.kind == "sqlite":
            return str(self.path)
        return redact(self.url or "")

    @property
    def name(self) -> str:
        """A short name: the SQLite file's name, or the PostgreSQL database's."""
        if self.kind == "sqlite":
            return self.path.name if self.path is not None else ""
        url = self.url or ""
        if url.startswith(PG_SCHEMES):
            rest = url.split("://", 1)[1].split("?", 1)[0]
            database = unquote(rest.partition("/")[2])
        else:
            pairs, _ = _pairs(url)
            database = next((url[s:e].strip("'") for k, s, e in pairs if k == "dbname"), "")
        return database or "PostgreSQL"

    def scrub(self, text: str) -> str:
        """``text`` (a driver's message) with every secret of this location replaced."""
        return scrub(text, self.url or "")


def is_conninfo(text: str) -> bool:
    """Whether ``text`` is a libpq ``key=value`` connection string (one key libpq knows)."""
    pairs, _ = _pairs(text)
    return any(key in LIBPQ_KEYWORDS for key, _, _ in pairs)


def _pairs(text: str) -> tuple[list[tuple[str, int, int]], bool]:
    """The leading ``key=value`` items of ``text`` (key, start and end of the value), and
    whether they are all of it."""
    out: list[tuple[str, int, int]] = []
    pos = 0
    while text[pos:].strip():
        m = _PAIR.match(text, pos)
        if m is None or m.end() == pos:
            return out, False
        out.append((m.group(1), m.start(2), m.end(2)))
        pos = m.end()
    return out, True


def _uri_secrets(url: str) -> list[tuple[int, int]]:
    """Where the secrets of a ``postgresql://`` URI are: (start, end) of each."""
    found = []
    scheme_end = url.index("://") + 3
    query_at = url.find("?", scheme_end)
    rest_end = len(url) if query_at < 0 else query_at
    slash = url.find("/", scheme_end, rest_end)
    authority_end = rest_end if slash < 0 else slash
    at = url.rfind("@", scheme_end, authority_end)
    if at >= 0:
        colon = url.find(":", scheme_end, at)
        if colon >= 0:
            found.append((colon + 1, at))
    if query_at >= 0:
        pos = query_at + 1
        for item in url[query_at + 1 :].split("&"):
            key, eq, _ = item.partition("=")
            if eq and unquote(key).strip().lower() in SECRET_KEYS:
                found.append((pos + len(key) + 1, pos + len(item)))
            pos += len(item) + 1
    return found


def _secret_spans(conninfo: str) -> list[tuple[int, int]]:
    if conninfo.startswith(PG_SCHEMES):
        return _uri_secrets(conninfo)
    pairs, complete = _pairs(conninfo)
    spans = [(s, e) for key, s, e in pairs if key.lower() in SECRET_KEYS]
    keyword = re.search(r"(?i)password", conninfo)
    if not complete and keyword:  # libpq refuses it: hide everything after the keyword
        spans.append((keyword.end(), len(conninfo)))
    return spans


def redact(conninfo: str) -> str:
    """A PostgreSQL URI or key=value string with every password shown as ``***``."""
    out, last = [], 0
    for start, end in sorted(_secret_spans(conninfo)):
        if start < last:
            continue
        out += [conninfo[last:start], HIDDEN]
        last = end
    return "".join(out) + conninfo[last:]


def scrub(text: str, conninfo: str) -> str:
    """``text`` with the secrets of ``conninfo`` (as written and decoded) and the whole
    ``conninfo`` replaced by its redacted form."""
    if not conninfo:
        return text
    text = text.replace(conninfo, redact(conninfo))
    for start, end in _secret_spans(conninfo):
        raw = conninfo[start:end]
        raw = raw.strip()
        unquoted = re.sub(r"\\(.)", r"\1", raw.strip("'"))
        for secret in sorted({raw, unquote(raw), unquoted} - {""}, key=len, reverse=True):
            text = text.replace(secret, HIDDEN)
    return text


class Database:
    """One connection; SQL with ``?`` placeholders and ``{pk}``/``{blob}`` type names."""

    def __init__(self, location: Location, *, create: bool = True) -> None:
        self.location = location
        self.kind = location.kind
        if self.kind == "sqlite":
            self._conn = _connect_sqlite(location.path, create=create)  # type: ignore[arg-type]
        else:
            self._conn = _connect_postgresql(location)
        self._depth = 0

    # ------------------------------------------------------------------ SQL text
    def sql(self, text: str) -> str:
        if self.kind == "sqlite":
            text = text.replace("{pk}", "INTEGER PRIMARY KEY AUTOINCREMENT")
            return text.replace("{blob}", "BLOB")
        text = text.replace("{pk}", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        return text.replace("{blob}", "BYTEA").replace("?", "%s")

    # ------------------------------------------------------------------ statements
    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        cur = self._conn.cursor()
        cur.execute(self.sql(text), tuple(params))
        return cur

    def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        cur = self._conn.cursor()
        cur.executemany(self.sql(text), [tuple(r) for r in rows])

    def script(self, statements: Sequence[str]) -> None:
        for st in statements:
            self.execute(st)

    def all(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.execute(text, params).fetchall()]

    def one(self, text: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row = self.execute(text, params).fetchone()
        return None if row is None else tuple(row)

    def tables(self) -> set[str]:
        if self.kind == "sqlite":
            rows = self.all("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = self.all(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        return {str(r[0]) for r in rows}

    def columns(self, table: str) -> set[str]:
        if self.kind == "sqlite":
            return {str(r[1]) for r in self.all(f"PRAGMA table_info({table})")}
        rows = self.all(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = ?",
            (table,),
        )
        return {str(r[0]) for r in rows}

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """All statements inside commit together or not at all (nested: joins the outer one)."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        self._conn.execute("BEGIN IMMEDIATE" if self.kind == "sqlite" else "BEGIN")
        self._depth = 1
        try:
            yield self
        except BaseException:
            self._depth = 0
            try:
                self._conn.execute("ROLLBACK")
            except database_errors():
                pass  # the connection is gone: the server drops the transaction itself
            raise
        self._depth = 0
        self._conn.execute("COMMIT")

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection must not mask the error
            pass


def _connect_sqlite(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """A connection; ``create``: in WAL mode (a persistent setting: a reader leaves the
    mode a file has -- a repository is in WAL since its first add -- so a foreign file
    is refused unchanged)."""
    try:
        is_dir, parent_is_dir, parent_exists = path.is_dir(), path.parent.is_dir(), True
        if not parent_is_dir:
            parent_exists = path.parent.exists()
    except OSError as exc:  # a name too long, a loop of links
        raise HistoryError(f"cannot use {path} as the repository: {exc.strerror or exc}") from None
    if is_dir:
        raise HistoryError(f"{path} is a directory; give the repository's file, e.g. perf.sqlite")
    if not parent_is_dir:
        why = "is not a directory" if parent_exists else "does not exist"
        raise HistoryError(f"cannot create the repository {path}: {path.parent} {why}")
    try:
        conn = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        pragma = "PRAGMA journal_mode = WAL" if create else "PRAGMA journal_mode"
        mode = conn.execute(pragma).fetchone()
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        if create and not path.exists():
            raise HistoryError(
                f"cannot create the repository {path}: SQLite cannot create a file in "
                f"{path.parent} ({exc}); give a file in a writable directory"
            ) from None
        raise not_a_repository(path, exc) from None
    if create and (mode is None or str(mode[0]).lower() != "wal"):
        conn.close()
        raise HistoryError(
            f"{path}: SQLite cannot use its write-ahead log there ({mode}); keep the repository "
            "on a local file system (not a network share), so parallel jobs can append safely"
        )
    return conn


def not_a_repository(path: Path | str, exc: BaseException) -> HistoryError:
    return HistoryError(
        f"{path} is not a duetbench results repository: SQLite cannot read it ({exc}). "
        "The file is damaged or belongs to another program; give another file name "
        "(a new file is created), or restore the repository from a copy"
    )


def _connect_postgresql(location: Location) -> Any:
    try:
        import psycopg
    except ImportError:
        raise HistoryError(
            "a PostgreSQL repository needs the psycopg package: "
            "pip install 'duetbench[history]' (or use a SQLite file, e.g. --repo perf.sqlite)"
        ) from None
    try:
        return psycopg.connect(location.url or "", autocommit=True, connect_timeout=30)
    except psycopg.Error as exc:
        raise HistoryError(
            f"cannot connect to the PostgreSQL repository {location}: "
            f"{location.scrub(str(exc).strip())}. Check the URL "
            "(postgresql://user@host:port/database, the password in $PGPASSWORD or ~/.pgpass) "
            "and that the server runs"
        ) from None


def database_errors() -> tuple[type[BaseException], ...]:
    """The DB-API error classes of the drivers that are installed."""
    errs: list[type[BaseException]] = [sqlite3.Error]
    try:
        import psycopg

        errs.append(psycopg.Error)
    except ImportError:
        pass
    return tuple(errs)


def is_unique_violation(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.IntegrityError):
        return "UNIQUE" in str(exc).upper()
    return getattr(exc, "sqlstate", None) == "23505"


@contextmanager
def guard(db: Database) -> Iterator[None]:
    """Database failures as HistoryError with what to do."""
    try:
        yield
    except HistoryError:
        raise
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            raise HistoryError(
                f"{db.location} stayed locked by another writer for more than "
                f"{BUSY_TIMEOUT_MS // 1000} s; try again when the other `duet history` command has finished"
            ) from None
        if isinstance(exc, sqlite3.OperationalError) and "no such" not in text:
            raise HistoryError(f"{db.location}: {text}") from None
        raise not_a_repository(db.location, exc) from None
    except database_errors() as exc:
        text = db.location.scrub(str(exc).strip())
        raise HistoryError(f"{db.location}: the database failed: {text}") from None
