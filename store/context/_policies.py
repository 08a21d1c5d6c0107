"""Context policies: pure decisions over a session's live context, no I/O.

Each function looks at the context and the session's `CompressionConfig` and returns what it
would do (a measurement, a prune plan, a compaction plan); the `Session` applies a decision by
appending its event. A dry run is therefore free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from sessionstore.events import (
    CompressionConfig,
    OutputsPruned,
    ReasoningPart,
    SessionStarted,
    ToolCallPart,
)
from sessionstore.projections import ContextFold, LiveMessage, LiveToolResult, always_kept

TokenCounter = Callable[[str], int]


# overflow


@dataclass(frozen=True, slots=True)
class Measure:
    """How full the context is: `tokens` against `limit` (trigger_ratio of the usable window).

    `source` says where the count came from: `usage` (the provider's figure for the last
    assistant turn plus our counts of what was appended since) or `stored` (our per-part counts
    of the whole live context plus the safety margin).
    """

    tokens: int
    source: Literal["usage", "stored"]
    limit: int | None
    usable: int | None

    @property
    def overflowing(self) -> bool:
        return self.limit is not None and self.tokens > self.limit


def measure(fold: ContextFold, config: CompressionConfig) -> Measure:
    header = fold.header
    assert header is not None
    usable = usable_window(header)
    if fold.usage_base is not None:
        reported, counted_then = fold.usage_base
        tokens, source = reported + fold.tokens - counted_then, "usage"
    else:
        tokens, source = fold.tokens + config.budgets(usable).safety_margin, "stored"
    limit = None if usable is None else int(usable * config.trigger_ratio)
    return Measure(tokens, source, limit, usable)  # type: ignore[arg-type]


def usable_window(header: SessionStarted) -> int | None:
    """The usable window: the context window minus the output reserve (`None` if unknown)."""
    if header.context_window is None:
        return None
    return max(header.context_window - header.output_reserve, 0)


def cooling_down(fold: ContextFold, config: CompressionConfig, now: Measure) -> bool:
    """Whether the newest compaction, fewer than `cooldown_events` events ago, left the context
    over the limit and it has not grown since: compacting again would summarize a summary for
    nothing. Growth ends the cooldown at once."""
    if fold.last_compaction is None or now.limit is None:
        return False
    seq, tokens_after = fold.last_compaction
    after = tokens_after + config.budgets(now.usable).safety_margin
    recent = fold.seq - seq < config.cooldown_events
    return recent and after > now.limit and now.tokens <= after


# pruning


@dataclass(frozen=True, slots=True)
class PrunePlan:
    """Older turns' reasoning to clear and old tool outputs to replace by a placeholder, and
    what that frees.

    `reasoning_ids` go first: reasoning is the cheapest to lose (the model reasoned from what
    it saw; the results and its answers stay), so when clearing it gets the context under the
    limit no output is touched."""

    part_ids: tuple[str, ...]
    tokens: int
    placeholder: str
    placeholder_tokens: int
    minimum: int
    reasoning_ids: tuple[str, ...] = ()
    reasoning_tokens: int = 0
    needed: int | None = None
    """Tokens to free to get under the overflow limit, when the plan was made for it."""

    @property
    def tokens_freed(self) -> int:
        outputs = self.tokens - self.placeholder_tokens * len(self.part_ids)
        return outputs + self.reasoning_tokens

    @property
    def worth_it(self) -> bool:
        """Pruning happens when it frees at least `minimum_prune` tokens, or when it frees
        what gets the context under the limit (cheaper than any compaction)."""
        if not self.part_ids and not self.reasoning_ids:
            return False
        freed = self.tokens_freed
        return freed >= self.minimum or (self.needed is not None and freed >= self.needed)

    def event(self, reason: str) -> OutputsPruned:
        return OutputsPruned(
            part_ids=(*self.reasoning_ids, *self.part_ids),
            placeholder=self.placeholder,
            placeholder_tokens=self.placeholder_tokens,
            tokens_freed=self.tokens_freed,
            reason=reason,
        )


def plan_prune(
    messages: Sequence[LiveMessage],
    config: CompressionConfig,
    *,
    now: datetime,
    count: TokenCounter,
    usable: int | None = None,
    needed: int | None = None,
) -> PrunePlan | None:
    """What a prune would clear, reasoning first, then old tool outputs.

    Reasoning: the reasoning parts of every assistant message before the current tool loop
    (the messages since the last user message), except pinned ones; the newest assistant
    message's reasoning always stays (Anthropic needs the latest turn's thinking with its
    signature). When clearing it frees `needed` tokens, the plan stops there.

    Outputs, by tool use: walk back from the newest message, keep the results of the newest
    assistant message's calls (when no user message came since), the outputs of the last
    `protect_turns` user turns, and the newest `keep_tool_results` outputs while they fit in
    `protect_tokens` (scaled to the `usable` window, see `CompressionConfig.budgets`); take
    every older one, inside the current turn too, except outputs of protected tools and of
    pinned messages. Stop at an output already pruned or at a compaction summary: what lies
    before was dealt with already. Outputs no longer than their placeholder stay. `None` when
    nothing can be cleared."""
    budgets = config.budgets(usable)
    reasoning = _old_reasoning(messages)
    reasoning_tokens = sum(part.tokens or 0 for part in reasoning)
    candidates: list[LiveToolResult] = []
    if needed is None or reasoning_tokens < needed:
        candidates = _old_outputs(messages, config, budgets.protect_tokens)
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    placeholder = f"[Output pruned at {stamp}; restore with part id {{part_id}}]"
    shown = {p.id: count(placeholder.replace("{part_id}", p.id)) for p in candidates}
    worth = [p for p in reversed(candidates) if p.tokens > shown[p.id]]  # else it would grow
    if not worth and not reasoning:
        return None
    return PrunePlan(
        part_ids=tuple(p.id for p in worth),
        tokens=sum(p.tokens for p in worth),
        placeholder=placeholder,
        # ids tokenize differently; the largest count keeps the total an overestimate
        placeholder_tokens=max((shown[p.id] for p in worth), default=0),
        minimum=budgets.minimum_prune,
        reasoning_ids=tuple(part.id for part in reasoning),
        reasoning_tokens=reasoning_tokens,
        needed=needed,
    )


def _old_reasoning(messages: Sequence[LiveMessage]) -> list[ReasoningPart]:
    """Reasoning parts of assistant messages before the current tool loop, oldest first."""
    loop = next(
        (n for n in range(len(messages) - 1, -1, -1) if starts_turn(messages[n])),
        len(messages),
    )
    newest = next(
        (n for n in range(len(messages) - 1, -1, -1) if messages[n].role == "assistant"), None
    )
    return [
        part
        for n, message in enumerate(messages[:loop])
        if message.role == "assistant" and not message.pinned and n != newest
        for part in message.parts
        if isinstance(part, ReasoningPart) and part.tokens
    ]


def starts_turn(message: LiveMessage) -> bool:
    """Whether `message` opens a user turn: a user message that is not a compaction summary
    (a summary stands for turns, it does not start one)."""
    return message.role == "user" and not message.summary


def turn_starts(messages: Sequence[LiveMessage]) -> list[int]:
    """Indexes of the messages that open a user turn (`starts_turn`)."""
    return [n for n, message in enumerate(messages) if starts_turn(message)]


def _old_outputs(
    messages: Sequence[LiveMessage], config: CompressionConfig, protect_tokens: int
) -> list[LiveToolResult]:
    """Tool outputs old enough to prune, newest first (see `plan_prune`)."""
    latest = _latest_batch(messages)
    turns = 0
    kept = 0
    seen = 0
    candidates: list[LiveToolResult] = []
    for message in reversed(messages):
        if starts_turn(message):
            turns += 1
        if turns < config.protect_turns:
            continue
        if message.summary:
            break
        if message.pinned:
            continue
        for part in reversed(message.parts):
            if not isinstance(part, LiveToolResult) or part.call_id in latest:
                continue
            if part.status == "pruned":
                return candidates
            if part.name in config.protected_tools:
                continue
            seen += part.tokens
            if kept < config.keep_tool_results and seen <= protect_tokens:
                kept += 1
            else:
                candidates.append(part)
    return candidates


def _latest_batch(messages: Sequence[LiveMessage]) -> set[str]:
    """Call ids of the newest assistant message that calls tools, unless the user spoke
    since: its results are the step the current turn is on, kept whatever their number."""
    for message in reversed(messages):
        if starts_turn(message):
            return set()
        calls = {p.call_id for p in message.parts if isinstance(p, ToolCallPart)}
        if message.role == "assistant" and calls:
            return calls
    return set()


# compaction


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """Where to cut: `replaced` messages go into one summary placed before
    `first_kept_message_id`; system and pinned messages (with their call/result pairs) stay."""

    first_kept_message_id: str
    replaced: tuple[LiveMessage, ...]

    @property
    def replaced_tokens(self) -> int:
        return sum(message.tokens for message in self.replaced)


def plan_compaction(
    messages: Sequence[LiveMessage], *, keep_turns: int, keep_tokens: int
) -> CompactionPlan | None:
    """Keep the last `keep_turns` user turns and at least `keep_tokens` tokens; cut only where
    no tool call waits for a result on the other side of the cut. `None` when nothing before
    the cut can be replaced."""
    cuts = _possible_cuts(messages)
    if not cuts:
        return None
    starts = turn_starts(messages)
    wanted = len(messages)
    if keep_turns and starts:
        wanted = starts[-keep_turns] if len(starts) >= keep_turns else 0
    eligible = [c for c in cuts if c <= wanted]
    if not eligible:
        return None  # fewer turns than keep_turns: everything is kept
    cut = eligible[-1]
    for earlier in reversed(eligible):
        cut = earlier
        if sum(m.tokens for m in messages[earlier:]) >= keep_tokens:
            break
    kept = always_kept(
        [(m.id, m.role, m.parts) for m in messages], {m.id for m in messages if m.pinned}
    )
    replaced = tuple(m for m in messages[:cut] if m.id not in kept)
    if not replaced:
        return None
    return CompactionPlan(messages[cut].id, replaced)


def _possible_cuts(messages: Sequence[LiveMessage]) -> list[int]:
    """Indexes where the context can be cut: not a tool message, and every call made before
    it that has a result somewhere has it before it too."""
    answered = {p.call_id for m in messages for p in m.parts if isinstance(p, LiveToolResult)}
    open_calls: set[str] = set()
    cuts = []
    for n, message in enumerate(messages):
        if n > 0 and message.role != "tool" and not open_calls:
            cuts.append(n)
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.call_id in answered:
                open_calls.add(part.call_id)
            elif isinstance(part, LiveToolResult):
                open_calls.discard(part.call_id)
    return cuts


def attempt_limits(
    config: CompressionConfig, attempt: int, usable: int | None = None
) -> tuple[int, int]:
    """(keep_turns, keep_tokens) for shrinking attempt 0, 1, 2...: each keeps less, and the
    last keeps only the turns left (none when max_attempts > keep_recent_turns), with no
    token floor. `keep_tokens` starts from `keep_recent_tokens` scaled to the `usable`
    window."""
    if attempt == config.max_attempts - 1 and attempt > 0:
        return max(config.keep_recent_turns - attempt, 0), 0
    keep_tokens = config.budgets(usable).keep_recent_tokens
    return max(config.keep_recent_turns - attempt, 0), keep_tokens >> attempt


def saves_enough(config: CompressionConfig, replaced_tokens: int, summary_tokens: int) -> bool:
    """Whether a summary of `summary_tokens` replacing `replaced_tokens` saves at least
    `minimum_compaction_saving` of them (and is shorter at all)."""
    saved = replaced_tokens - summary_tokens
    return saved > 0 and saved >= config.minimum_compaction_saving * replaced_tokens
