"""`to_anthropic()`: the rules for what another provider produced, and the turn shapes Anthropic
refuses (a thinking block after other content, a turn ending in thinking, an empty text block,
a tool id outside its pattern), checked with exact renders and with the fake server's rules.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from sessionstore import Session, SessionStore
from sessionstore.events import (
    OPENAI_RESPONSES,
    Message,
    Native,
    NativePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
)
from sessionstore.projections import CONTINUED, context_of, fold_events
from sessionstore.providers import anthropic_message
from tests.projections.log import Log
from tests.providers.fake_anthropic import FakeAnthropic, validate_messages

TASK = "test_parse_offset fails, please fix it"


def session(store: SessionStore, **compression: Any) -> Session:
    s = store.create_session(model="claude-sonnet-4-6", compression=compression or None)
    s.append_user(TASK)
    return s


def claude(*blocks: dict[str, Any], stop: str = "tool_use", n: int = 1) -> dict[str, Any]:
    return {
        "id": f"msg_{n:02d}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": list(blocks),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def thinking(n: int) -> dict[str, Any]:
    return {"type": "thinking", "thinking": f"Step {n}: look closer.", "signature": f"sig{n}=="}


def tool_use(call_id: str, path: str = "a.py") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read", "input": {"path": path}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(value: str = TASK) -> dict[str, Any]:
    return {"role": "user", "content": [text(value)]}


def result(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": output}


def accepted(request: dict[str, Any], *responses: dict[str, Any]) -> None:
    """`request` passes the Messages API's rules, the thinking of `responses` being the
    server's own."""
    server = FakeAnthropic()
    for response in responses:
        server.issued(response["content"])
    validate_messages(request["messages"])
    server.check_messages(request["messages"], foreign_calls=True)


# thinking turns


def test_a_thinking_turn_after_an_assistant_turn_is_not_merged_into_it(
    store: SessionStore,
) -> None:
    """Merged, the second response's thinking would follow the first one's text: the API
    refuses a turn with thinking that does not start with it."""
    first = claude(thinking(1), text("I'll read the test first."), stop="end_turn", n=1)
    second = claude(thinking(2), tool_use("toolu_2"), n=2)
    s = session(store)
    s.append_anthropic(first)
    s.append_anthropic(second)
    s.append_tool_result("toolu_2", output="def test(): ...")

    request = s.context().to_anthropic()

    assert request["messages"] == [
        user(),
        {"role": "assistant", "content": first["content"]},
        user(CONTINUED),
        {"role": "assistant", "content": second["content"]},
        {"role": "user", "content": [result("toolu_2", "def test(): ...")]},
    ]
    accepted(request, first, second)


def test_an_assistant_turn_of_our_own_before_a_thinking_turn_stays_apart(
    store: SessionStore,
) -> None:
    response = claude(thinking(1), tool_use("toolu_1"))
    s = session(store)
    s.append_assistant("Plan: read the test, then the parser.")
    s.append_anthropic(response)
    s.append_tool_result("toolu_1", output="ok")

    request = s.context().to_anthropic()

    assert request["messages"] == [
        user(),
        {"role": "assistant", "content": [text("Plan: read the test, then the parser.")]},
        user(CONTINUED),
        {"role": "assistant", "content": response["content"]},
        {"role": "user", "content": [result("toolu_1", "ok")]},
    ]
    accepted(request, response)


def test_an_assistant_turn_after_a_thinking_turn_stays_apart(store: SessionStore) -> None:
    response = claude(thinking(1), text("Found it."), stop="end_turn")
    s = session(store)
    s.append_anthropic(response)
    s.append_assistant("(the loop added a note)")
    s.append_user("thanks, go on")

    request = s.context().to_anthropic()

    assert request["messages"] == [
        user(),
        {"role": "assistant", "content": response["content"]},
        user(CONTINUED),
        {"role": "assistant", "content": [text("(the loop added a note)")]},
        user("thanks, go on"),
    ]
    accepted(request, response)


def test_assistant_turns_without_thinking_still_merge(store: SessionStore) -> None:
    s = session(store)
    s.append_assistant("First part.")
    s.append_assistant("Second part.")
    s.append_user("ok")
    assert s.context().to_anthropic()["messages"] == [
        user(),
        {"role": "assistant", "content": [text("First part."), text("Second part.")]},
        user("ok"),
    ]


def test_one_response_stored_block_by_block_is_one_turn(store: SessionStore) -> None:
    """Claude Code writes one entry per block, and a parallel call's result can come before
    the next call of the same response: sent apart, the thinking would end a turn of its own
    and the calls would start turns without it."""
    blocks = [thinking(1), text("Reading both."), tool_use("toolu_a"), tool_use("toolu_b", "b.py")]
    s = session(store)
    s.append_message(anthropic_message(claude(blocks[0], n=1)))
    s.append_message(anthropic_message(claude(blocks[1], n=1)))
    s.append_message(anthropic_message(claude(blocks[2], n=1)))
    s.append_tool_result("toolu_a", output="a")
    s.append_message(anthropic_message(claude(blocks[3], n=1)))
    s.append_tool_result("toolu_b", output="b")
    final = claude(thinking(2), text("Both read."), stop="end_turn", n=2)
    s.append_anthropic(final)
    s.append_user("thanks")

    request = s.context().to_anthropic()

    assert request["messages"] == [
        user(),
        {"role": "assistant", "content": blocks},
        {"role": "user", "content": [result("toolu_a", "a"), result("toolu_b", "b")]},
        {"role": "assistant", "content": final["content"]},
        user("thanks"),
    ]
    accepted(request, claude(*blocks, n=1), final)


def test_two_responses_with_one_id_apart_from_each_other_stay_apart(
    store: SessionStore,
) -> None:
    """Only entries with nothing but tool results between them are merged: a user's turn
    ends the response."""
    s = session(store)
    s.append_message(anthropic_message(claude(text("One."), stop="end_turn", n=1)))
    s.append_user("and?")
    s.append_message(anthropic_message(claude(text("Two."), stop="end_turn", n=1)))
    s.append_user("ok")
    assert s.context().to_anthropic()["messages"] == [
        user(),
        {"role": "assistant", "content": [text("One.")]},
        user("and?"),
        {"role": "assistant", "content": [text("Two.")]},
        user("ok"),
    ]


def test_a_response_cut_off_while_thinking_is_left_out(store: SessionStore) -> None:
    """A turn that ends in thinking is refused; a response stopped at max_tokens in its
    thinking has nothing else, and no tool use depends on it."""
    cut = claude(thinking(1), stop="max_tokens")
    s = session(store)
    s.append_anthropic(cut)
    s.append_user("go on")
    request = s.context().to_anthropic()
    assert request["messages"] == [{"role": "user", "content": [text(TASK), text("go on")]}]
    accepted(request, cut)


def test_thinking_at_the_end_of_a_turn_is_left_out_and_the_rest_kept(
    store: SessionStore,
) -> None:
    cut = claude(thinking(1), text("Looking."), thinking(2), stop="max_tokens")
    s = session(store)
    s.append_anthropic(cut)
    s.append_user("go on")
    request = s.context().to_anthropic()
    assert request["messages"][1] == {
        "role": "assistant",
        "content": [thinking(1), text("Looking.")],
    }
    accepted(request, cut)


def test_empty_text_blocks_are_left_out_even_from_anthropic(store: SessionStore) -> None:
    response = claude(thinking(1), text(""), text(" \n"), tool_use("toolu_1"))
    s = session(store)
    s.append_anthropic(response)
    s.append_tool_result("toolu_1", output="ok")
    request = s.context().to_anthropic()
    assert request["messages"][1] == {
        "role": "assistant",
        "content": [thinking(1), tool_use("toolu_1")],
    }
    accepted(request, response)


def test_a_final_assistant_turn_loses_trailing_whitespace_but_not_its_thinking(
    store: SessionStore,
) -> None:
    response = claude(thinking(1), text("Done.\n\n"), stop="end_turn")
    s = session(store)
    s.append_anthropic(response)
    assert s.context().to_anthropic()["messages"][1] == {
        "role": "assistant",
        "content": [thinking(1), text("Done.")],
    }


def test_reasoning_without_its_anthropic_block_is_left_out(store: SessionStore) -> None:
    """Reasoning recorded before blocks were kept (or by hand) has no signature: it cannot be
    a thinking block, and its text was never conversation."""
    s = session(store)
    s.append_message(
        Message(
            role="assistant",
            parts=(ReasoningPart(text="I should read it."), TextPart(text="Reading.")),
        )
    )
    s.append_user("ok")
    assert s.context().to_anthropic()["messages"][1] == {
        "role": "assistant",
        "content": [text("Reading.")],
    }


# what another provider produced

RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1764000000,
    "model": "gpt-5",
    "status": "completed",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Read the test first."}],
            "encrypted_content": "gAAAAABo-encrypted",
        },
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "dateparse utc"},
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Reading the test.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "read",
            "arguments": '{"path": "tests/test_parser.py"}',
            "status": "completed",
        },
    ],
    "usage": {
        "input_tokens": 20,
        "output_tokens": 3,
        "total_tokens": 23,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 1},
    },
}


def test_openai_reasoning_is_left_out_its_items_shown_as_text_its_calls_converted(
    store: SessionStore,
) -> None:
    s = session(store)
    appended = s.append_openai_response(Response.model_validate(RESPONSE))
    s.append_tool_result("call_1", output="def test(): ...")
    stand_in = appended.parts[1]
    assert isinstance(stand_in, NativePart) and stand_in.text

    request = s.context().to_anthropic()

    assert request["messages"] == [
        user(),
        {
            "role": "assistant",
            "content": [
                text(stand_in.text),
                text("Reading the test."),
                tool_use("call_1", "tests/test_parser.py"),
            ],
        },
        {"role": "user", "content": [result("call_1", "def test(): ...")]},
    ]
    accepted(request)


def test_an_item_of_another_api_without_text_is_left_out(store: SessionStore) -> None:
    s = session(store)
    s.append_message(
        Message(
            role="assistant",
            parts=(
                NativePart(native=Native(api="openai.responses", value={"type": "x"})),
                TextPart(text="Hello."),
            ),
        )
    )
    assert s.context().to_anthropic()["messages"][1] == {
        "role": "assistant",
        "content": [text("Hello.")],
    }


def test_a_call_id_outside_anthropics_pattern_is_rewritten_alike_in_use_and_result(
    store: SessionStore,
) -> None:
    """OpenAI-compatible servers hand out ids such as `functions.read:0`, which Anthropic
    refuses (`^[a-zA-Z0-9_-]+$`): both sides of the pair get the same stand-in."""
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1764000000,
        "model": "kimi-k2",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "functions.read:0",
                            "type": "function",
                            "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                        },
                        {
                            "id": "functions.read/0",
                            "type": "function",
                            "function": {"name": "read", "arguments": '{"path":"b.py"}'},
                        },
                    ],
                },
            }
        ],
    }
    s = session(store)
    s.append_openai(ChatCompletion.model_validate(completion))
    s.append_tool_result("functions.read:0", output="a")
    s.append_tool_result("functions.read/0", output="b")

    request = s.context().to_anthropic()

    uses = request["messages"][1]["content"]
    results = request["messages"][2]["content"]
    ids = [block["id"] for block in uses]
    assert [block["tool_use_id"] for block in results] == ids
    assert all(re.fullmatch(r"functions_read_0_[0-9a-f]{8}", i) for i in ids)
    assert ids[0] != ids[1]
    assert [block["content"] for block in results] == ["a", "b"]
    accepted(request)


# what the context does to tool results and the head


def test_a_pruned_result_shows_its_placeholder(store: SessionStore) -> None:
    s = session(store, protect_turns=0, protect_tokens=0, minimum_prune=0)
    response = claude(thinking(1), tool_use("toolu_1"))
    s.append_anthropic(response)
    s.append_tool_result("toolu_1", output="line of output\n" * 200)
    s.append_user("go on")
    plan = s.prune()
    assert plan is not None

    request = s.context().to_anthropic()

    placeholder = plan.placeholder.replace("{part_id}", plan.part_ids[0])
    assert request["messages"][2] == {
        "role": "user",
        "content": [result("toolu_1", placeholder), text("go on")],
    }
    accepted(request, response)


def test_a_compaction_summary_is_a_user_text_turn(store: SessionStore) -> None:
    s = session(store)
    first = claude(thinking(1), tool_use("toolu_1"), n=1)
    second = claude(thinking(2), tool_use("toolu_2"), n=2)
    s.append_anthropic(first)
    s.append_tool_result("toolu_1", output="output one " * 50)
    s.append_user("now the parser")
    s.append_anthropic(second)
    s.append_tool_result("toolu_2", output="output two")
    s.compact(
        lambda messages, target: "The test and its output were read.", keep_turns=1, keep_tokens=0
    )

    request = s.context().to_anthropic()

    assert request["messages"] == [
        {
            "role": "user",
            "content": [
                text("[Summary of earlier conversation]\nThe test and its output were read."),
                text("now the parser"),
            ],
        },
        {"role": "assistant", "content": second["content"]},
        {"role": "user", "content": [result("toolu_2", "output two")]},
    ]
    accepted(request, second)


# any mix of turns


def _assistant_turn(kind: str, n: int) -> Message:
    """One assistant message of a given kind; its blocks are Anthropic's where it has any."""
    blocks: dict[str, list[dict[str, Any]]] = {
        "think+text": [thinking(n), text(f"Text {n}.")],
        "think+call": [thinking(n), text(f"Calling {n}."), tool_use(f"toolu_{n}")],
        "think+empty+call": [thinking(n), text(""), tool_use(f"toolu_{n}")],
        "think only": [thinking(n)],
        "redacted+think+call": [
            {"type": "redacted_thinking", "data": f"red{n}"},
            thinking(n),
            tool_use(f"toolu_{n}"),
        ],
    }
    if kind in blocks:
        return anthropic_message(claude(*blocks[kind], n=n))
    if kind == "own text":
        return Message(role="assistant", parts=(TextPart(text=f"Own {n}."),))
    if kind == "own call":
        call = ToolCallPart.from_input(call_id=f"call_{n}", name="read", input={"n": n})
        return Message(role="assistant", parts=(call,))
    if kind == "foreign reasoning":
        native = Native(api=OPENAI_RESPONSES, value={"type": "reasoning", "id": f"rs_{n}"})
        return Message(
            role="assistant",
            parts=(ReasoningPart(text="hidden", native=native), TextPart(text=f"Foreign {n}.")),
        )
    return Message(role="assistant", parts=(TextPart(text=" "),))  # "blank"


KINDS = [
    "think+text",
    "think+call",
    "think+empty+call",
    "think only",
    "redacted+think+call",
    "own text",
    "own call",
    "foreign reasoning",
    "blank",
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(KINDS), st.sampled_from(["answered", "user", "nothing"])),
        min_size=1,
        max_size=8,
    )
)
def test_any_mix_of_turns_renders_a_request_anthropic_accepts(
    turns: list[tuple[str, str]],
) -> None:
    """Assistant turns of every kind, back to back or with user turns between, their calls
    answered or left pending (the render answers those): the request passes the rules."""
    log = Log()
    log.text("user", TASK, 5, "u0")
    server = FakeAnthropic()
    for n, (kind, then) in enumerate(turns, start=1):
        message = log.message(_assistant_turn(kind, n))
        if message.native is not None:  # a response from Anthropic: its blocks are the server's
            server.issued([native_block(part) for part in message.parts])
        if then == "answered":
            for call in (p for p in message.parts if isinstance(p, ToolCallPart)):
                log.result(call.call_id, f"result {n}", 3, f"r{n}")
        elif then == "user":
            log.text("user", f"user {n}", 2, f"u{n}")
    log.text("user", "last word", 2, "u-last")

    request = context_of(fold_events(log.events)).to_anthropic()

    validate_messages(request["messages"])
    server.check_messages(request["messages"], foreign_calls=True)


def native_block(part: object) -> dict[str, Any]:
    value = part.native.value  # type: ignore[attr-defined]
    assert isinstance(value, dict)
    return value
