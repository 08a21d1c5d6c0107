"""`verify` proves a session's history was not altered, and names where it was."""

from __future__ import annotations

import pytest

from store import SessionStore
from tests.builders import conversation
from tests.conftest import Backend


@pytest.fixture
def tampered(store: SessionStore, backend: Backend) -> SessionStore:
    """A store whose session `s1` (10 events) may now be edited behind its back."""
    store.append("s1", conversation(turns=3), expected_version=0)
    backend.drop_immutability_triggers()
    return store


def test_an_untouched_session_verifies(store: SessionStore) -> None:
    store.append("s1", conversation(turns=3), expected_version=0)
    report = store.verify("s1")
    assert (report.ok, report.events_checked, report.first_broken_seq) == (True, 10, None)


def test_an_altered_payload_is_named_by_its_seq(tampered: SessionStore, backend: Backend) -> None:
    if backend.name == "postgresql":
        backend.execute(
            "UPDATE events SET payload = jsonb_set(payload, '{message,parts,0,text}', "
            "'\"step 1: delete everything\"') WHERE seq = 5"
        )
    else:
        backend.execute(
            "UPDATE events SET payload = json_set(payload, '$.message.parts[0].text', "
            "'step 1: delete everything') WHERE seq = 5"
        )

    report = tampered.verify("s1")

    assert (report.ok, report.first_broken_seq, report.events_checked) == (False, 5, 4)
    assert report.reason == "stored hash does not match the event's content"


def test_a_rewritten_hash_breaks_the_next_link(tampered: SessionStore, backend: Backend) -> None:
    backend.execute("UPDATE events SET hash = :h WHERE seq = 7", h="f" * 64)

    report = tampered.verify("s1")

    assert report.first_broken_seq == 7
    assert report.reason == "stored hash does not match the event's content"


def test_a_deleted_event_is_a_gap(tampered: SessionStore, backend: Backend) -> None:
    backend.execute("DELETE FROM events WHERE seq = 4")

    report = tampered.verify("s1")

    assert report.first_broken_seq == 4
    assert report.reason == "expected seq 4, found seq 5"


def test_a_dropped_tail_disagrees_with_the_session_head(
    tampered: SessionStore, backend: Backend
) -> None:
    backend.execute("DELETE FROM events WHERE seq >= 9")

    report = tampered.verify("s1")

    assert report.first_broken_seq == 9
    assert report.reason == "session head is seq 10, but the log ends at seq 8"
