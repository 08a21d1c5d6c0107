"""Summarizers that ask the provider for its own compaction item.

`OpenAICompactSummarizer` calls `POST /responses/compact` (`client.responses.compact`) with
the messages to replace, rendered as a Responses `input`; the API answers the compacted window:
the user messages, then one `compaction` item whose `encrypted_content` only it can read.
`AnthropicCompactSummarizer` asks Claude for compaction on demand (`client.beta.messages.create`
with `compaction={"type": "summarize"}`, never with `context_management`, which the API refuses
beside it); the response is one signed `compaction` block (`stop_reason: "compaction"`).

Either is usable as `summarizer=` wherever a summarizer is (`compact`, `before_llm_call`,
`Session.summarizer`), with the real client given (`openai.OpenAI`, `anthropic.Anthropic`; any
object with the same method). The compaction records the provider's items verbatim as its
summary (a `ProviderSummary`): the next request sends them first, then what the compaction
kept, and nothing it replaced, which is everything before the boundary but the system prompt
(pins too: `compacts_everything_before`). Another provider is shown the summary's text, or a
note when it is encrypted (`sessionstore.projections.compaction_text`).

An async client works too: the summarizer then answers an awaitable, which the session awaits
on its caller's loop (`AsyncSession`). When the request fails (the API refuses it, the network
is down, the answer holds no compaction), `fallback` writes the summary instead,
`ExtractiveSummarizer()` by default, and the compaction event names it; with `fallback=None`
the compaction fails and appends nothing.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from sessionstore.context._summarize import (
    AttributedSummary,
    ExtractiveSummarizer,
    ProviderSummary,
    Summarizer,
    SummaryAnchors,
    fallen_back,
)
from sessionstore.events import (
    ANTHROPIC,
    OPENAI_RESPONSES,
    Message,
    Native,
    NativePart,
)
from sessionstore.projections import (
    LiveMessage,
    compaction_item,
    compaction_text,
    to_anthropic,
    to_responses,
)

EXTRACTIVE = ExtractiveSummarizer()
"""The default fallback: it works offline, with no model."""


class _ProviderCompactSummarizer:
    """What both share: the fallback, and the mark that their item replaces everything."""

    name = "provider"
    compacts_everything_before = True

    def __init__(self, client: Any, model: str, *, fallback: Summarizer | None) -> None:
        self.client = client
        self.model = model
        self.fallback = fallback

    def __call__(
        self,
        messages: Sequence[LiveMessage],
        target_tokens: int,
        *,
        anchors: SummaryAnchors | None = None,
    ) -> AttributedSummary | Awaitable[AttributedSummary]:
        """The provider's summary, or the fallback's; an awaitable of it when the client is
        async (`openai.AsyncOpenAI`, `anthropic.AsyncAnthropic`), which the session awaits on
        its caller's loop."""
        try:
            answer = self.request(messages)
        except Exception as error:
            return self._fall_back(error, messages, target_tokens, anchors)
        if inspect.isawaitable(answer):
            return self._awaited(answer, messages, target_tokens, anchors)
        return self._summary(answer, messages, target_tokens, anchors)

    async def _awaited(
        self,
        answer: Awaitable[object],
        messages: Sequence[LiveMessage],
        target_tokens: int,
        anchors: SummaryAnchors | None,
    ) -> AttributedSummary:
        try:
            done = await answer
        except Exception as error:
            return self._fall_back(error, messages, target_tokens, anchors)
        return self._summary(done, messages, target_tokens, anchors)

    def _summary(
        self,
        answer: object,
        messages: Sequence[LiveMessage],
        target_tokens: int,
        anchors: SummaryAnchors | None,
    ) -> AttributedSummary:
        try:
            message = self.message_of(_json(answer))
        except Exception as error:
            return self._fall_back(error, messages, target_tokens, anchors)
        text = "\n\n".join(p.text for p in message.parts if isinstance(p, NativePart) and p.text)
        return ProviderSummary(text, self.name, message)

    def _fall_back(
        self,
        error: Exception,
        messages: Sequence[LiveMessage],
        target_tokens: int,
        anchors: SummaryAnchors | None,
    ) -> AttributedSummary:
        if self.fallback is None:
            raise error
        return fallen_back(self.fallback, self.name, error, messages, target_tokens, anchors)

    def request(self, messages: Sequence[LiveMessage]) -> object:
        """The client's answer to the compaction request for `messages` (an awaitable of it
        from an async client)."""
        raise NotImplementedError

    def message_of(self, answer: dict[str, Any]) -> Message:
        """The summary to record from the API's answer; raises when it holds no compaction."""
        raise NotImplementedError


class OpenAICompactSummarizer(_ProviderCompactSummarizer):
    """`POST /responses/compact` as a summarizer (see the module). `options` go to the call as
    they are (`instructions`, `prompt_cache_key`...)."""

    name = "openai.responses.compact"

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        fallback: Summarizer | None = EXTRACTIVE,
        **options: Any,
    ) -> None:
        super().__init__(client, model, fallback=fallback)
        self.options = options

    def request(self, messages: Sequence[LiveMessage]) -> object:
        return self.client.responses.compact(
            model=self.model, input=to_responses(messages), **self.options
        )

    def message_of(self, answer: dict[str, Any]) -> Message:
        output = answer.get("output")
        if not isinstance(output, list) or not all(isinstance(i, dict) for i in output):
            raise ValueError("the compacted response has no output list")
        parts = tuple(_responses_part(item) for item in output)
        if not any(compaction_item(p.native) is not None for p in parts):
            raise ValueError("the compacted response holds no compaction item")
        # the compacted window goes in as input items: a user message holds them, as the
        # Codex importer records Codex's compactions
        return Message(role="user", parts=parts)


class AnthropicCompactSummarizer(_ProviderCompactSummarizer):
    """Claude's compaction on demand as a summarizer (see the module). `options` go to
    `client.beta.messages.create` as they are (`instructions` go in `compaction`); `betas`
    names the beta the compaction needs."""

    name = "anthropic.messages.compaction"

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        fallback: Summarizer | None = EXTRACTIVE,
        max_tokens: int = 8_192,
        instructions: str | None = None,
        betas: Sequence[str] = ("compact-2026-01-12",),
        **options: Any,
    ) -> None:
        super().__init__(client, model, fallback=fallback)
        self.max_tokens = max_tokens
        self.instructions = instructions
        self.betas = list(betas)
        self.options = options

    def request(self, messages: Sequence[LiveMessage]) -> object:
        request = to_anthropic(messages)
        compaction: dict[str, Any] = {"type": "summarize"}
        if self.instructions:
            compaction["instructions"] = self.instructions
        extra: dict[str, Any] = {"system": request["system"]} if "system" in request else {}
        return self.client.beta.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=request["messages"],
            compaction=compaction,
            betas=self.betas,
            **extra,
            **self.options,
        )

    def message_of(self, answer: dict[str, Any]) -> Message:
        natives = [Native(api=ANTHROPIC, value=b) for b in _objects(answer.get("content"))]
        found = [native for native in natives if compaction_item(native) is not None]
        if not found:
            stop = answer.get("stop_reason")
            raise ValueError(f"no compaction block in the answer (stop_reason {stop!r})")
        part = NativePart(native=found[-1], text=compaction_text(found[-1]))
        envelope = Native(api=ANTHROPIC, value={k: v for k, v in answer.items() if k != "content"})
        return Message(role="assistant", parts=(part,), native=envelope)


def _responses_part(item: dict[str, Any]) -> NativePart:
    """One item of the compacted window, kept verbatim; its text is what another provider is
    shown (a user message's text, the compaction's note)."""
    native = Native(api=OPENAI_RESPONSES, value=item)
    if compaction_item(native) is not None:
        return NativePart(native=native, text=compaction_text(native))
    content = item.get("content")
    texts = [c["text"] for c in _objects(content) if isinstance(c.get("text"), str)]
    text = "".join(texts) if texts else (content if isinstance(content, str) else "")
    return NativePart(native=native, text=text)


def _objects(value: object) -> list[dict[str, Any]]:
    """The JSON objects of a list (none when it is not one)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _json(answer: object) -> dict[str, Any]:
    """What the client returned, as the JSON the API sent (an SDK model or a dict)."""
    dump = getattr(answer, "model_dump", None)
    data = answer
    if callable(dump):
        data = dump(mode="json", exclude_unset=True, by_alias=True, warnings=False)
    if not isinstance(data, Mapping):
        raise ValueError(f"the client returned {type(answer).__name__}, not a response")
    copied: dict[str, Any] = json.loads(json.dumps(dict(data)))
    return copied
