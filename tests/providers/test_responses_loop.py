"""A 30-turn reasoning and tool-use agent loop against a local fake Responses API (stateless,
`store=False`), through the real `openai` client, on both backends: every request must be one
the API accepts (see `fake_responses` for the rules it checks), while pruning and compaction
change the context mid-loop, and a resumed store renders the same input.
"""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path
from typing import Any

import openai
import pytest

from sessionstore import SessionStore
from sessionstore.events import ContextCompacted, OutputsPruned
from tests.conftest import Backend
from tests.providers.fake_responses import TIMEOUT, Turn, input_errors, serving

TURNS = 30


def thirty_turns(n: int) -> Turn:
    """A model that reads a file every turn, says something every third turn, and answers on
    the last."""
    if n == TURNS:
        return Turn(text="Fixed: add() now returns a + b, and the tests pass.")
    text = f"Turn {n}: reading the next module." if n % 3 == 0 else None
    return Turn(text=text, call=("read_file", {"path": f"src/module_{n}.py"}))


def read_file(arguments: str) -> str:
    """A tool whose outputs are large enough (about 1,000 tokens) to overflow a small window."""
    path = json.loads(arguments)["path"]
    return "".join(
        f"{path}:{line}: value_{line} = compute({line}, {line * 7})\n" for line in range(90)
    )


def test_a_30_turn_reasoning_and_tool_loop_sends_only_requests_the_api_accepts(
    backend: Backend,
) -> None:
    store = SessionStore(backend.url)
    try:
        run_the_loop(store, backend)
    finally:
        store.close()


def run_the_loop(store: SessionStore, backend: Backend) -> None:
    s = store.create_session(
        model="gpt-5.2",
        context_window=16_000,
        output_reserve=2_000,
        compression={
            "protect_turns": 1,
            "protect_tokens": 3_000,
            "minimum_prune": 1_000,
            "keep_recent_turns": 1,
            "keep_recent_tokens": 3_000,
            "safety_margin": 500,
        },
    )
    s.append_system("You are a careful coding agent.")
    s.pin(s.append_user("test_sum fails; read the modules one by one, then fix it.").id)

    with serving(thirty_turns) as (base_url, server):
        client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=TIMEOUT)
        for turn in range(1, TURNS + 1):
            s.before_llm_call()
            response = client.responses.create(
                model="gpt-5.2",
                # list[dict[str, Any]] is not the SDK's list of TypedDicts for mypy
                input=s.context().to_responses(),
                store=False,
                include=["reasoning.encrypted_content"],
            )
            s.append_openai_response(response)
            calls = [item for item in response.output if item.type == "function_call"]
            for call in calls:
                s.append_tool_result(call.call_id, output=read_file(call.arguments))
            if turn % 10 == 0 and calls:
                s.append_user("Keep going.")

    assert server.refusals == []
    assert len(server.requests) == len(server.issued) == TURNS
    assert response.output_text == "Fixed: add() now returns a + b, and the tests pass."
    happened = {type(event.payload) for event in store.read(s.id)}
    assert {OutputsPruned, ContextCompacted} <= happened, "the loop must prune and compact"
    compacted_at = [e.seq for e in store.read(s.id) if isinstance(e.payload, ContextCompacted)]
    assert compacted_at[0] < s.version - 10, "compaction must happen mid-loop"

    # every reasoning item of the last request came back with its exact id and encrypted_content
    issued = {item["id"]: item for output in server.issued for item in output}
    sent_reasoning = [i for i in server.requests[-1]["input"] if i.get("type") == "reasoning"]
    assert sent_reasoning
    for item in sent_reasoning:
        assert item["encrypted_content"] == issued[item["id"]]["encrypted_content"]

    # a resumed store renders the same input, which the server would still accept
    final = s.context().to_responses()
    assert input_errors(final, server.issued) == []
    reopened = SessionStore(backend.url)
    try:
        assert reopened.session(s.id).context().to_responses() == final
    finally:
        reopened.close()


README_SNIPPET = """import json
from pathlib import Path

from openai import OpenAI

from sessionstore import SessionStore

client = OpenAI()  # $OPENAI_API_KEY, $OPENAI_BASE_URL
store = SessionStore("sqlite:///agent.db")
s = store.create_session(model="gpt-5.2", context_window=400_000, title="fix bug")
s.append_system("You are a careful coding agent.")
s.append_user("test_sum fails, please fix it")
schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
tools = [{"type": "function", "name": "read", "description": "Read a file.", "parameters": schema}]

while True:
    check = s.before_llm_call()  # prunes, compacts, then cuts results to previews, to fit
    if check.over_window:  # only when the system prompt, pins and request alone do not fit
        raise SystemExit(check.note)
    response = client.responses.create(
        model="gpt-5.2",
        input=s.context().to_responses(),  # reasoning, calls and outputs, as the API wants them
        tools=tools,
        store=False,  # stateless: OpenAI keeps nothing, so reasoning must come back to it
        include=["reasoning.encrypted_content"],
    )
    s.append_openai_response(response)  # every output item kept, ids and encrypted_content too
    calls = [item for item in response.output if item.type == "function_call"]
    if not calls:
        break
    for call in calls:
        path = json.loads(call.arguments)["path"]
        s.append_tool_result(call.call_id, output=Path(path).read_text())
print(response.output_text)
"""


def readme_turns(n: int) -> Turn:
    if n == 1:
        return Turn(call=("read", {"path": "calc.py"}))
    if n == 2:
        return Turn(text="add() subtracts.", call=("read", {"path": "test_calc.py"}))
    return Turn(text="Fixed: add() must return a + b.")


def test_readme_responses_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Responses agent loop of docs/providers.md, exactly as printed, against the fake
    server."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "test_calc.py").write_text("def test_sum():\n    assert add(1, 2) == 3\n")
    script = tmp_path / "readme_responses.py"
    script.write_text(README_SNIPPET, encoding="utf-8")
    with serving(readme_turns) as (base_url, server):
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        runpy.run_path(str(script), run_name="__main__")
    assert server.refusals == []
    assert len(server.requests) == 3
    assert server.requests[2]["input"][-1] == {
        "type": "function_call_output",
        "call_id": server.issued[1][-1]["call_id"],
        "output": "def test_sum():\n    assert add(1, 2) == 3\n",
    }
    assert capsys.readouterr().out == "Fixed: add() must return a + b.\n"
    assert os.path.exists(tmp_path / "agent.db")


# the fake server is only as good as its rules: each one must catch what it is there for

RS: dict[str, Any] = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "**Step 1**"}],
    "encrypted_content": "gAAAAAB+opaque/1==",
}
FC: dict[str, Any] = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "read_file",
    "arguments": '{"path": "a.py"}',
    "status": "completed",
}
OUT: dict[str, Any] = {"type": "function_call_output", "call_id": "call_1", "output": "x = 1"}
USER: dict[str, Any] = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "go"}],
}


def test_the_rules_accept_a_well_formed_stateless_input() -> None:
    assert input_errors([USER, RS, FC, OUT], [[RS, FC]]) == []


@pytest.mark.parametrize(
    ("items", "error"),
    [
        (
            [USER, {**RS, "encrypted_content": "gAAAAAB+opaque/2=="}, FC, OUT],
            "not the item as issued",
        ),
        (
            [USER, {k: v for k, v in RS.items() if k != "encrypted_content"}, FC, OUT],
            "not the item",
        ),
        ([USER, {**RS, "id": "rs_9"}, FC, OUT], "Item with id 'rs_9' not found"),
        ([USER, RS, OUT], "without its required following item"),
        ([USER, FC, RS, OUT], "without its required following item"),
        ([USER, RS, FC], "No tool output found for function call call_1"),
        ([USER, RS, FC, OUT, OUT], "No tool output found for function call call_1"),
        ([USER, OUT, RS, FC], "No tool call found for function_call_output"),
        ([USER, RS, FC, {**OUT, "type": "custom_tool_call_output"}], "No tool call found"),
        ([USER, RS, {**FC, "status": "in_progress"}, OUT], "not the item as issued"),
        ([USER, RS, FC, USER, OUT], ""),  # the output is late but still answers its call
        ([USER], "the newest response's items are missing"),
        ([USER, RS, FC, {**OUT, "created_by": "tool"}], "Extra inputs are not permitted"),
        ([{**USER, "role": "tool"}, RS, FC, OUT], "the SDK would not send this input"),
    ],
)
def test_the_rules_refuse_what_the_api_refuses(items: list[dict[str, object]], error: str) -> None:
    errors = input_errors(items, [[RS, FC]])
    if not error:
        assert errors == []
    else:
        assert any(error in e for e in errors), errors


def test_the_items_of_a_response_must_come_back_together_and_in_order() -> None:
    message: dict[str, Any] = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
    }
    issued = [[RS, message, FC]]
    assert input_errors([USER, RS, message, FC, OUT], issued) == []
    assert input_errors([USER, RS, message, USER, FC, OUT], issued) == [
        "the items of response 0 do not come back together and in order"
    ]
    assert "the items of response 0 do not come back together and in order" in input_errors(
        [USER, RS, message, OUT], issued
    ) + input_errors([USER, message, FC, OUT], issued)


def test_a_refused_request_is_the_apis_400_for_the_client() -> None:
    with serving(thirty_turns) as (base_url, server):
        client = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=TIMEOUT)
        go: Any = [USER]
        first = client.responses.create(
            model="m", input=go, store=False, include=["reasoning.encrypted_content"]
        )
        sent_back: Any = [o.model_dump(mode="json", exclude_unset=True) for o in first.output]
        sent_back[0]["encrypted_content"] += "x"
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(
                model="m",
                input=[*go, *sent_back, {**OUT, "call_id": sent_back[1]["call_id"]}],  # type: ignore[list-item]
                store=False,
                include=["reasoning.encrypted_content"],
            )
    assert "is not the item as issued" in str(refused.value)
    assert len(server.refusals) == 1
