"""A lock another transaction holds never makes the store wait forever.

SQLite waits `busy_timeout_ms` for its write lock (see `test_concurrency.py`); PostgreSQL takes
the same setting as its `lock_timeout`, so an append or a read blocked by a row or table lock
ends in `DatabaseUnavailable`, changes nothing, and the handle works once the lock is gone.

The transaction that holds the lock also sets `idle_in_transaction_session_timeout`: if the
store did wait forever, the server would end that transaction after a few seconds and the
blocked call would then succeed, failing the test instead of hanging it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from sessionstore import DatabaseUnavailable, SessionStore
from tests.conftest import Backend, create_schema

postgres_only = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)


@pytest.fixture(autouse=True)
def schema_created(backend: Backend) -> None:
    """The schema exists before a test opens the database with a short lock wait. Creating it
    takes the migration lock, which the server shares between all its schemas: another process
    creating one at that moment (a parallel worker) would make the open time out, not the lock
    under test."""
    create_schema(backend)


@contextmanager
def holding(backend: Backend, lock_sql: str, **params: str) -> Iterator[None]:
    """Run `lock_sql` in a transaction of another connection and hold its locks until exit."""
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SET idle_in_transaction_session_timeout = '5s'"))
            conn.execute(sa.text(lock_sql), params)
            yield
            conn.rollback()
    finally:
        engine.dispose()


@postgres_only
def test_an_append_behind_a_row_lock_ends_after_the_timeout_and_writes_nothing(
    backend: Backend,
) -> None:
    with SessionStore(backend.url, busy_timeout_ms=300) as store:
        session = store.create_session(model="m")
        session.append_user("before the lock")
        before = backend.table_rows()

        with holding(backend, "SELECT id FROM sessions WHERE id = :id FOR UPDATE", id=session.id):
            with pytest.raises(DatabaseUnavailable, match=r": waited 300 ms for a lock") as caught:
                session.append_user("while locked")
            assert backend.table_rows() == before

        assert "\n" not in str(caught.value)
        assert session.version == store.version(session.id) == 2
        session.append_user("after the lock")
        assert store.verify(session.id).ok
        texts = [m.parts[0].text for m in store.session(session.id).context().messages]  # type: ignore[union-attr]
        assert texts == ["before the lock", "after the lock"]


@postgres_only
def test_a_read_behind_a_table_lock_ends_after_the_timeout(backend: Backend) -> None:
    with SessionStore(backend.url, busy_timeout_ms=300) as store:
        session = store.create_session(model="m")
        session.append_user("hello")

        with (
            holding(backend, "LOCK TABLE events IN ACCESS EXCLUSIVE MODE"),
            pytest.raises(DatabaseUnavailable, match=r": waited 300 ms for a lock"),
        ):
            store.read(session.id)

        assert [event.seq for event in store.read(session.id)] == [1, 2]


@postgres_only
def test_a_statement_timeout_in_the_url_ends_a_long_wait_too(backend: Backend) -> None:
    """`busy_timeout_ms` bounds lock waits; a cap on every statement is the server's own
    `statement_timeout`, passed in the URL's `options` like any other setting."""
    url = sa.make_url(backend.url)
    options = f"{url.query['options']} -cstatement_timeout=2000"
    with_timeout = url.update_query_dict({"options": options}).render_as_string(hide_password=False)
    with SessionStore(with_timeout, busy_timeout_ms=60_000) as store:
        session = store.create_session(model="m")

        with (
            holding(backend, "LOCK TABLE events IN ACCESS EXCLUSIVE MODE"),
            pytest.raises(DatabaseUnavailable, match="due to statement timeout"),
        ):
            store.read(session.id)
