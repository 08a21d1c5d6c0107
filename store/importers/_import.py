"""Writing what an importer read (`Transcript`s) into the store, idempotently.

Each transcript is one session named by its format and the agent's own session id, and each
entry an event named by its key (`session_id_for`, `event_id_for`). A session that is not in the
store yet is written with the transcript's own times, a batch at a time (`_BATCH_EVENTS` or
`_BATCH_BYTES`, one transaction each), so memory holds a batch, never the session; its
`sessions` row takes the live tokens the reader counted with the last batch (before it, the
row says not counted, and a listing folds it), so no fold holds its live context. One that is
gets only the entries whose events it does not hold, appended after its head a batch at a
time, at the transcript's times too: importing the same file twice writes nothing, a
transcript that grew adds its new entries to the same session (the same events, times and
hashes as importing the grown file once), and an import cut short (a crash, a file that ran
out of memory) is completed by importing the file again.

A file is read a line at a time (`FileLines`): a line that is not UTF-8 is skipped and reported
with its number, like a line that is not JSON; a file that cannot be read at all is reported
and the other files of its folder are imported.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from pydantic import JsonValue

from sessionstore.context import load_encoding
from sessionstore.events import (
    GENESIS_HASH,
    ChainLink,
    ImportRefused,
    InvalidArgument,
    MessageAppended,
    NewEvent,
    Payload,
    RecordedEvent,
    SearchEntry,
    SessionExists,
    SessionStarted,
    SessionStoreError,
    StateChanged,
    brief,
    new_id,
)
from sessionstore.importers._claude_code import claude_code_events
from sessionstore.importers._formats import FORMATS, file_head, recognise
from sessionstore.importers._lines import FileLines, TextLines
from sessionstore.importers._openai import openai_events
from sessionstore.importers._opencode_storage import (
    is_opencode_storage,
    opencode_session_ids,
    opencode_storage_transcript,
    read_opencode_session,
)
from sessionstore.importers._transcript import (
    Entry,
    Skipped,
    Transcript,
    event_id_for,
    session_id_for,
)
from sessionstore.log import (
    Encoded,
    EventLog,
    chain,
    check_session_id,
    dated_links,
    decode_stored,
    encode_event,
    event_row,
    index_rows,
    insert_links,
    pack_all,
    read_export,
)
from sessionstore.storage import (
    BodyRow,
    EventRow,
    Head,
    LostRace,
    NewSession,
    SessionMetadata,
)


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """One session an import wrote to (or found complete): `created` when it is new.

    `events` is how many events the session holds after the import; `live_messages` and
    `live_tokens` the live context the transcript ends with, as its reader followed it
    (tokens as the fold counts them, `Session.tokens`), or `None` when the reader does not
    say: figures to report that need no fold of the session, whatever its length."""

    session_id: str
    format: str
    source_id: str
    created: bool
    events_written: int
    skipped: tuple[Skipped, ...] = ()
    events: int | None = None
    live_messages: int | None = None
    live_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did: the sessions it created or added to, and what it skipped (lines of
    the files it read; files it could not read, with no line).

    `sessions` has one row per file and session it wrote to (or found complete): two files
    of one session (a transcript copied as it grew) are two rows of the same session.
    `session_ids` and `per_session` name each session once."""

    sessions: tuple[ImportedSession, ...]
    files_skipped: tuple[Skipped, ...] = ()

    @property
    def session_ids(self) -> list[str]:
        """The sessions the import wrote to or found complete, each once, in order."""
        return list(dict.fromkeys(s.session_id for s in self.sessions))

    @property
    def per_session(self) -> tuple[ImportedSession, ...]:
        """One row per session: `created` when a file of the import created it, the events
        every file wrote to it, their skipped lines, and the figures of the last file's (the
        session as the import left it; `None` when that file's reader could not say)."""
        rows: dict[str, ImportedSession] = {}
        for row in self.sessions:
            before = rows.get(row.session_id)
            if before is None:
                rows[row.session_id] = row
                continue
            rows[row.session_id] = replace(
                row,
                created=before.created or row.created,
                events_written=before.events_written + row.events_written,
                skipped=(*before.skipped, *row.skipped),
            )
        return tuple(rows.values())

    @property
    def created(self) -> list[str]:
        return [s.session_id for s in self.sessions if s.created]

    @property
    def events_written(self) -> int:
        return sum(s.events_written for s in self.sessions)

    @property
    def skipped(self) -> list[Skipped]:
        return [*self.files_skipped, *(skip for s in self.sessions for skip in s.skipped)]


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
    return _write_tree(log, transcript, header, None, strict=strict)


def _write_tree(
    log: EventLog, transcript: Transcript, header: Header, parent: str | None, *, strict: bool
) -> list[ImportedSession]:
    if strict and transcript.skipped:
        first = transcript.skipped[0]
        raise ImportRefused(first.reason, first.line)
    top = _write_one(log, transcript, header, parent)
    written = [top]
    for child in transcript.children:
        child_header = Header(header.encoding)
        written += _write_tree(log, child, child_header, top.session_id, strict=strict)
    return written


_BATCH_EVENTS = 1000
_BATCH_BYTES = 1 << 20
"""A batch of an import's events ends at this many events or stored bytes, whichever comes
first: what an import holds in memory, and writes in one transaction."""


def _write_one(
    log: EventLog, transcript: Transcript, header: Header, parent: str | None
) -> ImportedSession:
    """The transcript written as its session. A new session's `sessions` row gets its live
    tokens with its last batch, from the reader (`Transcript.live_tokens`, what a fold of the
    session gives); one the import added to, or whose reader does not say, is counted by a
    fold afterwards (`EventLog.recount`, which holds the live context in memory)."""
    imported = _write_events(log, transcript, header, parent)
    if imported.events_written and not (imported.created and imported.live_tokens is not None):
        log.recount(imported.session_id)
    return imported


def _write_events(
    log: EventLog, transcript: Transcript, header: Header, parent: str | None
) -> ImportedSession:
    session_id = header.session_id or session_id_for(transcript.format, transcript.source_id)
    origin: dict[str, JsonValue] = {"format": transcript.format, "source_id": transcript.source_id}
    if transcript.parent is not None:
        origin["parent_session_id"] = parent or session_id_for(
            transcript.format, transcript.parent.parent_source_id
        )
        origin["call_id"] = transcript.parent.call_id
    found = log.recorder.head(session_id)
    if found is not None:
        return _write_more(log, transcript, session_id, origin, found)
    if not transcript.size:
        raise ImportRefused(f"the {transcript.format} transcript holds nothing to import")
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
    opening = NewEvent(started, event_id_for(session_id, "started"))
    first = transcript.first_time
    written = 0
    head: Head | None = None
    batches = _encoded_batches(log, transcript, session_id)
    pending = next(batches, None)
    while pending is not None:
        batch, times = pending
        pending = next(batches, None)
        counted = transcript.live_tokens if pending is None else None  # the last batch's
        if head is None:
            batch = [*log.encode([opening, imported]), *batch]
            times = [first, first, *times]
            kept = _dated(times, first or log.now())
            head = _write_first(log, session_id, started, batch, kept, counted)
        else:
            head = _write_after(log, session_id, head, batch, times, counted)
        written += len(batch)
    return ImportedSession(
        session_id,
        transcript.format,
        transcript.source_id,
        created=True,
        events_written=written,
        skipped=tuple(transcript.skipped),
        events=head.seq if head is not None else None,
        live_messages=transcript.live_messages,
        live_tokens=transcript.live_tokens,
    )


def _dated(times: Sequence[datetime | None], previous: datetime) -> list[datetime]:
    """When each event of a transcript is recorded: when it happened, unless that is before
    the event before it (a log's times only go forward), or, when the transcript does not
    say, when the event before it was."""
    kept = []
    for time in times:
        previous = max(time or previous, previous)
        kept.append(previous)
    return kept


def _write_first(
    log: EventLog,
    session_id: str,
    started: SessionStarted,
    batch: list[Encoded],
    times: list[datetime],
    live_tokens: int | None,
) -> Head:
    """A new session's first batch (its `SessionStarted` first) in one transaction, which
    creates its `sessions` row (`live_tokens`: see `_write_after`): the rows as encoded, not
    serialized again. `SessionExists` when another writer created the session meanwhile."""
    links = chain(session_id, batch, 0, GENESIS_HASH, times)
    rows, bodies, index, unindex = _rows_of(session_id, links, batch)
    new = NewSession(started.title, None, None, started.context_window)
    metadata = SessionMetadata(started.app, started.user, started.tags)
    try:
        log.recorder.write(
            session_id,
            None,
            rows,
            new,
            bodies,
            metadata=metadata,
            live_tokens=live_tokens,
            index=index,
            unindex=unindex,
        )
    except LostRace:  # another writer took the id meanwhile
        raise SessionExists(session_id) from None
    return Head(links[-1].seq, links[-1].hash, links[-1].recorded_at)


def _write_after(
    log: EventLog,
    session_id: str,
    head: Head,
    batch: list[Encoded],
    times: Sequence[datetime | None],
    live_tokens: int | None = None,
) -> Head:
    """`batch` appended after `head` in one transaction, each event at the transcript's time
    for it (`_dated`, after the head's): so importing a transcript in two steps (it grew
    between them) writes what importing it once would, the same times and the same hashes.
    `live_tokens`: the live context's size after it, when the caller knows it (else the row
    says not counted, until a fold counts it)."""
    links = chain(session_id, batch, head.seq, head.hash, _dated(times, head.updated_at))
    rows, bodies, index, unindex = _rows_of(session_id, links, batch)
    try:
        log.recorder.write(
            session_id,
            head,
            rows,
            None,
            bodies,
            live_tokens=live_tokens,
            index=index,
            unindex=unindex,
        )
    except LostRace:
        raise ImportRefused(
            f"{session_id} changed while it was imported: import the file again"
        ) from None
    return Head(links[-1].seq, links[-1].hash, links[-1].recorded_at)


def _rows_of(
    session_id: str, links: Sequence[ChainLink], batch: Sequence[Encoded]
) -> tuple[list[EventRow], list[BodyRow], list[SearchEntry], list[str]]:
    """What one transaction of an import writes for `batch` chained as `links`: its rows, its
    bodies packed, and the search index's rows for them (and the digests it unindexes)."""
    rows = [
        event_row(session_id, link, item.payload_json)
        for link, item in zip(links, batch, strict=True)
    ]
    bodies = pack_all(body for item in batch for body in item.bodies)
    texts = {body.digest: body.text for item in batch for body in item.bodies}
    index, unindex = index_rows(links, texts)
    return rows, bodies, index, unindex


def _encoded_batches(
    log: EventLog, transcript: Transcript, session_id: str
) -> Iterator[tuple[list[Encoded], list[datetime | None]]]:
    """The transcript's events, encoded, a batch at a time, with when each happened."""
    batch: list[Encoded] = []
    times: list[datetime | None] = []
    size = 0
    for entry in transcript.each():
        # the reader built the payload (never a SessionStarted) and checked its values:
        # `encode_event` makes the exact size check, without `log.encode`'s walk of every
        # string for a first estimate (a tenth of an import's time went there)
        event = NewEvent(entry.payload, event_id_for(session_id, entry.key))
        item = encode_event(event, log.max_payload_bytes)
        batch.append(item)
        times.append(entry.time)
        size += len(item.payload_json) + sum(body.size for body in item.bodies)
        if len(batch) >= _BATCH_EVENTS or size >= _BATCH_BYTES:
            yield batch, times
            batch, times, size = [], [], 0
    if batch:
        yield batch, times


def _write_more(
    log: EventLog,
    transcript: Transcript,
    session_id: str,
    origin: dict[str, JsonValue],
    head: Head,
) -> ImportedSession:
    """A session the store holds (its head `head`): the entries whose events it lacks (a
    transcript that grew, or an import cut short) appended after its head, a batch at a time,
    at the transcript's times; an entry that changed since is reported and kept as it was,
    unless it only gained parts."""
    if not _imported_from(log.read(session_id, 1, 3), origin):  # a session of the caller's
        raise SessionExists(session_id)

    def stored(event_ids: Sequence[str]) -> dict[str, Payload]:
        found = log.recorder.events_by_id(session_id, event_ids)
        return {event.event_id: event.payload for event in decode_stored(log.recorder, found)}

    written = 0
    changed: list[Skipped] = []
    split = False  # a message kept as two (it gained parts since an import): one more live
    last_key: str | None = None
    for entries in _entry_batches(transcript):
        last_key = entries[-1].key
        events = [NewEvent(e.payload, event_id_for(session_id, e.key)) for e in entries]
        held = stored([event.event_id for event in events])
        fresh: list[NewEvent] = []
        times: list[datetime | None] = []
        for entry, event in zip(entries, events, strict=True):
            before = held.get(event.event_id)
            if before is None:
                fresh.append(event)
                times.append(entry.time)
            elif before != event.payload:
                grown = _continuation(session_id, entry.key, before, event.payload, stored)
                if grown is not None:
                    fresh += grown
                    times += [entry.time] * len(grown)
                    split = True
                else:
                    changed.append(
                        Skipped(None, f"{entry.key} changed since it was imported: kept as it was")
                    )
        if fresh:
            head = _write_after(log, session_id, head, log.encode(fresh), times)
            written += len(fresh)
    # the transcript's live context is the session's unless the session keeps entries
    # otherwise than the transcript has them, or holds more after them (another file of it,
    # longer, was imported before this one)
    same = not changed and not split and _ends_at(log, session_id, head, last_key)
    return ImportedSession(
        session_id,
        transcript.format,
        transcript.source_id,
        created=False,
        events_written=written,
        skipped=(*transcript.skipped, *changed),
        events=head.seq,
        live_messages=transcript.live_messages if same else None,
        live_tokens=transcript.live_tokens if same else None,
    )


def _ends_at(log: EventLog, session_id: str, head: Head, last_key: str | None) -> bool:
    """Whether the session's newest event is the transcript's last entry."""
    if last_key is None:
        return False
    [newest] = log.read(session_id, head.seq, head.seq)
    return newest.event_id == event_id_for(session_id, last_key)


def _entry_batches(transcript: Transcript) -> Iterator[list[Entry]]:
    batch: list[Entry] = []
    for entry in transcript.each():
        batch.append(entry)
        if len(batch) >= _BATCH_EVENTS:
            yield batch
            batch = []
    if batch:
        yield batch


def _continuation(
    session_id: str,
    key: str,
    before: Payload,
    now: Payload,
    stored: Callable[[Sequence[str]], dict[str, Payload]],
) -> list[NewEvent] | None:
    """A message read again with more parts than when it was imported (a response still being
    written then): the parts it gained, as a message right after it in the log (`<id>+<n>`,
    one per import that found it longer; renders merge an assistant's consecutive messages).
    `None` when it changed otherwise (reported, the stored one kept)."""
    if not (isinstance(before, MessageAppended) and isinstance(now, MessageAppended)):
        return None
    had, parts = list(before.message.parts), now.message.parts
    while True:  # the continuations of earlier imports
        later_id = event_id_for(session_id, f"{key}+{len(had)}")
        later = stored([later_id]).get(later_id)
        if not isinstance(later, MessageAppended):
            break
        had += later.message.parts
    if len(parts) == len(had) and tuple(parts) == tuple(had):
        return []
    if len(parts) <= len(had) or tuple(parts[: len(had)]) != tuple(had):
        return None
    message = now.message.model_copy(
        update={"id": f"{now.message.id}+{len(had)}", "parts": parts[len(had) :]}
    )
    extra = MessageAppended(message=message)
    return [NewEvent(extra, event_id_for(session_id, f"{key}+{len(had)}"))]


def _imported_from(events: list[RecordedEvent], origin: dict[str, JsonValue]) -> bool:
    """Whether a stored session was imported from the same source (its first state says)."""
    for event in events[:3]:
        if isinstance(event.payload, StateChanged) and "imported_from" in event.payload.values:
            found = event.payload.values["imported_from"]
            return isinstance(found, dict) and all(
                found.get(key) == origin[key] for key in ("format", "source_id")
            )
    return False


def import_path(
    log: EventLog,
    path: Path,
    format: str | None,
    header: Header,
    *,
    strict: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> ImportResult:
    """Import the file at `path`, or every transcript under the folder `path` (see
    `SessionStore.import_session`). A file of a folder that cannot be read or is in none of
    the formats is skipped and reported (refused when `strict`); a single file is refused."""
    if format is not None and format not in FORMATS and format not in TEXT_FORMATS:
        raise InvalidArgument(
            f"format must be one of {sorted([*FORMATS, *TEXT_FORMATS])}, got {brief(format)}"
        )
    storages = _opencode_storages(path) if format in (None, "opencode") else []
    if path.is_dir():
        files = _transcripts_under(path, format)
        single = False
    elif path.is_file():
        files, single = [path], True
    else:
        raise InvalidArgument(f"no file or folder {path}")
    if not single and header.session_id is not None:
        raise InvalidArgument("session_id names one session: import a file, not a folder")
    work: list[tuple[str, Callable[[], list[ImportedSession]]]] = [
        (
            str(file),
            functools.partial(
                _import_file, log, file, format, header, strict=strict, forced=single
            ),
        )
        for file in files
    ]
    work += [
        (
            f"{storage}/{session}",
            functools.partial(_import_opencode, log, storage, session, header, strict),
        )
        for storage in storages
        for session in opencode_session_ids(storage)
    ]
    sessions: list[ImportedSession] = []
    skipped: list[Skipped] = []
    for done, (name, step) in enumerate(work, start=1):
        try:
            sessions += step()
        except (SessionStoreError, OSError, UnicodeDecodeError, MemoryError) as exc:
            # one file that cannot be read, even one too large for memory, is reported and
            # the others are imported: what it wrote before it failed stays (a batch is
            # whole), and importing it again resumes after it
            if single or strict:
                raise _refusal(exc, Path(name)) from None
            skipped.append(Skipped(getattr(exc, "line", None), _why(exc), name))
        if progress is not None:
            progress(done, len(work), name)
    return ImportResult(tuple(sessions), tuple(skipped))


TEXT_FORMATS = ("sessionstore", "openai")
"""Formats a file holds one session of, imported as text is (`SessionStore.import_session`)."""


def _transcripts_under(folder: Path, format: str | None) -> list[Path]:
    """The files under `folder` that may be transcripts: every format's pattern, less the
    files another file reads as its companions (Claude Code's subagents) and OpenCode's
    storage files (read per session)."""
    forms = [FORMATS[format]] if format in FORMATS else list(FORMATS.values())
    patterns = {pattern for form in forms for pattern in form.patterns}
    found = {file for pattern in patterns for file in folder.rglob(pattern) if file.is_file()}
    for storage in _opencode_storages(folder):
        found = {file for file in found if storage not in file.parents}
    companions = {
        companion
        for form in forms
        if form.companions is not None
        for file in found
        for companion in form.companions(file)
    }
    return sorted(found - companions)


def _opencode_storages(path: Path) -> list[Path]:
    """OpenCode's storage folders (`session/`, `message/` and `part/` side by side) at `path`
    or under it (`~/.local/share/opencode/storage`)."""
    if not path.is_dir():
        return []
    if is_opencode_storage(path):
        return [path]
    return sorted(
        found.parent
        for found in path.rglob("session")
        if found.is_dir() and is_opencode_storage(found.parent)
    )


def _import_opencode(
    log: EventLog, root: Path, session: str, header: Header, strict: bool
) -> list[ImportedSession]:
    files = read_opencode_session(root, session)
    load_encoding(header.encoding)
    transcript = opencode_storage_transcript(files, session, header.encoding)
    return write_transcript(log, transcript, header, strict=strict)


def _import_file(
    log: EventLog, file: Path, format: str | None, header: Header, *, strict: bool, forced: bool
) -> list[ImportedSession]:
    """One file: in `format` when it is `forced` (a single file named by the caller), else in
    the format it is recognised as (under a folder, `format` only narrows the choice)."""
    head, value = file_head(file)
    found = recognise(head, file, value)
    if format in FORMATS and not forced and (found is None or found.name != format):
        raise ImportRefused(f"{file.name} is not a {format} transcript")
    form = FORMATS.get(format or "") if format is not None else found
    if format in TEXT_FORMATS or (form is None and format is None and _is_export(value)):
        # an export (or a message list) is checked whole before anything of it is written
        text = file.read_text(encoding="utf-8")
        return [_import_text(log, text, format or "sessionstore", header, file)]
    if form is None:
        raise ImportRefused(f"{file.name} is in none of the formats sessionstore imports")
    load_encoding(header.encoding)
    companions = form.companions(file) if form.companions is not None else []
    lines = {c.name: FileLines(c) for c in companions}
    written: list[ImportedSession] = []
    transcripts = form.read(FileLines(file), header.encoding, file.name, lines)
    try:
        for transcript in transcripts:
            written += write_transcript(log, transcript, header, strict=strict)
    finally:
        for transcript in transcripts:
            transcript.close()
    return [
        replace(w, skipped=tuple(replace(k, file=k.file or str(file)) for k in w.skipped))
        for w in written
    ]


def _is_export(value: object) -> bool:
    """Whether a file's first JSON object is a sessionstore export's first envelope."""
    return isinstance(value, dict) and {"event_id", "hash", "prev_hash", "seq"} <= value.keys()


def _import_text(
    log: EventLog, text: str, format: str, header: Header, file: Path
) -> ImportedSession:
    """A sessionstore export or an OpenAI message list in a file, as text is imported; an
    export whose session the store holds already (its head hash included) writes nothing."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if format == "sessionstore":
        export = read_export(lines)
        head = log.recorder.head(export.session_id)
        if head is not None and head.hash == export.links[-1].hash:
            return ImportedSession(export.session_id, format, file.name, False, 0)
    session_id = import_text(log, lines, format, header)
    written = log.version(session_id)
    return ImportedSession(session_id, format, file.name, created=True, events_written=written)


def import_text(log: EventLog, lines: list[str], format: str, header: Header) -> str:
    """One session from text, written whole or not at all; returns its id. A sessionstore
    export keeps its own id, title, model and window (its hashes cover them); an OpenAI
    message list or a Claude Code transcript becomes a new session (`header.session_id`, else
    a fresh id); a Codex, pi or OpenCode session the session named by its own id (a malformed
    line refuses it)."""
    if format == "sessionstore":
        export = read_export(lines)
        exported_id = export.session_id
        if header.session_id not in (None, exported_id):
            raise ImportRefused(
                f"an export keeps its session id {exported_id!r}: its hashes cover it"
            )
        if (header.title, header.model, header.context_window) != (None, None, None):
            raise ImportRefused(
                "an export keeps its own title, model and window: its hashes cover them"
            )
        insert_links(log.recorder, exported_id, export.links, export.bodies(), export.texts)
        log.recount(exported_id)
        return exported_id
    encoding = header.encoding
    load_encoding(encoding)
    if format in FORMATS and format != "claude-code":
        read = FORMATS[format].read(TextLines("\n".join(lines)), encoding, "", {})
        try:
            written = [s for t in read for s in write_transcript(log, t, header, strict=True)]
        finally:
            for each in read:
                each.close()
        return written[0].session_id
    times: list[datetime | None] = []
    if format == "openai":
        found_title, found_model = None, None
        payloads = openai_events(_json("\n".join(lines)), encoding)
    else:
        transcript = claude_code_events(lines, encoding)
        found_title, found_model = transcript.title, transcript.model
        payloads, times = transcript.payloads, transcript.times
    started = SessionStarted(
        title=header.title if header.title is not None else found_title or "",
        model=header.model if header.model is not None else found_model or "",
        context_window=header.context_window,
        encoding=encoding,
    )
    new = check_session_id(header.session_id or new_id())
    batch = log.encode([started, *payloads])
    times = times or [None] * len(payloads)  # a transcript that does not say when: now
    links = dated_links(new, batch, [times[0], *times], log.now())
    insert_links(log.recorder, new, links, (b for item in batch for b in item.bodies))
    log.recount(new)
    return new


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"not JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise ImportRefused("the JSON is nested too deeply to read") from None


def _refusal(exc: BaseException, file: Path) -> SessionStoreError:
    if isinstance(exc, SessionStoreError):
        return exc
    return ImportRefused(f"cannot read {file}: {_why(exc)}")


def _why(exc: BaseException) -> str:
    if isinstance(exc, ImportRefused):
        return exc.reason
    if isinstance(exc, SessionStoreError):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text: {exc.reason}"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory importing it (a line, or one entry, larger than memory allows)"
    return str(exc)
