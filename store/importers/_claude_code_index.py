"""What reading a Claude Code transcript must remember of its lines, kept off the heap.

Reading a transcript in file order needs to know, for each line, things said on other
lines: the later lines of the same response, the tree of entries (a rewind), the prompts
that were typed (a queued prompt), the tool calls made, the entries already read and the
live messages (a compaction, a rewind). Held in dicts that is some 800 bytes a line, so a
file's import grew with the file (a million lines, a gigabyte); here it is a private
temporary SQLite database (`sqlite3.connect("")`: in memory up to its page cache, then in a
file of the temporary folder, deleted when closed), so memory holds the cache and the line
being read, whatever the length of the file.

One index serves every reader of a file (the main conversation, each sidechain), each
under its own number. Rows the first pass adds are written in batches; the second pass
reads and writes a row at a time (a few microseconds each, against the milliseconds that
counting a line's tokens takes).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

_SCHEMA = """
CREATE TABLE entry (reader INT, line INT, uuid TEXT, parent TEXT, assistant INT);
CREATE INDEX entry_uuid ON entry (reader, uuid, line);
CREATE INDEX entry_parent ON entry (reader, parent, line);
CREATE TABLE response (reader INT, api_id TEXT, line INT, offset INT);
CREATE INDEX response_api_id ON response (reader, api_id, line);
CREATE TABLE said (reader INT, digest BLOB, line INT);
CREATE INDEX said_digest ON said (reader, digest, line);
CREATE TABLE seen (reader INT, uuid TEXT, PRIMARY KEY (reader, uuid)) WITHOUT ROWID;
CREATE TABLE tool (reader INT, call_id TEXT, name TEXT, PRIMARY KEY (reader, call_id))
    WITHOUT ROWID;
CREATE TABLE live (
    position INTEGER PRIMARY KEY, reader INT, id TEXT, uuid TEXT, tokens INT,
    UNIQUE (reader, id)
);
CREATE INDEX live_uuid ON live (reader, uuid, position);
"""

_BATCH = 10_000
"""Rows held before they are written: a batch is written in one statement."""


def temporary_database(schema: str) -> sqlite3.Connection:
    """A private temporary database with these tables: in memory up to its page cache, then
    in a file of the temporary folder, deleted when it is closed. Other readers keep their
    indexes in one too (`_codex_index`)."""
    db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.executescript(schema)
    db.execute("BEGIN")  # one transaction, never committed: the file is thrown away
    return db


class TakenKeys:
    """The keys an import has taken, in the `taken (key TEXT PRIMARY KEY)` table of a
    `temporary_database`: held a batch at a time, then written in one statement, so a file of
    any length costs memory for one batch."""

    BATCH = 1_000
    """Keys held before they are written (a thousand: an item id can be long)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._taking: set[str] = set()

    def take(self, key: str) -> None:
        self._taking.add(key)
        if len(self._taking) >= self.BATCH:
            self._db.executemany(
                "INSERT OR IGNORE INTO taken VALUES (?)", ((k,) for k in self._taking)
            )
            self._taking.clear()

    def __contains__(self, key: str) -> bool:
        if key in self._taking:
            return True
        found = self._db.execute("SELECT 1 FROM taken WHERE key = ?", (key,)).fetchone()
        return found is not None


class LineIndex:
    """A file's index, shared by its readers; `close` deletes it."""

    def __init__(self) -> None:
        self.db = temporary_database(_SCHEMA)
        self._readers = 0
        self._pending: dict[str, list[tuple[object, ...]]] = {
            "entry": [],
            "response": [],
            "said": [],
        }

    def reader(self) -> ReaderIndex:
        self._readers += 1
        return ReaderIndex(self, self._readers)

    def add(self, table: str, row: tuple[object, ...]) -> None:
        rows = self._pending[table]
        rows.append(row)
        if len(rows) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the rows the first pass added: the second pass reads them."""
        for table, rows in self._pending.items():
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                self.db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
                rows.clear()

    def close(self) -> None:
        self.db.close()


class ReaderIndex:
    """One reader's part of the index: what `_Reader` kept in its dicts and sets."""

    def __init__(self, index: LineIndex, number: int) -> None:
        self._index = index
        self._db = index.db
        self._n = number
        self._merged: set[int] = set()  # lines ahead of the reader: forgotten once passed
        self._seeing: set[str] = set()  # uuids seen, not yet written (a batch at a time)

    # the first pass

    def entry(self, line: int, uuid: str, parent: str | None, assistant: bool) -> None:
        self._index.add("entry", (self._n, line, uuid, parent, int(assistant)))

    def response_line(self, api_id: str, line: int, offset: int) -> None:
        self._index.add("response", (self._n, api_id, line, offset))

    def prompt(self, digest: bytes, line: int) -> None:
        self._index.add("said", (self._n, digest, line))

    # the second pass: the tree, the responses, the prompts

    def parent(self, uuid: str) -> str | None:
        """The parent the last line with this uuid names (`None`: no line names one)."""
        found = self._db.execute(
            "SELECT parent FROM entry WHERE reader = ? AND uuid = ? AND parent IS NOT NULL "
            "ORDER BY line DESC LIMIT 1",
            (self._n, uuid),
        ).fetchone()
        return None if found is None else str(found[0])

    def children(self, parent: str, before: int) -> list[str]:
        """The uuids of the entries naming `parent`, on lines before `before`."""
        rows = self._db.execute(
            "SELECT uuid FROM entry WHERE reader = ? AND parent = ? AND line < ? ORDER BY line",
            (self._n, parent, before),
        )
        return [uuid for (uuid,) in rows]

    def answered_line(self, uuid: str) -> int | None:
        """The last assistant line with this uuid."""
        found = self._db.execute(
            "SELECT MAX(line) FROM entry WHERE reader = ? AND uuid = ? AND assistant = 1",
            (self._n, uuid),
        ).fetchone()
        return None if found is None or found[0] is None else int(found[0])

    def response_lines(self, api_id: str, after: int) -> list[tuple[int, int]]:
        """(line, offset) of the response's lines after `after`."""
        rows = self._db.execute(
            "SELECT line, offset FROM response WHERE reader = ? AND api_id = ? AND line > ? "
            "ORDER BY line",
            (self._n, api_id, after),
        )
        return [(int(line), int(offset)) for line, offset in rows]

    def said_after(self, digest: bytes, line: int) -> bool:
        """Whether a prompt with this text is on a line after `line`."""
        found = self._db.execute(
            "SELECT 1 FROM said WHERE reader = ? AND digest = ? AND line > ? LIMIT 1",
            (self._n, digest, line),
        ).fetchone()
        return found is not None

    # the second pass: what was read

    def merge(self, line: int) -> None:
        """A later line of a response, read as part of its first line's message."""
        self._merged.add(line)

    def is_merged(self, line: int) -> bool:
        return line in self._merged

    def passed(self, line: int) -> None:
        """The reader is past `line`: no question about it comes again."""
        self._merged.discard(line)

    def see(self, uuid: str) -> None:
        self._seeing.add(uuid)
        if len(self._seeing) >= _BATCH:
            self._db.executemany(
                "INSERT OR IGNORE INTO seen VALUES (?, ?)", ((self._n, u) for u in self._seeing)
            )
            self._seeing.clear()

    def was_seen(self, uuid: str) -> bool:
        if uuid in self._seeing:
            return True
        found = self._db.execute(
            "SELECT 1 FROM seen WHERE reader = ? AND uuid = ?", (self._n, uuid)
        ).fetchone()
        return found is not None

    def tool(self, call_id: str, name: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO tool VALUES (?, ?, ?)", (self._n, call_id, name))

    def tool_name(self, call_id: str) -> str | None:
        found = self._db.execute(
            "SELECT name FROM tool WHERE reader = ? AND call_id = ?", (self._n, call_id)
        ).fetchone()
        return None if found is None else str(found[0])

    # the live messages, in context order: id, the uuid of the entry read as it, tokens

    def live(self, message_id: str, uuid: str, tokens: int) -> None:
        """A message enters the live context (one live already keeps its place)."""
        self._db.execute(
            "INSERT INTO live (reader, id, uuid, tokens) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (reader, id) DO UPDATE SET uuid = excluded.uuid, tokens = excluded.tokens",
            (self._n, message_id, uuid, tokens),
        )

    def each_live(self) -> Iterator[tuple[int, str, str, int]]:
        """(position, id, uuid, tokens) of each live message, in order (read as it is
        iterated: change nothing of the live messages meanwhile)."""
        rows = self._db.execute(
            "SELECT position, id, uuid, tokens FROM live WHERE reader = ? ORDER BY position",
            (self._n,),
        )
        for position, message_id, uuid, tokens in rows:
            yield int(position), str(message_id), str(uuid), int(tokens)

    def live_of(self, uuids: Iterable[str]) -> list[str]:
        """The live messages read from these entries, in order."""
        found: list[tuple[int, str]] = []
        for uuid in set(uuids):
            found += self._db.execute(
                "SELECT position, id FROM live WHERE reader = ? AND uuid = ?", (self._n, uuid)
            ).fetchall()
        return [message_id for _, message_id in sorted(found)]

    def first_live_of(self, uuid: str) -> str | None:
        """The first live message read from this entry."""
        found = self._db.execute(
            "SELECT id FROM live WHERE reader = ? AND uuid = ? ORDER BY position LIMIT 1",
            (self._n, uuid),
        ).fetchone()
        return None if found is None else str(found[0])

    def last_live_of(self, uuid: str) -> tuple[int, str] | None:
        """(position, id) of the last live message read from this entry."""
        found = self._db.execute(
            "SELECT position, id FROM live WHERE reader = ? AND uuid = ? "
            "ORDER BY position DESC LIMIT 1",
            (self._n, uuid),
        ).fetchone()
        return None if found is None else (int(found[0]), str(found[1]))

    def clear_live(self) -> None:
        self._db.execute("DELETE FROM live WHERE reader = ?", (self._n,))

    def leave(self, message_ids: Iterable[str]) -> None:
        self._db.executemany(
            "DELETE FROM live WHERE reader = ? AND id = ?", ((self._n, m) for m in message_ids)
        )

    def live_figures(self) -> tuple[int, int]:
        """How many messages are live, and their tokens."""
        count, tokens = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(tokens), 0) FROM live WHERE reader = ?", (self._n,)
        ).fetchone()
        return int(count), int(tokens)
