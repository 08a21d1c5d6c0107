"""Rendering a live context for the OpenAI Responses API (`input`, a list of items).

Items recorded from the Responses API go back as they came, each in its place: `message`
items with their ids and status, `reasoning` items with their summary and `encrypted_content`
(what a stateless caller must send back), `function_call` items with `id`, `call_id` and
`status`, custom and hosted tool calls. What another provider produced is converted: text as
an assistant message, a tool call as a `function_call` item; its reasoning is left out. Every
result is a `function_call_output` (or `custom_tool_call_output` for a custom tool call) right
after its call: a pruned one shows its placeholder. System text and compaction summaries are
messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from events import OPENAI_RESPONSES, FilePart, NativePart, ReasoningPart, TextPart, ToolCallPart
from projections._live import LiveMessage, LivePart, LiveToolResult
from projections._render import (
    JsonDict,
    api_messages,
    data_url,
    file_mention,
    foreign_text,
    is_native,
    native_block,
    result_content,
)


def to_responses(messages: Sequence[LiveMessage]) -> list[JsonDict]:
    """The `input` item list for `client.responses.create(input=...)`."""
    items: list[JsonDict] = []
    custom_calls: set[str] = set()
    for message in api_messages(messages):
        if message.role == "tool":
            items.extend(
                _result_item(part, part.call_id in custom_calls)
                for part in message.parts
                if isinstance(part, LiveToolResult)
            )
        elif message.role == "assistant":
            items.extend(_assistant_items(message.parts, custom_calls))
        else:
            content = _input_content(message.parts, message.role)
            if content:
                items.append({"type": "message", "role": message.role, "content": content})
    return items


def _assistant_items(parts: Sequence[LivePart], custom_calls: set[str]) -> list[JsonDict]:
    items: list[JsonDict] = []
    texts: list[str] = []  # text of other providers, gathered into one assistant message

    def flush() -> None:
        if texts:
            items.append({"type": "message", "role": "assistant", "content": "\n\n".join(texts)})
            texts.clear()

    for part in parts:
        if is_native(part, OPENAI_RESPONSES):
            flush()
            item = native_block(part)
            if item.get("type") == "custom_tool_call" and isinstance(part, ToolCallPart):
                custom_calls.add(part.call_id)
            items.append(item)
        elif isinstance(part, ToolCallPart):
            flush()
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.call_id,
                    "name": part.name,
                    "arguments": part.arguments,
                }
            )
        elif isinstance(part, TextPart):
            if part.text:
                texts.append(part.text)
        elif isinstance(part, FilePart):
            texts.append(file_mention(part))
        elif isinstance(part, ReasoningPart | NativePart):
            text = foreign_text(part)
            if text:
                texts.append(text)
    flush()
    return items


def _result_item(part: LiveToolResult, custom: bool) -> JsonDict:
    kind = "custom_tool_call_output" if custom else "function_call_output"
    return {"type": kind, "call_id": part.call_id, "output": result_content(part, OPENAI_RESPONSES)}


def _input_content(parts: Sequence[LivePart], role: str) -> list[JsonDict]:
    content: list[JsonDict] = []
    for part in parts:
        if is_native(part, OPENAI_RESPONSES):
            content.append(native_block(part))
        elif isinstance(part, TextPart):
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, FilePart):
            content.append(_input_file(part) if role == "user" else _mention(part))
        elif isinstance(part, NativePart):
            text = foreign_text(part)
            if text:
                content.append({"type": "input_text", "text": text})
    return content


def _mention(part: FilePart) -> JsonDict:
    return {"type": "input_text", "text": file_mention(part)}


def _input_file(part: FilePart) -> JsonDict:
    if part.media_type.startswith("image/"):
        return {"type": "input_image", "image_url": part.url or data_url(part), "detail": "auto"}
    if part.data is not None:
        file: JsonDict = {"type": "input_file", "file_data": data_url(part)}
        if part.filename:
            file["filename"] = part.filename
        return file
    return _mention(part)
