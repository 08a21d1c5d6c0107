"""Reading a session's context fold from the database, with snapshots.

A snapshot is the context fold's state at one seq (`ContextFold.to_snapshot`), stored with its
projection name and version. It is a cache: loading takes the newest snapshot at or before the
point asked for, checks it (its projection version, the hash of the event it stands at, the
messages it names), and folds the events after it. A snapshot that fails any check is ignored
and the fold starts from the first event, so deleting snapshots never changes a result.

A fork's history is its parent's up to the fork point, then its own: with no snapshot of its
own, a fork's fold starts from its parent's fold at `parent_seq` (itself loaded this way).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError

from events import (
    ContextCompacted,
    InvalidEvent,
    Message,
    MessageAppended,
    RecordedEvent,
    SessionStarted,
    decode_payload_json,
)
from projections import PROJECTION, PROJECTION_VERSION, ContextFold
from projections._fold import EventRef
from store._append import head_seq
from store._engine import WRITE
from store._errors import InvalidReplayPoint
from store._rows import EVENT_ROW, PAYLOAD_TEXT, recorded_event
from store._schema import events, snapshots

log = logging.getLogger("sessionstore")

_REFS_PER_QUERY = 500


@dataclass(frozen=True, slots=True)
class LoadedFold:
    fold: ContextFold
    snapshot_seq: int | None
    """The seq of the snapshot the fold started from, or `None` when it folded everything."""


def seq_at_time(conn: sa.Connection, session_id: str, moment: datetime) -> int:
    """The last seq recorded at or before `moment`."""
    if moment.tzinfo is None:
        raise InvalidReplayPoint("at= needs a timezone-aware datetime (the store keeps UTC)")
    moment = moment.astimezone(UTC)  # SQLite compares the stored UTC text, offsets ignored
    seq = conn.execute(
        sa.select(sa.func.max(events.c.seq)).where(
            events.c.session_id == session_id, events.c.recorded_at <= moment
        )
    ).scalar_one_or_none()
    if seq is None:
        head_seq(conn, session_id)  # UnknownSession first
        raise InvalidReplayPoint(f"session {session_id!r} had not started at {moment.isoformat()}")
    return int(seq)


def load_fold(
    conn: sa.Connection, session_id: str, to_seq: int, *, use_snapshots: bool = True
) -> LoadedFold:
    """The session's context fold right after event `to_seq` (which must exist)."""
    if use_snapshots:
        loaded = _from_newest_snapshot(conn, session_id, to_seq)
        if loaded is not None:
            return loaded
    rows = _events(conn, session_id, 1, to_seq)
    first = next(rows, None)
    if first is None:
        raise InvalidReplayPoint(f"session {session_id!r} has no event {to_seq}")
    started = first.payload
    fold = ContextFold()
    if isinstance(started, SessionStarted) and started.parent_session_id is not None:
        assert started.parent_seq is not None
        parent = load_fold(
            conn, started.parent_session_id, started.parent_seq, use_snapshots=use_snapshots
        )
        fold = parent.fold
    fold.apply(first)
    for event in rows:
        fold.apply(event)
    return LoadedFold(fold, None)


def _events(
    conn: sa.Connection, session_id: str, from_seq: int, to_seq: int
) -> Iterator[RecordedEvent]:
    query = (
        sa.select(*EVENT_ROW)
        .where(events.c.session_id == session_id, events.c.seq.between(from_seq, to_seq))
        .order_by(events.c.seq)
    )
    for row in conn.execution_options(yield_per=500).execute(query):
        yield recorded_event(row)


def _from_newest_snapshot(conn: sa.Connection, session_id: str, to_seq: int) -> LoadedFold | None:
    """The newest usable snapshot folded forward to `to_seq`, or `None`."""
    row = conn.execute(
        sa.select(snapshots.c.seq, snapshots.c.state)
        .where(
            snapshots.c.session_id == session_id,
            snapshots.c.projection == PROJECTION,
            snapshots.c.projection_version == PROJECTION_VERSION,
            snapshots.c.seq <= to_seq,
        )
        .order_by(snapshots.c.seq.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    try:
        state: dict[str, Any] = row.state
        fold = ContextFold.from_snapshot(state, _messages(conn, ContextFold.snapshot_refs(state)))
        tail = _events(conn, session_id, row.seq, to_seq)
        at_snapshot = next(tail)
        if (fold.session_id, fold.seq, fold.hash) != (session_id, row.seq, at_snapshot.hash):
            raise ValueError("snapshot does not stand at the event it names")
        for event in tail:
            fold.apply(event)
    except (KeyError, ValueError, TypeError, IndexError, StopIteration, ValidationError) as exc:
        log.warning("ignoring snapshot of %s at seq %s: %s", session_id, row.seq, exc)
        return None
    return LoadedFold(fold, row.seq)


def _messages(conn: sa.Connection, refs: list[EventRef]) -> dict[EventRef, Message]:
    """The messages stored at `refs`: appended messages and compaction summaries."""
    by_session: dict[str, list[int]] = {}
    for session_id, seq in refs:
        by_session.setdefault(session_id, []).append(seq)
    found: dict[EventRef, Message] = {}
    for session_id, seqs in by_session.items():
        wanted = set(seqs)
        for query in _message_queries(session_id, sorted(wanted)):
            for seq, event_type, version, text in conn.execute(query):  # unpacked: see _rows
                if seq not in wanted:
                    continue  # a range scan also reads the events between
                payload = decode_payload_json(event_type, version, text)
                if isinstance(payload, MessageAppended):
                    found[(session_id, seq)] = payload.message
                elif isinstance(payload, ContextCompacted):
                    found[(session_id, seq)] = payload.summary
                else:
                    raise InvalidEvent(f"{session_id} seq {seq} holds no message")
    return found


def _message_queries(session_id: str, seqs: list[int]) -> Iterator[sa.Select[Any]]:
    """Where most events of a stretch are wanted (a context nothing was compacted out of), one
    range scan reads them faster than lookups by key; sparse ones are looked up in chunks."""
    columns = (events.c.seq, events.c.type, events.c.schema_version, PAYLOAD_TEXT)
    mine = events.c.session_id == session_id
    if len(seqs) * 2 >= seqs[-1] - seqs[0] + 1:
        yield sa.select(*columns).where(mine, events.c.seq.between(seqs[0], seqs[-1]))
        return
    for start in range(0, len(seqs), _REFS_PER_QUERY):
        yield sa.select(*columns).where(
            mine, events.c.seq.in_(seqs[start : start + _REFS_PER_QUERY])
        )


def save_snapshot(engine: sa.Engine, fold: ContextFold, now: datetime) -> None:
    """Store the fold's state at its seq; a snapshot already there is kept as it is."""
    values = {
        "session_id": fold.session_id,
        "projection": PROJECTION,
        "projection_version": PROJECTION_VERSION,
        "seq": fold.seq,
        "state": fold.to_snapshot(),
        "created_at": now,
    }
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        statement: Any = pg_insert(snapshots).values(values).on_conflict_do_nothing()
    else:
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        statement = sqlite_insert(snapshots).values(values).on_conflict_do_nothing()
    with engine.connect().execution_options(**{WRITE: True}) as conn, conn.begin():
        conn.execute(statement)
