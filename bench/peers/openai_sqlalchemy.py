# mypy: ignore-errors
"""OpenAI Agents SDK `SQLAlchemySession` on a SQLite file (aiosqlite): the same item list as
`SQLiteSession`, through an async SQLAlchemy engine, as its docs show:
`SQLAlchemySession.from_url(session_id, url=..., create_tables=True)`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.mix import Msg, openai_items
from bench.peers import NotSupported, Store, probe
from bench.peers._aio import Loop


class AgentsSQLAlchemySession(Store):
    name = "agents SQLAlchemySession"
    package = "openai-agents, aiosqlite"
    durability = "WAL, synchronous=FULL (SQLite default)"
    notes = "an assistant message with a tool call is 2 items in one add_items call"

    def __init__(self) -> None:
        self.available = probe("agents.extensions.memory.sqlalchemy_session", "aiosqlite")
        self._url = ""
        self._engine: Any = None
        self._sessions: dict[str, Any] = {}
        self._loop: Loop | None = None

    def open(self, path: Path) -> None:
        from sqlalchemy.ext.asyncio import create_async_engine

        self._url = f"sqlite+aiosqlite:///{path}"
        self._loop = Loop()
        self._engine = create_async_engine(self._url)

    def close(self) -> None:
        self._sessions.clear()
        if self._loop is not None:
            self._loop.run(self._engine.dispose())
            self._loop.close()
            self._loop = None

    def _session(self, session_id: str) -> Any:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        if session_id not in self._sessions:
            # One engine per store, shared by its sessions, as an app would hold it.
            self._sessions[session_id] = SQLAlchemySession(
                session_id, engine=self._engine, create_tables=True
            )
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
