"""The read model of a live context: messages as the model is shown them.

Stored messages never change; what changes is how a tool result is shown (original, truncated,
pruned to a placeholder, restored), whether a long user message shows its truncated view or
its original, and whether an older turn's reasoning is still sent. `LiveMessage` is a message
as it stands in the live context at one point, with every part's token count resolved.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from sessionstore.events import (
    FilePart,
    Native,
    NativePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

FILE_TOKENS = 1_000
"""A file or image counts this many tokens: providers price images by their pixels, which the
store does not decode, and 1,000 sits between a small and a full-size image."""

OutputStatus = Literal["original", "truncated", "previewed", "pruned", "restored"]
"""How a tool result is shown: whole, truncated at append, cut to a preview by a strategy
(`PartsPreviewed`), pruned to a placeholder, or restored to its original."""


class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LiveToolResult(FrozenModel):
    """A tool result as the model is shown it.

    `output` is the text the model sees: the original, the truncated view, or the prune
    placeholder. `blocks` are the result's content blocks (text and images) when it has them
    and is shown in full (original or restored); a truncated or pruned result shows only its
    `output`. `compacted_at` is when it was pruned (OpenCode's `time.compacted`).
    """

    type: Literal["tool_result"] = "tool_result"
    id: str
    call_id: str
    name: str | None = None
    output: str
    is_error: bool = False
    tokens: int
    status: OutputStatus = "original"
    compacted_at: datetime | None = None
    blocks: tuple[TextPart | FilePart, ...] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )


LivePart = Annotated[
    TextPart | ReasoningPart | ToolCallPart | LiveToolResult | FilePart | NativePart,
    Field(discriminator="type"),
]


class LiveMessage(FrozenModel):
    """One message of the live context. `summary` marks a compaction's summary message."""

    id: str
    role: Role
    parts: tuple[LivePart, ...]
    usage: Usage | None = None
    tokens: int
    pinned: bool = False
    summary: bool = False
    native: Native | None = Field(default=None, exclude_if=lambda value: value is None)
    """The provider's envelope the message was recorded with (see `sessionstore.events.Native`)."""
    call_status: dict[str, Literal["previewed", "restored"]] = Field(
        default_factory=dict, exclude_if=lambda value: not value
    )
    """How its tool calls are shown when not as recorded, by part id: cut to a preview, or
    restored whole after one (a tool result says so by its own `status`). No strategy cuts
    either again: a preview is cut already, and a restore is the user's word."""
    reasoning_cleared: bool = Field(default=False, exclude_if=lambda value: not value)
    """Whether reasoning of this message was cleared (an older turn's thinking, by a prune):
    it is left out of `parts`, and renders send the rest without ties to it (a Responses
    `function_call` sent with its `id` requires its reasoning item)."""


def estimate_tokens(text: str) -> int:
    """Stand-in for a count missing from the event (written without the Session API): about
    four bytes per token, the usual rule of thumb. Deterministic, so replay stays exact."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // 4)


def stored_tokens(
    part: TextPart | ReasoningPart | ToolCallPart | FilePart | NativePart,
) -> int:
    """A part's token count as recorded at append, or its estimate when none was."""
    if part.tokens is not None:
        return part.tokens
    if isinstance(part, FilePart):
        return FILE_TOKENS
    if isinstance(part, ToolCallPart):
        return estimate_tokens(part.name + part.arguments)
    if isinstance(part, NativePart):
        return estimate_tokens(native_text(part))
    if isinstance(part, TextPart):
        return estimate_tokens(part.shown)
    return estimate_tokens(part.text)


def original_text_tokens(part: TextPart) -> int:
    """Tokens of a truncated text part's full original."""
    if part.truncation is None:
        return stored_tokens(part)
    if part.truncation.output_tokens is not None:
        return part.truncation.output_tokens
    return estimate_tokens(part.text)


def native_text(part: NativePart) -> str:
    """The text a provider's own block is counted by: its JSON, as its render sends it."""
    return json.dumps(part.native.value, ensure_ascii=False, separators=(",", ":"))


def shown_result_tokens(part: ToolResultPart) -> int:
    """Tokens of what the model is shown of a tool result at append (truncated view or all)."""
    if part.tokens is not None:
        return part.tokens
    if part.truncation is None and part.blocks is not None:
        return sum(stored_tokens(block) for block in part.blocks)
    return estimate_tokens(part.shown)


def original_result_tokens(part: ToolResultPart) -> int:
    """Tokens of a tool result's full original output: its text, or all its blocks."""
    if part.truncation is None:
        return shown_result_tokens(part)
    if part.truncation.output_tokens is not None:
        return part.truncation.output_tokens
    if part.blocks is not None:
        return sum(stored_tokens(block) for block in part.blocks)
    return estimate_tokens(part.output)
