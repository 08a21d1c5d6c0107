"""Tool calls as the model produced them: `ToolCall(arguments=...)` keeps the JSON text byte for
byte, and the SDKs' own calls (and their dicts) go straight into `append_assistant`."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ToolUseBlock
from openai.types.chat import ChatCompletion

from sessionstore import InvalidArgument, Session, SessionStore, ToolCall
from sessionstore.events import OPENAI_CHAT, ToolCallPart
from tests.providers.request_types import check_anthropic, check_chat, check_responses

RAW = '{"path": "a.py",  "limit": 1.50, "note": "caf\\u00e9"}'
"""Spacing, a float's text and an escape a canonical dump would change."""


def session(store: SessionStore) -> Session:
    s = store.create_session(model="gpt-4o")
    s.append_user("read a.py")
    return s


def calls_of(s: Session) -> list[ToolCallPart]:
    return [p for m in s.context().messages for p in m.parts if isinstance(p, ToolCallPart)]


def completion(*tool_calls: dict[str, Any]) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-4o-2024-08-06",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "logprobs": None,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "tool_calls": list(tool_calls),
                    },
                }
            ],
        }
    )


FUNCTION_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "read", "arguments": RAW},
}
CUSTOM_CALL = {"id": "call_2", "type": "custom", "custom": {"name": "shell", "input": "ls -la"}}


def test_raw_arguments_reach_every_render_byte_for_byte(store: SessionStore) -> None:
    s = session(store)
    message = s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", arguments=RAW)])
    s.append_tool_result("c1", output="print(1)")

    assert message.parts[0] == ToolCallPart(
        id=message.parts[0].id, call_id="c1", name="read", arguments=RAW, tokens=27
    )
    context = store.session(s.id).context()  # read back from the database
    assert context.to_openai()[1]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": RAW}}
    ]
    assert context.to_responses()[1] == {
        "type": "function_call",
        "call_id": "c1",
        "name": "read",
        "arguments": RAW,
    }
    assert context.to_anthropic()["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": "c1",
            "name": "read",
            "input": {"path": "a.py", "limit": 1.5, "note": "café"},
        }
    ]
    check_chat(context.to_openai())
    check_anthropic(context.to_anthropic())
    check_responses(context.to_responses())


def test_arguments_that_are_not_json_are_recorded_as_the_model_wrote_them(
    store: SessionStore,
) -> None:
    s = session(store)
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", arguments='{"path": "a.py"')])

    (call,) = calls_of(store.session(s.id))
    assert (call.arguments, call.input) == ('{"path": "a.py"', None)
    assert s.context().to_openai()[1]["tool_calls"][0]["function"]["arguments"] == (
        '{"path": "a.py"'
    )


def test_input_stays_for_objects(store: SessionStore) -> None:
    s = session(store)
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", input={"path": "a.py"})])

    assert calls_of(s)[0].arguments == '{"path":"a.py"}'


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"input": {"path": "a.py"}, "arguments": '{"path": "a.py"}'},
            r"ToolCall: give input \(an object\) or arguments \(the JSON text the model "
            r"produced\), not both",
            id="both",
        ),
        pytest.param(
            {"input": '{"path": "a.py"}'},
            r"ToolCall: input: a str is the arguments' JSON text: pass it as arguments=\.\.\., "
            "and an object as input",
            id="json-text-as-input",
        ),
        pytest.param(
            {"arguments": {"path": "a.py"}},
            "ToolCall: arguments: Input should be a valid string",
            id="arguments-not-text",
        ),
    ],
)
def test_a_tool_call_takes_its_arguments_one_way(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        ToolCall(id="c1", name="read", **fields)


def test_a_key_with_a_line_break_is_named_on_the_one_line_of_the_error() -> None:
    with pytest.raises(InvalidArgument) as raised:
        ToolCall(id="c1", name="read", input={"\n": b""})
    assert str(raised.value) == "ToolCall: input.dict.'\\n': input was not a valid JSON value"


def test_model_validate_refuses_both_forms_too() -> None:
    with pytest.raises(ValueError, match="not both"):
        ToolCall.model_validate({"id": "c", "name": "n", "input": {}, "arguments": "{}"})


def test_the_sdks_own_tool_calls_go_straight_into_append_assistant(store: SessionStore) -> None:
    s = session(store)
    sdk = completion(FUNCTION_CALL, CUSTOM_CALL)

    message = s.append_assistant(tool_calls=sdk.choices[0].message.tool_calls)
    s.append_tool_result("call_1", output="print(1)")
    s.append_tool_result("call_2", output="a.py")

    assert [(p.call_id, p.name, p.arguments) for p in message.parts] == [  # type: ignore[union-attr]
        ("call_1", "read", RAW),
        ("call_2", "shell", "ls -la"),
    ]
    assert [p.native.api for p in message.parts] == [OPENAI_CHAT, OPENAI_CHAT]  # type: ignore[union-attr]
    rendered = store.session(s.id).context().to_openai()
    assert rendered[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [FUNCTION_CALL, CUSTOM_CALL],
    }
    check_chat(rendered)
    check_responses(s.context().to_responses())
    check_anthropic(s.context().to_anthropic())


def test_tool_calls_none_is_no_call(store: SessionStore) -> None:
    """`message.tool_calls` is `None` when the model called nothing."""
    s = session(store)
    sdk = completion()
    message = s.append_assistant("done", tool_calls=None)

    assert [p.type for p in message.parts] == ["text"]
    assert s.append_assistant("again", tool_calls=sdk.choices[0].message.tool_calls).parts[0].type


def test_dicts_and_anthropic_blocks_are_tool_calls_too(store: SessionStore) -> None:
    s = session(store)
    message = s.append_assistant(
        tool_calls=[
            FUNCTION_CALL,
            {"id": "c2", "name": "read", "arguments": "{}"},
            {"id": "c3", "name": "read", "input": {"path": "b.py"}},
            {"type": "tool_use", "id": "toolu_4", "name": "read", "input": {"path": "c.py"}},
            ToolUseBlock(type="tool_use", id="toolu_5", name="read", input={"path": "d.py"}),
        ]
    )

    assert [(p.call_id, p.arguments) for p in message.parts] == [  # type: ignore[union-attr]
        ("call_1", RAW),
        ("c2", "{}"),
        ("c3", '{"path":"b.py"}'),
        ("toolu_4", '{"path":"c.py"}'),
        ("toolu_5", '{"path":"d.py"}'),
    ]


def test_from_openai_reads_a_call_and_keeps_it() -> None:
    sdk = completion(FUNCTION_CALL).choices[0].message.tool_calls
    assert sdk is not None

    call = ToolCall.from_openai(sdk[0])

    assert (call.id, call.name, call.arguments) == ("call_1", "read", RAW)
    assert call.to_part().native is not None
    assert call.to_part().native.value == FUNCTION_CALL  # type: ignore[union-attr]
    assert ToolCall.from_openai(CUSTOM_CALL).arguments == "ls -la"


@pytest.mark.parametrize(
    ("tool_calls", "message"),
    [
        pytest.param(
            [5],
            r"tool_calls must be a list of tool calls \(ToolCall, the SDK's calls or their "
            r"dicts\); tool_calls\[0\] is int 5",
            id="an-int",
        ),
        pytest.param(
            [{"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}],
            r"tool_calls\[0\]: a dict must be a Chat Completions tool call, an Anthropic "
            "tool_use block or ToolCall's fields",
            id="a-responses-item",
        ),
        pytest.param(
            [{"id": "c", "type": "function", "function": {"name": "n", "arguments": {}}}],
            "a tool call's arguments must be the JSON text the model produced",
            id="arguments-an-object",
        ),
        pytest.param(
            [{"id": "c", "type": "function"}],
            "a tool call: 'function' is missing or not a dict",
            id="no-function",
        ),
        pytest.param([{"id": "c"}], "ToolCall: name: Field required", id="fields-missing"),
        pytest.param(
            {"id": "c", "name": "n"},
            r"tool_calls must be a list of tool calls \(ToolCall, the SDK's calls or their "
            r"dicts\), got dict",
            id="one-dict",
        ),
    ],
)
def test_a_bad_tool_call_is_a_typed_error_and_writes_nothing(
    store: SessionStore, tool_calls: Any, message: str
) -> None:
    s = session(store)
    version = s.version

    with pytest.raises(InvalidArgument, match=message):
        s.append_assistant(tool_calls=tool_calls)

    assert store.version(s.id) == version
