"""The PostgreSQL recorder: JSONB payloads, bounded lock waits, and migrations under an advisory
lock.

No statement waits forever for a lock another transaction holds: `busy_timeout_ms` becomes
PostgreSQL's `lock_timeout`, set on each new connection (outside a transaction, so whatever
`options` the URL carries, a `statement_timeout` say, still apply). A wait that runs out ends the
statement with SQLSTATE 55P03 and is `DatabaseUnavailable`, saying so; the transaction is rolled
back, so nothing is changed.

Scale-out: the URL option `partitions=N` (`postgresql+psycopg://host/db?partitions=16`) asks
for the schema to be created with every table hash-partitioned into N partitions, by session
(`blobs`, shared by sessions, by digest), and `events` keyed by (position, session_id), which
is what a Citus distribution by `session_id` needs too. The option is the database's layout,
so it travels with the URL that names the database: through `SessionStore(url)`, `--db`,
`$SESSIONSTORE_URL`, and `alembic upgrade head`, whose revisions read it from the connection
(the `sessionstore_partitions` execution option; the driver never sees it). It is chosen
when the schema is created and cannot change afterwards: a URL that asks for another layout
than the database has is `SchemaMismatch`. Every statement is the same on both layouts.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from store._errors import DatabaseUnavailable, SchemaMismatch
from store._recorder import DatabaseState
from store._schema import events
from store._sql import SqlRecorder, serialize_json, shown_url, state_of

_MIGRATION_LOCK = 0x5E55_1045  # an arbitrary, fixed advisory-lock key for sessionstore migrations

PARTITIONS = "partitions"
"""The URL option that asks for hash-partitioned tables, and how many partitions each gets."""
PARTITIONS_OPTION = "sessionstore_partitions"
"""The execution option that carries it to the Alembic revisions, on every connection."""
MAX_PARTITIONS = 1024

_PARTITIONS_OF_EVENTS = sa.text(
    "SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass('events')"
)


class LockWaitTimeout(sa.exc.OperationalError):
    """PostgreSQL ended a statement that waited `lock_timeout` for another transaction's lock
    (SQLSTATE 55P03, `psycopg.errors.LockNotAvailable`, an `OperationalError` like the rest)."""

    def __init__(self, error: sa.exc.DBAPIError, orig: BaseException, waited_ms: int) -> None:
        super().__init__(error.statement, error.params, orig)
        self.waited_ms = waited_ms


class PostgresRecorder(SqlRecorder):
    """PostgreSQL through psycopg (or any SQLAlchemy PostgreSQL driver)."""

    def __init__(self, url: sa.URL, *, busy_timeout_ms: int) -> None:
        self.partitions = partitions_asked(url)
        """Partitions per table the URL asks for (`None`: it does not say)."""
        options = {PARTITIONS_OPTION: self.partitions} if self.partitions else {}
        try:
            engine = sa.create_engine(
                url.difference_update_query([PARTITIONS]),
                pool_pre_ping=True,
                json_serializer=serialize_json,
                execution_options=options,
            )
        except ModuleNotFoundError as exc:
            raise DatabaseUnavailable(
                f"the driver for {url.drivername} is not installed ({exc.name}); "
                "for PostgreSQL: pip install 'sessionstore[postgres]'"
            ) from None
        _limit_lock_waits(engine, max(1, int(busy_timeout_ms)))
        super().__init__(engine)
        self.url = url  # as given, its options included: the URL messages show

    def _unavailable(self, exc: sa.exc.DBAPIError) -> DatabaseUnavailable:
        if isinstance(exc, LockWaitTimeout):
            return DatabaseUnavailable(
                f"{shown_url(self.url)}: waited {exc.waited_ms:,} ms for a lock another "
                "transaction holds (SessionStore(busy_timeout_ms=...)); rolled back, nothing "
                "was changed: try again"
            )
        return super()._unavailable(exc)

    def _insert_ignoring(self, table: sa.Table) -> sa.Insert:
        return pg_insert(table).on_conflict_do_nothing()

    def _payload_bytes(self) -> sa.ColumnElement[int]:
        return sa.func.octet_length(sa.cast(events.c.payload, sa.Text))

    def database_state(self) -> DatabaseState:
        """What the database holds; `SchemaMismatch` when it is ours but laid out otherwise than
        the URL's `partitions` asks (a layout is chosen once, when the schema is created)."""
        with self._reading() as conn:
            state = state_of(conn)
            if self.partitions is None or state.revision is None or "events" not in state.tables:
                return state
            found = int(conn.execute(_PARTITIONS_OF_EVENTS).scalar_one())
        if found != self.partitions:
            layout = f"{found} partitions per table" if found else "unpartitioned tables"
            raise SchemaMismatch(
                f"{shown_url(self.url)} asks for {self.partitions} partitions per table, but the "
                f"database was created with {layout}; the layout is chosen when the schema is "
                f"created (open it without `{PARTITIONS}=`)"
            )
        return state

    def _migration_lock(self, conn: sa.Connection) -> None:
        """Two processes opening the same empty database must not both create the schema: the
        second waits here, then finds it created."""
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})


def partitions_asked(url: sa.URL) -> int | None:
    """The URL's `partitions` option: a whole number from 1 to `MAX_PARTITIONS`, or `None`."""
    value = url.query.get(PARTITIONS)
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)
        if 1 <= number <= MAX_PARTITIONS:
            return number
    raise DatabaseUnavailable(
        f"{shown_url(url)}: {PARTITIONS} must be a whole number from 1 to {MAX_PARTITIONS}, "
        f"not {value!r}"
    )


def _limit_lock_waits(engine: sa.Engine, lock_timeout_ms: int) -> None:
    """PostgreSQL waits at most `lock_timeout_ms` for each lock. Its 0 would mean "wait
    forever", so the shortest wait is 1 ms (SQLite's 0 means "do not wait")."""

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
