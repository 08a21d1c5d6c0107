"""Redaction: deleting content from the store for good, keeping every chain whole.

What a message said lives in bodies (`sessionstore.events._bodies`); its event keeps only their
digests, and the hash chain covers the digests. A redaction appends one `ContentRedacted` event
naming the parts and their bodies, and in the same transaction deletes the session's references to
those bodies, and each body no other session references (the database allows no other deletion).
Afterwards the session reads `[redacted: <reason>]` wherever the content was, in the live
context, in any replay and in exports; `verify` still passes.

Bodies are shared by content: when two parts of a session hold the same text, redacting one
redacts both (the bytes are one), and the event names both, so the live context and a replay
agree; an undo's restored copy is such a part. Text derived from a redacted one goes with it:
the compaction summaries written after it (see `SessionContent.derived`); previews and prune
placeholders hold no content of their own; the title goes with a redacted text that holds it
word for word. A purge deletes the session's title and its state's values too (the `sessions`
row is retitled in the same transaction). A body another session also holds stays
for that session until it is redacted there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from sessionstore.events import (
    CONTENT_EVENTS,
    REFERENCE_HINT,
    ContentRedacted,
    InvalidArgument,
    InvalidEvent,
    decode_payload_json,
    envelope_digests,
    header_digests,
    part_digests,
)
from sessionstore.log._bodies import bodies_of, redactions
from sessionstore.storage import Recorder

MARKER_SUMMARIZER = "marker"
"""The summarizer a strategy's marker names: its text is a count and the strategy's name
(`sessionstore.context._strategies.MARKER`), never content, so it quotes nothing a redaction could
reach."""


@dataclass
class SessionContent:
    """Where a session's own events keep content, by part id: what a redaction plans with."""

    parts: dict[str, list[str]] = field(default_factory=dict)
    """Per part id, the digests of its bodies, every copy's (an undo's copy of a message
    redacted before it holds the placeholder as a body of its own); none for a part written
    before its content was a body."""
    envelopes: dict[str, str] = field(default_factory=dict)
    """Per part id, the digest of its message's envelope, when that is a body."""
    first_seen: dict[str, int] = field(default_factory=dict)
    """Per part id of a message (not a record: no summarizer reads those), the seq of the
    first event that holds it."""
    summaries: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    """(seq, part ids) of each compaction summary a summarizer wrote (markers aside)."""
    titles: list[str] = field(default_factory=list)
    """The digests of the session's title, when it is a body."""
    values: list[str] = field(default_factory=list)
    """The digests of the state's values, when they are bodies: only a purge deletes them."""

    def add(self, event_type: str, seq: int, data: dict[str, object]) -> None:
        for part_id, digests in part_digests(event_type, data).items():
            known = self.parts.setdefault(part_id, [])
            known.extend(d for d in digests if d not in known)
            if event_type != "RecordAppended":
                self.first_seen.setdefault(part_id, seq)
        self.envelopes.update(envelope_digests(event_type, data))
        loose = self.titles if event_type == "SessionStarted" else self.values
        loose.extend(header_digests(event_type, data))
        if event_type == "ContextCompacted" and data.get("summarizer") != MARKER_SUMMARIZER:
            self.summaries.append((seq, tuple(part_digests(event_type, data))))

    def derived(self, part_ids: Iterable[str]) -> list[str]:
        """The parts of every summary written after any of `part_ids` was: a summarizer reads
        the replaced messages, the summaries folded into them, and (the extractive one, through
        the artifact trail) every request, command and error of the log so far, so any of
        them may quote it. A later summary that folds in a derived one is later still."""
        seqs = [self.first_seen[p] for p in part_ids if p in self.first_seen]
        if not seqs:
            return []
        first = min(seqs)
        return [p for seq, ids in self.summaries if seq > first for p in ids]


def session_content(recorder: Recorder, session_id: str, head: int) -> SessionContent:
    """What the session's own events up to `head` hold (see `SessionContent`)."""
    content = SessionContent()
    for stored in recorder.events(session_id, 1, head):
        if stored.type in CONTENT_EVENTS:  # inline ones too: a part of one is named, refused
            content.add(stored.type, stored.seq, json.loads(stored.payload))
    return content


def plan_redaction(
    recorder: Recorder,
    session_id: str,
    head: int,
    part_ids: Iterable[str] | None,
    reason: str,
) -> ContentRedacted | None:
    """The event that redacts `part_ids` (every part of the session, its title and its state
    when `None`), with every summary derived from them and the title when one of them quotes
    it, or `None` when all their content is redacted already. `InvalidArgument` for a part
    the session's own events do not hold, or one whose content is inline (written before it
    was a body)."""
    content = session_content(recorder, session_id, head)
    parts, envelopes = content.parts, content.envelopes
    gone = redactions(recorder, session_id)
    if gone:  # a text redacted, then appended again, is held again: it can be deleted again
        held = set(recorder.body_digests(session_id))
        gone = {digest: shown for digest, shown in gone.items() if digest not in held}
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
                    f"part {part_id!r} holds its content inline (written before that content "
                    "was a body): it cannot be deleted without breaking the chain"
                )
        # a summary written before summaries were bodies keeps its text: it cannot go
        named.extend(p for p in content.derived(named) if p not in named and parts[p])
    own = [d for p in named for d in parts[p]]
    envelope = [envelopes[p] for p in named if p in envelopes]
    if part_ids is None:
        loose = [*content.titles, *content.values]
    else:
        loose = quoted_titles(recorder, session_id, content.titles, [*own, *envelope], gone)
    digests = list(dict.fromkeys(d for d in [*own, *envelope, *loose] if d not in gone))
    if not digests:
        return None
    wanted = set(digests)
    # the parts whose content goes (their own bodies, or one they share) and those named (whose
    # message's envelope goes: a reader of another message that repeats the same envelope
    # finds its digest redacted and shows the placeholder there)
    affected = {p for p, ds in parts.items() if wanted.intersection(ds)} | set(named)
    affected_in_order = [p for p in parts if p in affected]
    return ContentRedacted(part_ids=tuple(affected_in_order), digests=tuple(digests), reason=reason)


def quoted_titles(
    recorder: Recorder,
    session_id: str,
    titles: list[str],
    redacting: list[str],
    gone: dict[str, str],
) -> list[str]:
    """The title bodies among `titles` whose text a body being redacted holds word for word
    (an imported transcript's title is its summary line, kept as a record; an application's
    is often the first request's beginning), as itself or as a JSON string in a native
    block's text: the title goes with it."""
    wanted = {d for d in titles if d not in gone}
    if not wanted or not redacting:
        return []
    texts = bodies_of(recorder, session_id, wanted | set(redacting))
    sources = [texts[d] for d in dict.fromkeys(redacting) if d not in gone and d in texts]
    found = []
    for digest in wanted:
        title = texts.get(digest)
        if not title:
            continue
        escaped = json.dumps(title, ensure_ascii=False)[1:-1]  # as canonical JSON writes it
        if any(title in text or escaped in text for text in sources):
            found.append(digest)
    return found


def redacted_title(
    recorder: Recorder, session_id: str, batch: Iterable[ContentRedacted]
) -> str | None:
    """The title the `sessions` row takes when a redaction in `batch` deletes the session's
    title (its placeholder, as `SessionStarted` then reads); `None` when none does."""
    wanted = {digest: event.placeholder for event in batch for digest in event.digests}
    if not wanted:
        return None
    first = next(recorder.events(session_id, 1, 1), None)
    if first is None or REFERENCE_HINT not in first.payload:
        return None
    titles = header_digests(first.type, json.loads(first.payload))
    return next((wanted[d] for d in titles if d in wanted), None)


def check_redaction(recorder: Recorder, session_id: str, event: ContentRedacted) -> None:
    """`InvalidEvent` unless every body the event deletes is one the session references (so
    a redaction appended by hand cannot name what is not there)."""
    held = set(recorder.body_digests(session_id)) | set(redactions(recorder, session_id))
    stray = [d for d in event.digests if d not in held]
    if stray:
        raise InvalidEvent(f"{session_id!r} holds no body {stray[0]} to redact")


def redacted_parts(recorder: Recorder, session_ids: Iterable[str]) -> dict[str, str]:
    """Part id -> placeholder, for every part a redaction of these sessions named."""
    found: dict[str, str] = {}
    for session_id in session_ids:
        for event_type, version, text in recorder.payloads_of_type(["ContentRedacted"], session_id):
            payload = decode_payload_json(event_type, version, text)
            assert isinstance(payload, ContentRedacted)
            found.update(dict.fromkeys(payload.part_ids, payload.placeholder))
    return found
