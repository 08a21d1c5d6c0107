"""Token accounting follows what each render sends: reasoning counts only where it goes back to
its own provider, another provider's block by what a render shows of it, a pending call's
synthetic result in every render; `Context.tokens` counts the render of the session's API."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from sessionstore import InvalidArgument, Session, SessionStore, ToolCall
from sessionstore.events import (
    ANTHROPIC,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Message,
    Native,
    NativePart,
    ReasoningPart,
    TextPart,
)
from sessionstore.projections import INTERRUPTED, estimate_tokens
from tests.providers.request_types import check_anthropic, check_chat, check_responses

SERVER_TOOL_TEXT = '[web_search {"query":"python add"}]'

CLAUDE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "content": [
        {"type": "thinking", "thinking": "I should read the file first.", "signature": "sig=="},
        {"type": "text", "text": "Reading."},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "python add"},
        },
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
    ],
    "usage": {"input_tokens": 10, "output_tokens": 5},
}
GPT5 = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-5",
    "status": "completed",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look at b.py next."}],
            "encrypted_content": "gAAAAB...",
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "read",
            "arguments": '{"path": "b.py"}',
            "status": "completed",
        },
    ],
}
GPT4O = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "  ",
                "tool_calls": [
                    {
                        "id": "call_9",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "c.py"}'},
                    }
                ],
            },
        }
    ],
}


def three_providers(store: SessionStore) -> Session:
    """One session that talked to all three APIs; its last call (Chat's) has no result yet."""
    s = store.create_session(model="any")
    s.append_system("be careful")  # 2 tokens
    s.append_user("read a.py")  # 3
    # thinking 7, text 2, server_tool_use 27 as JSON, tool_use 7
    s.append_anthropic(AnthropicMessage.model_validate(CLAUDE))
    s.append_tool_result("toolu_1", output="print(1)")  # 4
    s.append_openai_response(Response.model_validate(GPT5))  # reasoning 6, function_call 8
    s.append_tool_result("call_1", output="x=2")  # 3
    s.append_openai(ChatCompletion.model_validate(GPT4O))  # blank text 1, tool call 8
    return s


def test_each_render_counts_what_it_sends(store: SessionStore) -> None:
    context = three_providers(store).context()
    interrupted = estimate_tokens(INTERRUPTED)
    server_tool = estimate_tokens(SERVER_TOOL_TEXT)
    assert (interrupted, server_tool) == (16, 9)

    assert context.tokens_for(ANTHROPIC) == 2 + 3 + (7 + 2 + 27 + 7) + 4 + 8 + 3 + 8 + interrupted
    assert context.tokens_for(OPENAI_CHAT) == (
        2 + 3 + (2 + server_tool + 7) + 4 + 8 + 3 + (1 + 8) + interrupted
    )
    assert context.tokens_for(OPENAI_RESPONSES) == (
        2 + 3 + (2 + server_tool + 7) + 4 + (6 + 8) + 3 + (1 + 8) + interrupted
    )
    assert [context.tokens_for(api) for api in (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES)] == [
        87,
        63,
        69,
    ]


def test_what_is_counted_is_what_is_sent(store: SessionStore) -> None:
    """The parts the counts above leave out or add are the ones each render leaves out or
    adds: the thinking goes only to Anthropic, the reasoning item only to Responses, the server
    tool's JSON only to Anthropic, blank text nowhere but OpenAI, and a result stands in for
    the pending call everywhere."""
    context = three_providers(store).context()
    anthropic, chat, responses = (
        context.to_anthropic(),
        context.to_openai(),
        context.to_responses(),
    )
    check_anthropic(anthropic)
    check_chat(chat)
    check_responses(responses)

    claude_turn = anthropic["messages"][1]["content"]
    assert [b["type"] for b in claude_turn] == ["thinking", "text", "server_tool_use", "tool_use"]
    assert "reasoning" not in str(anthropic)
    assert [b["type"] for b in anthropic["messages"][3]["content"]] == ["tool_use"]
    assert [b["type"] for b in anthropic["messages"][5]["content"]] == ["tool_use"]  # no "  "
    assert anthropic["messages"][6]["content"][0]["content"] == INTERRUPTED
    assert chat[2] == {
        "role": "assistant",
        "content": f"Reading.\n\n{SERVER_TOOL_TEXT}",
        "tool_calls": chat[2]["tool_calls"],
    }
    assert chat[-1] == {"role": "tool", "tool_call_id": "call_9", "content": INTERRUPTED}
    assert [i.get("type") for i in responses].count("reasoning") == 1
    assert responses[-1] == {
        "type": "function_call_output",
        "call_id": "call_9",
        "output": INTERRUPTED,
    }


def test_context_tokens_counts_the_render_of_the_api_the_session_talks_to(
    store: SessionStore,
) -> None:
    s = store.create_session(model="any")
    s.append_user("read a.py")
    assert (s.context().api, s.context().tokens) == (OPENAI_CHAT, 3)

    s.append_anthropic(AnthropicMessage.model_validate(CLAUDE))
    s.append_tool_result("toolu_1", output="print(1)")
    context = s.context()
    assert context.api == ANTHROPIC
    assert context.tokens == context.tokens_for(ANTHROPIC) == 3 + 43 + 4
    assert context.tokens_for(OPENAI_CHAT) == 3 + (2 + 9 + 7) + 4

    s.append_openai_response(Response.model_validate(GPT5))
    context = s.context()
    assert context.api == OPENAI_RESPONSES
    assert context.tokens == context.tokens_for(OPENAI_RESPONSES) == 3 + 18 + 4 + 14 + 16

    s.append_assistant("done")  # by hand: the session still talks to the Responses API
    assert s.context().api == OPENAI_RESPONSES


def test_the_session_total_counts_every_recorded_part(store: SessionStore) -> None:
    """What the overflow policies measure: every part's recorded count, reasoning of every
    provider, without synthetic results."""
    s = three_providers(store)
    assert s.tokens == 2 + 3 + 43 + 4 + 14 + 3 + 9 == 78
    assert sum(m.tokens for m in s.context().messages) == 78


def test_a_pending_call_counts_its_synthetic_result(store: SessionStore) -> None:
    s = store.create_session(model="gpt-4o")
    s.append_user("read a.py")  # 3
    s.append_assistant(tool_calls=[ToolCall(id="c1", name="read", input={})])  # 1 + 1

    assert s.context().tokens == 3 + 2 + estimate_tokens(INTERRUPTED)
    s.append_tool_result("c1", output="print(1)")  # 4
    assert s.context().tokens == 3 + 2 + 4


@pytest.mark.parametrize("api", ["gemini", "", None, ANTHROPIC.upper()])
def test_tokens_for_an_api_without_a_render_is_refused(store: SessionStore, api: Any) -> None:
    context = store.create_session(model="m").context()
    with pytest.raises(InvalidArgument, match="no render for the API"):
        context.tokens_for(api)


def test_chat_completions_sends_no_block_of_its_own(store: SessionStore) -> None:
    """A reasoning or unmodelled part marked as Chat Completions' (a compatible server's
    `reasoning_content`, say) is shown as any other provider's: reasoning not at all."""
    s = store.create_session(model="gpt-4o")
    s.append_user("hi")  # 1
    native = Native(api=OPENAI_CHAT, value={"reasoning_content": "thinking..."})
    s.append_message(
        Message(
            role="assistant",
            parts=(
                ReasoningPart(text="thinking...", native=native),  # 2 tokens, never sent
                NativePart(native=native, text="[note]"),  # shown as its text
                TextPart(text="Hello!"),  # 2
            ),
        )
    )
    context = s.context()

    assert context.to_openai()[1] == {"role": "assistant", "content": "[note]\n\nHello!"}
    assert context.tokens_for(OPENAI_CHAT) == 1 + estimate_tokens("[note]") + 2
