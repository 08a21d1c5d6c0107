"""The SQLite recorder: WAL, explicit transactions, and the hot paths on the sqlite3 connection.

SQLite write transactions start with `BEGIN IMMEDIATE`: pysqlite's lazy `BEGIN` would let a
transaction read the head and then fail at once with "database is locked" when it tries to
write after another process committed (SQLITE_BUSY on lock upgrade ignores the busy timeout).
With the write lock taken up front, racing writers wait their turn and then lose cleanly on
the head check. Reads keep a plain deferred `BEGIN` so they never queue behind writers (WAL lets
them run alongside).

An append and a read of events run on the sqlite3 connection itself: SQLAlchemy's Connection,
transaction and execution machinery was a third of an append and most of a page read
(profiled). They run the Core statements of `_sql`, compiled once for SQLite here (`driver_sql`),
so each statement is written once; what this module does itself is the values' types: times as
SQLAlchemy's SQLite `DATETIME` text (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC), payloads as their JSON
text, exactly what a Core statement writes and reads (tests/recorders reads them back through
both).

No statement waits forever for the lock: `busy_timeout_ms` is SQLite's busy timeout; a wait that
runs out is `DatabaseUnavailable`, rolled back.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.compiler import SQLCompiler

from sessionstore.events import DatabaseUnavailable, Phrases, SearchEntry
from sessionstore.storage._recorder import (
    ALL_SESSIONS,
    BodyRow,
    DatabaseState,
    EventRow,
    Head,
    LostRace,
    NewSession,
    SessionFilter,
    SessionMetadata,
    StoredEvent,
    compactions_in,
)
from sessionstore.storage._rows import SessionInfo
from sessionstore.storage._schema import blobs, events, search_index
from sessionstore.storage._sql import (
    BODIES,
    DROP_TAGS,
    EVENTS_BETWEEN,
    EVERY_INDEXED,
    EVERY_TAG,
    FORGET_BODY,
    HEAD,
    INDEX_COLUMNS,
    INSERT_EVENT,
    INSERT_SESSION,
    INSERT_TAG,
    MOVE_HEAD,
    PAGE,
    SET_METADATA,
    SET_TITLE,
    TAGS_OF,
    UNINDEX,
    VERSION_TABLE,
    WRITE,
    Matching,
    SqlRecorder,
    listing,
    serialize_json,
    shown_url,
)

SqliteSynchronous = Literal["NORMAL", "FULL"]

WAL_AUTOCHECKPOINT_PAGES = 4000
"""The WAL's size, in pages, at which a commit copies it back into the database (SQLite's
default is 1,000, 4 MB). An append writes its bodies and index rows too, so with the
benchmarks' message mix the default checkpointed every 40 to 60 appends, and the append that
did paid for copying and syncing the pages of all of them: at 4,000 (16 MB of WAL) a page
written again before the checkpoint is copied once, and the p95 of an append fell from 5.9
and 5.5 ms to 4.8 and 4.4 ms (two runs of 3,000 and 4,000 mixed messages, the two settings
taking turns in one process). A checkpoint never changes what is durable; `scrub` still
truncates the WAL after a redaction."""

_SQLITE = SQLiteDialect_pysqlite()


class DriverSql(NamedTuple):
    """A Core statement of `_sql` compiled once for the sqlite3 connection (SQLite's dialect,
    `?` parameters). The hot paths run on the driver for speed (see the module's docstring),
    but each statement is still written once, in Core: only its compiling is here."""

    text: str
    fixed: tuple[Any, ...] = ()
    """The values of the parameters after those a call gives, which the statement holds
    itself (a LIMIT's and OFFSET's)."""


def driver_sql(
    statement: sa.ClauseElement, takes: tuple[str, ...], *, columns: bool = False
) -> DriverSql:
    """`statement` for the sqlite3 connection, whose callers give the parameters `takes` in
    that order (positionally, as the driver wants them: no dict per call); for an INSERT
    (`columns`), `takes` are the columns it fills. The order is checked here, on import: a
    change to the Core statement that moves a parameter fails at once, not as a row written
    with its columns swapped."""
    compiled = statement.compile(dialect=_SQLITE, column_keys=list(takes) if columns else None)
    assert isinstance(compiled, SQLCompiler)  # a statement's compiler
    names = tuple(compiled.positiontup or ())
    rest = names[len(takes) :]
    if names[: len(takes)] != takes or any(compiled.params[name] is None for name in rest):
        raise AssertionError(f"{statement} takes {names}, not {takes}")
    return DriverSql(str(compiled), tuple(compiled.params[name] for name in rest))


def insert_ignoring(table: sa.Table) -> sa.Insert:
    """An INSERT into `table` that skips rows whose key is taken."""
    return sqlite_insert(table).on_conflict_do_nothing()


_HEAD = driver_sql(HEAD, ("session_id",))
_EVENTS_BETWEEN = driver_sql(EVENTS_BETWEEN, ("session_id", "low", "high"))
_EVERY_INDEXED = driver_sql(EVERY_INDEXED, ("session_id",))
_MOVE_HEAD = driver_sql(
    MOVE_HEAD,
    ("new_seq", "new_hash", "new_time", "live_tokens", "compacted", "session_id", "read_seq"),
)
_INSERT_SESSION = driver_sql(
    INSERT_SESSION,
    ("id", "title", "head_seq", "head_hash", "parent_id", "parent_seq", "created_at", "updated_at",
     "context_window", "live_tokens", "compactions"),
    columns=True,
)  # fmt: skip
_INSERT_EVENT = driver_sql(
    INSERT_EVENT,
    ("session_id", "seq", "event_id", "type", "schema_version", "payload", "recorded_at",
     "prev_hash", "hash"),
    columns=True,
)  # fmt: skip
"""Its columns in the table's order, which `_event_values` follows."""
_INSERT_BODY = driver_sql(insert_ignoring(blobs), ("session_id", *BodyRow._fields), columns=True)
_FORGET_BODY = driver_sql(FORGET_BODY, ("session_id", "digest"))
_SET_METADATA = driver_sql(SET_METADATA, ("app", "user_id", "session_id"))
_SET_TITLE = driver_sql(SET_TITLE, ("title", "session_id"))
_DROP_TAGS = driver_sql(DROP_TAGS, ("session_id",))
_INSERT_TAG = driver_sql(INSERT_TAG, ("session_id", "tag"), columns=True)
_INSERT_INDEX = driver_sql(search_index.insert(), INDEX_COLUMNS, columns=True)
_UNINDEX = driver_sql(UNINDEX, ("session_id", "digest"))
OPTIMIZE_INDEX = "INSERT INTO search_fts(search_fts) VALUES ('optimize')"
"""FTS5 keeps a deleted row's words in its index segments, under a delete marker, until the
segments are merged: a redaction that deleted index rows merges them all at once, in its own
transaction, so no word of what it deleted is left in `search_fts_data` (the SQLite of Python
3.11 predates FTS5's `secure-delete`). Its cost grows with the whole index, and only
redactions pay it. Freed pages are zeroed (`secure_delete`) and the WAL is truncated after
(`scrub`), as for bodies."""


def fts_query(phrases: Phrases) -> str:
    """An FTS5 query for every one of `phrases`: each in double quotes (a phrase, whatever
    FTS5 would read as syntax), side by side (AND). Their words are letters and digits only."""
    return " ".join('"' + " ".join(phrase) + '"' for phrase in phrases)


def _index_values(session_id: str, entry: SearchEntry) -> tuple[Any, ...]:
    seq, part, chunk, role, event_type, digest, recorded_at, terms = entry
    return (
        session_id, seq, part, chunk, role, event_type, digest, stored_time(recorded_at), terms,
    )  # fmt: skip


@functools.cache
def _bodies(count: int) -> DriverSql:
    """`BODIES` for `count` digests (its IN list expanded, as SQLAlchemy does per call)."""
    statement = BODIES.params(session_id="", digests=[""] * count)
    compiled = statement.compile(dialect=_SQLITE, compile_kwargs={"render_postcompile": True})
    assert isinstance(compiled, SQLCompiler)
    names = ("session_id", *(f"digests_{n}" for n in range(1, count + 1)))
    if tuple(compiled.positiontup or ()) != names:
        raise AssertionError(f"{BODIES} takes {compiled.positiontup}, not {names}")
    return DriverSql(str(compiled))


_EVERY_TAG = driver_sql(EVERY_TAG, ())


@functools.cache
def _tags_of(count: int) -> DriverSql:
    """`TAGS_OF` for `count` session ids (its IN list expanded, as SQLAlchemy does per call)."""
    statement = TAGS_OF.params(ids=[""] * count)
    compiled = statement.compile(dialect=_SQLITE, compile_kwargs={"render_postcompile": True})
    assert isinstance(compiled, SQLCompiler)
    return DriverSql(str(compiled))


def stored_time(moment: datetime) -> str:
    """A UTC time as SQLAlchemy's SQLite `DATETIME` stores it (its default storage format)."""
    moment = moment.astimezone(UTC)
    return "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (  # noqa: UP031 - years below 1000 too
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        moment.microsecond,
    )


def read_time(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _event_values(row: EventRow, times: dict[datetime, str]) -> tuple[Any, ...]:
    """An event's values in `_EVENT_COLUMNS`' order, its time as SQLite's `DATETIME` text
    (from `times`, which a write fills once per time: its events share one)."""
    session_id, seq, event_id, type_, version, recorded_at, prev_hash, hash_, payload = row
    shown = times.get(recorded_at)
    if shown is None:
        shown = times[recorded_at] = stored_time(recorded_at)
    return (session_id, seq, event_id, type_, version, payload, shown, prev_hash, hash_)


def _stored(row: tuple[Any, ...]) -> StoredEvent:
    position, session_id, seq, event_id, type_, version, recorded_at, prev_hash, hash_, text = row
    return StoredEvent(
        position, session_id, seq, event_id, type_, version, read_time(recorded_at), prev_hash,
        hash_, text,
    )  # fmt: skip


def driver_error(statement: str, exc: sqlite3.Error) -> sa.exc.DBAPIError:
    """A sqlite3 error raised where SQLAlchemy does not wrap it, wrapped as SQLAlchemy would
    (`OperationalError` for "locked" or "full", `DatabaseError` for "not a database", ...)."""
    wrapped = sa.exc.DBAPIError.instance(statement, None, exc, sqlite3.Error)
    assert isinstance(wrapped, sa.exc.DBAPIError)  # a DB-API exception is never re-raised as is
    return wrapped


def sqlite_path(url: sa.URL) -> Path:
    """The file a SQLite URL opens: its database, or the path of a `file:` URI."""
    database = str(url.database)
    if url.query.get("uri") == "true" and database.startswith("file:"):
        database = database.removeprefix("file:").split("?", 1)[0]
    return Path(database)


def sqlite_file(url: sa.URL) -> Path | None:
    """The file a SQLite URL names; None for in-memory databases and `file:` URIs (whose
    options SQLite reads itself)."""
    if url.query.get("uri") == "true" or url.database in (None, "", ":memory:"):
        return None
    return Path(str(url.database))


class SqliteRecorder(SqlRecorder):
    """A SQLite file in WAL mode (or an in-memory database, one connection shared under a
    lock). `synchronous` is `NORMAL` (a process crash never loses a commit; a power loss can
    roll back the last few) or `FULL`."""

    def __init__(
        self, url: sa.URL, *, busy_timeout_ms: int, synchronous: SqliteSynchronous
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self._in_memory = url.database in (None, "", ":memory:")
        self._busy_timeout_ms = int(busy_timeout_ms)
        if self._in_memory:
            engine = sa.create_engine(
                url,
                poolclass=StaticPool,
                connect_args={"check_same_thread": False},
                json_serializer=serialize_json,
            )
        else:
            folder = sqlite_path(url).expanduser().resolve().parent
            if not folder.is_dir():
                raise DatabaseUnavailable(f"cannot open {url.database}: no folder {folder}")
            engine = sa.create_engine(
                url,
                connect_args={"timeout": busy_timeout_ms / 1000},
                json_serializer=serialize_json,
            )
        _use_explicit_transactions(engine, self._in_memory, busy_timeout_ms, synchronous)
        super().__init__(engine)
        if self._in_memory:
            # One connection holds the whole database; sqlite3 must not run it on two threads
            # at once (it crashes or nests transactions).
            self._lock = threading.RLock()

    @contextlib.contextmanager
    def _driver(self, statement: str) -> Iterator[sqlite3.Connection]:
        """The pooled sqlite3 connection itself; its errors typed as the store's."""
        with self._errors():
            pooled = self.engine.raw_connection()
            try:
                driver: sqlite3.Connection = pooled.driver_connection  # type: ignore[assignment]
                try:
                    yield driver
                except sqlite3.IntegrityError:
                    raise LostRace from None
                except sqlite3.Error as exc:
                    raise driver_error(statement, exc) from exc
            finally:
                pooled.close()

    # writing

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
        with self._driver("append") as driver:
            driver.execute("BEGIN IMMEDIATE")
            try:
                cursor = driver.cursor()
                last = rows[-1]
                times = {last.recorded_at: stored_time(last.recorded_at)}
                if after is None:
                    assert new is not None, "a new session's first write names its sessions row"
                    cursor.execute(
                        _INSERT_SESSION.text,
                        (
                            session_id,
                            new.title,
                            last.seq,
                            last.hash,
                            new.parent_id,
                            new.parent_seq,
                            stored_time(rows[0].recorded_at),
                            times[last.recorded_at],
                            new.context_window,
                            live_tokens,
                            compactions_in(rows),
                        ),
                    )
                else:
                    moved_to = (last.seq, last.hash, times[last.recorded_at], live_tokens)
                    counted = (*moved_to, compactions_in(rows), session_id, after.seq)
                    cursor.execute(_MOVE_HEAD.text, counted)
                    if cursor.rowcount != 1:
                        raise LostRace
                positions = []
                for row in rows:
                    cursor.execute(_INSERT_EVENT.text, _event_values(row, times))
                    assert cursor.lastrowid is not None  # an INSERT into a rowid table sets it
                    positions.append(cursor.lastrowid)
                if bodies:
                    cursor.executemany(_INSERT_BODY.text, [(session_id, *b) for b in bodies])
                for digest in forget:
                    cursor.execute(_FORGET_BODY.text, (session_id, digest))
                if metadata is not None:
                    cursor.execute(_SET_METADATA.text, (metadata.app, metadata.user, session_id))
                    cursor.execute(_DROP_TAGS.text, (session_id,))
                    tags = [(session_id, tag) for tag in metadata.tags]
                    cursor.executemany(_INSERT_TAG.text, tags)
                if title is not None:
                    cursor.execute(_SET_TITLE.text, (title, session_id))
                unindexed = 0
                for digest in unindex:
                    cursor.execute(_UNINDEX.text, (session_id, digest))
                    unindexed += cursor.rowcount
                if unindexed:
                    cursor.execute(OPTIMIZE_INDEX)
                if index:
                    values = [_index_values(session_id, entry) for entry in index]
                    cursor.executemany(_INSERT_INDEX.text, values)
                cursor.close()
                driver.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    driver.execute("ROLLBACK")
                raise
        return positions

    def _insert_ignoring(self, table: sa.Table) -> sa.Insert:
        return insert_ignoring(table)

    def _insert_index(self) -> sa.Insert:
        return search_index.insert()  # the FTS5 table is filled by the triggers of 0005

    def _matching(self, phrases: Phrases) -> Matching:
        """Rows FTS5 finds, and rows still waiting in `search_pending` (revision 0006) whose
        words hold each phrase: a search reads both and writes nothing, so it works on a
        database opened read-only too. At most 63 rows wait, so the second test reads little.
        A row's `terms` are its words joined by single spaces, and a word is letters and
        digits only (no `%` or `_`), so `LIKE '% a b %'` on the spaced terms is FTS5's phrase
        `"a b"` (both sides are folded: LIKE's ASCII case-insensitivity changes nothing)."""
        waiting = " AND ".join(
            f"' ' || search_index.terms || ' ' LIKE :phrase_{n}" for n in range(len(phrases))
        )
        clause = sa.text(
            "(search_index.id IN (SELECT rowid FROM search_fts WHERE search_fts MATCH :fts)"
            " OR (search_index.id IN (SELECT id FROM search_pending)"
            f" AND {waiting}))"
        )
        spaced = {f"phrase_{n}": f"% {' '.join(phrase)} %" for n, phrase in enumerate(phrases)}
        return clause.bindparams(fts=fts_query(phrases), **spaced)

    def scrub(self, *, wait: bool = True) -> bool:
        """Deleted pages are zeroed as they are freed (`secure_delete`); the WAL still holds
        the pages as they were until a checkpoint copies the new ones back and truncates it.
        With `wait=False` the checkpoint does not wait for a writer (opening a store runs it
        so: a store opened beside busy writers must not queue behind them)."""
        if self._in_memory:
            return True
        with self._driver("checkpoint") as driver:
            if not wait:
                driver.execute("PRAGMA busy_timeout=0")
            try:
                busy, _, _ = driver.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                if not wait:
                    driver.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
        return bool(busy == 0)

    # reading

    def head(self, session_id: str) -> Head | None:
        with self._driver("head") as driver:
            row = driver.execute(_HEAD.text, (session_id,)).fetchone()
        if row is None:
            return None
        return Head(row[0], row[1], read_time(row[2]))

    def events(self, session_id: str, from_seq: int, to_seq: int) -> Iterator[StoredEvent]:
        low = from_seq
        while low <= to_seq:
            with self._driver("read") as driver:
                bounds = (session_id, low, to_seq, *_EVENTS_BETWEEN.fixed)
                page = driver.execute(_EVENTS_BETWEEN.text, bounds).fetchall()
            yield from map(_stored, page)
            if len(page) < PAGE:
                return
            low = page[-1][2] + 1

    def sessions(self, where: SessionFilter = ALL_SESSIONS) -> list[SessionInfo]:
        """`listing(where)` compiled for SQLite and read on the sqlite3 connection: the row
        processing of SQLAlchemy's result was a third of a listing of 100,000 sessions."""
        compiled = listing(where).compile(dialect=_SQLITE)
        assert isinstance(compiled, SQLCompiler)
        values = [compiled.params[name] for name in compiled.positiontup or ()]
        values = [stored_time(v) if isinstance(v, datetime) else v for v in values]
        with self._driver("list sessions") as driver:
            rows = driver.execute(str(compiled), values).fetchall()
            tags = _read_tags(driver, [row[0] for row in rows])
        return [_session_info(row, tags.get(row[0], ())) for row in rows]

    def bodies(self, session_id: str, digests: Sequence[str]) -> list[BodyRow]:
        wanted = sorted(set(digests))
        found: list[BodyRow] = []
        with self._driver("read bodies") as driver:
            for start in range(0, len(wanted), PAGE):
                chunk = wanted[start : start + PAGE]
                sql = _bodies(len(chunk)).text
                found.extend(map(BodyRow._make, driver.execute(sql, (session_id, *chunk))))
        return found

    def each_indexed(self, session_id: str) -> Iterator[tuple[int, int, int, str | None]]:
        """On the sqlite3 connection, its rows as the driver gives them (ints and a text): the
        row processing of SQLAlchemy's result was four fifths of reading a long session's."""
        with self._driver("read index rows") as driver:
            found = driver.execute(_EVERY_INDEXED.text, (session_id, *_EVERY_INDEXED.fixed))
            while rows := found.fetchmany(2000):
                yield from rows

    # figures

    def _payload_bytes(self) -> sa.ColumnElement[int]:
        return sa.func.length(sa.cast(sa.cast(events.c.payload, sa.Text), sa.LargeBinary))

    # lifecycle

    def database_state(self) -> DatabaseState:
        """A SQLite file is looked at through a plain connection that can neither create it
        nor switch it to WAL (the store's own connections do both), so refusing a file that
        is not ours changes no byte of it."""
        path = sqlite_file(self.url)
        if path is None:
            return super().database_state()
        if not path.exists():
            return DatabaseState(False, None, frozenset(), str(self.url.database))
        try:
            return _file_state(path)._replace(file=str(self.url.database))
        except sqlite3.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DatabaseUnavailable(f"{shown_url(self.url)}: {reason}") from None


def _session_info(row: tuple[Any, ...], tags: Sequence[str]) -> SessionInfo:
    """A `sessions` row as read on the driver (all its columns, in the table's order)."""
    (
        id_, title, head_seq, head_hash, parent_id, parent_seq, created_at, updated_at, app,
        user_id, context_window, live_tokens, compactions,
    ) = row  # fmt: skip
    return SessionInfo(
        id_, title, head_seq, parent_id, parent_seq, read_time(created_at), read_time(updated_at),
        head_hash, app, user_id, tuple(tags), context_window, live_tokens, compactions,
    )  # fmt: skip


def _read_tags(driver: sqlite3.Connection, session_ids: list[str]) -> dict[str, list[str]]:
    """The tags of `session_ids`, each's sorted: every tag in one read for a long listing."""
    found: dict[str, list[str]] = {}
    if len(session_ids) > PAGE:
        wanted = set(session_ids)
        for session_id, tag in driver.execute(_EVERY_TAG.text):
            if session_id in wanted:
                found.setdefault(session_id, []).append(tag)
        return found
    if session_ids:
        for session_id, tag in driver.execute(_tags_of(len(session_ids)).text, session_ids):
            found.setdefault(session_id, []).append(tag)
    return found


def _file_state(path: Path) -> DatabaseState:
    """`mode=rw`: SQLite opens the file only if it exists, and reading changes nothing."""
    sqlite = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True)
    try:
        names = {
            name
            for (name,) in sqlite.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        }
        revision = None
        if VERSION_TABLE in names:
            row = sqlite.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
            revision = row[0] if row else None
    finally:
        sqlite.close()
    return DatabaseState(True, revision, frozenset(names - {VERSION_TABLE}))


def _use_explicit_transactions(
    engine: sa.Engine, in_memory: bool, busy_timeout_ms: int, synchronous: SqliteSynchronous
) -> None:
    @sa.event.listens_for(engine, "connect")
    def configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, below
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        # A redaction deletes bodies: their bytes must not linger in freed pages.
        cursor.execute("PRAGMA secure_delete=ON")
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
