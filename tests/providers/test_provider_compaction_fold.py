"""The fold of a provider's compaction, as a property: whatever came before it (turns, pins,
tool calls) and wherever the item stands in its response, the live context is the system
prompt, the item and what followed it; the count is the provider's; a fresh replay of the log
renders the same; replay before it shows everything it replaced."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore

ITEM = {"type": "compaction", "id": "cmp_x", "encrypted_content": "gAAAA+/=="}


def message_item(n: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{n}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call_item(n: int) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": "read_file",
        "arguments": json.dumps({"path": f"m{n}.py"}),
        "status": "completed",
    }


steps = st.lists(
    st.tuples(st.sampled_from(["user", "tool"]), st.booleans()), min_size=0, max_size=6
)


@settings(max_examples=40, deadline=None)
@given(
    history=steps,
    before=st.integers(min_value=0, max_value=2),
    after=st.sampled_from(["none", "text", "call"]),
    usage=st.tuples(st.integers(0, 5_000), st.integers(0, 500)),
)
def test_a_provider_compaction_leaves_the_item_and_what_follows(
    history: list[tuple[str, bool]], before: int, after: str, usage: tuple[int, int]
) -> None:
    with SessionStore("memory://provider-compaction-fold") as store:
        s = store.create_session(model="gpt-5.2", context_window=64_000)
        s.append_system("Be careful.")
        appended = 0
        for n, (kind, pinned) in enumerate(history):
            if kind == "user":
                message = s.append_user(f"request {n}")
                if pinned:
                    s.pin(message.id)
                appended += 1
            else:
                s.append_openai_response({"id": f"r{n}", "output": [call_item(n)]})
                s.append_tool_result(f"call_{n}", f"output {n} " * 200)
                appended += 2
        output = [message_item(100 + k, f"before {k}") for k in range(before)]
        output.append({**ITEM, "created_by": "server"})
        if after == "text":
            output.append(message_item(200, "after"))
        elif after == "call":
            output.append(call_item(300))
        response = {
            "id": "compacting",
            "output": output,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
        s.append_openai_response(response)

        live = s.context()
        items = live.to_responses()
        follows = output[before + 1 :]
        assert items[0]["role"] == "developer"
        assert items[1] == ITEM
        assert items[2:] == follows + (
            [{"type": "function_call_output", "call_id": "call_300", "output": items[-1]["output"]}]
            if after == "call"
            else []
        )
        assert not live.messages[0].pinned and all(not m.pinned for m in live.messages)
        measured = s.measure()
        if after != "none":
            assert (measured.tokens, measured.source) == (usage[0] + usage[1], "usage")
        # a fresh handle folds the log again: the same context
        assert store.session(s.id).context().to_responses() == items
        compaction = next(r for r in s.timeline() if r.type == "ContextCompacted")
        replayed = s.context(at=compaction.seq - 1).messages
        # the system prompt, every earlier message, the response's part before the item (when
        # there is one) and the part after it (when there is one)
        assert len(replayed) == 1 + appended + (before > 0) + (after != "none")
