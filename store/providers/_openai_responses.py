"""An OpenAI Responses API response (`openai.types.responses.Response` or its dict) as a message.

Every `output` item becomes one part, in order, kept verbatim in the part's `native` with its
id and status, so `to_responses()` can send it back:
- `message`: a text part; its text is the `output_text` (and any `refusal`) it holds, its
  annotations and logprobs stay in the item;
- `reasoning`: a reasoning part whose text is the summary (or, when there is none, the raw
  `reasoning_text` content some models return); `encrypted_content` stays in the item, exactly
  as sent: the API decrypts it only with the item's own id;
- `function_call` and `custom_tool_call`: tool calls, `arguments` (or the custom tool's
  `input`) the exact text the model produced; the loop answers them with
  `append_tool_result(call_id, ...)`. A call the same response answers already (a
  `function_call_output` or `custom_tool_call_output` with its `call_id`, as a hosted program
  produces) waits for nothing: it stays a `NativePart`, like its output;
- every other item (hosted tool calls and their outputs, MCP items, compaction, types newer than
  this code) a `NativePart`, with a one-line `text` that other APIs are shown instead (for a
  compaction item, a note that its encrypted summary is left out).

The response's own fields (`id`, `model`, `status`, `incomplete_details`, `usage` as sent...)
are kept in the message's `native`; the request's echo that every response repeats
(`instructions`, `tools`: the caller sent them, and tool schemas can run to tens of KB a turn)
is not. `usage` becomes `Usage`: `input_tokens` counts the whole prompt, so the cached and the
cache-written tokens are taken out of `input` into `cache_read` and `cache_write`.

A response that is not an object with an `output` list, an item that is not an object with a
`type`, or an item of a modelled type without the fields read here raises `InvalidArgument`
before anything is written.
"""

from __future__ import annotations

import json
from typing import Any

from sessionstore.events import (
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
from sessionstore.projections import compaction_item, compaction_text
from sessionstore.providers._sdk import as_json, assistant_message, count, field

WHAT = "a Responses API response"

REQUEST_ECHO = ("instructions", "tools")
"""Fields of a response that only repeat the request: not kept."""

CALL_OUTPUT = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}
"""The call items the loop answers, and the type of their answer."""

_DESCRIBED_MAX = 2_000
"""Longest stand-in text another API is shown for one hosted item (its output, say)."""


def responses_message(response: object) -> Message:
    data = as_json(response, WHAT)
    items = field(data, "output", list, WHAT)
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise InvalidArgument(f"{WHAT}: an output item is not an object with a type")
    answered = {
        (item["type"], item["call_id"]) for item in items if isinstance(item.get("call_id"), str)
    }
    parts = [_part(item, answered) for item in items]
    envelope = {key: value for key, value in data.items() if key not in ("output", *REQUEST_ECHO)}
    return assistant_message(OPENAI_RESPONSES, parts, _usage(data.get("usage")), envelope)


def _part(item: dict[str, Any], answered: set[tuple[str, str]]) -> Part:
    native = Native(api=OPENAI_RESPONSES, value=item)
    kind = item["type"]
    if kind == "message":
        return TextPart(text=_message_text(item), native=native)
    if kind == "reasoning":
        _required_text(item, "id")
        return ReasoningPart(text=_reasoning_text(item), native=native)
    if kind in CALL_OUTPUT:
        call_id, name = _required_text(item, "call_id"), _required_text(item, "name")
        arguments = field(item, "arguments" if kind == "function_call" else "input", str, WHAT)
        if (CALL_OUTPUT[kind], call_id) not in answered:
            return ToolCallPart(call_id=call_id, name=name, arguments=arguments, native=native)
        return NativePart(native=native, text=_clip(f"[{kind} {name}: {arguments}]"))
    if compaction_item(native) is not None:
        return NativePart(native=native, text=compaction_text(native))
    return NativePart(native=native, text=_describe(item))


def _required_text(item: dict[str, Any], key: str) -> str:
    """A non-empty string field the part needs."""
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"{WHAT}: a {item['type']} item's {key!r} is missing or empty")
    return value


def _message_text(item: dict[str, Any]) -> str:
    if item.get("role", "assistant") != "assistant":
        raise InvalidArgument(f"{WHAT}: an output message must be the assistant's")
    pieces = []
    for content in field(item, "content", list, WHAT):
        if not isinstance(content, dict):
            raise InvalidArgument(f"{WHAT}: a message's content entry is not an object")
        if content.get("type") == "output_text" and isinstance(content.get("text"), str):
            pieces.append(content["text"])
        elif content.get("type") == "refusal" and isinstance(content.get("refusal"), str):
            pieces.append(content["refusal"])
    return "".join(pieces)


def _reasoning_text(item: dict[str, Any]) -> str:
    """The readable part of a reasoning item: its summary, else its raw reasoning text."""
    summary = _texts(field(item, "summary", list, WHAT), "summary_text")
    if summary:
        return summary
    content = item.get("content")
    return _texts(content, "reasoning_text") if isinstance(content, list) else ""


def _texts(entries: list[Any], kind: str) -> str:
    return "\n\n".join(
        entry["text"]
        for entry in entries
        if isinstance(entry, dict)
        and entry.get("type") == kind
        and isinstance(entry.get("text"), str)
    )


def _describe(item: dict[str, Any]) -> str:
    """A one-line stand-in for an item other APIs cannot take: what was done, and what came of
    it when that is text (never an image's base64 or an encrypted blob)."""
    kind = item["type"]
    detail: object = None
    if kind == "web_search_call":
        detail = _at(item, "action", "query") or _at(item, "action", "url")
    elif kind == "file_search_call":
        detail = item.get("queries")
    elif kind == "code_interpreter_call":
        detail = item.get("code")
    elif kind in ("mcp_call", "mcp_approval_request"):
        detail = f"{item.get('server_label')}.{item.get('name')} {item.get('arguments')}"
        if isinstance(item.get("output"), str):
            detail = f"{detail} -> {item['output']}"
    elif kind == "local_shell_call":
        detail = _at(item, "action", "command")
    elif kind == "shell_call":
        detail = _at(item, "action", "commands")
    elif kind in ("apply_patch_call", "image_generation_call"):
        detail = item.get("operation") or item.get("revised_prompt")
    elif kind in ("local_shell_call_output", "apply_patch_call_output", "function_call_output"):
        detail = item.get("output")
    elif kind in ("program", "program_output"):
        detail = item.get("code") or item.get("result")
    if detail is None or detail == "":
        return f"[{kind}]"
    if not isinstance(detail, str):
        detail = json.dumps(detail, ensure_ascii=False, sort_keys=True)
    return _clip(f"[{kind}: {detail}]")


def _at(item: dict[str, Any], key: str, inner: str) -> object:
    value = item.get(key)
    return value.get(inner) if isinstance(value, dict) else None


def _clip(text: str) -> str:
    return text if len(text) <= _DESCRIBED_MAX else text[: _DESCRIBED_MAX - 2] + "…]"


def _usage(usage: object) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached, written = count(details.get("cached_tokens")), count(details.get("cache_write_tokens"))
    return Usage(
        input=max(count(usage.get("input_tokens")) - cached - written, 0),
        output=count(usage.get("output_tokens")),
        cache_read=cached,
        cache_write=written,
    )
