"""Pydantic AI's `ModelMessage`s as sessionstore messages and back, each kept verbatim.

What pydantic-ai's own `ModelMessagesTypeAdapter` dumps of a message is what is kept, as
`Native(api=PYDANTIC_AI, value=...)`, so a message converted and converted back is deep-equal
to the original (timestamps, `run_id`, `provider_details`, usage, a `ThinkingPart`'s
`signature` and `id`). The mapping:

- a `ModelResponse` is one assistant message: each part is ours (text, reasoning, tool call,
  or a `NativePart` for the kinds sessionstore does not model: built-in tool calls and returns,
  files, speech, compaction) with the part's JSON in its `native`; the response without its
  parts (usage, model, timestamps) is the message's `native` (`{"response": ...}`), and its
  usage becomes the message's `Usage`.
- a `ModelRequest` is several messages, in the order of its parts: each tool return is a tool
  result of its own (so truncation, pruning and restore apply to it, its `content` is the
  output, text as it is or else its compact JSON); each system prompt is a system message; each
  run of other parts (user prompts, retry feedback, pydantic-ai's bookkeeping parts) is one user
  message. Each carries `{"request": <the request without parts>, "group": <key>, "parts":
  [<its parts' JSON>]}`, a tool return's without its `content`. Consecutive messages of one
  group become one `ModelRequest` again, parts in their order.

Converting back, a tool result shows what the message it comes from shows: a stored `Message`
and a live one shown whole give the original content, a live one truncated or pruned gives the
text the model is shown (a `str`). A message sessionstore wrote itself (a compaction's summary)
or recorded from another API becomes the plain pydantic-ai message of its text, calls and
results, timestamped by its id's time so the conversion is the same every time.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from sessionstore.events import (
    FilePart,
    InvalidArgument,
    Message,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    described,
    new_id,
)
from sessionstore.projections import LiveMessage, LiveToolResult

PYDANTIC_AI = "pydantic-ai"
"""The `Native.api` of what pydantic-ai gave: its messages' and parts' JSON."""

_SHOWN_WHOLE = ("original", "restored")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def messages_of(model_message: ModelMessage) -> list[Message]:
    """One pydantic-ai message as sessionstore messages (see the module's docstring): one
    for a `ModelResponse`, one or more for a `ModelRequest`. `InvalidArgument` for anything
    pydantic-ai cannot dump as a message."""
    return _messages_of_json(dump_model_messages([model_message])[0])


def model_messages_of(messages: Iterable[Message | LiveMessage]) -> list[ModelMessage]:
    """Sessionstore messages as pydantic-ai messages (`messages_of`'s inverse): the messages of
    one `ModelRequest`, consecutive, become that request again."""
    data = model_message_dicts(messages)
    try:
        return ModelMessagesTypeAdapter.validate_python(data)
    except ValidationError as exc:  # a native value written by hand, not by messages_of
        raise InvalidArgument(f"not a pydantic-ai message: {exc.errors()[0]['msg']}") from None


def dump_model_messages(model_messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai's own JSON of its messages (what `ModelMessagesTypeAdapter` writes)."""
    if not isinstance(model_messages, Sequence) or isinstance(model_messages, str | bytes):
        raise InvalidArgument(f"expected a list of ModelMessage, got {described(model_messages)}")
    try:
        dumped = ModelMessagesTypeAdapter.dump_python(list(model_messages), mode="json")
    except Exception as exc:  # pydantic raises several kinds for an object of the wrong type
        raise InvalidArgument(f"not a pydantic-ai ModelMessage: {exc}") from None
    for data in dumped:
        if not isinstance(data, dict) or data.get("kind") not in ("request", "response"):
            raise InvalidArgument(f"not a pydantic-ai ModelMessage: {described(data)}")
    return list(dumped)


# pydantic-ai -> sessionstore


def _messages_of_json(data: dict[str, Any]) -> list[Message]:
    if data["kind"] == "response":
        return [_response_message(data)]
    return _request_messages(data)


def _response_message(data: dict[str, Any]) -> Message:
    envelope = {key: value for key, value in data.items() if key != "parts"}
    parts: list[Part] = [_response_part(part) for part in data["parts"]]
    if not parts:  # a response with nothing in it is still a turn: kept with no native part
        parts = [TextPart(text="")]
    return Message(
        role="assistant",
        parts=tuple(parts),
        usage=_usage(envelope.get("usage")),
        native=Native(api=PYDANTIC_AI, value={"response": envelope}),
    )


def _response_part(part: dict[str, Any]) -> Part:
    native = Native(api=PYDANTIC_AI, value=part)
    kind = part.get("part_kind")
    if kind == "text":
        return TextPart(text=_text(part.get("content")), native=native)
    if kind == "thinking":
        return ReasoningPart(text=_text(part.get("content")), native=native)
    if kind == "tool-call":
        args = part.get("args")
        arguments = args if isinstance(args, str) else "{}" if args is None else _compact(args)
        return ToolCallPart(
            call_id=part["tool_call_id"], name=part["tool_name"], arguments=arguments, native=native
        )
    return NativePart(native=native)  # built-in tools, files, speech, compaction, newer kinds


def _usage(usage: Any) -> Usage | None:
    """pydantic-ai counts cached tokens in `input_tokens`; sessionstore's `input` does not."""
    if not isinstance(usage, dict):
        return None
    counts = {
        key: value if isinstance(value, int) and value > 0 else 0
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        for value in [usage.get(key)]
    }
    if not counts["input_tokens"] and not counts["output_tokens"]:
        return None
    cache_read, cache_write = counts["cache_read_tokens"], counts["cache_write_tokens"]
    return Usage(
        input=max(0, counts["input_tokens"] - cache_read - cache_write),
        output=counts["output_tokens"],
        cache_read=cache_read,
        cache_write=cache_write,
    )


def _request_messages(data: dict[str, Any]) -> list[Message]:
    envelope = {key: value for key, value in data.items() if key != "parts"}
    group = new_id()

    def native(parts: list[dict[str, Any]], **more: Any) -> Native:
        return Native(
            api=PYDANTIC_AI, value={"request": envelope, "group": group, "parts": parts, **more}
        )

    messages: list[Message] = []
    others: list[dict[str, Any]] = []  # a run of user prompts, feedback and bookkeeping parts

    def flush() -> None:
        if others:
            ours = [mine for part in others for mine in _user_parts(part)] or [TextPart(text="")]
            messages.append(Message(role="user", parts=tuple(ours), native=native(list(others))))
            others.clear()

    for part in data["parts"]:
        if _is_tool_return(part):
            flush()
            content = part["content"]
            form = "text" if isinstance(content, str) else "json"
            result = ToolResultPart(
                call_id=part["tool_call_id"],
                name=part["tool_name"],
                output=content if isinstance(content, str) else _compact(content),
                is_error=part.get("outcome", "success") != "success",
            )
            verbatim = {key: value for key, value in part.items() if key != "content"}
            messages.append(
                Message(role="tool", parts=(result,), native=native([verbatim], content=form))
            )
        elif part.get("part_kind") == "system-prompt":
            flush()
            text = TextPart(text=_text(part.get("content")))
            messages.append(Message(role="system", parts=(text,), native=native([part])))
        else:
            others.append(part)
    flush()
    if not messages:  # a request with no parts (one interrupted before any tool returned)
        messages.append(Message(role="user", parts=(TextPart(text=""),), native=native([])))
    return messages


def unanswered(message: Message) -> Message:
    """A tool return's message (`messages_of`) that answers no call waiting for one, as a part
    of its request like a bookkeeping part: its JSON whole in the message's `native`, so it comes
    back as it came, and a marker naming its kind (no tool result: no call waits for it)."""
    [result] = message.parts
    assert isinstance(result, ToolResultPart) and message.native is not None
    envelope = cast(dict[str, Any], message.native.value)  # written by `_request_messages`
    part: dict[str, Any] = envelope["parts"][0]
    content = json.loads(result.output) if envelope.get("content") == "json" else result.output
    verbatim = {**envelope, "parts": [{**part, "content": content}]}
    del verbatim["content"]
    kind = part.get("part_kind", "tool-return")
    marker = NativePart(native=Native(api=PYDANTIC_AI, value={"part_kind": kind}))
    return Message(role="user", parts=(marker,), native=Native(api=PYDANTIC_AI, value=verbatim))


def _is_tool_return(part: dict[str, Any]) -> bool:
    return all(key in part for key in ("tool_call_id", "tool_name", "content"))


def _user_parts(part: dict[str, Any]) -> list[Part]:
    """Sessionstore's view of a request part that is neither a tool return nor a system
    prompt: its text and files, or a marker naming its kind (the part itself is in the
    message's `native`, so a bookkeeping part costs no tokens of its own)."""
    kind = part.get("part_kind")
    content = part.get("content")
    if kind == "user-prompt":
        items = [content] if isinstance(content, str) else content or []
        return [_user_item(item) for item in items]
    if kind == "retry-feedback":
        return [TextPart(text=content if isinstance(content, str) else _compact(content))]
    return [NativePart(native=Native(api=PYDANTIC_AI, value={"part_kind": kind}))]


def _user_item(item: Any) -> Part:
    if isinstance(item, str):
        return TextPart(text=item)
    if isinstance(item, dict) and isinstance(item.get("media_type"), str) and item["media_type"]:
        if isinstance(item.get("url"), str):
            return FilePart(media_type=item["media_type"], url=item["url"])
        if isinstance(item.get("data"), str):
            return FilePart(media_type=item["media_type"], data=item["data"])
    return NativePart(native=Native(api=PYDANTIC_AI, value={"kind": _kind_of(item)}))


def _kind_of(item: Any) -> str:
    return str(item.get("kind", "content")) if isinstance(item, dict) else type(item).__name__


# sessionstore -> pydantic-ai


def model_message_dicts(messages: Iterable[Message | LiveMessage]) -> list[dict[str, Any]]:
    """The JSON of the pydantic-ai messages `messages` stand for (see `model_messages_of`)."""
    out: list[dict[str, Any]] = []
    group: str | None = None
    for message in messages:
        if not isinstance(message, Message | LiveMessage):
            raise InvalidArgument(f"expected Message or LiveMessage, got {described(message)}")
        envelope = _envelope(message)
        if envelope is not None and "request" in envelope:
            parts = _request_parts(message, envelope)
            if group is not None and envelope.get("group") == group:
                out[-1]["parts"].extend(parts)
            else:
                out.append({**envelope["request"], "parts": parts})
                group = envelope.get("group")
            continue
        group = None
        if envelope is not None and "response" in envelope:
            out.append({**envelope["response"], "parts": _response_parts(message)})
        else:
            out.append(_foreign(message))
    return out


def _envelope(message: Message | LiveMessage) -> dict[str, Any] | None:
    native = message.native
    if native is None or not native.is_from(PYDANTIC_AI) or not isinstance(native.value, dict):
        return None
    return native.value


def _request_parts(message: Message | LiveMessage, envelope: dict[str, Any]) -> list[Any]:
    parts = list(envelope.get("parts") or [])
    form = envelope.get("content")
    if form is None or len(parts) != 1 or len(message.parts) != 1:
        return parts
    result = message.parts[0]
    if isinstance(result, LiveToolResult) and result.status not in _SHOWN_WHOLE:
        content: Any = result.output  # what the model is shown: the cut, the placeholder
    elif isinstance(result, ToolResultPart | LiveToolResult):
        content = json.loads(result.output) if form == "json" else result.output
    else:
        return parts
    return [{**parts[0], "content": content}]


def _response_parts(message: Message | LiveMessage) -> list[Any]:
    return [
        part.native.value
        for part in message.parts
        if isinstance(part, TextPart | ReasoningPart | ToolCallPart | FilePart | NativePart)
        and part.native is not None
        and part.native.is_from(PYDANTIC_AI)
    ]


def _foreign(message: Message | LiveMessage) -> dict[str, Any]:
    """A message not recorded from pydantic-ai (a compaction's summary, another API's turn)
    as the plain pydantic-ai message of its text, calls and results."""
    at = _time_of(message.id)
    texts = "".join(p.text for p in message.parts if isinstance(p, TextPart))
    if message.role == "assistant":
        parts: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                parts.append({"part_kind": "text", "content": part.text})
            elif isinstance(part, ReasoningPart) and part.text:
                parts.append({"part_kind": "thinking", "content": part.text})
            elif isinstance(part, ToolCallPart):
                call = {
                    "tool_name": part.name,
                    "args": part.arguments,
                    "tool_call_id": part.call_id,
                }
                parts.append({"part_kind": "tool-call", **call})
        return {"kind": "response", "parts": parts, "timestamp": at}
    if message.role == "tool":
        parts = [
            {
                "part_kind": "tool-return",
                "tool_name": part.name or "tool",
                "tool_call_id": part.call_id,
                "content": part.output,
                "outcome": "failed" if part.is_error else "success",
                "timestamp": at,
            }
            for part in message.parts
            if isinstance(part, ToolResultPart | LiveToolResult)
        ]
        return {"kind": "request", "parts": parts, "timestamp": at}
    kind = "system-prompt" if message.role == "system" else "user-prompt"
    prompt = {"part_kind": kind, "content": texts, "timestamp": at}
    return {"kind": "request", "parts": [prompt], "timestamp": at}


def _time_of(message_id: str) -> str:
    """The time in a UUIDv7 message id (sessionstore's ids), so a message converts the same
    every time; the epoch for an id of another form."""
    try:
        value = uuid.UUID(message_id)
    except ValueError:
        return _EPOCH.isoformat()
    if value.version != 7:
        return _EPOCH.isoformat()
    return datetime.fromtimestamp((value.int >> 80) / 1000, tz=UTC).isoformat()


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else _compact(value)
