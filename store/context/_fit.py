"""The last resort of a check: the newest step cut to restorable previews, so a call fits.

Pruning never takes the results of the newest assistant message's calls (the step the agent is
on), and compaction keeps them too, so on a small window one step can be larger than the
window: eight parallel reads, each within its share (`output_ratio`), are 80% of it. When a
check leaves the context over the usable window, `plan_fit` cuts tool fields to head and tail
previews, the newest step's results first (largest first, each to the same cap, so the small
ones stay whole), then, if that is not enough, every other live tool result and argument. The
previews are a `PartsPreviewed`, as the `tool_blocks` strategy's are: the event records where
each cut falls, replay shows exactly what the model saw, and `Session.restore` (or
`context(restore_pruned=True)`) gives the originals back byte for byte.

What no preview can shrink (the system prompt, pinned messages, the newest user request)
bounds what a check can do: `floor_tokens` counts it, and a check says `beyond_window` when
that alone is over the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sessionstore.context._policies import starts_turn
from sessionstore.context._strategies import Cut, _custom
from sessionstore.events import PartsPreviewed, Preview, ReasoningPart, ToolCallPart
from sessionstore.projections import NOTICE, LiveMessage, LiveToolResult, preview, stored_tokens

TokenCounter = Callable[[str], int]

NOTICE_TOKENS = 40
"""About what a preview's notice takes, with the line breaks around it."""

MAX_ROUNDS = 4
"""Caps a fit tries, each lowered by what the last one's counted previews fell short."""

HEAD_SHARE = 0.6
"""Of a preview's characters, the share the head gets; the tail (a result's end: a test run's
verdict, a trace's last frame) gets the rest."""


@dataclass(frozen=True, slots=True)
class ToolField:
    """One tool field a fit may cut: a result's shown output or a call's arguments."""

    part_id: str
    text: str
    tokens: int
    arguments: bool


def plan_fit(
    messages: Sequence[LiveMessage], *, over: int, count: TokenCounter
) -> PartsPreviewed | None:
    """The previews that free at least `over` tokens, or as many as can be freed: the newest
    step's results first, then every other field (`fields`). Each stage cuts the fields over a
    common cap to previews of about that cap, the lowest cap that frees enough found by
    halving. `None` when nothing can be cut (or `over` is not positive)."""
    if over <= 0:
        return None
    newest, others = fields(messages)
    cuts = _fill(newest, over, count)
    freed = sum(c.saved for c in cuts)
    if freed < over:
        cuts += _fill(others, over - freed, count)
    if not cuts:
        return None
    freed = sum(c.saved for c in cuts)
    return PartsPreviewed(
        previews={c.part_id: c.preview for c in cuts},
        notice=NOTICE,
        tokens_freed=freed,
        strategy="fit",
        why=(
            f"over the window by {over:,} tokens after pruning and compaction: "
            f"{len(cuts)} tool field(s) cut to head and tail previews, the newest step's "
            f"results first, freeing {freed:,}"
        ),
    )


def fields(messages: Sequence[LiveMessage]) -> tuple[list[ToolField], list[ToolField]]:
    """The fields a fit may cut: (the newest step's results, every other one). Left whole:
    the system prompt's and pinned messages' fields, results already pruned, previewed or
    restored (a restore is the user's word), results with images, and arguments of a message
    that carries reasoning or of a custom tool (as `previews_in` leaves them)."""
    newest = _newest_step(messages)
    first: list[ToolField] = []
    rest: list[ToolField] = []
    for message in messages:
        if message.role == "system" or message.pinned or message.summary:
            continue
        reasoning = any(isinstance(p, ReasoningPart) for p in message.parts)
        for part in message.parts:
            if isinstance(part, LiveToolResult):
                if part.status not in ("original", "truncated") or part.blocks is not None:
                    continue
                found = ToolField(part.id, part.output, part.tokens, arguments=False)
                (first if part.call_id in newest else rest).append(found)
            elif (
                isinstance(part, ToolCallPart)
                and not reasoning
                and part.id not in message.call_status
                and not _custom(part)
            ):
                rest.append(ToolField(part.id, part.arguments, stored_tokens(part), arguments=True))
    return first, rest


def floor_tokens(messages: Sequence[LiveMessage]) -> int:
    """Tokens of what no check takes out or cuts: system messages, pinned messages and the
    newest user request (the last message that opens a turn)."""
    request = next((m.id for m in reversed(messages) if starts_turn(m)), None)
    return sum(m.tokens for m in messages if m.role == "system" or m.pinned or m.id == request)


def _newest_step(messages: Sequence[LiveMessage]) -> set[str]:
    """Call ids of the newest assistant message that calls tools (whether or not the user
    spoke since: its results are what the model reads next)."""
    for message in reversed(messages):
        calls = {p.call_id for p in message.parts if isinstance(p, ToolCallPart)}
        if message.role == "assistant" and calls:
            return calls
    return set()


def _fill(found: list[ToolField], needed: int, count: TokenCounter) -> list[Cut]:
    """Cuts of the fields over a common cap to previews of about that cap: the highest cap
    that frees `needed` by estimate (each preview about its cap plus its notice), lowered by
    what the counted previews fell short, a few times, then the notices alone (cap 0)."""
    if not found or needed <= 0:
        return []
    sizes = sorted((f.tokens for f in found), reverse=True)
    low, high = 0, sizes[0]
    while low < high:  # the highest cap whose estimate frees enough
        cap = (low + high + 1) // 2
        if sum(max(t - cap - NOTICE_TOKENS, 0) for t in sizes) >= needed:
            low = cap
        else:
            high = cap - 1
    cap = low
    for _ in range(MAX_ROUNDS):
        cuts = [c for f in found if f.tokens > cap and (c := _cut(f, cap, count)) is not None]
        short = needed - sum(c.saved for c in cuts)
        if short <= 0 or cap == 0:
            return cuts
        cap = max(cap - short // max(len(cuts), 1) - 1, 0)
    return [c for f in found if (c := _cut(f, 0, count)) is not None]


def _cut(found: ToolField, cap: int, count: TokenCounter) -> Cut | None:
    """`found` cut to about `cap` tokens (head and, for a result, tail), counted as shown;
    `None` when the preview would not be shorter. Only the preview is tokenised."""
    text = found.text
    chars = len(text) * cap // max(found.tokens, 1)
    for _ in range(4):  # the ratio is a guess for this text: shrink until the preview fits
        head, tail = _split(chars, found.arguments)
        shown = count(
            preview(text, head, NOTICE, found.part_id, arguments=found.arguments, tail=tail)
        )
        if shown <= cap + NOTICE_TOKENS or chars == 0:
            break
        chars = chars * cap // shown
    if shown >= found.tokens:
        return None
    return Cut(found.part_id, Preview(chars=head, tokens=shown, tail=tail), found.tokens - shown)


def _split(chars: int, arguments: bool) -> tuple[int, int]:
    """(head, tail) characters of a preview of `chars`: arguments keep a head only."""
    if arguments:
        return chars, 0
    head = int(chars * HEAD_SHARE)
    return head, chars - head
