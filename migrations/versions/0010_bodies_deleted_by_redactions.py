"""On PostgreSQL, a redaction deletes its bodies through one function that checks it names them.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27

A body is deleted only by a redaction that names it. On one PostgreSQL server the trigger of
`blobs` checks that (0008), against every role but a superuser; on a Citus cluster it cannot,
for a trigger on a shard of `blobs` cannot read `events`. This revision adds the means that
holds on both: `sessionstore_delete_redacted_bodies(of_session, digests)` deletes a
session's bodies once a `ContentRedacted` event of that session names every one of them, and
refuses otherwise. It runs with its owner's rights (SECURITY DEFINER), so the role an
application connects as needs no DELETE on `blobs` at all, nor any UPDATE, DELETE or TRUNCATE
on `events` (`sessionstore db grant ROLE` grants exactly what the store uses): for that role,
the grants alone keep `events` insert-only and let bodies go only by redaction. The function
reads and deletes only the session's own rows, by its id, so on Citus it runs on the
session's worker (`sessionstore db distribute` delegates it there, colocated with `sessions`).

The store calls it for every redaction on PostgreSQL. Its search path is the one the schema
was created with (`SET search_path FROM CURRENT`), so it finds the store's tables whatever
the caller's is. No role but its owner may call it until `db grant` allows one. SQLite has no
roles: there the trigger checks every delete, as before.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CREATE = """CREATE FUNCTION sessionstore_delete_redacted_bodies(of_session varchar, digests text[])
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  redactions jsonb;
BEGIN
  SELECT jsonb_agg(payload -> 'digests') INTO redactions FROM events
    WHERE session_id = of_session AND type = 'ContentRedacted';
  IF NOT digests <@ ARRAY(
    SELECT jsonb_array_elements_text(jsonb_array_elements(coalesce(redactions, '[]')))
  ) THEN
    RAISE EXCEPTION 'blobs: DELETE refused (a body is deleted only by a redaction that names it)'
      USING ERRCODE = 'restrict_violation';
  END IF;
  DELETE FROM blobs WHERE session_id = of_session AND digest = ANY(digests);
END
$$"""

_SIGNATURE = "sessionstore_delete_redacted_bodies(varchar, text[])"


def upgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute(_CREATE)
        op.execute(f"REVOKE ALL ON FUNCTION {_SIGNATURE} FROM PUBLIC")


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute(f"DROP FUNCTION {_SIGNATURE}")
