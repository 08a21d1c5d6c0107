"""SQLite's full-text index takes new rows in batches: `search_pending`.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27

FTS5 writes a new segment of its index at every commit that changed it (its leaf, its entry in
`search_fts_idx`, the structure and averages records, a `search_fts_docsize` row), whatever the
rows hold: with one append per transaction that was about 165 us of each append, measured
here with plain sqlite3 (a one-row insert and commit took 35 us without the FTS5 table, 200 us
with it). So from this revision an index row written by an append goes into `search_index`
and its id into `search_pending`, in the append's transaction as before; the FTS5 table takes
the pending rows `FLUSH_AT` at a time, in the transaction of the write that brings the count
there; a search reads the rows still pending beside it (`SqliteRecorder._matching`), so it
finds exactly what it found before, and writes nothing. The appends share the segment writes.

A row deleted while pending (a redaction, a purge) leaves `search_pending` with it and never
reaches the FTS5 table; a row deleted after is taken out of it by the `delete` command, as
before. PostgreSQL's GIN index does the same by itself (`fastupdate`, its pending list): this
revision changes nothing there.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FLUSH_AT = 64
"""Pending rows that make a write index them all. About 165 us of FTS5 segment writing per
flush instead of per append; a flush indexes the words of the rows it takes (tokenizing
them: what every append did before), so it costs the write that triggers it more the larger
those rows are."""

_FLUSH = """INSERT INTO search_fts(rowid, terms)
            SELECT search_index.id, search_index.terms FROM search_pending
            JOIN search_index ON search_index.id = search_pending.id;
        DELETE FROM search_pending;"""

_UPGRADE = [
    "CREATE TABLE search_pending (id INTEGER PRIMARY KEY)",
    "DROP TRIGGER search_index_indexed",
    """CREATE TRIGGER search_index_indexed AFTER INSERT ON search_index BEGIN
        INSERT INTO search_pending(id) VALUES (new.id); END""",
    "DROP TRIGGER search_index_unindexed",
    """CREATE TRIGGER search_index_unindexed AFTER DELETE ON search_index BEGIN
        INSERT INTO search_fts(search_fts, rowid, terms)
            SELECT 'delete', old.id, old.terms
            WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE id = old.id);
        DELETE FROM search_pending WHERE id = old.id; END""",
    f"""CREATE TRIGGER search_pending_flushed AFTER INSERT ON search_pending
        WHEN (SELECT count(*) FROM search_pending) >= {FLUSH_AT} BEGIN
        {_FLUSH} END""",
]

_DOWNGRADE = [
    "DROP TRIGGER search_pending_flushed",
    _FLUSH.split(";")[0],
    "DROP TRIGGER search_index_indexed",
    """CREATE TRIGGER search_index_indexed AFTER INSERT ON search_index BEGIN
        INSERT INTO search_fts(rowid, terms) VALUES (new.id, new.terms); END""",
    "DROP TRIGGER search_index_unindexed",
    """CREATE TRIGGER search_index_unindexed AFTER DELETE ON search_index BEGIN
        INSERT INTO search_fts(search_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
        END""",
    "DROP TABLE search_pending",
]


def upgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for statement in _UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for statement in _DOWNGRADE:
            op.execute(statement)
