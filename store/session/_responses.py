"""The events that record one provider response: the message, and what the provider did to
the context on its side.

A response is one `MessageAppended`, unless the provider managed the context itself:
- **its context editing** (Anthropic's `applied_edits`) cleared tool results or thinking from
  the request: each edit is an `OutputsPruned` of those parts, its reason naming the provider
  and the edit, appended before the response (the request was the context before it), so the
  live context is what the server kept;
- **its compaction** (a Responses `compaction` item, an Anthropic `compaction` block): the
  response is cut where the provider put the item (`sessionstore.providers.split_at_compaction`),
  and a `ContextCompacted` with reason `provider`, whose summary is the item verbatim, replaces
  every earlier message but the system prompt (pins too: the provider dropped them). Its
  `tokens_after` is the provider's own figure for the compacted context when the response
  reports one, and the fold counts from it; the original turns stay in the log, and
  `context(at=)` before it shows them.

All of it is appended in one transaction with the response, or nothing is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sessionstore.events import (
    ContextCompacted,
    Message,
    MessageAppended,
    OutputsPruned,
    Payload,
    ReasoningPart,
    ToolResultPart,
)
from sessionstore.projections import ContextFold, LiveMessage, LiveToolResult, stored_tokens
from sessionstore.providers import cleared_parts, split_at_compaction


def response_events(
    fold: ContextFold,
    message: Message,
    count: Callable[[str], int],
    request: Mapping[str, Any] | None = None,
) -> tuple[list[Payload], Message]:
    """The events that record `message` (a response, its parts counted) on top of `fold`, and
    the message the caller gets back: the response itself, or what follows its compaction
    item (the item alone when nothing does). `request` is the request's `context_management`
    (Anthropic), which says which tools its edits leave alone."""
    live = fold.live_messages()
    events: list[Payload] = []
    freed_total = 0
    for cleared in cleared_parts(message, live, request):
        placeholder_tokens = count(cleared.placeholder)
        freed = _freed(live, set(cleared.part_ids), placeholder_tokens)
        freed_total += freed
        events.append(
            OutputsPruned(
                part_ids=cleared.part_ids,
                placeholder=cleared.placeholder,
                placeholder_tokens=placeholder_tokens,
                tokens_freed=freed,
                reason=cleared.reason,
            )
        )
    split = split_at_compaction(message)
    if split is None:
        return [*events, MessageAppended(message=message)], message
    appended = [m for m in (split.dropped, split.rest) if m is not None]
    events.extend(MessageAppended(message=m) for m in appended)
    system = [m for m in live if m.role == "system"]
    replaced = [m.id for m in live if m.role != "system"]
    if split.dropped is not None:
        replaced.append(split.dropped.id)
    before = fold.tokens - freed_total + _tokens(message)
    ours_after = sum(m.tokens for m in system) + _tokens(split.summary)
    if split.rest is not None:
        ours_after += _tokens(split.rest)
    reported = split.reported_tokens
    events.append(
        ContextCompacted(
            summary=split.summary,
            # the summary goes before what followed the item, or last when nothing did
            first_kept_message_id=(split.rest or split.summary).id,
            replaced_message_ids=tuple(replaced),
            tokens_before=before,
            tokens_after=reported if reported is not None else ours_after,
            reason="provider",
            summarizer=split.api,
            why=f"{split.api} compacted the conversation itself; its item is the summary",
        )
    )
    return events, split.rest or split.summary


def _freed(live: Sequence[LiveMessage], part_ids: set[str], placeholder_tokens: int) -> int:
    """Tokens the parts named stop taking: a tool result's shown output less its placeholder,
    a reasoning part's whole count (it leaves with no placeholder)."""
    freed = 0
    for message in live:
        for part in message.parts:
            if part.id not in part_ids:
                continue
            if isinstance(part, LiveToolResult):
                freed += max(part.tokens - placeholder_tokens, 0)
            elif isinstance(part, ReasoningPart):
                freed += stored_tokens(part)
    return freed


def _tokens(message: Message) -> int:
    return sum(stored_tokens(p) for p in message.parts if not isinstance(p, ToolResultPart))
