"""Rows to domain objects: chain links and session summaries
(events: `sessionstore.log`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sessionstore.events import ChainLink

if TYPE_CHECKING:
    from sessionstore.storage._recorder import StoredEvent


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session as the `sessions` table knows it; `version` is its head seq and
    `head_hash` the hash of that event. `context_window`, `live_tokens` (the live context's
    size after the head; `None`: not counted yet) and `compactions` are the counters the
    row keeps for listings (see `sessionstore.storage._schema.sessions`)."""

    id: str
    title: str
    version: int
    parent_id: str | None
    parent_seq: int | None
    created_at: datetime
    updated_at: datetime
    head_hash: str
    app: str | None = None
    user: str | None = None
    tags: tuple[str, ...] = ()
    context_window: int | None = None
    live_tokens: int | None = None
    compactions: int = 0


def as_utc(moment: datetime) -> datetime:
    """Database times back as aware UTC (SQLite hands them back naive; we only write UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def chain_link(stored: StoredEvent) -> ChainLink:
    """A stored event as its hash chain sees it: the payload as stored, not upcast."""
    return ChainLink(
        seq=stored.seq,
        event_id=stored.event_id,
        type=stored.type,
        schema_version=stored.schema_version,
        recorded_at=stored.recorded_at,
        prev_hash=stored.prev_hash,
        hash=stored.hash,
        payload=json.loads(stored.payload),
        stored_json=stored.payload.encode("utf-8"),
    )
