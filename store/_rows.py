"""Rows to domain objects: stored events, chain links and session summaries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from events import ChainLink, RecordedEvent, decode_payload_json
from store._schema import events


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session as the `sessions` table knows it; `version` is its head seq."""

    id: str
    title: str
    version: int
    parent_id: str | None
    parent_seq: int | None
    created_at: datetime
    updated_at: datetime


def as_utc(moment: datetime) -> datetime:
    """Database times back as aware UTC (SQLite hands them back naive; we only write UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


PAYLOAD_TEXT = sa.cast(events.c.payload, sa.Text).label("payload_text")
"""The stored payload as JSON text, for `decode_payload_json` (no `json.loads` first)."""

EVENT_ROW = (
    *(
        events.c[name]
        for name in (
            "position",
            "session_id",
            "seq",
            "event_id",
            "type",
            "schema_version",
            "recorded_at",
            "prev_hash",
            "hash",
        )
    ),
    PAYLOAD_TEXT,
)
"""The columns `recorded_event` reads, in the order it unpacks them: `select(*EVENT_ROW)`."""


def recorded_event(row: Any) -> RecordedEvent:
    # By position: a Row's named lookups cost as much as decoding a small payload, and replay
    # builds one RecordedEvent per event.
    position, session_id, seq, event_id, type_, version, recorded_at, prev_hash, hash_, text = row[
        : len(EVENT_ROW)
    ]
    return RecordedEvent(
        position=position,
        session_id=session_id,
        seq=seq,
        event_id=event_id,
        type=type_,
        schema_version=version,
        recorded_at=as_utc(recorded_at),
        prev_hash=prev_hash,
        hash=hash_,
        payload=decode_payload_json(type_, version, text),
    )


def chain_link(row: Any) -> ChainLink:
    return ChainLink(
        seq=row.seq,
        event_id=row.event_id,
        type=row.type,
        schema_version=row.schema_version,
        recorded_at=as_utc(row.recorded_at),
        prev_hash=row.prev_hash,
        hash=row.hash,
        payload=row.payload,
    )


def session_info(row: Any) -> SessionInfo:
    return SessionInfo(
        id=row.id,
        title=row.title,
        version=row.head_seq,
        parent_id=row.parent_id,
        parent_seq=row.parent_seq,
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
    )
