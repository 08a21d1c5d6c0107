"""Which recorder a database URL opens: SQLite files (and `:memory:`) or PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa

from sessionstore.events import DatabaseUnavailable
from sessionstore.storage._postgres import PARTITIONS, PostgresRecorder
from sessionstore.storage._sqlite import SqliteRecorder, SqliteSynchronous, sqlite_file

DEFAULT_URL = "sqlite:///sessions.db"
URL_ENV = "SESSIONSTORE_URL"

Backend = SqliteRecorder | PostgresRecorder


def resolve_url(url: str | None) -> str:
    """The URL given, else `$SESSIONSTORE_URL`, else `sessions.db` in the current folder."""
    return url or os.environ.get(URL_ENV) or DEFAULT_URL


def open_recorder(
    url: str,
    *,
    busy_timeout_ms: int = 10_000,
    sqlite_synchronous: SqliteSynchronous = "NORMAL",
) -> Backend:
    """The recorder for `url`; `DatabaseUnavailable` for a URL no recorder takes."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        hint = f" (a SQLite file is sqlite:///{url})" if "://" not in url and url else ""
        raise DatabaseUnavailable(f"not a database URL: {url!r}{hint}") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if PARTITIONS in parsed.query:
            raise DatabaseUnavailable(
                f"{parsed.render_as_string(hide_password=True)}: `{PARTITIONS}` is an option "
                "of PostgreSQL URLs (tables hash-partitioned by session); SQLite has none"
            )
        return SqliteRecorder(
            parsed, busy_timeout_ms=busy_timeout_ms, synchronous=sqlite_synchronous
        )
    if backend == "postgresql":
        return PostgresRecorder(parsed, busy_timeout_ms=busy_timeout_ms)
    raise DatabaseUnavailable(
        f"not a database URL sessionstore knows: {parsed.drivername!r} "
        "(use sqlite:///FILE or postgresql+psycopg://...)"
    )


def database_file(url: str) -> Path | None:
    """The file a URL's database lives in (a SQLite file), `None` when it is no plain file."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        return None
    return sqlite_file(parsed) if parsed.get_backend_name() == "sqlite" else None
