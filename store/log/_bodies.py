"""Bodies in the database: packed (compressed where it pays) on the way in, joined back into
their events on the way out, with a placeholder for each one a redaction deleted.

Compression is zlib at level 1, for the bodies a render does not read (the original of a
truncated output) and for any body of `COMPRESS_SHOWN_MIN` bytes or more. Measured here on 9 MB
of real source files: level 1 keeps 1/3.7 of the bytes at about twice the speed of level 6
(1/4.5); zstd would need a dependency the design card does not list. A text the model is shown
on every resume stays uncompressed below that size: decompressing it would cost every resume
more than the disk it saves. A body that compresses by less than an eighth is kept as it is.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Sequence, Set
from typing import Any

from sessionstore.events import (
    REFERENCE_HINT,
    Body,
    ContentRedacted,
    InvalidEvent,
    MessageAppended,
    Payload,
    RecordedEvent,
    StoredAppend,
    body_digests,
    collection_paused,
    decode_payload,
    decode_payload_json,
    join_bodies,
    redaction_placeholder,
    shown_digests,
)
from sessionstore.storage import BodyRow, Recorder, StoredEvent

COMPRESS_MIN = 1024
COMPRESS_SHOWN_MIN = 256 * 1024
ZLIB_LEVEL = 1
SAMPLED_MIN = 1024 * 1024
"""A body this large is deflated as its samples say pays best (`deflate`)."""
_SAMPLE = 64 * 1024


def pack(body: Body) -> BodyRow:
    raw = body.text.encode("utf-8")
    if len(raw) >= COMPRESS_MIN and (not body.shown or len(raw) >= COMPRESS_SHOWN_MIN):
        packed = deflate(raw)
        if len(packed) <= len(raw) - len(raw) // 8:
            return BodyRow(body.digest, len(raw), "zlib", packed)
    return BodyRow(body.digest, len(raw), "none", raw)


def deflate(raw: bytes) -> bytes:
    """`raw` as a zlib stream: at level 1, or Huffman coding alone for a body of `SAMPLED_MIN`
    bytes or more whose samples (head, middle, tail) level 1 does not shrink by a tenth more.

    Level 1 looks for an earlier match at every position. On text that barely repeats
    (base64, one long random word, packed data) the search costs four times the coding and
    buys nothing: measured here on 50 MB of base64, 1.34 s of CPU for 77% of the bytes, against
    0.34 s for 75% by Huffman coding alone (of one random word: 0.72 s for 66%, 0.37 s for
    60%). On text that repeats (logs, listings, prose) level 1 is both fast and small (50 MB of
    short lines: 0.32 s for 20%, against 53%), so it stays. Both are one zlib stream:
    `unpack` reads either."""
    if len(raw) >= SAMPLED_MIN and not _repeats(raw):
        return _huffman_only(raw)
    return zlib.compress(raw, ZLIB_LEVEL)


def _repeats(raw: bytes) -> bool:
    middle = len(raw) // 2 - _SAMPLE // 2
    samples = (raw[:_SAMPLE], raw[middle : middle + _SAMPLE], raw[-_SAMPLE:])
    matched = sum(len(zlib.compress(sample, ZLIB_LEVEL)) for sample in samples)
    coded = sum(len(_huffman_only(sample)) for sample in samples)
    return matched * 10 < coded * 9


def _huffman_only(raw: bytes) -> bytes:
    compressor = zlib.compressobj(ZLIB_LEVEL, zlib.DEFLATED, 15, 8, zlib.Z_HUFFMAN_ONLY)
    return compressor.compress(raw) + compressor.flush()


def pack_all(bodies: Iterable[Body]) -> list[BodyRow]:
    """Each distinct body once."""
    unique = {body.digest: body for body in bodies}
    return [pack(body) for body in unique.values()]


def unpack(row: BodyRow) -> str:
    if row.compression == "zlib":
        raw = zlib.decompress(row.data)
    elif row.compression == "none":
        raw = bytes(row.data)
    else:
        raise InvalidEvent(f"body {row.digest} is stored as {row.compression!r}, unknown here")
    return raw.decode("utf-8")


def unpack_exact(row: BodyRow) -> str:
    """The row's text, for `verify`: `ValueError` unless its bytes are exactly one body of
    `row.size` bytes. Unlike `unpack`, a zlib row must end where its stream ends (zlib stops
    there and ignores what follows, so bytes appended to a row would pass unseen), and it is
    inflated to at most one byte past `row.size` (a forged stream cannot make `verify` allocate
    more than the body it stands for)."""
    if row.compression == "none":
        raw = bytes(row.data)
    elif row.compression != "zlib":
        raise ValueError(f"compression {row.compression!r} is unknown here")
    else:
        inflater = zlib.decompressobj()
        try:
            raw = inflater.decompress(row.data, row.size + 1)
        except zlib.error as exc:
            raise ValueError(f"not a zlib stream: {exc}") from None
        if not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
            raise ValueError("the zlib stream does not end where the row ends")
    if len(raw) != row.size:
        raise ValueError(f"{len(raw)} bytes, not {row.size}")
    return raw.decode("utf-8")


def redactions(recorder: Recorder, session_id: str) -> dict[str, str]:
    """Digest -> placeholder, for every body a redaction of the session deleted."""
    found: dict[str, str] = {}
    for event_type, version, text in recorder.payloads_of_type(["ContentRedacted"], session_id):
        payload = decode_payload_json(event_type, version, text)
        assert isinstance(payload, ContentRedacted)
        for digest in payload.digests:
            found.setdefault(digest, payload.placeholder)
    return found


def decode_stored(recorder: Recorder, stored: Sequence[StoredEvent]) -> list[RecordedEvent]:
    """Events as read, decoded and upcast, their bodies joined back (read in one query per
    session for the lot). An event whose body is missing and was not redacted is damaged:
    `InvalidEvent` names it."""
    return _decoded(recorder, stored, plain=False)  # type: ignore[return-value]


def decode_for_fold(
    recorder: Recorder, stored: Sequence[StoredEvent], unshown: Set[str] = frozenset()
) -> list[RecordedEvent | StoredAppend]:
    """`decode_stored` for a fold: a `MessageAppended` of the current schema comes as a
    `StoredAppend`, its message the stored JSON, never validated into models (see
    `sessionstore.projections._fold`), with the bodies of what the model was shown joined; the
    originals of its truncated parts, and all of the parts in `unshown` (a snapshot's pruned
    outputs and cleared reasoning), stay references, read when a restore or a caller asks for
    them."""
    return _decoded(recorder, stored, plain=True, unshown=unshown)


def _decoded(
    recorder: Recorder,
    stored: Sequence[StoredEvent],
    *,
    plain: bool,
    unshown: Set[str] = frozenset(),
) -> list[RecordedEvent | StoredAppend]:
    with collection_paused():
        decoded: list[RecordedEvent | StoredAppend | None] = []
        waiting: list[tuple[int, Any, set[str] | None]] = []  # (index, payload, shown digests)
        wanted: dict[str, set[str]] = {}
        for index, event in enumerate(stored):
            as_stored = plain and _as_stored(event)
            if REFERENCE_HINT not in event.payload and not as_stored:
                decoded.append(recorded_event(event, decode_payload_json(*_typed(event))))
                continue
            decoded.append(None)
            data = json.loads(event.payload)
            if as_stored and isinstance(data, dict):
                needed = shown_digests(event.type, data, unshown)
                wanted.setdefault(event.session_id, set()).update(needed)
                waiting.append((index, data, needed))
                continue
            waiting.append((index, data, None))
            # every digest the text names (a superset of its references: a provider's own
            # envelope may hold a "sha256" too), found without walking the payload
            wanted.setdefault(event.session_id, set()).update(DIGEST_NAMED.findall(event.payload))
        if waiting:
            texts = {sid: bodies_of(recorder, sid, digests) for sid, digests in wanted.items()}
            for index, data, shown in waiting:
                event = stored[index]
                found = texts[event.session_id]
                if shown is None:
                    decoded[index] = recorded_event(event, joined_payload(event, data, found))
                    continue
                missing = [digest for digest in shown if digest not in found]  # not a set
                if missing:  # difference with the keys: that copies every key, per event
                    raise _missing_body(event, min(missing))
                message = join_bodies(event.type, data, found).get("message")
                decoded[index] = StoredAppend(
                    event.session_id, event.seq, event.hash, event.recorded_at, message
                )
        return [event for event in decoded if event is not None]


def _as_stored(event: StoredEvent) -> bool:
    """Whether a fold takes the event as stored JSON: a message appended in today's schema
    (an older one is upcast through its model)."""
    return event.type == "MessageAppended" and event.schema_version == _APPENDED_VERSION


_APPENDED_VERSION = MessageAppended.schema_version


def _check_bodies(event: StoredEvent, data: dict[str, Any], texts: dict[str, str]) -> None:
    """`InvalidEvent` when a body the event references is neither stored nor redacted."""
    missing = [d for d in body_digests(event.type, data) if d not in texts]
    if missing:
        raise _missing_body(event, missing[0])


def _missing_body(event: StoredEvent, digest: str) -> InvalidEvent:
    return InvalidEvent(
        f"event {event.seq} of {event.session_id!r} references body {digest}, "
        "which the store does not hold and no redaction deleted"
    )


DIGEST_NAMED = re.compile(r'"sha256": ?"([0-9a-f]{64})"')
"""Every digest a stored payload's text names: a superset of its references (a provider's own
envelope may hold a "sha256" too), found without parsing it."""


def joined_payload(event: StoredEvent, data: dict[str, Any], texts: dict[str, str]) -> Payload:
    """The payload with its bodies; a reference left unjoined (its body missing) is no valid
    value where it stands, so decoding fails, and then the error names the body."""
    try:
        joined = join_bodies(event.type, data, texts)
        return decode_payload(event.type, event.schema_version, joined)
    except InvalidEvent:
        _check_bodies(event, data, texts)
        raise


def decode_structure(event_type: str, schema_version: int, text: str) -> Payload:
    """A stored payload decoded with its bodies left empty: for figures that never read
    content (token counts, sizes), without reading a body."""
    if REFERENCE_HINT not in text:
        return decode_payload_json(event_type, schema_version, text)
    data = json.loads(text)
    empty = dict.fromkeys(body_digests(event_type, data), "")
    return decode_payload(event_type, schema_version, join_bodies(event_type, data, empty))


def bodies_of(recorder: Recorder, session_id: str, digests: set[str]) -> dict[str, str]:
    """Digest -> text of the session's bodies among `digests`; a body a redaction of the
    session deleted reads as its placeholder (even when another session still holds it)."""
    own = {row.digest: unpack(row) for row in recorder.bodies(session_id, sorted(digests))}
    if len(own) < len(digests):
        own.update(redactions(recorder, session_id))
    return own


def _typed(event: StoredEvent) -> tuple[str, int, str]:
    return event.type, event.schema_version, event.payload


def recorded_event(event: StoredEvent, payload: object) -> RecordedEvent:
    return RecordedEvent(
        position=event.position,
        session_id=event.session_id,
        seq=event.seq,
        event_id=event.event_id,
        type=event.type,
        schema_version=event.schema_version,
        recorded_at=event.recorded_at,
        prev_hash=event.prev_hash,
        hash=event.hash,
        payload=payload,  # type: ignore[arg-type]
    )


__all__ = [
    "DIGEST_NAMED",
    "decode_for_fold",
    "decode_stored",
    "joined_payload",
    "pack_all",
    "recorded_event",
    "redaction_placeholder",
    "unpack",
    "unpack_exact",
]
