"""`AgentsSession` under the Agents SDK's own `Runner`, with its `ScriptedModel` (no network):
items round-trip verbatim, and a 300 KB tool output reaches the model truncated inside the run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.run_internal.items import fingerprint_input_item
from agents.testing.model import ModelStep, ScriptedModel
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from store import SessionStore
from store.integrations.openai_agents import AgentsSession, context_filter

set_tracing_disabled(True)  # no network: the SDK would send its traces to OpenAI

BIG = "".join(f"line {n}: {'x' * 60}\n" for n in range(4_500))  # about 300 KB


@function_tool
def read_log() -> str:
    """The whole build log."""
    return BIG


def said(text: str, n: int) -> ModelStep:
    content = ResponseOutputText(type="output_text", text=text, annotations=[])
    item = ResponseOutputMessage(
        id=f"msg_{n}", type="message", role="assistant", status="completed", content=[content]
    )
    return ModelStep(output=[item])


def calls_read_log(n: int) -> ModelStep:
    call = ResponseFunctionToolCall(
        id=f"fc_{n}", type="function_call", call_id=f"call_{n}", name="read_log", arguments="{}"
    )
    return ModelStep(output=[call])


def outputs_in(request: Any) -> list[str]:
    return [
        item["output"]
        for item in request
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def test_two_runs_a_truncated_output_and_a_resume(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agents.db'}"
    model = ScriptedModel([calls_read_log(1), said("The build failed.", 2), said("Yes.", 3)])
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[read_log])

    async def runs() -> list[Any]:
        with SessionStore(url) as store:
            session = AgentsSession("run-1", store, model="gpt-4o", context_window=128_000)
            config = RunConfig(call_model_input_filter=context_filter(session))
            await Runner.run(agent, "Why did the build fail?", session=session, run_config=config)
            await Runner.run(agent, "Is it the log?", session=session, run_config=config)
            return await session.get_items()

    items = asyncio.run(runs())
    model.assert_complete()
    requests = [call.input for call in model.calls]
    shown = outputs_in(requests[1])  # the model's request right after the tool ran
    assert len(shown) == 1 and len(shown[0]) < len(BIG) // 4
    assert "truncated" in shown[0] or "restore" in shown[0]
    assert outputs_in(requests[2]) == shown  # the second run sees the same cut
    # stored whole, and every item as the SDK gave it
    [output] = [item for item in items if item.get("type") == "function_call_output"]
    assert output["output"] == BIG
    assert [item.get("role") or item.get("type") for item in items] == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
        "assistant",
    ]

    async def resumed() -> list[Any]:
        with SessionStore(url) as store:
            return await AgentsSession("run-1", store).get_items()

    again = asyncio.run(resumed())
    assert [fingerprint_input_item(i) for i in again] == [fingerprint_input_item(i) for i in items]


def test_pop_limit_and_clear(tmp_path: Path) -> None:
    async def steps() -> None:
        with SessionStore(f"sqlite:///{tmp_path / 'a.db'}") as store:
            session = AgentsSession("s", store)
            first = {"role": "user", "content": "hello"}
            call = {
                "type": "function_call",
                "call_id": "c1",
                "name": "read_log",
                "arguments": "{}",
                "id": "fc_1",
                "status": "completed",
            }
            result = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
            await session.add_items([first, call, result])
            assert await session.get_items() == [first, call, result]
            assert await session.get_items(limit=1) == [result]
            assert await session.pop_item() == result  # a tool output too
            assert await session.get_items() == [first, call]
            await session.clear_session()
            assert await session.get_items() == [] and await session.pop_item() is None
            replay = session.session.context(at=4).messages
            assert [m.role for m in replay] == ["user", "assistant", "tool"]

    asyncio.run(steps())


def test_a_message_repeated_in_a_later_run_is_stored_again(tmp_path: Path) -> None:
    model = ScriptedModel([said("Hi.", 1), said("Hi again.", 2)])
    agent = Agent(name="helper", model=model)

    async def runs() -> list[Any]:
        with SessionStore(f"sqlite:///{tmp_path / 'r.db'}") as store:
            session = AgentsSession("again", store)
            config = RunConfig(call_model_input_filter=context_filter(session))
            await Runner.run(agent, "hello", session=session, run_config=config)
            await Runner.run(agent, "hello", session=session, run_config=config)
            return await session.get_items()

    items = asyncio.run(runs())
    assert [item.get("role") for item in items] == ["user", "assistant", "user", "assistant"]
    second = [item for item in model.calls[1].input if item.get("role") == "user"]
    assert [item["content"][0]["text"] for item in second] == ["hello", "hello"]
