"""Writing what an importer read (`Transcript`s) into the store, idempotently.

Each transcript is one session named by its format and the agent's own session id, and each
entry an event named by its key (`session_id_for`, `event_id_for`). A session that is not in the
store yet is written whole, in one transaction, with the transcript's own times. One that is
gets only the entries whose events it does not hold, appended after its head in one
transaction: importing the same file twice writes nothing, and a transcript that grew adds its
new entries to the same session.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue

from events import NewEvent, SessionStarted, StateChanged
from store._errors import ImportRefused
from store._importers._transcript import Skipped, Transcript, event_id_for, session_id_for
from store._log import MAX_SEQ, EventLog
from store._transfer import dated_links, insert_links


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """One session an import wrote to (or found complete): `created` when it is new."""

    session_id: str
    format: str
    source_id: str
    created: bool
    events_written: int
    skipped: tuple[Skipped, ...] = ()


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did: the sessions it created or added to, and the lines it skipped."""

    sessions: tuple[ImportedSession, ...]

    @property
    def session_ids(self) -> list[str]:
        return [s.session_id for s in self.sessions]

    @property
    def created(self) -> list[str]:
        return [s.session_id for s in self.sessions if s.created]

    @property
    def events_written(self) -> int:
        return sum(s.events_written for s in self.sessions)

    @property
    def skipped(self) -> list[Skipped]:
        return [skip for s in self.sessions for skip in s.skipped]


@dataclass(frozen=True, slots=True)
class Header:
    """What a new session's `SessionStarted` takes besides the transcript's own title/model."""

    encoding: str
    title: str | None = None
    model: str | None = None
    context_window: int | None = None
    session_id: str | None = None  # the caller's id for the (top) session


def write_transcript(
    log: EventLog, transcript: Transcript, header: Header, *, strict: bool = False
) -> list[ImportedSession]:
    """Write `transcript` and its children (subagents); `ImportRefused` when `strict` and it
    skipped anything, or when it holds nothing to import."""
    if strict and transcript.skipped:
        first = transcript.skipped[0]
        raise ImportRefused(first.reason, first.line)
    written = [_write_one(log, transcript, header)]
    for child in transcript.children:
        written += write_transcript(log, child, Header(header.encoding), strict=strict)
    return written


def _write_one(log: EventLog, transcript: Transcript, header: Header) -> ImportedSession:
    session_id = header.session_id or session_id_for(transcript.format, transcript.source_id)
    events = [
        NewEvent(entry.payload, event_id_for(session_id, entry.key)) for entry in transcript.entries
    ]
    times: list[datetime | None] = [entry.time for entry in transcript.entries]
    if log.recorder.head(session_id) is not None:
        stored = {event.event_id for event in log.read(session_id, 1, MAX_SEQ)}
        fresh = [event for event in events if event.event_id not in stored]
        if fresh:
            log.append(session_id, fresh, None)
        return ImportedSession(
            session_id,
            transcript.format,
            transcript.source_id,
            created=False,
            events_written=len(fresh),
            skipped=tuple(transcript.skipped),
        )
    if not events:
        raise ImportRefused(f"the {transcript.format} transcript holds nothing to import")
    origin: dict[str, JsonValue] = {"format": transcript.format, "source_id": transcript.source_id}
    if transcript.parent is not None:
        origin["parent_session_id"] = session_id_for(
            transcript.format, transcript.parent.parent_source_id
        )
        origin["call_id"] = transcript.parent.call_id
    started = SessionStarted(
        title=header.title if header.title is not None else transcript.title or "",
        model=header.model if header.model is not None else transcript.model or "",
        context_window=header.context_window,
        encoding=header.encoding,
        app=transcript.format,
    )
    imported = NewEvent(
        StateChanged(values={"imported_from": origin}),
        event_id_for(session_id, "imported_from"),
    )
    batch = log.encode([started, imported, *events])
    first = next((t for t in times if t is not None), None)
    links = dated_links(session_id, batch, [first, first, *times], log.now())
    insert_links(log.recorder, session_id, links, (b for item in batch for b in item.bodies))
    return ImportedSession(
        session_id,
        transcript.format,
        transcript.source_id,
        created=True,
        events_written=len(batch),
        skipped=tuple(transcript.skipped),
    )
