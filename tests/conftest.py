"""Backends for the contract suite: every test that takes `backend` or `store` runs on SQLite
and on PostgreSQL.

PostgreSQL is reached at `$SESSIONSTORE_TEST_POSTGRES_URL` (default: the CI machine's server);
each test gets a fresh schema, dropped afterwards. With no server the PostgreSQL cases skip
with the reason, except under `CI=true`, where they fail: CI must run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from store import SessionStore

POSTGRES_URL = os.environ.get(
    "SESSIONSTORE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@dataclass(frozen=True)
class Backend:
    """A database for one test, and what the tests need to know about its dialect."""

    name: str
    url: str

    def raw_engine(self) -> sa.Engine:
        """A plain engine, outside the store, for doing what the store would not."""
        return sa.create_engine(self.url, poolclass=sa.pool.NullPool)

    def execute(self, sql: str, **params: Any) -> None:
        engine = self.raw_engine()
        try:
            with engine.begin() as conn:
                conn.execute(sa.text(sql), params)
        finally:
            engine.dispose()

    def drop_immutability_triggers(self) -> None:
        if self.name == "postgresql":
            self.execute("DROP TRIGGER events_refuse_update_delete ON events")
        else:
            self.execute("DROP TRIGGER events_refuse_update")
            self.execute("DROP TRIGGER events_refuse_delete")

    def table_rows(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of the store's tables, in a stable order: to prove nothing changed."""
        engine = self.raw_engine()
        try:
            with engine.connect() as conn:
                return {
                    "events": [
                        tuple(r)
                        for r in conn.execute(
                            sa.text(
                                "SELECT position, session_id, seq, event_id, type, schema_version, "
                                "payload, prev_hash, hash FROM events ORDER BY position"
                            )
                        )
                    ],
                    "sessions": [
                        tuple(r)
                        for r in conn.execute(
                            sa.text(
                                "SELECT id, title, head_seq, head_hash, updated_at FROM sessions "
                                "ORDER BY id"
                            )
                        )
                    ],
                }
        finally:
            engine.dispose()


@cache
def postgres_unavailable() -> str | None:
    """Why PostgreSQL cannot be used here, or None when it can."""
    try:
        engine = sa.create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
    except ModuleNotFoundError as exc:
        return f"the PostgreSQL driver is not installed ({exc.name}): pip install -e '.[postgres]'"
    except sa.exc.SQLAlchemyError as exc:
        return f"no PostgreSQL server at {POSTGRES_URL}: {str(exc).splitlines()[0]}"
    return None


def require_postgres() -> None:
    reason = postgres_unavailable()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the PostgreSQL tests, but {reason}")
    pytest.skip(reason)


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Backend:
    return Backend("sqlite", f"sqlite:///{tmp_path / 'store.db'}")


@contextmanager
def fresh_database(name: str, folder: Path) -> Iterator[Backend]:
    """An empty database of backend `name`: a new SQLite file in `folder`, or a new PostgreSQL
    schema, dropped afterwards."""
    if name == "sqlite":
        yield Backend("sqlite", f"sqlite:///{folder / f'{uuid.uuid4().hex}.db'}")
        return
    require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    admin = sa.create_engine(POSTGRES_URL, poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = sa.make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield Backend("postgresql", url.render_as_string(hide_password=False))
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def postgres_backend(tmp_path: Path) -> Iterator[Backend]:
    with fresh_database("postgresql", tmp_path) as backend:
        yield backend


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> Backend:
    fixture = "sqlite_backend" if request.param == "sqlite" else "postgres_backend"
    result: Backend = request.getfixturevalue(fixture)
    return result


@pytest.fixture
def store(backend: Backend) -> Iterator[SessionStore]:
    opened = SessionStore(backend.url)
    yield opened
    opened.close()
