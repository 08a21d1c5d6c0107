"""`append_openai`: a Chat Completions response, appended as the SDK returned it, goes back to
the API as the model said it (text, `refusal`, tool calls with their `arguments` byte for byte),
with its usage kept. The SDK's own types are the oracle: responses are built with
`ChatCompletion.model_validate`, renders checked against `ChatCompletionMessageParam`.

Regenerate the golden file after a deliberate change with `UPDATE_GOLDEN=1 pytest`, then read
the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from sessionstore import InvalidArgument, Session, SessionStore
from sessionstore.events import OPENAI_CHAT, Native, TextPart, ToolCallPart, Usage
from tests.providers.request_types import check_anthropic, check_chat, check_responses

GOLDEN = Path(__file__).parent / "golden"

READ_ARGS = '{"path":"calc.py", "lines": [1, 20]}'
GREP_ARGS = '{\n  "pattern": "def add",\n  "flags": "-n"\n}'


def check_golden(name: str, rendered: Any) -> None:
    path = GOLDEN / name
    text = json.dumps(rendered, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def completion(message: dict[str, Any], finish: str, **usage: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_50cad350e4",
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "message": message}],
        "usage": usage or None,
    }


TOOL_TURN = completion(
    {
        "role": "assistant",
        "content": "Reading the code first.",
        "refusal": None,
        "annotations": [],
        "tool_calls": [
            {
                "id": "call_read",
                "type": "function",
                "function": {"name": "read", "arguments": READ_ARGS},
            },
            {
                "id": "call_grep",
                "type": "function",
                "function": {"name": "grep", "arguments": GREP_ARGS},
            },
        ],
    },
    "tool_calls",
    prompt_tokens=1_250,
    completion_tokens=48,
    total_tokens=1_298,
    prompt_tokens_details={"cached_tokens": 1_024, "audio_tokens": 0},
    completion_tokens_details={"reasoning_tokens": 0},
)
REFUSAL = completion(
    {"role": "assistant", "content": None, "refusal": "I can't help with deleting the tests."},
    "stop",
    prompt_tokens=1_400,
    completion_tokens=9,
    total_tokens=1_409,
)
ANSWER = {"role": "assistant", "content": "`add` subtracts: use `a + b`.", "refusal": None}


def agent_loop(store: SessionStore) -> Session:
    s = store.create_session(model="gpt-4o")
    s.append_system("You are a coding agent.")
    s.append_user("Why does test_sum fail?")
    s.append_openai(ChatCompletion.model_validate(TOOL_TURN))
    s.append_tool_result("call_read", output="def add(a, b):\n    return a - b\n")
    s.append_tool_result("call_grep", output="calc.py:1:def add(a, b):")
    s.append_user("Then delete the failing test.")
    s.append_openai(ChatCompletion.model_validate(REFUSAL))
    s.append_user("Fine, just explain.")
    s.append_openai(ChatCompletion.model_validate(completion(ANSWER, "stop")).choices[0].message)
    return s


def test_a_chat_completions_loop_renders_back_as_the_model_said_it(store: SessionStore) -> None:
    s = agent_loop(store)
    rendered = store.session(s.id).context().to_openai()  # read back from the database

    check_chat(rendered)
    check_golden("chat_completions.json", rendered)
    calls = rendered[2]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == [READ_ARGS, GREP_ARGS]
    assert rendered[6] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with deleting the tests.",
    }
    check_anthropic(s.context().to_anthropic())
    check_responses(s.context().to_responses())


def test_the_message_keeps_usage_and_its_envelope(store: SessionStore) -> None:
    s = agent_loop(store)
    tool_turn, refusal, answer = [
        m for m in store.session(s.id).context().messages if m.role == "assistant"
    ]

    assert tool_turn.usage == Usage(input=226, output=48, cache_read=1_024)
    assert refusal.usage == Usage(input=1_400, output=9)
    assert answer.usage is None  # a bare message has no usage
    assert tool_turn.native is not None and tool_turn.native.api == OPENAI_CHAT
    assert tool_turn.native.value == {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_50cad350e4",
        "usage": TOOL_TURN["usage"],
        "choice": {"index": 0, "finish_reason": "tool_calls", "logprobs": None},
        "role": "assistant",
        "annotations": [],
    }
    assert refusal.parts == (
        TextPart(
            id=refusal.parts[0].id,
            text="I can't help with deleting the tests.",
            tokens=9,
            native=Native(
                api=OPENAI_CHAT,
                value={"type": "refusal", "refusal": "I can't help with deleting the tests."},
            ),
        ),
    )
    text, read, grep = tool_turn.parts
    assert isinstance(text, TextPart) and text.text == "Reading the code first."
    assert isinstance(read, ToolCallPart) and isinstance(grep, ToolCallPart)
    assert (read.call_id, read.name, read.arguments) == ("call_read", "read", READ_ARGS)
    assert (grep.call_id, grep.name, grep.arguments) == ("call_grep", "grep", GREP_ARGS)


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda: ChatCompletion.model_validate(TOOL_TURN), id="ChatCompletion"),
        pytest.param(lambda: TOOL_TURN, id="its-dict"),
        pytest.param(
            lambda: ChatCompletion.model_validate(TOOL_TURN).choices[0].message, id="message"
        ),
        pytest.param(lambda: TOOL_TURN["choices"][0]["message"], id="message-dict"),
    ],
)
def test_every_form_of_the_response_records_the_same_parts(store: SessionStore, given: Any) -> None:
    s = store.create_session(model="gpt-4o")
    s.append_user("Why does test_sum fail?")

    message = s.append_openai(given())

    assert [(p.call_id, p.arguments) for p in message.parts if isinstance(p, ToolCallPart)] == [
        ("call_read", READ_ARGS),
        ("call_grep", GREP_ARGS),
    ]
    assert s.context().to_openai()[1] == {
        "role": "assistant",
        "content": "Reading the code first.",
        "tool_calls": TOOL_TURN["choices"][0]["message"]["tool_calls"],
    }


@pytest.mark.parametrize(
    ("given", "message"),
    [
        pytest.param({"choices": []}, "the completion has no choices", id="no-choices"),
        pytest.param({"role": "user", "content": "hi"}, "must be the assistant's", id="user"),
        pytest.param(
            completion({"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}, "x"),
            "'function' is missing or not a dict",
            id="call-without-function",
        ),
        pytest.param("hi", "must be the SDK's object or its dict, got str 'hi'", id="a-str"),
    ],
)
def test_a_response_that_is_not_one_is_refused(
    store: SessionStore, given: Any, message: str
) -> None:
    s = store.create_session(model="gpt-4o")
    with pytest.raises(InvalidArgument, match=message):
        s.append_openai(given)
    assert s.version == 1
