"""Verifying a session's hash chain: a pure walk over its stored events, first to last."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sessionstore.events._canonical import GENESIS_HASH, event_hash, hashed_json
from sessionstore.events._errors import InvalidEvent


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One stored event as the database holds it (payload not upcast: the hash covers it raw)."""

    seq: int
    event_id: str
    type: str
    schema_version: int
    recorded_at: datetime
    prev_hash: str
    hash: str
    payload: Mapping[str, Any]
    stored_json: bytes | None = None
    """The payload's text as the database kept it, when that may be the very bytes the hash
    covers (SQLite keeps what was written; PostgreSQL's JSONB does not): hashed as it is
    first, which saves writing `payload` out again; the canonical form of `payload` is
    hashed when those bytes do not give the stored hash."""


@dataclass(frozen=True, slots=True)
class ChainReport:
    """The outcome of a verification: `first_broken_seq` is `None` when the chain holds."""

    session_id: str
    events_checked: int
    first_broken_seq: int | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.first_broken_seq is None


def verify_chain(
    session_id: str,
    links: Iterable[ChainLink],
    *,
    head_seq: int | None = None,
    head_hash: str | None = None,
) -> ChainReport:
    """Recompute every hash in order and report the first event that does not hold.

    Checks, per event: seq follows without gaps, `prev_hash` is the previous event's hash, the
    stored hash equals the recomputed one, and time never goes backwards. When the session's
    recorded head is given, the chain must also end exactly there.
    """
    expected_seq = 1
    expected_prev = GENESIS_HASH
    previous_time: datetime | None = None
    checked = 0

    def broken(seq: int, reason: str) -> ChainReport:
        return ChainReport(session_id, checked, seq, reason)

    for link in links:
        if link.seq != expected_seq:
            return broken(expected_seq, f"expected seq {expected_seq}, found seq {link.seq}")
        if link.prev_hash != expected_prev:
            return broken(link.seq, "prev_hash is not the previous event's hash")
        recomputed = None
        if link.stored_json is not None:
            recomputed = _hash_of(session_id, link, link.stored_json)
        if recomputed != link.hash:
            try:
                payload_json = hashed_json(link.payload)
            except InvalidEvent as exc:
                return broken(link.seq, f"payload is not canonical JSON: {exc}")
            recomputed = _hash_of(session_id, link, payload_json)
        if recomputed != link.hash:
            return broken(link.seq, "stored hash does not match the event's content")
        if previous_time is not None and link.recorded_at < previous_time:
            return broken(link.seq, "recorded_at is earlier than the previous event's")
        previous_time = link.recorded_at
        expected_prev = link.hash
        expected_seq += 1
        checked += 1

    last_seq = expected_seq - 1
    if head_seq is not None and head_seq != last_seq:
        return broken(
            min(head_seq, last_seq) + 1,
            f"session head is seq {head_seq}, but the log ends at seq {last_seq}",
        )
    if head_hash is not None and head_hash != expected_prev:
        return broken(last_seq, "session head hash is not the last event's hash")
    return ChainReport(session_id, checked)


def _hash_of(session_id: str, link: ChainLink, payload_json: bytes) -> str:
    return event_hash(
        prev_hash=link.prev_hash,
        event_id=link.event_id,
        session_id=session_id,
        seq=link.seq,
        event_type=link.type,
        schema_version=link.schema_version,
        recorded_at=link.recorded_at,
        payload_json=payload_json,
    )
