"""Rendering a live context for the Anthropic Messages API (`system` and `messages`)."""

from __future__ import annotations

from collections.abc import Sequence

from events import ANTHROPIC, FilePart, NativePart, ReasoningPart, TextPart, ToolCallPart
from projections._live import LiveMessage, LivePart, LiveToolResult
from projections._render import (
    CONTINUED,
    JsonDict,
    api_messages,
    file_mention,
    foreign_text,
    is_native,
    native_block,
    result_content,
)


def to_anthropic(messages: Sequence[LiveMessage]) -> JsonDict:
    """`{"system": ..., "messages": [...]}` for the Messages API: system text apart, tool calls
    as `tool_use` blocks, results as `tool_result` blocks in a user turn; consecutive turns of
    one role are merged and empty text blocks dropped, as the API requires."""
    system: list[str] = []
    turns: list[JsonDict] = []
    for message in api_messages(messages):
        if message.role == "system":
            system.extend(p.text for p in message.parts if isinstance(p, TextPart))
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [block for part in message.parts for block in _anthropic_blocks(part, role)]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONTINUED}]})
    if turns and turns[-1]["role"] == "assistant":
        _strip_final_whitespace(turns)
    if not system:
        return {"messages": turns}
    return {"system": "\n\n".join(system), "messages": turns}


def _strip_final_whitespace(turns: list[JsonDict]) -> None:
    """The API refuses a final assistant turn ending in whitespace (it would be a prefill)."""
    content = turns[-1]["content"]
    last = content[-1]
    if last["type"] == "text":
        last["text"] = last["text"].rstrip()


def _anthropic_blocks(part: LivePart, role: str) -> list[JsonDict]:
    if is_native(part, ANTHROPIC):
        return [native_block(part)]  # thinking with its signature, tool_use, server tools...
    if isinstance(part, ReasoningPart | NativePart):
        text = foreign_text(part)
        return [{"type": "text", "text": text}] if text and text.strip() else []
    if isinstance(part, TextPart):
        return [{"type": "text", "text": part.text}] if part.text.strip() else []
    if isinstance(part, ToolCallPart):
        arguments = part.input
        tool_input = arguments if isinstance(arguments, dict) else {"_arguments": part.arguments}
        return [{"type": "tool_use", "id": part.call_id, "name": part.name, "input": tool_input}]
    if isinstance(part, LiveToolResult):
        block: JsonDict = {"type": "tool_result", "tool_use_id": part.call_id}
        block["content"] = result_content(part, ANTHROPIC)
        if part.is_error:
            block["is_error"] = True
        return [block]
    if role == "assistant":  # the API takes images and documents in user turns only
        return [{"type": "text", "text": file_mention(part)}]
    return [_anthropic_file(part)]


def _anthropic_file(part: FilePart) -> JsonDict:
    if part.url is not None:
        source: JsonDict = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
    if part.media_type.startswith("image/"):
        return {"type": "image", "source": source}
    if part.media_type == "application/pdf":
        return {"type": "document", "source": source}
    return {"type": "text", "text": file_mention(part)}
