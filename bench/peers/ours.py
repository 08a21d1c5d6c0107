"""sessionstore itself, at its default durability and at `synchronous=FULL` (what the peers'
SQLite files run at), so the append row can be read at equal durability too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.mix import Msg
from bench.peers import Store
from sessionstore import Session, SessionStore, ToolCall
from sessionstore.projections import context_of
from sessionstore.storage._sqlite import SqliteSynchronous


class SessionStoreNormal(Store):
    name = "sessionstore"
    package = "sessionstore"
    durability = "WAL, synchronous=NORMAL (default)"
    notes = "counts tokens (tiktoken) and truncates outputs over 50 KiB at append"
    synchronous: SqliteSynchronous = "NORMAL"
    append_only = False

    def __init__(self) -> None:
        self._store: SessionStore | None = None
        self._handles: dict[str, Session] = {}

    @property
    def store(self) -> SessionStore:
        assert self._store is not None, "open() first"
        return self._store

    def open(self, path: Path) -> None:
        self._store = SessionStore(f"sqlite:///{path}", sqlite_synchronous=self.synchronous)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
            self._handles.clear()

    def new_session(self, session_id: str) -> Session:
        return self.store.create_session(
            model="gpt-4o", context_window=128_000, title="bench", session_id=session_id
        )

    def append(self, handle: Any, msg: Msg) -> None:
        session: Session = handle
        if msg.role == "user":
            session.append_user(msg.text)
        elif msg.role == "tool":
            session.append_tool_result(msg.call_id, output=msg.text)
        else:
            calls = []
            if msg.tool_call is not None:
                use = msg.tool_call
                calls.append(ToolCall(id=use.id, name=use.name, input=use.input))
            session.append_assistant(msg.text, tool_calls=calls)

    def load(self, handle: Any) -> int:
        session: Session = handle
        # An agent loop calls context() once after each append, so the handle's cache of the
        # last context never helps it: time the build, as the first call after an append is
        # (the fold still keeps the messages it rendered before; only new ones are rendered).
        session._live = None
        return len(session.context().messages)

    def resume(self, session_id: str) -> int:
        return len(self.store.session(session_id).context().messages)

    def replay(self, session_id: str, index: int) -> int:
        # A handle per session, made on the first (untimed) call; seq 1 is SessionStarted,
        # so the index-th message is event index + 1.
        if session_id not in self._handles:
            self._handles[session_id] = self.store.session(session_id)
        return len(self._handles[session_id].context(at=index + 1).messages)

    def tokens(self, handle: Any) -> int:
        session: Session = handle
        return session.tokens

    def from_scratch(self, session_id: str) -> int:
        store = self.store
        fold = store._log.fold_from_scratch(session_id, store.version(session_id))
        return len(context_of(fold).messages)


class SessionStoreFull(SessionStoreNormal):
    name = "sessionstore FULL"
    durability = 'WAL, synchronous=FULL (`sqlite_synchronous="FULL"`)'
    synchronous: SqliteSynchronous = "FULL"
    append_only = True
