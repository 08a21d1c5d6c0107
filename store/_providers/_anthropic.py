"""An Anthropic Messages API response (`anthropic.types.Message` or its dict) as a message.

Every content block is kept verbatim in its part's `native`, in the order the model produced
it: `thinking` (with its `signature`) and `redacted_thinking` become reasoning parts, `text`
(with its citations) a text part, `tool_use` a tool call (its `input` also as JSON text), and
every other block (`server_tool_use`, `web_search_tool_result`, newer types) a `NativePart`.
`to_anthropic()` sends them all back unchanged.
"""

from __future__ import annotations

from typing import Any

from events import (
    ANTHROPIC,
    InvalidArgument,
    Message,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    Usage,
)
from store._providers._sdk import arguments_text, as_json, count, field

WHAT = "an Anthropic message"


def anthropic_message(response: object) -> Message:
    data = as_json(response, WHAT)
    if data.get("role", "assistant") != "assistant":
        raise_role(data)
    blocks = field(data, "content", list, WHAT)
    parts: list[Part] = [_part(block) for block in blocks]
    envelope = {key: value for key, value in data.items() if key != "content"}
    return Message(
        role="assistant",
        parts=tuple(parts) or (TextPart(text=""),),
        usage=_usage(data.get("usage")),
        native=Native(api=ANTHROPIC, value=envelope),
    )


def raise_role(data: dict[str, Any]) -> None:
    raise InvalidArgument(f"{WHAT} has role {str(data.get('role'))[:40]!r}, not 'assistant'")


def _part(block: Any) -> Part:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise InvalidArgument(f"{WHAT}: a content block is not an object with a type")
    native = Native(api=ANTHROPIC, value=block)
    kind = block["type"]
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(text=block["text"], native=native)
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return ReasoningPart(text=block["thinking"], native=native)
    if kind == "redacted_thinking":
        return ReasoningPart(text="", native=native)
    if (
        kind == "tool_use"
        and isinstance(block.get("id"), str)
        and isinstance(block.get("name"), str)
    ):
        return ToolCallPart(
            call_id=block["id"],
            name=block["name"],
            arguments=arguments_text(block.get("input", {})),
            native=native,
        )
    return NativePart(native=native, text=_describe(block))


def _describe(block: dict[str, Any]) -> str:
    """A one-line stand-in for a block other APIs cannot take."""
    if block["type"] == "server_tool_use":
        return f"[{block.get('name', 'server tool')} {arguments_text(block.get('input', {}))}]"
    return f"[{block['type']}]"


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    return Usage(
        input=count(usage.get("input_tokens")),
        output=count(usage.get("output_tokens")),
        cache_read=count(usage.get("cache_read_input_tokens")),
        cache_write=count(usage.get("cache_creation_input_tokens")),
    )
