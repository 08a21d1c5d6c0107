"""What a cancelled awaited call means: it either never ran (it raises `CancelledError`, or
`TimeoutError` under a timeout) or it ran to its end and says so (it returns its value or raises
its own error), and the cancellation then reaches the task at its next await."""

from __future__ import annotations

import asyncio
import functools
import random
import threading
from collections.abc import Sequence

import pytest

from sessionstore import (
    AsyncSession,
    AsyncSessionStore,
    CompactionError,
    ContextCheck,
    SessionStore,
    Summarizer,
    ToolCall,
)
from sessionstore.aio._worker_threads import WORKER_THREADS
from sessionstore.events import TextPart
from sessionstore.projections import LiveMessage
from tests.conftest import Backend

CALLS = 1_000


def stored_user_texts(store: SessionStore, session_id: str) -> list[str]:
    return [
        part.text
        for event in store.read(session_id)
        if event.type == "MessageAppended"
        for part in event.payload.message.parts  # type: ignore[attr-defined]
        if isinstance(part, TextPart)
    ]


def test_a_timed_out_append_returned_if_and_only_if_it_was_stored(backend: Backend) -> None:
    """Timeouts from 0 to 1 ms land before, during and after the worker's append: every call
    that returned is stored once, no call that raised is stored, and a retry of each one that
    raised stores it exactly once."""
    chance = random.Random(7)
    returned: list[str] = []
    raised: list[str] = []

    async def loop() -> str:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="m")
            for n in range(CALLS):
                text = f"message {n}"
                try:
                    await asyncio.wait_for(s.append_user(text), chance.uniform(0, 0.001))
                except TimeoutError:
                    raised.append(text)
                else:
                    returned.append(text)
            for text in raised:  # the retry a caller makes of a call that raised
                await s.append_user(text)
            return s.id

    session_id = asyncio.run(loop())
    with SessionStore(backend.url) as store:
        texts = stored_user_texts(store, session_id)
    assert texts == returned + raised  # each once: nothing stored twice, nothing lost
    assert len(returned) + len(raised) == CALLS
    assert raised and returned, (len(raised), len(returned))  # both ways were exercised


def blocking_summarizer(gate: threading.Event, started: threading.Event) -> Summarizer:
    """A sync summarizer that holds its worker until `gate` is set."""

    def summarize(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        started.set()
        gate.wait(10)
        return "four bash runs"

    return summarize


async def crowded_session(store: AsyncSessionStore) -> AsyncSession:
    s = await store.create_session(model="m")
    for turn in range(4):
        await s.append_user(f"turn {turn}")
        await s.append_assistant(tool_calls=[ToolCall(id=f"c{turn}", name="bash", input={})])
        await s.append_tool_result(f"c{turn}", output="output " * 50)
    return s


def test_a_call_cancelled_while_its_worker_writes_returns_then_the_task_is_cancelled(
    backend: Backend,
) -> None:
    seen: list[object] = []

    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await crowded_session(store)
            gate, started = threading.Event(), threading.Event()

            async def agent() -> None:
                summarize = blocking_summarizer(gate, started)
                event = await s.compact(summarize, keep_turns=1, keep_tokens=0)
                seen.append(("returned", event.type, event.seq))
                try:
                    await asyncio.sleep(0)  # the next await takes the cancellation
                except asyncio.CancelledError:
                    seen.append("cancelled at the next await")
                    raise

            task = asyncio.ensure_future(agent())
            while not started.is_set():
                await asyncio.sleep(0.001)
            task.cancel()
            await asyncio.sleep(0.01)
            gate.set()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert (s.version, await store.version(s.id)) == (14, 14)

    asyncio.run(loop())
    assert seen == [("returned", "ContextCompacted", 14), "cancelled at the next await"]


def test_a_call_cancelled_before_its_worker_started_never_runs(backend: Backend) -> None:
    """Waiting for the handle (another call of it runs) or for a free worker thread, a
    cancelled call raises `CancelledError` and is never run, even once the way is clear."""

    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await crowded_session(store)
            other = await store.create_session(model="m")
            gate = threading.Event()
            holding = [threading.Event() for _ in range(WORKER_THREADS)]

            def hold(n: int) -> None:
                holding[n].set()
                gate.wait(10)

            summarize = blocking_summarizer(gate, holding[0])
            busy: list[asyncio.Future[object]] = [
                asyncio.ensure_future(s.compact(summarize, keep_turns=1, keep_tokens=0))
            ]
            for n in range(1, WORKER_THREADS):
                busy.append(asyncio.ensure_future(store._workers.run(functools.partial(hold, n))))
            while not all(h.is_set() for h in holding):
                await asyncio.sleep(0.001)
            queued = asyncio.ensure_future(other.append_user("queued for a thread"))
            behind = asyncio.ensure_future(s.append_user("behind the handle's lock"))
            await asyncio.sleep(0.01)
            queued.cancel()
            behind.cancel()
            await asyncio.sleep(0.01)  # both take their cancellation while the threads are busy
            gate.set()
            await asyncio.gather(*busy)
            outcomes = await asyncio.gather(queued, behind, return_exceptions=True)
            assert [type(o) for o in outcomes] == [asyncio.CancelledError] * 2, outcomes
            await asyncio.sleep(0.05)  # were either to run after all, it would have by now
            assert (s.version, await store.version(s.id)) == (14, 14)  # the compaction only
            assert await store.version(other.id) == 1

    asyncio.run(loop())


def test_a_check_cancelled_in_its_async_summary_says_what_it_appended(backend: Backend) -> None:
    """The summary on the caller's loop is cancelled with its caller, so the compaction
    appends nothing; the call then raises `CompactionError` (not `CancelledError`: it ran), and
    its `check` names the prune it appended before."""
    cancelled: list[str] = []

    async def hanging(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        try:
            return await asyncio.sleep(10, "never")
        except asyncio.CancelledError:
            cancelled.append("summary")
            raise

    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="m", context_window=3_000, output_reserve=0)
            await s.configure(protect_tokens=200, minimum_prune=100, keep_recent_tokens=0)
            for turn in range(6):  # long requests: pruning the outputs is not enough
                await s.append_user(f"turn {turn} " + "please " * 400)
                call = ToolCall(id=f"c{turn}", name="bash", input={"command": "x"})
                await s.append_assistant(tool_calls=[call])
                await s.append_tool_result(f"c{turn}", output="word " * 150)
            version = s.version
            with pytest.raises(CompactionError) as raised:
                await asyncio.wait_for(s.before_llm_call(hanging), 0.5)
            check = raised.value.check
            assert isinstance(check, ContextCheck)
            assert check.pruned is not None and check.pruned.type == "OutputsPruned"
            assert (check.pruned.seq, check.compactions) == (version + 1, ())
            assert (s.version, await store.version(s.id)) == (version + 1, version + 1)

    asyncio.run(loop())
    assert cancelled == ["summary"]


def test_a_timeout_that_expired_while_the_worker_wrote_lets_its_value_through(
    backend: Backend,
) -> None:
    """`asyncio.timeout` runs the call in the caller's own task: the call returns what it
    stored, the block is left without `TimeoutError`, and the task is not cancelled later."""

    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await crowded_session(store)
            gate, started = threading.Event(), threading.Event()
            summarize = blocking_summarizer(gate, started)
            threading.Timer(0.2, gate.set).start()
            async with asyncio.timeout(0.05) as deadline:
                event = await s.compact(summarize, keep_turns=1, keep_tokens=0)
            assert (deadline.expired(), event.seq, s.version) == (True, 14, 14)
            await asyncio.sleep(0.01)  # not cancelled: the timeout took its request back
            assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]

    asyncio.run(loop())
