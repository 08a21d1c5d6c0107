"""The recorder contract on PostgreSQL (a fresh schema per test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sessionstore.storage._migrate import ensure_schema
from sessionstore.storage._postgres import PostgresRecorder
from sessionstore.storage._recorder import Recorder
from tests.conftest import create_schema, fresh_database, require_postgres
from tests.recorders.recorder_contract import SqlRecorderContract, unreachable


class TestPostgresRecorder(SqlRecorderContract):
    scheme = "postgresql"

    @pytest.fixture
    def recorder(self, tmp_path: Path) -> Iterator[Recorder]:
        with fresh_database("postgresql", tmp_path) as backend:
            create_schema(backend)  # as a migration would: tests/recorders/test_replayed_schema.py
            recorder = PostgresRecorder(sa.make_url(backend.url), busy_timeout_ms=2_000)
            ensure_schema(recorder, migrate=False)
            yield recorder
            recorder.close()


def test_a_server_that_is_not_there_is_unavailable() -> None:
    require_postgres()
    unreachable(
        PostgresRecorder,
        "postgresql+psycopg://postgres@127.0.0.1:1/test?connect_timeout=2",
        busy_timeout_ms=10,
    )
