"""The read model of a live context: messages as the model is shown them.

Stored messages never change; what changes is how a tool result is shown (original, truncated,
pruned to a placeholder, restored), whether a long user message shows its truncated view or
its original, and whether an older turn's reasoning is still sent. `LiveMessage` is a message
as it stands in the live context at one point, with every part's token count resolved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sessionstore.events import (
    FilePart,
    Native,
    NativePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
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


@dataclass(slots=True)
class ShownMessage:
    """A live message as the renders read it, `plain` (the JSON of its `LiveMessage`, parts
    included: shared, never changed), and its model once a caller asks for it: a context read
    after every append builds models only for the messages that changed, and only if asked."""

    plain: dict[str, Any]
    _model: LiveMessage | None = dataclass_field(default=None, compare=False, repr=False)

    def model(self) -> LiveMessage:
        if self._model is None:
            self._model = LiveMessage.model_validate(self.plain)
        return self._model


def estimate_tokens(text: str) -> int:
    """Stand-in for a count missing from the event (written without the Session API): about
    four bytes per token, the usual rule of thumb. Deterministic, so replay stays exact."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // 4)


def _estimated(text: object) -> int:
    """`estimate_tokens` of a text, or of the text a body reference stands for (an original
    the read path left unread: the reference holds its UTF-8 size, all the estimate counts)."""
    if type(text) is dict:
        return -(-int(text["bytes"]) // 4)
    return estimate_tokens(text)  # type: ignore[arg-type]


def field(value: object, name: str, default: Any = None) -> Any:
    """A field of a part, a message or a nested value, whether it is a model or its stored
    JSON (a plain dict, as the read path keeps it): one rule reads both shapes."""
    if type(value) is dict:
        return value.get(name, default)
    return getattr(value, name, default)


def stored_tokens(part: object) -> int:
    """A part's token count as recorded at append, or its estimate when none was. `part` is
    a text, reasoning, tool-call, file or native part, as a model or as stored JSON."""
    tokens = field(part, "tokens")
    if tokens is not None:
        return int(tokens)
    kind = field(part, "type")
    if kind == "file":
        return FILE_TOKENS
    if kind == "tool_call":
        return estimate_tokens(field(part, "name") + field(part, "arguments", "{}"))
    if kind == "native":
        return estimate_tokens(native_text(part))
    if kind == "text":
        truncation = field(part, "truncation")
        return _estimated(field(part, "text") if truncation is None else field(truncation, "shown"))
    return _estimated(field(part, "text"))


def original_text_tokens(part: object) -> int:
    """Tokens of a truncated text part's full original."""
    truncation = field(part, "truncation")
    if truncation is None:
        return stored_tokens(part)
    counted = field(truncation, "output_tokens")
    if counted is not None:
        return int(counted)
    return _estimated(field(part, "text"))


def native_text(part: object) -> str:
    """The text a provider's own block is counted by: its JSON, as its render sends it."""
    value = field(field(part, "native"), "value")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def shown_result_tokens(part: object) -> int:
    """Tokens of what the model is shown of a tool result at append (truncated view or all)."""
    tokens = field(part, "tokens")
    if tokens is not None:
        return int(tokens)
    truncation = field(part, "truncation")
    blocks = field(part, "blocks")
    if truncation is None and blocks is not None:
        return sum(stored_tokens(block) for block in blocks)
    return _estimated(field(part, "output") if truncation is None else field(truncation, "shown"))


def original_result_tokens(part: object) -> int:
    """Tokens of a tool result's full original output: its text, or all its blocks."""
    truncation = field(part, "truncation")
    if truncation is None:
        return shown_result_tokens(part)
    counted = field(truncation, "output_tokens")
    if counted is not None:
        return int(counted)
    blocks = field(part, "blocks")
    if blocks is not None:
        return sum(stored_tokens(block) for block in blocks)
    return _estimated(field(part, "output"))
