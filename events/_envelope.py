"""Envelopes: an event on its way in (`NewEvent`), as stored (`RecordedEvent`), and a message
appended as a fold reads it (`StoredAppend`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sessionstore.events._brief import brief, described
from sessionstore.events._codec import parse_payload
from sessionstore.events._errors import InvalidEvent
from sessionstore.events._ids import new_id
from sessionstore.events._payloads import Payload


@dataclass(frozen=True, slots=True, init=False)
class NewEvent:
    """A payload with the `event_id` its writer chose: the idempotency key of the append.

    Keep the object (or its `event_id`) to retry an append safely: the store recognises the id
    and returns what it stored instead of appending twice.
    """

    payload: Payload
    event_id: str

    def __init__(self, payload: Payload | Mapping[str, Any], event_id: str | None = None) -> None:
        object.__setattr__(self, "payload", parse_payload(payload))
        object.__setattr__(self, "event_id", _canonical_uuid(event_id) if event_id else new_id())

    @property
    def type(self) -> str:
        return str(self.payload.type)  # type: ignore[attr-defined]


def _canonical_uuid(value: object) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    if not isinstance(value, str):
        raise InvalidEvent(f"event_id must be a UUID string, got {described(value)}")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidEvent(f"event_id {brief(value)} is not a UUID") from None


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An event as stored. `schema_version` is the version it was written with; `payload` has
    been upcast to the current model."""

    position: int
    session_id: str
    seq: int
    event_id: str
    type: str
    schema_version: int
    recorded_at: datetime
    prev_hash: str
    hash: str
    payload: Payload


@dataclass(frozen=True, slots=True)
class StoredAppend:
    """A `MessageAppended` as the read path hands it to a fold: its envelope and its message as
    stored JSON with the bodies it showed joined (a plain dict, `Message`'s fields), not
    validated into models. A resume folds thousands of messages; each was validated once, when
    it was appended, and `verify` checks them all (see `sessionstore.projections._fold`)."""

    session_id: str
    seq: int
    hash: str
    recorded_at: datetime
    message: Any
    """`Message`'s fields as stored; a row edited by hand may hold anything, which the fold
    refuses with `InvalidEvent`."""
