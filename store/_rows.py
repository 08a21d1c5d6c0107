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

EVENT_ROW = (*(c for c in events.c if c.name != "payload"), PAYLOAD_TEXT)
"""The columns `recorded_event` reads: `select(*EVENT_ROW)`."""


def recorded_event(row: Any) -> RecordedEvent:
    return RecordedEvent(
        position=row.position,
        session_id=row.session_id,
        seq=row.seq,
        event_id=row.event_id,
        type=row.type,
        schema_version=row.schema_version,
        recorded_at=as_utc(row.recorded_at),
        prev_hash=row.prev_hash,
        hash=row.hash,
        payload=decode_payload_json(row.type, row.schema_version, row.payload_text),
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
