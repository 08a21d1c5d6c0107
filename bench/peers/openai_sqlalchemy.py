# mypy: ignore-errors
"""OpenAI Agents SDK `SQLAlchemySession` on a SQLite file (aiosqlite): the same item list as
`SQLiteSession`, through an async SQLAlchemy engine, as its docs show:
`SQLAlchemySession.from_url(session_id, url=..., create_tables=True)`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.peers import probe
from bench.peers._aio import Loop
from bench.peers.openai_sqlite import AgentsSQLiteSession


class AgentsSQLAlchemySession(AgentsSQLiteSession):
    """The same item-list adapter as `AgentsSQLiteSession`; only how sessions are made differs."""

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

    def close(self) -> None:  # the engine, not each session, holds the connections
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
