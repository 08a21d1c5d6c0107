"""Rendering a live context for a model API: OpenAI Chat Completions and Anthropic Messages.

Both go through `api_messages`, which makes the context valid for any tool-calling API: each
assistant message with tool calls is followed at once by one result per call, in call order.
A result written later (after a user interjected) is moved up to its call; a call with no
result yet (the loop stopped between the call and its result) gets an error result saying so;
a result whose call is no longer live is left out. The stored log is never changed by this.

Reasoning parts are left out of both shapes: Chat Completions has no field for them, and
Anthropic only accepts thinking blocks with the provider's signature, which we do not keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from events import FilePart, ReasoningPart, TextPart, ToolCallPart
from projections._live import LiveMessage, LivePart, LiveToolResult, estimate_tokens

INTERRUPTED = "[No result: the tool call was interrupted before it returned.]"
CONTINUED = "[The conversation continues from here.]"
"""Anthropic's first turn must be the user's: this stands in when the context opens with an
assistant turn (a pinned one kept before a summary, say)."""

JsonDict = dict[str, Any]


def api_messages(messages: Sequence[LiveMessage]) -> list[LiveMessage]:
    """The messages reordered so every tool call is answered right after it; see the module."""
    pending: dict[str, tuple[str, str]] = {}  # call_id -> (assistant message id, call part id)
    answers: dict[tuple[str, str], tuple[LiveMessage, LiveToolResult]] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                pending[part.call_id] = (message.id, part.id)
            elif isinstance(part, LiveToolResult):
                call = pending.pop(part.call_id, None)
                if call is not None:
                    answers[call] = (message, part)

    out: list[LiveMessage] = []
    for message in messages:
        if message.role == "tool":
            continue
        out.append(message)
        calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
        results: list[tuple[LiveMessage | None, LiveToolResult]] = []
        for tool_call in calls:
            answer = answers.get((message.id, tool_call.id))
            results.append(answer if answer is not None else (None, _interrupted(tool_call)))
        out.extend(_group_results(results))
    return out


def _interrupted(call: ToolCallPart) -> LiveToolResult:
    return LiveToolResult(
        id=f"interrupted-{call.id}",
        call_id=call.call_id,
        name=call.name,
        output=INTERRUPTED,
        is_error=True,
        tokens=estimate_tokens(INTERRUPTED),
    )


def _group_results(results: list[tuple[LiveMessage | None, LiveToolResult]]) -> list[LiveMessage]:
    """Consecutive results from one stored tool message stay one message (the usual case gives
    back the stored messages unchanged)."""
    groups: list[tuple[LiveMessage | None, list[LiveToolResult]]] = []
    for owner, part in results:
        if groups and owner is not None and groups[-1][0] is owner:
            groups[-1][1].append(part)
        else:
            groups.append((owner, [part]))
    grouped = []
    for owner, parts in groups:
        if owner is not None and list(owner.parts) == parts:
            grouped.append(owner)
            continue
        grouped.append(
            LiveMessage(
                id=owner.id if owner is not None else parts[0].id,
                role="tool",
                parts=tuple(parts),
                tokens=sum(p.tokens for p in parts),
                pinned=owner.pinned if owner is not None else False,
            )
        )
    return grouped


# OpenAI Chat Completions


def to_openai(messages: Sequence[LiveMessage]) -> list[JsonDict]:
    """The `messages` list for Chat Completions: system/user/assistant messages, assistant
    `tool_calls`, and one `tool` message per result."""
    out: list[JsonDict] = []
    for message in api_messages(messages):
        if message.role == "tool":
            out.extend(
                {"role": "tool", "tool_call_id": part.call_id, "content": part.output}
                for part in message.parts
                if isinstance(part, LiveToolResult)
            )
        elif message.role == "assistant":
            if any(not isinstance(p, ReasoningPart) for p in message.parts):
                out.append(_openai_assistant(message))
        else:
            out.append({"role": message.role, "content": _openai_content(message.parts)})
    return out


def _openai_content(parts: Sequence[LivePart]) -> str | list[JsonDict]:
    shown = [p for p in parts if isinstance(p, TextPart | FilePart)]
    if all(isinstance(p, TextPart) for p in shown):
        return "\n\n".join(p.text for p in shown if isinstance(p, TextPart))
    return [_openai_block(p) for p in shown]


def _openai_block(part: TextPart | FilePart) -> JsonDict:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if part.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": part.url or _data_url(part)}}
    if part.data is not None and part.media_type == "application/pdf":
        file: JsonDict = {"file_data": _data_url(part)}
        if part.filename:
            file["filename"] = part.filename
        return {"type": "file", "file": file}
    return {"type": "text", "text": _file_mention(part)}


def _openai_assistant(message: LiveMessage) -> JsonDict:
    texts = [
        p.text if isinstance(p, TextPart) else _file_mention(p)
        for p in message.parts
        if isinstance(p, TextPart | FilePart)
    ]
    calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
    rendered: JsonDict = {
        "role": "assistant",
        "content": "\n\n".join(texts) if texts or not calls else None,
    }
    if calls:
        rendered["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    return rendered


# Anthropic Messages


def to_anthropic(messages: Sequence[LiveMessage]) -> JsonDict:
    """`{"system": ..., "messages": [...]}` for the Messages API: system text apart, tool calls
    as `tool_use` blocks, results as `tool_result` blocks in a user turn; consecutive turns of
    one role are merged and empty text blocks dropped, as the API requires."""
    system: list[str] = []
    turns: list[JsonDict] = []
    for message in api_messages(messages):
        if message.role == "system":
            system.extend(p.text for p in message.parts if isinstance(p, TextPart))
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [block for part in message.parts for block in _anthropic_blocks(part, role)]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONTINUED}]})
    if turns and turns[-1]["role"] == "assistant":
        _strip_final_whitespace(turns)
    if not system:
        return {"messages": turns}
    return {"system": "\n\n".join(system), "messages": turns}


def _strip_final_whitespace(turns: list[JsonDict]) -> None:
    """The API refuses a final assistant turn ending in whitespace (it would be a prefill)."""
    content = turns[-1]["content"]
    last = content[-1]
    if last["type"] == "text":
        last["text"] = last["text"].rstrip()


def _anthropic_blocks(part: LivePart, role: str) -> list[JsonDict]:
    if isinstance(part, TextPart):
        return [{"type": "text", "text": part.text}] if part.text.strip() else []
    if isinstance(part, ToolCallPart):
        arguments = part.input
        tool_input = arguments if isinstance(arguments, dict) else {"_arguments": part.arguments}
        return [{"type": "tool_use", "id": part.call_id, "name": part.name, "input": tool_input}]
    if isinstance(part, LiveToolResult):
        block: JsonDict = {"type": "tool_result", "tool_use_id": part.call_id}
        block["content"] = part.output
        if part.is_error:
            block["is_error"] = True
        return [block]
    if isinstance(part, FilePart):
        if role == "assistant":  # the API takes images and documents in user turns only
            return [{"type": "text", "text": _file_mention(part)}]
        return [_anthropic_file(part)]
    return []  # reasoning: see the module docstring


def _anthropic_file(part: FilePart) -> JsonDict:
    if part.url is not None:
        source: JsonDict = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
    if part.media_type.startswith("image/"):
        return {"type": "image", "source": source}
    if part.media_type == "application/pdf":
        return {"type": "document", "source": source}
    return {"type": "text", "text": _file_mention(part)}


def _data_url(part: FilePart) -> str:
    return f"data:{part.media_type};base64,{part.data}"


def _file_mention(part: FilePart) -> str:
    return f"[file {part.filename or part.url or 'attached'} ({part.media_type})]"
