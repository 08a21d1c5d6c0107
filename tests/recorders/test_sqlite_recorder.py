"""The recorder contract on SQLite: a WAL file, and an in-memory database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sessionstore.storage._migrate import ensure_schema
from sessionstore.storage._recorder import Recorder
from sessionstore.storage._sqlite import SqliteRecorder, read_time, stored_time
from tests.recorders.recorder_contract import T0, SqlRecorderContract, unreachable


def sqlite_recorder(url: str) -> SqliteRecorder:
    recorder = SqliteRecorder(sa.make_url(url), busy_timeout_ms=2_000, synchronous="NORMAL")
    ensure_schema(recorder, migrate=True)
    return recorder


class TestSqliteFileRecorder(SqlRecorderContract):
    scheme = "sqlite"

    @pytest.fixture
    def recorder(self, tmp_path: Path) -> Iterator[Recorder]:
        recorder = sqlite_recorder(f"sqlite:///{tmp_path / 'store.db'}")
        yield recorder
        recorder.close()


class TestSqliteMemoryRecorder(SqlRecorderContract):
    scheme = "sqlite"

    @pytest.fixture
    def recorder(self) -> Iterator[Recorder]:
        recorder = sqlite_recorder("sqlite://")
        yield recorder
        recorder.close()


def test_times_are_stored_as_sqlalchemy_stores_them_even_before_year_1000() -> None:
    early = T0.replace(year=999)
    assert stored_time(early) == "0999-11-23 12:00:00.123456"
    assert read_time(stored_time(early)) == early
    assert stored_time(T0) == str(T0.replace(tzinfo=None))


def test_a_file_in_no_folder_is_unavailable(tmp_path: Path) -> None:
    unreachable(
        SqliteRecorder,
        f"sqlite:///{tmp_path / 'missing' / 'store.db'}",
        busy_timeout_ms=10,
        synchronous="NORMAL",
    )


def test_a_file_checkpoints_its_wal_at_4000_pages(tmp_path: Path) -> None:
    """Appends write bodies and index rows: at SQLite's default of 1,000 pages a checkpoint
    came every few dozen appends (see `WAL_AUTOCHECKPOINT_PAGES`)."""
    recorder = sqlite_recorder(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        assert isinstance(recorder, SqliteRecorder)
        with recorder.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 4000
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        recorder.close()
