"""An OpenAI Responses API response (`openai.types.responses.Response` or its dict) as a message.

Every `output` item is one part, kept verbatim in `native` with its id and status: `message`
items become text parts (their `output_text`, or the refusal), `reasoning` items reasoning parts
(their summary as text; `encrypted_content` stays in the item), `function_call` and
`custom_tool_call` items tool calls (arguments or input exactly as sent), every other item
(hosted tool calls, newer types) a `NativePart`. The response's `id`, `model`, `status` and raw
`usage` are kept in the message's `native`.
"""

from __future__ import annotations

from typing import Any

from events import (
    OPENAI_RESPONSES,
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
from store._providers._sdk import as_json, count, field

WHAT = "a Responses API response"


def responses_message(response: object) -> Message:
    data = as_json(response, WHAT)
    items = field(data, "output", list, WHAT)
    parts = [_part(item) for item in items]
    envelope = {key: value for key, value in data.items() if key != "output"}
    return Message(
        role="assistant",
        parts=tuple(parts) or (TextPart(text=""),),
        usage=_usage(data.get("usage")),
        native=Native(api=OPENAI_RESPONSES, value=envelope),
    )


def _part(item: Any) -> Part:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise InvalidArgument(f"{WHAT}: an output item is not an object with a type")
    native = Native(api=OPENAI_RESPONSES, value=item)
    kind = item["type"]
    if kind == "message":
        return TextPart(text=_message_text(item), native=native)
    if kind == "reasoning":
        summary = item.get("summary") or []
        text = "\n\n".join(
            s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)
        )
        return ReasoningPart(text=text, native=native)
    if kind == "function_call":
        return ToolCallPart(
            call_id=field(item, "call_id", str, WHAT),
            name=field(item, "name", str, WHAT),
            arguments=field(item, "arguments", str, WHAT),
            native=native,
        )
    if kind == "custom_tool_call":
        return ToolCallPart(
            call_id=field(item, "call_id", str, WHAT),
            name=field(item, "name", str, WHAT),
            arguments=field(item, "input", str, WHAT),
            native=native,
        )
    return NativePart(native=native, text=f"[{kind}]")


def _message_text(item: dict[str, Any]) -> str:
    pieces = []
    for content in item.get("content") or []:
        if not isinstance(content, dict):
            continue
        if content.get("type") == "output_text" and isinstance(content.get("text"), str):
            pieces.append(content["text"])
        elif content.get("type") == "refusal" and isinstance(content.get("refusal"), str):
            pieces.append(content["refusal"])
    return "".join(pieces)


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Usage(
        input=max(count(usage.get("input_tokens")) - cached, 0),
        output=count(usage.get("output_tokens")),
        cache_read=cached,
    )
