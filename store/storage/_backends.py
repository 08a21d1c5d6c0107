"""Which recorder a database URL opens: SQLite files (and `:memory:`), PostgreSQL, or a
memory database (`memory://`, `memory://NAME`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from sessionstore.events import DatabaseUnavailable
from sessionstore.storage._memory import MEMORY, MemoryRecorder
from sessionstore.storage._recorder import Recorder
from sessionstore.storage._sql import SqlRecorder
from sessionstore.storage._sqlite import SqliteRecorder, SqliteSynchronous, sqlite_file

PARTITIONS = "partitions"
"""The URL option that asks for hash-partitioned tables, and how many partitions each gets
(PostgreSQL's alone)."""
MAX_PARTITIONS = 1024
DEFAULT_URL = "sqlite:///sessions.db"
URL_ENV = "SESSIONSTORE_URL"


def resolve_url(url: str | None) -> str:
    """The URL given, else `$SESSIONSTORE_URL`, else `sessions.db` in the current folder."""
    return url or os.environ.get(URL_ENV) or DEFAULT_URL


def open_recorder(
    url: str,
    *,
    busy_timeout_ms: int = 10_000,
    sqlite_synchronous: SqliteSynchronous = "NORMAL",
) -> Recorder:
    """The recorder for `url`; `DatabaseUnavailable` for a URL no recorder takes. The options
    are SQL's (a memory database never waits and has nothing to sync)."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        hint = f" (a SQLite file is sqlite:///{url})" if "://" not in url and url else ""
        raise DatabaseUnavailable(f"not a database URL: {url!r}{hint}") from None
    backend = parsed.get_backend_name()
    if backend in ("sqlite", MEMORY) and PARTITIONS in parsed.query:
        raise DatabaseUnavailable(
            f"{parsed.render_as_string(hide_password=True)}: `{PARTITIONS}` is an option "
            "of PostgreSQL URLs (tables hash-partitioned by session); "
            f"{'SQLite' if backend == 'sqlite' else 'a memory database'} has none"
        )
    if backend == "sqlite":
        return SqliteRecorder(
            parsed, busy_timeout_ms=busy_timeout_ms, synchronous=sqlite_synchronous
        )
    if backend == "postgresql":
        # imported only here: its dialect takes longer to import than the SQLite one
        from sessionstore.storage._postgres import PostgresRecorder

        return PostgresRecorder(parsed, busy_timeout_ms=busy_timeout_ms)
    if backend == MEMORY:
        return MemoryRecorder(parsed)
    raise DatabaseUnavailable(
        f"not a database URL sessionstore knows: {parsed.drivername!r} "
        "(use sqlite:///FILE, postgresql+psycopg://... or memory://)"
    )


@contextmanager
def migration_connection(url: str) -> Iterator[sa.Connection]:
    """A connection to `url`'s database made as the store makes its own (the dialect's
    settings, PostgreSQL's `partitions`), in a write transaction's mode: what Alembic run by
    hand (`alembic upgrade head`) migrates through. A memory database has no schema to
    migrate: `DatabaseUnavailable`."""
    recorder = open_recorder(url)
    try:
        if not isinstance(recorder, SqlRecorder):
            raise DatabaseUnavailable(
                f"{recorder.shown_url} is no SQL database: there is no schema to migrate"
            )
        with recorder.migration_connection() as conn:
            yield conn
    finally:
        recorder.close()


def database_file(url: str) -> Path | None:
    """The file a URL's database lives in (a SQLite file), `None` when it is no plain file."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        return None
    return sqlite_file(parsed) if parsed.get_backend_name() == "sqlite" else None
