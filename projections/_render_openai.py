"""Rendering a live context for OpenAI Chat Completions (`messages`)."""

from __future__ import annotations

from collections.abc import Sequence

from events import OPENAI_CHAT, FilePart, NativePart, ReasoningPart, TextPart, ToolCallPart
from projections._live import LiveMessage, LivePart, LiveToolResult
from projections._render import (
    JsonDict,
    api_messages,
    data_url,
    file_mention,
    foreign_text,
    is_native,
)


def to_openai(messages: Sequence[LiveMessage]) -> list[JsonDict]:
    """The `messages` list for Chat Completions: system/user/assistant messages, assistant
    `tool_calls`, and one `tool` message per result."""
    out: list[JsonDict] = []
    for message in api_messages(messages):
        if message.role == "tool":
            out.extend(
                {"role": "tool", "tool_call_id": part.call_id, "content": part.output}
                for part in message.parts
                if isinstance(part, LiveToolResult)
            )
        elif message.role == "assistant":
            rendered = _openai_assistant(message)
            if rendered is not None:
                out.append(rendered)
        else:
            out.append({"role": message.role, "content": _openai_content(message.parts)})
    return out


def _openai_content(parts: Sequence[LivePart]) -> str | list[JsonDict]:
    shown: list[TextPart | FilePart] = []
    for part in parts:
        if isinstance(part, ReasoningPart | NativePart):
            text = foreign_text(part)
            if text:
                shown.append(TextPart(id=part.id, text=text))
        elif isinstance(part, TextPart | FilePart):
            shown.append(part)
    if all(isinstance(p, TextPart) for p in shown):
        return "\n\n".join(p.text for p in shown if isinstance(p, TextPart))
    return [_openai_block(p) for p in shown]


def _openai_block(part: TextPart | FilePart) -> JsonDict:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if part.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": part.url or data_url(part)}}
    if part.data is not None and part.media_type == "application/pdf":
        file: JsonDict = {"file_data": data_url(part)}
        if part.filename:
            file["filename"] = part.filename
        return {"type": "file", "file": file}
    return {"type": "text", "text": file_mention(part)}


def _openai_assistant(message: LiveMessage) -> JsonDict | None:
    """The assistant message, or `None` when nothing of it can be sent (only reasoning)."""
    texts = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, FilePart):
            texts.append(file_mention(part))
        elif isinstance(part, ReasoningPart | NativePart):
            text = foreign_text(part)
            if text:
                texts.append(text)
    calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
    refusal = _refusal(message)
    if not texts and not calls and refusal is None:
        return None
    rendered: JsonDict = {
        "role": "assistant",
        "content": "\n\n".join(texts) if texts or not calls else None,
    }
    if refusal is not None:
        rendered["refusal"] = refusal
    if calls:
        rendered["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    return rendered


def _refusal(message: LiveMessage) -> str | None:
    """The refusal a Chat Completions message was recorded with, sent back as it came."""
    if message.native is None or not is_native(message, OPENAI_CHAT):
        return None
    value = message.native.value
    refusal = value.get("refusal") if isinstance(value, dict) else None
    return refusal if isinstance(refusal, str) else None
