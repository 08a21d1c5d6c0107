"""Appending and reading back: numbering, chaining, times, session rows."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from sessionstore import InvalidEvent, SessionStore, UnknownSession
from sessionstore.events import (
    GENESIS_HASH,
    MessagePinned,
    NewEvent,
    SessionStarted,
    canonical_json,
)
from sessionstore.events._canonical import format_timestamp
from tests.builders import conversation, started, user
from tests.conftest import Backend


def test_new_session_is_numbered_from_one_and_chained_from_genesis(store: SessionStore) -> None:
    stored = store.append("s1", [started(), user("hello")], expected_version=0)

    assert [(e.seq, e.type) for e in stored] == [(1, "SessionStarted"), (2, "MessageAppended")]
    assert stored[0].prev_hash == GENESIS_HASH
    assert stored[1].prev_hash == stored[0].hash
    assert stored[0].position < stored[1].position


def test_stored_hash_is_sha256_of_prev_hash_and_canonical_envelope(store: SessionStore) -> None:
    event = NewEvent(started("hash me"))
    [stored] = store.append("s1", [event], expected_version=0)
    payload = event.payload.model_dump(mode="json", exclude={"type"})
    payload["title"] = {"bytes": 7, "sha256": hashlib.sha256(b"hash me").hexdigest()}  # a body

    body = {
        "event_id": event.event_id,
        "session_id": "s1",
        "seq": 1,
        "type": "SessionStarted",
        "schema_version": 1,
        "recorded_at": format_timestamp(stored.recorded_at),
        "prev_hash": GENESIS_HASH,
        "payload": payload,
    }
    expected = hashlib.sha256(GENESIS_HASH.encode() + canonical_json(body)).hexdigest()
    assert stored.hash == expected


def test_later_batches_follow_the_head(store: SessionStore) -> None:
    store.append("s1", [started()], expected_version=0)
    stored = store.append("s1", [user("a"), user("b"), user("c")], expected_version=1)

    assert [e.seq for e in stored] == [2, 3, 4]
    assert store.version("s1") == 4


def test_read_gives_back_exactly_what_was_appended_in_order(store: SessionStore) -> None:
    batch = conversation(turns=4)
    appended = store.append("s1", batch, expected_version=0)

    read = store.read("s1")

    assert read == appended
    assert [e.payload for e in read] == [e.payload for e in batch]
    assert [e.event_id for e in read] == [e.event_id for e in batch]


def test_read_honours_from_and_to_seq(store: SessionStore) -> None:
    store.append("s1", conversation(turns=3), expected_version=0)

    assert [e.seq for e in store.read("s1", from_seq=4)] == [4, 5, 6, 7, 8, 9, 10]
    assert [e.seq for e in store.read("s1", from_seq=2, to_seq=4)] == [2, 3, 4]
    assert store.read("s1", from_seq=11) == []


def test_reading_an_unknown_session_raises(store: SessionStore) -> None:
    with pytest.raises(UnknownSession, match="no session 'nope'"):
        store.read("nope")
    with pytest.raises(UnknownSession):
        store.version("nope")
    with pytest.raises(UnknownSession):
        store.verify("nope")


def test_recorded_at_is_utc_with_microseconds_and_round_trips(backend: Backend) -> None:
    moment = datetime(2026, 11, 23, 7, 41, 5, 123456, tzinfo=UTC)
    with SessionStore(backend.url, clock=lambda: moment) as store:
        [stored] = store.append("s1", [started()], expected_version=0)
        [read] = store.read("s1")

    assert stored.recorded_at == moment
    assert read.recorded_at == moment
    assert read.recorded_at.tzinfo is not None
    assert format_timestamp(read.recorded_at) == "2026-11-23T07:41:05.123456Z"


def test_recorded_at_never_goes_back_even_when_the_clock_does(backend: Backend) -> None:
    times = iter(
        [
            datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC),
            datetime(2026, 1, 1, 11, 0, 0, tzinfo=UTC),  # the clock stepped back an hour
        ]
    )
    with SessionStore(backend.url, clock=lambda: next(times)) as store:
        store.append("s1", [started()], expected_version=0)
        store.append("s1", [user("after the step")], expected_version=1)
        first, second = store.read("s1")
        assert second.recorded_at == first.recorded_at
        assert store.verify("s1").ok


def test_sessions_lists_every_session_newest_first(backend: Backend) -> None:
    ticks = iter(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=s) for s in range(10))
    with SessionStore(backend.url, clock=lambda: next(ticks)) as store:
        store.append("older", [started("first")], expected_version=0)
        store.append("newer", [started("second"), user("hi")], expected_version=0)

        listed = store.sessions()

    assert [(s.id, s.title, s.version) for s in listed] == [
        ("newer", "second", 2),
        ("older", "first", 1),
    ]
    assert listed[1].created_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert listed[0].updated_at == datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)


def test_a_new_session_must_start_with_session_started(
    store: SessionStore, backend: Backend
) -> None:
    with pytest.raises(InvalidEvent, match="starts with a SessionStarted event"):
        store.append("s1", [user("no start")], expected_version=0)
    assert backend.table_rows() == {"events": [], "sessions": []}


def test_a_session_starts_only_once(store: SessionStore, backend: Backend) -> None:
    store.append("s1", [started()], expected_version=0)
    before = backend.table_rows()

    with pytest.raises(InvalidEvent, match="has started already"):
        store.append("s1", [started()], expected_version=1)
    with pytest.raises(InvalidEvent, match="only be the first event"):
        store.append("s1", [user("x"), started()], expected_version=1)
    assert backend.table_rows() == before


def test_a_fork_names_an_existing_parent_and_seq(store: SessionStore) -> None:
    store.append("parent", conversation(turns=1), expected_version=0)

    at_3 = store.read("parent", from_seq=3, to_seq=3)[0].hash
    fork = SessionStarted(title="fork", parent_session_id="parent", parent_seq=3, parent_hash=at_3)
    store.append("child", [fork], expected_version=0)
    assert store.session_info("child").parent_id == "parent"
    assert store.session_info("child").parent_seq == 3

    with pytest.raises(UnknownSession):
        store.append(
            "c2", [SessionStarted(parent_session_id="ghost", parent_seq=1)], expected_version=0
        )
    with pytest.raises(InvalidEvent, match=r"parent_seq must name an event of 'parent' \(1..4\)"):
        store.append(
            "c3", [SessionStarted(parent_session_id="parent", parent_seq=9)], expected_version=0
        )


def test_a_fork_must_name_the_hash_of_the_parent_event_it_continues(
    store: SessionStore, backend: Backend
) -> None:
    store.append("parent", conversation(turns=1), expected_version=0)
    at_3 = store.read("parent", from_seq=3, to_seq=3)[0].hash
    at_2 = store.read("parent", from_seq=2, to_seq=2)[0].hash
    before = backend.table_rows()

    with pytest.raises(InvalidEvent, match="names the parent_hash"):
        store.append(
            "c", [SessionStarted(parent_session_id="parent", parent_seq=3)], expected_version=0
        )
    with pytest.raises(InvalidEvent, match="has another history: its event 3"):
        store.append(
            "c",
            [SessionStarted(parent_session_id="parent", parent_seq=3, parent_hash=at_2)],
            expected_version=0,
        )
    with pytest.raises(InvalidEvent, match="go with a parent_session_id"):
        store.append("c", [SessionStarted(parent_seq=3, parent_hash=at_3)], expected_version=0)
    assert backend.table_rows() == before
    assert store.fork("parent", at=3).header.parent_hash == at_3


def test_events_of_one_session_never_show_in_another(store: SessionStore) -> None:
    store.append("a", [started("a"), MessagePinned(message_id="m1")], expected_version=0)
    store.append("b", [started("b")], expected_version=0)

    assert [e.session_id for e in store.read("a")] == ["a", "a"]
    assert [e.type for e in store.read("b")] == ["SessionStarted"]
