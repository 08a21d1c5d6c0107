"""Moving sessions in and out of a store.

An export is JSONL: one stored event envelope per line, hashes included, payloads as stored
(not upcast), so a file is a faithful, verifiable copy. An import reads the whole file,
checks every line and the hash chain before it writes anything, then inserts the rows as
they were (same event ids, times and hashes) in one transaction: a round trip is
byte-identical, and a tampered file is refused with the line at fault and no write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from events import (
    GENESIS_HASH,
    ChainLink,
    InvalidEvent,
    SessionStarted,
    canonical_json,
    decode_payload,
    format_timestamp,
    verify_chain,
)
from events._arguments import brief
from events._canonical import hashed_json
from store._append import Encoded, chain, check_session_id, event_row, fork_point_problem
from store._engine import WRITE
from store._errors import ImportRefused, InvalidSessionId, SessionExists, UnknownSession
from store._importers import json_object
from store._rows import as_utc
from store._schema import events, sessions

_FIELDS = {
    "session_id": str,
    "seq": int,
    "event_id": str,
    "type": str,
    "schema_version": int,
    "recorded_at": str,
    "prev_hash": str,
    "hash": str,
    "payload": dict,
}
_INSERT_CHUNK = 500


def export_line(session_id: str, link: ChainLink) -> str:
    """One line of an export (without its newline). Keys are sorted, as PostgreSQL's JSONB
    does not keep their order: the same session exports the same bytes from any backend."""
    envelope = {
        "session_id": session_id,
        "seq": link.seq,
        "event_id": link.event_id,
        "type": link.type,
        "schema_version": link.schema_version,
        "recorded_at": format_timestamp(link.recorded_at),
        "prev_hash": link.prev_hash,
        "hash": link.hash,
        "payload": link.payload,
    }
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def read_export(lines: Iterable[str]) -> tuple[str, list[ChainLink]]:
    """The session id and its links, every line checked and the chain verified;
    `ImportRefused` naming the first bad line otherwise."""
    session_id: str | None = None
    links: list[ChainLink] = []
    line_numbers: list[int] = []  # the file line of each link
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        envelope = _envelope(text, number)
        if session_id is None:
            session_id = _session_id(envelope["session_id"], number)
        elif envelope["session_id"] != session_id:
            raise ImportRefused(
                f"holds session {brief(envelope['session_id'])}, but the file began with "
                f"{session_id!r}; an export holds one session",
                number,
            )
        links.append(_link(envelope, number))
        line_numbers.append(number)
    if session_id is None:
        raise ImportRefused("the file holds no events")
    if links[0].type != "SessionStarted":
        raise ImportRefused(f"the first event is {links[0].type}, not SessionStarted", 1)
    report = verify_chain(session_id, links)
    if not report.ok:
        # every link before the broken one held, so the broken one is the next read
        line = line_numbers[min(report.events_checked, len(links) - 1)]
        raise ImportRefused(
            f"the hash chain is broken at seq {report.first_broken_seq}: {report.reason}", line
        )
    return session_id, links


def dated_links(
    session_id: str,
    batch: list[Encoded],
    times: Sequence[datetime | None],
    now: datetime,
) -> list[ChainLink]:
    """The hash chain of a new session whose events happened at `times` (an imported
    transcript's own): each time is kept unless it would go back before the one before it; an
    event without one takes its predecessor's (the first, `now`)."""
    kept: list[datetime] = []
    previous = next((t for t in times if t is not None), now)
    for time in times:
        previous = max(time or previous, previous)
        kept.append(previous)
    return chain(session_id, batch, 0, GENESIS_HASH, kept)


def insert_links(engine: Engine, session_id: str, links: list[ChainLink]) -> None:
    """Write a verified session as it was, in one transaction. `SessionExists` when the id is
    taken; `ImportRefused` when it is a fork whose parent this store does not hold."""
    started = decode_payload("SessionStarted", links[0].schema_version, links[0].payload)
    assert isinstance(started, SessionStarted)
    with engine.connect().execution_options(**{WRITE: True}) as conn, conn.begin():
        taken = conn.execute(sa.select(sessions.c.id).where(sessions.c.id == session_id)).first()
        if taken is not None:
            raise SessionExists(session_id)
        _check_parent(conn, started)
        conn.execute(
            sessions.insert().values(
                id=session_id,
                title=started.title,
                head_seq=links[-1].seq,
                head_hash=links[-1].hash,
                parent_id=started.parent_session_id,
                parent_seq=started.parent_seq,
                created_at=links[0].recorded_at,
                updated_at=links[-1].recorded_at,
            )
        )
        rows = [event_row(session_id, link, canonical_json(link.payload)) for link in links]
        for start in range(0, len(rows), _INSERT_CHUNK):
            conn.execute(events.insert(), rows[start : start + _INSERT_CHUNK])


def _check_parent(conn: sa.Connection, started: SessionStarted) -> None:
    try:
        problem = fork_point_problem(conn, started)
    except UnknownSession:
        problem = f"the parent {brief(started.parent_session_id)} is not in this store"
    if problem is not None:
        raise ImportRefused(f"a fork whose parent does not hold: {problem}", 1)


def _envelope(text: str, number: int) -> dict[str, Any]:
    envelope = json_object(text, number, "an event envelope (a JSON object)")
    for name, kind in _FIELDS.items():
        value = envelope.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ImportRefused(f"field {name!r} is missing or not a {kind.__name__}", number)
    return envelope


def _session_id(value: str, number: int) -> str:
    try:
        return check_session_id(value)
    except InvalidSessionId as exc:
        raise ImportRefused(str(exc), number) from None


def _link(envelope: Mapping[str, Any], number: int) -> ChainLink:
    try:
        recorded_at = as_utc(datetime.fromisoformat(envelope["recorded_at"]))
    except ValueError:
        raise ImportRefused(
            f"recorded_at {brief(envelope['recorded_at'])} is not a time", number
        ) from None
    try:
        decode_payload(envelope["type"], envelope["schema_version"], envelope["payload"])
        storable = canonical_json(envelope["payload"]) == hashed_json(envelope["payload"])
    except InvalidEvent as exc:  # unknown types, newer schema versions, wrong shapes
        raise ImportRefused(str(exc), number) from None
    if not storable:  # -0.0, which an older version kept: stored now, it would not verify
        raise ImportRefused(
            "the payload holds -0.0, which its hash covers but no backend keeps as such", number
        )
    return ChainLink(
        seq=envelope["seq"],
        event_id=envelope["event_id"],
        type=envelope["type"],
        schema_version=envelope["schema_version"],
        recorded_at=recorded_at,
        prev_hash=envelope["prev_hash"],
        hash=envelope["hash"],
        payload=envelope["payload"],
    )
