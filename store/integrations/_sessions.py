"""What the framework adapters share: a framework names a session by its id, and the
sessionstore session behind it is created the first time it is used, resumed after that; and
an adapter's async methods run on the store's one pool of workers (`async_face`), never on
`asyncio.to_thread`, so a cancelled or timed-out framework call that wrote returns, as every
`AsyncSessionStore` call does, and a retry does not store it twice. A framework builds many
session objects for one id (one a request, one a task), each with a handle of its own, and
means each write to land after what the others wrote: `retried` does that."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sessionstore.aio import AsyncSessionStore
from sessionstore.events import ConcurrencyError, UnknownSession
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


T = TypeVar("T")

WRITE_ATTEMPTS = 20
"""How many times `retried` writes before it lets `ConcurrencyError` through: each lost race
means another writer's append landed, so twenty in a row is a session written in a loop."""


def retried(session: Session, write: Callable[[], T]) -> T:
    """`write()`, which reads `session` and appends what follows from it, done again on a
    caught-up handle when another handle of the session appended between the two
    (`ConcurrencyError`: nothing of this attempt was written). A framework's two session
    objects for one id, popping or adding at once, then each write in turn, as the
    framework's own database sessions do."""
    for _ in range(WRITE_ATTEMPTS - 1):
        try:
            return write()
        except ConcurrencyError:
            session.refresh()
    return write()
