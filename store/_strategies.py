"""Context strategies other than the incremental summary: pure plans, no I/O.

`CompressionConfig.strategy` chooses one per session. `incremental` (the default) is the
prune-then-summarize path of `store._policies`; the strategies here take whole blocks out of
the live context instead of summarizing them, and return the event that does it (`selective`
may add a prune before it):

- `sliding_window` keeps the system prompt, pinned messages and the newest `window_messages`
  messages (and `window_tokens`, if set); older blocks leave.
- `importance` scores each block (role, errors, user requests, file changes, recency) and
  drops the lowest first.
- `selective` follows the session's rules by item type (`CompressionConfig.selective`), lowest
  priority first: tool results are pruned (an `OutputsPruned`), other kinds leave as blocks;
  it stops at what is needed, and the incremental path runs when it is not enough.

`sliding_window` and `importance` drop until the context is under `strategy_target_ratio` of
the usable window, so the next calls do not trigger again at once. What leaves is a
`ContextCompacted` whose summary is a one-line marker (or, with `window_marker=False`, a
`MessagesReverted` naming the ids): the fold already knows both, the originals stay in the log
(`Session.context(at=)` before the event shows them), and the event names its strategy and why.

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
from events._compression import SelectiveKind, SelectiveRule
from projections import LiveMessage, LiveToolResult
from projections._artifacts import _injected, _native_injected
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
"""Tools whose calls load a skill's prompt: `selective` counts those blocks as `skill_prompts`."""

SKILL_PROMPT_PREFIXES = ("<skill>", "Base directory for this skill:")
"""How an injected user message carrying a skill's body begins: Codex's and neovate-code's
`<skill>` block, the meta message Claude Code and neovate-code add after a skill call."""

SKILL_LISTING_MARKERS = (
    "<available_skills>",
    "<skills_instructions>",
    "skills are available",
    "available skills",
)
"""Text (lowercased) that marks an injected user message listing the skills the agent may
load: neovate-code's `<available_skills>`, Codex's `<skills_instructions>`, Claude Code's
reminder naming the skills available to its Skill tool."""

STAGE_NAMES: dict[SelectiveKind, str] = {
    "tool_results": "tool results",
    "skill_prompts": "skill prompts",
    "assistant": "assistant steps",
    "skill_metadata": "skill metadata",
    "user": "user messages",
    "summaries": "summaries",
    "system": "system prompt and memory",
}


def selective_kind(block: Sequence[LiveMessage]) -> SelectiveKind | None:
    """Which `SelectiveRule.kind` a block is, for the kinds that leave as blocks (tool results
    are parts, pruned in place): a summary; the system prompt or a pinned message; a skill
    tool's call; an injected user message carrying a skill's body (`SKILL_PROMPT_PREFIXES`) or
    listing skills (`SKILL_LISTING_MARKERS`); else by its first message's role. Injected means
    what `projections._artifacts` calls so: its importer marked it (`isMeta`, `synthetic`,
    an `.injected` api), or its text opens like a reminder or an environment block.
    `None` for a block that starts with a tool message (it has lost its call)."""
    first = block[0]
    if first.summary:
        return "summaries"
    if any(m.role == "system" or m.pinned for m in block):
        return "system"
    if any(isinstance(p, ToolCallPart) and p.name in SKILL_TOOLS for m in block for p in m.parts):
        return "skill_prompts"
    if first.role == "assistant":
        return "assistant"
    if first.role != "user":
        return None
    texts = [p for p in first.parts if isinstance(p, TextPart)]
    marked = _native_injected(first.native)
    if texts and all(marked or _native_injected(p.native) or _injected(p.text) for p in texts):
        text = "\n\n".join(p.text.lstrip() for p in texts)
        if text.startswith(SKILL_PROMPT_PREFIXES):
            return "skill_prompts"
        if any(marker in text.lower() for marker in SKILL_LISTING_MARKERS):
            return "skill_metadata"
    return "user"


def _stage(rule: SelectiveRule) -> str:
    """How a `why` names a stage: what left, and its priority."""
    name = STAGE_NAMES[rule.kind]
    verb = "pruned" if rule.kind == "tool_results" else "dropped"
    if rule.action == "truncate":
        return f"{name} beyond the newest {rule.keep} {verb} ({rule.priority})"
    return f"{name} {verb} ({rule.priority})"


def plan_selective(
    messages: Sequence[LiveMessage],
    config: CompressionConfig,
    *,
    needed: int | None,
    now: datetime,
    count: TokenCounter,
) -> tuple[OutputsPruned | None, Drop | None]:
    """Compaction by item type: the session's `selective` rules (`CompressionConfig.
    selective_rules`), lowest priority first, each stage stopping once `needed` tokens are
    freed, and no later stage running then. Tool results are pruned (placeholders, the
    originals restorable; `truncate` keeps the newest `keep` as a prune's `keep_tool_results`
    would, `drop` keeps none); every other kind (`selective_kind`) leaves as whole blocks,
    `truncate` keeping the newest `keep` of the kind that could leave. `never` skips the
    kind; so does a kind without a rule. A tool result whose step leaves goes with it, whatever
    the `tool_results` rule: a call never loses its result.

    Never touched, whatever the rules: the system prompt, pinned messages, the current tool
    loop's thinking and the request that started it, the newest block (`_movable`), the
    results of the newest assistant message's calls and of protected tools (`plan_prune`).

    Returns the prune and the drop, either `None` when its stages took nothing; the drop's
    `why` names every stage that took something, with its priority, in the order they ran.
    (None, None) when nothing is needed or nothing can go."""
    if needed is None or needed <= 0:
        return None, None
    current = list(messages)
    split = blocks(current)
    movable = _movable(current)
    kinds = [selective_kind(block) for block in split]
    pruned: OutputsPruned | None = None
    leaving: list[int] = []
    stages: list[str] = []
    freed = 0
    for rule in config.selective_rules():
        if freed >= needed:
            break
        if rule.action == "never":
            continue
        keep = rule.keep or 0
        if rule.kind == "tool_results":
            gone = {m.id for n in leaving for m in split[n]}
            stage = config.model_copy(
                update={
                    "keep_tool_results": keep if rule.action == "truncate" else 0,
                    "protect_turns": 0,
                    "protect_tokens": 1 << 62,
                }
            )
            staying = [m for m in current if m.id not in gone]
            plan = plan_prune(staying, stage, now=now, count=count, needed=needed - freed)
            if plan is None or not plan.part_ids:
                continue
            pruned = plan.event(f"selective: {_stage(rule)}")
            freed += plan.tokens_freed
            stages.append(_stage(rule))
            cleared = set(pruned.part_ids)  # later drops are weighed on what the prune leaves
            current = [_without(m, cleared, pruned) for m in current]
            split = blocks(current)
            continue
        of_kind = [n for n in range(len(split)) if movable[n] and kinds[n] == rule.kind]
        if rule.action == "truncate":
            of_kind = of_kind[: -keep or None]
        took = False
        for n in of_kind:
            if freed >= needed:
                break
            if n not in leaving:
                leaving.append(n)
                freed += sum(m.tokens for m in split[n])
                took = True
        if took:
            stages.append(_stage(rule))
    if not leaving:
        return pruned, None
    removed = tuple(m for n in sorted(leaving) for m in split[n])
    why = f"selective: {'; '.join(stages)}; {len(removed)} message(s) left"
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
