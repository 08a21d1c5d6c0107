"""What every importer of an agent's own files returns: the sessions it read, as our payloads,
each keyed by the source's own ids, with what it had to skip.

A reader is a pure function of the file's text (or the files of one session): no store, no
clock. The store writes a `Transcript` as one session whose id comes from the format and the
agent's own session id, and each entry under an event id that comes from its `key`, so
importing the same file again writes nothing and a transcript that grew adds only its new
entries (`store._import`).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from events import Payload

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


@dataclass(slots=True)
class Transcript:
    """One session as an importer read it. `format` and `source_id` (the agent's own session
    id, or the file's name when it has none) name our session; `children` are the sessions it
    started (subagents), imported as their own sessions linked back by `parent`."""

    format: str
    source_id: str
    title: str | None = None
    model: str | None = None
    entries: list[Entry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    parent: Link | None = None
    children: list[Transcript] = field(default_factory=list)

    def add(self, key: str, payload: Payload, time: datetime | None = None) -> None:
        self.entries.append(Entry(key, payload, time))

    def skip(self, line: int | None, reason: str, file: str = "") -> None:
        self.skipped.append(Skipped(line, reason, file))

    @property
    def payloads(self) -> list[Payload]:
        return [entry.payload for entry in self.entries]


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
