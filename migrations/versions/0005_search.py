"""Full-text search: the `search_index` table, each dialect's index over it, and the rows of
every event already stored.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27

A row per chunk of each searchable text (message text, tool calls, tool outputs in full, the
summaries of compactions: `sessionstore.events._search`), written from now on in the
transaction of the events it indexes, and deleted by a redaction of the body it was read from.

SQLite: the rows keep their words as text, and an FTS5 table (`search_fts`) indexes them as
its external content; triggers keep the two in step, so a write inserts or deletes rows of
`search_index` alone. Its tokenizer is `ascii`: the words come folded and separated by spaces,
and `ascii` splits at ASCII punctuation and spaces alone, so its tokens are exactly those words
(`unicode61` would fold some letters further, by its Unicode 6.1 tables, than the words the
other backends and the excerpts match). PostgreSQL: the words are a `tsvector` (the
`simple` configuration: no stemming, no stop words) under a GIN index; when `events` is
hash-partitioned by session (0001, asked for), `search_index` is too, into as many partitions.

Existing events are indexed here, read as they are stored (their bodies unpacked; a body a
redaction deleted is not there to index), so a database upgraded from 0004 finds what it held.
"""

import json
import zlib
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import TSVECTOR

from sessionstore.events import SEARCHED_EVENTS, body_digests, search_entries

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_terms = sa.Text().with_variant(TSVECTOR(), "postgresql")

_SQLITE_INDEX = [
    """CREATE VIRTUAL TABLE search_fts USING fts5(
        terms, content='search_index', content_rowid='id', tokenize='ascii')""",
    """CREATE TRIGGER search_index_indexed AFTER INSERT ON search_index BEGIN
        INSERT INTO search_fts(rowid, terms) VALUES (new.id, new.terms); END""",
    """CREATE TRIGGER search_index_unindexed AFTER DELETE ON search_index BEGIN
        INSERT INTO search_fts(search_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
        END""",
    """CREATE TRIGGER search_index_refuse_update BEFORE UPDATE ON search_index
       BEGIN SELECT RAISE(ABORT, 'search_index rows never change: UPDATE refused'); END""",
]
_POSTGRES_INDEX = ["CREATE INDEX ix_search_index_terms ON search_index USING gin (terms)"]

_INSERT = """INSERT INTO search_index
    (session_id, seq, part, chunk, role, event_type, digest, recorded_at, terms)
    VALUES (:session_id, :seq, :part, :chunk, :role, :event_type, :digest, :recorded_at, {terms})"""
_TERMS = {"postgresql": "to_tsvector('simple', :terms)"}


def upgrade() -> None:
    partitions = _partitions_of_events()
    partitioned: dict[str, Any] = (
        {"postgresql_partition_by": "HASH (session_id)"} if partitions else {}
    )
    op.create_table(
        "search_index",
        sa.Column("id", _position, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(128), nullable=False, primary_key=partitions > 0),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("part", sa.Integer, nullable=False),
        sa.Column("chunk", sa.Integer, nullable=False),
        sa.Column("role", sa.String(16), nullable=True),
        sa.Column("event_type", sa.String(64), nullable=False),
        sa.Column("digest", sa.String(64), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("terms", _terms, nullable=False),
        **partitioned,
    )
    op.create_index("ix_search_index_digest", "search_index", ["session_id", "digest"])
    width = len(str(partitions - 1))
    for remainder in range(partitions):
        op.execute(
            f"CREATE TABLE search_index_p{remainder:0{width}d} PARTITION OF search_index "
            f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
        )
    for statement in _POSTGRES_INDEX if _dialect() == "postgresql" else _SQLITE_INDEX:
        op.execute(statement)
    if not op.get_context().as_sql:
        _index_existing(op.get_bind())


def downgrade() -> None:
    if _dialect() == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS search_index_refuse_update")
        op.execute("DROP TRIGGER IF EXISTS search_index_unindexed")
        op.execute("DROP TRIGGER IF EXISTS search_index_indexed")
        op.execute("DROP TABLE IF EXISTS search_fts")
    op.drop_index("ix_search_index_digest", table_name="search_index")
    op.drop_table("search_index")


def _index_existing(bind: sa.Connection) -> None:
    """Index every session's searchable events, a session at a time, as a write would have."""
    insert = sa.text(_INSERT.format(terms=_TERMS.get(_dialect(), ":terms")))
    kinds = sorted([*SEARCHED_EVENTS, "ContentRedacted"])
    read_events = sa.text(
        "SELECT seq, recorded_at, type, CAST(payload AS TEXT) FROM events "
        "WHERE session_id = :session_id AND type IN :kinds ORDER BY seq"
    ).bindparams(sa.bindparam("kinds", expanding=True))
    read_bodies = sa.text(
        "SELECT blobs.digest, blobs.compression, blobs.data FROM blobs "
        "JOIN blob_refs ON blob_refs.digest = blobs.digest "
        "WHERE blob_refs.session_id = :session_id"
    )
    session_ids = bind.execute(sa.text("SELECT id FROM sessions ORDER BY id")).scalars().all()
    for session_id in session_ids:
        key = {"session_id": session_id}
        stored = [
            (seq, recorded_at, event_type, json.loads(payload))
            for seq, recorded_at, event_type, payload in bind.execute(
                read_events, {**key, "kinds": kinds}
            )
        ]
        wanted = {d for _, _, kind, data in stored for d in body_digests(kind, data)}
        texts = {
            digest: _unpacked(compression, data)
            for digest, compression, data in bind.execute(read_bodies, key)
            if digest in wanted
        }
        entries, _ = search_entries(stored, texts)
        if entries:
            bind.execute(insert, [{**key, **entry._asdict()} for entry in entries])


def _unpacked(compression: str, data: bytes) -> str:
    """A body's text as the store packs it ("zlib" or "none")."""
    raw = zlib.decompress(data) if compression == "zlib" else bytes(data)
    return raw.decode("utf-8")


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
