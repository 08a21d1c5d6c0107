"""Figures about a whole store and its sessions, for `sessionstore ls` and `stats`: counted in
SQL where they can be, folded from snapshots where they need the live context."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from events import ContextCompacted, OutputsPruned, decode_payload
from store._replay import load_fold
from store._rows import SessionInfo
from store._schema import events, sessions


@dataclass(frozen=True, slots=True)
class StoreStats:
    """How much a store holds, and how many tokens its sessions' pruning and compaction took
    out of the live contexts (nothing is deleted: those tokens stay in the log)."""

    sessions: int
    events: int
    payload_bytes: int
    prunes: int
    compactions: int
    tokens_freed_by_pruning: int
    tokens_freed_by_compaction: int


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of a session listing: the session, its live context's size and window, and
    how often it was compacted."""

    info: SessionInfo
    live_tokens: int
    context_window: int | None
    compactions: int


_SHRINKING = ("OutputsPruned", "ContextCompacted")


def store_stats(conn: sa.Connection) -> StoreStats:
    session_count = conn.execute(sa.select(sa.func.count()).select_from(sessions)).scalar_one()
    event_count, size = conn.execute(
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(_payload_bytes(conn)), 0))
    ).one()
    prunes = compactions = pruned_tokens = compacted_tokens = 0
    query = sa.select(events.c.type, events.c.schema_version, events.c.payload).where(
        events.c.type.in_(_SHRINKING)
    )
    for row in conn.execution_options(yield_per=1000).execute(query):
        payload = decode_payload(row.type, row.schema_version, row.payload)
        if isinstance(payload, OutputsPruned):
            prunes += 1
            pruned_tokens += payload.tokens_freed
        elif isinstance(payload, ContextCompacted):
            compactions += 1
            compacted_tokens += max(payload.tokens_before - payload.tokens_after, 0)
    return StoreStats(
        sessions=session_count,
        events=event_count,
        payload_bytes=int(size),
        prunes=prunes,
        compactions=compactions,
        tokens_freed_by_pruning=pruned_tokens,
        tokens_freed_by_compaction=compacted_tokens,
    )


def _payload_bytes(conn: sa.Connection) -> sa.ColumnElement[int]:
    """Bytes of each stored payload's JSON text (UTF-8), not characters."""
    if conn.dialect.name == "postgresql":
        return sa.func.octet_length(sa.cast(events.c.payload, sa.Text))
    return sa.func.length(sa.cast(sa.cast(events.c.payload, sa.Text), sa.LargeBinary))


def session_summaries(conn: sa.Connection, infos: list[SessionInfo]) -> list[SessionSummary]:
    """Each session's live size comes from its newest snapshot plus the events after it."""
    query = sa.select(events.c.session_id, sa.func.count()).where(
        events.c.type == "ContextCompacted"
    )
    if len(infos) == 1:
        query = query.where(events.c.session_id == infos[0].id)
    counts: dict[str, int] = dict(conn.execute(query.group_by(events.c.session_id)).all())
    summaries = []
    for info in infos:
        fold = load_fold(conn, info.id, info.version).fold
        window = fold.header.context_window if fold.header is not None else None
        summaries.append(SessionSummary(info, fold.tokens, window, counts.get(info.id, 0)))
    return summaries
