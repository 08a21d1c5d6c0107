"""LangChain messages as sessionstore messages and back, each kept verbatim: the mapping
`sessionstore.integrations.langchain` records and renders by (its docstring says what maps to what).
It imports LangChain: import it through `sessionstore.integrations.langchain`, which says which
extra to install when LangChain is missing. Recording a state's messages into a session and
showing the live context back (`record_messages`, `shown_messages`, `state_ids`) are here too:
the LangChain middleware and the LangGraph checkpointer's hook share them."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from pydantic import JsonValue, ValidationError

from sessionstore.events import (
    FilePart,
    InvalidArgument,
    Message,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    describe_validation_error,
    described,
)
from sessionstore.integrations._sessions import retried
from sessionstore.projections import LiveMessage, LiveToolResult
from sessionstore.session import Session

LANGCHAIN = "langchain"
"""The `Native.api` of a LangChain message kept verbatim (its `message_to_dict` JSON)."""

CHAT_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
}
"""The roles a `ChatMessage` may carry, as sessionstore's (another role has no meaning here)."""

REASONING_BLOCKS = {"thinking": "thinking", "redacted_thinking": None, "reasoning": "reasoning"}
"""Content blocks that are a model's reasoning, and the key of their readable text."""

CALL_BLOCKS = frozenset({"tool_use", "tool_call", "function_call", "server_tool_call"})
"""Content blocks that repeat a call of `tool_calls` (or a provider's own), not text."""


def message_of(message: BaseMessage) -> Message:
    """A LangChain message as a sessionstore message, kept verbatim in its `native` (the
    mapping: `sessionstore.integrations.langchain`). A `ToolMessage` becomes a tool result shown in
    full: the history appends it by `append_tool_result` instead, which truncates it. A message that
    could not come back as it is (a value JSON cannot hold) raises `InvalidArgument`."""
    if not isinstance(message, BaseMessage):
        raise InvalidArgument(f"a LangChain message is a BaseMessage, got {described(message)}")
    kept = _verbatim(message)
    try:
        if isinstance(message, ToolMessage):
            content = kept["data"].pop("content") if isinstance(message.content, str) else None
            part = ToolResultPart(
                call_id=message.tool_call_id,
                name=message.name,
                output=content if isinstance(content, str) else _text(message.content),
                is_error=message.status == "error",
            )
            return Message(role="tool", parts=(part,), native=Native(api=LANGCHAIN, value=kept))
        role = _role(message)
        parts = _parts(role, message)
        usage = _usage(message) if isinstance(message, AIMessage) else None
        return Message(
            role=role, parts=parts, usage=usage, native=Native(api=LANGCHAIN, value=kept)
        )
    except ValidationError as exc:
        kind = type(message).__name__
        raise InvalidArgument(
            f"a {kind} cannot be recorded: {describe_validation_error(exc)}"
        ) from None


def unanswered(message: ToolMessage) -> Message:
    """A `ToolMessage` that no pending call waits for (LangChain's own histories take one), kept
    whole and verbatim: not a tool result, which needs its call, but a message of its own that
    `base_message_of` gives back as it came, so LangChain shows the model what it would show
    it. Its part only names its kind, for sessionstore's own renders."""
    kept = _verbatim(message)
    marker = NativePart(native=Native(api=LANGCHAIN, value={"type": "tool"}))
    return Message(role="user", parts=(marker,), native=Native(api=LANGCHAIN, value=kept))


def base_message_of(message: Message | LiveMessage) -> BaseMessage:
    """The LangChain message a sessionstore message was recorded from (`message_of`'s inverse),
    deep-equal to it; a tool result shown cut carries the text shown. A message sessionstore
    wrote itself (a compaction's summary) or recorded from elsewhere is built from its parts,
    with its sessionstore id as its id."""
    native = message.native
    if native is None or not native.is_from(LANGCHAIN) or not isinstance(native.value, dict):
        return _built(message)
    kept = copy.deepcopy(native.value)  # the caller may change what it gets; the fold must not
    part = message.parts[0]
    data = kept.get("data")
    if isinstance(part, ToolResultPart | LiveToolResult) and isinstance(data, dict):
        cut = isinstance(part, LiveToolResult) and part.status in (
            "truncated",
            "previewed",
            "pruned",
        )
        if cut or "content" not in data:
            data["content"] = part.output
    try:
        return messages_from_dict([kept])[0]
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        raise InvalidArgument(f"message {message.id} holds no LangChain message: {exc}") from None


# the mapping


def _verbatim(message: BaseMessage) -> dict[str, Any]:
    """`message_to_dict(message)` as JSON, checked to load back equal to `message`."""
    try:
        kept: dict[str, Any] = json.loads(
            json.dumps(message_to_dict(message), ensure_ascii=False, allow_nan=False)
        )
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(
            f"a {type(message).__name__} holds a value JSON cannot hold: {exc}"
        ) from None
    if messages_from_dict([copy.deepcopy(kept)])[0] != message:
        raise InvalidArgument(
            f"a {type(message).__name__} would not come back as it is from its JSON "
            "(a tuple, a set or an object where LangChain keeps lists and dicts?)"
        )
    return kept


def _role(message: BaseMessage) -> Role:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ChatMessage) and message.role in CHAT_ROLES:
        return CHAT_ROLES[message.role]
    raise InvalidArgument(
        f"a {type(message).__name__} cannot be recorded: sessionstore keeps human, system, "
        "AI, tool and chat messages of the roles user, assistant and system"
    )


def _parts(role: Role, message: BaseMessage) -> tuple[Part, ...]:
    """Sessionstore's view of the content: text, reasoning, files; calls from `tool_calls`."""
    content = message.content
    parts: list[Part] = []
    if isinstance(content, str):
        parts.append(TextPart(text=content))
    elif role == "system":
        parts.append(TextPart(text=_text(content)))
    else:
        for block in content:
            part = _part_of(role, block)
            if part is not None:
                parts.append(part)
    if isinstance(message, AIMessage):
        raw = _raw_arguments(message)
        for call in message.tool_calls:
            call_id = call.get("id")
            if not call_id:
                raise InvalidArgument(
                    "an AIMessage's tool call has no id: no result could answer it"
                )
            arguments = raw.get(call_id)
            if arguments is None:
                arguments = json.dumps(call["args"], ensure_ascii=False)
            parts.append(ToolCallPart(call_id=call_id, name=call["name"], arguments=arguments))
    if not parts:
        parts.append(TextPart(text=""))
    return tuple(parts)


def _part_of(role: Role, block: str | dict[Any, Any]) -> Part | None:
    if isinstance(block, str):
        return TextPart(text=block)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(text=block["text"])
    if role == "assistant" and kind in REASONING_BLOCKS:
        key = REASONING_BLOCKS[kind]
        text = block.get(key) if key is not None else ""
        return ReasoningPart(text=text if isinstance(text, str) else "")
    if role == "assistant" and kind in CALL_BLOCKS:
        return None  # the call is one of `tool_calls`, or a provider's own in the native
    if kind in ("image", "file"):
        media_type = block.get("mime_type")
        for key in ("url", "base64"):
            value = block.get(key)
            if isinstance(value, str) and value and isinstance(media_type, str) and media_type:
                field = "url" if key == "url" else "data"
                return FilePart(media_type=media_type, **{field: value})
    return NativePart(native=Native(api=LANGCHAIN, value=_json(block)))


def _raw_arguments(message: AIMessage) -> dict[str, str]:
    """The arguments of each call as the model wrote them, where the message holds that text."""
    raw: dict[str, str] = {}
    for call in message.additional_kwargs.get("tool_calls") or ():
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            arguments = call["function"].get("arguments")
            if isinstance(call.get("id"), str) and isinstance(arguments, str):
                raw[call["id"]] = arguments
    for chunk in getattr(message, "tool_call_chunks", ()):
        if isinstance(chunk.get("id"), str) and isinstance(chunk.get("args"), str):
            raw.setdefault(chunk["id"], chunk["args"])
    return raw


def _usage(message: AIMessage) -> Usage | None:
    """`usage_metadata` Anthropic's way: LangChain's `input_tokens` include the cached ones."""
    usage = message.usage_metadata
    if usage is None:
        return None
    details = usage.get("input_token_details") or {}
    cache_read = details.get("cache_read") or 0
    cache_write = details.get("cache_creation") or 0
    fresh = max(usage.get("input_tokens", 0) - cache_read - cache_write, 0)
    return Usage(
        input=fresh,
        output=usage.get("output_tokens", 0),
        cache_read=cache_read,
        cache_write=cache_write,
    )


def _text(content: str | list[str | dict[Any, Any]]) -> str:
    """The text of a message's content: a str, or its text blocks joined."""
    if isinstance(content, str):
        return content
    texts = [
        block if isinstance(block, str) else block["text"]
        for block in content
        if isinstance(block, str)
        or (block.get("type") == "text" and isinstance(block.get("text"), str))
    ]
    return "\n\n".join(texts)


def _json(value: Any) -> JsonValue:
    parsed: JsonValue = json.loads(json.dumps(value, ensure_ascii=False))
    return parsed


def _built(message: Message | LiveMessage) -> BaseMessage:
    """A LangChain message from sessionstore's view, for a message not recorded from one."""
    text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
    if message.role == "user":
        return HumanMessage(content=text, id=message.id)
    if message.role == "system":
        return SystemMessage(content=text, id=message.id)
    if message.role == "assistant":
        calls = [
            {"name": p.name, "args": p.input if isinstance(p.input, dict) else {}, "id": p.call_id}
            for p in message.parts
            if isinstance(p, ToolCallPart)
        ]
        return AIMessage(content=text, tool_calls=calls, id=message.id)
    part = message.parts[0]
    assert isinstance(part, ToolResultPart | LiveToolResult)
    return ToolMessage(
        content=part.output,
        tool_call_id=part.call_id,
        name=part.name,
        status="error" if part.is_error else "success",
        id=message.id,
    )


# recording


def record_messages(session: Session, messages: list[BaseMessage]) -> None:
    """Append `messages` in order, after checking every one: a batch that holds a message that
    cannot be recorded (a call id used already) writes nothing. A `ToolMessage` no pending
    call waits for is kept as it came (`unanswered`)."""
    converted = [message_of(message) for message in messages]
    used, pending = _calls(session)
    for index, message in enumerate(converted):
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                if part.call_id not in pending:
                    original = messages[index]
                    assert isinstance(original, ToolMessage)
                    converted[index] = unanswered(original)
                pending.discard(part.call_id)
            elif isinstance(part, ToolCallPart):
                if part.call_id in used:
                    raise InvalidArgument(
                        f"tool call id {part.call_id!r} is used already in {session.id}"
                    )
                used.add(part.call_id)
                pending.add(part.call_id)
    for message in converted:
        retried(session, functools.partial(_append, session, message))


def _append(session: Session, message: Message) -> None:
    part = message.parts[0]
    if isinstance(part, ToolResultPart):
        session.append_tool_result(
            part.call_id, part.output, is_error=part.is_error, native=message.native
        )
    else:
        session.append_message(message)


def _calls(session: Session) -> tuple[set[str], set[str]]:
    """The call ids of the live context, and those of them still waiting for a result."""
    used: set[str] = set()
    answered: set[str] = set()
    for message in session.context().messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                used.add(part.call_id)
            elif isinstance(part, LiveToolResult):
                answered.add(part.call_id)
    return used, used - answered


def shown_messages(session: Session) -> list[BaseMessage]:
    """The live context as LangChain messages, each under the id `state_ids` gives it."""
    live = session.context().messages
    shown = []
    for message, state_id in zip(live, state_ids(live), strict=True):
        converted = base_message_of(message)
        converted.id = state_id
        shown.append(converted)
    return shown


def state_ids(live: Sequence[LiveMessage]) -> list[str]:
    """The id each live message has in an agent's state: its LangChain id, or its sessionstore
    id when it has none or an earlier message has it (the state keeps one message per id)."""
    ids: list[str] = []
    seen: set[str] = set()
    for message in live:
        own = _langchain_id(message.native)
        state_id = own if isinstance(own, str) and own and own not in seen else message.id
        seen.add(state_id)
        ids.append(state_id)
    return ids


def _langchain_id(native: Native | None) -> object:
    if native is None or not native.is_from(LANGCHAIN) or not isinstance(native.value, dict):
        return None
    data = native.value.get("data")
    return data.get("id") if isinstance(data, dict) else None
