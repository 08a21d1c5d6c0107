"""Redaction: deleting content from the store for good, keeping every chain whole.

What a message said lives in bodies (`events._bodies`); its event keeps only their digests, and
the hash chain covers the digests. A redaction appends one `ContentRedacted` event naming the
parts and their bodies, and in the same transaction deletes the session's references to those
bodies, and each body no other session references (the database allows no other deletion).
Afterwards the session reads `[redacted: <reason>]` wherever the content was, in the live
context, in any replay and in exports; `verify` still passes.

Bodies are shared by content: when two parts of a session hold the same text, redacting one
redacts both (the bytes are one), and the event names both, so the live context and a replay
agree. A body another session also holds stays for that session until it is redacted there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from events import ContentRedacted, InvalidEvent, decode_payload_json
from events._bodies import REFERENCE_HINT, envelope_digests, part_digests
from store._bodies import redactions
from store._errors import InvalidArgument
from store._recorder import Recorder


def session_parts(
    recorder: Recorder, session_id: str, head: int
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Per part id of the session's own events, the digests of its bodies (parts written
    before bodies existed, with their content inline, have none), and the digest of its
    message's envelope, when that is a body."""
    parts: dict[str, list[str]] = {}
    envelopes: dict[str, str] = {}
    for stored in recorder.events(session_id, 1, head):
        if REFERENCE_HINT in stored.payload:
            data = json.loads(stored.payload)
            parts.update(part_digests(stored.type, data))
            envelopes.update(envelope_digests(stored.type, data))
    return parts, envelopes


def plan_redaction(
    recorder: Recorder,
    session_id: str,
    head: int,
    part_ids: Iterable[str] | None,
    reason: str,
) -> ContentRedacted | None:
    """The event that redacts `part_ids` (every part of the session when `None`), or `None`
    when all their content is redacted already. `InvalidArgument` for a part the session's
    own events do not hold, or one whose content is inline (written before bodies existed)."""
    parts, envelopes = session_parts(recorder, session_id, head)
    gone = redactions(recorder, session_id)
    if part_ids is None:
        named = list(parts)
    else:
        named = list(dict.fromkeys(part_ids))
        for part_id in named:
            if part_id not in parts:
                raise InvalidArgument(
                    f"no part {part_id!r} in the events of {session_id!r} (a part of a fork's "
                    "parent is redacted in the parent)"
                )
            if not parts[part_id] and part_id not in envelopes:
                raise InvalidArgument(
                    f"part {part_id!r} holds its content inline (written before bodies "
                    "existed): it cannot be deleted without breaking the chain"
                )
    own = [d for p in named for d in parts[p]]
    envelope = [envelopes[p] for p in named if p in envelopes]
    digests = list(dict.fromkeys(d for d in [*own, *envelope] if d not in gone))
    if not digests:
        return None
    wanted = set(digests)
    # the parts whose content goes (their own bodies, or one they share) and those named (whose
    # message's envelope goes: a reader of another message that repeats the same envelope
    # finds its digest redacted and shows the placeholder there)
    affected = {p for p, ds in parts.items() if wanted.intersection(ds)} | set(named)
    affected_in_order = [p for p in parts if p in affected]
    return ContentRedacted(part_ids=tuple(affected_in_order), digests=tuple(digests), reason=reason)


def check_redaction(recorder: Recorder, session_id: str, event: ContentRedacted) -> None:
    """`InvalidEvent` unless every body the event deletes is one the session references (so
    a redaction appended by hand cannot name what is not there)."""
    held = set(recorder.body_digests(session_id)) | set(redactions(recorder, session_id))
    stray = [d for d in event.digests if d not in held]
    if stray:
        raise InvalidEvent(f"{session_id!r} holds no body {stray[0]} to redact")


def collect_bodies(recorder: Recorder) -> int:
    """Delete every body no session references, and say how many went. Writes never leave
    one (each deletes what its redaction left unreferenced, under a lock that excludes new
    references), but a database written by a version without that lock can hold some: the
    secret of two sessions that redacted it at the same moment. Only bodies a redaction
    names can be unreferenced (a body is stored with its reference), and only those may the
    database delete."""
    named: set[str] = set()
    for event_type, version, text in recorder.payloads_of_type(["ContentRedacted"]):
        payload = decode_payload_json(event_type, version, text)
        assert isinstance(payload, ContentRedacted)
        named.update(payload.digests)
    orphans = [digest for digest in recorder.unreferenced_bodies() if digest in named]
    return recorder.delete_unreferenced_bodies(orphans) if orphans else 0


def redacted_parts(recorder: Recorder, session_ids: Iterable[str]) -> dict[str, str]:
    """Part id -> placeholder, for every part a redaction of these sessions named."""
    found: dict[str, str] = {}
    for session_id in session_ids:
        for event_type, version, text in recorder.payloads_of_type(["ContentRedacted"], session_id):
            payload = decode_payload_json(event_type, version, text)
            assert isinstance(payload, ContentRedacted)
            found.update(dict.fromkeys(payload.part_ids, payload.placeholder))
    return found
