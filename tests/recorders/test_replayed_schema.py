"""The tests' PostgreSQL schemas are created by replaying the statements a migration ran
(`tests.conftest.create_schema`): the schema replayed is the one the revisions create, in each
layout, to the last trigger, partition bound and recorded revision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore.storage._migrate import head_revision
from sessionstore.storage._schema import metadata
from tests.conftest import Backend, create_schema, fresh_database

CATALOG = {
    "columns": """SELECT table_name, column_name, ordinal_position, data_type,
            character_maximum_length, is_nullable, column_default, is_identity
        FROM information_schema.columns WHERE table_schema = current_schema()""",
    "constraints": """SELECT r.relname, c.conname, c.contype, pg_get_constraintdef(c.oid)
        FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
        WHERE r.relnamespace = current_schema()::regnamespace""",
    "indexes": """SELECT tablename, indexname,
            replace(indexdef, current_schema() || '.', '')
        FROM pg_indexes WHERE schemaname = current_schema()""",
    "triggers": """SELECT r.relname, t.tgname,
            replace(pg_get_triggerdef(t.oid), current_schema() || '.', '')
        FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid
        WHERE r.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal""",
    "functions": """SELECT proname, prosrc, prorettype::regtype::text FROM pg_proc
        WHERE pronamespace = current_schema()::regnamespace""",
    "relations": """SELECT relname, relkind, relispartition,
            coalesce(pg_get_expr(relpartbound, oid), ''),
            coalesce(pg_get_partkeydef(oid), '')
        FROM pg_class WHERE relnamespace = current_schema()::regnamespace""",
    "revision": "SELECT version_num FROM alembic_version",
}
"""What the catalog says of the current schema, each row free of the schema's own name."""


def catalog(backend: Backend) -> dict[str, list[tuple[Any, ...]]]:
    engine = backend.raw_engine()
    try:
        with engine.connect() as conn:
            return {
                name: sorted(tuple(row) for row in conn.execute(sa.text(query)))
                for name, query in CATALOG.items()
            }
    finally:
        engine.dispose()


@pytest.mark.parametrize("layout", ["postgresql", "postgresql-partitioned"])
def test_a_replayed_schema_is_the_one_a_migration_creates(layout: str, tmp_path: Path) -> None:
    with (
        fresh_database(layout, tmp_path) as migrated,
        fresh_database(layout, tmp_path) as replayed,
    ):
        SessionStore(migrated.url).close()
        create_schema(replayed)
        expected = catalog(migrated)

        assert catalog(replayed) == expected
        tables = {name for name, kind, *_ in expected["relations"] if kind in {"r", "p"}}
        assert {*metadata.tables, "alembic_version"} <= tables  # the catalog was read
        assert expected["revision"] == [(head_revision(),)]
        assert ("events", "events_refuse_truncate") in {row[:2] for row in expected["triggers"]}
        with SessionStore(replayed.url) as store:  # at head: it opens without migrating
            session = store.create_session(model="m")
            session.append_user("hello")
            assert store.verify(session.id).ok
