"""The PostgreSQL recorder: JSONB payloads, bounded lock waits, and migrations under an advisory
lock.

No statement waits forever for a lock another transaction holds: `busy_timeout_ms` becomes
PostgreSQL's `lock_timeout`, set on each new connection (outside a transaction, so whatever
`options` the URL carries, a `statement_timeout` say, still apply). A wait that runs out ends the
statement with SQLSTATE 55P03 and is `DatabaseUnavailable`, saying so; the transaction is rolled
back, so nothing is changed.

Scale-out: the URL option `partitions=N` (`postgresql+psycopg://host/db?partitions=16`) asks
for the schema to be created with every table hash-partitioned into N partitions, by session,
and `events` keyed by (position, session_id), which
is what a Citus distribution by `session_id` needs too. The option is the database's layout,
so it travels with the URL that names the database: through `SessionStore(url)`, `--db`,
`$SESSIONSTORE_URL`, and `alembic upgrade head`, whose revisions read it from the connection
(the `sessionstore_partitions` execution option; the driver never sees it). It is chosen
when the schema is created and cannot change afterwards: a URL that asks for another layout
than the database has is `SchemaMismatch`. Every statement is the same on both layouts.

Many servers: on the coordinator of a Citus cluster, `distribute` spreads every table by
session (`DISTRIBUTION`), on either layout. A recorder that finds its tables distributed
(`database_state`, at open) writes as plain statements in one transaction, each routed to the
session's worker, rather than as the one statement below (which Citus would split into
distributed subplans and a two-phase commit), and sets `lock_timeout` in each write's
transaction, which Citus passes on to its workers.

Roles: a redaction deletes its bodies through `REDACTED_BODIES`, a function that checks that a
redaction of the session names them and runs as its owner, so the role an application
connects as needs no DELETE on `blobs`; `grant` gives a role exactly what the store does
(`APPLICATION_PRIVILEGES`), which keeps events insert-only and bodies deleted only by
redactions for that role by grants alone, on one server and on Citus.

An append on psycopg is one statement, sent on an autocommit connection, so it is its own
transaction and one round trip: a data-modifying `WITH` moves the head (or inserts the
`sessions` row), inserts the events and the session's bodies only for a head that moved, and
returns the events' positions; none means the head had moved on (`LostRace`). A body is the
session's own row (revision 0008), so nothing but the session's head orders two writes: a
redaction and an append of one session both move it, and the second to commit finds it
moved. Through SQLAlchemy the same append was BEGIN,
four or five statements and COMMIT: 8 writer processes made 818 appends/s against 4,325 for
raw INSERT + COMMIT on this machine. A pooled connection
is pinged before use only after it sat idle for `PING_AFTER_IDLE_S` (a ping on every checkout
was one round trip more per append), which still finds a connection the server closed while
the store was quiet. The arrays go in binary (`%(name)b`): psycopg's text format escaped every
payload and body with a regular expression, a sixth of an append's time.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from sessionstore.events import (
    DatabaseUnavailable,
    InvalidArgument,
    Phrases,
    SchemaMismatch,
    SearchEntry,
)
from sessionstore.storage._backends import MAX_PARTITIONS, PARTITIONS
from sessionstore.storage._recorder import (
    BodyRow,
    DatabaseState,
    EventRow,
    Head,
    LostRace,
    NewSession,
    SessionMetadata,
    compactions_in,
)
from sessionstore.storage._schema import (
    DISTRIBUTION,
    REDACTED_BODIES,
    events,
    search_index,
    sessions,
)
from sessionstore.storage._sql import (
    PAGE,
    Matching,
    SqlRecorder,
    serialize_json,
    shown_url,
    state_of,
)

_EXTENSION_RELATIONS = sa.text(
    "SELECT c.relname FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass "
    "AND d.objid = c.oid AND d.deptype = 'e' "
    "WHERE c.relnamespace = current_schema()::regnamespace"
)
"""The relations of the current schema that belong to an extension (dependency type `e`)."""
_MIGRATION_LOCK = 0x5E55_1045  # an arbitrary, fixed advisory-lock key for sessionstore migrations

PARTITIONS_OPTION = "sessionstore_partitions"
"""The execution option that carries it to the Alembic revisions, on every connection."""

PING_AFTER_IDLE_S = 2.0
"""A pooled connection idle this long is pinged before it is used again."""

_MOVE_HEAD = """UPDATE sessions SET head_seq = %(new_seq)s, head_hash = %(new_hash)s,
    updated_at = %(new_time)s, live_tokens = %(live_tokens)s,
    compactions = compactions + %(compacted)s
    WHERE id = %(session_id)s AND head_seq = %(read_seq)s RETURNING id"""
_NEW_SESSION = """INSERT INTO sessions (id, title, head_seq, head_hash, parent_id, parent_seq,
    created_at, updated_at, context_window, live_tokens, compactions) VALUES (%(session_id)s,
    %(title)s, %(new_seq)s, %(new_hash)s, %(parent_id)s, %(parent_seq)s, %(created_at)s,
    %(new_time)s, %(context_window)s, %(live_tokens)s, %(compacted)s) RETURNING id"""
_WRITE = """WITH head AS ({head}),
written AS (
    INSERT INTO events (session_id, seq, event_id, type, schema_version, recorded_at, prev_hash,
        hash, payload)
    SELECT head.id, e.seq, e.event_id, e.type, e.schema_version, e.recorded_at, e.prev_hash,
        e.hash, e.payload::jsonb
    FROM head, {events}
    RETURNING position, seq
){bodies}{indexed}
SELECT position FROM written ORDER BY seq"""
"""One write as one statement: the head moved (or the session created), its events, its bodies
(`_BODIES`) and its index rows (`_INDEXED`); the events and bodies come as an array a column
(`_EVENT_ARRAYS`, `_BODY_ARRAYS`) or as a parameter a value (`_small_append`)."""
_EVENT_ARRAYS = """unnest(%(seq)b::integer[], %(event_id)b::text[], %(type)b::text[],
        %(schema_version)b::integer[], %(recorded_at)b::timestamptz[], %(prev_hash)b::text[],
        %(hash)b::text[], %(payload)b::text[])
        AS e(seq, event_id, type, schema_version, recorded_at, prev_hash, hash, payload)"""
_BODIES = """,
bodies AS (
    INSERT INTO blobs (session_id, digest, size, compression, data)
    SELECT head.id, b.digest, b.size, b.compression, b.data FROM head, {source}
    ON CONFLICT DO NOTHING
)"""
_BODY_ARRAYS = """unnest(%(digest)b::text[], %(size)b::bigint[], %(compression)b::text[],
        %(data)b::bytea[]) AS b(digest, size, compression, data)"""
_INDEXED = """,
indexed AS (
    INSERT INTO search_index (session_id, seq, part, chunk, role, event_type, digest,
        recorded_at, terms)
    SELECT head.id, i.seq, i.part, i.chunk, i.role, i.event_type, i.digest, i.recorded_at,
        to_tsvector('simple', i.terms)
    FROM head, unnest(%(i_seq)b::integer[], %(i_part)b::integer[], %(i_chunk)b::integer[],
        %(i_role)b::text[], %(i_event_type)b::text[], %(i_digest)b::text[],
        %(i_recorded_at)b::timestamptz[], %(i_terms)b::text[])
        AS i(seq, part, chunk, role, event_type, digest, recorded_at, terms)
)"""
"""The search index's rows of the write, one array a column (a write indexes a few texts)."""
_ARRAY_PARTS = {
    "events": _EVENT_ARRAYS,
    "bodies": _BODIES.format(source=_BODY_ARRAYS),
    "indexed": _INDEXED,
}
_APPEND_AFTER = _WRITE.format(head=_MOVE_HEAD, **_ARRAY_PARTS)
_APPEND_NEW = _WRITE.format(head=_NEW_SESSION, **_ARRAY_PARTS)

SMALL_ROWS = 4
SMALL_BODIES = 8
"""A write of at most this many events and bodies (an agent loop's append: one message and
its texts) binds each value as a parameter of its own, in a statement made for its shape
(`_small_append`); a larger one binds an array per column (`_APPEND_AFTER`). psycopg dumps a
scalar in C, but an array element by element in Python: for one event, the arrays were half
of the client's time in `write` (8 writer processes share 2 cores with the server here, so
the client's CPU is the appends' rate)."""

_EVENT_COLUMNS = (
    ("seq", "integer"),
    ("event_id", "text"),
    ("type", "text"),
    ("schema_version", "integer"),
    ("recorded_at", "timestamptz"),
    ("prev_hash", "text"),
    ("hash", "text"),
    ("payload", "text"),
)
_BODY_COLUMNS = (("digest", "text"), ("size", "bigint"), ("compression", "text"), ("data", "bytea"))

_FORMAT = {"bytea": "b", "integer": "s", "bigint": "s", "text": "s", "timestamptz": "s"}
"""How each column's parameter is sent: bytes in binary (as text they would be escaped)."""


@functools.cache
def _small_append(new_session: bool, rows: int, bodies: int, indexed: bool) -> str:
    """`_WRITE` for `rows` events and `bodies` bodies, each value its own parameter
    (`seq_0`, `event_id_0`... `digest_0`...): the same statement for each shape once; the
    search index's rows as arrays, when the write has any."""

    def row(prefix: str, columns: tuple[tuple[str, str], ...], n: int) -> str:
        marks = [
            f"%({name}_{n}){'b' if kind == 'bytea' else 's'}::{kind}" for name, kind in columns
        ]
        return f"({prefix}{', '.join(marks)})"

    events = ", ".join(row("", _EVENT_COLUMNS, n) for n in range(rows))
    with_bodies = ""
    if bodies:
        values = ", ".join(row("", _BODY_COLUMNS, n) for n in range(bodies))
        with_bodies = _BODIES.format(
            source=f"(VALUES {values}) AS b(digest, size, compression, data)"
        )
    return _WRITE.format(
        head=_NEW_SESSION if new_session else _MOVE_HEAD,
        events=f"(VALUES {events}) AS e(seq, event_id, type, schema_version, recorded_at, "
        "prev_hash, hash, payload)",
        bodies=with_bodies,
        indexed=_INDEXED if indexed else "",
    )


_ROW_FIELDS = EventRow._fields[1:]
"""An `events` row's columns after its session id, as `EventRow` orders them (`seq` ...
`payload`): the arrays' names, and the small statement's parameters with their index."""
assert tuple(name for name, _ in _EVENT_COLUMNS) == _ROW_FIELDS

_CITUS = sa.text("SELECT count(*) FROM pg_extension WHERE extname = 'citus'")
_IS_DISTRIBUTED = sa.text(
    "SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(:t))"
)
_DELETE_REDACTED_BODIES = sa.text(
    "SELECT sessionstore_delete_redacted_bodies(:session_id, :digests)"
)
APPLICATION_PRIVILEGES: dict[str, tuple[str, ...]] = {
    "sessions": ("SELECT", "INSERT", "UPDATE"),
    "events": ("SELECT", "INSERT"),
    "blobs": ("SELECT", "INSERT"),
    "snapshots": ("SELECT", "INSERT", "DELETE"),
    "session_tags": ("SELECT", "INSERT", "DELETE"),
    "search_index": ("SELECT", "INSERT", "DELETE"),
    "alembic_version": ("SELECT",),
}
"""What the store does to each table, and so all that `grant` lets an application's role do:
a head moves (`sessions` UPDATE); events and bodies are only inserted (a redaction deletes
bodies through `REDACTED_BODIES`); a snapshot, a tag or an index row may be replaced or
forgotten. The revision is only read: the owner migrates."""
_ROLE = sa.text(
    "SELECT r.rolsuper, EXISTS (SELECT 1 FROM pg_tables t WHERE t.tablename = 'events' "
    "AND t.schemaname = current_schema() AND t.tableowner = r.rolname) AS owns "
    "FROM pg_roles r WHERE r.rolname = :role"
)
_DELEGATED_REDACTED_BODIES = """CREATE OR REPLACE FUNCTION
sessionstore_delete_redacted_bodies(of_session varchar, digests text[])
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  redactions jsonb;
BEGIN
  SELECT jsonb_agg(payload -> 'digests') INTO redactions FROM events
    WHERE session_id = of_session AND type = 'ContentRedacted';
  IF NOT digests <@ ARRAY(
    SELECT jsonb_array_elements_text(jsonb_array_elements(coalesce(redactions, '[]')))
  ) THEN
    RAISE EXCEPTION 'blobs: DELETE refused (a body is deleted only by a redaction that names it)'
      USING ERRCODE = 'restrict_violation';
  END IF;
  EXECUTE format('DELETE FROM %s WHERE session_id = $1 AND digest = ANY($2)',
    shard_name('blobs'::regclass, get_shard_id_for_distribution_column('blobs', of_session)))
    USING of_session, digests;
END
$$"""
"""On Citus, the redaction's function (revision 0010) as it runs on the session's worker,
where `distribute` delegates every call of it, inside the caller's transaction
(`force_delegation`): so the rows the caller's transaction wrote there are the ones it reads,
and its owner's rights are taken on that worker, over the caller's own connection (on the
coordinator they would need a second connection to the worker, as another user, which Citus
refuses within one transaction). It checks the redaction as the revision's does, then
deletes from the session's shard of `blobs`, found by the session: a DELETE of the
distributed table would be checked by Citus against the delegated session with a collation
and length it does not carry (Citus 13.2 compares the two constants whole), and refused."""
_DELEGATE_REDACTED_BODIES = sa.text(
    "SELECT create_distributed_function(:f, 'of_session', colocate_with => 'sessions', "
    "force_delegation => true)"
)
_IS_DELEGATED = sa.text(
    "SELECT EXISTS (SELECT 1 FROM pg_dist_object WHERE classid = 'pg_proc'::regclass "
    "AND objid = to_regprocedure(:f) AND distribution_argument_index IS NOT NULL)"
)
_SHARD_GUARDS_OF_BLOBS = (
    "DROP TRIGGER IF EXISTS blobs_guard ON blobs",
    """CREATE OR REPLACE FUNCTION sessionstore_refuse_blob_update() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'blobs: UPDATE refused (a body never changes)'
        USING ERRCODE = 'restrict_violation';
    END
    $$""",
    """CREATE TRIGGER blobs_refuse_update BEFORE UPDATE ON blobs
    FOR EACH ROW EXECUTE FUNCTION sessionstore_refuse_blob_update()""",
)
"""On Citus, `blobs`' guard becomes what a shard can check alone (see `distribute`)."""

_PARTITIONS_OF_EVENTS = sa.text(
    "SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass('events')"
)


class LockWaitTimeout(sa.exc.OperationalError):
    """PostgreSQL ended a statement that waited `lock_timeout` for another transaction's lock
    (SQLSTATE 55P03, `psycopg.errors.LockNotAvailable`, an `OperationalError` like the rest)."""

    def __init__(self, error: sa.exc.DBAPIError, orig: BaseException, waited_ms: int) -> None:
        super().__init__(error.statement, error.params, orig)
        self.waited_ms = waited_ms


_HOLD_SESSION = (
    sa.select(sessions.c.id)
    .where(sessions.c.id == sa.bindparam("session_id"))
    .with_for_update(read=True)
)


class PostgresRecorder(SqlRecorder):
    """PostgreSQL through psycopg (or any SQLAlchemy PostgreSQL driver)."""

    def __init__(self, url: sa.URL, *, busy_timeout_ms: int) -> None:
        self.partitions = partitions_asked(url)
        """Partitions per table the URL asks for (`None`: it does not say)."""
        options = {PARTITIONS_OPTION: self.partitions} if self.partitions else {}
        try:
            engine = sa.create_engine(
                url.difference_update_query([PARTITIONS]),
                json_serializer=serialize_json,
                execution_options=options,
            )
        except ModuleNotFoundError as exc:
            raise DatabaseUnavailable(
                f"the driver for {url.drivername} is not installed ({exc.name}); "
                "for PostgreSQL: pip install 'sessionstore[postgres]'"
            ) from None
        self._lock_timeout_ms = max(1, int(busy_timeout_ms))
        _limit_lock_waits(engine, self._lock_timeout_ms)
        _ping_when_idle(engine)
        super().__init__(engine)
        self.url = url  # as given, its options included: the URL messages show
        self._psycopg = engine.dialect.driver == "psycopg"
        self._distributed = False
        """Whether Citus spreads the tables, as last found (`database_state`): an append is
        then plain statements, each routed to the session's worker (see `distribute`)."""

    def write(
        self,
        session_id: str,
        after: Head | None,
        rows: Sequence[EventRow],
        new: NewSession | None = None,
        bodies: Sequence[BodyRow] = (),
        forget: Sequence[str] = (),
        metadata: SessionMetadata | None = None,
        title: str | None = None,
        live_tokens: int | None = None,
        index: Sequence[SearchEntry] = (),
        unindex: Sequence[str] = (),
    ) -> list[int]:
        """One statement on psycopg (see the module's docstring), its index rows included; a
        redaction, new metadata or title, a batch over a page, or another driver take the
        general path."""
        changes_row = metadata is not None or title is not None
        general = forget or unindex or changes_row or len(rows) > PAGE
        if not self._psycopg or self._distributed or general:
            return super().write(
                session_id,
                after,
                rows,
                new,
                bodies,
                forget,
                metadata,
                title,
                live_tokens,
                index,
                unindex,
            )
        last = rows[-1]
        params: dict[str, Any] = {
            "session_id": session_id,
            "new_seq": last.seq,
            "new_hash": last.hash,
            "new_time": last.recorded_at,
            "live_tokens": live_tokens,
            "compacted": compactions_in(rows),
            "i_seq": [entry.seq for entry in index],
            "i_part": [entry.part for entry in index],
            "i_chunk": [entry.chunk for entry in index],
            "i_role": [entry.role for entry in index],
            "i_event_type": [entry.event_type for entry in index],
            "i_digest": [entry.digest for entry in index],
            "i_recorded_at": [entry.recorded_at for entry in index],
            "i_terms": [entry.terms for entry in index],
        }
        small = len(rows) <= SMALL_ROWS and len(bodies) <= SMALL_BODIES
        if small:
            for n, event in enumerate(rows):
                params.update(
                    {
                        f"{name}_{n}": value
                        for name, value in zip(_ROW_FIELDS, event[1:], strict=True)
                    }
                )
            for n, body in enumerate(bodies):
                params[f"digest_{n}"] = body.digest
                params[f"size_{n}"] = body.size
                params[f"compression_{n}"] = body.compression
                params[f"data_{n}"] = bytes(body.data)
            statement = _small_append(after is None, len(rows), len(bodies), bool(index))
        else:
            for n, name in enumerate(_ROW_FIELDS, start=1):
                params[name] = [row[n] for row in rows]
            params["digest"] = [body.digest for body in bodies]
            params["size"] = [body.size for body in bodies]
            params["compression"] = [body.compression for body in bodies]
            params["data"] = [bytes(body.data) for body in bodies]
            statement = _APPEND_NEW if after is None else _APPEND_AFTER
        if after is None:
            assert new is not None, "a new session's first write names its sessions row"
            params.update(
                title=new.title,
                parent_id=new.parent_id,
                parent_seq=new.parent_seq,
                created_at=rows[0].recorded_at,
                context_window=new.context_window,
            )
        else:
            params["read_seq"] = after.seq
        with self._autocommit(statement) as driver:
            positions = [row[0] for row in driver.execute(statement, params).fetchall()]
        if len(positions) != len(rows):
            raise LostRace  # the head had moved: nothing was written
        return positions

    @contextlib.contextmanager
    def _autocommit(self, statement: str) -> Iterator[Any]:
        """The pooled psycopg connection itself, in autocommit for one statement; its errors
        typed as the store's, as SQLAlchemy's would be."""
        import psycopg

        with self._errors():
            try:  # the pool's connect and checkout ping raise the driver's errors as they are
                pooled = self.engine.raw_connection()
            except psycopg.Error as exc:
                raise self._driver_error(statement, exc) from exc
            try:
                driver: psycopg.Connection[Any] = pooled.driver_connection  # type: ignore[assignment]
                try:
                    driver.autocommit = True  # on a connection the server dropped, this fails
                    yield driver
                except psycopg.IntegrityError:
                    raise LostRace from None
                except psycopg.Error as exc:
                    if driver.broken or driver.closed:  # not back into the pool: a new one next
                        pooled.invalidate(exc)
                    raise self._driver_error(statement, exc) from exc
                finally:
                    with contextlib.suppress(psycopg.Error):
                        if not driver.broken and not driver.closed:
                            driver.autocommit = False
            finally:
                pooled.close()

    def _driver_error(self, statement: str, exc: Exception) -> sa.exc.DBAPIError:
        import psycopg

        wrapped = sa.exc.DBAPIError.instance(statement, None, exc, psycopg.Error)
        assert isinstance(wrapped, sa.exc.DBAPIError)
        if isinstance(wrapped, sa.exc.OperationalError) and _sqlstate(exc) == "55P03":
            return LockWaitTimeout(wrapped, exc, self._lock_timeout_ms)
        return wrapped

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

    def _hold_session(self, conn: sa.Connection, session_id: str) -> None:
        """A share lock on the session's row: an append moving its head (a redaction's)
        waits for this transaction to end, or this one waits for it to commit, and then
        (read committed) the statements after this one see its events."""
        conn.execute(_HOLD_SESSION, {"session_id": session_id}).all()

    def _forget_bodies(self, conn: sa.Connection, session_id: str, digests: Sequence[str]) -> None:
        """Through the function that checks the redaction names them (revision 0010), so that
        the application's role needs no DELETE on `blobs` (`grant`)."""
        conn.execute(_DELETE_REDACTED_BODIES, {"session_id": session_id, "digests": list(digests)})

    def _insert_index(self) -> sa.Insert:
        return search_index.insert().values(
            terms=sa.func.to_tsvector(_SIMPLE, sa.bindparam("terms", type_=sa.Text))
        )

    def _matching(self, phrases: Phrases) -> Matching:
        query = sa.func.to_tsquery(_SIMPLE, sa.bindparam("tsquery", ts_query(phrases)))
        return search_index.c.terms.bool_op("@@")(query)

    def _payload_bytes(self) -> sa.ColumnElement[int]:
        return sa.func.octet_length(sa.cast(events.c.payload, sa.Text))

    def database_state(self) -> DatabaseState:
        """What the database holds; `SchemaMismatch` when it is ours but laid out otherwise than
        the URL's `partitions` asks (a layout is chosen once, when the schema is created)."""
        with self._reading() as conn:
            state = self._state(conn)
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

    def _state(self, conn: sa.Connection) -> DatabaseState:
        """`state_of`, leaving out the relations an extension owns: a database with an
        extension that keeps tables or views in the schema (Citus's `citus_tables`,
        `citus_schemas`) is not another application's for that."""
        state = state_of(conn)
        owned = set(conn.execute(_EXTENSION_RELATIONS).scalars())
        if owned & state.tables:
            state = state._replace(tables=state.tables - owned)
        if conn.execute(_CITUS).scalar_one():
            spread = {
                t for t, _ in DISTRIBUTION if conn.execute(_IS_DISTRIBUTED, {"t": t}).scalar()
            }
            self._distributed = bool(spread)
            if conn.execute(_IS_DELEGATED, {"f": REDACTED_BODIES}).scalar_one():
                spread.add(REDACTED_BODIES)
            state = state._replace(distributed=frozenset(spread))
        return state

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sa.Connection]:
        """A write's transaction. On distributed tables its statements run on the workers,
        over connections of Citus's own, which the `lock_timeout` of this one does not reach:
        the transaction sets it again, and Citus sends that `SET LOCAL` along."""
        with super()._writing() as conn:
            if self._distributed:
                conn.exec_driver_sql(
                    "SET LOCAL citus.propagate_set_commands = 'local'; "
                    f"SET LOCAL lock_timeout = {self._lock_timeout_ms}"
                )
            yield conn

    def distribute(self) -> list[str]:
        """Spread the tables over a Citus cluster by session (`sessionstore db distribute`):
        `sessions` by its id, the others by `session_id` colocated with it, so every row of a
        session lives on one worker and each statement of a session goes to that worker alone.
        Then it has Citus run the redaction's function (`REDACTED_BODIES`) on the session's
        worker (`_DELEGATED_REDACTED_BODIES`). Returns what it distributed now, tables and
        function (none when all were: it can be run again).

        For the application's role (`grant`) the grants keep the promises, and need no
        trigger: it can neither change nor delete an event or a body, but delete a body
        through that function, which checks that a redaction names it. For the owner the
        guards that need no other table stay, as triggers on every shard: `events` refuse
        any UPDATE, DELETE or TRUNCATE, `blobs` any UPDATE or TRUNCATE (Citus copies triggers
        to shards only under `citus.enable_unsafe_triggers`, set for this transaction alone;
        they fire without it). The trigger that let the owner delete a body only when a
        redaction names it looks up `events` from a row of `blobs`, which a shard cannot: on
        Citus it is dropped, and `verify` reports a body gone that no redaction deleted.
        `SchemaMismatch` on a database without Citus or not at head."""
        with self._writing() as conn:
            if not conn.execute(_CITUS).scalar_one():
                raise SchemaMismatch(
                    f"{shown_url(self.url)} has no Citus extension (CREATE EXTENSION citus, on "
                    "the coordinator of a cluster) to distribute its tables with"
                )
            state = self._at_head(conn)
            assert state.distributed is not None
            conn.execute(sa.text("SET LOCAL citus.enable_unsafe_triggers = on"))
            if "blobs" not in state.distributed:
                for statement in _SHARD_GUARDS_OF_BLOBS:
                    conn.execute(sa.text(statement))
            done = []
            for table, column in DISTRIBUTION:
                if table in state.distributed:
                    continue
                colocated = "none" if table == "sessions" else "sessions"
                conn.execute(
                    sa.text("SELECT create_distributed_table(:t, :c, colocate_with => :with)"),
                    {"t": table, "c": column, "with": colocated},
                )
                done.append(table)
        self._distributed = True
        # its own transaction: in the one that distributed the tables, Citus's propagation of
        # the function to the nodes waits for a lock that transaction holds (a deadlock)
        with self._writing() as conn:
            if not conn.execute(_IS_DELEGATED, {"f": REDACTED_BODIES}).scalar_one():
                conn.execute(sa.text(_DELEGATED_REDACTED_BODIES))
                conn.execute(_DELEGATE_REDACTED_BODIES, {"f": REDACTED_BODIES})
                done.append(REDACTED_BODIES)
        return done

    def grant(self, role: str) -> list[str]:
        """Let `role` use the store, and no more (`sessionstore db grant ROLE`): what it may do
        to each table (`APPLICATION_PRIVILEGES`), the redaction's function, the sequences,
        and the schema. Whatever it held on the tables before is revoked first, so a role
        granted more by hand is narrowed. Returns a line per table: what it may do now.

        For that role the grants alone keep the promises that triggers keep for the owner:
        no UPDATE, DELETE or TRUNCATE of `events`, no UPDATE or TRUNCATE of `blobs`, and a
        body deleted only through `sessionstore_delete_redacted_bodies`, which checks that a
        redaction of the session names it. They hold on one server and on a Citus cluster
        alike, where Citus passes grants on to every shard. `InvalidArgument` for a role that
        does not exist, is a superuser (whom no grant binds) or owns the tables;
        `SchemaMismatch` for a database not at this version's head."""
        with self._writing() as conn:
            self._at_head(conn)
            found = conn.execute(_ROLE, {"role": role}).first()
            if found is None:
                raise InvalidArgument(
                    f"no role {role!r} on this server: create it first (CREATE ROLE ... LOGIN)"
                )
            if found.rolsuper:
                raise InvalidArgument(
                    f"{role!r} is a superuser, whom no grant binds: grant a role that is not"
                )
            if found.owns:
                raise InvalidArgument(
                    f"{role!r} owns the store's tables, and an owner may do anything to them: "
                    "grant a role of the application's that does not"
                )
            quoted = conn.dialect.identifier_preparer.quote(role)
            schema = conn.dialect.identifier_preparer.quote(
                conn.execute(sa.text("SELECT current_schema()")).scalar_one()
            )
            tables = ", ".join(APPLICATION_PRIVILEGES)
            conn.execute(sa.text(f"GRANT USAGE ON SCHEMA {schema} TO {quoted}"))
            conn.execute(sa.text(f"REVOKE ALL ON {tables} FROM {quoted}"))
            for table, privileges in APPLICATION_PRIVILEGES.items():
                conn.execute(sa.text(f"GRANT {', '.join(privileges)} ON {table} TO {quoted}"))
            conn.execute(sa.text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {quoted}"))
            conn.execute(sa.text(f"GRANT EXECUTE ON FUNCTION {REDACTED_BODIES} TO {quoted}"))
        return [
            f"{table}: {', '.join(privileges)}"
            for table, privileges in APPLICATION_PRIVILEGES.items()
        ] + [f"{REDACTED_BODIES}: EXECUTE (a body is deleted only through it)"]

    def _at_head(self, conn: sa.Connection) -> DatabaseState:
        """The database's state; `SchemaMismatch` unless it is at this version's head."""
        from sessionstore.storage._migrate import head_revision, upgrade_command

        state = self._state(conn)
        if state.revision != head_revision():
            raise SchemaMismatch(
                f"{shown_url(self.url)} is at {state.revision or 'nothing'}, not at this "
                f"version's head {head_revision()}: {upgrade_command(shown_url(self.url))} first"
            )
        return state

    def _migration_lock(self, conn: sa.Connection) -> None:
        """Two processes opening the same empty database must not both create the schema: the
        second waits here, then finds it created."""
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})


_SIMPLE: sa.ColumnElement[str] = sa.literal_column("'simple'::regconfig")
"""The text search configuration of the index: words as they are, no stemming, no stop words
(the words are folded before they get here: `sessionstore.events._search`)."""


def ts_query(phrases: Phrases) -> str:
    """A `to_tsquery` text for every one of `phrases` (`&`), each a phrase of its words
    (`<->`). Their words are letters and digits only: none is tsquery syntax."""
    return " & ".join("(" + " <-> ".join(phrase) + ")" for phrase in phrases)


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


def _ping_when_idle(engine: sa.Engine) -> None:
    """SQLAlchemy's pessimistic disconnect handling, for connections idle `PING_AFTER_IDLE_S`
    or more: one that fails its ping is replaced before anything is sent on it."""

    @sa.event.listens_for(engine, "checkin")
    def note_idle(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @sa.event.listens_for(engine, "checkout")
    def ping(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
            return
        try:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("SELECT 1")
            finally:
                cursor.close()
            dbapi_connection.rollback()
        except Exception as exc:
            raise sa.exc.DisconnectionError(f"idle connection failed its ping: {exc}") from exc


def _sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE of a driver error (psycopg 3 and psycopg2 name it differently)."""
    code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    return code if isinstance(code, str) else None
