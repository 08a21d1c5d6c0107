"""The worker threads the async face runs the sync core in, and how a call hands over to them.

Why threads and not an async driver, measured by `python -m bench.async_face` (SQLite in WAL,
medians of 2,000 calls one after another, this 2-core machine while busy, then idle: a
thread wakes up more slowly on an idle machine):

    Session.append_user, called directly           0.13 ms    0.13 ms
    AsyncSession.append_user, awaited              0.22 ms    0.27-0.38 ms
    INSERT + COMMIT, SQLAlchemy sync               0.045 ms   0.046 ms
    the same through asyncio.to_thread             0.10 ms    0.13-0.14 ms
    the same, SQLAlchemy async engine, aiosqlite   0.19 ms    0.36 ms

Handed to a thread, an INSERT + COMMIT costs about half what it costs through aiosqlite,
which hands every statement to its own thread and back; an append is five or six statements
(BEGIN IMMEDIATE, head, event, bodies, COMMIT) and hops once. A whole awaited append costs
about what one bare INSERT + COMMIT costs through aiosqlite, and the core stays one code path.
(An earlier estimate of 1.09 ms for aiosqlite was not reproduced here: 0.19-0.36 ms.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

from sessionstore.context import CallerLoop

_R = TypeVar("_R")

WORKER_THREADS = 6
"""Threads per store. A call waiting (on the database, a commit, an async summary) does not
hold the GIL, but a summary holds its thread as long as it takes: 6 summaries at once leave
the store's other calls queued behind them. More threads mean more contention with the event
loop, for the GIL and, with PostgreSQL on the same machine, for the cores its backends run
on: in tests/async's lag test (20 appending tasks), the worst tick on PostgreSQL was 17-77 ms
with 16 threads and 8-23 ms with 6 (four runs each, this 2-core machine, server local)."""


class Workers:
    """The pool a store and its sessions run their sync calls in: not the loop's default
    executor, so an async summarizer that itself uses `asyncio.to_thread` cannot find every
    thread taken by store calls waiting for it."""

    def __init__(self) -> None:
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    async def run(self, call: Callable[[], _R]) -> _R:
        """`call()` in a worker, in the caller's context, async summaries awaited here.

        Cancelled (`task.cancel()`, a timeout) before a worker took the call, it raises
        `CancelledError` at once and the call never runs. Cancelled once a worker has it, the
        call runs to its end (an async summary or confirm it awaits on this loop is cancelled,
        so a compaction in progress appends nothing), and this returns its value or raises its
        error, as if it had not been cancelled: a call that wrote says so. The cancellation is
        not lost: it reaches the task at its next await (`_cancel_at_next_await`). The
        handle's next call starts after this one, never beside it."""
        caller = CallerLoop(asyncio.get_running_loop())

        def in_worker() -> _R:
            with caller.awaiting():
                return call()

        context = contextvars.copy_context()
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    WORKER_THREADS, thread_name_prefix="sessionstore"
                )
            work = self._pool.submit(context.run, in_worker)
        done = asyncio.wrap_future(work)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            if work.cancel():
                raise  # no worker took it: it never runs
            caller.cancel()
        while not done.done():  # cancelled again meanwhile (a second timeout, say): still wait
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([done])
        _cancel_at_next_await()
        return done.result()

    def shut_down(self) -> None:
        """Let the pool's threads end once idle; a later call starts a new pool."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)


def _cancel_at_next_await() -> None:
    """Cancel the current task again at its next await, if the cancellation it took is still
    asked for then.

    A call that completed after its task was cancelled returns its value, so the task's code
    goes on until its next await; that await raises `CancelledError`, and the task ends as its
    canceller asked. A timeout (`asyncio.timeout`, `wait_for`) that asked has by then withdrawn
    its request (`Task.uncancel`, on leaving its block with the value): the value stands and
    nothing is raised. When this call was the task's whole coroutine (`wait_for` on Python
    3.11 runs it in a task of its own), the task is done by then and keeps the value."""
    task = asyncio.current_task()
    if task is None:
        return

    def cancel_again() -> None:
        if not task.done() and task.cancelling():
            task.uncancel()  # the request is delivered again, not counted twice
            task.cancel()

    asyncio.get_running_loop().call_soon(cancel_again)
