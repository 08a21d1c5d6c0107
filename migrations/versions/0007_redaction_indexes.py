"""A redaction costs what its session holds, not what the store holds: two indexes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27

A redaction deletes its session's references to the bodies it names, then each body no
session references any more. Two lookups of that were scans of a whole table, so one redaction
in a store of 20,000 small sessions took 272 ms against 37 ms in a store of 2,000
(`python -m bench.listing --sessions N`):

- whether any session still references a body (`blob_refs` by `digest`: its key starts with
  `session_id`), now `ix_blob_refs_digest`;
- the guard that lets a body be deleted only when a `ContentRedacted` event names it (the
  triggers of revision 0002 look for such an event, and `events` had no index on `type`), now
  `ix_events_redactions`: a partial index of the redaction events alone, by session, so it
  costs an append nothing unless it is a redaction.

Nothing is rewritten: building the indexes reads `blob_refs` once and `events` once.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_REDACTIONS = sa.text("type = 'ContentRedacted'")


def upgrade() -> None:
    op.create_index("ix_blob_refs_digest", "blob_refs", ["digest"])
    op.create_index(
        "ix_events_redactions",
        "events",
        ["session_id"],
        sqlite_where=_REDACTIONS,
        postgresql_where=_REDACTIONS,
    )


def downgrade() -> None:
    op.drop_index("ix_events_redactions", table_name="events")
    op.drop_index("ix_blob_refs_digest", table_name="blob_refs")
