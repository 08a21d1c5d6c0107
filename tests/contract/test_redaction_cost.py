"""A redaction costs what its own session holds, whatever the store holds besides.

Counted in SQLite's virtual-machine instructions (its progress handler), not in time: the
same redaction in a store of 1,000 other sessions runs about as many instructions as in a
store of 50 (3 times as many: FTS5 merges the segments of a larger index as it takes the
redacted rows out, a cost that grows with the log of the index). Before revision 0007 two of
its lookups scanned whole tables (whether another session still references a body; the guard
that finds the redaction naming a body), and the count grew with the store: 13.5 times as
many here. Since revision 0008 a body is its session's own row, and the guard looks at the
session's redactions alone.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore.events import Message, MessageAppended, TextPart
from tests.builders import started
from tests.conftest import Backend

SHARED = "the same tool output in every session " * 20
INSTRUCTIONS_PER_TICK = 10


def store_of(url: str, sessions: int) -> SessionStore:
    """`sessions` sessions, each holding `SHARED` and a text of its own."""
    store = SessionStore(url)
    for n in range(sessions):
        own = MessageAppended(message=Message(role="user", parts=(TextPart(text=f"mine {n}"),)))
        shared = MessageAppended(message=Message(role="user", parts=(TextPart(text=SHARED),)))
        store.append(f"s{n:05}", [started(), own, shared], expected_version=0)
    return store


def instructions_to_redact(store: SessionStore, session_id: str) -> int:
    """SQLite instructions (in ticks of `INSTRUCTIONS_PER_TICK`) the redaction of both the
    session's texts runs: its own body (deleted) and the shared one (kept for the others)."""
    session = store.session(session_id)
    part_ids = [m.parts[0].id for m in session.context().messages]
    ticks = [0]

    def tick() -> int:
        ticks[0] += 1
        return 0

    def counting(driver: sqlite3.Connection, *_: Any) -> None:
        driver.set_progress_handler(tick, INSTRUCTIONS_PER_TICK)

    engine = store._recorder.engine  # type: ignore[attr-defined]
    sa.event.listen(engine, "checkout", counting)
    try:
        session.redact(part_ids, reason="secret")
    finally:
        sa.event.remove(engine, "checkout", counting)
    assert store.verify(session_id).ok
    return ticks[0]


def test_a_redaction_costs_the_same_in_a_store_twenty_times_larger(tmp_path: Any) -> None:
    small = store_of(f"sqlite:///{tmp_path / 'small.db'}", 50)
    large = store_of(f"sqlite:///{tmp_path / 'large.db'}", 1_000)
    try:
        in_small = instructions_to_redact(small, "s00025")
        in_large = instructions_to_redact(large, "s00500")
    finally:
        small.close()
        large.close()
    assert in_small > 0
    assert in_large < in_small * 5, (in_small, in_large)


def test_the_guard_reads_the_redactions_of_the_session_alone(sqlite_backend: Backend) -> None:
    """The plan SQLite chooses for the lookup of the guard that lets a body be deleted: the
    session's redaction events alone (a partial index by session), not every event."""
    SessionStore(sqlite_backend.url).close()
    engine = sqlite_backend.raw_engine()
    try:
        with engine.connect() as conn:
            plan = " / ".join(
                row[-1]
                for row in conn.exec_driver_sql(
                    "EXPLAIN QUERY PLAN SELECT 1 FROM events, "
                    "json_each(events.payload, '$.digests') AS named "
                    "WHERE events.session_id = 's' AND events.type = 'ContentRedacted' "
                    "AND named.value = 'd'"
                )
            )
    finally:
        engine.dispose()
    assert "SEARCH events USING INDEX ix_events_redactions (session_id=?)" in plan, plan
