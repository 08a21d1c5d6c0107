"""A 30-turn agent loop with extended thinking and tools, through the real `anthropic` client,
against the local fake server (`fake_anthropic`), which refuses every request Anthropic would:
a thinking block moved, changed or dropped from the turn of its `tool_use`, a result not right
after its call, an empty text block, a final assistant turn. The session's window is small, so
pruning and compaction happen on the way; both backends; a resumed store renders the same
request.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import anthropic
import pytest

from sessionstore import SessionStore
from sessionstore.events import ContextCompacted, OutputsPruned
from tests.conftest import Backend
from tests.providers.fake_anthropic import FakeAnthropic, serving

TURNS = 30
MODEL = "claude-sonnet-4-6"
TASK = "test_parse_offset fails: find out why and fix it"
README_LOOP = Path(__file__).parent / "fixtures" / "anthropic" / "readme_loop.py"


def run_tool(name: str, tool_input: dict[str, Any]) -> str:
    """The loop's one tool: a file read of 60 lines."""
    path = tool_input["path"]
    return "".join(f"{path}:{n}: some source code for the model to read\n" for n in range(60))


def thinking_blocks(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in request["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block["type"] in ("thinking", "redacted_thinking")
    ]


def test_a_30_turn_thinking_and_tool_loop_sends_only_requests_anthropic_accepts(
    backend: Backend, store: SessionStore
) -> None:
    server = FakeAnthropic(turns=TURNS)
    s = store.create_session(
        model=MODEL,
        context_window=6_000,
        output_reserve=1_000,
        compression={
            "protect_turns": 0,
            "protect_tokens": 1_000,
            "minimum_prune": 500,
            "keep_recent_turns": 0,
            "keep_recent_tokens": 1_500,
        },
    )
    s.append_system("You are a careful coding agent.")
    s.pin(s.append_user(TASK).id)
    checks = []
    with serving(server) as url:
        client = anthropic.Anthropic(base_url=url, api_key="test", max_retries=0, timeout=10)
        ctx = s.context()
        for _ in range(TURNS):
            response = client.messages.create(
                model=MODEL,
                max_tokens=2048,
                thinking={"type": "enabled", "budget_tokens": 1024},
                **ctx.to_anthropic(),
            )
            s.append_anthropic(response)
            for block in response.content:
                if block.type == "tool_use":
                    s.append_tool_result(block.id, output=run_tool(block.name, block.input))
            checks.append(s.before_llm_call())
            ctx = s.context()
            if response.stop_reason == "end_turn":
                break

    assert (server.accepted, server.refusals) == (TURNS, [])
    assert response.stop_reason == "end_turn"
    pruned_at = [n for n, check in enumerate(checks) if check.pruned is not None]
    compacted_at = [n for n, check in enumerate(checks) if check.compactions]
    # the whole loop is one tool loop (one task, then tool calls): its thinking is never cut,
    # so it is kept in the window by pruning alone (older outputs, older thinking), well
    # inside the loop, with turns after it that the API must still accept
    assert pruned_at and pruned_at[0] < TURNS - 5, pruned_at
    assert compacted_at == []
    events = [event.payload for event in store.read(s.id)]
    assert any(isinstance(p, OutputsPruned) for p in events)
    assert not any(isinstance(p, ContextCompacted) for p in events)

    final = ctx.to_anthropic()
    for block in thinking_blocks(final):  # every one byte for byte as the server issued it
        if block["type"] == "thinking":
            assert server.thinking[block["signature"]] == block["thinking"]
    again = SessionStore(backend.url)
    try:
        resumed = again.session(s.id).context().to_anthropic()
    finally:
        again.close()
    assert resumed == final  # dict equality: JSONB may have reordered the keys
    assert json.dumps(resumed, sort_keys=True) == json.dumps(final, sort_keys=True)
    assert [(b.get("thinking"), b.get("signature")) for b in thinking_blocks(resumed)] == [
        (b.get("thinking"), b.get("signature")) for b in thinking_blocks(final)
    ]
    assert store.verify(s.id).ok


def test_the_server_refuses_what_anthropic_refuses() -> None:
    """The fake server is only as good as its refusals: a request that changes, moves or
    drops a thinking block, sends an empty text, breaks a call/result pair or ends on the
    assistant gets a 400 through the client, and nothing is answered for it."""
    server = FakeAnthropic(turns=3)
    with serving(server) as url:
        client = anthropic.Anthropic(base_url=url, api_key="test", max_retries=0, timeout=10)

        def send(*messages: Any) -> anthropic.types.Message:
            return client.messages.create(
                model=MODEL,
                max_tokens=2048,
                thinking={"type": "enabled", "budget_tokens": 1024},
                messages=list(messages),
            )

        task = {"role": "user", "content": TASK}
        blocks = [block.model_dump(exclude_unset=True) for block in send(task).content]
        think, call = blocks[0], blocks[-1]
        answer = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "x"}],
        }
        broken = {
            "changed thinking": ([{**think, "thinking": think["thinking"] + "!"}, *blocks[1:]],),
            "thinking moved": ([*blocks[1:-1], think, call],),
            "thinking dropped": (blocks[1:],),
            "empty text": ([think, {"type": "text", "text": ""}, *blocks[1:]],),
        }
        for (content,) in broken.values():
            with pytest.raises(anthropic.BadRequestError):
                send(task, {"role": "assistant", "content": content}, answer)
        with pytest.raises(anthropic.BadRequestError):  # no result right after the call
            send(task, {"role": "assistant", "content": blocks}, task)
        with pytest.raises(anthropic.BadRequestError):  # a final assistant turn
            send(task, {"role": "assistant", "content": blocks})
        send(task, {"role": "assistant", "content": blocks}, answer)

    assert server.accepted == 2
    assert [refusal.split(":")[0] for refusal in server.refusals] == [
        "messages.1.content.0",  # Invalid `signature` in `thinking` block
        "messages.1.content.0",  # If an assistant message contains any thinking blocks...
        "messages.1.content.0.type",  # Expected `thinking` or `redacted_thinking`...
        "messages.1.content.1",  # text content blocks must be non-empty
        "messages.2",  # `tool_use` ids were found without `tool_result` blocks...
        "the final message must be the user's",
    ]


def test_readme_anthropic_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The "Agent loop with Anthropic" example of docs/providers.md, as written, against the
    fake server (the client reads `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`)."""
    server = FakeAnthropic(turns=TURNS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    with serving(server) as url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        runpy.run_path(str(README_LOOP), run_name="__main__")
    assert (server.accepted, server.refusals) == (TURNS, [])
    assert capsys.readouterr().out.splitlines()[-1] == "The fix is in; all tests pass."
