"""The LangChain integration under LangChain's own agent (`create_agent`), its
`RunnableWithMessageHistory` and its fake chat models (no network): messages round-trip
verbatim, and a 300 KB tool output reaches the model truncated inside the run."""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from sessionstore import AsyncSessionStore, SessionStore
from sessionstore.events import ReasoningPart, TextPart, ToolCallPart, Usage
from sessionstore.events._errors import InvalidArgument
from sessionstore.integrations.langchain import (
    SessionStoreChatMessageHistory,
    SessionStoreMiddleware,
    base_message_of,
    message_of,
)
from sessionstore.projections import LiveToolResult
from tests.conftest import Backend

BIG = "".join(f"line {n}: {'x' * 60}\n" for n in range(4_500))  # about 300 KB


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LangSmith tracing, whatever the environment says: nothing may leave the machine."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's generic fake model, which answers from a script, able to take tools (the
    agent binds them) and keeping every request it was sent."""

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


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(replies))


def calls_read_log(call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "read_log", "args": {}, "id": call_id}])


@tool
def read_log() -> str:
    """The whole build log."""
    return BIG


def tool_outputs(request: list[BaseMessage]) -> list[str]:
    return [m.text for m in request if isinstance(m, ToolMessage)]


def kinds(messages: list[BaseMessage]) -> list[str]:
    return [m.type for m in messages]


def test_an_agent_sees_a_300_kb_output_truncated_and_resumes_from_a_new_store(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    model = scripted(calls_read_log("call_1"), "The build failed.", "Yes.")
    with SessionStore(url) as store:
        history = SessionStoreChatMessageHistory(
            "run-1", store, model="gpt-4o", context_window=128_000
        )
        agent = create_agent(
            model,
            tools=[read_log],
            system_prompt="Be brief.",
            middleware=[SessionStoreMiddleware(history)],
        )
        first = agent.invoke({"messages": [HumanMessage("Why did the build fail?")]})
        agent.invoke({"messages": [HumanMessage("Is it the log?")]})  # only its new message
        messages = history.messages
        live = history.session.context().messages

    assert [kinds(request) for request in model.requests] == [
        ["system", "human"],
        ["system", "human", "ai", "tool"],
        ["system", "human", "ai", "tool", "ai", "human"],  # the session is the memory
    ]
    [shown] = tool_outputs(model.requests[1])  # the request right after the tool ran
    head, notice = shown.rsplit("\n", 1)
    assert len(shown) < len(BIG) // 4 and BIG.startswith(head)
    assert notice.startswith("[") and "after this were cut" in notice
    [result] = live[2].parts
    assert isinstance(result, LiveToolResult) and result.output == shown  # what the session shows
    assert result.status == "truncated"
    assert tool_outputs(model.requests[2]) == [shown]  # the next run sees the same cut
    assert tool_outputs(first["messages"]) == [shown]  # the agent's state held the cut view
    # stored once each, whole, and as LangChain made them
    assert kinds(messages) == ["human", "ai", "tool", "ai", "human", "ai"]
    assert len(live) == 6
    tool_message = messages[2]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.content == BIG and tool_message.tool_call_id == "call_1"
    assert tool_message.name == "read_log" and tool_message.id == first["messages"][2].id
    assert messages[1] == model.requests[1][2]  # the AIMessage with its call, deep-equal
    assert messages[3] == first["messages"][3]
    assert [m.text for m in messages if m.type != "tool"] == [
        "Why did the build fail?",
        "",
        "The build failed.",
        "Is it the log?",
        "Yes.",
    ]

    with SessionStore(url) as store:
        again = SessionStoreChatMessageHistory("run-1", store)
        assert again.messages == messages
        model_view = again.model_messages()
    assert tool_outputs(model_view) == [shown]
    assert [m.id for m in model_view] == [m.id for m in messages]


def test_with_a_checkpointer_the_state_messages_are_stored_once(tmp_path: Path) -> None:
    """A checkpointer keeps the state between runs too: what the middleware put there (under
    the messages' ids) is recognised, and only each run's new messages are stored."""
    model = scripted(calls_read_log("c1"), "Done.", calls_read_log("c2"), "Done again.")
    with SessionStore(f"sqlite:///{tmp_path / 'c.db'}") as store:
        history = SessionStoreChatMessageHistory("threaded", store)
        agent = create_agent(
            model,
            tools=[read_log],
            middleware=[SessionStoreMiddleware(history)],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage("read it")]}, config)
        final = agent.invoke({"messages": [HumanMessage("read it again")]}, config)
        stored = history.messages
        assert len(history.session.context().messages) == 8
    expected = ["human", "ai", "tool", "ai", "human", "ai", "tool", "ai"]
    assert kinds(stored) == expected
    assert kinds(final["messages"]) == expected
    assert [m.id for m in final["messages"]] == [m.id for m in stored]
    assert kinds(model.requests[-1]) == expected[:-1]


def test_an_async_agent_on_the_async_store(tmp_path: Path) -> None:
    model = scripted(calls_read_log("a1"), "Read.")

    async def run() -> tuple[list[BaseMessage], list[BaseMessage]]:
        async with AsyncSessionStore(f"sqlite:///{tmp_path / 'a.db'}") as store:
            history = SessionStoreChatMessageHistory("async", store, model="claude-sonnet-4-5")
            agent = create_agent(
                model, tools=[read_log], middleware=[SessionStoreMiddleware(history)]
            )
            await agent.ainvoke({"messages": [HumanMessage("read the log")]})
            assert history.session.header.model == "claude-sonnet-4-5"
            return await history.aget_messages(), model.requests[1]

    stored, second_request = asyncio.run(run())
    assert kinds(stored) == ["human", "ai", "tool", "ai"]
    assert stored[2].content == BIG
    [shown] = tool_outputs(second_request)
    assert len(shown) < len(BIG) // 4


def test_runnable_with_message_history_keeps_the_conversation(tmp_path: Path) -> None:
    model = scripted("Hello, Ada.", "You are Ada.")
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    with SessionStore(f"sqlite:///{tmp_path / 'r.db'}") as store:

        def history_of(session_id: str) -> SessionStoreChatMessageHistory:
            return SessionStoreChatMessageHistory(session_id, store)

        with pytest.warns(DeprecationWarning, match="RunnableWithMessageHistory"):
            chain = RunnableWithMessageHistory(
                prompt | model,
                history_of,
                input_messages_key="question",
                history_messages_key="history",
            )
        config: Any = {"configurable": {"session_id": "chat-1"}}
        chain.invoke({"question": "I am Ada."}, config)
        chain.invoke({"question": "Who am I?"}, config)
        stored = history_of("chat-1").messages
    assert [m.text for m in stored] == ["I am Ada.", "Hello, Ada.", "Who am I?", "You are Ada."]
    assert [m.text for m in model.requests[1]] == [
        "Be brief.",
        "I am Ada.",
        "Hello, Ada.",
        "Who am I?",
    ]


def conversation() -> list[BaseMessage]:
    return [
        SystemMessage("Be brief."),
        HumanMessage("Read the log.", id="h1"),
        AIMessage(
            content=[
                {"type": "thinking", "thinking": "Read it.", "signature": "c2lnbmF0dXJl"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_log", "input": {}},
            ],
            tool_calls=[{"name": "read_log", "args": {}, "id": "toolu_1", "type": "tool_call"}],
            usage_metadata={
                "input_tokens": 120,
                "output_tokens": 30,
                "total_tokens": 150,
                "input_token_details": {"cache_read": 100},
            },
            response_metadata={"model_name": "claude-sonnet-4-5", "stop_reason": "tool_use"},
            id="msg_1",
        ),
        ToolMessage(BIG, tool_call_id="toolu_1", name="read_log", id="t1", artifact={"n": 4500}),
    ]


def test_the_history_round_trips_clears_and_shows_the_model_the_cut(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'h.db'}") as store:
        history = SessionStoreChatMessageHistory("h", store, model="claude-sonnet-4-5")
        history.add_messages(conversation())
        assert history.messages == conversation()  # deep-equal, the 300 KB output whole
        view = history.model_messages()
        live = history.session.context().messages
        assert view[0] == SystemMessage("Be brief.", id=live[0].id)  # the state needs an id
        assert view[1:3] == conversation()[1:3]
        tool_message = view[3]
        assert isinstance(tool_message, ToolMessage)
        assert tool_message.id == "t1" and tool_message.artifact == {"n": 4500}
        assert len(tool_message.text) < len(BIG) // 4 and "were cut" in tool_message.text
        assert [m.id for m in view] == [live[0].id, "h1", "msg_1", "t1"]
        assert [m.role for m in live] == ["system", "user", "assistant", "tool"]
        reasoning, text, call = live[2].parts
        assert reasoning == ReasoningPart(id=reasoning.id, text="Read it.", tokens=reasoning.tokens)
        assert isinstance(text, TextPart) and text.text == "Reading."
        assert isinstance(call, ToolCallPart) and (call.call_id, call.arguments) == (
            "toolu_1",
            "{}",
        )
        assert live[2].usage == Usage(input=20, output=30, cache_read=100)

        version = history.session.version
        history.clear()
        assert history.messages == []
        assert history.session.context(at=version).messages == live  # replay still has them
        history.add_messages([HumanMessage("again")])
        assert [m.text for m in history.messages] == ["again"]


def test_the_async_history_on_the_async_store(tmp_path: Path) -> None:
    async def steps() -> None:
        async with AsyncSessionStore(f"sqlite:///{tmp_path / 'ah.db'}") as store:
            history = SessionStoreChatMessageHistory("ah", store)
            await history.aadd_messages(conversation())
            assert await history.aget_messages() == conversation()
            await history.aclear()
            assert await history.aget_messages() == []
            session = await store.session("ah")
            assert len(await session.timeline()) == 6  # started, 4 messages, cleared

    asyncio.run(steps())


class ThreadNotingHistory(SessionStoreChatMessageHistory):
    """Notes the thread each use of the session runs on."""

    threads: list[int]

    @property
    def session(self) -> Any:
        self.threads.append(threading.get_ident())
        return super().session


def test_the_async_methods_never_touch_the_store_on_the_event_loop(tmp_path: Path) -> None:
    model = scripted(calls_read_log("n1"), "Read.")

    async def steps() -> tuple[int, list[int]]:
        with SessionStore(f"sqlite:///{tmp_path / 'n.db'}") as store:
            history = ThreadNotingHistory("n", store)
            history.threads = []
            await history.aadd_messages([HumanMessage("hi")])
            await history.aget_messages()
            agent = create_agent(
                model, tools=[read_log], middleware=[SessionStoreMiddleware(history)]
            )
            await agent.ainvoke({"messages": [HumanMessage("read it")]})
            await history.aclear()
            return threading.get_ident(), history.threads

    loop_thread, threads = asyncio.run(steps())
    assert len(threads) > 6 and loop_thread not in threads


def test_a_bad_batch_raises_and_writes_nothing(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'b.db'}") as store:
        history = SessionStoreChatMessageHistory("b", store)
        history.add_messages([HumanMessage("hi")])
        version = history.session.version
        bad_batches: list[tuple[type[Exception], list[BaseMessage]]] = [
            (InvalidArgument, [HumanMessage("x"), FunctionMessage(content="out", name="f")]),
            (InvalidArgument, [HumanMessage("x"), RemoveMessage(id="m")]),
            (InvalidArgument, [HumanMessage("x", additional_kwargs={"raw": b"bytes"})]),
            (InvalidArgument, [calls_read_log("c"), calls_read_log("c")]),
            (InvalidArgument, [AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}])]),
        ]
        for error, batch in bad_batches:
            with pytest.raises(error):
                history.add_messages(batch)
        assert history.session.version == version
        assert [m.text for m in history.messages] == ["hi"]


@pytest.mark.postgres
def test_the_history_on_postgresql(postgres_backend: Backend) -> None:
    with SessionStore(postgres_backend.url) as store:
        SessionStoreChatMessageHistory("pg", store).add_messages(conversation())
    with SessionStore(postgres_backend.url) as store:
        history = SessionStoreChatMessageHistory("pg", store)
        assert history.messages == conversation()
        assert tool_outputs(history.model_messages())[0] != BIG


# the converters, on any message

texts = st.text(max_size=40)
ids = st.one_of(st.none(), st.text(min_size=1, max_size=12))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
metadata = st.dictionaries(st.text(min_size=1, max_size=10), json_values, max_size=3)
blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, texts, texts),
    st.builds(lambda d: {"type": "redacted_thinking", "data": d}, texts),
    st.builds(lambda u: {"type": "image", "url": u, "mime_type": "image/png"}, texts),
    st.builds(lambda v: {"type": "citation_of_the_future", "value": v}, json_values),
)
contents = st.one_of(texts, st.lists(st.one_of(texts, blocks), max_size=4))


@st.composite
def ai_messages(draw: st.DrawFn) -> AIMessage:
    count = draw(st.integers(0, 2))
    calls = [
        {
            "name": draw(st.text(min_size=1, max_size=8)),
            "args": draw(st.dictionaries(texts, json_values, max_size=2)),
            "id": f"call_{n}",
            "type": "tool_call",
        }
        for n in range(count)
    ]
    usage = draw(
        st.none()
        | st.builds(
            lambda i, o: {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
            st.integers(0, 10**6),
            st.integers(0, 10**6),
        )
    )
    return AIMessage(
        content=draw(contents),
        tool_calls=calls,
        usage_metadata=usage,
        response_metadata=draw(metadata),
        additional_kwargs=draw(metadata),
        id=draw(ids),
        name=draw(st.none() | texts),
    )


any_message = st.one_of(
    st.builds(HumanMessage, content=contents, id=ids, additional_kwargs=metadata),
    st.builds(SystemMessage, content=contents, id=ids),
    ai_messages(),
    st.builds(
        ToolMessage,
        content=contents,
        tool_call_id=st.text(min_size=1, max_size=8),
        id=ids,
        status=st.sampled_from(["success", "error"]),
        artifact=json_values,
    ),
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(any_message)
def test_any_message_converts_and_comes_back_deep_equal(message: BaseMessage) -> None:
    converted = message_of(message)
    back = base_message_of(converted)
    assert back == message and type(back) is type(message)
    assert converted.role == {"human": "user", "system": "system", "ai": "assistant"}.get(
        message.type, "tool"
    )


def test_a_message_sessionstore_wrote_itself_comes_back_as_a_langchain_message(
    tmp_path: Path,
) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        history = SessionStoreChatMessageHistory("own", store)
        session = history.session
        user = session.append_user("summary of what came before")
        session.append_assistant(
            "ok", tool_calls=[{"id": "c9", "name": "f", "arguments": '{"a":1}'}]
        )
        session.append_tool_result("c9", "done")
        messages = history.messages
    assert messages[0] == HumanMessage("summary of what came before", id=user.id)
    assert isinstance(messages[1], AIMessage)
    assert messages[1].tool_calls == [
        {"name": "f", "args": {"a": 1}, "id": "c9", "type": "tool_call"}
    ]
    assert isinstance(messages[2], ToolMessage) and messages[2].content == "done"


def test_a_cleared_history_clears_the_agent_even_with_a_checkpointer(tmp_path: Path) -> None:
    """The checkpointer's state still holds the run's messages after `clear()`: they are not
    stored again, and the next request holds only what came after the clear."""
    model = scripted(calls_read_log("k1"), "Read.", "Fresh start.")
    with SessionStore(f"sqlite:///{tmp_path / 'k.db'}") as store:
        history = SessionStoreChatMessageHistory("cleared", store)
        agent = create_agent(
            model,
            tools=[read_log],
            middleware=[SessionStoreMiddleware(history)],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage("read it")]}, config)
        history.clear()
        final = agent.invoke({"messages": [HumanMessage("new topic")]}, config)
        stored = history.messages
    assert [m.text for m in model.requests[-1]] == ["new topic"]
    assert [m.text for m in stored] == ["new topic", "Fresh start."]
    assert [m.text for m in final["messages"]] == ["new topic", "Fresh start."]


def test_pruning_reaches_the_model_and_the_history_keeps_the_original(tmp_path: Path) -> None:
    """A window small enough that the next turn overflows: `before_model` prunes the old output,
    the model is sent its placeholder under the message's own id, and `messages` still give
    the original."""
    model = scripted(calls_read_log("p1"), "Read.", "You're welcome.")
    with SessionStore(f"sqlite:///{tmp_path / 'p.db'}") as store:
        history = SessionStoreChatMessageHistory(
            "pruned",
            store,
            context_window=16_000,
            output_reserve=1_000,
            compression={
                "protect_turns": 1,
                "protect_tokens": 0,
                "minimum_prune": 1_000,
                "safety_margin_ratio": 1,  # the full 2,000-token margin makes the turn overflow
                "output_ratio": 1,  # the log shown whole up to the window: it is pruned, not cut
            },
        )
        agent = create_agent(model, tools=[read_log], middleware=[SessionStoreMiddleware(history)])
        agent.invoke({"messages": [HumanMessage("read it")]})
        agent.invoke({"messages": [HumanMessage("thanks")]})
        stored = history.messages
        [result] = history.session.context().messages[2].parts
    assert isinstance(result, LiveToolResult) and result.status == "pruned"
    sent = model.requests[2]
    assert kinds(sent) == ["human", "ai", "tool", "ai", "human"]
    assert sent[2].text == result.output and sent[2].text.startswith("[Output pruned at ")
    assert sent[2].id == stored[2].id and stored[2].content == BIG


def test_without_langchain_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "sessionstore.integrations.langchain")
    with pytest.raises(ImportError, match=r"pip install 'sessionstore\[langchain\]'"):
        importlib.import_module("sessionstore.integrations.langchain")


def test_a_tool_message_no_call_waits_for_is_kept_as_langchains_own_history_keeps_it(
    tmp_path: Path,
) -> None:
    call = calls_read_log("c")
    call.id = "ai-1"
    batch: list[BaseMessage] = [
        HumanMessage("x", id="h"),
        ToolMessage("out", tool_call_id="nobody", id="t0"),  # answers no call
        call,
        ToolMessage("first", tool_call_id="c", id="t1"),
        ToolMessage("again", tool_call_id="c", id="t2"),  # the call is answered already
        AIMessage("done", id="a"),
    ]
    oracle = InMemoryChatMessageHistory()
    oracle.add_messages(batch)
    with SessionStore(f"sqlite:///{tmp_path / 'o.db'}") as store:
        history = SessionStoreChatMessageHistory("o", store)
        history.add_messages(batch)
        assert history.messages == oracle.messages == batch
        # the model is handed them as LangChain would hand it its own history's
        assert history.model_messages() == batch
        roles = [m.role for m in history.session.context().messages]
        assert roles == ["user", "user", "assistant", "tool", "user", "assistant"]
    with SessionStore(f"sqlite:///{tmp_path / 'o.db'}") as store:
        assert SessionStoreChatMessageHistory("o", store).messages == batch


def test_two_histories_of_one_session_write_in_turn(store: SessionStore) -> None:
    """As `RunnableWithMessageHistory` builds a history a call: two of one id, each with its
    own handle, add and clear after each other's writes."""
    one = SessionStoreChatMessageHistory("shared", store)
    two = SessionStoreChatMessageHistory("shared", store)
    one.add_messages([HumanMessage("1")])
    two.add_messages([AIMessage("2")])
    one.add_messages([HumanMessage("3")])
    assert [m.content for m in two.messages] == ["1", "2", "3"]
    two.clear()
    one.add_messages([HumanMessage("4")])
    one.clear()
    two.add_messages([HumanMessage("5")])
    assert [m.content for m in one.messages] == ["5"]
