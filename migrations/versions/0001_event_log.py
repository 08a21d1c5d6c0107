"""The event log: events, sessions, snapshots, and the triggers that make events insert-only.

Revision ID: 0001
Revises:
Create Date: 2026-11-23

Written by hand and frozen: later schema changes go in new revisions, never here.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_json = sa.JSON().with_variant(JSONB(), "postgresql")
_position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_SQLITE_TRIGGERS = [
    """CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END""",
    """CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END""",
]

_POSTGRES_TRIGGERS = [
    """CREATE FUNCTION sessionstore_refuse_event_change() RETURNS trigger
       LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION 'events are append-only: % refused', TG_OP
           USING ERRCODE = 'restrict_violation';
       END
       $$""",
    """CREATE TRIGGER events_refuse_update_delete BEFORE UPDATE OR DELETE ON events
       FOR EACH ROW EXECUTE FUNCTION sessionstore_refuse_event_change()""",
    # A row trigger does not fire on TRUNCATE; a statement trigger does.
    """CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON events
       FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_refuse_event_change()""",
]


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("position", _position, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("event_id", sa.String(36), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("payload", _json, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.UniqueConstraint("session_id", "seq", name="uq_events_session_seq"),
        sa.UniqueConstraint("session_id", "event_id", name="uq_events_session_event_id"),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("head_seq", sa.Integer, nullable=False),
        sa.Column("head_hash", sa.String(64), nullable=False),
        sa.Column("parent_id", sa.String(128), nullable=True),
        sa.Column("parent_seq", sa.Integer, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "snapshots",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("projection", sa.String(64), primary_key=True),
        sa.Column("projection_version", sa.Integer, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("state", _json, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    triggers = _POSTGRES_TRIGGERS if _dialect() == "postgresql" else _SQLITE_TRIGGERS
    for statement in triggers:
        op.execute(statement)


def downgrade() -> None:
    if _dialect() == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS events_refuse_truncate ON events")
        op.execute("DROP TRIGGER IF EXISTS events_refuse_update_delete ON events")
        op.execute("DROP FUNCTION IF EXISTS sessionstore_refuse_event_change()")
    else:
        op.execute("DROP TRIGGER IF EXISTS events_refuse_delete")
        op.execute("DROP TRIGGER IF EXISTS events_refuse_update")
    op.drop_table("snapshots")
    op.drop_table("sessions")
    op.drop_table("events")


def _dialect() -> str:
    return op.get_context().dialect.name
