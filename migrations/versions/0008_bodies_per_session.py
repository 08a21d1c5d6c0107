"""Bodies per session: `blobs` keyed by (session_id, digest), and no `blob_refs`.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27

Until now one `blobs` row served every session that held a body, and a `blob_refs` row said
which sessions did. A redaction deleted its session's reference, then the body once no
session referenced it, under a lock that every write referencing that body took too: writes
of unrelated sessions waited for each other, and reading a session's bodies joined two tables,
one keyed by session and one by digest. Neither can be spread by session (Citus must
repartition such a join, and cannot run the guard that looked for a redaction in `events`
from a shard of `blobs`).

Now each session holds its own rows: a session reads, writes and deletes only rows keyed by
its own id, so everything one session does touches one shard, and a redaction deletes the
session's rows outright (a text that several sessions hold is stored once per session, as
forks share their parent's rows up to the fork point by reading the parent's). The guard
stays: a row is deleted only when a `ContentRedacted` event of its own session names its
digest, and a row never changes.

The upgrade copies each (session, body) pair that `blob_refs` holds and drops the two tables;
bodies no session referenced (what `SessionStore.collect_bodies` deleted) are not copied. On
the partitioned layout the new table is hash-partitioned by session like the others.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_GUARDS = [
    """CREATE TRIGGER blobs_refuse_update BEFORE UPDATE ON blobs
       BEGIN SELECT RAISE(ABORT, 'blobs never change: UPDATE refused'); END""",
    """CREATE TRIGGER blobs_refuse_delete BEFORE DELETE ON blobs
       WHEN NOT EXISTS (
           SELECT 1 FROM events, json_each(events.payload, '$.digests') AS named
           WHERE events.session_id = OLD.session_id AND events.type = 'ContentRedacted'
             AND named.value = OLD.digest)
       BEGIN SELECT RAISE(ABORT, 'a blob is deleted only by a redaction that names it'); END""",
]

_POSTGRES_GUARDS = [
    """CREATE FUNCTION sessionstore_guard_blob() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND EXISTS (
        SELECT 1 FROM events
        WHERE events.session_id = OLD.session_id AND events.type = 'ContentRedacted'
          AND events.payload -> 'digests' ? OLD.digest
      ) THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'blobs: % refused (a blob is deleted only by a redaction that names it)',
        TG_OP USING ERRCODE = 'restrict_violation';
    END
    $$""",
    """CREATE TRIGGER blobs_guard BEFORE UPDATE OR DELETE ON blobs
       FOR EACH ROW EXECUTE FUNCTION sessionstore_guard_blob()""",
    """CREATE TRIGGER blobs_refuse_truncate BEFORE TRUNCATE ON blobs
       FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_refuse_blob_truncate()""",
]

_POSTGRES_PARTITION_TRIGGER = """CREATE TRIGGER blobs_refuse_truncate BEFORE TRUNCATE ON {name}
    FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_refuse_blob_truncate()"""


def upgrade() -> None:
    partitions = _partitions_of_events()
    _drop_guards()
    op.create_table(
        "session_blobs",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("compression", sa.String(8), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        **_partitioned_by("session_id", partitions),
    )
    made = _create_partitions("session_blobs", partitions)
    op.execute(
        "INSERT INTO session_blobs (session_id, digest, size, compression, data) "
        "SELECT r.session_id, b.digest, b.size, b.compression, b.data "
        "FROM blob_refs r JOIN blobs b ON b.digest = r.digest"
    )
    op.drop_table("blob_refs")  # its index and its partitions go with it
    op.drop_table("blobs")
    op.rename_table("session_blobs", "blobs")
    for name in made:
        op.rename_table(name, name.replace("session_blobs", "blobs", 1))
    _rename_key("session_blobs_pkey", "blobs_pkey")
    if _dialect() == "postgresql":
        for statement in _POSTGRES_GUARDS:
            op.execute(statement)
        for name in made:
            op.execute(
                _POSTGRES_PARTITION_TRIGGER.format(name=name.replace("session_blobs", "blobs", 1))
            )
    else:
        for statement in _SQLITE_GUARDS:
            op.execute(statement)


def downgrade() -> None:
    """Back to one row per body and a reference per session (0002's guards, 0007's index)."""
    partitions = _partitions_of_events()
    _drop_guards()
    op.rename_table("blobs", "session_blobs")
    _rename_key("blobs_pkey", "session_blobs_pkey")
    names = _partition_names("blobs", partitions)
    for name in names:
        op.rename_table(name, name.replace("blobs", "session_blobs", 1))
    op.create_table(
        "blobs",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("compression", sa.String(8), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        **_partitioned_by("digest", partitions),
    )
    _create_partitions("blobs", partitions)
    op.create_table(
        "blob_refs",
        sa.Column("session_id", sa.String(128), primary_key=True),
        sa.Column("digest", sa.String(64), primary_key=True),
        **_partitioned_by("session_id", partitions),
    )
    _create_partitions("blob_refs", partitions)
    op.create_index("ix_blob_refs_digest", "blob_refs", ["digest"])
    op.execute(
        "INSERT INTO blobs (digest, size, compression, data) "
        "SELECT digest, min(size), min(compression), min(data) FROM session_blobs GROUP BY digest"
        if _dialect() == "sqlite"
        else "INSERT INTO blobs (digest, size, compression, data) "
        "SELECT DISTINCT ON (digest) digest, size, compression, data FROM session_blobs "
        "ORDER BY digest"
    )
    op.execute(
        "INSERT INTO blob_refs (session_id, digest) SELECT session_id, digest FROM session_blobs"
    )
    op.drop_table("session_blobs")
    _restore_0002_guards(partitions)


def _drop_guards() -> None:
    """The guards of the tables about to be dropped or renamed (a trigger names its table)."""
    if _dialect() == "postgresql":
        # CASCADE: their triggers; the TRUNCATE function stays, the new triggers use it
        op.execute("DROP FUNCTION IF EXISTS sessionstore_guard_blob() CASCADE")
        op.execute("DROP FUNCTION IF EXISTS sessionstore_guard_blob_ref() CASCADE")
        op.execute("DROP TRIGGER IF EXISTS blobs_refuse_truncate ON blobs")
        op.execute("DROP TRIGGER IF EXISTS blob_refs_refuse_truncate ON blob_refs")
        return
    for trigger in (
        "blobs_refuse_update",
        "blobs_refuse_delete",
        "blob_refs_refuse_update",
        "blob_refs_refuse_delete",
    ):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")


def _restore_0002_guards(partitions: int) -> None:
    """Revision 0002's triggers, as it made them, on the tables the downgrade made again."""
    import importlib

    bodies = importlib.import_module("sessionstore.migrations.versions.0002_bodies")
    if _dialect() == "postgresql":
        # made again by 0002's statements, with the rest
        op.execute("DROP FUNCTION IF EXISTS sessionstore_refuse_blob_truncate() CASCADE")
    for statement in (
        bodies._POSTGRES_TRIGGERS if _dialect() == "postgresql" else bodies._SQLITE_TRIGGERS
    ):
        op.execute(statement)
    for table in ("blobs", "blob_refs"):
        for name in _partition_names(table, partitions):
            op.execute(bodies._POSTGRES_PARTITION_TRIGGER.format(table=table, name=name))


def _rename_key(old: str, new: str) -> None:
    """PostgreSQL names a primary key after its table and keeps the name on a rename."""
    if _dialect() == "postgresql":
        op.execute(f"ALTER INDEX {old} RENAME TO {new}")


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


def _partition_names(table: str, partitions: int) -> list[str]:
    width = len(str(partitions - 1))
    return [f"{table}_p{remainder:0{width}d}" for remainder in range(partitions)]


def _create_partitions(table: str, partitions: int) -> list[str]:
    """The hash partitions of `table` (none for a plain table), named `<table>_p<remainder>`."""
    names = _partition_names(table, partitions) if partitions else []
    for remainder, name in enumerate(names):
        op.execute(
            f"CREATE TABLE {name} PARTITION OF {table} "
            f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
        )
    return names
