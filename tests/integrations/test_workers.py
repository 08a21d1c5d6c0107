"""The framework adapters run on the store's own workers, as `AsyncSessionStore` does: a
framework call that is cancelled or times out either wrote nothing or returns what it wrote,
so the framework's retry never stores it twice; no adapter hands store work to
`asyncio.to_thread`; and every adapter on one store shares the store's one pool."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

pytest.importorskip("agents")
pytest.importorskip("claude_agent_sdk")
pytest.importorskip("google.adk")
pytest.importorskip("langchain")
pytest.importorskip("pydantic_ai")

from agents import Agent
from agents.run_config import CallModelData, ModelInputData
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.genai import types
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from sessionstore import AsyncSessionStore, SessionStore
from sessionstore.aio._worker_threads import WORKER_THREADS
from sessionstore.integrations.adk import SessionStoreService, context_callback
from sessionstore.integrations.claude_agent_sdk import ClaudeSessionStore
from sessionstore.integrations.langchain import (
    SessionStoreChatMessageHistory,
    SessionStoreMiddleware,
)
from sessionstore.integrations.langgraph import SessionStoreSaver
from sessionstore.integrations.openai_agents import AgentsSession, context_filter
from sessionstore.integrations.pydantic_ai import history_processor
from tests.conftest import Backend

CALLS = 300


def user_item(text: str) -> Any:
    return {"role": "user", "content": text}


def test_a_timed_out_add_items_returned_if_and_only_if_it_was_stored(backend: Backend) -> None:
    """The Runner's `add_items` under timeouts from 0 to 2 ms, which land before, during and
    after the worker's append (one in ten is 0: it never starts): each call that returned is
    stored once, none that raised is, and the retry of each one that raised stores it exactly
    once. (On `asyncio.to_thread`, a call that timed out went on writing: its retry stored the
    items twice.)"""
    chance = random.Random(11)
    returned: list[str] = []
    raised: list[str] = []

    async def runner() -> list[Any]:
        with SessionStore(backend.url) as store:
            session = AgentsSession("race", store, model="gpt-4o")
            await session.add_items([user_item("start")])  # created before the race
            timeouts = [chance.uniform(0, 0.002) for _ in range(CALLS)]
            timeouts[::10] = [0.0] * len(timeouts[::10])  # these never start
            for n in range(CALLS):
                text = f"message {n}"
                try:
                    await asyncio.wait_for(session.add_items([user_item(text)]), timeouts[n])
                except TimeoutError:
                    raised.append(text)
                else:
                    returned.append(text)
            for text in raised:  # what a caller does with a call that raised: try again
                await session.add_items([user_item(text)])
            return await session.get_items()

    items = asyncio.run(runner())
    assert [item["content"] for item in items] == ["start", *returned, *raised]
    assert raised and returned, (len(raised), len(returned))  # both ways were exercised


async def every_async_call(store: SessionStore | AsyncSessionStore) -> None:
    """Each async method of each adapter (and the hooks they hand a framework), once."""
    agents = AgentsSession("agents", store)
    await agents.add_items([user_item("hi"), user_item("there")])
    assert len(await agents.get_items()) == 2
    await agents.pop_item()
    snapshot = await agents._get_compaction_snapshot(1)
    assert snapshot is not None and await snapshot.replace_suffix(0, [user_item("short")])
    assert await agents._atomic_replace_items([user_item("all")])
    data = CallModelData(
        model_data=ModelInputData(input=[user_item("new")], instructions=None),
        agent=Agent(name="a"),
        context=None,
    )
    await context_filter(agents)(data)
    await agents.clear_session()

    claude = ClaudeSessionStore(store)
    key: Any = {"project_key": "p", "session_id": "s"}
    await claude.append(key, [{"type": "x", "uuid": "u1"}])
    assert await claude.load(key) == [{"type": "x", "uuid": "u1"}]
    await claude.list_sessions("p")
    await claude.list_session_summaries("p")
    await claude.list_subkeys({"project_key": "p", "session_id": "s"})
    await claude.delete(key)

    service = SessionStoreService(store)
    adk = await service.create_session(app_name="app", user_id="u", session_id="one")
    said = types.Content(role="user", parts=[types.Part(text="hi")])
    await service.append_event(adk, Event(invocation_id="i", author="user", content=said))
    assert await service.get_session(app_name="app", user_id="u", session_id="one") is not None
    await service.list_sessions(app_name="app", user_id="u")
    await service.get_user_state(app_name="app", user_id="u")
    callback = SimpleNamespace(session=adk)
    await context_callback(service)(callback, LlmRequest(contents=[said]))  # type: ignore[arg-type]
    await service.delete_session(app_name="app", user_id="u", session_id="one")

    history = SessionStoreChatMessageHistory("lc", store)
    await history.aadd_messages([HumanMessage("hi", id="h1")])
    assert len(await history.aget_messages()) == 1
    middleware = SessionStoreMiddleware(history)
    state: Any = {"messages": [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]}
    await middleware.abefore_model(state, None)  # type: ignore[arg-type]
    await middleware.aafter_model(state, None)  # type: ignore[arg-type]
    await middleware.aafter_agent(state, None)  # type: ignore[arg-type]
    await history.aclear()

    saver = SessionStoreSaver(store)
    thread: Any = {"configurable": {"thread_id": "lg", "checkpoint_ns": ""}}
    stored = await saver.aput(thread, empty_checkpoint(), {"step": -1}, {})
    await saver.aput_writes(stored, [("said", "hi")], "task")
    assert await saver.aget_tuple(stored) is not None
    assert len([found async for found in saver.alist(thread)]) == 1
    await saver.acopy_thread("lg", "lg-copy")
    await saver.aprune(["lg-copy"])
    await saver.adelete_for_runs(["a-run"])
    await saver.adelete_thread("lg")

    sync = store.sync if isinstance(store, AsyncSessionStore) else store
    for session in (
        sync.create_session(model="m"),
        await AsyncSessionStore.from_store(sync).create_session(model="m"),
    ):
        processor = history_processor(session)
        request: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("hi")])]
        assert len(await processor(request)) == 1
        await processor.save(request)


def refusing_to_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def to_thread(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Awaitable[Any]:
        raise AssertionError(f"asyncio.to_thread({func!r}): store work belongs on its workers")

    monkeypatch.setattr(asyncio, "to_thread", to_thread)


@pytest.mark.parametrize("face", ["SessionStore", "AsyncSessionStore"])
def test_no_adapter_hands_store_work_to_asyncio_to_thread(
    sqlite_backend: Backend, monkeypatch: pytest.MonkeyPatch, face: str
) -> None:
    refusing_to_thread(monkeypatch)

    async def calls() -> None:
        if face == "AsyncSessionStore":
            async with AsyncSessionStore(sqlite_backend.url) as store:
                await every_async_call(store)
        else:
            with SessionStore(sqlite_backend.url) as sync:
                await every_async_call(sync)

    asyncio.run(calls())


class SeenSession(AgentsSession):
    """An `AgentsSession` that notes the thread each of its reads runs on."""

    threads: ClassVar[set[threading.Thread]] = set()

    def _items(self) -> list[Any]:
        SeenSession.threads.add(threading.current_thread())
        return super()._items()


def test_adapters_on_one_store_share_its_one_pool(sqlite_backend: Backend) -> None:
    """Twenty adapters on one store, half given the sync store and half the async face that
    opened it, run their reads on the store's pool: at most `WORKER_THREADS` threads, not one
    pool per adapter nor the loop's default executor."""

    async def calls() -> None:
        async with AsyncSessionStore(sqlite_backend.url) as opened:
            store = opened.sync
            assert AsyncSessionStore.from_store(store)._workers is opened._workers
            sessions = [SeenSession(f"s{n}", store) for n in range(10)]
            sessions += [SeenSession(f"a{n}", opened) for n in range(10)]
            await asyncio.gather(*(s.add_items([user_item("hi")]) for s in sessions))
            for _ in range(3):
                await asyncio.gather(*(s.get_items() for s in sessions))

    asyncio.run(calls())
    names = sorted({thread.name for thread in SeenSession.threads})
    assert all(name.startswith("sessionstore") for name in names), names
    assert 1 <= len(names) <= WORKER_THREADS, names
