"""The async face: `AsyncSessionStore` and `AsyncSession`, awaitable twins of the sync ones.

Each call runs the sync one on the store's own worker threads, sized to keep the event loop's
lag low; `run_sync` lets an integration run any sync call on the same workers. The twins'
signatures are the sync ones' (a test compares them), so the faces cannot drift.
"""

from sessionstore.aio._async import AsyncSession, AsyncSessionStore, async_session_of

__all__ = [
    "AsyncSession",
    "AsyncSessionStore",
    "async_session_of",
]
