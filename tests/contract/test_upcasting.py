"""Events written by an older vocabulary are upgraded on read; the stored row never changes."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import pytest
from pydantic import Field

from sessionstore import SessionStore, UnknownEventType, UnsupportedSchemaVersion
from sessionstore.events import MODELS, UPCASTERS, MessagePinned, Payload
from tests.builders import started
from tests.conftest import Backend


class MessagePinnedV2(Payload):
    """A later MessagePinned: several messages at once, and why."""

    schema_version: ClassVar[int] = 2
    type: Literal["MessagePinned"] = "MessagePinned"
    message_ids: tuple[str, ...] = Field(min_length=1)
    reason: str


def pinned_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {"message_ids": [data["message_id"]], "reason": "pinned before reasons were kept"}


def test_a_stored_v1_payload_reads_as_the_changed_v2_model(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SessionStore(backend.url) as old_code:
        old_code.append("s1", [started(), MessagePinned(message_id="m7")], expected_version=0)
    stored_rows = backend.table_rows()

    # A newer release: the model changed shape and ships its v1 -> v2 step.
    monkeypatch.setitem(MODELS, "MessagePinned", MessagePinnedV2)
    monkeypatch.setattr(UPCASTERS, "_steps", dict(UPCASTERS._steps))
    UPCASTERS.register("MessagePinned", from_version=1)(pinned_v1_to_v2)

    with SessionStore(backend.url) as new_code:
        pinned = new_code.read("s1")[1]
        assert pinned.payload == MessagePinnedV2(
            message_ids=("m7",), reason="pinned before reasons were kept"
        )
        assert pinned.schema_version == 1  # as written; the hash covers the stored form
        assert new_code.verify("s1").ok
    assert backend.table_rows() == stored_rows


def insert_raw_event(backend: Backend, event_type: str, schema_version: int, payload: str) -> None:
    """Write seq 2 of `s1` behind the store's back, as another version of the code might have."""
    backend.execute(
        "INSERT INTO events (session_id, seq, event_id, type, schema_version, payload, "
        "recorded_at, prev_hash, hash) VALUES ('s1', 2, '01890a5d-ac96-774b-bcce-b302099a8057', "
        ":type, :version, :payload, '2026-01-01 00:00:00', :zero, :zero)",
        type=event_type,
        version=schema_version,
        payload=payload,
        zero="0" * 64,
    )


def test_a_newer_schema_version_than_the_code_knows_is_refused_on_read(
    store: SessionStore, backend: Backend
) -> None:
    store.append("s1", [started()], expected_version=0)
    insert_raw_event(backend, "MessagePinned", 9, '{"message_id": "m"}')
    with pytest.raises(UnsupportedSchemaVersion, match="schema_version 9 is newer than this"):
        store.read("s1")


def test_an_unknown_stored_type_is_refused_on_read(store: SessionStore, backend: Backend) -> None:
    store.append("s1", [started()], expected_version=0)
    insert_raw_event(backend, "FromTheFuture", 1, "{}")
    with pytest.raises(UnknownEventType, match="'FromTheFuture'"):
        store.read("s1")
