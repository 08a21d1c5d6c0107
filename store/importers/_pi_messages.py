"""One pi message (an `AgentMessage` of a `message` entry, or a `custom_message` /
`branch_summary` entry) as the message the model was shown, keeping pi's own data verbatim.

pi (badlogic/pi-mono, packages/ai `types.ts`, packages/coding-agent `core/messages.ts`) stores
messages in its own provider-neutral shape; what a model is sent is `convertToLlm` of them:
- `user`: `content` a string or text/image blocks -> a user message;
- `assistant`: text, `thinking` (`thinkingSignature`, `redacted`) and `toolCall` blocks, with
  `api`, `provider`, `model`, `usage`, `stopReason` -> an assistant message; pi never sends an
  `error`/`aborted` one again (`transformMessages` drops it), see `Dropped`;
- `toolResult`: `toolCallId`, `toolName`, text/image `content`, `isError`, `details` -> a tool
  message;
- `bashExecution` (a `!command` the user ran) -> the user text `bashExecutionToText` makes; one
  marked `excludeFromContext` (`!!command`) was never sent: a record;
- `custom` (`hookMessage` before session version 3), `custom_message` entries -> user messages;
  `branchSummary`/`compactionSummary` roles and `branch_summary` entries -> the user text with
  pi's prefix and suffix.

Each message keeps pi's own message without its `content` as its `native` (api `PI`): timestamps,
usage with cost, stop reason, a tool's `details`, a bash command's fields. A block keeps its pi
form as the part's `native` when the normalised part cannot give it back exactly (a text's
`textSignature`, a Google `thoughtSignature`, any thinking pi records); thinking from the
Anthropic Messages API is rebuilt as the Anthropic block (`thinking` + `signature`, or
`redacted_thinking`) so `to_anthropic()` sends it back, as pi's own provider would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from sessionstore.events import (
    ANTHROPIC,
    FilePart,
    ImportRefused,
    Message,
    Native,
    NativePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    brief,
)
from sessionstore.importers._common import Json, counted, string

PI = "pi"
"""The `Native.api` of what pi recorded in its own shape (no provider API takes it back)."""

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"
_REDACTED_THINKING = "[Reasoning redacted]"  # the text pi writes for a redacted_thinking block
_ANTHROPIC_API = "anthropic-messages"
_DROPPED_STOPS = ("error", "aborted")


@dataclass(frozen=True, slots=True)
class Dropped:
    """An assistant message pi shows but never sends to a model again (`stopReason` error or
    aborted): it happened, so it is appended, and it leaves the context at once."""

    message: Message


def pi_message(entry: Json, message_id: str, encoding: str, line: int) -> Message | Dropped | None:
    """The message a `message` entry's AgentMessage was sent as; `None` when the model never
    saw it (a `!!` bash command, an empty message, a role pi does not send): kept as a
    record by the caller. Its native is the entry with the message's content left out."""
    raw = entry.get("message")
    if not isinstance(raw, dict):
        raise ImportRefused("a message entry has no message object", line)
    envelope = Native(api=PI, value={**entry, "message": _without_content(raw)})
    role = raw.get("role")
    if role == "user" or role in ("custom", "hookMessage"):
        return _user(_content(raw, line), envelope, message_id, encoding, line)
    if role == "assistant":
        return _assistant(raw, envelope, message_id, encoding, line)
    if role == "toolResult":
        return _tool_result(raw, envelope, message_id, encoding, line)
    if role == "bashExecution":
        if raw.get("excludeFromContext") is True:
            return None
        text = bash_execution_text(raw, line)
        return _user(text, envelope, message_id, encoding, line)
    if role == "compactionSummary":
        summary = string(raw, "summary", "a compactionSummary message", line)
        text = COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX
        return _user(text, envelope, message_id, encoding, line)
    if role == "branchSummary":
        summary = string(raw, "summary", "a branchSummary message", line)
        text = BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX
        return _user(text, envelope, message_id, encoding, line)
    return None


def entry_message(entry: Json, message_id: str, encoding: str, line: int) -> Message | None:
    """A `custom_message` entry (an extension's message, sent as user content) or a
    `branch_summary` entry (sent as user text when it has a summary); the entry without its
    content is the native."""
    envelope = Native(api=PI, value=_without_content(entry))
    if entry.get("type") == "custom_message":
        return _user(_content(entry, line), envelope, message_id, encoding, line)
    summary = entry.get("summary")
    if not isinstance(summary, str) or not summary:
        return None
    text = BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX
    return _user(text, envelope, message_id, encoding, line)


def bash_execution_text(raw: Json, line: int) -> str:
    """pi's `bashExecutionToText`: the user text the model is sent for a `!command`."""
    command = string(raw, "command", "a bashExecution message", line)
    output = raw.get("output")
    text = f"Ran `{command}`\n"
    text += f"```\n{output}\n```" if isinstance(output, str) and output else "(no output)"
    exit_code = raw.get("exitCode")
    if raw.get("cancelled") is True:
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {_js(exit_code)}"
    full = raw.get("fullOutputPath")
    if raw.get("truncated") is True and isinstance(full, str) and full:
        text += f"\n\n[Output truncated. Full output: {full}]"
    return text


def _js(value: object) -> str:
    """A number as JavaScript's template literal writes it (`1`, not `1.0`)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if not isinstance(value, str) else value


def _without_content(raw: Json) -> Json:
    """pi's own message (or entry) without its content: what the parts leave out."""
    return {k: v for k, v in raw.items() if k != "content"}


def _content(raw: Json, line: int) -> str | list[Any]:
    content = raw.get("content")
    if not isinstance(content, str | list):
        raise ImportRefused(f"a {brief(raw.get('role', raw.get('type')))} has no content", line)
    return content


def _user(
    content: str | list[Any], envelope: Native, message_id: str, encoding: str, line: int
) -> Message | None:
    if isinstance(content, str):
        parts: list[Part] = [TextPart(text=content)]
    else:
        parts = [_user_part(block, line) for block in content]
    if not parts:
        return None
    return Message(
        id=message_id,
        role="user",
        parts=counted(parts, encoding, message_id),
        native=envelope,
    )


def _block(raw: object, line: int) -> tuple[Json, str]:
    kind = raw.get("type") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(kind, str):
        raise ImportRefused("a content block is not an object with a type", line)
    return raw, kind


def _exact(block: Json, keys: set[str]) -> bool:
    """Whether the normalised part gives `block` back exactly (it holds no other key)."""
    return set(block) <= keys


def _user_part(raw: object, line: int) -> Part:
    block, kind = _block(raw, line)
    if kind == "text":
        return _text(block, line)
    if kind == "image":
        return _image(block, line)
    return NativePart(native=Native(api=PI, value=block))


def _text(block: Json, line: int) -> TextPart:
    text = string(block, "text", "a text block", line)
    exact = _exact(block, {"type", "text"})
    return TextPart(text=text, native=None if exact else Native(api=PI, value=block))


def _image(block: Json, line: int) -> FilePart:
    media_type = string(block, "mimeType", "an image block", line)
    data = string(block, "data", "an image block", line)
    exact = _exact(block, {"type", "mimeType", "data"})
    native = None if exact else Native(api=PI, value=block)
    return FilePart(media_type=media_type or "image/*", data=data, native=native)


def _assistant(
    raw: Json, envelope: Native, message_id: str, encoding: str, line: int
) -> Message | Dropped | None:
    content = raw.get("content")
    if not isinstance(content, list):
        raise ImportRefused("an assistant message has no content list", line)
    anthropic = raw.get("api") == _ANTHROPIC_API
    parts = [_assistant_part(block, anthropic, line) for block in content]
    if not parts:
        return None  # an error before any output: the entry is kept as a record
    message = Message(
        id=message_id,
        role="assistant",
        parts=counted(parts, encoding, message_id),
        usage=_usage(raw.get("usage")),
        native=envelope,
    )
    return Dropped(message) if raw.get("stopReason") in _DROPPED_STOPS else message


def _assistant_part(raw: object, anthropic: bool, line: int) -> Part:
    block, kind = _block(raw, line)
    if kind == "text":
        return _text(block, line)
    if kind == "thinking":
        return _thinking(block, anthropic, line)
    if kind == "toolCall":
        call_id = string(block, "id", "a toolCall block", line)
        name = string(block, "name", f"toolCall {brief(call_id)}", line)
        if not call_id or not name:
            raise ImportRefused("a toolCall block has an empty id or name", line)
        arguments = block.get("arguments", {})
        exact = _exact(block, {"type", "id", "name", "arguments"}) and isinstance(arguments, dict)
        return ToolCallPart(
            call_id=call_id,
            name=name,
            arguments=json.dumps(arguments, ensure_ascii=False, separators=(",", ":")),
            native=None if exact else Native(api=PI, value=block),
        )
    if kind == "image":
        return _image(block, line)
    return NativePart(native=Native(api=PI, value=block))


def _thinking(block: Json, anthropic: bool, line: int) -> ReasoningPart:
    """Readable thinking as the part's text (none when redacted); the signature (Anthropic's,
    or an OpenAI reasoning item with its `encrypted_content`) only ever in `native`."""
    text = string(block, "thinking", "a thinking block", line)
    signature = block.get("thinkingSignature")
    redacted = block.get("redacted") is True
    if anthropic and isinstance(signature, str) and signature:
        if redacted and text == _REDACTED_THINKING:
            if _exact(block, {"type", "thinking", "thinkingSignature", "redacted"}):
                native = {"type": "redacted_thinking", "data": signature}
                return ReasoningPart(text="", native=Native(api=ANTHROPIC, value=native))
        elif not redacted and _exact(block, {"type", "thinking", "thinkingSignature"}):
            native = {"type": "thinking", "thinking": text, "signature": signature}
            return ReasoningPart(text=text, native=Native(api=ANTHROPIC, value=native))
    return ReasoningPart(text="" if redacted else text, native=Native(api=PI, value=block))


def _tool_result(raw: Json, envelope: Native, message_id: str, encoding: str, line: int) -> Message:
    call_id = string(raw, "toolCallId", "a toolResult message", line)
    if not call_id:
        raise ImportRefused("a toolResult message has an empty 'toolCallId'", line)
    name = raw.get("toolName")
    content = _content(raw, line)
    blocks = [TextPart(text=content)] if isinstance(content, str) else content
    shown = [p if isinstance(p, TextPart) else _result_block(p, line) for p in blocks]
    output = "\n".join(p.text for p in shown if isinstance(p, TextPart))
    plain = all(isinstance(p, TextPart) and p.native is None for p in shown)
    result = ToolResultPart(
        call_id=call_id,
        name=name if isinstance(name, str) and name else None,
        output=output,
        is_error=raw.get("isError") is True,
        blocks=None if plain else _numbered(shown, message_id),
    )
    return Message(
        id=message_id,
        role="tool",
        parts=counted([result], encoding, message_id),
        native=envelope,
    )


def _result_block(raw: object, line: int) -> TextPart | FilePart:
    """A tool result's block; one that is neither text nor image (no pi tool makes one) is
    shown as text holding its JSON, and kept as it was."""
    block, kind = _block(raw, line)
    if kind == "image":
        return _image(block, line)
    if kind == "text":
        return _text(block, line)
    text = f"[{kind} block] {json.dumps(block, ensure_ascii=False)}"
    return TextPart(text=text, native=Native(api=PI, value=block))


def _numbered(
    blocks: list[TextPart | FilePart], message_id: str
) -> tuple[TextPart | FilePart, ...]:
    """A result's blocks with ids derived from the message's, so a re-import gives the same."""
    return tuple(b.model_copy(update={"id": f"{message_id}.0.{n}"}) for n, b in enumerate(blocks))


def _usage(raw: object) -> Usage | None:
    """pi's usage (`input` leaves out cached prompt tokens, as ours does); `None` when it is
    not token counts (pi's own figures stay in the message's native)."""
    if not isinstance(raw, dict):
        return None
    counts = {
        "input": raw.get("input") or 0,
        "output": raw.get("output") or 0,
        "cache_read": raw.get("cacheRead") or 0,
        "cache_write": raw.get("cacheWrite") or 0,
    }
    try:
        return Usage.model_validate(counts, strict=True)
    except ValidationError:
        return None


def renamed(message: Message, message_id: str) -> Message:
    """`message` under another id, its parts renumbered after it (tokens kept): a message
    that comes back into the context after a branch switch is a new append of the same."""
    parts = []
    for n, part in enumerate(message.parts):
        part_id = f"{message_id}.{n}"
        update: dict[str, object] = {"id": part_id}
        if isinstance(part, ToolResultPart) and part.blocks is not None:
            update["blocks"] = _numbered(list(part.blocks), message_id)
        parts.append(part.model_copy(update=update))
    return message.model_copy(update={"id": message_id, "parts": tuple(parts)})


def summary_message(entry: Json, message_id: str, summary: str, encoding: str) -> Message:
    """A compaction's summary as pi sends it (user text between its prefix and suffix); the
    compaction entry, with its `details` and pi's `tokensBefore`, kept as the part's native."""
    text = COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX
    part = TextPart(text=text, native=Native(api=PI, value=entry))
    return Message(id=message_id, role="user", parts=counted([part], encoding, message_id))
