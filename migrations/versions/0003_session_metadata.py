"""Session metadata to list sessions by: `sessions.app`, `sessions.user_id`, `session_tags`.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24

The columns and rows mirror each session's newest `SessionStarted` or `MetadataChanged` event;
sessions written before this revision have none of either, so nothing needs filling in. When
`events` is hash-partitioned by session (0001, asked for), `session_tags` is too, into as many
partitions; the new columns and indexes of `sessions` reach its partitions by themselves.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    partitions = _partitions_of_events()
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("app", sa.String(128), nullable=True))
        batch.add_column(sa.Column("user_id", sa.String(128), nullable=True))
    op.create_index("ix_sessions_app_user", "sessions", ["app", "user_id"])
    partitioned: dict[str, Any] = (
        {"postgresql_partition_by": "HASH (session_id)"} if partitions else {}
    )
    op.create_table(
        "session_tags",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("tag", sa.String(128), primary_key=True),
        **partitioned,
    )
    op.create_index("ix_session_tags_tag", "session_tags", ["tag"])
    width = len(str(partitions - 1))
    for remainder in range(partitions):
        op.execute(
            f"CREATE TABLE session_tags_p{remainder:0{width}d} PARTITION OF session_tags "
            f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
        )


def downgrade() -> None:
    op.drop_index("ix_session_tags_tag", table_name="session_tags")
    op.drop_table("session_tags")
    op.drop_index("ix_sessions_app_user", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("user_id")
        batch.drop_column("app")


def _partitions_of_events() -> int:
    """How many partitions `events` has (0: a plain table), found in the catalog."""
    if op.get_context().dialect.name != "postgresql" or op.get_context().as_sql:
        return 0
    found = op.get_bind().execute(
        sa.text("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass")
    )
    return int(found.scalar_one())
