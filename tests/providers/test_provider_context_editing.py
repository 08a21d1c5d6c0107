"""Anthropic's context editing is recorded (issue 27, item 5): what `applied_edits` says the
server cleared leaves the live context as our own prunes do, with the provider as their cause,
so the context is what the server kept; `usage.iterations` is kept with the usage."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore import Session, SessionStore
from sessionstore.events import OutputsPruned, Usage, canonical_json
from sessionstore.providers import CLEARED_PLACEHOLDER
from tests.providers.fake_compaction import CompactingAnthropic
from tests.providers.test_provider_compaction import TURNS, anthropic_loop, new_session, reads

CLEAR = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 4_000},
    "keep": {"type": "tool_uses", "value": 2},
}
PLACEHOLDER = CLEARED_PLACEHOLDER.format(edit="clear_tool_uses_20250919")


def provider_prunes(store: SessionStore, s: Session) -> list[OutputsPruned]:
    return [
        e.payload
        for e in store.read(s.id)
        if isinstance(e.payload, OutputsPruned) and e.payload.reason.startswith("provider:")
    ]


def test_cleared_tool_uses_leave_the_context_as_the_server_cleared_them(
    store: SessionStore,
) -> None:
    s = new_session(store, "claude-opus-4-6")
    fake = CompactingAnthropic(reads)
    anthropic_loop(store, s, fake, [CLEAR])
    assert fake.refusals == []
    assert fake.turns == TURNS
    prunes = provider_prunes(store, s)
    assert prunes, "the server cleared tool uses"
    assert {p.placeholder for p in prunes} == {PLACEHOLDER}
    assert prunes[0].reason.startswith(
        "provider: Anthropic clear_tool_uses_20250919 cleared 2 tool use(s) ("
    )
    # the live context keeps the newest two results whole, as the server did
    results = [
        part
        for message in s.context().messages
        for part in message.parts
        if part.type == "tool_result"
    ]
    assert [r.status for r in results] == ["pruned"] * (len(results) - 2) + ["original"] * 2
    assert all(r.output == PLACEHOLDER for r in results[:-2])
    # and the originals come back on request, as for our own prunes
    restored = s.context(restore_pruned=True)
    outputs = [p for m in restored.messages for p in m.parts if p.type == "tool_result"]
    assert all(r.output.startswith("src/module_") for r in outputs)


def thinking_turn(n: int, call: bool = True) -> dict[str, Any]:
    content: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": f"step {n}", "signature": f"sig{n}"},
    ]
    if call:
        content.append({"type": "tool_use", "id": f"t{n}", "name": "read_file", "input": {}})
    else:
        content.append({"type": "text", "text": "done"})
    return {
        "id": f"msg_{n}",
        "role": "assistant",
        "content": content,
        "stop_reason": "tool_use" if call else "end_turn",
        "usage": {"input_tokens": 100, "output_tokens": 10},
    }


def test_cleared_thinking_leaves_the_oldest_turns_thinking_out(store: SessionStore) -> None:
    s = store.create_session(model="claude-opus-4-6")
    s.append_user("go")
    for n in range(1, 4):
        s.append_anthropic(thinking_turn(n))
        s.append_tool_result(f"t{n}", f"result {n}")
    last = thinking_turn(4, call=False)
    last["context_management"] = {
        "applied_edits": [
            {
                "type": "clear_thinking_20251015",
                "cleared_thinking_turns": 2,
                "cleared_input_tokens": 8,
            }
        ]
    }
    s.append_anthropic(last)
    (prune,) = provider_prunes(store, s)
    assert prune.reason == (
        "provider: Anthropic clear_thinking_20251015 cleared the thinking of 2 turn(s) "
        "(8 input tokens)"
    )
    turns = [m for m in s.context().to_anthropic()["messages"] if m["role"] == "assistant"]
    kinds = [[b["type"] for b in t["content"]] for t in turns]
    assert kinds == [
        ["tool_use"],
        ["tool_use"],
        ["thinking", "tool_use"],
        ["thinking", "text"],
    ]


def test_excluded_tools_are_not_counted_among_the_cleared(store: SessionStore) -> None:
    s = store.create_session(model="claude-opus-4-6")
    s.append_user("go")
    for n, tool in enumerate(["memory", "read_file", "read_file", "read_file"], start=1):
        s.append_anthropic(
            {
                "id": f"msg_{n}",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": tool, "input": {}}],
            }
        )
        s.append_tool_result(f"t{n}", f"output {n} " * 50)
    edit = {"type": "clear_tool_uses_20250919", "exclude_tools": ["memory"]}
    s.append_anthropic(
        {
            "id": "msg_5",
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "context_management": {
                "applied_edits": [
                    {
                        "type": "clear_tool_uses_20250919",
                        "cleared_tool_uses": 2,
                        "cleared_input_tokens": 200,
                    }
                ]
            },
        },
        context_management={"edits": [edit]},
    )
    shown = {
        p.call_id: p.status
        for m in s.context().messages
        for p in m.parts
        if p.type == "tool_result"
    }
    assert shown == {"t1": "original", "t2": "pruned", "t3": "pruned", "t4": "original"}


def test_iterations_are_kept_verbatim_and_a_usage_without_them_encodes_as_before() -> None:
    old = Usage(input=10, output=2)
    assert json.loads(canonical_json(old.model_dump(mode="json"))) == {
        "input": 10,
        "output": 2,
        "cache_read": 0,
        "cache_write": 0,
    }
    iterations = [
        {"type": "compaction", "input_tokens": 180_000, "output_tokens": 3_000},
        {"type": "message", "input_tokens": 23_000, "output_tokens": 1_000},
    ]
    new = Usage.model_validate({"input": 23_000, "output": 1_000, "iterations": iterations})
    assert new.model_dump(mode="json")["iterations"] == iterations
    assert Usage.model_validate(old.model_dump(mode="json")) == old


@settings(max_examples=40, deadline=None)
@given(
    tools=st.lists(st.sampled_from(["read_file", "memory", "grep"]), min_size=1, max_size=8),
    cleared=st.integers(min_value=0, max_value=10),
    excluded=st.sets(st.sampled_from(["read_file", "memory", "grep"]), max_size=2),
)
def test_the_cleared_results_are_the_oldest_not_excluded_and_replay_agrees(
    tools: list[str], cleared: int, excluded: set[str]
) -> None:
    store = SessionStore("memory://context-editing-property")
    try:
        s = store.create_session(model="claude-opus-4-6")
        s.append_user("go")
        for n, tool in enumerate(tools):
            call = {"type": "tool_use", "id": f"t{n}", "name": tool, "input": {}}
            s.append_anthropic({"id": f"m{n}", "role": "assistant", "content": [call]})
            s.append_tool_result(f"t{n}", f"output {n} " * 20)
        edit = {"type": "clear_tool_uses_20250919", "cleared_tool_uses": cleared}
        s.append_anthropic(
            {
                "id": "last",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "context_management": {"applied_edits": [{**edit, "cleared_input_tokens": 1}]},
            },
            context_management={
                "edits": [{"type": "clear_tool_uses_20250919", "exclude_tools": sorted(excluded)}]
            },
        )
        eligible = [f"t{n}" for n, tool in enumerate(tools) if tool not in excluded]
        live = s.context()
        pruned = [
            p.call_id
            for m in live.messages
            for p in m.parts
            if p.type == "tool_result" and p.status == "pruned"
        ]
        assert pruned == eligible[:cleared]
        assert store.session(s.id).context().to_anthropic() == live.to_anthropic()
    finally:
        store.close()
