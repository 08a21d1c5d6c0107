"""The database itself refuses to change or remove a stored event."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from sessionstore import SessionStore
from tests.builders import conversation
from tests.conftest import Backend


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET payload = payload WHERE seq = 2",
        "UPDATE events SET type = 'MessagePinned'",
        "DELETE FROM events WHERE seq = 3",
        "DELETE FROM events",
    ],
)
def test_raw_update_and_delete_are_refused(
    store: SessionStore, backend: Backend, statement: str
) -> None:
    store.append("s1", conversation(turns=1), expected_version=0)
    before = backend.table_rows()

    with pytest.raises(sa.exc.DatabaseError, match="events are append-only"):
        backend.execute(statement)

    assert backend.table_rows() == before
    assert store.verify("s1").ok


def test_truncate_is_refused_on_postgresql(postgres_backend: Backend) -> None:
    with SessionStore(postgres_backend.url) as store:
        store.append("s1", conversation(turns=1), expected_version=0)
    before = postgres_backend.table_rows()

    with pytest.raises(sa.exc.DatabaseError, match="events are append-only: TRUNCATE refused"):
        postgres_backend.execute("TRUNCATE events")

    assert postgres_backend.table_rows() == before
