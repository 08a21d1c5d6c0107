"""What the framework adapters share: a framework names a session by its id, and the
sessionstore session behind it is created the first time it is used, resumed after that; and
an adapter's async methods run on the store's one pool of workers (`async_face`), never on
`asyncio.to_thread`, so a cancelled or timed-out framework call that wrote returns, as every
`AsyncSessionStore` call does, and a retry does not store it twice."""

from __future__ import annotations

from typing import Any

from sessionstore.aio import AsyncSessionStore
from sessionstore.events import UnknownSession
from sessionstore.session import Session, SessionStore


def async_face(store: SessionStore | AsyncSessionStore) -> AsyncSessionStore:
    """The async face an adapter given `store` runs its calls on: `store` itself, or the face
    of a sync store on its one pool (`AsyncSessionStore.from_store`)."""
    return store if isinstance(store, AsyncSessionStore) else AsyncSessionStore.from_store(store)


def session_on_first_use(store: SessionStore, session_id: str, create: dict[str, Any]) -> Session:
    """The session `session_id`, created with `create` (keyword arguments of
    `SessionStore.create_session`) when the store does not hold it yet."""
    try:
        return store.session(session_id)
    except UnknownSession:
        return store.create_session(session_id=session_id, **create)
