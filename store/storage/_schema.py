"""The tables, declared once with SQLAlchemy Core. Alembic revisions create them; `alembic check`
compares the two.

Every unique key includes `session_id` (`sessions`: its `id`), so the tables can be
hash-partitioned or sharded by session without changing a key. Two are declared keyed by their
row alone, as SQLite keeps them (its rowid, which the full-text index needs): on PostgreSQL
`events` is keyed by (position, session_id) and `search_index` by (id, session_id), as
revision 0009 (and the partitioned layout from the start) makes them.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

metadata = sa.MetaData()


class PostgresVariant(sa.types.TypeDecorator[Any]):
    """`impl`, and on PostgreSQL the type `postgres()` gives: what `impl.with_variant(JSONB(),
    "postgresql")` says, but the PostgreSQL dialect (which takes longer to import than all of
    SQLite's) is imported only when a PostgreSQL database is used, so `sessionstore ls` on a
    SQLite file never loads it. DDL, `alembic check` and the values bound and read are the
    variant's. Each subclass says `cache_ok = True` itself (SQLAlchemy reads it from the class
    alone), or no statement with its column is cached."""

    def postgres(self) -> sa.types.TypeEngine[Any]:
        raise NotImplementedError

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        chosen = self.postgres() if dialect.name == "postgresql" else self.impl_instance
        return dialect.type_descriptor(chosen)


class Json(PostgresVariant):
    """JSON; JSONB on PostgreSQL."""

    impl = sa.JSON
    cache_ok = True

    def postgres(self) -> sa.types.TypeEngine[Any]:
        from sqlalchemy.dialects.postgresql import JSONB

        return JSONB()


class SearchTerms(PostgresVariant):
    """Text on SQLite (its FTS5 table indexes the words); a tsvector on PostgreSQL."""

    impl = sa.Text
    cache_ok = True

    def postgres(self) -> sa.types.TypeEngine[Any]:
        from sqlalchemy.dialects.postgresql import TSVECTOR

        return TSVECTOR()


# SQLite only auto-increments an INTEGER PRIMARY KEY (the rowid alias), not a BIGINT one.
Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

SESSION_ID_LENGTH = 128
LABEL_LENGTH = 128

REDACTION = "ContentRedacted"
"""The event type whose `digests` may delete bodies (the schema's guards name it too), and
after which a snapshot of an earlier seq may not be stored."""

events = sa.Table(
    "events",
    metadata,
    sa.Column("position", Position, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(SESSION_ID_LENGTH), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("event_id", sa.String(36), nullable=False),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("payload", Json(), nullable=False),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.UniqueConstraint("session_id", "seq", name="uq_events_session_seq"),
    sa.UniqueConstraint("session_id", "event_id", name="uq_events_session_event_id"),
    sa.Index("ix_events_redactions", "session_id"),
)
"""`ix_events_redactions` is partial: `WHERE type = 'ContentRedacted'` (`REDACTION`), as
revision 0007 makes it (the redaction events alone, so an append of anything else writes
nothing to it). Declared here without its predicate: a dialect's `*_where` loads that
dialect's module wherever the schema is imported."""

sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id", sa.String(SESSION_ID_LENGTH), primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("head_seq", sa.Integer, nullable=False),
    sa.Column("head_hash", sa.String(64), nullable=False),
    sa.Column("parent_id", sa.String(SESSION_ID_LENGTH), nullable=True),
    sa.Column("parent_seq", sa.Integer, nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("app", sa.String(LABEL_LENGTH), nullable=True),
    sa.Column("user_id", sa.String(LABEL_LENGTH), nullable=True),
    sa.Column("context_window", sa.Integer, nullable=True),
    sa.Column("live_tokens", sa.Integer, nullable=True),
    sa.Column("compactions", sa.Integer, nullable=False, server_default="0"),
    sa.Index("ix_sessions_app_user", "app", "user_id"),
    sa.Index("ix_sessions_updated", "updated_at", "id"),
    sa.Index("ix_sessions_parent", "parent_id"),
)
"""`app`, `user_id` and the `session_tags` rows mirror the session's newest `SessionStarted` or
`MetadataChanged`, written in the same transaction: an index to list sessions by, not a
source of truth (the events are).

The counters a listing shows are kept here too, in the transaction of each write, so a listing
is one indexed query (newest update first: `ix_sessions_updated`, read backwards): the events
are `head_seq`, `context_window` is its `SessionStarted`'s, `compactions` counts its
`ContextCompacted` events, and `live_tokens` is the live context's size after its head, as
the writer's fold found it. A writer without a fold of the session (a raw append, an import)
writes `NULL` there: not counted yet, which the next listing counts and writes down. `verify`
checks every counter against a fresh fold."""

session_tags = sa.Table(
    "session_tags",
    metadata,
    sa.Column("session_id", sa.String(SESSION_ID_LENGTH), primary_key=True),
    sa.Column("tag", sa.String(LABEL_LENGTH), primary_key=True),
    sa.Index("ix_session_tags_tag", "tag"),
)

snapshots = sa.Table(
    "snapshots",
    metadata,
    sa.Column("session_id", sa.String(SESSION_ID_LENGTH), primary_key=True),
    sa.Column("projection", sa.String(64), primary_key=True),
    sa.Column("projection_version", sa.Integer, primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("state", Json(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

DIGEST_LENGTH = 64

blobs = sa.Table(
    "blobs",
    metadata,
    sa.Column("session_id", sa.String(SESSION_ID_LENGTH), primary_key=True),
    sa.Column("digest", sa.String(DIGEST_LENGTH), primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("compression", sa.String(8), nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)
"""Payload bodies, each a session's own: by the SHA-256 of their UTF-8 bytes (`size` of them),
stored as `data`, compressed as `compression` says ("zlib" or "none"); one row per session
however many of its events hold the body. A session reads and deletes only its own rows, so
a redaction (which deletes them) takes the body out of that session alone, and no write of
one session waits for another's (revision 0008: before it, one row served every session,
with a `blob_refs` row per session that held it)."""

search_index = sa.Table(
    "search_index",
    metadata,
    sa.Column("id", Position, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(SESSION_ID_LENGTH), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("part", sa.Integer, nullable=False),
    sa.Column("chunk", sa.Integer, nullable=False),
    sa.Column("role", sa.String(16), nullable=True),
    sa.Column("event_type", sa.String(64), nullable=False),
    sa.Column("digest", sa.String(DIGEST_LENGTH), nullable=True),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("terms", SearchTerms(), nullable=False),
    sa.Index("ix_search_index_digest", "session_id", "digest"),
)
"""The full-text index: a row per chunk of each searchable text (`sessionstore.events._search`),
written in the transaction of the events it indexes, its words in `terms` (PostgreSQL: a
`tsvector`, under a GIN index; SQLite: the words as text, which the FTS5 table `search_fts`
indexes as its external content, kept in step by triggers, new rows in batches of revision
0006). `digest` names the body the text was read from: a redaction deletes the session's rows
of the bodies it deletes, in its own transaction. A projection like the others: rebuilt from
the events by revision 0005."""

DISTRIBUTION = (
    ("sessions", "id"),
    ("events", "session_id"),
    ("snapshots", "session_id"),
    ("blobs", "session_id"),
    ("session_tags", "session_id"),
    ("search_index", "session_id"),
)
"""Each table Citus spreads over a cluster (`sessionstore db distribute`), and the column it
spreads it by: the session, everywhere, so a session's rows live on one worker."""

REDACTED_BODIES = "sessionstore_delete_redacted_bodies(varchar, text[])"
"""PostgreSQL's function through which a redaction deletes its session's bodies, after
checking that a `ContentRedacted` of the session names them (revision 0010): the only way
an application's role may delete one (`sessionstore db grant`). Its session is a `varchar`,
the type of `session_id`, so that Citus, which runs it on the session's worker, matches it
with the session its statements filter by."""

DIALECT_PARTS = ("search_fts", "search_pending", "ix_search_index_terms")
"""Names the revisions create per dialect and no declared table has: SQLite's FTS5 table (and
its shadow tables `search_fts_*`) and the rows waiting for it (`search_pending`, revision
0006), PostgreSQL's GIN index of `search_index.terms`."""


def compared(name: str | None) -> bool:
    """Whether a comparison of the database with the declared tables (`alembic check`) looks
    at the table or index `name`: not at the full-text index's dialect parts."""
    return not (name or "").startswith(DIALECT_PARTS)
