"""Full-text search across sessions: the index rows each write carries, and the hits a search
returns, each with an excerpt of the text it found.

The index is a projection of the log kept in its transactions: every write (an append, an
import, a restored export) carries the index rows of its events, and a redaction's write
deletes the rows of the bodies it deletes (`Recorder.write`). What is indexed, and how text
becomes words, is `sessionstore.events._search`, shared with the revision that indexed the
events stored before it.

A hit names an event once, however many of its texts hold the query; its excerpt is read
back from the event as the store holds it now, so it never shows what a redaction deleted.
A fork's events are its own: what it inherits from its parent is found once, in the parent.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sessionstore.events import (
    ChainLink,
    Phrases,
    SearchEntry,
    body_digests,
    chunks,
    excerpt,
    holds_all,
    marked,
    search_entries,
    searchable_texts,
)
from sessionstore.log._bodies import bodies_of, unpack
from sessionstore.storage import Recorder, SearchFilter, SearchRow


@dataclass(frozen=True, slots=True)
class SearchHit:
    """An event a search found: where it is, what it is, and an excerpt of the text that
    holds the query, newest first in a search's list.

    `excerpt` is about 200 characters of that text, whitespace squeezed, `…` where it is cut;
    `matches` are the (start, end) offsets in it of each place the query's words occur;
    `marked` is the excerpt with each of those between `[` and `]`."""

    session_id: str
    seq: int
    recorded_at: datetime
    event_type: str
    """`MessageAppended`, or `ContextCompacted` for a compaction's summary."""
    role: str | None
    kind: str
    """`text`, `tool_call`, `tool_result` or `summary`."""
    part_id: str | None
    """The part that holds the text (what `Session.redact` takes)."""
    title: str
    """The session's title, as it is now."""
    excerpt: str
    matches: tuple[tuple[int, int], ...]

    @property
    def marked(self) -> str:
        return marked(self.excerpt, self.matches, "[", "]")


def index_rows(
    links: Sequence[ChainLink], texts: Mapping[str, str]
) -> tuple[list[SearchEntry], list[str]]:
    """The index rows of events about to be written (`links`, their payloads as stored, the
    bodies' `texts` by digest), and the digests whose rows their redactions delete."""
    return search_entries(
        ((link.seq, link.recorded_at, link.type, link.payload) for link in links), texts
    )


def index_problems(
    recorder: Recorder,
    session_id: str,
    searched: Sequence[tuple[int, datetime, str, Mapping[str, Any]]],
    texts: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """What is wrong with the session's index rows: they must be exactly those its events
    (`searched`: (seq, recorded_at, type, payload as stored) of its searchable events and
    redactions, in seq order) give, read from the bodies the session holds now: `texts`,
    those bodies already read by the caller (every one `searched` references that is stored,
    unpacked), or read here when it is `None`."""
    if texts is None:
        wanted = sorted({d for _, _, kind, data in searched for d in body_digests(kind, data)})
        try:
            texts = {row.digest: unpack(row) for row in recorder.bodies(session_id, wanted)}
        except (ValueError, zlib.error):  # a damaged body: `body_problems` names it
            return
    entries, _ = search_entries(searched, texts)
    expected = [(e.seq, e.part, e.chunk, e.digest) for e in entries]
    found = recorder.indexed(session_id)
    if found == expected:
        return
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    where = ", ".join(
        f"{len(rows):,} {what} (the first at event {rows[0][0]})"
        for rows, what in ((missing, "missing"), (extra, "that its events do not give"))
        if rows
    )
    yield f"its search index rows are not those its events give: {where}"


def search(recorder: Recorder, where: SearchFilter) -> list[SearchHit]:
    """The events `where` finds, newest first, each with its excerpt."""
    return [_hit(recorder, row, where.phrases) for row in recorder.search(where)]


def _hit(recorder: Recorder, row: SearchRow, phrases: Phrases) -> SearchHit:
    """The hit of one event found: the first of its texts (and chunks) that holds the query
    gives the excerpt; the first text, when none does any longer."""
    stored = next(recorder.events_at(row.session_id, [row.seq]), None)
    data = json.loads(stored.payload) if stored is not None else {}
    texts = bodies_of(recorder, row.session_id, set(body_digests(row.event_type, data)))
    found = searchable_texts(row.event_type, data, texts)
    chosen, shown = (found[0], found[0].text) if found else (None, "")
    for text in found:
        held = next((c for _, c in chunks(text.text) if holds_all(c, phrases)), None)
        if held is not None:
            chosen, shown = text, held
            break
    cut, matches = excerpt(shown, phrases)
    return SearchHit(
        session_id=row.session_id,
        seq=row.seq,
        recorded_at=row.recorded_at,
        event_type=row.event_type,
        role=chosen.role if chosen is not None else None,
        kind=chosen.kind if chosen is not None else "",
        part_id=chosen.part_id if chosen is not None else None,
        title=row.title,
        excerpt=cut,
        matches=matches,
    )
