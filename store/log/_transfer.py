"""Moving sessions in and out of a store.

An export is JSONL: one stored event envelope per line, hashes included, payloads as stored
(not upcast), so a file is a faithful, verifiable copy; then one line per body the events
reference: `{"body": <sha256>, "text": ...}`, or for a body a redaction deleted `{"body":
<sha256>, "redacted": "[redacted: <reason>]"}`. An import reads the whole
file, checks every line, the hash chain and every body against its digest before it writes
anything, then inserts the rows as they were (same event ids, times and hashes) in one
transaction: a round trip is byte-identical, and a tampered file is refused with the line at
fault and no write.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sessionstore.events import (
    GENESIS_HASH,
    Body,
    ChainLink,
    ImportRefused,
    InvalidEvent,
    InvalidSessionId,
    SessionExists,
    SessionStarted,
    UnknownSession,
    body_digests,
    brief,
    canonical_json,
    decode_payload,
    digest_of,
    format_timestamp,
    hashed_json,
    join_bodies,
    verify_chain,
)
from sessionstore.log._append import (
    Encoded,
    chain,
    event_row,
    fork_point_problem,
    metadata_set,
)
from sessionstore.log._bodies import pack_all, redactions, unpack
from sessionstore.log._search import index_rows
from sessionstore.log._session_id import check_session_id
from sessionstore.storage import LostRace, NewSession, Recorder, as_utc, chain_link

_PAGE = 500
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


def json_object(text: str, line: int, what: str = "a JSON object") -> dict[str, Any]:
    """One JSONL line as an object; `ImportRefused` at its line otherwise (the importers
    read their lines with it too)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"not JSON: {exc.msg} (column {exc.colno})", line) from None
    except RecursionError:
        raise ImportRefused("the JSON is nested too deeply to read", line) from None
    if not isinstance(value, dict):
        raise ImportRefused(f"not {what}", line)
    return value


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


def export_lines(recorder: Recorder, session_id: str, head: int) -> Iterator[str]:
    """The session's export: its events, then the bodies they reference, read a page at a
    time."""
    referenced: dict[str, None] = {}
    for stored in recorder.events(session_id, 1, head):
        link = chain_link(stored)
        referenced.update(dict.fromkeys(body_digests(link.type, link.payload)))
        yield export_line(session_id, link)
    digests = list(referenced)
    gone: dict[str, str] | None = None
    for start in range(0, len(digests), _PAGE):
        chunk = digests[start : start + _PAGE]
        texts = {row.digest: unpack(row) for row in recorder.bodies(session_id, chunk)}
        for digest in chunk:
            if digest in texts:
                yield _json_line({"body": digest, "text": texts[digest]})
                continue
            gone = redactions(recorder, session_id) if gone is None else gone
            if digest in gone:
                yield _json_line({"body": digest, "redacted": gone[digest]})


def _json_line(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True, slots=True)
class Export:
    """What an export file holds, checked: its session, its links, and its bodies' texts
    (a redacted body maps to its placeholder, and is in `redacted`)."""

    session_id: str
    links: list[ChainLink]
    texts: dict[str, str]
    redacted: frozenset[str]

    def bodies(self) -> list[Body]:
        return [Body(d, t) for d, t in self.texts.items() if d not in self.redacted]


def read_export(lines: Iterable[str]) -> Export:
    """The session id, its links and its bodies, every line checked, the chain verified and
    every body matched to its digest; `ImportRefused` naming the first bad line otherwise."""
    session_id: str | None = None
    links: list[ChainLink] = []
    line_numbers: list[int] = []  # the file line of each link
    event_lines: dict[str, int] = {}  # the file line of each event id
    texts: dict[str, str] = {}
    redacted: set[str] = set()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        if _is_body_line(text):
            digest, body, is_redacted = _body(text, number)
            texts[digest] = body
            if is_redacted:
                redacted.add(digest)
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
        first_line = event_lines.setdefault(envelope["event_id"], number)
        if first_line != number:  # the chain may hold, but no store can hold it twice
            raise ImportRefused(
                f"event id {brief(envelope['event_id'])} is the one of line {first_line} "
                "again; each event of a session has an id of its own",
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
    _check_bodies(links, line_numbers, texts, redacted)
    return Export(session_id, links, texts, frozenset(redacted))


def _is_body_line(text: str) -> bool:
    return text.lstrip().startswith('{"body":')


def _body(text: str, number: int) -> tuple[str, str, bool]:
    line = json_object(text, number, "a body line (a JSON object)")
    digest, body, placeholder = line.get("body"), line.get("text"), line.get("redacted")
    if not isinstance(digest, str) or len(line) != 2 or not isinstance(body or placeholder, str):
        raise ImportRefused('a body line holds "body" and one of "text" or "redacted"', number)
    if isinstance(placeholder, str):
        return digest, placeholder, True
    assert isinstance(body, str)
    try:
        matches = digest_of(body) == digest
    except UnicodeEncodeError:
        matches = False
    if not matches:
        raise ImportRefused(f"the body's text does not have its digest {brief(digest)}", number)
    return digest, body, False


def _check_bodies(
    links: list[ChainLink], line_numbers: list[int], texts: dict[str, str], redacted: set[str]
) -> None:
    """Every body an event references is in the file, or named by a redaction in it."""
    named = {
        d
        for link in links
        if link.type == "ContentRedacted"
        for d in link.payload.get("digests", ())
    }
    for link, number in zip(links, line_numbers, strict=True):
        for digest in body_digests(link.type, link.payload):
            if digest in redacted and digest not in named:
                raise ImportRefused(
                    f"body {digest} is marked redacted, but no redaction names it", number
                )
            if digest not in texts:
                raise ImportRefused(
                    f"the event references body {digest}, which the file lacks", number
                )


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


def insert_links(
    recorder: Recorder,
    session_id: str,
    links: list[ChainLink],
    bodies: Iterable[Body] = (),
    texts: Mapping[str, str] | None = None,
) -> None:
    """Write a verified session as it was, in one transaction. `texts` maps each digest the
    links reference to its text, or a redacted one to its placeholder (`bodies` when `None`).
    `SessionExists` when the id is taken; `ImportRefused` when it is a fork whose parent this
    store does not hold."""
    bodies = list(bodies)
    known = texts if texts is not None else {body.digest: body.text for body in bodies}
    headers = [
        decode_payload(
            link.type,
            link.schema_version,
            join_bodies(link.type, copy.deepcopy(dict(link.payload)), known),  # a title is a body
        )
        for link in links
        if link.type in ("SessionStarted", "MetadataChanged")
    ]
    started = headers[0]
    assert isinstance(started, SessionStarted)
    if recorder.head(session_id) is not None:
        raise SessionExists(session_id)
    _check_parent(recorder, started)
    rows = [event_row(session_id, link, canonical_json(link.payload)) for link in links]
    new = NewSession(
        started.title, started.parent_session_id, started.parent_seq, started.context_window
    )
    metadata = metadata_set(headers)
    index, _ = index_rows(links, known)
    try:
        recorder.write(
            session_id, None, rows, new, pack_all(bodies), metadata=metadata, index=index
        )
    except LostRace:  # another writer took the id meanwhile
        raise SessionExists(session_id) from None


def _check_parent(recorder: Recorder, started: SessionStarted) -> None:
    try:
        problem = fork_point_problem(recorder, started)
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


def _check_shape(event_type: str, schema_version: int, payload: dict[str, Any]) -> None:
    """`InvalidEvent` unless the payload decodes (its bodies, which come later in the file,
    stood in for by any text: they are only strings where they go)."""
    stand_ins = {digest: "-" for digest in body_digests(event_type, payload)}
    joined = join_bodies(event_type, copy.deepcopy(payload), stand_ins)  # the link keeps its own
    decode_payload(event_type, schema_version, joined)


def _link(envelope: Mapping[str, Any], number: int) -> ChainLink:
    try:
        recorded_at = as_utc(datetime.fromisoformat(envelope["recorded_at"]))
    except ValueError:
        raise ImportRefused(
            f"recorded_at {brief(envelope['recorded_at'])} is not a time", number
        ) from None
    try:
        _check_shape(envelope["type"], envelope["schema_version"], envelope["payload"])
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
