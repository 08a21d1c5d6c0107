"""`sessionstore.integrations.pydantic_ai` under pydantic-ai's own `Agent`, with its `FunctionModel`
(no network, no keys): a 300 KB tool return reaches the model truncated inside the run, two
runs and a resume store every message once, and messages round-trip deep-equal."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryImage,
    FilePart,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from sessionstore import AsyncSessionStore, InvalidArgument, SessionStore
from sessionstore.integrations.pydantic_ai import (
    SessionHistory,
    history_processor,
    messages_of,
    model_messages,
    model_messages_of,
)
from tests.conftest import Backend

BIG = "".join(f"line {n}: {'x' * 60}\n" for n in range(4_500))  # about 300 KB
T0 = datetime(2026, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)


def read_log() -> str:
    """The whole build log."""
    return BIG


class Scripted:
    """A `FunctionModel` function: thinks and calls `read_log` first, then answers; keeps
    every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        n = len(self.requests)
        if n == 1:
            thinking = ThinkingPart("the log will say", id="rs_1", signature="sig-1")
            return ModelResponse(parts=[thinking, ToolCallPart("read_log", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart(f"answer {n}")])


def tool_returns(request: list[ModelMessage]) -> list[Any]:
    return [
        part.content
        for message in request
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def with_content(message: ModelMessage, content: str) -> ModelMessage:
    """A copy of a request whose tool return's content is `content`."""
    assert isinstance(message, ModelRequest)
    parts = [
        ToolReturnPart(p.tool_name, content, p.tool_call_id, timestamp=p.timestamp)
        if isinstance(p, ToolReturnPart)
        else p
        for p in message.parts
    ]
    return ModelRequest(
        parts=parts,
        timestamp=message.timestamp,
        instructions=message.instructions,
        run_id=message.run_id,
        conversation_id=message.conversation_id,
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_two_runs_a_truncated_output_and_a_resume(backend: Backend) -> None:
    script = Scripted()
    model = FunctionModel(script)

    with SessionStore(backend.url) as store:
        session = store.create_session(session_id="run-1", model="m", context_window=128_000)
        agent = Agent(
            model,
            instructions="Be brief.",
            tools=[read_log],
            capabilities=[SessionHistory(session)],
        )
        first = agent.run_sync("Why did the build fail?")
        second = agent.run_sync("Is it the log?", message_history=first.all_messages())
        assert (first.output, second.output) == ("answer 2", "answer 3")
        stored = [(m.role, m.parts[0].type) for m in session.context().messages]
        assert stored == [
            ("user", "text"),
            ("assistant", "reasoning"),
            ("tool", "tool_result"),
            ("assistant", "text"),
            ("user", "text"),
            ("assistant", "text"),
        ]
        result = session.context().messages[2].parts[0]
        assert result.type == "tool_result" and result.status == "truncated"
        cut = result.output

    shown = tool_returns(script.requests[1])  # the model's request right after the tool ran
    assert shown == [cut] and len(cut) < len(BIG) // 4
    head, note = cut.rsplit("\n", 1)
    assert BIG.startswith(head) and "were cut" in note
    assert tool_returns(script.requests[2]) == shown  # the second run sees the same cut
    # the history the run ends with is what the model saw; the store has the original
    everything = second.all_messages()
    assert tool_returns(everything) == shown

    with SessionStore(backend.url) as store:  # resume in a new store on the same database
        again = store.session("run-1")
        history = model_messages(again)
        assert tool_returns(history) == [BIG]
        expected = [with_content(m, BIG) if tool_returns([m]) else m for m in everything]
        assert history == expected  # deep-equal: timestamps, run ids, signature, usage
        third = Agent(
            model, instructions="Be brief.", tools=[read_log], capabilities=[SessionHistory(again)]
        ).run_sync("And now?", message_history=history)
        assert third.output == "answer 4"
        assert tool_returns(script.requests[3]) == shown  # cut again, from the stored view
        roles = [m.role for m in again.context().messages]
        assert roles == [*("user", "assistant", "tool", "assistant"), *("user", "assistant") * 2]


def test_the_thinking_signature_and_the_whole_response_come_back(tmp_path: Path) -> None:
    script = Scripted()
    with SessionStore(f"sqlite:///{tmp_path / 't.db'}") as store:
        session = store.create_session(model="m")
        agent = Agent(
            FunctionModel(script), tools=[read_log], capabilities=[SessionHistory(session)]
        )
        agent.run_sync("go")
        [response] = [m for m in model_messages(session) if isinstance(m, ModelResponse)][:1]
        thinking = response.parts[0]
        assert isinstance(thinking, ThinkingPart)
        assert (thinking.content, thinking.id, thinking.signature) == (
            "the log will say",
            "rs_1",
            "sig-1",
        )
        assert response == script.requests[1][1]  # the response as the model returned it
        reasoning = session.context().messages[1].parts[0]
        assert reasoning.type == "reasoning" and reasoning.text == "the log will say"


def test_an_async_session_and_a_bare_processor(tmp_path: Path) -> None:
    async def run() -> tuple[list[ModelMessage], list[str]]:
        async with AsyncSessionStore(f"sqlite:///{tmp_path / 'a.db'}") as store:
            session = await store.create_session(model="m", context_window=128_000)
            processor = history_processor(session)
            from pydantic_ai.capabilities import ProcessHistory

            script = Scripted()
            agent = Agent(
                FunctionModel(script), tools=[read_log], capabilities=[ProcessHistory(processor)]
            )
            result = await agent.run("go")
            before = len((await session.context()).messages)
            await processor.save(result.all_messages())  # the final answer
            await processor.save(result.all_messages())  # stored once
            context = await session.context()
            assert before == 3 and len(context.messages) == 4
            return await model_messages(session), [m.role for m in context.messages]

    history, roles = asyncio.run(run())
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert tool_returns(history) == [BIG]


# the converters


def table() -> list[ModelMessage]:
    usage = RequestUsage(input_tokens=120, cache_read_tokens=100, output_tokens=7)
    return [
        ModelRequest(
            parts=[
                SystemPromptPart("Be brief.", timestamp=T0),
                UserPromptPart(
                    [
                        "look at",
                        ImageUrl("https://example.com/a.png", media_type="image/png"),
                        BinaryImage(b"\x89PNG", media_type="image/png"),
                    ],
                    timestamp=T0,
                ),
            ],
            timestamp=T0,
            instructions="Be brief.",
            run_id="run-a",
            metadata={"k": [1, 2]},
        ),
        ModelResponse(
            parts=[
                ThinkingPart("hmm", id="th_1", signature="c2lnbmF0dXJl", provider_name="anthropic"),
                TextPart("calling", provider_details={"x": 1}),
                ToolCallPart("read", '{"path": "a.py"', tool_call_id="call_1"),  # not JSON: kept
                ToolCallPart("grep", {"q": "x"}, tool_call_id="call_2"),
                NativeToolCallPart("web_search", {"query": "q"}, tool_call_id="ws_1"),
                NativeToolReturnPart("web_search", {"hits": 3}, tool_call_id="ws_1", timestamp=T0),
                FilePart(BinaryImage(b"img", media_type="image/png")),
            ],
            usage=usage,
            model_name="claude-x",
            timestamp=T0,
            provider_name="anthropic",
            provider_details={"stop_reason": "tool_use"},
            provider_response_id="msg_1",
            finish_reason="tool_call",
            run_id="run-a",
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("read", "print('hi')", "call_1", timestamp=T0),
                ToolReturnPart("grep", {"hits": [1, 2], "ok": True}, "call_2", timestamp=T0),
                RetryFeedbackPart(
                    "try again", retry=RetryInfo("model_retry", attempt=1), timestamp=T0
                ),
                UserPromptPart("and then?", timestamp=T0),
            ],
            timestamp=T0,
            run_id="run-a",
        ),
        ModelResponse(parts=[], timestamp=T0),
        ModelRequest(parts=[], timestamp=T0, state="interrupted"),
    ]


@pytest.mark.parametrize("message", table(), ids=lambda m: f"{m.kind}-{len(m.parts)}")
def test_each_message_converts_and_comes_back_deep_equal(message: ModelMessage) -> None:
    back = model_messages_of(messages_of(message))
    assert back == [message]
    assert back == ModelMessagesTypeAdapter.validate_json(  # as pydantic-ai's own JSON gives it
        ModelMessagesTypeAdapter.dump_json([message])
    )


def test_a_request_is_messages_in_the_order_of_its_parts() -> None:
    request = table()[2]
    assert [(m.role, [p.type for p in m.parts]) for m in messages_of(request)] == [
        ("tool", ["tool_result"]),
        ("tool", ["tool_result"]),
        ("user", ["text", "text"]),
    ]
    grep = messages_of(request)[1].parts[0]
    assert grep.type == "tool_result" and grep.output == '{"hits":[1,2],"ok":true}'


def test_the_table_round_trips_through_a_store(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'r.db'}") as store:
        session = store.create_session(model="m")
        processor = history_processor(session)
        stored = asyncio.run(processor.save(table()))
        assert len(stored) == 8
        assert asyncio.run(processor.save(table())) == []  # nothing twice
        assert model_messages(store.session(session.id)) == table()


def test_bad_input_raises_and_writes_nothing(tmp_path: Path) -> None:
    with SessionStore(f"sqlite:///{tmp_path / 'b.db'}") as store:
        session = store.create_session(model="m")
        processor = history_processor(session)
        with pytest.raises(InvalidArgument):
            asyncio.run(processor.save([object()]))  # type: ignore[list-item]
        assert session.version == 1 and session.context().messages == ()
        with pytest.raises(InvalidArgument):
            history_processor("not a session")  # type: ignore[arg-type]


texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
response_parts = st.one_of(
    st.builds(TextPart, texts),
    st.builds(ThinkingPart, texts, id=st.none() | texts, signature=st.none() | texts),
)


@settings(max_examples=40, deadline=None)
@given(
    parts=st.lists(response_parts, max_size=4),
    prompt=texts,
    output=texts | st.dictionaries(texts, st.integers() | texts, max_size=3),
)
def test_any_turn_round_trips(parts: list[Any], prompt: str, output: Any) -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(prompt, timestamp=T0)], timestamp=T0),
        ModelResponse(parts=[*parts, ToolCallPart("t", {}, tool_call_id="c")], timestamp=T0),
        ModelRequest(parts=[ToolReturnPart("t", output, "c", timestamp=T0)], timestamp=T0),
    ]
    ours = [mine for message in messages for mine in messages_of(message)]
    assert model_messages_of(ours) == messages


def test_a_tool_return_no_call_waits_for_is_kept_verbatim(tmp_path: Path) -> None:
    """pydantic-ai's own type adapter takes a history that starts with tool returns (a
    fragment) or answers a call twice: so does the session, each part where it stood."""
    fragment: list[ModelMessage] = [
        ModelRequest(
            parts=[
                ToolReturnPart("read", {"lines": 3}, "nobody-called", timestamp=T0),
                UserPromptPart("go on", timestamp=T0),
                ToolReturnPart("read", "text", "nobody-either", timestamp=T0),
            ],
            timestamp=T0,
        ),
        ModelResponse(parts=[ToolCallPart("read", {}, tool_call_id="c")], timestamp=T0),
        ModelRequest(parts=[ToolReturnPart("read", "first", "c", timestamp=T0)], timestamp=T0),
        ModelRequest(parts=[ToolReturnPart("read", "again", "c", timestamp=T0)], timestamp=T0),
    ]
    dumped = ModelMessagesTypeAdapter.dump_python(fragment, mode="json")
    assert ModelMessagesTypeAdapter.validate_python(dumped) == fragment  # the oracle takes it
    model = Scripted()
    with SessionStore(f"sqlite:///{tmp_path / 'f.db'}") as store:
        session = store.create_session(model="m")
        stored = asyncio.run(history_processor(session).save(fragment))
        assert len(stored) == 6  # three parts of the first request, a call, two returns
        assert model_messages(session) == fragment
        assert [m.role for m in session.context().messages] == [
            "user",
            "user",
            "user",
            "assistant",
            "tool",
            "user",
        ]
        agent = Agent(FunctionModel(model), capabilities=[SessionHistory(session)])
        agent.run_sync("and now?", message_history=model_messages(session))
    # the model is shown the history as pydantic-ai shows it with no session at all (it
    # leaves out the returns that answer nothing), then the new prompt
    alone = Scripted()
    Agent(FunctionModel(alone)).run_sync("and now?", message_history=fragment)
    assert model.requests[0][:-1] == alone.requests[0][:-1]
    assert len(model.requests[0]) == len(alone.requests[0]) == 3
