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

from sessionstore.events import OPENAI_CHAT
from sessionstore.projections._live import LiveMessage
from sessionstore.projections._render import (
    JsonDict,
    Shown,
    api_order,
    as_text,
    chat_images,
    data_url,
    file_mention,
    foreign_text,
    is_native,
    is_redacted_file,
    plain,
    result_content,
)


def to_openai(messages: Sequence[LiveMessage | Shown]) -> list[JsonDict]:
    """The `messages` list for Chat Completions: system/user/assistant messages, assistant
    `tool_calls`, one `tool` message per result, and after a turn's tool messages, a user
    message with the images its results returned, if any."""
    out: list[JsonDict] = []
    images: list[JsonDict] = []  # of the tool messages just written, sent once they end
    for message in api_order(plain(messages)):
        role = message["role"]
        if role == "tool":
            for part in message["parts"]:
                if part["type"] == "tool_result":
                    out.append(_tool_message(part))
                    images.extend(chat_images(part))
            continue
        if images:
            out.append({"role": "user", "content": images})
            images = []
        if role == "assistant":
            rendered = _openai_assistant(message)
            if rendered is not None:
                out.append(rendered)
        else:
            out.append({"role": role, "content": _openai_content(message["parts"])})
    if images:
        out.append({"role": "user", "content": images})
    return out


def _tool_message(part: JsonDict) -> JsonDict:
    return {
        "role": "tool",
        "tool_call_id": part["call_id"],
        "content": result_content(part, OPENAI_CHAT),
    }


def _openai_content(parts: Sequence[JsonDict]) -> str | list[JsonDict]:
    shown: list[JsonDict] = []
    for part in parts:
        kind = part["type"]
        if kind in ("reasoning", "native"):
            text = foreign_text(part)
            if text:
                shown.append({"type": "text", "text": text})
        elif kind in ("text", "file"):
            shown.append(part)
    if all(p["type"] == "text" for p in shown):
        return "\n\n".join(p["text"] for p in shown)
    return [_openai_block(p) for p in shown]


def _openai_block(part: JsonDict) -> JsonDict:
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    if is_redacted_file(part):
        return {"type": "text", "text": file_mention(part)}
    media_type: str = part["media_type"]
    if media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": part.get("url") or data_url(part)}}
    if part.get("data") is not None and media_type == "application/pdf":
        file: JsonDict = {"file_data": data_url(part)}
        if part.get("filename"):
            file["filename"] = part["filename"]
        return {"type": "file", "file": file}
    return {"type": "text", "text": file_mention(part)}


def _openai_assistant(message: Shown) -> JsonDict | None:
    """The assistant message, or `None` when nothing of it can be sent (only reasoning).

    Its `content` is its text; `None` when it has no text part and calls tools, or has no
    text and refuses, as the API returned it."""
    texts = []
    refusals = []
    calls = []
    for part in message["parts"]:
        kind = part["type"]
        if kind == "tool_call":
            calls.append(part)
        elif kind == "text" and _is_refusal(part):
            refusals.append(part["text"])
        elif (text := as_text(part)) is not None:
            texts.append(text)
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


def _tool_call(call: JsonDict) -> JsonDict:
    """A tool call with its arguments as recorded; a custom tool call recorded from Chat
    Completions goes back as one. Built from the fields, never the stored dict: an SDK's call
    can carry fields of its own (a parsed `parsed_arguments`) that the API refuses."""
    arguments = call.get("arguments", "{}")
    if is_native(call, OPENAI_CHAT) and _kind(call) == "custom":
        return {
            "id": call["call_id"],
            "type": "custom",
            "custom": {"name": call["name"], "input": arguments},
        }
    return {
        "id": call["call_id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments},
    }


def _kind(call: JsonDict) -> object:
    value = call["native"]["value"]
    return value.get("type") if isinstance(value, dict) else None


def _is_refusal(part: JsonDict) -> bool:
    """Whether the text is a refusal recorded from Chat Completions (see `append_openai`)."""
    if not is_native(part, OPENAI_CHAT):
        return False
    value = part["native"]["value"]
    return isinstance(value, dict) and value.get("type") == "refusal"
