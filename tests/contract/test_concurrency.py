"""Optimistic concurrency: a stale writer loses cleanly and writes nothing."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from sessionstore import ConcurrencyError, DatabaseUnavailable, SessionStore, UnknownSession
from sessionstore.events import MessageAppended
from tests.builders import started, user
from tests.conftest import Backend


def test_stale_expected_version_raises_with_actual_and_writes_nothing(
    store: SessionStore, backend: Backend
) -> None:
    store.append("s1", [started(), user("a")], expected_version=0)
    before = backend.table_rows()

    with pytest.raises(ConcurrencyError) as caught:
        store.append("s1", [user("stale")], expected_version=1)

    assert (caught.value.expected, caught.value.actual) == (1, 2)
    assert str(caught.value) == "session 's1' is at version 2, not the expected 1"
    assert backend.table_rows() == before


def test_creating_a_session_that_exists_is_a_conflict(store: SessionStore) -> None:
    store.append("s1", [started()], expected_version=0)

    with pytest.raises(ConcurrencyError) as caught:
        store.append("s1", [started("again")], expected_version=0)
    assert caught.value.actual == 1


def test_expecting_a_version_of_a_missing_session_is_unknown_session(
    store: SessionStore,
) -> None:
    with pytest.raises(UnknownSession):
        store.append("ghost", [user("hi")], expected_version=3)


def test_expected_version_none_appends_after_whatever_the_head_is(store: SessionStore) -> None:
    store.append("s1", [started()], expected_version=None)
    store.append("s1", [user("a")], expected_version=None)
    [last] = store.append("s1", [user("b")], expected_version=None)
    assert last.seq == 3


def test_two_handles_cannot_interleave_silently(backend: Backend) -> None:
    with SessionStore(backend.url) as first, SessionStore(backend.url) as second:
        first.append("s1", [started()], expected_version=0)
        seen_by_both = second.version("s1")
        first.append("s1", [user("first wins")], expected_version=seen_by_both)

        with pytest.raises(ConcurrencyError):
            second.append("s1", [user("second loses")], expected_version=seen_by_both)
        second.append("s1", [user("second retries")], expected_version=second.version("s1"))

        assert [e.seq for e in first.read("s1")] == [1, 2, 3]
        assert first.verify("s1").ok


def test_racing_writers_all_land_exactly_once_with_a_valid_chain(backend: Backend) -> None:
    writers, per_writer = 4, 15
    with SessionStore(backend.url) as setup:
        setup.append("race", [started()], expected_version=0)
    conflicts: list[int] = []

    def write(name: str) -> None:
        with SessionStore(backend.url) as own:
            for n in range(per_writer):
                while True:
                    version = own.version("race")
                    try:
                        own.append("race", [user(f"{name}-{n}")], expected_version=version)
                        break
                    except ConcurrencyError:
                        conflicts.append(1)

    assert race(write, writers) == []
    with SessionStore(backend.url) as check:
        stored = check.read("race")
        assert [e.seq for e in stored] == list(range(1, writers * per_writer + 2))
        messages = [e.payload.message for e in stored if isinstance(e.payload, MessageAppended)]
        texts = sorted(part.text for m in messages for part in m.parts if part.type == "text")
        assert texts == sorted(f"w{i}-{n}" for i in range(writers) for n in range(per_writer))
        assert check.verify("race").ok


def test_racing_session_handles_all_land_exactly_once(backend: Backend) -> None:
    """Session handles append after the head their fold knows (on SQLite, straight through the
    sqlite3 connection); a handle that lost the race is told, refreshes and retries."""
    writers, per_writer = 3, 10
    with SessionStore(backend.url) as setup:
        session_id = setup.create_session(model="m").id

    def write(name: str) -> None:
        with SessionStore(backend.url) as own:
            handle = own.session(session_id)
            for n in range(per_writer):
                while True:
                    try:
                        handle.append_user(f"{name}-{n}")
                        break
                    except ConcurrencyError:
                        handle.refresh()

    assert race(write, writers) == []
    with SessionStore(backend.url) as check:
        context = check.session(session_id).context()
        texts = sorted(m.parts[0].text for m in context.messages)  # type: ignore[union-attr]
        assert texts == sorted(f"w{i}-{n}" for i in range(writers) for n in range(per_writer))
        assert check.version(session_id) == writers * per_writer + 1
        assert check.verify(session_id).ok


def test_an_append_that_cannot_get_the_sqlite_write_lock_fails_cleanly(tmp_path: Path) -> None:
    """A writer holding SQLite's lock past the busy timeout: the append is a clear
    `DatabaseUnavailable`, nothing is written, and the handle works once the lock is gone."""
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    with SessionStore(url, busy_timeout_ms=50) as store:
        session = store.create_session(model="m")
        session.append_user("before the lock")
        other = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(DatabaseUnavailable, match="database is locked"):
            session.append_user("while locked")
        other.execute("ROLLBACK")
        other.close()
        assert store.version(session.id) == session.version == 2
        session.append_user("after the lock")
        assert store.verify(session.id).ok
        texts = [m.parts[0].text for m in store.session(session.id).context().messages]  # type: ignore[union-attr]
        assert texts == ["before the lock", "after the lock"]


def race(write: Callable[[str], None], writers: int) -> list[BaseException]:
    """Run `write("w0")`, `write("w1")`... in threads at once; the errors they raised."""
    failures: list[BaseException] = []

    def guarded(name: str) -> None:
        try:
            write(name)
        except BaseException as exc:  # returned: a thread's error must fail the test
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(f"w{i}",)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures
