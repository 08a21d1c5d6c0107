"""The append path: validate everything first, then one short write transaction.

Optimistic concurrency: the transaction reads the session head and moves it with
`UPDATE sessions ... WHERE head_seq = <head read>`; zero rows means another writer won. The
unique `(session_id, seq)` key is the backstop. Idempotency is decided only when something
collides (a stale version or a unique-key violation): the batch's `event_id`s are looked up
and, when all are stored with identical content, the stored events are returned instead of
an error. The common path is therefore one SELECT, one UPDATE (or INSERT) and one INSERT; a
`Session`, whose fold knows the head, skips the SELECT (and on SQLite runs the transaction on
the sqlite3 connection itself).
"""

from __future__ import annotations

import contextlib
import sqlite3
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.engine import Engine

from events import (
    GENESIS_HASH,
    ChainLink,
    InvalidEvent,
    NewEvent,
    Payload,
    RecordedEvent,
    SessionStarted,
    canonical_json,
    encode_payload,
    event_hash,
)
from events._arguments import brief
from store._engine import WRITE, EncodedJson, driver_error
from store._errors import (
    ConcurrencyError,
    IdempotencyError,
    InvalidSessionId,
    PayloadTooLarge,
    UnknownSession,
)
from store._rows import EVENT_ROW, as_utc, recorded_event
from store._schema import SESSION_ID_LENGTH, events, sessions

EventLike = NewEvent | Payload | Mapping[str, Any]
Clock = Callable[[], datetime]

_ANY_VERSION_ATTEMPTS = 20
"""With `expected_version=None` a lost race is retried on the new head this many times."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """An event checked and encoded for the log: its stored JSON object and canonical bytes."""

    event: NewEvent
    data: Mapping[str, Any]
    payload_json: bytes

    @property
    def type(self) -> str:
        return self.event.type

    @property
    def schema_version(self) -> int:
        return self.event.payload.schema_version


# The hot path's statements, built once: SQLAlchemy memoizes a statement's cache key on the
# object, so reusing it skips compiling and keying a fresh statement on every append.
_READ_HEAD = sa.select(sessions.c.head_seq, sessions.c.head_hash, sessions.c.updated_at).where(
    sessions.c.id == sa.bindparam("session_id")
)
_HEAD_SEQ = sa.select(sessions.c.head_seq).where(sessions.c.id == sa.bindparam("session_id"))
_MOVE_HEAD = (
    sessions.update()
    .where(
        sessions.c.id == sa.bindparam("session_id"),
        sessions.c.head_seq == sa.bindparam("read_seq"),
    )
    .values(
        head_seq=sa.bindparam("new_seq"),
        head_hash=sa.bindparam("new_hash"),
        updated_at=sa.bindparam("new_time"),
    )
)
_INSERT_EVENTS = events.insert().returning(events.c.position, sort_by_parameter_order=True)


class KnownHead(NamedTuple):
    """A session's head as a writer's fold already knows it (seq, hash, time of its last event):
    appending after it needs no read of the head, since the guarded UPDATE still catches a
    writer that moved it meanwhile."""

    head_seq: int
    head_hash: str
    updated_at: datetime


class _LostRace(Exception):
    """The head moved between our read and our write."""


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not 0 < len(session_id) <= SESSION_ID_LENGTH:
        raise InvalidSessionId(
            f"a session id is a string of 1 to {SESSION_ID_LENGTH} characters, "
            f"got {brief(session_id)}"
        )
    if not session_id.isprintable():
        raise InvalidSessionId(f"session id {brief(session_id)} has unprintable characters")
    return session_id


def encode_batch(batch: Sequence[EventLike], max_payload_bytes: int) -> list[Encoded]:
    """Validate and encode a batch before any I/O; every problem raises `InvalidEvent`."""
    if isinstance(batch, NewEvent | Payload | Mapping) or not isinstance(batch, Sequence):
        raise InvalidEvent("append takes a list of events")
    if not batch:
        raise InvalidEvent("append needs at least one event")
    encoded = []
    for item in batch:
        event = item if isinstance(item, NewEvent) else NewEvent(item)
        check_text_size((event.payload,), max_payload_bytes, event.type)  # before copying it
        data, payload_json = encode_payload(event.payload)
        if len(payload_json) > max_payload_bytes:
            raise PayloadTooLarge(len(payload_json), max_payload_bytes, event.type)
        encoded.append(Encoded(event, data, payload_json))
    ids = [item.event.event_id for item in encoded]
    if len(set(ids)) != len(ids):
        raise InvalidEvent("a batch holds the same event_id twice")
    starts = [i for i, item in enumerate(encoded) if item.type == "SessionStarted"]
    if starts and starts != [0]:
        raise InvalidEvent("SessionStarted can only be the first event of a batch")
    return encoded


_SLICE = 1 << 20
"""Characters of non-ASCII text encoded at a time when measuring it: bounds the copy."""


def check_text_size(values: Iterable[object], max_payload_bytes: int, event_type: str) -> None:
    """`PayloadTooLarge` when the text inside `values` (strings, in models, mappings, lists)
    is over the limit by itself, measured before anything counts its tokens, truncates it or
    copies it into a payload.

    The payload's canonical JSON holds every one of those texts, escaped (never shorter than
    its UTF-8), so their UTF-8 size is a lower bound of the payload's: this never refuses a
    payload that would fit, and `encode_batch` still makes the exact check. Reading lengths
    is free; UTF-8 is measured only when the text could be over (4 bytes a character at
    most), at no cost for ASCII and a slice at a time for the rest, so memory stays bounded.
    """
    texts = _texts_in(values)
    if 4 * sum(map(len, texts)) <= max_payload_bytes:
        return
    size = sum(map(_utf8_size, texts))
    if size > max_payload_bytes:
        raise PayloadTooLarge(size, max_payload_bytes, event_type)


def _texts_in(values: Iterable[object]) -> list[str]:
    """Every string in `values`, as pydantic would dump them (a model's `exclude` fields are
    skipped). A loop over a stack: this runs on every message a `Session` appends (2 us)."""
    texts: list[str] = []
    stack = list(values)
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str:
            texts.append(value)  # type: ignore[arg-type]
        elif kind in _SCALARS:
            continue
        elif kind is tuple or kind is list:
            stack.extend(value)  # type: ignore[arg-type]
        elif (excluded := _EXCLUDED.get(kind)) is not None or issubclass(kind, BaseModel):
            if excluded is None:  # a model class seen for the first time
                fields = kind.model_fields  # type: ignore[attr-defined]
                excluded = _EXCLUDED[kind] = frozenset(n for n, f in fields.items() if f.exclude)
            if excluded:
                stack.extend(v for n, v in value.__dict__.items() if n not in excluded)
            else:
                stack.extend(value.__dict__.values())
        elif isinstance(value, str):
            texts.append(value)
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, Iterable) and not isinstance(value, bytes | bytearray):
            stack.extend(value)
    return texts


_SCALARS = frozenset({type(None), bool, int, float})
_EXCLUDED: dict[type, frozenset[str]] = {}
"""Per model class, the fields pydantic does not dump (`Field(exclude=True)`)."""


def _utf8_size(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(
        len(text[start : start + _SLICE].encode("utf-8", "surrogatepass"))
        for start in range(0, len(text), _SLICE)
    )


def append(
    engine: Engine,
    session_id: str,
    batch: list[Encoded],
    expected_version: int | None,
    clock: Clock,
    known_head: KnownHead | None = None,
) -> list[RecordedEvent]:
    """Append `batch` after the session's head, atomically; see the module docstring."""
    if (
        known_head is not None
        and expected_version == known_head.head_seq
        and engine.dialect.name == "sqlite"
        and batch[0].type != "SessionStarted"
    ):
        try:
            return _append_known_head_sqlite(engine, session_id, batch, known_head, clock)
        except _LostRace:
            pass  # another writer moved the head: the general path reads it and says so
    for _ in range(_ANY_VERSION_ATTEMPTS):
        try:
            with engine.connect().execution_options(**{WRITE: True}) as conn, conn.begin():
                return _append_once(conn, session_id, batch, expected_version, clock, known_head)
        except (sa.exc.IntegrityError, _LostRace):
            with engine.connect() as conn:
                stored = _already_stored(conn, session_id, batch)
                if stored is not None:
                    return stored
                if expected_version is not None:
                    raise ConcurrencyError(
                        session_id, expected_version, head_seq(conn, session_id)
                    ) from None
    raise ConcurrencyError(session_id, -1, -1)  # pragma: no cover - needs 20 lost races in a row


def _append_known_head_sqlite(
    engine: Engine, session_id: str, batch: list[Encoded], head: KnownHead, clock: Clock
) -> list[RecordedEvent]:
    """A `Session`'s append on SQLite, whose fold knows the head: nothing to read, so the whole
    transaction runs on the sqlite3 connection. SQLAlchemy's Connection and transaction objects
    were a quarter of such an append (about 90 of 375 us); the writes are the same either way."""
    pooled = engine.raw_connection()
    try:
        driver: sqlite3.Connection = pooled.driver_connection  # type: ignore[assignment]
        try:
            driver.execute("BEGIN IMMEDIATE")
            recorded = _write_after(
                session_id,
                batch,
                head,
                clock,
                lambda move, rows: _sqlite_writes(engine.dialect).write(driver, move, rows),
            )
            driver.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                driver.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:  # locked past the busy timeout, read-only, full, not a database
        raise driver_error("append", exc) from exc
    finally:
        pooled.close()
    return recorded


def _append_once(
    conn: sa.Connection,
    session_id: str,
    batch: list[Encoded],
    expected_version: int | None,
    clock: Clock,
    known_head: KnownHead | None = None,
) -> list[RecordedEvent]:
    head: Any = known_head
    if head is None or expected_version != known_head.head_seq:  # type: ignore[union-attr]
        head = conn.execute(_READ_HEAD, {"session_id": session_id}).first()
    head_seq = head.head_seq if head is not None else 0
    if expected_version is not None and expected_version != head_seq:
        stored = _already_stored(conn, session_id, batch)
        if stored is not None:
            return stored
        if head is None:
            raise UnknownSession(session_id)
        raise ConcurrencyError(session_id, expected_version, head_seq)
    _check_session_start(conn, session_id, batch, is_new=head is None)

    def write(move: dict[str, Any] | None, rows: list[dict[str, Any]]) -> list[int]:
        if move is None:  # a new session: its row first
            started = batch[0].event.payload
            assert isinstance(started, SessionStarted)
            conn.execute(
                sessions.insert().values(
                    id=session_id,
                    title=started.title,
                    head_seq=len(batch),
                    head_hash=rows[-1]["hash"],
                    parent_id=started.parent_session_id,
                    parent_seq=started.parent_seq,
                    created_at=rows[0]["recorded_at"],
                    updated_at=rows[0]["recorded_at"],
                )
            )
        if conn.dialect.name == "sqlite":
            driver: Any = conn.connection.driver_connection
            return _sqlite_writes(conn.dialect).write(driver, move, rows)
        if move is not None and conn.execute(_MOVE_HEAD, move).rowcount != 1:
            raise _LostRace
        return list(conn.execute(_INSERT_EVENTS, rows).scalars())

    return _write_after(session_id, batch, head, clock, write)


Write = Callable[[dict[str, Any] | None, list[dict[str, Any]]], list[int]]
"""Writes the rows of a batch and moves the head (`None`: a new session); gives positions."""


def _write_after(
    session_id: str, batch: list[Encoded], head: Any, clock: Clock, write: Write
) -> list[RecordedEvent]:
    """Chain `batch` after `head` (`None` for a new session) and write it with `write`."""
    now = clock().astimezone(UTC)
    recorded_at = max(now, as_utc(head.updated_at)) if head is not None else now
    head_seq = head.head_seq if head is not None else 0
    prev_hash = head.head_hash if head is not None else GENESIS_HASH
    links = chain(session_id, batch, head_seq, prev_hash, [recorded_at] * len(batch))
    move = None
    if head is not None:
        move = {
            "session_id": session_id,
            "read_seq": head_seq,
            "new_seq": head_seq + len(batch),
            "new_hash": links[-1].hash,
            "new_time": recorded_at,
        }
    rows = [
        event_row(session_id, link, item.payload_json)
        for link, item in zip(links, batch, strict=True)
    ]
    positions = write(move, rows)
    return [
        RecordedEvent(
            position=position,
            session_id=session_id,
            seq=link.seq,
            event_id=link.event_id,
            type=link.type,
            schema_version=link.schema_version,
            recorded_at=link.recorded_at,
            prev_hash=link.prev_hash,
            hash=link.hash,
            payload=item.event.payload,
        )
        for link, item, position in zip(links, batch, positions, strict=True)
    ]


def event_row(session_id: str, link: ChainLink, payload_json: bytes) -> dict[str, Any]:
    """The `events` row of one link; `payload_json` is its canonical JSON, stored as is."""
    return {
        "session_id": session_id,
        "seq": link.seq,
        "event_id": link.event_id,
        "type": link.type,
        "schema_version": link.schema_version,
        "payload": EncodedJson(payload_json.decode("utf-8")),
        "recorded_at": link.recorded_at,
        "prev_hash": link.prev_hash,
        "hash": link.hash,
    }


def chain(
    session_id: str,
    batch: Sequence[Encoded],
    after_seq: int,
    prev_hash: str,
    times: Sequence[datetime],
) -> list[ChainLink]:
    """`batch` as the links that follow `after_seq` (whose hash is `prev_hash`), recorded at
    `times`: each event's hash covers the one before it. The payload is the stored JSON."""
    links = []
    for seq, (item, recorded_at) in enumerate(zip(batch, times, strict=True), after_seq + 1):
        digest = event_hash(
            prev_hash=prev_hash,
            event_id=item.event.event_id,
            session_id=session_id,
            seq=seq,
            event_type=item.type,
            schema_version=item.schema_version,
            recorded_at=recorded_at,
            payload_json=item.payload_json,
        )
        link = ChainLink(
            seq=seq,
            event_id=item.event.event_id,
            type=item.type,
            schema_version=item.schema_version,
            recorded_at=recorded_at,
            prev_hash=prev_hash,
            hash=digest,
            payload=item.data,
        )
        links.append(link)
        prev_hash = digest
    return links


class _SqliteWrites:
    """The two writes of every append on SQLite, through the sqlite3 cursor itself: SQLAlchemy's
    execution machinery was a third of an append in the profile. The statements are still the
    Core ones above, compiled once for the dialect, and values pass its bind processors (times,
    JSON), so the rows are exactly what `conn.execute` would write."""

    def __init__(self, dialect: sa.Dialect) -> None:
        self._move = _Compiled(_MOVE_HEAD, dialect)
        columns = [c.name for c in events.c if c.name != "position"]  # position: the rowid
        self._insert = _Compiled(events.insert(), dialect, columns)

    def write(
        self, driver: sqlite3.Connection, move: dict[str, Any] | None, rows: list[dict[str, Any]]
    ) -> list[int]:
        cursor = driver.cursor()
        try:
            if move is not None:
                cursor.execute(self._move.sql, self._move.params(move))
                if cursor.rowcount != 1:
                    raise _LostRace
            positions = []
            for row in rows:
                cursor.execute(self._insert.sql, self._insert.params(row))
                assert cursor.lastrowid is not None  # an INSERT into a rowid table sets it
                positions.append(cursor.lastrowid)
            return positions
        except sqlite3.IntegrityError:
            raise _LostRace from None  # a unique key: another writer took the seq
        except sqlite3.Error as exc:  # read-only, full, locked: typed like SQLAlchemy's own
            raise driver_error("append", exc) from exc
        finally:
            cursor.close()


class _Compiled:
    """A Core statement compiled for one dialect: its SQL, and its parameters in order with
    the bind processors SQLAlchemy itself would apply (its compiler's, read once)."""

    def __init__(
        self, statement: sa.ClauseElement, dialect: sa.Dialect, columns: list[str] | None = None
    ) -> None:
        compiled: Any = statement.compile(dialect=dialect, column_keys=columns)
        self.sql = str(compiled)
        self._names = list(compiled.positiontup)
        processors = compiled._bind_processors
        self._processors = [processors.get(name) for name in self._names]

    def params(self, values: Mapping[str, Any]) -> list[Any]:
        return [
            value if process is None else process(value)
            for value, process in zip(
                (values[name] for name in self._names), self._processors, strict=True
            )
        ]


_WRITES: weakref.WeakKeyDictionary[sa.Dialect, _SqliteWrites] = weakref.WeakKeyDictionary()


def _sqlite_writes(dialect: sa.Dialect) -> _SqliteWrites:
    """One compiled pair per engine's dialect, gone with the engine."""
    writes = _WRITES.get(dialect)
    if writes is None:
        writes = _WRITES[dialect] = _SqliteWrites(dialect)
    return writes


def _check_session_start(
    conn: sa.Connection, session_id: str, batch: list[Encoded], *, is_new: bool
) -> None:
    first = batch[0].event.payload
    if not is_new:
        if isinstance(first, SessionStarted):
            raise InvalidEvent(f"session {session_id!r} has started already")
        return
    if not isinstance(first, SessionStarted):
        raise InvalidEvent(f"a new session starts with a SessionStarted event, not {batch[0].type}")
    problem = fork_point_problem(conn, first)
    if problem is not None:
        raise InvalidEvent(problem)


_EVENT_HASH = sa.select(events.c.hash).where(
    events.c.session_id == sa.bindparam("session_id"), events.c.seq == sa.bindparam("seq")
)


def event_hash_at(conn: sa.Connection, session_id: str, seq: int) -> str | None:
    """The stored hash of the session's event `seq`, or `None` when there is no such event."""
    found = conn.execute(_EVENT_HASH, {"session_id": session_id, "seq": seq}).scalar()
    return None if found is None else str(found)


def fork_point_problem(conn: sa.Connection, started: SessionStarted) -> str | None:
    """Why `started` cannot begin a fork here (`None` when it is no fork, or a good one): a
    fork names its parent, the seq it continues from and that event's hash, and the parent's
    event at that seq must have exactly that hash. `UnknownSession` when there is no parent."""
    parent = started.parent_session_id
    if parent is None:
        if (started.parent_seq, started.parent_hash) != (None, None):
            return "parent_seq and parent_hash go with a parent_session_id"
        return None
    parent_head = head_seq(conn, parent)
    if started.parent_seq is None or started.parent_seq > parent_head:
        return (
            f"parent_seq must name an event of {brief(parent)} (1..{parent_head}), "
            f"got {started.parent_seq}"
        )
    if started.parent_hash is None:
        return f"a fork of {brief(parent)} names the parent_hash of the event it continues from"
    if event_hash_at(conn, parent, started.parent_seq) != started.parent_hash:
        return (
            f"the parent {brief(parent)} has another history: its event {started.parent_seq} "
            "does not have the parent_hash this fork names"
        )
    return None


def head_seq(conn: sa.Connection, session_id: str) -> int:
    """The session's head seq; `UnknownSession` when there is no such session."""
    head = conn.execute(_HEAD_SEQ, {"session_id": session_id}).scalar_one_or_none()
    if head is None:
        raise UnknownSession(session_id)
    return int(head)


def _already_stored(
    conn: sa.Connection, session_id: str, batch: list[Encoded]
) -> list[RecordedEvent] | None:
    """The stored events when this exact batch was appended before; `None` when none of it was."""
    ids = [item.event.event_id for item in batch]
    rows = conn.execute(
        sa.select(*EVENT_ROW, events.c.payload).where(
            events.c.session_id == session_id, events.c.event_id.in_(ids)
        )
    ).all()
    if not rows:
        return None
    by_id = {row.event_id: row for row in rows}
    for item in batch:
        row = by_id.get(item.event.event_id)
        if row is None:
            raise IdempotencyError(
                session_id,
                item.event.event_id,
                "part of this batch is stored already and this event is not; "
                "retry the batch exactly as it was sent",
            )
        same = (
            row.type == item.type
            and row.schema_version == item.schema_version
            and canonical_json(row.payload) == item.payload_json
        )
        if not same:
            raise IdempotencyError(
                session_id, item.event.event_id, "event_id is stored already with other content"
            )
    seqs = [by_id[event_id].seq for event_id in ids]
    if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        raise IdempotencyError(
            session_id, ids[0], "these events are stored, but not as one batch in this order"
        )
    return [recorded_event(by_id[event_id]) for event_id in ids]
