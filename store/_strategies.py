"""Context strategies other than the incremental summary: pure plans, no I/O.

`CompressionConfig.strategy` chooses one per session. `incremental` (the default) is the
prune-then-summarize path of `store._policies`; the strategies here take whole blocks out of
the live context instead of summarizing them, and return the one event that does it:

- `sliding_window` keeps the system prompt, pinned messages and the newest `window_messages`
  messages (and `window_tokens`, if set); older blocks leave.
- `importance` scores each block (role, errors, user requests, file changes, recency) and
  drops the lowest first.

Both drop until the context is under `strategy_target_ratio` of the usable window, so the next
calls do not trigger again at once. What leaves is a `ContextCompacted` whose summary is a
one-line marker (or, with `window_marker=False`, a `MessagesReverted` naming the ids): the fold
already knows both, the originals stay in the log (`Session.context(at=)` before the event
shows them), and the event names its strategy and why.

A block is the messages between two points where the context can be cut (an assistant message
with its tool calls and all their results, or one user message): blocks leave whole, so a call
never loses its result. `thinking_protected` is the guard every strategy shares: assistant
messages of the current tool loop that carry thinking never leave (Anthropic rejects a tool
loop whose latest thinking is missing).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from events import (
    CompactionReason,
    CompressionConfig,
    ContextCompacted,
    Message,
    MessagesReverted,
    OutputsPruned,
    Payload,
    ReasoningPart,
    TextPart,
    ToolCallPart,
)
from projections import LiveMessage, LiveToolResult
from projections._fold import always_kept
from store._policies import CompactionPlan, _is_turn_start, _possible_cuts, plan_prune

TokenCounter = Callable[[str], int]

MARKER = (
    "[{count} earlier message(s) left the context ({strategy}); "
    "the session's log keeps them: replay before this point to see them]"
)

FILE_CHANGING = ("edit", "write", "patch", "create", "replace", "move", "delete")
"""Substrings of tool names that change files: such a block records what the agent did."""


def thinking_protected(messages: Sequence[LiveMessage]) -> frozenset[str]:
    """Ids of the assistant messages of the current tool loop (since the last user request)
    that carry thinking, and of that request: no strategy removes or cuts them. The request
    goes with them because it marks where the loop starts: without it, every message would
    look older than the loop, and a prune would clear the loop's thinking."""
    start = next((n for n in range(len(messages) - 1, -1, -1) if _is_turn_start(messages[n])), None)
    thinking = {
        m.id
        for m in messages[start or 0 :]
        if m.role == "assistant" and any(isinstance(p, ReasoningPart) for p in m.parts)
    }
    if thinking and start is not None:
        thinking.add(messages[start].id)
    return frozenset(thinking)


def guard_compaction(
    plan: CompactionPlan | None, messages: Sequence[LiveMessage]
) -> CompactionPlan | None:
    """`plan` cut back so that it replaces no thinking-protected message: the cut moves to the
    first protected message (a valid cut, or the plan is dropped)."""
    if plan is None:
        return None
    protected = thinking_protected(messages)
    if not any(m.id in protected for m in plan.replaced):
        return plan
    first = next(n for n, m in enumerate(messages) if m.id in protected)
    if first not in _possible_cuts(messages):
        return None
    before = {m.id for m in messages[:first]}
    replaced = tuple(m for m in plan.replaced if m.id in before)
    return CompactionPlan(messages[first].id, replaced) if replaced else None


def blocks(messages: Sequence[LiveMessage]) -> list[tuple[LiveMessage, ...]]:
    """The context split where it can be cut: each block leaves whole or stays whole."""
    starts = [0, *_possible_cuts(messages), len(messages)]
    return [tuple(messages[a:b]) for a, b in itertools.pairwise(starts) if a < b]


def _movable(messages: Sequence[LiveMessage]) -> list[bool]:
    """Per block: whether a strategy may take it out (not system, pinned, thinking-protected,
    nor the newest block: the step the agent is on)."""
    kept = always_kept(
        [(m.id, m.role, m.parts) for m in messages], {m.id for m in messages if m.pinned}
    )
    kept |= thinking_protected(messages)
    split = blocks(messages)
    return [
        n < len(split) - 1 and not any(m.id in kept for m in block) for n, block in enumerate(split)
    ]


@dataclass(frozen=True, slots=True)
class Drop:
    """Messages a strategy takes out, and why, before it becomes an event."""

    strategy: str
    removed: tuple[LiveMessage, ...]
    why: str

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.removed)


def plan_sliding_window(
    messages: Sequence[LiveMessage], config: CompressionConfig, *, needed: int | None
) -> Drop | None:
    """Keep the newest blocks while they hold at most `window_messages` messages (and
    `window_tokens`); older movable blocks leave, oldest first, and when that frees less
    than `needed`, kept movable blocks too, oldest first. `None` when nothing can leave."""
    split = blocks(messages)
    movable = _movable(messages)
    kept_messages = 0
    kept_tokens = 0
    inside = [False] * len(split)
    for n in range(len(split) - 1, -1, -1):
        size = len(split[n])
        tokens = sum(m.tokens for m in split[n])
        fits = kept_messages + size <= config.window_messages and (
            config.window_tokens is None or kept_tokens + tokens <= config.window_tokens
        )
        if not fits and movable[n]:
            break
        inside[n] = True
        kept_messages += size
        kept_tokens += tokens
    leaving = [n for n in range(len(split)) if movable[n] and not inside[n]]
    freed = sum(m.tokens for n in leaving for m in split[n])
    for n in range(len(split)):
        if needed is None or freed >= needed:
            break
        if movable[n] and inside[n]:
            leaving.append(n)
            freed += sum(m.tokens for m in split[n])
    removed = tuple(m for n in sorted(leaving) for m in split[n])
    if not removed:
        return None
    limit = f"{config.window_messages} messages" + (
        f" / {config.window_tokens:,} tokens" if config.window_tokens else ""
    )
    why = f"kept the newest {limit}; {len(removed)} older message(s) left"
    if needed is not None:
        why += f" (needed {needed:,} tokens)"
    return Drop("sliding_window", removed, why)


def score(block: Sequence[LiveMessage], position: int, total: int) -> float:
    """How much a block is worth keeping: a user request 4, a summary 5, an assistant step 2,
    a lone tool result 1; +3 when a tool result is an error, +2 when a call changes files;
    up to +4 for recency (the newest block most)."""
    first = block[0]
    if first.summary:
        base = 5.0
    elif first.role == "user":
        base = 4.0
    elif first.role == "assistant":
        base = 2.0
    else:
        base = 1.0
    parts = [p for m in block for p in m.parts]
    if any(isinstance(p, LiveToolResult) and p.is_error for p in parts):
        base += 3
    if any(
        isinstance(p, ToolCallPart) and any(word in p.name.lower() for word in FILE_CHANGING)
        for p in parts
    ):
        base += 2
    return base + 4 * position / max(total - 1, 1)


def plan_importance(
    messages: Sequence[LiveMessage], config: CompressionConfig, *, needed: int | None
) -> Drop | None:
    """Drop movable blocks lowest score first (the older on a tie) until `needed` tokens are
    freed (all movable ones when `needed` is `None` would be too much: then nothing).
    `None` when nothing is needed or nothing can leave."""
    del config  # the weights are fixed in this edition (see `score`)
    if needed is None or needed <= 0:
        return None
    split = blocks(messages)
    movable = _movable(messages)
    ranked = sorted(
        (n for n in range(len(split)) if movable[n]),
        key=lambda n: (score(split[n], n, len(split)), n),
    )
    leaving: list[int] = []
    freed = 0
    for n in ranked:
        if freed >= needed:
            break
        leaving.append(n)
        freed += sum(m.tokens for m in split[n])
    removed = tuple(m for n in sorted(leaving) for m in split[n])
    if not removed:
        return None
    lowest = max(score(split[n], n, len(split)) for n in leaving)
    why = (
        f"dropped {len(leaving)} lowest-scored block(s) ({len(removed)} message(s), scores up to "
        f"{lowest:.1f}) to free {needed:,} tokens"
    )
    return Drop("importance", removed, why)


SKILL_TOOLS = ("skill",)
"""Tools whose calls load a skill's prompt: `selective` drops those blocks at priority 20."""


def plan_selective(
    messages: Sequence[LiveMessage],
    config: CompressionConfig,
    *,
    needed: int | None,
    now: datetime,
    count: TokenCounter,
) -> tuple[OutputsPruned | None, Drop | None]:
    """Compaction by item type, lowest priority first, stopping once `needed` tokens are
    freed: (10) tool results beyond the newest `selective_keep` pruned (placeholders, the
    originals restorable); (20) blocks that load a skill dropped; (30) assistant steps beyond
    the newest `selective_keep` dropped; (50) user messages beyond the newest `selective_keep`
    dropped. Summaries, the system prompt, pinned messages, the current loop's thinking and the
    newest block are never touched. (None, None) when nothing is needed or nothing can go."""
    if needed is None or needed <= 0:
        return None, None
    keep = config.selective_keep
    stage = config.model_copy(
        update={"keep_tool_results": keep, "protect_turns": 0, "protect_tokens": 1 << 62}
    )
    plan = plan_prune(messages, stage, now=now, count=count, needed=needed)
    pruned = None
    freed = 0
    if plan is not None and plan.part_ids:
        why = f"selective (10): tool results beyond the newest {keep} pruned"
        pruned = plan.event(why)
        freed = plan.tokens_freed
    if freed >= needed:
        return pruned, None
    if pruned is not None:  # the drops are weighed on what the prune leaves
        gone = set(pruned.part_ids)
        messages = [_without(m, gone, pruned) for m in messages]
    split = blocks(messages)
    movable = _movable(messages)
    leaving: list[int] = []
    stages: list[str] = []

    def take(label: str, chosen: list[int]) -> bool:
        nonlocal freed
        for n in chosen:
            if freed >= needed:
                break
            if n not in leaving:
                leaving.append(n)
                freed += sum(m.tokens for m in split[n])
                if label not in stages:
                    stages.append(label)
        return freed >= needed

    def calls(n: int) -> set[str]:
        return {p.name for m in split[n] for p in m.parts if isinstance(p, ToolCallPart)}

    candidates = [n for n in range(len(split)) if movable[n] and not split[n][0].summary]
    skills = [n for n in candidates if calls(n) & set(SKILL_TOOLS)]
    assistant = [n for n in candidates if split[n][0].role == "assistant"]
    user = [n for n in candidates if split[n][0].role == "user"]
    _ = (
        take("skill prompts (20)", skills)
        or take(f"assistant steps beyond the newest {keep} (30)", assistant[: -keep or None])
        or take(f"user messages beyond the newest {keep} (50)", user[: -keep or None])
    )
    if not leaving:
        return pruned, None
    removed = tuple(m for n in sorted(leaving) for m in split[n])
    why = f"selective: dropped {len(removed)} message(s): " + "; ".join(stages)
    return pruned, Drop("selective", removed, why[:500])


def drop_event(
    drop: Drop,
    messages: Sequence[LiveMessage],
    config: CompressionConfig,
    *,
    reason: CompactionReason,
    tokens_before: int,
    count: TokenCounter,
) -> Payload:
    """The event that takes `drop.removed` out: a `ContextCompacted` whose summary is a
    one-line marker where the first of them was, or (no marker) a `MessagesReverted`."""
    gone = {m.id for m in drop.removed}
    first = next(n for n, m in enumerate(messages) if m.id in gone)
    after = [m for m in messages[first:] if m.id not in gone]
    if not config.window_marker:
        before = [m for m in messages[:first] if m.id not in gone]
        anchor = before[-1] if before else after[0]
        return MessagesReverted(
            after_message_id=anchor.id,
            reverted_message_ids=tuple(m.id for m in drop.removed),
            strategy=drop.strategy,
            why=drop.why,
        )
    text = MARKER.format(count=len(drop.removed), strategy=drop.strategy.replace("_", " "))
    tokens = count(text)
    return ContextCompacted(
        summary=Message(role="user", parts=(TextPart(text=text, tokens=tokens),)),
        first_kept_message_id=after[0].id if after else messages[-1].id,
        replaced_message_ids=tuple(m.id for m in drop.removed),
        tokens_before=tokens_before,
        tokens_after=tokens_before - drop.tokens + tokens,
        reason=reason,
        summarizer="marker",
        strategy=drop.strategy,
        why=drop.why,
    )


def plan_strategy(
    messages: Sequence[LiveMessage],
    config: CompressionConfig,
    *,
    reason: CompactionReason,
    tokens_before: int,
    needed: int | None,
    count: TokenCounter,
    pressure: float | None = None,
    now: datetime | None = None,
) -> tuple[Payload, ...]:
    """The events the session's strategy appends for an overflowing context, none for the
    `incremental` strategy or when nothing can go: the dispatch of an automatic check.
    `pressure` is the context's share of the usable window (`adaptive` picks by it); `now`
    dates a prune's placeholder (`selective`)."""
    prune: OutputsPruned | None = None
    if config.strategy == "selective":
        prune, drop = plan_selective(
            messages, config, needed=needed, now=now or datetime.now(UTC), count=count
        )
    elif config.strategy == "sliding_window":
        drop = plan_sliding_window(messages, config, needed=needed)
    elif config.strategy == "importance":
        drop = plan_importance(messages, config, needed=needed)
    elif config.strategy == "adaptive":
        if pressure is None or pressure < config.adaptive_drop_ratio:
            return ()  # light pressure: the incremental prune, then the summary
        drop = plan_importance(messages, config, needed=needed)
        if drop is not None:
            why = f"pressure {pressure:.0%} >= {config.adaptive_drop_ratio:.0%}: {drop.why}"
            drop = Drop("adaptive", drop.removed, why[:500])
    else:
        return ()
    events: tuple[Payload, ...] = () if prune is None else (prune,)
    if drop is None:
        return events
    if prune is not None:
        tokens_before -= prune.tokens_freed
    return (
        *events,
        drop_event(drop, messages, config, reason=reason, tokens_before=tokens_before, count=count),
    )


def _without(message: LiveMessage, gone: set[str], prune: OutputsPruned) -> LiveMessage:
    """`message` with the outputs `prune` clears counted as their placeholders."""
    hit = [p for p in message.parts if isinstance(p, LiveToolResult) and p.id in gone]
    if not hit:
        return message
    shown = prune.placeholder_tokens or 0
    return message.model_copy(
        update={"tokens": message.tokens - sum(p.tokens - shown for p in hit)}
    )
