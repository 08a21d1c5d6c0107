"""Listing counters on the `sessions` row: `context_window`, `live_tokens`, `compactions`, and
the indexes a listing and a redaction read by.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27

A listing (`sessionstore ls`, `SessionStore.summaries`) used to fold every session it showed
to find its live size and count its compactions; from this revision each write keeps those
figures on the row, so a listing is one query along `ix_sessions_updated` (newest update
first, ties by id: keyset pages). `ix_sessions_parent` finds a session's forks without
listing every session (a redaction deletes their snapshots).

Existing rows are filled from their events here: `compactions` counts each session's
`ContextCompacted` events, `context_window` is its `SessionStarted`'s. `live_tokens` is what
the session's context fold says, which is the store's to compute, not the schema's: it stays
`NULL` (not counted) until the first listing that shows the session counts it and writes it
down, or a write of the session's own sets it. On PostgreSQL with partitioned tables the new
columns and indexes reach every partition by themselves.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COUNT_COMPACTIONS = """UPDATE sessions SET compactions = (
    SELECT count(*) FROM events
    WHERE events.session_id = sessions.id AND events.type = 'ContextCompacted')"""

_WINDOW_OF = {
    "sqlite": "CAST(json_extract(events.payload, '$.context_window') AS INTEGER)",
    "postgresql": "CAST(events.payload ->> 'context_window' AS INTEGER)",
}
"""A `SessionStarted` payload's `context_window`, in each dialect's JSON syntax."""


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("context_window", sa.Integer, nullable=True))
        batch.add_column(sa.Column("live_tokens", sa.Integer, nullable=True))
        batch.add_column(sa.Column("compactions", sa.Integer, nullable=False, server_default="0"))
    op.create_index("ix_sessions_updated", "sessions", ["updated_at", "id"])
    op.create_index("ix_sessions_parent", "sessions", ["parent_id"])
    if op.get_context().as_sql:
        return
    op.execute(_COUNT_COMPACTIONS)
    window = _WINDOW_OF.get(op.get_context().dialect.name)
    if window is not None:
        op.execute(
            f"""UPDATE sessions SET context_window = (
                SELECT {window} FROM events
                WHERE events.session_id = sessions.id AND events.seq = 1
                AND events.type = 'SessionStarted')"""
        )


def downgrade() -> None:
    op.drop_index("ix_sessions_parent", table_name="sessions")
    op.drop_index("ix_sessions_updated", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("compactions")
        batch.drop_column("live_tokens")
        batch.drop_column("context_window")
