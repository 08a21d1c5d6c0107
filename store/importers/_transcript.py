"""What every importer of an agent's own files returns: the sessions it read, as our payloads,
each keyed by the source's own ids, with what it had to skip.

A reader is a pure function of the file's lines (or the files of one session): no store, no
clock; it reads them one at a time and can spool its entries to a temporary file (`Spool`),
so a file longer than memory can be imported. The store writes a `Transcript` as one session
whose id comes from the format and the agent's own session id, and each entry under an event
id that comes from its `key`, so
importing the same file again writes nothing and a transcript that grew adds only its new
entries (`sessionstore.importers._import`).
"""

from __future__ import annotations

import hashlib
import pickle
import re
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from sessionstore.events import Payload, parse_payload

_NAMESPACE = uuid.UUID("6f0b8a4e-5f3c-4b7e-9a51-2f1c1e0d9c3b")
_READABLE_ID = re.compile(r"[A-Za-z0-9._:/-]{1,120}")


@dataclass(frozen=True, slots=True)
class Skipped:
    """A line (or file) an importer could not read, and why: reported, never silently lost."""

    line: int | None
    reason: str
    file: str = ""

    def __str__(self) -> str:
        where = [str(w) for w in (self.file, self.line) if w not in ("", None)]
        return ":".join([*where, f" {self.reason}"]) if where else self.reason


@dataclass(frozen=True, slots=True)
class Entry:
    """One payload of a transcript. `key` is the source's own id for what it records (an entry's
    uuid, an item's id, a line number where the source has no ids), unique in the transcript and
    stable when the file grows: it makes a re-import idempotent."""

    key: str
    payload: Payload
    time: datetime | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """Where a subagent's session came from: its parent's source id and the tool call that
    started it (when the source says)."""

    parent_source_id: str
    call_id: str | None = None


class Spool:
    """Entries kept in a temporary file as a reader adds them, read back in order: a file's
    transcript is written to the store only once it is read to its end (its first event, the
    `SessionStarted`, takes a title and model the file may give on its last line), and its
    entries, parsed and counted, take many times the file's size in memory."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the spool
        self.count = 0
        self.first_time: datetime | None = None
        self._read = False  # whether the file's position is somewhere in it, not at its end

    def append(self, entry: Entry) -> int:
        """Keep `entry`; returns where it is, for `entry_at`."""
        if self.first_time is None:
            self.first_time = entry.time
        if self._read:
            self._file.seek(0, 2)
            self._read = False
        offset = self._file.tell()
        # the payload as plain values, not as models: pickling a model tree goes through
        # pydantic's __getstate__/__setstate__ for each part, three times the cost of
        # validating the values back into the same models (an import writes every entry once)
        kept = (entry.key, entry.payload.model_dump(round_trip=True), entry.time)
        pickle.dump(kept, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self.count += 1
        return offset

    def entry_at(self, offset: int) -> Entry:
        self._read = True
        self._file.seek(offset)
        return self._load()

    def __iter__(self) -> Iterator[Entry]:
        self._read = True
        self._file.seek(0)
        for _ in range(self.count):
            yield self._load()

    def _load(self) -> Entry:
        key, payload, time = pickle.load(self._file)  # this process wrote it
        return Entry(key, parse_payload(payload), time)

    def close(self) -> None:
        self._file.close()


@dataclass(slots=True)
class Transcript:
    """One session as an importer read it. `format` and `source_id` (the agent's own session
    id, or the file's name when it has none) name our session; `children` are the sessions it
    started (subagents), imported as their own sessions linked back by `parent`.

    Its entries are in `entries`, or, when it was read with a `spool` (a file import), in the
    spool: `each()` and `size` read either."""

    format: str
    source_id: str
    title: str | None = None
    model: str | None = None
    entries: list[Entry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    parent: Link | None = None
    children: list[Transcript] = field(default_factory=list)
    spool: Spool | None = None
    live_messages: int | None = None
    """How many messages are live after the last entry, and their tokens, when the reader
    says (the figures an import reports, known without folding the session again)."""
    live_tokens: int | None = None

    def add(self, key: str, payload: Payload, time: datetime | None = None) -> int:
        """Add an entry; returns where it is, for `entry_at`."""
        if self.spool is not None:
            return self.spool.append(Entry(key, payload, time))
        self.entries.append(Entry(key, payload, time))
        return len(self.entries) - 1

    def entry_at(self, position: int) -> Entry:
        """The entry `add` put at `position`: a reader that needs an earlier entry again (pi's
        branch switched back to) keeps where it is, not the entry."""
        return self.spool.entry_at(position) if self.spool is not None else self.entries[position]

    def each(self) -> Iterator[Entry]:
        """The entries in order, from memory or the spool."""
        return iter(self.spool) if self.spool is not None else iter(self.entries)

    @property
    def first_time(self) -> datetime | None:
        """The first time an entry gives (entries without one happened then too)."""
        if self.spool is not None:
            return self.spool.first_time
        return next((entry.time for entry in self.entries if entry.time is not None), None)

    @property
    def size(self) -> int:
        return self.spool.count if self.spool is not None else len(self.entries)

    def close(self) -> None:
        """Free the spools of this transcript and its children."""
        if self.spool is not None:
            self.spool.close()
        for child in self.children:
            child.close()

    def skip(self, line: int | None, reason: str, file: str = "") -> None:
        self.skipped.append(Skipped(line, reason, file))

    @property
    def payloads(self) -> list[Payload]:
        return [entry.payload for entry in self.each()]


def session_id_for(format: str, source_id: str) -> str:
    """Our session id for an agent's session: readable when the source id allows it, else a
    digest (the same source always gives the same id)."""
    candidate = f"{format}-{source_id}"
    if _READABLE_ID.fullmatch(candidate):
        return candidate
    return f"{format}-{hashlib.sha256(source_id.encode('utf-8')).hexdigest()[:32]}"


def event_id_for(session_id: str, key: str) -> str:
    """The event id of a transcript's entry: a re-import names the same event."""
    return str(uuid.uuid5(_NAMESPACE, f"{session_id}\n{key}"))
