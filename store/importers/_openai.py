"""OpenAI Chat Completions messages (a JSON list) as our payloads."""

from __future__ import annotations

from typing import get_args

from sessionstore.events import (
    ImportRefused,
    Message,
    MessageAppended,
    Part,
    Payload,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    brief,
)
from sessionstore.importers._common import (
    Calls,
    at_line,
    counted,
    file_from_url,
    string,
)

ROLES: dict[object, Role] = {"developer": "system", **{role: role for role in get_args(Role)}}


def openai_events(messages: object, encoding: str) -> list[Payload]:
    """One `MessageAppended` per chat-completions message (`developer` becomes `system`); a
    request body (`{"model": ..., "messages": [...]}`) is read for its messages."""
    if isinstance(messages, dict) and isinstance(messages.get("messages"), list):
        messages = messages["messages"]
    if not isinstance(messages, list):
        raise ImportRefused("an OpenAI transcript must be a JSON list of messages")
    if not messages:
        raise ImportRefused("the transcript holds no messages")
    calls = Calls("tool call")
    payloads: list[Payload] = []
    for n, raw in enumerate(messages, start=1):
        try:
            with at_line(n):
                role, parts = _openai_message(raw, n, calls)
                message = Message(role=role, parts=counted(parts, encoding, None))
        except ImportRefused as refused:  # a JSON list has messages, not lines, to point at
            raise ImportRefused(refused.reason, n, unit="message") from None
        payloads.append(MessageAppended(message=message))
    return payloads


def _openai_message(raw: object, n: int, calls: Calls) -> tuple[Role, list[Part]]:
    if not isinstance(raw, dict):
        raise ImportRefused("not a JSON object", n)
    role = ROLES.get(raw.get("role")) if isinstance(raw.get("role"), str) else None
    if role is None:
        expected = "expected system, developer, user, assistant or tool"
        raise ImportRefused(f"role {brief(raw.get('role'))}; {expected}", n)
    parts = _openai_content(raw.get("content"), n, images=role == "user")
    if role == "tool":
        call_id = string(raw, "tool_call_id", "a tool message", n)
        name = calls.answer(call_id, "it", n)
        output = "\n".join(p.text for p in parts if isinstance(p, TextPart))
        return role, [ToolResultPart(call_id=call_id, name=name, output=output)]
    tool_calls = (raw.get("tool_calls") or []) if role == "assistant" else []
    if not isinstance(tool_calls, list):
        raise ImportRefused("tool_calls is not a list", n)
    if tool_calls:  # the empty text that comes with calls is no part of the message
        parts = [p for p in parts if not (isinstance(p, TextPart) and not p.text)]
    parts.extend(_openai_call(call, n, calls) for call in tool_calls)
    if not parts:
        raise ImportRefused("no content", n)
    return role, parts


def _openai_content(content: object, n: int, *, images: bool) -> list[Part]:
    """`content` as parts: a string, a list of text (or, from a user, image) parts, or null."""
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(text=content)]
    if not isinstance(content, list):
        raise ImportRefused("content is not text, a list or null", n)
    parts: list[Part] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, dict) and kind in ("text", "refusal"):
            parts.append(TextPart(text=string(block, str(kind), f"a {kind} part", n)))
        elif isinstance(block, dict) and kind == "image_url" and images:
            image = block.get("image_url")
            image = image if isinstance(image, dict) else {}
            parts.append(file_from_url(string(image, "url", "an image_url part", n)))
        else:
            raise ImportRefused(
                f"a content part of type {brief(kind)}, which this role cannot hold", n
            )
    return parts


def _openai_call(raw: object, n: int, calls: Calls) -> ToolCallPart:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(function, dict):
        raise ImportRefused("a tool call without a function object", n)
    call_id = string(raw, "id", "a tool call", n)
    if raw.get("type", "function") != "function":
        raise ImportRefused(
            f"tool call {brief(call_id)} has type {brief(raw['type'])}, not 'function'", n
        )
    name = string(function, "name", f"tool call {brief(call_id)}", n)
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        raise ImportRefused(
            f"tool call {brief(call_id)} has arguments that are not a JSON string", n
        )
    calls.made(call_id, name, n)
    return ToolCallPart(call_id=call_id, name=name, arguments=arguments)
