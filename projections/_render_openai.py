"""Rendering a live context for OpenAI Chat Completions (`messages`).

A message recorded by `append_openai` goes back as the model sent it: its text, its `refusal`,
and its tool calls with `arguments` byte for byte as recorded (a custom tool call as a custom
call, its `input` as recorded). The rest of its envelope stays in the log and is not sent:
`annotations` are output only, an `audio` id expires, a deprecated `function_call` has no part
in a tool-calling loop. Tool results with images follow `_render`'s rules (a user message after
the turn's tool messages carries them).
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionstore.events import (
    OPENAI_CHAT,
    FilePart,
    NativePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
)
from sessionstore.projections._live import LiveMessage, LivePart, LiveToolResult
from sessionstore.projections._render import (
    JsonDict,
    api_messages,
    as_text,
    chat_images,
    data_url,
    file_mention,
    foreign_text,
    is_native,
    is_redacted_file,
    result_content,
)


def to_openai(messages: Sequence[LiveMessage]) -> list[JsonDict]:
    """The `messages` list for Chat Completions: system/user/assistant messages, assistant
    `tool_calls`, one `tool` message per result, and after a turn's tool messages, a user
    message with the images its results returned, if any."""
    out: list[JsonDict] = []
    images: list[JsonDict] = []  # of the tool messages just written, sent once they end
    for message in api_messages(messages):
        if message.role == "tool":
            for part in message.parts:
                if isinstance(part, LiveToolResult):
                    out.append(_tool_message(part))
                    images.extend(chat_images(part))
            continue
        if images:
            out.append({"role": "user", "content": images})
            images = []
        if message.role == "assistant":
            rendered = _openai_assistant(message)
            if rendered is not None:
                out.append(rendered)
        else:
            out.append({"role": message.role, "content": _openai_content(message.parts)})
    if images:
        out.append({"role": "user", "content": images})
    return out


def _tool_message(part: LiveToolResult) -> JsonDict:
    return {
        "role": "tool",
        "tool_call_id": part.call_id,
        "content": result_content(part, OPENAI_CHAT),
    }


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
    if is_redacted_file(part):
        return {"type": "text", "text": file_mention(part)}
    if part.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": part.url or data_url(part)}}
    if part.data is not None and part.media_type == "application/pdf":
        file: JsonDict = {"file_data": data_url(part)}
        if part.filename:
            file["filename"] = part.filename
        return {"type": "file", "file": file}
    return {"type": "text", "text": file_mention(part)}


def _openai_assistant(message: LiveMessage) -> JsonDict | None:
    """The assistant message, or `None` when nothing of it can be sent (only reasoning).

    Its `content` is its text; `None` when it has no text part and calls tools, or has no
    text and refuses, as the API returned it."""
    texts = []
    refusals = []
    for part in message.parts:
        if isinstance(part, TextPart) and _is_refusal(part):
            refusals.append(part.text)
        elif (text := as_text(part)) is not None:
            texts.append(text)
    calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
    refusal = "\n\n".join(refusals) if refusals else None
    if not texts and not calls and refusal is None:
        return None
    content = "\n\n".join(texts) if texts or not calls else None
    rendered: JsonDict = {"role": "assistant", "content": content}
    if refusal is not None:
        rendered["content"] = content or None
        rendered["refusal"] = refusal
    if calls:
        rendered["tool_calls"] = [_tool_call(call) for call in calls]
    return rendered


def _tool_call(call: ToolCallPart) -> JsonDict:
    """A tool call with its arguments as recorded; a custom tool call recorded from Chat
    Completions goes back as one. Built from the fields, never the stored dict: an SDK's call
    can carry fields of its own (a parsed `parsed_arguments`) that the API refuses."""
    if is_native(call, OPENAI_CHAT) and _kind(call) == "custom":
        return {
            "id": call.call_id,
            "type": "custom",
            "custom": {"name": call.name, "input": call.arguments},
        }
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _kind(call: ToolCallPart) -> object:
    assert call.native is not None
    value = call.native.value
    return value.get("type") if isinstance(value, dict) else None


def _is_refusal(part: TextPart) -> bool:
    """Whether the text is a refusal recorded from Chat Completions (see `append_openai`)."""
    if part.native is None or not is_native(part, OPENAI_CHAT):
        return False
    value = part.native.value
    return isinstance(value, dict) and value.get("type") == "refusal"
