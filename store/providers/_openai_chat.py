"""An OpenAI Chat Completions response (`ChatCompletion`, its `choices[0].message`, or their
dicts) as a message.

`content` becomes a text part; `refusal` a text part too (what the model said, for every other
render, summary and count) marked `{"type": "refusal"}` in its `native`, so `to_openai()` sends
it back as the `refusal`; each of `tool_calls` a tool call whose `arguments` stay the exact
string the model produced (a custom call's `input`), with the call itself kept verbatim in
`native`. The other fields of the message (`annotations`, `audio`, ...) and of the completion
(`id`, `model`, `system_fingerprint`, the choice's `finish_reason` and `logprobs`, the raw
`usage`) are kept in the message's `native`. Only the first choice is read: the others are
alternatives the conversation did not take. Usage: the prompt minus its cached tokens as
`input`, the cached ones as `cache_read`, the completion's as `output`.
"""

from __future__ import annotations

from typing import Any

from sessionstore.events import (
    OPENAI_CHAT,
    InvalidArgument,
    Message,
    Native,
    Part,
    TextPart,
    ToolCallPart,
    Usage,
)
from sessionstore.providers._sdk import as_json, assistant_message, count, field

WHAT = "a Chat Completions message"


def chat_message(completion: object) -> Message:
    data = as_json(completion, WHAT)
    envelope: dict[str, Any] = {}
    usage = None
    if "choices" in data:
        choices = field(data, "choices", list, WHAT)
        if not choices or not isinstance(choices[0], dict):
            raise InvalidArgument(f"{WHAT}: the completion has no choices")
        message = field(choices[0], "message", dict, WHAT)
        envelope = {k: v for k, v in data.items() if k != "choices"}
        envelope["choice"] = {k: v for k, v in choices[0].items() if k != "message"}
        usage = _usage(data.get("usage"))
    else:
        message = data
    if message.get("role", "assistant") != "assistant":
        raise InvalidArgument(f"{WHAT} must be the assistant's")
    parts: list[Part] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        parts.append(TextPart(text=content))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(refusal_part(refusal))
    for call in message.get("tool_calls") or []:
        parts.append(tool_call_part(call))
    envelope.update(
        {k: v for k, v in message.items() if k not in ("content", "refusal", "tool_calls")}
    )
    return assistant_message(OPENAI_CHAT, parts, usage, envelope)


def refusal_part(refusal: str) -> TextPart:
    """A refusal is what the model said, so it is text to every other render, summary and
    count; its `native` marks it, so `to_openai()` sends it back as the `refusal`."""
    native = Native(api=OPENAI_CHAT, value={"type": "refusal", "refusal": refusal})
    return TextPart(text=refusal, native=native)


def tool_call_part(call: Any) -> ToolCallPart:
    """One entry of `tool_calls` (a function or custom call, or its SDK object)."""
    data = as_json(call, "a tool call")
    call_id = field(data, "id", str, "a tool call")
    if data.get("type") == "custom":
        custom = field(data, "custom", dict, "a custom tool call")
        name, arguments = field(custom, "name", str, "a tool call"), custom.get("input", "")
    else:
        function = field(data, "function", dict, "a tool call")
        name, arguments = field(function, "name", str, "a tool call"), function.get("arguments")
    if not isinstance(arguments, str):
        raise InvalidArgument("a tool call's arguments must be the JSON text the model produced")
    return ToolCallPart(
        call_id=call_id, name=name, arguments=arguments, native=Native(api=OPENAI_CHAT, value=data)
    )


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    prompt = count(usage.get("prompt_tokens"))
    return Usage(
        input=max(prompt - cached, 0),
        output=count(usage.get("completion_tokens")),
        cache_read=cached,
    )
