"""The providers' own compaction is a compaction of the session (issue 27, item 4).

Agent loops through the real `openai` and `anthropic` clients against the local fakes of
`fake_compaction`, which refuse a compaction item that does not come back as issued or comes
after anything the provider dropped, on every backend (the `store` fixture): each response's
compaction item becomes a `ContextCompacted` (reason `provider`) whose summary is the item
verbatim, the live context after it is what the provider expects, token accounting restarts
from the provider's figure, our policies keep out of it, and replay, restore and the timeline
see it as they see ours.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
from anthropic.types.beta import BetaMessageParam
from pydantic import TypeAdapter

from sessionstore import Session, SessionStore
from sessionstore.events import (
    ContextCompacted,
    Message,
    MessageAppended,
    TextPart,
    Usage,
)
from sessionstore.projections import compaction_item
from tests.providers.fake_compaction import (
    COMPACTED_INPUT,
    OUTPUT_TOKENS,
    SUMMARY,
    TIMEOUT,
    CompactingAnthropic,
    CompactingResponses,
    serving,
)
from tests.providers.request_types import check_chat, check_responses

TURNS = 12
REPORTED = COMPACTED_INPUT + OUTPUT_TOKENS  # what the fakes report after compacting: 900


def reads(n: int) -> str | None:
    return None if n == TURNS else f"src/module_{n}.py"


def read_file(path: str) -> str:
    """About 1,100 tokens: a few turns pass any threshold below."""
    return "".join(
        f"{path}:{line}: value_{line} = compute({line}, {line * 7})\n" for line in range(90)
    )


def new_session(store: SessionStore, model: str) -> Session:
    s = store.create_session(model=model, context_window=200_000)
    s.append_system("You are a careful coding agent.")
    s.pin(s.append_user("test_sum fails; read the modules one by one, then fix it.").id)
    return s


def provider_compactions(store: SessionStore, s: Session) -> list[tuple[int, ContextCompacted]]:
    return [
        (e.seq, e.payload)
        for e in store.read(s.id)
        if isinstance(e.payload, ContextCompacted) and e.payload.reason == "provider"
    ]


def test_a_responses_loop_with_server_compaction_sends_what_the_api_expects(
    store: SessionStore,
) -> None:
    s = new_session(store, "gpt-5.2")
    fake = CompactingResponses(reads)
    after_compaction: list[tuple[int, str]] = []
    with serving(fake) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="t", max_retries=0, timeout=TIMEOUT)
        for _ in range(TURNS):
            s.before_llm_call()
            response = client.responses.create(
                model="gpt-5.2",
                input=s.context().to_responses(),
                store=False,
                context_management=[{"type": "compaction", "compact_threshold": 3_000}],
            )
            compactions = len(provider_compactions(store, s))
            answer = s.append_openai_response(response)
            if len(provider_compactions(store, s)) > compactions:
                measured = s.measure()
                after_compaction.append((measured.tokens, measured.source))
            call = next((p for p in answer.parts if p.type == "tool_call"), None)
            if call is None:
                break
            s.append_tool_result(call.call_id, read_file(json.loads(call.arguments)["path"]))

    assert fake.refusals == []
    assert fake.turns == TURNS
    assert fake.compactions == 3
    # token accounting restarts from the provider's figure, not from our count of the turns
    assert after_compaction == [(REPORTED, "usage")] * 3
    found = provider_compactions(store, s)
    assert [c.summarizer for _, c in found] == ["openai.responses"] * 3
    for _, compaction in found:
        (part,) = compaction.summary.parts
        assert part.native is not None
        item = compaction_item(part.native)
        assert item is not None and item["id"] in fake.issued
        # verbatim, as the server sent it (its `created_by` is left out only when sent back)
        assert item == {**fake.issued[str(item["id"])], "created_by": "server"}
    # the live context: the developer message, the newest compaction item, what followed it
    items = s.context().to_responses()
    check_responses(items)
    newest = compaction_item(found[-1][1].summary.parts[0].native)
    assert newest is not None
    assert items[0]["role"] == "developer"
    assert items[1] == fake.issued[str(newest["id"])]
    assert all(i.get("type") != "compaction" for i in items[2:])


def test_the_providers_figure_replaces_our_count_of_what_it_dropped(store: SessionStore) -> None:
    """The issue's case: 6,227 tokens counted where the provider reported 900."""
    s = store.create_session(model="gpt-5.2", context_window=32_000)
    s.append_system("Be brief.")
    # a long request, counted as it was appended (a count given is kept)
    s.append_message(Message(role="user", parts=(TextPart(text="x " * 6_000, tokens=6_224),)))
    assert s.tokens == 6_227
    response = {
        "id": "resp_1",
        "output": [
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA+/x=="},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            },
        ],
        "usage": {"input_tokens": 860, "output_tokens": 40},
    }
    answer = s.append_openai_response(response)
    assert answer.parts[0].type == "text"
    measured = s.measure()
    assert (measured.tokens, measured.source) == (900, "usage")
    ((seq, compaction),) = provider_compactions(store, s)
    # ours: the system prompt (3) and the response (23: the item's stand-in and "Done.")
    assert s.tokens == 3 + 23
    assert (compaction.tokens_before, compaction.tokens_after) == (6_227 + 23, 900)
    assert s.context().to_responses() == [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Be brief."}],
        },
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA+/x=="},
        response["output"][1],  # type: ignore[index]
    ]
    # restore_pruned shows originals of pruned outputs, not what a compaction replaced
    assert s.context(restore_pruned=True).to_responses() == s.context().to_responses()
    (row,) = [r for r in s.timeline() if r.seq == seq]
    assert (row.type, len(row.removed), len(row.added)) == ("ContextCompacted", 1, 1)
    assert "(provider, openai.re" in row.summary
    # replay before it shows the turns it replaced; the log keeps them
    before = s.context(at=seq - 1)
    assert [m.role for m in before.messages] == ["system", "user", "assistant"]
    appended = [
        e.payload.message.id for e in store.read(s.id) if isinstance(e.payload, MessageAppended)
    ]
    assert len(appended) == 3


def anthropic_loop(
    store: SessionStore, s: Session, fake: CompactingAnthropic, edits: list[dict[str, Any]]
) -> None:
    with serving(fake) as url:
        client = anthropic.Anthropic(base_url=url, api_key="t", max_retries=0, timeout=TIMEOUT)
        for _ in range(TURNS):
            s.before_llm_call()
            request = s.context().to_anthropic()
            options: dict[str, Any] = {"context_management": {"edits": edits}}
            response = client.beta.messages.create(
                model="claude-opus-4-6",
                max_tokens=2_000,
                messages=request["messages"],
                system=request["system"],
                betas=["compact-2026-01-12", "context-management-2025-06-27"],
                **options,
            )
            answer = s.append_anthropic(response, context_management={"edits": edits})
            call = next((p for p in answer.parts if p.type == "tool_call"), None)
            if call is None:
                return
            s.append_tool_result(call.call_id, read_file(json.loads(call.arguments)["path"]))


COMPACT = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 3_000}}


def test_an_anthropic_loop_with_server_compaction_sends_what_the_api_expects(
    store: SessionStore,
) -> None:
    s = new_session(store, "claude-opus-4-6")
    fake = CompactingAnthropic(reads)
    anthropic_loop(store, s, fake, [COMPACT])
    assert fake.refusals == []
    assert fake.turns == TURNS
    assert fake.compactions == 3
    found = provider_compactions(store, s)
    assert [c.summarizer for _, c in found] == ["anthropic.messages"] * 3
    assert [c.tokens_after for _, c in found] == [REPORTED] * 3
    # the block, verbatim, opens the context; the system prompt stays apart
    request = s.context().to_anthropic()
    TypeAdapter(list[BetaMessageParam]).validate_python(request["messages"])
    first = request["messages"][0]
    assert first["role"] == "assistant"
    assert first["content"][0] == list(fake.issued.values())[-1]
    assert request["system"] == "You are a careful coding agent."
    # the compaction's own cost is kept with the usage, verbatim
    seq = found[-1][0]
    (appended,) = [e.payload for e in store.read(s.id, seq - 1, seq - 1)]
    assert isinstance(appended, MessageAppended) and isinstance(appended.message.usage, Usage)
    iterations = appended.message.usage.iterations
    assert iterations is not None
    assert [i["type"] for i in iterations if isinstance(i, dict)] == ["compaction", "message"]


def test_a_compaction_renders_for_the_other_provider_as_text_or_a_note(
    store: SessionStore,
) -> None:
    s = new_session(store, "claude-opus-4-6")
    anthropic_loop(store, s, CompactingAnthropic(reads), [COMPACT])
    readable = s.context()
    chat = readable.to_openai()
    check_chat(chat)
    summary = next(m for m in chat if m["role"] == "assistant")
    assert summary["content"].startswith(
        "[Summary of the earlier conversation, written by Anthropic's compaction:]\n"
        + SUMMARY.format(n=9)[:20]
    )
    items = readable.to_responses()
    check_responses(items)
    assert all(i.get("type") != "compaction" for i in items)

    o = new_session(store, "gpt-5.2")
    o.append_openai_response(
        {
            "id": "resp_1",
            "output": [{"type": "compaction", "id": "cmp_9", "encrypted_content": "gAAA=="}],
        }
    )
    request = o.context().to_anthropic()
    note = (
        "[The earlier conversation was compacted by OpenAI; its summary is encrypted and only "
        "OpenAI can read it, so it is left out here.]"
    )
    assert request["messages"] == [{"role": "user", "content": [{"type": "text", "text": note}]}]


def test_our_policies_leave_the_providers_compaction_alone(store: SessionStore) -> None:
    s = new_session(store, "gpt-5.2")
    s.append_openai_response(
        {
            "id": "resp_1",
            "output": [
                {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA=="},
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "c1",
                    "name": "read_file",
                    "arguments": "{}",
                    "status": "completed",
                },
            ],
        }
    )
    s.append_tool_result("c1", read_file("a.py"))
    for n in range(2, 6):
        s.append_user(f"now module {n}")
        s.append_assistant(tool_calls=[{"id": f"c{n}", "name": "read_file", "arguments": "{}"}])
        s.append_tool_result(f"c{n}", read_file(f"m{n}.py"))
    s.append_user("and finish")
    s.compact(keep_turns=1, keep_tokens=0)
    live = s.context()
    items = live.to_responses()
    # our summary replaced the turns after the item, and went after it
    assert items[1] == {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA=="}
    assert items[2]["role"] == "user" and "summary" in json.dumps(items[2]).lower()
    s.prune()
    assert s.context().to_responses()[1] == items[1]


def test_an_anthropic_response_after_its_compaction_block_stays_one_turn_with_its_thinking(
    store: SessionStore,
) -> None:
    s = new_session(store, "claude-opus-4-6")
    content = [
        {"type": "compaction", "content": "Modules 1-3 read.", "signature": "c2ln"},
        {"type": "thinking", "thinking": "Read module 4 next.", "signature": "dGhpbms="},
        {"type": "tool_use", "id": "toolu_4", "name": "read_file", "input": {"path": "m4.py"}},
    ]
    s.append_anthropic({"id": "msg_4", "role": "assistant", "content": content})
    s.append_tool_result("toolu_4", "x = 1")
    messages = s.context().to_anthropic()["messages"]
    assert messages[0] == {"role": "assistant", "content": content}
    assert [m["role"] for m in messages] == ["assistant", "user"]


def test_our_compaction_and_the_providers_in_one_loop(store: SessionStore) -> None:
    """Ours between the provider's: our summary goes after the provider's item, the provider's
    next compaction replaces it too, and every request sends the newest item first."""
    s = new_session(store, "gpt-5.2")
    fake = CompactingResponses(reads)
    sent_after_ours: list[str] = []
    with serving(fake) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="t", max_retries=0, timeout=TIMEOUT)
        for turn in range(1, TURNS + 1):
            if turn in (6, 9):
                s.compact(keep_turns=0, keep_tokens=1_500)
                sent_after_ours.append(
                    json.dumps([i.get("type") for i in s.context().to_responses()])
                )
            response = client.responses.create(
                model="gpt-5.2",
                input=s.context().to_responses(),
                store=False,
                context_management=[{"type": "compaction", "compact_threshold": 2_500}],
            )
            answer = s.append_openai_response(response)
            call = next((p for p in answer.parts if p.type == "tool_call"), None)
            if call is None:
                break
            s.append_tool_result(call.call_id, read_file(json.loads(call.arguments)["path"]))
    assert fake.refusals == []
    assert fake.turns == TURNS
    reasons = [
        e.payload.reason for e in store.read(s.id) if isinstance(e.payload, ContextCompacted)
    ]
    assert reasons.count("manual") == 2 and reasons.count("provider") >= 2, reasons
    # ours went after the provider's item: developer, item, our summary, what it kept
    assert [json.loads(types)[:3] for types in sent_after_ours] == [
        ["message", "compaction", "message"]
    ] * 2


def test_the_figure_is_the_last_sampling_iteration_when_the_usage_lists_them(
    store: SessionStore,
) -> None:
    """A server tool loop after compacting: the top-level usage adds up its iterations, the
    context is what the last one read and wrote."""
    s = new_session(store, "claude-opus-4-6")
    iteration = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    s.append_anthropic(
        {
            "id": "msg_1",
            "role": "assistant",
            "content": [
                {"type": "compaction", "content": "Modules read.", "signature": "c2ln"},
                {"type": "text", "text": "Searching, then answering."},
            ],
            "usage": {
                "input_tokens": 1_500,
                "output_tokens": 70,
                "iterations": [
                    {
                        **iteration,
                        "type": "compaction",
                        "input_tokens": 9_000,
                        "output_tokens": 300,
                    },
                    {**iteration, "type": "message", "input_tokens": 640, "output_tokens": 30},
                    {**iteration, "type": "message", "input_tokens": 860, "output_tokens": 40},
                ],
            },
        }
    )
    ((_, compaction),) = provider_compactions(store, s)
    assert compaction.tokens_after == REPORTED
    assert (s.measure().tokens, s.measure().source) == (REPORTED, "usage")
