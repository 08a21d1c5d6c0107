# mypy: ignore-errors
"""Google ADK `DatabaseSessionService` on a SQLite file (aiosqlite), as its docs show:
`DatabaseSessionService(db_url=...)`, `create_session`, then `append_event(session, Event)`
for every model turn and tool response, and `get_session` to resume.

Each message is one `Event`: user text, a model turn with a `function_call` part, or a
`function_response` part holding the tool's output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.mix import Msg
from bench.peers import NotSupported, Store, probe
from bench.peers._aio import Loop

APP = "bench"
USER = "user"


class AdkDatabaseSessionService(Store):
    name = "ADK DatabaseSessionService"
    package = "google-adk, aiosqlite"
    durability = "rollback journal, synchronous=FULL (SQLite default)"
    notes = "stores each Event as JSON with its actions; keeps the Session object's event list"

    def __init__(self) -> None:
        self.available = probe("google.adk.sessions", "google.genai.types", "aiosqlite")
        self._service: Any = None
        self._loop: Loop | None = None

    def open(self, path: Path) -> None:
        from google.adk.sessions import DatabaseSessionService

        self._loop = Loop()
        self._service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run(self._service.close())
            self._loop.close()
            self._loop = None

    def new_session(self, session_id: str) -> Any:
        return self._loop.run(
            self._service.create_session(app_name=APP, user_id=USER, session_id=session_id)
        )

    def append(self, handle: Any, msg: Msg) -> None:
        from google.adk.events import Event
        from google.genai import types

        if msg.role == "user":
            content = types.Content(role="user", parts=[types.Part(text=msg.text)])
            author = "user"
        elif msg.role == "tool":
            response = types.FunctionResponse(
                id=msg.call_id, name=msg.tool_name, response={"result": msg.text}
            )
            content = types.Content(role="user", parts=[types.Part(function_response=response)])
            author = "agent"
        else:
            parts = [types.Part(text=msg.text)] if msg.text else []
            if msg.tool_call is not None:
                call = types.FunctionCall(
                    id=msg.tool_call.id, name=msg.tool_call.name, args=msg.tool_call.input
                )
                parts.append(types.Part(function_call=call))
            content = types.Content(role="model", parts=parts)
            author = "agent"
        event = Event(invocation_id="inv", author=author, content=content)
        self._loop.run(self._service.append_event(handle, event))

    def load(self, handle: Any) -> int:
        return self.resume(handle.id)

    def resume(self, session_id: str) -> int:
        session = self._loop.run(
            self._service.get_session(app_name=APP, user_id=USER, session_id=session_id)
        )
        return len(session.events)

    def replay(self, session_id: str, index: int) -> int:
        raise NotSupported(
            "get_session filters only by after_timestamp / num_recent_events: no state at a point"
        )
