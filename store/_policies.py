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

from events import CompressionConfig, OutputsPruned, SessionStarted, ToolCallPart
from projections import ContextFold, LiveMessage, LiveToolResult
from projections._fold import always_kept

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
    if fold.usage_base is not None:
        reported, counted_then = fold.usage_base
        tokens, source = reported + fold.tokens - counted_then, "usage"
    else:
        tokens, source = fold.tokens + config.safety_margin, "stored"
    usable = _usable(header)
    limit = None if usable is None else int(usable * config.trigger_ratio)
    return Measure(tokens, source, limit, usable)  # type: ignore[arg-type]


def _usable(header: SessionStarted) -> int | None:
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
    after = tokens_after + config.safety_margin
    recent = fold.seq - seq < config.cooldown_events
    return recent and after > now.limit and now.tokens <= after


# pruning


@dataclass(frozen=True, slots=True)
class PrunePlan:
    """Old tool outputs to replace by a placeholder, and what that frees."""

    part_ids: tuple[str, ...]
    tokens: int
    placeholder: str
    placeholder_tokens: int
    minimum: int

    @property
    def tokens_freed(self) -> int:
        return self.tokens - self.placeholder_tokens * len(self.part_ids)

    @property
    def worth_it(self) -> bool:
        """Pruning happens only when it frees at least `minimum_prune` tokens."""
        return self.tokens_freed >= self.minimum

    def event(self, reason: str) -> OutputsPruned:
        return OutputsPruned(
            part_ids=self.part_ids,
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
) -> PrunePlan | None:
    """Walk back from the newest message: skip the last `protect_turns` user turns, keep the
    newest `protect_tokens` tokens of tool output, and take everything older, except outputs of
    protected tools and of pinned messages. Stop at an output already pruned or at a
    compaction summary: what lies before was dealt with already. Outputs no longer than their
    placeholder stay. `None` when nothing is old enough."""
    turns = 0
    seen = 0
    candidates: list[LiveToolResult] = []
    for message in reversed(messages):
        if message.role == "user" and not message.summary:
            turns += 1
        if turns < config.protect_turns:
            continue
        if message.summary:
            break
        if message.pinned:
            continue
        stop = False
        for part in reversed(message.parts):
            if not isinstance(part, LiveToolResult):
                continue
            if part.status == "pruned":
                stop = True
                break
            if part.name in config.protected_tools:
                continue
            seen += part.tokens
            if seen > config.protect_tokens:
                candidates.append(part)
        if stop:
            break
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    placeholder = f"[Output pruned at {stamp}; restore with part id {{part_id}}]"
    shown = {p.id: count(placeholder.replace("{part_id}", p.id)) for p in candidates}
    worth = [p for p in reversed(candidates) if p.tokens > shown[p.id]]  # else it would grow
    if not worth:
        return None
    return PrunePlan(
        part_ids=tuple(p.id for p in worth),
        tokens=sum(p.tokens for p in worth),
        placeholder=placeholder,
        # ids tokenize differently; the largest count keeps the total an overestimate
        placeholder_tokens=max(shown[p.id] for p in worth),
        minimum=config.minimum_prune,
    )


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
    turn_starts = [n for n, m in enumerate(messages) if m.role == "user" and not m.summary]
    wanted = len(messages)
    if keep_turns and turn_starts:
        wanted = turn_starts[-keep_turns] if len(turn_starts) >= keep_turns else 0
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


def attempt_limits(config: CompressionConfig, attempt: int) -> tuple[int, int]:
    """(keep_turns, keep_tokens) for shrinking attempt 0, 1, 2...: each keeps less, and the
    last keeps only the turns left (none when max_attempts > keep_recent_turns), with no
    token floor."""
    if attempt == config.max_attempts - 1 and attempt > 0:
        return max(config.keep_recent_turns - attempt, 0), 0
    return max(config.keep_recent_turns - attempt, 0), config.keep_recent_tokens >> attempt
