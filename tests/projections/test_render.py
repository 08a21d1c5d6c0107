"""Renders: golden files of both API shapes from one fixed session, and the rules that keep a
context valid for the API.

Regenerate the golden files after a deliberate change with `UPDATE_GOLDEN=1 pytest`, then read
the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sessionstore.events import (
    FilePart,
    Message,
    MessagesReverted,
    OutputsPruned,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from sessionstore.projections import CONTINUED, INTERRUPTED, api_messages, context_of, fold_events
from tests.projections.log import Log

GOLDEN = Path(__file__).parent / "golden"


def fixed_session() -> Log:
    """Every kind of part: system, user text and image, reasoning, two parallel tool calls
    (one failing), a pruned output, a truncated output and a final answer."""
    log = Log()
    log.text("system", "You are a coding agent.", 6, "sys")
    log.message(
        Message(
            id="u1",
            role="user",
            parts=(
                TextPart(id="u1.t", text="Why does test_sum fail? Screenshot attached.", tokens=11),
                FilePart(
                    id="u1.f", media_type="image/png", filename="fail.png", data="iVBORw0KGgo="
                ),
            ),
        )
    )
    log.message(
        Message(
            id="a1",
            role="assistant",
            parts=(
                ReasoningPart(id="a1.r", text="I should read both files.", tokens=6),
                TextPart(id="a1.t", text="Reading the code and the test.", tokens=7),
                ToolCallPart.from_input(
                    id="a1.c1", call_id="call_1", name="read", input={"path": "calc.py"}
                ),
                ToolCallPart.from_input(
                    id="a1.c2", call_id="call_2", name="read", input={"path": "missing.py"}
                ),
            ),
            usage=Usage(input=1200, output=40),
        )
    )
    log.result("call_1", "def add(a, b):\n    return a - b\n", 12, "t1")
    log.message(
        Message(
            id="t2",
            role="tool",
            parts=(
                ToolResultPart(
                    id="t2.r", call_id="call_2", name="read", output="ENOENT", is_error=True
                ),
            ),
        )
    )
    log.call("call_3", 9, "a2", name="bash")
    log.result(
        "call_3",
        "FAILED test_sum\n" * 300,
        40,
        "t3",
        shown="FAILED test_sum\n" * 2 + "[... 298 lines cut; the full output is kept]",
    )
    log.add(
        OutputsPruned(
            part_ids=("t1.r",),
            placeholder="[Output pruned at 2026-11-23T09:00:09Z; restore with part id {part_id}]",
            placeholder_tokens=24,
            tokens_freed=0,
            reason="test",
        )
    )
    log.text("assistant", "`add` subtracts; it should return a + b.", 12, "a3")
    return log


def check_golden(name: str, rendered: Any) -> None:
    path = GOLDEN / name
    text = json.dumps(rendered, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_openai_chat_completions_shape() -> None:
    check_golden("openai.json", context_of(fold_events(fixed_session().events)).to_openai())


def test_anthropic_messages_shape() -> None:
    check_golden("anthropic.json", context_of(fold_events(fixed_session().events)).to_anthropic())


def test_generic_shape() -> None:
    check_golden("generic.json", context_of(fold_events(fixed_session().events)).to_dicts())


def test_a_call_without_a_result_gets_an_interrupted_error_result() -> None:
    log = Log()
    log.text("user", "go", 1, "u1")
    log.call("c1", 5, "a1")
    rendered = context_of(fold_events(log.events)).to_openai()
    assert rendered[-1] == {"role": "tool", "tool_call_id": "c1", "content": INTERRUPTED}
    anthropic = context_of(fold_events(log.events)).to_anthropic()
    assert anthropic["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": INTERRUPTED, "is_error": True}
        ],
    }


def test_a_late_result_moves_up_to_its_call() -> None:
    log = Log()
    log.text("user", "go", 1, "u1")
    log.call("c1", 5, "a1")
    log.text("user", "and hurry", 2, "u2")
    log.result("c1", "done", 1, "t1")
    ids = [m.id for m in api_messages(context_of(fold_events(log.events)).messages)]
    assert ids == ["u1", "a1", "t1", "u2"]


def test_a_result_whose_call_left_the_context_is_left_out() -> None:
    log = Log()
    log.text("user", "go", 1, "u1")
    log.call("c1", 5, "a1")
    log.result("c1", "done", 1, "t1")
    log.add(MessagesReverted(after_message_id="u1", reverted_message_ids=("a1",)))
    context = context_of(fold_events(log.events))
    assert [m.id for m in context.messages] == ["u1", "t1"]
    assert context.to_openai() == [{"role": "user", "content": "go"}]


def test_results_of_parallel_calls_in_one_message_stay_one_anthropic_turn() -> None:
    log = Log()
    log.text("user", "go", 1, "u1")
    log.message(
        Message(
            id="a1",
            role="assistant",
            parts=(
                ToolCallPart(id="a1.1", call_id="c1", name="ls"),
                ToolCallPart(id="a1.2", call_id="c2", name="ls"),
            ),
        )
    )
    log.message(
        Message(
            id="t",
            role="tool",
            parts=(
                ToolResultPart(id="t.2", call_id="c2", output="b"),
                ToolResultPart(id="t.1", call_id="c1", output="a"),
            ),
        )
    )
    context = context_of(fold_events(log.events))
    assert [m.id for m in api_messages(context.messages)] == ["u1", "a1", "t"]
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in context.to_openai()[2:]] == [
        ("tool", "c1", "a"),
        ("tool", "c2", "b"),
    ]
    turns = context.to_anthropic()["messages"]
    assert [b["tool_use_id"] for b in turns[2]["content"]] == ["c1", "c2"]


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]"])
def test_tool_use_input_is_an_object_even_for_odd_arguments(arguments: str) -> None:
    log = Log()
    log.message(
        Message(
            id="a1",
            role="assistant",
            parts=(ToolCallPart(call_id="c1", name="x", arguments=arguments),),
        )
    )
    turns = context_of(fold_events(log.events)).to_anthropic()["messages"]
    assert turns[0] == {"role": "user", "content": [{"type": "text", "text": CONTINUED}]}
    assert turns[1]["content"][0]["input"] == {"_arguments": arguments}


def test_files_go_where_each_api_takes_them() -> None:
    log = Log()
    log.message(
        Message(
            id="u1",
            role="user",
            parts=(
                FilePart(id="f1", media_type="text/plain", filename="notes.txt", data="aGk="),
                FilePart(id="f2", media_type="application/pdf", filename="spec.pdf", data="JVBE"),
            ),
        )
    )
    log.message(
        Message(
            id="a1",
            role="assistant",
            parts=(FilePart(id="f3", media_type="image/png", url="https://x.test/plot.png"),),
        )
    )
    context = context_of(fold_events(log.events))
    assert context.to_openai() == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[file notes.txt (text/plain)]"},
                {
                    "type": "file",
                    "file": {
                        "file_data": "data:application/pdf;base64,JVBE",
                        "filename": "spec.pdf",
                    },
                },
            ],
        },
        {"role": "assistant", "content": "[file https://x.test/plot.png (image/png)]"},
    ]
    assert context.to_anthropic()["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[file notes.txt (text/plain)]"},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "[file https://x.test/plot.png (image/png)]"}],
        },
    ]


def test_a_reasoning_only_turn_is_left_out_and_a_final_turn_is_stripped() -> None:
    log = Log()
    log.text("user", "hi", 1, "u1")
    log.message(Message(id="a1", role="assistant", parts=(ReasoningPart(text="hmm"),)))
    log.text("assistant", "Hello!  \n", 2, "a2")
    context = context_of(fold_events(log.events))
    assert context.to_openai() == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!  \n"},
    ]
    assert context.to_anthropic()["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello!"}],
    }
