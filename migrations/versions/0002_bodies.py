"""Payload bodies: the `blobs` and `blob_refs` tables, and the one deletion the schema allows.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

Events written before this revision keep their content inline and stay readable as they are;
nothing is rewritten. Rows of `blobs` and `blob_refs` never change, and are deleted only when a
`ContentRedacted` event names their digest (for `blob_refs`, an event of that same session):
the database itself refuses anything else, as it refuses any change to `events`.

When `events` is hash-partitioned by session (0001, asked for), so are these tables, into as
many partitions: `blob_refs` by session like `events`, `blobs` by digest, its key (a body is
shared by every session that holds it, so no session can be its partition key). Their TRUNCATE
triggers are repeated on each partition, which does not inherit them.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_REDACTED = """EXISTS (
    SELECT 1 FROM events, json_each(events.payload, '$.digests') AS named
    WHERE events.type = 'ContentRedacted' AND named.value = OLD.digest {same_session})"""

_SQLITE_TRIGGERS = [
    """CREATE TRIGGER blobs_refuse_update BEFORE UPDATE ON blobs
       BEGIN SELECT RAISE(ABORT, 'blobs never change: UPDATE refused'); END""",
    f"""CREATE TRIGGER blobs_refuse_delete BEFORE DELETE ON blobs
       WHEN NOT {_SQLITE_REDACTED.format(same_session="")}
       BEGIN SELECT RAISE(ABORT, 'a blob is deleted only by a redaction that names it'); END""",
    """CREATE TRIGGER blob_refs_refuse_update BEFORE UPDATE ON blob_refs
       BEGIN SELECT RAISE(ABORT, 'blob_refs never change: UPDATE refused'); END""",
    f"""CREATE TRIGGER blob_refs_refuse_delete BEFORE DELETE ON blob_refs
       WHEN NOT {_SQLITE_REDACTED.format(same_session="AND events.session_id = OLD.session_id")}
       BEGIN SELECT RAISE(ABORT, 'a blob is deleted only by a redaction that names it'); END""",
]

_POSTGRES_GUARD = """CREATE FUNCTION sessionstore_guard_{name}() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND EXISTS (
        SELECT 1 FROM events
        WHERE events.type = 'ContentRedacted' AND events.payload -> 'digests' ? OLD.digest
        {same_session}
      ) THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION '{table}: % refused (a blob is deleted only by a redaction that names it)',
        TG_OP USING ERRCODE = 'restrict_violation';
    END
    $$"""

_POSTGRES_TRIGGERS = [
    _POSTGRES_GUARD.format(name="blob", table="blobs", same_session=""),
    _POSTGRES_GUARD.format(
        name="blob_ref", table="blob_refs", same_session="AND events.session_id = OLD.session_id"
    ),
    """CREATE FUNCTION sessionstore_refuse_blob_truncate() RETURNS trigger
       LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION '%: TRUNCATE refused (a blob is deleted only by a redaction)',
           TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
       END
       $$""",
    """CREATE TRIGGER blobs_guard BEFORE UPDATE OR DELETE ON blobs
       FOR EACH ROW EXECUTE FUNCTION sessionstore_guard_blob()""",
    """CREATE TRIGGER blob_refs_guard BEFORE UPDATE OR DELETE ON blob_refs
       FOR EACH ROW EXECUTE FUNCTION sessionstore_guard_blob_ref()""",
    """CREATE TRIGGER blobs_refuse_truncate BEFORE TRUNCATE ON blobs
       FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_refuse_blob_truncate()""",
    """CREATE TRIGGER blob_refs_refuse_truncate BEFORE TRUNCATE ON blob_refs
       FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_refuse_blob_truncate()""",
]


_POSTGRES_PARTITION_TRIGGER = """CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {name}
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_refuse_blob_truncate()"""


def upgrade() -> None:
    partitions = _partitions_of_events()
    op.create_table(
        "blobs",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("compression", sa.String(8), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        **_partitioned_by("digest", partitions),
    )
    op.create_table(
        "blob_refs",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("digest", sa.String(64), primary_key=True),
        **_partitioned_by("session_id", partitions),
    )
    triggers = _POSTGRES_TRIGGERS if _dialect() == "postgresql" else _SQLITE_TRIGGERS
    for statement in triggers:
        op.execute(statement)
    for table in ("blobs", "blob_refs"):
        for name in _create_partitions(table, partitions):
            op.execute(_POSTGRES_PARTITION_TRIGGER.format(table=table, name=name))


def downgrade() -> None:
    if _dialect() == "postgresql":
        for function in ("guard_blob", "guard_blob_ref", "refuse_blob_truncate"):
            op.execute(f"DROP FUNCTION IF EXISTS sessionstore_{function}() CASCADE")
    op.drop_table("blob_refs")
    op.drop_table("blobs")


def _dialect() -> str:
    return op.get_context().dialect.name


def _partitions_of_events() -> int:
    """How many partitions `events` has (0: a plain table), found in the catalog."""
    if _dialect() != "postgresql" or op.get_context().as_sql:
        return 0
    found = op.get_bind().execute(
        sa.text("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass")
    )
    return int(found.scalar_one())


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
