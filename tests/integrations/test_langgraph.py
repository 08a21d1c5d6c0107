"""The LangGraph checkpointer: LangGraph's own conformance suite
(`langgraph-checkpoint-conformance`) on every backend, the same graphs run on `InMemorySaver` as
the oracle of what LangGraph expects (histories, time travel, forks), checkpoints that come back
as LangGraph's own saver gives them back, and the hooks that bring the session's context
management to the `messages` channel, under LangChain's own agent and a fake model (no network).

Without LangGraph or the conformance suite the module skips, naming what to install; under
`CI=true` tests/integrations/test_langgraph_installed.py fails instead: CI runs them."""

from __future__ import annotations

import asyncio
import base64
import datetime
import importlib.metadata
import operator
import warnings
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.graph", reason="needs LangGraph: pip install -e '.[langgraph]'")
pytest.importorskip("langchain.agents", reason="needs LangChain: pip install -e '.[langchain]'")
pytest.importorskip(
    "langgraph.checkpoint.conformance",
    reason="needs langgraph-checkpoint-conformance: pip install -e '.[dev]'",
)

from langchain.agents import create_agent
from langchain.agents.middleware import after_model, before_model
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from pydantic import Field

from sessionstore import AsyncSessionStore, SessionStore
from sessionstore.events import InvalidArgument, RecordAppended
from sessionstore.integrations.langgraph import (
    CHECKPOINT_RECORD,
    CONTEXT_RECORD,
    SHOWN_RECORD,
    THREAD_TAG,
    WRITES_RECORD,
    SessionStoreSaver,
    session_id_of,
)
from sessionstore.projections import LiveMessage, LiveToolResult
from tests.conftest import Backend

BIG = "".join(f"line {n}: {'x' * 60}\n" for n in range(4_500))  # about 300 KB

CONFORMANCE_TESTS = {
    "put": 17,
    "put_writes": 10,
    "get_tuple": 10,
    "list": 16,
    "delete_thread": 5,
    "delete_for_runs": 7,
    "copy_thread": 8,
    "prune": 8,
}
"""The tests of langgraph-checkpoint-conformance 0.0.2 per capability: every one runs."""


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LangSmith tracing, whatever the environment says: nothing may leave the machine."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")


# LangGraph's conformance suite


def test_the_conformance_suite_passes_every_test_of_every_capability(backend: Backend) -> None:
    """Each capability's tests run on a fresh saver (and store) over the backend's database."""

    @checkpointer_test(name=f"SessionStoreSaver on {backend.name}")
    async def saver() -> AsyncGenerator[BaseCheckpointSaver[str], None]:
        store = SessionStore(backend.url)
        try:
            yield SessionStoreSaver(store)
        finally:
            store.close()

    report = asyncio.run(validate(saver))
    report.print_report()
    results = report.to_dict()["results"]
    failures = {name: r["failures"] for name, r in results.items() if r["failures"]}
    assert failures == {}
    assert {name: r["tests_passed"] for name, r in results.items()} == CONFORMANCE_TESTS
    assert report.conformance_level() == "FULL"
    print(
        "langgraph-checkpoint-conformance",
        importlib.metadata.version("langgraph-checkpoint-conformance"),
        "langgraph",
        importlib.metadata.version("langgraph"),
        "langgraph-checkpoint",
        importlib.metadata.version("langgraph-checkpoint"),
    )


# graphs, with InMemorySaver as the oracle


class Tally(TypedDict):
    count: int
    said: Annotated[list[str], operator.add]


def tally_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """Two nodes in a row: each adds one and says its name."""
    graph = StateGraph(Tally)
    graph.add_node("first", lambda s: {"count": s["count"] + 1, "said": ["first"]})
    graph.add_node("second", lambda s: {"count": s["count"] + 1, "said": ["second"]})
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    return graph.compile(checkpointer=saver)


def history(graph: Any, config: RunnableConfig) -> list[tuple[Any, ...]]:
    """What `get_state_history` shows, without the ids and times each saver makes anew."""
    return [
        (
            snapshot.values,
            snapshot.next,
            snapshot.metadata["source"] if snapshot.metadata else None,
            snapshot.metadata["step"] if snapshot.metadata else None,
            snapshot.parent_config is None,
        )
        for snapshot in graph.get_state_history(config)
    ]


def run_with_time_travel(graph: Any) -> None:
    """Two runs on a thread, then a run from the checkpoint after the first run's `first`."""
    config: RunnableConfig = {"configurable": {"thread_id": "tally"}}
    graph.invoke({"count": 0, "said": []}, config)
    graph.invoke({"count": 10, "said": ["again"]}, config)
    after_first = next(
        s for s in graph.get_state_history(config) if s.values.get("said") == ["first"]
    )
    forked = graph.update_state(after_first.config, {"said": ["edited"]})
    graph.invoke(None, forked)


def test_history_time_travel_and_forks_are_langgraphs_own(store: SessionStore) -> None:
    """The same runs (two invokes, then an edit of an older checkpoint and a run from it) give
    the same history on our saver as on LangGraph's `InMemorySaver`, and every checkpoint is one
    record of the thread's session, none overwritten."""
    ours, oracle = tally_graph(SessionStoreSaver(store)), tally_graph(InMemorySaver())
    run_with_time_travel(ours)
    run_with_time_travel(oracle)
    config: RunnableConfig = {"configurable": {"thread_id": "tally"}}
    assert history(ours, config) == history(oracle, config)
    assert ours.get_state(config).values == {"count": 2, "said": ["first", "edited", "second"]}
    records = [
        e.payload.record.kind
        for e in store.read(session_id_of("tally"))
        if isinstance(e.payload, RecordAppended)
    ]
    assert records.count(CHECKPOINT_RECORD) == len(history(oracle, config)) == 10
    assert set(records) == {CHECKPOINT_RECORD, WRITES_RECORD}
    assert store.session_info(session_id_of("tally")).tags == (THREAD_TAG,)


def test_an_async_graph_runs_on_the_async_face(backend: Backend) -> None:
    """`ainvoke` and `aget_state_history` on an `AsyncSessionStore`: as on `InMemorySaver`."""

    async def run(saver: BaseCheckpointSaver[Any]) -> list[tuple[Any, ...]]:
        graph = tally_graph(saver)
        config: RunnableConfig = {"configurable": {"thread_id": "async"}}
        assert await graph.ainvoke({"count": 0, "said": []}, config) == {
            "count": 2,
            "said": ["first", "second"],
        }
        return [
            (s.values, s.next, s.metadata["step"] if s.metadata else None)
            async for s in graph.aget_state_history(config)
        ]

    async def ours() -> list[tuple[Any, ...]]:
        async with AsyncSessionStore(backend.url) as store:
            return await run(SessionStoreSaver(store))

    expected = asyncio.run(run(InMemorySaver()))
    assert len(expected) == 4
    assert asyncio.run(ours()) == expected


# what is stored


def test_a_checkpoint_comes_back_as_langgraphs_own_saver_gives_it_back(
    store: SessionStore,
) -> None:
    """Values JSON cannot hold (a set, bytes, a time, LangChain messages) come back as
    `InMemorySaver` gives them back: LangGraph's serializer wrote them, and its typed
    bytes are stored as they are (a tuple comes back a list from both: msgpack has no tuple)."""
    saver = SessionStoreSaver(store)
    values: dict[str, Any] = {
        "pair": (1, "two"),
        "tags": {"a", "b"},
        "raw": b"\x00\xff",
        "when": datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        "messages": [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")],
        "nested": {"deep": [None, 1.5, {"k": True}]},
    }
    checkpoint = Checkpoint(
        v=4,
        id="1f0-checkpoint",
        ts="2025-01-02T03:04:05+00:00",
        channel_values=values,
        channel_versions={name: saver.get_next_version(None, None) for name in values},
        versions_seen={"node": {"pair": "00000000000000000000000000000001.5"}},
        updated_channels=["pair"],
    )
    metadata: Any = {"source": "loop", "step": 3, "parents": {}, "run_id": "r1", "score": 0.5}
    config: RunnableConfig = {"configurable": {"thread_id": "exact", "checkpoint_ns": ""}}
    writes = [("said", ("a", 1)), ("__error__", ValueError("no"))]
    oracle = InMemorySaver()
    for writer in (saver, oracle):
        stored = writer.put(config, checkpoint, metadata, dict(checkpoint["channel_versions"]))
        writer.put_writes(stored, writes, "task")
    expected = oracle.get_tuple(config)
    assert expected is not None and expected.pending_writes is not None
    for reader in (saver, SessionStoreSaver(store)):  # a new saver reads it from the log
        found = reader.get_tuple(config)
        assert found is not None and found.pending_writes is not None
        assert found.checkpoint == expected.checkpoint
        assert found.checkpoint["channel_values"]["tags"] == {"a", "b"}
        assert found.metadata == expected.metadata == metadata
        assert found.pending_writes == expected.pending_writes
        assert found.pending_writes == [  # LangGraph's order: an error's index is -1
            ("task", "__error__", "ValueError('no')"),
            ("task", "said", ["a", 1]),
        ]
    [stored_value] = [
        part.native.value
        for event in store.read(session_id_of("exact"))
        if isinstance(event.payload, RecordAppended)
        for part in event.payload.record.parts
        if isinstance(part.native.value, dict) and part.native.value.get("channel") == "raw"
    ]
    kind, data = saver.serde.dumps_typed(b"\x00\xff")
    assert stored_value["value"] == {"type": kind, "base64": base64.b64encode(data).decode()}


def test_list_without_a_config_reads_every_thread_newest_first(store: SessionStore) -> None:
    saver = SessionStoreSaver(store)
    graph = tally_graph(saver)
    for thread in ("one", "two"):
        graph.invoke({"count": 0, "said": []}, {"configurable": {"thread_id": thread}})
    listed = list(SessionStoreSaver(store).list(None))
    assert sorted({t.config["configurable"]["thread_id"] for t in listed}) == ["one", "two"]
    ids = [t.config["configurable"]["checkpoint_id"] for t in listed]
    assert len(ids) == 8 and ids == sorted(ids, reverse=True)


def secret_checkpoint(saver: SessionStoreSaver, thread: str, text: str) -> RunnableConfig:
    version = saver.get_next_version(None, None)
    checkpoint = Checkpoint(
        v=4,
        id=f"1f0-{text}",
        ts="2025-01-02T03:04:05+00:00",
        channel_values={"note": text},
        channel_versions={"note": version},
        versions_seen={},
        updated_channels=None,
    )
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    return saver.put(config, checkpoint, {"source": "input", "step": -1}, {"note": version})


def stored_texts(store: SessionStore, thread: str) -> list[str]:
    return [
        str(part.native.value)
        for event in store.read(session_id_of(thread))
        if isinstance(event.payload, RecordAppended)
        for part in event.payload.record.parts
    ]


def test_delete_thread_redacts_every_value_and_the_thread_starts_again(
    store: SessionStore,
) -> None:
    saver = SessionStoreSaver(store)
    secret_checkpoint(saver, "gone", "a secret")
    saver.delete_thread("gone")
    assert saver.get_tuple({"configurable": {"thread_id": "gone"}}) is None
    assert stored_texts(store, "gone") == ["[redacted: LangGraph delete_thread]"] * 2
    assert store.verify(session_id_of("gone")).ok
    secret_checkpoint(saver, "gone", "again")
    found = SessionStoreSaver(store).get_tuple({"configurable": {"thread_id": "gone"}})
    assert found is not None and found.checkpoint["channel_values"] == {"note": "again"}


def test_prune_keeps_the_older_values_the_latest_checkpoint_reads(store: SessionStore) -> None:
    """The latest checkpoint changed only `a`: its `b` is stored with the first checkpoint,
    which the prune redacts but for that value."""
    saver = SessionStoreSaver(store)
    config: RunnableConfig = {"configurable": {"thread_id": "pruned", "checkpoint_ns": ""}}
    first = Checkpoint(
        v=4,
        id="1f0-1",
        ts="2025-01-02T03:04:05+00:00",
        channel_values={"a": "a1", "b": "b1"},
        channel_versions={"a": "1", "b": "1"},
        versions_seen={},
        updated_channels=None,
    )
    stored = saver.put(config, first, {"step": 0}, {"a": "1", "b": "1"})
    second = Checkpoint(
        v=4,
        id="1f0-2",
        ts="2025-01-02T03:04:06+00:00",
        channel_values={"a": "a2", "b": "b1"},
        channel_versions={"a": "2", "b": "1"},
        versions_seen={},
        updated_channels=None,
    )
    saver.put(stored, second, {"step": 1}, {"a": "2"})
    saver.prune(["pruned"])
    [kept] = list(SessionStoreSaver(store).list(config))
    assert kept.checkpoint == second
    texts = stored_texts(store, "pruned")
    assert texts.count("[redacted: LangGraph prune]") == 2  # the first checkpoint and its `a`
    assert len(texts) == 5


def test_versions_increase_and_two_forks_never_share_one(store: SessionStore) -> None:
    saver = SessionStoreSaver(store)
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    assert first.startswith("0" * 31 + "1.") and second.startswith("0" * 31 + "2.")
    assert first < second
    assert saver.get_next_version(first, None) != second


# the hooks: the session's context management on the messages channel


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's generic fake model, able to take tools and keeping every request."""

    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.requests.append([message.model_copy(deep=True) for message in messages])
        return super()._generate(messages, stop, run_manager, **kwargs)


@tool
def read_log() -> str:
    """Read the build log."""
    return BIG


def read_log_call() -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "read_log", "args": {}, "id": "call_1"}])


def texts(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(type(m).__name__, m.text[:20]) for m in messages]


def tool_outputs(messages: Sequence[LiveMessage]) -> list[str]:
    return [p.output for m in messages for p in m.parts if isinstance(p, LiveToolResult)]


@pytest.fixture
def agent_store(sqlite_backend: Backend) -> Iterator[SessionStore]:
    with SessionStore(sqlite_backend.url) as store:
        yield store


def test_the_hooks_show_the_model_the_sessions_context_and_follow_time_travel(
    agent_store: SessionStore,
) -> None:
    """A 300 KB tool output is stored whole and reaches the model (and the state) truncated in
    the same run; a run from an older checkpoint gets the context as it was there, in a fork,
    while the thread's session keeps the branch it left."""
    store = agent_store
    replies = [read_log_call(), AIMessage("It failed."), AIMessage("Fine now."), AIMessage("B")]
    model = ScriptedChatModel(messages=iter(replies))
    saver = SessionStoreSaver(store, model="gpt-4o", context_window=128_000)
    agent = create_agent(
        model,
        [read_log],
        checkpointer=saver,
        middleware=[before_model(saver.pre_model_hook), after_model(saver.post_model_hook)],
    )
    config: RunnableConfig = {"configurable": {"thread_id": "support"}}
    agent.invoke({"messages": [HumanMessage("Why did the build fail?")]}, config)
    session = saver.session("support")
    assert tool_outputs(session.context(restore_pruned=True).messages) == [BIG]
    [shown] = tool_outputs(session.context().messages)
    assert shown.startswith("line 0: ") and len(shown) < len(BIG) // 5
    sent = model.requests[1][-1]
    assert isinstance(sent, ToolMessage)
    assert (sent.content == shown, sent.tool_call_id) == (True, "call_1")
    state = agent.get_state(config).values["messages"]
    assert isinstance(state[2], ToolMessage) and state[2].content == shown
    assert state[2].id == sent.id

    agent.invoke({"messages": [HumanMessage("And now?")]}, config)
    first_run_end = next(
        s for s in agent.get_state_history(config) if not s.next and len(s.values["messages"]) == 4
    )
    agent.invoke({"messages": [HumanMessage("Other question")]}, first_run_end.config)
    assert texts(model.requests[-1]) == [
        ("HumanMessage", "Why did the build fa"),
        ("AIMessage", ""),
        ("ToolMessage", "line 0: xxxxxxxxxxxx"),
        ("AIMessage", "It failed."),
        ("HumanMessage", "Other question"),
    ]
    context = saver.context_session("support")
    assert context.id != session.id
    assert context.header.parent_session_id == session.id
    assert [m.role for m in context.context().messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert [m.role for m in saver.session("support").context().messages][-2:] == [
        "user",
        "assistant",
    ]  # the branch it left: "And now?", "Fine now."
    kinds = [
        e.payload.record.kind
        for e in store.read(session.id)
        if isinstance(e.payload, RecordAppended)
    ]
    assert kinds.count(CONTEXT_RECORD) == 1 and kinds.count(SHOWN_RECORD) == 4


def test_a_copied_thread_continues_with_the_sources_context(agent_store: SessionStore) -> None:
    model = ScriptedChatModel(messages=iter([read_log_call(), AIMessage("It failed."), "Next"]))
    saver = SessionStoreSaver(agent_store)
    agent = create_agent(
        model, [read_log], checkpointer=saver, middleware=[before_model(saver.pre_model_hook)]
    )
    agent.invoke({"messages": [HumanMessage("Why?")]}, {"configurable": {"thread_id": "source"}})
    saver.copy_thread("source", "copy")
    saver.delete_thread("source")
    agent.invoke({"messages": [HumanMessage("Then?")]}, {"configurable": {"thread_id": "copy"}})
    assert texts(model.requests[-1]) == [
        ("HumanMessage", "Why?"),
        ("AIMessage", ""),
        ("ToolMessage", "line 0: xxxxxxxxxxxx"),
        ("AIMessage", "It failed."),
        ("HumanMessage", "Then?"),
    ]
    assert tool_outputs(saver.session("copy").context(restore_pruned=True).messages) == [BIG]


def test_the_async_hooks_run_an_async_agent(sqlite_backend: Backend) -> None:
    async def run() -> list[str]:
        async with AsyncSessionStore(sqlite_backend.url) as store:
            saver = SessionStoreSaver(store)
            agent = create_agent(
                ScriptedChatModel(messages=iter(["one", "two"])),
                checkpointer=saver,
                middleware=[
                    before_model(saver.apre_model_hook),
                    after_model(saver.apost_model_hook),
                ],
            )
            config: RunnableConfig = {"configurable": {"thread_id": "async"}}
            for said in ("hi", "again"):
                await agent.ainvoke({"messages": [HumanMessage(said)]}, config)
            session = await store.run_sync(saver.session, "async")
            return [m.parts[0].text for m in session.context().messages]  # type: ignore[union-attr]

    assert asyncio.run(run()) == ["hi", "one", "again", "two"]


def test_a_hook_outside_a_graph_says_what_it_needs(agent_store: SessionStore) -> None:
    saver = SessionStoreSaver(agent_store)
    with pytest.raises(InvalidArgument, match="inside a LangGraph graph"):
        saver.pre_model_hook({"messages": []})


def test_a_tuple_is_a_checkpoint_tuple(agent_store: SessionStore) -> None:
    saver = SessionStoreSaver(agent_store)
    secret_checkpoint(saver, "t", "x")
    found = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert isinstance(found, CheckpointTuple)
    assert found.config == {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "1f0-x"}
    }


def test_the_hook_is_a_pre_model_hook_of_create_react_agent(agent_store: SessionStore) -> None:
    """LangGraph's own prebuilt agent (deprecated for LangChain's `create_agent`, still used)
    takes the hooks as its `pre_model_hook` and `post_model_hook`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        saver = SessionStoreSaver(agent_store)
        model = ScriptedChatModel(messages=iter(["one", "two"]))
        agent = create_react_agent(
            model,
            [],
            checkpointer=saver,
            pre_model_hook=saver.pre_model_hook,
            post_model_hook=saver.post_model_hook,
        )
    config: RunnableConfig = {"configurable": {"thread_id": "react"}}
    agent.invoke({"messages": [HumanMessage("hi")]}, config)
    agent.invoke({"messages": [HumanMessage("again")]}, config)
    assert texts(model.requests[-1]) == [
        ("HumanMessage", "hi"),
        ("AIMessage", "one"),
        ("HumanMessage", "again"),
    ]
    live = saver.session("react").context().messages
    assert [m.parts[0].text for m in live] == ["hi", "one", "again", "two"]  # type: ignore[union-attr]
