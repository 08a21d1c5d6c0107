"""Opening a database: URL resolution, SQLite's pragmas and transaction modes, lock waits.

SQLite write transactions start with `BEGIN IMMEDIATE`: pysqlite's lazy `BEGIN` would let a
transaction read the head and then fail at once with "database is locked" when it tries to
write after another process committed (SQLITE_BUSY on lock upgrade ignores the busy timeout).
With the write lock taken up front, racing writers wait their turn and then lose cleanly on
the optimistic-concurrency check. Reads keep a plain deferred `BEGIN` so they never queue
behind writers (WAL lets them run alongside).

No statement waits forever for a lock another transaction holds: `busy_timeout_ms` is SQLite's
busy timeout and PostgreSQL's `lock_timeout` (set on each new connection, so whatever `options`
the URL carries, a `statement_timeout` say, still apply). A wait that runs out is
`DatabaseUnavailable`; the transaction is rolled back, so nothing is changed.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool

from store._errors import DatabaseUnavailable

DEFAULT_URL = "sqlite:///sessions.db"
URL_ENV = "SESSIONSTORE_URL"
WRITE = "sessionstore_write"
"""Execution option that marks a connection's transaction as a write (SQLite: IMMEDIATE)."""

SqliteSynchronous = Literal["NORMAL", "FULL"]


@dataclass(frozen=True, slots=True)
class EncodedJson:
    """JSON text already encoded (canonically, for the hash): stored as is, not encoded again."""

    text: str


def serialize_json(value: object) -> str:
    """The engines' JSON serializer: passes `EncodedJson` through, encodes anything else."""
    if isinstance(value, EncodedJson):
        return value.text
    return json.dumps(value, ensure_ascii=False)


def resolve_url(url: str | None) -> str:
    """The URL given, else `$SESSIONSTORE_URL`, else `sessions.db` in the current folder."""
    return url or os.environ.get(URL_ENV) or DEFAULT_URL


class LockWaitTimeout(sa.exc.OperationalError):
    """PostgreSQL ended a statement that waited `lock_timeout` for another transaction's lock
    (SQLSTATE 55P03, `psycopg.errors.LockNotAvailable`, an `OperationalError` like the rest)."""

    def __init__(self, error: sa.exc.DBAPIError, orig: BaseException, waited_ms: int) -> None:
        super().__init__(error.statement, error.params, orig)
        self.waited_ms = waited_ms


def unavailable(url: sa.URL, exc: sa.exc.DBAPIError) -> DatabaseUnavailable:
    """The one-line error for a database that cannot be reached, opened or written (locked,
    read-only, full, not a database), with the password hidden."""
    if isinstance(exc, LockWaitTimeout):
        reason = (
            f"waited {exc.waited_ms:,} ms for a lock another transaction holds "
            "(SessionStore(busy_timeout_ms=...)); rolled back, nothing was changed: try again"
        )
    else:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return DatabaseUnavailable(f"{url.render_as_string(hide_password=True)}: {reason}")


def shares_one_connection(engine: Engine) -> bool:
    """Whether every use of `engine` goes through one connection (in-memory SQLite)."""
    return isinstance(engine.pool, StaticPool)


def make_engine(
    url: str,
    *,
    busy_timeout_ms: int = 10_000,
    sqlite_synchronous: SqliteSynchronous = "NORMAL",
) -> Engine:
    """An engine for `url`; SQLite files run in WAL mode with a busy timeout, PostgreSQL with
    the same `lock_timeout`."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        hint = f" (a SQLite file is sqlite:///{url})" if "://" not in url and url else ""
        raise DatabaseUnavailable(f"not a database URL: {url!r}{hint}") from None
    if parsed.get_backend_name() != "sqlite":
        try:
            engine = sa.create_engine(parsed, pool_pre_ping=True, json_serializer=serialize_json)
        except sa.exc.NoSuchModuleError:
            raise DatabaseUnavailable(
                f"not a database URL sessionstore knows: {parsed.drivername!r} "
                "(use sqlite:///FILE or postgresql+psycopg://...)"
            ) from None
        except ModuleNotFoundError as exc:
            raise DatabaseUnavailable(
                f"the driver for {parsed.drivername} is not installed ({exc.name}); "
                "for PostgreSQL: pip install 'sessionstore[postgres]'"
            ) from None
        if parsed.get_backend_name() == "postgresql":
            _limit_lock_waits(engine, busy_timeout_ms)
        return engine
    if sqlite_synchronous not in ("NORMAL", "FULL"):
        raise ValueError(f"sqlite_synchronous must be NORMAL or FULL, not {sqlite_synchronous!r}")
    in_memory = parsed.database in (None, "", ":memory:")
    if in_memory:
        engine = sa.create_engine(
            parsed,
            poolclass=StaticPool,
            connect_args={"check_same_thread": False},
            json_serializer=serialize_json,
        )
    else:
        folder = sqlite_path(parsed).expanduser().resolve().parent
        if not folder.is_dir():
            raise DatabaseUnavailable(f"cannot open {parsed.database}: no folder {folder}")
        engine = sa.create_engine(
            parsed,
            connect_args={"timeout": busy_timeout_ms / 1000},
            json_serializer=serialize_json,
        )
    _use_explicit_transactions(engine, in_memory, busy_timeout_ms, sqlite_synchronous)
    return engine


def _use_explicit_transactions(
    engine: Engine, in_memory: bool, busy_timeout_ms: int, synchronous: SqliteSynchronous
) -> None:
    @sa.event.listens_for(engine, "connect")
    def configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, below
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def begin(connection: sa.Connection) -> None:
        write = connection.get_execution_options().get(WRITE, False)
        # On the sqlite3 connection itself: through SQLAlchemy's statement machinery this
        # BEGIN was a tenth of an append (about 45 of 500 us, measured A/B in one process).
        driver: Any = connection.connection.driver_connection
        try:
            driver.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:  # raised outside SQLAlchemy's wrapping of driver errors
            raise driver_error("BEGIN", exc) from exc


def driver_error(statement: str, exc: sqlite3.Error) -> sa.exc.DBAPIError:
    """A sqlite3 error raised where SQLAlchemy does not wrap it, wrapped as SQLAlchemy would
    (`OperationalError` for "locked" or "full", `DatabaseError` for "not a database", ...), so
    the store turns it into its own typed error in one place."""
    wrapped = sa.exc.DBAPIError.instance(statement, None, exc, sqlite3.Error)
    assert isinstance(wrapped, sa.exc.DBAPIError)  # a DB-API exception is never re-raised as is
    return wrapped


def sqlite_path(url: sa.URL) -> Path:
    """The file a SQLite URL opens: its database, or the path of a `file:` URI."""
    database = str(url.database)
    if url.query.get("uri") == "true" and database.startswith("file:"):
        database = database.removeprefix("file:").split("?", 1)[0]
    return Path(database)


def _limit_lock_waits(engine: Engine, busy_timeout_ms: int) -> None:
    """PostgreSQL waits at most `busy_timeout_ms` for each lock (its `lock_timeout`), then
    ends the statement with `LockWaitTimeout`. Its 0 would mean "wait forever", so the
    shortest wait is 1 ms (SQLite's 0 means "do not wait")."""
    lock_timeout_ms = max(1, int(busy_timeout_ms))

    @sa.event.listens_for(engine, "connect")
    def set_lock_timeout(dbapi_connection: Any, _record: Any) -> None:
        # Outside a transaction: the pool's rollback on check-in would undo a SET made in one.
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        try:
            cursor = dbapi_connection.cursor()
            cursor.execute(f"SET lock_timeout = {lock_timeout_ms}")
            cursor.close()
        finally:
            dbapi_connection.autocommit = autocommit

    @sa.event.listens_for(engine, "handle_error")
    def name_lock_waits(context: sa.engine.ExceptionContext) -> sa.exc.StatementError | None:
        error, orig = context.sqlalchemy_exception, context.original_exception
        if isinstance(error, sa.exc.OperationalError) and _sqlstate(orig) == "55P03":
            return LockWaitTimeout(error, orig, lock_timeout_ms)
        return None


def _sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE of a driver error (psycopg 3 and psycopg2 name it differently)."""
    code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    return code if isinstance(code, str) else None
