"""What changed in the live context between two points of a session: the messages that
entered and left it, and the tool outputs whose status changed (pruned, restored...)."""

from __future__ import annotations

from dataclasses import dataclass

from sessionstore.projections._context import Context
from sessionstore.projections._live import LiveMessage, LiveToolResult


@dataclass(frozen=True, slots=True)
class OutputChange:
    """One tool output live at both points, shown differently: `before` and `after` are the
    part as the model saw it then (status original, truncated, pruned or restored)."""

    message_id: str
    before: LiveToolResult
    after: LiveToolResult


@dataclass(frozen=True, slots=True)
class ContextDiff:
    """`entered`: live at `after` only; `left`: live at `before` only (compacted, reverted);
    `changed`: tool outputs in both whose shown text or status changed."""

    before: Context
    after: Context
    entered: tuple[LiveMessage, ...]
    left: tuple[LiveMessage, ...]
    changed: tuple[OutputChange, ...]

    @property
    def tokens_delta(self) -> int:
        return self.after.tokens - self.before.tokens


def diff_contexts(before: Context, after: Context) -> ContextDiff:
    """Compare two contexts of one session (either may be the later one)."""
    then = {m.id: m for m in before.messages}
    now = {m.id: m for m in after.messages}
    changed = []
    for message in after.messages:
        earlier = then.get(message.id)
        if earlier is None:
            continue
        old_parts = {p.id: p for p in earlier.parts if isinstance(p, LiveToolResult)}
        for part in message.parts:
            old = old_parts.get(part.id)
            if isinstance(part, LiveToolResult) and old is not None and old != part:
                changed.append(OutputChange(message.id, old, part))
    return ContextDiff(
        before=before,
        after=after,
        entered=tuple(m for m in after.messages if m.id not in then),
        left=tuple(m for m in before.messages if m.id not in now),
        changed=tuple(changed),
    )
