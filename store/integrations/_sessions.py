"""What the framework adapters share: a framework names a session by its id, and the
sessionstore session behind it is created the first time it is used, resumed after that."""

from __future__ import annotations

from typing import Any

from store._errors import UnknownSession
from store._session import Session
from store._store import SessionStore


def session_on_first_use(store: SessionStore, session_id: str, create: dict[str, Any]) -> Session:
    """The session `session_id`, created with `create` (keyword arguments of
    `SessionStore.create_session`) when the store does not hold it yet."""
    try:
        return store.session(session_id)
    except UnknownSession:
        return store.create_session(session_id=session_id, **create)
