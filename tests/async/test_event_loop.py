"""The async face's promise, as it is stated: the event loop is never blocked by a summarizer
or a database wait. A ticker coroutine's worst lag stays under 50 ms while a 1 s async summarizer
compacts and 20 other tasks append."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sessionstore import AsyncSession, AsyncSessionStore
from sessionstore.projections import LiveMessage
from tests.conftest import Backend

SUMMARY = "Eight turns of a user asking politely for the same thing."
TASKS = 20


@contextmanager
def collections_of_new_objects_only() -> Iterator[None]:
    """A full collection walks every object of the process, wherever it is triggered: under
    pytest tens of milliseconds of every thread's time, which is not what this test measures.
    `gc.freeze()` moves the objects alive now (the test run's) out of its way, as a server
    does after start-up; what the test allocates is still collected."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def overflowing_session(store: AsyncSessionStore) -> AsyncSession:
    """A session over its 3,000-token window with nothing to prune: it needs a compaction."""
    s = await store.create_session(model="m", context_window=3_000, output_reserve=0)
    await s.configure(keep_recent_tokens=0, safety_margin=0)
    for turn in range(8):
        await s.append_user(f"turn {turn}: " + "please " * 400)
    return s


def test_the_event_loop_is_never_blocked_by_a_summarizer_or_a_database_wait(
    backend: Backend,
) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        async with AsyncSessionStore(backend.url) as store:
            s = await overflowing_session(store)
            others = [await store.create_session(model="m") for _ in range(TASKS)]
            running, lag = True, 0.0

            async def ticker() -> None:
                nonlocal lag
                while running:
                    t = loop.time()
                    await asyncio.sleep(0.01)
                    lag = max(lag, loop.time() - t - 0.01)

            async def summarize(messages: Sequence[LiveMessage], target_tokens: int) -> str:
                await asyncio.sleep(1)
                return SUMMARY

            deadline = loop.time() + 10  # the appends end even if the face never yields

            async def append_until_done(other: AsyncSession) -> int:
                appended = 0
                while (running or not appended) and loop.time() < deadline:
                    await other.append_user(f"message {appended} " + "hello " * 50)
                    appended += 1
                return appended

            with collections_of_new_objects_only():
                ticking = asyncio.create_task(ticker())
                appending = [asyncio.create_task(append_until_done(o)) for o in others]
                began = loop.time()
                check = await s.before_llm_call(summarize)
                took = loop.time() - began
                running = False
                counts = await asyncio.gather(*appending)
                await ticking

            assert len(check.compactions) == 1 and took >= 1
            compacted = check.compactions[0].payload
            assert (compacted.type, compacted.summary.parts[0].text) == (  # type: ignore[attr-defined]
                "ContextCompacted",
                f"[Summary of earlier conversation]\n{SUMMARY}",
            )
            versions = [await store.version(o.id) for o in others]
            assert versions == [1 + n for n in counts] and min(counts) >= 1
            assert lag < 0.05, f"the event loop lagged {lag * 1000:.1f} ms"

    asyncio.run(scenario())
