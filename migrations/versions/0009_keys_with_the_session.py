"""Every key of a PostgreSQL table holds the session: `events` and `search_index` by (row, session).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

Citus spreads a table by a column only when each of its primary and unique keys includes that
column. Every key did, but on the plain PostgreSQL layout `events` was keyed by `position`
alone and `search_index` by `id` alone (the partitioned layout keys them by the row and the
session already, which PostgreSQL's partitioning needs too). Both keys now read (row,
session_id) on both layouts: the row's number stays unique (one sequence gives it), and a
table keyed so can be distributed by session. SQLite is one file on one server: its tables
keep their rowid keys, which its full-text index needs.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEYS = {"events": "position", "search_index": "id"}
"""Each table whose key gains the session, and the column it was keyed by alone."""


def upgrade() -> None:
    for table, column in _KEYS.items():
        if _dialect() == "postgresql" and not _keyed_with_session(table):
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
            key = f'PRIMARY KEY ("{column}", session_id)'
            op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey {key}")


def downgrade() -> None:
    """Back to the row alone, on the plain layout (a partitioned table needs the session)."""
    for table, column in _KEYS.items():
        if _dialect() == "postgresql" and not _partitioned(table):
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
            op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ("{column}")')


def _dialect() -> str:
    return op.get_context().dialect.name


def _keyed_with_session(table: str) -> bool:
    """Whether the table's primary key holds `session_id` (the partitioned layout's do)."""
    if op.get_context().as_sql:
        return False
    found = op.get_bind().execute(
        sa.text(
            "SELECT count(*) FROM pg_constraint c JOIN pg_attribute a "
            "ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey) "
            "WHERE c.conrelid = CAST(:table AS regclass) AND c.contype = 'p' "
            "AND a.attname = 'session_id'"
        ),
        {"table": table},
    )
    return bool(found.scalar_one())


def _partitioned(table: str) -> bool:
    if op.get_context().as_sql:
        return False
    found = op.get_bind().execute(
        sa.text("SELECT count(*) FROM pg_partitioned_table WHERE partrelid = CAST(:t AS regclass)"),
        {"t": table},
    )
    return bool(found.scalar_one())
