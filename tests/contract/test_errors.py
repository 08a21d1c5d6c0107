"""Everything a caller can get wrong is a typed error that leaves the store as it was."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstore import (
    InvalidEvent,
    InvalidSessionId,
    PayloadTooLarge,
    SessionStore,
    SessionStoreError,
    UnknownEventType,
    UnknownSession,
)
from sessionstore.events import Message, MessageAppended, NewEvent, SessionStarted, TextPart
from tests.builders import started, user
from tests.conftest import Backend


def text_message(text: Any) -> dict[str, Any]:
    """A MessageAppended as a plain mapping, the way an importer or a JSON client sends it."""
    return {
        "type": "MessageAppended",
        "message": {"role": "user", "parts": [{"type": "text", "text": text}]},
    }


BAD_BATCHES: dict[str, tuple[list[Any], type[SessionStoreError], str]] = {
    "unknown event type": (
        [{"type": "MessageExploded", "message": {}}],
        UnknownEventType,
        "unknown event type 'MessageExploded'",
    ),
    "missing field": (
        [{"type": "MessagePinned"}],
        InvalidEvent,
        "MessagePinned: message_id: Field required",
    ),
    "unexpected field": (
        [{"type": "MessagePinned", "message_id": "m", "colour": "red"}],
        InvalidEvent,
        "MessagePinned: colour: Extra inputs are not permitted",
    ),
    "wrong part for the role": (
        [
            {
                "type": "MessageAppended",
                "message": {
                    "role": "tool",
                    "parts": [{"type": "text", "text": "not a tool result"}],
                },
            }
        ],
        InvalidEvent,
        "a tool message cannot hold a text part",
    ),
    "NUL in text": (
        [text_message("before\x00after")],
        InvalidEvent,
        r"\$\.message\.parts\[0\]\.text: text contains a NUL character",
    ),
    "NUL in a model built in code": (
        [user("tab\x00")],
        InvalidEvent,
        "NUL character",
    ),
    "broken UTF-8 bytes": (
        [text_message(b"caf\xc3(")],
        InvalidEvent,
        "Input should be a valid string, unable to parse raw data as a unicode string",
    ),
    "lone surrogate (UTF-8 decoded with surrogateescape)": (
        [user(b"caf\xc3(".decode("utf-8", "surrogateescape"))],
        InvalidEvent,
        "text is not valid UTF-8",
    ),
    "float without a stable JSON form": (
        [SessionStarted(compression={"trigger_ratio": 1e300})],
        InvalidEvent,
        "float 1e\\+300 has no stable JSON form",
    ),
    "not a payload at all": ([42], InvalidEvent, "not int"),
    "a bare event instead of a list": (
        user("x"),  # type: ignore[dict-item]
        InvalidEvent,
        "append takes a list of events",
    ),
    "empty batch": ([], InvalidEvent, "at least one event"),
}


@pytest.mark.parametrize("case", list(BAD_BATCHES))
def test_bad_input_is_a_typed_error_and_writes_nothing(
    store: SessionStore, backend: Backend, case: str
) -> None:
    store.append("s1", [started()], expected_version=0)
    before = backend.table_rows()
    batch, error, message = BAD_BATCHES[case]

    with pytest.raises(error, match=message):
        store.append("s1", batch, expected_version=1)

    assert backend.table_rows() == before
    assert store.verify("s1").ok


def test_a_good_event_before_a_bad_one_is_not_written_either(
    store: SessionStore, backend: Backend
) -> None:
    store.append("s1", [started()], expected_version=0)
    before = backend.table_rows()

    with pytest.raises(InvalidEvent):
        store.append("s1", [user("fine"), text_message("bad\x00")], expected_version=1)
    assert backend.table_rows() == before


def test_payloads_over_the_limit_are_refused(backend: Backend) -> None:
    with SessionStore(backend.url, max_payload_bytes=10_000) as store:
        store.append("s1", [started()], expected_version=0)
        before = backend.table_rows()

        with pytest.raises(PayloadTooLarge, match="over the store's limit of 10,000") as caught:
            store.append("s1", [user("x" * 20_000)], expected_version=1)

        assert caught.value.limit == 10_000
        assert caught.value.size > 20_000
        assert backend.table_rows() == before
        store.append("s1", [user("x" * 9_000)], expected_version=1)  # under the limit: fine


def test_multibyte_text_is_measured_in_utf8_bytes(backend: Backend) -> None:
    with SessionStore(backend.url, max_payload_bytes=10_000) as store:
        store.append("s1", [started()], expected_version=0)
        with pytest.raises(PayloadTooLarge):
            store.append("s1", [user("é" * 6_000)], expected_version=1)  # 6,000 chars, 12 KB


@pytest.mark.parametrize("session_id", ["", "x" * 129, "tab\tinside", 7])
def test_bad_session_ids_are_refused(
    store: SessionStore, backend: Backend, session_id: Any
) -> None:
    with pytest.raises(InvalidSessionId):
        store.append(session_id, [started()], expected_version=0)
    assert backend.table_rows() == {"events": [], "sessions": []}


def test_an_event_id_must_be_a_uuid() -> None:
    with pytest.raises(InvalidEvent, match="event_id 'not-a-uuid' is not a UUID"):
        NewEvent(user("x"), event_id="not-a-uuid")


def test_text_round_trips_every_valid_unicode_character(store: SessionStore) -> None:
    text = 'naïve café — 漢字 😀 \u200b \U0010ffff \\u0000 "quoted"'
    message = Message(role="user", parts=(TextPart(text=text),))
    store.append("s1", [started(), MessageAppended(message=message)], expected_version=0)

    stored = store.read("s1")[1].payload
    assert isinstance(stored, MessageAppended)
    assert stored.message.parts[0].text == text  # type: ignore[union-attr]
    assert store.verify("s1").ok


def test_errors_share_one_root(store: SessionStore) -> None:
    with pytest.raises(SessionStoreError):
        store.read("missing")
    assert issubclass(UnknownSession, LookupError)
    assert issubclass(InvalidEvent, ValueError)
