"""An append that committed is never reported as failed, and every driver error is typed.

Work done after the commit (saving a snapshot, folding the new events into a handle) is a
cache: when it fails, the append still returns, and a caller never retries a stored message.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import DatabaseUnavailable, SessionStore
from sessionstore.events import SessionStarted
from sessionstore.log._replay import save_snapshot
from sessionstore.projections import ContextFold
from sessionstore.storage._sql import SqlRecorder
from tests.builders import user


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another connection holds SQLite's write lock on `path` while the block runs."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_an_append_whose_snapshot_meets_a_locked_database_returns_and_is_stored_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.db"
    store = SessionStore(f"sqlite:///{path}", snapshot_every=1, busy_timeout_ms=50)
    s = store.create_session()

    def save_while_another_process_writes(*args: Any) -> None:
        with write_locked(path):  # the real driver error: "database is locked"
            save_snapshot(*args)

    monkeypatch.setattr("sessionstore.log._log.save_snapshot", save_while_another_process_writes)
    with caplog.at_level(logging.WARNING, logger="sessionstore"):
        message = s.append_user("stored once")

    assert [e.seq for e in store.read(s.id)] == [1, 2]
    assert s.context().messages[-1].id == message.id
    assert "could not save a snapshot" in caplog.text and "database is locked" in caplog.text
    monkeypatch.undo()
    s.append_user("and the handle goes on")
    assert store.version(s.id) == 3


def test_an_append_whose_snapshot_fails_in_any_way_still_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 's.db'}", snapshot_every=1)
    s = store.create_session()

    def broken(*_: Any) -> None:
        raise RuntimeError("a bug in the snapshot writer")

    monkeypatch.setattr("sessionstore.log._log.save_snapshot", broken)
    with caplog.at_level(logging.WARNING, logger="sessionstore"):
        s.append_user("hello")

    assert store.version(s.id) == 2
    assert "a bug in the snapshot writer" in caplog.text


def test_a_raw_append_on_a_locked_database_is_database_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SessionStore(f"sqlite:///{path}", busy_timeout_ms=50)
    store.append("s1", [SessionStarted()], expected_version=0)

    with write_locked(path), pytest.raises(DatabaseUnavailable, match="database is locked"):
        store.append("s1", [user("hi")], expected_version=1)

    assert store.version("s1") == 1


def test_a_raw_append_on_a_read_only_database_is_database_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SessionStore(f"sqlite:///{path}").append("s1", [SessionStarted()], expected_version=0)
    read_only = SessionStore(f"sqlite:///file:{path}?mode=ro&uri=true")

    with pytest.raises(DatabaseUnavailable, match="readonly"):
        read_only.append("s1", [user("hi")], expected_version=1)

    assert read_only.version("s1") == 1


def test_a_raw_append_on_a_full_disk_is_database_unavailable(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 's.db'}")
    store.append("s1", [SessionStarted()], expected_version=0)
    recorder = store._recorder
    assert isinstance(recorder, SqlRecorder)  # a fault injected into SQLite's connections
    recorder.engine.dispose()

    @sa.event.listens_for(recorder.engine, "connect")
    def no_room(dbapi_connection: Any, _record: Any) -> None:
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count={pages}")

    with pytest.raises(DatabaseUnavailable, match="full"):
        store.append("s1", [user("x" * 200_000)], expected_version=1)

    assert store.version("s1") == 1


def test_a_file_that_is_not_a_database_is_database_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 100)

    with pytest.raises(DatabaseUnavailable, match="not a database"):
        SessionStore(f"sqlite:///{path}")

    assert path.read_text() == "these are my notes, not a database\n" * 100


def test_a_handle_that_fails_to_fold_its_own_append_returns_and_reloads_from_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 's.db'}")
    s = store.create_session()
    s.append_user("one")
    apply = ContextFold.apply

    def fails_once(fold: ContextFold, event: Any) -> Any:
        monkeypatch.setattr(ContextFold, "apply", apply)
        raise RuntimeError("a bug in the fold")

    monkeypatch.setattr(ContextFold, "apply", fails_once)
    with caplog.at_level(logging.ERROR, logger="sessionstore"):
        two = s.append_user("two")

    assert "could not fold events" in caplog.text
    assert [m.id for m in s.context().messages][-1] == two.id
    assert s.context() == store.session(s.id).context()
    s.append_user("three")
    assert store.version(s.id) == 4
