"""Rendering a live context for a model API: what every render shares.

Every render goes through `api_messages`, which makes the context valid for any tool-calling
API: each assistant message with tool calls is followed at once by one result per call, in call
order. A result written later (after a user interjected) is moved up to its call; a call with
no result yet (the loop stopped between the call and its result) gets an error result saying
so; a result whose call is no longer live is left out. The stored log is never changed by this.

The rules for content one provider produced and another is sent (`_render_anthropic`,
`_render_openai`, `_render_responses` apply them):
- a part recorded from the API being rendered goes back as its provider sent it (`native`),
  in its original place in the message: Anthropic thinking blocks with their signatures,
  Responses items with their ids, status and `encrypted_content`;
- reasoning recorded from another provider is left out (no API accepts another's reasoning,
  and its readable text was never meant as conversation);
- another provider's unmodelled block (`NativePart`) is shown as its `text`, or left out when
  it has none;
- text, tool calls, tool results and files are converted, whoever produced them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from events import FilePart, NativePart, ReasoningPart, ToolCallPart
from projections._live import LiveMessage, LiveToolResult, estimate_tokens

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


def is_native(part: object, api: str) -> bool:
    """Whether `part` was recorded from `api`, and so goes back to it as it came."""
    native = getattr(part, "native", None)
    return native is not None and native.api == api


def native_block(part: object) -> JsonDict:
    """A part's provider block, as recorded (a copy: renders hand out fresh dicts)."""
    value = part.native.value  # type: ignore[attr-defined]
    assert isinstance(value, dict)
    copied: JsonDict = json.loads(json.dumps(value))
    return copied


def foreign_text(part: NativePart | ReasoningPart) -> str | None:
    """What another provider's part shows as (see the module's rules): `None` to leave out."""
    if isinstance(part, ReasoningPart):
        return None
    return part.text or None


def data_url(part: FilePart) -> str:
    return f"data:{part.media_type};base64,{part.data}"


def file_mention(part: FilePart) -> str:
    return f"[file {part.filename or part.url or 'attached'} ({part.media_type})]"
