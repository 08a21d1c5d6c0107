"""The append path: validate everything first, then one short write transaction.

Optimistic concurrency: the head is read, the batch is chained after it, and the recorder
writes it only if the head is still where it was (`UPDATE sessions ... WHERE head_seq = <head
read>`, or the `sessions` row's key for a new session); otherwise nothing is written
(`LostRace`). The unique `(session_id, seq)` key is the backstop. Idempotency is decided only
when something collides (a stale version or a lost race): the batch's `event_id`s are looked
up and, when all are stored with identical content, the stored events are returned instead of
an error. The common path is one read of the head and one write; a `Session`, whose fold knows
the head, skips the read.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from sessionstore.events import (
    GENESIS_HASH,
    Body,
    ChainLink,
    ConcurrencyError,
    ContentRedacted,
    IdempotencyError,
    InvalidEvent,
    MetadataChanged,
    NewEvent,
    Payload,
    PayloadTooLarge,
    RecordedEvent,
    SessionStarted,
    UnknownSession,
    brief,
    canonical_json,
    event_hash,
    split_bodies,
    utf8_size,
)
from sessionstore.log._bodies import decode_stored, pack_all
from sessionstore.log._redact import redacted_title
from sessionstore.log._search import index_rows
from sessionstore.storage import (
    EventRow,
    Head,
    LostRace,
    NewSession,
    Recorder,
    SessionMetadata,
)

EventLike = NewEvent | Payload | Mapping[str, Any]
Clock = Callable[[], datetime]
FoldIn = Callable[[Sequence[RecordedEvent]], int | None]
"""What a writer that holds the session's fold passes to `append`: it folds the events about to
be written into that fold and returns the live context's size after them (`None`: it could
not), which the write keeps on the `sessions` row. Called before the write, at most once; a
write that then fails leaves the fold ahead of the log (the caller reloads it)."""

_ANY_VERSION_ATTEMPTS = 50
"""With `expected_version=None` a lost race is retried on the new head this many times."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """An event checked and encoded for the log: its stored JSON object and canonical bytes
    (content replaced by references to `bodies`: see `sessionstore.events._bodies`)."""

    event: NewEvent
    data: Mapping[str, Any]
    payload_json: bytes
    bodies: tuple[Body, ...] = ()

    @property
    def type(self) -> str:
        return self.event.type

    @property
    def schema_version(self) -> int:
        return self.event.payload.schema_version


def encode_batch(batch: Sequence[EventLike], max_payload_bytes: int) -> list[Encoded]:
    """Validate and encode a batch before any I/O; every problem raises `InvalidEvent`."""
    if isinstance(batch, NewEvent | Payload | Mapping) or not isinstance(batch, Sequence):
        raise InvalidEvent("append takes a list of events")
    if not batch:
        raise InvalidEvent("append needs at least one event")
    encoded = []
    for item in batch:
        event = item if isinstance(item, NewEvent) else NewEvent(item)
        check_text_size((event.payload,), max_payload_bytes, event.type)  # before copying it
        encoded.append(encode_event(event, max_payload_bytes))
    ids = [item.event.event_id for item in encoded]
    if len(set(ids)) != len(ids):
        raise InvalidEvent("a batch holds the same event_id twice")
    starts = [i for i, item in enumerate(encoded) if item.type == "SessionStarted"]
    if starts and starts != [0]:
        raise InvalidEvent("SessionStarted can only be the first event of a batch")
    return encoded


def encode_event(event: NewEvent, max_payload_bytes: int) -> Encoded:
    """One event's stored JSON, its content split off into bodies. Its size is the JSON's
    bytes plus its bodies' (each body once): at most `max_payload_bytes`."""
    data = event.payload.model_dump(mode="json", exclude={"type"})
    skeleton, bodies = split_bodies(event.type, data)
    payload_json = canonical_json(skeleton)
    unique = {body.digest: body.size for body in bodies}
    size = len(payload_json) + sum(unique.values())
    if size > max_payload_bytes:
        raise PayloadTooLarge(size, max_payload_bytes, event.type)
    return Encoded(event, skeleton, payload_json, tuple(bodies))


def check_text_size(values: Iterable[object], max_payload_bytes: int, event_type: str) -> None:
    """`PayloadTooLarge` when the text inside `values` (strings, in models, mappings, lists)
    is over the limit by itself, measured before anything counts its tokens, truncates it or
    copies it into a payload.

    The payload's canonical JSON holds every one of those texts, escaped (never shorter than
    its UTF-8), so their UTF-8 size is a lower bound of the payload's: this never refuses a
    payload that would fit, and `encode_batch` still makes the exact check. Reading lengths
    is free; UTF-8 is measured only when the text could be over (4 bytes a character at
    most), at no cost for ASCII and a slice at a time for the rest, so memory stays bounded.
    """
    texts = _texts_in(values)
    if 4 * sum(map(len, texts)) <= max_payload_bytes:
        return
    size = sum(map(utf8_size, texts))
    if size > max_payload_bytes:
        raise PayloadTooLarge(size, max_payload_bytes, event_type)


def _texts_in(values: Iterable[object]) -> list[str]:
    """Every string in `values`, as pydantic would dump them (a model's `exclude` fields are
    skipped). A loop over a stack: this runs on every message a `Session` appends (2 us)."""
    texts: list[str] = []
    stack = list(values)
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str:
            texts.append(value)  # type: ignore[arg-type]
        elif kind in _SCALARS:
            continue
        elif kind is tuple or kind is list:
            stack.extend(value)  # type: ignore[arg-type]
        elif (excluded := _EXCLUDED.get(kind)) is not None or issubclass(kind, BaseModel):
            if excluded is None:  # a model class seen for the first time
                fields = kind.model_fields  # type: ignore[attr-defined]
                excluded = _EXCLUDED[kind] = frozenset(n for n, f in fields.items() if f.exclude)
            if excluded:
                stack.extend(v for n, v in value.__dict__.items() if n not in excluded)
            else:
                stack.extend(value.__dict__.values())
        elif isinstance(value, str):
            texts.append(value)
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, Iterable) and not isinstance(value, bytes | bytearray):
            stack.extend(value)
    return texts


_SCALARS = frozenset({type(None), bool, int, float})
_EXCLUDED: dict[type, frozenset[str]] = {}
"""Per model class, the fields pydantic does not dump (`Field(exclude=True)`)."""


def append(
    recorder: Recorder,
    session_id: str,
    batch: list[Encoded],
    expected_version: int | None,
    clock: Clock,
    known_head: Head | None = None,
    fold_in: FoldIn | None = None,
) -> list[RecordedEvent]:
    """Append `batch` after the session's head, atomically; see the module docstring.
    `known_head` is the head as the caller's fold knows it, used when it is the one expected;
    `fold_in` counts the live tokens the `sessions` row keeps (without it they are written
    as not counted)."""
    head = known_head if known_head is not None and expected_version == known_head.seq else None
    bodies = pack_all(body for item in batch for body in item.bodies)  # once, before any I/O
    texts = {body.digest: body.text for item in batch for body in item.bodies}
    title = redacted_title(
        recorder,
        session_id,
        (p for item in batch if isinstance(p := item.event.payload, ContentRedacted)),
    )
    for attempt in range(_ANY_VERSION_ATTEMPTS):
        if head is None:
            head = recorder.head(session_id)
        seq = head.seq if head is not None else 0
        if expected_version is not None and expected_version != seq:
            stored = _already_stored(recorder, session_id, batch)
            if stored is not None:
                return stored
            if head is None:
                raise UnknownSession(session_id)
            raise ConcurrencyError(session_id, expected_version, seq)
        new = _session_start(recorder, session_id, batch, head)
        links = _links_after(session_id, batch, head, clock)
        rows = [
            event_row(session_id, link, item.payload_json)
            for link, item in zip(links, batch, strict=True)
        ]
        index, unindex = index_rows(links, texts)
        # the caller's fold is at the head it expected: on a retry after another head, not
        live_tokens = None
        if fold_in is not None and attempt == 0:
            live_tokens = fold_in(_recorded(session_id, links, batch, [0] * len(batch)))
        try:
            positions = recorder.write(
                session_id,
                head,
                rows,
                new,
                bodies,
                forget(batch),
                metadata_set([item.event.payload for item in batch]),
                title=title,
                live_tokens=live_tokens,
                index=index,
                unindex=unindex,
            )
        except LostRace:
            stored = _already_stored(recorder, session_id, batch)
            if stored is not None:
                return stored
            if expected_version is not None:
                actual = recorder.head(session_id)
                raise ConcurrencyError(
                    session_id, expected_version, actual.seq if actual is not None else 0
                ) from None
            head = None
            time.sleep(random.uniform(0, 0.001 * min(attempt + 1, 10)))  # let the winner finish
            continue
        return _recorded(session_id, links, batch, positions)
    raise ConcurrencyError(session_id, -1, -1)  # pragma: no cover - needs 50 lost races in a row


def _recorded(
    session_id: str, links: Sequence[ChainLink], batch: Sequence[Encoded], positions: list[int]
) -> list[RecordedEvent]:
    return [
        RecordedEvent(
            position=position,
            session_id=session_id,
            seq=link.seq,
            event_id=link.event_id,
            type=link.type,
            schema_version=link.schema_version,
            recorded_at=link.recorded_at,
            prev_hash=link.prev_hash,
            hash=link.hash,
            payload=item.event.payload,
        )
        for link, item, position in zip(links, batch, positions, strict=True)
    ]


def forget(batch: Sequence[Encoded]) -> list[str]:
    """The bodies a batch's redactions delete: those no later event of the batch references
    again. A message appended after a redaction that holds the same bytes keeps them (the
    redacted parts stay redacted: their `ContentRedacted` names them)."""
    deleted: dict[str, None] = {}
    for item in batch:
        if isinstance(payload := item.event.payload, ContentRedacted):
            deleted.update(dict.fromkeys(payload.digests))
        for body in item.bodies:
            deleted.pop(body.digest, None)
    return list(deleted)


def _links_after(
    session_id: str, batch: list[Encoded], head: Head | None, clock: Clock
) -> list[ChainLink]:
    """`batch` chained after `head` (`None` for a new session), recorded now, or at the head's
    time when the clock is behind it: times never go back within a session."""
    now = clock().astimezone(UTC)
    if head is None:
        return chain(session_id, batch, 0, GENESIS_HASH, [now] * len(batch))
    recorded_at = max(now, head.updated_at)
    return chain(session_id, batch, head.seq, head.hash, [recorded_at] * len(batch))


def event_row(session_id: str, link: ChainLink, payload_json: bytes) -> EventRow:
    """The `events` row of one link; `payload_json` is its canonical JSON, stored as is."""
    return EventRow(
        session_id,
        link.seq,
        link.event_id,
        link.type,
        link.schema_version,
        link.recorded_at,
        link.prev_hash,
        link.hash,
        payload_json.decode("utf-8"),
    )


def chain(
    session_id: str,
    batch: Sequence[Encoded],
    after_seq: int,
    prev_hash: str,
    times: Sequence[datetime],
) -> list[ChainLink]:
    """`batch` as the links that follow `after_seq` (whose hash is `prev_hash`), recorded at
    `times`: each event's hash covers the one before it. The payload is the stored JSON."""
    links = []
    for seq, (item, recorded_at) in enumerate(zip(batch, times, strict=True), after_seq + 1):
        digest = event_hash(
            prev_hash=prev_hash,
            event_id=item.event.event_id,
            session_id=session_id,
            seq=seq,
            event_type=item.type,
            schema_version=item.schema_version,
            recorded_at=recorded_at,
            payload_json=item.payload_json,
        )
        link = ChainLink(
            seq=seq,
            event_id=item.event.event_id,
            type=item.type,
            schema_version=item.schema_version,
            recorded_at=recorded_at,
            prev_hash=prev_hash,
            hash=digest,
            payload=item.data,
        )
        links.append(link)
        prev_hash = digest
    return links


_SETS_METADATA = (SessionStarted, MetadataChanged)


def metadata_set(payloads: Sequence[Payload]) -> SessionMetadata | None:
    """The listing metadata the newest `SessionStarted` or `MetadataChanged` among `payloads`
    sets; `None` when none sets any (a session that starts without any has none to write)."""
    for payload in reversed(payloads):
        if isinstance(payload, _SETS_METADATA):
            metadata = SessionMetadata(payload.app, payload.user, payload.tags)
            started_bare = isinstance(payload, SessionStarted) and metadata == SessionMetadata()
            return None if started_bare else metadata
    return None


def _session_start(
    recorder: Recorder, session_id: str, batch: list[Encoded], head: Head | None
) -> NewSession | None:
    """The `sessions` row a batch that starts a session creates (`None` when it continues
    one); `InvalidEvent` when the batch does not start a new session, or starts a second."""
    first = batch[0].event.payload
    if head is not None:
        if isinstance(first, SessionStarted):
            raise InvalidEvent(f"session {session_id!r} has started already")
        return None
    if not isinstance(first, SessionStarted):
        raise InvalidEvent(f"a new session starts with a SessionStarted event, not {batch[0].type}")
    problem = fork_point_problem(recorder, first)
    if problem is not None:
        raise InvalidEvent(problem)
    return NewSession(first.title, first.parent_session_id, first.parent_seq, first.context_window)


def fork_point_problem(recorder: Recorder, started: SessionStarted) -> str | None:
    """Why `started` cannot begin a fork here (`None` when it is no fork, or a good one): a
    fork names its parent, the seq it continues from and that event's hash, and the parent's
    event at that seq must have exactly that hash. `UnknownSession` when there is no parent."""
    parent = started.parent_session_id
    if parent is None:
        if (started.parent_seq, started.parent_hash) != (None, None):
            return "parent_seq and parent_hash go with a parent_session_id"
        return None
    parent_head = head_seq(recorder, parent)
    if started.parent_seq is None or started.parent_seq > parent_head:
        return (
            f"parent_seq must name an event of {brief(parent)} (1..{parent_head}), "
            f"got {started.parent_seq}"
        )
    if started.parent_hash is None:
        return f"a fork of {brief(parent)} names the parent_hash of the event it continues from"
    if recorder.event_hash(parent, started.parent_seq) != started.parent_hash:
        return (
            f"the parent {brief(parent)} has another history: its event {started.parent_seq} "
            "does not have the parent_hash this fork names"
        )
    return None


def head_seq(recorder: Recorder, session_id: str) -> int:
    """The session's head seq; `UnknownSession` when there is no such session."""
    head = recorder.head(session_id)
    if head is None:
        raise UnknownSession(session_id)
    return head.seq


def _already_stored(
    recorder: Recorder, session_id: str, batch: list[Encoded]
) -> list[RecordedEvent] | None:
    """The stored events when this exact batch was appended before; `None` when none of it was."""
    ids = [item.event.event_id for item in batch]
    rows = recorder.events_by_id(session_id, ids)
    if not rows:
        return None
    by_id = {row.event_id: row for row in rows}
    for item in batch:
        row = by_id.get(item.event.event_id)
        if row is None:
            raise IdempotencyError(
                session_id,
                item.event.event_id,
                "part of this batch is stored already and this event is not; "
                "retry the batch exactly as it was sent",
            )
        same = (
            row.type == item.type
            and row.schema_version == item.schema_version
            and canonical_json(json.loads(row.payload)) == item.payload_json
        )
        if not same:
            raise IdempotencyError(
                session_id, item.event.event_id, "event_id is stored already with other content"
            )
    seqs = [by_id[event_id].seq for event_id in ids]
    if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        raise IdempotencyError(
            session_id, ids[0], "these events are stored, but not as one batch in this order"
        )
    return decode_stored(recorder, [by_id[event_id] for event_id in ids])
