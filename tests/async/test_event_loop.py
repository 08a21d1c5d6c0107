"""The async face's promise: the event loop is never blocked by a summarizer or a
database wait. A ticker coroutine's worst lag stays under 50 ms while a 1 s async summarizer
compacts and 20 other tasks append.

A loaded machine (the suite's other workers, another run) delays every thread of the process
now and then by more than that; a blocked loop delays the loop's thread alone. So a thread that
does nothing but the same 10 ms sleeps ticks alongside, and each tick of the loop may lag 50 ms
more than that thread's ticks lagged over the same moments: a 1 s summarizer run on the loop, or
a lock wait there, still fails the test, the machine's pauses do not."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sessionstore import AsyncSession, AsyncSessionStore
from sessionstore.projections import LiveMessage
from tests.conftest import Backend

SUMMARY = "Eight turns of a user asking politely for the same thing."
TASKS = 20
TICK = 0.01
"""Each ticker sleeps this long, again and again; a tick's lag is how much longer it took."""
LAG_LIMIT = 0.05

Ticks = list[tuple[float, float]]
"""When each tick began and ended, on the monotonic clock (the event loop's too)."""


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


@contextmanager
def ticks_of_an_idle_thread() -> Iterator[Ticks]:
    """The ticks of a thread that only sleeps `TICK` after `TICK`, while the block runs: its lag
    is what the machine's load and the interpreter's lock cost any thread of this process."""
    ticks: Ticks = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            began = time.monotonic()
            time.sleep(TICK)
            ticks.append((began, time.monotonic()))

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        yield ticks
    finally:
        stop.set()
        thread.join()


def lag_beyond(ticks: Ticks, idle: Ticks) -> float:
    """The worst lag of a tick of `ticks`, less the worst lag of the `idle` ticks that overlap it
    (the part of its lag that the whole process had too)."""
    worst = 0.0
    for began, ended in ticks:
        shared = [end - start - TICK for start, end in idle if start < ended and end > began]
        worst = max(worst, ended - began - TICK - max(shared, default=0.0))
    return worst


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
            running = True
            ticks: Ticks = []

            async def ticker() -> None:
                while running:
                    began = loop.time()
                    await asyncio.sleep(TICK)
                    ticks.append((began, loop.time()))

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

            with collections_of_new_objects_only(), ticks_of_an_idle_thread() as idle:
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
            lag = lag_beyond(ticks, idle)
            assert lag < LAG_LIMIT, f"the event loop lagged {lag * 1000:.1f} ms more than a thread"

    asyncio.run(scenario())
