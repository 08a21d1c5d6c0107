# mypy: ignore-errors
"""OpenAI Agents SDK `SQLiteSession`: one row of Responses-API JSON per item.

Used as its docs show: `SQLiteSession(session_id, db_path)`, `await add_items([...])` after
each model or tool step, `await get_items()` to resume. It keeps only the current item list
(`pop_item` and compaction delete rows), so there is no replay to a point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.mix import Msg, openai_items
from bench.peers import NotSupported, Store, probe
from bench.peers._aio import Loop


class AgentsSQLiteSession(Store):
    name = "agents SQLiteSession"
    package = "openai-agents"
    durability = "WAL, synchronous=FULL (SQLite default)"
    notes = "an assistant message with a tool call is 2 items in one add_items call"

    def __init__(self) -> None:
        self.available = probe("agents")
        self._path: Path | None = None
        self._sessions: dict[str, Any] = {}
        self._loop: Loop | None = None

    def open(self, path: Path) -> None:
        self._path = path
        self._loop = Loop()

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def _session(self, session_id: str) -> Any:
        from agents import SQLiteSession

        if session_id not in self._sessions:
            self._sessions[session_id] = SQLiteSession(session_id, str(self._path))
        return self._sessions[session_id]

    def new_session(self, session_id: str) -> Any:
        return self._session(session_id)

    def append(self, handle: Any, msg: Msg) -> None:
        self._loop.run(handle.add_items(openai_items(msg)))

    def load(self, handle: Any) -> int:
        return len(self._loop.run(handle.get_items()))

    def resume(self, session_id: str) -> int:
        return self.load(self._session(session_id))

    def replay(self, session_id: str, index: int) -> int:
        raise NotSupported("keeps only the current item list (pop_item/compaction delete rows)")
