"""The event log: events, sessions, snapshots, and the triggers that make events insert-only.

Revision ID: 0001
Revises:
Create Date: 2026-11-23

Written by hand and frozen: later schema changes go in new revisions, never here. One opt-in
branch was added later without changing what the revision does to any database it already ran
on: on PostgreSQL, a store asked for `partitions=N` (the URL option, which the recorder hands
over as the connection's `sessionstore_partitions` execution option) gets each table
hash-partitioned by session into N partitions, `events` then keyed by (position, session_id),
since PostgreSQL and Citus want the partition key in every unique key. Without the option the
tables are exactly as before. Later revisions follow the layout `events` has (see 0002).
"""

from collections.abc import Sequence
from typing import Any

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

# Row triggers of a partitioned table are cloned to its partitions; TRUNCATE triggers are not,
# and a partition can be truncated by name: each one gets its own.
_POSTGRES_PARTITION_TRIGGER = """CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON {name}
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_refuse_event_change()"""


def upgrade() -> None:
    partitions = _partitions()
    op.create_table(
        "events",
        sa.Column("position", _position, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False, primary_key=partitions > 0),
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
        **_partitioned_by("session_id", partitions),
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
        **_partitioned_by("id", partitions),
    )
    op.create_table(
        "snapshots",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("projection", sa.String(64), primary_key=True),
        sa.Column("projection_version", sa.Integer, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("state", _json, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        **_partitioned_by("session_id", partitions),
    )
    triggers = _POSTGRES_TRIGGERS if _dialect() == "postgresql" else _SQLITE_TRIGGERS
    for statement in triggers:
        op.execute(statement)
    for table in ("events", "sessions", "snapshots"):
        for name in _create_partitions(table, partitions):
            if table == "events":
                op.execute(_POSTGRES_PARTITION_TRIGGER.format(name=name))


def downgrade() -> None:
    if _dialect() == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS events_refuse_truncate ON events")
        op.execute("DROP TRIGGER IF EXISTS events_refuse_update_delete ON events")
        # CASCADE: the TRUNCATE triggers of partitions, when there are any.
        op.execute("DROP FUNCTION IF EXISTS sessionstore_refuse_event_change() CASCADE")
    else:
        op.execute("DROP TRIGGER IF EXISTS events_refuse_delete")
        op.execute("DROP TRIGGER IF EXISTS events_refuse_update")
    op.drop_table("snapshots")
    op.drop_table("sessions")
    op.drop_table("events")


def _dialect() -> str:
    return op.get_context().dialect.name


_MAX_PARTITIONS = 1024


def _partitions() -> int:
    """How many hash partitions each table gets (0: plain tables): the connection's
    `sessionstore_partitions` execution option, on PostgreSQL; never when writing SQL
    offline."""
    if _dialect() != "postgresql" or op.get_context().as_sql:
        return 0
    asked = op.get_bind().get_execution_options().get("sessionstore_partitions", 0)
    if not isinstance(asked, int) or not 0 <= asked <= _MAX_PARTITIONS:
        raise ValueError(f"sessionstore_partitions must be 0 to {_MAX_PARTITIONS}, not {asked!r}")
    return asked


def _partitioned_by(column: str, partitions: int) -> dict[str, Any]:
    return {"postgresql_partition_by": f"HASH ({column})"} if partitions else {}


def _create_partitions(table: str, partitions: int) -> list[str]:
    """The hash partitions of `table` (none for a plain table), named `<table>_p<remainder>`."""
    width = len(str(partitions - 1))
    names = [f"{table}_p{remainder:0{width}d}" for remainder in range(partitions)]
    for remainder, name in enumerate(names):
        op.execute(
            f"CREATE TABLE {name} PARTITION OF {table} "
            f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
        )
    return names
