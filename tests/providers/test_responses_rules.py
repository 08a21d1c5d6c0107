"""`to_responses()` for what other providers produced, and for what context management did:
the written rules of `sessionstore.projections._render_responses`, checked with the SDK's types and
with the stateless server's rules (`fake_responses.input_errors`) at every point of a session's
history.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from sessionstore import CompactionError, Session, SessionStore
from sessionstore.events import InvalidArgument, InvalidEvent, NativePart, ToolCallPart
from sessionstore.projections import LiveToolResult
from tests.providers.fake_responses import input_errors
from tests.providers.responses_api import accepted_input, response

HEAD = [
    {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "You are a careful coding agent."}],
    },
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "test_sum fails, please fix it"}],
    },
]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SessionStore]:
    opened = SessionStore(f"sqlite:///{tmp_path / 'store.db'}")
    yield opened
    opened.close()


def new_session(store: SessionStore, **settings: Any) -> Session:
    s = store.create_session(model="gpt-5.2", context_window=400_000, **settings)
    s.append_system("You are a careful coding agent.")
    s.append_user("test_sum fails, please fix it")
    return s


def a_response(n: int, *, calls: int = 1, text: str | None = None) -> dict[str, Any]:
    output: list[dict[str, Any]] = [
        {
            "type": "reasoning",
            "id": f"rs_{n}",
            "summary": [{"type": "summary_text", "text": f"Step {n}."}],
            "encrypted_content": f"gAAAAAB{n}+opaque/=",
        }
    ]
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for c in range(calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{n}_{c}",
                "call_id": f"call_{n}_{c}",
                "name": "read",
                "arguments": json.dumps({"path": f"m{n}_{c}.py"}),
                "status": "completed",
            }
        )
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1795000000 + n,
        "model": "gpt-5.2",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": output,
    }


# other providers' turns


ANTHROPIC_TURN = {
    "id": "msg_01A",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-5",
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "content": [
        {"type": "thinking", "thinking": "Read both files.", "signature": "EqQBCkYIBxgCKkD=="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a=="},
        {"type": "text", "text": "Reading the code.", "citations": None},
        {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "calc.py"}},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01",
            "name": "web_search",
            "input": {"query": "python sum"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://docs.python.org/3/library/functions.html#sum",
                    "title": "sum",
                    "encrypted_content": "EqgfCioIARgBIiQ3YTAw",
                    "page_age": None,
                }
            ],
        },
        {"type": "text", "text": "And the test.", "citations": None},
        {"type": "tool_use", "id": "toolu_02", "name": "read", "input": {"path": "test_calc.py"}},
    ],
    "usage": {"input_tokens": 812, "output_tokens": 96},
}


def test_an_anthropic_turn_is_assistant_messages_and_function_calls_without_its_thinking(
    sqlite_store: SessionStore,
) -> None:
    s = new_session(sqlite_store)
    message = s.append_anthropic(AnthropicMessage.model_validate(ANTHROPIC_TURN))
    s.append_tool_result("toolu_01", output="def add(a, b):\n    return a - b\n")
    s.append_tool_result("toolu_02", output="assert add(1, 2) == 3")
    calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
    shown = [p.text for p in message.parts if isinstance(p, NativePart)]

    assert accepted_input(s.context().to_responses()) == [
        *HEAD,
        {"type": "message", "role": "assistant", "content": "Reading the code."},
        {
            "type": "function_call",
            "call_id": "toolu_01",
            "name": "read",
            "arguments": calls[0].arguments,
        },
        {
            "type": "message",
            "role": "assistant",
            "content": "\n\n".join([*[t for t in shown if t], "And the test."]),
        },
        {
            "type": "function_call",
            "call_id": "toolu_02",
            "name": "read",
            "arguments": calls[1].arguments,
        },
        {
            "type": "function_call_output",
            "call_id": "toolu_01",
            "output": "def add(a, b):\n    return a - b\n",
        },
        {"type": "function_call_output", "call_id": "toolu_02", "output": "assert add(1, 2) == 3"},
    ]
    assert json.loads(calls[0].arguments) == {"path": "calc.py"}


def test_a_turn_of_only_anthropic_thinking_sends_nothing(sqlite_store: SessionStore) -> None:
    thinking_only = {**ANTHROPIC_TURN, "content": ANTHROPIC_TURN["content"][:2]}  # type: ignore[index]
    s = new_session(sqlite_store)
    s.append_anthropic(thinking_only)
    s.append_user("go on")
    assert accepted_input(s.context().to_responses()) == [
        *HEAD,
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]},
    ]


def test_a_chat_completions_turn_keeps_its_arguments_and_its_custom_tool_call(
    sqlite_store: SessionStore,
) -> None:
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1795000000,
            "model": "gpt-4.1",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Let me look.",
                        "refusal": None,
                        "tool_calls": [
                            {
                                "id": "call_9",
                                "type": "function",
                                "function": {"name": "read", "arguments": '{"path":  "c.py"}'},
                            },
                            {
                                "id": "call_10",
                                "type": "custom",
                                "custom": {"name": "apply_diff", "input": "-a\n+b"},
                            },
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
        }
    )
    s = new_session(sqlite_store)
    s.append_openai(completion)
    s.append_tool_result("call_9", output="y = 2")
    s.append_tool_result("call_10", output="applied")

    assert accepted_input(s.context().to_responses())[2:] == [
        {"type": "message", "role": "assistant", "content": "Let me look."},
        {
            "type": "function_call",
            "call_id": "call_9",
            "name": "read",
            "arguments": '{"path":  "c.py"}',
        },
        {"type": "custom_tool_call", "call_id": "call_10", "name": "apply_diff", "input": "-a\n+b"},
        {"type": "function_call_output", "call_id": "call_9", "output": "y = 2"},
        {"type": "custom_tool_call_output", "call_id": "call_10", "output": "applied"},
    ]


def test_responses_turns_after_other_providers_keep_their_items(
    sqlite_store: SessionStore,
) -> None:
    """A session that switches provider mid-way: what each produced follows its rules, and the
    Responses items are still the server's own."""
    s = new_session(sqlite_store)
    s.append_anthropic(ANTHROPIC_TURN)
    s.append_tool_result("toolu_01", output="a")
    s.append_tool_result("toolu_02", output="b")
    first, second = a_response(1, text="Now the fix."), a_response(2, calls=2)
    s.append_openai_response(response(first))
    s.append_tool_result("call_1_0", output="c")
    s.append_openai_response(response(second))
    s.append_tool_result("call_2_1", output="e")  # out of order: rendered in call order
    s.append_tool_result("call_2_0", output="d")
    items = s.context().to_responses()
    assert input_errors(items, [first["output"], second["output"]]) == []
    assert items[-5:] == [
        *second["output"],
        {"type": "function_call_output", "call_id": "call_2_0", "output": "d"},
        {"type": "function_call_output", "call_id": "call_2_1", "output": "e"},
    ]


# what context management does


def test_a_pruned_output_shows_its_placeholder(sqlite_store: SessionStore) -> None:
    s = new_session(
        sqlite_store,
        compression={"protect_turns": 0, "protect_tokens": 0, "minimum_prune": 0},
    )
    s.append_openai_response(response(a_response(1)))
    s.append_tool_result("call_1_0", output="value = 1\n" * 200)
    s.append_user("and now?")
    plan = s.prune()
    assert plan is not None and plan.worth_it
    (placeholder,) = [
        part.output
        for message in s.context().messages
        for part in message.parts
        if isinstance(part, LiveToolResult) and part.status == "pruned"
    ]
    assert placeholder.startswith("[Output pruned at ")
    items = accepted_input(s.context().to_responses())
    assert items[4] == {
        "type": "function_call_output",
        "call_id": "call_1_0",
        "output": placeholder,
    }
    assert items[2:4] == a_response(1)["output"]


def test_a_compaction_summary_is_a_user_message(sqlite_store: SessionStore) -> None:
    s = new_session(sqlite_store)
    for n in range(1, 4):
        s.append_openai_response(response(a_response(n)))
        s.append_tool_result(f"call_{n}_0", output=f"def f{n}(): ...\n" * 40)
        s.append_user(f"next {n}" if n < 3 else "now fix it")
    s.append_openai_response(response(a_response(4)))
    s.compact(lambda messages, target: "Read m1..m3; add() subtracts.", keep_turns=1, keep_tokens=0)

    assert accepted_input(s.context().to_responses()) == [
        HEAD[0],
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "[Summary of earlier conversation]\nRead m1..m3; add() subtracts.",
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "now fix it"}],
        },
        *a_response(4)["output"],
        {
            "type": "function_call_output",
            "call_id": "call_4_0",
            "output": "[No result: the tool call was interrupted before it returned.]",
        },
    ]


Op = tuple[str, int]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["turn", "answer", "user", "revert", "prune", "compact", "restore"]),
            st.integers(min_value=0, max_value=3),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_every_point_of_a_session_renders_an_input_the_api_accepts(ops: list[Op]) -> None:
    """Turns with reasoning and parallel calls, answers in any order, user turns, reverts,
    prunes, compactions and restores, in any order: at every point of the history (replayed
    with `context(at=seq)`) the render is one the stateless API accepts, and reasoning items
    keep their following items."""
    store = SessionStore("sqlite://")
    try:
        s = new_session(
            store,
            compression={"protect_turns": 0, "protect_tokens": 0, "minimum_prune": 0},
        )
        issued: list[list[dict[str, Any]]] = []
        for op, k in ops:
            pending = _pending_calls(s)
            if op == "turn":
                n = len(issued) + 1
                data = a_response(n, calls=k % 3, text="Working." if k >= 2 else None)
                s.append_openai_response(data)
                issued.append(data["output"])
            elif op == "answer" and pending:
                s.append_tool_result(pending[k % len(pending)], output="x = 1\n" * 50 * k)
            elif op == "user":
                s.append_user(f"user {k}")
            elif op == "revert":
                live = [m.id for m in s.context().messages]
                s.revert(live[min(k + 1, len(live) - 1)])
            elif op == "prune":
                s.prune()
            elif op == "compact":
                with contextlib.suppress(CompactionError):
                    s.compact(keep_turns=k % 2, keep_tokens=0)
            elif op == "restore":
                s.restore()
        for seq in range(1, s.version + 1):
            items = s.context(at=seq).to_responses()
            errors = input_errors(items, issued, newest_required=False)
            assert errors == [], (seq, errors)
    finally:
        store.close()


def _pending_calls(s: Session) -> list[str]:
    """The live calls with no live result, in order."""
    messages = s.context().messages
    answered = {getattr(p, "call_id", None) for m in messages if m.role == "tool" for p in m.parts}
    return [
        part.call_id
        for message in messages
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.call_id not in answered
    ]


# whatever arrives, an append either keeps it or refuses it with a typed error

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
ITEM = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["message", "reasoning", "function_call", "custom_tool_call", "web_search_call",
             "mcp_call", "function_call_output", "hologram"]
        ),
    },
    optional={
        key: st.one_of(JSON, st.text(min_size=1, max_size=6))
        for key in ["id", "call_id", "name", "arguments", "input", "summary", "content", "role",
                    "action", "output", "status", "encrypted_content"]
    },
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(items=st.lists(ITEM | JSON, max_size=4), usage=JSON)
def test_any_output_is_kept_or_refused_with_a_typed_error_and_nothing_written(
    items: list[Any], usage: Any
) -> None:
    store = SessionStore("sqlite://")
    try:
        s = new_session(store)
        before = s.version
        data = {**a_response(1), "output": items, "usage": usage}
        try:
            s.append_openai_response(data)
        except (InvalidArgument, InvalidEvent):
            assert store.session(s.id).version == before
            return
        assert s.version == before + 1
        s.context().to_responses()
        s.context().to_anthropic()
        s.context().to_openai()
    finally:
        store.close()
