"""A provider's own compaction, as the folds and renders must know it.

Two APIs compact a conversation themselves and hand the result back as one item or block that
the next request must send back unchanged, with nothing the provider dropped before it:
- the OpenAI Responses API, a `compaction` output item (`context_management` with
  `compact_threshold` on `responses.create`, or `POST /responses/compact`), whose
  `encrypted_content` is opaque;
- the Anthropic Messages API, a `compaction` content block (server-side compaction with the
  `compact_20260112` edit, or compaction on demand, `stop_reason: "compaction"`), whose
  `content` is the summary as text. A block with no `content` is a compaction that failed: the
  API treats it as a no-op, and so does the store.

sessionstore records such an item as a `ContextCompacted` whose summary holds it, verbatim
(`sessionstore.providers`). This module is what the layers below the providers read of it:
whether a part or a summary is one (the fold drops what the provider dropped, pins included,
and context management plans nothing before it), and the text another provider's render shows
instead (the summary when it is readable, else a note that it is left out).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import JsonValue

from sessionstore.events import ANTHROPIC, OPENAI_RESPONSES, Message, Native

COMPACTION = "compaction"
"""The type both APIs give their compaction item or block."""

READABLE_SUMMARY = "[Summary of the earlier conversation, written by {api}'s compaction:]\n{text}"
"""What another provider is shown of a compaction whose summary is text."""

OPAQUE_SUMMARY = (
    "[The earlier conversation was compacted by {api}; its summary is encrypted and only "
    "{api} can read it, so it is left out here.]"
)
"""What another provider is shown of a compaction whose summary is encrypted."""

PROVIDER_NAMES = {ANTHROPIC: "Anthropic", OPENAI_RESPONSES: "OpenAI"}


def compaction_item(native: Native | None) -> dict[str, JsonValue] | None:
    """The provider's compaction item or block `native` holds, or `None` when it holds none (a
    failed Anthropic compaction, whose `content` is null, holds none: the API ignores it)."""
    if native is None or not isinstance(native.value, dict):
        return None
    value = native.value
    if value.get("type") != COMPACTION:
        return None
    if native.api == OPENAI_RESPONSES and isinstance(value.get("encrypted_content"), str):
        return value
    if native.api == ANTHROPIC and isinstance(value.get("content"), str) and value["content"]:
        return value
    return None


def is_provider_compaction(part: object) -> bool:
    """Whether `part` (any part, live or stored) is a provider's compaction item or block."""
    return compaction_item(getattr(part, "native", None)) is not None


def holds_provider_compaction(parts: Iterable[object]) -> bool:
    """Whether a message with these parts holds a provider's compaction: as a summary, the
    provider dropped everything before it."""
    return any(is_provider_compaction(part) for part in parts)


def is_provider_summary(message: Message) -> bool:
    return holds_provider_compaction(message.parts)


def compaction_text(native: Native) -> str:
    """What a render for another API shows of a compaction item: its summary, when it is text,
    under a line that says whose it is; else a note that an encrypted summary is left out."""
    api = PROVIDER_NAMES.get(native.api, native.api)
    item = compaction_item(native)
    text = item.get("content") if item is not None else None
    if isinstance(text, str) and text.strip():
        return READABLE_SUMMARY.format(api=api, text=text)
    return OPAQUE_SUMMARY.format(api=api)
