"""Summarizers that ask the provider for its own compaction (issue 27, item 6), through the real
`openai` and `anthropic` clients against the fakes of `fake_compaction`, which refuse an item
not sent back as issued, anything sent before it, and `context_management` beside compaction
on demand; on every backend."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

from sessionstore import (
    AnthropicCompactSummarizer,
    AsyncSessionStore,
    CompactionError,
    OpenAICompactSummarizer,
    Session,
    SessionStore,
)
from sessionstore.events import ContextCompacted, NativePart
from tests.conftest import Backend
from tests.providers.fake_compaction import (
    TIMEOUT,
    CompactingAnthropic,
    CompactingResponses,
    serving,
)
from tests.providers.test_provider_compaction import TURNS, new_session, read_file, reads


def compactions(store: SessionStore, s: Session) -> list[ContextCompacted]:
    return [e.payload for e in store.read(s.id) if isinstance(e.payload, ContextCompacted)]


def next_call(answer: Any) -> tuple[str, str] | None:
    call = next((p for p in answer.parts if p.type == "tool_call"), None)
    return None if call is None else (call.call_id, json.loads(call.arguments)["path"])


def test_the_responses_compact_summarizer_compacts_as_the_api_expects(
    store: SessionStore,
) -> None:
    s = new_session(store, "gpt-5.2")
    fake = CompactingResponses(reads)
    with serving(fake) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="t", max_retries=0, timeout=TIMEOUT)
        summarizer = OpenAICompactSummarizer(client, "gpt-5.2")
        for turn in range(1, TURNS + 1):
            if turn % 4 == 0:
                s.compact(summarizer, keep_turns=0, keep_tokens=2_000)
            response = client.responses.create(
                model="gpt-5.2", input=s.context().to_responses(), store=False
            )
            called = next_call(s.append_openai_response(response))
            if called is None:
                break
            s.append_tool_result(called[0], read_file(called[1]))

    assert fake.refusals == []
    assert fake.turns == TURNS
    assert fake.compactions == 3
    found = compactions(store, s)
    assert [c.summarizer for c in found] == ["openai.responses.compact"] * 3
    # the summary is the compacted window as the API answered it: the user message, the item
    first = found[0].summary
    assert first.role == "user"
    values = [p.native.value for p in first.parts if isinstance(p, NativePart)]
    assert [v["type"] for v in values] == ["message", "compaction"]  # type: ignore[index,call-overload]
    assert values[1] == {**fake.issued["cmp_0001"], "created_by": "server"}
    # the pinned request went into the window: it is sent once, inside it
    items = s.context().to_responses()
    texts = json.dumps(items).count("test_sum fails; read the modules")
    assert texts == 1


def test_the_anthropic_compaction_summarizer_compacts_on_demand(store: SessionStore) -> None:
    s = new_session(store, "claude-opus-4-6")
    fake = CompactingAnthropic(reads)
    with serving(fake) as url:
        client = anthropic.Anthropic(base_url=url, api_key="t", max_retries=0, timeout=TIMEOUT)
        summarizer = AnthropicCompactSummarizer(client, "claude-opus-4-6")
        for turn in range(1, TURNS + 1):
            if turn % 4 == 0:
                s.compact(summarizer, keep_turns=0, keep_tokens=2_000)
            request = s.context().to_anthropic()
            response = client.beta.messages.create(
                model="claude-opus-4-6",
                max_tokens=2_000,
                messages=request["messages"],
                system=request["system"],
                betas=["compact-2026-01-12"],
            )
            called = next_call(s.append_anthropic(response))
            if called is None:
                break
            s.append_tool_result(called[0], read_file(called[1]))

    assert fake.refusals == []
    assert fake.turns == TURNS
    assert fake.compactions == 3
    found = compactions(store, s)
    assert [c.summarizer for c in found] == ["anthropic.messages.compaction"] * 3
    (part,) = found[-1].summary.parts
    assert isinstance(part, NativePart)
    assert part.native.value == list(fake.issued.values())[-1]
    first = s.context().to_anthropic()["messages"][0]
    assert first["role"] == "assistant" and first["content"][0] == part.native.value


def test_a_refused_compaction_falls_back_to_the_extractive_summary(store: SessionStore) -> None:
    s = new_session(store, "claude-opus-4-6")
    for n in range(1, 5):
        s.append_assistant(tool_calls=[{"id": f"t{n}", "name": "read_file", "arguments": "{}"}])
        s.append_tool_result(f"t{n}", read_file(f"m{n}.py"))
    s.append_user("and now?")
    fake = CompactingAnthropic(reads)
    with serving(fake) as url:
        client = anthropic.Anthropic(base_url=url, api_key="t", max_retries=0, timeout=TIMEOUT)
        # the API refuses compaction on demand beside context_management
        management = {"edits": [{"type": "clear_tool_uses_20250919"}]}
        refused = AnthropicCompactSummarizer(
            client, "claude-opus-4-6", context_management=management
        )
        s.compact(refused, keep_turns=1, keep_tokens=0)
        assert fake.refusals == ["compaction: cannot be combined with context_management"]

        strict = AnthropicCompactSummarizer(
            client, "claude-opus-4-6", fallback=None, context_management=management
        )
        version = s.version
        with pytest.raises(CompactionError, match=r"anthropic\.messages\.compaction failed"):
            s.compact(strict, keep_turns=1, keep_tokens=0)
        assert s.version == version

    (compaction,) = compactions(store, s)
    assert compaction.summarizer == "extractive (fallback: anthropic.messages.compaction failed)"
    assert compaction.summary.parts[0].type == "text"


def test_an_unreachable_endpoint_falls_back_too(store: SessionStore) -> None:
    s = new_session(store, "gpt-5.2")
    for n in range(1, 5):
        s.append_assistant(tool_calls=[{"id": f"t{n}", "name": "read_file", "arguments": "{}"}])
        s.append_tool_result(f"t{n}", read_file(f"m{n}.py"))
    s.append_user("and now?")
    with serving(CompactingResponses(reads)) as url:
        pass  # stopped: nothing listens there any more
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="t", max_retries=0, timeout=2.0)
    s.compact(OpenAICompactSummarizer(client, "gpt-5.2"), keep_turns=1, keep_tokens=0)
    (compaction,) = compactions(store, s)
    assert compaction.summarizer == "extractive (fallback: openai.responses.compact failed)"


def test_an_async_client_compacts_through_the_async_face(backend: Backend) -> None:
    async def steps(url: str) -> ContextCompacted:
        async with AsyncSessionStore(backend.url) as store:
            s = await store.create_session(model="gpt-5.2")
            await s.append_user("Read the modules.")
            for n in range(1, 5):
                calls = [{"id": f"c{n}", "name": "read_file", "arguments": "{}"}]
                await s.append_assistant(tool_calls=calls)
                await s.append_tool_result(f"c{n}", read_file(f"m{n}.py"))
            await s.append_user("Now fix it.")
            client = openai.AsyncOpenAI(
                base_url=f"{url}/v1", api_key="t", max_retries=0, timeout=TIMEOUT
            )
            summarizer = OpenAICompactSummarizer(client, "gpt-5.2", fallback=None)
            event = await s.compact(summarizer, keep_turns=1, keep_tokens=0)
            assert isinstance(event.payload, ContextCompacted)
            return event.payload

    fake = CompactingResponses(reads)
    with serving(fake) as url:
        compaction = asyncio.run(steps(url))
    assert fake.refusals == []
    assert compaction.summarizer == "openai.responses.compact"
    kinds = [p.native.value["type"] for p in compaction.summary.parts]  # type: ignore[index,union-attr,call-overload]
    assert kinds == ["message", "compaction"]
