"""What reading a pi session must remember of its entries, kept off the heap.

The reader needs the session tree (each entry's parent, where its message is, what a
compaction keeps), the keys taken, the path from the root to the last entry read and the live
messages in context order. Held in dicts and lists they grew with the file (some half a
kilobyte an entry); here they are in a private temporary database, as Claude Code's line index
is (`_claude_code_index.temporary_database`), so memory holds its page cache and the line
being read. pi's `buildSessionContext` for the path is a query over the node and path tables,
written to the `desired` table for the reader to compare with the live messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sessionstore.importers._claude_code_index import TakenKeys, temporary_database

_SCHEMA = """
CREATE TABLE taken (key TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE node (
    key TEXT PRIMARY KEY, parent TEXT, idx INT, message INT, compaction INT,
    first_kept TEXT, summarizer TEXT, reentries INT
) WITHOUT ROWID;
CREATE INDEX node_idx ON node (idx);
CREATE TABLE path (depth INTEGER PRIMARY KEY, key TEXT UNIQUE);
CREATE TABLE chain (n INTEGER PRIMARY KEY, key TEXT, parent TEXT);
CREATE TABLE desired (position INTEGER PRIMARY KEY, key TEXT);
CREATE INDEX desired_key ON desired (key);
CREATE TABLE live (position INTEGER PRIMARY KEY, id TEXT UNIQUE, node TEXT, tokens INT);
"""

_BATCH = 1_000
"""Keys held before they are written, in one statement."""


@dataclass(slots=True)
class Node:
    """An entry of the session tree and what the model is sent for it (`message`; a
    compaction's is its summary)."""

    key: str
    parent: str | None
    summarizer: str
    message: int | None = None  # where the transcript holds the entry that holds it
    compaction: bool = False
    first_kept: str | None = None
    reentries: int = 0


class SessionIndex:
    """One session file's index; `close` deletes it."""

    def __init__(self) -> None:
        self._db = temporary_database(_SCHEMA)
        self._keys = TakenKeys(self._db)
        self.depth = 0  # the path's length
        self.last: str | None = None  # the path's last entry

    def close(self) -> None:
        self._db.close()

    # keys

    def take(self, key: str) -> None:
        self._keys.take(key)

    def taken(self, key: str) -> bool:
        return key in self._keys

    # the tree

    def add(self, node: Node, index: int) -> None:
        """A new entry, at the end of the path (its parent is the path's last entry)."""
        self._db.execute(
            "INSERT INTO node VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                node.key,
                node.parent,
                index,
                node.message,
                int(node.compaction),
                node.first_kept,
                node.summarizer,
                node.reentries,
            ),
        )
        self._db.execute("INSERT INTO path VALUES (?, ?)", (self.depth, node.key))
        self.depth += 1
        self.last = node.key

    def save(self, node: Node) -> None:
        self._db.execute(
            "UPDATE node SET message = ?, compaction = ?, first_kept = ?, summarizer = ?, "
            "reentries = ? WHERE key = ?",
            (
                node.message,
                int(node.compaction),
                node.first_kept,
                node.summarizer,
                node.reentries,
                node.key,
            ),
        )

    def node(self, key: str) -> Node:
        row = self._db.execute(
            "SELECT parent, message, compaction, first_kept, summarizer, reentries "
            "FROM node WHERE key = ?",
            (key,),
        ).fetchone()
        parent, message, compaction, first_kept, summarizer, reentries = row
        return Node(key, parent, summarizer, message, bool(compaction), first_kept, reentries)

    def known(self, key: str) -> bool:
        return self._db.execute("SELECT 1 FROM node WHERE key = ?", (key,)).fetchone() is not None

    def any_node(self) -> bool:
        return self._db.execute("SELECT 1 FROM node LIMIT 1").fetchone() is not None

    def key_at_index(self, index: int) -> str | None:
        found = self._db.execute("SELECT key FROM node WHERE idx = ?", (index,)).fetchone()
        return None if found is None else str(found[0])

    def branch(self, parent: str | None) -> None:
        """Make the path the one from the root to `parent`: what follows the last entry it
        shares with the path leaves it, the entries from there down to `parent` join it."""
        db = self._db
        base = -1
        if parent is not None:
            db.execute(
                "INSERT INTO chain (n, key, parent) "
                "WITH RECURSIVE up(n, key, parent) AS ("
                " SELECT 0, key, parent FROM node WHERE key = ? "
                "  AND key NOT IN (SELECT key FROM path)"
                " UNION ALL SELECT up.n + 1, node.key, node.parent FROM up "
                "  JOIN node ON node.key = up.parent WHERE node.key NOT IN (SELECT key FROM path)"
                ") SELECT n, key, parent FROM up",
                (parent,),
            )
            top = db.execute("SELECT n, parent FROM chain ORDER BY n DESC LIMIT 1").fetchone()
            count, joint = (0, parent) if top is None else (int(top[0]) + 1, top[1])
            if joint is not None:
                (base,) = db.execute("SELECT depth FROM path WHERE key = ?", (joint,)).fetchone()
            db.execute("DELETE FROM path WHERE depth > ?", (base,))
            db.execute(
                "INSERT INTO path SELECT ? - n, key FROM chain ORDER BY n DESC", (base + count,)
            )
            db.execute("DELETE FROM chain")
            self.depth = base + count + 1
        else:
            db.execute("DELETE FROM path")
            self.depth = 0
        self.last = parent

    def desire(self) -> None:
        """pi's `buildSessionContext` for the path, into `desired`: the entries whose messages
        it sends, in order (a compaction stands for its summary)."""
        db = self._db
        db.execute("DELETE FROM desired")
        joined = "INSERT INTO desired (key) SELECT p.key FROM path p JOIN node n ON n.key = p.key "
        last = db.execute(
            "SELECT p.depth, n.first_kept FROM path p JOIN node n ON n.key = p.key "
            "WHERE n.compaction ORDER BY p.depth DESC LIMIT 1"
        ).fetchone()
        if last is None:
            db.execute(joined + "WHERE n.message IS NOT NULL ORDER BY p.depth")
            return
        depth, first_kept = last
        found = db.execute("SELECT depth FROM path WHERE key = ?", (first_kept,)).fetchone()
        start = found[0] if found is not None and found[0] < depth else depth
        db.execute("INSERT INTO desired (key) SELECT key FROM path WHERE depth = ?", (depth,))
        db.execute(
            joined + "WHERE p.depth >= ? AND p.depth < ? AND n.message AND NOT n.compaction "
            "ORDER BY p.depth",
            (start, depth),
        )
        db.execute(joined + "WHERE p.depth > ? AND n.message ORDER BY p.depth", (depth,))

    def desired_from(self, after: int) -> Iterator[str]:
        """The desired entries after the first `after`, read a batch at a time (the live
        messages may change meanwhile)."""
        while True:
            rows = self._db.execute(
                "SELECT position, key FROM desired WHERE position > ? ORDER BY position LIMIT ?",
                (after, _BATCH),
            ).fetchall()
            if not rows:
                return
            for position, key in rows:
                after = position
                yield str(key)

    # the live messages, in context order

    def shared(self) -> tuple[int, str | None, int | None]:
        """How many live messages stand, from the first, for the desired entries in order; the
        last of them (`None`: none); the position of the first live message after them
        (`None`: none is)."""
        live = self._db.execute("SELECT position, id, node FROM live ORDER BY position")
        desired = self._db.execute("SELECT key FROM desired ORDER BY position")
        common, before, cut = 0, None, None
        try:
            for position, message_id, node in live:
                wanted = desired.fetchone()
                if wanted is None or wanted[0] != node:
                    cut = int(position)
                    break
                common, before = common + 1, str(message_id)
        finally:
            live.close()
            desired.close()
        return common, before, cut

    def live_from(self, position: int) -> list[str]:
        rows = self._db.execute(
            "SELECT id FROM live WHERE position >= ? ORDER BY position", (position,)
        ).fetchall()
        return [str(i) for (i,) in rows]

    def leave_from(self, position: int) -> None:
        self._db.execute("DELETE FROM live WHERE position >= ?", (position,))

    def not_desired(self) -> tuple[list[str], int]:
        """The live messages whose entries are not desired, in order, and their tokens."""
        rows = self._db.execute(
            "SELECT id, tokens FROM live WHERE node NOT IN (SELECT key FROM desired) "
            "ORDER BY position"
        ).fetchall()
        return [str(i) for i, _ in rows], sum(int(t) for _, t in rows)

    def first_desired(self) -> tuple[str, int] | None:
        """The first live message whose entry is desired, and its position."""
        found = self._db.execute(
            "SELECT id, position FROM live WHERE node IN (SELECT key FROM desired) "
            "ORDER BY position LIMIT 1"
        ).fetchone()
        return None if found is None else (str(found[0]), int(found[1]))

    def leave(self, message_ids: list[str]) -> None:
        self._db.executemany("DELETE FROM live WHERE id = ?", ((i,) for i in message_ids))

    def live(self, message_id: str, node: str, tokens: int) -> None:
        """A message joins the end of the live context (one live already keeps its place)."""
        self._db.execute(
            "INSERT INTO live (id, node, tokens) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE "
            "SET node = excluded.node, tokens = excluded.tokens",
            (message_id, node, tokens),
        )

    def live_at(self, position: int, message_id: str, node: str, tokens: int) -> None:
        """A new message joins the live context at `position`, the live messages from there on
        one place later."""
        db = self._db
        db.execute("UPDATE live SET position = -(position + 1) WHERE position >= ?", (position,))
        db.execute("UPDATE live SET position = -position WHERE position < 0")
        db.execute(
            "INSERT INTO live (position, id, node, tokens) VALUES (?, ?, ?, ?)",
            (position, message_id, node, tokens),
        )

    def live_figures(self) -> tuple[int, int]:
        """How many messages are live, and their tokens."""
        count, tokens = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(tokens), 0) FROM live"
        ).fetchone()
        return int(count), int(tokens)
