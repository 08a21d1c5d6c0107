"""What reading a Codex rollout must remember of its lines, kept off the heap.

The reader needs the item ids already taken as keys, the tool calls made (a result names its
call's tool) and the live messages in context order (a compaction keeps those its replacement
history repeats, a rollback drops the newest user turns). Held in a set and dicts they grew
with the file; here they are in a private temporary database, as Claude Code's line index is
(`_claude_code_index.temporary_database`), so memory holds its page cache and the line being
read.
"""

from __future__ import annotations

from collections.abc import Iterator

from sessionstore.importers._claude_code_index import TakenKeys, temporary_database

_SCHEMA = """
CREATE TABLE taken (key TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE tool (call_id TEXT PRIMARY KEY, name TEXT) WITHOUT ROWID;
CREATE TABLE live (
    position INTEGER PRIMARY KEY, id TEXT UNIQUE, role TEXT, tokens INT, turn INT
);
CREATE INDEX live_turn ON live (turn, position);
CREATE TABLE item (position INT, digest BLOB);
CREATE INDEX item_position ON item (position);
"""


class RolloutIndex:
    """One rollout's index; `close` deletes it."""

    def __init__(self) -> None:
        self._db = temporary_database(_SCHEMA)
        self._keys = TakenKeys(self._db)

    def close(self) -> None:
        self._db.close()

    # keys

    def take(self, key: str) -> None:
        self._keys.take(key)

    def taken(self, key: str) -> bool:
        return key in self._keys

    # tool calls

    def tool(self, call_id: str, name: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO tool VALUES (?, ?)", (call_id, name))

    def tool_name(self, call_id: str) -> str | None:
        found = self._db.execute("SELECT name FROM tool WHERE call_id = ?", (call_id,)).fetchone()
        return None if found is None else str(found[0])

    # the live messages, in context order

    def live(self, message_id: str, role: str, tokens: int, items: list[bytes], turn: bool) -> None:
        """A message enters the live context (one live already keeps its place)."""
        (position,) = self._db.execute(
            "INSERT INTO live (id, role, tokens, turn) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET role = excluded.role, tokens = excluded.tokens, "
            "turn = excluded.turn RETURNING position",
            (message_id, role, tokens, int(turn)),
        ).fetchone()
        self._db.execute("DELETE FROM item WHERE position = ?", (position,))
        self._db.executemany(
            "INSERT INTO item VALUES (?, ?)", ((position, digest) for digest in items)
        )

    def each_live(self) -> Iterator[tuple[str, str, list[bytes]]]:
        """(id, role, items) of each live message, in order (read as it is iterated:
        change nothing of the live messages meanwhile)."""
        rows = self._db.execute(
            "SELECT live.position, id, role, digest FROM live LEFT JOIN item "
            "ON item.position = live.position ORDER BY live.position, item.rowid"
        )
        current: tuple[int, str, str, list[bytes]] | None = None
        for position, message_id, role, digest in rows:
            if current is None or current[0] != position:
                if current is not None:
                    yield current[1], current[2], current[3]
                current = (int(position), str(message_id), str(role), [])
            if digest is not None:
                current[3].append(bytes(digest))
        if current is not None:
            yield current[1], current[2], current[3]

    def turns_newest_first(self) -> Iterator[tuple[str, int]]:
        """(id, tokens) of the live messages that start a user turn, newest first."""
        rows = self._db.execute(
            "SELECT id, tokens FROM live WHERE turn = 1 ORDER BY position DESC"
        ).fetchall()
        for message_id, tokens in rows:
            yield str(message_id), int(tokens)

    def newest_turns(self, turns: int) -> tuple[str | None, list[str]] | None:
        """The live messages from the start of the `turns`th newest user turn (or the oldest
        one, if fewer) on, and the live message before them (`None`: none is): `None` when no
        live message starts a turn."""
        found = self._db.execute(
            "SELECT MIN(position) FROM (SELECT position FROM live WHERE turn = 1 "
            "ORDER BY position DESC LIMIT ?)",
            (turns,),
        ).fetchone()
        if found is None or found[0] is None:
            return None
        first = int(found[0])
        before = self._db.execute(
            "SELECT id FROM live WHERE position < ? ORDER BY position DESC LIMIT 1", (first,)
        ).fetchone()
        dropped = self._db.execute(
            "SELECT id FROM live WHERE position >= ? ORDER BY position", (first,)
        ).fetchall()
        return (None if before is None else str(before[0])), [str(i) for (i,) in dropped]

    def leave(self, message_ids: list[str]) -> None:
        for message_id in message_ids:
            found = self._db.execute(
                "DELETE FROM live WHERE id = ? RETURNING position", (message_id,)
            ).fetchone()
            if found is not None:
                self._db.execute("DELETE FROM item WHERE position = ?", (found[0],))

    def live_figures(self) -> tuple[int, int]:
        """How many messages are live, and their tokens."""
        count, tokens = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(tokens), 0) FROM live"
        ).fetchone()
        return int(count), int(tokens)
