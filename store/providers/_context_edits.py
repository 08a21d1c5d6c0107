"""What Anthropic's context editing cleared, from a response's `context_management`.

With `context_management.edits` in a request (`clear_tool_uses_20250919`,
`clear_thinking_20251015`), the API clears content from the request before the model reads it,
and says what it did in the response's `context_management.applied_edits`: per edit, how many
tool uses or thinking turns it cleared and how many input tokens that freed. It does not say
which ones; its rules do, and they are applied to the request as sent, which is the session's
live context before the response:
- `clear_tool_uses_20250919` clears the oldest tool results first (keeping the newest `keep`):
  `cleared_tool_uses: n` is the oldest `n` tool results of the request, counting those the
  store shows as cleared already (they are tool results in the request too), and leaving out
  the tools the request's edit named in `exclude_tools`;
- `clear_thinking_20251015` clears the thinking of the oldest assistant turns first (keeping
  the newest `keep`): `cleared_thinking_turns: n` is the oldest `n` assistant turns that still
  show thinking.

Each becomes a `ClearedByProvider`, which the session records as an `OutputsPruned` whose
reason names the provider and the edit, so the live context is what the server kept. An edit
type newer than this code is left alone (its figures stay in the response's envelope).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessionstore.events import ANTHROPIC, Message, ReasoningPart
from sessionstore.projections import LiveMessage, LiveToolResult

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"

CLEARED_PLACEHOLDER = "[Tool result cleared by Anthropic's context editing ({edit}).]"
"""What a cleared tool result shows instead of its output."""


@dataclass(frozen=True, slots=True)
class ClearedByProvider:
    """Parts one applied edit cleared: tool results (shown as `placeholder`) or reasoning
    parts (left out), and the reason the prune records."""

    part_ids: tuple[str, ...]
    placeholder: str
    reason: str


def applied_edits(message: Message) -> list[dict[str, Any]]:
    """The `context_management.applied_edits` of an Anthropic response's envelope (empty when it
    has none, or is not Anthropic's)."""
    native = message.native
    if native is None or native.api != ANTHROPIC or not isinstance(native.value, dict):
        return []
    management = native.value.get("context_management")
    edits = management.get("applied_edits") if isinstance(management, dict) else None
    return [edit for edit in edits if isinstance(edit, dict)] if isinstance(edits, list) else []


def cleared_parts(
    message: Message,
    live: Sequence[LiveMessage],
    request: Mapping[str, Any] | None = None,
) -> list[ClearedByProvider]:
    """What each edit `message` reports cleared, named in `live` (the context the request
    sent); `request` is the request's `context_management`, read for `exclude_tools`."""
    excluded = _excluded_tools(request)
    found = []
    for edit in applied_edits(message):
        kind = edit.get("type")
        freed = _count(edit.get("cleared_input_tokens"))
        if kind == CLEAR_TOOL_USES:
            n = _count(edit.get("cleared_tool_uses"))
            ids = _oldest_results(live, n, excluded)
            what = f"{n} tool use(s)"
        elif kind == CLEAR_THINKING:
            n = _count(edit.get("cleared_thinking_turns"))
            ids = _oldest_thinking(live, n)
            what = f"the thinking of {n} turn(s)"
        else:
            continue
        if ids:
            reason = f"provider: Anthropic {kind} cleared {what} ({freed:,} input tokens)"
            found.append(ClearedByProvider(ids, CLEARED_PLACEHOLDER.format(edit=kind), reason))
    return found


def _oldest_results(live: Sequence[LiveMessage], n: int, excluded: set[str]) -> tuple[str, ...]:
    results = [
        part
        for message in live
        for part in message.parts
        if isinstance(part, LiveToolResult) and (part.name or "") not in excluded
    ]
    return tuple(part.id for part in results[:n] if part.status != "pruned")


def _oldest_thinking(live: Sequence[LiveMessage], n: int) -> tuple[str, ...]:
    """The reasoning parts of the oldest `n` assistant turns that show thinking; the messages
    of one response (as Claude Code records them, a block each) are one turn, as the render
    sends them."""
    turns: list[tuple[str | None, list[str]]] = []
    for message in live:
        if message.role != "assistant":
            continue
        ids = [part.id for part in message.parts if isinstance(part, ReasoningPart)]
        response = _response_id(message)
        if turns and response is not None and turns[-1][0] == response:
            turns[-1][1].extend(ids)
        else:
            turns.append((response, ids))
    thinking = [ids for _, ids in turns if ids][:n]
    return tuple(part_id for ids in thinking for part_id in ids)


def _response_id(message: LiveMessage) -> str | None:
    native = message.native
    if native is None or native.api != ANTHROPIC or not isinstance(native.value, dict):
        return None
    response = native.value.get("id")
    return response if isinstance(response, str) else None


def _excluded_tools(request: Mapping[str, Any] | None) -> set[str]:
    edits = request.get("edits") if isinstance(request, Mapping) else None
    excluded: set[str] = set()
    for edit in edits if isinstance(edits, list | tuple) else ():
        if isinstance(edit, Mapping) and edit.get("type") == CLEAR_TOOL_USES:
            tools = edit.get("exclude_tools")
            excluded.update(t for t in tools or () if isinstance(t, str))
    return excluded


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
