"""The statements every recorder shares, in SQLAlchemy Core, and the base both backends build on.

What differs by dialect is a hook the backend's recorder fills in (`_insert_ignoring`,
`_insert_snapshot`, `_payload_bytes`, `_migration_lock`), or a method it replaces with a faster
one for its own driver (SQLite writes and reads through the sqlite3 connection itself, running
the statements below compiled once for SQLite: each is written here only). Statements are built
once: SQLAlchemy memoizes a statement's cache key on the object, so reusing one skips compiling
and keying a fresh statement on every call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from sessionstore.events import DatabaseUnavailable, Phrases, SearchEntry
from sessionstore.storage._migrate import alembic_config
from sessionstore.storage._recorder import (
    ALL_SESSIONS,
    BodyRow,
    DatabaseState,
    EventRow,
    ForeignCheck,
    Head,
    LostRace,
    NewSession,
    SearchFilter,
    SearchRow,
    SessionFilter,
    SessionMetadata,
    StoreCounts,
    StoredEvent,
    compactions_in,
)
from sessionstore.storage._rows import SessionInfo, as_utc
from sessionstore.storage._schema import (
    REDACTION,
    blobs,
    events,
    search_index,
    session_tags,
    sessions,
    snapshots,
)

WRITE = "sessionstore_write"
"""Execution option that marks a connection's transaction as a write (SQLite: IMMEDIATE)."""

PAGE = 500
"""Rows read per query when a range of events is read a page at a time."""

VERSION_TABLE = "alembic_version"


@dataclass(frozen=True, slots=True)
class EncodedJson:
    """JSON text already encoded (canonically, for the hash): stored as is, not encoded again."""

    text: str


def serialize_json(value: object) -> str:
    """The engines' JSON serializer: passes `EncodedJson` through, encodes anything else."""
    if isinstance(value, EncodedJson):
        return value.text
    return json.dumps(value, ensure_ascii=False)


def shown_url(url: sa.URL) -> str:
    return url.render_as_string(hide_password=True)


_PAYLOAD_TEXT = sa.cast(events.c.payload, sa.Text)
_EVENT_COLUMNS = (
    events.c.position,
    events.c.session_id,
    events.c.seq,
    events.c.event_id,
    events.c.type,
    events.c.schema_version,
    events.c.recorded_at,
    events.c.prev_hash,
    events.c.hash,
    _PAYLOAD_TEXT,
)
_SESSION: sa.BindParameter[str] = sa.bindparam("session_id")
EVENTS_BETWEEN = (
    sa.select(*_EVENT_COLUMNS)
    .where(
        events.c.session_id == _SESSION,
        events.c.seq.between(sa.bindparam("low"), sa.bindparam("high")),
    )
    .order_by(events.c.seq)
    .limit(PAGE)
)
_EVENTS_AT = (
    sa.select(*_EVENT_COLUMNS)
    .where(events.c.session_id == _SESSION, events.c.seq.in_(sa.bindparam("seqs", expanding=True)))
    .order_by(events.c.seq)
)
_EVENTS_BY_ID = sa.select(*_EVENT_COLUMNS).where(
    events.c.session_id == _SESSION,
    events.c.event_id.in_(sa.bindparam("ids", expanding=True)),
)
_EVENT_HASH = sa.select(events.c.hash).where(
    events.c.session_id == _SESSION, events.c.seq == sa.bindparam("seq")
)
_SEQ_AT = sa.select(sa.func.max(events.c.seq)).where(
    events.c.session_id == _SESSION, events.c.recorded_at <= sa.bindparam("moment")
)
HEAD = sa.select(sessions.c.head_seq, sessions.c.head_hash, sessions.c.updated_at).where(
    sessions.c.id == _SESSION
)
REDACTED_AFTER = (
    sa.select(events.c.seq)
    .where(
        events.c.session_id == _SESSION,
        events.c.seq > sa.bindparam("seq"),
        events.c.type == REDACTION,
    )
    .limit(1)
)
"""A redaction of the session after a seq: a snapshot at that seq may not be stored."""
MOVE_HEAD = (
    sessions.update()
    .where(sessions.c.id == _SESSION, sessions.c.head_seq == sa.bindparam("read_seq"))
    .values(
        head_seq=sa.bindparam("new_seq"),
        head_hash=sa.bindparam("new_hash"),
        updated_at=sa.bindparam("new_time"),
        live_tokens=sa.bindparam("live_tokens"),
        compactions=sessions.c.compactions + sa.bindparam("compacted"),
    )
)
INSERT_SESSION = sessions.insert()
INSERT_EVENT = events.insert()
_INSERT_EVENTS = INSERT_EVENT.returning(events.c.position, sort_by_parameter_order=True)
INSERT_TAG = session_tags.insert()
BODIES = sa.select(blobs.c.digest, blobs.c.size, blobs.c.compression, blobs.c.data).where(
    blobs.c.session_id == _SESSION, blobs.c.digest.in_(sa.bindparam("digests", expanding=True))
)
_BODY_DIGESTS = sa.select(blobs.c.digest).where(blobs.c.session_id == _SESSION)
FORGET_BODY = blobs.delete().where(
    blobs.c.session_id == _SESSION, blobs.c.digest == sa.bindparam("digest")
)
_SESSION_ROW = sa.select(sessions).where(sessions.c.id == _SESSION)
_SESSIONS_NEWEST_FIRST = sa.select(sessions).order_by(sessions.c.updated_at.desc(), sessions.c.id)
_FORKS_OF = sa.select(sessions.c.id).where(
    sessions.c.parent_id.in_(sa.bindparam("ids", expanding=True))
)
COUNT_LIVE_TOKENS = (
    sessions.update()
    .where(sessions.c.id == _SESSION, sessions.c.head_seq == sa.bindparam("read_seq"))
    .values(live_tokens=sa.bindparam("live_tokens"))
)
_UNCOUNTED = (
    sa.select(sessions.c.id, sessions.c.head_seq)
    .where(sessions.c.live_tokens.is_(None))
    .order_by(sessions.c.id)
)
_FORGET_LIVE_TOKENS = (
    sessions.update()
    .where(sessions.c.id.in_(sa.bindparam("ids", expanding=True)))
    .values(live_tokens=None)
)
SET_METADATA = (
    sessions.update()
    .where(sessions.c.id == _SESSION)
    .values(app=sa.bindparam("app"), user_id=sa.bindparam("user_id"))
)
SET_TITLE = sessions.update().where(sessions.c.id == _SESSION).values(title=sa.bindparam("title"))
DROP_TAGS = session_tags.delete().where(session_tags.c.session_id == _SESSION)
TAGS_OF = (
    sa.select(session_tags.c.session_id, session_tags.c.tag)
    .where(session_tags.c.session_id.in_(sa.bindparam("ids", expanding=True)))
    .order_by(session_tags.c.session_id, session_tags.c.tag)
)
EVERY_TAG = sa.select(session_tags.c.session_id, session_tags.c.tag).order_by(
    session_tags.c.session_id, session_tags.c.tag
)
_SESSION_IDS = sa.union(sa.select(events.c.session_id).distinct(), sa.select(sessions.c.id))
_NEWEST_SNAPSHOT = (
    sa.select(snapshots.c.seq, sa.cast(snapshots.c.state, sa.Text))
    .where(
        snapshots.c.session_id == _SESSION,
        snapshots.c.projection == sa.bindparam("projection"),
        snapshots.c.projection_version == sa.bindparam("version"),
        snapshots.c.seq <= sa.bindparam("to_seq"),
    )
    .order_by(snapshots.c.seq.desc())
    .limit(1)
)
_SNAPSHOTS = (
    sa.select(snapshots.c.seq, sa.cast(snapshots.c.state, sa.Text))
    .where(
        snapshots.c.session_id == _SESSION,
        snapshots.c.projection == sa.bindparam("projection"),
        snapshots.c.projection_version == sa.bindparam("version"),
    )
    .order_by(snapshots.c.seq)
)


def session_info(row: Any, tags: Sequence[str] = ()) -> SessionInfo:
    """A `sessions` row (all its columns, in the table's order) as a `SessionInfo`: unpacked
    by position, which a listing of 100,000 rows does in a third of the time names take."""
    (
        id_, title, head_seq, head_hash, parent_id, parent_seq, created_at, updated_at, app,
        user_id, context_window, live_tokens, compactions,
    ) = row  # fmt: skip
    return SessionInfo(
        id_,
        title,
        head_seq,
        parent_id,
        parent_seq,
        created_at.replace(tzinfo=UTC) if created_at.tzinfo is None else as_utc(created_at),
        updated_at.replace(tzinfo=UTC) if updated_at.tzinfo is None else as_utc(updated_at),
        head_hash,
        app,
        user_id,
        tuple(tags),
        context_window,
        live_tokens,
        compactions,
    )


def listing(where: SessionFilter) -> sa.Select[Any]:
    """The `sessions` rows a filter selects, newest update first (ties by id: stable pages),
    read along `ix_sessions_updated`; a page after `where.after` starts past that key, so
    pages neither repeat nor skip a session that did not move meanwhile."""
    query = _SESSIONS_NEWEST_FIRST
    if where.after is not None:
        moment, last_id = where.after
        query = query.where(
            sessions.c.updated_at <= moment,
            sa.or_(sessions.c.updated_at < moment, sessions.c.id > last_id),
        )
    if where.app is not None:
        query = query.where(sessions.c.app == where.app)
    if where.user is not None:
        query = query.where(sessions.c.user_id == where.user)
    if where.tag is not None:
        tagged = sa.select(session_tags.c.session_id).where(session_tags.c.tag == where.tag)
        query = query.where(sessions.c.id.in_(tagged))
    if where.offset:
        query = query.offset(where.offset)
    if where.limit is not None:
        query = query.limit(where.limit)
    return query


Matching = sa.ColumnElement[bool] | sa.TextClause
"""A dialect's full-text test of an index row (a SQL expression, or SQL text)."""

UNINDEX = search_index.delete().where(
    search_index.c.session_id == _SESSION, search_index.c.digest == sa.bindparam("digest")
)
INDEX_COLUMNS = (
    "session_id", "seq", "part", "chunk", "role", "event_type", "digest", "recorded_at", "terms",
)  # fmt: skip
"""The columns a write fills in an index row, in `index_values`' order."""


INDEXED = (
    sa.select(search_index.c.seq, search_index.c.part, search_index.c.chunk, search_index.c.digest)
    .where(search_index.c.session_id == _SESSION)
    .order_by(search_index.c.seq, search_index.c.part, search_index.c.chunk)
)


EVERY_INDEXED = INDEXED.order_by(None)
"""`INDEXED` in any order: a sort would gather them all in the database first."""


def index_values(session_id: str, entry: SearchEntry) -> dict[str, Any]:
    return {"session_id": session_id, **entry._asdict()}


def found_events(where: SearchFilter, matching: Matching) -> sa.Select[Any]:
    """The events whose index rows are `matching` (the dialect's full-text test), in the
    sessions `where` selects, one row an event, newest first."""
    query = (
        sa.select(
            search_index.c.session_id,
            search_index.c.seq,
            search_index.c.event_type,
            search_index.c.recorded_at,
            sessions.c.title,
        )
        .join(sessions, sessions.c.id == search_index.c.session_id)
        .where(matching)
    )
    if where.app is not None:
        query = query.where(sessions.c.app == where.app)
    if where.user is not None:
        query = query.where(sessions.c.user_id == where.user)
    if where.tag is not None:
        tagged = sa.select(session_tags.c.session_id).where(session_tags.c.tag == where.tag)
        query = query.where(search_index.c.session_id.in_(tagged))
    if where.role is not None:
        query = query.where(search_index.c.role == where.role)
    if where.since is not None:
        query = query.where(search_index.c.recorded_at >= where.since)
    return (
        query.distinct()
        .order_by(
            search_index.c.recorded_at.desc(), search_index.c.session_id, search_index.c.seq.desc()
        )
        .limit(where.limit)
    )


def _stored(row: Any) -> StoredEvent:
    position, session_id, seq, event_id, type_, version, recorded_at, prev_hash, hash_, text = row
    return StoredEvent(
        position, session_id, seq, event_id, type_, version, as_utc(recorded_at), prev_hash, hash_,
        text,
    )  # fmt: skip


class SqlRecorder:
    """A recorder on a SQLAlchemy engine; `Recorder` (in `_recorder`) is the contract."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        """The engine every statement runs on: storage's own, and tests' about SQL."""
        self.url = engine.url
        self._dbapi_error: type[Exception] = engine.dialect.loaded_dbapi.Error
        """The DB-API driver's base error (PEP 249), which `_errors` translates too."""
        self._lock: AbstractContextManager[object] = nullcontext()
        """Held around each use of the database: a backend whose connection must not be used
        by two threads at once sets a lock here."""

    # errors

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Every driver error of a database that cannot be reached, opened or written becomes
        `DatabaseUnavailable`, with the password hidden. A unique key that a write finds taken
        is `LostRace`: only a racing writer takes one.

        The driver's own errors count too, not only SQLAlchemy's wrapping of them: the pool
        raises them as they are when it opens a connection for `raw_connection()` (a server
        refusing connections, a file that is no longer a database), and the backends' fast
        paths call the driver directly."""
        driver_error = self._dbapi_error
        try:
            with self._lock:
                yield
        except sa.exc.IntegrityError:
            raise LostRace from None
        except sa.exc.DBAPIError as exc:
            raise self._unavailable(exc) from exc
        except driver_error as exc:
            wrapped = sa.exc.DBAPIError.instance(None, None, exc, driver_error)
            assert isinstance(wrapped, sa.exc.DBAPIError)  # a DB-API error is always wrapped
            if isinstance(wrapped, sa.exc.IntegrityError):
                raise LostRace from None
            raise self._unavailable(wrapped) from exc

    @property
    def shown_url(self) -> str:
        return shown_url(self.url)

    def _unavailable(self, exc: sa.exc.DBAPIError) -> DatabaseUnavailable:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        return DatabaseUnavailable(f"{shown_url(self.url)}: {reason}")

    @contextmanager
    def _reading(self) -> Iterator[sa.Connection]:
        with self._errors(), self.engine.connect() as conn:
            yield conn

    @contextmanager
    def _writing(self) -> Iterator[sa.Connection]:
        with (
            self._errors(),
            self.engine.connect().execution_options(**{WRITE: True}) as conn,
            conn.begin(),
        ):
            yield conn

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
        with self._writing() as conn:
            if after is None:
                conn.execute(INSERT_SESSION, _session_row(session_id, rows, new, live_tokens))
            else:
                moved = conn.execute(MOVE_HEAD, _head_move(session_id, after, rows, live_tokens))
                if moved.rowcount != 1:
                    raise LostRace
            positions: list[int] = []
            for start in range(0, len(rows), PAGE):
                page = [_event_values(row) for row in rows[start : start + PAGE]]
                positions.extend(conn.execute(_INSERT_EVENTS, page).scalars())
            if bodies:
                rows_of = [{"session_id": session_id, **body._asdict()} for body in bodies]
                conn.execute(self._insert_ignoring(blobs), rows_of)
            if forget:
                self._forget_bodies(conn, session_id, forget)
            if metadata is not None:
                key = {"session_id": session_id}
                conn.execute(SET_METADATA, {**key, "app": metadata.app, "user_id": metadata.user})
                conn.execute(DROP_TAGS, key)
                if metadata.tags:
                    tags = [{"session_id": session_id, "tag": tag} for tag in metadata.tags]
                    conn.execute(INSERT_TAG, tags)
            if title is not None:
                conn.execute(SET_TITLE, {"session_id": session_id, "title": title})
            if unindex:
                keys = [{"session_id": session_id, "digest": digest} for digest in unindex]
                conn.execute(UNINDEX, keys)
            if index:
                values = [index_values(session_id, entry) for entry in index]
                conn.execute(self._insert_index(), values)
            return positions

    def _forget_bodies(self, conn: sa.Connection, session_id: str, digests: Sequence[str]) -> None:
        """Delete the session's bodies `digests`, which the redaction this transaction appends
        names (the dialect's way, which the schema checks)."""
        raise NotImplementedError

    def _insert_index(self) -> sa.Insert:
        """The INSERT of an index row, its `terms` as the dialect keeps them."""
        raise NotImplementedError

    def _matching(self, phrases: Phrases) -> Matching:
        """The dialect's full-text test of an index row: it holds every one of `phrases`."""
        raise NotImplementedError

    def indexed(self, session_id: str) -> list[tuple[int, int, int, str | None]]:
        with self._reading() as conn:
            rows = conn.execute(INDEXED, {"session_id": session_id}).all()
        return [(int(seq), int(part), int(chunk), digest) for seq, part, chunk, digest in rows]

    def each_indexed(self, session_id: str) -> Iterator[tuple[int, int, int, str | None]]:
        with self._reading() as conn:
            found = conn.execution_options(yield_per=2000).execute(
                EVERY_INDEXED, {"session_id": session_id}
            )
            for seq, part, chunk, digest in found:
                yield int(seq), int(part), int(chunk), digest

    def search(self, where: SearchFilter) -> list[SearchRow]:
        with self._reading() as conn:
            rows = conn.execute(found_events(where, self._matching(where.phrases))).all()
        return [
            SearchRow(str(sid), int(seq), str(kind), as_utc(at), str(title))
            for sid, seq, kind, at, title in rows
        ]

    def _insert_ignoring(self, table: sa.Table) -> sa.Insert:
        """An INSERT into `table` that skips rows whose key is taken (dialect syntax)."""
        raise NotImplementedError

    def scrub(self, *, wait: bool = True) -> bool:
        return True

    def save_snapshot(
        self,
        session_id: str,
        projection: str,
        version: int,
        seq: int,
        state: str,
        now: datetime,
    ) -> None:
        values = {
            "session_id": session_id,
            "projection": projection,
            "projection_version": version,
            "seq": seq,
            "state": EncodedJson(state),
            "created_at": now,
        }
        with self._writing() as conn:
            self._hold_session(conn, session_id)
            bounds = {"session_id": session_id, "seq": seq}
            if conn.execute(REDACTED_AFTER, bounds).first() is None:
                conn.execute(self._insert_snapshot(values))

    def _insert_snapshot(self, values: dict[str, Any]) -> sa.Executable:
        return self._insert_ignoring(snapshots).values(values)

    def _hold_session(self, conn: sa.Connection, session_id: str) -> None:
        """Keep the session's head from moving until this transaction ends, so that what it
        reads next includes every event committed before. Here nothing to do: a SQLite
        write transaction (`BEGIN IMMEDIATE`) is the only one until it ends."""

    def forget_snapshots(self, session_ids: Sequence[str]) -> None:
        query = snapshots.delete().where(snapshots.c.session_id.in_(list(session_ids)))
        with self._writing() as conn:
            conn.execute(query)

    # reading

    def head(self, session_id: str) -> Head | None:
        with self._reading() as conn:
            row = conn.execute(HEAD, {"session_id": session_id}).first()
        if row is None:
            return None
        return Head(row.head_seq, row.head_hash, as_utc(row.updated_at))

    def events(self, session_id: str, from_seq: int, to_seq: int) -> Iterator[StoredEvent]:
        low = from_seq
        while low <= to_seq:
            with self._reading() as conn:
                bounds = {"session_id": session_id, "low": low, "high": to_seq}
                page = [_stored(row) for row in conn.execute(EVENTS_BETWEEN, bounds)]
            yield from page
            if len(page) < PAGE:
                return
            low = page[-1].seq + 1

    def events_at(self, session_id: str, seqs: Sequence[int]) -> Iterator[StoredEvent]:
        wanted = sorted(set(seqs))
        for start in range(0, len(wanted), PAGE):
            with self._reading() as conn:
                chunk = {"session_id": session_id, "seqs": wanted[start : start + PAGE]}
                page = [_stored(row) for row in conn.execute(_EVENTS_AT, chunk)]
            yield from page

    def events_by_id(self, session_id: str, event_ids: Sequence[str]) -> list[StoredEvent]:
        found: list[StoredEvent] = []
        for start in range(0, len(event_ids), PAGE):
            with self._reading() as conn:
                chunk = {"session_id": session_id, "ids": list(event_ids[start : start + PAGE])}
                found.extend(_stored(row) for row in conn.execute(_EVENTS_BY_ID, chunk))
        return found

    def bodies(self, session_id: str, digests: Sequence[str]) -> list[BodyRow]:
        wanted = sorted(set(digests))
        found: list[BodyRow] = []
        for start in range(0, len(wanted), PAGE):
            with self._reading() as conn:
                chunk = {"session_id": session_id, "digests": wanted[start : start + PAGE]}
                found.extend(BodyRow(*row) for row in conn.execute(BODIES, chunk))
        return found

    def body_digests(self, session_id: str) -> list[str]:
        with self._reading() as conn:
            return [
                str(d) for d in conn.execute(_BODY_DIGESTS, {"session_id": session_id}).scalars()
            ]

    def event_hash(self, session_id: str, seq: int) -> str | None:
        with self._reading() as conn:
            found = conn.execute(_EVENT_HASH, {"session_id": session_id, "seq": seq}).scalar()
        return None if found is None else str(found)

    def seq_at(self, session_id: str, moment: datetime) -> int | None:
        with self._reading() as conn:
            found = conn.execute(_SEQ_AT, {"session_id": session_id, "moment": moment}).scalar()
        return None if found is None else int(found)

    def session(self, session_id: str) -> SessionInfo | None:
        with self._reading() as conn:
            row = conn.execute(_SESSION_ROW, {"session_id": session_id}).first()
            if row is None:
                return None
            return session_info(row, self._tags(conn, [session_id]).get(session_id, ()))

    def sessions(self, where: SessionFilter = ALL_SESSIONS) -> list[SessionInfo]:
        with self._reading() as conn:
            rows = conn.execute(listing(where)).all()
            tags = self._tags(conn, [row.id for row in rows])
        return [session_info(row, tags.get(row.id, ())) for row in rows]

    def _tags(self, conn: sa.Connection, session_ids: list[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        if len(session_ids) > PAGE:  # a long listing: every tag in one read, not a read a page
            wanted = set(session_ids)
            for session_id, tag in conn.execute(EVERY_TAG):
                if session_id in wanted:
                    found.setdefault(session_id, []).append(tag)
            return found
        for start in range(0, len(session_ids), PAGE):
            ids = session_ids[start : start + PAGE]
            for session_id, tag in conn.execute(TAGS_OF, {"ids": ids}):
                found.setdefault(session_id, []).append(tag)
        return found

    def session_ids(self) -> list[str]:
        with self._reading() as conn:
            return sorted(str(row[0]) for row in conn.execute(_SESSION_IDS))

    def forks_of(self, session_ids: Sequence[str]) -> list[str]:
        found: list[str] = []
        for start in range(0, len(session_ids), PAGE):
            with self._reading() as conn:
                ids = {"ids": list(session_ids[start : start + PAGE])}
                found.extend(str(i) for i in conn.execute(_FORKS_OF, ids).scalars())
        return sorted(found)

    def count_live_tokens(self, session_id: str, head_seq: int, live_tokens: int | None) -> bool:
        values = {"session_id": session_id, "read_seq": head_seq, "live_tokens": live_tokens}
        with self._writing() as conn:
            return bool(conn.execute(COUNT_LIVE_TOKENS, values).rowcount == 1)

    def uncounted_sessions(self) -> list[tuple[str, int]]:
        with self._reading() as conn:
            return [(str(i), int(seq)) for i, seq in conn.execute(_UNCOUNTED)]

    def forget_live_tokens(self, session_ids: Sequence[str]) -> None:
        for start in range(0, len(session_ids), PAGE):
            with self._writing() as conn:
                conn.execute(_FORGET_LIVE_TOKENS, {"ids": list(session_ids[start : start + PAGE])})

    def newest_snapshot(
        self, session_id: str, projection: str, version: int, to_seq: int
    ) -> tuple[int, str] | None:
        key = {"session_id": session_id, "projection": projection, "version": version}
        with self._reading() as conn:
            row = conn.execute(_NEWEST_SNAPSHOT, {**key, "to_seq": to_seq}).first()
        return None if row is None else (int(row[0]), str(row[1]))

    def snapshots(self, session_id: str, projection: str, version: int) -> list[tuple[int, str]]:
        key = {"session_id": session_id, "projection": projection, "version": version}
        with self._reading() as conn:
            return [(int(seq), str(state)) for seq, state in conn.execute(_SNAPSHOTS, key)]

    # figures

    def counts(self) -> StoreCounts:
        with self._reading() as conn:
            session_count = conn.execute(sa.select(sa.func.count()).select_from(sessions))
            sizes = sa.select(
                sa.func.count(), sa.func.coalesce(sa.func.sum(self._payload_bytes()), 0)
            )
            event_count, size = conn.execute(sizes).one()
            body_sizes = sa.select(
                sa.func.count(),
                sa.func.coalesce(sa.func.sum(blobs.c.size), 0),
                sa.func.coalesce(sa.func.sum(sa.func.length(blobs.c.data)), 0),
            )
            body_count, body_bytes, stored = conn.execute(body_sizes).one()
            return StoreCounts(
                session_count.scalar_one(),
                int(event_count),
                int(size),
                int(body_count),
                int(body_bytes),
                int(stored),
            )

    def _payload_bytes(self) -> sa.ColumnElement[int]:
        """Bytes of each stored payload's JSON text (UTF-8), not characters."""
        raise NotImplementedError

    def payloads_of_type(
        self, types: Sequence[str], session_id: str | None = None
    ) -> Iterator[tuple[str, int, str]]:
        query = sa.select(events.c.type, events.c.schema_version, _PAYLOAD_TEXT).where(
            events.c.type.in_(list(types))
        )
        if session_id is not None:
            query = query.where(events.c.session_id == session_id)
        with self._reading() as conn:
            for row in conn.execution_options(yield_per=1000).execute(query):
                yield str(row[0]), int(row[1]), str(row[2])

    def count_of_type(self, event_type: str, session_id: str | None) -> dict[str, int]:
        query = sa.select(events.c.session_id, sa.func.count()).where(events.c.type == event_type)
        if session_id is not None:
            query = query.where(events.c.session_id == session_id)
        with self._reading() as conn:
            rows = conn.execute(query.group_by(events.c.session_id)).all()
        return {str(sid): int(n) for sid, n in rows}

    # lifecycle

    def migrate(self, revision: str, *, refuse: ForeignCheck) -> None:
        with self._writing() as conn:
            self._migration_lock(conn)
            refuse(self._state(conn))
            from alembic import command

            config = alembic_config()
            config.attributes["connection"] = conn
            command.upgrade(config, revision)

    def _migration_lock(self, conn: sa.Connection) -> None:
        """Keep other processes from migrating the same database at once (beyond the write
        transaction itself, which is enough where a write locks the whole database)."""

    def database_state(self) -> DatabaseState:
        with self._reading() as conn:
            return self._state(conn)

    def _state(self, conn: sa.Connection) -> DatabaseState:
        """What the database holds, as the backend tells it (`state_of`, by default)."""
        return state_of(conn)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def migration_connection(self) -> Iterator[sa.Connection]:
        """A connection in a write transaction's mode, for Alembic run by hand (`alembic
        upgrade head`), which migrates through a SQLAlchemy connection of its own."""
        with self.engine.connect().execution_options(**{WRITE: True}) as conn:
            yield conn


def state_of(conn: sa.Connection) -> DatabaseState:
    inspector = sa.inspect(conn)
    names = {*inspector.get_table_names(), *inspector.get_view_names()}
    revision = _stored_revision(conn) if VERSION_TABLE in names else None
    return DatabaseState(True, revision, frozenset(names - {VERSION_TABLE}))


def _stored_revision(conn: sa.Connection) -> str | None:
    """The revision Alembic recorded (read as Alembic's `MigrationContext` reads it, without
    importing Alembic). Our history is linear: a table holding several heads is not ours."""
    rows = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    if len(rows) > 1:
        return ", ".join(sorted(rows))  # no revision of ours: refused as another application's
    return rows[0] if rows else None


def _session_row(
    session_id: str, rows: Sequence[EventRow], new: NewSession | None, live_tokens: int | None
) -> dict[str, Any]:
    assert new is not None, "a new session's first write names its sessions row"
    return {
        "id": session_id,
        "title": new.title,
        "head_seq": rows[-1].seq,
        "head_hash": rows[-1].hash,
        "parent_id": new.parent_id,
        "parent_seq": new.parent_seq,
        "created_at": rows[0].recorded_at,
        "updated_at": rows[-1].recorded_at,
        "context_window": new.context_window,
        "live_tokens": live_tokens,
        "compactions": compactions_in(rows),
    }


def _head_move(
    session_id: str, after: Head, rows: Sequence[EventRow], live_tokens: int | None
) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "read_seq": after.seq,
        "new_seq": rows[-1].seq,
        "new_hash": rows[-1].hash,
        "new_time": rows[-1].recorded_at,
        "live_tokens": live_tokens,
        "compacted": compactions_in(rows),
    }


def _event_values(row: EventRow) -> dict[str, Any]:
    values = row._asdict()
    values["payload"] = EncodedJson(row.payload)
    return values
