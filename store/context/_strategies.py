"""Context strategies other than the incremental summary: pure plans, no I/O.

`CompressionConfig.strategy` chooses one per session. `incremental` (the default) is the
prune-then-summarize path of `sessionstore.context._policies`; the strategies here take whole
blocks out of the live context instead of summarizing them, and return the event that does it
(`selective` may add a prune before it):

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
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sessionstore.context._policies import (
    CompactionPlan,
    _possible_cuts,
    plan_prune,
    starts_turn,
)
from sessionstore.events import (
    CompactionReason,
    CompressionConfig,
    ContextCompacted,
    Message,
    MessagesReverted,
    OutputsPruned,
    PartsPreviewed,
    Payload,
    Preview,
    ReasoningPart,
    SelectiveKind,
    SelectiveRule,
    TextPart,
    ToolCallPart,
)
from sessionstore.projections import (
    DECISION,
    DEFAULT_TOOLS,
    NOTICE,
    LiveMessage,
    LiveToolResult,
    always_kept,
    intent_of,
    is_injected_native,
    is_injected_text,
    preview,
    stored_tokens,
)

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
    start = next((n for n in range(len(messages) - 1, -1, -1) if starts_turn(messages[n])), None)
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
    del config  # the weights are fixed, not configurable (see `score`)
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


def is_tool_block(block: Sequence[LiveMessage]) -> bool:
    """Whether a block is an assistant message with tool calls (and their results)."""
    return block[0].role == "assistant" and any(isinstance(p, ToolCallPart) for p in block[0].parts)


@dataclass(frozen=True, slots=True)
class Cut:
    """One field a plan cuts to a preview, and the tokens that saves."""

    part_id: str
    preview: Preview
    saved: int


def previews_in(
    block: Sequence[LiveMessage], config: CompressionConfig, count: TokenCounter
) -> list[Cut]:
    """The long fields of one tool block, cut to previews: arguments over
    `preview_arguments_over` tokens to `preview_arguments_to`, results over
    `preview_results_over` to `preview_results_to`. Left whole: results already pruned or
    restored (a restore is the user's word) or previewed already, results with images, custom
    tools' calls (free text, sent in a block of their own), and the calls of a message that
    still carries reasoning (a Responses reasoning item must be followed by its call exactly as
    it was made)."""
    cuts = []
    for message in block:
        reasoning = any(isinstance(p, ReasoningPart) for p in message.parts)
        for part in message.parts:
            whole = reasoning or part.id in message.call_status
            if isinstance(part, ToolCallPart) and not whole and not _custom(part):
                tokens = stored_tokens(part)
                if tokens > config.preview_arguments_over:
                    target = config.preview_arguments_to
                    cut = _cut(part.id, part.arguments, tokens, target, count, arguments=True)
                    cuts.extend([cut] if cut else [])
            elif (
                isinstance(part, LiveToolResult)
                and part.status in ("original", "truncated")  # not pruned, previewed, restored
                and part.blocks is None
                and part.tokens > config.preview_results_over
            ):
                target = config.preview_results_to
                cut = _cut(part.id, part.output, part.tokens, target, count, arguments=False)
                cuts.extend([cut] if cut else [])
    return cuts


def _custom(call: ToolCallPart) -> bool:
    """Whether a call is a custom tool's (free text, not JSON): its render needs its own block,
    so its input is never cut."""
    value = call.native.value if call.native is not None else None
    return isinstance(value, dict) and value.get("type") in ("custom", "custom_tool_call")


def _cut(
    part_id: str, text: str, tokens: int, target: int, count: TokenCounter, *, arguments: bool
) -> Cut | None:
    """`text` (`tokens` long) cut to about `target` tokens of its head, counted as shown;
    `None` when that would not save anything."""
    chars = len(text) * target // max(tokens, 1)
    for _ in range(3):  # the ratio is a guess for this text: shrink until the head fits
        head = count(text[:chars])
        if head <= target * 1.25 or chars == 0:
            break
        chars = chars * target // head
    line = text.rfind("\n", 0, chars) + 1
    if not arguments and line > chars // 2:
        chars = line  # end on a whole line when one ends in the head's second half
    shown = count(preview(text, chars, NOTICE, part_id, arguments=arguments))
    if shown >= tokens:
        return None
    return Cut(part_id, Preview(chars=chars, tokens=shown), tokens - shown)


def plan_tool_blocks(
    messages: Sequence[LiveMessage],
    config: CompressionConfig,
    *,
    needed: int | None,
    count: TokenCounter,
    strategy: str = "tool_blocks",
) -> tuple[PartsPreviewed | None, Drop | None]:
    """Tool blocks beyond the newest `tool_blocks_keep` leave whole, oldest first; inside the
    blocks that stay, all but the newest `preview_whole` have their long fields cut to
    previews; when that frees less than `needed`, the newest blocks' fields are cut too (a
    preview loses less than a drop), and then more of the oldest kept tool blocks leave.
    Blocks the shared guard keeps (system, pinned, the current loop's thinking, the newest
    block) are neither dropped nor cut. (None, None) when nothing changes."""
    split = blocks(messages)
    movable = _movable(messages)
    tool = [n for n in range(len(split)) if is_tool_block(split[n])]
    beyond = [n for n in tool[: max(len(tool) - config.tool_blocks_keep, 0)] if movable[n]]
    leaving = list(beyond)
    whole = set(tool[len(tool) - config.preview_whole :]) if config.preview_whole else set()
    cuts = {
        n: previews_in(split[n], config, count)
        for n in tool
        if movable[n] and n not in leaving and n not in whole
    }
    freed = sum(m.tokens for n in leaving for m in split[n])
    freed += sum(c.saved for found in cuts.values() for c in found)
    for n in sorted(whole):  # not enough: a preview of the newest blocks loses less than a drop
        if needed is None or freed >= needed:
            break
        if movable[n] and n not in leaving:
            cuts[n] = previews_in(split[n], config, count)
            freed += sum(c.saved for c in cuts[n])
    for n in tool:  # still not enough: the oldest kept tool blocks leave too
        if needed is None or freed >= needed:
            break
        if movable[n] and n not in leaving:
            leaving.append(n)
            freed += sum(m.tokens for m in split[n]) - sum(c.saved for c in cuts.pop(n, []))
    cuts = {n: found for n, found in cuts.items() if found}
    previewed = _previews_event(cuts, whole, config, needed=needed, strategy=strategy)
    removed = tuple(m for n in sorted(leaving) for m in split[n])
    if not removed:
        return previewed, None
    said = []
    if beyond:
        said.append(
            f"{len(beyond)} tool block(s) beyond the newest {config.tool_blocks_keep} dropped whole"
        )
    if len(leaving) > len(beyond):
        saved = previewed.tokens_freed if previewed is not None else 0
        said.append(
            f"{len(leaving) - len(beyond)} more dropped whole to free {needed or 0:,} tokens "
            f"(previews freed {saved:,})"
        )
    return previewed, Drop(strategy, removed, "; ".join(said))


def _previews_event(
    cuts: dict[int, list[Cut]],
    whole: set[int],
    config: CompressionConfig,
    *,
    needed: int | None,
    strategy: str,
) -> PartsPreviewed | None:
    """The `PartsPreviewed` of the cuts by block, saying what was cut and where the newest
    blocks stood; `None` when nothing is cut."""
    chosen = [c for n in sorted(cuts) for c in cuts[n]]
    if not chosen:
        return None
    why = (
        f"arguments over {config.preview_arguments_over} tokens cut to "
        f"{config.preview_arguments_to}, results over {config.preview_results_over} to "
        f"{config.preview_results_to}, in {len(cuts)} block(s); "
    )
    opened = len(whole & cuts.keys())
    if opened:
        why += (
            f"{opened} of the newest {config.preview_whole} block(s) cut too, to free "
            f"{needed or 0:,} tokens"
        )
    else:
        why += f"the newest {config.preview_whole} block(s) left whole"
    return PartsPreviewed(
        previews={c.part_id: c.preview for c in chosen},
        notice=NOTICE,
        tokens_freed=sum(c.saved for c in chosen),
        strategy=strategy,
        why=why,
    )


def key_of(block: Sequence[LiveMessage]) -> str | None:
    """What makes a block a key event, or `None`: a user request, an error, a file change, a
    decision or preference ("always", "never", "instead"... as the summary reads them), or a
    summary (which a later summary takes in, `with_earlier`)."""
    first = block[0]
    if first.summary:
        return "summary"
    if first.role == "user":
        return "request"
    parts = [p for m in block for p in m.parts]
    if any(isinstance(p, LiveToolResult) and p.is_error for p in parts):
        return "error"
    for part in parts:
        if isinstance(part, ToolCallPart):
            files = intent_of(part.name, part.arguments, DEFAULT_TOOLS).files
            name = part.name.lower()
            if any(act != "read" for act, _ in files) or any(w in name for w in FILE_CHANGING):
                return "file change"
    if any(isinstance(p, TextPart) and DECISION.search(p.text) for p in parts):
        return "decision"
    return None


def plan_key_events(
    messages: Sequence[LiveMessage], config: CompressionConfig, *, needed: int | None
) -> Drop | None:
    """The movable blocks that carry no key event (`key_of`) leave, oldest first, until
    `needed` tokens are freed; the session summarizes them where they were (`drop_event`
    with a summary). `None` when nothing is needed or every movable block is key."""
    del config  # what is key is fixed, not configurable (see `key_of`)
    if needed is None or needed <= 0:
        return None
    split = blocks(messages)
    movable = _movable(messages)
    leaving: list[int] = []
    freed = 0
    kept: dict[str, int] = {}
    for n in range(len(split)):
        key = key_of(split[n]) if movable[n] else None
        if key is not None:
            kept[key] = kept.get(key, 0) + 1
        elif movable[n] and freed < needed:
            leaving.append(n)
            freed += sum(m.tokens for m in split[n])
    removed = tuple(m for n in leaving for m in split[n])
    if not removed:
        return None
    what = ", ".join(f"{k} {v}" for k, v in sorted(kept.items())) or "none"
    why = (
        f"summarized {len(leaving)} block(s) without a key event ({len(removed)} message(s)) "
        f"to free {needed:,} tokens; kept the key blocks ({what})"
    )
    return Drop("key_events", removed, why)


MARKER_COUNT = re.compile(r"^\[([\d,]+) earlier message\(s\) left the context \(")


def marker_count(message: LiveMessage) -> int | None:
    """How many messages a strategy's marker (`MARKER`) stands for; `None` when `message` is
    not one."""
    text = message.parts[0] if message.summary and len(message.parts) == 1 else None
    found = MARKER_COUNT.match(text.text) if isinstance(text, TextPart) else None
    return int(found.group(1).replace(",", "")) if found else None


def with_earlier(drop: Drop, messages: Sequence[LiveMessage], *, summaries: bool) -> Drop:
    """`drop` with the movable markers (with `summaries`, every movable summary) that come
    before its last block: they fold into its new marker or summary instead of piling up, one
    per decision, where no strategy would ever take them out."""
    split = blocks(messages)
    movable = _movable(messages)
    gone = {m.id for m in drop.removed}
    last = max(n for n, block in enumerate(split) if any(m.id in gone for m in block))
    earlier = [
        n
        for n in range(last)
        if movable[n]
        and not any(m.id in gone for m in split[n])
        and (split[n][0].summary if summaries else marker_count(split[n][0]) is not None)
    ]
    if not earlier:
        return drop
    taken = {m.id: m for n in earlier for m in split[n]} | {m.id: m for m in drop.removed}
    noun = "summary" if summaries else "marker"
    why = f"{drop.why}; {len(earlier)} earlier {noun}(s) folded in"
    removed = tuple(taken[m.id] for m in messages if m.id in taken)
    return Drop(drop.strategy, removed, why[:500])


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
    what `sessionstore.projections._artifacts` calls so: its importer marked it (`isMeta`,
    `synthetic`, an `.injected` api), or its text opens like a reminder or an environment block.
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
    marked = is_injected_native(first.native)
    if texts and all(
        marked or is_injected_native(p.native) or is_injected_text(p.text) for p in texts
    ):
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
    summary: tuple[str, str] | None = None,
) -> Payload:
    """The event that takes `drop.removed` out: a `ContextCompacted` whose summary is
    `summary` (its text and the summarizer's name) or a one-line marker, where the first of
    them was; or, with no summary and no marker, a `MessagesReverted`."""
    gone = {m.id for m in drop.removed}
    first = next(n for n, m in enumerate(messages) if m.id in gone)
    after = [m for m in messages[first:] if m.id not in gone]
    if summary is None and not config.window_marker:
        before = [m for m in messages[:first] if m.id not in gone]
        anchor = before[-1] if before else after[0]
        return MessagesReverted(
            after_message_id=anchor.id,
            reverted_message_ids=tuple(m.id for m in drop.removed),
            strategy=drop.strategy,
            why=drop.why,
        )
    if summary is None:
        stood_for = sum(marker_count(m) or 1 for m in drop.removed)
        text = MARKER.format(count=f"{stood_for:,}", strategy=drop.strategy.replace("_", " "))
        summary = (text, "marker")
    text, summarizer = summary
    tokens = count(text)
    return ContextCompacted(
        summary=Message(role="user", parts=(TextPart(text=text, tokens=tokens),)),
        first_kept_message_id=after[0].id if after else messages[-1].id,
        replaced_message_ids=tuple(m.id for m in drop.removed),
        tokens_before=tokens_before,
        tokens_after=tokens_before - drop.tokens + tokens,
        reason=reason,
        summarizer=summarizer,
        strategy=drop.strategy,
        why=drop.why,
    )


Summarize = Callable[[tuple[LiveMessage, ...]], tuple[str, str] | None]
"""The session's summarizer for `key_events`: (text, summarizer name) of the messages, or
`None` when the summary would not save enough (the marker stands in)."""


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
    summarize: Summarize | None = None,
) -> tuple[Payload, ...]:
    """The events the session's strategy appends for an overflowing context, none for the
    `incremental` strategy or when nothing can go: the dispatch of an automatic check.
    `pressure` is the context's share of the usable window (`adaptive` picks by it); `now`
    dates a prune's placeholder (`selective`); `summarize` writes `key_events`' summary (a
    marker without it)."""
    first: PartsPreviewed | OutputsPruned | None = None
    summary: tuple[str, str] | None = None
    if config.strategy == "selective":
        first, drop = plan_selective(
            messages, config, needed=needed, now=now or datetime.now(UTC), count=count
        )
    elif config.strategy == "sliding_window":
        drop = plan_sliding_window(messages, config, needed=needed)
    elif config.strategy == "importance":
        drop = plan_importance(messages, config, needed=needed)
    elif config.strategy == "tool_blocks":
        first, drop = plan_tool_blocks(messages, config, needed=needed, count=count)
    elif config.strategy == "key_events":
        drop = plan_key_events(messages, config, needed=needed)
    elif config.strategy == "adaptive":
        first, drop = _adaptive(messages, config, needed=needed, count=count, pressure=pressure)
    else:
        return ()
    events: tuple[Payload, ...] = () if first is None else (first,)
    if drop is None:
        return events
    key_events = config.strategy == "key_events"
    drop = with_earlier(drop, messages, summaries=key_events)
    if key_events and summarize is not None:
        summary = summarize(drop.removed)
    if first is not None:
        tokens_before -= first.tokens_freed
    event = drop_event(
        drop,
        messages,
        config,
        reason=reason,
        tokens_before=tokens_before,
        count=count,
        summary=summary,
    )
    if isinstance(event, ContextCompacted) and event.tokens_after >= event.tokens_before:
        return events  # a marker as long as what it replaces (a marker for a marker): no gain
    return (*events, event)


def _adaptive(
    messages: Sequence[LiveMessage],
    config: CompressionConfig,
    *,
    needed: int | None,
    count: TokenCounter,
    pressure: float | None,
) -> tuple[PartsPreviewed | None, Drop | None]:
    """`adaptive` by pressure: at the trigger, only the light stage (long fields of older tool
    blocks cut to previews; the check's incremental prune and summary follow if that is not
    enough); from `adaptive_drop_ratio` of the usable window, the previews and then the
    lowest-scored blocks dropped (`importance`) before any summary."""
    originals = tuple(messages)
    light = config.model_copy(update={"tool_blocks_keep": len(messages) + 1})
    previewed, _ = plan_tool_blocks(messages, light, needed=None, count=count, strategy="adaptive")
    if previewed is not None:
        stage = f"pressure {pressure:.0%}: " if pressure is not None else ""
        previewed = previewed.model_copy(update={"why": (stage + previewed.why)[:500]})
    if pressure is None or pressure < config.adaptive_drop_ratio:
        return previewed, None
    if needed is not None and previewed is not None:
        needed -= previewed.tokens_freed
        if needed <= 0:
            return previewed, None
        gone = set(previewed.previews)
        messages = [_cut_to_previews(m, gone, previewed) for m in messages]
    drop = plan_importance(messages, config, needed=needed)
    if drop is None:
        return previewed, None
    why = f"pressure {pressure:.0%} >= {config.adaptive_drop_ratio:.0%}: {drop.why}"
    if previewed is not None:  # no preview of a part that leaves with its block anyway
        gone = {p.id for m in drop.removed for p in m.parts}
        kept = {i: c for i, c in previewed.previews.items() if i not in gone}
        freed = sum(
            (p.tokens if isinstance(p, LiveToolResult) else stored_tokens(p)) - kept[p.id].tokens
            for m in originals
            for p in m.parts
            if p.id in kept
        )
        previewed = (
            previewed.model_copy(update={"previews": kept, "tokens_freed": freed}) if kept else None
        )
    removed = tuple(m for m in originals if m.id in {r.id for r in drop.removed})
    return previewed, Drop("adaptive", removed, why[:500])


def _cut_to_previews(message: LiveMessage, cut: set[str], event: PartsPreviewed) -> LiveMessage:
    """`message` counted as it shows once `event`'s previews apply."""
    saved = 0
    for part in message.parts:
        if part.id in cut:
            tokens = part.tokens if isinstance(part, LiveToolResult) else stored_tokens(part)
            saved += tokens - event.previews[part.id].tokens
    if not saved:
        return message
    return message.model_copy(update={"tokens": message.tokens - saved})


def _without(message: LiveMessage, gone: set[str], prune: OutputsPruned) -> LiveMessage:
    """`message` with the outputs `prune` clears counted as their placeholders."""
    hit = [p for p in message.parts if isinstance(p, LiveToolResult) and p.id in gone]
    if not hit:
        return message
    shown = prune.placeholder_tokens or 0
    return message.model_copy(
        update={"tokens": message.tokens - sum(p.tokens - shown for p in hit)}
    )
