"""Idempotent retries: the same event ids with the same content are stored once."""

from __future__ import annotations

import pytest

from sessionstore import IdempotencyError, SessionStore
from sessionstore.events import NewEvent
from tests.builders import started, user
from tests.conftest import Backend


def test_resending_a_stored_batch_returns_the_stored_events(
    store: SessionStore, backend: Backend
) -> None:
    batch = [NewEvent(started()), NewEvent(user("once"))]
    first = store.append("s1", batch, expected_version=0)
    before = backend.table_rows()

    again = store.append("s1", batch, expected_version=0)  # the response was lost; retry as is

    assert again == first
    assert backend.table_rows() == before


def test_a_retry_is_recognised_after_other_writers_moved_on(store: SessionStore) -> None:
    store.append("s1", [started()], expected_version=0)
    batch = [NewEvent(user("mine"))]
    first = store.append("s1", batch, expected_version=1)
    store.append("s1", [user("someone else")], expected_version=2)

    assert store.append("s1", batch, expected_version=1) == first
    assert store.append("s1", batch, expected_version=None) == first
    assert store.version("s1") == 3


def test_a_reused_event_id_with_other_content_raises(store: SessionStore, backend: Backend) -> None:
    original = NewEvent(user("original"))
    store.append("s1", [NewEvent(started()), original], expected_version=0)
    before = backend.table_rows()

    forged = NewEvent(user("different"), event_id=original.event_id)
    with pytest.raises(IdempotencyError, match="stored already with other content") as caught:
        store.append("s1", [forged], expected_version=None)

    assert caught.value.event_id == original.event_id
    assert backend.table_rows() == before


def test_a_batch_that_is_only_partly_stored_raises(store: SessionStore, backend: Backend) -> None:
    stored = NewEvent(started())
    store.append("s1", [stored], expected_version=0)
    before = backend.table_rows()

    with pytest.raises(IdempotencyError, match="part of this batch is stored already"):
        store.append("s1", [stored, NewEvent(user("new"))], expected_version=0)
    assert backend.table_rows() == before


def test_the_same_event_id_may_be_used_in_another_session(store: SessionStore) -> None:
    event_id = "01890a5d-ac96-774b-bcce-b302099a8057"
    store.append("a", [NewEvent(started(), event_id=event_id)], expected_version=0)
    [other] = store.append("b", [NewEvent(started(), event_id=event_id)], expected_version=0)
    assert other.session_id == "b"
