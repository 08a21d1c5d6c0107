"""The async face on every backend: each method awaits the sync one in a worker thread, so it
gives what the sync store gives, raises the same typed errors, keeps one handle's calls in
order, and awaits async summarizers on the caller's own loop."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sessionstore import (
    AsyncSession,
    AsyncSessionStore,
    CompactionError,
    ConcurrencyError,
    DatabaseUnavailable,
    InvalidArgument,
    NotInContext,
    Session,
    SessionExists,
    SessionStore,
    SessionStoreError,
    ToolCall,
    UnknownSession,
    Usage,
)
from sessionstore.events import (
    Message,
    MessageAppended,
    NewEvent,
    SessionStarted,
    TextPart,
    ToolResultPart,
)
from sessionstore.projections import LiveMessage
from tests.conftest import Backend

FIXED_TURN = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "test_sum fails, please fix it"},
    {
        "role": "assistant",
        "content": "Let me read the code.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"calc.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "def add(a, b):\n    return a - b\n"},
]

MARK = "[Summary of earlier conversation]\n"  # every compaction summary opens with it


async def agent_turn(s: AsyncSession) -> Message:
    """The README's first turn; returns the user's task."""
    await s.append_system("You are a careful coding agent.")
    task = await s.append_user("test_sum fails, please fix it")
    read = ToolCall(id="c1", name="read", input={"path": "calc.py"})
    await s.append_assistant("Let me read the code.", tool_calls=[read], usage=Usage(input=812))
    await s.append_tool_result("c1", output="def add(a, b):\n    return a - b\n")
    return task


def public_methods(cls: type) -> set[str]:
    return {name for name, value in vars(cls).items() if callable(value) and name[0] != "_"}


def test_the_async_face_has_every_public_method_of_the_sync_one_awaitable() -> None:
    for sync, face in ((Session, AsyncSession), (SessionStore, AsyncSessionStore)):
        assert public_methods(sync) <= public_methods(face)
        assert all(inspect.iscoroutinefunction(getattr(face, n)) for n in public_methods(sync))
    assert {"id", "version", "header", "config", "tokens", "summarizer"} <= {
        name for name, value in vars(AsyncSession).items() if isinstance(value, property)
    }


def test_an_agent_turn_gives_the_context_the_sync_store_reads(backend: Backend) -> None:
    async def loop() -> tuple[str, list[dict[str, Any]], int]:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="gpt-4o", context_window=128_000, title="fix")
            await agent_turn(s)
            context = await s.context()
            assert (s.version, s.tokens, s.header.title) == (5, context.tokens, "fix")
            return s.id, context.to_openai(), context.tokens

    session_id, messages, tokens = asyncio.run(loop())
    assert messages == FIXED_TURN
    with SessionStore(backend.url) as store:
        resumed = store.session(session_id)
        assert (resumed.context().to_openai(), resumed.tokens) == (messages, tokens)


def test_fork_and_revert_through_the_async_face(backend: Backend) -> None:
    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="m", title="parent")
            task = await agent_turn(s)
            trial = await store.fork(s.id, at=3, title="trial")
            await trial.append_user("try editing add() instead")
            assert (trial.version, trial.header.parent_session_id) == (2, s.id)  # its own seq
            assert [m["role"] for m in (await trial.context()).to_openai()] == [
                "system",
                "user",
                "user",
            ]
            reverted = await s.revert(task.id)
            assert reverted is not None and len(reverted.payload.reverted_message_ids) == 2  # type: ignore[attr-defined]
            assert (await s.context()).to_openai() == FIXED_TURN[:2]
            assert (await s.context(at=5)).to_openai() == FIXED_TURN  # replay still shows it
            assert [info.title for info in await store.sessions()] == ["parent", "trial"]

    asyncio.run(loop())


def test_prune_restore_and_compact_through_the_async_face(backend: Backend) -> None:
    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="m", context_window=3_000, output_reserve=0)
            await s.configure(protect_tokens=200, minimum_prune=100, keep_recent_tokens=0)
            parts = []
            for turn in range(6):
                await s.append_user(f"turn {turn}")
                call = ToolCall(id=f"c{turn}", name="bash", input={"command": "x"})
                await s.append_assistant(tool_calls=[call])
                part = (await s.append_tool_result(f"c{turn}", output="word " * 600)).parts[0]
                assert isinstance(part, ToolResultPart)
                parts.append(part.id)
            plan = await s.prune()
            assert plan is not None and plan.part_ids == tuple(parts[:5])  # all but the latest step
            restored = await s.restore()
            assert restored is not None and restored.payload.part_ids == tuple(parts[:5])  # type: ignore[attr-defined]

            def summarize(messages: Sequence[LiveMessage], target_tokens: int) -> str:
                return f"{len(messages)} messages: six bash runs"

            event = await s.compact(summarize, keep_turns=1, keep_tokens=0)
            summary = (await s.context()).messages[0]
            assert summary.summary and summary.parts[0].text == f"{MARK}15 messages: six bash runs"  # type: ignore[union-attr]
            assert event.payload.summarizer == "summarize"  # type: ignore[attr-defined]
            stats = await store.stats()
            assert (stats.prunes, stats.compactions) == (1, 1)

    asyncio.run(loop())


def test_verify_export_and_import_round_trip(backend: Backend, tmp_path: Path) -> None:
    async def loop() -> None:
        async with (
            AsyncSessionStore(backend.url) as store,
            AsyncSessionStore(f"sqlite:///{tmp_path / 'copy.db'}") as copy,
        ):
            s = await store.create_session(model="m")
            await agent_turn(s)
            report = await store.verify(s.id)
            assert (report.ok, report.events_checked) == (True, 5)
            lines = await store.export_session(s.id)
            imported = await copy.import_session(lines)
            assert imported.id == s.id and imported.version == 5
            assert (await imported.context()).to_openai() == FIXED_TURN
            assert await copy.export_session(s.id) == lines
            assert [r.ok for r in await copy.verify_all()] == [True]

    asyncio.run(loop())


def test_the_remaining_methods_give_what_the_sync_ones_give(backend: Backend) -> None:
    chat = {"role": "assistant", "content": "It subtracts.", "refusal": None}
    anthropic = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "Fixed."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 50, "output_tokens": 3},
    }

    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="m", session_id="twin-async")
            twin = store.sync.create_session(model="m", session_id="twin-sync")
            for session in (s.sync, twin):
                session.append_user("why does test_sum fail?")
            await s.append_openai(chat)
            await s.append_anthropic(anthropic)
            text = Message(role="user", parts=(TextPart(text="thanks"),))
            await s.append_message(text)
            more = MessageAppended(message=Message(role="user", parts=(TextPart(text="and?"),)))
            await s.append_events([more])
            twin.append_openai(chat)
            twin.append_anthropic(anthropic)
            twin.append_message(text)
            twin.append_events([more])
            context, twin_context = await s.context(), twin.context()
            assert context.to_anthropic() == twin_context.to_anthropic()
            assert context.to_openai() == twin_context.to_openai()
            first = context.messages[0].id
            assert (await s.pin(first)).type == "MessagePinned"  # type: ignore[union-attr]
            assert (await s.unpin(first)).type == "MessageUnpinned"  # type: ignore[union-attr]
            assert (await s.configure(trigger_ratio=0.5)).type == "CompressionChanged"
            measured = (await s.measure()).tokens  # from the Anthropic usage: 50 + 3 + 2 since
            assert (s.config.trigger_ratio, measured, twin.measure().tokens) == (0.5, 55, 55)
            check = await s.before_llm_call()
            assert (check.acted, check.note) == (False, "within the window")
            assert (await s.after_tool_result()).point == "after_tool"
            rows = await s.timeline()
            assert [r.type for r in rows] == [e.type for e in await store.read(s.id)]
            assert await s.to_markdown(at=3, history=True) == s.sync.to_markdown(3, history=True)
            redacted = await s.redact([context.messages[0].parts[0].id], reason="a secret")
            assert redacted is not None and redacted.type == "ContentRedacted"
            later = MessageAppended(message=Message(role="user", parts=(TextPart(text="hi"),)))
            await store.append(s.id, [NewEvent(later)], expected_version=10)
            assert (s.version, await store.version(s.id)) == (10, 11)
            await s.refresh()
            info = await store.session_info(s.id)
            assert (s.version, info.version, len(await store.read(s.id, 3, 5))) == (11, 11, 3)
            purged = await store.purge(twin.id, reason="gone")
            assert purged is not None and purged.type == "ContentRedacted"
            summaries = await store.summaries(s.id)
            assert [(x.info.id, x.live_tokens) for x in summaries] == [(s.id, s.tokens)]

    asyncio.run(loop())


def test_concurrent_appends_to_one_handle_are_all_stored_in_order(backend: Backend) -> None:
    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="m")
            await asyncio.gather(*(s.append_user(f"message {n}") for n in range(50)))
            events = await store.read(s.id)
            texts = [e.payload.message.parts[0].text for e in events[1:]]  # type: ignore[attr-defined]
            assert texts == [f"message {n}" for n in range(50)]
            assert (s.version, (await store.verify(s.id)).ok) == (51, True)

    asyncio.run(loop())


def failing_session(store: SessionStore) -> Session:
    s = store.create_session(model="m")
    for turn in range(4):
        s.append_user(f"turn {turn}")
        s.append_assistant(tool_calls=[ToolCall(id=f"c{turn}", name="bash", input={})])
        s.append_tool_result(f"c{turn}", output="output " * 50)
    return s


def test_an_async_summarizer_that_fails_or_is_cancelled_changes_nothing(backend: Backend) -> None:
    store = SessionStore(backend.url)
    session = failing_session(store)
    before = backend.table_rows()
    cancelled: list[str] = []

    async def broken(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        await asyncio.sleep(0)
        raise RuntimeError("the model is down")

    async def too_slow(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        return await asyncio.wait_for(asyncio.sleep(10, "never"), 0.01)

    async def hanging(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        try:
            return await asyncio.sleep(10, "never")
        except asyncio.CancelledError:
            cancelled.append("hanging")
            raise

    async def loop() -> None:
        s = await AsyncSessionStore.from_store(store).session(session.id)
        with pytest.raises(CompactionError, match=r"^the summarizer broken failed: RuntimeError"):
            await s.compact(broken)
        with pytest.raises(CompactionError, match=r"^the summarizer too_slow failed: TimeoutError"):
            await s.compact(too_slow)
        with pytest.raises(  # the caller gives up: its summary is cancelled, and it says so
            CompactionError,
            match=r"^the summarizer hanging failed: CancelledError: its caller was cancelled$",
        ):
            await asyncio.wait_for(s.compact(hanging), 0.2)
        assert (s.version, store.version(s.id)) == (session.version, session.version)
        await asyncio.sleep(0)  # the summarizer's task takes its cancellation
        assert cancelled == ["hanging"]

    asyncio.run(loop())
    assert backend.table_rows() == before
    store.close()


def test_a_call_timed_out_in_its_worker_returns_what_it_stored_once_done(backend: Backend) -> None:
    store = SessionStore(backend.url)
    session = failing_session(store)

    def slow(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        time.sleep(0.3)  # sync: nothing can cancel it
        return "four bash runs"

    async def loop() -> None:
        s = await AsyncSessionStore.from_store(store).session(session.id)
        began = time.perf_counter()
        event = await asyncio.wait_for(s.compact(slow, keep_turns=1, keep_tokens=0), 0.05)
        assert time.perf_counter() - began >= 0.3  # returned once the compaction was stored
        assert s.version == event.seq == session.version + 1
        events = await s.context()
        assert events.messages[0].parts[0].text == f"{MARK}four bash runs"  # type: ignore[union-attr]

    asyncio.run(loop())
    store.close()


def test_summarizers_run_on_the_callers_loop_in_its_context(backend: Backend) -> None:
    store = SessionStore(backend.url)
    session = failing_session(store)
    request = contextvars.ContextVar("request", default="none")
    seen: list[object] = []

    async def summarize(messages: Sequence[LiveMessage], target_tokens: int) -> str:
        seen.extend([asyncio.get_running_loop(), threading.current_thread(), request.get()])
        await asyncio.sleep(0.01)
        return "four bash runs"

    async def loop() -> None:
        request.set("r-42")
        s = AsyncSessionStore.from_store(store)
        handle = await s.session(session.id)
        event = await handle.compact(summarize, keep_turns=1, keep_tokens=0)
        assert event.payload.summary.parts[0].text == f"{MARK}four bash runs"  # type: ignore[attr-defined]
        assert seen == [asyncio.get_running_loop(), threading.main_thread(), "r-42"]
        handle.summarizer = lambda messages, target_tokens: "a sync summary"
        await handle.append_user("turn 4")
        event = await handle.compact(keep_turns=1, keep_tokens=0)
        assert event.payload.summary.parts[0].text == f"{MARK}a sync summary"  # type: ignore[attr-defined]

    asyncio.run(loop())
    store.close()


def test_errors_are_the_sync_apis_typed_errors(backend: Backend, tmp_path: Path) -> None:
    sync = SessionStore(backend.url)
    started = sync.create_session(model="m", session_id="taken")
    errors: list[tuple[type[Exception], str]] = []

    def failure(call: Any) -> tuple[type[Exception], str]:
        with pytest.raises(SessionStoreError) as raised:
            call()
        return type(raised.value), str(raised.value)

    async def loop() -> None:
        store = AsyncSessionStore.from_store(sync)
        s = await store.session("taken")
        for call in (
            lambda: store.session("nope"),
            lambda: store.create_session(session_id="taken"),
            lambda: store.append("taken", [SessionStarted()], expected_version=0),
            lambda: s.revert("no-such-message"),
            lambda: s.append_user(3),  # type: ignore[arg-type]
        ):
            with pytest.raises(SessionStoreError) as raised:
                await call()
            errors.append((type(raised.value), str(raised.value)))

    asyncio.run(loop())
    assert [kind for kind, _ in errors] == [
        UnknownSession,
        SessionExists,
        ConcurrencyError,
        NotInContext,
        InvalidArgument,
    ]
    assert errors == [
        failure(lambda: sync.session("nope")),
        failure(lambda: sync.create_session(session_id="taken")),
        failure(lambda: sync.append("taken", [SessionStarted()], expected_version=0)),
        failure(lambda: started.revert("no-such-message")),
        failure(lambda: started.append_user(3)),  # type: ignore[arg-type]
    ]
    sync.close()
    with pytest.raises(InvalidArgument, match="busy_timeout_ms"):  # options: at once
        AsyncSessionStore(backend.url, busy_timeout_ms=-1)
    missing = AsyncSessionStore(f"sqlite:///{tmp_path / 'missing.db'}", create=False)

    async def open_missing() -> None:
        async with missing:
            pass

    with pytest.raises(DatabaseUnavailable):  # the database: when opened, in a worker
        asyncio.run(open_missing())


def test_pop_clear_state_and_listing_through_the_async_face(backend: Backend) -> None:
    async def loop() -> None:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="m", session_id="life", app="a", tags=["t"])
            await agent_turn(s)
            changed = await s.update_state({"step": 1})
            assert changed is not None
            popped = await s.pop()
            assert popped is not None and isinstance(popped.parts[0], ToolResultPart)
            assert await s.clear(reason="over") is not None
            assert (await s.context()).messages == ()
            assert await s.state() == {"step": 1} and await s.state(at=1) == {}
            assert await s.update_metadata(user="ada") is not None
            listed = await store.sessions(app="a", user="ada", tag="t", limit=1)
            assert [info.id for info in listed] == ["life"]
            assert [x.info.id for x in await store.summaries(tag="t")] == ["life"]

    asyncio.run(loop())
